"""A trace's export files: ``export_trace`` and ``export_layers`` write them, ``load_trace`` reads
them back (provenance included), and the loaders of weights and embeddings read a model's
export through ``read_provenance``, ``layers_in`` and ``export_layer``.

``.npz`` (numbers and unicode text only, read back without pickle) or ``.json`` (floats as the
shortest text that reads back bit for bit); written atomically.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple, cast

import numpy as np

from attnviz.arguments import bounded, instance, output_file
from attnviz.arguments import path as checked_path
from attnviz.arrays import FloatArray
from attnviz.config import AttentionConfig
from attnviz.errors import AttnvizError, FileProblem, OutputProblem, clipped, option
from attnviz.files import atomic_write, finite_matrix, load_json, load_npz, open_regular
from attnviz.limits import check_export_size, check_json_size
from attnviz.positions import Positions, Rope
from attnviz.provenance import (
    EmbeddingsKind,
    EmbeddingsOrigin,
    Masking,
    Provenance,
    WeightsKind,
    WeightsOrigin,
    require_masking,
    require_positions,
)
from attnviz.trace import (
    ARRAY_KEYS,
    BIAS_KEYS,
    LATENT_KEYS,
    LATENT_ROPE_KEYS,
    POSITION_KEYS,
    ROPE_KEYS,
    AttentionTrace,
    frozen_array,
    frozen_mask,
    provenance_seed,
)
from attnviz.trace_checks import (
    check_layers,
    check_weights,
    expected_shapes,
    latent_shapes,
    read_mask,
    within_window,
)

EXPORT_EXTENSIONS = (".npz", ".json")


# -- export ----------------------------------------------------------------------------------


def export_layers(traces: Sequence[AttentionTrace], path: Path | str) -> None:
    """Write several layers' traces with a leading layer axis: ``weights`` [L, h, n, n], ``X``
    [L, n, d_model] (each layer's input), …, plus b_Q, b_K, b_V, b_O when the layers have them.

    ``.npz`` or ``.json``, written atomically; the ``config`` holds each layer's provenance.
    """
    traces = bounded("traces", traces, "explain(…, model=…).layers")
    if isinstance(traces, AttentionTrace) or not traces:
        raise AttnvizError(
            "export_layers takes a list of one or more traces, e.g. attnviz.explain(…, "
            "model=…).layers; for one trace use export_trace."
        )
    for index, trace in enumerate(traces):
        instance(f"traces[{index}]", trace, AttentionTrace, "a trace, e.g. explain(…).trace")
    check_export_size(traces, output_file("path", path))  # before the layers are stacked
    first, mask = traces[0], check_layers(traces)  # each layer's: within_window of its own
    stacked = {
        key: np.stack([t.arrays()[key] for t in traces])
        for key in first.arrays()
        if key != "mask"  # the same for every layer: stored once, [n, n]
    }
    if mask is not None:
        stacked["mask"] = mask
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
    ``source_tokens`` and ``target_tokens`` (and ``E_source``, ``PE_source``). With rotary
    positions, ``Q_rotated`` and ``K_rotated``, and the config's ``rope`` (base, pairing); with
    grouped-query attention W_K, W_V, K, V (and b_K, b_V) have G heads, and the config says
    ``n_kv_heads`` and ``kv_head_of_each_head`` (from 0); with latent attention W_DKV, W_UK,
    W_UV, c, scores_absorbed and output_absorbed, and the config's ``d_c``; and with its
    decoupled rotary positions W_QR, W_KR, Q_R and K_R, and the config's ``d_rope``. Written
    atomically.
    """
    instance("trace", trace, AttentionTrace, "a trace, e.g. explain(…).trace")
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
    path = output_file("path", path)
    check_json_size(arrays.values(), tokens, path, layers=len(config.get("layers", ())) or 1)
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
        raise OutputProblem(
            f"An export is .npz or .json, not {clipped(extension) or 'a file without extension'}; "
            "give a path ending in .npz or .json."
        )
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
    choose = f"choose one with {option('layer', metavar=f'1..{n_layers}')}"
    if layer is None:
        of = f" of {model}" if model else ""
        raise AttnvizError(f"{what[:1].upper()}{what[1:]} holds {n_layers} layers{of}; {choose}.")
    if not 1 <= layer <= n_layers:
        raise AttnvizError(f"{option('layer', layer)}: {what} holds {n_layers} layers; {choose}.")
    return layer - 1


class Pieces(NamedTuple):
    """A sentence as a model's tokenizer cut it, as its export records it."""

    tokens: tuple[str, ...]  # "[CLS]", "i", "am", "good", "[SEP]"
    special: tuple[int, ...]  # the positions of [CLS], [SEP] and the like


def recorded_pieces(path: Path, sentence: str) -> Pieces | None:
    """The tokens of a model's export of ``sentence``: its tokenizer's pieces, one per row of
    the X it holds, which attnviz's own tokenizer would not cut the sentence into. None for
    any other file or sentence (loading it says what is wrong)."""
    recorded = _tokens_and_provenance(path, strict=True)
    if recorded is None or not sentence:
        return None
    tokens, made = recorded
    match = next((provenance for provenance in made if provenance.sentence == sentence), None)
    if match is None:
        return None
    require_positions(f"Trace file {path}", match, len(tokens))
    return Pieces(tokens, match.special)


def recorded_sentence(path: Path) -> str | None:
    """The sentence, as written, that a model's export was made for; None for other files."""
    recorded = _tokens_and_provenance(path)
    if recorded is None:
        return None
    return next((p.sentence for p in recorded[1] if p.sentence), None)


def _tokens_and_provenance(
    path: Path, *, strict: bool = False
) -> tuple[tuple[str, ...], tuple[Provenance, ...]] | None:
    """An export's tokens and provenance, without reading its arrays from an ``.npz`` (a
    ``.json`` is read whole); None for a file that is not an attnviz export, or is broken.
    ``strict``: an export whose provenance is broken raises FileProblem saying so."""
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
        tokens = _words(data["tokens"], "tokens", path)
    except (AttnvizError, OSError):
        return None
    try:
        return tokens, read_provenance(data.get("config"), path)
    except AttnvizError:
        if strict:
            raise
        return None


def load_trace(path: Path | str) -> tuple[AttentionTrace, ...]:
    """Read a trace written by ``export_trace`` (one layer) or ``export_layers`` (a leading
    layer axis) back, provenance included: one AttentionTrace per layer.

    A file without attnviz's provenance (made by hand, or by an older attnviz) is read too; its
    provenance then says only that X and the weights came from ``path``.
    """
    path = checked_path("path", path)
    extension = path.suffix.lower()
    if extension == ".npz":
        keys: tuple[str, ...] = ("tokens", "source_tokens", "mask", "config", *ARRAY_KEYS)
        # What a trace holds: no other key is read.
        keys += (
            *BIAS_KEYS,
            "X_source",
            *POSITION_KEYS,
            *ROPE_KEYS,
            *LATENT_KEYS,
            *LATENT_ROPE_KEYS,
        )
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
        for key in (
            *ARRAY_KEYS,
            *BIAS_KEYS,
            "X_source",
            *POSITION_KEYS,
            *ROPE_KEYS,
            *LATENT_KEYS,
            *LATENT_ROPE_KEYS,
        )
        if key in data
    }
    mask = read_mask(data["mask"], path) if "mask" in data else None
    n_layers = arrays["X"].shape[0] if layered else 1
    provenances = read_provenance(data.get("config"), path) or tuple(
        _file_provenance(path) for _ in range(n_layers)
    )
    if len(provenances) != n_layers:
        raise FileProblem(f"Trace file {path}: its config describes another number of layers.")
    source_tokens = None
    if "source_tokens" in data:
        source_tokens = _words(data["source_tokens"], "source_tokens", path)
    rope = _rope(data.get("config"), path)
    traces = []
    for layer, provenance in enumerate(provenances):
        layer_arrays = {key: a[layer] if layered else a for key, a in arrays.items()}
        where = f"Trace file {path}, layer {layer + 1}" if layered else f"Trace file {path}"
        own = within_window(mask, provenance.masking.window) if layered else mask
        trace = _trace_from(path, tokens, layer_arrays, provenance, own, source_tokens, rope)
        check_weights(where, trace)
        traces.append(trace)
    return tuple(traces)


