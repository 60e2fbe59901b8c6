"""Trained transformers run step by step in numpy: BERT-family encoders, GPT-2, and attnviz's
own toy transformer.

BERT and GPT-2 need the optional extra ``attnviz[model]`` (safetensors and tokenizers); never
PyTorch. The toy model needs neither: its folder is config.json and weights.npz, and the two
attnviz ships (trained/coref, trained/coref-word, made by scripts/train-models) load anywhere.
base.py: the architecture interface and the registry by config.json's model_type;
bert.py, gpt2.py: the architectures; toy.py: the toy model (its words, weights, forward pass and
what it is, in words); functional.py: erf, GELU, LayerNorm; checkpoint.py: finding a model and
reading its config; tokenizer.py: the sentence as the model sees it; run.py: all of it for one
sentence.
"""
