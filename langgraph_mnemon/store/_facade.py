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
  local user maps namespaces exactly as above; its view is the host operator's and also reads
  every user's namespaces (``get`` gives the newest copy of a key, ``delete`` removes all),
  while its puts go to its own space.
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
import json
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from langgraph_mnemon.contracts import LOCAL, Scope, shown
from langgraph_mnemon.errors import (
    InvalidInputError,
    MnemonError,
    NotFoundError,
    ProviderError,
)
from langgraph_mnemon.memory_layers.kernel import Trigger, acting
from langgraph_mnemon.memory_layers.spaces import SpaceBinding
from langgraph_mnemon.storage.loop import LoopRunner
from langgraph_mnemon.store._args import (
    CheckedArguments,
)
from langgraph_mnemon.store._mapping import (
    _CREATED,
    _INDEXED,
    _KEY,
    _MAX_RECALL,
    _MEMORY_ID,
    _NATIVE,
    _PAGE,
    _TRIGGERS,
    MAX_KEY_CHARS,
    MAX_VALUE_CHARS,
    NAMESPACE_PREFIX,
    _Batch,
    _check_index,
    _check_namespace,
    _check_op,
    _description,
    _encode_value,
    _matches,
    _namespace_of,
    _passes,
    _Row,
    _row,
    _Rows,
    _space_id,
    _space_name,
)
from langgraph_mnemon.store._run import say_applied
from langgraph_mnemon.store._scope import StoreHost, op_scope, spaces_of

if TYPE_CHECKING:
    from langgraph_mnemon.memory_layers.spaces import SpaceRecord

