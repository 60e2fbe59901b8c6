"""The Python API's keyword arguments checked as they enter: whole numbers, True or False,
text, sentences, file paths, a choice among an Enum's values, a bounded list. Each refusal names
the argument as it was written (``head=1.5``), as the command line's own parser names its
flags, and quotes at most the start of what was given (errors.shown_value)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from enum import Enum
from itertools import islice
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attnviz.errors import (
    AttnvizError,
    FileProblem,
    OutputProblem,
    clipped,
    option,
    shown_value,
    spelled,
)

if TYPE_CHECKING:
    from numpy.typing import DTypeLike, NDArray

T = TypeVar("T")
E = TypeVar("E", bound=Enum)

#: The most digits a whole number given to attnviz may have: far beyond every size it takes
#: (a seed may be 2⁶⁴, 20 digits), and short enough to quote in a message.
MAX_DIGITS = 40

#: The most items a list argument (steps, d_ks, sentence lengths, layers) is read to: every
#: such list attnviz can use is far shorter, and an endless iterator is refused, not consumed.
MAX_ITEMS = 4096


def digits(text: str) -> bool:
    """Whether ``text`` is a whole number in the digits 0–9: "12", not "", "²" or "١٢", which
    str.isdigit() accepts (and int() reads "١٢" as 12)."""
    return text.isascii() and text.isdigit()


def whole(**values: object) -> None:
    """AttnvizError for an option that must be a whole number (or None) and is not, or has more
    than MAX_DIGITS digits."""
    for name, value in values.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise AttnvizError(f"{name}={shown_value(value)}: give a whole number.")
    few_digits(**values)


def head(value: object) -> None:
    """AttnvizError unless ``head`` is None, a whole number or "all"."""
    # Compared only once it is text: an array's != is elementwise (and as large as the array).
    if isinstance(value, str):
        if value != "all":
            raise AttnvizError(
                f'head={shown_value(value)}: give a head\'s number, from 1, or "all".'
            )
        return
    whole(head=value)


def few_digits(**values: object) -> None:
    """AttnvizError for a whole number of more than MAX_DIGITS digits; other values pass, for
    the caller's own checks to refuse in their words."""
    for name, value in values.items():
        if isinstance(value, int) and abs(value) >= 10**MAX_DIGITS:
            raise AttnvizError(
                f"{name}={shown_value(value)} is far too large; give a whole number of at most "
                f"{MAX_DIGITS} digits."
            )


def given(**values: object) -> None:
    """``whole`` for options that cannot be None (``width``, ``decimals``)."""
    for name, value in values.items():
        if value is None:
            raise AttnvizError(f"{name}=None: give a whole number.")
    whole(**values)


def flags(**values: object) -> None:
    """AttnvizError for an option that must be True or False and is not ("no" would count as
    true)."""
    for name, value in values.items():
        if not isinstance(value, bool):
            raise AttnvizError(f"{name}={shown_value(value)}: give True or False.")


def text(*, required: bool = False, **values: object) -> None:
    """AttnvizError for an option that must be a string (or None, unless ``required``) and is
    not."""
    for name, value in values.items():
        if (value is not None or required) and not isinstance(value, str):
            raise AttnvizError(f'{name}={shown_value(value)}: give a string, e.g. {name}="it".')


def sentences(*, model: object = None, **values: object) -> None:
    """AttnvizError for a sentence that is not text: bytes (decode them first), a number, None,
    or, for a model's tokenizer, a lone surrogate (no character: text decoded wrongly). The
    command line's undecodable bytes (U+DC80–U+DCFF, PEP 383) are the tokenizer's to refuse."""
    for name, value in values.items():
        if isinstance(value, (bytes, bytearray)):
            raise AttnvizError(
                f"{name} is bytes ({shown_value(value)}); give text: decode it first, e.g. "
                f'{name}=data.decode("utf-8").'
            )
        if not isinstance(value, str):
            raise AttnvizError(
                f'{name}={shown_value(value)}: give the sentence as a string, e.g. "I am good".'
            )
        if model is not None:
            lone = next((c for c in value if _lone_surrogate(c)), None)
            if lone is not None:
                raise AttnvizError(
                    f"{name} holds a lone surrogate, U+{ord(lone):04X}, which is no character "
                    "(text decoded wrongly?); the model's tokenizer reads text: remove it, or "
                    'decode the bytes as UTF-8 with errors="replace".'
                )


