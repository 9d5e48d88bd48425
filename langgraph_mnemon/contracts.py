"""Pydantic models shared across layers: receipts, usage, common enumerations."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["Importance", "Receipt", "ReceiptStatus", "Usage"]

ReceiptStatus = Literal["committed", "skipped", "rejected", "failed"]
"""Only ``committed`` means the write happened; everything else means nothing was stored."""

Importance = Literal["critical", "normal", "low"]


class Usage(BaseModel):
    """Bytes used against a limit (UTF-8 bytes)."""

    model_config = ConfigDict(frozen=True)

    used: int
    limit: int


class Receipt(BaseModel):
    """What a mutation did. A write exists only after a receipt with ``status="committed"``.

    ``changed`` is false for a committed no-op (for example adding an entry that already exists).
    """

    model_config = ConfigDict(frozen=True)

    status: ReceiptStatus
    message: str
    changed: bool
    revision: str

    @property
    def committed(self) -> bool:
        return self.status == "committed"
