"""Line plots (the √d_k experiment), drawn with matplotlib's object API and imported lazily."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attnviz.errors import OutputProblem
from attnviz.files import atomic_write
from attnviz.scaling import ScalingRow

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}


def save_scaling_plot(rows: Sequence[ScalingRow], path: Path, *, n_keys: int) -> None:
    """Three panels against d_k (log scale): largest weight, entropy, gradient size; each with
    and without ÷√d_k. Written atomically, in the format the extension names."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    image_format = FORMATS.get(path.suffix.lower())
    if image_format is None:
        raise OutputProblem(f"{path}: unknown extension; use .png, .svg or .pdf.")
    d_ks = [row.d_k for row in rows]
    figure = Figure(figsize=(11, 3.6), layout="constrained")
    FigureCanvasAgg(figure)
    panels = (
        ("largest softmax weight", "max_weight", (0, 1.05)),
        ("softmax entropy (nats)", "entropy", None),
        ("gradient size ‖∂w/∂s‖", "gradient", None),
    )
    for index, (title, field, limits) in enumerate(panels):
        axes = figure.add_subplot(1, 3, index + 1)
        axes.plot(d_ks, [getattr(r.unscaled, field) for r in rows], "o-", color="#d95f02",
                  label="q·k")  # fmt: skip
        axes.plot(d_ks, [getattr(r.scaled, field) for r in rows], "s-", color="#1b9e77",
                  label="q·k / √d_k")  # fmt: skip
        axes.set_xscale("log", base=2)
        axes.set_xticks(d_ks, [str(d) for d in d_ks])
        axes.set_xlabel("d_k")
        axes.set_title(title)
        if limits is not None:
            axes.set_ylim(*limits)
        axes.grid(alpha=0.3)
        if index == 0:
            axes.legend()
    figure.suptitle(f"Why divide by √d_k: softmax over {n_keys} keys, random unit-variance q and k")
    metadata = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}

    def write(temporary: Path) -> None:
        from matplotlib import rc_context

        with rc_context({"svg.hashsalt": "attnviz"}):
            figure.savefig(temporary, format=image_format, dpi=150, metadata=metadata[image_format])

    atomic_write(path, write)
