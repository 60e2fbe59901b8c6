"""``attnviz.page``: the interactive lesson page of one sentence, or of two compared.

    >>> import attnviz
    >>> lesson_page = attnviz.page(attnviz.explain("I am good"), open_head=2)
    >>> lesson_page.html.lower().startswith("<!doctype html>")
    True

``attnviz page`` takes the same path: ``page_html`` for one sentence (``--open-head N``) and
``compared_page_html`` for ``--compare B``, each with the lesson's options (``--decimals``,
``--steps``, ``--block``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from attnviz.api.compare import Compared, compared, notes
from attnviz.api.explain import explained_on
from attnviz.api.explanation import Explanation, Page, Shown, explanation_of
from attnviz.api.surface import Surface
from attnviz.arguments import steps_text, whole
from attnviz.errors import AttnvizError, option, quoted
from attnviz.layer_limits import check_page, page_counted
from attnviz.lesson import steps as table
from attnviz.lesson.options import LessonOptions, parse_steps
from attnviz.lesson.steps import focus_number, last_plain_number
from attnviz.limits import check_lesson
from attnviz.options import Options
from attnviz.selection import choose_layer
from attnviz.serial import one_at_a_time


@one_at_a_time
def page(
    shown: Shown | Compared,
    *,
    decimals: int = 2,
    open_head: int | None = None,
    steps: str | int | Iterable[int] | None = None,
    block: int | None = None,
) -> Page:
    """The interactive lesson page: click a word to see where it looks and every number of its
    steps, beside what each word adds (‖w_ij·f_h(x_j)‖), the head's type and, with a model,
    rollout through the layers below; step by step with the arrow keys. Display it in a
    notebook, or ``.save("lesson.html")``.

    ``shown``: what explain() returns (or a bare trace), or what compare() returns, whose page
    shows sentence A with the comparison of both sentences. ``open_head`` (from 1) is the head
    the page opens on, every head staying in its menu (``head=`` keeps one head alone).
    ``steps`` ("4-6", "1,3-5", 4 or [4, 5, 6]) keeps only those steps, as in ``lesson``;
    "5,6,blockwise" adds the blockwise step, the softmax and z a ``block`` of keys at a time
    (FlashAttention's), for each head.

    >>> import attnviz
    >>> tired = "The cat sat because it was tired"
    >>> pair = attnviz.compare(tired, tired.replace("tired", "wide"))
    >>> "Sentence B: {sentence}" in attnviz.page(pair).html
    True
    """
    whole(decimals=decimals, open_head=open_head)
    options = LessonOptions(decimals=decimals, steps=steps_text(steps), block=block)
    if isinstance(shown, Compared):
        return Page(compared_page_html(shown, None, options, open_head=open_head))
    explanation = explanation_of(shown, "page")
    return Page(page_html(explanation, options, open_head=open_head))


def run(
    sentences: tuple[str, str | None],
    options: Options,
    lesson: LessonOptions,
    output: Path,
    surface: Surface,
    *,
    open_head: int | None = None,
) -> None:
    """``attnviz page SENTENCE [--compare B] -o PAGE``: the page's size counted before the runs,
    the page written."""
    from attnviz.files import check_output_path

    sentence, compare = sentences
    view = options.view
    check_output_path(output, (".html", ".htm"), "--output")
    fewer_rows, one_head = view.words or view.hide_special, view.head is not None
    counted = page_counted(fewer_rows, one_head, two_sentences=compare is not None)
    if compare is None:
        with counted:
            explanation = explained_on(sentence, options, surface)
        html = page_html(explanation, lesson, open_head=open_head)
    else:
        every_layer = replace(options, view=view._replace(layer=None))
        with surface.reading(options.trace.embeddings) as progress, counted:
            pair = compared(sentence, compare, every_layer, progress=progress)
        surface.notes(notes(pair))
        html = compared_page_html(pair, view.layer, lesson, open_head=open_head)
    Page(html).save(output)
    surface.wrote(output)


def page_html(
    explanation: Explanation, lesson: LessonOptions, *, open_head: int | None = None
) -> str:
    """The page of one explained sentence, with ``lesson``'s decimals and steps, opening on
    head ``open_head`` (from 1) if given."""
    from attnviz.analysis.analyses import PAGE
    from attnviz.render.page.page import page_html as render

    _has_words(explanation)
    _has_steps(explanation, lesson)
    shown = explanation.selection
    check_lesson(len(shown.heads), shown.n_rows, shown.n_columns)  # the page tells it too
    check_page(len(explanation.layers), len(shown.heads), shown.n_rows, shown.n_columns)
    return render(
        explanation.analyses(PAGE),
        explanation.trace,
        explanation.selection,
        lesson.decimals,
        start_head=_start_head(explanation, open_head),
        steps=lesson.steps,
        block=lesson.block,
    )


def compared_page_html(
    pair: Compared, layer: int | None, lesson: LessonOptions, *, open_head: int | None = None
) -> str:
    """The page of sentence A with the comparison of both, with ``lesson``'s decimals and
    steps, opening on model layer ``layer`` (from 1; None: the layer ``pair.a`` shows) and
    head ``open_head`` (from 1) if given; with neither, on the head whose row changed most."""
    from attnviz.analysis.analyses import PAGE
    from attnviz.render.page.page import ComparedWith
    from attnviz.render.page.page import page_html as render

    explanation = pair.a
    if layer is not None:
        explanation = replace(explanation, trace=choose_layer(explanation.layers, layer))
    elif open_head is None:
        # Nothing asked: open on the head whose row changed most, in its layer.
        top = pair.comparison.heads[0]
        explanation = replace(explanation, trace=explanation.layers[top.layer - 1])
        open_head = top.head
    _has_words(explanation)
    _has_steps(explanation, lesson)
    shown = explanation.selection  # sentence B's layers go into the page beside A's
    n_layers = len(explanation.layers) + len(pair.b.layers)
    rows = max(shown.n_rows, pair.b.selection.n_rows)
    check_page(n_layers, len(shown.heads), rows, max(shown.n_columns, pair.b.selection.n_columns))
    b = pair.b.trace
    compared = ComparedWith(
        b.provenance.sentence or " ".join(b.tokens),
        pair.comparison,
        b.provenance.weights,
        pair.b.layers,
        pair.b.selection,
    )
    return render(
        explanation.analyses(PAGE),
        explanation.trace,
        explanation.selection,
        lesson.decimals,
        start_head=_start_head(explanation, open_head),
        compared=compared,
        steps=lesson.steps,
        block=lesson.block,
    )


def _has_words(explanation: Explanation) -> None:
    if not explanation.trace.tokens:
        raise AttnvizError("This trace has no words, so there is no page to draw.")


def _has_steps(explanation: Explanation, lesson: LessonOptions) -> None:
    """Refuses steps that name the focus view alone: the page's picture is that view, for any
    word, so such a page would have no step to go through."""
    if lesson.steps is None:
        return
    trace = explanation.trace
    focus = focus_number(table.STEPS, trace)
    if parse_steps(lesson.steps, trace) == {focus}:
        raise AttnvizError(
            f"{option('steps', metavar=quoted(lesson.steps))}: step {focus} is the focus view, "
            "which the page always shows as its picture; name steps to go through beside it, "
            f"e.g. 1-{last_plain_number(table.STEPS, trace)} or {table.named_example(trace)}."
        )


def _start_head(explanation: Explanation, open_head: int | None) -> int | None:
    """``open_head`` (from 1) as the trace's head (from 0), refused when it does not exist or
    when ``head`` keeps another head alone."""
    if open_head is None:
        return None
    n_heads = explanation.trace.n_heads
    if not 1 <= open_head <= n_heads:
        raise AttnvizError(
            f"{option('open_head', open_head)} does not exist; heads are numbered 1 to {n_heads}."
        )
    shown = explanation.selection.heads
    if open_head - 1 not in shown:
        kept = option("head", shown[0] + 1)
        raise AttnvizError(
            f"{option('open_head', open_head)}: {kept} keeps head {shown[0] + 1} alone; leave "
            f"out {option('head')} to keep every head and open on head {open_head}."
        )
    return open_head - 1
