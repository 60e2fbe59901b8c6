"""attnviz.options: one record of a lesson's options, each validated once where it is built,
and the files an option passes through: adding one touches at most three
(docs/development.md, "Adding an option")."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

import pytest

import attnviz
from attnviz.errors import AttnvizError
from attnviz.options import FLAGS, Options, TraceOptions, ViewOptions, options_from

PACKAGE = Path(attnviz.__file__).parent

#: The most files of attnviz that adding an option of explain may touch: its field, flag and
#: check (options.py), its Python keyword (api/explain.py) and where it is used.
MOST_FILES = 3


def record_options() -> list[str]:
    """Every option of the record a person can give (export_layer is set by --layer)."""
    fields = [f.name for f in dataclasses.fields(TraceOptions) if f.name != "export_layer"]
    return [*fields, *ViewOptions._fields]


def files_naming(name: str) -> set[str]:
    """The modules of attnviz in which option ``name`` is declared (a field, a parameter or its
    FLAGS entry), passed on (``name=name``) or read from a record (``options.name``)."""
    patterns = [
        rf'^\s+"{name}": Flag\(',
        rf"^\s+{name}: [^=\n]+(=|,$)",
        rf"\b{name}={name}\b",
        rf"\b(options|trace_options|view|trace)\.{name}\b",
    ]
    found = set()
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if any(re.search(pattern, text, re.M) for pattern in patterns):
            found.add(path.relative_to(PACKAGE).as_posix())
    return found


def test_every_option_of_the_record_has_its_flag_beside_its_field() -> None:
    assert sorted(FLAGS) == sorted(record_options())


def test_the_command_line_declares_the_records_options_from_their_flags() -> None:
    from attnviz.cli.options import DECLARATIONS

    for name, flag in FLAGS.items():
        _, info = typing.get_args(DECLARATIONS[name])
        assert (info.default, *info.param_decls) == flag.names, name
        assert info.help == flag.help, name
    source = (PACKAGE / "cli" / "options.py").read_text(encoding="utf-8")
    assert '"--kv-heads"' not in source and '"--pad-to"' not in source


@pytest.mark.slow
def test_an_option_passes_through_at_most_three_files() -> None:
    # --kv-heads, the latest option added: declared, validated and flagged in options.py, a
    # keyword of attnviz.explain, used by the core.
    assert files_naming("kv_heads") == {"options.py", "api/explain.py", "core.py"}
    assert len(files_naming("kv_heads")) <= MOST_FILES


@pytest.mark.slow
def test_the_count_finds_each_kind_of_place(tmp_path: Path) -> None:
    text = (
        '    "width": Flag(\n'
        "    width: int | None = None\n"
        "    options = options_from(width=width)\n"
        "    return options.width\n"
    )
    lines = text.splitlines()
    patterns = [
        r'^\s+"width": Flag\(',
        r"^\s+width: [^=\n]+(=|,$)",
        r"\bwidth=width\b",
        r"\b(options|trace_options|view|trace)\.width\b",
    ]
    for pattern, line in zip(patterns, lines, strict=True):
        assert re.search(pattern, line, re.M), line
    assert "pad_to" in FLAGS and len(files_naming("pad_to")) > MOST_FILES  # model mode too


def test_the_seed_is_checked_once_where_the_record_is_built() -> None:
    with pytest.raises(AttnvizError, match="must be a whole number >= 0, got -1"):
        TraceOptions(seed=-1)
    TraceOptions(seed=-1, model="coref")  # a model brings its weights: no seed is read
    core = (PACKAGE / "core.py").read_text(encoding="utf-8")
    assert "seed < 0" not in core and "must be a whole number >= 0" not in core


def test_the_keyword_arguments_build_one_record() -> None:
    options = options_from(heads=4, positions="rope", focus="it", head="all", oov="random")
    assert options == Options(
        TraceOptions(heads=4, positions="rope", oov="random"),  # type: ignore[arg-type]
        ViewOptions(focus="it", head="all"),
    )
    assert options.trace.positions.value == "rope"
    with pytest.raises(AttnvizError, match="head='all': give a whole number"):
        options_from(one_head=True, head="all")
    with pytest.raises(AttnvizError, match="positions=None is not a choice"):
        options_from(positions=None)
