"""What ``attnviz generate`` says, as lesson blocks every surface draws: the prompt processed
at once (prefill), then each new token worked out (its query against the cache, the K and V rows
it appends, the logits, the softmax at the temperature, the top-k and top-p cuts, the choice),
then the proof that the cache changed nothing. Every figure is read from the run's records."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnviz.files import human_size
from attnviz.generation.cache import CacheSize
from attnviz.generation.run import CacheProof, GeneratedToken, Window
from attnviz.generation.sampling import Choice, Sampling
from attnviz.lesson.blocks import Bars, Blank, Block, Heading, Matrix, Paragraph, Span

#: Keys drawn as bars when a row has more than ALL_BARS: the largest, in their order in the text.
MOST_BARS = 10
ALL_BARS = 16
#: Tokens in the table of logits.
TOP_ROWS = 5


@dataclass(frozen=True)
class Telling:
    """What every block needs to know of the run."""

    model: str  # "smollm2 (GGUF, Q4_1)"
    family: str  # "Llama-family decoder"
    prompt: tuple[str, ...]  # the prompt's tokens as shown
    sampling: Sampling
    seed: int | None
    layer: int  # the layer whose rows are drawn, from 1
    head: int  # the head whose row is drawn as bars, from 1
    n_layers: int
    n_heads: int
    dtype: str  # "float32"
    window: Window | None = None  # a sliding cache
    count: int = 0  # the new tokens asked for (fewer when an end-of-text token comes)
    # By token number, its logit lens (generation.lens.LensReading, following the token chosen)
    # and the text of each layer's top reading, when --lens asked for it.
    lens: dict[int, tuple[Any, list[str]]] = field(default_factory=dict)


def shown(text: str) -> str:
    """A token's text as the lesson quotes it: its whitespace visible ("' Paris'", "'\\n'"),
    its spaces no-break ones so that a line is never broken inside the quotes."""
    return repr(text).replace(" ", "\u00a0")


def said(label: str) -> str:
    """A token's label (as the tables show it, "Paris", "\\n") quoted in a sentence."""
    return f"‘{label}’"


def opening(telling: Telling, count: int, cache: CacheSize) -> list[Block]:
    """The title, the prompt and the prefill pass, with the cache it leaves."""
    n, sampling = len(telling.prompt), telling.sampling
    pairs = n * (n + 1) // 2
    return [
        Heading(f"attnviz generate: {telling.model}, {count} new tokens", "title"),
        Paragraph(
            (
                Span(
                    f"{telling.model} is {telling.family}; it chooses each token "
                    f"{how(sampling, telling.seed)}."
                ),
            )
        ),
        Paragraph(
            (
                Span(f"The prompt is {n} token{'s' * (n != 1)}: "),
                Span(" · ".join(telling.prompt), "bold"),
            )
        ),
        Blank(),
        Heading("Prefill: the whole prompt in one pass", "step"),
        Paragraph(
            (
                Span(
                    f"All {n} prompt tokens go through the {telling.n_layers} layers at once, as "
                    f"in the attention lesson: in each layer each head scores {n} queries against "
                    f"{n} keys, and the causal mask lets token i see tokens 0 … i ({pairs} of the "
                    f"{n * n} pairs). Their keys and values are kept, layer by layer: the cache. "
                    + cache_sentence(cache, telling.dtype)
                ),
            )
        ),
        Paragraph((Span(grouping_sentence(cache, telling.dtype)),)),
        Paragraph(
            (
                Span(
                    "Then one token at a time: only the newest token's q, k and v are computed; "
                    "its k and v are appended to the cache and its query is read against every "
                    "cached key. The last prompt token's row of the prefill pass chooses token 1."
                ),
            )
        ),
        *window_blocks(telling.window),
    ]


def window_blocks(window: Window | None) -> list[Block]:
    """What a sliding cache changes, said before the tokens."""
    if window is None:
        return []
    w, k = window.tokens, window.keep_first
    kept = ""
    if k:
        first = "the first token always stays" if k == 1 else f"the first {k} tokens always stay"
        kept = f", and {first} (StreamingLLM's attention sinks)"
    return [
        Paragraph(
            (
                Span(
                    f"The cache is a sliding window: each layer holds at most {w} tokens, a "
                    f"token's own row among them; once it is full, the oldest leaves as a new one "
                    f"comes{kept}. Each key keeps the position it had when it was computed "
                    "(StreamingLLM numbers the positions inside the cache anew instead). "
                    "Mistral 7B reads a window of 4,096 tokens in every layer; a cache so "
                    "bounded stays the same size however long the text grows.",
                    "note",
                ),
            )
        )
    ]


