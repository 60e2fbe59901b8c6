"""The Python API: the command line's commands as functions, with the same options, the same
refusals in the same words, and the same lesson."""

from __future__ import annotations

import doctest
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure

import attnviz
import attnviz.api
from attnviz.api import cross, heads, heatmap, lesson, scaling
from attnviz.api import explain as explaining
from attnviz.cli import app
from attnviz.errors import command_line

from support import CliRunner, needs_model, step

runner = CliRunner()
IT = "The animal didn't cross the street because it was too tired"


@pytest.mark.slow
def test_every_docstring_example_runs() -> None:
    for module in (attnviz, explaining, cross, lesson, heatmap, heads, scaling):
        failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert attempted > 0 and failed == 0, module.__name__


def test_explain_returns_the_trace_and_remembers_what_to_show() -> None:
    shown = attnviz.explain(IT, head=2, focus="it", seed=3, heads=4, d_model=16)
    assert isinstance(shown, attnviz.Explanation)
    trace = shown.trace
    assert isinstance(trace, attnviz.AttentionTrace)
    assert trace.n_heads == 4 and trace.d_model == 16 and trace.config.seed == 3
    assert shown.view.head == 2 and shown.view.focus == "it"
    assert shown.selection.heads == (1,) and shown.selection.focus is not None
    assert shown.layers == (trace,) and not shown.is_model_run  # one random layer
    assert not hasattr(trace, "view") and not hasattr(trace, "_repr_html_")  # a plain record
    same = attnviz.trace_attention(IT, config=attnviz.AttentionConfig(16, 4, 3))
    np.testing.assert_array_equal(trace.weights, same.weights)


@pytest.mark.slow
def test_the_lesson_is_what_the_terminal_prints() -> None:
    for arguments, options in (
        (["explain", IT, "--head", "1"], {"head": 1}),
        (
            ["explain", "I am good", "--causal", "--positions", "sinusoidal"],
            {"causal": True, "positions": "sinusoidal"},
        ),
        (
            ["explain", "I am good", "--pad-to", "5", "--hide-special"],
            {"pad_to": 5, "hide_special": True},
        ),
    ):
        printed = runner.invoke(app, arguments, env={"COLUMNS": "90"}).stdout
        trace = attnviz.explain(arguments[1], **options)
        with command_line():  # the same lesson, naming the command line's flags
            assert attnviz.lesson(trace, width=90) == printed
        # In Python it names the keyword arguments instead, and says nothing else differently.
        in_python = attnviz.lesson(trace, width=1000)
        assert "--positions" not in in_python
        if "positions" not in options:  # the lesson tells how to add positions
            assert 'positions="sinusoidal" adds' in in_python
        with command_line():
            on_the_command_line = attnviz.lesson(trace, width=1000)
        hint = (f"attnviz.explain({IT!r}, model='coref')", f'attnviz explain --model coref "{IT}"')
        said_in_python = in_python.replace('positions="sinusoidal"', "--positions sinusoidal")
        said_in_python = said_in_python.replace(*hint).replace("full=True", "--full")
        said_in_python = said_in_python.replace("(head=2 shows", "(--head 2 shows")
        # A section's rule is as long as its heading leaves room for.
        assert re.sub("─+", "─", said_in_python) == re.sub("─+", "─", on_the_command_line)


def test_lesson_prints_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    text = attnviz.lesson(attnviz.explain("I am good"), show=True, decimals=3)
    assert capsys.readouterr().out == text
    weights = text.split("weights₁ = softmax(scaled₁)")[1].splitlines()[3]
    assert all(len(value.split(".")[1]) == 3 for value in weights.split()[1:4])  # 3 decimals
    assert "\x1b[" in attnviz.lesson(attnviz.explain("I am good"), color=True)


