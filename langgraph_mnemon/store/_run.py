"""How a failed ``MnemonStore`` batch reports what it did before it failed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from langgraph.store.base import Op, PutOp

from langgraph_mnemon.errors import MnemonError

__all__ = ["say_applied"]

_T = TypeVar("_T")


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
