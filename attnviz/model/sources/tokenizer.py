"""A sentence as a pretrained model sees it: token ids, the tokens as shown, which pieces make
one word, which tokens are special.

tokenizer.json (any model the ``tokenizers`` library reads: WordPiece, byte-level BPE, …) or a
BERT vocab.txt. Byte-level BPE pieces ("Ġit", the Ġ standing for a space) are shown as text,
without the space that begins a word: "it". So are SentencePiece-style pieces (Llama 2's,
TinyLlama's: "▁it", the ▁ standing for a space), whose byte-fallback pieces ("<0xC3>", one byte
of a character the vocabulary lacks) are shown as bytes: "<c3>". The tokens a post-processor
adds (a Llama tokenizer's <s> first, BERT's [CLS] and [SEP]) are special tokens.

A model folder's tokenizer is built and run in a child process (``isolated_tokenizer``,
attnviz.model.sources.sandbox), bounded in time and memory and stopped by Ctrl-C at once: a
tokenizer.json is a program the ``tokenizers`` package runs where Python cannot interrupt it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from attnviz.errors import AttnvizError, FileProblem, option, shown_value
from attnviz.files import present
from attnviz.model.sources.checkpoint import read_model_file, read_settings
from attnviz.model.sources.sandbox import (
    IsolatedTokenizer,
    Started,
    is_panic,
    one_line,
    run_isolated,
    start_isolated,
)
from attnviz.model.sources.tensors import INSTALL_EXTRA
from attnviz.model.sources.tokenizer_pieces import (
    Pieces,
    byte_characters,
    is_byte_level,
    is_metaspace,
    pieces,
    pieces_fields,
    pieces_from_fields,
    special_ids,
)

#: How a piece that is only spaces is shown, so that it has a visible label.
SPACE = "␣"
#: How a SentencePiece-style vocabulary writes a space ("▁it" is " it").
METASPACE = "▁"
#: tokenizer.json and vocab.txt are read whole: about 1 MB for GPT-2's 50,257 pieces, some
#: 30 MB for the largest vocabularies.
TOKENIZER_MAX_BYTES = 256_000_000
#: Tokens a tokenizer may add to one a byte of the sentence (special tokens, a prefix space)
#: before the text is said to have grown.
GROWTH_ALLOWED = 16


@dataclass(frozen=True)
class Encoding:
    """A sentence as the model sees it."""

    ids: tuple[int, ...]  # [n] vocabulary ids, special tokens included
    tokens: tuple[str, ...]  # [n] the tokens as shown: "##ization", "it", "[CLS]"
    offsets: tuple[tuple[int, int], ...]  # [n] (start, end) of each piece in the sentence
    sentence: str
    special: tuple[int, ...] = ()  # positions of the special tokens ([CLS], [SEP], padding)
    # [n] the pre-tokenized word each piece comes from (None for special tokens)
    word_ids: tuple[int | None, ...] = ()

    def words(self) -> tuple[tuple[tuple[int, ...], ...], tuple[str, ...]]:
        """The pieces grouped into words as the tokenizer's own pre-tokenizer cut the sentence,
        and those words as written in the sentence.

        A group is a word and its continuation pieces: WordPiece's "un", "##bel", "##ie",
        "##vable"; byte-level BPE's " un", "bel", "iev", "able". Punctuation is a word of its
        own, as both tokenizers treat it ("unbelievable," is "unbelievable" and ","; BERT's
        "didn't" is "didn", "'", "t"). A special token is a group of its own; a piece that is only
        a space (byte-level BPE before a rare character) joins the word that follows it.
        """
        groups: list[list[int]] = []
        previous: int | None = None
        for position, word in enumerate(self.word_ids or (None,) * len(self.ids)):
            if word is not None and word == previous and position not in self.special:
                groups[-1].append(position)
            else:
                groups.append([position])
            previous = None if position in self.special else word
        merged: list[list[int]] = []
        for group in groups:
            if (
                group[0] not in self.special
                and merged
                and (self._only_space(merged[-1]) or self._marks_after(merged[-1], group))
            ):
                merged[-1].extend(group)
            else:
                merged.append(group)
        labels = [
            self.tokens[group[0]]
            if group[0] in self.special
            else self.sentence[self.offsets[group[0]][0] : self._end(group[-1])].strip()
            for group in merged
        ]
        return tuple(tuple(group) for group in merged), tuple(labels)

    def _marks_after(self, before: list[int], group: list[int]) -> bool:
        """Whether ``group`` starts with a combining mark right after ``before`` (not special):
        a pre-tokenizer that cuts "café" written e + U+0301 into "cafe" and the accent; the
        mark belongs to the letter before it, as attnviz's own tokenizer keeps it."""
        start = self.offsets[group[0]][0]
        return (
            before[-1] not in self.special
            and 0 < start < len(self.sentence)
            and self.offsets[before[-1]][1] == start
            and unicodedata.category(self.sentence[start])[0] == "M"
        )

    def _end(self, position: int) -> int:
        """Where the piece at ``position`` ends in the sentence, with the combining marks after
        it that no piece holds: a normalizer that strips accents (BERT's) maps "cafe" + U+0301
        to "cafe" without the accent, yet the word written is "café"."""
        end = self.offsets[position][1]
        held = {start for start, stop in self.offsets if stop > start}
        while (
            end < len(self.sentence)
            and end not in held
            and unicodedata.category(self.sentence[end])[0] == "M"
        ):
            end += 1
        return end

    def _only_space(self, group: list[int]) -> bool:
        """Whether the pieces of ``group`` are only whitespace (and not special)."""
        if group[0] in self.special:
            return False
        return not "".join(self.sentence[a:b] for a, b in (self.offsets[i] for i in group)).strip()

    def padded(self, length: int, pad_id: int, pad_token: str) -> Encoding:
        """The encoding with ``pad_token`` appended up to ``length`` tokens, as special tokens."""
        extra = length - len(self.ids)
        n = len(self.ids)
        return replace(
            self,
            ids=self.ids + (pad_id,) * extra,
            tokens=self.tokens + (pad_token,) * extra,
            offsets=self.offsets + ((0, 0),) * extra,
            word_ids=self.word_ids + (None,) * extra,
            special=self.special + tuple(range(n, length)),
        )


