"""The Mnemos node graph: checking a new node, and the node operations inside a transaction.

:class:`~._service.Mnemos` checks the input (:func:`new_node`) before any I/O, opens the write
transaction and calls one function here; nothing here commits or asks the kernel.

Example:
    >>> node = new_node("goal", "Ship the reset flow", workspace=None)
    >>> with db.write() as conn:
    ...     stored = insert_node(conn, "task-1", node, new_id(), moment=time.time())
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.mnemos._checks import (
    MAX_TAG_CHARS,
    MAX_TAGS,
    check_content,
    check_node_type,
    check_origin,
    check_unit,
    string_list,
)
from langgraph_mnemon.memory_layers.mnemos._models import MnemoNode
from langgraph_mnemon.memory_layers.mnemos._resume import compress_summary
from langgraph_mnemon.memory_layers.mnemos._scope import merge_tags, scope_tags_for_path
from langgraph_mnemon.memory_layers.mnemos.schema import NODE_LINKS, NODES
from langgraph_mnemon.memory_layers.mnemos.store import (
    fetch_node,
    resolve_node_id,
)

__all__ = [
    "DerivedNode",
    "NewNode",
    "compress_node",
    "evict_node",
    "insert_derived",
    "insert_node",
    "link_nodes",
    "mark_compressed",
    "mark_evicted",
    "new_node",
    "rewrite_derived",
    "touch_node",
]

Clock = Callable[[], float]
_MAX_PATHS = 64
_MAX_PATH_CHARS = 1024
_MAX_LINKS = 64


@dataclass(frozen=True, slots=True)
class NewNode:
    """A checked node, ready to insert (``links`` are ids or prefixes, resolved on insert)."""

    type: str
    content: str
    summary: str | None = None
    origin: str = "agent_generated"
    confidence: float = 1.0
    scope_tags: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)


def new_node(
    type: Any,
    content: Any,
    *,
    workspace: Path | None,
    scope: Sequence[str] | None = None,
    paths: Sequence[str] | None = None,
    summary: Any = None,
    origin: Any = "agent_generated",
    confidence: Any = 1.0,
    links: Sequence[str] = (),
) -> NewNode:
    """Check what ``add_node`` was given (in the order its errors have always been reported).

    ``scope`` gives scope tags directly; ``paths`` adds the parent directories of each path
    (relative to ``workspace``); at most 16 tags are kept.
    """
    kind = check_node_type(type)
    text = check_content(content)
    tags = _scope_tags(scope, paths, workspace)
    note = check_content(summary, "summary") if summary is not None else None
    source = check_origin(origin)
    trust = check_unit(confidence, "confidence")
    refs = string_list(links, "links", max_items=_MAX_LINKS, max_chars=64)
    return NewNode(kind, text, note, source, trust, tags, refs)


def _scope_tags(
    scope: Sequence[str] | None, paths: Sequence[str] | None, workspace: Path | None
) -> list[str]:
    tags = string_list(scope, "scope", max_items=MAX_TAGS, max_chars=MAX_TAG_CHARS)
    path_list = string_list(paths, "paths", max_items=_MAX_PATHS, max_chars=_MAX_PATH_CHARS)
    for path in path_list:
        tags = merge_tags(tags, scope_tags_for_path(path, workspace))
    return tags[:MAX_TAGS]


def insert_node(
    conn: sa.Connection, task: str, node: NewNode, node_id: str, *, moment: float
) -> MnemoNode:
    """Insert ``node`` (its links resolved first: a bad reference inserts nothing)."""
    targets = [resolve_node_id(conn, ref) for ref in node.links]
    conn.execute(
        sa.insert(NODES).values(
            id=node_id,
            task_id=task,
            type=node.type,
            content=node.content,
            summary=node.summary,
            weight=1.0,
            status="active",
            origin=node.origin,
            confidence=node.confidence,
            scope_tags=node.scope_tags,
            created_at=moment,
            last_accessed=moment,
            access_count=0,
        )
    )
    for target in dict.fromkeys(targets):
        conn.execute(
            sa.insert(NODE_LINKS).values(
                source_id=node_id, target_id=target, link_type="related", created_at=moment
            )
        )
    return _fetched(conn, node_id)


@dataclass(slots=True)
class DerivedNode:
    """One node derivation works on: a stored row it read, or a node it is about to insert.

    Derivation changes these in memory and writes them back in one statement per kind
    (:func:`insert_derived`, :func:`rewrite_derived`).
    """

    id: str
    type: str
    key: str | None
    content: str
    origin: str = "derived"
    status: str = "active"
    summary: str | None = None
    scope_tags: list[str] = field(default_factory=list)
    order: float = 0.0  # seq for a stored row; after every stored row for a new one
    created_at: float = 0.0
    last_accessed: float = 0.0
    weight: float = 1.0
    access_count: int = 0
    new: bool = False
    dirty: bool = False


def insert_derived(conn: sa.Connection, task: str, nodes: Sequence[DerivedNode]) -> None:
    """Insert derived nodes (origin and ``derived_key`` as given) in ONE executemany."""
    if not nodes:
        return
    conn.execute(
        sa.insert(NODES),
        [
            {
                "id": n.id,
                "task_id": task,
                "type": n.type,
                "content": n.content,
                "summary": n.summary,
                "weight": n.weight,
                "status": n.status,
                "origin": n.origin,
                "confidence": 1.0,
                "scope_tags": list(n.scope_tags),
                "created_at": n.created_at,
                "last_accessed": n.last_accessed,
                "access_count": n.access_count,
                "derived_key": n.key,
            }
            for n in nodes
        ],
    )


def rewrite_derived(conn: sa.Connection, nodes: Sequence[DerivedNode]) -> None:
    """Write changed derived nodes back in place (content, summary, status, key, tags, access)
    in ONE executemany; ids, type, origin and creation time never change."""
    if not nodes:
        return
    stmt = (
        sa.update(NODES)
        .where(NODES.c.id == sa.bindparam("b_id"))
        .values(
            content=sa.bindparam("b_content"),
            summary=sa.bindparam("b_summary"),
            status=sa.bindparam("b_status"),
            derived_key=sa.bindparam("b_key"),
            scope_tags=sa.bindparam("b_tags"),
            last_accessed=sa.bindparam("b_accessed"),
            weight=sa.bindparam("b_weight"),
            access_count=sa.bindparam("b_count"),
        )
    )
    conn.execute(
        stmt,
        [
            {
                "b_id": n.id,
                "b_content": n.content,
                "b_summary": n.summary,
                "b_status": n.status,
                "b_key": n.key,
                "b_tags": list(n.scope_tags),
                "b_accessed": n.last_accessed,
                "b_weight": n.weight,
                "b_count": n.access_count,
            }
            for n in nodes
        ],
    )


def touch_node(conn: sa.Connection, ref: str, clock: Clock) -> MnemoNode:
    """Weight back to 1.0, one more access, last access now."""
    node_id = resolve_node_id(conn, ref)
    conn.execute(
        sa.update(NODES)
        .where(NODES.c.id == node_id)
        .values(weight=1.0, access_count=NODES.c.access_count + 1, last_accessed=clock())
    )
    return _fetched(conn, node_id)


def link_nodes(
    conn: sa.Connection, source_ref: str, target_ref: str, link_type: str, clock: Clock
) -> None:
    """Link two nodes unless that link exists (a node never links to itself)."""
    source = resolve_node_id(conn, source_ref)
    target = resolve_node_id(conn, target_ref)
    if source == target:
        raise InvalidInputError("a node cannot link to itself")
    exists = conn.execute(
        sa.select(NODE_LINKS.c.source_id).where(
            NODE_LINKS.c.source_id == source, NODE_LINKS.c.target_id == target
        )
    ).first()
    if exists is None:
        conn.execute(
            sa.insert(NODE_LINKS).values(
                source_id=source, target_id=target, link_type=link_type, created_at=clock()
            )
        )


def compress_node(conn: sa.Connection, ref: str, note: str | None) -> MnemoNode:
    """Compress an active node that may be compressed (see :func:`mark_compressed`)."""
    node = _fetched(conn, resolve_node_id(conn, ref))
    if node.status != "active":
        raise InvalidInputError(
            f"cannot compress node {node.id[:8]}: it is {node.status}, not active"
        )
    if node.eviction_policy == "never":
        raise InvalidInputError(f"{node.type} nodes are never compressed (node {node.id[:8]})")
    mark_compressed(conn, node, note)
    return _fetched(conn, node.id)


def evict_node(conn: sa.Connection, ref: str) -> MnemoNode:
    """Evict a node that may be evicted; an evicted node comes back unchanged."""
    node = _fetched(conn, resolve_node_id(conn, ref))
    if node.status == "evicted":
        return node
    if node.eviction_policy == "never":
        raise InvalidInputError(f"{node.type} nodes are never evicted (node {node.id[:8]})")
    mark_evicted(conn, node.id)
    return _fetched(conn, node.id)


def mark_compressed(conn: sa.Connection, node: MnemoNode, note: str | None) -> None:
    """Keep ``note`` (or the first 200 characters) as the summary and clear the content."""
    conn.execute(
        sa.update(NODES)
        .where(NODES.c.id == node.id)
        .values(
            status="compressed",
            summary=note or compress_summary(node.content, node.summary),
            content="",
        )
    )


def mark_evicted(conn: sa.Connection, node_id: str) -> None:
    """Drop a node's content and summary (status ``evicted``)."""
    conn.execute(
        sa.update(NODES)
        .where(NODES.c.id == node_id)
        .values(status="evicted", content="", summary=None)
    )


def _fetched(conn: sa.Connection, node_id: str) -> MnemoNode:
    node = fetch_node(conn, node_id)
    assert node is not None
    return node
