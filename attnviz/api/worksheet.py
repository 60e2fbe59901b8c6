"""``attnviz worksheet``: a class set of exercises on paper, or for a learning platform.

The output's extension picks the format: .pdf, .html and .md write the sheets to the file named
and their answer keys beside it, NAME-key.EXT (sheet.pdf and sheet-key.pdf); .gift (Moodle's
GIFT) and .xml (Moodle XML) write one quiz file whose questions carry their answers, tolerances
and worked solutions, so they have no separate key. ``copies`` sheets go in one file (each from
a new page) and their keys in the other; copy k is drawn with seed + k − 1, its own numbers
(a new random or hand layer) and its own cells, so neighbours' answers differ. Every output is
checked before any work and written all or none (attnviz.files).

    >>> from pathlib import Path
    >>> key_path(Path("class/sheet.pdf")).as_posix(), key_path(Path("quiz.gift"))
    ('class/sheet-key.pdf', None)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnviz import arguments as check
from attnviz.api.explanation import warn
from attnviz.api.surface import Surface
from attnviz.errors import AttnvizError, option, shown_value
from attnviz.options import TraceOptions, options_from
from attnviz.serial import one_at_a_time

if TYPE_CHECKING:
    from attnviz.render.worksheet.sheet import Sheet
    from attnviz.trace import AttentionTrace

#: The formats by extension; those with a key written beside them.
EXTENSIONS = (".pdf", ".html", ".md", ".gift", ".xml")
KEYED = (".pdf", ".html", ".md")
PAPERS = ("a4", "letter")

MAX_COUNT = 40  # questions on one sheet
MAX_COPIES = 100  # sheets in one set
MAX_QUESTIONS = 1000  # questions in the whole set (copies × count): a few hundred pages


@dataclass(frozen=True)
class SheetOptions:
    """What ``attnviz worksheet`` asks of a set, besides how its traces are made."""

    kinds: tuple[str, ...] | None = None  # None: every kind the traces have
    count: int = 6  # questions on each sheet
    copies: int = 1
    paper: str = "a4"
    hand: bool = False  # numbers for pencil and paper (attnviz.exercise.hand)


def key_path(path: Path) -> Path | None:
    """Where the answer key of ``path`` goes: sheet.pdf -> sheet-key.pdf; None for the quiz
    formats, whose questions hold their answers."""
    if path.suffix.lower() not in KEYED:
        return None
    return path.with_name(f"{path.stem}-key{path.suffix}")


def parse_kinds(kinds: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """ "softmax,z" or ["softmax", "z"] -> ("softmax", "z"), each a kind exercises know."""
    from attnviz.exercise.questions import KINDS

    if kinds is None:
        return None
    if isinstance(kinds, str):
        names = [name.strip().lower() for name in kinds.split(",")]
    else:
        names = [str(name).strip().lower() for name in check.bounded("kind", kinds, '["z"]')]
    unknown = [name for name in names if name not in KINDS]
    if unknown or not names:
        raise AttnvizError(
            f"{option('kind', kinds)}: {shown_value(unknown[0] if unknown else '')} is not a "
            f"kind of exercise; give one or more of {', '.join(KINDS)}, comma-separated."
        )
    return tuple(dict.fromkeys(names))


def checked_options(options: SheetOptions) -> SheetOptions:
    """The sizes of the set checked before any work, each refusal naming its option."""
    check.given(count=options.count, copies=options.copies)
    check.flags(hand=options.hand)
    if not 1 <= options.count <= MAX_COUNT:
        raise AttnvizError(
            f"{option('count', options.count)}: a sheet holds 1 to {MAX_COUNT} questions."
        )
    if not 1 <= options.copies <= MAX_COPIES:
        raise AttnvizError(
            f"{option('copies', options.copies)}: a set has 1 to {MAX_COPIES} sheets; for a "
            f"larger class, write several sets, each with its own {option('seed')}."
        )
    if options.count * options.copies > MAX_QUESTIONS:
        raise AttnvizError(
            f"{option('copies', options.copies)} of {option('count', options.count)} is "
            f"{options.count * options.copies} questions; a set holds at most {MAX_QUESTIONS}. "
            "Ask for fewer copies or fewer questions."
        )
    paper = str(options.paper).lower() if isinstance(options.paper, str) else options.paper
    if paper not in PAPERS:
        raise AttnvizError(f"{option('paper', options.paper)}: give {' or '.join(PAPERS)}.")
    return replace(options, paper=paper)


def check_paths(output: Path) -> tuple[Path, ...]:
    """The files the set is written to, each refused before any work when it cannot be."""
    from attnviz.files import check_output_path
    from attnviz.outputs import check_apart

    what = option("output")
    check_output_path(output, EXTENSIONS, what)
    key = key_path(output)
    if key is None:
        return (output,)
    check_output_path(key, (output.suffix.lower(),), "The answer key")
    check_apart([(output, what), (key, "The answer key")])
    return output, key


def hand_refused(trace_options: TraceOptions) -> None:
    """--hand makes its own layer: the options that would make another are refused."""
    defaults = TraceOptions(seed=trace_options.seed)
    given = [
        option(name)
        for name in TraceOptions.__dataclass_fields__
        if getattr(trace_options, name) != getattr(defaults, name)
    ]
    if given:
        raise AttnvizError(
            f"{option('hand')} makes its own layer for pencil and paper (d_model 4, 2 heads); "
            f"drop {', '.join(given)}, or {option('hand')}."
        )


def sheets(
    sentence: str, trace_options: TraceOptions, options: SheetOptions
) -> tuple[list[Sheet], tuple[str, ...]]:
    """The sheets of the set (copy k drawn with seed + k − 1) and the notes on how their
    numbers were made."""
    from attnviz.exercise.sets import exercise_set
    from attnviz.render.worksheet.sheet import Sheet

    made: list[Sheet] = []
    notes: tuple[str, ...] = ()
    traces: tuple[AttentionTrace, ...] = ()
    for number in range(1, options.copies + 1):
        seed = trace_options.seed + number - 1
        if options.hand:
            from attnviz.exercise.hand import hand_traces

            traces = hand_traces(sentence, seed)
        elif number == 1 or trace_options.model is None:  # a model's layers are its own
            from attnviz.core import trace_layers

            traces, notes = trace_layers(sentence, replace(trace_options, seed=seed))
        if number == 1 and options.kinds is not None:
            check_kinds(options.kinds, traces)
        kinds = options.kinds or usable_kinds(traces)
        questions = exercise_set(traces, kinds, options.count, seed)
        about = _about(traces, seed, hand=options.hand)
        made.append(
            Sheet(number, options.copies, sentence, about, tuple(questions), hand=options.hand)
        )
    return made, notes


def usable_kinds(traces: Sequence[AttentionTrace]) -> tuple[str, ...]:
    """Every kind of question the traces can be asked, in the lesson's order."""
    from attnviz.exercise.questions import KINDS
    from attnviz.exercise.sets import suits

    return tuple(kind for kind in KINDS if suits(traces[-1], kind) is None)


