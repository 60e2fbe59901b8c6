"""The README is a front page and docs/ holds the rest: the README stays short, shows every
command of ``attnviz --help`` with an example and links to its page, and every relative link of
README.md and docs/*.md reaches a file, and a heading where it names one.

What the pages' commands print is checked by tests/e2e/test_readme.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_pages import (
    PAGES,
    ROOT,
    anchor,
    anchors,
    attnviz_commands,
    link_targets,
    section,
)

from attnviz.cli import COMMANDS

README = PAGES["README.md"]
#: The README is a front page: the pitch, the two commands, the seeds' lesson, one example per
#: command, links. Everything longer goes to docs/.
MOST_README_LINES = 400


def test_the_readme_is_a_front_page() -> None:
    assert len(README.splitlines()) <= MOST_README_LINES


def command_heading(command: str) -> str:
    """The README's heading of ``command``: ``### `attnviz explain SENTENCE``` and the like."""
    headings = [line for line in README.splitlines() if line.startswith(f"### `attnviz {command}")]
    assert len(headings) == 1, f"the README has {len(headings)} headings for {command}"
    return headings[0]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_has_an_example_in_the_readme_and_a_page(command: str) -> None:
    body = section("README.md", command_heading(command))
    assert any(line.split()[1] == command for line in attnviz_commands(body)), command
    page = f"docs/{command}.md"
    assert f"]({page})" in body, f"the README's {command} section links to {page}"
    assert any(line.split()[1] == command for line in attnviz_commands(PAGES[page])), page


def test_every_page_of_docs_is_linked_from_the_readme() -> None:
    for page in PAGES:
        if page != "README.md":
            assert f"]({page}" in README, page


def link_problem(page: str, target: str) -> str | None:
    """Why ``target``, a link of ``page``, does not resolve; None when it does."""
    path, _, name = target.partition("#")
    file = (ROOT / page).parent / path if path else ROOT / page
    if not file.resolve().is_relative_to(ROOT) or not file.exists():
        return f"{page}: {target} names no file of the checkout"
    if name:
        if file.suffix != ".md":
            return f"{page}: {target} names a heading of a file that has none"
        if name not in anchors(file.read_text(encoding="utf-8")):
            return f"{page}: {target} names no heading of {file.relative_to(ROOT)}"
    return None


@pytest.mark.parametrize("page", list(PAGES))
def test_every_relative_link_resolves(page: str) -> None:
    targets = [
        target
        for target in link_targets(PAGES[page])
        if not target.startswith(("http://", "https://", "mailto:"))
    ]
    assert [problem for target in targets if (problem := link_problem(page, target))] == []


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    """The link check can fail: a missing file, a missing heading, a heading of a picture."""
    assert link_problem("README.md", "docs/nothing.md") is not None
    assert link_problem("README.md", "docs/explain.md#no-such-heading") is not None
    assert link_problem("README.md", "docs/page.png#top") is not None
    assert link_problem("docs/explain.md", "../README.md#what-you-see") is None
    assert link_problem("docs/speed.md", "#speed-in-detail") is None


def test_anchors_are_named_as_github_names_them() -> None:
    assert anchor(" Masks: `--causal` and `--pad-to`") == "masks---causal-and---pad-to"
    assert anchor(' The seeds\' lesson: does "it" find "animal"?') == (
        "the-seeds-lesson-does-it-find-animal"
    )
    assert anchors("# A\n```\n# not a heading\n```\n## A\n") == {"a", "a-1"}


def test_links_in_code_are_not_links() -> None:
    text = "See [x](a.md).\n```text\n![y](b.png)\n```\n`[z](c.md)` and ![w](d.png)\n"
    assert link_targets(text) == ["a.md", "d.png"]
