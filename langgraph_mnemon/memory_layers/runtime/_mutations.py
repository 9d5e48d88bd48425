"""Runtime Memory mutations, decided before any I/O: what an add / replace / remove does to one
target's entries, how many bytes it leaves, and the maintenance plan when it would overflow.

Example:
    >>> applied = apply_mutation(request, entries, stamp="2024-05-01T10:00:00.000Z")
    >>> applied.changed, applied.message
    (True, 'Entry added.')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langgraph_mnemon.errors import AmbiguousMatchError, InvalidInputError, NoMatchError
from langgraph_mnemon.memory_layers.runtime._entries import (
    DELIMITER_BYTES,
    entry_bytes,
    joined_bytes,
)
from langgraph_mnemon.memory_layers.runtime._maintenance import compaction_budget
from langgraph_mnemon.memory_layers.runtime._models import (
    MaintenancePlan,
    PendingEntry,
    RuntimeEntry,
    RuntimeMutation,
)

__all__ = ["Applied", "apply_mutation", "overflows", "plan_for", "projected_bytes"]


@dataclass(frozen=True, slots=True)
class Applied:
    """The outcome of applying a mutation to one target's entries, before any I/O."""

    entries: list[RuntimeEntry]
    changed: bool
    message: str
    excluded: RuntimeEntry | None
    pending: PendingEntry | None
    receipt_fields: dict[str, Any]
    new_entry: RuntimeEntry | None = None


def apply_mutation(request: RuntimeMutation, entries: list[RuntimeEntry], stamp: str) -> Applied:
    """``request`` applied to ``entries`` (one target's, in order); ``stamp`` dates a new entry.

    Raises:
        NoMatchError / AmbiguousMatchError: ``old_text`` names no entry, or several.
        InvalidInputError: a replace would duplicate another entry's content.
    """
    if request.action == "add":
        return _add(request, entries, stamp)
    assert request.old_text is not None
    index = _match(entries, request.old_text, request.target)
    if request.action == "remove":
        old = entries[index]
        rest = entries[:index] + entries[index + 1 :]
        return Applied(rest, True, "Entry removed.", old, None, {"removed": old.content})
    return _replace(request, entries, index, stamp)


def _add(request: RuntimeMutation, entries: list[RuntimeEntry], stamp: str) -> Applied:
    assert request.content is not None
    pending = PendingEntry(
        content=request.content,
        importance=request.importance or "normal",
        branches=request.branches or None,
    )
    if any(e.content == request.content for e in entries):
        message = "Entry already exists (no duplicate added)."
        return Applied(entries, False, message, None, pending, {})
    new = RuntimeEntry(
        content=request.content,
        created_at=stamp,
        updated_at=stamp,
        target=request.target,
        importance=pending.importance,
        branches=pending.branches,
    )
    fields = {"added": request.content}
    return Applied([*entries, new], True, "Entry added.", None, pending, fields, new)


def _replace(
    request: RuntimeMutation, entries: list[RuntimeEntry], index: int, stamp: str
) -> Applied:
    assert request.content is not None
    old = entries[index]
    branches = old.branches if request.branches is None else (request.branches or None)
    pending = PendingEntry(
        content=request.content,
        importance=request.importance or old.importance,
        branches=branches,
    )
    if any(i != index and e.content == request.content for i, e in enumerate(entries)):
        raise InvalidInputError(
            f"another {request.target} entry already has this content; remove the old entry instead"
        )
    fields = {"replaced": {"from": old.content, "to": request.content}}
    if (old.content, old.importance, old.branches) == (
        pending.content,
        pending.importance,
        pending.branches,
    ):
        return Applied(entries, False, "Entry replaced.", old, pending, fields)
    new = old.model_copy(
        update={
            "content": pending.content,
            "importance": pending.importance,
            "branches": pending.branches,
            "updated_at": stamp,
        }
    )
    updated = [*entries[:index], new, *entries[index + 1 :]]
    return Applied(updated, True, "Entry replaced.", old, pending, fields, new)


def _match(entries: Sequence[RuntimeEntry], old_text: str, target: str) -> int:
    """The index of the entry ``old_text`` names: an exact match first, then a unique substring."""
    exact = [i for i, e in enumerate(entries) if e.content == old_text]
    if len(exact) == 1:
        return exact[0]
    candidates = exact or [i for i, e in enumerate(entries) if old_text in e.content]
    if not candidates:
        raise NoMatchError(f'No {target} entry contains "{old_text}".')
    if len(candidates) > 1:
        raise AmbiguousMatchError(
            f'Multiple {target} entries contain "{old_text}"; use a unique substring.'
        )
    return candidates[0]


def projected_bytes(used: int, count: int, applied: Applied) -> int:
    """Bytes after an add / replace / remove, from the one entry it changes."""
    if not applied.changed:
        return used
    old = entry_bytes(applied.excluded.content) if applied.excluded is not None else 0
    new = entry_bytes(applied.new_entry.content) if applied.new_entry is not None else 0
    if applied.excluded is None:  # add
        return used + new + (DELIMITER_BYTES if count else 0)
    if applied.new_entry is None:  # remove
        return used - old - (DELIMITER_BYTES if count > 1 else 0)
    return used - old + new


def overflows(used: int, projected: int, limit: int) -> bool:
    """Whether a write needs maintenance: it grows the file past ``limit``."""
    # A shrinking replace or a remove never does, even when the file is already over a newly
    # lowered limit.
    return projected > limit and projected > used


def plan_for(
    request: RuntimeMutation, entries: list[RuntimeEntry], revision: str, limit: int, stamp: str
) -> MaintenancePlan:
    """The maintenance plan of ``request`` against ``entries`` (one target's) at ``revision``."""
    applied = apply_mutation(request, entries, stamp)
    used = joined_bytes(e.content for e in entries)
    projected = joined_bytes(e.content for e in applied.entries)
    compactable = tuple(
        e
        for e in entries
        if e is not applied.excluded
        and not (applied.pending is not None and e.content == applied.pending.content)
    )
    pending_bytes = entry_bytes(applied.pending.content) if applied.pending else 0
    return MaintenancePlan(
        revision=revision,
        action=request.action,
        target=request.target,
        entries=compactable,
        pending=applied.pending if applied.changed else None,
        excluded=applied.excluded,
        used=used,
        projected=projected,
        limit=limit,
        requires_maintenance=applied.changed and overflows(used, projected, limit),
        budget=compaction_budget(limit, pending_bytes if applied.changed else 0),
    )
