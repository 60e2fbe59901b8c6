"""``attnviz cross``: encoder–decoder (cross) attention, queries from one sentence and keys
and values from another, told step by step as explain tells self-attention."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from attnviz import arguments as check
from attnviz.api.explain import explanation_from, one_layer, tell
from attnviz.api.explanation import Explanation, told
from attnviz.api.surface import Progress, Surface
from attnviz.api.writing import Recordings, check_sizes
from attnviz.core import cross_layers
from attnviz.lesson.options import LessonOptions
from attnviz.options import Options, options_from
from attnviz.serial import one_at_a_time


def crossed(
    source: str, target: str, options: Options, *, progress: Progress | None = None
) -> Explanation:
    """Cross-attention as the command line's ``cross`` makes it: queries from ``target``, keys
    and values from ``source``."""
    trace_options, routed = one_layer(options)
    traced = cross_layers(source, target, trace_options, progress=progress)
    return explanation_from(traced, options.view, routed)


def run(
    sentences: tuple[str, str],
    options: Options,
    lesson: LessonOptions,
    to: Recordings,
    surface: Surface,
    *,
    step: bool = False,
    causal: bool = False,
) -> None:
    """``attnviz cross SOURCE TARGET``: the files checked, the lesson printed, the files
    written; ``causal`` is refused by cross_layers, with why."""
    to.check()
    options = replace(options, trace=replace(options.trace, causal=causal))
    with surface.reading(options.trace.embeddings) as progress:
        explanation = crossed(*sentences, options, progress=progress)
    surface.notes(explanation.notes)
    check_sizes(explanation, export=to.export, lesson=lesson, slides=to.slides)
    tell(explanation, lesson, to, surface, step=step)


@one_at_a_time
def cross(
    source: str,
    target: str,
    *,
    layer: int | None = None,
    head: int | str | None = None,
    focus: str | None = None,
    heads: int | None = None,
    d_model: int | None = None,
    seed: int = 0,
    preset: str | None = None,
    embeddings: str | Path | None = None,
    oov: str = "error",
    weights: str | Path | None = None,
    positions: str = "none",
) -> Explanation:
    """Encoder–decoder (cross) attention, as ``attnviz cross`` computes it: the queries come
    from ``target``, the keys and values from ``source``. ``layer`` picks a layer of a model's
    export given as ``weights``.

    >>> import attnviz
    >>> pair = attnviz.cross("I am very good", "Je vais bien", focus="vais")
    >>> pair.trace.weights.shape                 # [heads, target words, source words]
    (2, 3, 4)
    """
    check.sentences(source=source, target=target)
    options = options_from(
        layer=layer,
        head=head,
        focus=focus,
        heads=heads,
        d_model=d_model,
        seed=seed,
        preset=preset,
        embeddings=embeddings,
        oov=oov,
        weights=weights,
        positions=positions,
    )
    return told(crossed(source, target, options))
