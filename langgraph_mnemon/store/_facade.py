"""``MnemonStore``: a LangGraph ``BaseStore`` facade over the Memory Spaces (``Mnemon.store()``).

Pass it wherever LangGraph or LangChain takes a store (``create_agent(..., store=mem.store())``,
``graph.compile(store=...)``, LangMem's memory tools, ``langgraph.json`` ``store.path``). Nodes
and tools reach it through ``runtime.store`` or ``langgraph.config.get_store()``.

Mapping (one rule, no hidden state):

* **Namespace → Memory Space.** Every namespace tuple is one Memory Space on the native
  ``mnemos`` provider, created by the first ``put`` into it. Its id is derived from the
  namespace (``store-`` + 24 hex digits of a BLAKE2b hash of the labels), its name is
  ``store:`` + the labels joined by ``/`` and its description records the namespace as a JSON
  list (``LangGraph store namespace: ["users", "alice"]``; do not edit it, a later ``put``
  repairs it). Like every Memory Space, it becomes *active* with its first committed write, so
  store items also take part in the agent's federated recall (``mnemon_recall``).
* **Scopes.** Each op runs in a scope (:mod:`langgraph_mnemon.store._scope`): the store's
  bound one (``mem.store().scoped(scope)``), else the LangGraph run's (``user_id``, the
  authenticated user, or LangMem's ``langgraph_user_id``), else the local one. A user's
  namespace lives in a space owned by that user, whose id also hashes the user's key in, so
  the same namespace of two users is two spaces and neither user reads the other's items. The
  local user maps namespaces exactly as above and reads no user's items either (bind the
  store to a user with ``scoped`` to read theirs).
* **Item → memory row.** The value is stored as its JSON text (key order kept) in the row's
  ``content``, so ``get`` returns exactly what was ``put`` (after a JSON round trip: tuples
  come back as lists); the agent's recall shows the item as its text
  (``MemorySpaces.search``: the ``text`` / ``content`` / ``memory`` field, else ``key: value``
  pairs), the store's own ``search`` the value. The row is keyword-indexed and embedded by
  its *index text*
  (:mod:`langgraph_mnemon.store._index`): the whole JSON text by default (``fields=["$"]``),
  else the texts the index fields select, one per line. The key, the first ``created_at``, the
  ``index`` choice and a digest of a non-default index text live in the row's metadata
  (``store_key``, ``store_created_at``, ``store_indexed``, ``store_index_text``); rows have
  ``source="external"``. ``updated_at`` is the time the current row was written.
* **Index.** ``mem.store(index={"dims", "embed", "fields"})`` takes LangGraph's
  ``IndexConfig``: ``fields`` are the default paths (LangGraph's syntax, ``a.b``, ``a[0]``,
  ``a[*].b``, ``{a,b}``), ``embed`` a ``"provider:model"`` string (LangChain's
  ``init_embeddings``), an ``Embeddings`` object or a function, ``dims`` its vector size
  (required with ``embed``, checked on every vector). Without ``embed`` the host's embedder
  serves. A store with its own ``embed`` binds it to each of its spaces in the native provider
  (``use_embedder``): that space's puts, query searches and the agent's recall over it embed
  with it in this process; vectors carry the model's name, so a process without that store (or
  a model of another size) never compares them and ranks those rows by keyword.
* **Rows written by other Mnemon paths** into a store space (the write worker, ``spaces.remember``)
  show up as items keyed by their memory id, with a value describing the memory
  (``content``, ``category``, ``importance``, ``tags``, ``entities``, ``source``, ``metadata``).

Semantics:

* An item is one live row addressed by ``(space, store_key)`` through a unique index, so
  ``get``, ``put`` and ``delete`` are one indexed statement each whatever the namespace size.
  ``put`` writes in one transaction (the new row, keyword index, term statistics and vector;
  the old row retired), keeps the first ``created_at`` and only counts a committed receipt; a
  failed ``put`` leaves the previous value in place. Putting an identical value under the same
  key is a no-op (``updated_at`` stays, nothing is embedded). Consecutive puts of one batch are
  one transaction with one embedder call. Concurrent puts to one key are serialised: the newest
  wins and exactly one live row remains. ``put(..., None)`` / ``delete`` forget the row (a soft
  delete).
* ``index=False`` keeps the item out of query search results of this store (it is still
  stored, returned by ``get`` and by search without a query, and visible to the agent's own
  recall); so does an index text that is empty (the paths select nothing), as LangGraph's SQL
  stores leave such an item without a vector. ``index=[paths]`` replaces the store's fields
  for that item.
* ``search(prefix, query=...)`` ranks every indexed item under ``prefix`` that passes the
  filter, up to ``limit`` after ``offset``, as LangGraph's stores do. The first ranks are
  federated recall (:meth:`MemorySpaces.asearch`) over the namespace spaces in the exhaustive
  ordering (at most 50 rows; the strict cut of the model's envelope does not apply), with the
  provider's 0..1 relevance as ``SearchItem.score``; when they do not fill the window, every
  other item follows, scored by the same hybrid scorer without recall's neighbour and feedback
  lifts (``KeyedItems.rank``), capped at the recall's lowest score so that scores never rise
  down the ranking; equal scores (often 0: nothing in common with the query) are ordered by
  raw similarity, then newest first. Without a query it lists items, newest
  ``updated_at`` first. ``filter`` takes equality or ``$eq $ne $gt $gte $lt $lte`` on value keys
  (nested dicts compare key by key, lists element by element), as LangGraph's SQL stores do:
  a dotted key is a path into nested values (``{"user.tier": {"$gt": 1}}``; a value with no
  such path is read at the literal key), keys may hold hyphens or start with a digit, and a
  missing field satisfies no operator (it equals ``None``).
* ``list_namespaces`` lists namespaces that hold at least one item, sorted, with ``"*"``
  wildcards in ``prefix`` / ``suffix`` and ``max_depth`` truncation.
* TTL (``supports_ttl = True``), LangGraph's contract: ``put(..., ttl=minutes)`` /
  ``PutOp.ttl`` stores ``expires_at`` and ``ttl_minutes`` on the row (in the database, so
  every replica agrees); ``put`` without ``ttl`` takes the store's ``TTLConfig``
  ``default_ttl`` (``mem.store(ttl=...)``, or ``store.ttl`` of ``langgraph.json`` when served);
  ``ttl=None`` never expires. An expired item is gone at once for ``get``, ``search``,
  ``list_namespaces``, the agent's recall and ``browse``, before any sweep; a put to its key
  starts a new item. ``refresh_ttl`` (default: the configuration's ``refresh_on_read``, else
  True) restarts the time to live of what a ``get`` or ``search`` returns (a read-only host
  refreshes nothing); an identical re-put restarts it too. :meth:`sweep_ttl` /
  :meth:`asweep_ttl` delete expired rows (Memory Spaces *maintenance*);
  :meth:`start_ttl_sweeper` runs that every ``sweep_interval_minutes`` (default 5) in a
  daemon thread until :meth:`stop_ttl_sweeper`. ``omit_expired`` is accepted as True only.
* Every op goes through a Memory Spaces layer method, and the layers ask the kernel: ``put``
  and ``delete`` are ``memory_spaces`` *write* (``remember`` / ``forget``), ``search`` with a
  query is *recall*, the space a first ``put`` into a namespace creates is *maintenance*
  (``create_space``); ``get``, ``list_namespaces`` and ``search`` without a query are
  management reads (``browse``) that switches never hide. A refusal raises the kernel's
  :class:`ReadOnlyError` (``write_enabled=false``) or :class:`ParticipationError` (layer
  disabled, channel ``off``, or ``manual`` under an automatic trigger). A batch with a put or
  a query search asks the kernel once for those channels before its first op runs, so a
  refused batch changes nothing.
* The trigger: ``mem.store()`` asks as its caller does (explicit from application code, the
  default); ``mem.store(trigger="automatic")`` is the store to hand a model's tools (LangMem's
  memory tools): every op runs under ``acting("automatic")``, so ``manual`` channels refuse it.
* Bad input raises :class:`~langgraph_mnemon.errors.InvalidNamespaceError` (namespaces: empty,
  an empty label, a ``.`` or NUL in a label, the reserved root ``"langgraph"``; it is also
  LangGraph's ``InvalidNamespaceError`` and an :class:`InvalidInputError`) or
  :class:`InvalidInputError` (keys, values, ttl, filters, limits) before anything is written; a
  provider that does not commit raises :class:`ProviderError`. Every op of a batch is
  validated before the first one runs. When a later op of a batch fails after earlier puts
  were applied, the typed error is raised with a message that names the applied puts and the
  op that failed (``error.applied`` lists them as ``(namespace, key)``); nothing after it ran.
* Search without a query reads the newest rows of each namespace by the index, and a
  ``filter`` pages back through them (pages growing from 64 to 500 rows) until the window is
  full, like ``InMemoryStore`` scans its items. A query search whose recall does not fill
  the window ranks every live row of its namespaces in the provider (seqs, terms of the rows
  that hold a query term and the cached vectors: a few statements per space, as LangGraph's
  SQL stores scan their vectors), then reads rows in that order in chunks of 64 to 500 until
  the window is full (a ``filter`` may read them all).
  ``list_namespaces`` is the catalog plus one ``EXISTS`` statement.

One sync/async rule: ``batch`` calls the sync engine and Memory Spaces directly in the calling
thread; ``abatch`` is ``batch`` run in a worker thread (``asyncio.to_thread``), so the facade
never blocks the LangGraph server's loop and both paths are the same code.

This module is one concept, the facade, its mapping of items onto keyed rows and the
ranking of a query search; it is over 900 lines because
the mapping rules (namespaces, keys, values, filters, rows) are what the
facade's every method applies, and cutting them apart made each op cross between two files.

Example:
    >>> store = mem.store()
    >>> store.put(("users", "alice"), "editor", {"theme": "dark", "font_size": 14})
    >>> store.get(("users", "alice"), "editor").value
    {'theme': 'dark', 'font_size': 14}
    >>> [i.key for i in store.search(("users",), query="dark theme")]
    ['editor']
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from langgraph_mnemon.contracts import LOCAL, Scope, check_text, safe_text, shown
from langgraph_mnemon.errors import (
    ConflictError,
    InvalidInputError,
    MnemonError,
    ProviderError,
)
from langgraph_mnemon.memory_layers.kernel import TRIGGERS, Trigger, acting
from langgraph_mnemon.memory_layers.spaces import (
    KeyedItems,
    KeyedRow,
    KeyedWrite,
    StaleSpace,
    check_minutes,
)
from langgraph_mnemon.storage.edge import async_form
from langgraph_mnemon.store._args import (
    CheckedArguments,
    NamespaceError,
    check_filter,
    check_labels,
    check_window,
    check_write_namespace,
)
from langgraph_mnemon.store._both import Done
from langgraph_mnemon.store._index import StoreIndex, check_fields, text_digest
from langgraph_mnemon.store._scope import StoreHost, op_scope, spaces_of
from langgraph_mnemon.store._ttl import Sweeper, TTLSweeps, check_ttl_config, ttl_key

if TYPE_CHECKING:
    from langgraph_mnemon.contracts import Scope
    from langgraph_mnemon.memory_layers.spaces import MemoryRecord, MemorySpaces, SpaceRecord

__all__ = [
    "MAX_KEY_CHARS",
    "MAX_VALUE_CHARS",
    "NAMESPACE_PREFIX",
    "MnemonStore",
    "StoreHost",
    "ranked",
    "refresh_returned",
    "say_applied",
]


NAMESPACE_PREFIX = "LangGraph store namespace: "
"""How a store space's description starts; the namespace follows as a JSON list."""
MAX_KEY_CHARS = 1000
"""Longest key (it is kept in the row's metadata, whose values are limited to 1000 chars)."""
MAX_VALUE_CHARS = 65_536
"""Longest value, measured as its JSON text (the Memory Space content limit)."""

