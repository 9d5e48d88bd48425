"""Nodes from activity: goal, constraints, results, context and working nodes derived from a
run's messages without a model (placeholder until the derivation lands)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa

from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.memory_layers.messages import MessageText
from langgraph_mnemon.memory_layers.mnemos._models import DerivationResult

__all__ = ["derive_into"]


def derive_into(
    conn: sa.Connection,
    task: str,
    messages: Sequence[MessageText],
    config: MnemosConfig,
    *,
    workspace: Path | None,
    moment: float,
) -> DerivationResult:
    """Derive the task's nodes from ``messages`` inside the caller's write transaction."""
    return DerivationResult()
