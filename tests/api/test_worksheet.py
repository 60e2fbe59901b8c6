"""attnviz.worksheet and the api under ``attnviz worksheet``: the set is the exercises' own
questions, drawn from one trace per sheet; the key beside the sheet; copies numbered and
different; the same seed the same bytes; bad input refused before any work, in one sentence."""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import pytest

import attnviz
from attnviz.api import worksheet as api
from attnviz.errors import AttnvizError
from attnviz.exercise.hand import hand_traces
from attnviz.exercise.questions import KINDS, format_number
from attnviz.exercise.sets import exercise_set

HAND = "The animal crossed because it was tired"


@pytest.mark.parametrize(
    ("name", "key"),
    [("sheet.pdf", "sheet-key.pdf"), ("a.b.HTML", "a.b-key.HTML"), ("s.md", "s-key.md")],
)
def test_the_key_is_written_beside_the_sheet(name: str, key: str) -> None:
    assert api.key_path(Path("out") / name) == Path("out") / key


@pytest.mark.parametrize("name", ["quiz.gift", "quiz.xml"])
def test_a_quiz_has_no_separate_key(tmp_path: Path, name: str) -> None:
    assert api.key_path(Path(name)) is None
    assert attnviz.worksheet(HAND, tmp_path / name, hand=True) == (tmp_path / name,)
    assert sorted(os.listdir(tmp_path)) == [name]


def test_the_key_holds_the_answers_of_the_exercises_own_questions(tmp_path: Path) -> None:
    written = attnviz.worksheet(HAND, tmp_path / "s.md", hand=True, seed=4, count=8)
    assert written == (tmp_path / "s.md", tmp_path / "s-key.md")
    questions = exercise_set(hand_traces(HAND, 4), api.usable_kinds(hand_traces(HAND, 4)), 8, 4)
    sheet, key = (path.read_text(encoding="utf-8") for path in written)
    answers = re.findall(r"^## \d+\. (\S+) \(", key, flags=re.MULTILINE)
    assert answers == [format_number(q.answer, q.decimals) for q in questions]
    assert "Numbers made for pencil and paper" in sheet and "Name:" in sheet
    for question in questions:
        assert question.solution[-1] in key and question.solution[-1] not in sheet


def test_copy_k_is_the_set_of_seed_plus_k_minus_1(tmp_path: Path) -> None:
    trace_options = api.TraceOptions(seed=10)
    made = api.sheets(HAND, trace_options, api.SheetOptions(count=5, copies=3, hand=True))[0]
    assert [sheet.label for sheet in made] == ["Sheet 1 of 3", "Sheet 2 of 3", "Sheet 3 of 3"]
    for number, sheet in enumerate(made):
        traces = hand_traces(HAND, 10 + number)
        assert sheet.questions == exercise_set(traces, api.usable_kinds(traces), 5, 10 + number)
    # Neighbours' answers differ: each copy has its own numbers.
    assert len({tuple(q.answer for q in sheet.questions) for sheet in made}) == 3


def test_a_random_layer_and_a_model_make_sets_too(tmp_path: Path) -> None:
    made = api.sheets("I am good", api.TraceOptions(seed=1), api.SheetOptions(count=3))[0]
    assert "seeded random vectors (seed 1)" in made[0].about[0]
    assert made[0].questions[0].kind == KINDS[0]
    coref = api.TraceOptions(model="coref")
    sentence = "The animal didn't cross the street because it was too tired"
    options = api.SheetOptions(kinds=("weight",), count=2, copies=2)
    first, second = api.sheets(sentence, coref, options)[0]
    assert {q.kind for q in first.questions + second.questions} == {"weight"}
    assert first.about == (
        "Weights: coref (trained by attnviz), 2 layers; d_model 32, 1 head, d_k 32.",
    )


# The PDF's own test of this is tests/render/worksheet/test_pdf.py's (and the command line's).
@pytest.mark.parametrize(
    "suffix", [pytest.param(".pdf", marks=pytest.mark.slow), ".html", ".md", ".gift", ".xml"]
)
def test_the_same_seed_gives_the_same_bytes(tmp_path: Path, suffix: str) -> None:
    first = attnviz.worksheet(HAND, tmp_path / f"a{suffix}", hand=True, copies=2, count=2)
    second = attnviz.worksheet(HAND, tmp_path / f"b{suffix}", hand=True, copies=2, count=2)
    for one, other in zip(first, second, strict=True):
        assert one.read_bytes() == other.read_bytes()


def test_kinds_are_read_from_text_or_a_list_and_checked_against_the_layer() -> None:
    assert api.parse_kinds("softmax, Z,softmax") == ("softmax", "z")
    assert api.parse_kinds(["score"]) == ("score",)
    with pytest.raises(AttnvizError, match="'sofmax' is not a kind of exercise; give one or more"):
        api.parse_kinds("sofmax")
    with pytest.raises(AttnvizError, match='kind="rope" needs rotary positions'):
        api.sheets(HAND, api.TraceOptions(), api.SheetOptions(kinds=("rope",)))


