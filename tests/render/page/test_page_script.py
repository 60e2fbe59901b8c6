"""The page's script draws and chooses; every sentence it shows comes from attnviz's Python."""

from __future__ import annotations

import re
from importlib import resources

from attnviz.core import trace_layers
from attnviz.options import TraceOptions
from attnviz.render.page.page_data import PAGE_TEXT, page_data, page_text
from attnviz.selection import ViewOptions, select
from render.analysed import analysed

from support import step

#: A string in the script: '…', "…" or `…` (template expressions ${…} taken out).
LITERAL = re.compile(r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`""")
#: Three words in a row, or a word followed by sentence punctuation: English, not a name.
SENTENCE = re.compile(r"[A-Za-z]{2,}[ ,]+[A-Za-z]{2,}[ ,]+[A-Za-z]{2,}|[A-Za-z]{2,}[.?!:](?:\s|$)")


def english_in(script: str) -> list[str]:
    code = "\n".join(line.split("//")[0] for line in script.splitlines())  # comments aside
    literals = (
        re.sub(r"\$\{[^}]*\}", " ", match.group()[1:-1]) for match in LITERAL.finditer(code)
    )
    return [literal for literal in literals if SENTENCE.search(literal)]


def test_the_page_script_holds_no_english_sentence() -> None:
    script = resources.files("attnviz.render.page").joinpath("page.js").read_text(encoding="utf-8")
    assert english_in(script) == []


def test_the_check_finds_a_sentence_where_there_is_one() -> None:
    assert english_in('x.textContent = "Choose a head first.";') == ["Choose a head first."]
    assert english_in("return `Where does ${word} look?`;") == ["Where does   look?"]
    assert english_in('make("button", "word key"); // a comment with many words in it.') == []


def test_every_text_the_page_says_comes_in_its_data() -> None:
    layers, _ = trace_layers("I am good", TraceOptions())
    data = page_data(analysed(layers), layers[0], select(layers[0], ViewOptions()))
    assert data["text"] == page_text(layers[0])
    scores, weights = step("scores"), step("weights")
    assert data["text"]["keyNotWorked"].startswith(f"Steps {scores} to {weights} are worked out")
    script = resources.files("attnviz.render.page").joinpath("page.js").read_text(encoding="utf-8")
    used = set(re.findall(r"TEXT\.(\w+)", script))
    assert used == set(PAGE_TEXT)  # every text used, none left over


def test_every_slot_the_lesson_uses_is_filled_by_the_page() -> None:
    """A slot the page did not know would show the lesson's example word, not the picked one."""
    from attnviz.lesson.blocks import Paragraph
    from attnviz.lesson.options import LessonOptions

    from support import written_lesson as lesson

    layers, _ = trace_layers("The cat sat on the mat", TraceOptions(pad_to=8))
    selection = select(layers[0], ViewOptions(hide_special=True, focus="sat"))
    slots = {  # all of the text, as the page has it
        span.slot
        for block in lesson(layers[0], selection, LessonOptions(full=True))
        if isinstance(block, Paragraph)
        for span in block.spans
        if span.slot
    }
    assert slots == {"query", "query!r", "key!r", "tables"}
    script = resources.files("attnviz.render.page").joinpath("page.js").read_text(encoding="utf-8")
    handled = set(re.findall(r'^\s*"?([\w!]+)"?: \(\) =>', script, re.M))
    assert slots <= handled
