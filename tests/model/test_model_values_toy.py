"""A toy model's config.json (attnviz train --save) with values used as a count or an index
that its folder cannot have: a probe's focus past its words, a layer count that would take
minutes to list. Refused in one line, without the extra attnviz[model]."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from attnviz.cli import app
from attnviz.errors import ExitStatus
from attnviz.model.families.toy import MAX_LAYERS

from support import CliRunner

COREF = Path(__file__).resolve().parents[2] / "attnviz" / "model" / "sources" / "trained" / "coref"
SENTENCE = "the animal didn't cross the street because it was too tired"
runner = CliRunner()


def probe(key: str, value: object) -> Callable[[dict[str, Any]], None]:
    return lambda config: config["probes"][0].__setitem__(key, value)


CASES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "a focus past the probe's words": (probe("focus", 99), "a probe's focus 99 is not one of its"),
    "a negative focus": (probe("focus", -1), "a probe's focus -1 is not one of its 11 words"),
    "a probe that is a number": (
        lambda config: config["probes"].__setitem__(0, 3),
        "a probe lacks its words or focus",
    ),
    "a billion layers": (
        lambda config: config.__setitem__("n_layers", 10**9),
        f"n_layers is 1000000000; a toy model has at most {MAX_LAYERS} layers",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_toy_config_value_its_folder_cannot_have_is_refused(case: str, tmp_path: Path) -> None:
    edit, fragment = CASES[case]
    folder = tmp_path / "toy"
    shutil.copytree(COREF, folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    edit(config)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    result = runner.invoke(app, ["explain", SENTENCE, "-m", str(folder)])
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == ExitStatus.BAD_FILE, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], lines