def how(sampling: Sampling, seed: int | None) -> str:
    """How tokens are chosen, in words."""
    if sampling.greedy:
        return "greedily: the largest logit each time"
    parts = [f"temperature {sampling.applied_temperature:g}"]
    if sampling.top_k is not None:
        parts.append(f"top-k {sampling.top_k}")
    if sampling.top_p is not None:
        parts.append(f"top-p {sampling.top_p:g}")
    return f"by sampling ({', '.join(parts)}; numpy's Generator seeded with {seed})"


def cache_sentence(cache: CacheSize, dtype: str) -> str:
    """ "It holds K and V of [L layers, G key/value heads, t tokens, d_k] each: N numbers, B." """
    heads, tokens = cache.key_value_heads, cache.tokens
    return (
        f"It holds K and V of shape [{cache.layers} layers, {heads} key/value "
        f"head{'s' * (heads != 1)}, {tokens} token{'s' * (tokens != 1)}, "
        f"{cache.d_k}] each: {cache.numbers:,} numbers, {human_size(cache.bytes)} in {dtype}."
    )


def grouping_sentence(cache: CacheSize, dtype: str) -> str:
    """What grouped-query attention saves, or that every head keeps its own K and V."""
    h, g = cache.query_heads, cache.key_value_heads
    if h == 1:
        return (
            f"With one head, the cache grows by 2 × {cache.layers} × {cache.d_k} = "
            f"{2 * cache.layers * cache.d_k:,} numbers a token (a k and a v in each layer)."
        )
    if g == h:
        return (
            f"Each of the {h} heads has its own keys and values (multi-head attention), so the "
            f"cache grows by 2 × {cache.layers} × {h} × {cache.d_k} = "
            f"{2 * cache.layers * h * cache.d_k:,} numbers a token."
        )
    per_token = 2 * cache.layers * g * cache.d_k
    return (
        f"{h} query heads share {g} key/value heads, {h // g} to each (grouped-query "
        f"attention): the cache is 1/{h // g} of the {human_size(cache.without_grouping)} that "
        f"{h} key/value heads would keep, and grows by 2 × {cache.layers} × {g} × {cache.d_k} = "
        f"{per_token:,} numbers a token ({human_size(per_token * cache.itemsize)} in {dtype})."
    )


def token_blocks(
    telling: Telling,
    token: GeneratedToken,
    labels: Sequence[str],
    chosen: str,
    names: Sequence[str],
) -> list[Block]:
    """Token j worked out. ``labels``: every token so far as shown, the prompt's and the
    generated ones (the keys the query reads); ``chosen``: the new token's text; ``names``: the
    text of each of the choice's shown tokens."""
    j, p = token.number, token.query_position
    held = [labels[k] for k in token.key_positions]  # the keys the cache held, in order
    t = len(held)
    dropped = p + 1 - t
    out_of_window = f" ({dropped} older token{'s' * (dropped != 1)} out of the window)" * bool(
        dropped
    )
    where = (
        "the last row of the prefill pass"
        if j == 1
        else "its q, k and v computed in this pass, its k and v appended to the cache first"
    )
    row = token.attention[telling.layer - 1][telling.head - 1]
    return [
        Blank(),
        Heading(f"Token {j}: {chosen!r}", "step"),  # a heading never wraps
        Paragraph(
            (
                Span(
                    f"The query of {said(labels[p])} (position {p}; {where}) against the {t} "
                    f"cached key{'s' * (t != 1)}{out_of_window}. Layer {telling.layer}, head "
                    f"{telling.head}: "
                    f"softmax(q·Kᵀ / √{token.cache.d_k}), {_bars_said(row)}"
                ),
            )
        ),
        _row_bars(row, held, [int(k) for k in token.key_positions]),
        Paragraph((Span(_heads_sentence(telling, token, held)),)),
        Paragraph((Span("The cache now. " + cache_sentence(token.cache, telling.dtype)),)),
        *choice_blocks(token.choice, names, chosen),
        *lens_paragraph(telling.lens.get(j), chosen),
    ]


