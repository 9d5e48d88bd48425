"""The ``store`` provider: any LangGraph ``BaseStore`` (InMemoryStore, PostgresStore, …) as spaces.

Each Memory Space is one store namespace — ``("mnemon", <space id>)`` by default, or the
``namespace`` given in the space's configuration — so existing LangGraph memory can join
federated recall. Items are JSON values ``{"content", "category", "importance", "tags",
"entities", "source", "metadata", "created_at"}``; items written by other code are read too
(their text is taken from ``content``, ``text``, ``memory`` or ``data``).

Every call is one of the store's synchronous methods (``batch``, ``search``, ``get``,
``delete``, ``list_namespaces``). Search uses the store's own ``search``. With a semantic index
the store ranks by similarity; without one (the store returns no scores) and in ``keyword``
mode the provider ranks the namespace's items by how many query words they contain and drops
items that contain none.
BaseStore scores have no fixed scale across implementations, so the provider declares
``unknown`` score semantics unless constructed with ``normalized_scores=True`` (for a store
whose scores are cosine similarities in 0..1). Forget deletes the item (hard delete).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from langgraph.store.base import BaseStore, PutOp

from langgraph_mnemon.adapters.providers.base import BaseProvider
from langgraph_mnemon.contracts import shown, text_problem
from langgraph_mnemon.errors import InvalidInputError, MnemonError, NotFoundError, ProviderError
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    Capabilities,
    DiscoveredSpace,
    MemoryRecord,
    ProviderDescriptor,
    ProviderSearchRequest,
    ProviderSearchResult,
    ProviderStatus,
    RememberItem,
    SpaceBinding,
)
from langgraph_mnemon.memory_layers.text import tokenize

__all__ = ["StoreProvider"]

_T = TypeVar("_T")
_TEXT_KEYS = ("content", "text", "memory", "data")
_SCAN_LIMIT = 1000
_BROWSE_SCAN_LIMIT = 20_000  # browse sorts the namespace itself; beyond this it is not paged


class StoreProvider(BaseProvider):
    """Memory Spaces over a LangGraph ``BaseStore``."""

    descriptor = ProviderDescriptor(
        id="store",
        label="LangGraph store",
        capabilities=Capabilities(
            search=True,
            browse=True,
            remember=True,
            remember_many=True,
            forget=True,
            discover=True,
        ),
        score_semantics="unknown",
        write_mode="exact",
        deletion_mode="hard",
        local=True,
    )

    def __init__(
        self,
        store: BaseStore,
        *,
        prefix: Sequence[str] = ("mnemon",),
        provider_id: str = "store",
        label: str = "LangGraph store",
        normalized_scores: bool = False,
        local: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(store, BaseStore):
            raise InvalidInputError(
                f"StoreProvider needs a langgraph BaseStore (got {type(store).__name__})"
            )
        self.store = store
        self.prefix = _namespace(prefix, "prefix")
        self._clock = clock
        self.descriptor = type(self).descriptor.model_copy(
            update={
                "id": provider_id,
                "label": label,
                "score_semantics": "normalized" if normalized_scores else "unknown",
                "local": bool(local),
            }
        )
        ProviderDescriptor.model_validate(self.descriptor.model_dump())

    def __repr__(self) -> str:
        return f"StoreProvider({type(self.store).__name__}, prefix={self.prefix!r})"

    def check_config(self, config: Mapping[str, Any], secrets: Mapping[str, str]) -> dict[str, Any]:
        """Accepts ``namespace`` (a list of labels); no secrets."""
        unknown = set(config) - {"namespace"}
        if unknown:
            raise InvalidInputError(
                f"store spaces take only 'namespace' (got {', '.join(sorted(unknown))})"
            )
        if secrets:
            raise InvalidInputError("store spaces take no secrets")
        if "namespace" not in config:
            return {}
        return {"namespace": list(_namespace(config["namespace"], "namespace"))}

    def owns_storage(self, space_id: str, config: Mapping[str, Any]) -> bool:
        """Whether ``config`` keeps the space in its own namespace (none named, or
        ``(*prefix, <space id>)``): what a non-admin's space may use."""
        configured = config.get("namespace")
        return not configured or tuple(configured) == (*self.prefix, space_id.replace(".", "_"))

    def _ns(self, space: SpaceBinding) -> tuple[str, ...]:
        configured = space.config.get("namespace")
        if configured:
            return tuple(configured)
        return (*self.prefix, space.id.replace(".", "_"))

    # ------------------------------------------------------------------ hooks

    def _remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        return (self._remember_many(space, [item]))[0]

    def _remember_many(
        self, space: SpaceBinding, items: list[RememberItem]
    ) -> list[dict[str, Any]]:
        namespace = self._ns(space)
        now = self._clock()
        keys = [uuid.uuid4().hex for _ in items]
        ops = [
            PutOp(
                namespace=namespace,
                key=key,
                value={
                    "content": item.content,
                    "category": item.category,
                    "importance": item.importance,
                    "tags": list(item.tags),
                    "entities": list(item.entities),
                    "source": item.source,
                    "metadata": dict(item.metadata),
                    "created_at": now,
                },
            )
            for key, item in zip(keys, items, strict=True)
        ]
        _backend("store the memories", lambda: self.store.batch(ops))
        return [{"status": "stored", "id": key, "created": 1} for key in keys]

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        namespace = self._ns(space)
        filters: dict[str, Any] = {}
        if request.category:
            filters["category"] = request.category
        if request.source:
            filters["source"] = request.source
        if request.mode != "keyword":
            items = _backend(
                "search",
                lambda: self.store.search(
                    namespace, query=request.query, filter=filters or None, limit=request.limit
                ),
            )
            if any(getattr(i, "score", None) is not None for i in items):
                return ProviderSearchResult(
                    results=[self._insight(i, space, via="semantic") for i in items]
                )
        items = _backend(
            "search",
            lambda: self.store.search(namespace, filter=filters or None, limit=_SCAN_LIMIT),
        )
        words = tokenize(request.query, 32)
        if not words:
            return ProviderSearchResult(results=[], hint="the query has no searchable words")
        ranked = []
        for position, item in enumerate(items):
            text = _text(item.value)
            present = set(tokenize(text, 512))
            hits = sum(1 for w in words if w in present)
            if hits:
                ranked.append((hits, position, item))
        ranked.sort(key=lambda x: (-x[0], x[1]))
        return ProviderSearchResult(
            results=[
                self._insight(item, space, via="keyword", score=None)
                for _, _, item in ranked[: request.limit]
            ]
        )

    def _browse(self, space: SpaceBinding, request: BrowseRequest) -> list[MemoryRecord]:
        filters = {"category": request.category} if request.category else None
        # A store lists items in its own order: sort the namespace newest first, then page.
        items = self._scan(self._ns(space), filters)
        rows = [self._insight(i, space) for i in items]
        rows.sort(key=lambda r: -(r.created_at or 0.0))
        return rows[request.offset : request.offset + request.limit]

    def _scan(self, namespace: tuple[str, ...], filters: dict[str, Any] | None) -> list:
        """The namespace's items, page by page, at most ``_BROWSE_SCAN_LIMIT``."""
        items: list[Any] = []
        while len(items) < _BROWSE_SCAN_LIMIT:
            page = _backend(
                "list the memories",
                lambda: self.store.search(
                    namespace, filter=filters, limit=_SCAN_LIMIT, offset=len(items)
                ),
            )
            items.extend(page)
            if len(page) < _SCAN_LIMIT:
                break
        return items[:_BROWSE_SCAN_LIMIT]

    def _forget(self, space: SpaceBinding, insight_id: str) -> dict[str, Any]:
        namespace = self._ns(space)
        if _backend("read the memory", lambda: self.store.get(namespace, insight_id)) is None:
            raise NotFoundError(
                f"no memory {insight_id!r} in Memory Space {space.id!r}; search or browse the "
                "space for the exact id"
            )
        _backend("delete the memory", lambda: self.store.delete(namespace, insight_id))
        return {"status": "deleted", "id": insight_id, "deleted": 1}

    def _status(self, space: SpaceBinding) -> ProviderStatus:
        try:
            items = _backend("count", lambda: self.store.search(self._ns(space), limit=_SCAN_LIMIT))
        except ProviderError as exc:  # a status reports a down backend, it does not raise
            return ProviderStatus(healthy=False, error=str(exc)[:300])
        return ProviderStatus(healthy=True, total_insights=len(items), deleted_insights=0)

    def _discover(
        self, config: Mapping[str, Any], secrets: Mapping[str, str]
    ) -> list[DiscoveredSpace]:
        found = _backend(
            "list namespaces", lambda: self.store.list_namespaces(prefix=self.prefix, limit=1000)
        )
        return [
            DiscoveredSpace(
                external_id="/".join(ns),
                name=ns[-1],
                description="LangGraph store namespace " + "/".join(ns),
                config={"namespace": list(ns)},
            )
            for ns in found
        ]

    # ------------------------------------------------------------------

    def _insight(
        self, item: Any, space: SpaceBinding, *, via: str | None = None, score: Any = "item"
    ) -> MemoryRecord:
        value = item.value if isinstance(item.value, Mapping) else {}
        raw_score = getattr(item, "score", None) if score == "item" else score
        importance = value.get("importance")
        created = value.get("created_at")
        meta = value.get("metadata")
        return MemoryRecord(
            id=item.key,
            content=_text(value),
            category=str(value.get("category", "general")),
            importance=int(importance) if isinstance(importance, int) else None,
            tags=[str(t) for t in value.get("tags", []) if isinstance(t, str)],
            entities=[str(e) for e in value.get("entities", []) if isinstance(e, str)],
            source=str(value["source"]) if isinstance(value.get("source"), str) else None,
            metadata={
                str(k): v
                for k, v in (meta.items() if isinstance(meta, Mapping) else [])
                if isinstance(v, (str, int, float, bool))
            },
            score=float(raw_score) if isinstance(raw_score, (int, float)) else None,
            matched_via=via,
            created_at=float(created)
            if isinstance(created, (int, float))
            else item.created_at.timestamp(),
            space_id=space.id,
            space_name=space.name,
        )


def _backend(what: str, call: Callable[[], _T]) -> _T:
    """Run one store call; a failure of the store's backend becomes a ProviderError."""
    try:
        return call()
    except MnemonError:
        raise
    except Exception as exc:
        said = " ".join(str(exc).split())[:200] or "no message"
        raise ProviderError(
            f"the LangGraph store could not {what} ({type(exc).__name__}: {said}); "
            "check that the store's backend is reachable"
        ) from None


def _text(value: Mapping[str, Any]) -> str:
    for key in _TEXT_KEYS:
        text = value.get(key)
        if isinstance(text, str) and text.strip():
            return text
    return ""


def _namespace(value: Any, field: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise InvalidInputError(f"{field} must be a non-empty list of labels")
    labels = []
    for label in value:
        if not isinstance(label, str) or not label or "." in label or text_problem(label):
            raise InvalidInputError(
                f"{field} labels must be non-empty strings without '.', NUL or lone "
                f"surrogates (got {shown(label)})"
            )
        labels.append(label)
    if labels[0] == "langgraph":
        raise InvalidInputError(f"{field} may not start with the reserved label 'langgraph'")
    return tuple(labels)
