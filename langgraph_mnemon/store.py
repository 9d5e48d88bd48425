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
* **Item → memory row.** The value is stored as its JSON text (key order kept) in the row's
  ``content``, so keyword and dense recall index the whole value and ``get`` returns exactly
  what was ``put`` (after a JSON round trip: tuples come back as lists). The key, the first
  ``created_at`` and the ``index`` choice live in the row's metadata (``store_key``,
  ``store_created_at``, ``store_indexed``); rows have ``source="external"``. ``updated_at`` is
  the time the current row was written.
* **Rows written by other Mnemon paths** into a store space (the write worker, ``spaces.remember``)
  show up as items keyed by their memory id, with a value describing the memory
  (``content``, ``category``, ``importance``, ``tags``, ``entities``, ``source``, ``metadata``).

Semantics:

* ``put`` goes through ``MemorySpaces.aremember`` (validation, deduplication, receipts) and only
  counts a committed receipt. Overwriting a key writes the new row first and then forgets the old
  one, so a failed ``put`` leaves the previous value in place (``created_at`` is kept,
  ``updated_at`` changes). Putting an identical value under the same key is a deduplicated no-op
  (``updated_at`` stays). ``put(..., None)`` / ``delete`` forget the row (a soft delete).
  Concurrent puts to one key are not serialised: the newest row wins and the next write of
  that key forgets the superseded copies.
* ``index=False`` keeps the item out of query search results of this store (it is still
  stored, returned by ``get`` and by search without a query, and visible to the agent's own
  recall). ``index=[fields]`` is accepted; the whole value is indexed either way.
* ``search(prefix, query=...)`` is federated recall (:meth:`MemorySpaces.asearch`) over the
  namespace spaces under ``prefix``; ``SearchItem.score`` is the provider's 0..1 relevance and
  at most 50 ranked rows exist per query. Without a query it lists items, newest
  ``updated_at`` first. ``filter`` takes equality or ``$eq $ne $gt $gte $lt $lte`` on value keys
  (nested dicts compare key by key, lists element by element), as ``InMemoryStore`` does.
* ``list_namespaces`` lists namespaces that hold at least one item, sorted, with ``"*"``
  wildcards in ``prefix`` / ``suffix`` and ``max_depth`` truncation.
* No TTL: ``supports_ttl = False``; a ``PutOp`` with a ``ttl`` raises ``NotImplementedError``
  like ``BaseStore.put`` does, and ``refresh_ttl`` is ignored.
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
* Bad input raises ``InvalidNamespaceError`` (namespaces; also an :class:`InvalidInputError`)
  or :class:`InvalidInputError` (keys, values, filters, limits) before anything is written; a
  provider that does not commit raises :class:`ProviderError`. Every op of a batch is
  validated before the first one runs. When a later op of a batch fails after earlier puts
  were applied, the typed error is raised with a message that names the applied puts and the
  op that failed (``error.applied`` lists them as ``(namespace, key)``); nothing after it ran.