def isolated_tokenizer(folder: Path) -> IsolatedTokenizer:
    """The folder's tokenizer (as ``load_tokenizer`` reads it), built only in the child process
    that ``encode`` and ``token_text`` run it in; problems with its files are found there."""
    for name in ("tokenizer.json", "vocab.txt"):
        if _present(folder / name):
            return IsolatedTokenizer(partial(load_tokenizer, folder), str(folder / name))
    return IsolatedTokenizer(partial(load_tokenizer, folder), f"{folder}'s tokenizer")


def load_tokenizer(folder: Path) -> Any:
    """The folder's tokenizer: tokenizer.json (padding and truncation off), else vocab.txt."""
    try:
        from tokenizers import Tokenizer
        from tokenizers.implementations import (  # type: ignore[attr-defined]
            BertWordPieceTokenizer,
        )
    except ImportError:
        raise AttnvizError(f"{option('model')} needs the optional extra: {INSTALL_EXTRA}") from None
    if _present(folder / "tokenizer.json"):
        path = folder / "tokenizer.json"
        text = _text(path)
        try:
            tokenizer = Tokenizer.from_str(text)
        except Exception as error:  # tokenizers raises a bare Exception
            raise FileProblem(f"{path} cannot be read as a tokenizer ({error}).") from None
        # A shipped tokenizer.json may pad and truncate to 128 tokens; the model sees neither.
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return tokenizer
    if _present(folder / "vocab.txt"):
        path = folder / "vocab.txt"
        vocabulary, lowercase = _vocabulary(path), _lowercase(folder)
        try:
            return BertWordPieceTokenizer(vocabulary, lowercase=lowercase)
        except Exception as error:  # tokenizers raises TypeError or a bare Exception
            raise FileProblem(f"{path} is not a WordPiece vocabulary ({error}).") from None
    raise FileProblem(f"{folder} has no tokenizer.json or vocab.txt; add the tokenizer files.")


