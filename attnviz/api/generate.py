"""``attnviz generate``: a decoder writes text a token at a time, every token worked out as it
is chosen (live at a terminal, paced for a class), then the proof that the cache changed
nothing; ``attnviz.generate`` returns the whole run as data."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from attnviz.errors import AttnvizError, option, shown_value
from attnviz.serial import one_at_a_time

if TYPE_CHECKING:
    from attnviz.api.generated import GeneratedText
    from attnviz.api.surface import Surface
    from attnviz.generation.loading import LoadedDecoder
    from attnviz.generation.run import GeneratedToken
    from attnviz.lesson.generation import Telling
    from attnviz.model.sources.tokenizer_pieces import Pieces

#: The model without --model: attnviz's own two-layer decoder, shipped in the package.
DEFAULT_MODEL = "induction"
#: The most new tokens one run writes: every step's rows are kept for the lesson and --export.
MOST_NEW_TOKENS = 512
#: New tokens when --tokens is not given (fewer when the model's positions leave fewer).
DEFAULT_NEW_TOKENS = 8


@dataclass(frozen=True)
class GenerateRequest:
    """What ``attnviz generate`` is asked, validated where it is made (CLI and Python alike)."""

    prompt: str
    model: str = DEFAULT_MODEL
    tokens: int | None = None  # None: DEFAULT_NEW_TOKENS, or as many as the positions leave
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    seed: int = 0
    layer: int | None = None  # the layer whose rows are shown, from 1; None: the last
    head: int = 1  # the head whose row is drawn as bars, from 1
    dtype: str = "float32"
    window: int | None = None  # a sliding cache of this many tokens a layer
    keep_first: int = 0  # the first tokens the sliding cache always keeps
    sinks: bool = False  # also the first token's weight, value size and share, layer by layer
    lens: bool = False  # also each token's logit lens: from which layer on it is the top reading

    def __post_init__(self) -> None:
        from attnviz import arguments as check
        from attnviz.generation.sampling import Sampling

        check.sentences(model=self.model, prompt=self.prompt)
        check.instance("model", self.model, str, 'a model\'s name or folder, e.g. model="smollm2"')
        check.instance("dtype", self.dtype, str, 'dtype="float32" or dtype="float64"')
        check.given(seed=self.seed, head=self.head)
        check.whole(tokens=self.tokens)
        check.whole(top_k=self.top_k, layer=self.layer, window=self.window)
        check.given(keep_first=self.keep_first)
        check.flags(sinks=self.sinks, lens=self.lens)
        self._check_window()
        for name, value in (("temperature", self.temperature), ("top_p", self.top_p)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                raise AttnvizError(f"{name}={shown_value(value)}: give a number, e.g. {name}=0.9.")
        if not self.prompt.strip():
            raise AttnvizError(
                'The prompt is empty; give some text, e.g. "The capital of France is".'
            )
        if self.tokens is not None and not 1 <= self.tokens <= MOST_NEW_TOKENS:
            raise AttnvizError(
                f"{option('tokens', self.tokens)}: ask for 1 to {MOST_NEW_TOKENS} new tokens."
            )
        if not 0 <= self.seed < 2**63:
            raise AttnvizError(f"{option('seed', self.seed)}: give a whole number from 0.")
        Sampling(self.temperature, self.top_k, self.top_p)  # refuses what it cannot use

    def _check_window(self) -> None:
        if self.window is None:
            if self.keep_first:
                raise AttnvizError(
                    f"{option('keep_first', self.keep_first)} is for a sliding cache: give "
                    f"{option('window', metavar='W')} too."
                )
            return
        if not 1 <= self.window <= MOST_NEW_TOKENS * 16:
            raise AttnvizError(
                f"{option('window', self.window)}: give the tokens the cache may hold, 1 or more."
            )
        if not 0 <= self.keep_first < self.window:
            raise AttnvizError(
                f"{option('keep_first', self.keep_first)}: keep 0 to {self.window - 1} first "
                f"tokens in a window of {self.window} (one row is the new token's own)."
            )

    @property
    def sampling(self) -> Any:
        from attnviz.generation.sampling import Sampling

        return Sampling(self.temperature, self.top_k, self.top_p)


def _checked_view(request: GenerateRequest, loaded: LoadedDecoder) -> tuple[int, int]:
    """(the layer shown, the head drawn), from 1, refused when the model has no such one."""
    decoder = loaded.decoder
    layer = decoder.n_layers if request.layer is None else request.layer
    if not 1 <= layer <= decoder.n_layers:
        raise AttnvizError(
            f"{option('layer', layer)}: {loaded.name} has layers 1 to {decoder.n_layers}."
        )
    if not 1 <= request.head <= decoder.n_heads:
        raise AttnvizError(
            f"{option('head', request.head)}: {loaded.name} has heads 1 to {decoder.n_heads}."
        )
    return layer, request.head


def prompt_tokens(
    prompt: str, loaded: LoadedDecoder, new_tokens: int | None, reading: Any = None
) -> tuple[tuple[int, ...], tuple[str, ...], Pieces, int]:
    """The prompt's token ids and their labels, the vocabulary's pieces, and how many new
    tokens to write (``new_tokens``, or when None DEFAULT_NEW_TOKENS or as many as the model's
    positions leave); refused when they would not fit in the model's positions. ``reading``:
    the prompt's split already begun (tokenizer.start_encode_with_pieces), read here."""
    if reading is not None:
        encoding, found = reading.result()
    elif loaded.toy_config is not None:
        encoding = loaded.tokenizer(prompt, loaded.toy_config)
        assert loaded.pieces is not None  # a toy model's words
        found = loaded.pieces
    else:
        from attnviz.model.sources.tokenizer import encode_with_pieces

        positions = loaded.decoder.max_positions
        encoding, found = encode_with_pieces(loaded.tokenizer, prompt, positions)
    room = loaded.decoder.max_positions - len(encoding.ids)
    if new_tokens is None:
        if room < 1:
            raise AttnvizError(
                f"The prompt takes all {loaded.decoder.max_positions} positions of "
                f"{loaded.name}, leaving none for a new token; give a shorter prompt."
            )
        new_tokens = min(DEFAULT_NEW_TOKENS, room)
    if new_tokens > room:
        raise AttnvizError(
            f"{option('tokens', new_tokens)}: {loaded.name} has {loaded.decoder.max_positions} "
            f"positions and the prompt takes {len(encoding.ids)}; ask for at most {max(room, 0)} "
            "new tokens, or give a shorter prompt."
        )
    return tuple(encoding.ids), tuple(encoding.tokens), found, new_tokens


