"""BaseStore facade over the Memory Spaces (being built)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..host import Mnemon


class MnemonStore:  # placeholder until the facade lands
    def __init__(self, host: Mnemon) -> None:
        self._host = host
