"""The families attnviz runs: BERT, GPT-2, Llama, Qwen2 and its own toy transformer, each its
forward pass and its own sentences for the lesson, whatever source its weights come from."""
