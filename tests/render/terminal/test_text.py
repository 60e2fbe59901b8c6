"""The terminal's text: prose wrapped at spaces (in time linear in its length), weight shading."""

from __future__ import annotations

import re

import pytest
import rich.cells
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text

from attnviz.cli import run
from attnviz.render.terminal.text import weight_style, wrap
from render.counting import Measured

from support import steps_spec


def test_weight_style_is_dark_for_zero_bright_for_one_and_readable() -> None:
    assert weight_style(0.0) == "white on #440154"
    assert weight_style(1.0) == "black on #fde725"
    assert weight_style(-5.0) == weight_style(0.0) and weight_style(7.0) == weight_style(1.0)


def test_weight_style_stays_ordered_on_256_and_16_colour_terminals() -> None:
    greys = [int(weight_style(w / 20, "256").split("color(")[1].rstrip(")")) for w in range(21)]
    assert greys == sorted(greys) and greys[0] == 232 and greys[-1] == 255
    assert weight_style(0.05, "standard") == "dim"
    assert weight_style(0.2, "standard") == ""
    assert weight_style(0.4, "standard") == "bold"
    assert weight_style(0.9, "standard") == "bold reverse"
    assert weight_style(0.9, None) == ""


def test_wrap_keeps_vectors_whole_indents_continuations_and_leaves_no_trailing_spaces() -> None:
    from rich.text import Text

    from attnviz.render.terminal.text import wrap

    formula = Text("  z_it = 0.61·v_was + 0.12·v_because + 0.09·v_cross = [0.22, -0.34, -1.17]")
    formula.stylize("green")
    lines = wrap(formula, 40)
    assert [line.plain for line in lines] == [
        "  z_it = 0.61·v_was + 0.12·v_because +",
        "    0.09·v_cross = [0.22, -0.34, -1.17]",
    ]
    # Narrower, a line ends with the operator: none starts with one ("+ 0.09", "= [0.22").
    assert [line.plain for line in wrap(formula, 36)] == [
        "  z_it = 0.61·v_was +",
        "    0.12·v_because +",
        "    0.09·v_cross =",
        "    [0.22, -0.34, -1.17]",
    ]
    assert all(line.spans and line.spans[-1].style == "green" for line in lines)
    prose = wrap(Text("X has shape [n, d_model] = [11, 8] and so on "), 22)
    assert [line.plain for line in prose] == ["X has shape", "[n, d_model] = [11, 8]", "and so on"]


def test_a_binary_minus_ends_its_line_and_the_number_after_it_starts_the_next() -> None:
    """ "− 2.24" at the start of a line would read as a negative number: the minus stays at
    the end of the line before, or the line breaks earlier, after another operator."""
    example = Text("  x = 1.00 + 0.39 − 2.24 = -0.85")
    assert [line.plain for line in wrap(example, 20)] == ["  x = 1.00 + 0.39 −", "    2.24 = -0.85"]
    assert [line.plain for line in wrap(example, 18)] == [
        "  x = 1.00 +",
        "    0.39 − 2.24 =",
        "    -0.85",
    ]
    # Every operator between spaces, likewise: no line starts "+ 0.52", "= 0.99" or "/ 2.43".
    softmax = Text("  exp(-0.01) / (exp(-0.65) + exp(-0.09) + exp(-0.01)) = 0.99 / 2.43 = 0.41")
    assert [line.plain for line in wrap(softmax, 60)] == [
        "  exp(-0.01) / (exp(-0.65) + exp(-0.09) +",
        "    exp(-0.01)) = 0.99 / 2.43 = 0.41",
    ]
    # A group that holds no other, a function's argument, is never broken for a formula's sake.
    block = Text("  m = max(1.13, 1.59) = 1.59;  exp(m_old − m_new) = exp(1.13 − 1.59) = 0.63")
    assert [line.plain for line in wrap(block, 60)] == [
        "  m = max(1.13, 1.59) = 1.59;",
        "    exp(m_old − m_new) = exp(1.13 − 1.59) = 0.63",
    ]


def test_prose_breaks_before_an_operator_nowhere_and_elsewhere_as_it_did() -> None:
    prose = Text("What 'because' adds to 'it' in head 1, ‖w·f(x_because)‖ = w × ‖f(x_because)‖.")
    assert [line.plain for line in wrap(prose, 60)] == [
        "What 'because' adds to 'it' in head 1,",
        "‖w·f(x_because)‖ = w × ‖f(x_because)‖.",
    ]
    words = Text("Each row of scaled scores s becomes weights that sum to 1 (softmax) in [0, 1].")
    assert [line.plain for line in wrap(words, 30)] == [
        "Each row of scaled scores s",
        "becomes weights that sum to 1",
        "(softmax) in [0, 1].",
    ]


