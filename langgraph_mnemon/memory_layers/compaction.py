"""Deterministic parts of Runtime Memory compaction: proposal validation and the heuristic.

A compactor (a model, or :func:`heuristic_compaction` when none is configured) proposes compacted
entries, each naming the one-based plan entries it covers. The host accepts a proposal only when
every plan entry is covered exactly once, no importance is lowered and the result fits the byte
budget; anything else is rejected before a byte is written.

Example:
    >>> proposal = heuristic_compaction(plan)
    >>> compacted = validate_proposal(plan, proposal)
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.runtime import (
    DELIMITER_BYTES,
    CompactedEntry,
    MaintenancePlan,
    entry_bytes,
    joined_bytes,
    normalize_content,
    validate_branches,
)

__all__ = [
    "CompactionProposal",
    "ProposedEntry",
    "accepted_entries",
    "heuristic_compaction",
    "validate_proposal",
]

_RANK = {"low": 0, "normal": 1, "critical": 2}
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


class ProposedEntry(BaseModel):
    """One compacted entry as a compactor proposes it."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(description="The compacted entry text (no § characters).")
    importance: Literal["critical", "normal", "low"] = "normal"
    source_indexes: list[int] = Field(
        description="One-based indexes of the plan entries this entry replaces."
    )
    branches: list[str] | None = Field(
        default=None, description="MEMORY only: git branches the entry applies to."
    )


class CompactionProposal(BaseModel):
    """A compactor's answer: what it did and the compacted entries."""

    model_config = ConfigDict(extra="forbid")

    summary: str = ""
    action: Literal["compacted", "failed"]
    compacted_entries: list[ProposedEntry] = Field(default_factory=list)


def validate_proposal(plan: MaintenancePlan, proposal: CompactionProposal) -> list[CompactedEntry]:
    """Check a proposal against its plan; return the entries to commit.

    Raises :class:`InvalidInputError` naming the first rule broken: a failed action, a missing,
    repeated or out-of-range source index, a lowered importance, invalid content, or a result
    larger than the plan's byte budget.
    """
    _check_plan(plan)
    if not isinstance(proposal, CompactionProposal):
        raise InvalidInputError("the compactor's answer is not a CompactionProposal")
    if proposal.action != "compacted":
        raise InvalidInputError(
            f"the compactor reported failure: {proposal.summary or 'no reason'}"
        )
    count = len(plan.entries)
    seen: dict[int, int] = {}
    result: list[CompactedEntry] = []
    for position, item in enumerate(proposal.compacted_entries, start=1):
        if not item.source_indexes:
            raise InvalidInputError(f"compacted entry {position} names no source_indexes")
        for index in item.source_indexes:
            if not 1 <= index <= count:
                raise InvalidInputError(
                    f"compacted entry {position} cites source index {index}, outside 1..{count}"
                )
            if index in seen:
                raise InvalidInputError(
                    f"source index {index} is used by compacted entries {seen[index]} and "
                    f"{position}; each entry must be covered exactly once"
                )
            seen[index] = position
        sources = [plan.entries[i - 1] for i in item.source_indexes]
        floor = max(_RANK[s.importance] for s in sources)
        if _RANK[item.importance] < floor:
            raise InvalidInputError(
                f"compacted entry {position} lowers importance to {item.importance} below its "
                "sources"
            )
        result.append(_compacted(plan, item, position))
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise InvalidInputError(
            f"source indexes {missing} are not covered; every plan entry must appear exactly once"
        )
    size = joined_bytes(c.content for c in result)
    if size > plan.budget:
        raise InvalidInputError(
            f"the compacted entries take {size} bytes, over the budget of {plan.budget}"
        )
    return result


def accepted_entries(plan: MaintenancePlan, proposal: CompactionProposal) -> list[CompactedEntry]:
    """The entries of a host-made proposal (the heuristic's), with content checks only."""
    _check_plan(plan)
    return [_compacted(plan, item, n) for n, item in enumerate(proposal.compacted_entries, 1)]


def _compacted(plan: MaintenancePlan, item: ProposedEntry, position: int) -> CompactedEntry:
    branches = validate_branches(item.branches)
    if plan.target == "user" and branches is not None:
        raise InvalidInputError("branches applies to target=memory only")
    return CompactedEntry(
        content=normalize_content(item.content, f"compacted entry {position}"),
        importance=item.importance,
        branches=branches,
        source_indexes=tuple(item.source_indexes),
    )


def heuristic_compaction(plan: MaintenancePlan) -> CompactionProposal:
    """Compaction without a model: merge duplicates, then keep by importance within budget.

    Entries whose text is equal after folding case, width and punctuation, or contained in a
    longer entry, merge into the longer one with the highest importance of the group. Groups
    are then kept most important first (ties: earlier first) while they fit the budget. The
    proposal lists only the kept groups: the commit (``compact_and_mutate`` with
    ``archive_left_out=True``) appends every original entry not kept verbatim to
    ``runtime/archived/``, so a group that does not fit leaves hot memory without being lost.
    """
    _check_plan(plan)
    groups: list[list[int]] = []
    keys: list[str] = []
    for i, entry in enumerate(plan.entries):
        key = _fold(entry.content)
        for g, other in enumerate(keys):
            if key == other or (key and key in other) or (other and other in key):
                groups[g].append(i)
                if len(key) > len(other):
                    keys[g] = key
                break
        else:
            groups.append([i])
            keys.append(key)
    proposed = []
    for members in groups:
        longest = max(members, key=lambda i: (len(plan.entries[i].content), -i))
        importance = max((plan.entries[i].importance for i in members), key=_RANK.__getitem__)
        proposed.append(
            ProposedEntry(
                content=plan.entries[longest].content,
                importance=importance,
                source_indexes=[i + 1 for i in members],
                branches=list(plan.entries[longest].branches or []) or None,
            )
        )
    order = sorted(range(len(proposed)), key=lambda g: (-_RANK[proposed[g].importance], g))
    kept: set[int] = set()
    used = 0
    for g in order:
        cost = entry_bytes(proposed[g].content) + (DELIMITER_BYTES if kept else 0)
        if used + cost <= plan.budget:
            kept.add(g)
            used += cost
    merged = sum(len(m) - 1 for m in groups)
    return CompactionProposal(
        summary=(
            f"heuristic: merged {merged} duplicate entries, kept {len(kept)} of {len(groups)} "
            f"within {plan.budget} bytes"
        ),
        action="compacted",
        compacted_entries=[p for g, p in enumerate(proposed) if g in kept],
    )


def _check_plan(plan: object) -> None:
    if not isinstance(plan, MaintenancePlan):
        raise InvalidInputError("plan must be a MaintenancePlan from runtime.plan_maintenance()")


def _fold(text: str) -> str:
    return _NON_WORD.sub("", unicodedata.normalize("NFKC", text).casefold())