def _present(path: Path) -> bool:
    """Whether ``path`` is there, a link to nothing included (reading it says so)."""
    return present(path)


def _text(path: Path) -> str:
    """A tokenizer file, read whole only if it is a regular file of a sensible size."""
    content = read_model_file(path, TOKENIZER_MAX_BYTES)
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise FileProblem(
            f"{path} is not UTF-8 text (byte {error.start}); it is not a {path.name}."
        ) from None


def _vocabulary(path: Path) -> dict[str, int]:
    """vocab.txt: one word piece a line, its id the line's number from 0, as the tokenizers
    library reads it (trailing spaces dropped; a piece given twice keeps its last line)."""
    lines = _text(path).split("\n")
    if lines and not lines[-1]:
        lines.pop()  # the newline that ends the last line
    if not lines:
        raise FileProblem(
            f"{path} is empty; a vocab.txt lists the model's word pieces, one a line."
        )
    return {line.rstrip(): index for index, line in enumerate(lines)}


def encode(tokenizer: Any, sentence: str, max_positions: int) -> Encoding:
    """``sentence`` as ids and shown tokens; AttnvizError when it needs more positions than the
    model has (it is refused, not truncated), or when the tokenizer leaves nothing of it.
    An IsolatedTokenizer splits it in a child process (attnviz.model.sources.sandbox); a
    ``tokenizers.Tokenizer`` here, its failures made one sentence all the same."""
    _check_text(sentence)
    if isinstance(tokenizer, IsolatedTokenizer):
        fields = run_isolated(
            lambda: _fields(_encode(tokenizer.build(), sentence, max_positions, tokenizer.source)),
            tokenizer.source,
        )
        return _from_fields(fields, sentence)
    return _encode(tokenizer, sentence, max_positions)


def encode_with_pieces(
    tokenizer: Any, sentence: str, max_positions: int
) -> tuple[Encoding, Pieces]:
    """``encode`` and the tokenizer's ``pieces`` (to write generated ids back as text) in one
    child process, which builds the tokenizer once."""
    return start_encode_with_pieces(tokenizer, sentence, max_positions).result()


class Reading:
    """``encode_with_pieces`` begun (``start_encode_with_pieces``): ``result`` gives its answer,
    or raises what it would have raised; ``cancel`` ends a child no longer wanted."""

    def __init__(self, answer: Any, started: Started | None = None, sentence: str = "") -> None:
        self._answer = answer  # (Encoding, Pieces), or the AttnvizError to raise
        self._started = started
        self._sentence = sentence

    def result(self) -> tuple[Encoding, Pieces]:
        if self._started is not None:
            fields = self._started.result()
            return _from_fields(fields["encoding"], self._sentence), pieces_from_fields(
                fields["pieces"]
            )
        if isinstance(self._answer, AttnvizError):
            raise self._answer
        answer: tuple[Encoding, Pieces] = self._answer
        return answer

    def cancel(self) -> None:
        if self._started is not None:
            self._started.cancel()


def start_encode_with_pieces(tokenizer: Any, sentence: str, max_positions: int) -> Reading:
    """``encode_with_pieces`` begun: an IsolatedTokenizer's child process started, to be read
    later (the caller meanwhile reads the model's weights); any other tokenizer's answer now.
    What it refuses is raised by ``result``, where encode_with_pieces would raise it."""
    try:
        _check_text(sentence)
        if not isinstance(tokenizer, IsolatedTokenizer):
            return Reading((_encode(tokenizer, sentence, max_positions), pieces(tokenizer)))
    except AttnvizError as refused:
        return Reading(refused)

    def work() -> dict[str, Any]:
        built = tokenizer.build()
        encoding = _encode(built, sentence, max_positions, tokenizer.source)
        return {"encoding": _fields(encoding), "pieces": pieces_fields(pieces(built))}

    return Reading(None, start_isolated(work, tokenizer.source), sentence)


