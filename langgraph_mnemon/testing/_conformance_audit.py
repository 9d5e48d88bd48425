"""An I/O recorder for the conformance suite: a process-wide audit hook gated by a contextvar.

``sys.addaudithook`` cannot be removed again, so the hook is installed once per process and
records only while :func:`recording` is active *in the current context*. Work the provider
hands to ``asyncio.to_thread`` runs in a copy of that context and is recorded too; threads the
provider started earlier (a client's background pool) are not, so the suite never blames a
provider for I/O it did not do during the call under test.
"""

from __future__ import annotations

import contextvars
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["IO_EVENTS", "recording"]

IO_EVENTS = frozenset(
    {
        "open",
        "os.mkdir",
        "os.remove",
        "os.rename",
        "os.rmdir",
        "os.truncate",
        "shutil.rmtree",
        "socket.connect",
        "socket.getaddrinfo",
        "socket.sendto",
        "sqlite3.connect",
        "subprocess.Popen",
    }
)
"""The audit events that count as I/O (see the Python audit events table)."""

_log: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "mnemon_conformance_io", default=None
)
_install_lock = threading.Lock()
_installed = False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    # Runs for every audit event of the process: keep the common path to one lookup.
    log = _log.get()
    if log is None or event not in IO_EVENTS:
        return
    first = args[0] if args else ""
    log.append(f"{event}({str(first)[:120]})")


def _install() -> None:
    global _installed
    with _install_lock:
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True


@contextmanager
def recording() -> Iterator[list[str]]:
    """Record the I/O audit events raised in this context while the block runs.

    Yields:
        The list the events are appended to (``"open(/path)"``, ``"socket.connect(...)"``).

    Example:
        >>> with recording() as events:
        ...     open(__file__).close()
        >>> events[0].startswith("open(")
        True
    """
    _install()
    events: list[str] = []
    token = _log.set(events)
    try:
        yield events
    finally:
        _log.reset(token)
