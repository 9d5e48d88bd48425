"""Runtime Memory maintenance, decided before any I/O: the compaction budget, importance-first
packing of compacted entries, and what a maintenance commit writes (the new entries, the
left-out originals and their ``runtime/archived/`` lines).

Packing ranks importance by :data:`langgraph_mnemon.contracts.IMPORTANCE_LEVELS` (critical
first), then keeps the candidates' order.

Example:
    >>> compaction_budget(1000, pending_bytes=96)  # floor(0.7 × 1000) − 96 − 4
    600
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from langgraph_mnemon.contracts import IMPORTANCE_LEVELS
from langgraph_mnemon.memory_layers.runtime._entries import DELIMITER_BYTES, entry_bytes
from langgraph_mnemon.memory_layers.runtime._models import (
    CompactedEntry,
    MaintenancePlan,
    PendingEntry,
    RuntimeEntry,
    RuntimeTarget,
)

__all__ = [
    "COMPACT_MESSAGES",
    "Compaction",
    "compaction_budget",
    "compaction_of",
    "pack",
]

COMPACT_MESSAGES = {
    "compact": "Runtime memory compacted.",
    "add": "Runtime memory compacted; entry added.",
    "replace": "Runtime memory compacted; entry replaced.",
    "remove": "Runtime memory compacted; entry removed.",
}


def compaction_budget(limit: int, pending_bytes: int = 0) -> int:
    """Byte budget for compacted entries: ``floor(0.7 × limit) − pending − 4``.

    The delimiter is only reserved when there is a pending entry to join.

    Args:
        limit: the target's byte limit.
        pending_bytes: UTF-8 bytes of the entry the maintenance run will add (0 for none).

    Returns:
        The bytes the compacted entries may take (never negative).

    Example:
        >>> compaction_budget(1000), compaction_budget(1000, 96)
        (700, 600)
    """
    reserve = pending_bytes + DELIMITER_BYTES if pending_bytes else 0
    return max(math.floor(limit * 0.7) - reserve, 0)


def pack(candidates: Sequence[CompactedEntry], budget: int) -> list[CompactedEntry]:
    """Keep candidates by importance (then order) while the joined bytes fit ``budget``.

    The kept ones come back in their original order.
    """
    order = sorted(
        range(len(candidates)),
        key=lambda i: (-IMPORTANCE_LEVELS[candidates[i].importance], i),
    )
    kept: set[int] = set()
    used = 0
    for i in order:
        cost = entry_bytes(candidates[i].content) + (DELIMITER_BYTES if kept else 0)
        if used + cost <= budget:
            kept.add(i)
            used += cost
    return [c for i, c in enumerate(candidates) if i in kept]


@dataclass(frozen=True, slots=True)
class Compaction:
    """What one maintenance commit writes for a target."""

    entries: list[RuntimeEntry]  # the target's new entries, pending one last
    left_out: list[RuntimeEntry]  # originals no longer in hot memory
    archive: list[tuple[str, bytes]]  # (file name, line) for runtime/archived/


def compaction_of(
    current: list[RuntimeEntry],
    candidates: Sequence[CompactedEntry],
    plan: MaintenancePlan | None,
    *,
    target: RuntimeTarget,
    max_bytes: int,
    stamp: str,
    revision: str,
    archive_left_out: bool,
    stored: Collection[str] = (),
) -> Compaction:
    """Pack ``candidates`` into ``max_bytes``, add the plan's pending entry, list what left.

    Left-out originals get an archive line unless ``archive_left_out`` is false or their text
    is in ``stored`` (the caller already keeps a durable copy in a Memory Space).
    """
    entries = _materialise(pack(candidates, max_bytes), current, target, stamp)
    if plan is not None and plan.pending is not None:
        entries.append(_pending_entry(plan, plan.pending, stamp))
    kept = {e.content for e in entries}
    originals = plan.entries if plan is not None else tuple(current)
    left_out = [e for e in originals if e.content not in kept]
    elsewhere = set(stored)  # left-out entries with a durable copy in a Memory Space
    archive = [
        (f"{target}.jsonl", _archive_line(e, stamp, revision))
        for e in left_out
        if archive_left_out and e.content not in elsewhere
    ]
    return Compaction(entries, left_out, archive)


def _materialise(
    kept: Sequence[CompactedEntry], entries: Sequence[RuntimeEntry], target: str, stamp: str
) -> list[RuntimeEntry]:
    """Entries for the kept candidates; unchanged text keeps its history and scope."""
    by_content = {e.content: e for e in entries}
    result = []
    for cand in kept:
        existing = by_content.get(cand.content)
        if existing is not None:
            result.append(existing.model_copy(update={"importance": cand.importance}))
        else:
            result.append(
                RuntimeEntry(
                    content=cand.content,
                    created_at=stamp,
                    updated_at=stamp,
                    target=target,  # type: ignore[arg-type]
                    importance=cand.importance,
                    branches=cand.branches,
                )
            )
    return result


def _pending_entry(plan: MaintenancePlan, pending: PendingEntry, stamp: str) -> RuntimeEntry:
    """The entry a maintenance commit adds for the pending mutation."""
    # A replaced entry keeps its creation time; an added one starts now.
    replaced = plan.action == "replace" and plan.excluded is not None
    return RuntimeEntry(
        content=pending.content,
        created_at=plan.excluded.created_at if replaced and plan.excluded else stamp,
        updated_at=stamp,
        target=plan.target,
        importance=pending.importance,
        branches=pending.branches,
    )


def _archive_line(entry: RuntimeEntry, stamp: str, revision: str) -> bytes:
    record = {"archived_at": stamp, "revision": revision, "entry": entry.to_json()}
    return (json.dumps(record, ensure_ascii=False) + "\n").encode()
