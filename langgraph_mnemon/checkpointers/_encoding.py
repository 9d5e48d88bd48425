"""How channel values, writes and metadata become rows, and back (serde lives here only).

A channel value is stored as one blob ``(serde type, bytes)`` keyed by its version. A *list*
value whose elements serialize to at least 1 KiB (a message history, typically) is stored as
the list of its elements instead (blob type ``"mnemon.items"``): each element is serialized on
its own and kept once per thread in ``mnemos_lg_items``, unique by a 16-byte digest; the blob
holds one 24-byte entry per element (the element row's integer id, then its digest). A growing
message list thus costs one new element per step instead of the whole list, and reading it back
is a primary-key lookup per element.

Re-serializing the unchanged elements of a growing list is most of a put's cost, so the codec
remembers, per ``(thread, ns, channel)``, the elements of the list it last stored: an element
that is the *same object* (identity, held by the cache so its id cannot be reused) *and* whose
state packs to the same bytes as then (``ormsgpack`` over the pydantic model's ``__dict__`` and
extras, a few microseconds in Rust, so an in-place edit at any depth is seen) reuses its stored
bytes and digest. Anything else (other element types, states holding objects ``ormsgpack``
cannot pack) is serialized as before. Reading works the same way round: the codec keeps the
object it first decoded from an element's bytes; while that object is unchanged (same
fingerprint), reading the bytes again hands out a clone rebuilt from the fingerprint (fresh
containers, nothing shared) instead of running the serde's constructor and validation again.

Digests (SHA-256 of the serde type and bytes, truncated to 16 bytes) are computed over the serde
output when the serde is a ``JsonPlusSerializer`` (stable across processes). With an
``EncryptedSerializer`` over a ``JsonPlusSerializer`` the digest is a keyed hash of the plaintext
with a key that only lives in this process (the database never holds
anything that could confirm a guessed plaintext); elements are encrypted one by one. Any other
serde stores whole values.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import ormsgpack
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from langgraph_mnemon.errors import InvalidInputError, StorageError

__all__ = [
    "EMPTY_TYPE",
    "ITEMS_TYPE",
    "BlobValue",
    "ChannelCodec",
    "EncodedItem",
    "ItemCache",
    "Known",
    "checkpoint_skeleton",
    "clonable",
    "clone",
    "entries",
    "fingerprint",
    "metadata_json",
    "new_digest_key",
    "pack_entries",
    "uses_delta_channels",
]

EMPTY_TYPE = "empty"
ITEMS_TYPE = "mnemon.items"
DIGEST_SIZE = 16
ENTRY = struct.Struct(">Q16s")
CHUNK_MIN_ITEMS = 2
CHUNK_MIN_BYTES = 1024
ITEM_CACHE_BYTES = 32 * 1024 * 1024
RECENT_MAX_LISTS = 256
RECENT_MAX_BYTES = 16 * 1024 * 1024
RECENT_TOTAL_BYTES = 64 * 1024 * 1024
DECODED_MAX_BYTES = 64 * 1024 * 1024
_DELTA_METADATA_KEYS = ("counters_since_delta_snapshot", "delta_writes_versioned")


@dataclass(slots=True)
class EncodedItem:
    """One list element: its digest, and how to produce the stored ``(type, data)``."""

    digest: bytes
    type: str
    data: bytes
    encrypt: Any = None  # cipher for lazily encrypted elements

    def stored(self) -> tuple[str, bytes]:
        """The ``(type, data)`` to store, encrypted when the serde encrypts."""
        if self.encrypt is None:
            return self.type, self.data
        name, ciphertext = self.encrypt.encrypt(self.data)
        return f"{self.type}+{name}", ciphertext


@dataclass(slots=True)
class BlobValue:
    """The encoded value of one channel version."""

    channel: str
    version: str
    type: str
    blob: bytes | None
    items: list[EncodedItem] = field(default_factory=list)
    # Per element: the object and its state fingerprint (None: not reusable by identity).
    sources: list[tuple[Any, bytes | None]] = field(default_factory=list)


# What the codec remembers of a stored list: element id(obj) -> (obj, fingerprint, item) for
# elements reusable by identity, element bytes -> item for the others.
Known = Mapping[int | bytes, Any]


def fingerprint(value: Any) -> bytes | None:
    """The packed state of a pydantic model element (``None`` when it cannot be packed
    without the serde's hooks, e.g. it holds a nested model: such elements are re-serialized)."""
    state = getattr(value, "__dict__", None)
    if state is None or not hasattr(value, "__pydantic_fields_set__"):
        return None
    try:
        return ormsgpack.packb(
            (state, getattr(value, "__pydantic_extra__", None)),
            option=ormsgpack.OPT_NON_STR_KEYS,
        )
    except (TypeError, ValueError, ormsgpack.MsgpackEncodeError):
        return None


_ATOMS = (str, int, float, bool, type(None), bytes)
_set = object.__setattr__


def _plain_state(value: Any) -> bool:
    """Whether ``value`` comes back from a msgpack round trip as equal objects of the same
    types (dicts with string keys, lists, atoms: no tuples, no other objects)."""
    kind = type(value)
    if kind in _ATOMS:
        return True
    if kind is list:
        return all(_plain_state(v) for v in value)
    if kind is dict:
        return all(type(k) is str and _plain_state(v) for k, v in value.items())
    return False


def clonable(value: Any) -> bool:
    """Whether :func:`clone` reproduces ``value`` exactly (a pydantic model whose fields and
    extras are plain data, without private attributes)."""
    if getattr(value, "__pydantic_private__", None):
        return False
    state = getattr(value, "__dict__", None)
    return state is not None and _plain_state(
        [state, getattr(value, "__pydantic_extra__", None) or {}]
    )


def clone(template: Any, mark: bytes) -> Any:
    """A fresh copy of a :func:`clonable` model from its fingerprint: nothing mutable is
    shared with ``template`` (the state is rebuilt by ``ormsgpack``, in Rust)."""
    state, extra = ormsgpack.unpackb(mark)
    copy = object.__new__(type(template))
    _set(copy, "__dict__", state)
    _set(copy, "__pydantic_extra__", extra)
    _set(copy, "__pydantic_fields_set__", set(template.__pydantic_fields_set__))
    _set(copy, "__pydantic_private__", None)
    return copy


def _array_header(count: int) -> bytes:
    if count < 16:
        return bytes([0x90 | count])
    if count < 1 << 16:
        return b"\xdc" + struct.pack(">H", count)
    return b"\xdd" + struct.pack(">I", count)


class ChannelCodec:
    """Serde-aware encoder / decoder of channel values and writes for one serializer."""

    def __init__(self, serde: SerializerProtocol, digest_key: bytes) -> None:
        self.serde = serde
        self._plain = isinstance(serde, JsonPlusSerializer)
        self._encrypted = isinstance(serde, EncryptedSerializer) and isinstance(
            serde.serde, JsonPlusSerializer
        )
        self._key = digest_key
        self._recent: OrderedDict[tuple[str, str, str], tuple[Known, int]] = OrderedDict()
        self._recent_bytes = 0
        self._recent_lock = threading.Lock()
        # Element bytes -> (the object first decoded from them, its fingerprint then): while
        # the object is unchanged, reading the bytes again clones it instead of decoding.
        self._decoded: OrderedDict[bytes, tuple[Any, bytes]] = OrderedDict()
        self._decoded_bytes = 0

    def known(self, thread_id: str, ns: str, channel: str) -> Known:
        """What this codec remembers of the list it last stored there (see :data:`Known`)."""
        with self._recent_lock:
            entry = self._recent.get((thread_id, ns, channel))
        return entry[0] if entry is not None else {}

    def remember(self, thread_id: str, ns: str, value: BlobValue) -> None:
        """Keep a stored list's elements for the next put of the same channel."""
        known: dict[int | bytes, Any] = {}
        size = 0
        for item, (obj, mark) in zip(value.items, value.sources, strict=True):
            if mark is None:
                known[item.data] = item
                size += len(item.data)
            else:
                known[id(obj)] = (obj, mark, item)
                size += len(item.data) + len(mark)
        self._keep((thread_id, ns, value.channel), known, size)

    def _keep(self, key: tuple[str, str, str], known: Known, size: int) -> None:
        if size > RECENT_MAX_BYTES:
            return
        with self._recent_lock:
            previous = self._recent.pop(key, None)
            if previous is not None:
                self._recent_bytes -= previous[1]
            self._recent[key] = (known, size)
            self._recent_bytes += size
            while self._recent and (
                len(self._recent) > RECENT_MAX_LISTS or self._recent_bytes > RECENT_TOTAL_BYTES
            ):
                _, (_, dropped) = self._recent.popitem(last=False)
                self._recent_bytes -= dropped

    def _remember_read(
        self,
        key: tuple[str, str, str],
        values: list[Any],
        marks: list[bytes | None],
        stored: list[tuple[bytes, str, bytes]],
    ) -> None:
        """Keep a list just read back (its ``(digest, type, data)`` elements), so that the next
        put of the channel does not serialize again what it decoded unchanged (what the last
        put there left is kept too: a caller may put its own objects again)."""
        with self._recent_lock:
            previous = self._recent.get(key)
        known: dict[int | bytes, Any] = dict(previous[0]) if previous else {}
        size = previous[1] if previous else 0
        for obj, mark, (digest, typ, data) in zip(values, marks, stored, strict=True):
            item = EncodedItem(digest, typ, data)
            if mark is None:
                known[data] = item
                size += len(data)
            else:
                known[id(obj)] = (obj, mark, item)
                size += len(data) + len(mark)
        self._keep(key, known, size)

    def _decode_elements(self, stored: list[tuple[bytes, str, bytes]]) -> tuple[list, list]:
        """Msgpack elements as fresh objects (clones of unchanged templates, one ``loads``
        for the rest) with their fingerprints."""
        values: list[Any] = []
        marks: list[bytes | None] = []
        missing: list[int] = []
        templates = self._decoded
        for index, (_digest, _typ, data) in enumerate(stored):
            hit = templates.get(data)
            if hit is not None and fingerprint(hit[0]) == hit[1]:
                values.append(clone(hit[0], hit[1]))
                marks.append(hit[1])
                continue
            values.append(None)
            marks.append(None)
            missing.append(index)
        if missing:
            packed = _array_header(len(missing)) + b"".join(stored[i][2] for i in missing)
            fresh = self.serde.loads_typed(("msgpack", packed))
            added = []
            for index, obj in zip(missing, fresh, strict=True):
                values[index] = obj
                mark = marks[index] = fingerprint(obj)
                if mark is not None and clonable(obj):
                    added.append((stored[index][2], obj, mark))
            self._add_templates(added)
        return values, marks

    def _add_templates(self, added: list[tuple[bytes, Any, bytes]]) -> None:
        if not added:
            return
        with self._recent_lock:
            for data, obj, mark in added:
                previous = self._decoded.pop(data, None)
                if previous is not None:
                    self._decoded_bytes -= len(data) + len(previous[1])
                self._decoded[data] = (obj, mark)
                self._decoded_bytes += len(data) + len(mark)
            while self._decoded and self._decoded_bytes > DECODED_MAX_BYTES:
                data, (_, mark) = self._decoded.popitem(last=False)
                self._decoded_bytes -= len(data) + len(mark)

    def forget(self, thread_ids: Iterable[str] | None = None) -> None:
        """Drop remembered lists (of some threads, or all)."""
        with self._recent_lock:
            if thread_ids is None:
                self._recent.clear()
                self._recent_bytes = 0
                return
            doomed = set(thread_ids)
            for key in [k for k in self._recent if k[0] in doomed]:
                self._recent_bytes -= self._recent.pop(key)[1]

    @property
    def chunks_lists(self) -> bool:
        """Whether list values may be stored element by element."""
        return self._plain or self._encrypted

    # ------------------------------------------------------------------ values

    def _items(
        self, values: Sequence[Any], known: Known | None
    ) -> tuple[list[EncodedItem], list[tuple[Any, bytes | None]]] | None:
        """Serialize each element and digest it, reusing what ``known`` holds of the previous
        put of the same channel (it only saves work: the put transaction still checks every
        digest against the database)."""
        items: list[EncodedItem] = []
        sources: list[tuple[Any, bytes | None]] = []
        size = 0
        prefixes: dict[str, Any] = {}
        hints = known or {}
        if self._plain:
            dumps = self.serde.dumps_typed
            salt = b""
            cipher = None
        else:
            dumps = self.serde.serde.dumps_typed  # type: ignore[attr-defined]
            salt = self._key
            cipher = self.serde.cipher  # type: ignore[attr-defined]
        for value in values:
            mark = fingerprint(value)
            if mark is not None:
                hit = hints.get(id(value))
                if hit is not None and hit[0] is value and hit[1] == mark:
                    items.append(hit[2])
                    sources.append((value, mark))
                    size += len(hit[2].data)
                    continue
            typ, data = dumps(value)
            if type(data) is not bytes:
                data = bytes(data)
            size += len(data)
            sources.append((value, mark))
            hint = hints.get(data) if mark is None else None
            if hint is not None and hint.type == typ:
                items.append(hint)
                continue
            prefix = prefixes.get(typ)
            if prefix is None:
                prefix = prefixes[typ] = hashlib.sha256(salt + typ.encode() + b"\x00")
            digest = prefix.copy()
            digest.update(data)
            items.append(EncodedItem(digest.digest()[:DIGEST_SIZE], typ, data, cipher))
        if size < CHUNK_MIN_BYTES:
            return None
        return items, sources

    def encode(
        self,
        channel: str,
        version: Any,
        values: Mapping[str, Any],
        known: Known | None = None,
    ) -> BlobValue:
        """Encode the value of ``channel`` at ``version`` (``"empty"`` when it has none)."""
        key = str(version)
        if channel not in values:
            return BlobValue(channel, key, EMPTY_TYPE, None)
        value = values[channel]
        if self.chunks_lists and type(value) is list and len(value) >= CHUNK_MIN_ITEMS:
            encoded = self._items(value, known)
            if encoded is not None:
                # The entries (element id + digest) are filled in by the put transaction.
                return BlobValue(channel, key, ITEMS_TYPE, None, encoded[0], encoded[1])
        typ, data = self.serde.dumps_typed(value)
        return BlobValue(channel, key, typ, data)

    def decode(
        self,
        channel: str,
        typ: str,
        blob: bytes | None,
        items: Mapping[int, tuple[str, bytes]],
        keep: tuple[str, str] | None = None,
    ) -> Any:
        """Decode one stored channel value (``items`` maps element ids to stored elements);
        ``keep=(thread_id, ns)`` remembers a decoded list for the next put (plain serde)."""
        if typ != ITEMS_TYPE:
            return self.serde.loads_typed((typ, blob if blob is not None else b""))
        stored: list[tuple[bytes, str, bytes]] = []
        get = items.get
        for item_id, digest in ENTRY.iter_unpack(blob or b""):
            entry = get(item_id)
            if entry is None:
                raise StorageError(
                    f"checkpoint data is incomplete: an element of channel {channel!r} is "
                    "missing from mnemos_lg_items; the thread was pruned or edited outside "
                    "MnemosSaver"
                )
            stored.append((digest, entry[0], entry[1]))
        if self._plain and all(s[1] == "msgpack" for s in stored):
            values, marks = self._decode_elements(stored)
            if keep is not None:
                self._remember_read((*keep, channel), values, marks, stored)
            return values
        return [self.serde.loads_typed((s[1], s[2])) for s in stored]

    # ------------------------------------------------------------------ writes

    def dumps(self, value: Any) -> tuple[str, bytes]:
        """Serialize a pending write value."""
        return self.serde.dumps_typed(value)

    def loads(self, typ: str, data: bytes | None) -> Any:
        """Deserialize a stored pending write value."""
        return self.serde.loads_typed((typ, bytes(data) if data is not None else b""))


class ItemCache:
    """Stored list elements by ``(element id, digest)``, oldest first out.

    Element rows are written once and never updated, and a list blob names each element by
    ``(id, digest)``; the digest is a hash of the element's content, so the row behind a key
    always holds the same bytes and a hit is exactly what the database would return. An id reused
    after a deletion (SQLite may reuse the newest rowid), or a database replaced under a
    long-lived saver, comes with another digest and is a miss. Every read still hands out new
    objects (decoded, or cloned from an unchanged template), so callers never share them.
    """

    def __init__(self, max_bytes: int = ITEM_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._rows: OrderedDict[tuple[int, bytes], tuple[str, bytes]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def lookup(self, wanted: Mapping[int, bytes]) -> tuple[dict[int, tuple[str, bytes]], list[int]]:
        """The cached rows of ``wanted`` (id → digest) and the ids still to fetch."""
        found: dict[int, tuple[str, bytes]] = {}
        missing: list[int] = []
        with self._lock:
            rows = self._rows
            for item_id, digest in wanted.items():
                row = rows.get((item_id, digest))
                if row is None:
                    missing.append(item_id)
                else:
                    found[item_id] = row
        return found, missing

    def add(self, rows: Iterable[tuple[int, bytes, str, bytes]]) -> None:
        """Remember ``(id, digest, type, data)`` rows."""
        with self._lock:
            for item_id, digest, typ, data in rows:
                key = (item_id, digest)
                if key in self._rows or len(data) > self.max_bytes // 8:
                    continue
                self._rows[key] = (typ, data)
                self._size += len(data)
            while self._size > self.max_bytes and self._rows:
                _, (_, data) = self._rows.popitem(last=False)
                self._size -= len(data)


def entries(blob: bytes | None) -> list[tuple[int, bytes]]:
    """The ``(element id, digest)`` entries of an ``ITEMS_TYPE`` blob."""
    return [e for e in ENTRY.iter_unpack(bytes(blob or b""))]


def pack_entries(pairs: Iterable[tuple[int, bytes]]) -> bytes:
    """The ``ITEMS_TYPE`` blob of ``(element id, digest)`` pairs."""
    pack = ENTRY.pack
    return b"".join(pack(item_id, digest) for item_id, digest in pairs)


def _json_default(value: Any) -> Any:
    raise InvalidInputError(
        f"checkpoint field of type {type(value).__name__} is not JSON-serializable; "
        "MnemosSaver stores everything except channel values as JSON"
    )


def checkpoint_skeleton(checkpoint: Mapping[str, Any]) -> dict[str, Any]:
    """The checkpoint without its channel values (JSON-ready), as stored in the row."""
    skeleton = {k: v for k, v in checkpoint.items() if k != "channel_values"}
    if not skeleton.get("pending_sends"):
        skeleton.pop("pending_sends", None)
    json.dumps(skeleton, default=_json_default)
    return skeleton


def metadata_json(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Metadata checked to be JSON-serializable (it is stored as JSON to be filterable)."""
    data = dict(metadata)
    json.dumps(data, default=_json_default)
    return data


def uses_delta_channels(metadata: Mapping[str, Any], values: Iterable[Any]) -> bool:
    """Whether a checkpoint belongs to a thread that uses a ``DeltaChannel``."""
    if any(key in metadata for key in _DELTA_METADATA_KEYS):
        return True
    return any(isinstance(v, _DeltaSnapshot) for v in values)


def new_digest_key() -> bytes:
    """A per-process key for keyed element digests under encryption."""
    return os.urandom(32)