def generation(
    request: GenerateRequest,
    loaded: LoadedDecoder,
    *,
    on_token: Any = None,
    reading: Any = None,
) -> tuple[GeneratedText, Telling]:
    """Run ``request`` on ``loaded``: each token told to ``on_token(token, labels, text, names)``
    as it is chosen, then the proof. ``reading``: the prompt's split already begun."""
    from attnviz.api.generated import GeneratedText
    from attnviz.generation.run import collect, generated_tokens, prove
    from attnviz.generation.text import TextStream, label, piece_text

    _checked_view(request, loaded)  # refused before the prompt is read
    ids, labels, pieces, count = prompt_tokens(request.prompt, loaded, request.tokens, reading)
    sampling, decoder = request.sampling, loaded.decoder
    telling = _telling(request, loaded, labels, count)
    stream = TextStream(pieces, loaded.separator)
    telling_lens = telling.lens
    texts: list[str] = []
    shown_texts: list[tuple[str, ...]] = []
    shown_labels = list(labels)

    def told(token: GeneratedToken) -> None:
        text = stream.add(token.choice.chosen)
        texts.append(text)
        names = [piece_text(pieces, int(i), loaded.separator) for i in token.choice.shown]
        shown_texts.append(tuple(names))
        if token.states is not None:
            telling_lens[token.number] = _lens_of(token, decoder, pieces, loaded.separator)
        if on_token is not None:
            on_token(telling, token, tuple(shown_labels), text, names)
        shown_labels.append(label(text))

    end = loaded.end_ids
    from attnviz.train.threads import blas_threads, idle_blas_threads

    # A new token's products are matrix-vector products, bound by reading the weights: a second
    # BLAS thread on an idle core reads them faster (SmolLM2: 60 ms a token against 90 ms),
    # one that waits for a busy core made each token 5 times slower. So: two only when the
    # load leaves a core idle (idle_blas_threads states the rule).
    with np.errstate(all="ignore"), blas_threads(idle_blas_threads()):
        window = telling.window
        steps = collect(
            generated_tokens(
                decoder,
                ids,
                count,
                sampling,
                request.seed,
                end=end,
                window=window,
                lens=request.lens,
            ),
            told,
        )
        proof = prove(decoder, ids, steps, sampling.applied_temperature, window)
        first, held = _studies(request, decoder, [*ids, *(t.choice.chosen for t in steps)], ids)
    if texts:
        texts[-1] += stream.finish()
    result = GeneratedText(
        model=loaded.name,
        prompt_ids=ids,
        prompt_tokens=labels,
        tokens=steps,
        texts=tuple(texts),
        sampling=sampling,
        seed=telling.seed,
        proof=proof,
        ended=bool(steps) and steps[-1].choice.chosen in end,
        window=window,
        first_token=first,
        held=held,
        shown_texts=tuple(shown_texts),
        telling=telling,
        prompt=request.prompt,
    )
    return result, telling


