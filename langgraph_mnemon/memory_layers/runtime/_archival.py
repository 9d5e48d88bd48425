"""Deterministic parts of MEMORY.md archival into Memory Spaces.

When a MEMORY mutation would overflow, every compactable entry is written verbatim to a Memory
Space (each needs a committed receipt, or exact recall evidence when the provider skipped a
duplicate), then hot memory keeps the most important entries within the byte budget. A planner
model may choose among several destinations; it only ever sees clipped routing excerpts and
returns routes, which the host validates.

Archival writes into a space are automatic ``memory_spaces`` writes, whatever set the overflow
off: with that channel off or manual, the layer disabled, or no eligible space (the seed's
"none anywhere"), no space is written and the left-out entries go to ``runtime/archived/``
under the Runtime lock. An entry whose destination write fails goes there too, and the
receipt's ``outcome`` is ``partial`` with a failed step naming that space.

Example:
    >>> spaces_ok = eligible_destinations(mem.spaces)
    >>> routes = fallback_routes(plan, spaces_ok)
    >>> writes = write_entries(mem.spaces, plan, routes)
    >>> writes.outcome
    'succeeded'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from langgraph_mnemon.contracts import IMPORTANCE_LEVELS, Outcome, StepOutcome, outcome_of
from langgraph_mnemon.errors import InvalidInputError, MnemonError
from langgraph_mnemon.memory_layers.kernel import acting
from langgraph_mnemon.memory_layers.runtime._models import (
    CompactedEntry,
    MaintenancePlan,
    RuntimeEntry,
    RuntimeReceipt,
)
from langgraph_mnemon.memory_layers.spaces import (
    MemorySpaces,
    SpaceRecord,
    durable_copy,
)

__all__ = [
    "LOCAL_ARCHIVE",
    "ArchiveRoute",
    "ArchiveRoutes",
    "ArchiveWrites",
    "eligible_destinations",
    "fallback_routes",
    "hot_candidates",
    "maintenance_receipt",
    "routing_batches",
    "routing_excerpt",
    "stored_contents",
    "validate_routes",
    "write_entries",
]

EXCERPT_CHARS = 384
BATCH_CHARS = 1024
_MARKER = "[... host-truncated routing excerpt ...]"
LOCAL_ARCHIVE = "runtime/archived"  # the step target of the local archive


class ArchiveRoute(BaseModel):
    # The planner model sees the seed's wire name ``memory_body_id``; Python says ``space_id``.
    model_config = ConfigDict(extra="forbid", validate_by_name=True, serialize_by_alias=True)

    source_indexes: list[int] = Field(description="One-based plan entry indexes.")
    space_id: str = Field(
        alias="memory_body_id",
        title="Memory Body Id",
        description="The destination Memory Space id.",
    )


class ArchiveRoutes(BaseModel):
    """A planner's answer: where each entry goes."""

    model_config = ConfigDict(extra="forbid")

    summary: str = ""
    action: Literal["planned", "failed"]
    routes: list[ArchiveRoute] = Field(default_factory=list)


class ArchiveWrites(BaseModel):
    """What the destination writes did: durable copies and one step per destination space."""

    model_config = ConfigDict(frozen=True)

    copies: dict[int, str] = Field(default_factory=dict)  # plan index -> memory id
    steps: tuple[StepOutcome, ...] = ()

    @property
    def outcome(self) -> Outcome:
        return outcome_of(self.steps)


def eligible_destinations(spaces: MemorySpaces) -> list[SpaceRecord]:
    """Active spaces whose provider writes exactly and can forget safely, in catalog order.

    Args:
        spaces: the Memory Spaces service (``Mnemon.spaces``).

    Returns:
        The eligible :class:`SpaceRecord` rows; empty unless the kernel admits an AUTOMATIC
        ``memory_spaces`` write (maintenance writes into a space count as automatic whoever
        set them off): the caller then keeps its data local.

    Example:
        >>> [s.id for s in eligible_destinations(mem.spaces)]
        ['default']
    """
    if not spaces.kernel.admits("memory_spaces", "write", "automatic"):
        return []
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
    """Numbered excerpt lines, chunked into batches of at most 1,024 characters.

    Args:
        entries: the plan entries (line ``i`` is plan index ``i``, one-based).

    Returns:
        The batches a planner model reads, each entry clipped by :func:`routing_excerpt`.

    Example:
        >>> routing_batches(plan.entries)[0].splitlines()[0]
        '1. [importance=normal; branches=all] Deploys go through CI.'
    """
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
    """Every entry to the first eligible destination (the default native space sorts first).

    Returns:
        ``{plan index: space id}`` for every plan entry.

    Raises:
        InvalidInputError: ``destinations`` is empty.

    Example:
        >>> fallback_routes(plan, eligible_destinations(mem.spaces))
        {1: 'default', 2: 'default'}
    """
    if not destinations:
        raise InvalidInputError("no eligible Memory Space to archive into")
    return {i: destinations[0].id for i in range(1, len(plan.entries) + 1)}


