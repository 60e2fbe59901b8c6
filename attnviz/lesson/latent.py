"""Multi-head latent attention, in each head (only when the trace has a latent): the latent c,
this head's K and V made from it, what a decoder's cache holds with this sentence's sizes, and
the absorption that spares expanding K, one score worked with the numbers."""

from __future__ import annotations

import numpy as np

from attnviz import worked
from attnviz.latent import DEEPSEEK_V2, key_value_cache_numbers, latent_cache_numbers
from attnviz.lesson.blocks import Matrix
from attnviz.lesson.examples import MOST_TERMS, ExampleText
from attnviz.lesson.writer import HeadView, LessonWriter

#: Who uses it: DeepSeek-V2 (arXiv 2405.04434, §2.1), DeepSeek-V3 (arXiv 2412.19437) and R1,
#: trained from V3's base; Kimi K2 keeps DeepSeek-V3's architecture (its config names it).
MODELS = "DeepSeek-V2, DeepSeek-V3 and DeepSeek-R1, and Kimi K2, which keeps V3's architecture"


def title(lesson: LessonWriter, head: HeadView | None) -> str:
    assert head is not None
    return f"Latent attention: K and V of head {head.index + 1} made from one shared latent"


def write(lesson: LessonWriter, head: HeadView | None) -> None:
    assert head is not None
    trace, h = lesson.trace, head.h
    example = head.examples.absorption
    assert trace.c is not None and trace.W_UK is not None and trace.W_UV is not None
    assert example is not None and trace.d_c is not None
    d_c, d_k = lesson.dims(trace.d_c), lesson.dims(trace.d_k)
    first_head = lesson.first_head(head)
    if first_head:
        lesson.say(_what(lesson))
        lesson.show(Matrix(lesson.selection.key_rows(trace.c), "c = X·W_DKV", lesson.keys, d_c))
        lesson.blank()
        if trace.K_R is not None:
            lesson.say(_decoupled(lesson))
            lesson.show(
                Matrix(
                    lesson.selection.key_rows(trace.K_R),
                    "k_R = RoPE(X·W_KR)",
                    lesson.keys,
                    lesson.dims(trace.d_rope),
                )
            )
            lesson.blank()
        lesson.say(
            cache_sentence(trace.n_tokens, trace.n_heads, trace.d_k, trace.d_c, trace.d_rope)
        )
        lesson.say(_bytes(lesson))
        lesson.say(_absorption_intro(trace.d_rope))
    for line in absorption_lines(lesson.text, example, h):
        lesson.worked_line("absorption", line)
    lesson.rounding_note()
    if first_head and example.q_rope is not None:
        lesson.say(not_absorbed(lesson.text, example))
    if first_head:
        lesson.say(_differences(example, trace.c.dtype.name, lesson.step_label("output")))
    if lesson.options.show_weights:
        up = (("W_UK", trace.W_UK), ("W_UV", trace.W_UV))
        lesson.side_by_side([Matrix(w[head.index], f"{name}{h}", d_c, d_k) for name, w in up])
        lesson.blank()
    rows = lesson.selection.key_rows
    keys = Matrix(rows(trace.K[head.index]), f"K{h} = c·W_UK{h}", lesson.keys, d_k)
    values = Matrix(rows(trace.V[head.index]), f"V{h} = c·W_UV{h}", lesson.keys, d_k)
    lesson.side_by_side([keys, values])
    if trace.Q_R is not None:
        lesson.blank()
        turned = lesson.selection.rows(trace.Q_R[head.index])
        name = f"Q_R{h} = RoPE(X·W_QR{h})"
        lesson.show(Matrix(turned, name, lesson.tokens, lesson.dims(trace.d_rope)))


def _what(lesson: LessonWriter) -> str:
    trace = lesson.trace
    assert trace.d_c is not None
    return (
        f"Multi-head latent attention (used by {MODELS}): every head's keys and values come "
        f"from one latent per token, c = X·W_DKV [n, d_c] = [{lesson.n}, {trace.d_c}], "
        f"K_i = c·W_UK_i and V_i = c·W_UV_i with W_UK_i, W_UV_i [d_c, d_k] = "
        f"[{trace.d_c}, {trace.d_k}]; queries are X·W_Q_i as before. The W_K_i and W_V_i of "
        f"step {lesson.step_label('qkv')} are the products W_DKV·W_UK_i and W_DKV·W_UV_i "
        f"[{trace.d_model}, {trace.d_k}], so X·W_K_i is the same K."
    )


