"""The ``facts`` provider: each Memory Space is one local JSON fact file with trust scores.

A fact file lives at ``<root>/facts/<space id>.json`` unless the space's configuration names
an absolute ``path`` (no symbolic link anywhere on it; only an admin may name one, inside the
root or ``providers.allowed_paths``: see ``memory_layers/spaces/_locations.py``). Its format
(version 1)::

    {"version": 1, "revision": 7,
     "facts": [
      {"id": "…", "content": "…", "category": "fact", "importance": 3, "tags": [],
       "entities": ["Ada"], "source": "agent", "metadata": {}, "trust": 0.5,
       "created_at": 1733100000.0, "updated_at": 1733100000.0}
     ],
     "links": [
      {"source": "<fact id>", "target": "<fact id>", "type": "semantic", "weight": 0.5,
       "reason": null}
     ]
    }

``revision`` counts commits; ``links`` holds only *explicit* edges (``link``). Entity edges
are derived from shared entities and, with an embedder, semantic edges from vector similarity;
neither is stored. A link to a fact that is no longer in the file is ignored on read.

Writes: the kernel lock on ``<file>.lock``, a re-read under the lock, then temp file + fsync +
rename + folder fsync; the receipt (``{"status": "stored", "id", "created": 1, "revision"}``)
is returned only after the rename. A crash leaves the old or the new file, never a torn one.
A file that is not a valid fact file raises ``StorageError`` (``storage-damaged``) naming it,
and is never overwritten. ``remember_many`` is one commit.

Trust: a new fact starts at the space's ``default_trust`` (0.5) unless ``metadata["trust"]``
(0..1) says otherwise. Remembering content that is already stored does not duplicate it: the
fact's trust rises by 0.1 (at most 1; an explicit ``metadata["trust"]`` sets it instead), its
tags, entities and metadata are merged, and the receipt says ``updated``.

Search (``smart`` | ``keyword`` | ``basic``): keyword relevance is normalised BM25 over the
fact's words (``basic`` needs every query word); ``smart`` adds dense cosine similarity when
the provider has an embedder. The score is relevance (0..1) times ``0.5 + trust / 2`` (a new
fact's perfect match scores 0.75, a fully trusted one 1.0); facts whose trust is
below the space's ``min_trust`` (0.3) are not returned. Forget is a hard delete (the fact and
its links). Limits: content up to 16 KiB of UTF-8, at most 100,000 facts per file.

Example:
    >>> provider = FactFileProvider("./.mnemon")
    >>> space = SpaceBinding(id="notes", name="Notes", config=provider.place("notes", {}))
    >>> provider.remember(space, RememberItem(content="Ada prefers tea"))
    {'status': 'stored', 'id': '…', 'created': 1, 'revision': 1}
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langgraph_mnemon.adapters.providers._facts_file import (
    Fact,
    FactFile,
    FactState,
    Link,
)
from langgraph_mnemon.adapters.providers._facts_index import (
    Edge,
    graph_edges,
    index_of,
    neighbours,
)
from langgraph_mnemon.adapters.providers.base import BaseProvider
from langgraph_mnemon.adapters.providers.text import query_terms
from langgraph_mnemon.contracts import check_text, shown
from langgraph_mnemon.errors import InvalidInputError, NotFoundError, StorageError
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    Capabilities,
    ConfigField,
    DiscoveredSpace,
    Embedder,
    GraphEdge,
    GraphNode,
    GraphProjection,
    LinkRequest,
    MemoryRecord,
    ProviderDescriptor,
    ProviderSearchRequest,
    ProviderSearchResult,
    ProviderStatus,
    RelatedRequest,
    RememberItem,
    SpaceBinding,
    is_embedder,
)
from langgraph_mnemon.storage.files import checked_path, refuse_symlink

__all__ = ["MAX_CONTENT_BYTES", "FactFileProvider"]

MAX_CONTENT_BYTES = 16 * 1024
"""The largest fact content, in UTF-8 bytes."""
MAX_BATCH = 1000
_MAX_TAGS, _MAX_TAG_CHARS = 20, 100
_MAX_ENTITIES, _MAX_ENTITY_CHARS = 50, 200
_MAX_META_KEYS, _MAX_META_CHARS = 32, 1000
_MAX_QUERY_CHARS = 2000
_MAX_REASON_CHARS = 500
_REINFORCE = 0.1
_CONFIG_KEYS = ("path", "default_trust", "min_trust")
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_OPEN_FILES = 256  # fact files whose parse cache the provider keeps


def _trust_value(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInputError(f"{what} must be a number between 0 and 1 (got {shown(value)})")
    if not 0.0 <= value <= 1.0:
        raise InvalidInputError(f"{what} must be between 0 and 1 (got {value!r})")
    return float(value)


def _check_trusts(default: float, minimum: float) -> None:
    if minimum > default:
        raise InvalidInputError(
            f"min_trust ({minimum}) is above default_trust ({default}): new facts would never "
            "be found. Lower min_trust or raise default_trust"
        )


def _config_path(value: Any) -> Path:
    """An absolute ``.json`` path without ``..``, or :class:`InvalidInputError`."""
    path = checked_path(value, "the fact file path")
    raw = str(value)
    if not os.path.isabs(raw):
        raise InvalidInputError(
            f"the fact file path must be absolute (got {shown(raw)}); give the full path"
        )
    if ".." in Path(raw).parts or len(raw) > 4096:
        raise InvalidInputError("the fact file path must not contain '..' (give the real path)")
    if path.suffix != ".json" or path.name.startswith("."):
        raise InvalidInputError(
            f"the fact file path must name a visible .json file (got {shown(raw)})"
        )
    return path


def _safe_id(space_id: str) -> str:
    if _SAFE_ID.match(space_id):
        return space_id
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "-", space_id).strip("-_")[:48] or "space"
    digest = hashlib.blake2b(space_id.encode("utf-8", "surrogatepass"), digest_size=4)
    return f"{cleaned}-{digest.hexdigest()}"


def _labels(values: Sequence[str], what: str, most: int, chars: int) -> tuple[str, ...]:
    if len(values) > most:
        raise InvalidInputError(f"a fact takes at most {most} {what} (got {len(values)})")
    out: dict[str, None] = {}
    for value in values:
        text = check_text(value, f"a fact's {what[:-1]}").strip()
        if not text or len(text) > chars:
            raise InvalidInputError(f"each of a fact's {what} must be 1-{chars} characters")
        out.setdefault(text, None)
    return tuple(out)


def _metadata(meta: Mapping[str, Any]) -> dict[str, str | int | float | bool]:
    if len(meta) > _MAX_META_KEYS:
        raise InvalidInputError(f"a fact takes at most {_MAX_META_KEYS} metadata keys")
    out: dict[str, str | int | float | bool] = {}
    for key, value in meta.items():
        key = check_text(key, "a metadata key")
        if not key.strip() or len(key) > 64:
            raise InvalidInputError("metadata keys must be 1-64 characters")
        if isinstance(value, str):
            check_text(value, f"metadata {key!r}")
            if len(value) > _MAX_META_CHARS:
                raise InvalidInputError(f"metadata {key!r} is over {_MAX_META_CHARS} characters")
        elif isinstance(value, float) and not math.isfinite(value):
            raise InvalidInputError(f"metadata {key!r} must be a finite number")
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
            raise InvalidInputError(f"metadata {key!r} is out of the 64-bit integer range")
        out[key] = value
    return out


class _Prepared:
    """A validated write: the item's fields as they will be stored."""

    __slots__ = (
        "category",
        "content",
        "entities",
        "importance",
        "metadata",
        "source",
        "tags",
        "trust",
    )

    def __init__(self, item: RememberItem) -> None:
        content = check_text(item.content, "the fact content")
        if not content.strip():
            raise InvalidInputError("the fact content is empty; give the fact as text")
        size = len(content.encode("utf-8"))
        if size > MAX_CONTENT_BYTES:
            raise InvalidInputError(
                f"the fact content is {size:,} bytes; a fact holds at most "
                f"{MAX_CONTENT_BYTES:,} bytes of UTF-8. Split it into smaller facts"
            )
        self.content = content
        self.category = item.category
        self.importance = item.importance
        self.source = item.source
        self.tags = _labels(item.tags, "tags", _MAX_TAGS, _MAX_TAG_CHARS)
        self.entities = _labels(item.entities, "entities", _MAX_ENTITIES, _MAX_ENTITY_CHARS)
        self.metadata = _metadata(item.metadata)
        trust = self.metadata.get("trust")
        self.trust = None if trust is None else _trust_value(trust, 'metadata["trust"]')

    def fact(self, trust: float, now: float) -> Fact:
        return Fact(
            id=uuid.uuid4().hex,
            content=self.content,
            category=self.category,
            importance=self.importance,
            tags=self.tags,
            entities=self.entities,
            source=self.source,
            metadata=self.metadata,
            trust=self.trust if self.trust is not None else trust,
            created_at=now,
            updated_at=now,
        )

    def reinforce(self, old: Fact, now: float) -> Fact:
        """``old`` seen again: trust up (or as given), labels and metadata merged."""
        trust = self.trust if self.trust is not None else min(1.0, old.trust + _REINFORCE)
        fact = Fact(
            id=old.id,
            content=old.content,
            category=old.category,
            importance=max(old.importance or 0, self.importance) or None,
            tags=tuple(dict.fromkeys((*old.tags, *self.tags)))[:_MAX_TAGS],
            entities=tuple(dict.fromkeys((*old.entities, *self.entities)))[:_MAX_ENTITIES],
            source=old.source,
            metadata=_merged(old.metadata, self.metadata),
            trust=round(trust, 6),
            created_at=old.created_at,
            updated_at=now,
        )
        fact.vectors.update(old.vectors)  # same content, same vectors
        return fact