@pytest.mark.parametrize(
    ("arguments", "options", "in_python"),
    [
        (["explain", "I am good", "--head", "3"], {"head": 3}, "head=3 does not exist"),
        (["explain", "I am good", "--focus", "cat"], {"focus": "cat"}, None),
        (
            ["explain", "I am good", "--focus", "am:2"],
            {"focus": "am:2"},
            "'am' occurs once; focus=\"am:2\" asks for occurrence 2: drop ':2'.",
        ),
        (["explain", "I am good", "--pad-to", "2"], {"pad_to": 2}, "pad_to=2: the sentence"),
        (["explain", "", "--heads", "2"], {"heads": 2}, None),
        (
            ["explain", "I am good", "--heads", "3"],
            {"heads": 3},
            "pick a multiple such as d_model=9.",
        ),
        (
            ["explain", "I am good", "--embeddings", "missing.txt"],
            {"embeddings": "missing.txt"},
            None,
        ),
        (
            ["explain", "I am good", "-m", "minilm", "--causal"],
            {"model": "minilm", "causal": True},
            "causal applies to the random layer",
        ),
        (["explain", "I am good", "--words"], {"words": True}, "words needs model:"),
        (
            ["explain", "I am good", "-m", "minilm", "--heads", "2", "--seed", "1"],
            {"model": "minilm", "heads": 2, "seed": 1},
            "model brings its own sizes, embeddings and weights; drop heads.",
        ),
        (["explain", "I am good", "--layer", "2"], {"layer": 2}, "layer needs model, or"),
    ],
)
def test_the_api_refuses_what_the_command_line_refuses_in_the_same_words(
    arguments: list[str], options: dict[str, object], in_python: str | None
) -> None:
    """The same sentence; the command line names its flags (--head 3), the API its keyword
    arguments (head=3)."""
    result = runner.invoke(app, arguments)
    assert result.exit_code != 0
    message = result.stderr.strip().removeprefix("error: ")
    with pytest.raises(attnviz.AttnvizError) as raised, command_line():
        attnviz.explain(arguments[1], **options)  # type: ignore[arg-type]
    assert raised.value.message == message
    with pytest.raises(attnviz.AttnvizError) as raised:
        attnviz.explain(arguments[1], **options)  # type: ignore[arg-type]
    if in_python is None:  # a message that names no option
        assert raised.value.message == message
    else:
        assert in_python in raised.value.message and "--" not in raised.value.message


def test_a_choice_that_does_not_exist_names_the_choices() -> None:
    with pytest.raises(
        attnviz.AttnvizError,
        match="positions='banana' is not a choice; use one of 'none', 'sinusoidal'",
    ):
        attnviz.explain("I am good", positions="banana")
    with pytest.raises(attnviz.AttnvizError, match="style='dots'"):
        attnviz.heatmap(attnviz.explain("I am good"), style="dots")
    with pytest.raises(attnviz.AttnvizError, match="decimals=9 is out of range"):
        attnviz.lesson(attnviz.explain("I am good"), decimals=9)


def test_notes_become_warnings() -> None:
    with pytest.warns(UserWarning, match="occurs 2 times; following the first"):
        attnviz.explain("the cat saw the dog", focus="the")


@pytest.mark.slow
def test_heatmap_returns_a_figure_of_the_heads_asked_for() -> None:
    trace = attnviz.explain(IT, focus="it")
    figure = attnviz.heatmap(trace)
    assert isinstance(figure, Figure)
    titles = [axes.get_title() for axes in figure.axes]
    assert "Head 1" in titles and "Head 2" in titles and 'Where "it" looks' in titles
    assert [a.get_title() for a in attnviz.heatmap(trace, head=2).axes][0] == "Head 2"
    lines = attnviz.heatmap(trace, style="lines")
    assert lines.get_suptitle().startswith("Where “it” looks")


def test_cross_takes_the_cross_options() -> None:
    shown = attnviz.cross("I am very good", "Je vais bien", focus="vais", head=1)
    trace = shown.trace
    assert trace.is_cross and trace.weights.shape == (2, 3, 4)
    assert shown.view.focus == "vais"
    assert "cross-attention (encoder–decoder)" in attnviz.lesson(shown)


