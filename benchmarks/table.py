"""The rows every benchmark reports, and the combined table ``benchmarks/run.py`` prints.

A benchmark run with ``--rows FILE`` writes its headline figures to FILE as JSON, one object per
row: what was measured, the value, the floor it was measured against in the same run, their
ratio, the target and the verdict. Quick runs judge nothing, so their verdict is "not judged".
"""

from __future__ import annotations

import json
import platform
from dataclasses import asdict, dataclass
from pathlib import Path

COLUMNS = ("figure", "measured", "floor", "ratio", "target", "verdict")
NOT_JUDGED = "not judged"


@dataclass(frozen=True)
class Row:
    """One headline figure of a benchmark."""

    figure: str  # what was measured, e.g. 'cold `attnviz explain "I am good"`'
    measured: str  # the value with its unit, e.g. "229 ms"
    floor: str = ""  # the reference measured in the same run, "" when the target is absolute
    ratio: str = ""  # measured / floor, e.g. "1.49×"; for memory the difference, "+855 MB"
    target: str = ""  # e.g. "<= 1.3×", "< 2 s"; "" for a figure given for context
    verdict: str = ""  # "within", "OVER", NOT_JUDGED, or "" without a target


def judge(within: bool, *, quick: bool) -> str:
    """ "within" or "OVER" the target; NOT_JUDGED in a quick run, whose timings mean nothing."""
    if quick:
        return NOT_JUDGED
    return "within" if within else "OVER"


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def megabytes(kilobytes: float) -> str:
    return f"{kilobytes / 1024:.0f} MB"


def processor() -> str:
    """The processor's name, for figures against torch: its BLAS (MKL) and numpy's (OpenBLAS)
    are each faster on some processors than on others, so the same code measures 1.1× torch on
    one machine and 1.6× on another."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "an unnamed processor"


def write_rows(rows: list[Row], path: Path) -> None:
    path.write_text(json.dumps([asdict(row) for row in rows], indent=1), encoding="utf-8")


def read_rows(path: Path) -> list[Row]:
    return [Row(**fields) for fields in json.loads(path.read_text(encoding="utf-8"))]


def format_table(rows: list[Row]) -> str:
    """The rows as a plain-text table, each column as wide as its widest cell."""
    cells = [list(COLUMNS), *([getattr(row, name) for name in COLUMNS] for row in rows)]
    widths = [max(len(line[column]) for line in cells) for column in range(len(COLUMNS))]
    # Text left-aligned, numbers right-aligned, so the values line up on their units.
    right = {"measured", "floor", "ratio"}
    lines = []
    for line in cells:
        padded = [
            cell.rjust(width) if name in right else cell.ljust(width)
            for name, cell, width in zip(COLUMNS, line, widths, strict=True)
        ]
        lines.append("  ".join(padded).rstrip())
    return "\n".join(lines)