* A lookup by key is one query (the native provider's ``find_by_metadata`` on ``store_key``);
  search without a query reads the newest ``offset + limit`` rows of each namespace, and a
  ``filter`` reads all of them (pages of 500), like ``InMemoryStore`` scans its items.

``abatch`` is natively async (every blocking call runs in a worker thread), so the facade is safe
under the LangGraph server; ``batch`` runs the same coroutine on a private event loop.

Example:
    >>> store = mem.store()
    >>> store.put(("users", "alice"), "editor", {"theme": "dark", "font_size": 14})
    >>> store.get(("users", "alice"), "editor").value
    {'theme': 'dark', 'font_size': 14}
    >>> [i.key for i in store.search(("users",), query="dark theme")]
    ['editor']
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from langgraph_mnemon._store_args import (
    CheckedArguments,
    NamespaceError,
    as_namespace,
    check_filter,
    check_window,
)
from langgraph_mnemon._store_run import run_sync, say_applied
from langgraph_mnemon.contracts import check_text, safe_text, shown, text_problem
from langgraph_mnemon.errors import (
    InvalidInputError,
    MnemonError,
    NotFoundError,
    ProviderError,
)
from langgraph_mnemon.memory_layers.kernel import TRIGGERS, Trigger, acting
from langgraph_mnemon.memory_layers.spaces import SpaceBinding

if TYPE_CHECKING:
    from langgraph_mnemon.host import Mnemon
    from langgraph_mnemon.memory_layers.spaces import Insight, MemorySpaces, SpaceRecord

__all__ = ["MAX_KEY_CHARS", "MAX_VALUE_CHARS", "NAMESPACE_PREFIX", "MnemonStore"]

NAMESPACE_PREFIX = "LangGraph store namespace: "
"""How a store space's description starts; the namespace follows as a JSON list."""
MAX_KEY_CHARS = 1000
"""Longest key (it is kept in the row's metadata, whose values are limited to 1000 chars)."""
MAX_VALUE_CHARS = 65_536
"""Longest value, measured as its JSON text (the Memory Space content limit)."""

_SPACE_ID_PREFIX = "store-"
_NATIVE = "mnemos"
_MAX_NAMESPACE_JSON = 500 - len(NAMESPACE_PREFIX)
_MAX_NAME = 120
_PAGE = 500
_MAX_RECALL = 50
_KEY = "store_key"
_CREATED = "store_created_at"
_INDEXED = "store_indexed"
_MEMORY_ID = re.compile(r"^[0-9a-f]{32}$")
_TRIGGERS = TRIGGERS


# --------------------------------------------------------------------------------------------
# Namespace mapping


def _namespace_json(namespace: tuple[str, ...]) -> str:
    return json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))


def _space_id(namespace: tuple[str, ...]) -> str:
    digest = hashlib.blake2b(_namespace_json(namespace).encode(), digest_size=12).hexdigest()
    return _SPACE_ID_PREFIX + digest


def _space_name(namespace: tuple[str, ...]) -> str:
    name = "store:" + "/".join(namespace)
    return name if len(name) <= _MAX_NAME else name[: _MAX_NAME - 1] + "…"


def _description(namespace: tuple[str, ...]) -> str:
    return NAMESPACE_PREFIX + _namespace_json(namespace)


def _namespace_of(record: SpaceRecord) -> tuple[str, ...] | None:
    """The namespace a store space serves, or None for any other Memory Space."""
    if not record.id.startswith(_SPACE_ID_PREFIX) or record.provider_id != _NATIVE:
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
    return namespace if _space_id(namespace) == record.id else None


def _check_namespace(namespace: Any) -> tuple[str, ...]:
    """LangGraph's namespace rules for writes, plus the facade's length limit."""
    namespace = as_namespace(namespace)
    if not namespace:
        raise NamespaceError("Namespace cannot be empty.")
    _check_labels(namespace)
    if namespace[0] == "langgraph":
        raise NamespaceError(f'Root label for namespace cannot be "langgraph". Got: {namespace}')
    if len(_namespace_json(namespace)) > _MAX_NAMESPACE_JSON:
        raise NamespaceError(
            f"Namespace {namespace!r} is too long for a Memory Space: keep its labels under "
            f"{_MAX_NAMESPACE_JSON} characters in total (as a JSON list)"
        )
    return namespace


