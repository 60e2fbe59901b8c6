"""The tokens step, the first: the sentence as tokens (or a model's word pieces) and their
embeddings X, and where word order comes from."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnviz.errors import option
from attnviz.labels import plural
from attnviz.lesson.blocks import Matrix
from attnviz.lesson.writer import HeadView, LessonWriter
from attnviz.provenance import EmbeddingsKind, Provenance
from attnviz.tokens import printable

PAPER = "as the paper does (Vaswani et al. 2017, §3.5)"


def _from_model(lesson: LessonWriter) -> bool:
    return lesson.trace.provenance.embeddings.kind in (EmbeddingsKind.MODEL, EmbeddingsKind.LAYER)


def _two_sentences(lesson: LessonWriter) -> bool:
    return lesson.trace.is_cross and lesson.trace.X_source is not None


def title(lesson: LessonWriter, head: HeadView | None) -> str:
    if _from_model(lesson):
        unit = "word piece" if lesson.family is None else lesson.family.token_unit
        return f"{unit.capitalize()}s and X, this layer's input"
    if _two_sentences(lesson):
        return "Tokens and embeddings of both sentences"
    return "Tokens and embeddings X"


def write(lesson: LessonWriter, head: HeadView | None) -> None:
    trace = lesson.trace
    if _from_model(lesson):
        _model_pieces(lesson)
    elif _two_sentences(lesson):
        _both_sentences(lesson)
    else:
        padding = trace.provenance.masking.padding
        pad = printable(trace.tokens[-1])
        padded = f", then padded with {padding} {pad}" if padding else ""
        zeros = ""
        if padding:
            zeros = f" The {pad} rows of E are zero vectors" + (
                ", so their rows of X are their positions alone." if trace.PE is not None else "."
            )
        lesson.say(
            f"The sentence is split into {plural(lesson.n - padding, 'token')}{padded}. "
            "Each token becomes one row "
            f"of X, its embedding: a vector of d_model = {trace.d_model} numbers. "
            f"X has shape [n, d_model] = [{lesson.n}, {trace.d_model}]{lesson.shown_rows()}."
            + zeros
        )
    if not trace.is_cross:
        word_order(lesson)
    _embeddings(
        lesson,
        (trace.X, trace.E, trace.PE),
        ("X", "E (tokens)", "PE (positions)", "X = E + PE"),
        source=False,
    )


def _embeddings(
    lesson: LessonWriter,
    arrays: tuple[np.ndarray, np.ndarray | None, np.ndarray | None],
    titles: tuple[str, str, str, str],
    *,
    source: bool,
) -> None:
    """X's table, or E, PE and X = E + PE side by side when positions were added: ``arrays``
    are (X, E, PE) [n, d_model], ``titles`` name X alone, then E, PE and their sum; the rows are
    the queries' words, or with ``source`` the keys' (cross-attention's source sentence)."""
    rows = lesson.selection.key_rows if source else lesson.selection.rows
    labels = lesson.keys if source else lesson.tokens
    columns = lesson.dims(lesson.trace.d_model)
    x, e, pe = arrays
    if e is None or pe is None:
        lesson.show(Matrix(rows(x), titles[0], labels, columns))
        return
    lesson.side_by_side(
        [
            Matrix(rows(m), title, labels, columns)
            for m, title in zip((e, pe, x), titles[1:], strict=True)
        ]
    )


def _model_pieces(lesson: LessonWriter) -> None:
    """A model's pieces, as its family's tokenizer makes them, and X as the layer receives it."""
    trace = lesson.trace
    pieces = (
        f"{lesson.shown_words()} ({option('words')}: each row is the mean of the rows of the word "
        "pieces the model saw, and a word's weight column the sum of its pieces')"
        if lesson.selection.merged
        else plural(
            lesson.n_shown, "word piece" if lesson.family is None else lesson.family.token_unit
        )
    )
    tokenizer = (
        "The model's tokenizer splits the sentence into pieces"
        if lesson.family is None
        else lesson.family.tokenizer
    )
    special = [
        printable(trace.tokens[position])
        for position in trace.provenance.special
        if position < len(trace.tokens) - trace.provenance.masking.padding
    ]
    if special and tokenizer.endswith(", with no special tokens"):
        # This folder's tokenizer adds some after all (its post-processor): say which.
        tokenizer = tokenizer.removesuffix(", with no special tokens")
        tokenizer += f", and this folder's tokenizer adds {', '.join(dict.fromkeys(special))}"
    if trace.provenance.masking.padding:
        tokenizer += f", then the padding ({printable(trace.tokens[-1])})"
    lesson.say(
        f"{tokenizer}; shown here: {pieces}. Row i of X is what this layer receives: "
        f"{trace.provenance.embeddings.describe()}. X has shape [n, d_model] = "
        f"[{lesson.n}, {trace.d_model}]{lesson.shown_rows()}."
    )
    unknown = unknown_sentence(trace.provenance, trace.tokens)
    if unknown:
        lesson.say(unknown)


#: The piece a WordPiece tokenizer writes for text none of its vocabulary's pieces spell.
UNKNOWN = "[UNK]"


def unknown_texts(provenance: Provenance, tokens: Sequence[str]) -> list[str]:
    """The text of the sentence behind each run of [UNK] pieces, in order: what lies between
    the words found before and after it (the tokenizer's words are the sentence as written),
    one whitespace-separated part per [UNK] when their numbers agree, else the whole gap."""
    sentence = provenance.sentence
    texts: list[str] = []
    run = 0  # [UNK] pieces since the last word found
    gap_start = cursor = 0
    groups = [*provenance.groups(len(tokens)), ()]  # () closes the last run
    words = [*provenance.words, ""]
    for group, word in zip(groups, words, strict=True):
        if group and tokens[group[0]] == UNKNOWN:
            run += 1
            continue
        special = bool(group) and group[0] in provenance.special
        found = -1 if special or not word else sentence.find(word, cursor)
        if run and (found >= 0 or not group):
            gap = sentence[gap_start : found if group else len(sentence)].split()
            texts += gap if len(gap) == run else [" ".join(gap)]
            run = 0
        if found >= 0:
            cursor = gap_start = found + len(word)
    return [text for text in texts if text]


def unknown_sentence(provenance: Provenance, tokens: Sequence[str]) -> str:
    """What [UNK] is, and which text of the sentence became it; "" when no piece is [UNK]."""
    count = sum(token == UNKNOWN for token in tokens)
    if not count:
        return ""
    texts = unknown_texts(provenance, tokens)
    which = (
        f": here {' and '.join(repr(printable(text)) for text in texts)}"
        if texts and provenance.sentence
        else ""
    )
    return (
        f"{UNKNOWN} is the tokenizer's unknown piece: it stands for text that no piece of the "
        f"model's vocabulary spells{which}. Every {UNKNOWN} gets the same word embedding, "
        "whatever the text was, so the model cannot tell such texts apart except by where they "
        f"stand; attnviz counts {UNKNOWN} with [CLS] and [SEP] as a special token "
        f"({option('hide_special')} hides it)."
    )


def _both_sentences(lesson: LessonWriter) -> None:
    """Cross-attention's two sentences: the target's X and the source's X_source."""
    trace = lesson.trace
    assert trace.X_source is not None
    lesson.say(
        "Cross-attention, as in a translation model's decoder: each target word asks (its "
        "query) and the source words answer (their keys and values). In the paper the "
        "queries come from the decoder's previous sublayer and the keys and values from "
        "the encoder's final output; here the target's embeddings X and the source's "
        "embeddings X_source stand in for those two. "
        f"X is [n_target, d_model] = [{lesson.n_shown}, {trace.d_model}], X_source "
        f"[n_source, d_model] = [{len(lesson.keys)}, {trace.d_model}]."
    )
    word_order(lesson)
    _embeddings(
        lesson,
        (trace.X_source, trace.E_source, trace.PE_source),
        ("X_source", "E_source", "PE_source", "X_source = E_source + PE_source"),
        source=True,
    )
    lesson.blank()


def word_order(lesson: LessonWriter) -> None:
    """Where word order comes from: learned position embeddings inside a model's X, the
    sinusoidal encoding added here (X = E + PE), or nowhere; each sentence true of this
    trace (the words named are the first two shown with the same row of E, or of X)."""
    embeddings = lesson.trace.provenance.embeddings
    # A layer's input read from a model's export (--embeddings with --layer) is the model's.
    if embeddings.kind in (EmbeddingsKind.MODEL, EmbeddingsKind.LAYER) or embeddings.layer:
        if lesson.family is not None:
            family = lesson.family
            if (embeddings.layer or 1) == 1:
                lesson.say(family.word_order + ".")
            elif family.later_word_order:
                lesson.say(family.later_word_order + ".")
            else:
                lesson.say(
                    family.word_order + "; the order reaches this layer through the layers "
                    "before it."
                )
        return
    if lesson.trace.PE is not None:
        lesson.say(_encoded_positions(lesson))
    elif lesson.trace.rope is not None:
        lesson.say(
            "X holds no positions here: rotary positions turn each head's q and k by their "
            f"word's position after the projections (step {lesson.step_label('rope')}), so the "
            "scores depend on how far "
            "apart the words stand. "
            f"{option('positions', 'sinusoidal')} would add the positions to X instead, {PAPER}."
        )
    elif lesson.trace.K_R is not None:
        lesson.say(
            "X holds no positions here: the latent's decoupled rotary parts, each head's q_R "
            "and the shared k_R, are turned by their word's position after the projections "
            f"(step {lesson.step_label('latent')}), so the scores depend on how far apart the "
            f"words stand. {option('positions', 'sinusoidal')} would add the positions to X "
            f"instead, {PAPER}."
        )
    else:
        lesson.say(_no_positions(lesson))


def _same_rows(lesson: LessonWriter, rows: np.ndarray | None) -> tuple[int, int] | None:
    """The first two shown words (not special tokens) with equal rows: positions."""
    if rows is None:
        return None
    trace = lesson.trace
    seen: dict[bytes, int] = {}
    for position in range(trace.n_tokens):
        if position in trace.provenance.special or lesson.selection.row_of(position) is None:
            continue
        key = np.ascontiguousarray(rows[position]).tobytes()
        if key in seen:
            return seen[key], position
        seen[key] = position
    return None


def _encoded_positions(lesson: LessonWriter) -> str:
    """X = E + PE, the sinusoidal encoding, and two words it tells apart."""
    trace = lesson.trace
    x_names = "X = E + PE"
    if trace.is_cross:
        x_names += " and X_source = E_source + PE_source"
    origin = (
        "counted from 0 in each sentence (the paper adds PE at the bottom of its encoder "
        "and of its decoder)"
        if trace.is_cross
        else "counted from 0"
    )
    text = (
        "Attention alone ignores word order, so each token's embedding E gets its "
        f"position added, {x_names}, {PAPER}: with positions pos {origin}, "
        "PE[pos, 2i] = sin(pos / 10000^(2i/d_model)) in columns 1, 3, … and "
        "PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model)) in columns 2, 4, …, so the first "
        "row of PE is [0, 1, 0, 1, …]."
    )
    twins = _same_rows(lesson, trace.E)
    if twins is not None:
        first, second = twins
        weights_differ = not np.array_equal(trace.weights[:, first], trace.weights[:, second])
        text += (
            f" {lesson.all_queries[first]!r} and {lesson.all_queries[second]!r} share E but "
            "not PE, so their rows of X differ"
            + (", and so do their weights." if weights_differ else ".")
        )
    return text


def _no_positions(lesson: LessonWriter) -> str:
    """Attention without positions: a set of words; two words it cannot tell apart."""
    trace = lesson.trace
    twins = _same_rows(lesson, trace.X)
    if trace.is_cross:
        text = (
            "Attention alone ignores word order: permuting the target words only permutes "
            "the rows of every result below, and permuting the source words only permutes "
            "the rows of K and V and the columns of the scores and weights, leaving Z and "
            "the output as they are"
        )
    elif trace.provenance.masking.causal:
        text = "Attention alone ignores word order; here only the causal mask tells positions apart"
    elif lesson.brief:
        text = (
            "Attention alone ignores word order: permuting the words only permutes the rows "
            "(and the columns) of every table below"
        )
    else:
        text = (
            "Attention alone ignores word order: it treats the sentence as a set of words. "
            "Permuting the words permutes the rows of X, Q, K, V, Z and the output, and the "
            "rows and the columns of the scores and weights, alike: no number changes, "
            "only where it stands"
        )
    if twins is not None:
        pair = f"{lesson.all_queries[twins[0]]!r} and {lesson.all_queries[twins[1]]!r}"
        if trace.tokens[twins[0]] != trace.tokens[twins[1]]:
            pair += (
                " (the same word, case aside)"
                if lesson.brief
                else " (one word once case is ignored, as embeddings are looked up)"
            )
        if trace.provenance.masking.causal:
            text += (
                f", so {pair} get identical rows of X, Q, K and V and only the mask gives "
                "them different weights"
            )
        else:
            text += (
                f". Nothing in X says where a word is, so {pair} get identical rows of X and "
                "so identical weights and outputs"
                if not lesson.brief
                else f", and {pair} get identical rows of X, weights and outputs"
            )
    x_names = "X and X_source" if trace.is_cross else "X"
    sinusoidal = option("positions", "sinusoidal")
    return f"{text}. {sinusoidal} adds each word's position to {x_names}, {PAPER}."
