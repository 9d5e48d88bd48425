"""The fact file of one Memory Space: format, validation, cached reads and locked commits.

See :mod:`langgraph_mnemon.adapters.providers.facts` for the file format. A commit takes the
kernel lock on ``<file>.lock``, removes temp files a killed writer of *this* file left, re-reads
the file under the lock, applies the change, writes a temp file beside it (fsynced), renames it
over the file and fsyncs the folder; the rename is the commit. Readers never take the lock:
the rename guarantees they see a whole file, old or new. Parsed files are cached by
``(device, inode, mtime_ns, ctime_ns, size)``.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from langgraph_mnemon.errors import CapacityError, StorageError
from langgraph_mnemon.memory_layers.spaces import EDGE_TYPES
from langgraph_mnemon.storage.files import (
    NOFOLLOW,
    discard,
    ensure_dir,
    fsync_dir,
    io_errors,
    locked,
    refuse_symlinks,
    unlink_quietly,
    write_temp,
)

__all__ = ["MAX_FACTS", "Fact", "FactFile", "FactState", "Link"]

VERSION = 1
MAX_FACTS = 100_000
_FACT_KEYS = (
    "id",
    "content",
    "category",
    "importance",
    "tags",
    "entities",
    "source",
    "metadata",
    "trust",
    "created_at",
    "updated_at",
)
_LINK_KEYS = ("source", "target", "type", "weight", "reason")
_FACT_KEYSET = frozenset(_FACT_KEYS)
_LINK_KEYSET = frozenset(_LINK_KEYS)
# One encoder for every line: cheaper than json.dumps(..., **options) per fact.
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(eq=False, slots=True)
class Fact:
    """One stored fact. Treated as immutable: a change makes a new object (readers share it)."""

    id: str
    content: str
    category: str
    importance: int | None
    tags: tuple[str, ...]
    entities: tuple[str, ...]
    source: str | None
    metadata: Mapping[str, str | int | float | bool]
    trust: float
    created_at: float
    updated_at: float
    # Caches filled on first use; they never change what the fact is.
    _json: dict[str, Any] | None = field(default=None, repr=False)
    _line: str | None = field(default=None, repr=False)
    analysis: Any = field(default=None, repr=False)
    vectors: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The fact as it sits in the file (cached)."""
        if self._json is None:
            self._json = {
                "id": self.id,
                "content": self.content,
                "category": self.category,
                "importance": self.importance,
                "tags": list(self.tags),
                "entities": list(self.entities),
                "source": self.source,
                "metadata": dict(self.metadata),
                "trust": self.trust,
                "created_at": self.created_at,
                "updated_at": self.updated_at,
            }
        return self._json

    def line(self) -> str:
        """The compact JSON line of the fact (cached)."""
        if self._line is None:
            self._line = _ENCODE(self.to_json())
        return self._line


class Link(NamedTuple):
    """An explicit typed, weighted edge between two facts."""

    source: str
    target: str
    type: str
    weight: float
    reason: str | None

    def line(self) -> str:
        return _ENCODE(dict(zip(_LINK_KEYS, self, strict=True)))


class FactState:
    """The committed content of one fact file: revision, facts (file order) and links."""

    __slots__ = ("by_id", "facts", "index", "links", "revision")

    def __init__(self, revision: int, facts: Iterable[Fact], links: Iterable[Link]) -> None:
        self.revision = revision
        self.facts = tuple(facts)
        self.by_id = {f.id: f for f in self.facts}
        self.links = tuple(links)
        self.index: Any = None  # the search index, built by the first search of this state

    def to_bytes(self) -> bytes:
        """The file: one fact or link per line, so a diff shows what a commit changed."""
        facts = _block(f.line() for f in self.facts)
        links = _block(link.line() for link in self.links)
        head = f'{{"version": {VERSION}, "revision": {self.revision},\n'
        return f'{head} "facts": [{facts}],\n "links": [{links}]\n}}\n'.encode()

    def replaced(
        self, facts: Iterable[Fact] | None = None, links: Iterable[Link] | None = None
    ) -> FactState:
        """The next revision with ``facts`` and/or ``links`` swapped in."""
        new = FactState(
            self.revision + 1,
            self.facts if facts is None else facts,
            self.links if links is None else links,
        )
        if len(new.facts) > MAX_FACTS:
            raise CapacityError(
                f"a fact file holds at most {MAX_FACTS:,} facts; this write would make "
                f"{len(new.facts):,}. Forget facts you no longer need or use another Memory "
                "Space. Nothing was written.",
                code="capacity",
            )
        return new


