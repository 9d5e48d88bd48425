"""Live turns: the one registry of them in this process, and their rows in the shared SQL database.

The one registry of live turns: turn id → its scope, its pinned TurnView and its retrieval
state (recall / Related / Documents budgets), and the views child agents retain.

With a :class:`~langgraph_mnemon.memory_layers.turns._registry.TurnStore` (the host's database)
the truth is shared: a begun turn is stored (:meth:`LiveTurns.share`), every call its
retrieval state records is written through (compare-and-set on the stored version, merged
with the stored state when another process wrote first), and a process that never saw the
turn (another replica, a restarted worker, a resumed interrupt) reads it back on first use.
The registry then only caches: a cached turn's budgets are checked against the stored
version before each use, and cached turns are dropped least recently used first. An ended
turn is gone here at once; its row is deleted with this process's next stored turn (one
transaction), at the latest after :data:`ENDED_BATCH` ends or at :meth:`LiveTurns.flush`.
Without a store (a read-only host, a bare service) the registry is the only copy, as it
always was.

The composer pins views into it, :class:`~langgraph_mnemon.memory_layers.turns.TurnRetrievals`
attaches retrieval states to it, and the turn service releases a turn from it once, whatever
the turn holds. A turn that only has a retrieval state (a standalone recall run) lives here
too, in this process only. At most ``limit`` retrieval states are kept (the least recently
begun dropped first).

Live turns in the shared SQL database: a turn's pin any process can read (component
``"turns"``).

* ``mnemon_turn_views`` — one row per pinned (or retained) :class:`TurnView`, as JSON, written
  once per view (views are reused across turns while memory does not change); ``holders``
  counts the child agents retaining it, and each retention keeps it ``ttl`` seconds more.
* ``mnemon_turns`` — one row per live turn: its :class:`TurnScope`, the id of its view, its
  :class:`RetrievalState` (recall attempts, admitted evidence, Related, the Documents search,
  route answers) and a ``version`` that every recorded change moves on. A change is written
  only over the version it was made from (compare-and-set), so two writers never lose each
  other's calls.

Ending a turn deletes its row (the turn service batches those deletes into its next write).
A turn that never ends (a crashed worker, an interrupt nobody resumes) expires ``ttl`` seconds
after its last change, and :meth:`TurnStore.expire` removes expired turns and the expired
views no live turn pins (a child agent that is never closed does not keep its view for ever;
the process it lives in still holds it).

Example:
    >>> live = LiveTurns()
    >>> live.pin("turn-1", TurnScope(thread_id="t1"), view) is view
    True
    >>> live.release("turn-1").view is view
    True
    >>> store = TurnStore(mem.database)
    >>> store.insert("turn-1", TurnScope(thread_id="t1"), view, turn.state())
    1
    >>> store.load("turn-1").view == view
    True
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import sqlalchemy as sa
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from langgraph_mnemon.errors import ConflictError, NotFoundError, StorageError
from langgraph_mnemon.memory_layers.turns._models import TurnScope, TurnView
from langgraph_mnemon.memory_layers.turns._retrieval import TurnRetrieval
from langgraph_mnemon.memory_layers.turns._state import RetrievalState
from langgraph_mnemon.storage.db import Database, Migration, create_tables, upsert

__all__ = [
    "ENDED_BATCH",
    "MIGRATIONS",
    "SWEEP_SECONDS",
    "TURNS",
    "TURN_TTL_SECONDS",
    "TURN_VIEWS",
    "LiveTurn",
    "LiveTurns",
    "StoredTurn",
    "TurnStore",
]


_M = TypeVar("_M", bound=BaseModel)

TURN_TTL_SECONDS = 7 * 24 * 3600.0
"""How long a turn that never ends (and a view nobody needs) is kept after its last change."""

METADATA = sa.MetaData()

TURN_VIEWS = sa.Table(
    "mnemon_turn_views",
    METADATA,
    sa.Column("view_id", sa.Text, primary_key=True),
    sa.Column("view", sa.Text, nullable=False),
    sa.Column("holders", sa.Integer, nullable=False, server_default="0"),
    sa.Column("expires_at", sa.Float, nullable=False, index=True),
)

TURNS = sa.Table(
    "mnemon_turns",
    METADATA,
    sa.Column("turn_id", sa.Text, primary_key=True),
    sa.Column("view_id", sa.Text, nullable=False, index=True),
    sa.Column("scope", sa.Text, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False, index=True),
)


def _create_v1(conn: sa.Connection) -> None:
    create_tables(conn, (TURN_VIEWS, TURNS))


MIGRATIONS: tuple[Migration, ...] = (
    Migration("turns", 1, "Live turns: pinned views, scopes and retrieval states", _create_v1),
)
"""Schema steps of the ``turns`` component, for ``Database.setup``."""

_WRITTEN_VIEWS = 64  # views this process knows are stored (skipped on the next insert)
# Built once: SQLAlchemy then reuses each compiled statement (a turn's begin is on the hot path).
_INSERT = TURNS.insert()
_DELETE = TURNS.delete().where(TURNS.c.turn_id.in_(sa.bindparam("ids", expanding=True)))


@dataclass(frozen=True)
class StoredTurn:
    """A live turn as the database holds it."""

    scope: TurnScope
    view: TurnView
    state: RetrievalState
    version: int


def _dump(model: BaseModel) -> str:
    """``model`` as JSON text (escaped ASCII when a string holds a lone surrogate)."""
    try:
        return model.model_dump_json()
    except PydanticSerializationError:
        return json.dumps(model.model_dump(mode="json"))


def _load(kind: type[_M], text: str, url: str) -> _M:
    """``text`` read back as ``kind``.

    Raises:
        StorageError: code ``storage-damaged``, the stored JSON is not a ``kind`` any more.
    """
    try:
        try:
            return kind.model_validate_json(text)
        except ValidationError:
            return kind.model_validate(json.loads(text))  # escaped lone surrogates
    except (ValueError, ValidationError) as exc:
        raise StorageError(
            f"a live turn stored in {url} cannot be read ({type(exc).__name__}); end the "
            "turn and begin a new one",
            code="storage-damaged",
        ) from None


class TurnStore:
    """Live turns and retained views in ``database`` (thread-safe: one transaction a call).

    Args:
        database: the host's SQL database (SQLite file or PostgreSQL shared by replicas).
        ttl: seconds a turn is kept after its last change when nobody ends it.
        clock: seconds since the epoch.

    Reads never create the schema (an absent table holds no turn); the first write does.

    Raises (every method):
        StorageError: the database cannot be read or written (its code says why: full,
            unavailable, read-only ...), or a stored turn is not readable (``storage-damaged``).
    """

    def __init__(
        self,
        database: Database,
        *,
        ttl: float = TURN_TTL_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = database
        self.ttl = float(ttl)
        self._clock = clock
        self._lock = threading.Lock()
        self._written: OrderedDict[str, float] = OrderedDict()  # view id -> when it was stored

    # -- turns -------------------------------------------------------------------------------

    def insert(
        self,
        turn_id: str,
        scope: TurnScope,
        view: TurnView,
        state: RetrievalState,
        *,
        ended: Sequence[str] = (),
    ) -> int:
        """Store a new live turn (and its view, unless stored lately); returns its version.

        ``ended``: turns that ended since, deleted in the same transaction.
        """
        self._ready()
        now = self._clock()
        values = {
            "turn_id": turn_id,
            "view_id": view.id,
            "scope": _dump(scope),
            "state": _dump(state),
            "version": 1,
            "expires_at": now + self.ttl,
        }
        fresh = self._needs_write(view.id, now)
        with self.db.write() as conn:
            if fresh:
                self._put_view(conn, view, now)
            if ended:
                conn.execute(_DELETE, {"ids": list(ended)})
            conn.execute(_INSERT, values)
        if fresh:
            self._wrote(view.id, now)
        return 1

    def load(self, turn_id: str) -> StoredTurn | None:
        """The live turn ``turn_id``, or ``None`` (ended, expired, or never stored)."""
        if not self.db.ready_for_read(MIGRATIONS):
            return None
        stmt = (
            sa.select(TURNS.c.scope, TURNS.c.state, TURNS.c.version, TURN_VIEWS.c.view)
            .join(TURN_VIEWS, TURN_VIEWS.c.view_id == TURNS.c.view_id)
            .where(TURNS.c.turn_id == turn_id, TURNS.c.expires_at > self._clock())
        )
        row = self.db.run_single(lambda conn: conn.execute(stmt).first())
        if row is None:
            return None
        url = self.db.url
        return StoredTurn(
            scope=_load(TurnScope, row.scope, url),
            view=_load(TurnView, row.view, url),
            state=_load(RetrievalState, row.state, url),
            version=int(row.version),
        )

    def version(self, turn_id: str) -> int | None:
        """The version of the live turn ``turn_id``, or ``None`` when it is not stored."""
        if not self.db.ready_for_read(MIGRATIONS):
            return None
        stmt = sa.select(TURNS.c.version).where(
            TURNS.c.turn_id == turn_id, TURNS.c.expires_at > self._clock()
        )
        found = self.db.run_single(lambda conn: conn.execute(stmt).scalar())
        return None if found is None else int(found)

    def update(self, turn_id: str, state: RetrievalState, *, expected: int) -> int | None:
        """Write ``state`` over version ``expected``; the new version, or ``None`` when the
        stored turn is at another version (or gone): read it again and merge."""
        if not self.db.ready_for_read(MIGRATIONS):
            return None
        stmt = (
            TURNS.update()
            .where(TURNS.c.turn_id == turn_id, TURNS.c.version == expected)
            .values(state=_dump(state), version=expected + 1, expires_at=self._clock() + self.ttl)
        )
        with self.db.write() as conn:
            done = conn.execute(stmt).rowcount
        return expected + 1 if done == 1 else None

    def delete(self, turn_ids: Sequence[str]) -> int:
        """Forget the live turns ``turn_ids`` (they ended); how many were stored."""
        if not turn_ids or not self.db.ready_for_read(MIGRATIONS):
            return 0
        with self.db.write() as conn:
            return int(conn.execute(_DELETE, {"ids": list(turn_ids)}).rowcount)

    # -- retained views (child agents) -------------------------------------------------------

    def retain(self, view: TurnView) -> int:
        """Count one more child agent retaining ``view`` (stored if it is not); returns how
        many retain it now."""
        self._ready()
        now = self._clock()
        with self.db.write() as conn:
            self._put_view(conn, view, now)
            conn.execute(
                TURN_VIEWS.update()
                .where(TURN_VIEWS.c.view_id == view.id)
                .values(holders=TURN_VIEWS.c.holders + 1, expires_at=now + self.ttl)
            )
            held = conn.execute(
                sa.select(TURN_VIEWS.c.holders).where(TURN_VIEWS.c.view_id == view.id)
            ).scalar_one()
        self._wrote(view.id, now)
        return int(held)

    def unretain(self, view_id: str) -> int | None:
        """One child agent fewer retains ``view_id``; how many still do (``None``: it is not
        retained)."""
        if not self.db.ready_for_read(MIGRATIONS):
            return None
        held = TURN_VIEWS.c.view_id == view_id
        with self.db.write() as conn:
            count = conn.execute(sa.select(TURN_VIEWS.c.holders).where(held)).scalar()
            if count is None or int(count) <= 0:
                return None
            conn.execute(TURN_VIEWS.update().where(held).values(holders=int(count) - 1))
        return int(count) - 1

    def retained(self, view_id: str) -> TurnView | None:
        """The view ``view_id`` while a child agent retains it, else ``None``."""
        if not self.db.ready_for_read(MIGRATIONS):
            return None
        stmt = sa.select(TURN_VIEWS.c.view).where(
            TURN_VIEWS.c.view_id == view_id, TURN_VIEWS.c.holders > 0
        )
        text = self.db.run_single(lambda conn: conn.execute(stmt).scalar())
        return None if text is None else _load(TurnView, text, self.db.url)

    # -- expiry ------------------------------------------------------------------------------

    def expire(self) -> int:
        """Remove expired turns, then the expired views no live turn pins; returns how many
        rows went."""
        if not self.db.ready_for_read(MIGRATIONS):
            return 0
        now = self._clock()
        used = sa.select(TURNS.c.view_id).where(TURNS.c.view_id == TURN_VIEWS.c.view_id)
        with self.db.write() as conn:
            turns = conn.execute(TURNS.delete().where(TURNS.c.expires_at <= now)).rowcount
            views = conn.execute(
                TURN_VIEWS.delete().where(TURN_VIEWS.c.expires_at <= now, ~sa.exists(used))
            ).rowcount
        with self._lock:
            self._written.clear()  # a view removed here is written again when next pinned
        return int(turns) + int(views)

    # -- helpers -----------------------------------------------------------------------------

    def _ready(self) -> None:
        if not self.db.is_setup(MIGRATIONS):
            self.db.setup(MIGRATIONS)

    def _needs_write(self, view_id: str, now: float) -> bool:
        """Whether the view must be (re)stored: not stored lately (within half the ttl)."""
        with self._lock:
            stored = self._written.get(view_id)
        return stored is None or now - stored > self.ttl / 2

    def _wrote(self, view_id: str, now: float) -> None:
        with self._lock:
            self._written.pop(view_id, None)
            self._written[view_id] = now
            while len(self._written) > _WRITTEN_VIEWS:
                self._written.popitem(last=False)

    def _put_view(self, conn: sa.Connection, view: TurnView, now: float) -> None:
        """Store ``view`` if absent, and push its expiry to ``now + ttl`` either way."""
        values: dict[str, Any] = {
            "view_id": view.id,
            "view": _dump(view),
            "holders": 0,
            "expires_at": now + self.ttl,
        }
        conn.execute(upsert(self.db.dialect, TURN_VIEWS, ["view_id"], ["expires_at"]), values)


SWEEP_SECONDS = 600.0
"""How often (at most) a process removes expired turns, when it begins one."""
ENDED_BATCH = 64
"""Ended turns whose rows a process deletes on its own when no stored turn took them along."""
_CACHED = 1024  # shared turns kept in a process's cache
_SAVES = 5  # compare-and-set attempts of one write before it gives up


@dataclass
class LiveTurn:
    """What one live turn holds (``view`` and ``scope`` once pinned).

    ``version``: the stored version this copy matches (``None``: the turn is not shared).
    """

    turn_id: str
    scope: TurnScope | None = None
    view: TurnView | None = None
    retrieval: TurnRetrieval | None = None
    version: int | None = None
    writing: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


class LiveTurns:
    """Live turns by id; thread-safe.

    Args:
        store: the shared store, or a zero-argument callable returning it (``None``: this
            process holds the only copy).
        cached: how many shared turns this process keeps cached.
    """

    def __init__(
        self,
        store: TurnStore | Callable[[], TurnStore | None] | None = None,
        *,
        cached: int = _CACHED,
    ) -> None:
        self._lock = threading.Lock()
        self._turns: dict[str, LiveTurn] = {}
        self._recent: OrderedDict[str, None] = OrderedDict()  # turns with a retrieval state
        self._shared: OrderedDict[str, None] = OrderedDict()  # cached shared turns, LRU order
        self._store_of = store if callable(store) else (lambda: store)
        self._cached = cached
        self._swept = 0.0
        self._retained: dict[str, tuple[TurnView, int]] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()  # ended here, row not deleted yet

    @property
    def store(self) -> TurnStore | None:
        """The shared store (``None``: turns live in this process only)."""
        return self._store_of()

    # -- pins --------------------------------------------------------------------------------

    def pin(self, turn_id: str, scope: TurnScope, view: TurnView) -> TurnView:
        """Pin ``view`` for ``turn_id``; a turn already pinned keeps its view.

        Raises:
            ConflictError: code ``turn-scope-conflict``, the turn is pinned for another scope.
        """
        with self._lock:
            entry = self._turns.setdefault(turn_id, LiveTurn(turn_id))
            if entry.view is None or entry.scope is None:
                entry.scope, entry.view = scope, view
                return view
            if entry.scope != scope:
                raise ConflictError(
                    f"turn {turn_id!r} is already pinned for thread {entry.scope.thread_id!r} / "
                    f"agent {entry.scope.agent_id!r}; use a new turn id for each agent turn",
                    code="turn-scope-conflict",
                )
            return entry.view

    def share(self, turn_id: str) -> None:
        """Store a begun turn (pin and retrieval state) so any process can continue it.

        Nothing happens without a store. Expired turns are removed first, at most every
        :data:`SWEEP_SECONDS`.

        Raises:
            NotFoundError: the turn has no pin or no retrieval state here.
            StorageError: the database cannot be written.
        """
        store = self.store
        if store is None:
            return
        with self._lock:
            entry = self._turns.get(turn_id)
        if entry is None or entry.view is None or entry.scope is None or entry.retrieval is None:
            raise NotFoundError(f"turn {turn_id!r} is not begun here; begin it before sharing")
        now = time.monotonic()
        if not self._swept or now - self._swept > SWEEP_SECONDS:
            self._swept = now
            store.expire()
        with self._lock:
            ended = list(self._ended)
        state = entry.retrieval.state()
        entry.version = store.insert(turn_id, entry.scope, entry.view, state, ended=ended)
        self._watch(entry)
        with self._lock:
            for gone in ended:
                self._ended.pop(gone, None)
            self._cache(entry)

    def pinned(self, turn_id: str, *, load: bool = True) -> LiveTurn | None:
        """The turn if it has a pinned view (read from the store when not cached, unless
        ``load`` is false), else ``None``."""
        if load:
            entry = self._entry(turn_id)
        else:
            with self._lock:
                entry = self._turns.get(turn_id)
        return entry if entry is not None and entry.view is not None else None

    def unpin(self, turn_id: str) -> TurnView | None:
        """Drop the turn's pin (its retrieval state stays); the view it had, or ``None``."""
        with self._lock:
            entry = self._turns.get(turn_id)
            if entry is None or entry.view is None:
                return None
            view, entry.view, entry.scope = entry.view, None, None
            self._drop_if_empty(entry)
        return view

    @property
    def pinned_turns(self) -> list[str]:
        """Ids of the turns with a pinned view cached here, in pin order."""
        with self._lock:
            return [turn_id for turn_id, e in self._turns.items() if e.view is not None]

    # -- retrieval states --------------------------------------------------------------------

    def attach(
        self,
        turn_id: str,
        make: Callable[[], TurnRetrieval],
        check: Callable[[TurnRetrieval], None],
        *,
        limit: int,
    ) -> TurnRetrieval:
        """The turn's retrieval state (a stored turn's, read back), made with ``make()`` on
        first use.

        ``check`` validates an existing state against the caller's request (it raises on a
        mismatch); at most ``limit`` states are kept, the least recently begun dropped first.
        """
        stored = self._entry(turn_id)
        if stored is not None and stored.retrieval is not None:
            self._fresh(stored)
        with self._lock:
            entry = self._turns.setdefault(turn_id, LiveTurn(turn_id))
            if entry.retrieval is not None:
                check(entry.retrieval)
                self._recent.move_to_end(turn_id)
                return entry.retrieval
            entry.retrieval = make()
            self._recent[turn_id] = None
            while len(self._recent) > limit:
                oldest, _ = self._recent.popitem(last=False)
                dropped = self._turns[oldest]
                dropped.retrieval = None
                if dropped.version is not None:  # stored: read back whole on the next use
                    self._forget(dropped)
                self._drop_if_empty(dropped)
            return entry.retrieval

    def retrieval(self, turn_id: str) -> TurnRetrieval | None:
        """The turn's retrieval state (brought up to date with the stored one), or ``None``."""
        entry = self._entry(turn_id)
        if entry is None or entry.retrieval is None:
            return None
        self._fresh(entry)
        return entry.retrieval

    def detach(self, turn_id: str) -> bool:
        """Drop the turn's retrieval state (its pin stays); ``True`` when it had one."""
        with self._lock:
            entry = self._turns.get(turn_id)
            if entry is None or entry.retrieval is None:
                return False
            entry.retrieval = None
            self._recent.pop(turn_id, None)
            self._drop_if_empty(entry)
        return True

    @property
    def retrievals(self) -> int:
        """How many turns have a retrieval state here."""
        with self._lock:
            return len(self._recent)

    # -- whole turns -------------------------------------------------------------------------

    def get(self, turn_id: str) -> LiveTurn | None:
        """The live turn (read from the store when not cached), or ``None``."""
        return self._entry(turn_id)

    def release(self, turn_id: str) -> LiveTurn | None:
        """Forget the turn (pin and retrieval state at once, here and in the store); what it
        held here, or ``None``.

        A stored turn's row goes with the next stored turn (see the module docstring); a turn
        begun here and never stored has none.
        """
        with self._lock:
            entry = self._turns.pop(turn_id, None)
            self._recent.pop(turn_id, None)
            self._shared.pop(turn_id, None)
            if entry is None or entry.version is not None:
                self._ended[turn_id] = None
                while len(self._ended) > 16 * ENDED_BATCH:  # the database is down: expiry
                    self._ended.popitem(last=False)  # removes the oldest in the end
            due = len(self._ended) >= ENDED_BATCH
        if due:
            self.flush()
        return entry

    def flush(self) -> int:
        """Delete the rows of the turns that ended here; how many were stored.

        Raises:
            StorageError: the database cannot be written (the turns stay to delete).
        """
        with self._lock:
            ended = list(self._ended)
        store = self.store if ended else None
        if store is None:
            return 0
        deleted = store.delete(ended)
        with self._lock:
            for gone in ended:
                self._ended.pop(gone, None)
        return deleted

    # -- retained views (child agents) -------------------------------------------------------

    def retain(self, view: TurnView) -> str:
        """Keep ``view`` for a child agent (counted here and in the store); returns its id."""
        store = self.store
        if store is not None:
            store.retain(view)
        with self._lock:
            held, count = self._retained.get(view.id, (view, 0))
            self._retained[view.id] = (held, count + 1)
        return view.id

    def unretain(self, view_id: str) -> int:
        """Give back one retention of ``view_id``; how many remain (0: the view is let go).

        Raises:
            NotFoundError: the view is not retained.
        """
        store = self.store
        left = store.unretain(view_id) if store is not None else None
        with self._lock:
            entry = self._retained.get(view_id)
            if entry is not None:
                count = entry[1] - 1
                if count > 0:
                    self._retained[view_id] = (entry[0], count)
                else:
                    del self._retained[view_id]
                left = count if left is None else left
        if left is None:
            raise NotFoundError(f"view {view_id!r} is not retained")
        return left

    def retained(self, view_id: str) -> TurnView | None:
        """A retained view (read from the store when another process retained it), or
        ``None``."""
        with self._lock:
            entry = self._retained.get(view_id)
        if entry is not None:
            return entry[0]
        store = self.store
        return store.retained(view_id) if store is not None else None

    # -- the cache ---------------------------------------------------------------------------

    def _entry(self, turn_id: str) -> LiveTurn | None:
        """The cached turn, else the stored one (cached from now on), else ``None`` (also for
        a turn that ended here)."""
        with self._lock:
            entry = self._turns.get(turn_id)
            if entry is not None:
                if entry.version is not None:
                    self._shared.move_to_end(turn_id, last=True)
                return entry
            if turn_id in self._ended:
                return None
        store = self.store
        found = store.load(turn_id) if store is not None else None
        if found is None:
            return None
        loaded = LiveTurn(
            turn_id,
            scope=found.scope,
            view=found.view,
            retrieval=TurnRetrieval.restore(found.state, turn_id=turn_id),
            version=found.version,
        )
        self._watch(loaded)
        with self._lock:
            entry = self._turns.get(turn_id)
            if entry is not None:  # another thread read it back meanwhile: one copy
                return entry
            self._turns[turn_id] = loaded
            self._recent[turn_id] = None
            self._cache(loaded)
        return loaded

    def _cache(self, entry: LiveTurn) -> None:
        """Count ``entry`` among the cached shared turns; drop the oldest beyond the limit
        (under the lock)."""
        self._shared[entry.turn_id] = None
        self._shared.move_to_end(entry.turn_id)
        while len(self._shared) > self._cached:
            oldest, _ = self._shared.popitem(last=False)
            dropped = self._turns.get(oldest)
            if dropped is not None:
                self._forget(dropped)

    def _forget(self, entry: LiveTurn) -> None:
        """Drop a shared turn from the cache (under the lock); the store keeps it."""
        self._turns.pop(entry.turn_id, None)
        self._recent.pop(entry.turn_id, None)
        self._shared.pop(entry.turn_id, None)

    def _watch(self, entry: LiveTurn) -> None:
        """Write every call the turn's retrieval state records through to the store."""
        if entry.retrieval is not None:
            entry.retrieval.on_change = functools.partial(self._save, entry)

    def _save(self, entry: LiveTurn) -> None:
        """Write the turn's retrieval state over the stored version; when another process
        wrote first, merge its state in and write again.

        Raises:
            ConflictError: code ``turn-conflict``, the stored turn kept changing.
        """
        store = self.store
        if store is None:
            return
        with entry.writing:
            for _ in range(_SAVES):
                if entry.version is None or entry.retrieval is None:
                    return  # not shared, or ended elsewhere: nothing to write
                state = entry.retrieval.state()
                version = store.update(entry.turn_id, state, expected=entry.version)
                if version is not None:
                    entry.version = version
                    return
                self._merge(store, entry)
        raise ConflictError(
            f"turn {entry.turn_id!r} kept changing in the database while this process wrote "
            "its budgets; retry the call",
            code="turn-conflict",
        )

    def _fresh(self, entry: LiveTurn) -> None:
        """Bring a cached shared turn's budgets up to the stored version."""
        store = self.store
        if store is None or entry.version is None or entry.retrieval is None:
            return
        with entry.writing:
            if store.version(entry.turn_id) not in (None, entry.version):
                self._merge(store, entry)

    @staticmethod
    def _merge(store: TurnStore, entry: LiveTurn) -> None:
        """Take in the stored state (under ``entry.writing``); a turn gone from the store is
        no longer shared."""
        found = store.load(entry.turn_id)
        if found is None:
            entry.version = None
            return
        if entry.retrieval is not None:
            entry.retrieval.absorb(found.state)
        entry.version = found.version

    def _drop_if_empty(self, entry: LiveTurn) -> None:
        if entry.view is None and entry.retrieval is None:
            self._turns.pop(entry.turn_id, None)
