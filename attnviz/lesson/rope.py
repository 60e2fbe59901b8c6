"""Rotary positions, in each head (only when the trace has them): q and k turned pair by pair by
their position's angle, one pair worked out, the relative-position property with this head's own
q and k, V left alone, the pairing, and how it differs from the sinusoidal encoding."""

from __future__ import annotations

from attnviz import worked
from attnviz.errors import option
from attnviz.labels import subscript
from attnviz.lesson.blocks import Matrix
from attnviz.lesson.examples import ExampleText, fewest_decimals, sum_of_products_holds
from attnviz.lesson.writer import HeadView, LessonWriter
from attnviz.positions import rope_frequencies, rope_pairs


def title(lesson: LessonWriter, head: HeadView | None) -> str:
    assert head is not None
    return f"Rotary positions: q and k of head {head.index + 1} turned by their position"


def write(lesson: LessonWriter, head: HeadView | None) -> None:
    assert head is not None
    trace, h = lesson.trace, head.h
    rope, turned, relative = trace.rope, head.examples.rotation, head.examples.relative_position
    assert rope is not None and turned is not None and relative is not None
    rows = lesson.selection.rows
    d_k = lesson.dims(trace.d_k)
    g = subscript(trace.kv_head(head.index) + 1) if trace.is_grouped else h
    assert trace.Q_rotated is not None and trace.K_rotated is not None
    queries = Matrix(rows(trace.Q_rotated[head.index]), f"Q{h} turned", lesson.tokens, d_k)
    key_rows = lesson.selection.key_rows(trace.K_rotated[trace.kv_head(head.index)])
    tables = [queries, Matrix(key_rows, f"K{g} turned", lesson.keys, d_k)]
    first_head = lesson.first_head(head)
    if first_head:
        lesson.say(_what_turns(lesson))
    lesson.say(f"For example, {_rotation_heading(lesson.text, turned, rope.base, trace.d_k)}:")
    for line in rotation_lines(lesson.text, turned):
        lesson.worked_line("rotation", line)
    lesson.rounding_note()
    if first_head:
        lesson.say(
            "Why this encodes relative position: after turning, q_m · k_n depends on the "
            "positions m and n only through m − n (each pair's angles subtract). The same two "
            "vectors at other positions the same distance apart score the same:"
        )
    lesson.worked_line("relative_position", relative_line(lesson.text, relative))
    if first_head:
        lesson.say(_pairing(trace.d_k, rope.pairing))
        lesson.say(
            "V is not turned: values carry what a word says, not where it is, so Z = weights·V "
            "as before. Unlike the sinusoidal encoding "
            f"({option('positions', 'sinusoidal')}), added to X once before the first layer and "
            "reaching q and k only through W_Q and W_K, rotary positions leave X alone and turn "
            "q and k inside every head of every layer."
        )
    lesson.side_by_side(tables)


def _what_turns(lesson: LessonWriter) -> str:
    trace = lesson.trace
    assert trace.rope is not None
    thetas = rope_frequencies(trace.d_k, trace.rope.base)
    base = f"{trace.rope.base:g}"
    shown = ", ".join(f"θ{subscript(i)} = {theta:.4g}" for i, theta in enumerate(thetas[:4]))
    more = ", …" if len(thetas) > 4 else ""
    return (
        "Rotary positions (RoPE, as in Llama): before the scores, each pair of coordinates of "
        "q and of k is turned like a point in a plane by an angle that grows with the word's "
        f"position m (from 0): pair i by m·θ_i, θ_i = {base}^(−2i/d_k) radians per position, "
        f"i = 0 … {len(thetas) - 1}; here {shown}{more}. Fast pairs tell near words apart, slow "
        "ones far words. Turning keeps every length; it changes only which way a pair points."
    )


def _rotation_heading(
    text: ExampleText, example: worked.RotationExample, base: float, d_k: int
) -> str:
    a, b = (c + 1 for c in example.coordinates)
    word = f"q_{text.queries[example.token]}"
    return (
        f"{word} at position m = {example.token}, pair {example.pair} (coordinates {a} and {b}): "
        f"θ{subscript(example.pair)} = {base:g}^(−{2 * example.pair}/{d_k}) = "
        f"{example.theta:.4g}, angle m·θ = {example.angle:.4g} rad"
    )


def rotation_lines(text: ExampleText, example: worked.RotationExample) -> list[str]:
    """The turned pair, each coordinate a sum of two products, worked from printed cos and sin
    at the fewest decimals at which both sums hold by hand."""
    import math

    cos, sin = math.cos(example.angle), math.sin(example.angle)
    left = (example.a, example.b)
    new_a, new_b = example.result
    first = sum_of_products_holds(left, (cos, -sin), (), text.exact(new_a))
    second = sum_of_products_holds(left, (sin, cos), (), text.exact(new_b))
    decimals = fewest_decimals(lambda d: first(d) and second(d), text.least)
    a, b = (c + 1 for c in example.coordinates)
    word = f"q_{text.queries[example.token]}"
    angle = f"{example.angle:.4g}"
    term = text.term

    def line(name: str, formula: str, right: tuple[float, float], result: float) -> str:
        products = " + ".join(
            f"{term(x, decimals)}×{term(y, decimals)}" for x, y in zip(left, right, strict=True)
        )
        return f"{name} = {formula} = {products} = {text.exact(result)}"

    return [
        f"cos {angle} = {text.exact(cos, decimals)}, sin {angle} = {text.exact(sin, decimals)}",
        line(f"{word}'[{a}]", f"{word}[{a}]·cos − {word}[{b}]·sin", (cos, -sin), new_a),
        line(f"{word}'[{b}]", f"{word}[{a}]·sin + {word}[{b}]·cos", (sin, cos), new_b),
    ]


def relative_line(text: ExampleText, example: worked.RelativeExample) -> str:
    """The same q and k at two pairs of positions, the same distance apart: the same score."""
    q, k = f"q_{text.queries[example.query]}", f"k_{text.keys[example.key]}"
    (m1, n1), (m2, n2) = example.positions
    first, second = (text.exact(score) for score in example.scores)
    return (
        f"{q} at {m1} · {k} at {n1} = {first};  at {m2} and {n2} = {second}  (both {n1 - m1} "
        f"apart; at their own positions {example.query} and {example.key}: "
        f"{text.exact(example.own)})"
    )


def _pairing(d_k: int, pairing: str) -> str:
    first, second = rope_pairs(d_k, pairing)
    pairs = [f"{a + 1} with {b + 1}" for a, b in zip(first, second, strict=True)]
    listed = ", ".join(pairs if len(pairs) <= 3 else [*pairs[:2], "…"])
    other = (
        "Llama-family GGUF files (llama.cpp) pair neighbours, 2i with 2i + 1, instead; Qwen2's "
        "GGUF files keep these halves"
        if pairing == "half"
        else "Hugging Face checkpoints, and Qwen2's GGUF files, pair coordinate i with i + d_k/2 "
        "instead"
    )
    return (
        f"Which coordinates turn together: here {_PAIRINGS[pairing]}: {listed}. {other}. "
        "Both give the same scores once the columns of W_Q and W_K (the rows of a checkpoint's "
        "[out, in] matrices) are arranged so that the same numbers land in the pairs that turn "
        "together, which is what llama.cpp's converter does."
    )


_PAIRINGS = {
    "half": "coordinate i with i + d_k/2, as Hugging Face Llama checkpoints do (rotate_half)",
    "adjacent": "neighbours 2i and 2i + 1, as Llama-family GGUF files do",
}
