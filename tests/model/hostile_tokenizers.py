"""Model folders whose tokenizer.json is hostile, copied from tests/model/tiny_gpt2 (byte-level
BPE) or built as the tiny BERT of tests/model/checkpoints.py with a tokenizer.json: a regular
expression that backtracks for minutes, one that panics in Rust, replacements that grow the text
a hundredfold per step, a WordLevel model without its unknown token, a normalizer that removes
every character."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from model.checkpoints import GPT2, PIECES, tiny_bert

#: A Split pattern whose matching time grows with a power of the text's length when no digit
#: comes: 2 s for 300 characters, 10 s for 600 (on main, in the tokenizers package).
BACKTRACKING = r".{0,150}.{0,150}.{0,150}\d"
#: A pattern the tokenizers package panics on (pyo3_runtime.PanicException).
PANICKING = r"(\w*)*\d"
#: A sentence without digits, long enough that BACKTRACKING runs for minutes.
NO_DIGITS = "the animal was tired and slow " * 40


def gpt2_folder(
    folder: Path, *, pre_tokenizer: Any = None, normalizer: Any = None, model: Any = None
) -> Path:
    """A copy of the tiny GPT-2 whose tokenizer.json has the given parts (None: as it was)."""
    shutil.copytree(GPT2, folder)
    path = folder / "tokenizer.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    if pre_tokenizer is not None:
        data["pre_tokenizer"] = pre_tokenizer
    if normalizer is not None:
        data["normalizer"] = normalizer
    if model is not None:
        data["model"] = model
    path.write_text(json.dumps(data), encoding="utf-8")
    return folder


def bert_folder(folder: Path, *, normalizer: Any = None, model: Any = None) -> Path:
    """The tiny BERT with a tokenizer.json (WordPiece, [CLS] … [SEP]) in place of vocab.txt."""
    tiny_bert(folder)
    (folder / "vocab.txt").unlink()
    vocabulary = {piece: i for i, piece in enumerate(PIECES)}
    data = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": i,
                "content": piece,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for i, piece in enumerate(PIECES[:5])
        ],
        "normalizer": normalizer
        or {
            "type": "BertNormalizer",
            "clean_text": True,
            "handle_chinese_chars": True,
            "strip_accents": None,
            "lowercase": True,
        },
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
            ],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]},
            },
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": model
        or {
            "type": "WordPiece",
            "unk_token": "[UNK]",
            "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100,
            "vocab": vocabulary,
        },
    }
    (folder / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def split(pattern: str) -> dict[str, Any]:
    """A Split pre-tokenizer on the regular expression ``pattern``."""
    return {
        "type": "Split",
        "pattern": {"Regex": pattern},
        "behavior": "Isolated",
        "invert": False,
    }


def growing_replacements(steps: int, factor: int = 100) -> dict[str, Any]:
    """``steps`` Replace normalizers, each writing "a" as ``factor`` × "a": the text grows
    factor**steps-fold ("I am a cat", 4 steps: 100 million characters per "a")."""
    step = {"type": "Replace", "pattern": {"String": "a"}, "content": "a" * factor}
    return {"type": "Sequence", "normalizers": [step] * steps}


#: A normalizer that removes every character: nothing is left to split.
REMOVE_ALL = {"type": "Replace", "pattern": {"Regex": r"[\s\S]"}, "content": ""}


def word_level_without_unknown() -> dict[str, Any]:
    """A WordLevel model whose unk_token is not in its vocabulary."""
    vocabulary = {piece: i for i, piece in enumerate(PIECES) if piece != "[UNK]"}
    return {"type": "WordLevel", "vocab": vocabulary, "unk_token": "[UNK]"}