def check_kinds(kinds: Sequence[str], traces: Sequence[AttentionTrace]) -> None:
    """Refuse a kind asked for that the traces cannot be asked, saying what it needs."""
    from attnviz.exercise.sets import suits

    for kind in kinds:
        needs = suits(traces[-1], kind)
        if needs is not None:
            raise AttnvizError(f"{option('kind', kind)} {needs}; ask for other kinds.")


def _about(traces: Sequence[AttentionTrace], seed: int, *, hand: bool) -> tuple[str, ...]:
    """What a sheet says of its numbers: the hand layer's note, where the random layer's X and
    W came from, or the model whose layers the questions name."""
    trace = traces[0]
    if hand:
        from attnviz.exercise.hand import hand_note

        return (*hand_note(trace), f"Seed {seed}.")
    origin = trace.provenance
    heads = f"{trace.n_heads} head" + ("s" if trace.n_heads != 1 else "")
    sizes = f"d_model {trace.d_model}, {heads}, d_k {trace.d_k}"
    if origin.weights.model is not None:  # each question names its layer
        layers = f"{len(traces)} layers" if len(traces) > 1 else "1 layer"
        return (f"Weights: {origin.weights.describe(with_layer=False)}, {layers}; {sizes}.",)
    return (
        f"X: {origin.embeddings.describe()}; weights: {origin.weights.describe()}; {sizes}; "
        f"seed {seed}.",
    )