def _fields(encoding: Encoding) -> dict[str, Any]:
    """An Encoding as JSON, the sentence left out (the parent has it)."""
    fields = asdict(encoding)
    del fields["sentence"]
    return fields


def _from_fields(fields: dict[str, Any], sentence: str) -> Encoding:
    return Encoding(
        ids=tuple(int(i) for i in fields["ids"]),
        tokens=tuple(str(token) for token in fields["tokens"]),
        offsets=tuple((int(a), int(b)) for a, b in fields["offsets"]),
        sentence=sentence,
        special=tuple(int(i) for i in fields["special"]),
        word_ids=tuple(None if word is None else int(word) for word in fields["word_ids"]),
    )


def _check_text(sentence: str) -> None:
    """Refuse bytes the command line could not decode, before any tokenizer sees them."""
    undecoded = [character for character in sentence if "\udc80" <= character <= "\udcff"]
    if undecoded:
        # Bytes the command line could not decode, kept as surrogates (PEP 383): no text to split.
        shown = " ".join(f"\\x{ord(character) - 0xDC00:02x}" for character in undecoded[:3])
        raise AttnvizError(
            f"The sentence holds bytes that are not UTF-8 text ({shown}); the model reads text: "
            "give the sentence in UTF-8, as a UTF-8 terminal or locale sends it."
        )


def _split(tokenizer: Any, sentence: str, source: str) -> Any:
    """The tokenizers package's encoding of ``sentence``; its failures (a bare Exception, or a
    Rust panic as pyo3's PanicException, a BaseException) as one FileProblem."""
    try:
        return tokenizer.encode(sentence)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:
        if not (isinstance(error, Exception) or is_panic(error)):
            raise  # attnviz.signals' Interrupted, and the like
        raise FileProblem(
            f"{source} cannot split the sentence ({one_line(error)}); fix the tokenizer or use "
            "another model."
        ) from None


def _encode(
    tokenizer: Any, sentence: str, max_positions: int, source: str = "The model's tokenizer"
) -> Encoding:
    """``encode`` for a ``tokenizers.Tokenizer``, in this process (``source`` names it)."""
    encoded = _split(tokenizer, sentence, source)
    if len(encoded.ids) > max(max_positions, GROWTH_ALLOWED + len(sentence.encode("utf-8"))):
        # More tokens than the sentence has bytes: the tokenizer made the text grow.
        raise FileProblem(
            f"{source} turns the sentence's {len(sentence)} characters into "
            f"{len(encoded.ids):,} tokens (the model has {max_positions} positions): its "
            "normalizer or pre-tokenizer makes the text grow; fix the tokenizer or use another "
            "model."
        )
    if len(encoded.ids) > max_positions:
        raise AttnvizError(
            f"The sentence is {len(encoded.ids)} tokens as the model splits it (special tokens "
            f"included); the model has {max_positions} "
            f"{'position' if max_positions == 1 else 'positions'}. Shorten it."
        )
    if all(encoded.special_tokens_mask):  # none, or only those the tokenizer adds
        added = f"only the {len(encoded.ids)} special tokens it adds" if encoded.ids else "no token"
        raise AttnvizError(
            f"{source} leaves nothing of the sentence ({added}): its normalizer removes every "
            "character given. Give other words, or fix the tokenizer's normalizer."
        )
    if is_byte_level(tokenizer) or is_metaspace(tokenizer):
        tokens = tuple(token_text(tokenizer, i) for i in encoded.ids)
    else:
        tokens = tuple(encoded.tokens)
    specials = special_ids(tokenizer)
    # Added by the tokenizer ([CLS], [SEP], <s>), or written in the sentence (<|endoftext|>).
    special = tuple(
        i
        for i, (flag, token_id) in enumerate(
            zip(encoded.special_tokens_mask, encoded.ids, strict=True)
        )
        if flag or token_id in specials
    )
    offsets = tuple((int(a), int(b)) for a, b in encoded.offsets)
    if is_metaspace(tokenizer):
        word_ids = _metaspace_words(sentence, encoded.tokens, offsets, special)
    else:
        word_ids = tuple(None if word is None else int(word) for word in encoded.word_ids)
    return Encoding(
        ids=tuple(encoded.ids),
        tokens=tokens,
        offsets=offsets,
        sentence=sentence,
        word_ids=word_ids,
        special=special,
    )


