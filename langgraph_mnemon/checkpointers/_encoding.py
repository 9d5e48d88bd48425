"""How channel values, writes and metadata become rows, and back (serde lives here only).

A channel value is stored as one blob ``(serde type, bytes)`` keyed by its version. A *list*
value whose elements serialize to at least 1 KiB (a message history, typically) is stored as
the list of its elements instead (blob type ``"mnemon.items"``): each element is serialized on
its own and kept once per thread in ``mnemos_lg_items``, unique by a 16-byte digest; the blob
holds one 24-byte entry per element (the element row's integer id, then its digest). A growing
message list thus costs one new element per step instead of the whole list, and reading it back
is a primary-key lookup per element.

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
    "checkpoint_skeleton",
    "entries",
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
        self._recent: OrderedDict[tuple[str, str, str], dict[bytes, tuple[str, bytes]]] = (
            OrderedDict()
        )
        self._recent_lock = threading.Lock()

    def known(self, thread_id: str, ns: str, channel: str) -> dict[bytes, tuple[str, bytes]]:
        """Element bytes → ``(type, digest)`` of the list this codec last stored there."""
        with self._recent_lock:
            return self._recent.get((thread_id, ns, channel)) or {}

    def remember(self, thread_id: str, ns: str, value: BlobValue) -> None:
        """Keep the digests of a stored list for the next put of the same channel."""
        if sum(len(i.data) for i in value.items) > RECENT_MAX_BYTES:
            return
        known = {i.data: (i.type, i.digest) for i in value.items}
        key = (thread_id, ns, value.channel)
        with self._recent_lock:
            self._recent[key] = known
            self._recent.move_to_end(key)
            while len(self._recent) > RECENT_MAX_LISTS:
                self._recent.popitem(last=False)

    def forget(self, thread_ids: Iterable[str] | None = None) -> None:
        """Drop remembered lists (of some threads, or all)."""
        with self._recent_lock:
            if thread_ids is None:
                self._recent.clear()
                return
            doomed = set(thread_ids)
            for key in [k for k in self._recent if k[0] in doomed]:
                del self._recent[key]

    @property
    def chunks_lists(self) -> bool:
        """Whether list values may be stored element by element."""
        return self._plain or self._encrypted

    # ------------------------------------------------------------------ values

    def _items(
        self, values: Sequence[Any], known: Mapping[bytes, tuple[str, bytes]] | None
    ) -> list[EncodedItem] | None:
        """Serialize each element and digest it; ``known`` maps element bytes stored by the
        previous put of the same channel to their ``(type, digest)`` (it only saves hashing:
        the put transaction still checks every digest against the database)."""
        items: list[EncodedItem] = []
        append = items.append
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
            typ, data = dumps(value)
            if type(data) is not bytes:
                data = bytes(data)
            size += len(data)
            hint = hints.get(data)
            if hint is not None and hint[0] == typ:
                append(EncodedItem(hint[1], typ, data, cipher))
                continue
            prefix = prefixes.get(typ)
            if prefix is None:
                prefix = prefixes[typ] = hashlib.sha256(salt + typ.encode() + b"\x00")
            digest = prefix.copy()
            digest.update(data)
            append(EncodedItem(digest.digest()[:DIGEST_SIZE], typ, data, cipher))
        if size < CHUNK_MIN_BYTES:
            return None
        return items

    def encode(
        self,
        channel: str,
        version: Any,
        values: Mapping[str, Any],
        known: Mapping[bytes, tuple[str, bytes]] | None = None,
    ) -> BlobValue:
        """Encode the value of ``channel`` at ``version`` (``"empty"`` when it has none)."""
        key = str(version)
        if channel not in values:
            return BlobValue(channel, key, EMPTY_TYPE, None)
        value = values[channel]
        if self.chunks_lists and type(value) is list and len(value) >= CHUNK_MIN_ITEMS:
            items = self._items(value, known)
            if items is not None:
                # The entries (element id + digest) are filled in by the put transaction.
                return BlobValue(channel, key, ITEMS_TYPE, None, items)
        typ, data = self.serde.dumps_typed(value)
        return BlobValue(channel, key, typ, data)

    def decode(
        self,
        channel: str,
        typ: str,
        blob: bytes | None,
        items: Mapping[int, tuple[str, bytes]],
    ) -> Any:
        """Decode one stored channel value (``items`` maps element ids to stored elements)."""
        if typ != ITEMS_TYPE:
            return self.serde.loads_typed((typ, blob if blob is not None else b""))
        types: list[str] = []
        datas: list[bytes] = []
        get = items.get
        for item_id, _digest in ENTRY.iter_unpack(blob or b""):
            entry = get(item_id)
            if entry is None:
                raise StorageError(
                    f"checkpoint data is incomplete: an element of channel {channel!r} is "
                    "missing from mnemos_lg_items; the thread was pruned or edited outside "
                    "MnemosSaver"
                )
            types.append(entry[0])
            datas.append(entry[1])
        if self._plain and all(t == "msgpack" for t in types):
            # Every element is one msgpack object: behind an array header they are the list.
            return self.serde.loads_typed(("msgpack", _array_header(len(datas)) + b"".join(datas)))
        return [self.serde.loads_typed(pair) for pair in zip(types, datas, strict=True)]

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
    long-lived saver, comes with another digest and is a miss. Decoding still happens on
    every read, so callers never share objects.
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
