"""Committed Documents state in memory: one ``index.json`` plus the access-time overlay.

:class:`State` is what a read sees (the records as committed, with newer last-access times from
``access.jsonl`` applied on the way out); :class:`Journal` remembers how far ``access.jsonl``
has been read so a search never re-reads it whole.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from langgraph_mnemon.errors import AmbiguousMatchError, NotFoundError
from langgraph_mnemon.memory_layers.documents._models import DocumentRecord

__all__ = ["Journal", "State", "fold_access_lines", "lru_key"]


class State:
    """One committed index plus the newer last-access times recorded in ``access.jsonl``.

    ``records`` are the records as ``index.json`` stores them; :meth:`merged` applies the access
    overlay (which only ever moves times forward, so sharing it between states is safe).
    """

    __slots__ = (
        "_active_bytes",
        "_positions",
        "_revision",
        "access",
        "by_id",
        "exists",
        "generation",
        "records",
    )

    def __init__(
        self,
        records: tuple[DocumentRecord, ...],
        generation: Any,
        exists: bool,
        access: dict[str, str],
    ) -> None:
        self.records = records
        self.generation = generation
        self.exists = exists
        self.access = access
        self.by_id = {r.id: r for r in records}
        self._revision: str | None = None
        self._positions: dict[str, int] | None = None
        self._active_bytes: int | None = None

    def merged(self, record: DocumentRecord) -> DocumentRecord:
        stamp = self.access.get(record.id)
        if stamp is not None and stamp > record.last_accessed_at:
            return record.model_copy(update={"last_accessed_at": stamp})
        return record

    def get(self, doc_id: str) -> DocumentRecord | None:
        record = self.by_id.get(doc_id)
        return None if record is None else self.merged(record)

    def record(self, doc_id: str) -> DocumentRecord:
        """The record of ``doc_id``; :class:`NotFoundError` if there is none."""
        record = self.get(doc_id)
        if record is None:
            raise NotFoundError(f"no document with id {doc_id}; see `mnemon docs list`")
        return record

    def id_with_prefix(self, prefix: str) -> str:
        """The one id starting with ``prefix`` (NotFoundError / AmbiguousMatchError if not one)."""
        matches = [r.id for r in self.records if r.id.startswith(prefix)]
        if not matches:
            raise NotFoundError(f"no document id starts with {prefix!r}; see `mnemon docs list`")
        if len(matches) > 1:
            raise AmbiguousMatchError(
                f"{len(matches)} document ids start with {prefix!r}; give more characters"
            )
        return matches[0]

    def listed(self, status: str) -> list[DocumentRecord]:
        """Records with ``status`` (or ``all``), access times applied, most recently updated
        first (ties: later in the index first)."""
        records = [self.merged(r) for r in self.records if status == "all" or r.status == status]
        positions = self.positions
        records.sort(key=lambda r: (r.updated_at, positions[r.id]), reverse=True)
        return records

    def active(self, excluded: str | None = None) -> list[DocumentRecord]:
        """The active records (access times applied), in index order, but ``excluded``."""
        return [self.merged(r) for r in self.records if r.status == "active" and r.id != excluded]

    def replaced(self, record: DocumentRecord) -> tuple[DocumentRecord, ...]:
        """The records with ``record`` in place of the one with its id."""
        return tuple(record if r.id == record.id else r for r in self.records)

    @property
    def revision(self) -> str:
        if self._revision is None:
            data = "\n".join(
                f"{r.id} {r.status} {r.revision} {r.content_hash}" for r in self.records
            )
            self._revision = hashlib.sha256(data.encode()).hexdigest()
        return self._revision

    @property
    def positions(self) -> dict[str, int]:
        if self._positions is None:
            self._positions = {r.id: i for i, r in enumerate(self.records)}
        return self._positions

    def active_bytes(self) -> int:
        if self._active_bytes is None:
            self._active_bytes = sum(r.size_bytes for r in self.records if r.status == "active")
        return self._active_bytes


def lru_key(record: DocumentRecord) -> tuple[str, str]:
    """Least recently used first: last access, then last update."""
    return (record.last_accessed_at, record.updated_at)


@dataclass(slots=True)
class Journal:
    """How much of ``access.jsonl`` has been read, and the newest access time per document.

    ``index_key`` is the index.json identity the reader last saw: every fold rewrites the index,
    so a changed index restarts reading (a recreated journal may reuse the old inode number).
    """

    index_key: Any = None
    ino: int | None = None
    offset: int = 0
    latest: dict[str, str] | None = None
    generation: int = 0

    def reset(self, ino: int | None) -> None:
        self.ino = ino
        self.offset = 0
        self.latest = {}
        self.generation += 1


def fold_access_lines(data: bytes, latest: dict[str, str]) -> int:
    """Apply the complete lines of ``data`` to ``latest``; returns the bytes consumed.

    A line still being written (no newline yet) is left for the next read; a torn line from a
    writer killed mid-append is skipped.
    """
    end = data.rfind(b"\n") + 1
    for line in data[:end].splitlines():
        try:
            item = json.loads(line)
            stamp, ids = item["at"], item["ids"]
        except (ValueError, KeyError, TypeError):
            continue
        if not isinstance(stamp, str) or not isinstance(ids, list):
            continue
        for doc_id in ids:
            if isinstance(doc_id, str) and stamp > latest.get(doc_id, ""):
                latest[doc_id] = stamp
    return end
