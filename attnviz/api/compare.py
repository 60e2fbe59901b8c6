"""``attnviz.compare``: a focus word's attention in two sentences, head by head.

>>> import attnviz
>>> pair = attnviz.compare("The cat sat because it was tired", "The cat sat because it was wide")
>>> pair.comparison.alignment.only_a, pair.comparison.alignment.only_b
((6,), (6,))
>>> 0.0 <= pair.comparison.heads[0].tv <= 1.0
True
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from attnviz.analysis.compare import Comparison, align_words, compare_rows
from attnviz.api.explain import explained
from attnviz.api.explanation import Explanation
from attnviz.api.surface import Progress, Surface
from attnviz.api.writing import check_outputs
from attnviz.arguments import digits, sentences
from attnviz.errors import AttnvizError, listed, option, spelled
from attnviz.limits import check_compare_picture
from attnviz.model_limits import Work, planned
from attnviz.options import Options, ViewOptions, options_from
from attnviz.selection import Selection, select
from attnviz.serial import one_at_a_time
from attnviz.tokens import printable, word_key

DEFAULT_FOCUS = "it"


@dataclass(frozen=True, eq=False)
class Compared:
    """Two sentences traced alike, seen through one focus word, and the comparison of its rows:
    ``a`` and ``b`` are each sentence's Explanation (``.selection`` follows the focus word),
    ``comparison`` every head ranked by how much the row changed (analysis.compare)."""

    a: Explanation
    b: Explanation
    comparison: Comparison

    def __repr__(self) -> str:
        moved = len(self.comparison.moved)
        return (
            f"<Compared: {self.comparison.focus!r} in {len(self.comparison.heads)} heads, "
            f"moves in {moved}; largest TV {self.comparison.heads[0].tv:.2f}>"
        )


def compared(
    sentence_a: str, sentence_b: str, options: Options, *, progress: Progress | None = None
) -> Compared:
    """Both sentences traced with the same options, the focus word (``view.focus``, "it" by
    default) found in each, and every head's rows compared: ``attnviz compare``'s path.
    ``view.layer`` (with a model) keeps one layer, ``view.head`` one head."""
    view = options.view
    unfocused = replace(options, view=view._replace(focus=None))
    # Both runs are held at once: each model run is checked as two (model_limits.check_model_run).
    with planned(Work(what=spelled("compare", "compare()"), runs=2)):
        a = explained(sentence_a, unfocused, progress=progress)
        b = explained(sentence_b, unfocused, progress=progress)
    spec = view.focus or DEFAULT_FOCUS
    focused = view._replace(layer=None, focus=spec)
    selection_a = _focused(a, b, focused, "A", sentence_a)
    word, colon, occurrence = spec.rpartition(":")
    in_a_only = word if colon and word and digits(occurrence) else spec  # it:2 counts in A
    _focused(b, a, focused._replace(focus=in_a_only), "B", sentence_b)  # refuses a word B lacks
    selection_a, selection_b = _aligned_focus(a, b, selection_a, focused)
    a = replace(a, selection=selection_a, view=a.view._replace(focus=view.focus))
    b = replace(b, selection=selection_b, view=b.view._replace(focus=view.focus))
    chosen = a.view.layer is not None and a.is_model_run
    layers = [a.layers.index(a.trace) + 1] if chosen else list(range(1, len(a.layers) + 1))
    rows_a = np.stack([selection_a.focus_weights(a.layers[n - 1].weights) for n in layers])
    rows_b = np.stack([selection_b.focus_weights(b.layers[n - 1].weights) for n in layers])
    assert selection_a.focus is not None  # _focused found it
    comparison = compare_rows(
        rows_a,
        rows_b,
        selection_a.column_words,
        selection_b.column_words,
        focus=selection_a.focus.label,
        layers=layers,
        heads=selection_a.heads,
        n_layers=len(a.layers),
    )
    return Compared(a, b, comparison._replace(fixed_by_mask=_fixed_by_mask(a, b)))


def _fixed_by_mask(a: Explanation, b: Explanation) -> str:
    """The first token after the focus word at which A and B differ, when a causal mask makes
    the focus word's row in every layer a function of the tokens up to it and those are the
    same in both: row i reads positions 1..i only, in every layer, so the residual stream at
    positions 1..i, and every weight those rows hold, is the same computation in A and in B.
    "" when the rows can differ."""
    causal = a.trace.provenance.masking.causal and b.trace.provenance.masking.causal
    if not causal or a.selection.focus_row is None or b.selection.focus_row is None:
        return ""
    last_a = max(a.selection.row_groups[a.selection.focus_row])
    last_b = max(b.selection.row_groups[b.selection.focus_row])
    tokens_a, tokens_b = a.trace.tokens, b.trace.tokens
    if last_a != last_b or tokens_a[: last_a + 1] != tokens_b[: last_b + 1]:
        return ""
    # Layer 1's X is a row-by-row lookup (an embedding, a position, a norm): the same token at
    # the same position gives the same row, up to the rounding of a reduction of another length
    # (float32 relative error ~1e-6). A source whose rows depend on the whole sentence fails.
    first_a, first_b = a.layers[0].X[: last_a + 1], b.layers[0].X[: last_b + 1]
    if not np.allclose(first_a, first_b, rtol=1e-5, atol=1e-6):
        return ""
    differ = next(
        (i for i, (x, y) in enumerate(zip(tokens_a, tokens_b, strict=False)) if x != y),
        min(len(tokens_a), len(tokens_b)),
    )
    if differ >= max(len(tokens_a), len(tokens_b)):
        return ""  # the same sentence twice: equal rows say nothing of the mask
    after = tokens_a[differ] if differ < len(tokens_a) else tokens_b[differ]
    return printable(after)


def notes(pair: Compared) -> tuple[str, ...]:
    """What the person should be told of both traces, each note once."""
    return tuple(dict.fromkeys((*pair.a.notes, *pair.b.notes)))


def _column_of(selection: Selection) -> int:
    """The shown column that holds the focus word's first piece."""
    assert selection.focus is not None
    index = selection.focus.index
    return next(i for i, group in enumerate(selection.column_groups) if index in group)


