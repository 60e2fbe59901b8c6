"""``attnviz.lesson``: the step-by-step lesson of what explain() or cross() returned, as text,
as ``attnviz explain`` prints it."""

from __future__ import annotations

from collections.abc import Iterable

from attnviz import arguments as check
from attnviz.api.explanation import Shown, explanation_of
from attnviz.errors import AttnvizError
from attnviz.lesson.options import LessonOptions
from attnviz.render.options import MAX_WIDTH
from attnviz.serial import one_at_a_time


@one_at_a_time
def lesson(
    shown: Shown,
    *,
    decimals: int = 2,
    show_weights: bool = False,
    steps: str | int | Iterable[int] | None = None,
    width: int = 100,
    color: bool = False,
    show: bool = False,
    block: int | None = None,
    full: bool = False,
) -> str:
    """The step-by-step lesson as ``attnviz explain`` prints it, as text (with ANSI colours
    when ``color``); ``show=True`` also prints it. ``steps`` ("4-6", "1,3-5", 4 or [4, 5, 6])
    keeps only those steps, as --steps does; "5,6,blockwise" adds the softmax a ``block`` of
    keys at a time (FlashAttention's), shown only when named. By default one head is shown in
    full (the first, or the one ``explain``'s ``head`` names; ``head="all"``: every head) and
    every other head gives the focus word's rows; ``full=True`` gives all of the text, every
    explanation with every head shown.

    >>> import attnviz
    >>> text = attnviz.lesson(attnviz.explain("I am good"), width=80)
    >>> text.splitlines()[0]
    'attnviz · multi-head self-attention, step by step'
    >>> scaled = attnviz.lesson(attnviz.explain("I am good"), steps="4")
    >>> "Step 4 ·" in scaled, "Step 3 ·" in scaled
    (True, False)
    """
    import io

    from rich.console import Console

    from attnviz.render.terminal.lesson import render_explain

    explanation = explanation_of(shown, "lesson")
    check.given(decimals=decimals, width=width)
    check.flags(show_weights=show_weights, color=color, show=show, full=full)
    steps = check.steps_text(steps)
    options = explanation.lesson_options(
        LessonOptions(
            decimals=decimals, show_weights=show_weights, steps=steps, block=block, full=full
        )
    )
    explanation.check_lesson(options)
    if width < 40:
        raise AttnvizError(f"width={width} is too narrow for the tables; give 40 or more.")
    if width > MAX_WIDTH:
        raise AttnvizError(
            f"width={width} is wider than the lesson is laid out for; give at most {MAX_WIDTH}."
        )
    console = Console(
        file=io.StringIO(),
        width=width,
        force_terminal=color,
        color_system="truecolor" if color else None,
        no_color=not color,
        highlight=False,
        force_jupyter=False,  # text, also in a notebook, where Rich would display HTML instead
    )
    render_explain(
        explanation.trace,
        explanation.selection,
        console,
        options,
        layers=explanation.layers,
        analyses=explanation.lesson_analyses(),
    )
    printed: str = console.file.getvalue()  # type: ignore[attr-defined]
    if show:
        print(printed, end="")
    return printed
