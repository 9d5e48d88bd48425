"""The store's time to live: its TTL configuration and the background sweeper.

The configuration is LangGraph's ``TTLConfig`` (``langgraph.json`` ``store.ttl``, or
``mem.store(ttl=...)``), checked once: ``default_ttl`` (minutes a ``put`` without ``ttl`` lives;
None: forever), ``refresh_on_read`` (whether ``get`` / ``search`` restart the time to live of
what they return when the caller does not say; default True), ``sweep_interval_minutes`` (how
often :class:`Sweeper` deletes expired items) and ``omit_expired`` (accepted as True only: an
expired item is never returned, swept or not).

The sweeper is one daemon thread per store family (the host's store and its siblings) that
waits ``sweep_interval_minutes`` and sweeps, until stopped, like the sweeper of LangGraph's SQL
stores. Expiry itself lives in the database (``expires_at``), so every replica hides expired
items at once and any replica's sweep deletes them; sweeping on several replicas is safe.

Example:
    >>> check_ttl_config({"default_ttl": 60, "sweep_interval_minutes": 5})
    {'default_ttl': 60.0, 'sweep_interval_minutes': 5.0}
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from langgraph.store.base import TTLConfig

from langgraph_mnemon.contracts import shown
from langgraph_mnemon.errors import InvalidInputError, MnemonError
from langgraph_mnemon.memory_layers.spaces import check_minutes
from langgraph_mnemon.store._both import DoneCount, RunningFuture

if TYPE_CHECKING:
    from langgraph_mnemon.store._scope import StoreHost

__all__ = [
    "DEFAULT_SWEEP_MINUTES",
    "TTL_KEYS",
    "Sweeper",
    "TTLSweeps",
    "check_ttl_config",
    "ttl_key",
]

logger = logging.getLogger(__name__)

TTL_KEYS = ("default_ttl", "refresh_on_read", "sweep_interval_minutes", "omit_expired")
"""The keys of a TTL configuration (LangGraph's ``TTLConfig``)."""
DEFAULT_SWEEP_MINUTES = 5.0
"""How often the sweeper runs when neither its caller nor the configuration says."""


def check_ttl_config(ttl: Any) -> TTLConfig | None:
    """A checked copy of a TTL configuration (``None`` stays ``None``).

    Args:
        ttl: A mapping with any of :data:`TTL_KEYS`, e.g. ``{"default_ttl": 60}``.

    Returns:
        The configuration with its minutes as floats.

    Raises:
        InvalidInputError: ``ttl`` is not a mapping, names another key, holds a value of the
            wrong kind, or sets ``omit_expired`` to False (this store never returns an
            expired item).

    Example:
        >>> check_ttl_config({"default_ttl": 0.5, "refresh_on_read": False})
        {'default_ttl': 0.5, 'refresh_on_read': False}
    """
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping):
        raise InvalidInputError(
            f"ttl must be a TTL configuration such as {{'default_ttl': 60}} (got {shown(ttl)})"
        )
    unknown = [k for k in ttl if k not in TTL_KEYS]
    if unknown:
        raise InvalidInputError(
            f"unknown TTL setting {shown(unknown[0])}; use {', '.join(TTL_KEYS)}"
        )
    out: dict[str, Any] = {}
    for name in ("default_ttl", "sweep_interval_minutes"):
        if name in ttl:
            out[name] = check_minutes(ttl[name], name)
    for name in ("refresh_on_read", "omit_expired"):
        if name in ttl and not isinstance(ttl[name], bool):
            raise InvalidInputError(f"{name} must be true or false (got {shown(ttl[name])})")
        if name in ttl:
            out[name] = ttl[name]
    if out.get("omit_expired") is False:
        raise InvalidInputError(
            "omit_expired cannot be false: this store never returns an expired item, swept or "
            "not; remove omit_expired or set it to true"
        )
    return TTLConfig(**out)  # type: ignore[typeddict-item]


def ttl_key(config: TTLConfig | None) -> tuple[tuple[str, Any], ...] | None:
    """A hashable form of a checked configuration (the store family keys its members by it)."""
    return None if config is None else tuple(sorted(config.items()))


