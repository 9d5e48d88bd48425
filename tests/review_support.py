"""Shared by the idle-review tests: the stub tools a busy turn calls, and a polling wait."""

from __future__ import annotations

import time
from collections.abc import Callable

from langchain_core.tools import tool


@tool
def shell(cmd: str) -> str:
    """Run a command."""
    return "ok"


@tool
def read(path: str) -> str:
    """Read a file."""
    return "text"


@tool
def grep(pattern: str) -> str:
    """Search files."""
    return "hits"


@tool
def edit(path: str) -> str:
    """Edit a file."""
    return "edited"


def wait_for(predicate: Callable[[], object], timeout: float = 10.0) -> bool:
    """Poll ``predicate`` until it is truthy or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False