def _telling(
    request: GenerateRequest, loaded: LoadedDecoder, labels: tuple[str, ...], count: int
) -> Telling:
    """What every block of the lesson needs to know of the run."""
    from attnviz.generation.run import Window
    from attnviz.lesson.generation import Telling

    layer, head = _checked_view(request, loaded)
    sampling, decoder = request.sampling, loaded.decoder
    return Telling(
        model=loaded.name,
        family=loaded.family,
        prompt=labels,
        sampling=sampling,
        seed=None if sampling.greedy else request.seed,
        layer=layer,
        head=head,
        n_layers=decoder.n_layers,
        n_heads=decoder.n_heads,
        dtype=request.dtype,
        window=None if request.window is None else Window(request.window, request.keep_first),
        count=count,
    )


def _lens_of(
    token: GeneratedToken, decoder: Any, pieces: Pieces, separator: str
) -> tuple[Any, list[str]]:
    """--lens: the token's query's stream after each layer read through the output layer,
    following the token chosen, and each layer's top reading as text."""
    from attnviz.generation.lens import read_layers
    from attnviz.generation.text import piece_text

    assert token.states is not None  # kept as the lens asked
    reading = read_layers(list(token.states), decoder, 1, follow=token.choice.chosen)
    return reading, [piece_text(pieces, int(row[0]), separator) for row in reading.top_ids]


def _studies(
    request: GenerateRequest, decoder: Any, everything: list[int], prompt: tuple[int, ...]
) -> tuple[Any, Any]:
    """What --sinks and --window add: the first token's figures over the whole text, and the
    prompt read with the whole cache and with windows keeping and dropping its first tokens."""
    from attnviz.generation.sinks import first_token, held_text

    first = first_token(decoder, everything) if request.sinks and len(everything) > 1 else None
    held = None
    if request.window is not None:
        held = held_text(decoder, prompt, request.window, max(request.keep_first, 1))
    return first, held