def test_a_product_too_long_for_its_line_is_cut_after_an_operator_not_in_a_number() -> None:
    products = Text("  0.61×(-0.30)×0.12×(-0.30)×0.12×(-0.30)×0.12×(-0.30)")
    assert [line.plain for line in wrap(products, 20)] == [
        "  0.61×(-0.30)×0.12×",
        "    (-0.30)×0.12×",
        "    (-0.30)×0.12×",
        "    (-0.30)",
    ]
    assert [line.plain for line in wrap(Text("  exp(-12.3456)"), 14)] == ["  exp", "    (-12.3456)"]


# A number as a worked example prints one, and as the tests find them again in wrapped lines.
_SIGNED = st.builds(
    lambda value, decimals: f"{value:.{decimals}f}", st.floats(-99, 99), st.integers(0, 4)
)
_NUMBERS = re.compile(r"\(-\d+(?:\.\d+)?\)|-?\d+(?:\.\d+)?")


@st.composite
def _worked_examples(draw: st.DrawFn) -> tuple[str, int]:
    """A worked example as the lesson writes one, "q_I[1] = (-0.564)×0.063 + … − 2.24 =
    -1.12", and the longest piece of it that no break may divide: a term and its operator."""

    def factor() -> str:
        number = draw(_SIGNED)
        return f"({number})" if number.startswith("-") else number

    def term() -> str:
        kind = draw(st.sampled_from(["product", "number", "exp", "weighted"]))
        if kind == "product":
            return f"{factor()}×{factor()}"
        if kind == "exp":
            return f"exp({draw(_SIGNED)})"
        if kind == "weighted":
            return f"{factor()}·v_{draw(st.sampled_from(['it', 'was', 'the:2']))}"
        return factor()

    terms = [term() for _ in range(draw(st.integers(1, 16)))]
    operators = [draw(st.sampled_from([" + ", " − ", " / ", " = ", " · "])) for _ in terms[1:]]
    body = terms[0] + "".join(op + t for op, t in zip(operators, terms[1:], strict=True))
    name = draw(st.sampled_from(["q_I[1]", "z_it[1]", "∂L/∂q_it[3]", "l"]))
    result = draw(_SIGNED)  # the example's last term: it must fit a line too
    text = f"  {name} = {body} = {result}"
    return text, max(len(piece) + 2 for piece in [name, *terms, result])


@pytest.mark.slow
@settings(max_examples=300)
@given(example=_worked_examples(), extra=st.integers(0, 80))
def test_wrapped_arithmetic_starts_no_line_with_an_operator_nor_splits_a_number(
    example: tuple[str, int], extra: int
) -> None:
    """At any width that holds its longest term, a worked example's lines: none starts with a
    binary operator (a minus there reads as a negative number), every number is whole on one
    line, and joined back they are the example."""
    text, longest = example
    width = 4 + longest + extra  # room for the continuation's indent and the longest term
    lines = [line.plain for line in wrap(Text(text), width)]
    assert all(rich.cells.cell_len(line) <= width for line in lines)
    assert not any(re.match(r" *[-−+×·/=] ", line) for line in lines), lines
    assert not any(line.lstrip().startswith(("−", "- ")) for line in lines), lines
    assert [n for line in lines for n in _NUMBERS.findall(line)] == _NUMBERS.findall(text)
    assert " ".join(line.strip() for line in lines) == text.strip()


@pytest.mark.slow
@given(factors=st.lists(_SIGNED, min_size=1, max_size=12), extra=st.integers(0, 40))
def test_a_product_with_no_space_is_cut_after_a_times_sign_never_in_a_number(
    factors: list[str], extra: int
) -> None:
    """A line with no space to break at, as narrow as a factor and its "×": each line ends
    with a "×", and every number is whole."""
    factors = [f"({f})" if f.startswith("-") else f for f in factors]
    text = "  " + "×".join(factors)
    width = 4 + max(len(f) for f in factors) + 1 + extra  # a factor and its "×" fit a line
    lines = [line.plain for line in wrap(Text(text), width)]
    assert all(line.endswith("×") for line in lines[:-1]), lines
    assert "".join(line.strip() for line in lines) == text.strip()
    assert [n for line in lines for n in _NUMBERS.findall(line)] == _NUMBERS.findall(text)


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(
    indent=st.integers(0, 12),
    text=st.text(alphabet=st.sampled_from(list("ab [](),=·東👍 ")), max_size=120),
    width=st.integers(1, 60),
)
def test_wrap_never_exceeds_the_width_nor_loses_a_character(
    indent: int, text: str, width: int
) -> None:
    from rich.cells import cell_len
    from rich.text import Text

    from attnviz.render.terminal.text import wrap

    lines = [line.plain for line in wrap(Text(" " * indent + text), width)]
    if width >= 2:  # narrower, a wide character cannot fit at all
        assert all(cell_len(line) <= width for line in lines)
    assert not any(line.endswith(" ") for line in lines)
    assert all(line.strip() for line in lines) or not text.strip()
    assert "".join("".join(lines).split()) == "".join(text.split())


