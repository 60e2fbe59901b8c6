"""``attnviz heads``: every (layer, head) ranked by where the focus word looks, each head's type
named; with ``--ablate``, each head measured by what removing it changes (attnviz.api.ablate)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnviz import arguments as check
from attnviz.api.explain import explained_on
from attnviz.api.explanation import Explanation, Shown, explanation_of
from attnviz.api.surface import Surface
from attnviz.errors import AttnvizError, option
from attnviz.options import Options
from attnviz.serial import one_at_a_time

if TYPE_CHECKING:
    from attnviz.analysis.heads import HeadRanking, RankBy


def ranked_heads(explanation: Explanation, rank_by: RankBy) -> HeadRanking:
    """Every (layer, head) ranked by where the focus word looks (``attnviz heads``)."""
    if explanation.selection.focus is None:
        raise AttnvizError(
            f"heads follows one word: name it with {option('focus', metavar='WORD')} (the "
            "default, 'it', is not in the sentence)."
        )
    if explanation.trace.is_cross:
        raise AttnvizError(
            "heads ranks self-attention heads, as explain() returns them: in cross-attention "
            "the keys are another sentence's words, so no offset or head type applies."
        )
    from attnviz.analysis.heads import rank_heads  # not on explain's path: its start-up

    return rank_heads(explanation.layers, explanation.selection, rank_by=rank_by)


def run(
    sentence: str,
    options: Options,
    rank_by: RankBy,
    surface: Surface,
    *,
    top: int = 20,
    ablate: bool = False,
) -> None:
    """``attnviz heads``: the ranking, or with ``ablate`` the heads of ``view.layer`` (every
    layer by default) run again one by one, printed; the ``top`` heads listed."""
    from attnviz.render.terminal.heads_report import render_heads

    if top < 1:
        raise AttnvizError(f"--top {top}: give 1 or more.")
    if ablate or options.view.layer is not None:
        from attnviz.api.ablate import ablated
        from attnviz.render.terminal.ablation_report import render_ablation

        if not ablate:
            raise AttnvizError(
                "--layer picks the layer whose heads --ablate runs again; the ranking covers "
                "every layer: add --ablate, or drop --layer."
            )
        ablation, notes = ablated(sentence, options)
        surface.notes(notes)
        render_ablation(ablation, surface.console(), top=top)
        return
    explanation = explained_on(sentence, options, surface)
    ranking = ranked_heads(explanation, rank_by)
    render_heads(ranking, explanation.layers, surface.console(), top=top)


@one_at_a_time
def heads(shown: Shown, *, rank_by: str = "specificity") -> HeadRanking:
    """Every (layer, head) ranked as ``attnviz heads`` ranks them: ``per_word``, each word's
    top heads; ``per_head``, each head's top word; ``types``, each head's type. ``rank_by``:
    "specificity", w − max(key, offset) (``attnviz heads --help``), "selectivity" or "weight".

    >>> import attnviz
    >>> ranking = attnviz.heads(attnviz.explain("The cat sat because it was tired"))
    >>> best = ranking.per_head[0]               # the head most specific to 'it', and where
    >>> f"layer {best.layer}, head {best.head}: {ranking.words[best.target]!r}"
    "layer 1, head 2: 'was'"
    """
    from attnviz.analysis.heads import RankBy

    explanation = explanation_of(shown, "heads")
    return ranked_heads(explanation, check.choice(RankBy, rank_by, "rank_by"))
