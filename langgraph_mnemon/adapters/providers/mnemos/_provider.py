"""``MnemosProvider``: the native provider's transactions.

Every operation is one synchronous contract hook (``_search``, ``_remember_many``, ...) that
opens one transaction on the :class:`Database` and runs a step function of :mod:`._write`,
:mod:`._search` or :mod:`._sql`; :class:`BaseProvider`'s public methods check the input first.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np

import langgraph_mnemon.adapters.providers.mnemos._keyed as _keyed
import langgraph_mnemon.adapters.providers.mnemos._remove as _remove
import langgraph_mnemon.adapters.providers.mnemos._sql as _sql
import langgraph_mnemon.adapters.providers.mnemos._write as _write
from langgraph_mnemon.adapters.providers.base import BaseProvider, check_item
from langgraph_mnemon.adapters.providers.mnemos._pg_search import search as pg_search
from langgraph_mnemon.adapters.providers.mnemos._pg_search import (
    vector_search as pg_vector_search,
)
from langgraph_mnemon.adapters.providers.mnemos._pgvector import (
    PgVector,
    ensure_index,
    known_pgvector,
    pgvector_of,
    remember_pgvector,
)
from langgraph_mnemon.adapters.providers.mnemos._ranking import (
    HybridWeights,
    VectorCaches,
    unit_vector,
)
from langgraph_mnemon.adapters.providers.mnemos._search import (
    MAX_QUERY_TERMS,
    SearchContext,
    rank_all,
    search,
)
from langgraph_mnemon.adapters.providers.text import query_terms
from langgraph_mnemon.contracts import check_text
from langgraph_mnemon.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    ProviderError,
    StorageError,
)
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    Capabilities,
    DiscoveredSpace,
    Embedder,
    GraphProjection,
    KeyedRow,
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
from langgraph_mnemon.memory_layers.spaces.schema import MIGRATIONS
from langgraph_mnemon.storage.db import Database, sqlite_file

__all__ = ["MnemosProvider"]

_PARSED_ROWS = 20_000  # split rows kept across searches (about 3 KB each: ~60 MB at most)


class MnemosProvider(BaseProvider):
    """Native Memory Space provider on a :class:`Database` (SQLite or PostgreSQL).

    It declares every capability of the provider contract; scores are normalised relevance in
    0..1. Writes create or migrate the tables on first use; reads of a database without them
    see empty spaces.

    Args:
        database: the shared SQL database (``Database(create_engine(url))``).
        embedder: optional dense embedder (``model_id``, ``embed_documents``,
            ``embed_query``); with one, remember stores vectors and smart search is hybrid.
        weights: the scoring knobs (:class:`HybridWeights`; the defaults otherwise).
        clock: UNIX seconds for ``created_at`` / ``deleted_at`` (tests pass a fixed clock).

    Raises:
        InvalidInputError: ``database`` is not a :class:`Database` or ``embedder`` lacks the
            embedder methods.

    Example:
        >>> provider = MnemosProvider(Database(create_engine("sqlite:///./mnemon.db")))
        >>> space = SpaceBinding(id="notes", name="Notes")
        >>> provider.remember_many(space, [RememberItem(content="Ada likes tea")])
        [{'status': 'stored', 'id': '...', 'seq': 1, 'created': 1}]
        >>> provider.search(space, ProviderSearchRequest(query="tea")).results[0].content
        'Ada likes tea'
    """

    runs_inline = True  # in-process SQL: its own statement and lock timeouts bound every call
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
            history=True,
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
        self._vectors = VectorCaches()
        # Rows' analysed terms split once per process, not once per search (see
        # SearchContext.parsed); replaced by an empty one when it grows past _PARSED_ROWS.
        self._parsed: dict[str, Any] = {}
        # Spaces whose rows and queries another embedder serves in this process (a store
        # with its own index ``embed``); every other space uses ``embedder``.
        self._space_embedders: dict[str, Embedder] = {}

    def setup(self) -> None:
        """Create or migrate the Memory Space tables (idempotent)."""
        self.db.setup(MIGRATIONS)

    def _ready(self) -> None:
        """Before a write: create or migrate the tables."""
        if not self.db.is_setup(MIGRATIONS):
            self.db.setup(MIGRATIONS)

    def _readable(self) -> bool:
        """Before a read: whether the tables exist (a read creates nothing; absent = empty)."""
        if self.db.ready_for_read(MIGRATIONS):
            return True
        self._check_creatable()
        return False

    def _check_creatable(self) -> None:
        """An absent SQLite file reads as empty only if it could be created: a path under a
        regular file is an unusable database, not an empty one."""
        path = sqlite_file(self.db.engine.url)
        if path is None or path.exists():
            return
        parent = path.absolute().parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir():
            raise StorageError(
                f"the SQLite database {path} cannot be created: {parent} is not a folder; "
                "point the database URL at a file in a folder"
            )

    # ------------------------------------------------------------------ contract hooks

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        query_vector = None
        embedder = self.embedder_for(space.id)
        if request.mode == "smart" and embedder is not None and self.weights.dense > 0:
            query_vector = self._embed_query(request.query, embedder)
        return self._search_rows(space, request, query_vector)

    def _remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        return self._remember_many(space, [item])[0]

    # ------------------------------------------------------------------ embeddings

    def use_embedder(self, space_id: str, embedder: Embedder) -> None:
        """Embed the rows and queries of one space with ``embedder`` in this process.

        A store with its own index ``embed`` calls it for each of its spaces, so its puts,
        its query searches and the agent's recall over those spaces use one model; the
        vectors are stored under ``embedder.model_id`` and a search only ever compares vectors
        of its own model (rows embedded by another model count by keyword there).

        Args:
            space_id: The space.
            embedder: The embedder of its rows.

        Raises:
            InvalidInputError: ``embedder`` is not an embedder.
            ConflictError: the space already uses an embedder of another model here.

        Example:
            >>> provider.use_embedder("store-1f…", embedder_from(my_embeddings, dims=384))
        """
        if not is_embedder(embedder):
            raise InvalidInputError("use_embedder() takes an embedder (see embedder_from)")
        current = self._space_embedders.setdefault(space_id, embedder)
        if current is not embedder and current.model_id != embedder.model_id:
            raise ConflictError(
                f"Memory Space {space_id!r} is indexed with {current.model_id!r} in this "
                f"process, not {embedder.model_id!r}: use one index embed per namespace"
            )

    def embedder_for(self, space_id: str) -> Embedder | None:
        """The embedder of one space's rows and queries (see :meth:`use_embedder`)."""
        return self._space_embedders.get(space_id, self.embedder)

    def _pgvector(self) -> PgVector | None:
        """The database's pgvector once the schema is current (None on SQLite, without the
        extension, or before the tables exist)."""
        if self.db.dialect != "postgresql" or not self.db.is_setup(MIGRATIONS):
            return None
        known, found = known_pgvector(self.db.engine)
        if not known:  # asked once per engine: a search asks before every dense read
            found = self.db.run_single(pgvector_of)
            remember_pgvector(self.db.engine, found)
        return found

    def _index_vectors(self, embedder: Embedder, vectors: Sequence[np.ndarray | None]) -> None:
        """With pgvector: the HNSW index of the vectors' model and dimensions, created before
        the write that stores the first of them (once per process)."""
        found = self._pgvector()
        dims = {int(v.shape[0]) for v in vectors if v is not None and v.shape[0]}
        if found is not None and dims:
            ensure_index(self.db, found, embedder.model_id, dims)

    def dense_mode(self, space_id: str | None = None) -> str:
        """How dense (vector) search runs for a space's rows and queries in this process:
        ``pgvector-hnsw`` (the database's HNSW index), ``in-process`` (an exact scan of the
        space's vectors held in memory, kept current by reading only what changed), or
        ``off: <reason>``.

        Args:
            space_id: the space (its own embedder, see :meth:`use_embedder`); None: the
                provider's embedder.

        Returns:
            The mode, one line.

        Example:
            >>> MnemosProvider(db).dense_mode()
            'off: no embedder (embedding is disabled or none is configured)'
        """
        embedder = self.embedder if space_id is None else self.embedder_for(space_id)
        if embedder is None:
            return "off: no embedder (embedding is disabled or none is configured)"
        if self.weights.dense <= 0:
            return "off: the dense weight is 0 (HybridWeights.dense)"
        found = self._pgvector() if self.db.dialect == "postgresql" else None
        if found is not None:
            return found.mode(int(getattr(embedder, "dims", 0) or 0))
        if self.db.dialect == "postgresql" and self.db.is_setup(MIGRATIONS):
            return "in-process: the PostgreSQL server has no vector extension (pgvector)"
        return "in-process"

    def _space_dense(self, conn: Any, space: SpaceBinding, total: int) -> str:
        """:meth:`dense_mode`, or ``off`` when the space's rows hold vectors of other models
        only (they are never compared with this embedder's queries)."""
        mode = self.dense_mode(space.id)
        embedder = self.embedder_for(space.id)
        if embedder is None or mode.startswith("off") or not total:
            return mode
        models = _sql.vector_models(conn, space.id)
        if models and embedder.model_id not in models:
            other = ", ".join(sorted(models))
            return (
                f"off: the space's vectors are of {other}, the embedder is "
                f"{embedder.model_id} (rows count by keyword only)"
            )
        return mode

    def _embed_query(self, text: str, embedder: Embedder | None = None) -> np.ndarray | None:
        embedder = embedder or self.embedder
        assert embedder is not None
        try:
            vec = np.asarray(embedder.embed_query(text), dtype=np.float32)
        except Exception as exc:
            raise ProviderError(f"embedding the query failed: {exc}") from exc
        return unit_vector(vec)

    def _embed_documents(
        self, texts: list[str], embedder: Embedder | None = None
    ) -> list[np.ndarray]:
        embedder = embedder or self.embedder
        assert embedder is not None
        try:
            vectors = embedder.embed_documents(texts)
        except Exception as exc:
            raise ProviderError(
                f"embedding failed, nothing was stored: {exc}. Fix the embedder or disable "
                "embeddings (embedding.enabled=false)"
            ) from exc
        if len(vectors) != len(texts):
            raise ProviderError("the embedder returned a different number of vectors than texts")
        return [unit_vector(np.asarray(v, dtype=np.float32)) for v in vectors]

    # ------------------------------------------------------------------ writes

    def _remember_many(
        self, space: SpaceBinding, items: Sequence[RememberItem]
    ) -> list[dict[str, Any]]:
        """Store ``items`` in one transaction; one receipt per item."""
        items = list(items)
        for item in items:  # refused before any I/O: the database could not encode them
            check_item(item)
        self._ready()
        embedder = self.embedder_for(space.id)
        vectors = self._embed_documents([i.content for i in items], embedder) if embedder else None
        if embedder is not None and vectors:
            self._index_vectors(embedder, vectors)
        analyses = [_write.Analysis(" ".join([i.content, *i.tags, *i.entities])) for i in items]
        hashes = [_write.content_hash(i) for i in items]
        now = self._clock()
        with self.db.write() as conn:
            return _write.insert(conn, space, items, analyses, hashes, vectors, embedder, now)

    def _forget(self, space: SpaceBinding, insight_id: str) -> dict[str, Any]:
        """Soft-delete one row: it leaves search, statistics and vectors; its data stays."""
        self._ready()
        with self.db.write() as conn:
            return _write.forget(conn, space, insight_id, self._clock)

    # ------------------------------------------------------------------ history

    def _missing(self, space: SpaceBinding, memory_id: str) -> NotFoundError:
        return NotFoundError(
            f"no memory {memory_id!r} in Memory Space {space.id!r}; search or browse the "
            "space for the exact id"
        )

    def _vector_of(self, space: SpaceBinding, text: str) -> tuple[np.ndarray | None, Any]:
        """The stored vector of ``text`` for the space's embedder (computed before the write
        transaction, as remember does) and the embedder; ``(None, None)`` without one."""
        embedder = self.embedder_for(space.id)
        if embedder is None:
            return None, None
        (vector,) = self._embed_documents([text], embedder)
        self._index_vectors(embedder, [vector])
        return vector, embedder

    def _supersede(self, space: SpaceBinding, memory_id: str, item: RememberItem) -> dict[str, Any]:
        """Store ``item`` and retire the live row ``memory_id`` in one transaction (see
        :func:`._write.supersede`); an unknown or retired id writes nothing."""
        check_item(item)
        if not self._readable():
            raise self._missing(space, memory_id)
        with self.db.read() as conn:  # before embedding: a bad id costs no embedder call
            if not _sql.is_live(conn, space.id, memory_id):
                raise self._missing(space, memory_id)
        vector, embedder = self._vector_of(space, item.content)
        analysis = _write.Analysis(" ".join([item.content, *item.tags, *item.entities]))
        now = self._clock()
        with self.db.write() as conn:
            return _write.supersede(conn, space, memory_id, item, analysis, vector, embedder, now)

    def _restore(self, space: SpaceBinding, memory_id: str) -> dict[str, Any]:
        """Make a forgotten or superseded row live again, re-embedded (see
        :func:`._write.restore`)."""
        row = self._stored_row(space, memory_id)
        vector, embedder = None, None
        if row["deleted_at"] is not None:
            vector, embedder = self._vector_of(space, row["content"])
        model = None if embedder is None else embedder.model_id
        with self.db.write() as conn:
            return _write.restore(conn, space, memory_id, vector, model, self._clock())

    def _get(self, space: SpaceBinding, memory_id: str) -> MemoryRecord:
        """Any row of the space by id, live or not, with its status and history links."""
        return _sql.history_record(self._stored_row(space, memory_id), space, self._clock())

    def _stored_row(self, space: SpaceBinding, memory_id: str) -> Any:
        """The row ``memory_id`` of the space, live or not; NotFoundError when there is none."""
        if not self._readable():
            raise self._missing(space, memory_id)
        with self.db.read() as conn:
            row = _sql.row_by_id(conn, space.id, memory_id)
        if row is None:
            raise self._missing(space, memory_id)
        return row

    def remove_space(self, space: SpaceBinding) -> dict[str, Any]:
        """Delete every row of one space for good (Memory Space removal, see :mod:`._remove`;
        no tables yet: nothing to delete).

        Raises:
            InvalidInputError: ``space`` is not a :class:`SpaceBinding`.

        Example:
            >>> provider.remove_space(space)
            {'status': 'removed', 'id': 'notes', 'removed': 3, 'live': 2}
        """
        space = self._space(space)
        if not self._readable():
            return {"status": "removed", "id": space.id, "removed": 0, "live": 0}
        with self.db.write() as conn:
            return _remove.remove_space_rows(conn, space.id)

    def _link(self, space: SpaceBinding, request: LinkRequest) -> dict[str, Any]:
        """Add (or re-weight) a typed edge between two live rows of the space."""
        self._ready()
        if request.source_id == request.target_id:
            raise InvalidInputError("a memory cannot be linked to itself; give two different ids")
        with self.db.write() as conn:
            return _write.link(conn, space, request, self._clock)

    def merge(self, target: SpaceBinding, sources: Sequence[SpaceBinding]) -> dict[str, Any]:
        """Copy the live rows of ``sources`` into ``target`` (sources stay untouched;
        duplicates are skipped).

        Args:
            target: the space that receives the rows.
            sources: the spaces read (never changed).

        Returns:
            ``{"status": "merged", "id", "imported", "skipped_duplicates"}``.

        Example:
            >>> provider.merge(notes, [old_notes])
            {'status': 'merged', 'id': 'notes', 'imported': 12, 'skipped_duplicates': 3}
        """
        items: list[RememberItem] = []
        readable = self._readable()
        with self.db.read() if readable else nullcontext() as conn:
            for source in sources if readable else ():
                items.extend(_sql.live_items(conn, source.id))
        receipts = self._remember_many(target, items) if items else []
        imported = sum(int(r.get("created", 0)) for r in receipts)
        return {
            "status": "merged",
            "id": target.id,
            "imported": imported,
            "skipped_duplicates": len(receipts) - imported,
        }

    # ------------------------------------------------------------------ reads

    def _search_rows(
        self,
        space: SpaceBinding,
        request: ProviderSearchRequest,
        query_vector: np.ndarray | None = None,
    ) -> ProviderSearchResult:
        """Ranked rows of one space (``smart`` | ``keyword`` | ``basic``; see the package
        docstring); ``query_vector`` is the unit query embedding for smart mode.

        On PostgreSQL the reads are one statement in autocommit (:mod:`._pg_search`), with
        pgvector a smart search's dense pool comes from the HNSW index in a read transaction;
        elsewhere, or while concurrent writes keep changing the space, step by step in a read
        transaction.
        """
        if not self._readable():
            return ProviderSearchResult(results=[])
        terms = query_terms(request.query, MAX_QUERY_TERMS)
        weights = self.weights
        if weights.dense_pool < request.limit:  # the dense pool fills a search's depth
            weights = dataclasses.replace(weights, dense_pool=request.limit)
        context = SearchContext(
            weights=weights,
            embedder=self.embedder_for(space.id),
            caches=self._vectors,
            now=self._clock(),
            pgvector=self._pgvector(),
            parsed=self._parsed_rows(),
        )
        if context.pgvector is not None and query_vector is not None and request.mode == "smart":
            with self.db.read() as conn:  # SET LOCAL of the HNSW scan: a transaction
                return pg_vector_search(conn, space, request, terms, query_vector, context)
        if self.db.dialect == "postgresql":
            found = self.db.run_single(pg_search, space, request, terms, query_vector, context)
            if found is not None:
                return found
        with self.db.read() as conn:
            return search(conn, space, request, terms, query_vector, context)

    def _parsed_rows(self) -> dict[str, Any]:
        """The process's split rows (see ``SearchContext.parsed``), a new dict once it holds
        ``_PARSED_ROWS`` texts (a search in flight keeps the one it has)."""
        if len(self._parsed) > _PARSED_ROWS:
            self._parsed = {}
        return self._parsed

    def _browse(self, space: SpaceBinding, request: BrowseRequest) -> list[MemoryRecord]:
        """Live rows of the space (``request.history``: superseded ones too), newest first,
        each with its status."""
        if not self._readable():
            return []
        now = self._clock()
        read = _sql.history_browse_rows if request.history else _sql.browse_rows
        with self.db.read() as conn:
            rows = read(conn, space.id, request, now)
        return [_sql.history_record(r, space, now) for r in rows]

    def find_by_metadata(
        self, space: SpaceBinding, key: str, value: str, *, limit: int = 20
    ) -> list[MemoryRecord]:
        """Live rows whose ``metadata[key]`` is the string ``value``, newest first.

        A keyed lookup for callers that address rows by a metadata field (the ``BaseStore``
        facade finds an item by its ``store_key``) without browsing the whole space.

        Args:
            space: the space searched.
            key: 1-64 letters, digits or ``_``.
            value: the exact string compared.
            limit: at most this many rows (1-500).

        Returns:
            The matching rows as :class:`MemoryRecord` (no score).

        Raises:
            InvalidInputError: a bad space, key, a non-string value or a limit out of range.

        Example:
            >>> rows = provider.find_by_metadata(space, "store_key", "editor")
        """
        space = self._space(space)
        if not isinstance(key, str) or not key.replace("_", "").isalnum() or len(key) > 64:
            raise InvalidInputError("metadata key must be 1-64 letters, digits or '_'")
        if not isinstance(value, str):
            raise InvalidInputError("find_by_metadata compares string values only")
        check_text(value, "the metadata value")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 500:
            raise InvalidInputError("limit must be an integer between 1 and 500")
        if not self._readable():
            return []
        with self.db.read() as conn:
            rows = _sql.rows_by_metadata(conn, space.id, key, value, limit)
        return [_sql.insight(r, space) for r in rows]

    def _related(self, space: SpaceBinding, request: RelatedRequest) -> list[MemoryRecord]:
        """Breadth-first traversal (both directions) from one live row."""
        missing = NotFoundError(
            f"no memory {request.id!r} in Memory Space {space.id!r}; related needs the "
            "exact id of a stored memory"
        )
        if not self._readable():
            raise missing
        with self.db.read() as conn:
            if not _sql.is_live(conn, space.id, request.id):
                raise missing
            seen = _sql.related_walk(conn, space.id, request)
            ids = [i for i in seen if i != request.id]
            if not ids:
                return []
            rows = _sql.live_rows(conn, ids)
        out: list[MemoryRecord] = []
        for insight_id in ids:
            row = rows.get(insight_id)
            if row is None:
                continue
            depth, kind = seen[insight_id]
            out.append(_sql.insight(row, space, depth=depth, edge_type=kind))
            if len(out) >= request.limit:
                break
        return out

    def _graph(self, space: SpaceBinding, limit: int) -> GraphProjection:
        """The newest ``limit`` live rows and the edges between them."""
        if not self._readable():
            return GraphProjection()
        with self.db.read() as conn:
            return _sql.graph_projection(conn, space.id, limit)

    def _status(self, space: SpaceBinding) -> ProviderStatus:
        """Counts for one space (and the database size); an unusable database is unhealthy."""
        try:
            if not self._readable():
                return ProviderStatus(
                    healthy=True,
                    total_insights=0,
                    deleted_insights=0,
                    edge_count=0,
                    dense=self.dense_mode(space.id),
                )
            with self.db.read() as conn:
                status = _sql.space_status(conn, space.id, self._clock())
                dense = self._space_dense(conn, space, status.total_insights or 0)
            return status.model_copy(update={"dense": dense})
        except StorageError as exc:  # a status reports the failure, it does not raise
            return ProviderStatus(healthy=False, error=" ".join(str(exc).split())[:300])

    def _discover(
        self, config: Mapping[str, Any], secrets: Mapping[str, str]
    ) -> list[DiscoveredSpace]:
        """Native spaces that hold rows but have no catalog entry (e.g. after a restore)."""
        if not self._readable():
            return []
        with self.db.read() as conn:
            return _sql.uncatalogued_spaces(conn)

    # ------------------------------------------------------------------ keyed items

    def keyed_get(self, space: SpaceBinding, key: str) -> KeyedRow | None:
        """The live row of ``key`` in one space: one indexed statement (see :mod:`._keyed`).

        Args:
            space: the space read.
            key: the item's key (a memory id also finds that unkeyed row).

        Returns:
            The row as a :class:`KeyedRow`, or None.

        Example:
            >>> provider.keyed_get(space, "editor").content
            '{"theme": "dark"}'
        """
        if not self._readable():
            return None
        return _keyed.get_one(self.db, space.id, key, self._clock())

    def keyed_write(self, writes: _keyed.KeyedWrites) -> list[list[dict[str, Any]]]:
        """Put (``item``) or delete (``None``) keyed items of several spaces in ONE
        transaction, with the vectors of every put computed first (one call per embedder).

        Args:
            writes: ``(space, [KeyedPut(key, item or None, index text, ttl), ...])`` per
                space; a row is keyword-indexed and embedded by its index text (None: its
                content; an empty text: no terms and no vector) and expires ``ttl`` minutes
                after it is written (None: never).

        Returns:
            One raw receipt list per space, one receipt per write.

        Raises:
            ProviderError: the embedder failed (nothing was written).
            StorageError: the database refused the write (nothing was written).

        Example:
            >>> provider.keyed_write([(space, [KeyedPut("k", RememberItem(content="x"))])])
            [[{'status': 'stored', 'id': '...', 'seq': 1, 'created': 1}]]
        """
        for _, group in writes:
            for _, item, *_ in group:
                if item is not None:
                    check_item(item)
        self._ready()
        if all(self.embedder_for(space.id) is None for space, _ in writes):
            return self._keyed_write(writes, None)
        # An identical re-put is not embedded again. The read is a hint (a write that changed
        # in between raises StaleVectors), so it runs outside a transaction: on PostgreSQL in
        # autocommit, no BEGIN / COMMIT round trips.
        wanted = _keyed.vector_hints(self.db, writes, self._clock())
        try:
            return self._keyed_write(writes, self._keyed_vectors(writes, wanted))
        except _keyed.StaleVectors:  # a key changed in between: embed every put
            every = [[put.item is not None for put in group] for _, group in writes]
            return self._keyed_write(writes, self._keyed_vectors(writes, every))

    def _keyed_vectors(
        self, writes: _keyed.KeyedWrites, wanted: list[list[bool]]
    ) -> list[list[np.ndarray | None]]:
        """The vectors of the wanted writes, ONE call per embedder (None for the others; an
        empty vector for an empty index text)."""
        out: list[list[np.ndarray | None]] = [[None] * len(group) for _, group in writes]
        by_embedder: dict[int, tuple[Embedder, list[tuple[int, int, str]]]] = {}
        for n, ((space, group), flags) in enumerate(zip(writes, wanted, strict=True)):
            embedder = self.embedder_for(space.id)
            for m, ((_, item, text, _), flag) in enumerate(zip(group, flags, strict=True)):
                if not flag or item is None or embedder is None:
                    continue
                body = item.content if text is None else text
                if not body.strip():
                    out[n][m] = np.zeros(0, dtype=np.float32)
                    continue
                by_embedder.setdefault(id(embedder), (embedder, []))[1].append((n, m, body))
        for embedder, places in by_embedder.values():
            vectors = self._embed_documents([body for _, _, body in places], embedder)
            self._index_vectors(embedder, vectors)
            for (n, m, _), vector in zip(places, vectors, strict=True):
                out[n][m] = vector
        return out

    def _keyed_write(
        self, writes: _keyed.KeyedWrites, vectors: list[list[np.ndarray | None]] | None
    ) -> list[list[dict[str, Any]]]:
        with self.db.write() as conn:
            return [
                _keyed.write_space(
                    conn,
                    space,
                    group,
                    None if vectors is None else vectors[n],
                    self.embedder_for(space.id),
                    self._clock,
                )
                for n, (space, group) in enumerate(writes)
            ]

    def keyed_rank(
        self, spaces: Sequence[SpaceBinding], query: str
    ) -> list[tuple[int, float, float]]:
        """Every live row of the spaces ranked for ``query``: the smart search's scorer
        without its neighbour and feedback lifts (see :func:`._search.rank_all`). The store
        ranks the items its query search's recall did not return by it, so a query search
        orders every item of a namespace.

        Args:
            spaces: The spaces ranked together (each row scored by its own space's
                statistics and embedder).
            query: The query text.

        Returns:
            ``(seq, relevance 0..1, raw cosine)`` per live row, best first (ties: the higher
            cosine, then the newer row).

        Raises:
            ProviderError: embedding the query failed.

        Example:
            >>> provider.keyed_rank([space], "dark theme")[:2]
            [(12, 0.41, 0.7), (13, 0.0, 0.12)]
        """
        if not self._readable():
            return []
        terms = query_terms(query, MAX_QUERY_TERMS)
        vectors: dict[int, np.ndarray | None] = {}
        out: list[tuple[int, float, float]] = []
        now = self._clock()
        pgvector = self._pgvector()
        for space in spaces:
            embedder = self.embedder_for(space.id)
            vector = None
            if embedder is not None and self.weights.dense > 0 and query.strip():
                if id(embedder) not in vectors:
                    vectors[id(embedder)] = self._embed_query(query, embedder)
                vector = vectors[id(embedder)]
            context = SearchContext(self.weights, embedder, self._vectors, now, pgvector)
            with self.db.read() as conn:
                out.extend(rank_all(conn, space.id, terms, vector, context))
        if len(spaces) > 1:
            out.sort(key=lambda entry: (-entry[1], -entry[2], -entry[0]))
        return out

    def keyed_rows(self, seqs: Sequence[int]) -> list[KeyedRow]:
        """The live rows among ``seqs``, in the order of ``seqs`` (one statement).

        Example:
            >>> [r.key for r in provider.keyed_rows([13, 12])]
            ['k2', 'k1']
        """
        if not self._readable() or not seqs:
            return []
        with self.db.read() as conn:
            return _keyed.rows_by_seq(conn, seqs, self._clock())

    def keyed_page(self, space_ids: Sequence[str], limit: int, offset: int) -> list[KeyedRow]:
        """Live rows of the spaces, newest written first (one statement).

        Example:
            >>> [r.key for r in provider.keyed_page(["notes"], 10, 0)]
            ['k2', 'k1']
        """
        if not self._readable() or not space_ids:
            return []
        with self.db.read() as conn:
            return _keyed.page(conn, space_ids, limit, offset, self._clock())

    def keyed_live_spaces(self, space_ids: Sequence[str]) -> set[str]:
        """Which of ``space_ids`` hold at least one live row (one statement).

        Example:
            >>> provider.keyed_live_spaces(["notes", "empty"])
            {'notes'}
        """
        if not self._readable() or not space_ids:
            return set()
        with self.db.read() as conn:
            return _keyed.live_spaces(conn, space_ids, self._clock())

    def keyed_refresh(self, ids: Sequence[str]) -> int:
        """Restart the time to live of the rows ``ids`` that have one and have not expired
        (``expires_at = now + ttl_minutes``). A read finds them first, so rows without a time
        to live cost no write transaction.

        Returns:
            How many rows were refreshed.

        Example:
            >>> provider.keyed_refresh([provider.keyed_get(space, "k").id])
            1
        """
        if not ids or not self._readable():
            return 0
        now = self._clock()
        due = self.db.run_single(_keyed.refreshable, ids, now)
        if not due:
            return 0
        with self.db.write() as conn:
            return _keyed.refresh(conn, due, now)

    def keyed_sweep(self, batch: int = 500) -> int:
        """Soft-delete every row whose time to live ran out (out of the keyword index, the
        statistics and the vectors): up to ``batch`` expired rows found per read of the
        expiry index, each space's share deleted in a transaction of its own.

        Returns:
            How many rows were deleted.

        Example:
            >>> provider.keyed_sweep()
            2
        """
        if not self._readable():
            return 0
        now = self._clock()
        done = 0
        while True:
            found = self.db.run_single(_keyed.expired_rows, now, batch)
            swept = 0
            for space_id, seqs in found.items():
                with self.db.write() as conn:
                    swept += _keyed.sweep(conn, space_id, seqs, now)
            done += swept
            # Fewer than a batch: that was all. None swept: another replica took them.
            if sum(map(len, found.values())) < batch or not swept:
                return done