@pytest.mark.slow
@settings(max_examples=200)
@given(
    indent=st.integers(0, 12),
    text=st.text(alphabet=st.sampled_from(list("ab [](),=/·東👍\u0301é ")), max_size=160),
    width=st.integers(1, 60),
)
def test_widths_added_up_by_character_break_lines_where_measuring_each_piece_does(
    indent: int, text: str, width: int
) -> None:
    """The wrapping's widths of every prefix, added up once, are Rich's measures of the pieces:
    the same lines as measuring each candidate line anew (the way kept for the texts whose
    widths do not add up: zero-width joiners, emoji variation selectors)."""
    import attnviz.render.terminal.text as layout

    paragraph = Text(" " * indent + text)
    added_up = [line.plain for line in wrap(paragraph.copy(), width)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(layout._AdditiveWidths, "of", classmethod(lambda cls, plain: None))
        measured = [line.plain for line in wrap(paragraph.copy(), width)]
    assert added_up == measured


@given(st.text(alphabet=st.sampled_from(list("ab ·東👍\u0301\u200d\ufe0f\x1b\x7fé€")), max_size=60))
def test_cell_width_is_what_rich_measures(text: str) -> None:
    from attnviz.render.terminal.text import cell_width

    assert cell_width(text) == rich.cells.cell_len(text)


@given(st.text(alphabet=st.sampled_from(list("a ([{}])東")), max_size=120))
def test_bracketed_groups_are_those_of_a_pass_over_every_character(plain: str) -> None:
    import attnviz.render.terminal.text as layout

    expected = [False] * len(plain)
    opened: list[int] = []
    for position, char in enumerate(plain):
        if char in "([{":
            opened.append(position)
        elif char in ")]}" and opened:
            start = opened.pop()
            if rich.cells.cell_len(plain[start : position + 1]) <= layout.MAX_UNBROKEN_GROUP:
                expected[start : position + 1] = [True] * (position + 1 - start)
    assert layout._bracketed(plain, layout._AdditiveWidths.of(plain)) == expected
    assert layout._bracketed(plain) == expected


@pytest.mark.parametrize("cells", [39, 40, 41])
def test_a_bracketed_group_at_the_limit_breaks_the_same_either_way(cells: int) -> None:
    """A group of 40 cells (MAX_UNBROKEN_GROUP) stays on one line, 41 may break: the same
    lines whether its width is added up or measured, east Asian wide characters included."""
    import attnviz.render.terminal.text as layout

    wide = (cells - 2) // 3  # "東 " is three cells
    group = "[" + "東 " * wide + "x" * (cells - 2 - 3 * wide) + "]"
    assert rich.cells.cell_len(group) == cells
    for width in range(30, 60, 3):
        paragraph = Text(f"The vector {group} and more words = 0.78 after it")
        added_up = [line.plain for line in wrap(paragraph.copy(), width)]
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(layout._AdditiveWidths, "of", classmethod(lambda cls, plain: None))
            measured = [line.plain for line in wrap(paragraph.copy(), width)]
        assert added_up == measured


def test_a_joiner_or_variation_selector_is_measured_as_rich_measures_the_sequence() -> None:
    import attnviz.render.terminal.text as layout

    assert layout._AdditiveWidths.of("a 👨\u200d👩 b") is None
    assert layout._AdditiveWidths.of("a ❤\ufe0f b") is None
    widths = layout._AdditiveWidths.of("a 東\u0301 b")
    assert widths is not None and widths.between(0, 6) == rich.cells.cell_len("a 東\u0301 b")
    lines = wrap(Text("x " * 30 + "👨\u200d👩\u200d👧 " * 12), 20)
    assert all(line.cell_len <= 20 for line in lines)


def test_wrapping_a_long_word_grows_linearly_with_its_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    measured = Measured(monkeypatch)
    work = []
    for length in (16_000, 32_000):
        measured.characters = 0
        text = Text(f"Sentence: {'a' * length} and [0.1, 0.2] more words (11 tokens)")
        lines = wrap(text, 80)
        assert all(line.cell_len <= 80 for line in lines)
        assert "".join(line.plain for line in lines).replace(" ", "") == text.plain.replace(" ", "")
        work.append(measured.characters)
    assert work[1] < 2.2 * work[0]  # measuring from the start for every line was quadratic


def test_explain_prints_a_16000_character_word_in_lines_that_fit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(["explain", "a" * 16_000, "--steps", steps_spec("tokens")]) == 0
    out = capsys.readouterr().out
    assert "a" * 9 + "…" in out
    assert max(rich.cells.cell_len(line) for line in out.splitlines()) <= 100


def test_a_line_of_zero_width_marks_is_elided_and_keeps_its_styles() -> None:
    text = Text("Sentence: ")
    text.append("a" + "\u0301" * 5_000, style="italic")
    text.append(" (1 token)")
    (line,) = wrap(text, 80)
    assert line.plain == "Sentence: a" + "\u0301" * 30 + "… (1 token)"
    italic = [span for span in line.spans if span.style == "italic"]
    assert italic and line.plain[italic[0].start : italic[0].end].startswith("a\u0301")
    assert wrap(Text("plain words only"), 80)[0].plain == "plain words only"