@pytest.mark.slow
@needs_model
def test_model_mode_returns_the_layer_asked_for_and_every_layer() -> None:
    shown = attnviz.explain(IT, model="minilm", layer=6, head=12, focus="it")
    trace = shown.trace
    assert shown.is_model_run and len(shown.layers) == 6
    np.testing.assert_array_equal(trace.weights, shown.layers[5].weights)
    assert trace.provenance.weights.layer == 6
    grid = attnviz.heatmap(shown, all_layers=True)
    assert isinstance(grid, Figure)
    (tiles,) = grid.axes[0].get_images()  # every layer and head, tiled in one image
    texts = [text.get_text() for text in grid.axes[0].texts]
    assert texts[12:18] == [f"Layer {k}" for k in range(1, 7)]  # after "Head 1" … "Head 12"
    assert texts[18 + 2] == "previous-token"  # then each head's type: layer 1 head 3
    assert tiles.get_array().shape[1] > 12 * 15  # 12 heads of 15 word pieces side by side
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = attnviz.lesson(shown)
    # Head 12 in full, first, and every other head by its rows of 'it'.
    assert f"Step {step('qkv')} · Queries, keys and values of head 12" in text
    assert "Head 11 of 12 · the row of 'it' (head=11 shows it in full)" in text
    assert text.index("of head 12") < text.index("Head 1 of 12 · the row of 'it'")
    assert "Focus: where does 'it' look?" in text


def test_the_api_is_typed_and_documented() -> None:
    for name in ("explain", "cross", "lesson", "heatmap"):
        function = getattr(attnviz, name)
        assert function.__doc__ and ">>> " in function.__doc__, name
        assert function.__annotations__.get("return"), name
    assert Path(attnviz.api.__file__).parent.name == "api"  # a module per command


@pytest.mark.slow
def test_page_is_the_interactive_page_and_refuses_bad_places(tmp_path: Path) -> None:
    from dataclasses import replace

    shown = attnviz.explain("I am good", focus="am")
    lesson_page = attnviz.page(shown)
    assert lesson_page.html == shown.to_html()
    assert attnviz.page(shown.trace).html == attnviz.page(attnviz.explain("I am good")).html
    assert "Content-Security-Policy" in lesson_page.html
    framed = lesson_page._repr_html_()
    assert framed.startswith('<iframe sandbox="allow-scripts"') and "<script" not in framed
    assert (
        lesson_page.save(tmp_path / "lesson.html").read_text(encoding="utf-8") == lesson_page.html
    )
    for bad, message in (
        (tmp_path, "is a folder"),
        (tmp_path / "missing" / "x.html", "does not exist"),
        (tmp_path / "lesson.png", "unknown extension"),
    ):
        with pytest.raises(attnviz.AttnvizError, match=message):
            lesson_page.save(bad)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lesson.html"]  # nothing partial
    with pytest.raises(attnviz.AttnvizError, match="no words"):
        replace(shown, trace=replace(shown.trace, tokens=())).to_html()
    with pytest.raises(attnviz.AttnvizError, match="decimals=9 is out of range"):
        attnviz.page(shown, decimals=9)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: attnviz.explain("I am good", head=1.5), "head=1.5: give a whole number."),
        (
            lambda: attnviz.explain("I am good", head="1"),
            "head='1': give a head's number, from 1, or \"all\".",
        ),
        (lambda: attnviz.explain("I am good", layer=6.0), "layer=6.0: give a whole number."),
        (lambda: attnviz.explain("I am good", pad_to=8.0), "pad_to=8.0: give a whole number."),
        (lambda: attnviz.explain("I am good", focus=3), 'focus=3: give a string, e.g. focus="it".'),
        (lambda: attnviz.explain("I am good", causal="no"), "causal='no': give True or False."),
        (lambda: attnviz.cross("I am", "Je suis", head=True), "head=True: give a whole number."),
        (lambda: attnviz.page("I am good"), "page() takes a trace, as attnviz.explain"),
        (lambda: attnviz.lesson("I am good"), "lesson() takes a trace"),
        (
            lambda: attnviz.lesson(attnviz.explain("I am good"), decimals=2.5),
            "decimals=2.5: give a whole number.",
        ),
        (
            lambda: attnviz.lesson(attnviz.explain("I am good"), steps=[4.0]),
            'steps=[4.0]: give step numbers, e.g. steps="4-6" or steps=[4, 5, 6].',
        ),
    ],
)
def test_options_of_the_wrong_type_are_refused_in_one_sentence(call: Any, message: str) -> None:
    with pytest.raises(attnviz.AttnvizError) as raised:
        call()
    assert raised.value.message.startswith(message)