_SPACE_ID_PREFIX = "store-"
_USER_PREFIX = "user:"
_NATIVE = "mnemos"
_MAX_NAMESPACE_JSON = 500 - len(NAMESPACE_PREFIX)
_MAX_NAME = 120
_PAGE = 500
_MAX_RECALL = 50
_RANKED = "exhaustive-v1"  # query search: the fusion's full ranking, no strict cut
_KEY = "store_key"
_CREATED = "store_created_at"
_INDEXED = "store_indexed"
_TEXT = "store_index_text"  # a digest of the index text when it is not the whole value
_MEMORY_ID = re.compile(r"^[0-9a-f]{32}$")
_TRIGGERS = TRIGGERS


# --------------------------------------------------------------------------------------------
# Namespace mapping


def _namespace_json(namespace: tuple[str, ...]) -> str:
    return json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))


@functools.lru_cache(maxsize=65_536)
def _space_id(namespace: tuple[str, ...], owner: str | None = None) -> str:
    """The id of the space of ``namespace``: of the local user (``owner`` None), as before
    scopes, or of one user (``user:alice``), whose key is hashed in so users never share one."""
    text = _namespace_json(namespace)
    if owner is not None:  # an owner key is percent-quoted: it holds no newline
        text = f"{owner}\n{text}"
    digest = hashlib.blake2b(text.encode(), digest_size=12).hexdigest()
    return _SPACE_ID_PREFIX + digest


