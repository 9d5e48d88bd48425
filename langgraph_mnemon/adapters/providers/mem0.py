"""The ``mem0`` provider: Memory Spaces in mem0's open-source ``Memory``, offline.

One provider owns one folder: a local Qdrant store at ``<path>/qdrant`` (one collection per
space, see below), mem0's history database at ``<path>/history.db`` and mem0's home folder at
``<path>/mem0-home`` (mem0 writes a ``config.json`` there at import instead of ``~/.mem0``;
a ``MEM0_DIR`` you set is kept). mem0 embeds with the given :class:`Embedder` (through
mem0's ``langchain`` embedder) and calls a chat model only for ``infer=True``; without one it
gets a stand-in that refuses every call, so no API key is ever needed. mem0's telemetry is
forced off before mem0 is imported (``MEM0_TELEMETRY=False``, and the module flags when mem0
was imported earlier). ``mem0ai`` is imported on the first operation, never at import of
this module; a missing install raises :class:`ProviderError` naming
``pip install 'langgraph-mnemon[mem0]'``.

Spaces map to mem0's scoping: a space reads and writes the mem0 ``user_id`` (and/or
``agent_id``) of its config, by default ``mnemon-<space id>``, inside the Qdrant collection
of its config (``collection``). A new space without ids gets its own collection,
``<collection>-<space id>`` (or ``<collection>-<hash of the id>`` when the id does not fit),
recorded by :meth:`Mem0Provider.place`: local Qdrant filters in Python over every point of a
collection, so one collection per space keeps a recall's cost that of its own space. The
user/agent filter still applies inside it. A space configured with explicit ids and no
``collection`` (every space created before per-space collections, and a space pointed at an
existing mem0 user) uses the shared collection ``collection``. Each collection has its own
mem0 ``Memory`` (made on first use, cached); all of them share the provider's one Qdrant
client. Discovery lists every collection's user and agent ids.

Semantics, as mem0 2.2 has them:

* ``infer=False`` (default, ``write_mode="exact"``): ``Memory.add(..., infer=False)`` stores the
  content verbatim; the receipt is ``{"status": "stored", "id": <mem0 id>, "created": 1}``.
* ``infer=True`` (``write_mode="async"``, needs ``model``): mem0's model extracts facts and
  decides what is kept. ``ADD`` events -> ``stored``; ``UPDATE`` -> ``updated``; ``DELETE`` /
  ``NONE`` / no event -> ``skipped`` (nothing committed from this content).
* Scores: mem0 gates candidates on the cosine similarity (``threshold`` 0.1, 0 for keyword
  mode) and reports ``min(1, (cosine + bm25 + entity boost) / max possible)``. This provider
  creates its Qdrant collections *without* mem0's ``bm25`` sparse slot (filling it would make
  mem0 download the fastembed ``Qdrant/bm25`` model), so the score is the cosine similarity,
  plus mem0's entity boost when spaCy and ``en_core_web_sm`` are installed. Rows with a
  non-finite score are dropped and scores are clamped to 0..1: ``score_semantics`` is
  ``normalized``. ``smart`` and ``basic`` are the same mem0 search; ``keyword`` keeps, from up
  to 200 semantic candidates, the rows sharing a search term with the query.
* Forget is a hard delete (``deletion_mode="hard"``): the vector-store row and the row's
  entries in mem0's history database (its ``ADD`` / ``DELETE`` audit trail with the text).
  With ``infer=True`` mem0 also keeps the raw input messages of each write in that database
  (its ``messages`` table, not tied to one memory); forget does not remove those.
* Browse sorts the newest 10,000 rows of a space (mem0 lists in id order) and pages them.

Local Qdrant allows one client per folder (a lock file): a second provider on the same path
gets :class:`ProviderError` (code ``folder-locked``) until the first one is ``close()``-d.
Local Qdrant is not thread-safe, so every mem0 call runs under one lock (mem0's synchronous
``Memory``, in the caller's thread, like every provider call).
A read of a folder that does not exist yet answers empty and creates nothing. The folder,
``qdrant`` and ``history.db`` are never followed through a symbolic link.

Example:
    >>> provider = Mem0Provider("./.mnemon/mem0", embedder=HashingEmbedder(256))
    >>> provider.remember(space, RememberItem(content="Deploys freeze on Fridays."))
    {'status': 'stored', 'id': '4f0c...', 'created': 1, ...}
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import re
import sqlite3
import stat
import threading
import uuid
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from langgraph_mnemon.adapters.providers._mem0_support import (
    add_receipt,
    finite_score,
    keyword_match,
    load_mem0,
    offline_problem,
    payload_metadata,
    purge_history,
    record_from_item,
    scope_filters,
)
from langgraph_mnemon.adapters.providers.base import BaseProvider
from langgraph_mnemon.contracts import check_text, safe_text
from langgraph_mnemon.errors import (
    InvalidInputError,
    MnemonError,
    NotFoundError,
    ProviderError,
    StorageError,
)
from langgraph_mnemon.memory_layers.spaces import (
    MAX_QUERY_CHARS,
    BrowseRequest,
    Capabilities,
    ConfigField,
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

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["Mem0Provider"]

T = TypeVar("T")

_COLLECTION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
_SPACE_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")  # no '_': cannot forge '<name>_entities'
_ENTITIES = "_entities"  # mem0 keeps '<collection>_entities' beside each collection
_ENTITY_ID = re.compile(r"^[^\s\x00-\x1f\x7f]{1,128}$")
_THRESHOLD = 0.1  # mem0's default relevance gate on the cosine similarity
_KEYWORD_POOL = 200
_BROWSE_SCAN = 10_000
_DISCOVER_SCAN = 200_000
_SCOPE_KEYS = ("user_id", "agent_id")
_CONFIG_KEYS = (*_SCOPE_KEYS, "collection")
_log = logging.getLogger(__name__)

_DESCRIPTOR = ProviderDescriptor(
    id="mem0",
    label="mem0",
    capabilities=Capabilities(
        search=True, browse=True, remember=True, remember_many=False, forget=True, discover=True
    ),
    score_semantics="normalized",
    write_mode="exact",
    deletion_mode="hard",
    local=True,
    config_fields=(
        ConfigField(
            name="user_id",
            label="mem0 user_id",
            help="The mem0 user whose memories this space reads and writes "
            "(default mnemon-<space id>).",
        ),
        ConfigField(
            name="agent_id",
            label="mem0 agent_id",
            help="A mem0 agent id to scope the space to (alone or with user_id).",
        ),
        ConfigField(
            name="collection",
            label="Qdrant collection",
            help="The Qdrant collection of the space (default: its own collection for a new "
            "space without ids, else the provider's shared one).",
        ),
    ),
)


class _DropMessage(logging.Filter):
    """Drops one expected mem0 warning (about the bm25 slot we leave out on purpose)."""

    def __init__(self, fragment: str) -> None:
        super().__init__()
        self.fragment = fragment

    def filter(self, record: logging.LogRecord) -> bool:
        return self.fragment not in record.getMessage()


@contextmanager
def _quiet_setup() -> Iterator[None]:
    """Silence what mem0's Qdrant setup says about choices this provider made deliberately."""
    qdrant_log = logging.getLogger("mem0.vector_stores.qdrant")
    drop = _DropMessage("predates v3 hybrid search")
    qdrant_log.addFilter(drop)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Payload indexes have no effect")
            yield
    finally:
        qdrant_log.removeFilter(drop)