def cache_sentence(n: int, n_heads: int, d_k: int, d_c: int, d_rope: int = 0) -> str:
    """What one layer's cache holds for ``n`` tokens, the latent (and the decoupled RoPE key,
    ``d_rope`` wide) against every head's K and V and against grouped-query attention's, each
    figure computed."""
    latent = latent_cache_numbers(n, d_c, d_rope)
    full = key_value_cache_numbers(n, n_heads, d_k)
    single = key_value_cache_numbers(n, 1, d_k)
    groups = (d_c + d_rope) / (2 * d_k)
    if latent < single:
        against_mqa = f"less than even multi-query attention's 2·n·d_k = {single:,} (G = 1)"
    elif latent == single:
        against_mqa = f"as much as multi-query attention's 2·n·d_k = {single:,} (G = 1)"
    else:
        against_mqa = f"more than multi-query attention's 2·n·d_k = {single:,} (G = 1)"
    v2 = DEEPSEEK_V2
    v2_latent = latent_cache_numbers(1, v2["d_c"], v2["d_rope"])
    v2_full = key_value_cache_numbers(1, v2["n_heads"], v2["d_k"])
    if d_rope:
        held, holder = "c and the shared rotated key k_R", "cache"
        rope = f"(d_rope = {d_rope}: k_R, one row per token for every head)"
        width = "(d_c + d_rope)/(2·d_k)"
    else:
        held, holder = "c", "latent"
        rope = (
            "(d_rope = 0: this layer has no rotary positions; DeepSeek caches a small rotated "
            "key beside c, shared by the heads, as RoPE's turn would sit between q and W_UK and "
            "spoil the absorption below)"
        )
        width = "d_c/(2·d_k)"
    return (
        f"A decoder keeps {held} in its cache instead of K and V: n·(d_c + d_rope) = "
        f"{n}·({d_c} + {d_rope}) = {latent:,} numbers for this layer {rope}, against "
        f"2·n·h·d_k = 2·{n}·{n_heads}·{d_k} = {full:,} for every head's K and V: "
        f"{_times(full, latent)}. Grouped-query attention with G key/value heads keeps "
        f"2·n·G·d_k, so the {holder} holds as much as G = {width} = {groups:.3g} groups "
        f"would: {against_mqa}. DeepSeek-V2 (h = {v2['n_heads']} heads of d_k = {v2['d_k']}, "
        f"d_c = {v2['d_c']}, d_rope = {v2['d_rope']}) caches {v2_latent:,} numbers per token "
        f"and layer against {v2_full:,}: {_times(v2_full, v2_latent)}."
    )


def _decoupled(lesson: LessonWriter) -> str:
    """DeepSeek's decoupled rotary positions with this trace's sizes and scale."""
    trace = lesson.trace
    d_k, d_rope = trace.d_k, trace.d_rope
    return (
        "Positions, DeepSeek's way (decoupled RoPE): each head's query gets a second, turned "
        f"part q_R,i = RoPE(X·W_QR_i) [n, d_rope] = [{lesson.n}, {d_rope}], and every head "
        f"shares one turned key k_R = RoPE(X·W_KR) [n, d_rope], pair p of word m turned by "
        f"m·θ_p, θ_p = 10000^(−2p/d_rope). A score adds the two parts, q_C·k_Cᵀ + q_R·k_Rᵀ "
        f"(q_C, k_C the q and k above), the dot product of [q | q_R] and [k | k_R], "
        f"d_k + d_rope = {d_k} + {d_rope} = {d_k + d_rope} products, so it is divided by "
        f"√(d_k + d_rope) = √{d_k + d_rope}, as DeepSeek-V2 does. d_rope = {d_rope}: d_k/2, "
        "as DeepSeek-V2's 64 of 128, rounded up to an even number (RoPE turns pairs)."
    )


def _absorption_intro(d_rope: int) -> str:
    """What absorption does, and with decoupled rotary positions to which part."""
    intro = (
        "Absorption: a score q·kᵀ = q·(c_j·W_UK)ᵀ = (q·W_UKᵀ)·c_jᵀ. At inference q is "
        "carried once into the latent's coordinates, q̃ = q·W_UKᵀ, and scored against the "
        "cached c directly: K is never expanded."
    )
    if not d_rope:
        return intro + " The same score both ways:"
    return (
        intro.replace("a score q·kᵀ", "the content part q·kᵀ")
        + " The turned part q_R·k_Rᵀ is added as it is, from the cached k_R. The same score "
        "both ways:"
    )


def _times(full: int, latent: int) -> str:
    """ "2.67 times fewer", from the two counts; or that the latent saves nothing."""
    if latent >= full:
        return "no saving: the latent is as wide as every head's K and V together, or wider"
    return f"{full / latent:.3g} times fewer"


