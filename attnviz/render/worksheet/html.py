"""A worksheet set and its key as one offline HTML file each: no script, no link to anything,
print CSS (@page with the paper's size, each sheet from a new page, no table split across
pages, a question's heading kept with its first table), black on white. Every text is escaped.
(Avoiding a break inside a whole question made Chromium start nearly every question on a page
of its own.)"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from attnviz.exercise.questions import Given
from attnviz.render.worksheet.sheet import (
    INSTRUCTIONS,
    Sheet,
    answer_prompt,
    key_answer,
    value_text,
)

#: @page sizes by paper.
PAGE_SIZES = {"a4": "A4", "letter": "letter"}

_STYLE = """
@page { size: %(size)s; margin: 18mm 16mm; }
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; font-size: 11pt;
       color: #000; background: #fff; max-width: 46em; margin: 1em auto; line-height: 1.35; }
h1 { font-size: 15pt; margin: 0 0 .4em; }
h2 { font-size: 11.5pt; margin: 1.1em 0 .3em; }
.sheet + .sheet { break-before: page; page-break-before: always; margin-top: 3em; }
table, .answer { break-inside: avoid; page-break-inside: avoid; }
h2, .given { break-after: avoid; page-break-after: avoid; }
.subtitle { font-weight: bold; margin: 0 0 .4em; }
.name { margin: .6em 0 1em; }
.line { display: inline-block; border-bottom: 1px solid #000; width: 14em; height: 1.1em; }
.about { font-size: 9.5pt; margin: .2em 0; }
table { border-collapse: collapse; margin: 0 0 .5em; }
.given { font-style: italic; margin: .3em 0 .1em; }
th, td { border: 1px solid #000; padding: .12em .5em; text-align: right;
         font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 10pt; }
th { font-weight: normal; background: #eee; }
.answer { margin: .3em 0 .2em; }
.box { display: inline-block; border: 1.5px solid #000; width: 9em; height: 1.6em;
       vertical-align: middle; margin-left: .5em; }
pre { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 9.5pt;
      white-space: pre-wrap; margin: .2em 0 .6em 1.2em; }
@media print { body { max-width: none; margin: 0; } th { background: none; } }
"""


def sheets_html(sheets: Sequence[Sheet], paper: str) -> str:
    """The sheets of the set in one page, each starting a new printed page."""
    body = "\n".join(_sheet(sheet) for sheet in sheets)
    return _document(f"Attention worksheets ({len(sheets)})", body, paper)


def keys_html(sheets: Sequence[Sheet], paper: str) -> str:
    """The keys of the set in one page, each starting a new printed page."""
    body = "\n".join(_key(sheet) for sheet in sheets)
    return _document(f"Answer keys ({len(sheets)})", body, paper)


def _document(title: str, body: str, paper: str) -> str:
    style = _STYLE % {"size": PAGE_SIZES[paper]}
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}</title>\n<style>{style}</style>\n</head>\n<body>\n"
        f"{body}\n</body>\n</html>\n"
    )


def _header(sheet: Sheet, *, key: bool) -> list[str]:
    parts = [f"<h1>{escape(sheet.heading(key=key))}</h1>"]
    if sheet.subtitle is not None:
        parts.append(f'<p class="subtitle">{escape(sheet.subtitle)}</p>')
    if not key:
        parts.append(
            '<p class="name">Name: <span class="line"></span> '
            'Date: <span class="line" style="width: 8em"></span></p>'
        )
    parts.append(f"<p>Sentence: “{escape(sheet.sentence)}”</p>")
    parts += [f'<p class="about">{escape(line)}</p>' for line in sheet.about]
    return parts


def _sheet(sheet: Sheet) -> str:
    parts = ['<section class="sheet">', *_header(sheet, key=False)]
    parts.append(f"<p>{escape(INSTRUCTIONS)}</p>")
    for number, question in enumerate(sheet.questions, start=1):
        parts.append('<div class="question">')
        parts.append(f"<h2>{number}. {escape(question.text)}</h2>")
        parts += [_table(given) for given in question.givens]
        parts.append(
            f'<p class="answer">{escape(answer_prompt(question))}<span class="box"></span></p>'
        )
        parts.append("</div>")
    parts.append("</section>")
    return "\n".join(parts)


def _key(sheet: Sheet) -> str:
    parts = ['<section class="sheet">', *_header(sheet, key=True)]
    for number, question in enumerate(sheet.questions, start=1):
        parts.append('<div class="question">')
        parts.append(f"<h2>{number}. {escape(key_answer(question))}</h2>")
        parts.append(f"<p>{escape(question.text)}</p>")
        parts.append("<pre>" + escape("\n".join(question.solution)) + "</pre>")
        parts.append("</div>")
    parts.append("</section>")
    return "\n".join(parts)


def _table(given: Given) -> str:
    labels = "".join(f"<th>{escape(label)}</th>" for label in given.labels)
    values = "".join(f"<td>{escape(value_text(given, value))}</td>" for value in given.values)
    # The name above the table, not its <caption>: a caption wraps to the table's width, a
    # word a line over a table of one number.
    return (
        f'<p class="given">{escape(given.name)}:</p>'
        f"<table><tr>{labels}</tr><tr>{values}</tr></table>"
    )