def _store_owner(owner: str | None) -> bool:
    """Whether a space of ``owner`` can be a store space (the local user's or one user's)."""
    return owner is None or owner.startswith(_USER_PREFIX)


def _space_name(namespace: tuple[str, ...]) -> str:
    name = "store:" + "/".join(namespace)
    return name if len(name) <= _MAX_NAME else name[: _MAX_NAME - 1] + "…"


def _description(namespace: tuple[str, ...]) -> str:
    return NAMESPACE_PREFIX + _namespace_json(namespace)


def _namespace_of(record: SpaceRecord) -> tuple[str, ...] | None:
    """The namespace a store space serves, or None for any other Memory Space."""
    if not record.id.startswith(_SPACE_ID_PREFIX) or record.provider_id != _NATIVE:
        return None
    if not _store_owner(record.owner):
        return None
    if not record.description.startswith(NAMESPACE_PREFIX):
        return None
    try:
        labels = json.loads(record.description[len(NAMESPACE_PREFIX) :])
    except ValueError:
        return None
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) for x in labels):
        return None
    namespace = tuple(labels)
    return namespace if _space_id(namespace, record.owner) == record.id else None


def _check_namespace(namespace: Any) -> tuple[str, ...]:
    """LangGraph's namespace rules for a ``PutOp`` (the reserved root allowed, as in its
    stores' ``batch``), plus the facade's length limit."""
    namespace = check_write_namespace(namespace, reserved_ok=True)
    if len(_namespace_json(namespace)) > _MAX_NAMESPACE_JSON:
        raise NamespaceError(
            f"Namespace {namespace!r} is too long for a Memory Space: keep its labels under "
            f"{_MAX_NAMESPACE_JSON} characters in total (as a JSON list)"
        )
    return namespace


_check_labels = check_labels


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise InvalidInputError(
            f"unknown namespace match type {condition.match_type!r}; use 'prefix' or 'suffix'"
        )
    return all(want == "*" or have == want for have, want in pairs)


# --------------------------------------------------------------------------------------------
# Input checks


def _check_key(key: Any) -> str:
    if not isinstance(key, str):
        raise InvalidInputError(f"store keys must be strings (got {type(key).__name__})")
    if len(key) > MAX_KEY_CHARS:
        raise InvalidInputError(
            f"the key is {len(key)} characters; the limit is {MAX_KEY_CHARS}: use a shorter key"
        )
    return check_text(key, "the store key")


def _encode_value(value: Any) -> str:
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"store values must be dicts (got {type(value).__name__}); wrap it, e.g. "
            '{"content": ...}'
        )
    if not all(isinstance(k, str) for k in value):
        raise InvalidInputError("store values must have string keys (JSON objects)")
    try:
        text = json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(
            f"store values must be JSON-serializable ({type(exc).__name__}: "
            f"{safe_text(exc)[:200]}); convert dates, sets and objects to strings, lists or "
            "numbers first, and keep nesting shallow"
        ) from None
    # JSON escapes NUL itself; a lone surrogate would reach the database unencodable.
    check_text(text, "the store value")
    if len(text) > MAX_VALUE_CHARS:
        raise InvalidInputError(
            f"the value is {len(text)} characters as JSON; the limit is {MAX_VALUE_CHARS}: "
            "split it over several keys or keep large texts as Documents"
        )
    return text


def _check_index(index: Any) -> bool:
    """A put's ``index``: None (the store's fields), False (not ranked by query search) or a
    list of field paths (see :mod:`._index`); whether the item is ranked."""
    if index is None:
        return True
    if index is False:
        return False
    if isinstance(index, list):
        check_fields(index)
        return True
    raise InvalidInputError(
        "index must be None, False or a list of field paths such as ['content']"
    )


def _check_refresh(refresh_ttl: Any) -> None:
    if not isinstance(refresh_ttl, bool):
        raise InvalidInputError(f"refresh_ttl must be True or False (got {shown(refresh_ttl)})")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _compare(have: Any, operator: str, want: Any) -> bool:
    if have is _MISSING:  # as LangGraph's SQL stores: a missing field satisfies no operator
        return False
    if operator == "$eq":
        return _equal(have, want)
    if operator == "$ne":
        return not _equal(have, want)
    if _number(have) and _number(want):
        pair: tuple[Any, Any] = (have, want)  # int and float compare exactly, however large
    elif isinstance(have, str) and isinstance(want, str):
        pair = (have, want)
    else:  # missing or incomparable values never satisfy an ordering
        return False
    left, right = pair
    return {
        "$gt": left > right,
        "$gte": left >= right,
        "$lt": left < right,
        "$lte": left <= right,
    }[operator]


