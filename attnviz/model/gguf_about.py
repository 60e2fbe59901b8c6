"""What the lesson says of a model read from a GGUF file: how its weights are stored, one weight
rebuilt from its block by hand, that the attention shown is the quantized model's, and how W_Q
and W_K were stored for RoPE."""

from __future__ import annotations

import re
from pathlib import Path

from attnviz.model.gguf_model import GgufModel


def quantization_about(gguf: GgufModel, path: Path, dtype: type) -> str:
    """What the lesson says of a GGUF file's weights: how they are stored, one weight rebuilt
    from its block by hand, that the attention shown is the quantized model's, and how W_Q and
    W_K were stored for RoPE."""
    from attnviz.model.gguf_quant import worked_dequantization

    settings = gguf.settings
    types = {
        info.type_name
        for name, info in gguf.tensors.file.tensors.items()
        if re.fullmatch(r"blk\.\d+\.attn_(q|k|v|output)\.weight", name)
    }
    text = (
        f"{path.name} stores the model quantized: its attention weights W_Q, W_K, W_V and W_O "
        f"{'as' if len(types) == 1 else 'mostly as'} {gguf.quantization}. Each weight is rebuilt "
        "from its small integer code q and its block's numbers"
    )
    try:
        worked = worked_dequantization(gguf.tensors.file, gguf.attention_tensor, 0, 0)
    except ValueError:  # a type whose blocks the worked example does not take apart
        text += "."
    else:
        layer = int(gguf.attention_tensor.split(".")[1]) + 1
        text += (
            f": for example the weight in layer {layer}'s W_V of key/value head 1 that carries "
            "x's coordinate 1 into v's coordinate 1 is code "
            f"q = {worked.q} of block 1 of its row, with the block's scale d = {worked.d!r}"
            + (f" and minimum m = {worked.m!r}" if worked.type_name in ("Q4_1", "Q5_1") else "")
            + f": {worked.formula}."
        )
    text += (
        " The attention shown is that of this quantized model, computed in "
        f"{dtype.__name__} from the rebuilt weights, not that of the unquantized model it was "
        "made from."
    )
    if settings.stored_pairing != gguf.tensors.pairing:
        text += (
            " The file stores W_Q and W_K for RoPE on adjacent coordinates (2i, 2i + 1); their "
            "rows are put back in Hugging Face's order here, which pairs i with i + d_k/2 and "
            "gives the same scores."
        )
    return text