def write(made: Sequence[Sheet], paths: Sequence[Path], paper: str) -> None:
    """The set, and its keys where the format has them, all written or none."""
    from attnviz.files import atomic_write, staged_writes

    suffix = paths[0].suffix.lower()
    with staged_writes():
        if suffix == ".pdf":
            from attnviz.render.worksheet.pdf import write_pdf

            write_pdf(made, paths[0], paper, key=False)
            write_pdf(made, paths[1], paper, key=True)
            return
        for path, data in zip(paths, _texts(made, suffix, paper), strict=True):
            atomic_write(path, _bytes_writer(data))


def _bytes_writer(data: bytes) -> Callable[[Path], object]:
    """What atomic_write calls to put ``data`` in its temporary file."""
    return lambda temporary: temporary.write_bytes(data)


def _texts(made: Sequence[Sheet], suffix: str, paper: str) -> list[bytes]:
    """The set's files in a text format, in the order of check_paths."""
    if suffix == ".html":
        from attnviz.render.worksheet.html import keys_html, sheets_html

        return [sheets_html(made, paper).encode(), keys_html(made, paper).encode()]
    if suffix == ".md":
        from attnviz.render.worksheet.markdown import keys_markdown, sheets_markdown

        return [sheets_markdown(made).encode(), keys_markdown(made).encode()]
    from attnviz.render.worksheet.moodle import sheets_gift, sheets_xml

    return [sheets_gift(made).encode() if suffix == ".gift" else sheets_xml(made)]


def run(
    sentence: str,
    trace_options: TraceOptions,
    options: SheetOptions,
    output: Path,
    surface: Surface,
) -> list[Sheet]:
    """``attnviz worksheet``: the options and the files checked, the set made and written;
    "wrote" said of each file. Returns the sheets."""
    options = checked_options(options)
    if options.hand:
        hand_refused(trace_options)
    paths = check_paths(output)
    made, notes = sheets(sentence, trace_options, options)
    surface.notes(notes)
    write(made, paths, options.paper)
    surface.wrote_all(list(paths))
    return made


@one_at_a_time
def worksheet(
    sentence: str,
    output: str | Path,
    *,
    kind: str | Sequence[str] | None = None,
    count: int = 6,
    copies: int = 1,
    paper: str = "a4",
    hand: bool = False,
    **trace_options: Any,
) -> tuple[Path, ...]:
    """Write a worksheet set for ``sentence`` as ``attnviz worksheet`` does, to ``output``
    (.pdf, .html, .md: with its key beside it, NAME-key.EXT; .gift, .xml: a quiz); returns the
    paths written. ``kind`` ("softmax,z" or a list) limits the kinds of questions, ``count``
    is the questions per sheet, ``copies`` the sheets (copy k drawn with seed + k − 1),
    ``paper`` "a4" or "letter", ``hand=True`` numbers for pencil and paper; the other keywords
    make the traces as ``explain``'s do (``seed=3``, ``model="coref"``, ``heads=4``).
    """
    check.sentences(sentence=sentence)
    path = check.output_file("output", output)
    options = SheetOptions(parse_kinds(kind), count, copies, paper, hand)
    made = options_from(**trace_options).trace
    written: list[Path] = []
    surface = Surface(
        console=_no_console,
        note=lambda message: warn([message], stacklevel=5),
        wrote=written.append,
        reading=_no_progress,
        pacer=lambda console: None,
    )
    run(sentence, made, options, path, surface)
    return tuple(written)


def _no_console() -> Any:
    raise AssertionError("attnviz.worksheet prints nothing")


def _no_progress(path: Path | None) -> Any:
    from contextlib import nullcontext

    return nullcontext(None)
