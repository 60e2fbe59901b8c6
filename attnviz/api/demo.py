"""What ``attnviz demo`` shows, computed: the ten-minute class on the seeds' sentence, "The animal
didn't cross the street because it was too tired". attnviz.render.live.demo draws it.

1. the computation, step by step, on "I am good" (attnviz.api's own explain);
2. the seeds' sentence with random weights: "it" looks where chance puts it;
3. coref, attnviz's toy model trained to point, on "…too tired" and "…too wide";
4. coref-word, which names the noun with an output layer: right answer, attention elsewhere;
5. a few seconds of ``attnviz train coref``, trained live (run by the renderer through
   ``train``, so that its frames show as it trains);
6. all-MiniLM-L6-v2 when it is installed: what a real model does with "it".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from attnviz.api.explain import explained
from attnviz.api.explanation import Explanation
from attnviz.api.surface import Surface
from attnviz.errors import AttnvizError
from attnviz.labels import occurrence_labels
from attnviz.options import Options, TraceOptions, ViewOptions
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from attnviz.render.live.demo import DemoExamples, ItExample, ToyReading
    from attnviz.train.loop import Snapshot
    from attnviz.train.tasks import Task
    from attnviz.train.trained import Trained

TIRED = "The animal didn't cross the street because it was too tired"
WIDE = "The animal didn't cross the street because it was too wide"
FOCUS = "it"


def toy_reading(sentence: str, model: str, referent: str) -> ToyReading:
    """``sentence`` through the shipped toy ``model``: where "it" looks in every layer and what
    it answers."""
    from attnviz.model.run import trace_model
    from attnviz.render.live.demo import Look, ToyReading

    run = trace_model(sentence, model)
    config, answered = run.toy_config, run.answered
    assert config is not None and answered is not None  # a toy model, "it" in the sentence
    words = occurrence_labels(run.trace.tokens)  # "the:1", "the:2", as every table names them
    focus, target = words.index(FOCUS), words.index(referent)
    looks = []
    for layer in run.trace.layers:
        row = np.asarray(layer.weights[0, focus], dtype=np.float64)
        top = int(np.argmax(row))
        looks.append(Look(words[top], float(row[top]), referent, float(row[target])))
    last = np.asarray(run.trace.layers[-1].weights[0, focus], dtype=np.float64)
    return ToyReading(
        model=model,
        sentence=sentence,
        words=tuple(words),
        looks=tuple(looks),
        last_row=tuple(float(w) for w in last),
        answer=answered[1],
        referent=referent,
        readout=config.readout,
        accuracy=config.held_out_accuracy,
        held_out=config.held_out_examples,
        trained_lengths=config.trained_lengths,
        steps=config.steps,
    )


def live_training() -> tuple[Task, Callable[[Callable[[Snapshot], None]], Trained]]:
    """``attnviz train coref``'s task, and the training itself (the pointer readout from seed 0,
    to 99% held-out), to be run as its frames are shown."""
    from attnviz.api import train as training

    task = training.make_task("coref")
    return task, lambda on_snapshot: training.train(task, on_snapshot=on_snapshot)


def demo_examples(*, use_model: bool) -> DemoExamples:
    """Every screen of ``attnviz demo`` but the training, computed; all-MiniLM-L6-v2's heads
    for "it" when it is installed and ``use_model``."""
    from attnviz.render.live.demo import DemoExamples

    def shown(sentence: str, **view: Any) -> tuple[AttentionTrace, Selection]:
        explanation = explained(sentence, Options(view=ViewOptions(**view)))
        return explanation.trace, explanation.selection

    it, problem = None, None
    if use_model:
        it, problem = _minilm()
    task, train = live_training()
    return DemoExamples(
        i_am_good=shown("I am good"),
        random_it=shown(TIRED, focus=FOCUS),
        coref=(toy_reading(TIRED, "coref", "animal"), toy_reading(WIDE, "coref", "street")),
        coref_word=(
            toy_reading(TIRED, "coref-word", "animal"),
            toy_reading(WIDE, "coref-word", "street"),
        ),
        training_task=task,
        train=train,
        it=it,
        model_wanted=use_model,
        model_problem=problem,
    )


def _minilm() -> tuple[ItExample | None, str | None]:
    """all-MiniLM-L6-v2's heads for "it" → "animal", or why there are none: (None, None) when
    it is not installed, (None, the reason) when it is but could not be run."""
    from attnviz.model.sources.checkpoint import ModelNotInstalled

    try:
        minilm = TraceOptions(model="minilm")
        model = explained(TIRED, Options(minilm, ViewOptions(focus=FOCUS, hide_special=True)))
    except ModelNotInstalled:
        return None, None
    except AttnvizError as error:
        return None, error.message
    return _it_in_the_model(model), None


def _it_in_the_model(model: Explanation) -> ItExample:
    """The demo's "it" → "animal" in a real model: where "it" looks most in every head, its
    heads for "animal", and the most specific one's row."""
    from attnviz.analysis.heads import focus_survey
    from attnviz.render.live.demo import ItExample

    animal = model.selection.column_words.index("animal")
    survey = focus_survey(model.layers, model.selection, animal)
    specific = survey.specific
    selection = model.selection._replace(heads=(specific.head - 1,))
    return ItExample(model.layers[specific.layer - 1], selection, survey)


def run(surface: Surface, *, step: bool = False, use_model: bool = True) -> None:
    """``attnviz demo``: every screen computed, then shown (paced with ``step``)."""
    from attnviz.render.live.demo import run_demo

    console = surface.console()
    examples = demo_examples(use_model=use_model)
    run_demo(console, examples, pause=surface.pacer(console) if step else None)