def _equal(have: Any, want: Any) -> bool:
    if isinstance(want, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in want):
            return all(_compare(have, op, arg) for op, arg in want.items())
        return isinstance(have, Mapping) and all(
            _equal(_field(have, k), v) for k, v in want.items()
        )
    if isinstance(want, (list, tuple)):
        return (
            isinstance(have, (list, tuple))
            and len(have) == len(want)
            and all(_equal(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool((None if have is _MISSING else have) == want)  # missing equals None


_MISSING: Any = object()


def _field(value: Mapping[str, Any], key: str) -> Any:
    """The value a filter key names, as LangGraph's SQL stores read it: a dotted key is a path
    into nested objects (``"user.access-level"``); a key the path does not reach is read as
    one literal key (``InMemoryStore``'s reading), else it is ``_MISSING``."""
    if "." in key:
        found: Any = value
        for part in key.split("."):
            found = found.get(part, _MISSING) if isinstance(found, Mapping) else _MISSING
            if found is _MISSING:
                break
        if found is not _MISSING:
            return found
    return value.get(key, _MISSING)


def _passes(value: Mapping[str, Any], spec: Mapping[str, Any] | None) -> bool:
    return not spec or all(_equal(_field(value, k), v) for k, v in spec.items())


def _check_op(op: Any) -> None:
    """Validate one op completely before any op of the batch runs."""
    if isinstance(op, PutOp):
        if op.value is not None:
            _check_namespace(op.namespace)
        else:
            _check_labels(op.namespace)
        _check_key(op.key)
        if op.value is not None:
            _encode_value(op.value)
            _check_index(op.index)
        if op.value is not None:
            check_minutes(op.ttl, "ttl")
    elif isinstance(op, GetOp):
        _check_labels(op.namespace)
        _check_key(op.key)
        _check_refresh(op.refresh_ttl)
    elif isinstance(op, SearchOp):
        _check_labels(op.namespace_prefix)
        _check_refresh(op.refresh_ttl)
        check_window(op.limit, op.offset)
        if op.filter is not None:
            check_filter(op.filter)
        if op.query is not None:
            check_text(op.query, "query", nul="strip")
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            if not isinstance(condition, MatchCondition):
                raise InvalidInputError("match_conditions must be MatchCondition objects")
            _check_labels(tuple(condition.path))
            if condition.match_type not in ("prefix", "suffix"):
                raise InvalidInputError(
                    f"unknown namespace match type {condition.match_type!r}; use 'prefix' or "
                    "'suffix'"
                )
        if op.max_depth is not None and (
            isinstance(op.max_depth, bool) or not isinstance(op.max_depth, int) or op.max_depth < 1
        ):
            raise InvalidInputError("max_depth must be a positive integer or None")
        check_window(op.limit, op.offset)
    else:
        raise InvalidInputError(
            f"unknown store operation {type(op).__name__}; use GetOp, PutOp, SearchOp or "
            "ListNamespacesOp"
        )


# --------------------------------------------------------------------------------------------
# Rows ↔ items


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


@dataclass
class _Row:
    """One item as stored: the memory row, its key and decoded value."""

    key: str
    value: dict[str, Any]
    memory_id: str
    created_at: float
    updated_at: float
    indexed: bool
    native: bool  # written by this facade (False: a row from another Mnemon path)
    ttl: float | None = None  # minutes to live, when known (keyed reads)

    def item(self, namespace: tuple[str, ...]) -> Item:
        return Item(
            value=self.value,
            key=self.key,
            namespace=namespace,
            created_at=_time(self.created_at),
            updated_at=_time(self.updated_at),
        )

    def search_item(self, namespace: tuple[str, ...], score: float | None) -> SearchItem:
        return SearchItem(
            namespace=namespace,
            key=self.key,
            value=self.value,
            created_at=_time(self.created_at),
            updated_at=_time(self.updated_at),
            score=score,
        )


def _row(insight: MemoryRecord | KeyedRow) -> _Row:
    """An item from a row: a keyed row by its ``store_key`` column, a recall result by its
    metadata, any other row (of another Mnemon path) by its memory id."""
    written = insight.created_at if insight.created_at is not None else time.time()
    meta = insight.metadata
    key = insight.key if isinstance(insight, KeyedRow) else meta.get(_KEY)
    if isinstance(key, str):
        try:
            value = json.loads(insight.content)
        except ValueError:
            value = None
        if isinstance(value, dict):
            first = meta.get(_CREATED)
            return _Row(
                key=key,
                value=value,
                memory_id=insight.id,
                created_at=float(first) if _number(first) else written,
                updated_at=written,
                indexed=meta.get(_INDEXED) is not False,
                native=True,
                ttl=insight.ttl_minutes if isinstance(insight, KeyedRow) else None,
            )
    return _Row(
        key=insight.id,
        value={
            "content": insight.content,
            "category": insight.category,
            "importance": insight.importance,
            "tags": list(insight.tags),
            "entities": list(insight.entities),
            "source": insight.source,
            "metadata": dict(insight.metadata),
        },
        memory_id=insight.id,
        created_at=written,
        updated_at=written,
        indexed=True,
        native=False,
    )


class _Batch:
    """One batch's scope, its keyed-items entry and the store spaces it resolved so far.

    ``owner`` is the user key whose namespaces the batch uses; ``None`` is the local user.
    ``at`` is the index of the op running and ``applied`` the puts committed so far (what a
    failure reports).
    """

    def __init__(
        self, spaces: MemorySpaces, owner: str | None = None, keyed: KeyedItems | None = None
    ) -> None:
        self.spaces = spaces
        self.keyed = keyed if keyed is not None else spaces.keyed
        self.owner = owner
        self.records: dict[str, SpaceRecord] = {}
        self.at = 0
        self.applied: list[PutOp] = []
        self.recall_spaces: dict[str, tuple[str, ...]] = {}
        self.scope: Scope | None = None  # what the facade keys its per-scope caches by

    def home_id(self, namespace: tuple[str, ...]) -> str:
        """The id of the space this batch writes ``namespace`` into."""
        return _space_id(namespace, self.owner)

    def reads(self, record: SpaceRecord) -> bool:
        """Whether this batch reads the store space ``record``: a user's own spaces only; the
        local user's every store space its view lists."""
        return self.owner is None or record.owner == self.owner


# --------------------------------------------------------------------------------------------


_T = TypeVar("_T")


def say_applied(exc: MnemonError, failed: int, ops: Sequence[Op], applied: list[PutOp]) -> None:
    """Say in ``exc`` which puts of the batch were applied before op ``failed`` failed."""
    done = [(tuple(op.namespace), op.key) for op in applied]
    exc.applied = done  # type: ignore[attr-defined]
    if len(ops) < 2:
        return
    listed = ", ".join(f"{ns!r}/{key!r}" for ns, key in done[:10]) + (
        f" and {len(done) - 10} more" if len(done) > 10 else ""
    )
    said = f"{len(done)} earlier put(s) were applied ({listed})" if done else "nothing was written"
    exc.message = (
        f"{exc.message} [batch op {failed + 1} of {len(ops)} failed; {said}; later ops did not run]"
    )
    exc.args = (exc.message,)


class MnemonStore(TTLSweeps, CheckedArguments):
    """A LangGraph ``BaseStore`` whose namespaces are Memory Spaces of one :class:`Mnemon` host.

    Get one with ``Mnemon.store()`` (one per host), or ``Mnemon.store(index={...})`` for a
    store with its own index config (LangGraph's ``IndexConfig``: ``dims``, ``embed``,
    ``fields``). See the module docstring for the mapping and the exact semantics of each
    operation.

    Example:
        >>> store = mem.store()
        >>> await store.aput(("notes",), "n1", {"text": "Deploys need two approvals."})
        >>> (await store.asearch(("notes",), query="deploy approvals"))[0].key
        'n1'
        >>> store.list_namespaces(prefix=("notes",))
        [('notes',)]
    """

    supports_ttl: bool = True

    def __init__(
        self,
        host: StoreHost,
        *,
        trigger: Trigger | None = None,
        index: Mapping[str, Any] | StoreIndex | None = None,
        ttl: TTLConfig | None = None,
        _scope: Scope | None = None,
        _family: dict[tuple[Trigger | None, Scope | None, Any], MnemonStore] | None = None,
    ) -> None:
        if trigger is not None and trigger not in _TRIGGERS:
            raise InvalidInputError(
                f"trigger must be one of {', '.join(_TRIGGERS)} or None (got {shown(trigger)})"
            )
        self._host = host
        self._trigger = trigger
        # What items are indexed by (fields) and embedded with (None: the host's embedder).
        self._index = StoreIndex.of(index)
        self._scope = _scope
        self.ttl_config = check_ttl_config(ttl)
        # One store per (trigger, scope, TTL configuration), shared by all of them:
        # acting_as / scoped / with_ttl find it.
        self._family = _family if _family is not None else {}
        self._family.setdefault(self._member(trigger, _scope), self)
        # The store spaces resolved so far, shared by the siblings: a space id hashes its
        # namespace and owner, so a read never needs the catalog twice for one.
        first = next(iter(self._family.values()))
        self._known: dict[str, SpaceRecord] = first._known if first is not self else {}
        # Per scope, shared by the siblings: its spaces view (with the keyed entry's provider
        # and binding caches) and its decoded store catalog, keyed by the catalog revision
        # (one aggregate statement per read, so a change made by another process is seen).
        self._views: dict[Scope, _Batch] = first._views if first is not self else {}
        self._catalogs: dict[Scope, _Catalog] = first._catalogs if first is not self else {}
        # One background TTL sweeper for the family (a sweep covers the whole database).
        self._sweeper: Sweeper = first._sweeper if first is not self else Sweeper()

    def __repr__(self) -> str:
        shown_trigger = f", trigger={self._trigger!r}" if self._trigger else ""
        shown_scope = f", scope={str(self._scope)!r}" if self._scope is not None else ""
        return f"MnemonStore(root={str(self._host.root)!r}{shown_trigger}{shown_scope})"

    @property
    def host(self) -> StoreHost:
        """The :class:`Mnemon` host whose Memory Spaces back this store."""
        return self._host

    @property
    def trigger(self) -> Trigger | None:
        """The trigger every op runs under; None = the caller's (explicit by default)."""
        return self._trigger

    @property
    def scope(self) -> Scope | None:
        """The scope every op runs in; None = the current LangGraph run's (local outside)."""
        return self._scope

    @property
    def index(self) -> StoreIndex:
        """The index config: the default ``fields`` and the store's own embedder (None:
        the host's)."""
        return self._index

    @property
    def index_config(self) -> dict[str, Any] | None:
        """The index config as given (LangGraph's stores show it so); None when the store was
        given none (whole values, the host's embedder)."""
        return self._index.config()

    @property
    def embeddings(self) -> Any:
        """The LangChain ``Embeddings`` of the index's own ``embed``; None otherwise."""
        return self._index.embeddings()

    def _member(
        self, trigger: Trigger | None, scope: Scope | None
    ) -> tuple[Trigger | None, Scope | None, Any]:
        return trigger, scope, ttl_key(self.ttl_config)

    def _sibling(
        self, trigger: Trigger | None, scope: Scope | None, ttl: TTLConfig | None = None
    ) -> MnemonStore:
        member = (trigger, scope, ttl_key(ttl))
        sibling = self._family.get(member)
        if sibling is None:
            sibling = MnemonStore(
                self._host,
                trigger=trigger,
                index=self._index,
                ttl=ttl,
                _scope=scope,
                _family=self._family,
            )
        return self._family.setdefault(member, sibling)

    def acting_as(self, trigger: Trigger) -> MnemonStore:
        """This store with every op run under ``trigger`` (one instance per trigger).

        Example:
            >>> tools_store = mem.store().acting_as("automatic")  # = mem.store(trigger=...)
            >>> tools_store.trigger
            'automatic'
        """
        if trigger == self._trigger:
            return self
        return self._sibling(trigger, self._scope, self.ttl_config)

    def scoped(self, scope: Scope) -> MnemonStore:
        """This store with every op run in ``scope`` (one instance per scope and trigger).

        Its namespaces are that scope's user's: ``("memories",)`` of alice and of bob are two
        Memory Spaces, owned by each, and no op of one shows the other's items. A bound scope
        wins over the scope of the LangGraph run an op is part of.

        Args:
            scope: The :class:`~langgraph_mnemon.contracts.Scope` (``Scope()`` binds the
                local scope: the run's config is then ignored).

        Returns:
            The sibling store bound to ``scope`` (the same object on every call).

        Raises:
            InvalidInputError: ``scope`` is not a :class:`Scope`.

        Example:
            >>> alice = mem.store().scoped(Scope(user="alice"))
            >>> alice.put(("memories",), "k", {"text": "Alice's"})
            >>> mem.store().scoped(Scope(user="bob")).get(("memories",), "k") is None
            True
        """
        if not isinstance(scope, Scope):
            raise InvalidInputError(
                f"scoped() takes a Scope (got {type(scope).__name__}); e.g. Scope(user='alice')"
            )
        if scope == self._scope:
            return self
        return self._sibling(self._trigger, scope, self.ttl_config)

    def with_ttl(self, ttl: TTLConfig | None) -> MnemonStore:
        """This store with the TTL configuration ``ttl`` (one instance per configuration).

        Args:
            ttl: LangGraph's ``TTLConfig``: ``default_ttl`` (minutes a ``put`` without
                ``ttl`` lives), ``refresh_on_read`` (default for ``refresh_ttl`` of ``get`` /
                ``search``), ``sweep_interval_minutes`` (for :meth:`start_ttl_sweeper`); None
                for none (puts never expire unless they say so).

        Returns:
            The sibling store with that configuration (the same object on every call).

        Raises:
            InvalidInputError: ``ttl`` is not a valid TTL configuration.

        Example:
            >>> store = mem.store().with_ttl({"default_ttl": 60})   # = mem.store(ttl=...)
            >>> store.put(("sessions",), "s1", {"cart": []})        # expires in an hour
        """
        config = check_ttl_config(ttl)
        if ttl_key(config) == ttl_key(self.ttl_config):
            return self
        return self._sibling(self._trigger, self._scope, config)

    def setup(self) -> Done:
        """Create or migrate the tables behind the store now (idempotent).

        Optional: the first op does it too. It is there for code written for LangGraph's SQL
        stores, and it is also awaitable, so ``store.setup()`` and ``await store.setup()`` (the
        async stores' form) both work.

        Raises:
            ReadOnlyError: the host has ``write_enabled=false`` (it creates no tables).
            StorageError: the database cannot be opened or migrated.

        Example:
            >>> mem.store().setup()
        """
        self._host.spaces.setup()
        return Done()

    def close(self) -> None:
        """Stop the TTL sweeper (shared with the siblings) and drop the cached views.

        ``Mnemon.close()`` calls it; the sweeper runs again only when started again. The
        cached views of the spaces are dropped (a reopened host builds new ones).
        """
        self._sweeper.stop(timeout=10.0)
        self._views.clear()
        self._catalogs.clear()
        self._known.clear()

    @staticmethod
    def space_id_for(namespace: tuple[str, ...], scope: Scope | None = None) -> str:
        """The id of the Memory Space that holds ``namespace`` (it may not exist yet).

        Args:
            namespace: The namespace.
            scope: Whose namespace: a user's scope, or ``None`` / any scope of the local user
                for the local user's (today's) space.

        Returns:
            ``store-`` and 24 hex digits.

        Raises:
            InvalidNamespaceError: ``namespace`` is not one the store takes.

        Example:
            >>> MnemonStore.space_id_for(("users", "alice")).startswith("store-")
            True
        """
        local = scope is None or scope.user == LOCAL
        return _space_id(_check_namespace(namespace), None if local else scope.user_key)

    # ------------------------------------------------------------------ BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order and return one result per op.

        Plain blocking calls on the database's sync engine in the calling thread (any thread
        may call this: a script, a notebook cell, code inside a running event loop, a tool);
        a query search runs the federated recall of Memory Spaces in the same thread.

        Example:
            >>> from langgraph.store.base import GetOp
            >>> store.batch([GetOp(("users", "alice"), "editor")])[0].value
            {'theme': 'dark', 'font_size': 14}
        """
        ops = self._checked(ops)
        scope = op_scope(self._host, self._scope)
        with self._acting():
            self._admit(ops)
            batch = self._context(scope)
            results: list[Result] = []
            for block in _blocks(ops):
                results.extend(self._block(batch, ops, block))
            return results

    abatch = async_form(batch)

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _checked(ops: Iterable[Op]) -> list[Op]:
        if isinstance(ops, (str, bytes, Mapping)) or not isinstance(ops, Iterable):
            raise InvalidInputError(
                "ops must be a list of GetOp, PutOp, SearchOp or ListNamespacesOp"
            )
        ops = list(ops)
        for op in ops:
            _check_op(op)
        return ops

    def _context(self, scope: Scope) -> _Batch:
        view = self._views.get(scope)
        if view is None:
            spaces, owner = spaces_of(self._host, scope)
            view = self._views.setdefault(scope, _Batch(spaces, owner))
        batch = _Batch(view.spaces, view.owner, view.keyed)
        batch.scope = scope
        return batch

    def _acting(self) -> AbstractContextManager[None]:
        return acting(self._trigger) if self._trigger is not None else nullcontext()

    def _admit(self, ops: Sequence[Op]) -> None:
        """Ask the kernel for the batch's write / recall channels before its first op runs (the
        layer methods ask again): a refused batch must not have applied some of its ops."""
        kernel = self._host.kernel
        if any(isinstance(op, PutOp) for op in ops):
            kernel.admit("memory_spaces", "write")
        if any(_is_recall(op) for op in ops):
            kernel.admit("memory_spaces", "recall")

    def _block(self, batch: _Batch, ops: Sequence[Op], block: slice) -> list[Result]:
        """Run one block of ops (blocking): a run of puts is one write, a query search one
        recall, any other op one read."""
        try:
            first = ops[block.start]
            if _is_recall(first):
                batch.at = block.start
                found = batch.spaces.search(**self._recall_args(batch, first))
                head = self._recalled(batch, first, found)
                items, tail = ranked(batch, first, head)
                refresh_returned(batch, first, found, items, tail)
                return [items]
            if isinstance(first, PutOp):
                self._puts(batch, ops, block)
                return [None] * (block.stop - block.start)
            batch.at = block.start
            return [self._read(batch, first)]
        except MnemonError as exc:
            say_applied(exc, batch.at, ops, batch.applied)
            raise

    def _read(self, batch: _Batch, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(batch, op)
        if isinstance(op, SearchOp):
            return self._list(batch, op)
        assert isinstance(op, ListNamespacesOp)
        return self._list_namespaces(batch, op)

    # ------------------------------------------------------------------ spaces

    def _store_spaces(self, batch: _Batch) -> dict[tuple[str, ...], SpaceRecord]:
        """The store spaces the batch reads, by namespace: decoded once per catalog revision
        (one aggregate statement when nothing changed, else one catalog read)."""
        revision = batch.keyed.catalog_revision()
        cached = self._catalogs.get(batch.scope)
        if cached is None or cached.revision != revision or revision is None:
            found: dict[tuple[str, ...], SpaceRecord] = {}
            for record in batch.keyed.catalog():
                namespace = _namespace_of(record)
                if (namespace is not None and batch.reads(record)) and (
                    record.id == batch.home_id(namespace) or namespace not in found
                ):
                    found[namespace] = record
            cached = _Catalog(revision, found, {r.id: r for r in found.values()})
            self._catalogs[batch.scope] = cached
        batch.records.update(cached.records)
        return cached.found

    def _home(
        self, batch: _Batch, namespace: tuple[str, ...], *, create: bool = False
    ) -> SpaceRecord | None:
        """The batch's own space of ``namespace`` (where its puts go); ``create`` makes it
        (and repairs a hand-edited description). Reads use the spaces this store resolved
        before: a space id hashes the namespace and its owner, so it never changes hands."""
        if not namespace:
            return None
        sid = batch.home_id(namespace)
        # A put trusts the record too: its write confirms the space inside its transaction
        # (StaleSpace: re-read here and write again), so no catalog read per put.
        record = batch.records.get(sid) or self._known.get(sid)
        if record is None:
            record = batch.keyed.space(sid)
            if record is not None and not batch.reads(record):
                record = None  # a space another owner took that id for
        if create:
            if record is None:
                record = self._create_space(batch, namespace, sid)
            elif _namespace_of(record) != namespace:
                record = self._repair(batch, namespace, record)
        if record is not None:
            batch.records[sid] = record
            self._known[sid] = record
            self._embed_with(batch, record)
        return record

    def _embed_with(self, batch: _Batch, record: SpaceRecord) -> None:
        """A store with its own ``embed`` serves its spaces' vectors with it (in-process)."""
        if self._index.embedder is not None:
            batch.keyed.use_embedder(record, self._index.embedder)

    def _create_space(self, batch: _Batch, namespace: tuple[str, ...], sid: str) -> SpaceRecord:
        """Create the namespace's space, or read the one a concurrent writer created first.

        Idempotent under a race: the catalog answers a taken id with ``InvalidInputError``
        (its insert is ``ON CONFLICT DO NOTHING``), a unique-key violation of either driver
        is a ``ConflictError`` (``duplicate-key``); both mean "re-read it".

        Raises:
            InvalidInputError: the space could not be created for another reason.
            ProviderError: the create was not committed.
        """
        try:
            receipt = batch.spaces.create_space(
                _space_name(namespace),
                _description(namespace),
                provider_id=_NATIVE,
                space_id=sid,
            )
        except (InvalidInputError, ConflictError) as exc:
            found = batch.keyed.space(sid)  # created concurrently by another writer
            if found is None:
                raise exc from None
            return found
        if receipt.space is None or not receipt.committed:
            raise ProviderError(
                f"the Memory Space for namespace {namespace!r} was not created: {receipt.message}"
            )
        return receipt.space

    def _repair(
        self, batch: _Batch, namespace: tuple[str, ...], record: SpaceRecord
    ) -> SpaceRecord:
        if record.provider_id != _NATIVE:
            raise ProviderError(
                f"Memory Space {record.id!r} (namespace {namespace!r}) uses provider "
                f"{record.provider_id!r}; the store needs the native {_NATIVE!r} provider. "
                "Rename that space's id or use another namespace",
                code="unsupported",
            )
        receipt = batch.spaces.update_space(
            record.id, name=_space_name(namespace), description=_description(namespace)
        )
        return receipt.space or record

    def _under(self, batch: _Batch, prefix: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
        """The readable store spaces under ``prefix``: space id -> namespace."""
        under = {
            record.id: ns
            for ns, record in sorted(self._store_spaces(batch).items())
            if ns[: len(prefix)] == prefix
        }
        for sid in under:
            self._embed_with(batch, batch.records[sid])
        return under

    # ------------------------------------------------------------------ operations

    def _get(self, batch: _Batch, op: GetOp) -> Item | None:
        namespace = tuple(op.namespace)
        record = self._home(batch, namespace)
        found = batch.keyed.get(record, op.key) if record is not None else None
        if found is None:
            return None
        if op.refresh_ttl and found.ttl_minutes is not None and record is not None:
            batch.keyed.refresh(record, [found.id])
        return _row(found).item(namespace)

    def _puts(self, batch: _Batch, ops: Sequence[Op], block: slice) -> None:
        """A run of puts (and deletes): every space resolved first, then ONE write. A space
        that changed since this store cached it is re-read and the write made once more."""
        try:
            self._put_block(batch, ops, block)
        except StaleSpace as stale:
            for sid in stale.space_ids:  # nothing was written: forget the records, resolve again
                batch.records.pop(sid, None)
                self._known.pop(sid, None)
            try:
                self._put_block(batch, ops, block)
            except StaleSpace as again:
                raise ProviderError(
                    f"the Memory Spaces {again.space_ids} changed during the put twice; "
                    "retry the put when the catalog is no longer being edited"
                ) from None

    def _put_block(self, batch: _Batch, ops: Sequence[Op], block: slice) -> None:
        groups: dict[str, tuple[SpaceRecord, list[KeyedWrite]]] = {}
        resolved: list[PutOp] = []
        for index in range(block.start, block.stop):
            op = ops[index]
            assert isinstance(op, PutOp)
            batch.at = index
            try:
                record = self._home(batch, tuple(op.namespace), create=op.value is not None)
            except MnemonError:
                self._write(batch, groups, resolved)  # the ops before this one are applied
                batch.at = index
                raise
            if record is not None:
                write = _keyed_write(op, self._index)
                groups.setdefault(record.id, (record, []))[1].append(write)
            resolved.append(op)
        batch.at = block.start
        self._write(batch, groups, resolved)

    def _write(
        self,
        batch: _Batch,
        groups: Mapping[str, tuple[SpaceRecord, list[KeyedWrite]]],
        ops: list[PutOp],
    ) -> None:
        for (record, writes), receipts in zip(
            groups.values(), batch.keyed.write(list(groups.values())), strict=True
        ):
            for write, receipt in zip(writes, receipts, strict=True):
                if receipt.status != "committed":
                    raise ProviderError(
                        f"put({_namespace_of(record)!r}, {write.key!r}) was not stored "
                        f"({receipt.status}): {receipt.message}"
                    )
            # The cached record too: a put trusts it, and a stale `active` would activate again.
            batch.records[record.id] = self._known[record.id] = record.model_copy(
                update={"active": True}
            )
        batch.applied.extend(ops)

    def _list(self, batch: _Batch, op: SearchOp) -> list[SearchItem]:
        """Search without a query: the newest items under the prefix (one statement per page
        of 500; a ``filter`` reads pages until the window is full)."""
        if op.limit == 0:
            return []
        by_space = self._under(batch, tuple(op.namespace_prefix))
        records = [batch.records[sid] for sid in by_space]
        wanted = op.offset + op.limit
        found: list[tuple[tuple[str, ...], _Row]] = []
        read = 0
        # A filter reads pages that start small and double (most filters fill the window
        # from the newest rows), up to 500 rows per statement.
        size = min(_PAGE, max(64, 4 * wanted)) if op.filter else wanted
        while len(found) < wanted:
            page = batch.keyed.page(records, size, read)
            read += len(page)
            rows = ((by_space[r.space_id], _row(r)) for r in page)
            found.extend((ns, row) for ns, row in rows if _passes(row.value, op.filter))
            if len(page) < size or not op.filter:
                break
            size = min(_PAGE, size * 2)
        window = found[op.offset : wanted]
        expiring = [row.memory_id for _, row in window if row.ttl is not None]
        if op.refresh_ttl and expiring:
            batch.keyed.refresh(records[0], expiring)
        return [row.search_item(ns, None) for ns, row in window]

    def _recall_args(self, batch: _Batch, op: SearchOp) -> dict[str, Any]:
        """The federated recall of a query search (blocking: reads the catalog)."""
        by_space = self._under(batch, tuple(op.namespace_prefix))
        batch.recall_spaces = by_space
        fetch = _MAX_RECALL if op.filter else min(_MAX_RECALL, op.offset + op.limit + 10)
        return {
            "query": (op.query or "").strip(),
            "space_ids": list(by_space) or None,
            "limit": fetch,
            "policy": _RANKED,
            "verbatim": True,  # the value's JSON text, decoded back into the value put
        }

    def _recalled(self, batch: _Batch, op: SearchOp, found: Any) -> list[SearchItem]:
        """The ranked items of one recall that pass the filter (the exhaustive ordering, no
        cut): the first ranks of a query search."""
        by_space = batch.recall_spaces
        out: list[SearchItem] = []
        seen: set[tuple[tuple[str, ...], str]] = set()
        for insight in found.results if by_space else ():
            namespace = by_space.get(insight.space_id or "")
            if namespace is None:
                continue
            row = _row(insight)
            if not row.indexed or (namespace, row.key) in seen or not _passes(row.value, op.filter):
                continue
            seen.add((namespace, row.key))
            score = insight.score if insight.score is not None else insight.normalized_score
            out.append(row.search_item(namespace, score))
        return out

    def _list_namespaces(self, batch: _Batch, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        """Namespaces with at least one item: the catalog plus one ``EXISTS`` statement."""
        candidates = {
            record.id: ns
            for ns, record in self._store_spaces(batch).items()
            if all(_matches(c, ns) for c in op.match_conditions or ())
        }
        live = batch.keyed.live([batch.records[sid] for sid in candidates])
        namespaces = {
            ns if op.max_depth is None else ns[: op.max_depth]
            for sid, ns in candidates.items()
            if sid in live
        }
        return sorted(namespaces)[op.offset : op.offset + op.limit]


@dataclass(frozen=True, slots=True)
class _Catalog:
    """One scope's store spaces as decoded at one catalog revision."""

    revision: tuple[Any, ...] | None
    found: dict[tuple[str, ...], SpaceRecord]
    records: dict[str, SpaceRecord]


def _is_recall(op: Op) -> bool:
    return isinstance(op, SearchOp) and bool((op.query or "").strip())


def _blocks(ops: Sequence[Op]) -> list[slice]:
    """The ops in runs: consecutive puts together (one write), every other op alone."""
    out: list[slice] = []
    index = 0
    while index < len(ops):
        end = index + 1
        if isinstance(ops[index], PutOp):
            while end < len(ops) and isinstance(ops[end], PutOp):
                end += 1
        out.append(slice(index, end))
        index = end
    return out


def _keyed_write(op: PutOp, index: StoreIndex) -> KeyedWrite:
    """The row of a put: the value's JSON text as content, indexed by the text its index
    fields select (the put's list, else the store's; see :mod:`._index`)."""
    if op.value is None:
        return KeyedWrite(op.key, None)
    text = index.text(op.value, op.index if isinstance(op.index, list) else None)
    # index=False, or fields that select no text: stored, never ranked by query search.
    metadata: dict[str, Any] = {_KEY: op.key, _INDEXED: _check_index(op.index) and text != ""}
    if text is not None:
        metadata[_TEXT] = text_digest(text)
    item = {"content": _encode_value(op.value), "source": "external", "metadata": metadata}
    return KeyedWrite(op.key, item, text, op.ttl)


def ranked(
    batch: _Batch, op: SearchOp, head: list[SearchItem]
) -> tuple[list[SearchItem], list[str]]:
    """``offset`` / ``limit`` of the whole ranking: the recall's items, then (when they do
    not fill the window) every other indexed item that passes the filter, by the same
    scorer's relevance, capped at the recall's lowest score so ranks and scores agree.
    Also the memory ids of the window's items after the recall's that have a time to live."""
    wanted = op.offset + op.limit
    if op.limit == 0:
        return [], []
    # The items after the recall's, in order: their memory id when they have a time to live
    # (the rows to refresh), else None.
    tail: list[str | None] = []
    if len(head) < wanted and batch.recall_spaces:
        floor = min((h.score for h in head if h.score is not None), default=1.0)
        seen = {(h.namespace, h.key) for h in head}
        for namespace, row, score in _rest(batch, op, seen, wanted - len(head)):
            head.append(row.search_item(namespace, min(floor, score)))
            tail.append(row.memory_id if row.ttl is not None else None)
    first_tail = len(head) - len(tail)  # the window may start inside the tail
    expiring = [m for m in tail[max(0, op.offset - first_tail) :] if m is not None]
    return head[op.offset : wanted], expiring


def _rest(
    batch: _Batch, op: SearchOp, seen: set[tuple[tuple[str, ...], str]], need: int
) -> Iterator[tuple[tuple[str, ...], _Row, float]]:
    """Up to ``need`` indexed items of the searched namespaces that the recall did not
    return and the filter passes, best first, with their 0..1 relevance: the provider
    ranks every live row (seqs and scores only), then the rows are read in that order in
    growing chunks until ``need`` are found."""
    by_space = batch.recall_spaces
    records = [batch.records[sid] for sid in by_space]
    ranking = batch.keyed.rank(records, (op.query or "").strip())
    score = {seq: relevance for seq, relevance, _ in ranking}
    size, at, found = min(_PAGE, max(64, 2 * need)), 0, 0
    while at < len(ranking) and found < need:
        chunk = [seq for seq, _, _ in ranking[at : at + size]]
        at += len(chunk)
        for keyed in batch.keyed.rows(records, chunk):
            namespace, row = by_space.get(keyed.space_id), _row(keyed)
            if namespace is None or (namespace, row.key) in seen or not row.indexed:
                continue
            if _passes(row.value, op.filter):
                seen.add((namespace, row.key))
                found += 1
                yield namespace, row, score[keyed.seq]
                if found >= need:
                    return
        size = min(_PAGE, size * 2)


def refresh_returned(
    batch: _Batch, op: SearchOp, found: Any, items: Sequence[SearchItem], tail: Sequence[str]
) -> None:
    """Restart the time to live of the rows a query search returned (``refresh_ttl``): the
    first result row of each recalled item, as :meth:`MnemonStore._recalled` picked it, and
    the ranked rows after them (``tail``, memory ids)."""
    if not op.refresh_ttl or not items:
        return
    wanted = {(tuple(i.namespace), i.key) for i in items}
    ids: list[str] = list(tail)
    for insight in found.results:
        namespace = batch.recall_spaces.get(insight.space_id or "")
        if namespace is None:
            continue
        item = (namespace, _row(insight).key)
        if item in wanted:
            wanted.discard(item)
            ids.append(insight.id)
    sid = next(iter(batch.recall_spaces), None)
    if ids and sid is not None:
        batch.keyed.refresh(batch.records[sid], ids)
