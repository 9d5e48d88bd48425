"""The ``chroma`` provider: one Chroma collection per Memory Space.

The client is a ``PersistentClient`` under ``<root>/chroma`` by default, or an ``HttpClient``
when a host is configured (``chroma.host`` / ``chroma.port``). Every collection uses
:class:`MnemonEmbeddingFunction`, registered with Chroma under the name ``mnemon`` — never
Chroma's default embedding function, which downloads a model at first use. With dense
embeddings switched off for the native provider (``embedding.enabled=false``) Chroma still
embeds with the offline WordLlama embedder: a vector store needs vectors. A local folder is
created by the first write; reads of a missing folder answer empty. Collections use
cosine distance; a distance ``d`` is reported as the normalised relevance ``max(0, 1 - d)``.
Forget is a hard delete. Chroma's clients are synchronous, like the provider contract: every
hook calls the client in the caller's thread. ``chromadb`` (about a second to import)
loads when the first client opens, with :class:`MnemonEmbeddingFunction`: building the provider,
and a status read of a local folder not made yet, cost no Chroma import.

Modes: ``smart`` and ``basic`` rank by vector similarity; ``keyword`` keeps only documents that
contain a query word and ranks them by similarity.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph_mnemon.adapters.providers.base import BaseProvider
from langgraph_mnemon.errors import InvalidInputError, NotFoundError, ProviderError
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    Capabilities,
    DiscoveredSpace,
    Embedder,
    MemoryRecord,
    ProviderDescriptor,
    ProviderSearchRequest,
    ProviderSearchResult,
    ProviderStatus,
    RememberItem,
    SpaceBinding,
    is_embedder,
)
from langgraph_mnemon.storage.files import refuse_symlink
from langgraph_mnemon.storage.lazy import lazy_attributes

if TYPE_CHECKING:
    from langgraph_mnemon.adapters.providers._chroma_function import MnemonEmbeddingFunction

__all__ = ["ChromaProvider", "MnemonEmbeddingFunction", "collection_name"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$")
_WORD = re.compile(r"[^\W_]{2,}")
_META_PREFIX = "m:"
_BROWSE_SCAN_LIMIT = 20_000  # browse sorts the collection by time; beyond this it is not paged


# chromadb loads on first use (about a second): the embedding function needs it to exist.
__getattr__ = lazy_attributes(__name__, {"MnemonEmbeddingFunction": "._chroma_function"})


def collection_name(space_id: str) -> str:
    """The default collection of a space: ``mnemon-<space id>`` made Chroma-safe."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "-", space_id).strip("._-") or "space"
    return f"mnemon-{safe}"[:512]


