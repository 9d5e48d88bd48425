"""Deterministic parts of MEMORY.md archival into Memory Spaces.

When a MEMORY mutation would overflow, every compactable entry is written verbatim to a Memory
Space (each needs a committed receipt, or exact recall evidence when the provider skipped a
duplicate), then hot memory keeps the most important entries within the byte budget. With no
eligible space, the left-out entries go to ``runtime/archived/`` instead. A planner model may
choose among several destinations; it only ever sees clipped routing excerpts and returns
routes, which the host validates.

Example:
    >>> spaces_ok = eligible_destinations(mem.spaces)
    >>> routes = fallback_routes(plan, spaces_ok)
    >>> write_entries(mem.spaces, plan, routes)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from langgraph_mnemon.errors import InvalidInputError, MnemonError, ProviderError
from langgraph_mnemon.memory_layers.runtime import (
    CompactedEntry,
    MaintenancePlan,
    RuntimeEntry,
)
from langgraph_mnemon.memory_layers.space_models import MemoryReceipt
from langgraph_mnemon.memory_layers.spaces import MemorySpaces, SpaceRecord

__all__ = [
    "ArchiveRoute",
    "ArchiveRoutes",
    "durable_copy",
    "eligible_destinations",
    "fallback_routes",
    "hot_candidates",
    "routing_batches",
    "routing_excerpt",
    "validate_routes",
    "write_entries",
]

EXCERPT_CHARS = 384
BATCH_CHARS = 1024
_MARKER = "[... host-truncated routing excerpt ...]"
_IMPORTANCE_SCALE = {"critical": 5, "normal": 3, "low": 2}


class ArchiveRoute(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source_indexes: list[int] = Field(description="One-based plan entry indexes.")
    memory_body_id: str = Field(description="The destination Memory Space id.")


class ArchiveRoutes(BaseModel):
    """A planner's answer: where each entry goes."""

    model_config = ConfigDict(extra="forbid")

    summary: str = ""
    action: Literal["planned", "failed"]
    routes: list[ArchiveRoute] = Field(default_factory=list)


def eligible_destinations(spaces: MemorySpaces) -> list[SpaceRecord]:
    """Active spaces whose provider writes exactly and can forget safely, in catalog order."""
    result = []
    for record in spaces.list_spaces(active=True):
        provider = spaces.providers.get(record.provider_id)
        if provider is None:
            continue
        d = provider.descriptor
        if (
            d.capabilities.remember
            and d.capabilities.forget
            and d.write_mode == "exact"
            and d.deletion_mode in ("soft", "hard")
        ):
            result.append(record)
    return result


def routing_excerpt(text: str) -> str:
    """Clip an entry for the planner: the first 70 % and the tail around a marker."""
    if len(text) <= EXCERPT_CHARS:
        return text
    room = EXCERPT_CHARS - len(_MARKER) - 2
    head = int(room * 0.7)
    return f"{text[:head]} {_MARKER} {text[len(text) - (room - head) :]}"


def routing_batches(entries: Sequence[RuntimeEntry]) -> list[str]:
    """Numbered excerpt lines, chunked into batches of at most 1,024 characters."""
    batches: list[str] = []
    current: list[str] = []
    size = 0
    for index, entry in enumerate(entries, 1):
        branches = ",".join(entry.branches) if entry.branches else "all"
        line = (
            f"{index}. [importance={entry.importance}; branches={branches}] "
            f"{routing_excerpt(entry.content)}"
        )
        if current and size + len(line) + 1 > BATCH_CHARS:
            batches.append("\n".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line) + 1
    if current:
        batches.append("\n".join(current))
    return batches


def fallback_routes(plan: MaintenancePlan, destinations: Sequence[SpaceRecord]) -> dict[int, str]:
    """Every entry to the first eligible destination (the default native space sorts first)."""
    if not destinations:
        raise InvalidInputError("no eligible Memory Space to archive into")
    return {i: destinations[0].id for i in range(1, len(plan.entries) + 1)}


def validate_routes(
    plan: MaintenancePlan, answer: ArchiveRoutes, destinations: Sequence[SpaceRecord]
) -> dict[int, str]:
    """Check that every entry is routed exactly once to an eligible space."""
    if answer.action != "planned":
        raise InvalidInputError(f"the planner reported failure: {answer.summary or 'no reason'}")
    allowed = {d.id for d in destinations}
    count = len(plan.entries)
    mapping: dict[int, str] = {}
    for route in answer.routes:
        if route.memory_body_id not in allowed:
            raise InvalidInputError(
                f"route names {route.memory_body_id!r}, which is not an eligible Memory Space"
            )
        for index in route.source_indexes:
            if not 1 <= index <= count:
                raise InvalidInputError(f"route cites source index {index}, outside 1..{count}")
            if index in mapping:
                raise InvalidInputError(f"source index {index} is routed twice")
            mapping[index] = route.memory_body_id
    missing = sorted(set(range(1, count + 1)) - set(mapping))
    if missing:
        raise InvalidInputError(f"source indexes {missing} have no route")
    return mapping


def write_entries(
    spaces: MemorySpaces, plan: MaintenancePlan, routes: Mapping[int, str]
) -> dict[int, str]:
    """Write each routed entry verbatim; return index → memory id of its durable copy.

    A receipt that is not committed fails the archival, except a skipped duplicate that an
    exact keyword recall in the same space confirms. Raises :class:`ProviderError`.
    """
    by_space: dict[str, list[int]] = {}
    for index, space_id in sorted(routes.items()):
        by_space.setdefault(space_id, []).append(index)
    copies: dict[int, str] = {}
    for space_id, indexes in by_space.items():
        items = [
            {
                "content": plan.entries[i - 1].content,
                "category": "context",
                "importance": _IMPORTANCE_SCALE[plan.entries[i - 1].importance],
                "tags": ["runtime-memory", "archived"],
                "source": "agent",
                "metadata": {"archived_from": "MEMORY.md", "revision": plan.revision},
            }
            for i in indexes
        ]
        try:
            receipts = spaces.remember_many(items, space_id=space_id)
        except MnemonError as exc:
            raise ProviderError(f"archiving into {space_id} failed: {exc}") from None
        for index, receipt in zip(indexes, receipts, strict=True):
            copy = durable_copy(spaces, space_id, plan.entries[index - 1].content, receipt)
            if copy is None:
                raise ProviderError(
                    f"archiving entry {index} into {space_id} was not committed "
                    f"({receipt.status}: {receipt.message}); hot memory was left unchanged"
                )
            copies[index] = copy
    return copies


def hot_candidates(plan: MaintenancePlan) -> list[CompactedEntry]:
    """The original entries, verbatim, for importance-first packing into the budget."""
    return [
        CompactedEntry(content=e.content, importance=e.importance, branches=e.branches)
        for e in plan.entries
    ]


def durable_copy(
    spaces: MemorySpaces, space_id: str, content: str, receipt: MemoryReceipt
) -> str | None:
    """The memory id proving ``content`` is stored in ``space_id``, or None.

    A committed receipt proves it; a skipped one (the provider saw a duplicate) only when an
    exact keyword recall in that space returns the very same text.
    """
    if receipt.status == "committed" and receipt.id:
        return receipt.id
    if receipt.status != "skipped":
        return None
    try:
        found = spaces.search(content[:2000], mode="keyword", space_ids=[space_id], limit=10)
    except MnemonError:
        return None
    return next((row.id for row in found.results if row.content == content), None)
