"""The one ``Mnemon`` a server process shares between its graphs, store, saver and control plane."""

from __future__ import annotations

import threading

from langgraph_mnemon.host import Mnemon

_lock = threading.Lock()
_host: Mnemon | None = None


def shared_host() -> Mnemon:
    """The process-wide host, opened on first use from ``MNEMON_*`` settings.

    LangGraph server imports ``langgraph.json`` targets separately; sharing one host keeps one
    SQL engine, one set of locks and one ViewComposer for all of them.
    """
    global _host
    if _host is None:
        with _lock:
            if _host is None:
                _host = Mnemon.open()
    return _host


def set_shared_host(host: Mnemon | None) -> None:
    """Install ``host`` as the process-wide host (tests, notebooks, embedding in an app)."""
    global _host
    with _lock:
        _host = host
