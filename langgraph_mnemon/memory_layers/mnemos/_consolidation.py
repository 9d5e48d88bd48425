"""Micro-consolidation of a task's node graph: compress the oldest active results, evict the
coldest eligible context node, decay the rest.

A context node is eligible when its weight is below ``evict_weight_below`` (0.2), it was
accessed fewer than ``evict_max_accesses`` (3) times and its scope tags do not overlap the
current scope (Jaccard 0). Without a given scope, the scope of the task's most recent
path-bearing tool calls is used; with no such calls every cold context node is eligible.

Example:
    >>> with db.write() as conn:
    ...     result = consolidate(conn, "task-1", config, scope=None)
    >>> result.compressed, result.evicted
    (3, 1)
"""

from __future__ import annotations

import sqlalchemy as sa

from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.memory_layers.mnemos._models import ConsolidationResult, MnemoNode
from langgraph_mnemon.memory_layers.mnemos._nodes import mark_compressed, mark_evicted
from langgraph_mnemon.memory_layers.mnemos._scope import jaccard, merge_tags, scope_tags_for_path
from langgraph_mnemon.memory_layers.mnemos.store import (
    decay_weights,
    fetch_nodes,
    fetch_signals,
)

__all__ = ["consolidate", "recent_scope"]

_SCOPE_SIGNALS = 20  # the tool calls looked at for the current scope ...
_SCOPE_PATHS = 5  # ... of which the last path-bearing ones count


def consolidate(
    conn: sa.Connection, task: str, config: MnemosConfig, *, scope: list[str] | None
) -> ConsolidationResult:
    """One consolidation pass inside the caller's write transaction (``scope`` None: the scope
    of the recent tool calls)."""
    current = scope if scope is not None else recent_scope(conn, task)
    results = fetch_nodes(conn, task_id=task, types=["result"], order="seq")
    compressed = results[: config.compress_batch]
    for node in compressed:
        mark_compressed(conn, node, None)
    evicted = _eviction_candidates(conn, task, config, current)[:1]
    for node in evicted:
        mark_evicted(conn, node.id)
    decayed = decay_weights(conn, task, config.decay_factor)
    return ConsolidationResult(
        compressed=len(compressed),
        evicted=len(evicted),
        decayed=decayed,
        compressed_ids=tuple(n.id for n in compressed),
        evicted_ids=tuple(n.id for n in evicted),
    )


def _eviction_candidates(
    conn: sa.Connection, task: str, config: MnemosConfig, current: list[str]
) -> list[MnemoNode]:
    """Eligible context nodes, coldest first: lowest weight, least recently used, oldest."""
    candidates = [
        n
        for n in fetch_nodes(conn, task_id=task, types=["context"])
        if n.weight < config.evict_weight_below
        and n.access_count < config.evict_max_accesses
        and (not current or jaccard(n.scope_tags, current) == 0.0)
    ]
    candidates.sort(key=lambda n: (n.weight, n.last_accessed, n.created_at))
    return candidates


def recent_scope(conn: sa.Connection, task: str) -> list[str]:
    """Scope tags of the task's last path-bearing tool calls."""
    rows = [r for r in fetch_signals(conn, task, _SCOPE_SIGNALS) if r.path]
    tags: list[str] = []
    for row in rows[-_SCOPE_PATHS:]:
        tags = merge_tags(tags, scope_tags_for_path(row.path))
    return tags