def _bytes(lesson: LessonWriter) -> str:
    trace = lesson.trace
    assert trace.c is not None and trace.d_c is not None
    size = trace.c.dtype.itemsize
    latent = latent_cache_numbers(trace.n_tokens, trace.d_c, trace.d_rope) * size
    full = key_value_cache_numbers(trace.n_tokens, trace.n_heads, trace.d_k) * size
    return f"In {trace.c.dtype.name} ({size} bytes a number): {latent:,} bytes against {full:,}."


def absorption_lines(text: ExampleText, example: worked.AbsorptionExample, h: str) -> list[str]:
    """q̃ = q·W_UKᵀ for the example's query, then q̃·c_j term by term (and + q_R·k_R, the
    decoupled rotary part's terms after them), beside q·k: the terms printed at the fewest
    decimals at which their sum gives the printed score."""
    query, key = text.queries[example.query], text.keys[example.key]
    left, right, name = example.q_absorbed, example.c, f"q̃_{query} · c_{key}"
    expanded = f"q_{query} · k_{key}"
    if example.q_rope is not None and example.k_rope is not None:
        left = np.concatenate([left, example.q_rope])
        right = np.concatenate([right, example.k_rope])
        name += f" + q_R,{query} · k_R,{key}"
        expanded += f" + q_R,{query} · k_R,{key}"
    decimals = text.products_decimals(left, right, example.result)
    shown = [text.exact(v, decimals) for v in example.q_absorbed[:MOST_TERMS]]
    more = ", …" if len(example.q_absorbed) > MOST_TERMS else ""
    return [
        f"q̃_{query} = q_{query}·W_UK{h}ᵀ = [{', '.join(shown)}{more}]",
        f"{name} = {text.products(left, right, example.result)}"
        f"   ({expanded} = {text.exact(example.expanded)})",
    ]


def not_absorbed(text: ExampleText, example: worked.AbsorptionExample) -> str:
    """Why the turned part cannot be absorbed, with the example's own turned and unturned
    products: k_R,j = x_j·W_KR·R_j, R_j the turn of position j, so no one matrix W_KR·R_j serves
    every key."""
    assert example.q_rope is not None and example.k_rope is not None
    query, key = text.queries[example.query], text.keys[example.key]
    turned = float(example.q_rope @ example.k_rope)
    distance = example.key - example.query
    if example.key == example.query:
        compared = (
            f"here q_R,{query} · k_R,{key} = {text.exact(turned)}, equal to the product had "
            f"neither been turned, {text.exact(example.unturned)}, only because both stand at "
            f"position {example.query}, 0 apart: the turn depends on m − n"
        )
    else:
        compared = (
            f"here q_R,{query} · k_R,{key} = {text.exact(turned)} at positions "
            f"{example.query} and {example.key} ({abs(distance)} apart), against "
            f"{text.exact(example.unturned)} had neither been turned"
        )
    return (
        "The turned part cannot be absorbed: k_R,j = x_j·W_KR·R_j, R_j the turn of key j's "
        "position, so the matrix that would be carried into the query, W_KR·R_j, is another "
        f"for every key; {compared}. That is why k_R is computed and cached as it stands, "
        "d_rope numbers a token shared by the heads, while the content part goes through c."
    )


def at_most(value: float) -> str:
    """``value`` > 0 in two significant digits, rounded up: 4.44e-16 is "4.5e-16", so that
    "within" it is true."""
    shown = f"{value:.1e}"
    if float(shown) < value:
        mantissa, exponent = shown.split("e")
        shown = f"{float(mantissa) + 0.1:.1f}e{exponent}"
    return f"{float(shown):.2g}"


def _differences(example: worked.AbsorptionExample, dtype: str, output_step: str) -> str:
    scores, output = example.score_difference, example.output_difference

    def within(difference: float) -> str:
        return "exactly equal" if difference == 0 else f"equal within {at_most(difference)}"

    absorbed, expanded = "(q·W_UKᵀ)·cᵀ", "q·kᵀ"
    if example.q_rope is not None:
        absorbed, expanded = f"{absorbed} + q_R·k_Rᵀ", f"{expanded} + q_R·k_Rᵀ"
    return (
        f"Over every head and pair, {absorbed} and {expanded} are "
        f"{within(scores)}: one sum of the same products, grouped and added in another order, "
        f"each rounded in {dtype}. The values absorb likewise: Z_i·W_O^(i) = "
        "weights_i·c·(W_UV_i·W_O^(i)), W_O^(i) head i's rows of W_O; the layer's output "
        f"computed that way, without expanding V, and step {output_step}'s are "
        f"{within(output)}."
    )
