"""The turn service: ``turns.begin(scope, facts)`` before an agent turn, ``turns.end(turn_id,
activity)`` after it, and the one registry of live turns in between.

Begin cancels the thread's pending idle review (root turns), pins one immutable
:class:`TurnView` (a child agent pins the view it retained from its parent), opens the turn's
recall / Related / Documents budgets, and says which Wake and cue to send: the Wake only when
its digest differs from the last one the thread received, at most one cue per thread (never to
a child). End records the turn's activity for idle review and releases the turn, pin and
budgets at once. Tools resolve a turn's view with :meth:`Turns.pinned` and its budgets with
:meth:`Turns.retrieval`.

Given the host's database, a shared turn lives there too (``mnemon_turns``, see ``_store``):
another replica, a restarted worker or a run resumed after an interrupt continues it exactly
(the same view, system sections and budgets); every recorded call is written through, and
the end removes it. The adapters share a turn as soon as it outlives the step that began it
(``begin(share=True)`` or :meth:`Turns.share`). A read-only database keeps turns in this
process only.

Plain Python: the adapters (the middleware, the turn subgraph) turn a thread's messages into
:class:`TurnFacts` and :class:`~langgraph_mnemon.memory_layers.activity.TurnActivity` and the
result back into messages.

Example:
    >>> turns = mem.turns
    >>> start = turns.begin(TurnScope(thread_id="t1"), TurnFacts(new_thread=True))
    >>> start.wake.text if start.wake else None          # send it as the plugin's message
    >>> turns.pinned(start.turn_id) is start.view
    True
    >>> turns.end(start.turn_id, TurnActivity(user_text="hi"), thread_id="t1")
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar, runtime_checkable

from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.contracts import FrozenModel, Scope
from langgraph_mnemon.errors import InvalidInputError, NotFoundError, StorageError
from langgraph_mnemon.memory_layers.activity import TurnActivity
from langgraph_mnemon.memory_layers.kernel import Kernel
from langgraph_mnemon.memory_layers.turns._composer import ViewComposer
from langgraph_mnemon.memory_layers.turns._facts import (
    DocumentsSource,
    RuntimeSource,
    ScopeSources,
    SpacesSource,
)
from langgraph_mnemon.memory_layers.turns._models import Cue, TurnScope, TurnView, Wake
from langgraph_mnemon.memory_layers.turns._registry import LiveTurns, TurnStore
from langgraph_mnemon.memory_layers.turns._retrieval import TurnRetrieval
from langgraph_mnemon.memory_layers.turns._retrievals import TurnRetrievals
from langgraph_mnemon.memory_layers.turns._wake import WakeTracker, system_sections
from langgraph_mnemon.storage.db import Database

__all__ = ["ReviewScheduler", "TurnFacts", "TurnStart", "Turns"]

_T = TypeVar("_T")

logger = logging.getLogger("langgraph_mnemon.turns")


class TurnFacts(FrozenModel):
    """What an adapter read from the thread's own messages before the turn (plain data).

    ``last_wake_digest``: the ``source.digest`` of the newest Wake in the thread; ``cued``:
    whether the thread already holds the reminder cue; ``new_thread``: no assistant or plugin
    message yet (the adapter adds a task's resume block then).
    """

    last_wake_digest: str | None = None
    cued: bool = False
    new_thread: bool = False


class TurnStart(FrozenModel):
    """What :meth:`Turns.begin` gives the adapter: the turn id (the state's ``mnemon_turn``),
    the pinned view, and the Wake and cue to append (``None``: nothing to send)."""

    turn_id: str
    view: TurnView
    wake: Wake | None = None
    cue: Cue | None = None


@runtime_checkable
class ReviewScheduler(Protocol):
    """What the turn service needs of idle review (the host's review scheduler)."""

    def turn_started(self, thread_id: str) -> None: ...

    def turn_finished(
        self, thread_id: str, messages: list[Any], turn: TurnActivity
    ) -> float | None: ...


def _provider(dependency: _T | Callable[[], _T] | None, kind: type) -> Callable[[], _T | None]:
    """A zero-argument getter for a service given itself or as a zero-argument callable."""
    if dependency is None:
        return lambda: None
    if isinstance(dependency, kind) or not callable(dependency):
        return lambda: dependency  # type: ignore[return-value]
    return dependency  # type: ignore[return-value]


class Turns:
    """The turn lifecycle and the one registry of live turns.

    Args:
        config: the configuration (strategy, view budget, recall / writeback modes).
        kernel: decides what a model may do (default: one over ``config``).
        runtime, documents: the Runtime Memory and Documents services (``None``: left out).
        spaces: the Memory Spaces service, or a zero-argument callable returning it (opened
            on the first composition); ``None`` leaves Memory Spaces out.
        reviews: the idle-review scheduler, or a zero-argument callable returning the current
            one (asked at every begin and end); ``None``: no idle review.
        branch: the git branch whose Runtime Memory entries are shown.
        clock: the current time, for the views' ``created_at``.
        scoped: the Sources of a scope other than the local one (``TurnScope.memory_scope``);
            ``None`` serves the local scope only.
        database: the database live turns are shared in, or a zero-argument callable
            returning it (opened on the first begin); ``None`` or a read-only database keeps
            them in this process only.

    Example:
        >>> turns = Turns(mem.config, kernel=mem.kernel, runtime=mem.runtime,
        ...               documents=mem.documents, spaces=lambda: mem.spaces)
        >>> start = turns.begin(TurnScope(thread_id="t1"))
        >>> turns.end(start.turn_id)
    """

    def __init__(
        self,
        config: MnemonConfig,
        *,
        kernel: Kernel | None = None,
        runtime: RuntimeSource | None = None,
        documents: DocumentsSource | None = None,
        spaces: SpacesSource | Callable[[], SpacesSource] | None = None,
        reviews: ReviewScheduler | Callable[[], ReviewScheduler] | None = None,
        branch: str | None = None,
        clock: Callable[[], datetime] | None = None,
        scoped: Callable[[Scope], ScopeSources] | None = None,
        database: Database | Callable[[], Database] | None = None,
    ) -> None:
        self.config = config
        self.kernel = kernel or Kernel(config)
        self._runtime = runtime
        self._documents = documents
        self._spaces = _provider(spaces, SpacesSource)
        self._reviews = _provider(reviews, ReviewScheduler)
        self._branch = branch
        self._clock = clock
        self._scoped = scoped
        self._database = _provider(database, Database)
        self._store: TurnStore | None = None
        self._live = LiveTurns(self._shared_store)
        self._composer: ViewComposer | None = None
        self.budgets = TurnRetrievals(live=self._live)
        """The per-turn recall / Related / Documents / route budgets (in the registry)."""
        idle = config.idle_review
        self.tracker = WakeTracker(ttl_seconds=idle.thread_ttl_hours * 3600, cap=idle.max_threads)
        """Which Wake digest and cue each thread / agent last received (bounded)."""

    def _shared_store(self) -> TurnStore | None:
        """The store live turns are shared in (``None``: no database, or a read-only one)."""
        if self._store is None:
            database = self._database()
            if database is None or database.read_only:
                return None
            self._store = TurnStore(database)
        return self._store

    @property
    def composer(self) -> ViewComposer:
        """Composes and pins the views (its pins live in the registry of live turns)."""
        if self._composer is None:
            self._composer = ViewComposer(
                self.config,
                runtime=self._runtime,
                documents=self._documents,
                spaces=self._spaces(),
                branch=self._branch,
                clock=self._clock,
                kernel=self.kernel,
                live=self._live,
                scoped=self._scoped,
            )
        return self._composer

    # -- the lifecycle -----------------------------------------------------------------------

    def begin(
        self,
        scope: TurnScope,
        facts: TurnFacts | None = None,
        *,
        retained: str | None = None,
        share: bool = False,
    ) -> TurnStart:
        """Begin an agent turn: pin its view, open its budgets, pick the Wake and cue.

        Args:
            scope: whose turn it is (``root=False`` for a child agent: no cue, no review).
            facts: what the thread's messages say (default: a thread with nothing sent yet).
            retained: a view id from :meth:`retain` (a child pins its parent's view).
            share: store the turn at once so that any process sharing the database can
                continue it (the turn subgraph's begin: the turn outlives that step). By
                default it lives in this process until :meth:`share` (the middleware shares a
                turn once it outlives the model call that began it); a turn begun and ended
                in one step writes nothing.

        Returns:
            The :class:`TurnStart`; the turn is live until :meth:`end`.

        Raises:
            MnemonError: composition failed (the view budget, a conflict, a retained view
                that is gone); nothing stays pinned.
        """
        facts = facts or TurnFacts()
        turn_id = uuid.uuid4().hex
        try:
            start = self._begin(turn_id, scope, facts, retained)
            if share:
                self._live.share(turn_id)  # any process continues it from here
            return start
        except BaseException:
            with contextlib.suppress(Exception):  # the begin's own error is the one to report
                self.end(turn_id)
            raise

    def _begin(
        self, turn_id: str, scope: TurnScope, facts: TurnFacts, retained: str | None
    ) -> TurnStart:
        reviews = self._reviews() if scope.root else None  # a child never reaches idle review
        if reviews is not None:
            reviews.turn_started(scope.thread_id)
        view = self.composer.pin(turn_id, scope, retained=retained)
        self.budgets.begin(turn_id, view.grants.space_ids, view_id=view.id)
        key = f"{scope.thread_id}/{scope.agent_id}"
        if not scope.memory_scope.is_local:  # one thread id used by two users stays two threads
            key = f"{key}@{scope.memory_scope.user_key}/{scope.memory_scope.project_key()}"
        self.tracker.restore(key, digest=facts.last_wake_digest, cued=facts.cued)
        cue = self.tracker.cue_for(key, self.config, view, root=scope.root)
        wake = self.tracker.wake_for(key, view)
        return TurnStart(turn_id=turn_id, view=view, wake=wake, cue=cue)

    def end(
        self,
        turn_id: str,
        activity: TurnActivity | None = None,
        *,
        thread_id: str | None = None,
        transcript: Sequence[Any] = (),
    ) -> None:
        """End a turn: record its activity for idle review, then release it.

        Args:
            turn_id: the turn from :meth:`begin` (in any process sharing the database); an
                unknown turn (ended or expired) has nothing to release.
            activity: the turn's activity; ``None`` records nothing (a child agent's turn).
            thread_id: the thread to record it for (default: the pinned turn's thread).
            transcript: the thread's messages, kept for the idle review.

        Raises:
            InvalidInputError: ``activity`` without ``thread_id`` for a turn not live.
            StorageError: the database could not be read (a turn begun in another process)
                or written (the rows of ended turns are deleted in batches).

        The turn is released even when recording fails.
        """
        try:
            if activity is not None:
                thread = thread_id or self._thread_of(turn_id)
                entry = self._live.get(turn_id)
                if entry is not None and entry.scope is not None:  # review in the turn's scope
                    activity = activity.model_copy(update={"scope": entry.scope.memory_scope})
                reviews = self._reviews()
                if reviews is not None:
                    reviews.turn_finished(thread, list(transcript), activity)
        finally:
            self._live.release(turn_id)

    def share(self, turn_id: str) -> None:
        """Store a turn begun with ``share=False``, so any process can continue it (once).

        Raises:
            NotFoundError: the turn was not begun in this process.
            StorageError: the database cannot be written (the turn goes on here only).
        """
        entry = self._live.get(turn_id)
        if entry is not None and entry.version is None:
            self._live.share(turn_id)
        elif entry is None:
            raise NotFoundError(f"turn {turn_id!r} is not live; begin it before sharing it")

    def close(self) -> None:
        """Delete the stored rows of the turns that ended in this process (the host's
        ``close()`` calls it); harmless to call again. A database that cannot be written
        leaves them to expire (logged)."""
        try:
            self._live.flush()
        except StorageError as exc:
            logger.warning("ended turns stay stored until they expire: %s", exc.message)

    def _thread_of(self, turn_id: str) -> str:
        entry = self._live.get(turn_id)
        if entry is None or entry.scope is None:
            raise InvalidInputError(f"turn {turn_id!r} is not live; pass thread_id")
        return entry.scope.thread_id

    # -- what tools and adapters ask ---------------------------------------------------------

    def pinned(self, turn_id: str) -> TurnView:
        """The view pinned by a live turn (:class:`NotFoundError` otherwise)."""
        return self.composer.pinned(turn_id)

    def scope(self, turn_id: str) -> TurnScope:
        """Whose turn ``turn_id`` is (:class:`NotFoundError` when it is not live)."""
        return self.composer.scope(turn_id)

    def retrieval(self, turn_id: str) -> TurnRetrieval:
        """The turn's recall / Related / Documents / route budgets (:class:`NotFoundError`
        when it has none)."""
        return self.budgets.get(turn_id)

    def retain(self, view: TurnView) -> str:
        """Keep a (parent's) view alive for a child agent; returns the id to begin with."""
        return self.composer.retain(view)

    def unretain(self, view_id: str) -> int:
        """Give back one retention of a view; returns how many remain."""
        return self.composer.unretain(view_id)

    def sections(self, turn_id: str | None = None) -> list[tuple[str, str]]:
        """The system sections of a live turn's view, or of what the kernel admits now."""
        view = self.pinned(turn_id) if turn_id is not None else None
        return system_sections(self.config, view, kernel=self.kernel)

    @property
    def live_turns(self) -> list[str]:
        """Ids of the turns with a pinned view in this process."""
        return self._live.pinned_turns

    @property
    def store(self) -> TurnStore | None:
        """Where live turns are shared (``None``: in this process only)."""
        return self._live.store
