"""Deterministic parts of Runtime Memory compaction: proposal validation and the heuristic.

A compactor (a model, or :func:`heuristic_compaction` when none is configured) proposes compacted
entries, each naming the one-based plan entries it covers. The host accepts a proposal only when
every plan entry is covered exactly once, no importance is lowered and the result fits the byte
budget; anything else is rejected before a byte is written.

Without a model nothing leaves hot memory: the heuristic merges duplicates and near-duplicates
(every entry still covered) and refuses the pending write with :class:`CapacityError` when that
is not enough.

Example:
    >>> proposal = heuristic_compaction(plan)
    >>> compacted = validate_proposal(plan, proposal, budget=heuristic_budget(plan))
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from langgraph_mnemon.contracts import IMPORTANCE_LEVELS, Importance, shown
from langgraph_mnemon.errors import CapacityError, InvalidInputError
from langgraph_mnemon.memory_layers.runtime._entries import (
    DELIMITER_BYTES,
    entry_bytes,
    joined_bytes,
    normalize_content,
    validate_branches,
)
from langgraph_mnemon.memory_layers.runtime._models import CompactedEntry, MaintenancePlan

__all__ = [
    "CompactionProposal",
    "ProposedEntry",
    "heuristic_budget",
    "heuristic_compaction",
    "validate_proposal",
]

_RANK = IMPORTANCE_LEVELS  # importance order: a compacted entry never ranks below its sources
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
_LISTED = 6  # entries quoted in a refusal


class ProposedEntry(BaseModel):
    """One compacted entry as a compactor proposes it."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(description="The compacted entry text (no § characters).")
    importance: Importance = "normal"
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


def validate_proposal(
    plan: MaintenancePlan, proposal: CompactionProposal, *, budget: int | None = None
) -> list[CompactedEntry]:
    """Check a proposal against its plan; return the entries to commit.

    ``budget`` defaults to the plan's (a model's proposal); the heuristic's proposal is held to
    :func:`heuristic_budget`.

    Args:
        plan: the :class:`MaintenancePlan` the proposal answers.
        proposal: the compactor's :class:`CompactionProposal`.
        budget: the byte budget the result must fit (default ``plan.budget``).

    Returns:
        The :class:`CompactedEntry` list to pass to ``compact_and_mutate``.

    Raises:
        InvalidInputError: names the first rule broken: a failed action, a missing, repeated
            or out-of-range source index, a lowered importance, invalid content, or a result
            larger than the byte budget.

    Example:
        >>> compacted = validate_proposal(plan, heuristic_compaction(plan),
        ...                               budget=heuristic_budget(plan))
    """
    _check_plan(plan)
    if not isinstance(proposal, CompactionProposal):
        raise InvalidInputError("the compactor's answer is not a CompactionProposal")
    if proposal.action != "compacted":
        raise InvalidInputError(
            f"the compactor reported failure: {proposal.summary or 'no reason'}"
        )
    count = len(plan.entries)
    seen: dict[int, int] = {}  # plan index -> the compacted entry that covers it
    result: list[CompactedEntry] = []
    for position, item in enumerate(proposal.compacted_entries, start=1):
        _cover(seen, item, position, count)
        _check_importance(plan, item, position)
        result.append(_compacted(plan, item, position))
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise InvalidInputError(
            f"source indexes {missing} are not covered; every plan entry must appear exactly once"
        )
    size = joined_bytes(c.content for c in result)
    limit = plan.budget if budget is None else budget
    if size > limit:
        raise InvalidInputError(
            f"the compacted entries take {size} bytes, over the budget of {limit}"
        )
    return result


def _cover(seen: dict[int, int], item: ProposedEntry, position: int, count: int) -> None:
    """Record the plan entries ``item`` covers; each must be in range and covered once."""
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


def _check_importance(plan: MaintenancePlan, item: ProposedEntry, position: int) -> None:
    """A compacted entry never ranks below the most important of its sources."""
    sources = [plan.entries[i - 1] for i in item.source_indexes]
    floor = max(_RANK[s.importance] for s in sources)
    if _RANK[item.importance] < floor:
        raise InvalidInputError(
            f"compacted entry {position} lowers importance to {item.importance} below its sources"
        )


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


def heuristic_budget(plan: MaintenancePlan) -> int:
    """Bytes the heuristic may fill: the whole limit less the pending entry (and its delimiter).

    The heuristic only merges duplicates, so it needs no headroom below the limit; what does not
    fit is refused rather than moved out of hot memory.

    Raises:
        InvalidInputError: ``plan`` is not a :class:`MaintenancePlan`.

    Example:
        >>> heuristic_budget(plan) == plan.limit - len(plan.pending.content.encode()) - 4
        True
    """
    _check_plan(plan)
    pending = entry_bytes(plan.pending.content) + DELIMITER_BYTES if plan.pending else 0
    return max(plan.limit - pending, 0)