def _refused(tmp_path: Path, match: str, output: str | Path = "s.pdf", **given: object) -> None:
    """The call is refused with ``match`` before anything is traced, and writes nothing."""
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(AttnvizError, match=match):
        attnviz.worksheet(HAND, tmp_path / output, **given)  # type: ignore[arg-type]
    assert sorted(os.listdir(tmp_path)) == before


@pytest.mark.parametrize(
    ("given", "match"),
    [
        ({"copies": 0}, r"copies=0: a set has 1 to 100 sheets"),
        ({"copies": 10**9}, r"copies=1000000000: a set has 1 to 100"),
        ({"count": 0}, r"count=0: a sheet holds 1 to 40 questions"),
        ({"copies": 100, "count": 40}, r"is 4000 questions; a set holds at most 1000"),
        ({"copies": 1.5}, r"copies=1\.5: give a whole number"),
        ({"paper": "a5"}, r'paper="a5": give a4 or letter'),
        ({"hand": True, "heads": 4}, r"hand makes its own layer .*; drop heads, or hand"),
        ({"hand": "yes"}, r"hand="),
    ],
)
def test_bad_sizes_and_options_are_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: dict[str, object], match: str
) -> None:
    monkeypatch.setattr(api, "sheets", _no_work)
    _refused(tmp_path, match, **given)


def _no_work(*args: object) -> None:
    raise AssertionError("refused too late: the set was being made")


def test_bad_outputs_are_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api, "sheets", _no_work)
    _refused(tmp_path, r"output .*s\.txt: unknown extension '\.txt'; use one of \.pdf", "s.txt")
    _refused(tmp_path, r"folder .* does not exist", "missing/s.pdf")
    (tmp_path / "s-key.pdf").mkdir()
    _refused(tmp_path, r"answer key .*s-key\.pdf is a folder", "s.pdf")
    (tmp_path / "t.md").write_text("old")
    # Root writes to a read-only file anyway: the refusal is faked where it is checked.
    real_access = os.access
    monkeypatch.setattr(
        "attnviz.files.writing.os.access",
        lambda path, mode: False if Path(path).name == "t.md" else real_access(path, mode),
    )
    _refused(tmp_path, r"t\.md exists and is read-only", "t.md")
    assert (tmp_path / "t.md").read_text() == "old"


def test_an_existing_sheet_and_key_are_replaced_as_other_commands_replace_theirs(
    tmp_path: Path,
) -> None:
    (tmp_path / "s.md").write_text("old sheet")
    (tmp_path / "s-key.md").write_text("old key")
    attnviz.worksheet(HAND, tmp_path / "s.md", hand=True)
    assert (tmp_path / "s.md").read_text().startswith("# Attention worksheet")
    assert (tmp_path / "s-key.md").read_text().startswith("# Answer key")


def test_a_note_on_how_the_numbers_were_made_is_a_warning(tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        attnviz.worksheet("I am good", tmp_path / "s.md", window=2, causal=True, count=1)
    assert all(issubclass(w.category, UserWarning) for w in caught)


def test_the_python_example_of_its_page_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from docs_pages import PAGES

    (example,) = re.findall(r"```python\n(.*?)```", PAGES["docs/worksheet.md"], flags=re.DOTALL)
    monkeypatch.chdir(tmp_path)
    exec(example, {})  # noqa: S102 - the page's own example
    printed = capsys.readouterr().out.strip()
    assert printed == "['sheet.md', 'sheet-key.md']"
    assert "Sheet 2 of 2" in (tmp_path / "sheet.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("kind", ["projection", "score", "scaled", "softmax", "z", "output"])
def test_a_sheet_asks_what_attnviz_exercise_asks_with_the_same_seed(
    kind: str, tmp_path: Path
) -> None:
    """One trace, one seeded draw: the sheet's first question is the terminal's, and its key
    prints that question's answer."""
    sentence = "The cat sat because it was tired"
    asked = attnviz.exercise(sentence, kind=kind, seed=5)
    made = api.sheets(sentence, api.TraceOptions(seed=5), api.SheetOptions(kinds=(kind,)))[0]
    assert made[0].questions[0] == asked
    key = attnviz.worksheet(sentence, tmp_path / "s.md", kind=kind, seed=5)[1]
    first = re.search(r"^## 1\. (\S+) \(", key.read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert first is not None and first[1] == format_number(asked.answer, asked.decimals)


def test_the_docstring_examples_run() -> None:
    import doctest

    from attnviz.exercise import hand

    for module in (api, hand):
        failed, attempted = doctest.testmod(module)
        assert attempted > 0 and failed == 0, module.__name__
