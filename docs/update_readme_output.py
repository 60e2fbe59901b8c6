"""Paste real output into README.md and docs/*.md: the first steps of ``attnviz explain "I am
good" --focus I`` and its focus view, the top of the first scores table of the 11-word sentence
at 80 columns, what ``attnviz train coref`` shows, docs/modern.md's latent (with and without
rotary positions) and sliding-window steps, and ``attnviz generate``'s and ``attnviz lens``'s
lessons.

Run after a change of output: ``python docs/update_readme_output.py``. Each block is found by its
first line in whichever page holds it; tests/e2e/test_readme.py checks they match the real output.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


IT_SENTENCE = "The animal didn't cross the street because it was too tired"
#: The held text of docs/generate.md's sliding-cache example.
LIGHTHOUSE = (
    "The old lighthouse keeper climbed the stairs every evening. He lit the lamp, wrote in his "
    "log, and watched the ships pass by the rocks. One winter night a storm came, and the waves "
    "rose higher than the tower itself. The keeper held on to the railing and kept the light "
    "burning until morning, when the sea was calm again and the fishing boats returned safely "
    "to the harbour."
)
#: The command whose scores table the README shows at 80 columns, as it is pasted there.
NARROW_COMMAND = f'COLUMNS=80 attnviz explain "{IT_SENTENCE}"'


def real_output(
    arguments: tuple[str, ...] = ("I am good", "--focus", "I"), columns: int = 100
) -> list[str]:
    from typer.testing import CliRunner

    from attnviz.cli import app

    os.environ.update({"COLUMNS": str(columns), "NO_COLOR": "1"})
    result = CliRunner().invoke(app, ["explain", *arguments])
    return [line.rstrip() for line in result.stdout.splitlines()]


def narrow_scores() -> list[str]:
    """The command, then the first scores table's title, header, rule and first four rows."""
    lines = real_output((IT_SENTENCE,), columns=80)
    start = next(i for i, line in enumerate(lines) if line.startswith("scores₁"))
    return [f"$ {NARROW_COMMAND}", *lines[start : start + 7], "…"]


def replace_block(text: str, starts_with: str, lines: list[str]) -> str:
    """Replace the ```text block whose first line starts with ``starts_with``."""
    opening = "```text\n" + starts_with
    start = text.index(opening) + len("```text\n")
    end = text.index("```", start)
    return text[:start] + "\n".join(lines) + "\n" + text[end:]


def command_output(arguments: list[str], columns: int) -> list[str]:
    """What ``attnviz ARGUMENTS`` prints, piped, at ``columns``, colour off."""
    from typer.testing import CliRunner

    from attnviz.cli import app

    os.environ.update({"COLUMNS": str(columns), "NO_COLOR": "1"})
    result = CliRunner().invoke(app, arguments)
    return [line.rstrip() for line in result.stdout.splitlines()]


def training_frame() -> list[str]:
    """The live view's last frame of ``attnviz train coref``, as text at 100 columns."""
    import io

    from rich.console import Console

    from attnviz.api import train as training
    from attnviz.render.live.training_view import TrainingView

    console = Console(width=100, no_color=True, file=io.StringIO(), force_terminal=False)
    trained = training.train("coref")
    view = TrainingView(console, trained.task, pace=0)
    view.losses.extend(snapshot.loss for snapshot in trained.snapshots)
    console.print(view.frame(trained.snapshots[-1]))
    frame = console.file.getvalue()  # type: ignore[attr-defined]
    lines = [line.rstrip() for line in frame.splitlines()]
    legend = next(i for i, line in enumerate(lines) if line.lstrip().startswith("answer "))
    return lines[: legend + 1]  # the first sentence's words, bars and weights


def training_blocks() -> dict[str, list[str]]:
    """The `attnviz train` blocks: a live frame, the piped output, --explain-step's last lines."""
    step = command_output(["train", "coref", "--explain-step"], 80)
    start = next(i for i, line in enumerate(step) if line.startswith("The loss went from"))
    return {
        "step ": training_frame(),
        "Task coref:": command_output(["train", "coref"], 100),
        "The loss went from": step[start:],
    }


def lesson_blocks() -> dict[str, list[str]]:
    """The lesson's first five steps, its focus view, and the 80-column scores table."""
    lines = real_output()
    end_of_step_5 = next(
        i
        for i, line in enumerate(lines)
        if line.startswith("good  0.")
        and i > next(j for j, x in enumerate(lines) if x.startswith("weights₁"))
    )
    focus = next(i for i, line in enumerate(lines) if "Focus: where does" in line)
    return {
        "attnviz · multi-head": lines[: end_of_step_5 + 1],
        "─": lines[focus:],
        "$ COLUMNS=80": narrow_scores(),
    }


