"""The lesson's opening: its title, the formula, the sentence, the sizes, where X and the weights
come from, and its notes (random weights, hidden tokens, merged pieces, lowercasing)."""

from __future__ import annotations

import shlex

from attnviz.errors import option, spelled
from attnviz.labels import plural
from attnviz.lesson.blocks import Span
from attnviz.lesson.notes import lowercased
from attnviz.lesson.writer import LessonWriter
from attnviz.tokens import printable


def write(lesson: LessonWriter) -> None:
    """The header's blocks, before the first step."""
    trace, provenance = lesson.trace, lesson.trace.provenance
    kind = "cross-attention (encoder–decoder)" if trace.is_cross else "self-attention"
    lesson.heading(f"attnviz · multi-head {kind}, step by step", "title")
    formula = "Z = softmax(Q·Kᵀ / √d_k) · V"
    if trace.d_rope:  # a latent's decoupled rotary part: attnviz.latent
        formula = "Z = softmax((Q·Kᵀ + Q_R·K_Rᵀ) / √(d_k + d_rope)) · V"
    lesson.say(
        Span(formula, "bold"),
        f" for each head, then Concat(Z₁ … Z_h) · W_O{lesson.bias('O')}",
    )
    if trace.is_cross:
        lesson.say(
            "Source (keys and values): ",
            Span(" ".join(printable(t) for t in lesson.selection.column_words), "italic"),
            f"  ({lesson.selection.n_columns} tokens)",
        )
    lesson.say(
        "Target (queries): " if trace.is_cross else "Sentence: ",
        Span(
            printable(trace.provenance.sentence)
            if trace.provenance.sentence
            else " ".join(printable(t) for t in lesson.selection.row_words),
            "italic",
        ),
        f"  ({lesson.counted()})",
    )
    _sizes(lesson)
    lesson.say("Embeddings: ", printable(provenance.embeddings.describe()))
    lesson.say("Weights: ", printable(provenance.weights.describe()))
    _window(lesson)
    if provenance.weights.is_random:
        lesson.note(
            "Note: the weights are random, not learned. The patterns below come from "
            "random numbers, not from training: they show how attention is computed, "
            "not what a trained model attends to."
        )
        _trained_model(lesson)
    if lesson.trace.is_cross and provenance.weights.model is not None:
        lesson.say(
            f"These weights are a self-attention layer of {provenance.weights.model}, run "
            "here as cross-attention on other X: the steps are the same, the numbers are "
            "not the model's."
        )
    elif lesson.family is not None and (
        lesson.pretrained or provenance.weights.model is not None  # also from its export
    ):
        if provenance.weights.about:
            lesson.say(printable(provenance.weights.about))
        if not lesson.brief:  # the short lesson says it with the output, where the output goes on
            lesson.say(lesson.family.sublayer)
        _first_token_sink(lesson)
    if lesson.selection.hidden:
        lesson.note(
            f"Note: {plural(len(lesson.selection.hidden), 'token')} ({lesson.hidden_names()}) "
            f"{'is' if len(lesson.selection.hidden) == 1 else 'are'} left out of the tables. "
            + (
                "The weights were computed with them, so a row's weights can sum to less than 1."
                if float(lesson.trace.weights[..., list(lesson.selection.hidden)].max(initial=0))
                > 0
                else "They are masked and get no weight, so the rows still sum to 1."
            )
        )
    if lesson.selection.merged:
        lesson.note(
            f"Note: {option('words')} shows each word as the mean of its pieces' rows (a weights "
            "column: the sum of its pieces' columns). The merged tables are averages for "
            "display: softmax and Z = weights·V hold for the word pieces as computed, not "
            "between merged tables, so the worked examples use the pieces."
        )
    lowered = lowercased(lesson)
    if lowered:
        lesson.note(
            "Note: the model's tokenizer lowercases the sentence (and strips accents) "
            f"before splitting it, so {lowered}."
        )


def _window(lesson: LessonWriter) -> None:
    """A sliding window on the causal mask, when the trace has one: the step that shows it."""
    provenance = lesson.trace.provenance
    window = provenance.masking.window
    if window is not None:
        lesson.say(
            f"Mask: causal, within a sliding window of W = {window}: each token reads "
            + ("itself alone" if window == 1 else f"itself and at most {window - 1} before it")
            + (" in this layer" if provenance.weights.n_layers else "")
            + f" (step {lesson.step_label('window')})."
        )