@pytest.mark.slow
def test_lesson_steps_are_the_command_lines_steps() -> None:
    scaled, z, output, focus = step("scaled"), step("z"), step("output"), step("focus")
    span = f"{scaled}-{z}"
    printed = runner.invoke(app, ["explain", IT, "--steps", span], env={"COLUMNS": "90"}).stdout
    trace = attnviz.explain(IT)
    with command_line():  # the header names the command that shows coref in the CLI's words
        assert attnviz.lesson(trace, width=90, steps=span) == printed
        assert attnviz.lesson(trace, width=90, steps=list(range(scaled, z + 1))) == printed
        assert attnviz.lesson(trace, width=90, steps=range(scaled, z + 1)) == printed
    last = attnviz.lesson(trace, steps=output)
    assert f"Step {output} ·" in last and f"Step {z} ·" not in last
    for steps in (str(focus + 1), "4-", str(focus)):
        refused = runner.invoke(app, ["explain", "I am good", "--steps", steps])
        with pytest.raises(attnviz.AttnvizError) as raised, command_line():
            attnviz.lesson(attnviz.explain("I am good"), steps=steps)
        assert raised.value.message == refused.stderr.strip().removeprefix("error: ")
    beyond = focus + 1  # a step the lessons with rotary positions have, this one not
    with pytest.raises(attnviz.AttnvizError, match=f'^steps="{beyond}": there is no step {beyond}'):
        attnviz.lesson(attnviz.explain("I am good"), steps=str(beyond))


@pytest.mark.parametrize(
    ("arguments", "call", "in_python"),
    [
        (
            ["heatmap", "I am good", "-o", "x.png", "--style", "lines", "--scale", "row"],
            lambda: attnviz.heatmap(attnviz.explain("I am good"), style="lines", scale="row"),
            'scale sets the heatmaps\' colours; style="lines" has none',
        ),
        (
            ["heatmap", "I am good", "-o", "x.png", "--all-layers", "--head", "1"],
            lambda: attnviz.heatmap(attnviz.explain("I am good"), all_layers=True, head=1),
            "all_layers draws every layer and head in one figure; drop head.",
        ),
        (
            ["explain", "I am good", "--decimals", "9"],
            lambda: attnviz.lesson(attnviz.explain("I am good"), decimals=9),
            "decimals=9 is out of range; use 0 to 8.",
        ),
        (
            ["explain", "I am good", "--steps", "4-"],
            lambda: attnviz.lesson(attnviz.explain("I am good"), steps="4-"),
            "steps=\"4-\": '4-' is neither a step number nor a range of them",
        ),
        (
            ["scaling", "--dk", "4,x"],
            lambda: attnviz.scaling("4,x"),
            "d_ks=\"4,x\": 'x' is not a whole number; e.g. d_ks=[4, 16, 64].",
        ),
        (
            ["scaling", "--keys", "1"],
            lambda: attnviz.scaling(keys=1),
            "keys=1 is out of range; use 2 to 4096.",
        ),
        (
            ["heads", "I am good"],
            lambda: attnviz.heads(attnviz.explain("I am good")),
            "heads follows one word: name it with focus=WORD (the default, 'it', is not",
        ),
        (
            ["cross", "I am good", "Je vais bien", "--causal"],
            None,  # the API's cross() has no causal: core refuses it as the command line does
            None,
        ),
    ],
)
def test_refusals_name_flags_on_the_command_line_and_arguments_in_python(
    arguments: list[str], call: Any, in_python: str | None, tmp_path: Path
) -> None:
    arguments = [str(tmp_path / a) if a == "x.png" else a for a in arguments]
    result = runner.invoke(app, arguments)
    assert result.exit_code != 0
    said = result.stderr.strip().removeprefix("error: ")
    assert said.startswith("--") or "--" in said
    if call is None:
        return
    with pytest.raises(attnviz.AttnvizError) as raised:
        call()
    assert raised.value.message.startswith(in_python)
    assert "--" not in raised.value.message
    with pytest.raises(attnviz.AttnvizError) as raised, command_line():
        call()
    assert raised.value.message == said  # the same sentence, in the command line's words


@pytest.mark.slow
def test_notes_name_the_focus_as_each_side_writes_it() -> None:
    with pytest.warns(UserWarning, match='Use focus="the:2" for the second.'):
        attnviz.explain("the cat saw the dog", focus="the")
    result = runner.invoke(app, ["explain", "the cat saw the dog", "--focus", "the"])
    assert "note: 'the' occurs 2 times; following the first. Use --focus the:2" in result.stderr