EMPTY = FactState(0, (), ())


def _block(lines: Iterable[str]) -> str:
    body = ",\n  ".join(lines)
    return f"\n  {body}\n " if body else ""


# --- parsing ---------------------------------------------------------------------------------


class _Damaged(Exception):
    pass


def _damaged(path: Path, why: str) -> StorageError:
    return StorageError(
        f"the fact file {path} is damaged ({why}). Restore it from a backup or fix it by "
        "hand; langgraph-mnemon will not overwrite it.",
        code="storage-damaged",
    )


def _finite(value: Any, low: float | None = None, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _Damaged(f"{value!r} is not a finite number")
    if (low is not None and value < low) or (high is not None and value > high):
        raise _Damaged(f"{value!r} is outside {low}..{high}")
    return float(value)


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Damaged(f"{what} must be a list of strings")
    return tuple(value)


def _fact(item: Any) -> Fact:
    if not isinstance(item, dict):
        raise _Damaged("a fact is not an object")
    if item.keys() != _FACT_KEYSET:
        odd = sorted(set(item) ^ _FACT_KEYSET)
        raise _Damaged(f"unexpected or missing keys {', '.join(odd)}")
    importance = item["importance"]
    meta = item["metadata"]
    checks = (
        isinstance(item["id"], str) and bool(item["id"].strip()),
        isinstance(item["content"], str),
        isinstance(item["category"], str),
        importance is None or (type(importance) is int and 1 <= importance <= 5),
        item["source"] is None or isinstance(item["source"], str),
        isinstance(meta, dict)
        and all(isinstance(v, (str, int, float, bool)) for v in meta.values()),
    )
    if not all(checks):
        raise _Damaged("a field has the wrong type")
    return Fact(
        id=item["id"],
        content=item["content"],
        category=item["category"],
        importance=importance,
        tags=_strings(item["tags"], "tags"),
        entities=_strings(item["entities"], "entities"),
        source=item["source"],
        metadata=meta,
        trust=_finite(item["trust"], 0.0, 1.0),
        created_at=_finite(item["created_at"]),
        updated_at=_finite(item["updated_at"]),
        _json=item,
    )


def _link(item: Any) -> Link:
    if not isinstance(item, dict) or item.keys() != _LINK_KEYSET:
        raise _Damaged("a link must have exactly source, target, type, weight and reason")
    source, target, kind, reason = item["source"], item["target"], item["type"], item["reason"]
    if not (isinstance(source, str) and isinstance(target, str)):
        raise _Damaged("a link's source and target must be fact ids")
    if kind not in EDGE_TYPES:
        raise _Damaged(f"link type {kind!r} is not one of {', '.join(EDGE_TYPES)}")
    if reason is not None and not isinstance(reason, str):
        raise _Damaged("a link's reason must be a string or null")
    return Link(source, target, kind, _finite(item["weight"], 0.0, 1.0), reason)


def parse(raw: bytes, path: Path, known: Mapping[str, Fact]) -> FactState:
    """The state in ``raw``; facts equal to one in ``known`` reuse that object (and its caches).

    Raises:
        StorageError: ``storage-damaged`` naming ``path`` for anything that is not a valid file.
    """
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _damaged(path, f"not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise _damaged(path, f"not a version {VERSION} fact file")
    revision, raw_facts, raw_links = data.get("revision"), data.get("facts"), data.get("links")
    if type(revision) is not int or revision < 0:
        raise _damaged(path, "the revision is not a non-negative integer")
    if not isinstance(raw_facts, list) or not isinstance(raw_links, list):
        raise _damaged(path, "facts and links must be lists")
    facts: list[Fact] = []
    for number, item in enumerate(raw_facts, 1):
        fact_id = item.get("id") if isinstance(item, dict) else None
        old = known.get(fact_id) if isinstance(fact_id, str) else None
        if old is not None and old.to_json() == item:
            facts.append(old)
            continue
        try:
            facts.append(_fact(item))
        except _Damaged as exc:
            raise _damaged(path, f"fact #{number}: {exc}") from None
    ids = {f.id for f in facts}
    if len(ids) != len(facts):
        raise _damaged(path, "two facts share one id")
    links: list[Link] = []
    for number, item in enumerate(raw_links, 1):
        try:
            link = _link(item)
        except _Damaged as exc:
            raise _damaged(path, f"link #{number}: {exc}") from None
        if link.source in ids and link.target in ids:  # a link to a removed fact means nothing
            links.append(link)
    return FactState(revision, facts, links)


# --- the file --------------------------------------------------------------------------------


def _stat_key(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


class FactFile:
    """One fact file, its lock file and its parse cache.

    ``checked`` are the folders that must not be symbolic links (the whole chain for a path
    given in the space configuration, the managed ``facts`` folder otherwise).
    """

    def __init__(self, path: Path, checked: Iterable[Path], lock_timeout: float) -> None:
        self.path = path
        self.lock_path = path.with_name(path.name + ".lock")
        self.lock_timeout = lock_timeout
        self._managed = (
            *((p, "fact file folder") for p in checked),
            (path, "fact file"),
            (self.lock_path, "fact file lock"),
        )
        self._cache: tuple[tuple[int, ...], FactState] | None = None
        self._guard = threading.Lock()

    def check_paths(self) -> None:
        """Refuse (``symlink-refused``) when the file, its lock or a checked folder is a link."""
        refuse_symlinks(self._managed)

    def read(self) -> FactState:
        """The committed state (empty when the file does not exist yet); cached by stat."""
        self.check_paths()
        try:
            fd = os.open(self.path, os.O_RDONLY | NOFOLLOW)
        except FileNotFoundError:
            return EMPTY
        except OSError as exc:
            raise StorageError.from_os_error(exc, "read the fact file", self.path) from exc
        try:
            with io_errors("read the fact file", self.path):
                key = _stat_key(os.fstat(fd))
                cached = self._cache
                if cached is not None and cached[0] == key:
                    return cached[1]
                with os.fdopen(fd, "rb", closefd=False) as fh:
                    raw = fh.read()
        finally:
            os.close(fd)
        known = cached[1].by_id if cached is not None else {}
        state = parse(raw, self.path, known)
        with self._guard:
            self._cache = (key, state)
        return state

    def mutate(self, change: Callable[[FactState], tuple[FactState | None, T]]) -> T:
        """Apply ``change`` to the current state under the lock and commit what it returns.

        ``change`` returns ``(new state or None for no write, result)``; it may raise, and then
        nothing is written. Returns the result once the new file is renamed into place.
        """
        self.check_paths()
        ensure_dir(self.path.parent)
        with locked(self.lock_path, timeout=self.lock_timeout, what="fact file"):
            self._remove_own_temps()
            new, result = change(self.read())
            if new is not None:
                self._commit(new)
        return result

    def _remove_own_temps(self) -> None:
        # Only this file's temps: a neighbour's writer may be between its write and rename.
        prefix = f".{self.path.name}."
        with io_errors("list the fact file folder", self.path.parent):
            names = os.listdir(self.path.parent)
        for name in names:
            if name.startswith(prefix) and name.endswith(".tmp"):
                unlink_quietly(self.path.parent / name)

    def _commit(self, state: FactState) -> None:
        tmp = write_temp(self.path, state.to_bytes())
        try:
            os.replace(tmp, self.path)
        except BaseException as exc:
            discard(tmp)
            if isinstance(exc, OSError):
                raise StorageError.from_os_error(exc, "replace the fact file", self.path) from exc
            raise
        try:
            fsync_dir(self.path.parent)
            key = _stat_key(os.stat(self.path, follow_symlinks=False))
        except (OSError, StorageError) as exc:
            # Renamed: the write is visible and stays, so it is not reported as failed.
            _log.warning("fact file committed but not synced (%s): %s", self.path, exc)
            with self._guard:
                self._cache = None
            return
        with self._guard:
            self._cache = (key, state)
