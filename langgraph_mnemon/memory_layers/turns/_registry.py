"""The one registry of live turns: turn id → its scope, its pinned TurnView and its retrieval
state (recall / Related / Documents budgets), and the views child agents retain.

With a :class:`~langgraph_mnemon.memory_layers.turns._store.TurnStore` (the host's database)
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

Example:
    >>> live = LiveTurns()
    >>> live.pin("turn-1", TurnScope(thread_id="t1"), view) is view
    True
    >>> live.release("turn-1").view is view
    True
"""

from __future__ import annotations

import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from langgraph_mnemon.errors import ConflictError, NotFoundError
from langgraph_mnemon.memory_layers.turns._models import TurnScope, TurnView
from langgraph_mnemon.memory_layers.turns._retrieval import TurnRetrieval
from langgraph_mnemon.memory_layers.turns._store import TurnStore

__all__ = ["ENDED_BATCH", "SWEEP_SECONDS", "LiveTurn", "LiveTurns"]

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