def _entity_id(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"mem0 {key} must be a string (got {type(value).__name__})")
    text = check_text(value, f"mem0 {key}").strip()
    if not _ENTITY_ID.match(text):
        raise InvalidInputError(
            f"mem0 {key} must be 1-128 characters without spaces or control characters "
            f"(got {value!r})"
        )
    return text


def _collection_name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _COLLECTION.match(value) or value.endswith(_ENTITIES):
        raise InvalidInputError(
            f"{what} must be 1-63 letters, digits, '_' or '-', starting with a letter or digit "
            f"and not ending in {_ENTITIES!r} (mem0's entity collections) (got {value!r})"
        )
    return value


def _memory_id(value: str, space: SpaceBinding) -> str:
    """mem0 ids are UUIDs; anything else cannot name a stored row (refused before I/O)."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise NotFoundError(
            f"no memory {value!r} in Memory Space {space.id!r}; mem0 ids are UUIDs, search or "
            "browse the space for the exact id"
        ) from None


class Mem0Provider(BaseProvider):
    """Memory Spaces stored by mem0's open-source ``Memory`` on a local Qdrant folder.

    Args:
        path: the provider's folder (created by the first write).
        embedder: the embedder mem0 uses for rows and queries (its dimension fixes the
            collection's).
        model: a LangChain chat model for ``infer=True`` (mem0's ``langchain`` LLM).
        infer: let mem0's model extract facts from each write instead of storing it verbatim.
        collection: the shared Qdrant collection and the prefix of per-space collections
            (mem0 adds ``<name>_entities`` beside each).
        provider_id: the descriptor id (another id lets two mem0 folders sit side by side).
        label: the descriptor label.

    Raises:
        InvalidInputError: a bad argument, or ``infer=True`` without ``model``.

    Example:
        >>> provider = Mem0Provider(tmp_path / "mem0", embedder=HashingEmbedder(256))
        >>> provider.descriptor.write_mode
        'exact'
    """

    descriptor = _DESCRIPTOR

    def __init__(
        self,
        path: Path | str,
        *,
        embedder: Embedder,
        model: BaseChatModel | None = None,
        infer: bool = False,
        collection: str = "mnemon",
        provider_id: str = "mem0",
        label: str = "mem0",
    ) -> None:
        if not isinstance(path, (str, Path)) or not str(path).strip():
            raise InvalidInputError("Mem0Provider needs a folder path (path=)")
        if not is_embedder(embedder):
            raise InvalidInputError(
                "Mem0Provider needs an Embedder instance (e.g. adapters.embeddings.HashingEmbedder)"
            )
        if model is not None:
            # Deferred: LangChain loads only for a provider that is given a model.
            from langchain_core.language_models import BaseChatModel

            if not isinstance(model, BaseChatModel):
                raise InvalidInputError(
                    "model must be a LangChain BaseChatModel instance (or None)"
                )
        if not isinstance(infer, bool):
            raise InvalidInputError("infer must be True or False")
        if infer and model is None:
            raise InvalidInputError(
                "infer=True lets mem0's model extract facts, so it needs model=<a chat model>; "
                "use infer=False to store content verbatim without a model"
            )
        _collection_name(collection, "collection")
        self.path = Path(path).expanduser().absolute()
        self.embedder = embedder
        self.infer = infer
        self.collection = collection
        self._model = model
        self._lock = threading.Lock()
        self._memories: dict[str, Any] = {}  # one mem0 Memory per Qdrant collection
        self._memory_class: Any = None
        self._client: Any = None
        self.descriptor = _described(provider_id, label, infer)

    def __repr__(self) -> str:
        return f"Mem0Provider({str(self.path)!r}, infer={self.infer})"

    # ------------------------------------------------------------------ configuration

    def check_config(self, config: Mapping[str, Any], secrets: Mapping[str, str]) -> dict[str, Any]:
        """Accepts ``user_id`` and/or ``agent_id`` (mem0 entity ids) and ``collection``.

        Raises:
            InvalidInputError: an unknown key, a secret, an id with spaces or control
                characters, or a collection name Qdrant or mem0 would not take.

        Example:
            >>> provider.check_config({"user_id": "alice"}, {})
            {'user_id': 'alice'}
        """
        if secrets:
            raise InvalidInputError("mem0 spaces take no secrets")
        unknown = set(config) - set(_CONFIG_KEYS)
        if unknown:
            raise InvalidInputError(
                "mem0 spaces take only user_id, agent_id and collection "
                f"(got {', '.join(sorted(unknown))})"
            )
        checked = {
            key: _entity_id(config[key], key)
            for key in _SCOPE_KEYS
            if config.get(key) not in (None, "")
        }
        if config.get("collection") not in (None, ""):
            checked["collection"] = _collection_name(config["collection"], "mem0 collection")
        return checked

    def place(self, space_id: str, config: dict[str, Any]) -> dict[str, Any]:
        """A space without ids gets the mem0 user ``mnemon-<space id>`` and its own collection.

        Both are stored in the space's config, so the names stay fixed. A config with ids
        keeps what it names: without ``collection`` that is the shared collection, where
        spaces made before per-space collections (whose configs come back here when they
        are reconfigured) keep their rows.

        Example:
            >>> provider.place("notes", {})
            {'user_id': 'mnemon-notes', 'collection': 'mnemon-notes'}
        """
        if any(config.get(key) for key in _SCOPE_KEYS):
            return config
        return {
            **config,
            "user_id": f"mnemon-{space_id}",
            "collection": config.get("collection") or self.space_collection(space_id),
        }

    def owns_storage(self, space_id: str, config: Mapping[str, Any]) -> bool:
        """Whether ``config`` keeps the space's rows under its own mem0 ids: the user
        ``mnemon-<space id>``, no ``agent_id``, and its own collection (or the shared one,
        where the user filter still keeps them apart). What a non-admin's space may use.

        Example:
            >>> provider.owns_storage("notes", {"user_id": "alice"})
            False
        """
        user = config.get("user_id")
        collection = config.get("collection")
        return (
            user in (None, "", f"mnemon-{space_id}")
            and config.get("agent_id") in (None, "")
            and collection in (None, "", self.collection, self.space_collection(space_id))
        )

    def space_collection(self, space_id: str) -> str:
        """The collection :meth:`place` gives a new space: ``<collection>-<space id>``, or
        ``<collection>-<12 hex of the id's SHA-256>`` when the id is not a short slug.

        Example:
            >>> provider.space_collection("notes")
            'mnemon-notes'
        """
        name = f"{self.collection}-{space_id}"
        if _SPACE_SLUG.match(str(space_id)) and len(name) <= 63:
            return name
        digest = hashlib.sha256(str(space_id).encode("utf-8", "surrogatepass")).hexdigest()
        return f"{self.collection[:50]}-{digest[:12]}"

    def collection_of(self, space: SpaceBinding) -> str:
        """The Qdrant collection a space reads and writes (the shared one when its config
        names none).

        Raises:
            InvalidInputError: the config names a collection mem0 cannot use.
        """
        named = space.config.get("collection")
        if named in (None, ""):
            return self.collection
        return _collection_name(named, f"the collection of Memory Space {space.id!r}")

    # ------------------------------------------------------------------ folder and client

    @property
    def qdrant_path(self) -> Path:
        """The local Qdrant folder."""
        return self.path / "qdrant"

    @property
    def history_path(self) -> Path:
        """mem0's history database."""
        return self.path / "history.db"

    def _present(self) -> bool:
        """Whether the store exists; :class:`StorageError` when the folder is unusable."""
        refuse_symlink(self.path, "mem0 folder")
        try:
            mode = os.lstat(self.path).st_mode
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StorageError.from_os_error(exc, "open the mem0 folder", self.path) from None
        if not stat.S_ISDIR(mode):
            raise StorageError(
                f"the mem0 folder {self.path} is not a folder; point the provider at a folder",
                code="storage-error",
            )
        refuse_symlink(self.qdrant_path, "mem0 Qdrant folder")
        refuse_symlink(self.history_path, "mem0 history database")
        return self.qdrant_path.exists()

    def _client_for(self, *, create: bool) -> Any:
        """The provider's one Qdrant client (under ``self._lock``); ``None`` for a read of no
        store."""
        if self._client is not None:
            return self._client
        if not self._present() and not create:
            return None
        problem = offline_problem([])
        if problem:
            raise ProviderError(problem, code="offline-guard")
        self._memory_class = load_mem0(self.path / "mem0-home")  # before any folder is made
        self.path.mkdir(parents=True, exist_ok=True)
        from qdrant_client import QdrantClient

        self._client = QdrantClient(path=str(self.qdrant_path))
        return self._client

    def _memory_for(self, collection: str, *, create: bool) -> Any:
        """The mem0 ``Memory`` of one collection (under ``self._lock``), made on first use;
        ``None`` for a read of a collection that does not exist (nothing is created)."""
        memory = self._memories.get(collection)
        if memory is not None:
            return memory
        client = self._client_for(create=create)
        if client is None or (not create and not client.collection_exists(collection)):
            return None
        dims = self._dimensions()
        problem = offline_problem(self._prepare(client, dims, collection))
        if problem:
            raise ProviderError(problem, code="offline-guard")
        with _quiet_setup():
            memory = self._memory_class.from_config(self._config(client, dims, collection))
        self._memories[collection] = memory
        return memory

    def _dimensions(self) -> int:
        dim = getattr(self.embedder, "dim", None)
        if isinstance(dim, int) and not isinstance(dim, bool) and dim > 0:
            return dim
        return len(self.embedder.embed_query("dimension probe"))

    def _prepare(self, client: Any, dims: int, collection: str) -> list[str]:
        """Create missing collections without a bm25 slot; existing ones that have one."""
        from qdrant_client import models

        with_bm25 = []
        for name in (collection, f"{collection}{_ENTITIES}"):
            if not client.collection_exists(name):
                client.create_collection(
                    collection_name=name,
                    vectors_config=models.VectorParams(
                        size=dims, distance=models.Distance.COSINE, on_disk=True
                    ),
                )
                continue
            params = client.get_collection(name).config.params
            dense = params.vectors.get("") if isinstance(params.vectors, dict) else params.vectors
            size = getattr(dense, "size", None)
            if size != dims:
                raise ProviderError(
                    f"the Qdrant collection {name!r} in {self.qdrant_path} holds {size}-dimension "
                    f"vectors but the embedder gives {dims}; use the embedder it was built with "
                    "or another collection (collection=)",
                    code="dimension-mismatch",
                )
            if params.sparse_vectors and "bm25" in params.sparse_vectors:
                with_bm25.append(name)
        return with_bm25

    def _config(self, client: Any, dims: int, collection: str) -> dict[str, Any]:
        # Deferred: the LangChain adapters load with mem0, not with the provider.
        from langgraph_mnemon.adapters.providers._mem0_langchain import (
            EmbedderEmbeddings,
            NoChatModel,
        )

        return {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": collection,
                    "embedding_model_dims": dims,
                    "client": client,
                    "path": str(self.qdrant_path),
                    "on_disk": True,
                },
            },
            "embedder": {
                "provider": "langchain",
                "config": {"model": EmbedderEmbeddings(self.embedder), "embedding_dims": dims},
            },
            "llm": {"provider": "langchain", "config": {"model": self._model or NoChatModel()}},
            "history_db_path": str(self.history_path),
        }

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """mem0, Qdrant and SQLite failures as typed errors that say what to do."""
        try:
            yield
        except MnemonError:
            raise
        except OSError as exc:
            raise StorageError.from_os_error(exc, action, self.path) from None
        except (sqlite3.DatabaseError, json.JSONDecodeError, pickle.UnpicklingError) as exc:
            raise StorageError(
                f"could not {action}: a file in the mem0 folder {self.path} is damaged "
                f"({type(exc).__name__}: {safe_text(exc)[:160]}); restore it from a backup or "
                "move the folder away. Nothing was changed.",
                code="storage-damaged",
            ) from None
        except RuntimeError as exc:
            if "already accessed" not in str(exc):
                raise ProviderError(f"mem0 could not {action}: {safe_text(exc)[:240]}") from None
            raise ProviderError(
                f"the mem0 folder {self.qdrant_path} is open in another provider or process "
                "(local Qdrant allows one client per folder); close() the other provider, "
                "share one provider, or use another folder",
                code="folder-locked",
            ) from None
        except Exception as exc:
            raise ProviderError(
                f"mem0 could not {action}: {type(exc).__name__}: {safe_text(exc)[:240]}"
            ) from None

    def _run(
        self, action: str, collection: str | None, fn: Callable[[Any], T], *, create: bool, empty: T
    ) -> T:
        """``fn`` on the ``Memory`` of ``collection`` (on the client when ``None``), under the
        provider's lock: local Qdrant is not thread-safe."""
        with self._lock, self._errors(action):
            if collection is None:
                target = self._client_for(create=create)
            else:
                target = self._memory_for(collection, create=create)
            return empty if target is None else fn(target)

    # ------------------------------------------------------------------ hooks

    def _remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        metadata = payload_metadata(item)  # validated before any I/O
        scope = scope_filters(space)
        collection = self.collection_of(space)

        def add(memory: Any) -> dict[str, Any]:
            result = memory.add(item.content, **scope, metadata=metadata, infer=self.infer)
            rows = result.get("results") if isinstance(result, Mapping) else None
            return add_receipt(list(rows or []), infer=self.infer)

        return self._run("store the memory", collection, add, create=True, empty={})

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        query = safe_text(request.query).strip()
        if not query:
            raise InvalidInputError("the search query is empty; give words to search for")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidInputError(f"the search query is longer than {MAX_QUERY_CHARS} characters")
        filters: dict[str, Any] = dict(scope_filters(space))
        if request.category:
            filters["category"] = request.category
        if request.source:
            filters["source"] = request.source
        keyword = request.mode == "keyword"
        collection = self.collection_of(space)

        def search(memory: Any) -> list[MemoryRecord]:
            found = memory.search(
                query,
                top_k=min(max(request.limit * 10, 50), _KEYWORD_POOL) if keyword else request.limit,
                filters=filters,
                threshold=0.0 if keyword else _THRESHOLD,
            )
            return _ranked(found, space, query, request, keyword=keyword)

        rows = self._run("search", collection, search, create=False, empty=[])
        return ProviderSearchResult(results=rows)

    def _browse(self, space: SpaceBinding, request: BrowseRequest) -> list[MemoryRecord]:
        filters: dict[str, Any] = dict(scope_filters(space))
        if request.category:
            filters["category"] = request.category
        collection = self.collection_of(space)

        def browse(memory: Any) -> list[MemoryRecord]:
            found = memory.get_all(filters=filters, top_k=_BROWSE_SCAN)
            rows = [record_from_item(i, space, via=None) for i in _items(found)]
            rows.sort(key=lambda r: (r.created_at or 0.0, r.id), reverse=True)
            return rows[request.offset : request.offset + request.limit]

        return self._run("browse", collection, browse, create=False, empty=[])

    def _forget(self, space: SpaceBinding, insight_id: str) -> dict[str, Any]:
        memory_id = _memory_id(insight_id, space)
        scope = scope_filters(space)
        collection = self.collection_of(space)
        missing = NotFoundError(
            f"no memory {insight_id!r} in Memory Space {space.id!r}; search or browse the "
            "space for the exact id"
        )

        def forget(memory: Any) -> dict[str, Any]:
            item = memory.get(memory_id)
            # mem0's get/delete are not scoped: the row must belong to this space's ids.
            if not item or any(item.get(k) != v for k, v in scope.items()):
                raise missing
            memory.delete(memory_id)
            purge_history(memory, memory_id)
            return {"status": "deleted", "id": memory_id, "deleted": 1}

        receipt = self._run("forget the memory", collection, forget, create=False, empty=None)
        if receipt is None:
            raise missing
        return receipt

    def _status(self, space: SpaceBinding) -> ProviderStatus:
        scope = scope_filters(space)
        try:
            collection = self.collection_of(space)
            # Through the space's Memory: a damaged history database shows up here too.
            total = self._run(
                "count",
                collection,
                lambda _: _count(self._client, collection, scope),
                create=False,
                empty=0,
            )
        except MnemonError as exc:
            return ProviderStatus(healthy=False, error=safe_text(exc)[:300])
        return ProviderStatus(healthy=True, total_insights=total, deleted_insights=0)

    def _discover(
        self, config: Mapping[str, Any], secrets: Mapping[str, str]
    ) -> list[DiscoveredSpace]:
        return self._run("list mem0 users", None, self._scan, create=False, empty=[])

    def close(self) -> None:
        """Close every collection's mem0 history connection, then the one Qdrant client
        (releases the folder lock).

        Idempotent; a later operation opens the folder again.

        Example:
            >>> provider.close()
        """
        with self._lock:
            memories, client = list(self._memories.values()), self._client
            self._memories, self._client = {}, None
            try:
                for memory in memories:
                    memory.close()
            finally:
                if client is not None:
                    client.close()

    # ------------------------------------------------------------------ Qdrant reads

    def _scan(self, client: Any) -> list[DiscoveredSpace]:
        """The user ids (and agent ids of rows without a user) of every collection."""
        names = sorted(
            c.name for c in client.get_collections().collections if not c.name.endswith(_ENTITIES)
        )
        found: list[DiscoveredSpace] = []
        budget = _DISCOVER_SCAN
        for name in names:
            if budget <= 0:
                _log.warning("mem0 discovery stopped after %d rows", _DISCOVER_SCAN)
                break
            users, agents, seen = _scan_collection(client, name, budget)
            budget -= seen
            shared = name == self.collection
            found += [_discovered("user_id", u, n, name, shared) for u, n in sorted(users.items())]
            found += [
                _discovered("agent_id", a, n, name, shared) for a, n in sorted(agents.items())
            ]
        return found


