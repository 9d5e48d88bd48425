"""Writes to one Memory Space (remember, link, forget) and the receipts they return.

The host decides whether a write happened from the provider's raw receipt
(:func:`~._models.is_committed`), never from a success flag alone: committed (the space is
activated by its first committed write), pending (accepted for later processing: not a write
yet, ``status="skipped"``) or failed. A provider that raises gives a ``failed`` receipt; the
caller's own mistakes and the local disk's refusals are raised as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langgraph_mnemon.errors import (
    AuthorityError,
    InvalidInputError,
    NotFoundError,
    ReadOnlyError,
    StorageError,
)
from langgraph_mnemon.memory_layers.spaces._models import (
    MemoryProvider,
    MemoryReceipt,
    RememberItem,
    SpaceBinding,
    is_committed,
    is_pending,
    settle,
)
from langgraph_mnemon.memory_layers.spaces._records import SpaceRecord

__all__ = ["NOT_PROVIDER_FAILURES", "Activator", "failed", "receipt", "write_many", "write_one"]

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
) -> MemoryReceipt:
    """Run one provider write (``call``) and classify its raw receipt."""
    try:
        raw = call()
    except NOT_PROVIDER_FAILURES:
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
    return MemoryReceipt(
        status="committed",
        message=(
            f"Already stored in {record.id!r}."
            if duplicate
            else f"{action.capitalize()} committed in {record.id!r}."
        ),
        changed=not duplicate,
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