__all__ = ["MAX_KEY_CHARS", "MAX_VALUE_CHARS", "NAMESPACE_PREFIX", "MnemonStore", "StoreHost"]


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

    def __init__(
        self,
        host: StoreHost,
        *,
        trigger: Trigger | None = None,
        _runner: LoopRunner | None = None,
        _scope: Scope | None = None,
        _family: dict[tuple[Trigger | None, Scope | None], MnemonStore] | None = None,
    ) -> None:
        if trigger is not None and trigger not in _TRIGGERS:
            raise InvalidInputError(
                f"trigger must be one of {', '.join(_TRIGGERS)} or None (got {shown(trigger)})"
            )
        self._host = host
        self._trigger = trigger
        self._scope = _scope
        # One store per (trigger, scope), shared by all of them: acting_as / scoped find it.
        self._family = _family if _family is not None else {}
        self._family.setdefault((trigger, _scope), self)
        # The sync/async rule of every service (storage.loop): ``batch`` runs ``abatch`` on one
        # private loop that the siblings share.
        self._runner = _runner or LoopRunner("mnemon-store", owner="store", service="the store")

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

    def _sibling(self, trigger: Trigger | None, scope: Scope | None) -> MnemonStore:
        sibling = self._family.get((trigger, scope))
        if sibling is None:
            sibling = MnemonStore(
                self._host,
                trigger=trigger,
                _runner=self._runner,
                _scope=scope,
                _family=self._family,
            )
        return self._family.setdefault((trigger, scope), sibling)

    def acting_as(self, trigger: Trigger) -> MnemonStore:
        """This store with every op run under ``trigger`` (one instance per trigger).

        Example:
            >>> tools_store = mem.store().acting_as("automatic")  # = mem.store(trigger=...)
            >>> tools_store.trigger
            'automatic'
        """
        if trigger == self._trigger:
            return self
        return self._sibling(trigger, self._scope)

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
        return self._sibling(self._trigger, scope)

    def close(self) -> None:
        """Stop the private loop that runs sync ``batch`` calls (shared with the siblings).

        ``Mnemon.close()`` calls it; a later sync call starts the loop again.
        """
        self._runner.close()

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
        """Run ``ops`` in order and return one result per op (sync twin of :meth:`abatch`).

        The ops run on the store's private event loop (any thread may call this, a notebook
        cell too).

        Raises:
            SyncCallOnLoopError: called from code running on that loop; await
                :meth:`abatch` there.

        Example:
            >>> from langgraph.store.base import GetOp
            >>> store.batch([GetOp(("users", "alice"), "editor")])[0].value
            {'theme': 'dark', 'font_size': 14}
        """
        ops = self._checked(ops)
        scope = op_scope(self._host, self._scope)  # the caller's run, before the hand-off
        return self._runner.run(self._abatch(ops, scope), "abatch")

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order without blocking the event loop; one result per op.

        Every op is validated first, so a bad op fails the batch before anything is written.

        Example:
            >>> from langgraph.store.base import PutOp, SearchOp
            >>> await store.abatch([PutOp(("docs",), "a", {"x": 1}), SearchOp(("docs",))])
            [None, [Item(namespace=['docs'], key='a', ...)]]
        """
        ops = self._checked(ops)
        return await self._abatch(ops, op_scope(self._host, self._scope))

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

    async def _abatch(self, ops: list[Op], scope: Scope) -> list[Result]:
        with self._acting():
            self._admit(ops)
            spaces, owner = await asyncio.to_thread(spaces_of, self._host, scope)
            return await self._run(ops, _Batch(spaces, owner))

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

    async def _run(self, ops: Sequence[Op], batch: _Batch) -> list[Result]:
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

    async def _catalog(self, batch: _Batch) -> dict[tuple[str, ...], list[SpaceRecord]]:
        """The store spaces the batch reads, by namespace (its own space of each first)."""
        if batch.catalog is None:
            found: dict[tuple[str, ...], list[SpaceRecord]] = {}
            for record in await batch.spaces.alist_spaces():
                namespace = _namespace_of(record)
                if namespace is not None and batch.reads(record):
                    held = found.setdefault(namespace, [])
                    if record.id == batch.home_id(namespace):
                        held.insert(0, record)
                    else:
                        held.append(record)
            batch.catalog = found
        return batch.catalog

    async def _record(
        self, batch: _Batch, namespace: tuple[str, ...], *, create: bool = False
    ) -> SpaceRecord | None:
        """The batch's own space of ``namespace`` (where its puts go); ``create`` makes it."""
        if not namespace or namespace[0] == "langgraph":
            return None
        sid = batch.home_id(namespace)
        if batch.catalog is not None:
            held = batch.catalog.get(namespace, [])
            if held and held[0].id == sid:
                return held[0]
        try:
            record = await batch.spaces.aget_space(sid)
            if not batch.reads(record):  # a space another owner took that id for
                raise NotFoundError(f"no store space {sid!r}")
        except NotFoundError:
            if not create:
                return None
            record = await self._create_space(batch, namespace, sid)
        else:
            if create and _namespace_of(record) != namespace:
                record = await self._repair(batch, namespace, record)
        if batch.catalog is not None:
            held = batch.catalog.setdefault(namespace, [])
            held[:] = [record, *(r for r in held if r.id != record.id)]
        return record

    async def _holders(self, batch: _Batch, namespace: tuple[str, ...]) -> list[SpaceRecord]:
        """The spaces a read of ``namespace`` looks in: the batch's own (the scope's), if any."""
        own = await self._record(batch, namespace)
        return [own] if own is not None else []

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
    ) -> list[tuple[tuple[str, ...], list[SpaceRecord]]]:
        catalog = await self._catalog(batch)
        return sorted(
            ((ns, held) for ns, held in catalog.items() if held and ns[: len(prefix)] == prefix),
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
        newest: _Row | None = None
        for record in await self._holders(batch, namespace):
            versions = await self._versions(batch, record, op.key)
            if versions and (newest is None or versions[0].updated_at > newest.updated_at):
                newest = versions[0]
        return newest.item(namespace) if newest is not None else None

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
        for record in await self._holders(batch, namespace):
            doomed = await self._versions(batch, record, key)
            if not doomed:
                continue
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
        for namespace, held in targets:
            current: dict[str, _Row] = {}
            for record in held:  # the newest copy of a key wins (several owners: operator)
                for row in await self._current(batch, record, op):
                    if row.key not in current or row.updated_at > current[row.key].updated_at:
                        current[row.key] = row
            listed.extend((namespace, r) for r in current.values() if _passes(r.value, op.filter))
        listed.sort(key=lambda pair: (-pair[1].updated_at, pair[0], pair[1].key))
        window = listed[op.offset : op.offset + op.limit]
        return [row.search_item(namespace, None) for namespace, row in window]

    async def _current(self, batch: _Batch, record: SpaceRecord, op: SearchOp) -> list[_Row]:
        """The current rows of one space a listing needs: all with a filter, else the newest
        ``offset + limit`` (enough for the window)."""
        if op.filter or record.id in batch.rows:
            return list((await self._rows(batch, record)).current.values())
        return await self._newest(batch, record, op.offset + op.limit)

    async def _recall(
        self,
        batch: _Batch,
        op: SearchOp,
        query: str,
        targets: Sequence[tuple[tuple[str, ...], list[SpaceRecord]]],
    ) -> list[SearchItem]:
        by_space = {record.id: ns for ns, held in targets for record in held}
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
            (ns, held)
            for ns, held in catalog.items()
            if held and all(_matches(c, ns) for c in op.match_conditions or ())
        ]

        async def holds_items(held: list[SpaceRecord]) -> bool:
            for record in held:
                cached = batch.rows.get(record.id)
                if cached is not None and cached.current:
                    return True
                if cached is None and await batch.spaces.abrowse(record.id, limit=1):
                    return True
            return False

        present = await asyncio.gather(*(holds_items(held) for _, held in candidates))
        namespaces = {
            ns if op.max_depth is None else ns[: op.max_depth]
            for (ns, _), keep in zip(candidates, present, strict=True)
            if keep
        }
        return sorted(namespaces)[op.offset : op.offset + op.limit]
