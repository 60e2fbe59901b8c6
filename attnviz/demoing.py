"""The examples ``attnviz demo`` shows, computed: the command line's own explain and cross
(attnviz.api) on fixed sentences, and all-MiniLM-L6-v2's heads for "it" when it is installed;
attnviz.render.demo draws them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attnviz.api import crossed, explained, scaling_rows
from attnviz.errors import AttnvizError
from attnviz.explanation import Explanation
from attnviz.selection import Selection, ViewOptions
from attnviz.trace import AttentionTrace
from attnviz.trace_options import TraceOptions

if TYPE_CHECKING:
    from attnviz.render.demo import DemoExamples, ItExample


def demo_examples(*, use_model: bool) -> DemoExamples:
    """The traces ``attnviz demo`` shows, each with what is shown of it; all-MiniLM-L6-v2's
    heads for "it" when it is installed and ``use_model``."""
    from attnviz.render.demo import IT_SENTENCE, DemoExamples, ItExample

    def shown(sentence: str, **view: Any) -> tuple[AttentionTrace, Selection]:
        explanation = explained(sentence, TraceOptions(), ViewOptions(**view))
        return explanation.trace, explanation.selection

    crossing = crossed(
        "I am good", "Je vais bien", TraceOptions(), ViewOptions(head=1, focus="vais")
    )
    from attnviz.model.checkpoint import ModelNotInstalled

    it, problem = None, None
    if use_model:
        try:
            model = explained(
                IT_SENTENCE,
                TraceOptions(model="minilm"),
                ViewOptions(focus="it", hide_special=True),
            )
        except ModelNotInstalled:
            pass  # the random layer, with a hint to install it
        except AttnvizError as error:
            problem = error.message  # installed but broken: the random layer, saying why
        else:
            it = _it_in_the_model(model)
    if it is None:
        it = ItExample(*shown(IT_SENTENCE, focus="it"), None, use_model, problem)
    return DemoExamples(
        i_am_good=shown("I am good", focus="I"),
        thinking=shown("Thinking Machines", head=1, focus="Thinking"),
        it=it,
        crossed=(crossing.trace, crossing.selection),
        scaling=scaling_rows([4, 16, 64, 256, 1024], keys=16, queries=400, seed=0),
    )


def _it_in_the_model(model: Explanation) -> ItExample:
    """The demo's "it" → "animal": where "it" looks most in every head, its heads for "animal",
    and the layer of the most specific one, shown with that head."""
    from attnviz.analysis.heads import focus_survey
    from attnviz.render.demo import ItExample

    animal = model.selection.column_words.index("animal")
    survey = focus_survey(model.layers, model.selection, animal)
    specific = survey.specific
    selection = model.selection._replace(heads=(specific.head - 1,))
    return ItExample(model.layers[specific.layer - 1], selection, survey, True)