def test_option_spells_flags_only_while_the_command_line_runs() -> None:
    from attnviz.errors import option

    spelled = [
        option("head", 3),
        option("focus", "the:2"),
        option("heads"),
        option("pad_to", 5),
        option("causal", True),
        option("layer", metavar="N"),
    ]
    assert spelled == ["head=3", 'focus="the:2"', "heads", "pad_to=5", "causal=True", "layer=N"]
    with command_line():
        assert [
            option("head", 3),
            option("focus", "the:2"),
            option("heads"),
            option("pad_to", 5),
            option("causal", True),
            option("layer", metavar="N"),
        ] == ["--head 3", "--focus the:2", "--heads", "--pad-to 5", "--causal", "--layer N"]
    assert option("head", 3) == "head=3"  # only inside


def count_selections(work: Any) -> int:
    """How many times select() runs while ``work()`` runs."""
    import sys

    from attnviz.selection import select

    code, calls = select.__code__, [0]

    def profile(frame: Any, event: str, argument: Any) -> None:
        if event == "call" and frame.f_code is code:
            calls[0] += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(previous)
    return calls[0]


@pytest.mark.slow
def test_the_selection_is_made_once_per_command(tmp_path: Path) -> None:
    for arguments in (
        ["explain", IT, "--svg", str(tmp_path / "a.svg"), "--html", str(tmp_path / "a.html")],
        ["heatmap", IT, "-o", str(tmp_path / "a.png")],
        ["page", IT, "-o", str(tmp_path / "b.html")],
        ["cross", "I am good", "Je vais bien", "-o", str(tmp_path / "c.png")],
        ["heads", IT],
    ):
        assert count_selections(lambda a=arguments: runner.invoke(app, a)) == 1, arguments[0]

    def notebook() -> None:
        shown = attnviz.explain(IT, focus="it")
        shown._repr_html_()
        attnviz.lesson(shown)
        attnviz.page(shown)
        attnviz.heads(shown)
        attnviz.heatmap(shown)

    assert count_selections(notebook) == 1  # before: 5 (the display alone selected again)


@pytest.mark.slow
@needs_model
def test_a_model_run_is_selected_once_not_once_per_layer() -> None:
    def notebook() -> None:
        shown = attnviz.explain(IT, model="minilm", focus="it")
        shown._repr_html_()  # its overview of every layer and head
        attnviz.heatmap(shown, all_layers=True)

    assert count_selections(notebook) == 1  # before: 9 (the overview selected every layer)


def test_heads_and_scaling_return_data() -> None:
    default = attnviz.heads(attnviz.explain(IT))
    assert default.rank_by.value == "specificity" and len(default.types) == 2
    best = default.per_head[0]
    assert best.specificity == best.weight - max(best.by_key, best.by_offset)
    with pytest.raises(attnviz.AttnvizError, match="in cross-attention the keys are another"):
        attnviz.heads(attnviz.cross("I am good", "Je vais bien", focus="vais"))
    ranking = attnviz.heads(attnviz.explain(IT), rank_by="weight")
    assert ranking.focus == "it" and ranking.rank_by.value == "weight"
    assert len(ranking.per_head) == 2 and set(ranking.per_word) == set(range(11))
    assert ranking.per_head[0].weight >= ranking.per_head[1].weight
    with pytest.warns(UserWarning, match="d_k 9000 capped at 4096"):
        rows = attnviz.scaling([4, 9000], queries=10)
    assert [row.d_k for row in rows] == [4, 4096]
    assert rows == attnviz.scaling("4,4096", queries=10)


@pytest.mark.slow
@needs_model
def test_every_layer_exported_from_python_is_read_back_layer_by_layer(tmp_path: Path) -> None:
    shown = attnviz.explain("I am good", model="minilm", dtype="float64")
    attnviz.export_layers(shown.layers, tmp_path / "m.npz")
    again = attnviz.explain(
        "I am good", weights=tmp_path / "m.npz", embeddings=tmp_path / "m.npz", layer=3
    )
    np.testing.assert_allclose(again.trace.weights, shown.layers[2].weights, atol=1e-12)
    assert len(attnviz.load_trace(tmp_path / "m.npz")) == 6