def _lone_surrogate(character: str) -> bool:
    """U+D800–U+DFFF but for the command line's undecodable bytes, U+DC80–U+DCFF."""
    return "\ud800" <= character <= "\udfff" and not "\udc80" <= character <= "\udcff"


#: Path arguments that name a folder to write in; ``model`` names a model; the others a file.
FOLDER_ARGUMENTS = frozenset({"slides", "per_head", "save", "folder"})
#: Path arguments that name something to read; the others name what is written.
READ_ARGUMENTS = frozenset({"embeddings", "weights", "model", "answers"})


def empty_path(name: str, *, reading: bool | None = None) -> AttnvizError:
    """The one refusal of a path argument given as empty text (``--save ""``, ``embeddings=""``:
    an unset shell variable, most often), on the command line and in Python alike: an empty
    path would quietly mean the working folder. FileProblem (exit 4) for what is read,
    OutputProblem (exit 5) for what is written (``reading``; by default, as READ_ARGUMENTS
    says)."""
    if name == "model":
        noun, fix = "model", "a model's name or folder (. for the working folder)"
    elif name in FOLDER_ARGUMENTS:
        noun, fix = "folder", "a folder's name (. for the working folder)"
    else:
        noun, fix = "file", "a file's name"
    given = spelled(f"{option(name)} ''", f'{name}=""')
    read = name in READ_ARGUMENTS if reading is None else reading
    problem = FileProblem if read else OutputProblem
    return problem(f"{given} is empty: it names no {noun}; give {fix}.")


def paths(*, reading: bool | None = None, **values: object) -> None:
    """AttnvizError for a file argument that is not a path (or None): a str or a pathlib.Path
    (an os.PathLike giving text), not empty (``empty_path``), without a NUL character, which
    no file name holds."""
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, str) and not value:
            raise empty_path(name, reading=reading)
        path = os.fspath(value) if isinstance(value, os.PathLike) else value
        if not isinstance(path, str):
            hint = " (decode it with os.fsdecode)" if isinstance(path, (bytes, bytearray)) else ""
            raise AttnvizError(
                f"{name}={shown_value(value)}: give a file path, as a string or a "
                f"pathlib.Path{hint}."
            )
        if "\x00" in path:
            raise AttnvizError(
                f"{name}={shown_value(value)} holds a NUL character (\\x00), which no file name "
                "can hold; check the path."
            )


def path(name: str, value: object, *, reading: bool = True) -> Path:
    """``value``, checked by ``paths``, as a Path, of a file to read (``reading``) or to
    write; None is refused."""
    if value is None:
        raise AttnvizError(f"{name}=None: give a file path, as a string or a pathlib.Path.")
    paths(reading=reading, **{name: value})
    return value if isinstance(value, Path) else Path(os.fspath(cast(str, value)))


def folder_ending(text: str) -> str | None:
    """Why ``text``, given for an output file, names a folder instead ("'x.png/' names a folder
    (it ends in '/'); give a file path such as 'x.png'"), or None. A path that ends in a
    separator, or in a separator and ".", names a folder, yet pathlib drops that ending
    (Path("x.png/") is x.png), which would write the file x.png. "/" and "." alone are left to
    the checks that refuse a folder by what is there."""
    separators = tuple(sep for sep in (os.sep, os.altsep, "/") if sep)
    file = text
    while file.endswith(separators) or file.endswith(tuple(f"{sep}." for sep in separators)):
        file = file[: -2 if file.endswith(".") else -1]
    if file == text or not file.strip("/."):
        return None
    ending = text[len(file) :]
    return (
        f"{shown_value(text)} names a folder (it ends in {ending!r}); give a file path such as "
        f"{shown_value(file)}"
    )