def _trained_model(lesson: LessonWriter) -> None:
    """Random weights drawn by attnviz for a sentence that coref, the toy model attnviz ships,
    was trained to read: which command shows it, once, at the top."""
    from attnviz.model.sources.shipped import trained_for

    trace = lesson.trace
    real = len(trace.tokens) - trace.provenance.masking.padding
    sentence = " ".join(trace.tokens[:real])  # attnviz's own tokens: the words as typed
    if trace.is_cross or not trace.provenance.weights.is_drawn or not trained_for(sentence):
        return
    command = spelled(
        f"attnviz explain --model coref {shell_quoted(sentence)}",
        f"attnviz.explain({sentence!r}, model='coref')",
    )
    lesson.say(
        Span(
            f"A model trained for this sentence: {printable(command)} shows coref, attnviz's "
            'toy model that learned which noun "it" is.',
            "bold",
        )
    )


def shell_quoted(text: str) -> str:
    """``text`` as a shell reads it back: in double quotes as people type a sentence ("didn't"
    stays as written), or quoted by shlex when it holds what double quotes would expand."""
    if any(character in text for character in '"$`\\!'):
        return shlex.quote(text)
    return f'"{text}"'


def _first_token_sink(lesson: LessonWriter) -> None:
    """A trained Llama-family model without a beginning-of-sequence token (SmolLM2 adds none):
    the sentence's first token as the focus word's attention sink, said when the heads' mean
    weight on it is at least 0.3 and twice the even share."""
    trace, focus = lesson.trace, lesson.selection.focus
    provenance = trace.provenance
    if (
        focus is None
        or focus.index == 0
        or provenance.weights.architecture not in ("llama", "qwen2")
        or provenance.weights.is_random
        or 0 in provenance.special
        or 0 in lesson.selection.hidden
    ):
        return
    mean = float(trace.weights[:, focus.index, 0].mean())
    seen = focus.index + 1  # the keys a causal row sees
    if mean < 0.3 or mean < 2 / seen:
        return
    first, word = printable(trace.tokens[0]), printable(focus.label)
    lesson.say(
        f"No beginning-of-sequence token comes first here, and the first token, '{first}', "
        f"takes its place: it gets {mean:.2f} of the weight of '{word}' on average across the "
        f"{trace.n_heads} heads of this layer, against 1/{seen} ≈ {1 / seen:.2f} if '{word}' "
        f"spread its weight evenly over the {seen} tokens it sees. It acts as an attention sink "
        "(Xiao et al. 2023): the one key every word of a causal model can see, where heads "
        "park weight."
    )


def _sizes(lesson: LessonWriter) -> None:
    """d_model, h, d_k; with grouped-query attention G; with a latent its width and what a cache
    keeps; with rotary positions their base and pairing."""
    trace = lesson.trace
    lesson.say(
        f"Sizes: d_model = {trace.d_model}, h = {plural(trace.n_heads, 'head')}, "
        f"d_k = d_model / h = {trace.d_k}"
        + (
            f", G = {plural(trace.n_kv_heads, 'key/value head')}, each shared by "
            f"h/G = {trace.n_heads // trace.n_kv_heads} query heads"
            if trace.is_grouped
            else ""
        )
    )
    if trace.d_c is not None and trace.d_rope:
        n, d_c, d_rope = len(trace.key_tokens), trace.d_c, trace.d_rope
        lesson.say(
            f"Keys and values: multi-head latent attention, from one latent c = X·W_DKV of "
            f"d_c = {d_c} numbers a token, K_i = c·W_UK_i, V_i = c·W_UV_i; positions: "
            f"DeepSeek's decoupled RoPE, q_R,i = RoPE(X·W_QR_i) and one shared "
            f"k_R = RoPE(X·W_KR), d_rope = {d_rope} wide; a cache keeps n·(d_c + d_rope) = "
            f"{n * (d_c + d_rope):,} numbers against 2·n·h·d_k = "
            f"{2 * n * trace.n_heads * trace.d_k:,}"
        )
    elif trace.d_c is not None:
        n, d_c = len(trace.key_tokens), trace.d_c
        lesson.say(
            f"Keys and values: multi-head latent attention, from one latent c = X·W_DKV of "
            f"d_c = {d_c} numbers a token, K_i = c·W_UK_i, V_i = c·W_UV_i; a cache keeps "
            f"n·d_c = {n * d_c:,} numbers against 2·n·h·d_k = {2 * n * trace.n_heads * trace.d_k:,}"
        )
    if trace.rope is not None:
        lesson.say(
            f"Positions: rotary (RoPE), base {trace.rope.base:g}, "
            f"{trace.rope.pairs_described}; q and k turned in each head, X left alone"
        )