def run(
    request: GenerateRequest,
    surface: Surface,
    *,
    pace: float,
    export: Path | None,
    page: Path | None = None,
) -> None:
    """``attnviz generate``: the prefill told, then each token as it is chosen (``pace`` seconds
    apart at a terminal), then the text and the proof; ``export`` (the numbers) and ``page``
    (the steps on a slider) written at the end, each whole or not at all."""
    from attnviz.files.writing import check_output_path
    from attnviz.generation.loading import load_decoder

    if export is not None:
        check_output_path(export, (".npz",), "--export")
    if page is not None:
        check_output_path(page, (".html", ".htm"), "--page")
    readings: list[Any] = []

    def early(tokenizer: Any, positions: int) -> None:
        # The prompt split in a child process while the layers are read (a core each).
        from attnviz.model.sources.tokenizer import start_encode_with_pieces

        readings.append(start_encode_with_pieces(tokenizer, request.prompt, positions))

    try:
        loaded = load_decoder(request.model, request.dtype, early)
        _run(request, surface, (pace, export, page), loaded, readings[0] if readings else None)
    finally:  # a run that stopped before it read the split (a refusal, Ctrl-C) ends the child
        for reading in readings:
            reading.cancel()


def _run(
    request: GenerateRequest,
    surface: Surface,
    outputs: tuple[float, Path | None, Path | None],
    loaded: LoadedDecoder,
    reading: Any,
) -> None:
    """``run`` once the decoder is loaded: ``outputs`` (pace, export, page), ``reading`` the
    prompt's split begun (or None)."""
    from attnviz.lesson.generation import opening, token_blocks
    from attnviz.lesson.generation_steps import ending
    from attnviz.lesson.options import LessonOptions
    from attnviz.render.terminal.lesson import print_blocks

    pace, export, page = outputs
    console = surface.console()
    options = LessonOptions(decimals=3)
    live = console.is_terminal and pace > 0
    started: list[bool] = []

    def on_token(
        telling: Telling,
        token: GeneratedToken,
        labels: tuple[str, ...],
        text: str,
        names: list[str],
    ) -> None:
        if not started:
            print_blocks(opening(telling, telling.count, token.cache), console, options)
            started.append(True)
        elif live:
            time.sleep(pace)
        print_blocks(token_blocks(telling, token, labels, text, names), console, options)

    result, telling = generation(request, loaded, on_token=on_token, reading=reading)
    print_blocks(ending(telling, result, request.prompt), console, options)
    if export is not None:
        from attnviz.generation.export import save_generation

        save_generation(export, result)
        surface.wrote(export)
    if page is not None:
        result.page(decimals=options.decimals).save(page)
        surface.wrote(page)


@one_at_a_time
def generate(
    prompt: str,
    *,
    model: str = DEFAULT_MODEL,
    tokens: int | None = None,
    temperature: float | None = None,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int = 0,
    dtype: str = "float32",
    window: int | None = None,
    keep_first: int = 0,
    sinks: bool = False,
    lens: bool = False,
) -> GeneratedText:
    """Write ``tokens`` new tokens after ``prompt`` with a decoder, as ``attnviz generate`` does:
    greedy by default, or sampled (``temperature``, ``top_k``, ``top_p``) from numpy's
    Generator seeded with ``seed``. Every token's attention rows, cache size, logits and choice
    are in the result, and ``result.proof`` compares them with one pass over the whole text.
    ``window``: a sliding cache of that many tokens, keeping the ``keep_first`` first ones (and
    ``result.held``: the prompt read with the whole cache and windows keeping and dropping
    them); ``sinks``: ``result.first_token``, the first token's weight, value size and share;
    ``lens``: each token's ``states``, its query's residual stream after every layer.
    In a notebook the result shows its steps on a slider (its page: ``result.to_html()``,
    ``result.page().save(path)``).

    >>> import attnviz
    >>> result = attnviz.generate("j k l a b c d e a b", tokens=3)
    >>> "".join(result.texts)
    ' c d e'
    """
    from attnviz.generation.loading import load_decoder

    request = GenerateRequest(
        prompt,
        model,
        tokens,
        temperature,
        top_k,
        top_p,
        seed,
        dtype=dtype,
        window=window,
        keep_first=keep_first,
        sinks=sinks,
        lens=lens,
    )
    result, _ = generation(request, load_decoder(model, dtype))
    return result