def output_file(name: str, value: object) -> Path:
    """``value`` as ``path`` takes it, for a file to be written: refused when it names a folder
    by its ending (``folder_ending``)."""
    checked = path(name, value, reading=False)
    problem = folder_ending(os.fspath(cast(str, value)))
    if problem is not None:
        raise AttnvizError(f"{name}={problem}.")
    return checked


def bounded(name: str, values: Iterable[T], example: str) -> list[T]:
    """The items of an iterable argument, read to at most MAX_ITEMS: an endless iterator (or
    range(10**9)) is refused after MAX_ITEMS + 1 items, never consumed whole."""
    not_a_list = AttnvizError(f"{name}={shown_value(values)}: give a list, e.g. {example}.")
    if isinstance(values, (str, bytes, bytearray)) or not isinstance(values, Iterable):
        raise not_a_list
    try:
        items = list(islice(values, MAX_ITEMS + 1))
    except TypeError:  # a 0-d numpy array is Iterable, yet iterating it fails
        raise not_a_list from None
    if len(items) > MAX_ITEMS:
        raise AttnvizError(
            f"{name} has more than {MAX_ITEMS:,} items (an endless iterator?); give at most "
            f"{MAX_ITEMS:,}, e.g. {example}."
        )
    return items


def steps_text(steps: object) -> str | None:
    """``steps`` as the command line's --steps: "4-6" as it is, 4 as "4", [4, 5, 6] as
    "4,5,6"."""
    if steps is None or isinstance(steps, str):
        return steps
    example = 'steps="4-6" or steps=[4, 5, 6]'
    wrong = isinstance(steps, (bytes, bytearray, dict, PurePath))
    numbers = [steps] if not isinstance(steps, Iterable) else [] if wrong else None
    if numbers is None:
        numbers = bounded("steps", steps, example)  # type: ignore[arg-type]
    if wrong or any(isinstance(n, bool) or not isinstance(n, int) for n in numbers):
        raise AttnvizError(f"steps={shown_value(steps)}: give step numbers, e.g. {example}.")
    whole(**{f"steps[{index}]": number for index, number in enumerate(numbers)})
    return ",".join(str(number) for number in numbers)


def sizes_text(d_ks: object) -> str:
    """``d_ks`` as the command line's --dk: "4,16,64" as it is, [4, 16, 64] as "4,16,64"."""
    if isinstance(d_ks, str):
        return d_ks
    if isinstance(d_ks, (bytes, bytearray)) or not isinstance(d_ks, Iterable):
        raise AttnvizError(f"d_ks={shown_value(d_ks)}: give sizes, e.g. d_ks=[4, 16, 64].")
    listed = bounded("d_ks", d_ks, "d_ks=[4, 16, 64]")
    whole(**{f"d_ks[{index}]": size for index, size in enumerate(listed)})
    return ",".join(str(size) for size in listed)


def choice(kind: type[E], value: str | E, name: str) -> E:
    """``value`` as a member of ``kind``; AttnvizError naming the choices otherwise."""
    # Only text is looked up: an Enum compares anything else with each member's value, and an
    # array compares elementwise (a broadcast view of 10¹² elements asked for 931 GiB).
    if not isinstance(value, (str, kind)):
        choices = ", ".join(repr(member.value) for member in kind)
        raise AttnvizError(f"{name}={shown_value(value)} is not a choice; use one of {choices}.")
    try:
        return kind(value)
    except (ValueError, TypeError):  # TypeError: an unhashable value, such as a list
        choices = ", ".join(repr(member.value) for member in kind)
        raise AttnvizError(
            f"{name}={shown_value(value)} is not a choice; use one of {choices}."
        ) from None


def instance(name: str, value: object, kind: type | tuple[type, ...], example: str) -> None:
    """AttnvizError for an argument that is not a ``kind`` (an AttentionConfig, a trace)."""
    if not isinstance(value, kind):
        raise AttnvizError(f"{name}={shown_value(value)}: give {example}.")


def token_list(name: str, value: object) -> list[str]:
    """A list of tokens: a list or tuple of strings (a string would be split into letters)."""
    listed = isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))
    if not listed or not all(isinstance(t, str) for t in cast(Sequence[object], value)):
        raise AttnvizError(
            f'{name}={shown_value(value)}: give the tokens as a list of strings, e.g. ["I", '
            '"am", "good"].'
        )
    return list(cast(Sequence[str], value))


