"""Sentence -> a Llama-family model in a GGUF file, ready to run: the tokenizer from the file's
metadata, the token embeddings of the sentence's ids only, the layers dequantized as the forward
pass reaches them (the output layer never), and what the lesson says of the quantization."""

from __future__ import annotations

from pathlib import Path

from attnviz.model.checkpoint import checkpoint_name, read_config
from attnviz.model.gguf_model import GgufModel, gguf_weights, load_gguf
from attnviz.model.llama import LlamaConfig
from attnviz.model.run import LoadedModel, model_provenance, padded
from attnviz.model.tokenizer import encode

#: The pairing W_Q and W_K are arranged for: Hugging Face's, as attnviz's other Llama models.
PAIRING = "half"


def load_gguf_model(
    sentence: str,
    path: Path,
    model: str,
    *,
    dtype: type,
    pad_to: int | None,
    keep_layers: bool,
) -> LoadedModel:
    """``attnviz.model.run.load_model`` for a GGUF file ``path`` (``model``: as it was asked
    for, "smollm2" or the path)."""
    gguf = load_gguf(path, dtype, PAIRING)
    data = gguf.settings.config()
    meta = gguf.tensors.file.metadata
    pad = meta.get("tokenizer.ggml.padding_token_id", meta.get("tokenizer.ggml.eos_token_id"))
    data["pad_token_id"] = int(pad) if isinstance(pad, int) else None
    config, architecture = read_config(path, data)
    assert isinstance(config, LlamaConfig)  # the settings name llama or qwen2
    unpadded = encode(gguf.tokenizer, sentence, config.max_positions)
    encoding, mask = padded(unpadded, gguf.tokenizer, config, f"{path.name}'s metadata", pad_to)
    weights = gguf_weights(gguf, config, encoding.ids, keep=keep_layers)
    name = f"{checkpoint_name(model, path)} (GGUF, {gguf.quantization.split(',')[0]})"
    provenance = model_provenance(
        sentence,
        encoding,
        config,
        architecture,
        name,
        padding=len(encoding.ids) - len(unpadded.ids),
        about=quantization_about(gguf, path, dtype),
    )
    return LoadedModel(name, path, encoding, provenance, mask, weights, architecture)


def quantization_about(gguf: GgufModel, path: Path, dtype: type) -> str:
    """What the lesson says of a GGUF file's weights: how they are stored, one weight rebuilt
    from its block by hand, that the attention shown is the quantized model's, and how W_Q and
    W_K were stored for RoPE."""
    from attnviz.model.gguf_quant import worked_dequantization

    settings = gguf.settings
    text = (
        f"{path.name} stores the model quantized: its attention weights W_Q, W_K, W_V and W_O "
        f"mostly as {gguf.quantization}. Each weight is rebuilt from its small integer code q "
        "and its block's numbers"
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
        f"{dtype.__name__} from the rebuilt weights; the unquantized model's differs a little."
    )
    if settings.stored_pairing != gguf.tensors.pairing:
        text += (
            " The file stores W_Q and W_K for RoPE on adjacent coordinates (2i, 2i + 1); their "
            "rows are put back in Hugging Face's order here, which pairs i with i + d_k/2 and "
            "gives the same scores."
        )
    return text
