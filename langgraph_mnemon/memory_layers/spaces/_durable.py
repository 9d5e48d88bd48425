"""Proof that a text is stored in a Memory Space: the receipt, or an exact keyword recall."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langgraph_mnemon.errors import MnemonError

if TYPE_CHECKING:
    from langgraph_mnemon.memory_layers.spaces._models import MemoryReceipt
    from langgraph_mnemon.memory_layers.spaces._service import MemorySpaces

__all__ = ["durable_copy"]


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