def _scope_filter(scope: Mapping[str, str]) -> Any:
    from qdrant_client import models

    return models.Filter(
        must=[
            models.FieldCondition(key=k, match=models.MatchValue(value=v)) for k, v in scope.items()
        ]
    )


def _count(client: Any, collection: str, scope: Mapping[str, str]) -> int:
    if not client.collection_exists(collection):
        return 0
    counted = client.count(
        collection_name=collection, count_filter=_scope_filter(scope), exact=True
    )
    return int(counted.count)


def _scan_collection(
    client: Any, collection: str, budget: int
) -> tuple[Counter[str], Counter[str], int]:
    """``(user id counts, agent id counts of rows without a user, rows read)``."""
    users: Counter[str] = Counter()
    agents: Counter[str] = Counter()
    offset, seen = None, 0
    while seen < budget:
        points, offset = client.scroll(
            collection_name=collection,
            limit=min(1000, budget - seen),
            offset=offset,
            with_payload=list(_SCOPE_KEYS),
            with_vectors=False,
        )
        seen += len(points)
        for point in points:
            payload = point.payload or {}
            if payload.get("user_id"):
                users[str(payload["user_id"])] += 1
            elif payload.get("agent_id"):
                agents[str(payload["agent_id"])] += 1
        if offset is None:
            break
    return users, agents, seen