def _rope(config: Any, path: Path) -> Rope | None:
    """The rotary positions an export's config records (base, pairing); None without."""
    import json

    if isinstance(config, np.ndarray) and config.dtype.kind == "U" and config.ndim == 0:
        try:
            config = json.loads(str(config))
        except (json.JSONDecodeError, RecursionError):
            return None  # read_provenance has said so already
    recorded = config.get("rope") if isinstance(config, dict) else None
    if recorded is None:
        return None
    base, pairing = (
        recorded.get(k) if isinstance(recorded, dict) else None for k in ("base", "pairing")
    )
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not isinstance(pairing, str):
        raise FileProblem(f"Trace file {path}: its config's rope needs a base and a pairing.")
    try:
        return Rope(float(base), pairing)
    except AttnvizError as error:
        raise FileProblem(f"Trace file {path}: {error.message}") from None


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
    | {"W_DKV", "c", "output_absorbed", "W_KR", "K_R"}
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


def _check_positions(
    path: Path, arrays: dict[str, FloatArray], provenance: Provenance, rope: Rope | None
) -> None:
    """E and PE exactly when the provenance says sinusoidal; Q_rotated and K_rotated exactly
    when the config records rotary positions."""
    positional = {key for key in POSITION_KEYS if key in arrays}
    wanted = set()
    if provenance.embeddings.positions is Positions.sinusoidal:
        wanted = {"E", "PE", "E_source", "PE_source"} if "X_source" in arrays else {"E", "PE"}
    if positional != wanted:
        said = option("positions", provenance.embeddings.positions)
        raise FileProblem(
            f"Trace file {path}: its provenance says {said} but it holds "
            f"{', '.join(sorted(positional)) or 'no E and PE'}; export it anew with --export."
        )
    if (rope is not None) != all(key in arrays for key in ROPE_KEYS) or (
        rope is None and any(key in arrays for key in ROPE_KEYS)
    ):
        raise FileProblem(
            f"Trace file {path}: rotary positions need the config's rope and Q_rotated and "
            "K_rotated together; export it anew with --export."
        )