def heuristic_compaction(plan: MaintenancePlan) -> CompactionProposal:
    """Compaction without a model: merge duplicates and near-duplicates, lose nothing.

    Entries whose words are equal after folding case, width and accents, or whose words occur
    in a longer entry as a run of at least half its words, merge into that longer entry with
    the highest importance of the group. Every plan entry is covered (the proposal passes
    :func:`validate_proposal` with :func:`heuristic_budget`). When the merged entries and the
    pending one still exceed the limit, nothing is proposed: no fact leaves hot memory without
    a model deciding it.

    Returns:
        A :class:`CompactionProposal` (``action="compacted"``) covering every plan entry.

    Raises:
        CapacityError: the merged entries do not leave room for the pending one; the message
            lists the entries to shorten or remove (largest first).
        InvalidInputError: ``plan`` is not a :class:`MaintenancePlan`.

    Example:
        >>> heuristic_compaction(plan).action
        'compacted'
    """
    _check_plan(plan)
    groups = _near_duplicate_groups(plan)
    proposed = [
        ProposedEntry(
            content=plan.entries[lead].content,
            importance=max((plan.entries[i].importance for i in members), key=_RANK.__getitem__),
            source_indexes=[i + 1 for i in members],
            branches=list(plan.entries[lead].branches or []) or None,
        )
        for lead, members in groups
    ]
    budget = heuristic_budget(plan)
    size = joined_bytes(p.content for p in proposed)
    if size > budget:
        raise CapacityError(_no_room(plan, [p.content for p in proposed], size), plan=plan)
    merged = len(plan.entries) - len(groups)
    return CompactionProposal(
        summary=f"heuristic: merged {merged} duplicate entries into {len(groups)} ({size} bytes)",
        action="compacted",
        compacted_entries=proposed,
    )


def _near_duplicate_groups(plan: MaintenancePlan) -> list[tuple[int, list[int]]]:
    """``(lead, members)`` per group: the lead's words contain every member's words."""
    groups: list[tuple[int, list[int]]] = []
    keys: list[str] = []
    for i, entry in enumerate(plan.entries):
        key = _fold(entry.content)
        for g, other in enumerate(keys):
            if _covers(other, key):
                groups[g][1].append(i)
                break
            if _covers(key, other):  # the new entry says more: it leads
                groups[g] = (i, [*groups[g][1], i])
                keys[g] = key
                break
        else:
            groups.append((i, [i]))
            keys.append(key)
    return groups


def _covers(longer: str, shorter: str) -> bool:
    """Whether folded ``longer`` says all of ``shorter``: equal, or ``shorter``'s words occur in
    it as a run that is at least half of it (so "Vegetarian." never merges into "Partner is
    vegetarian.": the heuristic would rather save no bytes than blur a fact)."""
    if longer == shorter:
        return True
    if not shorter or f" {shorter} " not in f" {longer} ":
        return False
    return 2 * len(shorter.split()) >= len(longer.split())


def _no_room(plan: MaintenancePlan, contents: list[str], size: int) -> str:
    name = "USER.md" if plan.target == "user" else "MEMORY.md"
    need = plan.limit - heuristic_budget(plan)
    largest = sorted(contents, key=lambda c: -entry_bytes(c))
    quoted = [f"{shown(c)} ({entry_bytes(c)} bytes)" for c in largest[:_LISTED]]
    if len(largest) > _LISTED:
        quoted.append(f"and {len(largest) - _LISTED} more")
    return (
        f"{name} has no room for the new entry without moving a fact out of it: after merging "
        f"duplicates its entries take {size} bytes and the new one needs {need} more (limit "
        f"{plan.limit}). Nothing was changed. Shorten or remove entries to free at least "
        f"{size + need - plan.limit} bytes, or shorten the new entry, then retry. Largest "
        f"entries: {'; '.join(quoted)}"
    )


def _check_plan(plan: object) -> None:
    if not isinstance(plan, MaintenancePlan):
        raise InvalidInputError("plan must be a MaintenancePlan from runtime.plan_maintenance()")


def _fold(text: str) -> str:
    """The entry's words, folded (case, width, accents), joined by one space."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return " ".join(_NON_WORD.sub(" ", unicodedata.normalize("NFKC", plain).casefold()).split())
