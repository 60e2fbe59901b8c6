"""The package's shape: no import circles, no module importing from a layer above its own, no
module over 500 lines and no function over 80.

Imports are read with ast from every module of attnviz, at module level and inside functions
alike (a function's import runs too, only later), and those under ``if TYPE_CHECKING:`` too: a
type names a dependency as much as a call does.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "attnviz"

#: The layers, lowest first: a module may import from its own layer or any below. ``x*`` is x
#: and anything under it (a module split into a package keeps its place). The trace, a plain
#: record, sits below the math that assembles it (attention.multi_head_attention) and the
#: loaders that read a model's export (weights, embeddings); its export files sit with it.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "errors",
        "arrays",
        "arguments",
        "config",
        "positions",
        "signals",
        "tokens",
        "labels",
        "limits",
        "layer_limits",
        "serial",
        "files*",
    ),
    ("provenance",),
    ("trace", "trace_checks", "trace_files"),
    ("latent", "attention_inputs", "embeddings*", "weights"),
    ("attention",),
    ("kernels", "checked_steps"),
    (
        "selection",
        "worked",
        "outputs",
        "reuse",
        "options",
        "results",
        "analysis*",
        "model*",
        "train*",
    ),
    ("core",),
    ("generation*",),
    ("lesson*",),
    ("exercise*",),
    ("render*",),
    ("api", "api.surface", "api.explanation", "api.divisors", "api.train", "api.ablate"),
    ("api.writing", "api.generated"),
    ("api.explain",),
    ("api.cross", "api.lesson", "api.heatmap", "api.heads", "api.scaling", "api.compare"),
    ("api.page", "api.demo", "api.generate"),
    ("api.lens",),
    ("cli*", "", "__main__"),  # "": the package's own __init__, the public API
)

#: Imports forbidden though the layers allow them, (importer, imported) as LAYERS writes
#: them: the renderers draw, and the lesson tells, what the analyses found, computed once by
#: the API (attnviz.analysis.analyses) and handed to them as data (attnviz.results); they
#: import no analysis, so that no surface computes one again.
FORBIDDEN: tuple[tuple[str, str], ...] = (("render*", "analysis*"), ("lesson*", "analysis*"))

#: Functions allowed over 80 lines, and why.
LONG_FUNCTIONS: dict[str, str] = {}

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def module_files() -> dict[str, Path]:
    """Every module of attnviz by dotted name relative to the package ("" for its __init__)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


@functools.cache
def parsed_modules() -> dict[str, tuple[Path, str, ast.Module]]:
    """Every module's path, text and syntax tree, read and parsed once for all the tests here."""
    found = {}
    for module, path in module_files().items():
        text = path.read_text(encoding="utf-8")
        found[module] = (path, text, ast.parse(text))
    return found