def numbers(name: str, value: object, ndim: int | None = None) -> NDArray[Any]:
    """``value`` as a numpy array of real numbers (of ``ndim`` dimensions), or AttnvizError: for
    None, text, booleans, dates, complex numbers or ragged lists, which numpy would turn into
    numbers silently or fail on deep inside."""
    import numpy as np  # here: arguments is on every command's path, numpy is not always

    _plain(name, value)
    try:
        array = value if isinstance(value, np.ndarray) else np.asarray(value)
    except (TypeError, ValueError, OverflowError):  # a ragged list, an int of 400 digits
        array = np.empty(0, dtype=object)
    if array.dtype.kind not in "iuf":
        what = "None" if value is None else f"{array.dtype} values"
        raise AttnvizError(
            f"{name} holds {what}, not real numbers; give a numpy array of floats, e.g. "
            "np.asarray(values, dtype=float) when the values are numbers."
        )
    if ndim is not None and array.ndim != ndim:
        raise AttnvizError(
            f"{name} has {array.ndim} dimensions {list(array.shape)}; it needs {ndim}."
        )
    return array


# -- the attention steps' arrays ------------------------------------------------------------


def _plain(name: str, value: object) -> None:
    """AttnvizError for np.matrix, whose ``*`` is a matrix product and whose rows stay 2-d, and
    a masked array, whose mask attention would ignore: numpy's own arrays are plain."""
    import numpy as np

    if isinstance(value, np.matrix):
        raise AttnvizError(f"{name} is an np.matrix; give a plain array: np.asarray({name}).")
    if isinstance(value, np.ma.MaskedArray):
        raise AttnvizError(
            f"{name} is a masked array, whose mask attention would ignore; give a plain array, "
            f"e.g. {name}.filled(0.0)."
        )


def arrays(**given: tuple[object, int]) -> None:
    """Each ``name=(value, ndim)``: a numpy array of real numbers with at least ``ndim``
    dimensions (the leading ones may be a batch of sentences, as training runs them): the
    steps of attnviz.attention, checked before numpy's matrix products fail inside."""
    import numpy as np

    for name, (value, ndim) in given.items():
        if not isinstance(value, np.ndarray):
            raise AttnvizError(
                f"{name}={shown_value(value)}: give a numpy array of numbers, e.g. "
                f"np.asarray({name}, dtype=float)."
            )
        _plain(name, value)
        if value.dtype.kind not in "iuf":
            raise AttnvizError(
                f"{name} is an array of {value.dtype}; give real numbers (float or int)."
            )
        if value.ndim < ndim:
            raise AttnvizError(
                f"{name} has {value.ndim} dimensions {list(value.shape)}; it needs at least {ndim}."
            )
        if value.size == 0:  # numpy's reductions (max, sum) have nothing to reduce
            raise AttnvizError(f"{name} is empty, shape {list(value.shape)}; give numbers.")


def same_size(step: str, first: tuple[str, int], second: tuple[str, int]) -> None:
    """Two sizes a product multiplies together, which must be equal."""
    (first_name, first_size), (second_name, second_size) = first, second
    if first_size != second_size:
        raise AttnvizError(
            f"{step}: {first_name} = {first_size} but {second_name} = {second_size}; they "
            "must be equal."
        )


def shared_heads(step: str, query_heads: int, shared: int) -> None:
    """h query heads reading G key/value heads: G must divide h."""
    if shared < 1 or query_heads % shared:
        raise AttnvizError(
            f"{step}: {query_heads} query heads cannot share {shared} key/value heads; the "
            "key/value heads G must divide the query heads h."
        )