def _check_labels(path: Any) -> tuple[str, ...]:
    if isinstance(path, list):
        path = tuple(path)
    if not isinstance(path, tuple):
        raise NamespaceError(
            f"Namespace paths must be tuples of strings, e.g. ('users',); got {shown(path)}"
        )
    try:
        validate_op_namespace(GetOp(path, ""))
    except InvalidNamespaceError as exc:
        raise NamespaceError(str(exc)) from None
    for label in path:  # LangGraph refuses NUL; a lone surrogate cannot be stored either
        problem = text_problem(label)
        if problem is not None:
            raise NamespaceError(f"Namespace label {shown(label)} {problem}")
    return path


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
    if index is None:
        return True
    if index is False:
        return False
    if isinstance(index, list) and all(isinstance(f, str) and f for f in index):
        return True
    raise InvalidInputError(
        "index must be None, False or a list of field paths such as ['content']"
    )


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _compare(have: Any, operator: str, want: Any) -> bool:
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
        return isinstance(have, Mapping) and all(_equal(have.get(k), v) for k, v in want.items())
    if isinstance(want, (list, tuple)):
        return (
            isinstance(have, (list, tuple))
            and len(have) == len(want)
            and all(_equal(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool(have == want)


def _passes(value: Mapping[str, Any], spec: Mapping[str, Any] | None) -> bool:
    return not spec or all(_equal(value.get(k), v) for k, v in spec.items())


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
        if op.ttl is not None:
            raise NotImplementedError(
                "TTL is not supported by MnemonStore. Use a store implementation that supports "
                "TTL or set ttl=None."
            )
    elif isinstance(op, GetOp):
        _check_labels(op.namespace)
        _check_key(op.key)
    elif isinstance(op, SearchOp):
        _check_labels(op.namespace_prefix)
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


def _row(insight: Insight) -> _Row:
    written = insight.created_at if insight.created_at is not None else time.time()
    meta = insight.metadata
    key = meta.get(_KEY)
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


@dataclass
class _Rows:
    """The live items of one namespace: the newest row per key plus superseded copies."""

    current: dict[str, _Row] = field(default_factory=dict)
    stale: dict[str, list[_Row]] = field(default_factory=dict)


class _Batch:
    """Per-batch caches (the catalog and the rows of each namespace read so far)."""

    def __init__(self, spaces: MemorySpaces) -> None:
        self.spaces = spaces
        self.catalog: dict[tuple[str, ...], SpaceRecord] | None = None
        self.rows: dict[str, _Rows] = {}


# --------------------------------------------------------------------------------------------


class MnemonStore(CheckedArguments):
    """A LangGraph ``BaseStore`` whose namespaces are Memory Spaces of one :class:`Mnemon` host.

    Get one with ``Mnemon.store()`` (one per host). See the module docstring for the mapping
    and the exact semantics of each operation.

    Example:
        >>> store = mem.store()
        >>> await store.aput(("notes",), "n1", {"text": "Deploys need two approvals."})
        >>> (await store.asearch(("notes",), query="deploy approvals"))[0].key
        'n1'
        >>> store.list_namespaces(prefix=("notes",))
        [('notes',)]
    """

    supports_ttl: bool = False

    def __init__(self, host: Mnemon, *, trigger: Trigger | None = None) -> None:
        if trigger is not None and trigger not in _TRIGGERS:
            raise InvalidInputError(
                f"trigger must be one of {', '.join(_TRIGGERS)} or None (got {shown(trigger)})"
            )
        self._host = host
        self._trigger = trigger
        self._siblings: dict[str, MnemonStore] = {}

    def __repr__(self) -> str:
        shown_trigger = f", trigger={self._trigger!r}" if self._trigger else ""
        return f"MnemonStore(root={str(self._host.root)!r}{shown_trigger})"

    @property
    def host(self) -> Mnemon:
        """The :class:`Mnemon` host whose Memory Spaces back this store."""
        return self._host

    @property
    def trigger(self) -> Trigger | None:
        """The trigger every op runs under; None = the caller's (explicit by default)."""
        return self._trigger

    def acting_as(self, trigger: Trigger) -> MnemonStore:
        """This store with every op run under ``trigger`` (one instance per trigger).

        Example:
            >>> tools_store = mem.store().acting_as("automatic")  # = mem.store(trigger=...)
            >>> tools_store.trigger
            'automatic'
        """
        if trigger == self._trigger:
            return self
        sibling = self._siblings.get(trigger)
        if sibling is None:
            sibling = self._siblings[trigger] = MnemonStore(self._host, trigger=trigger)
        return sibling

    @staticmethod
    def space_id_for(namespace: tuple[str, ...]) -> str:
        """The id of the Memory Space that holds ``namespace`` (it may not exist yet).

        Example:
            >>> MnemonStore.space_id_for(("users", "alice")).startswith("store-")
            True
        """
        return _space_id(_check_namespace(namespace))

    # ------------------------------------------------------------------ BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order and return one result per op (sync twin of :meth:`abatch`).

        Example:
            >>> from langgraph.store.base import GetOp
            >>> store.batch([GetOp(("users", "alice"), "editor")])[0].value
            {'theme': 'dark', 'font_size': 14}
        """
        return run_sync(self.abatch(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order without blocking the event loop; one result per op.

        Every op is validated first, so a bad op fails the batch before anything is written.

        Example:
            >>> from langgraph.store.base import PutOp, SearchOp
            >>> await store.abatch([PutOp(("docs",), "a", {"x": 1}), SearchOp(("docs",))])
            [None, [Item(namespace=['docs'], key='a', ...)]]
        """
        if isinstance(ops, (str, bytes, Mapping)) or not isinstance(ops, Iterable):
            raise InvalidInputError(
                "ops must be a list of GetOp, PutOp, SearchOp or ListNamespacesOp"
            )
        ops = list(ops)
        for op in ops:
            _check_op(op)
        with self._acting():
            self._admit(ops)
            return await self._run(ops)

    # ------------------------------------------------------------------ helpers

    def _acting(self) -> AbstractContextManager[None]:
        return acting(self._trigger) if self._trigger is not None else nullcontext()

    def _admit(self, ops: Sequence[Op]) -> None:
        """Ask the kernel for the batch's write / recall channels before its first op runs (the
        layer methods ask again): a refused batch must not have applied some of its ops."""
        kernel = self._host.kernel
        if any(isinstance(op, PutOp) for op in ops):
            kernel.admit("memory_spaces", "write")
        if any(isinstance(op, SearchOp) and (op.query or "").strip() for op in ops):
            kernel.admit("memory_spaces", "recall")

    async def _run(self, ops: Sequence[Op]) -> list[Result]:
        spaces = await asyncio.to_thread(getattr, self._host, "spaces")
        batch = _Batch(spaces)
        results: list[Result] = []
        applied: list[PutOp] = []
        for index, op in enumerate(ops):
            try:
                results.append(await self._one(batch, op))
            except MnemonError as exc:
                say_applied(exc, index, ops, applied)
                raise
            if isinstance(op, PutOp):
                applied.append(op)
        return results

    async def _one(self, batch: _Batch, op: Op) -> Result:
        if isinstance(op, GetOp):
            return await self._get(batch, op)
        if isinstance(op, SearchOp):
            return await self._search(batch, op)
        if isinstance(op, PutOp):
            await self._put(batch, op)
            return None
        return await self._list_namespaces(batch, op)

    async def _catalog(self, batch: _Batch) -> dict[tuple[str, ...], SpaceRecord]:
        if batch.catalog is None:
            found: dict[tuple[str, ...], SpaceRecord] = {}
            for record in await batch.spaces.alist_spaces():
                namespace = _namespace_of(record)
                if namespace is not None:
                    found[namespace] = record
            batch.catalog = found
        return batch.catalog

    async def _record(
        self, batch: _Batch, namespace: tuple[str, ...], *, create: bool = False
    ) -> SpaceRecord | None:
        if not namespace or namespace[0] == "langgraph":
            return None
        if batch.catalog is not None and namespace in batch.catalog:
            return batch.catalog[namespace]
        sid = _space_id(namespace)
        try:
            record = await batch.spaces.aget_space(sid)
        except NotFoundError:
            if not create:
                return None
            record = await self._create_space(batch, namespace, sid)
        else:
            if create and _namespace_of(record) != namespace:
                record = await self._repair(batch, namespace, record)
        if batch.catalog is not None:
            batch.catalog[namespace] = record
        return record

    async def _create_space(
        self, batch: _Batch, namespace: tuple[str, ...], sid: str
    ) -> SpaceRecord:
        try:
            receipt = await batch.spaces.acreate_space(
                _space_name(namespace),
                _description(namespace),
                provider_id=_NATIVE,
                space_id=sid,
            )
        except InvalidInputError as exc:
            try:  # created concurrently by another writer: use that one
                return await batch.spaces.aget_space(sid)
            except NotFoundError:
                raise exc from None
        if receipt.space is None or not receipt.committed:
            raise ProviderError(
                f"the Memory Space for namespace {namespace!r} was not created: {receipt.message}"
            )
        return receipt.space

    async def _repair(
        self, batch: _Batch, namespace: tuple[str, ...], record: SpaceRecord
    ) -> SpaceRecord:
        if record.provider_id != _NATIVE:
            raise ProviderError(
                f"Memory Space {record.id!r} (namespace {namespace!r}) uses provider "
                f"{record.provider_id!r}; the store needs the native {_NATIVE!r} provider. "
                "Rename that space's id or use another namespace",
                code="unsupported",
            )
        receipt = await batch.spaces.aupdate_space(
            record.id, name=_space_name(namespace), description=_description(namespace)
        )
        return receipt.space or record

    async def _rows(self, batch: _Batch, record: SpaceRecord) -> _Rows:
        cached = batch.rows.get(record.id)
        if cached is not None:
            return cached
        rows = _Rows()
        offset = 0
        while True:
            page = await batch.spaces.abrowse(record.id, limit=_PAGE, offset=offset)
            for insight in page:  # newest first: the first row of a key is its current one
                row = _row(insight)
                if row.key in rows.current:
                    rows.stale.setdefault(row.key, []).append(row)
                else:
                    rows.current[row.key] = row
            if len(page) < _PAGE:
                break
            offset += _PAGE
        batch.rows[record.id] = rows
        return rows

    async def _newest(self, batch: _Batch, record: SpaceRecord, count: int) -> list[_Row]:
        """The current rows of the ``count`` most recently written keys of one space."""
        current: dict[str, _Row] = {}
        size = min(_PAGE, max(count, 10))
        offset = 0
        while len(current) < count:
            page = await batch.spaces.abrowse(record.id, limit=size, offset=offset)
            for insight in page:
                row = _row(insight)
                current.setdefault(row.key, row)
            if len(page) < size:
                break
            offset += size
        return list(current.values())

    async def _versions(self, batch: _Batch, record: SpaceRecord, key: str) -> list[_Row]:
        """The live rows of ``key`` in one space, newest (current) first."""
        cached = batch.rows.get(record.id)
        if cached is None:
            provider = batch.spaces.providers.get(record.provider_id)
            finder = getattr(provider, "find_by_metadata", None)
            if finder is not None:  # keyed lookup: no scan of the namespace
                binding = SpaceBinding(
                    id=record.id,
                    name=record.name,
                    description=record.description,
                    config=record.config,
                )
                found = [_row(i) for i in await finder(binding, _KEY, key, limit=_PAGE)]
                found = [r for r in found if r.key == key]
                if found or not _MEMORY_ID.match(key):
                    return found
            cached = await self._rows(batch, record)  # rows of other paths are keyed by id
        current = cached.current.get(key)
        return ([current] if current is not None else []) + cached.stale.get(key, [])

    async def _under(
        self, batch: _Batch, prefix: tuple[str, ...]
    ) -> list[tuple[tuple[str, ...], SpaceRecord]]:
        catalog = await self._catalog(batch)
        return sorted(
            ((ns, rec) for ns, rec in catalog.items() if ns[: len(prefix)] == prefix),
            key=lambda pair: pair[0],
        )

    async def _forget(self, batch: _Batch, record: SpaceRecord, memory_id: str) -> None:
        try:
            receipt = await batch.spaces.aforget(memory_id, space_id=record.id)
        except NotFoundError:
            return  # already gone (a concurrent delete): the goal is reached
        if receipt.status != "committed":
            raise ProviderError(
                f"the item could not be removed from {record.id!r}: {receipt.message}"
            )

    # ------------------------------------------------------------------ operations

    async def _get(self, batch: _Batch, op: GetOp) -> Item | None:
        namespace = tuple(op.namespace)
        record = await self._record(batch, namespace)
        if record is None:
            return None
        versions = await self._versions(batch, record, op.key)
        return versions[0].item(namespace) if versions else None

    async def _put(self, batch: _Batch, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        if op.value is None:
            await self._delete(batch, namespace, op.key)
            return
        content = _encode_value(op.value)
        indexed = _check_index(op.index)
        record = await self._record(batch, namespace, create=True)
        assert record is not None
        versions = await self._versions(batch, record, op.key)
        previous = versions[0] if versions else None
        stale = versions[1:]
        if (
            previous is not None
            and previous.native
            and previous.indexed == indexed
            and not stale
            and json.dumps(previous.value, ensure_ascii=False, allow_nan=False) == content
        ):
            return  # the same value again: deduplicated, nothing changes
        metadata: dict[str, Any] = {_KEY: op.key, _INDEXED: indexed}
        if previous is not None:  # a new item's created_at is its row's write time
            metadata[_CREATED] = previous.created_at
        batch.rows.pop(record.id, None)
        receipt = await batch.spaces.aremember(
            content, space_id=record.id, source="external", metadata=metadata
        )
        if receipt.status != "committed" or not receipt.id:
            raise ProviderError(
                f"put({namespace!r}, {op.key!r}) was not stored ({receipt.status}): "
                f"{receipt.message}"
            )
        old = [r for r in ([previous] if previous else []) + stale if r.memory_id != receipt.id]
        try:
            for row in old:
                await self._forget(batch, record, row.memory_id)
        except MnemonError:
            if receipt.changed:  # roll the new row back so the old value stays in place
                await self._forget(batch, record, receipt.id)
            raise

    async def _delete(self, batch: _Batch, namespace: tuple[str, ...], key: str) -> None:
        record = await self._record(batch, namespace)
        if record is None:
            return
        doomed = await self._versions(batch, record, key)
        if not doomed:
            return
        batch.rows.pop(record.id, None)
        for row in doomed:
            await self._forget(batch, record, row.memory_id)

    async def _search(self, batch: _Batch, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if op.limit == 0:
            return []
        targets = await self._under(batch, prefix)
        if not targets:
            return []
        query = (op.query or "").strip()
        if query:
            return await self._recall(batch, op, query, targets)
        listed: list[tuple[tuple[str, ...], _Row]] = []
        wanted = op.offset + op.limit
        for namespace, record in targets:
            if op.filter or record.id in batch.rows:
                current = list((await self._rows(batch, record)).current.values())
            else:  # no filter: the newest ``wanted`` items of each namespace are enough
                current = await self._newest(batch, record, wanted)
            listed.extend((namespace, r) for r in current if _passes(r.value, op.filter))
        listed.sort(key=lambda pair: (-pair[1].updated_at, pair[0], pair[1].key))
        window = listed[op.offset : op.offset + op.limit]
        return [row.search_item(namespace, None) for namespace, row in window]

    async def _recall(
        self,
        batch: _Batch,
        op: SearchOp,
        query: str,
        targets: Sequence[tuple[tuple[str, ...], SpaceRecord]],
    ) -> list[SearchItem]:
        by_space = {record.id: namespace for namespace, record in targets}
        wanted = op.offset + op.limit
        fetch = _MAX_RECALL if op.filter else min(_MAX_RECALL, wanted + 10)
        found = await batch.spaces.asearch(query, space_ids=list(by_space), limit=fetch)
        out: list[SearchItem] = []
        seen: set[tuple[tuple[str, ...], str]] = set()
        for insight in found.results:
            namespace = by_space.get(insight.space_id or "")
            if namespace is None:
                continue
            row = _row(insight)
            if not row.indexed or (namespace, row.key) in seen or not _passes(row.value, op.filter):
                continue
            seen.add((namespace, row.key))
            score = insight.score if insight.score is not None else insight.normalized_score
            out.append(row.search_item(namespace, score))
        return out[op.offset : wanted]

    async def _list_namespaces(self, batch: _Batch, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        catalog = await self._catalog(batch)
        candidates = [
            (ns, rec)
            for ns, rec in catalog.items()
            if all(_matches(c, ns) for c in op.match_conditions or ())
        ]

        async def holds_items(record: SpaceRecord) -> bool:
            cached = batch.rows.get(record.id)
            if cached is not None:
                return bool(cached.current)
            return bool(await batch.spaces.abrowse(record.id, limit=1))

        present = await asyncio.gather(*(holds_items(rec) for _, rec in candidates))
        namespaces = {
            ns if op.max_depth is None else ns[: op.max_depth]
            for (ns, _), keep in zip(candidates, present, strict=True)
            if keep
        }
        return sorted(namespaces)[op.offset : op.offset + op.limit]
