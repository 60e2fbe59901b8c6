"""The tokenizer a GGUF file carries in its metadata, rebuilt with the ``tokenizers`` package.

A byte-level BPE vocabulary (tokenizer.ggml.model "gpt2") is its tokens in id order
(tokenizer.ggml.tokens), its merges in rank order ("Ġ t" per merge), the type of each token
(tokenizer.ggml.token_type: 3 marks control tokens such as <|im_start|>, which are special; 4
user-defined ones, matched whole but not special), and the name of the pre-tokenizer that
splits text before BPE runs (tokenizer.ggml.pre). llama.cpp adds the BOS token when
tokenizer.ggml.add_bos_token says so (SmolLM2's does not).

attnviz runs it as it runs a model folder's tokenizer: built and used in a child process
(``isolated_gguf_tokenizer``, attnviz.model.sources.sandbox), bounded in time and memory.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from attnviz.errors import AttnvizError, FileProblem
from attnviz.model.sources.gguf_file import GgufFile
from attnviz.model.sources.gguf_keys import setting
from attnviz.model.sources.sandbox import IsolatedTokenizer
from attnviz.model.sources.tensors import INSTALL_EXTRA

#: Llama 3's split (llama.cpp "llama-bpe"): digits in groups of up to three.
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: Qwen2's split (llama.cpp "qwen2"): digits one by one.
QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: tokenizer.ggml.pre -> how attnviz splits text before BPE, in words.
PRE_TOKENIZERS = {
    "smollm": "digits one by one, then GPT-2's split",
    "gpt2": "GPT-2's split",
    "default": "GPT-2's split",
    "llama-bpe": "Llama 3's split (digits in groups of up to three)",
    "qwen2": "Qwen2's split (digits one by one)",
}
CONTROL, USER_DEFINED = 3, 4


def isolated_gguf_tokenizer(file: GgufFile) -> IsolatedTokenizer:
    """``gguf_tokenizer(file)``, built only in the child process that sources.tokenizer's
    ``encode`` and ``token_text`` run it in; a damaged tokenizer is found there."""
    return IsolatedTokenizer(partial(gguf_tokenizer, file), f"{file.path}'s tokenizer")


def gguf_tokenizer(file: GgufFile) -> Any:
    """A ``tokenizers.Tokenizer`` that splits text as llama.cpp does for this file."""
    try:
        from tokenizers import AddedToken, Tokenizer, decoders, models
    except ImportError:
        raise AttnvizError(
            f"Reading {file.path.name} needs the optional extra: {INSTALL_EXTRA}"
        ) from None
    kind = setting(file, "tokenizer.ggml.model", None)
    if kind != "gpt2":
        raise FileProblem(
            f"{file.path}'s tokenizer is of kind {kind!r} (tokenizer.ggml.model); attnviz builds "
            "byte-level BPE tokenizers ('gpt2': SmolLM2, Llama 3, Qwen2) from GGUF files."
        )
    tokens, merges, types = _vocabulary(file)
    try:
        bpe = models.BPE(
            {token: i for i, token in enumerate(tokens)},
            [_merge(file, merge) for merge in merges],
            ignore_merges=setting(file, "tokenizer.ggml.pre", None) == "llama-bpe",
        )
    except Exception as error:  # tokenizers raises a bare Exception
        raise FileProblem(
            f"{file.path}: the tokenizer's merges do not fit its tokens ({error}); the tokenizer "
            "is damaged: get a fresh copy of the file."
        ) from None
    tokenizer = Tokenizer(bpe)
    tokenizer.pre_tokenizer = _pre_tokenizer(file)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_tokens(
        [
            AddedToken(tokens[i], special=False, normalized=False)
            for i in _of_type(types, USER_DEFINED)
        ]
    )
    tokenizer.add_special_tokens(
        [AddedToken(tokens[i], special=True, normalized=False) for i in _of_type(types, CONTROL)]
    )
    _bos(file, tokenizer, tokens)
    return tokenizer


def _vocabulary(file: GgufFile) -> tuple[list[str], list[str], list[int]]:
    tokens = setting(file, "tokenizer.ggml.tokens", None)
    merges = setting(file, "tokenizer.ggml.merges", [])
    types = setting(file, "tokenizer.ggml.token_type", [1] * len(tokens or ()))
    if not tokens:
        raise FileProblem(
            f"{file.path} holds no tokenizer (tokenizer.ggml.tokens and merges); attnviz needs "
            "the one llama.cpp's converter writes."
        )
    if len(types) != len(tokens) or len(set(tokens)) != len(tokens):
        raise FileProblem(
            f"{file.path}: tokenizer.ggml.token_type has {len(types)} entries for {len(tokens)} "
            "tokens, or a token is listed twice; the tokenizer is damaged."
        )
    return tokens, merges, [int(t) for t in types]


def _merge(file: GgufFile, merge: str) -> tuple[str, str]:
    left, space, right = merge.partition(" ")
    if not space or not left or not right:
        raise FileProblem(
            f"{file.path}: the merge {merge!r} is not two pieces separated by a space; the "
            "tokenizer is damaged."
        )
    return left, right


def _of_type(types: list[int], wanted: int) -> list[int]:
    return [i for i, kind in enumerate(types) if kind == wanted]


def _pre_tokenizer(file: GgufFile) -> Any:
    from tokenizers import Regex, pre_tokenizers

    name = setting(file, "tokenizer.ggml.pre", "default")
    gpt2 = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if name in ("gpt2", "default"):
        return gpt2
    if name == "smollm":
        return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), gpt2])
    if name in ("llama-bpe", "qwen2"):
        pattern = LLAMA3_PATTERN if name == "llama-bpe" else QWEN2_PATTERN
        split = pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False)
        bytes_only = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        return pre_tokenizers.Sequence([split, bytes_only])
    raise FileProblem(
        f"{file.path} splits text with the pre-tokenizer {name!r} (tokenizer.ggml.pre), which "
        f"attnviz does not know; it knows {', '.join(repr(n) for n in PRE_TOKENIZERS)}."
    )


def _bos(file: GgufFile, tokenizer: Any, tokens: list[str]) -> None:
    """The BOS token put before the text, when the file says llama.cpp adds it."""
    from tokenizers import processors

    if not setting(file, "tokenizer.ggml.add_bos_token", False):
        return
    bos_id = setting(file, "tokenizer.ggml.bos_token_id", None)
    if bos_id is None or not 0 <= bos_id < len(tokens):
        raise FileProblem(
            f"{file.path} adds a BOS token whose id {bos_id!r} is not in its vocabulary of "
            f"{len(tokens)} tokens; the tokenizer is damaged."
        )
    bos = tokens[bos_id]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, bos_id)]
    )


def describe_pre_tokenizer(file: GgufFile) -> str:
    """How the text is split before BPE, in words ("digits one by one, then GPT-2's split")."""
    name = setting(file, "tokenizer.ggml.pre", "default")
    return PRE_TOKENIZERS.get(name, name)
