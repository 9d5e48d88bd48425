"""How Memory Spaces and their receipts look to the model: no config, paths or secrets."""

from __future__ import annotations

from typing import Any

from langgraph_mnemon.memory_layers.spaces import SpaceRecord

__all__ = ["memory_receipt", "space_item", "space_receipt"]


def space_item(record: SpaceRecord, reachable: bool | None = None) -> dict[str, Any]:
    """A Memory Space as the model sees it; ``reachable`` (the catalog) says whether its
    provider answers right now."""
    item: dict[str, Any] = {
        "id": record.id,
        "name": record.name[:120],
        "description": record.description[:500],
        "active": record.active,
        "provider": {"id": record.provider_id, "capabilities": record.capabilities},
    }
    if reachable is not None:
        item["reachable"] = reachable
    return item


def memory_receipt(receipt: Any) -> dict[str, Any]:
    """A link or forget receipt: what changed, where, and how far it completed."""
    return receipt.model_dump(
        mode="json", include={"status", "message", "changed", "space_id", "id", "completion"}
    )


def space_receipt(receipt: Any) -> dict[str, Any]:
    """A Memory Space create / update / merge receipt, with the space and the merged sources."""
    out: dict[str, Any] = {
        "status": receipt.status,
        "message": receipt.message,
        "changed": receipt.changed,
    }
    if receipt.space is not None:
        out["memoryBody"] = space_item(receipt.space)
    if receipt.spaces:
        out["sources"] = [space_item(r) for r in receipt.spaces]
    return out