def validate_routes(
    plan: MaintenancePlan, answer: ArchiveRoutes, destinations: Sequence[SpaceRecord]
) -> dict[int, str]:
    """Check that every entry is routed exactly once to an eligible space.

    Args:
        plan: the :class:`MaintenancePlan`. answer: the planner's :class:`ArchiveRoutes`.
        destinations: the eligible spaces (:func:`eligible_destinations`).

    Returns:
        ``{plan index: space id}`` for every plan entry.

    Raises:
        InvalidInputError: a failed answer, a space that is not eligible, an index out of
            range, routed twice or not routed.

    Example:
        >>> validate_routes(plan, ArchiveRoutes(action="planned", routes=[
        ...     {"source_indexes": [1], "memory_body_id": "default"}]), spaces_ok)
        {1: 'default'}
    """
    if answer.action != "planned":
        raise InvalidInputError(f"the planner reported failure: {answer.summary or 'no reason'}")
    allowed = {d.id for d in destinations}
    count = len(plan.entries)
    mapping: dict[int, str] = {}
    for route in answer.routes:
        if route.space_id not in allowed:
            raise InvalidInputError(
                f"route names {route.space_id!r}, which is not an eligible Memory Space"
            )
        for index in route.source_indexes:
            if not 1 <= index <= count:
                raise InvalidInputError(f"route cites source index {index}, outside 1..{count}")
            if index in mapping:
                raise InvalidInputError(f"source index {index} is routed twice")
            mapping[index] = route.space_id
    missing = sorted(set(range(1, count + 1)) - set(mapping))
    if missing:
        raise InvalidInputError(f"source indexes {missing} have no route")
    return mapping


def write_entries(
    spaces: MemorySpaces, plan: MaintenancePlan, routes: Mapping[int, str]
) -> ArchiveWrites:
    """Write each routed entry verbatim, as an automatic ``memory_spaces`` write.

    A receipt that is not committed (except a skipped duplicate that an exact keyword recall in
    the same space confirms) or a failing provider makes that space's step ``failed``; its
    entries get no copy, so the commit keeps them locally (``runtime/archived/``) when they leave
    hot memory. Nothing raises: the steps say what happened.

    Returns:
        :class:`ArchiveWrites`: the durable copies by plan index and one step per space.

    Example:
        >>> write_entries(mem.spaces, plan, {1: "default"}).outcome
        'succeeded'
    """
    by_space: dict[str, list[int]] = {}
    for index, space_id in sorted(routes.items()):
        by_space.setdefault(space_id, []).append(index)
    copies: dict[int, str] = {}
    steps = []
    with acting("automatic"):
        for space_id, indexes in by_space.items():
            done, step = _write_space(spaces, plan, space_id, indexes)
            copies.update(done)
            steps.append(step)
    return ArchiveWrites(copies=copies, steps=tuple(steps))


def _write_space(
    spaces: MemorySpaces, plan: MaintenancePlan, space_id: str, indexes: list[int]
) -> tuple[dict[int, str], StepOutcome]:
    items = [
        {
            "content": plan.entries[i - 1].content,
            "category": "context",
            "importance": IMPORTANCE_LEVELS[plan.entries[i - 1].importance],
            "tags": ["runtime-memory", "archived"],
            "source": "agent",
            "metadata": {"archived_from": "MEMORY.md", "revision": plan.revision},
        }
        for i in indexes
    ]
    try:
        receipts = spaces.remember_many(items, space_id=space_id)
    except MnemonError as exc:
        message = f"archiving into {space_id} failed: {exc}"
        return {}, StepOutcome(target=space_id, status="failed", message=message)
    copies: dict[int, str] = {}
    missed: list[str] = []
    for index, receipt in zip(indexes, receipts, strict=True):
        copy = durable_copy(spaces, space_id, plan.entries[index - 1].content, receipt)
        if copy is None:
            missed.append(f"entry {index} ({receipt.status}: {receipt.message})")
        else:
            copies[index] = copy
    ids = tuple(copies.values())
    if missed:
        message = f"not committed in {space_id}: {'; '.join(missed)}"
        return copies, StepOutcome(target=space_id, status="failed", message=message, ids=ids)
    message = f"{len(ids)} entries archived into {space_id}"
    return copies, StepOutcome(target=space_id, status="committed", message=message, ids=ids)


def stored_contents(plan: MaintenancePlan, copies: Mapping[int, str]) -> set[str]:
    """The texts of plan entries that have a durable copy in a Memory Space.

    Example:
        >>> stored_contents(plan, writes.copies)  # pass as stored_elsewhere=
        {'Deploys go through CI.'}
    """
    return {plan.entries[i - 1].content for i in copies}


def maintenance_receipt(
    receipt: RuntimeReceipt, steps: Sequence[StepOutcome] = ()
) -> RuntimeReceipt:
    """``receipt`` with the destination ``steps``, a step for the local archive (when it took
    entries) and the ``outcome`` they make; a partial outcome is said in the message too.

    Returns:
        A copy of ``receipt`` (``receipt`` itself when there is no step at all).

    Example:
        >>> maintenance_receipt(receipt, writes.steps).outcome
        'succeeded'
    """
    all_steps = list(steps)
    if receipt.archived_locally:
        all_steps.append(
            StepOutcome(
                target=LOCAL_ARCHIVE,
                status="committed",
                message=f"{receipt.archived_locally} left-out entries kept in {LOCAL_ARCHIVE}/",
            )
        )
    if not all_steps:
        return receipt
    outcome = outcome_of(all_steps)
    message = receipt.message
    failed = [s for s in all_steps if s.status != "committed"]
    if failed:
        said = "; ".join(s.message or f"{s.target}: {s.status}" for s in failed)
        message = (
            f"{message} Archival was {outcome}: {said}. Entries without a copy in a Memory "
            f"Space that left hot memory are kept in {LOCAL_ARCHIVE}/."
        )
    update = {"steps": tuple(all_steps), "outcome": outcome, "message": message}
    return receipt.model_copy(update=update)


def hot_candidates(plan: MaintenancePlan) -> list[CompactedEntry]:
    """The original entries, verbatim, for importance-first packing into the budget.

    Example:
        >>> rm.compact_and_mutate(plan.revision, request, hot_candidates(plan)).committed
        True
    """
    return [
        CompactedEntry(content=e.content, importance=e.importance, branches=e.branches)
        for e in plan.entries
    ]
