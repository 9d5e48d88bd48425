"""How ``MnemonStore`` runs a batch from sync code, and how a failed batch reports what it did."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from langgraph.store.base import Op, PutOp

from langgraph_mnemon.errors import MnemonError

__all__ = ["run_sync", "say_applied"]

_T = TypeVar("_T")


def run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to completion from sync code, even when this thread runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # The helper thread runs in the caller's context: the trigger (acting) must travel along.
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mnemon-store") as pool:
        return pool.submit(context.run, asyncio.run, coro).result()


def say_applied(exc: MnemonError, failed: int, ops: Sequence[Op], applied: list[PutOp]) -> None:
    """Say in ``exc`` which puts of the batch were applied before op ``failed`` failed."""
    done = [(tuple(op.namespace), op.key) for op in applied]
    exc.applied = done  # type: ignore[attr-defined]
    if len(ops) < 2:
        return
    listed = ", ".join(f"{ns!r}/{key!r}" for ns, key in done[:10]) + (
        f" and {len(done) - 10} more" if len(done) > 10 else ""
    )
    said = f"{len(done)} earlier put(s) were applied ({listed})" if done else "nothing was written"
    exc.message = (
        f"{exc.message} [batch op {failed + 1} of {len(ops)} failed; {said}; later ops did not run]"
    )
    exc.args = (exc.message,)
