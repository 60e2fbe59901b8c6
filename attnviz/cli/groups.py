"""How a command takes a group of options: ``command()`` spreads each group parameter of a
command (TraceOptions, ViewOptions, LessonOptions) into the group's options, declared once in
attnviz.cli.options, and gathers them back into the group when Typer calls the command."""

# No `from __future__ import annotations`: Typer reads these annotations on every run.
import contextlib
import copy
import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from attnviz.arguments import empty_path
from attnviz.cli.console import user_errors
from attnviz.cli.options import DECLARATIONS, GROUPS
from attnviz.cli.values import path_text, whole_number
from attnviz.errors import LONGEST_QUOTED, AttnvizError, command_line, shortened


class Leave:
    """``Annotated[TraceOptions, Leave("model")]``: a command that takes a group without some
    of its options; those keep their defaults."""

    def __init__(self, *names: str) -> None:
        self.names = frozenset(names)


class Reword:
    """``Annotated[ViewOptions, Reword(layer="…")]``: a command whose options of a group mean
    something narrower there than the group's help says (cross takes no --model, so its
    --layer only reads a model's export)."""

    def __init__(self, **helps: str) -> None:
        self.helps = helps


def _reworded(declaration: Any, help_text: str) -> Any:
    """An option's ``Annotated[type, typer.Option(…)]`` with its help replaced."""
    kind, info = typing.get_args(declaration)
    info = copy.copy(info)
    info.help = help_text
    return Annotated[kind, info]


# -- groups to options and back -------------------------------------------------------------------


def command(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` with each group parameter spread into the group's options for Typer; when
    Typer calls it, the options are gathered back into the group (validated on construction).
    An AttnvizError, from a group or the command, becomes one line on stderr and its exit code;
    while the command runs, its messages name the command line's flags (errors.option).
    """
    hints = typing.get_type_hints(function, include_extras=True)
    parameters: list[inspect.Parameter] = []
    groups: dict[str, tuple[type, list[str]]] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        annotation, left_out, helps = _group_of(hints[name])
        if annotation is None:
            # Keyword-only, like the spread options: Typer passes every value by name.
            parameters.append(
                parameter.replace(
                    annotation=_strict(hints[name]), kind=inspect.Parameter.KEYWORD_ONLY
                )
            )
            continue
        names = []
        for option, default in _options_of(annotation):
            if option in left_out:
                continue
            names.append(option)
            parameters.append(
                inspect.Parameter(
                    option,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=default,
                    annotation=_strict(
                        _reworded(DECLARATIONS[option], helps[option])
                        if option in helps
                        else DECLARATIONS[option]
                    ),
                )
            )
        groups[name] = (annotation, names)
    # --model names a model or its folder: a path too, though typed as text.
    path_options = {p.name for p in parameters if _is_path_text(p.annotation)} | {"model"}

    @functools.wraps(function)
    def gathered(**values: Any) -> Any:
        typed = [value for value in values.values() if isinstance(value, (str, Path))]
        with command_line(), user_errors(), _quoting_briefly(typed):
            for name in sorted(path_options & values.keys()):
                if values[name] == "":  # kept by the parsers: path_text
                    raise empty_path(name)
            for name, (group, names) in groups.items():  # a group refuses contradictions
                values[name] = group(**{option: values.pop(option) for option in names})
            return function(**values)

    gathered.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    gathered.__annotations__ = {p.name: p.annotation for p in parameters}
    del gathered.__wrapped__  # Typer must see the spread signature, not the function's
    return gathered


@contextlib.contextmanager
def _quoting_briefly(typed: list[str | Path]) -> Iterator[None]:
    """An AttnvizError's message with every long value the person typed (a path of 100,000
    characters, a page of a focus word) clipped to its first characters (errors.shortened)."""
    try:
        yield
    except AttnvizError as error:
        if any(len(str(value)) > LONGEST_QUOTED for value in typed):
            error.message = shortened(error.message, typed)
            error.args = (error.message,)
        raise


def _strict(declaration: Any) -> Any:
    """An option of whole numbers (``Annotated[int | None, typer.Option(…)]``) parsed by
    whole_number; a path option (``Path`` or ``Path | None``) by its own parser or path_text,
    declared to Typer as text (``_PathText``) so that Typer does not make "" Path("."): the
    command refuses "" by the option's name; any other declaration as it is."""
    if typing.get_origin(declaration) is not Annotated:
        return declaration
    kind, *extras = typing.get_args(declaration)
    numeric = kind is int or set(typing.get_args(kind)) == {int, type(None)}
    path = kind is Path or set(typing.get_args(kind)) == {Path, type(None)}
    infos = [extra for extra in extras if isinstance(extra, typer.models.ParameterInfo)]
    if len(infos) != 1 or not (path or numeric and infos[0].parser is None):
        return declaration
    info = copy.copy(infos[0])
    if path:
        info.parser = info.parser or path_text
        return Annotated[_PathText if kind is Path else _PathText | None, info]
    info.parser = whole_number
    return Annotated[kind, info]


class _PathText(str):
    """What Typer is told a path option holds, so that it leaves the parser's value alone
    (for a ``Path`` it would call Path() on it); the command gets a Path, or "" to refuse."""


def _is_path_text(declaration: Any) -> bool:
    """Whether a declaration ``_strict`` made is a path option's."""
    if typing.get_origin(declaration) is Annotated:
        declaration = typing.get_args(declaration)[0]
    return declaration is _PathText or set(typing.get_args(declaration)) == {_PathText, type(None)}


def _group_of(annotation: Any) -> tuple[type | None, frozenset[str], dict[str, str]]:
    """The options group an annotation names, the options it leaves out, and the help of
    those it rewords."""
    left_out: frozenset[str] = frozenset()
    helps: dict[str, str] = {}
    if typing.get_origin(annotation) is Annotated:
        annotation, *extras = typing.get_args(annotation)
        for extra in extras:
            if isinstance(extra, Leave):
                left_out = extra.names
            elif isinstance(extra, Reword):
                helps = extra.helps
    return (annotation if annotation in GROUPS else None), left_out, helps


def _options_of(group: type) -> list[tuple[str, Any]]:
    """A group's options and their defaults: a frozen dataclass's fields, a NamedTuple's; those
    declared as options (TraceOptions.export_layer is set by --layer, through the view)."""
    if dataclasses.is_dataclass(group):
        fields = [(field.name, field.default) for field in dataclasses.fields(group)]
    else:
        defaults: dict[str, Any] = group._field_defaults  # type: ignore[attr-defined]
        fields = [(name, defaults[name]) for name in group._fields]  # type: ignore[attr-defined]
    return [(name, default) for name, default in fields if name in DECLARATIONS]
