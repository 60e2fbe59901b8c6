"""Option values that are arrays: a choice or a head number given a huge broadcast view or an
np.matrix is refused by its type, before anything compares it elementwise (an Enum lookup or
``!= "all"`` on a view of 10¹² elements asked numpy for 931 GiB; a matrix's truth value is
ambiguous)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest

import attnviz
from attnviz.errors import AttnvizError

with warnings.catch_warnings():
    warnings.simplefilter("ignore", PendingDeprecationWarning)
    MATRIX = np.matrix([[1, 2]])
HUGE = np.broadcast_to(np.ones(1), (10**6, 10**6))  # 8 bytes standing for 8 TB

CALLS: dict[str, Callable[[dict[str, object]], object]] = {
    "explain": lambda given: attnviz.explain("a b c", **given),  # type: ignore[arg-type]
    "cross": lambda given: attnviz.cross("a b c", "d e", **given),  # type: ignore[arg-type]
    "compare": lambda given: attnviz.compare("a it c", "a it d", **given),  # type: ignore[arg-type]
}
OPTIONS = {
    "explain": ["head", "preset", "oov", "dtype", "positions", "layer", "focus", "seed", "heads"],
    "cross": ["head", "preset", "positions", "focus", "seed", "heads"],
    "compare": ["head", "preset", "oov", "dtype", "focus", "seed"],
}


@pytest.mark.parametrize("value", [HUGE, MATRIX], ids=["broadcast view", "np.matrix"])
@pytest.mark.parametrize(
    ("function", "name"), [(f, name) for f, names in OPTIONS.items() for name in names]
)
def test_an_array_given_as_an_option_is_one_attnviz_error(
    function: str, name: str, value: object
) -> None:
    with pytest.raises(AttnvizError) as refused:
        CALLS[function]({name: value})
    message = str(refused.value)
    assert name in message and len(message) < 300 and "\n" not in message


@pytest.mark.parametrize("value", [HUGE, MATRIX], ids=["broadcast view", "np.matrix"])
@pytest.mark.parametrize("name", ["style", "scale", "measure", "head"])
def test_a_pictures_choice_given_an_array_is_one_attnviz_error(name: str, value: object) -> None:
    shown = attnviz.explain("a b c")
    with pytest.raises(AttnvizError, match=name):
        attnviz.heatmap(shown, **{name: value})  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [HUGE, MATRIX], ids=["broadcast view", "np.matrix"])
def test_heads_rank_by_given_an_array_is_one_attnviz_error(value: object) -> None:
    with pytest.raises(AttnvizError, match="rank_by"):
        attnviz.heads(attnviz.explain("the animal was tired because it slept"), rank_by=value)  # type: ignore[arg-type]
