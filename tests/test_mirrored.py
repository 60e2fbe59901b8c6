"""Every module of attnviz has its tests at the mirrored path, attnviz/a/b.py in tests/a/test_b.py,
or tests/README.md lists it with the tests that cover it and why they are elsewhere. A package's
__init__.py and __main__.py are left out: the package's folder of tests is its mirror."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "attnviz"
TESTS = ROOT / "tests"
#: A row of tests/README.md's table: | `attnviz/a/b.py` | the tests that cover it | why |
ROW = re.compile(r"^\|\s*`(attnviz/[^`]+\.py)`\s*\|([^|]*)\|([^|]*)\|\s*$")


def mirrored(module: Path) -> Path:
    """attnviz/a/b.py -> tests/a/test_b.py."""
    relative = module.relative_to(PACKAGE)
    return TESTS / relative.parent / f"test_{relative.name}"


def modules() -> list[Path]:
    return [
        path
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name not in ("__init__.py", "__main__.py")
    ]


def listed(text: str) -> dict[str, tuple[str, str]]:
    """The README's rows: module -> (the tests that cover it, why they are not mirrored)."""
    found = {}
    for line in text.splitlines():
        if match := ROW.match(line):
            found[match[1]] = (match[2].strip(), match[3].strip())
    return found


def test_every_module_has_its_mirrored_test_or_a_reason() -> None:
    rows = listed((TESTS / "README.md").read_text(encoding="utf-8"))
    missing = [
        f"{module.relative_to(ROOT)}: no {mirrored(module).relative_to(ROOT)}, and not listed "
        "in tests/README.md"
        for module in modules()
        if not mirrored(module).is_file() and str(module.relative_to(ROOT)) not in rows
    ]
    assert not missing, "\n".join(missing)


def test_every_row_of_the_readme_is_a_module_without_a_mirror_and_says_why() -> None:
    rows = listed((TESTS / "README.md").read_text(encoding="utf-8"))
    stale = []
    for name, (tests, why) in rows.items():
        module = ROOT / name
        if not module.is_file():
            stale.append(f"{name}: no such module")
        elif mirrored(module).is_file():
            stale.append(f"{name}: {mirrored(module).relative_to(ROOT)} exists; drop the row")
        elif not tests or not why:
            stale.append(f"{name}: say which tests cover it and why they are elsewhere")
        stale += [
            f"{name}: {test} is no test file"
            for test in re.findall(r"`([^`]+)`", tests)
            if not (ROOT / test).is_file()
        ]
    assert not stale, "\n".join(stale)


def test_the_rows_are_read_and_the_mirror_is_the_tests_folder() -> None:
    text = "| module | tests | why |\n|---|---|---|\n| `attnviz/a/b.py` | tests/x.py | one |\n"
    assert listed(text) == {"attnviz/a/b.py": ("tests/x.py", "one")}
    assert mirrored(PACKAGE / "model" / "bert.py") == TESTS / "model" / "test_bert.py"
    assert mirrored(PACKAGE / "errors.py") == TESTS / "test_errors.py"