def room(step: str, out: object, shape: tuple[int, ...], dtype: DTypeLike) -> None:
    """``out``, where a step writes its result: a writable numpy array of that result's shape and
    type (a narrower type would round it, another shape is not the result's)."""
    import numpy as np

    if not isinstance(out, np.ndarray):
        raise AttnvizError(
            f"{step}: out={shown_value(out)}: give a numpy array to write into, e.g. "
            "concat_buffer(h, n, d_k, np.float64), or omit out."
        )
    if out.shape != shape or out.dtype != np.dtype(dtype) or not out.flags.writeable:
        raise AttnvizError(
            f"{step}: out is {'a read-only' if not out.flags.writeable else 'an'} array of "
            f"{out.dtype} {list(out.shape)}; the result is {np.dtype(dtype)} {list(shape)}: "
            "give a writable array of that shape and type, or omit out."
        )


def head_width(d_k: object) -> int:
    """d_k, the width of a head, as an int: a whole number (numpy's too), 1 or more (÷√0 would
    make every score ±∞) and at most MAX_DIGITS digits."""
    import numbers

    if isinstance(d_k, bool) or not isinstance(d_k, numbers.Integral) or d_k < 1:
        raise AttnvizError(f"d_k={shown_value(d_k)}: give the width of a head, 1 or more.")
    few_digits(d_k=int(d_k))
    return int(d_k)


def broadcast(step: str, *shapes: tuple[str, tuple[int, ...]]) -> tuple[int, ...]:
    """The leading (batch) axes a product broadcasts together; AttnvizError when they do not."""
    import numpy as np

    try:
        return tuple(np.broadcast_shapes(*(shape for _, shape in shapes)))
    except ValueError:
        listed = " and ".join(f"{name} {list(shape)}" for name, shape in shapes)
        raise AttnvizError(
            f"{step}: the leading axes of {listed} do not match; give arrays of one batch."
        ) from None


def bias(step: str, name: str, value: object, shape: tuple[int, ...], columns: str) -> None:
    """A bias added to a step's result: a numpy array of real numbers of exactly ``shape``."""
    arrays(**{name: (value, 1)})
    given = cast("NDArray[Any]", value).shape
    if given != shape:
        raise AttnvizError(
            f"{step}: {name} has shape {list(given)}; it must be {list(shape)}, one number per "
            f"column {columns}."
        )


# -- numbers read from a file -------------------------------------------------------------------

#: What numpy calls each kind of array that holds no numbers attention can use.
_NOT_NUMBERS = {
    "b": "true/false values",
    "M": "dates",
    "m": "time spans",
    "U": "text",
    "S": "bytes",
    "O": "Python objects",
    "V": "raw records",
}

_JSON_NUMBERS = {int, float}


def only_numbers(value: object, name: str, source: object, ndim: int) -> None:
    """FileProblem unless ``value``, read from ``source``, holds only numbers: an array of
    integers or floats (complex numbers are files.finite_matrix's to refuse), or JSON lists of
    them. Text ("1"), true/false, dates and time spans are refused, naming the file and the
    fix: numpy would turn each into numbers silently (True as 1, a date as its days since
    1970). ``name`` starts the message: "The array", "X", "The vector of 'cat'"."""
    import numpy as np

    if isinstance(value, np.ndarray):
        kind = _NOT_NUMBERS.get(value.dtype.kind)
        if kind is not None:
            raise FileProblem(
                f"{name} in {source} holds {kind} ({value.dtype}), not numbers; save it as "
                "floats, e.g. array.astype(np.float32), before np.save or np.savez."
            )
        return
    pending = [value]
    while pending:  # JSON: lists of lists of numbers, checked without recursion
        item = pending.pop()
        kinds = set(map(type, item)) if type(item) is list else {type(item)}
        if kinds <= _JSON_NUMBERS:  # a whole vector at once, at C speed: a vocabulary has many
            continue
        for element in item if type(item) is list else [item]:
            if type(element) is list:
                pending.append(element)
            elif type(element) not in _JSON_NUMBERS:  # bool is not int here
                raise FileProblem(
                    f"{name} in {source} is not a {ndim}-d array of numbers: it holds "
                    f"{_json_shown(element)}; write every value as a JSON number, e.g. 1 or "
                    "0.5, without quotes (true and false are not numbers)."
                )


def _json_shown(value: object) -> str:
    """A JSON value as the file has it, clipped: "1", true, null, {…}."""
    import json

    if isinstance(value, dict):
        return "{…}"
    return clipped(json.dumps(value, ensure_ascii=False))
