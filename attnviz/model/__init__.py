"""A real pretrained encoder (BERT family, e.g. all-MiniLM-L6-v2), run step by step in numpy.

Needs the optional extra ``attnviz[model]`` (safetensors and tokenizers); never PyTorch.
"""
