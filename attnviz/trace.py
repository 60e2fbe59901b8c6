"""AttentionTrace: every intermediate of one multi-head attention run, its export and import.

Every view (terminal tables, heatmaps, files) is a function of a trace; none recomputes math.
Where the trace came from is typed data (``trace.provenance``, see attnviz.provenance), written
into every export and restored by ``load_trace``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.config import AttentionConfig
from attnviz.errors import AttnvizError, FileProblem
from attnviz.files import atomic_write, finite_matrix, load_json, load_npz, open_regular
from attnviz.positions import Positions
from attnviz.provenance import (
    EmbeddingsKind,
    EmbeddingsOrigin,
    Masking,
    Provenance,
    WeightsKind,
    WeightsOrigin,
)

if TYPE_CHECKING:
    from attnviz.selection import ViewOptions

#: The arrays of a trace, in the order of the computation; also the keys of an exported file.
ARRAY_KEYS = (
    "X",
    "W_Q",
    "W_K",
    "W_V",
    "W_O",
    "Q",
    "K",
    "V",
    "scores",
    "scaled",
    "weights",
    "Z",
    "concat",
    "output",
)

BIAS_KEYS = ("b_Q", "b_K", "b_V", "b_O")

#: X = E + PE with --positions sinusoidal: the token embeddings and the positional encoding,
#: of the target and of the source in cross-attention.
POSITION_KEYS = ("E", "PE", "E_source", "PE_source")

EXPORT_EXTENSIONS = (".npz", ".json")


def frozen_mask(mask: np.ndarray) -> np.ndarray:
    """A read-only boolean copy of a mask."""
    result = np.array(mask, dtype=bool)
    result.setflags(write=False)
    return result


def frozen_array(array: FloatArray, *, copy: bool = True) -> FloatArray:
    """A read-only array, so a trace cannot be changed after the fact.

    float32 stays float32 (the model's default precision); any other type becomes float64.
    copy=True copies an array that can still be written to, through itself or through the
    array it views (a caller may hold and change it); one read-only all the way down is taken as
    it is. copy=False gives a read-only view, for arrays made for the trace that nobody else
    holds: no time or memory spent copying.
    """
    array = np.asarray(array)
    dtype = np.float32 if array.dtype == np.float32 else np.float64
    if copy and (_writable(array) or array.dtype != dtype):
        result = np.array(array, dtype=dtype)
    else:
        result = np.asarray(array, dtype=dtype).view()
    result.setflags(write=False)
    return result


def _writable(array: np.ndarray) -> bool:
    """Whether ``array``'s numbers can change: it, or an array it is a view of, is writable."""
    current: object = array
    while isinstance(current, np.ndarray):
        if current.flags.writeable:
            return True
        current = current.base
    return False


@dataclass(frozen=True, eq=False)
class AttentionTrace:
    """Every step of softmax(Q·Kᵀ/√d_k)·V for each head, then Concat·W_O.

    Shapes: n tokens, h heads, d_k = d_model / h.
    """

    tokens: tuple[str, ...]  # [n] the words as they appear in the sentence
    X: FloatArray  # [n, d_model] embeddings, one row per token
    W_Q: FloatArray  # [h, d_model, d_k] query projection of each head
    W_K: FloatArray  # [h, d_model, d_k] key projection of each head
    W_V: FloatArray  # [h, d_model, d_k] value projection of each head
    W_O: FloatArray  # [h·d_k, d_model] output projection, mixing the heads
    Q: FloatArray  # [h, n, d_k] Q_i = X·W_Q[i]
    K: FloatArray  # [h, n, d_k] K_i = X·W_K[i]
    V: FloatArray  # [h, n, d_k] V_i = X·W_V[i]
    scores: FloatArray  # [h, n, n] Q_i·K_iᵀ, before scaling
    scaled: FloatArray  # [h, n, n] scores / √d_k
    weights: FloatArray  # [h, n, n] softmax of each row of scaled; rows sum to 1
    Z: FloatArray  # [h, n, d_k] weights·V_i
    concat: FloatArray  # [n, h·d_k] [Z_1 | … | Z_h]
    output: FloatArray  # [n, d_model] concat·W_O
    config: AttentionConfig
    provenance: Provenance  # how X and the weights were made, masks, special tokens, words
    # Biases, which pretrained layers have and the random layer has not: Q = X·W_Q + b_Q, …
    b_Q: FloatArray | None = None  # [h, d_k]
    b_K: FloatArray | None = None  # [h, d_k]
    b_V: FloatArray | None = None  # [h, d_k]
    b_O: FloatArray | None = None  # [d_model]
    # [n, n] bool, True where query i may attend to key j; None when every pair may (no mask).
    mask: np.ndarray | None = None
    # Cross-attention (encoder–decoder): the source words give the keys and values, ``tokens``
    # (the target words) the queries; X_source [n_source, d_model] are their embeddings. Then
    # K, V are [h, n_source, d_k] and scores, scaled, weights [h, n_target, n_source].
    source_tokens: tuple[str, ...] | None = None
    X_source: FloatArray | None = None
    # With a positional encoding (provenance.embeddings.positions), X = E + PE: E [n, d_model]
    # the token embeddings, PE [n, d_model] the encoding of positions 0 … n−1; and in
    # cross-attention X_source = E_source + PE_source, the source counting from 0 as well.
    # None when X holds no positions of attnviz's making (a model's are inside its X).
    E: FloatArray | None = None
    PE: FloatArray | None = None
    E_source: FloatArray | None = None
    PE_source: FloatArray | None = None
    # What attnviz.explain (or cross) was asked to show of this trace: heads, focus word, hidden
    # and merged tokens; a notebook display, the lesson and the heatmap start from it. And
    # every layer of the model run this layer belongs to, for overviews (None: one layer).
    view: ViewOptions | None = field(default=None, repr=False)
    model_layers: tuple[AttentionTrace, ...] | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        kind = "cross-attention" if self.is_cross else "self-attention"
        return (
            f"<AttentionTrace {kind}: {self.n_tokens} tokens, {self.n_heads} heads, "
            f"d_model {self.d_model}; weights {self.provenance.weights.describe()}>"
        )

    def _repr_html_(self) -> str:
        """The notebook view (Jupyter, VS Code, Colab): the sentence and provenance, the shown
        heads' weights, the focus word's weights and z, the heatmap; see render/notebook.py."""
        from attnviz.render.notebook import trace_html

        return trace_html(self)

    def to_html(self, *, decimals: int = 2) -> str:
        """The interactive lesson page of this trace, as ``attnviz page`` writes it: one
        self-contained HTML document (inline script and style, nothing loaded from a network),
        showing ``self.view`` and, for a model run, every layer."""
        from attnviz.lesson.options import LessonOptions
        from attnviz.render.page import page_html
        from attnviz.selection import ViewOptions, select

        if not self.tokens:
            raise AttnvizError("This trace has no words, so there is no page to draw.")
        LessonOptions(decimals=decimals)  # refuses the decimals the command line refuses
        selection = select(self, self.view or ViewOptions())
        return page_html(self.model_layers or (self,), self, selection, decimals)

    @property
    def key_tokens(self) -> tuple[str, ...]:
        """The words along the columns of scores and weights: the source words, or tokens."""
        return self.source_tokens if self.source_tokens is not None else self.tokens

    @property
    def is_cross(self) -> bool:
        return self.source_tokens is not None

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    @property
    def n_heads(self) -> int:
        return self.config.n_heads

    @property
    def d_model(self) -> int:
        return self.config.d_model

    @property
    def d_k(self) -> int:
        return self.config.d_k

    def arrays(self) -> dict[str, FloatArray]:
        """The trace's arrays by export key, in the order of the computation; biases if any."""
        arrays = {key: getattr(self, key) for key in ARRAY_KEYS}
        if self.has_biases:
            arrays.update({key: getattr(self, key) for key in BIAS_KEYS})
        if self.mask is not None:
            arrays["mask"] = self.mask
        if self.X_source is not None:
            arrays["X_source"] = self.X_source
        for key in POSITION_KEYS:
            if getattr(self, key) is not None:
                arrays[key] = getattr(self, key)
        return arrays

    @property
    def masked(self) -> np.ndarray:
        """[n, n] bool, True where a pair was masked out (−∞ before the softmax)."""
        if self.mask is None:
            return np.zeros((self.n_tokens, len(self.key_tokens)), dtype=bool)
        return ~self.mask

    @property
    def has_biases(self) -> bool:
        return self.b_Q is not None

    def config_dict(self) -> dict[str, Any]:
        """The sizes and provenance of the trace, as stored in an export's ``config``."""
        return {
            "d_model": self.d_model,
            "n_heads": self.n_heads,
            "d_k": self.d_k,
            "seed": self.config.seed,
            "embeddings": self.provenance.embeddings.describe(),
            "weights": self.provenance.weights.describe(),
            "provenance": self.provenance.to_dict(),
        }


# -- export ----------------------------------------------------------------------------------


def export_layers(traces: Sequence[AttentionTrace], path: Path | str) -> None:
    """Write several layers' traces with a leading layer axis: ``weights`` [L, h, n, n], ``X``
    [L, n, d_model] (each layer's input), …, plus b_Q, b_K, b_V, b_O when the layers have them.

    ``.npz`` or ``.json``, written atomically; the ``config`` holds each layer's provenance.
    """
    first = traces[0]
    stacked = {
        key: np.stack([t.arrays()[key] for t in traces])
        for key in first.arrays()
        if key != "mask"  # the same for every layer: stored once, [n, n]
    }
    if first.mask is not None:
        stacked["mask"] = first.mask
    config = {key: value for key, value in first.config_dict().items() if key != "provenance"}
    # The file holds every layer: its summary names the model, not layer 1; each layer's own
    # provenance is under "layers". A model has no seed.
    config["weights"] = first.provenance.weights.describe(with_layer=False)
    config["embeddings"] = "each layer's input X (see layers)"
    if not first.provenance.weights.is_drawn:
        del config["seed"]
    config["n_layers"] = len(traces)
    config["layers"] = [trace.provenance.to_dict() for trace in traces]
    _write(path, first.tokens, stacked, config)


def export_trace(trace: AttentionTrace, path: Path | str) -> None:
    """Write the trace to ``.npz`` (arrays, float64; tokens as unicode) or ``.json``.

    The file holds exactly: tokens, X, W_Q, W_K, W_V, W_O, Q, K, V, scores, scaled, weights, Z,
    concat, output and ``config`` (sizes and provenance: a JSON object, or in ``.npz`` the same
    object as JSON text); ``mask`` when one was used; biases when the layer has them; ``E`` and
    ``PE`` (X = E + PE) with a positional encoding; and for cross-attention ``X_source``,
    ``source_tokens`` and ``target_tokens`` (and ``E_source``, ``PE_source``). Written
    atomically.
    """
    words: dict[str, Sequence[str]] = {}
    if trace.source_tokens is not None:
        words = {"source_tokens": trace.source_tokens, "target_tokens": trace.tokens}
    _write(path, trace.tokens, trace.arrays(), trace.config_dict(), words)


def _export_dtype(array: np.ndarray) -> np.ndarray:
    """float64 for numbers, as documented; a mask stays boolean."""
    return array if array.dtype == bool else np.asarray(array, dtype=np.float64)


def _write(
    path: Path | str,
    tokens: Sequence[str],
    arrays: dict[str, FloatArray],
    config: dict[str, Any],
    words: dict[str, Sequence[str]] | None = None,
) -> None:

    words = words or {}
    path = Path(path)
    extension = path.suffix.lower()
    if extension == ".npz":

        def write(temporary: Path) -> None:
            with temporary.open("wb") as handle:
                everything: dict[str, np.ndarray] = {"tokens": np.array(tokens, dtype=np.str_)}
                everything.update({k: _export_dtype(a) for k, a in arrays.items()})
                everything.update({k: np.array(v, dtype=np.str_) for k, v in words.items()})
                # The metadata as JSON text in a 0-d unicode array: read back without pickle.
                everything["config"] = np.array(_json_text(config), dtype=np.str_)
                # Numbers and unicode text only, which np.savez writes without pickle.
                np.savez(handle, **cast(dict[str, Any], everything))

    elif extension == ".json":
        # json writes a float with repr(), the shortest text that reads back to the same
        # float64, so a JSON export round-trips bit for bit.
        document: dict[str, Any] = {"tokens": list(tokens)}
        document.update({key: list(value) for key, value in words.items()})
        document.update({key: _export_dtype(array).tolist() for key, array in arrays.items()})
        document["config"] = config
        text = _json_text(document)

        def write(temporary: Path) -> None:
            temporary.write_text(text, encoding="utf-8")

    else:
        raise ValueError(f"unsupported export extension {extension!r}")
    atomic_write(path, write)


def _json_text(value: Any) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (argv bytes that were not UTF-8) has no UTF-8 form; JSON's \udcxx
        # escapes keep it, and the file stays valid UTF-8 JSON.
        text = json.dumps(value, ensure_ascii=True)
    return text


# -- import ----------------------------------------------------------------------------------


def read_provenance(config: Any, path: Path | None = None) -> tuple[Provenance, ...]:
    """The provenance an export's ``config`` records, one per layer; () when it records none.

    ``config`` is the JSON object of a ``.json`` export or the 0-d text array of an ``.npz``.
    """
    import json

    if isinstance(config, np.ndarray):
        if config.dtype.kind != "U" or config.ndim != 0:
            return ()
        try:
            config = json.loads(str(config))
        except (json.JSONDecodeError, RecursionError):
            raise FileProblem(f"{path}: its config is not valid JSON.") from None
    if not isinstance(config, dict):
        return ()
    try:
        if isinstance(config.get("layers"), list):
            return tuple(Provenance.from_dict(layer) for layer in config["layers"])
        if "provenance" in config:
            return (Provenance.from_dict(config["provenance"]),)
    except AttnvizError as error:
        raise FileProblem(f"{path}: {error.message}") from None
    return ()


def layers_in(value: Any, ndim: int) -> int | None:
    """How many layers an array read from a file holds: None for one layer's array of ``ndim``
    dimensions; with one dimension more (a model's export, see ``export_layers``) the length of
    its leading axis. Anything else is None too, for the loader to refuse with its shape."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return None
    return int(array.shape[0]) if array.ndim == ndim + 1 and array.dtype.kind in "fiu" else None


def export_layer(n_layers: int, layer: int | None, what: str, model: str | None = None) -> int:
    """The index (from 0) of ``layer`` (from 1, as --layer numbers them) in a file holding a
    model's ``n_layers`` layers; ``what`` names the file ("weights file m.npz"). Without a
    layer, or with one the file does not have, AttnvizError says which to choose."""
    choose = f"choose one with --layer 1..{n_layers}"
    if layer is None:
        of = f" of {model}" if model else ""
        raise AttnvizError(f"{what[:1].upper()}{what[1:]} holds {n_layers} layers{of}; {choose}.")
    if not 1 <= layer <= n_layers:
        raise AttnvizError(f"--layer {layer}: {what} holds {n_layers} layers; {choose}.")
    return layer - 1


class Pieces(NamedTuple):
    """A sentence as a model's tokenizer cut it, as its export records it."""

    tokens: tuple[str, ...]  # "[CLS]", "i", "am", "good", "[SEP]"
    special: tuple[int, ...]  # the positions of [CLS], [SEP] and the like


def recorded_pieces(path: Path, sentence: str) -> Pieces | None:
    """The tokens of a model's export of ``sentence``: its tokenizer's pieces, one per row of
    the X it holds, which attnviz's own tokenizer would not cut the sentence into. None for
    any other file or sentence (loading it says what is wrong)."""
    recorded = _tokens_and_provenance(path)
    if recorded is None or not sentence:
        return None
    tokens, made = recorded
    match = next((provenance for provenance in made if provenance.sentence == sentence), None)
    return None if match is None else Pieces(tokens, match.special)


def recorded_sentence(path: Path) -> str | None:
    """The sentence, as written, that a model's export was made for; None for other files."""
    recorded = _tokens_and_provenance(path)
    if recorded is None:
        return None
    return next((p.sentence for p in recorded[1] if p.sentence), None)


def _tokens_and_provenance(path: Path) -> tuple[tuple[str, ...], tuple[Provenance, ...]] | None:
    """An export's tokens and provenance, without reading its arrays from an ``.npz`` (a
    ``.json`` is read whole); None for a file that is not an attnviz export, or is broken."""
    extension = path.suffix.lower()
    try:
        if extension == ".npz":
            data: Any = load_npz(path, "Trace", keys=("tokens", "config"))
        elif extension == ".json":
            start = b'{"tokens":'  # how every .json export starts (see _write)
            with open_regular(path, "Trace") as handle:  # never a FIFO, which would block
                if handle.read(len(start)) != start:
                    return None
            data = load_json(path, "Trace").value
        else:
            return None
        if not isinstance(data, dict) or "tokens" not in data:
            return None
        return _words(data["tokens"], "tokens", path), read_provenance(data.get("config"), path)
    except (AttnvizError, OSError):
        return None


def load_trace(path: Path | str) -> tuple[AttentionTrace, ...]:
    """Read a trace written by ``export_trace`` (one layer) or ``export_layers`` (a leading
    layer axis) back, provenance included: one AttentionTrace per layer.

    A file without attnviz's provenance (made by hand, or by an older attnviz) is read too; its
    provenance then says only that X and the weights came from ``path``.
    """
    path = Path(path)
    extension = path.suffix.lower()
    if extension == ".npz":
        keys: tuple[str, ...] = ("tokens", "source_tokens", "mask", "config", *ARRAY_KEYS)
        keys += (*BIAS_KEYS, "X_source", *POSITION_KEYS)  # what a trace holds: no other is read
        data: dict[str, Any] = dict(load_npz(path, "Trace", keys))
    elif extension == ".json":
        value = load_json(path, "Trace").value
        if not isinstance(value, dict):
            raise FileProblem(f"Trace file {path} must hold a JSON object, as --export writes.")
        data = value
    else:
        raise FileProblem(f"Trace file {path}: use an .npz or .json made with --export.")
    missing = [key for key in ("tokens", *ARRAY_KEYS) if key not in data]
    if missing:
        raise FileProblem(f"Trace file {path} lacks {', '.join(missing)}; export it with --export.")
    tokens = _words(data["tokens"], "tokens", path)
    try:
        layered = np.asarray(data["X"], dtype=np.float64).ndim == 3  # a model's layers
    except (TypeError, ValueError, OverflowError):
        raise FileProblem(f"Trace file {path}: X is not an array of numbers.") from None
    arrays = {
        key: finite_matrix(data[key], name=key, source=path, ndim=_ndim(key) + layered)
        for key in (*ARRAY_KEYS, *BIAS_KEYS, "X_source", *POSITION_KEYS)
        if key in data
    }
    mask = None
    if "mask" in data:
        try:
            mask = np.asarray(data["mask"], dtype=bool)
        except (TypeError, ValueError):
            raise FileProblem(f"Trace file {path}: mask is not an array of true/false.") from None
    n_layers = arrays["X"].shape[0] if layered else 1
    provenances = read_provenance(data.get("config"), path) or tuple(
        _file_provenance(path) for _ in range(n_layers)
    )
    if len(provenances) != n_layers:
        raise FileProblem(f"Trace file {path}: its config describes another number of layers.")
    source_tokens = None
    if "source_tokens" in data:
        source_tokens = _words(data["source_tokens"], "source_tokens", path)
    traces = []
    for layer, provenance in enumerate(provenances):
        layer_arrays = {key: a[layer] if layered else a for key, a in arrays.items()}
        traces.append(_trace_from(path, tokens, layer_arrays, provenance, mask, source_tokens))
    return tuple(traces)


def _words(value: Any, name: str, path: Path) -> tuple[str, ...]:
    """A list of words from a file: strings, one dimension."""
    try:
        words = np.asarray(value)
    except (TypeError, ValueError):
        words = np.asarray(None)
    if words.ndim != 1 or words.dtype.kind not in "US":
        raise FileProblem(f"Trace file {path}: {name} is not a list of words.")
    return tuple(str(word) for word in words)


_MATRICES = frozenset(
    {"X", "W_O", "concat", "output", "b_Q", "b_K", "b_V", "X_source", *POSITION_KEYS}
)


def _ndim(key: str) -> int:
    """Dimensions of a one-layer trace's array: b_O is a vector, heads add an axis."""
    return 1 if key == "b_O" else 2 if key in _MATRICES else 3


def _file_provenance(path: Path) -> Provenance:
    return Provenance(
        embeddings=EmbeddingsOrigin(EmbeddingsKind.FILE, path=str(path), vocabulary=False),
        weights=WeightsOrigin(WeightsKind.FILE, path=str(path)),
        masking=Masking(),
    )


def _trace_from(
    path: Path,
    tokens: tuple[str, ...],
    arrays: dict[str, FloatArray],
    provenance: Provenance,
    mask: np.ndarray | None,
    source_tokens: tuple[str, ...] | None,
) -> AttentionTrace:
    """One layer's arrays as a trace, every shape checked against the others."""
    n_heads, d_model, d_k = arrays["W_Q"].shape
    n_queries = len(tokens)
    n_keys = len(source_tokens) if source_tokens is not None else n_queries
    expected = {
        "X": (n_queries, d_model),
        "W_Q": (n_heads, d_model, d_k),
        "W_K": (n_heads, d_model, d_k),
        "W_V": (n_heads, d_model, d_k),
        "W_O": (n_heads * d_k, d_model),
        "Q": (n_heads, n_queries, d_k),
        "K": (n_heads, n_keys, d_k),
        "V": (n_heads, n_keys, d_k),
        "scores": (n_heads, n_queries, n_keys),
        "scaled": (n_heads, n_queries, n_keys),
        "weights": (n_heads, n_queries, n_keys),
        "Z": (n_heads, n_queries, d_k),
        "concat": (n_queries, n_heads * d_k),
        "output": (n_queries, d_model),
        "b_Q": (n_heads, d_k),
        "b_K": (n_heads, d_k),
        "b_V": (n_heads, d_k),
        "b_O": (d_model,),
        "X_source": (n_keys, d_model),
        "E": (n_queries, d_model),
        "PE": (n_queries, d_model),
        "E_source": (n_keys, d_model),
        "PE_source": (n_keys, d_model),
    }
    for key, array in arrays.items():
        if array.shape != expected[key]:
            raise FileProblem(
                f"Trace file {path}: {key} has shape {list(array.shape)}, expected "
                f"{list(expected[key])} from its tokens and W_Q."
            )
    positional = {key for key in POSITION_KEYS if key in arrays}
    wanted = set()
    if provenance.embeddings.positions is not Positions.none:
        wanted = {"E", "PE", "E_source", "PE_source"} if "X_source" in arrays else {"E", "PE"}
    if positional != wanted:
        said = f"--positions {provenance.embeddings.positions.value}"
        raise FileProblem(
            f"Trace file {path}: its provenance says {said} but it holds "
            f"{', '.join(sorted(positional)) or 'no E and PE'}; export it anew with --export."
        )
    if mask is not None and mask.shape != (n_queries, n_keys):
        raise FileProblem(f"Trace file {path}: mask has shape {list(mask.shape)}.")
    if n_heads * d_k != d_model:
        raise FileProblem(
            f"Trace file {path}: W_Q has shape {[n_heads, d_model, d_k]}; heads·d_k must equal "
            "d_model."
        )
    positions = [*provenance.special, *(p for group in provenance.word_groups for p in group)]
    grouped = sorted(p for group in provenance.word_groups for p in group)
    if any(not 0 <= p < n_queries for p in positions) or (
        provenance.word_groups and grouped != list(range(n_queries))
    ):
        raise FileProblem(
            f"Trace file {path}: its provenance names token positions it does not have."
        )
    try:
        config = AttentionConfig(d_model=d_model, n_heads=n_heads, seed=provenance_seed(provenance))
    except AttnvizError as error:
        raise FileProblem(f"Trace file {path}: {error.message}") from None
    return AttentionTrace(
        tokens=tokens,
        **cast(dict[str, Any], {key: frozen_array(array) for key, array in arrays.items()}),
        config=config,
        provenance=provenance,
        mask=None if mask is None else frozen_mask(mask),
        source_tokens=source_tokens,
    )


def provenance_seed(provenance: Provenance) -> int:
    """The seed a trace's config records: that of its random weights or embeddings, else 0."""
    for seed in (provenance.weights.seed, provenance.embeddings.seed):
        if seed is not None:
            return seed
    return 0