def _described(provider_id: str, label: str, infer: bool) -> ProviderDescriptor:
    try:
        return ProviderDescriptor.model_validate(
            {
                **_DESCRIPTOR.model_dump(),
                "id": provider_id,
                "label": label,
                "write_mode": "async" if infer else "exact",
            }
        )
    except ValidationError as exc:
        raise InvalidInputError(
            "provider_id must be a lowercase slug (a letter, then letters, digits or '-') and "
            f"label a string: {exc.errors()[0]['msg']}"
        ) from None


def _items(found: Any) -> list[Mapping[str, Any]]:
    rows = found.get("results") if isinstance(found, Mapping) else None
    return [r for r in rows or [] if isinstance(r, Mapping) and r.get("id")]


def _ranked(
    found: Any, space: SpaceBinding, query: str, request: ProviderSearchRequest, *, keyword: bool
) -> list[MemoryRecord]:
    """mem0's results in its order (best first), finite scores only, keyword-filtered."""
    rows = []
    for item in _items(found):
        score = finite_score(item.get("score"))
        if score is None:
            continue
        if keyword and not keyword_match(query, str(item.get("memory") or "")):
            continue
        rows.append(record_from_item(item, space, score=round(score, 6), via=request.mode))
        if len(rows) >= request.limit:
            break
    return rows


def _discovered(key: str, value: str, count: int, collection: str, shared: bool) -> DiscoveredSpace:
    """One (collection, id) pair; rows of the shared collection keep their old external id."""
    who = "user" if key == "user_id" else "agent"
    external = f"{who}:{value}" if shared else f"{who}:{value}@{collection}"
    return DiscoveredSpace(
        external_id=external,
        name=value,
        description=f"mem0 memories of {who} {value} in collection {collection} ({count} rows)",
        config={key: value, "collection": collection},
    )
