"""The commands that read a run's heads: ``heads`` ranks them (and ``--ablate`` measures what
each one changes), ``compare`` sets two sentences' rows side by side. Thin, as in
cli/commands.py: parse, hand the work to the library, render, pick the exit code."""

# No `from __future__ import annotations`: Typer reads every command's annotations on each run.
from typing import Annotated

import typer

from attnviz import api
from attnviz.analysis.heads import RankBy
from attnviz.cli.commands import check_outputs, explained
from attnviz.cli.console import new_console, note, reading_progress, wrote
from attnviz.cli.options import Leave, Reword, Sentence, image_option, typed_text
from attnviz.errors import AttnvizError
from attnviz.limits import check_compare_picture
from attnviz.selection import ViewOptions
from attnviz.trace_options import TraceOptions

#: --layer in heads: what it picks with --ablate (refused without it).
ABLATE_LAYER_HELP = (
    "With --ablate: ablate layer N's heads alone (from 1), each run again from layer N on "
    "(h·(L − N + 1) layer passes instead of h·L(L+1)/2 for every layer)."
)


def heads(
    sentence: Sentence,
    trace_options: TraceOptions,
    view: Annotated[ViewOptions, Leave("head"), Reword(layer=ABLATE_LAYER_HELP)],
    top: Annotated[int, typer.Option("--top", help="How many heads to list.")] = 20,
    rank_by: Annotated[
        RankBy,
        typer.Option(
            "--rank-by",
            help="specificity: w − max(key, offset); selectivity: w − key; weight: w alone "
            "(the formulas below).",
        ),
    ] = RankBy.specificity,
    ablate: Annotated[
        bool,
        typer.Option(
            "--ablate",
            help="With --model: give each head in turn uniform weights, run the model again and "
            "rank the heads by how much the focus word's last hidden state h changes, "
            "‖h − h′‖/‖h‖ (and, for GPT-2 or a toy model, the total variation ½·Σ|p − p′| of "
            "its output distribution there), beside each head's largest weight.",
        ),
    ] = False,
) -> None:
    """Rank every (layer, head) by what the focus word's attention does there, and name each
    head's type.

    For each word, the heads in which the focus word looks at it most beyond what the head does
    in every row; each head's top word, type and baselines; how many rows look most at their own
    word.

    \b
    For the focus word i, a head's weights A and a word j:
      w      = A[i, j]
      key    = mean_r A[r, j]            every row looks at j: a sink
      offset = mean_r A[r, r + (j − i)]  every row looks as far: positional
      spec   = w − max(key, offset)      what is specific to the focus word
      sel    = w − key
    r: the head's other rows with a choice (two keys or more), [CLS] and [SEP]
    included whether shown or not, neither [PAD] nor the focus word's rows;
    for each key only the rows that may attend to it. With --words, a word's
    w, key and offset are sums over its pieces; w is read from the mean of
    the focus word's pieces' rows, offsets from its first piece. [CLS],
    [SEP] and other markers the tokenizer adds are not ranked as targets.

    \b
    Head types, each from the head's whole matrix (its rows with a choice):
      previous = mean_i A[i, i−1]   next = mean_i A[i, i+1]
      self     = mean_i A[i, i]     first = mean_(i≠0) A[i, 0]
      last     = mean_(i≠s) A[i, s], s the last special token ([SEP]),
                 else the last word
      entropy  = mean_i H(A[i]) / log(keys row i may attend to), 1: uniform
    The type is the largest of previous, next, self, first and last if it is
    0.5 or more: previous-token, next-token, self, first-token sink ([CLS]
    sink when position 0 is special), last-token sink ([SEP] sink); else
    broad if the entropy is 0.9 or more; else mixed.

    Example: attnviz heads -m minilm "The animal didn't cross the street because it was too tired"
    """
    from attnviz.render.terminal.heads_report import render_heads

    if top < 1:
        raise AttnvizError(f"--top {top}: give 1 or more.")
    if ablate or view.layer is not None:
        from attnviz.ablating import ablated
        from attnviz.render.terminal.ablation_report import render_ablation

        if not ablate:
            raise AttnvizError(
                "--layer picks the layer whose heads --ablate runs again; the ranking covers "
                "every layer: add --ablate, or drop --layer."
            )
        ablation, notes = ablated(sentence, trace_options, view)
        for message in notes:
            note(message)
        render_ablation(ablation, new_console(), top=top)
        return
    explanation = explained(sentence, trace_options, view)
    ranking = api.ranked_heads(explanation, rank_by)
    render_heads(ranking, explanation.layers, new_console(), top=top)


def compare(
    sentence_a: Annotated[
        str,
        typer.Argument(help="Sentence A, in quotes.", metavar="SENTENCE_A", callback=typed_text),
    ],
    sentence_b: Annotated[
        str,
        typer.Argument(help="Sentence B, in quotes.", metavar="SENTENCE_B", callback=typed_text),
    ],
    trace_options: Annotated[TraceOptions, Leave("pad_to")],
    view: ViewOptions,
    top: Annotated[int, typer.Option("--top", help="How many heads to list (and draw).")] = 20,
    output: image_option(  # type: ignore[valid-type]
        "Also draw each listed head's two rows, A above B: .png, .svg or .pdf."
    ) = None,
) -> None:
    """Where the focus word looks in SENTENCE_A and in SENTENCE_B, head by head.

    Each head's row of the focus word ("it" by default) in both sentences, the heads ranked by
    the total variation TV = ½·Σ_j |w_A(j) − w_B(j)| over the words both share (the words only
    one has counted as one), and the heads in which the focus word's top word changes.

    Example: attnviz compare "The cat sat because it was tired" "The cat sat because it was wide"
    """
    from attnviz.comparing import compared, notes
    from attnviz.render.terminal.compare_report import render_comparison

    if top < 1:
        raise AttnvizError(f"--top {top}: give 1 or more.")
    check_outputs(None, (output, "--output"))
    with reading_progress(trace_options.embeddings) as progress:
        pair = compared(sentence_a, sentence_b, trace_options, view, progress=progress)
    if output is not None:  # before the report: a refusal leaves no half of the command done
        alignment = pair.comparison.alignment
        slots = len(alignment.pairs) + len(alignment.only_a) + len(alignment.only_b)
        check_compare_picture(min(top, len(pair.comparison.heads)), slots, path=output)
    for message in notes(pair):
        note(message)
    render_comparison(
        pair.comparison,
        (sentence_a, sentence_b),
        pair.a.trace.provenance.weights,
        new_console(),
        top=top,
    )
    if output is not None:
        from attnviz.render.figures.compare_figure import save_comparison_figure

        sentences = (sentence_a, sentence_b)
        weights = pair.a.trace.provenance.weights
        save_comparison_figure(
            pair.comparison, output, top=top, sentences=sentences, weights=weights
        )
        wrote(output)
