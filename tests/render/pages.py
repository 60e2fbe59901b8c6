"""The page's data read as its script reads it (page.js): the worked lines it puts together
and the tables of numbers it prints, for the tests that compare them with the terminal's."""

from __future__ import annotations

from typing import Any

from attnviz.render.page.page_numbers import unpacked


def assembled(data: Any, layer: int, head: int, row: int, key: int) -> tuple[str, str, str]:
    """The raw score, its scaling and its softmax weight as the page's script puts them
    together from the data (page.js, headSteps), with the softmax written on one line as the
    terminal writes it."""
    head_data = data["layers"][layer]["heads"][head]
    words = head_data["queries"][row]
    dot_at, score, scale, score_at, scaled, soft, shifted, exp, weight = words["keys"][str(key)]
    terms = head_data["dotTerms"][str(dot_at)]
    q, k = terms["q"][row], terms["k"][key]
    products = ["…" if a == "…" else f"{a}×{b}" for a, b in zip(q, k, strict=True)]
    name = data["queryNames"][data["rows"][row]["position"]]
    counted = f" ({data['sizes']['dScore']} terms)" if "…" in products else ""
    dot = f"q_{name} · k_{data['keyNames'][key]}{counted} = {' + '.join(products)} = {score}"
    root = head_data["roots"][str(scale)]
    scaling = f"{score_at} / {root} = {scaled}"
    parts = words["softmaxAt"][str(soft)]
    exps = ["…" if term is None else f"exp({term})" for term in parts["shifted"]]
    softmax = f"exp({shifted}) / ({' + '.join(exps)}) = {exp} / {parts['total']} = {weight}"
    return dot, scaling, softmax


def shown_table(data: Any, layer: int, name: str, head: int) -> list[list[str]]:
    """A head's table of numbers (weights, lines, norms, shares) as the page's script prints
    it from the packed integers (page.js, printed): [rows, columns] of texts."""
    numbers = data["layers"][layer]["numbers"]
    packed = numbers[name] if numbers[name] is not None else numbers["weights"]
    texts = unpacked(packed)
    n_rows, n_columns = len(data["rows"]), len(data["columns"])
    start = head * n_rows * n_columns
    return [texts[start + r * n_columns : start + (r + 1) * n_columns] for r in range(n_rows)]
