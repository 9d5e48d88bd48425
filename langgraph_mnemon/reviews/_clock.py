"""One daemon thread per scheduler: its own reviews' wake-ups, and a poll of the queue."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["ReviewClock"]

logger = logging.getLogger(__name__)


class ReviewClock:
    """Calls ``on_due(thread_id, token)`` when an armed review is due, and ``on_poll()`` every
    ``poll_seconds``, from one daemon thread; both should return quickly.

    Arming a thread again replaces its wake-up (debounce); :meth:`disarm` drops it. The
    callbacks' exceptions are logged, never raised: the clock keeps going.

    Args:
        on_due: called with the thread id and the token it was armed with.
        on_poll: called every ``poll_seconds`` (the first one ``poll_seconds`` after start).
        poll_seconds: the poll period.
        name: the thread's name.

    Example:
        >>> clock = ReviewClock(lambda t, k: print(t, k), lambda: None, poll_seconds=10)
        >>> clock.arm("t1", "token", 0.1)
        >>> clock.close()
    """

    def __init__(
        self,
        on_due: Callable[[str, str], None],
        on_poll: Callable[[], None],
        *,
        poll_seconds: float,
        name: str = "mnemon-review-clock",
    ) -> None:
        self._on_due, self._on_poll = on_due, on_poll
        self.poll_seconds = poll_seconds
        self._armed: dict[str, tuple[float, str]] = {}  # thread -> (monotonic due, token)
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def arm(self, thread_id: str, token: str, delay: float) -> None:
        """Wake up for ``thread_id``'s review ``token`` in ``delay`` seconds."""
        with self._cond:
            self._armed[thread_id] = (time.monotonic() + max(delay, 0.0), token)
            self._cond.notify()

    def disarm(self, thread_id: str) -> None:
        """Drop the thread's pending wake-up, if any."""
        with self._cond:
            self._armed.pop(thread_id, None)

    def armed(self) -> int:
        """How many wake-ups are pending."""
        with self._cond:
            return len(self._armed)

    def _next(self, next_poll: float) -> tuple[list[tuple[str, str]], bool, float]:
        """Wait for the next event; returns the due wake-ups, whether to poll, the next poll."""
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                due = [(t, tok) for t, (at, tok) in self._armed.items() if at <= now]
                if due or now >= next_poll:
                    for thread_id, _token in due:
                        del self._armed[thread_id]
                    poll = now >= next_poll
                    return due, poll, now + self.poll_seconds if poll else next_poll
                soonest = min([at for at, _tok in self._armed.values()] + [next_poll])
                self._cond.wait(timeout=soonest - now)
        return [], False, next_poll

    def _loop(self) -> None:
        next_poll = time.monotonic() + self.poll_seconds
        while not self._closed:
            due, poll, next_poll = self._next(next_poll)
            for thread_id, token in due:
                self._call(self._on_due, thread_id, token)
            if poll and not self._closed:
                self._call(self._on_poll)

    @staticmethod
    def _call(fn: Callable[..., None], *args: str) -> None:
        try:
            fn(*args)
        except Exception:  # a failing database must not stop the clock
            logger.exception("idle review: the review clock's callback failed")

    def close(self) -> None:
        """Stop the thread; pending wake-ups are dropped."""
        with self._cond:
            self._closed = True
            self._armed.clear()
            self._cond.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)
