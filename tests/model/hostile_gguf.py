"""GGUF files an attacker could write, made from tests/model/tiny_llama.gguf: its metadata with
each value's GGUF type, its tensor records and its tensors' bytes, changed and written back
byte by byte (``write_gguf``), so that a test can give a key a value of another type, or point
many tensor records at the same bytes, which no GGUF writer would do."""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

TINY = Path(__file__).resolve().parent / "tiny_llama.gguf"

# GGUF's value types (gguf.GGUFValueType), by name.
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL = 0, 1, 2, 3, 4, 5, 6, 7
STRING, ARRAY, UINT64, INT64, FLOAT64 = 8, 9, 10, 11, 12
FORMATS = {
    UINT8: "<B",
    INT8: "<b",
    UINT16: "<H",
    INT16: "<h",
    UINT32: "<I",
    INT32: "<i",
    FLOAT32: "<f",
    BOOL: "<?",
    UINT64: "<Q",
    INT64: "<q",
    FLOAT64: "<d",
}
ALIGNMENT = 32


@dataclass(frozen=True)
class Value:
    """A metadata value and its GGUF type; an array's ``item_type`` says what its items are."""

    type_id: int
    value: Any
    item_type: int | None = None


@dataclass(frozen=True)
class Record:
    """A tensor record: its name, shape in numpy's order, ggml type and offset in the data."""

    name: str
    shape: tuple[int, ...]
    type_id: int
    offset: int


@dataclass(frozen=True)
class Parts:
    """What a GGUF file holds: typed metadata (in order), tensor records, the tensors' bytes."""

    metadata: dict[str, Value]
    records: tuple[Record, ...]
    data: bytes

    def with_values(self, **values: Value) -> Parts:
        """These parts with metadata keys set (``general__architecture`` for general.architecture:
        dots written as double underscores)."""
        metadata = dict(self.metadata)
        for name, value in values.items():
            metadata[name.replace("__", ".")] = value
        return replace(self, metadata=metadata)

    def with_key(self, key: str, value: Value | None) -> Parts:
        """These parts with ``key`` set to ``value``, or removed when it is None."""
        metadata = dict(self.metadata)
        if value is None:
            metadata.pop(key, None)
        else:
            metadata[key] = value
        return replace(self, metadata=metadata)


def tiny_parts() -> Parts:
    """tests/model/tiny_llama.gguf taken apart."""
    from gguf import GGUFReader, GGUFValueType

    reader = GGUFReader(TINY)
    metadata = {}
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        types = [int(t) for t in field.types]
        value = field.contents()
        if types[0] == GGUFValueType.ARRAY:
            metadata[key] = Value(ARRAY, list(value), types[1])
        else:
            metadata[key] = Value(types[0], value)
    start = min(int(tensor.data_offset) for tensor in reader.tensors)
    records = tuple(
        Record(
            str(tensor.name),
            tuple(int(d) for d in reversed(tensor.shape)),
            int(tensor.tensor_type),
            int(tensor.data_offset) - start,
        )
        for tensor in reader.tensors
    )
    return Parts(metadata, records, TINY.read_bytes()[start:])


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def _scalar(type_id: int, value: Any) -> bytes:
    if type_id == STRING:
        return _string(value)
    return struct.pack(FORMATS[type_id], value)


def _value(value: Value) -> bytes:
    if value.type_id != ARRAY:
        return _scalar(value.type_id, value.value)
    assert value.item_type is not None
    items = list(value.value)
    head = struct.pack("<IQ", value.item_type, len(items))
    return head + b"".join(_scalar(value.item_type, item) for item in items)


def gguf_bytes(parts: Parts) -> bytes:
    """A GGUF v3 file of ``parts``, records written as they are (offsets never checked)."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(parts.records), len(parts.metadata)))
    for key, value in parts.metadata.items():
        out += _string(key) + struct.pack("<I", value.type_id) + _value(value)
    for record in parts.records:
        dims = tuple(reversed(record.shape))
        out += _string(record.name) + struct.pack("<I", len(dims))
        out += struct.pack(f"<{len(dims)}Q", *dims)
        out += struct.pack("<IQ", record.type_id, record.offset)
    out += bytes(-len(out) % ALIGNMENT)
    return bytes(out) + parts.data


def write_gguf(path: Path, parts: Parts) -> Path:
    path.write_bytes(gguf_bytes(parts))
    return path


def layer_records(parts: Parts, layer: int) -> list[Record]:
    """Layer 1's tensor records renamed for layer ``layer`` (from 0), pointing at its bytes."""
    prefix = "blk.0."
    return [
        replace(record, name=f"blk.{layer}." + record.name.removeprefix(prefix))
        for record in parts.records
        if record.name.startswith(prefix)
    ]


def with_layers(parts: Parts, n_layers: int, *, shared: bool) -> Parts:
    """``parts`` claiming ``n_layers`` layers (block_count). ``shared``: every layer's records
    point at layer 1's bytes (a file of a few kilobytes a layer); else each layer gets its own
    copy of layer 1's bytes (a file as large as such a model's)."""
    base = [record for record in parts.records if not record.name.startswith("blk.")]
    layer_0 = layer_records(parts, 0)
    records: list[Record] = [*base, *layer_0]
    data = bytearray(parts.data)
    if not shared:
        # Layer 1's bytes, copied once per layer after the file's own data.
        first = min(record.offset for record in layer_0)
        last = max(record.offset for record in layer_0)
        ends = [r.offset for r in parts.records if r.offset > last] or [len(parts.data)]
        chunk = bytes(parts.data[first : min(ends)])
        chunk += bytes(-len(chunk) % ALIGNMENT)
    for layer in range(1, n_layers):
        renamed = layer_records(parts, layer)
        if not shared:
            moved = len(data) + (-len(data) % ALIGNMENT) - first
            data += bytes(-len(data) % ALIGNMENT) + chunk
            renamed = [replace(record, offset=record.offset + moved) for record in renamed]
        records += renamed
    metadata = dict(parts.metadata)
    metadata["llama.block_count"] = Value(UINT32, n_layers)
    return Parts(metadata, tuple(records), bytes(data))
