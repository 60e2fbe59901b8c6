"""What the lesson says of a model read from a GGUF file: how its weights are stored, one weight
rebuilt from its block by hand, that the attention shown is the quantized model's, and how W_Q
and W_K were stored for RoPE."""

from __future__ import annotations

import re
from pathlib import Path

from attnviz.model.sources.gguf_model import GgufModel


def quantization_about(gguf: GgufModel, path: Path, dtype: type) -> str:
    """What the lesson says of a GGUF file's weights: how they are stored, one weight rebuilt
    from its block by hand, that the attention shown is the quantized model's, and how W_Q and
    W_K were stored for RoPE."""
    from attnviz.model.sources.gguf_quant import rebuilt_from, worked_dequantization

    settings = gguf.settings
    types = {
        info.type_name
        for name, info in gguf.tensors.file.tensors.items()
        if re.fullmatch(r"blk\.[0-9]+\.attn_(q|k|v|output)\.weight", name)
    }
    stored = (
        f"its attention weights W_Q, W_K, W_V and W_O {'as' if len(types) == 1 else 'mostly as'}"
    )
    if gguf.attention_type in ("F32", "F16", "BF16"):
        return (
            f"{path.name} stores {stored} {gguf.quantization}; the attention shown is computed in "
            f"{dtype.__name__} from them."
            + (_PAIRING if settings.stored_pairing != gguf.tensors.pairing else "")
        )
    text = (
        f"{path.name} stores the model quantized: {stored} {gguf.quantization}. Each weight is "
        f"rebuilt from {rebuilt_from(gguf.attention_type)}"
    )
    try:
        worked = worked_dequantization(gguf.tensors.file, gguf.attention_tensor, 0, 0)
    except ValueError:  # a type whose blocks the worked example does not take apart
        text += "."
    else:
        text += (
            f": for example the weight in {_first_weight(gguf.attention_tensor)} is "
            f"{worked.stored_as}: {worked.formula}."
        )
    text += (
        " The attention shown is that of this quantized model, computed in "
        f"{dtype.__name__} from the rebuilt weights, not that of the unquantized model it was "
        "made from."
    )
    if settings.stored_pairing != gguf.tensors.pairing:
        text += _PAIRING
    return text


_PAIRING = (
    " The file stores W_Q and W_K for RoPE on adjacent coordinates (2i, 2i + 1); their rows are "
    "put back in Hugging Face's order here, which pairs i with i + d_k/2 and gives the same scores."
)


#: What weight [0, 0] of each attention tensor does, in the lesson's words. Row 0 is the same in
#: the file's RoPE layout and Hugging Face's, so these hold for W_Q and W_K too.
_FIRST_WEIGHTS = {
    "q": "W_Q of query head 1 that carries x's coordinate 1 into q's coordinate 1",
    "k": "W_K of key/value head 1 that carries x's coordinate 1 into k's coordinate 1",
    "v": "W_V of key/value head 1 that carries x's coordinate 1 into v's coordinate 1",
    "output": "W_O that carries head 1's z coordinate 1 into the output's coordinate 1",
}


def _first_weight(tensor: str) -> str:
    """Weight [0, 0] of GGUF attention tensor ``tensor`` ("blk.0.attn_v.weight") in words:
    "layer 1's W_V of key/value head 1 that carries x's coordinate 1 into v's coordinate 1"."""
    found = re.fullmatch(r"blk\.([0-9]+)\.attn_(q|k|v|output)\.weight", tensor)
    if found is None:
        raise ValueError(f"{tensor} is not an attention weight of a layer")
    return f"layer {int(found[1]) + 1}'s {_FIRST_WEIGHTS[found[2]]}"