def _content_id(item: RememberItem) -> str:
    meta = json.dumps(item.metadata, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(f"{item.content}\x00{meta}".encode(), digest_size=16).hexdigest()


class ChromaProvider(BaseProvider):
    """Memory Spaces in Chroma collections (local folder or a Chroma server)."""

    descriptor = ProviderDescriptor(
        id="chroma",
        label="Chroma",
        capabilities=Capabilities(
            search=True,
            browse=True,
            remember=True,
            remember_many=True,
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
        embedder: Embedder | Callable[[], Embedder],
        *,
        path: Path | str | None = None,
        host: str | None = None,
        port: int = 8000,
        ssl: bool = False,
        token: str | None = None,
        tenant: str = "default_tenant",
        database: str = "default_database",
        follow_symlinks: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``embedder`` is an Embedder instance or a factory (an Embedder class or a function)
        called on first use. ``follow_symlinks=False`` (the host's own ``<root>/chroma``)
        refuses a folder that is a symbolic link with ``StorageError`` (``symlink-refused``).
        A local folder is created by the first write only; reads of a missing folder are empty.
        """
        if not is_embedder(embedder) and not callable(embedder):
            raise InvalidInputError(
                "ChromaProvider needs an Embedder (e.g. adapters.embeddings.WordLlamaEmbedder) "
                "or a function that builds one"
            )
        if host is None and path is None:
            raise InvalidInputError("ChromaProvider needs a folder (path=) or a server (host=)")
        if host is not None and (not isinstance(host, str) or not host.strip()):
            raise InvalidInputError("chroma host must be a non-empty host name")
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise InvalidInputError("chroma port must be between 1 and 65535")
        self._embedder_source = embedder
        self.path = Path(path).expanduser().absolute() if path is not None else None
        self.follow_symlinks = bool(follow_symlinks)
        self.host = host.strip() if host else None
        self.port = port
        self.ssl = bool(ssl)
        self._token = token
        self.tenant = tenant
        self.database = database
        self._clock = clock
        self._client: Any = None
        self._lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._ef: MnemonEmbeddingFunction | None = None
        self.descriptor = self.descriptor.model_copy(update={"local": self.host is None})

    def __repr__(self) -> str:
        where = f"{self.host}:{self.port}" if self.host else str(self.path)
        return f"ChromaProvider({where!r})"

    # ------------------------------------------------------------------ client

    @property
    def embedder(self) -> Embedder:
        """The embedder of every collection (built on first use when given as a factory)."""
        if self._embedder is None:
            source = self._embedder_source
            # A class passes the (structural) Embedder check too: it is a factory, not one.
            embedder = source if is_embedder(source) else source()  # type: ignore[operator]
            if not is_embedder(embedder):
                raise ProviderError("the chroma embedder factory did not return an Embedder")
            self._embedder = embedder
        return self._embedder

    def _embedding_function(self) -> MnemonEmbeddingFunction:
        if self._ef is None:
            # Deferred: importing it loads chromadb (and registers the function with it), so
            # a status read of a folder not made yet costs no chromadb import.
            from langgraph_mnemon.adapters.providers._chroma_function import (
                MnemonEmbeddingFunction,
            )

            self._ef = MnemonEmbeddingFunction(self.embedder)
        return self._ef

    def _connect(self, *, create: bool = True) -> Any:
        """The client; ``None`` for a read (``create=False``) of a local folder not made yet."""
        with self._lock:
            _ = self.embedder  # a factory that builds no Embedder fails here, before any I/O
            if self._client is not None:
                return self._client
            if self.path is not None and not self.host:
                if not self.follow_symlinks:
                    refuse_symlink(self.path, "Chroma folder")
                if not create and not self.path.exists():
                    _check_creatable(self.path)
                    return None  # a read creates nothing
            self._embedding_function()  # registered with Chroma before a client opens
            import chromadb
            from chromadb.config import Settings

            settings = Settings(anonymized_telemetry=False, allow_reset=False)
            try:
                if self.host:
                    headers = {"x-chroma-token": self._token} if self._token else None
                    client = chromadb.HttpClient(
                        host=self.host,
                        port=self.port,
                        ssl=self.ssl,
                        headers=headers,
                        settings=settings,
                        tenant=self.tenant,
                        database=self.database,
                    )
                else:
                    assert self.path is not None
                    self.path.mkdir(parents=True, exist_ok=True)
                    client = chromadb.PersistentClient(
                        path=str(self.path),
                        settings=settings,
                        tenant=self.tenant,
                        database=self.database,
                    )
            except Exception as exc:
                where = f"{self.host}:{self.port}" if self.host else str(self.path)
                raise ProviderError(f"cannot open Chroma at {where}: {exc}") from None
            self._client = client
            return client

    def check_config(self, config: Mapping[str, Any], secrets: Mapping[str, str]) -> dict[str, Any]:
        """Accepts ``collection`` (a Chroma collection name); no secrets per space."""
        unknown = set(config) - {"collection"}
        if unknown:
            raise InvalidInputError(
                f"chroma spaces take only 'collection' (got {', '.join(sorted(unknown))})"
            )
        if secrets:
            raise InvalidInputError(
                "chroma spaces take no secrets; set the server token in chroma.token"
            )
        name = config.get("collection")
        if name is None:
            return {}
        if not isinstance(name, str) or not _NAME.match(name):
            raise InvalidInputError(
                "chroma collection must be 3-512 characters of letters, digits, '.', '_' or '-' "
                f"starting and ending with a letter or digit (got {name!r})"
            )
        return {"collection": name}

    def place(self, space_id: str, config: dict[str, Any]) -> dict[str, Any]:
        """A new space gets its own collection name, unique beyond this catalog.

        Two storage roots sharing one Chroma server both have a ``default`` space; without
        the suffix they would write into the same collection.
        """
        if config.get("collection"):
            return config
        return {
            **config,
            "collection": f"{collection_name(space_id)[:480]}-{uuid.uuid4().hex[:12]}",
        }

    def owns_storage(self, space_id: str, config: Mapping[str, Any]) -> bool:
        """Whether ``config`` keeps the space in its own collection: none named,
        ``mnemon-<space id>``, or that name with the suffix :meth:`place` gives
        (``-<12 hex>``). What a non-admin's space may use.

        Example:
            >>> provider.owns_storage("notes", provider.place("notes", {}))
            True
        """
        name = config.get("collection")
        if not name:
            return True
        own = collection_name(space_id)
        suffixed = re.escape(own[:480]) + r"-[0-9a-f]{12}"
        return isinstance(name, str) and (name == own or re.fullmatch(suffixed, name) is not None)

    def _collection(self, space: SpaceBinding, *, create: bool) -> Any:
        client = self._connect(create=create)
        if client is None:
            return None
        name = space.config.get("collection") or collection_name(space.id)
        try:
            if create:
                return client.get_or_create_collection(
                    name=name,
                    embedding_function=self._embedding_function(),
                    configuration={"hnsw": {"space": "cosine"}},
                    metadata={"mnemon_space": space.id},
                )
            return client.get_collection(name=name, embedding_function=self._embedding_function())
        except Exception as exc:
            if not create and "does not exist" in str(exc).lower():
                return None
            raise ProviderError(f"chroma collection {name!r}: {exc}") from None

    # ------------------------------------------------------------------ contract hooks

    def _remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        return self._remember_many(space, [item])[0]

    def _remember_many(
        self, space: SpaceBinding, items: list[RememberItem]
    ) -> list[dict[str, Any]]:
        collection = self._collection(space, create=True)
        now = self._clock()
        # Ids are keyed by content and metadata, like the native provider's, so writing the
        # same memory again (a re-run ingest) is a duplicate, not a second row.
        ids = [_content_id(item) for item in items]
        try:
            stored = set(collection.get(ids=list(dict.fromkeys(ids)), include=[])["ids"])
            fresh = {i: item for i, item in zip(ids, items, strict=True) if i not in stored}
            if fresh:
                collection.add(
                    ids=list(fresh),
                    documents=[item.content for item in fresh.values()],
                    metadatas=[_metadata(item, now) for item in fresh.values()],
                )
        except Exception as exc:
            raise ProviderError(f"chroma rejected the write: {exc}") from None
        out: list[dict[str, Any]] = []
        for i in ids:
            duplicate = i in stored or fresh.pop(i, None) is None  # later copies in the batch
            out.append({"status": "stored", "id": i, "created": 0 if duplicate else 1})
            if duplicate:
                out[-1]["duplicate"] = True
        return out

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        collection = self._collection(space, create=False)
        if collection is None:
            return ProviderSearchResult(results=[])
        count = collection.count()
        if count == 0:
            return ProviderSearchResult(results=[])
        where: dict[str, Any] | None = None
        clauses = []
        if request.category:
            clauses.append({"category": request.category})
        if request.source:
            clauses.append({"source": request.source})
        if len(clauses) == 1:
            where = clauses[0]
        elif clauses:
            where = {"$and": clauses}
        where_document = None
        if request.mode == "keyword":
            words = list(dict.fromkeys(_WORD.findall(request.query)))[:16]
            if not words:
                return ProviderSearchResult(results=[], hint="the query has no searchable words")
            variants = list(dict.fromkeys(v for w in words for v in (w, w.lower(), w.title())))
            contains = [{"$contains": v} for v in variants]
            where_document = contains[0] if len(contains) == 1 else {"$or": contains}
        found = collection.query(
            query_texts=[request.query],
            n_results=min(request.limit, count),
            where=where,
            where_document=where_document,
            include=["documents", "metadatas", "distances"],
        )
        results = []
        for rid, doc, meta, dist in zip(
            found["ids"][0],
            found["documents"][0],
            found["metadatas"][0],
            found["distances"][0],
            strict=True,
        ):
            relevance = max(0.0, min(1.0, 1.0 - float(dist)))
            results.append(
                _insight(rid, doc, meta, space, score=round(relevance, 6), via=request.mode)
            )
        return ProviderSearchResult(results=results)

    def _browse(self, space: SpaceBinding, request: BrowseRequest) -> list[MemoryRecord]:
        collection = self._collection(space, create=False)
        if collection is None:
            return []
        where = {"category": request.category} if request.category else None
        # Chroma lists in its own order: sort the ids by creation time first, then page.
        index = collection.get(where=where, limit=_BROWSE_SCAN_LIMIT, include=["metadatas"])
        order = sorted(
            zip(index["ids"], index["metadatas"], strict=True),
            key=lambda pair: -_created(pair[1]),
        )
        page = [rid for rid, _ in order[request.offset : request.offset + request.limit]]
        if not page:
            return []
        got = collection.get(ids=page, include=["documents", "metadatas"])
        rows = {
            rid: _insight(rid, doc, meta, space)
            for rid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        }
        return [rows[rid] for rid in page if rid in rows]

    def _forget(self, space: SpaceBinding, insight_id: str) -> dict[str, Any]:
        collection = self._collection(space, create=False)
        if collection is None or not collection.get(ids=[insight_id], include=[])["ids"]:
            raise NotFoundError(
                f"no memory {insight_id!r} in Memory Space {space.id!r}; search or browse the "
                "space for the exact id"
            )
        collection.delete(ids=[insight_id])
        return {"status": "deleted", "id": insight_id, "deleted": 1}

    def _status(self, space: SpaceBinding) -> ProviderStatus:
        try:
            client = self._connect(create=False)
            if client is None:  # no local folder yet: nothing stored, nothing to check
                return ProviderStatus(healthy=True, total_insights=0, deleted_insights=0)
            client.heartbeat()
            collection = self._collection(space, create=False)
        except ProviderError as exc:
            return ProviderStatus(healthy=False, error=str(exc)[:300])
        except Exception as exc:
            return ProviderStatus(healthy=False, error=f"chroma: {exc}"[:300])
        total = collection.count() if collection is not None else 0
        return ProviderStatus(healthy=True, total_insights=total, deleted_insights=0)

    def _discover(
        self, config: Mapping[str, Any], secrets: Mapping[str, str]
    ) -> list[DiscoveredSpace]:
        client = self._connect(create=False)
        if client is None:
            return []
        out = []
        for collection in client.list_collections():
            name = collection if isinstance(collection, str) else collection.name
            out.append(
                DiscoveredSpace(
                    external_id=name,
                    name=name,
                    description=f"Chroma collection {name}",
                    config={"collection": name},
                )
            )
        return out

    def secrets_in_use(self) -> tuple[str, ...]:
        """The server token, so no status or health message can show it."""
        return (self._token,) if self._token else ()

    def close(self) -> None:
        """Drop the client (Chroma keeps no open sockets for the persistent client)."""
        with self._lock:
            self._client = None


def _created(meta: Mapping[str, Any] | None) -> float:
    value = (meta or {}).get("created_at")
    return float(value) if isinstance(value, (int, float)) else 0.0


def _check_creatable(path: Path) -> None:
    """A missing folder reads as empty only if it could be created (not under a file)."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ProviderError(
            f"the Chroma folder {path} cannot be created: {parent} is not a folder; "
            "point chroma.path at a folder"
        )


def _metadata(item: RememberItem, now: float) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "category": item.category,
        "importance": item.importance,
        "source": item.source,
        "created_at": now,
        "tags": json.dumps(list(item.tags), ensure_ascii=False),
        "entities": json.dumps(list(item.entities), ensure_ascii=False),
    }
    for key, value in item.metadata.items():
        meta[_META_PREFIX + key] = value
    return meta


def _json_list(value: Any) -> list[str]:
    if not isinstance(value, str):
        return []
    try:
        parsed = json.loads(value)
    except ValueError:
        return []
    return [str(v) for v in parsed] if isinstance(parsed, list) else []


def _insight(
    rid: str,
    doc: str | None,
    meta: Mapping[str, Any] | None,
    space: SpaceBinding,
    *,
    score: float | None = None,
    via: str | None = None,
) -> MemoryRecord:
    meta = dict(meta or {})
    importance = meta.get("importance")
    created = meta.get("created_at")
    return MemoryRecord(
        id=rid,
        content=doc or "",
        category=str(meta.get("category", "general")),
        importance=int(importance) if isinstance(importance, (int, float)) else None,
        tags=_json_list(meta.get("tags")),
        entities=_json_list(meta.get("entities")),
        source=str(meta["source"]) if "source" in meta else None,
        metadata={
            k[len(_META_PREFIX) :]: v
            for k, v in meta.items()
            if isinstance(k, str) and k.startswith(_META_PREFIX)
        },
        score=score,
        matched_via=via,
        created_at=float(created) if isinstance(created, (int, float)) else None,
        space_id=space.id,
        space_name=space.name,
    )
