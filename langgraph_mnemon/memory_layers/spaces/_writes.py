"""Writes to Memory Spaces and what they did: receipts of one space's writes, merges, proof.

The host decides whether a write happened from the provider's raw receipt
(:func:`~._models.is_committed`), never from a success flag alone: committed (the space is
activated by its first committed write), pending (accepted for later processing: not a write
yet, ``status="skipped"``) or failed. A provider that raises gives a ``failed`` receipt; the
caller's own mistakes and the local disk's refusals are raised as they are.

Merging native spaces (:func:`merge`) copies one source at a time into the target (one step
each); a source whose copy committed is deactivated afterwards when asked (its rows now live in
the target), a source whose copy failed stays active so its rows keep taking part in recall.
The receipt carries one :class:`StepOutcome` per copy and per deactivation, and ``outcome``
(``succeeded``, ``partial`` or ``failed``): a merge where one source failed is ``partial``,
never a success.

Example:
    >>> receipt = mem.spaces.merge_spaces("target", ["a", "b"])
    >>> receipt.outcome, [s.target for s in receipt.steps]
    ('succeeded', ['copy:a', 'copy:b', 'deactivate:a', 'deactivate:b'])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langgraph_mnemon.contracts import StepOutcome, outcome_of
from langgraph_mnemon.errors import (
    AuthorityError,
    InvalidInputError,
    MnemonError,
    NotFoundError,
    ProviderError,
    ReadOnlyError,
    StorageError,
)
from langgraph_mnemon.memory_layers.spaces._catalog import SpaceCatalog
from langgraph_mnemon.memory_layers.spaces._health import redact
from langgraph_mnemon.memory_layers.spaces._models import (
    MemoryProvider,
    MemoryReceipt,
    RememberItem,
    SpaceBinding,
    is_committed,
    is_pending,
    settle,
)
from langgraph_mnemon.memory_layers.spaces._records import SpaceReceipt, SpaceRecord
from langgraph_mnemon.memory_layers.spaces._registry import ProviderRegistry

__all__ = [
    "NOT_PROVIDER_FAILURES",
    "Activator",
    "failed",
    "merge",
    "receipt",
    "write_many",
    "write_one",
]


NOT_PROVIDER_FAILURES = (
    InvalidInputError,
    NotFoundError,
    ReadOnlyError,
    StorageError,
    AuthorityError,
)
"""Raised as they are by writes: the caller's mistake, the local disk or a refusal of the host
(a space's stored location it may not use), not a provider's failure (which becomes a
``failed`` receipt)."""

Activator = Callable[[str], bool]
"""Marks a space active after its first committed write; whether it changed."""


def write_one(
    record: SpaceRecord,
    action: str,
    call: Callable[[], Any],
    activate: Activator,
    *,
    object_id: str | None = None,
    raises: tuple[type[Exception], ...] = (),
) -> MemoryReceipt:
    """Run one provider write (``call``) and classify its raw receipt; ``raises`` are more
    errors raised as they are (a refusal the operation documents, such as a conflict)."""
    try:
        raw = call()
    except (*NOT_PROVIDER_FAILURES, *raises):
        raise
    except Exception as exc:
        return failed(record, action, exc)
    return receipt(record, raw, action, activate, object_id=object_id)


def write_many(
    record: SpaceRecord,
    provider: MemoryProvider,
    binding: SpaceBinding,
    items: Sequence[RememberItem],
    activate: Activator,
) -> list[MemoryReceipt]:
    """One provider call for every item; one receipt per item, in order."""
    try:
        raws = settle(provider.remember_many(binding, items))
    except NOT_PROVIDER_FAILURES:
        raise
    except Exception as exc:
        return [failed(record, "remember", exc) for _ in items]
    receipts = []
    for raw in raws:
        one = receipt(record, raw, "remember", activate)
        if one.activated:  # the later items must not activate it again
            record = record.model_copy(update={"active": True})
        receipts.append(one)
    return receipts


def receipt(
    record: SpaceRecord,
    raw: Any,
    action: str,
    activate: Activator,
    *,
    object_id: str | None = None,
) -> MemoryReceipt:
    """The receipt for a provider's raw answer ``raw`` to ``action`` on ``record``."""
    raw_dict = dict(raw) if isinstance(raw, Mapping) else {"value": repr(raw)[:200]}
    rid = object_id or (str(raw_dict["id"]) if raw_dict.get("id") is not None else None)
    if is_committed(raw_dict):
        activated = False
        if not record.active:
            activated = activate(record.id)
        return _committed(record, raw_dict, action, rid, activated)
    if is_pending(raw_dict):
        return MemoryReceipt(
            status="skipped",
            message=(
                f"The provider accepted the {action} for later processing; it is not a "
                "committed write yet."
            ),
            changed=False,
            revision=rid or "",
            space_id=record.id,
            id=rid,
            completion="pending",
            provider_receipt=raw_dict,
        )
    return MemoryReceipt(
        status="failed",
        message=f"The provider did not commit the {action}; nothing was stored.",
        changed=False,
        revision=rid or "",
        space_id=record.id,
        id=rid,
        completion="none",
        provider_receipt=raw_dict,
    )


def _committed(
    record: SpaceRecord, raw: dict[str, Any], action: str, rid: str | None, activated: bool
) -> MemoryReceipt:
    duplicate = bool(raw.get("duplicate"))
    unchanged = bool(raw.get("unchanged"))  # e.g. a restore of a live row: nothing to do
    if unchanged:
        message = f"Already current in {record.id!r}; nothing changed."
    elif duplicate:
        message = f"Already stored in {record.id!r}."
    else:
        message = f"{action.capitalize()} committed in {record.id!r}."
    return MemoryReceipt(
        status="committed",
        message=message,
        changed=not (duplicate or unchanged),
        revision=rid or "",
        space_id=record.id,
        id=rid,
        completion="committed",
        activated=activated,
        provider_receipt=raw,
    )


def failed(record: SpaceRecord, action: str, exc: Exception) -> MemoryReceipt:
    """The receipt of a provider call that raised: nothing was stored."""
    message = " ".join(str(exc).split())[:300] or type(exc).__name__
    return MemoryReceipt(
        status="failed",
        message=f"{action.capitalize()} failed in {record.id!r}: {message}",
        changed=False,
        revision="",
        space_id=record.id,
        completion="none",
    )


def _checked_spaces(
    catalog: SpaceCatalog, target_space_id: str, source_ids: Sequence[str], native_id: str
) -> tuple[SpaceRecord, list[SpaceRecord]]:
    target = catalog.get_space(target_space_id)
    sources = [catalog.get_space(s) for s in dict.fromkeys(source_ids)]
    if any(s.id == target.id for s in sources):
        raise InvalidInputError("a space cannot be merged into itself")
    for record in (target, *sources):
        if record.provider_id != native_id:
            raise ProviderError(
                f"merge works only between native ({native_id}) spaces; "
                f"{record.id!r} uses {record.provider_id!r}",
                code="unsupported",
            )
    return target, sources


def merge(
    catalog: SpaceCatalog,
    registry: ProviderRegistry,
    target_space_id: str,
    source_ids: Sequence[str],
    *,
    deactivate_sources: bool,
    native_id: str,
) -> SpaceReceipt:
    """Copy every source into the target, then deactivate the copied sources (if asked).

    The caller has asked the kernel and validated the arguments. Raises for what is wrong
    before any copy (unknown ids, a non-native space, merging a space into itself).
    """
    target, sources = _checked_spaces(catalog, target_space_id, source_ids, native_id)
    copy = getattr(registry.require(native_id), "merge", None)
    if copy is None:
        raise ProviderError("the registered native provider cannot merge", code="unsupported")
    bound = catalog.binding(target)
    steps: list[StepOutcome] = []
    totals = {"imported": 0, "skipped_duplicates": 0}
    for source in sources:
        steps.append(_copy(copy, bound, catalog.binding(source), totals))
    if totals["imported"]:
        catalog.activate(target.id)
    if deactivate_sources:
        for source, step in zip(sources, list(steps), strict=True):
            if step.status == "committed":
                steps.append(_deactivate(catalog, source))
    return _receipt(catalog, target, sources, steps, totals)


def _copy(copy: Any, target: Any, source: Any, totals: dict[str, int]) -> StepOutcome:
    name = f"copy:{source.id}"
    try:
        raw = settle(copy(target, [source]))
    except Exception as exc:  # one failing source must not hide the ones already copied
        return StepOutcome(target=name, status="failed", message=redact(str(exc)))
    if not is_committed(raw):
        return StepOutcome(target=name, status="failed", message="the copy was not committed")
    imported = int(raw.get("imported", 0))
    skipped = int(raw.get("skipped_duplicates", 0))
    totals["imported"] += imported
    totals["skipped_duplicates"] += skipped
    return StepOutcome(
        target=name,
        status="committed",
        message=f"{imported} imported, {skipped} duplicates skipped",
    )


def _deactivate(catalog: SpaceCatalog, source: SpaceRecord) -> StepOutcome:
    name = f"deactivate:{source.id}"
    try:
        catalog.update_space(source.id, None, None, False)
    except MnemonError as exc:
        return StepOutcome(target=name, status="failed", message=redact(exc.message))
    return StepOutcome(target=name, status="committed", ids=(source.id,))


def _message(outcome: str, target: SpaceRecord, failed: list[str], totals: dict[str, int]) -> str:
    done = (
        f"Imported {totals['imported']} memories into {target.id!r} "
        f"({totals['skipped_duplicates']} duplicates skipped); sources kept."
    )
    if outcome == "failed":
        return "The merge was not committed; nothing changed. Failed: " + ", ".join(failed)
    if outcome == "partial":
        return f"Partly merged: {done} Failed steps: {', '.join(failed)}; retry them."
    return done


def _receipt(
    catalog: SpaceCatalog,
    target: SpaceRecord,
    sources: list[SpaceRecord],
    steps: list[StepOutcome],
    totals: dict[str, int],
) -> SpaceReceipt:
    outcome = outcome_of(steps)
    failed = [s.target for s in steps if s.status != "committed"]
    final = catalog.get_space(target.id)
    return SpaceReceipt(
        status="failed" if outcome == "failed" else "committed",
        message=_message(outcome, target, failed, totals),
        changed=totals["imported"] > 0
        or any(s.target.startswith("deactivate:") for s in steps if s.status == "committed"),
        revision=str(final.revision),
        space=final,
        spaces=[catalog.get_space(s.id) for s in sources],
        provider_receipt={"status": "merged", "id": target.id, **totals},
        outcome=outcome,
        steps=tuple(steps),
    )
