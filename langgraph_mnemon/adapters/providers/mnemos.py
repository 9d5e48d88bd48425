"""The native ``mnemos`` provider: insights, edges and a keyword index in the shared SQL database.

It is the reference implementation of the provider contract and declares every capability:
search (``smart`` | ``keyword`` | ``basic``), browse, graph, entities, related, remember (+ batch),
link, forget (soft) and discover. Scores are normalised relevance in 0..1.

Search:

* ``keyword`` — BM25 over the analysed terms (:mod:`.text`) of one space. The keyword index
  (SQLite FTS5 or PostgreSQL ``tsvector``/GIN) supplies a candidate pool; every candidate is then
  scored in Python with per-space document frequencies, so SQLite and PostgreSQL give the same
  scores. The score is BM25 divided by the BM25 of an ideal row that holds each query term once
  (capped at 1): the share of the query's information the row carries.
* ``basic`` — rows that contain *every* query term, scored the same way.
* ``smart`` — hybrid: the keyword score blended with the cosine similarity of dense vectors from
  the configured embedder (when there is one), over the union of both candidate pools, plus a
  small boost from a row's temporal neighbours (the turns written just before and after it).

Remember writes the row, its keyword-index entry, term statistics, entities, an automatic
temporal edge to the previous row of the space and entity edges to recent rows that share an
entity, and (with an embedder) its vector — all in one transaction. Forget is a soft delete: the
row keeps its data with ``deleted_at`` set and leaves the index, statistics and vectors.
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import json
import math
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from langgraph_mnemon.adapters.providers.base import BaseProvider
from langgraph_mnemon.adapters.providers.text import analyze, query_terms
from langgraph_mnemon.contracts import check_text
from langgraph_mnemon.errors import InvalidInputError, NotFoundError, ProviderError
from langgraph_mnemon.memory_layers.mnemos.spaces_schema import (
    EDGES,
    ENTITIES,
    FTS_TABLE,
    INSIGHTS,
    MIGRATIONS,
    SPACE_STATS,
    SPACE_TERMS,
    SPACES,
    VECTORS,
)
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    Capabilities,
    DiscoveredSpace,
    Embedder,
    GraphEdge,
    GraphNode,
    GraphProjection,
    Insight,
    LinkRequest,
    ProviderDescriptor,
    ProviderSearchRequest,
    ProviderSearchResult,
    ProviderStatus,
    RelatedRequest,
    RememberItem,
    SpaceBinding,
    is_embedder,
)
from langgraph_mnemon.storage.db import Database, upsert

__all__ = ["HybridWeights", "MnemosProvider"]

_ENTITY_EDGE_FANOUT = 5
_MAX_QUERY_TERMS = 64


def _neighbour_statement() -> sa.Select[Any]:
    inner = INSIGHTS.alias("n")
    live = sa.and_(inner.c.space_id == sa.bindparam("space"), inner.c.deleted_at.is_(None))
    before = (
        sa.select(sa.func.max(inner.c.seq)).where(live, inner.c.seq < INSIGHTS.c.seq)
    ).scalar_subquery()
    after = (
        sa.select(sa.func.min(inner.c.seq)).where(live, inner.c.seq > INSIGHTS.c.seq)
    ).scalar_subquery()
    return sa.select(INSIGHTS.c.seq, before, after).where(
        INSIGHTS.c.seq.in_(sa.bindparam("seqs", expanding=True))
    )


# Hot-path statements, built once so SQLAlchemy compiles each of them once.
_TERMS_BY_SEQ = sa.select(INSIGHTS.c.seq, INSIGHTS.c.terms).where(
    INSIGHTS.c.seq.in_(sa.bindparam("seqs", expanding=True)),
    INSIGHTS.c.space_id == sa.bindparam("space"),
    INSIGHTS.c.deleted_at.is_(None),
)
_ROWS_BY_SEQ = sa.select(INSIGHTS).where(INSIGHTS.c.seq.in_(sa.bindparam("seqs", expanding=True)))
_NEIGHBOURS = _neighbour_statement()
_STATS = sa.select(SPACE_STATS.c.docs, SPACE_STATS.c.terms, SPACE_STATS.c.version).where(
    SPACE_STATS.c.space_id == sa.bindparam("space")
)
_DF = sa.select(SPACE_TERMS.c.term, SPACE_TERMS.c.df).where(
    SPACE_TERMS.c.space_id == sa.bindparam("space"),
    SPACE_TERMS.c.term.in_(sa.bindparam("terms", expanding=True)),
)


@dataclass(frozen=True)
class HybridWeights:
    """Scoring knobs of the native provider.

    ``k1``/``b`` are the BM25 parameters (memories are short, so length normalisation is
    weak). ``dense`` is the share of the dense similarity in the smart score (the keyword share
    is ``1 - dense``). ``unknown_term_weight`` is how much a query term that no row of the space
    contains counts in the ideal score. ``neighbour`` is the share of the best temporal
    neighbour's score added to a row in smart mode (a memory is often only meaningful next to
    the one written just before or after it), computed for the ``neighbour_top`` best rows.
    ``pool`` / ``dense_pool`` are the candidate pools taken from the keyword index and from the
    dense ranking; the keyword pool reads the postings of the rarest query terms up to
    ``posting_budget`` rows. The dense pool is an exact scan of the space's vectors while the
    space holds at most ``dense_scan_limit`` of them; in larger spaces dense similarity only
    re-scores the keyword candidates (at 100k vectors a full scan alone takes a large part of
    the 25 ms recall budget on two cores). Defaults were chosen on three LoCoMo-R conversations
    and checked on two others (bench/locomo.py).
    """

    k1: float = 1.2
    b: float = 0.3
    dense: float = 0.2
    unknown_term_weight: float = 0.25
    neighbour: float = 0.2
    neighbour_top: int = 50
    pool: int = 100
    dense_pool: int = 50
    dense_scan_limit: int = 50_000
    posting_budget: int = 10_000


class _Analysis:
    """Analysed form of one row."""

    __slots__ = ("counts", "length", "terms", "unique")

    def __init__(self, text: str) -> None:
        terms = analyze(text)
        self.terms = terms
        self.length = len(terms)
        self.counts = Counter(terms)
        self.unique = list(self.counts)


def _space_token(space_id: str) -> str:
    """17 characters that prefix every keyword-index token of one space."""
    return "s" + hashlib.blake2b(space_id.encode(), digest_size=8).hexdigest()


def _fts_text(space_token: str, terms: str) -> str:
    return " ".join(space_token + t for t in terms.split())


def _content_hash(item: RememberItem) -> str:
    meta = json.dumps(item.metadata, sort_keys=True, ensure_ascii=False)
    return hashlib.blake2b(f"{item.content}\x00{meta}".encode(), digest_size=16).hexdigest()


def _fts_query(space_token: str, terms: Sequence[str], conjunction: str) -> str:
    return f" {conjunction} ".join(f'"{space_token}{t}"' for t in terms)


def _prune(terms: Sequence[str], df: Mapping[str, int], budget: int) -> list[str]:
    """The rarest query terms whose postings fit ``budget`` (at least the rarest one).

    Very common terms add little to BM25 but cost a posting read per row; rows that match
    only them are left to the dense pool and to the Python re-scoring of the candidates.
    """
    chosen: list[str] = []
    total = 0
    for term in sorted(terms, key=lambda t: df.get(t, 0)):
        count = df.get(term, 0)
        if chosen and total + count > budget:
            break
        chosen.append(term)
        total += count
    return chosen


def _pg_query(terms: Sequence[str], conjunction: str) -> str:
    op = " & " if conjunction == "AND" else " | "
    return op.join(f"'{t}'" for t in terms)


class _VectorCache:
    """Vectors of one space held in memory, valid for one space write version."""

    __slots__ = ("matrix", "model", "position", "seqs", "version")

    def __init__(self, version: int, model: str, seqs: np.ndarray, matrix: np.ndarray) -> None:
        self.version = version
        self.model = model
        self.seqs = seqs
        self.matrix = matrix
        self.position = {int(s): i for i, s in enumerate(seqs.tolist())}

    def top(self, query: np.ndarray, k: int) -> dict[int, float]:
        """The ``k`` most similar rows: ``{seq: cosine}``."""
        sims = self.matrix @ query
        k = min(k, sims.shape[0])
        idx = np.argpartition(-sims, k - 1)[:k] if k < sims.shape[0] else np.arange(k)
        return {int(self.seqs[i]): float(sims[i]) for i in idx}

    def similarity(self, seq: int, query: np.ndarray) -> float:
        """Cosine of one row (0 when it has no vector)."""
        i = self.position.get(seq)
        return 0.0 if i is None else float(self.matrix[i] @ query)


class MnemosProvider(BaseProvider):
    """Native Memory Space provider on a :class:`Database` (SQLite or PostgreSQL)."""

    descriptor = ProviderDescriptor(
        id="mnemos",
        label="Mnemos (native)",
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
        deletion_mode="soft",
        local=True,
    )

    def __init__(
        self,
        database: Database,
        *,
        embedder: Embedder | None = None,
        weights: HybridWeights | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(database, Database):
            raise InvalidInputError(
                f"MnemosProvider() takes a Database (got {type(database).__name__}); "
                "use Database(create_engine(url))"
            )
        if embedder is not None and not is_embedder(embedder):
            raise InvalidInputError(
                "embedder must have model_id, embed_documents() and embed_query(); "
                "wrap LangChain embeddings with adapters.embeddings.from_langchain()"
            )
        self.db = database
        self.embedder = embedder
        self.weights = weights or HybridWeights()
        self._clock = clock
        self._vectors: dict[str, _VectorCache] = {}
        self._lock = threading.Lock()

    def setup(self) -> None:
        """Create or migrate the Memory Space tables (idempotent)."""
        self.db.setup(MIGRATIONS)

    def _ready(self) -> None:
        """Before a write: create or migrate the tables."""
        if not self.db.is_setup(MIGRATIONS):
            self.db.setup(MIGRATIONS)

    def _readable(self) -> bool:
        """Before a read: whether the tables exist (a read creates nothing; absent = empty)."""
        return self.db.ready_for_read(MIGRATIONS)

    # ------------------------------------------------------------------ async contract hooks

    async def _status(self, space: SpaceBinding) -> ProviderStatus:
        return await asyncio.to_thread(self.status_sync, space)

    async def _search(
        self, space: SpaceBinding, request: ProviderSearchRequest
    ) -> ProviderSearchResult:
        query_vector = None
        if request.mode == "smart" and self.embedder is not None and self.weights.dense > 0:
            query_vector = await asyncio.to_thread(self._embed_query, request.query)
        return await asyncio.to_thread(self.search_sync, space, request, query_vector)

    async def _browse(self, space: SpaceBinding, request: BrowseRequest) -> list[Insight]:
        return await asyncio.to_thread(self.browse_sync, space, request)

    async def _graph(self, space: SpaceBinding, limit: int) -> GraphProjection:
        return await asyncio.to_thread(self.graph_sync, space, limit)

    async def _remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        return (await asyncio.to_thread(self.remember_many_sync, space, [item]))[0]

    async def _remember_many(
        self, space: SpaceBinding, items: list[RememberItem]
    ) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.remember_many_sync, space, items)

    async def _related(self, space: SpaceBinding, request: RelatedRequest) -> list[Insight]:
        return await asyncio.to_thread(self.related_sync, space, request)

    async def _link(self, space: SpaceBinding, request: LinkRequest) -> dict[str, Any]:
        return await asyncio.to_thread(self.link_sync, space, request)

    async def _forget(self, space: SpaceBinding, insight_id: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.forget_sync, space, insight_id)

    async def _discover(
        self, config: Mapping[str, Any], secrets: Mapping[str, str]
    ) -> list[DiscoveredSpace]:
        return await asyncio.to_thread(self.discover_sync)

    async def merge(self, target: SpaceBinding, sources: Sequence[SpaceBinding]) -> dict[str, Any]:
        """Copy the live rows of ``sources`` into ``target`` (sources stay untouched)."""
        return await asyncio.to_thread(self.merge_sync, target, sources)

    # ------------------------------------------------------------------ embeddings

    def _embed_query(self, text: str) -> np.ndarray | None:
        assert self.embedder is not None
        try:
            vec = np.asarray(self.embedder.embed_query(text), dtype=np.float32)
        except Exception as exc:
            raise ProviderError(f"embedding the query failed: {exc}") from exc
        return _unit(vec)

    def _embed_documents(self, texts: list[str]) -> list[np.ndarray]:
        assert self.embedder is not None
        try:
            vectors = self.embedder.embed_documents(texts)
        except Exception as exc:
            raise ProviderError(
                f"embedding failed, nothing was stored: {exc}. Fix the embedder or disable "
                "embeddings (embedding.enabled=false)"
            ) from exc
        if len(vectors) != len(texts):
            raise ProviderError("the embedder returned a different number of vectors than texts")
        return [_unit(np.asarray(v, dtype=np.float32)) for v in vectors]

    # ------------------------------------------------------------------ writes

    def remember_many_sync(
        self, space: SpaceBinding, items: Sequence[RememberItem]
    ) -> list[dict[str, Any]]:
        """Store ``items`` in one transaction; one receipt per item."""
        self._ready()
        items = list(items)
        vectors = (
            self._embed_documents([i.content for i in items]) if self.embedder is not None else None
        )
        analyses = [_Analysis(" ".join([i.content, *i.tags, *i.entities])) for i in items]
        hashes = [_content_hash(i) for i in items]
        now = self._clock()
        with self.db.write() as conn:
            return self._insert(conn, space, items, analyses, hashes, vectors, now)

    def _insert(
        self,
        conn: Connection,
        space: SpaceBinding,
        items: list[RememberItem],
        analyses: list[_Analysis],
        hashes: list[str],
        vectors: list[np.ndarray] | None,
        now: float,
    ) -> list[dict[str, Any]]:
        existing = dict(
            conn.execute(
                sa.select(INSIGHTS.c.content_hash, INSIGHTS.c.id).where(
                    INSIGHTS.c.space_id == space.id,
                    INSIGHTS.c.deleted_at.is_(None),
                    INSIGHTS.c.content_hash.in_(set(hashes)),
                )
            ).all()
        )
        receipts: list[dict[str, Any] | None] = [None] * len(items)
        rows: list[dict[str, Any]] = []
        fresh: list[int] = []
        for index, (item, analysis, digest) in enumerate(zip(items, analyses, hashes, strict=True)):
            if digest in existing:
                receipts[index] = {
                    "status": "stored",
                    "id": existing[digest],
                    "duplicate": True,
                    "created": 0,
                }
                continue
            new_id = uuid.uuid4().hex
            existing[digest] = new_id
            fresh.append(index)
            rows.append(
                {
                    "id": new_id,
                    "space_id": space.id,
                    "content": item.content,
                    "content_hash": digest,
                    "category": item.category,
                    "importance": item.importance,
                    "tags": list(item.tags),
                    "entities": list(item.entities),
                    "source": item.source,
                    "metadata": dict(item.metadata),
                    "terms": " ".join(analysis.terms),
                    "term_count": analysis.length,
                    "created_at": now,
                    "updated_at": now,
                }
            )
        if not rows:
            return [r for r in receipts if r is not None]
        previous = conn.execute(
            sa.select(INSIGHTS.c.id)
            .where(INSIGHTS.c.space_id == space.id, INSIGHTS.c.deleted_at.is_(None))
            .order_by(INSIGHTS.c.seq.desc())
            .limit(1)
        ).scalar()
        inserted = conn.execute(
            INSIGHTS.insert().returning(INSIGHTS.c.seq, sort_by_parameter_order=True), rows
        ).all()
        seqs = [int(r[0]) for r in inserted]
        token = _space_token(space.id)
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql(
                f"INSERT INTO {FTS_TABLE}(rowid, terms) VALUES (?, ?)",
                [
                    (seq, _fts_text(token, row["terms"]))
                    for seq, row in zip(seqs, rows, strict=True)
                ],
            )
        df: Counter[str] = Counter()
        total_terms = 0
        for index in fresh:
            df.update(analyses[index].unique)
            total_terms += analyses[index].length
        self._add_term_stats(conn, space.id, df, len(rows), total_terms)
        edges: list[dict[str, Any]] = []
        entity_rows: list[dict[str, Any]] = []
        recent_by_entity: dict[str, deque[tuple[int, str]]] = {}
        for seq, row in zip(seqs, rows, strict=True):
            if previous is not None:
                edges.append(_edge(space.id, previous, row["id"], "temporal", 1.0, now))
            previous = row["id"]
            for entity in dict.fromkeys(_entity_key(e) for e in row["entities"]):
                if not entity:
                    continue
                recent = recent_by_entity.get(entity)
                if recent is None:
                    found = conn.execute(
                        sa.select(INSIGHTS.c.seq, INSIGHTS.c.id)
                        .join(ENTITIES, ENTITIES.c.insight_seq == INSIGHTS.c.seq)
                        .where(
                            ENTITIES.c.space_id == space.id,
                            ENTITIES.c.entity == entity,
                            INSIGHTS.c.deleted_at.is_(None),
                        )
                        .order_by(INSIGHTS.c.seq.desc())
                        .limit(_ENTITY_EDGE_FANOUT)
                    ).all()
                    recent = deque(
                        ((int(s), i) for s, i in reversed(found)), maxlen=_ENTITY_EDGE_FANOUT
                    )
                    recent_by_entity[entity] = recent
                for _, other in recent:
                    edges.append(_edge(space.id, other, row["id"], "entity", 0.5, now))
                recent.append((seq, row["id"]))
                entity_rows.append({"space_id": space.id, "entity": entity, "insight_seq": seq})
        if entity_rows:
            conn.execute(ENTITIES.insert(), entity_rows)
        if edges:
            conn.execute(
                upsert(
                    conn.dialect.name,
                    EDGES,
                    ["source_id", "target_id", "edge_type"],
                    ["weight"],
                ),
                _dedupe_edges(edges),
            )
        if vectors is not None:
            assert self.embedder is not None
            model = self.embedder.model_id
            conn.execute(
                VECTORS.insert(),
                [
                    {
                        "insight_seq": seq,
                        "space_id": space.id,
                        "model": model,
                        "dim": int(vectors[index].shape[0]),
                        "vector": vectors[index].astype(np.float32).tobytes(),
                    }
                    for seq, index in zip(seqs, fresh, strict=True)
                ],
            )
        for seq, index, row in zip(seqs, fresh, rows, strict=True):
            receipts[index] = {"status": "stored", "id": row["id"], "seq": seq, "created": 1}
        return [r for r in receipts if r is not None]

    def _add_term_stats(
        self, conn: Connection, space_id: str, df: Counter[str], docs: int, terms: int
    ) -> None:
        dialect = conn.dialect.name
        if df:
            stmt = _insert_stmt(dialect, SPACE_TERMS)
            stmt = stmt.on_conflict_do_update(
                index_elements=["space_id", "term"],
                set_={"df": SPACE_TERMS.c.df + stmt.excluded.df},
            )
            conn.execute(stmt, [{"space_id": space_id, "term": t, "df": n} for t, n in df.items()])
        stmt = _insert_stmt(dialect, SPACE_STATS)
        stmt = stmt.on_conflict_do_update(
            index_elements=["space_id"],
            set_={
                "docs": SPACE_STATS.c.docs + stmt.excluded.docs,
                "terms": SPACE_STATS.c.terms + stmt.excluded.terms,
                "version": SPACE_STATS.c.version + 1,
            },
        )
        conn.execute(stmt, {"space_id": space_id, "docs": docs, "terms": terms, "version": 1})

    def forget_sync(self, space: SpaceBinding, insight_id: str) -> dict[str, Any]:
        """Soft-delete one row: it leaves search, statistics and vectors; its data stays."""
        self._ready()
        with self.db.write() as conn:
            row = conn.execute(
                sa.select(INSIGHTS.c.seq, INSIGHTS.c.terms, INSIGHTS.c.term_count).where(
                    INSIGHTS.c.space_id == space.id,
                    INSIGHTS.c.id == insight_id,
                    INSIGHTS.c.deleted_at.is_(None),
                )
            ).first()
            if row is None:
                raise NotFoundError(
                    f"no memory {insight_id!r} in Memory Space {space.id!r}; search or browse "
                    "the space for the exact id"
                )
            seq, terms, term_count = int(row[0]), row[1] or "", int(row[2])
            now = self._clock()
            conn.execute(
                INSIGHTS.update()
                .where(INSIGHTS.c.seq == seq)
                .values(deleted_at=now, updated_at=now)
            )
            if conn.dialect.name == "sqlite":
                conn.exec_driver_sql(
                    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, terms) VALUES ('delete', ?, ?)",
                    (seq, _fts_text(_space_token(space.id), terms)),
                )
            unique = list(dict.fromkeys(terms.split()))
            if unique:
                conn.execute(
                    SPACE_TERMS.update()
                    .where(SPACE_TERMS.c.space_id == space.id, SPACE_TERMS.c.term.in_(unique))
                    .values(df=SPACE_TERMS.c.df - 1)
                )
            conn.execute(
                SPACE_STATS.update()
                .where(SPACE_STATS.c.space_id == space.id)
                .values(
                    docs=SPACE_STATS.c.docs - 1,
                    terms=SPACE_STATS.c.terms - term_count,
                    version=SPACE_STATS.c.version + 1,
                )
            )
            conn.execute(VECTORS.delete().where(VECTORS.c.insight_seq == seq))
        return {"status": "forgotten", "id": insight_id, "deleted": 1}

    def link_sync(self, space: SpaceBinding, request: LinkRequest) -> dict[str, Any]:
        """Add (or re-weight) a typed edge between two live rows of the space."""
        self._ready()
        if request.source_id == request.target_id:
            raise InvalidInputError("a memory cannot be linked to itself; give two different ids")
        with self.db.write() as conn:
            found = set(
                conn.execute(
                    sa.select(INSIGHTS.c.id).where(
                        INSIGHTS.c.space_id == space.id,
                        INSIGHTS.c.deleted_at.is_(None),
                        INSIGHTS.c.id.in_([request.source_id, request.target_id]),
                    )
                ).scalars()
            )
            missing = [i for i in (request.source_id, request.target_id) if i not in found]
            if missing:
                raise NotFoundError(
                    f"no memory {missing[0]!r} in Memory Space {space.id!r}; link needs two "
                    "existing ids of the same space"
                )
            edge = _edge(
                space.id,
                request.source_id,
                request.target_id,
                request.type,
                request.weight,
                self._clock(),
            )
            edge["reason"] = request.reason
            conn.execute(
                upsert(
                    conn.dialect.name,
                    EDGES,
                    ["source_id", "target_id", "edge_type"],
                    ["weight", "reason"],
                ),
                edge,
            )
        return {
            "status": "linked",
            "id": f"{request.source_id}->{request.target_id}",
            "edges_inserted": 1,
        }

    def merge_sync(self, target: SpaceBinding, sources: Sequence[SpaceBinding]) -> dict[str, Any]:
        """Import the live rows of ``sources`` into ``target`` (non-destructive, deduplicated)."""
        items: list[RememberItem] = []
        readable = self._readable()
        with self.db.read() if readable else nullcontext() as conn:
            for source in sources if readable else ():
                rows = conn.execute(
                    sa.select(INSIGHTS)
                    .where(INSIGHTS.c.space_id == source.id, INSIGHTS.c.deleted_at.is_(None))
                    .order_by(INSIGHTS.c.seq)
                ).mappings()
                items.extend(
                    RememberItem(
                        content=r["content"],
                        category=r["category"],
                        importance=r["importance"],
                        tags=tuple(r["tags"] or ()),
                        entities=tuple(r["entities"] or ()),
                        source=r["source"],
                        metadata=r["metadata"] or {},
                    )
                    for r in rows
                )
        receipts = self.remember_many_sync(target, items) if items else []
        imported = sum(int(r.get("created", 0)) for r in receipts)
        return {
            "status": "merged",
            "id": target.id,
            "imported": imported,
            "skipped_duplicates": len(receipts) - imported,
        }

    # ------------------------------------------------------------------ reads

    def search_sync(
        self,
        space: SpaceBinding,
        request: ProviderSearchRequest,
        query_vector: np.ndarray | None = None,
    ) -> ProviderSearchResult:
        """Ranked rows of one space (see the module docstring for the modes)."""
        if not self._readable():
            return ProviderSearchResult(results=[])
        terms = query_terms(request.query, _MAX_QUERY_TERMS)
        w = self.weights
        with self.db.read() as conn:
            stats = conn.execute(_STATS, {"space": space.id}).first()
            if stats is None or int(stats[0]) <= 0:
                return ProviderSearchResult(results=[])
            docs, total_terms, version = int(stats[0]), int(stats[1]), int(stats[2])
            df: dict[str, int] = {}
            if terms:
                df = {
                    t: int(n)
                    for t, n in conn.execute(_DF, {"space": space.id, "terms": terms}).all()
                    if int(n) > 0
                }
            known = [t for t in terms if t in df]
            if request.mode == "basic":
                pool = (
                    self._lexical_pool(conn, space.id, known, "AND", w.pool)
                    if known and len(known) == len(terms)
                    else []
                )
            else:
                pool = self._lexical_pool(
                    conn, space.id, _prune(known, df, w.posting_budget), "OR", w.pool
                )
            dense: dict[int, float] = {}
            cache: _VectorCache | None = None
            if query_vector is not None and request.mode == "smart":
                cache = self._load_vectors(conn, space.id, version)
                if cache is None or cache.matrix.shape[1] != query_vector.shape[0]:
                    cache = None
                elif cache.matrix.shape[0] <= w.dense_scan_limit:
                    dense = cache.top(query_vector, w.dense_pool)
            candidates = list(dict.fromkeys([*pool, *dense]))
            if not candidates:
                hint = None if terms else "the query has no searchable words"
                return ProviderSearchResult(results=[], hint=hint)
            rows = self._terms_by_seq(conn, space.id, candidates, request)
            idf = {t: math.log(1.0 + (docs - n + 0.5) / (n + 0.5)) for t, n in df.items()}
            unknown_idf = math.log(1.0 + (docs + 0.5) / 1.5) * w.unknown_term_weight
            ideal = sum(idf.get(t, unknown_idf) for t in terms) or 1.0
            avgdl = max(total_terms / docs, 1.0)
            lo, hi = _similarity_range(self.embedder)

            def score(seq: int, text: str) -> tuple[float, float, float]:
                lexical = min(1.0, _bm25(text, idf, avgdl, w.k1, w.b) / ideal)
                if cache is None:
                    return (lexical, lexical, 0.0)
                cos = dense.get(seq)
                if cos is None:
                    cos = cache.similarity(seq, query_vector)  # type: ignore[arg-type]
                semantic = min(1.0, max(0.0, (cos - lo) / (hi - lo)))
                return ((1.0 - w.dense) * lexical + w.dense * semantic, lexical, semantic)

            base = {seq: score(seq, text) for seq, text in rows.items()}
            final = {seq: parts[0] for seq, parts in base.items()}
            if w.neighbour > 0 and request.mode == "smart" and base:
                top = heapq.nlargest(w.neighbour_top, base, key=lambda s: base[s][0])
                near = self._neighbour_seqs(conn, space.id, top)
                missing = {s for pair in near.values() for s in pair} - set(base)
                if missing:
                    extra = self._terms_by_seq(conn, space.id, list(missing), None)
                    for seq, text in extra.items():
                        base[seq] = score(seq, text)
                for seq, pair in near.items():
                    boost = max((base[s][0] for s in pair if s in base), default=0.0)
                    final[seq] = min(1.0, final[seq] + w.neighbour * boost)
            ranked = sorted((s for s in final if final[s] > 0), key=lambda s: (-final[s], -s))[
                : request.limit
            ]
            full = self._full_rows(conn, ranked)
        results = []
        for seq in ranked:
            row = full.get(seq)
            if row is None:
                continue
            _, lexical, semantic = base[seq]
            if lexical > 0 and semantic > 0:
                via = "hybrid"
            elif semantic > 0:
                via = "semantic"
            else:
                via = "keyword"
            results.append(_insight(row, space, score=round(final[seq], 6), via=via))
        return ProviderSearchResult(results=results)

    def _lexical_pool(
        self, conn: Connection, space_id: str, terms: list[str], conjunction: str, pool: int
    ) -> list[int]:
        if not terms:
            return []
        if conn.dialect.name == "sqlite":
            query = _fts_query(_space_token(space_id), terms, conjunction)
            return [
                int(r[0])
                for r in conn.exec_driver_sql(
                    f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? "
                    f"ORDER BY bm25({FTS_TABLE}) LIMIT ?",
                    (query, pool),
                ).all()
            ]
        if conn.dialect.name == "postgresql":
            return [
                int(r[0])
                for r in conn.execute(
                    sa.text(
                        "SELECT seq FROM mnemon_insights WHERE space_id = :space AND "
                        "tsv @@ CAST(:q AS tsquery) "
                        "ORDER BY ts_rank(tsv, CAST(:q AS tsquery)) DESC, seq DESC LIMIT :pool"
                    ),
                    {"space": space_id, "q": _pg_query(terms, conjunction), "pool": pool},
                ).all()
            ]
        raise ProviderError(f"unsupported database dialect {conn.dialect.name!r}")

    def _load_vectors(self, conn: Connection, space_id: str, version: int) -> _VectorCache | None:
        assert self.embedder is not None
        model = self.embedder.model_id
        with self._lock:
            cached = self._vectors.get(space_id)
        if cached is not None and cached.version == version and cached.model == model:
            return cached
        rows = conn.execute(
            sa.select(VECTORS.c.insight_seq, VECTORS.c.vector).where(
                VECTORS.c.space_id == space_id, VECTORS.c.model == model
            )
        ).all()
        if not rows:
            return None
        seqs = np.fromiter((int(r[0]) for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
        cache = _VectorCache(version, model, seqs, matrix)
        with self._lock:
            self._vectors[space_id] = cache
        return cache

    def _terms_by_seq(
        self,
        conn: Connection,
        space_id: str,
        seqs: list[int],
        request: ProviderSearchRequest | None,
    ) -> dict[int, str]:
        out: dict[int, str] = {}
        stmt = _TERMS_BY_SEQ
        if request is not None and request.category:
            stmt = stmt.where(INSIGHTS.c.category == request.category)
        if request is not None and request.source:
            stmt = stmt.where(INSIGHTS.c.source == request.source)
        for start in range(0, len(seqs), 500):
            chunk = seqs[start : start + 500]
            out.update(
                (int(s), t or "")
                for s, t in conn.execute(stmt, {"seqs": chunk, "space": space_id}).all()
            )
        return out

    def _full_rows(self, conn: Connection, seqs: list[int]) -> dict[int, Mapping[str, Any]]:
        if not seqs:
            return {}
        rows = conn.execute(_ROWS_BY_SEQ, {"seqs": seqs}).mappings()
        return {int(r["seq"]): r for r in rows}

    def _neighbour_seqs(
        self, conn: Connection, space_id: str, seqs: list[int]
    ) -> dict[int, tuple[int, ...]]:
        """The previous and next live row of the same space for each ``seq`` (one query)."""
        if not seqs:
            return {}
        rows = conn.execute(_NEIGHBOURS, {"seqs": seqs, "space": space_id}).all()
        return {int(s): tuple(int(x) for x in (b, a) if x is not None) for s, b, a in rows}

    def browse_sync(self, space: SpaceBinding, request: BrowseRequest) -> list[Insight]:
        """Live rows of the space, newest first."""
        if not self._readable():
            return []
        stmt = (
            sa.select(INSIGHTS)
            .where(INSIGHTS.c.space_id == space.id, INSIGHTS.c.deleted_at.is_(None))
            .order_by(INSIGHTS.c.seq.desc())
            .limit(request.limit)
            .offset(request.offset)
        )
        if request.category:
            stmt = stmt.where(INSIGHTS.c.category == request.category)
        with self.db.read() as conn:
            rows = conn.execute(stmt).mappings().all()
        return [_insight(r, space) for r in rows]

    async def find_by_metadata(
        self, space: SpaceBinding, key: str, value: str, *, limit: int = 20
    ) -> list[Insight]:
        """Live rows whose ``metadata[key]`` is the string ``value``, newest first.

        A keyed lookup for callers that address rows by a metadata field (the ``BaseStore``
        facade finds an item by its ``store_key``) without browsing the whole space.

        Example:
            >>> rows = await provider.find_by_metadata(space, "store_key", "editor")
        """
        return await asyncio.to_thread(
            self.find_by_metadata_sync, self._space(space), key, value, limit
        )

    def find_by_metadata_sync(
        self, space: SpaceBinding, key: str, value: str, limit: int = 20
    ) -> list[Insight]:
        """Sync twin of :meth:`find_by_metadata`."""
        if not isinstance(key, str) or not key.replace("_", "").isalnum() or len(key) > 64:
            raise InvalidInputError("metadata key must be 1-64 letters, digits or '_'")
        if not isinstance(value, str):
            raise InvalidInputError("find_by_metadata compares string values only")
        check_text(value, "the metadata value")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 500:
            raise InvalidInputError("limit must be an integer between 1 and 500")
        if not self._readable():
            return []
        text = sa.cast(INSIGHTS.c.metadata, sa.Text)
        with self.db.read() as conn:
            if conn.dialect.name == "postgresql":
                from sqlalchemy.dialects.postgresql import JSONB

                field = sa.func.jsonb_extract_path_text(sa.cast(text, JSONB), key)
            else:
                field = sa.func.json_extract(text, f'$."{key}"')
            rows = (
                conn.execute(
                    sa.select(INSIGHTS)
                    .where(
                        INSIGHTS.c.space_id == space.id,
                        INSIGHTS.c.deleted_at.is_(None),
                        field == sa.literal(value, sa.Text),
                    )
                    .order_by(INSIGHTS.c.seq.desc())
                    .limit(limit)
                )
                .mappings()
                .all()
            )
        return [_insight(r, space) for r in rows]

    def related_sync(self, space: SpaceBinding, request: RelatedRequest) -> list[Insight]:
        """Breadth-first traversal (both directions) from one live row."""
        missing = NotFoundError(
            f"no memory {request.id!r} in Memory Space {space.id!r}; related needs the "
            "exact id of a stored memory"
        )
        if not self._readable():
            raise missing
        with self.db.read() as conn:
            start = conn.execute(
                sa.select(INSIGHTS.c.id).where(
                    INSIGHTS.c.space_id == space.id,
                    INSIGHTS.c.id == request.id,
                    INSIGHTS.c.deleted_at.is_(None),
                )
            ).scalar()
            if start is None:
                raise missing
            seen: dict[str, tuple[int, str]] = {request.id: (0, "")}
            frontier = [request.id]
            for depth in range(1, request.depth + 1):
                if not frontier:
                    break
                stmt = sa.select(EDGES.c.source_id, EDGES.c.target_id, EDGES.c.edge_type).where(
                    EDGES.c.space_id == space.id,
                    sa.or_(EDGES.c.source_id.in_(frontier), EDGES.c.target_id.in_(frontier)),
                )
                if request.edge:
                    stmt = stmt.where(EDGES.c.edge_type == request.edge)
                nxt: list[str] = []
                current = set(frontier)
                for src, dst, kind in conn.execute(stmt.order_by(EDGES.c.created_at)).all():
                    for here, there in ((src, dst), (dst, src)):
                        if here in current and there not in seen:
                            seen[there] = (depth, kind)
                            nxt.append(there)
                frontier = nxt
            ids = [i for i in seen if i != request.id]
            if not ids:
                return []
            rows = {
                r["id"]: r
                for r in conn.execute(
                    sa.select(INSIGHTS).where(
                        INSIGHTS.c.id.in_(ids), INSIGHTS.c.deleted_at.is_(None)
                    )
                ).mappings()
            }
        out: list[Insight] = []
        for insight_id in ids:
            row = rows.get(insight_id)
            if row is None:
                continue
            depth, kind = seen[insight_id]
            out.append(_insight(row, space, depth=depth, edge_type=kind))
            if len(out) >= request.limit:
                break
        return out

    def graph_sync(self, space: SpaceBinding, limit: int) -> GraphProjection:
        """The newest ``limit`` live rows and the edges between them."""
        if not self._readable():
            return GraphProjection()
        with self.db.read() as conn:
            rows = conn.execute(
                sa.select(
                    INSIGHTS.c.id, INSIGHTS.c.content, INSIGHTS.c.category, INSIGHTS.c.entities
                )
                .where(INSIGHTS.c.space_id == space.id, INSIGHTS.c.deleted_at.is_(None))
                .order_by(INSIGHTS.c.seq.desc())
                .limit(limit)
            ).all()
            ids = [r[0] for r in rows]
            edges = []
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                edges.extend(
                    conn.execute(
                        sa.select(
                            EDGES.c.source_id, EDGES.c.target_id, EDGES.c.edge_type, EDGES.c.weight
                        ).where(EDGES.c.space_id == space.id, EDGES.c.source_id.in_(chunk))
                    ).all()
                )
        keep = set(ids)
        return GraphProjection(
            nodes=[
                GraphNode(
                    id=r[0],
                    label=r[1] if len(r[1]) <= 80 else r[1][:79] + "…",
                    category=r[2],
                    entities=list(r[3] or []),
                )
                for r in rows
            ],
            edges=[
                GraphEdge(source=s, target=t, type=k, weight=float(wt))
                for s, t, k, wt in edges
                if t in keep
            ],
        )

    def status_sync(self, space: SpaceBinding) -> ProviderStatus:
        """Counts for one space (and the database size)."""
        if not self._readable():
            return ProviderStatus(healthy=True, total_insights=0, deleted_insights=0, edge_count=0)
        with self.db.read() as conn:
            live = conn.execute(
                sa.select(INSIGHTS.c.category, sa.func.count())
                .where(INSIGHTS.c.space_id == space.id, INSIGHTS.c.deleted_at.is_(None))
                .group_by(INSIGHTS.c.category)
            ).all()
            deleted = conn.execute(
                sa.select(sa.func.count()).where(
                    INSIGHTS.c.space_id == space.id, INSIGHTS.c.deleted_at.is_not(None)
                )
            ).scalar()
            edge_count = conn.execute(
                sa.select(sa.func.count()).where(EDGES.c.space_id == space.id)
            ).scalar()
            entities = conn.execute(
                sa.select(ENTITIES.c.entity, sa.func.count().label("n"))
                .join(INSIGHTS, ENTITIES.c.insight_seq == INSIGHTS.c.seq)
                .where(ENTITIES.c.space_id == space.id, INSIGHTS.c.deleted_at.is_(None))
                .group_by(ENTITIES.c.entity)
                .order_by(sa.desc("n"), ENTITIES.c.entity)
                .limit(10)
            ).all()
            size = _database_size(conn)
        by_category = {str(c): int(n) for c, n in live}
        return ProviderStatus(
            healthy=True,
            total_insights=sum(by_category.values()),
            deleted_insights=int(deleted or 0),
            edge_count=int(edge_count or 0),
            db_size_bytes=size,
            by_category=by_category,
            top_entities=[(str(e), int(n)) for e, n in entities],
        )

    def discover_sync(self) -> list[DiscoveredSpace]:
        """Native spaces that hold rows but have no catalog entry (e.g. after a restore)."""
        if not self._readable():
            return []
        with self.db.read() as conn:
            known = set(conn.execute(sa.select(SPACES.c.id)).scalars())
            found = conn.execute(
                sa.select(INSIGHTS.c.space_id, sa.func.count())
                .where(INSIGHTS.c.deleted_at.is_(None))
                .group_by(INSIGHTS.c.space_id)
            ).all()
        return [
            DiscoveredSpace(
                external_id=str(space_id),
                name=str(space_id),
                description=f"{int(n)} stored memories",
            )
            for space_id, n in found
            if space_id not in known
        ]


# ----------------------------------------------------------------------------------------------


def _unit(vec: np.ndarray) -> np.ndarray:
    if vec.ndim != 1 or not np.all(np.isfinite(vec)):
        raise ProviderError("the embedder returned an invalid vector")
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm > 0 else vec


def _similarity_range(embedder: Embedder | None) -> tuple[float, float]:
    value = getattr(embedder, "similarity_range", None)
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(v, (int, float)) for v in value)
        and value[1] > value[0]
    ):
        return (float(value[0]), float(value[1]))
    return (0.0, 1.0)


def _bm25(text: str, idf: Mapping[str, float], avgdl: float, k1: float, b: float) -> float:
    if not idf:
        return 0.0
    terms = text.split()
    if not terms:
        return 0.0
    counts = Counter(t for t in terms if t in idf)
    if not counts:
        return 0.0
    norm = k1 * (1.0 - b + b * len(terms) / avgdl)
    return sum(idf[t] * tf * (k1 + 1.0) / (tf + norm) for t, tf in counts.items())


def _entity_key(entity: str) -> str:
    return " ".join(entity.split()).lower()[:200]


def _edge(
    space_id: str, source: str, target: str, kind: str, weight: float, now: float
) -> dict[str, Any]:
    return {
        "space_id": space_id,
        "source_id": source,
        "target_id": target,
        "edge_type": kind,
        "weight": weight,
        "reason": None,
        "created_at": now,
    }


def _dedupe_edges(edges: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    unique: dict[tuple[str, str, str], dict[str, Any]] = {}
    for edge in edges:
        unique[(edge["source_id"], edge["target_id"], edge["edge_type"])] = edge
    return list(unique.values())


def _insert_stmt(dialect: str, table: sa.Table) -> Any:
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table)


def _database_size(conn: Connection) -> int | None:
    try:
        if conn.dialect.name == "postgresql":
            return int(
                conn.execute(sa.text("SELECT pg_database_size(current_database())")).scalar()
            )
        database = conn.engine.url.database
        if database and database != ":memory:" and Path(database).exists():
            return Path(database).stat().st_size
    except Exception:  # size is informative only
        return None
    return None


def _insight(
    row: Mapping[str, Any],
    space: SpaceBinding,
    *,
    score: float | None = None,
    via: str | None = None,
    depth: int | None = None,
    edge_type: str | None = None,
) -> Insight:
    return Insight(
        id=row["id"],
        content=row["content"],
        category=row["category"],
        importance=int(row["importance"]),
        tags=list(row["tags"] or []),
        entities=list(row["entities"] or []),
        source=row["source"],
        metadata=dict(row["metadata"] or {}),
        score=score,
        matched_via=via,
        created_at=float(row["created_at"]),
        depth=depth,
        edge_type=edge_type,
        space_id=space.id,
        space_name=space.name,
    )