def _merged(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    merged = {**old, **new}
    return merged if len(merged) <= _MAX_META_KEYS else dict(old)


class FactFileProvider(BaseProvider):
    """Memory Spaces as local JSON fact files with trust scores, entity and semantic links.

    Construction does no I/O: each space's file is opened by its first operation.

    Args:
        root: the storage root; default files live in ``<root>/facts``.
        default_trust: the trust of a new fact (0..1), unless the space configures its own.
        min_trust: facts below this trust are left out of search (0..1, at most
            ``default_trust``).
        embedder: optional dense embedder; with one, smart search is hybrid and the graph and
            related walks gain similarity edges.
        clock: UNIX seconds for ``created_at`` / ``updated_at``.
        lock_timeout: seconds a write waits for the file lock before ``StorageError``.

    Raises:
        InvalidInputError: a bad root, trust value, embedder, clock or timeout.

    Example:
        >>> provider = FactFileProvider(tmp_path, embedder=HashingEmbedder())
        >>> provider.descriptor.id
        'facts'
    """

    runs_inline = True  # a local file under the provider's own lock
    descriptor = ProviderDescriptor(
        id="facts",
        label="Fact file",
        capabilities=Capabilities(
            search=True,
            browse=True,
            graph=True,
            entities=True,
            related=True,
            remember=True,
            remember_many=True,
            link=True,
            forget=True,
            discover=True,
        ),
        score_semantics="normalized",
        write_mode="exact",
        deletion_mode="hard",
        local=True,
    )

    def __init__(
        self,
        root: Path | str,
        *,
        default_trust: float = 0.5,
        min_trust: float = 0.3,
        embedder: Embedder | None = None,
        clock: Callable[[], float] = time.time,
        lock_timeout: float = 10.0,
    ) -> None:
        self.root = checked_path(root, "the fact file root")
        self.default_trust = _trust_value(default_trust, "default_trust")
        self.min_trust = _trust_value(min_trust, "min_trust")
        _check_trusts(self.default_trust, self.min_trust)
        if embedder is not None and not is_embedder(embedder):
            raise InvalidInputError(
                "embedder must be an Embedder instance (model_id, embed_documents, embed_query)"
            )
        if not callable(clock):
            raise InvalidInputError("clock must be a function returning UNIX seconds")
        if (
            isinstance(lock_timeout, bool)
            or not isinstance(lock_timeout, (int, float))
            or not 0 < lock_timeout <= 3600
        ):
            raise InvalidInputError("lock_timeout must be between 0 and 3600 seconds")
        self.embedder = embedder
        self._clock = clock
        self.lock_timeout = float(lock_timeout)
        self._files: OrderedDict[Path, FactFile] = OrderedDict()
        self._files_guard = threading.Lock()
        self.descriptor = type(self).descriptor.model_copy(update={"config_fields": self._fields()})

    def __repr__(self) -> str:
        return f"FactFileProvider(root={str(self.root)!r})"

    def _fields(self) -> tuple[ConfigField, ...]:
        return (
            ConfigField(
                name="path",
                label="Fact file",
                kind="path",
                help="Absolute path of the JSON fact file (default <root>/facts/<space>.json)",
            ),
            ConfigField(
                name="default_trust",
                label="Default trust",
                kind="number",
                default=self.default_trust,
                help="Trust of a new fact, 0..1",
            ),
            ConfigField(
                name="min_trust",
                label="Minimum trust",
                kind="number",
                default=self.min_trust,
                help="Facts below this trust are not returned by search, 0..1",
            ),
        )

    # ------------------------------------------------------------------ configuration

    def check_config(self, config: Mapping[str, Any], secrets: Mapping[str, str]) -> dict[str, Any]:
        """Validate a space's settings: ``path``, ``default_trust``, ``min_trust`` (no I/O).

        Args:
            config: the space configuration.
            secrets: must be empty (a fact file takes no credentials).

        Returns:
            The normalised configuration.

        Raises:
            InvalidInputError: an unknown key, a secret, a relative or non-``.json`` path, a
                trust outside 0..1 or ``min_trust`` above ``default_trust``.

        Example:
            >>> provider.check_config({"min_trust": 0.2}, {})
            {'min_trust': 0.2}
        """
        unknown = sorted(set(config) - set(_CONFIG_KEYS))
        if unknown:
            raise InvalidInputError(
                f"fact file spaces take only {', '.join(_CONFIG_KEYS)} (got {', '.join(unknown)})"
            )
        if secrets:
            raise InvalidInputError("fact file spaces take no secrets")
        out: dict[str, Any] = {}
        if config.get("path") is not None:
            out["path"] = str(_config_path(config["path"]))
        for key in ("default_trust", "min_trust"):
            if config.get(key) is not None:
                out[key] = _trust_value(config[key], key)
        _check_trusts(
            out.get("default_trust", self.default_trust), out.get("min_trust", self.min_trust)
        )
        return out

    def place(self, space_id: str, config: dict[str, Any]) -> dict[str, Any]:
        """The config a new space is stored with: ``path`` recorded (no I/O).

        Args:
            space_id: the new space's id (made file-name safe for the default path).
            config: the checked configuration (:meth:`check_config`).

        Returns:
            ``config`` with ``path``: the given one, or ``<root>/facts/<space id>.json``.

        Example:
            >>> provider.place("notes", {})
            {'path': '/home/ada/.mnemon/facts/notes.json'}
        """
        if config.get("path"):
            return dict(config)
        return {**config, "path": str(self._default_path(space_id))}

    def owns_storage(self, space_id: str, config: Mapping[str, Any]) -> bool:
        """Whether ``config`` keeps the space's facts in its own file (no ``path``, or
        ``<root>/facts/<space id>.json``): where the server lets a non-admin's space live.

        Example:
            >>> provider.owns_storage("notes", provider.place("notes", {}))
            True
        """
        raw = config.get("path")
        if not raw:
            return True
        try:
            named = os.path.normpath(_config_path(raw))
        except InvalidInputError:
            return False
        return named == os.path.normpath(self._default_path(space_id))

    def _default_path(self, space_id: str) -> Path:
        return self.root / "facts" / f"{_safe_id(space_id)}.json"

    def _file(self, space: SpaceBinding) -> FactFile:
        raw = space.config.get("path")
        path = _config_path(raw) if raw else self._default_path(space.id)
        with self._files_guard:
            found = self._files.get(path)
            if found is not None:
                self._files.move_to_end(path)
                return found
            if path.parent == self.root / "facts":
                checked: list[Path] = [path.parent]
            else:  # a path of the user's: no link anywhere on it
                checked = list(reversed(path.parents))[1:]
            found = self._files[path] = FactFile(path, checked, self.lock_timeout)
            while len(self._files) > _OPEN_FILES:
                self._files.popitem(last=False)
            return found

    def _trusts(self, space: SpaceBinding) -> tuple[float, float]:
        default = space.config.get("default_trust", self.default_trust)
        minimum = space.config.get("min_trust", self.min_trust)
        return _trust_value(default, "default_trust"), _trust_value(minimum, "min_trust")

    # ------------------------------------------------------------------ contract hooks

    def _remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        return self._remember_many(space, [item])[0]

    def _remember_many(
        self, space: SpaceBinding, items: list[RememberItem]
    ) -> list[dict[str, Any]]:
        if len(items) > MAX_BATCH:
            raise InvalidInputError(f"remember at most {MAX_BATCH} facts per call")
        prepared = [_Prepared(item) for item in items]  # every item checked before any I/O
        return self._store_facts(space, prepared)

    def _link(self, space: SpaceBinding, request: LinkRequest) -> dict[str, Any]:
        if request.source_id == request.target_id:
            raise InvalidInputError("a fact cannot be linked to itself; give two different ids")
        check_text(request.source_id, "the source id")
        check_text(request.target_id, "the target id")
        reason = request.reason
        if reason is not None:
            reason = check_text(reason, "the link reason").strip() or None
            if reason is not None and len(reason) > _MAX_REASON_CHARS:
                raise InvalidInputError(f"a link reason holds at most {_MAX_REASON_CHARS} chars")
        return self._add_link(space, request, reason)

    # ------------------------------------------------------------------ writes

    def _store_facts(self, space: SpaceBinding, items: list[_Prepared]) -> list[dict[str, Any]]:
        default_trust, _ = self._trusts(space)

        def change(state: FactState) -> tuple[FactState, list[dict[str, Any]]]:
            now = self._now()
            facts = list(state.facts)
            where = {f.content: i for i, f in enumerate(facts)}
            receipts: list[dict[str, Any]] = []
            for item in items:
                at = where.get(item.content)
                if at is None:
                    where[item.content] = len(facts)
                    facts.append(item.fact(default_trust, now))
                    receipts.append({"status": "stored", "id": facts[-1].id, "created": 1})
                    continue
                facts[at] = item.reinforce(facts[at], now)
                receipts.append(
                    {"status": "updated", "id": facts[at].id, "created": 0, "updated": 1}
                )
            new = state.replaced(facts=facts)
            for receipt in receipts:
                receipt["revision"] = new.revision
            return new, receipts

        self._now()  # a broken clock fails here, before the folder or the lock is made
        return self._file(space).mutate(change)

    def _now(self) -> float:
        now = self._clock()
        if isinstance(now, bool) or not isinstance(now, (int, float)) or not math.isfinite(now):
            # A NaN in the file would make it unreadable: refuse before writing.
            raise InvalidInputError(f"the clock returned {shown(now)}, not UNIX seconds")
        return float(now)

    def _add_link(
        self, space: SpaceBinding, request: LinkRequest, reason: str | None
    ) -> dict[str, Any]:
        file = self._file(space)
        known = file.read().by_id  # unknown ids fail before the lock (and before any write)
        for fact_id in (request.source_id, request.target_id):
            if fact_id not in known:
                raise self._missing(space, fact_id, "link needs two ids of the same space")

        def change(state: FactState) -> tuple[FactState, dict[str, Any]]:
            for fact_id in (request.source_id, request.target_id):
                if fact_id not in state.by_id:
                    raise self._missing(space, fact_id, "link needs two ids of the same space")
            key = (request.source_id, request.target_id, request.type)
            links = [lk for lk in state.links if (lk.source, lk.target, lk.type) != key]
            links.append(Link(*key, float(request.weight), reason))
            new = state.replaced(links=links)
            edge_id = f"{request.source_id}->{request.target_id}"
            return new, {
                "status": "linked",
                "id": edge_id,
                "edges_inserted": 1,
                "revision": new.revision,
            }

        return file.mutate(change)

    def _forget(self, space: SpaceBinding, fact_id: str) -> dict[str, Any]:
        file = self._file(space)
        advice = "search or browse the space for the exact id"
        if fact_id not in file.read().by_id:  # fails before the lock (and before any write)
            raise self._missing(space, fact_id, advice)

        def change(state: FactState) -> tuple[FactState, dict[str, Any]]:
            if fact_id not in state.by_id:  # forgotten by another writer meanwhile
                raise self._missing(space, fact_id, advice)
            new = state.replaced(
                facts=[f for f in state.facts if f.id != fact_id],
                links=[lk for lk in state.links if fact_id not in (lk.source, lk.target)],
            )
            return new, {"status": "deleted", "id": fact_id, "deleted": 1, "revision": new.revision}

        return file.mutate(change)

    @staticmethod
    def _missing(space: SpaceBinding, fact_id: str, advice: str) -> NotFoundError:
        return NotFoundError(f"no fact {shown(fact_id)} in Memory Space {space.id!r}; {advice}")

    # ------------------------------------------------------------------ reads

    def _record(self, space: SpaceBinding, fact: Fact, **extra: Any) -> MemoryRecord:
        return MemoryRecord(
            id=fact.id,
            content=fact.content,
            category=fact.category,
            importance=fact.importance,
            tags=list(fact.tags),
            entities=list(fact.entities),
            source=fact.source,
            metadata=dict(fact.metadata),
            confidence=fact.trust,
            created_at=fact.created_at,
            space_id=space.id,
            space_name=space.name,
            **extra,
        )

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        query = check_text(request.query, "the query").strip()
        if len(query) > _MAX_QUERY_CHARS:
            raise InvalidInputError(f"a query holds at most {_MAX_QUERY_CHARS} characters")
        terms = query_terms(query)
        smart = request.mode == "smart" and self.embedder is not None and bool(query)
        if not terms and not smart:
            return ProviderSearchResult(hint="the query has no searchable words")
        state = self._file(space).read()
        if not state.facts:
            return ProviderSearchResult()
        index = index_of(state)
        dense = index.dense(self.embedder, query) if smart and self.embedder else None
        _, min_trust = self._trusts(space)
        scored = []
        for pos, (relevance, via) in index.rank(terms, request.mode, dense).items():
            fact = index.facts[pos]
            if fact.trust < min_trust or fact.trust <= 0 or relevance <= 0:
                continue
            if request.category and fact.category != request.category:
                continue
            if request.source and fact.source != request.source:
                continue
            # Trust weighs the score without halving it: a new fact (trust 0.5) that matches
            # perfectly still reads as a high-relevance row (0.75) in federated recall.
            scored.append((round(relevance * (0.5 + fact.trust / 2), 6), fact, via))
        scored.sort(key=lambda s: (-s[0], -s[1].updated_at, s[1].id))
        return ProviderSearchResult(
            results=[
                self._record(space, fact, score=score, matched_via=via)
                for score, fact, via in scored[: request.limit]
            ]
        )

    @staticmethod
    def _newest(state: FactState) -> list[int]:
        order = list(range(len(state.facts) - 1, -1, -1))  # later in the file = newer on ties
        order.sort(key=lambda p: -state.facts[p].created_at)
        return order

    def _browse(self, space: SpaceBinding, request: BrowseRequest) -> list[MemoryRecord]:
        state = self._file(space).read()
        rows = [state.facts[p] for p in self._newest(state)]
        if request.category:
            rows = [f for f in rows if f.category == request.category]
        chosen = rows[request.offset : request.offset + request.limit]
        return [self._record(space, f) for f in chosen]

    def _graph(self, space: SpaceBinding, limit: int) -> GraphProjection:
        state = self._file(space).read()
        positions = self._newest(state)[:limit]
        if not positions:
            return GraphProjection()
        index = index_of(state)
        nodes = [
            GraphNode(id=f.id, label=f.content[:80], category=f.category, entities=list(f.entities))
            for f in (state.facts[p] for p in positions)
        ]
        edges = graph_edges(index, positions, self.embedder, cap=limit * 4)
        return GraphProjection(nodes=nodes, edges=[_graph_edge(e) for e in edges])

    def _related(self, space: SpaceBinding, request: RelatedRequest) -> list[MemoryRecord]:
        state = self._file(space).read()
        start = check_text(request.id, "the fact id").strip()
        if start not in state.by_id:
            raise self._missing(space, start, "related needs the exact id of a stored fact")
        index = index_of(state)
        seen: dict[str, tuple[int, str]] = {start: (0, "")}
        frontier = [index.position[start]]
        for depth in range(1, request.depth + 1):
            following: list[int] = []
            for edges in neighbours(index, frontier, request.edge, self.embedder):
                for edge in edges:
                    if edge.target in seen:
                        continue
                    seen[edge.target] = (depth, edge.type)
                    following.append(index.position[edge.target])
            frontier = following
            if not frontier or len(seen) > request.limit:
                break
        found = [(i, d, t) for i, (d, t) in seen.items() if i != start][: request.limit]
        return [self._record(space, state.by_id[i], depth=d, edge_type=t) for i, d, t in found]

    def _status(self, space: SpaceBinding) -> ProviderStatus:
        file = self._file(space)
        try:
            state = file.read()
            size = os.lstat(file.path).st_size if state.revision else 0
        except (StorageError, OSError) as exc:
            message = exc.message if isinstance(exc, StorageError) else str(exc)
            return ProviderStatus(healthy=False, error=message)
        by_category: dict[str, int] = {}
        entities: dict[str, tuple[str, int]] = {}
        for fact in state.facts:
            by_category[fact.category] = by_category.get(fact.category, 0) + 1
            for entity in {e.casefold(): e for e in fact.entities}.items():
                name, count = entities.get(entity[0], (entity[1], 0))
                entities[entity[0]] = (name, count + 1)
        top = sorted(entities.values(), key=lambda e: (-e[1], e[0]))[:10]
        # Entity edges are derived: one per pair of facts sharing an entity, per entity.
        entity_edges = sum(c * (c - 1) // 2 for _, c in entities.values())
        return ProviderStatus(
            healthy=True,
            total_insights=len(state.facts),
            deleted_insights=0,
            edge_count=len(state.links) + entity_edges,
            db_size_bytes=size,
            by_category=by_category,
            top_entities=top,
        )

    def _discover(
        self, config: Mapping[str, Any], secrets: Mapping[str, str]
    ) -> list[DiscoveredSpace]:
        folder = self.root / "facts"
        refuse_symlink(folder, "fact file folder")
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError.from_os_error(exc, "list the fact file folder", folder) from exc
        return [
            DiscoveredSpace(
                external_id=entry.name[: -len(".json")],
                name=entry.name[: -len(".json")],
                description=f"fact file {entry.path}",
                config={"path": entry.path},
            )
            for entry in entries
            if entry.name.endswith(".json")
            and not entry.name.startswith(".")
            and entry.is_file(follow_symlinks=False)
        ]


def _graph_edge(edge: Edge) -> GraphEdge:
    return GraphEdge(source=edge.source, target=edge.target, type=edge.type, weight=edge.weight)
