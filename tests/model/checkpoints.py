"""Tiny checkpoint folders for the model tests, built in a test's tmp_path, and the edits that
damage them: a random BERT of 2 layers, 2 heads, d_model 8 (written with numpy alone, in the
safetensors layout, with vocab.txt), or a copy of the tiny GPT-2 in tests/model/tiny_gpt2."""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np

GPT2 = Path(__file__).resolve().parent / "tiny_gpt2"
LLAMA = GPT2.parent / "tiny_llama"  # tests/model/make_llama.py wrote these two
QWEN2 = GPT2.parent / "tiny_qwen2"
#: Tensors the damage tables name.
QUERY_2 = "encoder.layer.1.attention.self.query.weight"
WORDS = "embeddings.word_embeddings.weight"
TYPES = "embeddings.token_type_embeddings.weight"
#: The tiny BERT's vocabulary: "I am good" is [CLS] i am good [SEP], "good" is id 7.
PIECES = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "i", "am", "good", "the", "cat")
D_MODEL, D_FF, N_POSITIONS = 8, 16, 16


def save_tensors(path: Path, tensors: dict[str, np.ndarray], stored_as: str | None = None) -> None:
    """A safetensors file, written by hand: an 8-byte header length, the JSON header, the data.
    ``stored_as`` overrides the type named in the header ("BF16" for uint16 bit patterns)."""
    types = {"float16": "F16", "float32": "F32", "float64": "F64", "int8": "I8", "uint16": "U16"}
    header, chunks, offset = {}, [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {
            "dtype": stored_as or types[array.dtype.name],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        chunks.append(data)
        offset += len(data)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(chunks))


def load_tensors(path: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return dict(load_file(str(path)))


def tiny_bert(folder: Path) -> Path:
    """A random BERT of 2 layers, 2 heads, d_model 8, with vocab.txt and no tokenizer.json."""
    folder.mkdir()
    rng = np.random.default_rng(0)
    shapes = {
        "embeddings.word_embeddings.weight": (len(PIECES), D_MODEL),
        "embeddings.position_embeddings.weight": (N_POSITIONS, D_MODEL),
        "embeddings.token_type_embeddings.weight": (2, D_MODEL),
        "embeddings.LayerNorm.weight": (D_MODEL,),
        "embeddings.LayerNorm.bias": (D_MODEL,),
    }
    for layer in range(2):
        base = f"encoder.layer.{layer}."
        for part in ("attention.self.query", "attention.self.key", "attention.self.value"):
            shapes |= {f"{base}{part}.weight": (D_MODEL, D_MODEL), f"{base}{part}.bias": (D_MODEL,)}
        for part, (n_out, n_in) in {
            "attention.output.dense": (D_MODEL, D_MODEL),
            "intermediate.dense": (D_FF, D_MODEL),
            "output.dense": (D_MODEL, D_FF),
        }.items():
            shapes |= {f"{base}{part}.weight": (n_out, n_in), f"{base}{part}.bias": (n_out,)}
        for part in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes |= {f"{base}{part}.weight": (D_MODEL,), f"{base}{part}.bias": (D_MODEL,)}
    tensors = {name: rng.normal(0, 0.5, shape).astype(np.float32) for name, shape in shapes.items()}
    save_tensors(folder / "model.safetensors", tensors)
    (folder / "vocab.txt").write_text("\n".join(PIECES) + "\n", encoding="utf-8")
    config = {
        "model_type": "bert",
        "hidden_size": D_MODEL,
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "intermediate_size": D_FF,
        "max_position_embeddings": N_POSITIONS,
        "attnviz_untrained": True,
    }
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


# -- what can be wrong, one function each ---------------------------------------------------------


def edit_config(**changes: object) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        config.update(changes)
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")

    return edit


def config_text(transform: Callable[[str], str]) -> Callable[[Path], None]:
    """config.json's text changed by ``transform`` (for what json.dumps cannot write)."""

    def edit(folder: Path) -> None:
        path = folder / "config.json"
        path.write_text(transform(path.read_text(encoding="utf-8")), encoding="utf-8")

    return edit


def with_setting(text: str) -> Callable[[Path], None]:
    """config.json with one more setting, written as raw JSON text: "layer_norm_eps": NaN."""
    return config_text(lambda config: config.rstrip().removesuffix("}") + f", {text}}}")


def edit_tensors(change: Callable[[dict[str, np.ndarray]], None]) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        tensors = load_tensors(folder / "model.safetensors")
        change(tensors)
        save_tensors(folder / "model.safetensors", tensors)

    return edit


def put(name: str, value: np.ndarray) -> Callable[[Path], None]:
    return edit_tensors(lambda tensors: tensors.__setitem__(name, value))


def drop(name: str) -> Callable[[Path], None]:
    return edit_tensors(lambda tensors: tensors.pop(name))


def poke(name: str, index: tuple[int, ...], value: float) -> Callable[[Path], None]:
    return edit_tensors(lambda tensors: tensors[name].__setitem__(index, value))


def scale(factor: float, *names: str) -> Callable[[Path], None]:
    def change(tensors: dict[str, np.ndarray]) -> None:
        for name in names:
            tensors[name] = tensors[name] * np.float32(factor)

    return edit_tensors(change)


def write(name: str, content: bytes | str) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        data = content.encode() if isinstance(content, str) else content
        (folder / name).write_bytes(data)

    return edit


def folder_instead(name: str) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        (folder / name).unlink(missing_ok=True)
        (folder / name).mkdir()

    return edit


def gpt2_copy(folder: Path) -> Path:
    shutil.copytree(GPT2, folder)
    return folder


MODEL_FILES = {
    "config.json": tiny_bert,
    "vocab.txt": tiny_bert,
    "tokenizer_config.json": tiny_bert,
    "model.safetensors": tiny_bert,
    "tokenizer.json": gpt2_copy,
}