def _spec_at(explanation: Explanation, column: int) -> str:
    """A --focus that names exactly the word at ``column``: its first piece and occurrence."""
    tokens = explanation.trace.tokens
    position = explanation.selection.column_groups[column][0]
    word = tokens[position]
    occurrence = sum(word_key(t) == word_key(word) for t in tokens[: position + 1])
    return f"{word}:{occurrence}"


def _aligned_focus(
    a: Explanation, b: Explanation, selection_a: Selection, view: ViewOptions
) -> tuple[Selection, Selection]:
    """The focus word in A and the word aligned with it in B, so that both rows belong to the
    same word of the two sentences. ``it`` names the first "it" of A that B shares (an
    occurrence, ``it:2``, counts in A); one that B's alignment leaves unpaired is refused."""
    words_a, words_b = a.selection.column_words, b.selection.column_words
    partner = dict(align_words(words_a, words_b).pairs)
    column = _column_of(selection_a)
    spec = view.focus or DEFAULT_FOCUS
    if column not in partner and not digits(spec.rpartition(":")[2]):
        same = [i for i, word in enumerate(words_a) if word == words_a[column] and i in partner]
        if same:
            column = same[0]
            selection_a = select(a.trace, view._replace(focus=_spec_at(a, column)))
    if column not in partner:
        shared = [_label(words_a, i) for i in partner if words_a[i] == words_a[column]]
        fix = (
            f"follow the one both share with {option('focus', shared[0])}"
            if shared
            else "follow a word both sentences share"
        )
        raise AttnvizError(
            f"{_label(words_a, column)!r} in sentence A has no partner in sentence B (the words "
            f"are aligned in order); {fix}."
        )
    selection_b = select(b.trace, view._replace(focus=_spec_at(b, partner[column])))
    return selection_a, selection_b


def _label(words: tuple[str, ...], column: int) -> str:
    """A column's word as --focus names it in its sentence: it, or it:2 when it repeats."""
    same = [i for i, word in enumerate(words) if word_key(word) == word_key(words[column])]
    word = printable(words[column])
    return word if len(same) == 1 else f"{word}:{same.index(column) + 1}"


