"""Pretrained transformers run step by step in numpy: BERT-family encoders and GPT-2.

Needs the optional extra ``attnviz[model]`` (safetensors and tokenizers); never PyTorch.
base.py: the architecture interface and the registry by config.json's model_type;
bert.py, gpt2.py: the architectures; functional.py: erf, GELU, LayerNorm; checkpoint.py:
finding a checkpoint and reading its tensors; tokenizer.py: the sentence as the model sees it;
run.py: all of it for one sentence.
"""