def lens_paragraph(found: tuple[Any, list[str]] | None, chosen: str) -> list[Block]:
    """--lens: the residual stream at the query after each layer read through the output layer,
    and from which layer on the token chosen is the top reading."""
    if found is None:
        return []
    reading, names = found
    ranks = [int(r) for r in reading.final_rank]
    layers = len(ranks) - 1

    def layer_name(index: int) -> str:
        return "the embedding" if index == 0 else f"layer {index}"

    tops = "; ".join(
        f"{layer_name(i)} {names[i]!r} {float(reading.top_probabilities[i, 0]):.2f}"
        for i in range(max(0, layers - 3), layers + 1)
    )
    if ranks[-1] != 1:
        settled = f"it is not the last layer's top reading (rank {ranks[-1]}: it was sampled)"
    else:
        first = next(i for i in range(len(ranks)) if all(r == 1 for r in ranks[i:]))
        settled = f"it is the top reading from {layer_name(first)} on"
    return [
        Paragraph(
            (
                Span(
                    f"The logit lens (the stream at the query after each layer read through the "
                    f"output layer; the middle layers were not trained to be read so): "
                    f"{shown(chosen)}: {settled}. The top readings of the last layers: {tops}."
                ),
            )
        )
    ]


def _bars_said(row: np.ndarray) -> str:
    if len(row) <= ALL_BARS:
        return "every weight:"
    rest = float(np.sort(row)[: len(row) - MOST_BARS].sum())
    return (
        f"the {MOST_BARS} largest of the {len(row)} weights (the other {len(row) - MOST_BARS} "
        f"sum to {rest:.3f}):"
    )


def _row_bars(row: np.ndarray, labels: Sequence[str], positions: Sequence[int]) -> Bars:
    """A row of weights as bars: every key, or the MOST_BARS largest in their order, each
    named by its token and, when some are left out, its position."""
    keys = list(range(len(row)))
    if len(row) > ALL_BARS:
        keys = sorted(int(k) for k in np.argsort(-row, kind="stable")[:MOST_BARS])
    whole = len(keys) == len(row) and list(positions) == list(range(len(row)))
    return Bars(
        labels=tuple(labels[k] if whole else f"{labels[k]} ({positions[k]})" for k in keys),
        weights=tuple(float(row[k]) for k in keys),
        texts=tuple(f"{row[k]:.3f}" for k in keys),
    )


def _heads_sentence(telling: Telling, token: GeneratedToken, labels: Sequence[str]) -> str:
    rows = token.attention[telling.layer - 1]
    if len(rows) == 1:
        top = int(np.argmax(rows[0]))
        return (
            f"Layer {telling.layer}'s one head weighs {labels[top]} (position "
            f"{int(token.key_positions[top])}) most: "
            f"{float(rows[0, top]):.3f}."
        )
    looks = "; ".join(
        f"{h + 1}: {labels[int(np.argmax(row))]} {float(row.max()):.2f}"
        for h, row in enumerate(rows)
    )
    return f"The key each of layer {telling.layer}'s {len(rows)} heads weighs most — head {looks}."


def choice_blocks(choice: Choice, names: Sequence[str], chosen: str) -> list[Block]:
    """The logits, the softmax at the temperature, the cuts worked out, and the choice."""
    rows = min(TOP_ROWS, len(choice.shown))
    columns = ["logit", "p"] if choice.greedy else ["logit", f"p (T={choice.temperature:g})", "p′"]
    values = [choice.logits[:rows], choice.probabilities[:rows]]
    if not choice.greedy:
        values.append(choice.renormalised[:rows])
    blocks: list[Block] = [
        Matrix(
            np.stack(values, axis=1),
            f"Logits h·W_unembᵀ over {choice.vocabulary:,} tokens, the {rows} largest",
            [repr(name) for name in names[:rows]],  # a table's cells never wrap
            columns,
        ),
        Paragraph((Span(_softmax_sentence(choice)),)),
    ]
    if not choice.greedy:
        blocks.append(Paragraph((Span(_cuts_sentence(choice)),)))
    blocks.append(Paragraph((Span(_chosen_sentence(choice, chosen), "bold"),)))
    return blocks


