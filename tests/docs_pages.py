"""The documentation as the tests read it: README.md and every page of docs/, their sections,
their code blocks and their links, with headings named as GitHub names their anchors."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def page_names() -> list[str]:
    """README.md, then every Markdown page of docs/, as paths relative to the checkout."""
    return ["README.md", *(f"docs/{path.name}" for path in sorted(DOCS.glob("*.md")))]


PAGES: dict[str, str] = {name: (ROOT / name).read_text(encoding="utf-8") for name in page_names()}


def heading_level(line: str) -> int:
    """The level of a Markdown heading line (``## x`` is 2), 0 for any other line."""
    match = re.match(r"(#{1,6}) ", line)
    return len(match[1]) if match else 0


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(index, line) of each line outside fenced code blocks, where a heading can be."""
    lines, fenced = [], False
    for index, line in enumerate(text.splitlines()):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append((index, line))
    return lines


def section(page: str, heading: str) -> str:
    """The text under ``heading`` (a whole heading line, such as ``## Errors``) in ``page``, up
    to the next heading of its level or above: its own subsections are part of it."""
    lines = PAGES[page].splitlines()
    level = heading_level(heading)
    starts = [index for index, line in prose_lines(PAGES[page]) if line == heading]
    assert len(starts) == 1, f"{page} has {len(starts)} headings {heading!r}"
    end = next(
        (
            index
            for index, line in prose_lines(PAGES[page])
            if index > starts[0] and 0 < heading_level(line) <= level
        ),
        len(lines),
    )
    return "\n".join(lines[starts[0] + 1 : end])


def text_block(page: str, heading: str, index: int = 0) -> list[str]:
    """The lines of the ``index``-th ```text block under ``heading`` in ``page``."""
    body = section(page, heading)
    return body.split("```text\n")[index + 1].split("```")[0].rstrip("\n").splitlines()


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)


def attnviz_commands(text: str) -> list[str]:
    """Each ``attnviz …`` line of the bash blocks of ``text``, without its comment, normalised by
    shlex as the expectations are keyed."""
    lines = [line.strip() for block in bash_blocks(text) for line in block.splitlines()]
    return [
        shlex.join(shlex.split(line, comments=True))
        for line in lines
        if line.startswith("attnviz ")
    ]


def documented_commands() -> list[str]:
    """Every ``attnviz …`` command of every page, each once, in the order the pages give them."""
    return list(dict.fromkeys(c for text in PAGES.values() for c in attnviz_commands(text)))


# -- links ---------------------------------------------------------------------------------------


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading's text: lower case, punctuation (backquotes, colons, …) left
    out, spaces made hyphens; letters, digits, ``-`` and ``_`` kept."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor in a page; a repeated one gets -1, -2, … as on GitHub."""
    seen: dict[str, int] = {}
    for _, line in prose_lines(text):
        if heading_level(line):
            name = anchor(line.lstrip("#"))
            count = seen.get(name, 0)
            seen[name] = count + 1
            if count:
                seen[f"{name}-{count}"] = 1
    return set(seen)


def link_targets(text: str) -> list[str]:
    """The target of every Markdown link and image of a page's prose (``[a](target)``,
    ``![a](target)``), code blocks and inline code left out."""
    prose = "\n".join(line for _, line in prose_lines(text))
    prose = re.sub(r"`[^`]*`", "", prose)
    return re.findall(r"\]\(([^)\s]+)\)", prose)