def latent_block() -> dict[str, list[str]]:
    """docs/modern.md's latent step of the 11-word sentence, up to its K and V tables."""
    lines = real_output((IT_SENTENCE, "--latent", "6", "--steps", "3"))
    start = next(i for i, line in enumerate(lines) if "Latent attention" in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("K₁ = c·W_UK₁"))
    return {"Step 3 · Latent attention": lines[start:end]}


#: docs/modern.md's latent step with DeepSeek's decoupled RoPE key.
LATENT_ROPE_ARGUMENTS = (IT_SENTENCE, "--latent", "6", "--positions", "rope", "--steps", "3")


def latent_rope_block() -> dict[str, list[str]]:
    """docs/modern.md's latent step with rotary positions: from the decoupled key's paragraph
    to the absorption's differences, before the K and V tables."""
    lines = real_output(LATENT_ROPE_ARGUMENTS)
    start = next(i for i, line in enumerate(lines) if line.startswith("Positions, DeepSeek's"))
    end = next(i for i, line in enumerate(lines) if line.startswith("K₁ = c·W_UK₁"))
    return {"Positions, DeepSeek's way": lines[start:end]}


def generate_blocks() -> dict[str, list[str]]:
    """``attnviz generate`` with the induction model, whole, and SmolLM2's first token."""
    induction = command_output(["generate", "j k l a b c d e a b", "--tokens", "3"], 80)
    smollm2 = command_output(
        ["generate", "-m", "smollm2", "The capital of France is", "--tokens", "12"], 80
    )
    end = next(i for i, line in enumerate(smollm2) if line.startswith("Token 2:"))
    text = next(i for i, line in enumerate(smollm2) if line == "The text")
    held = command_output(
        ["generate", "-m", "smollm2", LIGHTHOUSE, "--tokens", "2", "--window", "32"]
        + ["--keep-first", "1", "--sinks"],
        100,
    )
    start = next(i for i, line in enumerate(held) if line.startswith("Mean log p over"))
    heads = next(i for i, line in enumerate(held) if line.startswith("Weight on the first token"))
    return {
        "attnviz lens: induction": command_output(["lens", "j k l a b c d e a b"], 100),
        "attnviz generate: induction": induction,
        "attnviz generate: SmolLM2": [*smollm2[: end - 1], "…", *smollm2[text:]],
        "Mean log p over": held[start:heads],
    }


#: The sliding-window command of docs/modern.md, whose step it pastes.
WINDOW_ARGUMENTS = (IT_SENTENCE, "--causal", "--window", "4", "--steps", "2")


def window_block() -> dict[str, list[str]]:
    """The sliding-window step of ``attnviz explain IT --causal --window 4 --steps 2``, from its
    heading to the end."""
    lines = real_output(WINDOW_ARGUMENTS)
    start = next(i for i, line in enumerate(lines) if line.startswith("Step 2 · Sliding window"))
    return {"Step 2 · Sliding window": lines[start:]}


#: docs/exercise.md's printed set, and the same set graded from an answers file.
EXERCISE_ARGUMENTS = [
    "exercise",
    "The cat sat on the mat",
    *("--kind", "scaled,softmax", "--count", "2", "--seed", "3"),
]


def exercise_blocks() -> dict[str, list[str]]:
    """``attnviz exercise``'s printed questions, and its report of an answers file holding the
    first question's score not divided by √d_k and a skipped second answer."""
    import tempfile

    printed = command_output(EXERCISE_ARGUMENTS, 80)
    score = next(line for line in printed if line.startswith("raw score q·k")).split()[-1]
    with tempfile.TemporaryDirectory() as folder:
        answers = Path(folder) / "answers.txt"
        answers.write_text(f"{score}\n-\n", encoding="utf-8")
        graded = command_output([*EXERCISE_ARGUMENTS, "--answers", str(answers)], 80)
    prompt = "$ attnviz " + " ".join(
        f'"{word}"' if " " in word else word for word in EXERCISE_ARGUMENTS
    )
    return {
        "Question 1 of 2 (scaled)": printed,
        "$ cat answers.txt": [
            "$ cat answers.txt",
            score,
            "-",
            f"{prompt} --answers answers.txt",
            *graded,
        ],
    }


def main() -> None:
    blocks = {
        **exercise_blocks(),
        **lesson_blocks(),
        **training_blocks(),
        **latent_block(),
        **latent_rope_block(),
        **window_block(),
        **generate_blocks(),
    }
    texts = {page: page.read_text(encoding="utf-8") for page in PAGES}
    for starts_with, lines in blocks.items():
        holding = [page for page, text in texts.items() if "```text\n" + starts_with in text]
        if not holding:
            raise SystemExit(f"no page holds a text block starting {starts_with!r}")
        for page in holding:
            texts[page] = replace_block(texts[page], starts_with, lines)
    for page, text in texts.items():
        if text != page.read_text(encoding="utf-8"):
            page.write_text(text, encoding="utf-8")
            print(f"updated {page.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