def _trace_from(
    path: Path,
    tokens: tuple[str, ...],
    arrays: dict[str, FloatArray],
    provenance: Provenance,
    mask: np.ndarray | None,
    source_tokens: tuple[str, ...] | None,
    rope: Rope | None = None,
) -> AttentionTrace:
    """One layer's arrays as a trace, every shape checked against the others."""
    n_heads, d_model, d_k = arrays["W_Q"].shape
    g = arrays["W_K"].shape[0] if arrays["W_K"].ndim == 3 else n_heads  # key/value heads
    if g <= 0 or n_heads % g:
        raise FileProblem(
            f"Trace file {path}: W_K has {g} key/value heads, which does not divide W_Q's "
            f"{n_heads} heads."
        )
    n_queries = len(tokens)
    n_keys = len(source_tokens) if source_tokens is not None else n_queries
    expected = expected_shapes(n_heads, g, d_model, d_k, n_queries, n_keys)
    expected.update(latent_shapes(path, arrays, rope, g))
    for key, array in arrays.items():
        if array.shape != expected[key]:
            raise FileProblem(
                f"Trace file {path}: {key} has shape {list(array.shape)}, expected "
                f"{list(expected[key])} from its tokens and W_Q."
            )
    _check_positions(path, arrays, provenance, rope)
    if mask is not None and mask.shape != (n_queries, n_keys):
        raise FileProblem(f"Trace file {path}: mask has shape {list(mask.shape)}.")
    if n_heads * d_k != d_model:
        raise FileProblem(
            f"Trace file {path}: W_Q has shape {[n_heads, d_model, d_k]}; heads·d_k must equal "
            "d_model."
        )
    require_positions(f"Trace file {path}", provenance, n_queries)
    require_masking(f"Trace file {path}", provenance.masking, mask, n_queries, n_keys)
    try:
        config = AttentionConfig(
            d_model=d_model, n_heads=n_heads, seed=provenance_seed(provenance), n_kv_heads=g
        )
    except AttnvizError as error:
        raise FileProblem(f"Trace file {path}: {error.message}") from None
    return AttentionTrace(
        tokens=tokens,
        **cast(dict[str, Any], {key: frozen_array(array) for key, array in arrays.items()}),
        config=config,
        provenance=provenance,
        mask=None if mask is None else frozen_mask(mask),
        source_tokens=source_tokens,
        rope=rope,
    )
