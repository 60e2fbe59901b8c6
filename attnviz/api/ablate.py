"""``attnviz.ablate``: does a head matter here? Each head of a trained model in turn gets uniform
weights, the model runs again from that layer on, and the change at the focus word is measured
(attnviz.analysis.ablation), beside the head's largest weight in the focus word's row.

>>> import attnviz
>>> result = attnviz.ablate("the animal didn't cross the street because it was too tired",
...                         model="coref")
>>> [(effect.layer, effect.head) for effect in result.effects]   # largest change first
[(1, 1), (2, 1)]
>>> result.answer_head   # coref's answer IS this head's scores: its layer's TV 0 is built in
(2, 1)
>>> round(result.effects[0].output_change, 3)   # layer 1's TV: measured
0.009
"""

from __future__ import annotations

import warnings

from attnviz.analysis.ablation import Ablation, ablate_heads, readout_of
from attnviz.arguments import sentences
from attnviz.errors import AttnvizError, option, spelled
from attnviz.layer_limits import check_ablation
from attnviz.model_limits import Work
from attnviz.options import Options, options_from
from attnviz.selection import select
from attnviz.serial import one_at_a_time
from attnviz.tokens import check_sentence_length


def ablated(sentence: str, options: Options) -> tuple[Ablation, tuple[str, ...]]:
    """``attnviz heads --ablate``'s path: the model of ``trace_options`` on ``sentence``, every
    head ablated in turn at the focus word of ``view`` ("it" by default); and the notes the
    person should be told."""
    trace_options, view = options.trace, options.view
    if view.hide_special:
        raise AttnvizError(
            f"{option('ablate')} names the word each head's row of the focus word looks at "
            f"most, special tokens included; drop {option('hide_special')}."
        )
    if trace_options.model is None:
        raise AttnvizError(
            f"{option('ablate')} runs a trained model again with one head changed at a time; "
            f"random weights have no model to run: give one with {option('model', metavar='MODEL')}"
            f" (for example {option('model', 'minilm')} or {option('model', 'coref')})."
        )
    from attnviz.model.run import load_model

    check_sentence_length(sentence)  # before the model's tokenizer sees it
    # Every head's layer and the layers after it run again: estimated, and refused past
    # attnviz's limits with the way round (one --layer), before any weight is read.
    work = Work(what=spelled("heads --ablate", "ablate()"), ablated=True, layer=view.layer)
    loaded = load_model(
        sentence,
        trace_options.model,
        dtype=trace_options.dtype.value,
        pad_to=trace_options.pad_to,
        work=work,
        window=trace_options.window,
    )
    check_ablation(loaded.n_layers, loaded.n_heads)  # before the first forward pass
    run = loaded.forward()
    selection = select(run.layers[-1], view._replace(layer=None, head=None))
    if selection.focus is None:
        raise AttnvizError(
            f"{option('ablate')} measures the change at one word: name it with "
            f"{option('focus', metavar='WORD')} (the default, 'it', is not in the sentence)."
        )
    readout, no_readout = readout_of(loaded, selection.focus)
    ablation = ablate_heads(
        loaded, run, selection, readout, no_readout=no_readout, layer=view.layer
    )
    return ablation, selection.notes


@one_at_a_time
def ablate(
    sentence: str,
    *,
    model: str,
    focus: str | None = None,
    words: bool = False,
    dtype: str = "float32",
    pad_to: int | None = None,
    layer: int | None = None,
) -> Ablation:
    """Does each head matter for ``focus`` ("it" by default) in ``sentence``, as ``attnviz heads
    --ablate`` measures it: for every (layer, head) of ``model`` (a trained model: "minilm",
    "gpt2", "coref", "coref-word" or a folder), the head's weights are replaced by uniform ones
    over the words each row may attend to, and the model runs again from that layer on.

    Returns an Ablation whose ``effects`` are ranked by ``hidden_change``, ‖h − h'‖/‖h‖ of the
    focus word's last hidden state; ``output_change`` is the total variation ½·Σ|p − p'| of the
    model's output distribution there (GPT-2's next token, a toy model's answer), None for a
    BERT-family encoder; ``weight`` is the head's largest weight in the focus word's row, on
    ``words[target]`` (``words=True`` merges a model's word pieces, as in explain()).
    One extra forward pass per head, each from the head's layer on (72 for MiniLM: a fraction of
    a second); ``layer`` (from 1) ablates that layer's heads alone. The work is estimated before
    it starts and refused past attnviz's limits (attnviz.model_limits.check_model_run).
    """
    sentences(sentence=sentence, model=model)
    options = options_from(
        model=model, focus=focus, words=words, layer=layer, dtype=dtype, pad_to=pad_to
    )
    ablation, notes = ablated(sentence, options)
    for message in notes:
        warnings.warn(message, UserWarning, stacklevel=2)
    return ablation