def _metaspace_words(
    sentence: str,
    pieces: Sequence[str],
    offsets: Sequence[tuple[int, int]],
    special: Sequence[int],
) -> tuple[int | None, ...]:
    """The word each SentencePiece-style piece belongs to, as byte-level BPE's pre-tokenizer
    would cut the sentence: a piece that begins with ▁ begins a word, punctuation is a word of
    its own, and the byte pieces of one character stay together. (Llama 2's tokenizer has no
    pre-tokenizer: the tokenizers library puts every piece in word 0.)"""
    words: list[int | None] = []
    word = -1
    previous: tuple[int, int] | None = None  # the last piece's offsets

    def punctuation(span: tuple[int, int]) -> bool:
        text = sentence[span[0] : span[1]].strip()
        return bool(text) and not any(character.isalnum() for character in text)

    for position, (piece, span) in enumerate(zip(pieces, offsets, strict=True)):
        if position in special:
            words.append(None)
            previous = None
            continue
        joins = previous is not None and (
            span == previous
            or not (piece.startswith(METASPACE) or punctuation(span) or punctuation(previous))
        )
        if not joins:
            word += 1
        words.append(word)
        previous = span
    return tuple(words)


def token_text(tokenizer: Any, token_id: int) -> str:
    """How the token ``token_id`` is shown: as the tokenizer writes it, or for byte-level BPE
    the text its bytes spell ("Ġit" is " it", shown "it"), or its bytes in hex when they are
    only part of a character ("<e2 80>"). An IsolatedTokenizer answers from a child process."""
    if isinstance(tokenizer, IsolatedTokenizer):
        text = run_isolated(lambda: token_text(tokenizer.build(), token_id), tokenizer.source)
        return str(text)
    token = str(tokenizer.id_to_token(token_id))
    if token_id in special_ids(tokenizer):
        return token
    if is_metaspace(tokenizer):
        return _metaspace_text(token)
    if not is_byte_level(tokenizer):
        return token
    characters = byte_characters()
    if any(character not in characters for character in token):
        return token
    raw = bytes(characters[character] for character in token)
    try:
        return _shown(raw.decode("utf-8"))
    except UnicodeDecodeError:
        if raw.startswith(b" ") and len(raw) > 1:
            raw = raw[1:]  # the space that begins a word, left out as for whole characters
        return "<" + " ".join(f"{byte:02x}" for byte in raw) + ">"


def _metaspace_text(token: str) -> str:
    """A SentencePiece-style piece as shown: "▁it" as "it", "▁" as "␣", a byte-fallback piece
    as its character ("<0x5A>" as "Z") or, when the byte is part of one, as the byte, "<c3>"
    (as byte-level BPE's partial characters are shown)."""
    match = re.fullmatch(r"<0x([0-9A-Fa-f]{2})>", token)
    if match:
        byte = int(match.group(1), 16)
        if byte == 0x20:
            return SPACE
        # A printable ASCII byte is a whole character; any other is part of one (or a control).
        return chr(byte) if 0x20 < byte < 0x7F else f"<{byte:02x}>"
    return _shown(token.replace(METASPACE, " "))


def _shown(text: str) -> str:
    """A decoded piece as a label: without the space that begins a word; spaces made visible
    when the piece is nothing else."""
    if text.startswith(" ") and text.strip():
        return text[1:]
    if text and not text.strip(" "):
        return SPACE * len(text)
    return text


def _lowercase(folder: Path) -> bool:
    """Whether vocab.txt's pieces are lowercase: tokenizer_config.json's do_lower_case, true when
    there is none (as in BERT's uncased models)."""
    path = folder / "tokenizer_config.json"
    if not _present(path):
        return True
    value = read_settings(path).get("do_lower_case", True)
    if not isinstance(value, bool):
        raise FileProblem(f"{path}: do_lower_case is {shown_value(value)}, not true or false.")
    return value