def _focused(
    shown: Explanation, other: Explanation, view: ViewOptions, name: str, sentence: str
) -> Selection:
    """The selection of ``shown`` following the focus word; a word missing from this sentence
    is refused with the sentence named and the words both sentences share."""
    try:
        return select(shown.trace, view)
    except AttnvizError as error:
        if "is not in the sentence" not in str(error):
            raise AttnvizError(f"In sentence {name}: {error}") from None
    columns, special = shown.selection.column_groups, set(shown.trace.provenance.special)
    pairs = align_words(shown.selection.column_words, other.selection.column_words).pairs
    shared = [
        shown.selection.column_words[i] for i, _ in pairs if not special.issuperset(columns[i])
    ]
    words = listed((printable(word) for word in dict.fromkeys(shared)), " ")
    fix = (
        f"follow a word both have with {option('focus', metavar='WORD')}: {words}"
        if words
        else "the sentences share no word to follow"
    )
    cut = sentence if len(sentence) <= 40 else sentence[:39] + "…"
    raise AttnvizError(
        f"The focus word {view.focus!r} is not in sentence {name} ({printable(cut)!r}); {fix}."
    )


@one_at_a_time
def compare(
    sentence_a: str,
    sentence_b: str,
    *,
    model: str | None = None,
    focus: str | None = None,
    layer: int | None = None,
    head: int | None = None,
    words: bool = False,
    hide_special: bool = False,
    heads: int | None = None,
    d_model: int | None = None,
    seed: int = 0,
    preset: str | None = None,
    embeddings: str | Path | None = None,
    oov: str = "error",
    weights: str | Path | None = None,
    dtype: str = "float32",
    causal: bool = False,
    positions: str = "none",
    window: int | None = None,
) -> Compared:
    """Where ``focus`` ("it" by default) looks in ``sentence_a`` and in ``sentence_b``, every
    head ranked by the total variation between its two rows, as ``attnviz compare`` prints it;
    the options are explain()'s. ``layer`` (with a model) and ``head`` keep one of each.

    >>> import attnviz
    >>> tired = "The animal didn't cross the street because it was too tired"
    >>> pair = attnviz.compare(tired, tired.replace("tired", "wide"), model="coref")
    >>> top = pair.comparison.heads[0]
    >>> words = pair.comparison.words_a, pair.comparison.words_b
    >>> top.layer, words[0][top.top_a], words[1][top.top_b], round(top.tv, 2)
    (2, 'animal', 'street', 1.0)
    """
    sentences(sentence_a=sentence_a, sentence_b=sentence_b, model=model)
    options = options_from(
        one_head=True,
        model=model,
        focus=focus,
        layer=layer,
        head=head,
        words=words,
        hide_special=hide_special,
        heads=heads,
        d_model=d_model,
        seed=seed,
        preset=preset,
        embeddings=embeddings,
        oov=oov,
        weights=weights,
        dtype=dtype,
        causal=causal,
        positions=positions,
        window=window,
    )
    pair = compared(sentence_a, sentence_b, options)
    for message in notes(pair):
        warnings.warn(message, UserWarning, stacklevel=2)
    return pair


def run(
    sentences: tuple[str, str],
    options: Options,
    surface: Surface,
    *,
    top: int = 20,
    output: Path | None = None,
) -> None:
    """``attnviz compare A B [-o IMAGE]``: the report printed, each listed head's two rows drawn;
    the picture counted before the report, so that a refusal leaves no half of it done."""
    from attnviz.render.terminal.compare_report import render_comparison

    if top < 1:
        raise AttnvizError(f"--top {top}: give 1 or more.")
    check_outputs(None, (output, "--output"))
    with surface.reading(options.trace.embeddings) as progress:
        pair = compared(*sentences, options, progress=progress)
    if output is not None:
        alignment = pair.comparison.alignment
        slots = len(alignment.pairs) + len(alignment.only_a) + len(alignment.only_b)
        check_compare_picture(min(top, len(pair.comparison.heads)), slots, path=output)
    surface.notes(notes(pair))
    weights = pair.a.trace.provenance.weights
    render_comparison(pair.comparison, sentences, weights, surface.console(), top=top)
    if output is not None:
        from attnviz.render.figures.compare_figure import save_comparison_figure

        save_comparison_figure(
            pair.comparison, output, top=top, sentences=sentences, weights=weights
        )
        surface.wrote(output)