class Sweeper:
    """One background thread that sweeps expired items every interval until stopped.

    Example:
        >>> sweeper = Sweeper()
        >>> done = sweeper.start(store.sweep_ttl, 5.0)   # a Future, done when it stops
        >>> sweeper.stop()
        True
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._done: RunningFuture | None = None

    @property
    def running(self) -> bool:
        """Whether the sweeper thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self, sweep: Callable[[], int], minutes: float) -> RunningFuture:
        """Start sweeping every ``minutes`` (the running sweeper's future when one runs).

        Args:
            sweep: What one sweep calls (``MnemonStore.sweep_ttl``); it returns the count.
            minutes: The interval (checked by the caller).

        Returns:
            A future that is done when the sweeper has stopped; cancelling it stops it.
        """
        with self._lock:
            if self.running and self._done is not None:
                return self._done
            self._stop = stop = threading.Event()
            done = RunningFuture()
            done.add_done_callback(lambda f: stop.set() if f.cancelled() else None)
            thread = threading.Thread(
                target=_loop, args=(sweep, minutes * 60.0, stop, done), daemon=True,
                name="mnemon-ttl-sweeper",
            )  # fmt: skip
            self._thread, self._done = thread, done
            thread.start()
            return done

    def stop(self, timeout: float | None = None) -> bool:
        """Stop the sweeper (a sweep in progress finishes first).

        Args:
            timeout: Seconds to wait for the thread; None waits as long as it takes.

        Returns:
            1 (true) when no sweeper runs any more, else 0; also awaitable.
        """
        with self._lock:
            thread = self._thread
            self._stop.set()
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()


class TTLSweeps:
    """The sweep methods of :class:`~langgraph_mnemon.store.MnemonStore` (a mixin over the
    store's host, trigger, TTL configuration and the family's :class:`Sweeper`)."""

    _host: StoreHost
    _sweeper: Sweeper
    ttl_config: TTLConfig | None
    _acting: Callable[[], AbstractContextManager[None]]  # runs a block under the trigger

    def sweep_ttl(self) -> DoneCount:
        """Delete every expired item now (all namespaces and users; blocking).

        Expired items are already invisible to every read; the sweep soft-deletes their rows
        (out of the keyword index, statistics and vectors). It is Memory Spaces maintenance.

        Returns:
            How many items were deleted (also awaitable, as the async stores' form).

        Raises:
            ReadOnlyError: writes are switched off.
            ParticipationError: Memory Spaces maintenance is refused.

        Example:
            >>> store.put(("tmp",), "k", {"v": 1}, ttl=0.01)
            >>> time.sleep(1); store.sweep_ttl()
            1
        """
        with self._acting():
            return DoneCount(self._host.spaces.keyed.sweep())

    async def asweep_ttl(self) -> int:
        """:meth:`sweep_ttl` in a worker thread (never blocks the event loop).

        Example:
            >>> await store.asweep_ttl()
            0
        """
        return await asyncio.to_thread(self.sweep_ttl)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> RunningFuture:
        """Start the background sweeper: :meth:`sweep_ttl` every interval, in a daemon thread,
        until :meth:`stop_ttl_sweeper` (or ``Mnemon.close()``). One per host: a second call
        returns the running sweeper's future.

        Args:
            sweep_interval_minutes: Minutes between sweeps; default the configuration's
                ``sweep_interval_minutes``, else 5.

        Returns:
            A future that is done when the sweeper stops (cancelling it stops it); awaiting
            it gives the future, as awaiting the async stores' call gives their task.

        Raises:
            InvalidInputError: the interval is not a positive number of minutes.

        Example:
            >>> mem.store(ttl={"default_ttl": 60, "sweep_interval_minutes": 5}).start_ttl_sweeper()
            <RunningFuture at 0x... state=running>
        """
        minutes = check_minutes(sweep_interval_minutes, "sweep_interval_minutes") or (
            (self.ttl_config or {}).get("sweep_interval_minutes") or DEFAULT_SWEEP_MINUTES
        )
        return self._sweeper.start(self.sweep_ttl, minutes)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> DoneCount:
        """Stop the background sweeper (a sweep in progress finishes first).

        Args:
            timeout: Seconds to wait for it; None waits until it has stopped.

        Returns:
            1 (true) when no sweeper runs any more, else 0; also awaitable.

        Example:
            >>> store.stop_ttl_sweeper()
            True
        """
        return DoneCount(self._sweeper.stop(timeout))


def _loop(
    sweep: Callable[[], int], seconds: float, stop: threading.Event, done: Future[None]
) -> None:
    """Wait, sweep, repeat; a failed sweep is logged and the next one tried on time."""
    try:
        while not stop.wait(seconds):
            try:
                swept = sweep()
            except MnemonError as exc:  # refused (read-only, maintenance off) or unreachable
                logger.warning("store TTL sweep failed: %s", exc)
                continue
            except Exception:
                logger.exception("store TTL sweep failed")
                continue
            if swept:
                logger.info("store TTL sweep deleted %d expired item(s)", swept)
    finally:
        if not done.done():
            done.set_result(None)