def _softmax_sentence(choice: Choice) -> str:
    t = choice.temperature
    scaled = "" if t == 1 else f" ÷ {t:g} (the temperature: below 1 sharpens, above 1 flattens)"
    return (
        f"p = softmax(logits{scaled}) over all {choice.vocabulary:,} tokens, the largest "
        "subtracted first; the table's p are the largest of them."
    )


def _cuts_sentence(choice: Choice) -> str:
    parts = []
    if choice.threshold_logit is not None:
        parts.append(
            f"top-k {choice.top_k} keeps the tokens whose logit reaches the "
            f"{ordinal(choice.top_k or 0)} largest, {choice.threshold_logit:.3f}: "
            f"{choice.after_top_k:,} of {choice.vocabulary:,}"
        )
    if choice.nucleus_mass is not None:
        those = "of those " if choice.threshold_logit is not None else ""
        parts.append(
            f"top-p {choice.top_p:g} keeps the fewest most likely tokens {those}whose "
            f"probabilities (renormalised over them) reach {choice.top_p:g}: {choice.kept:,}, "
            f"summing to {choice.nucleus_mass:.4f}"
        )
    if not parts:
        parts.append(f"no cut: all {choice.vocabulary:,} tokens may be drawn")
    kept = (
        f"p′ = p / Σ p over the {choice.kept:,} kept"
        if choice.kept > 1
        else "p′ = 1 for the one kept"
    )
    return f"{'; '.join(parts)[0].upper()}{'; '.join(parts)[1:]}. {kept}; a token cut has p′ = 0."


def _chosen_sentence(choice: Choice, chosen: str) -> str:
    if choice.greedy:
        return f"Chosen: {shown(chosen)}, the largest logit (p = {choice.chosen_probability:.4f})."
    assert choice.draw is not None and choice.interval is not None
    start, end = choice.interval
    return (
        f"Drawn: u = {choice.draw:.4f}. The kept tokens' p′, largest first, laid end to end "
        f"fill [0, 1); u falls in {shown(chosen)}'s stretch [{start:.4f}, {end:.4f}), so "
        f"{shown(chosen)} is chosen (p = {choice.chosen_probability:.4f}, p′ = "
        f"{end - start:.4f})."
    )


def ordinal(number: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st, …"""
    if 10 <= number % 100 <= 20:
        return f"{number}th"
    return f"{number}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(number % 10, 'th') }"


def closing(
    telling: Telling,
    prompt_text: str,
    text: str,
    proof: CacheProof | None,
    *,
    ended: bool,
    total: int,
) -> list[Block]:
    """The text written, how it stopped, and the proof that the cache changed nothing."""
    blocks: list[Block] = [
        Blank(),
        Heading("The text", "step"),
        Paragraph((Span(prompt_text), Span(text, "bold"))),
    ]
    if ended:
        blocks.append(Paragraph((Span("It stopped at the model's end-of-text token."),)))
    if proof is not None:
        blocks.append(Paragraph((Span(proof_sentence(proof, total, telling.dtype)),)))
    return blocks


#: The largest difference in a weight or a probability that rounding explains, by dtype: the
#: two runs add the same terms in other orders (a block of rows against one row), each sum
#: off by a few units in the last place, and float32's unit is 6e-8 (float64's 1e-16).
ROUNDING = {"float32": 1e-4, "float64": 1e-10}


def proof_sentence(proof: CacheProof, total: int, dtype: str) -> str:
    rows = f"{proof.tokens} row{'s' * (proof.tokens != 1)}"
    figures = (
        f"attention weights in the {rows} that chose a token (largest difference "
        f"{proof.weights:.1e}), last hidden states ({proof.hidden:.1e}) and probabilities "
        f"({proof.probabilities:.1e})"
    )
    if max(proof.weights, proof.probabilities) <= ROUNDING[dtype]:
        return (
            f"The cache changes no number: one pass over all {total} tokens, without a cache, "
            f"gives the same {figures}: {dtype} rounding alone, as the two runs add in other "
            "orders."
        )
    return (
        f"One pass over all {total} tokens, without a cache, differs from the cached run by more "
        f"than {dtype} rounding: {figures}."
    )
