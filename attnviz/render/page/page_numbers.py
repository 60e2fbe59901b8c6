"""The page's tables of numbers, carried compactly: each number as the integer its printed text
is without the point (0.25 at 2 decimals is 25), in the smallest integer type that holds them
all, deflated and in base64; the page's script puts the point back (page.js, ``printed``).

A model's page holds layers × heads × n² weights, contributions and shares: at 512 word pieces
and 72 heads, 19 million of each. As JSON strings ("0.25",) they took about 8 bytes each; as
deflated integers, where most weights of a long row print as 0.00, well under one.

The integers are exactly the printed text's: ``printed_integers`` rounds as format_number does
(Python's fixed-point formatting, ties to even on the number's exact binary value), so the
page shows the text the terminal prints, digit for digit. What has no fixed-point text (−∞, a
million or more, nan) travels as that text, by its index.
"""

from __future__ import annotations

import base64
import zlib
from typing import Any

import numpy as np

from attnviz.labels import format_number

#: zlib's level: at 512 word pieces, 6 makes the page a tenth smaller than 4 and takes three
#: times as long.
COMPRESSION = 4

#: The integer types the script reads (page.js, ARRAYS), smallest first.
INTEGER_TYPES = (
    ("Uint8Array", np.uint8),
    ("Int8Array", np.int8),
    ("Uint16Array", np.uint16),
    ("Int16Array", np.int16),
    ("Int32Array", np.int32),
    ("Float64Array", np.float64),  # whole numbers up to 2⁵³, exactly
)


def printed_integers(values: np.ndarray, decimals: int) -> tuple[np.ndarray, dict[int, str]]:
    """``values`` as the integers their printed text is without the point, and the text of
    those that print otherwise (−∞, ∞, nan, a million or more), by flat index; those integers
    are 0.

    format_number prints the exact binary value rounded half to even. ``value · 10^decimals``
    is exact for float32 numbers (24 + 27 bits fit in float64's 53); for float64 it may be a
    unit in the last place off, which matters only next to a tie: the few numbers that near a
    tie are formatted one by one.
    """
    exact = np.asarray(values).dtype == np.float32
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    with np.errstate(invalid="ignore"):
        unprintable = ~(np.abs(flat) < 1e6)  # nan compares false: unprintable too
    scaled = np.where(unprintable, 0.0, flat) if unprintable.any() else flat.copy()
    scaled *= 10.0**decimals
    integers = np.rint(scaled)
    # A tie (exact for float32), or within 10⁻⁷ and a few units in the last place of one:
    # formatted one by one.
    distance = np.abs(scaled - integers)
    largest = float(np.max(np.abs(scaled), initial=0.0))
    near_tie = distance == 0.5 if exact else distance > 0.5 - 1e-7 - 1e-15 * largest
    for index in np.flatnonzero(near_tie):
        text = format_number(float(flat[index]), decimals)
        integers[index] = int(text.replace(".", ""))
    texts = {int(i): format_number(float(flat[i]), decimals) for i in np.flatnonzero(unprintable)}
    return integers.reshape(np.shape(values)), texts


def packed(values: np.ndarray, decimals: int) -> dict[str, Any]:
    """``values`` as the page carries them: their printed integers (printed_integers), the
    decimals to put the point back at, the shape, and the texts of the unprintable ones."""
    integers, texts = printed_integers(values, decimals)
    low, high = (float(integers.min()), float(integers.max())) if integers.size else (0.0, 0.0)
    name, dtype = next(
        (name, dtype) for name, dtype in INTEGER_TYPES if _holds(np.dtype(dtype), low, high)
    )
    raw = np.ascontiguousarray(integers, dtype=np.dtype(dtype).newbyteorder("<")).tobytes()
    return {
        "type": name,
        "shape": list(np.shape(values)),
        "decimals": decimals,
        "data": base64.b64encode(zlib.compress(raw, COMPRESSION)).decode("ascii"),
        "texts": {str(index): text for index, text in texts.items()},
    }


def _holds(dtype: np.dtype[Any], low: float, high: float) -> bool:
    """Whether every integer from ``low`` to ``high`` is one of ``dtype``'s (float64: up to 2⁵³,
    beyond the largest a printed number of under a million at 8 decimals needs)."""
    if dtype.kind == "f":
        return True
    limits = np.iinfo(dtype)
    return bool(limits.min <= low and high <= limits.max)


def unpacked(carried: dict[str, Any]) -> list[str]:
    """The printed texts of what ``packed`` carries, flat, as the page's script reads them
    (page.js, ``printed``): for the tests, which compare them with the terminal's."""
    dtype = dict(INTEGER_TYPES)[carried["type"]]
    raw = zlib.decompress(base64.b64decode(carried["data"]))
    integers = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"))
    decimals = carried["decimals"]
    texts = []
    for index, integer in enumerate(integers.tolist()):
        special = carried["texts"].get(str(index))
        texts.append(special if special is not None else _with_point(int(integer), decimals))
    return texts


def _with_point(integer: int, decimals: int) -> str:
    digits = str(abs(integer)).rjust(decimals + 1, "0")
    if decimals:
        digits = f"{digits[:-decimals]}.{digits[-decimals:]}"
    return ("-" if integer < 0 else "") + digits