def _imported_names(tree: ast.Module, module: str, is_package: bool) -> list[str]:
    """The dotted names (within attnviz) that a module's imports name, wherever they are."""
    names: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if module else []
                base = base if is_package else base[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join(["attnviz", *base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            names.extend(f"{target}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return names


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of attnviz it imports ("" is the package's __init__)."""
    modules = parsed_modules()
    graph: dict[str, set[str]] = {}
    for module, (path, _, tree) in modules.items():
        targets = set()
        for name in _imported_names(tree, module, path.name == "__init__.py"):
            if name != "attnviz" and not name.startswith("attnviz."):
                continue
            dotted = name.removeprefix("attnviz").removeprefix(".")
            while dotted and dotted not in modules:  # a name in a module: the module
                dotted = dotted.rpartition(".")[0]
            if dotted != module:
                targets.add(dotted)
        graph[module] = targets
    return graph


def layer_of(module: str) -> int:
    for index, layer in enumerate(LAYERS):
        for pattern in layer:
            if pattern.endswith("*"):
                stem = pattern[:-1]
                if (
                    module == stem
                    or module.startswith(stem + ".")
                    or fnmatch.fnmatch(module, pattern)
                ):
                    return index
            elif module == pattern:
                return index
    raise AssertionError(f"attnviz.{module} is in no layer: add it to LAYERS")


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle, as the modules along it (the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    path: list[str] = []

    def walk(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := walk(target)) is not None:
                return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (found := walk(module)) is not None:
            return found
    return None


def named(module: str) -> str:
    return f"attnviz.{module}" if module else "attnviz"


@pytest.mark.slow
def test_no_module_imports_in_a_circle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(named(m) for m in cycle or ())


@pytest.mark.slow
def test_no_module_imports_from_a_layer_above_its_own() -> None:
    upward = [
        f"{named(module)} (layer {layer_of(module)}) imports {named(target)} "
        f"(layer {layer_of(target)})"
        for module, targets in sorted(import_graph().items())
        for target in sorted(targets)
        if layer_of(target) > layer_of(module)
    ]
    assert not upward, "\n".join(upward)


def _matches(module: str, pattern: str) -> bool:
    stem = pattern.removesuffix("*")
    if pattern.endswith("*"):
        return module == stem or module.startswith(stem + ".")
    return module == pattern


def forbidden_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import FORBIDDEN names, as "importer imports imported"."""
    return [
        f"{named(module)} imports {named(target)}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        for importer, imported in FORBIDDEN
        if _matches(module, importer) and _matches(target, imported)
    ]


@pytest.mark.slow
def test_no_renderer_and_no_lesson_imports_an_analysis() -> None:
    found = forbidden_imports(import_graph())
    assert not found, "\n".join(found)


def test_the_forbidden_imports_are_found() -> None:
    graph = {
        "render.page.page_rows": {"analysis.rollout", "results"},
        "render": {"analysis"},
        "api": {"analysis.heads"},
        "renderers": {"analysis"},  # not render/: a name that only begins alike
        "lesson.focus": {"analysis.contribution", "results"},
    }
    assert forbidden_imports(graph) == [
        "attnviz.lesson.focus imports attnviz.analysis.contribution",
        "attnviz.render imports attnviz.analysis",
        "attnviz.render.page.page_rows imports attnviz.analysis.rollout",
    ]


def private_imports(modules: dict[str, tuple[str, ast.Module]]) -> list[str]:
    """Each name with a leading underscore (not a dunder) that a module imports from another
    module of attnviz, as "importer imports name"."""
    found = []
    for module, (_, tree) in sorted(modules.items()):
        is_package = module == "" or module_files().get(module, PACKAGE).name == "__init__.py"
        for name in _imported_names(tree, module, is_package):
            last = name.rsplit(".", 1)[-1]
            if name.startswith("attnviz.") and last.startswith("_") and not last.startswith("__"):
                found.append(f"{named(module)} imports {name}")
    return found


@pytest.mark.slow
def test_no_module_imports_another_modules_private_name() -> None:
    modules = {module: (text, tree) for module, (_, text, tree) in parsed_modules().items()}
    found = private_imports(modules)
    assert not found, "\n".join(found)


def test_the_private_imports_are_found() -> None:
    tree = ast.parse(
        "from attnviz.render.terminal.tables import MAX_TABLE_ROWS, _kept\n"
        "def f():\n    from .tables import _fit, __version__\n"
    )
    assert private_imports({"render.notebook.cell": ("", tree)}) == [
        "attnviz.render.notebook.cell imports attnviz.render.terminal.tables._kept",
        "attnviz.render.notebook.cell imports attnviz.render.notebook.tables._fit",
    ]


def test_the_check_finds_a_circle_and_reads_imports_inside_functions() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from attnviz.api import explain\n"
        "def f():\n    from attnviz.render import page\n    from . import worked\n"
    )
    assert _imported_names(tree, "render.notebook", False) == [
        "typing.TYPE_CHECKING",
        "attnviz.api.explain",  # a type's import counts too
        "attnviz.render.page",
        "attnviz.render.worked",
    ]
    assert layer_of("render.figures.colour") == layer_of("render")
    assert layer_of("") > layer_of("api") > layer_of("render.page") > layer_of("core")


def _sizes() -> list[tuple[str, int, list[tuple[str, int]]]]:
    """(module, its lines, its functions over MAX_FUNCTION_LINES with their lines)."""
    found = []
    for module, (_, text, tree) in parsed_modules().items():
        long = [
            (node.name, node.end_lineno - node.lineno + 1)
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno is not None
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
        ]
        found.append((module, len(text.splitlines()), long))
    return found


@pytest.mark.slow
def test_no_module_over_500_lines_and_no_function_over_80() -> None:
    too_big = []
    for module, lines, long in _sizes():
        if lines > MAX_MODULE_LINES:
            too_big.append(f"{named(module)}: {lines} lines")
        too_big += [
            f"{named(module)}.{name}: {length} lines"
            for name, length in long
            if f"{module}.{name}" not in LONG_FUNCTIONS
        ]
    assert not too_big, "\n".join(too_big)


#: The packages of the optional model extra.
EXTRA = ("safetensors", "tokenizers", "gguf")


@pytest.mark.slow
def test_the_optional_extra_is_imported_only_inside_functions() -> None:
    """Importing any module of attnviz never needs the model extra: only a call that loads a model
    does. That is why scripts/check runs as without the extra only the tests marked extra."""
    at_import = []
    for module, (_, _, tree) in parsed_modules().items():
        functions = [
            node
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        ]
        inside = {id(child) for function in functions for child in ast.walk(function)}
        for node in ast.walk(tree):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            if id(node) not in inside and any(n.split(".")[0] in EXTRA for n in names):
                at_import.append(f"{named(module)}:{node.lineno}")
    assert not at_import, "the extra imported at import time: " + ", ".join(at_import)


# -- parameters --------------------------------------------------------------------------------

#: The most parameters a function of attnviz takes (``self`` and ``cls`` not counted; keyword-only,
#: ``*args`` and ``**kwargs`` counted), apart from the public functions: those of the Python API,
#: which keep the command line's options as keyword arguments, and the command-line commands,
#: whose parameters Typer makes into its flags. Options travel as one record (attnviz.options).
MAX_PARAMETERS = 8


def public_functions() -> set[tuple[str, str]]:
    """(module, function) of every public name of attnviz and every command-line command."""
    import attnviz
    from attnviz.cli import COMMANDS

    public = {(module.removeprefix("attnviz."), name) for name, module in attnviz._PUBLIC.items()}
    commands = {(f"cli.{module}", function) for module, function, _ in COMMANDS.values()}
    return public | commands


def parameter_counts() -> list[tuple[str, str, int]]:
    """(module, function, parameters) for every function and method of attnviz."""
    counts = []
    for module, (_, _, tree) in parsed_modules().items():
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            arguments = node.args
            names = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
            count = len(names) + len(arguments.kwonlyargs)
            count += (arguments.vararg is not None) + (arguments.kwarg is not None)
            if names and names[0] in ("self", "cls"):
                count -= 1
            counts.append((module, node.name, count))
    return counts


@pytest.mark.slow
def test_no_function_takes_more_than_8_parameters_but_the_public_ones() -> None:
    public = public_functions()
    over = [
        f"{named(module)}.{function}: {count} parameters"
        for module, function, count in parameter_counts()
        if count > MAX_PARAMETERS and (module, function) not in public
    ]
    assert not over, "\n".join(over)


@pytest.mark.slow
def test_the_parameter_count_sees_keyword_only_arguments_and_not_self(tmp_path: Path) -> None:
    tree = ast.parse("class A:\n    def f(self, a, *, b, c, **d): ...\n")
    method = tree.body[0].body[0]  # type: ignore[attr-defined]
    arguments = method.args
    assert [a.arg for a in arguments.args] == ["self", "a"]
    assert len(arguments.kwonlyargs) == 2 and arguments.kwarg is not None
    assert ("api.explain", "explain") in public_functions()  # 21 keyword arguments, as typed
    assert ("api.explain", "run") not in public_functions()
    counts = {(module, function): count for module, function, count in parameter_counts()}
    assert counts[("core", "trace_with_options")] <= MAX_PARAMETERS
    assert counts[("api.explain", "explain")] == 21
