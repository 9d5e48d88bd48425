"""SQL operations of the Mnemos store, as functions over an open connection.

:class:`~._service.Mnemos` calls them inside its transactions; the checkpointer calls the
CheckpointNode and task functions inside its own, so a LangGraph checkpoint and its
CheckpointNode commit together. Nothing here validates caller input (the service does).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Collection, Iterable, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from langgraph_mnemon.errors import AmbiguousMatchError, NotFoundError
from langgraph_mnemon.memory_layers.mnemos._models import (
    DECAY_EXEMPT_TYPES,
    CheckpointRecord,
    ContextWindow,
    FatigueReading,
    MnemoNode,
    NodeSummary,
    TaskSummary,
)
from langgraph_mnemon.memory_layers.mnemos.fatigue import ToolCall
from langgraph_mnemon.memory_layers.mnemos.schema import (
    CHECKPOINT_NODES,
    FATIGUE_LOG,
    NODE_LINKS,
    NODES,
    SIGNALS,
)
from langgraph_mnemon.storage.db import Migration, create_tables, insert_ignore, upsert

__all__ = [
    "OWNER_MIGRATIONS",
    "TASK_OWNERS",
    "checkpoint_node_values",
    "claim_owner",
    "copy_task",
    "count_checkpoints",
    "decay_weights",
    "delete_task",
    "fetch_derivation_rows",
    "fetch_node",
    "fetch_nodes",
    "fetch_signals",
    "insert_checkpoint_node",
    "insert_fatigue",
    "latest_checkpoint",
    "latest_usage",
    "list_checkpoints",
    "list_fatigue",
    "new_id",
    "node_summary",
    "owned_task_ids",
    "resolve_node_id",
    "task_ids",
    "to_datetime",
    "tool_window",
    "trim_checkpoints",
    "upsert_langgraph_checkpoint_node",
]

_IN_BATCH = 500


def new_id() -> str:
    """A new node / checkpoint id (32 hex characters)."""
    return uuid.uuid4().hex


def to_datetime(stamp: float) -> datetime:
    """A UNIX timestamp as an aware UTC datetime."""
    return datetime.fromtimestamp(stamp, tz=UTC)


def _batches(values: Sequence[Any], size: int = _IN_BATCH) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


# --------------------------------------------------------------------------------------------
# Nodes


def _node(row: Any, links: Sequence[str] = ()) -> MnemoNode:
    return MnemoNode(
        id=row.id,
        task_id=row.task_id,
        type=row.type,
        content=row.content,
        summary=row.summary,
        weight=row.weight,
        status=row.status,
        origin=row.origin,
        confidence=row.confidence,
        scope_tags=tuple(row.scope_tags or ()),
        created_at=to_datetime(row.created_at),
        last_accessed=to_datetime(row.last_accessed),
        access_count=row.access_count,
        links=tuple(links),
    )


def _links_of(conn: Connection, ids: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for batch in _batches(list(ids)):
        rows = conn.execute(
            sa.select(NODE_LINKS.c.source_id, NODE_LINKS.c.target_id)
            .where(NODE_LINKS.c.source_id.in_(batch))
            .order_by(NODE_LINKS.c.created_at)
        )
        for source, target in rows:
            out.setdefault(source, []).append(target)
    return out


def fetch_nodes(
    conn: Connection,
    *,
    task_id: str | None = None,
    types: Sequence[str] | None = None,
    statuses: Sequence[str] | None = ("active",),
    order: str = "seq",
    limit: int | None = None,
) -> list[MnemoNode]:
    """Nodes filtered by task / types / statuses, oldest first (``order="seq"``) or heaviest
    first (``order="weight"``)."""
    stmt = sa.select(NODES)
    if task_id is not None:
        stmt = stmt.where(NODES.c.task_id == task_id)
    if types:
        stmt = stmt.where(NODES.c.type.in_(list(types)))
    if statuses:
        stmt = stmt.where(NODES.c.status.in_(list(statuses)))
    if order == "weight":
        stmt = stmt.order_by(NODES.c.weight.desc(), NODES.c.seq.desc())
    else:
        stmt = stmt.order_by(NODES.c.seq)
    if limit is not None:
        stmt = stmt.limit(limit)
    rows = conn.execute(stmt).all()
    links = _links_of(conn, [r.id for r in rows]) if rows else {}
    return [_node(r, links.get(r.id, ())) for r in rows]


def fetch_node(conn: Connection, node_id: str) -> MnemoNode | None:
    """One node with its outgoing links, or ``None``."""
    row = conn.execute(sa.select(NODES).where(NODES.c.id == node_id)).first()
    if row is None:
        return None
    return _node(row, _links_of(conn, [node_id]).get(node_id, ()))


def fetch_derivation_rows(
    conn: Connection,
    task_id: str,
    narrow: tuple[Collection[str], Collection[str]] | None = None,
    resources: Sequence[str] = (),
) -> list[Any]:
    """What derivation compares against, in ONE query: every node of the task with a
    ``derived_key`` (any status), plus its active goals and constraints of any origin.

    ``narrow`` (``(types, keys)``): a pass over the new part of a list reads only nodes of
    these types: the active ones, and the retired ones with one of ``keys`` or with a context
    key of one of ``resources`` (the ``context:<resource hash>:`` prefixes it read), so its
    cost does not grow with what a long task has retired.

    Rows (oldest first) carry ``id, type, status, origin, content, summary, derived_key,
    scope_tags, seq, created_at, last_accessed, weight, access_count``; no links.
    """
    if narrow is None:
        return list(conn.execute(_derivation_statement(False), {"task": task_id}).all())
    types, keys = narrow
    params = {
        "task": task_id,
        "types": sorted(types),
        "keys": sorted(keys),
        "resources": sorted(resources),
    }
    return list(conn.execute(_derivation_statement(True), params).all())


_CONTEXT_PREFIX = 33  # "context:" + 24 hex + ":" (``_derive._derive_contexts``)


@functools.cache
def _derivation_statement(narrow: bool) -> Any:
    """The query of :func:`fetch_derivation_rows` (built once; the parameters vary)."""
    cols = [
        NODES.c.id,
        NODES.c.type,
        NODES.c.status,
        NODES.c.origin,
        NODES.c.content,
        NODES.c.summary,
        NODES.c.derived_key,
        NODES.c.scope_tags,
        NODES.c.seq,
        NODES.c.created_at,
        NODES.c.last_accessed,
        NODES.c.weight,
        NODES.c.access_count,
    ]
    active = NODES.c.status == "active"
    wanted = sa.or_(
        NODES.c.derived_key.is_not(None),
        sa.and_(active, NODES.c.type.in_(["goal", "constraint"])),
    )
    if narrow:
        prefix = sa.func.substr(NODES.c.derived_key, 1, _CONTEXT_PREFIX)
        wanted = sa.and_(
            NODES.c.type.in_(sa.bindparam("types", expanding=True)),
            sa.or_(
                sa.and_(
                    active,
                    sa.or_(
                        NODES.c.derived_key.is_not(None),
                        NODES.c.type.in_(["goal", "constraint"]),
                    ),
                ),
                NODES.c.derived_key.in_(sa.bindparam("keys", expanding=True)),
                prefix.in_(sa.bindparam("resources", expanding=True)),
            ),
        )
    task = NODES.c.task_id == sa.bindparam("task")
    return sa.select(*cols).where(task, wanted).order_by(NODES.c.seq)


def resolve_node_id(conn: Connection, ref: str) -> str:
    """An exact node id, or the one node whose id starts with ``ref``."""
    if conn.execute(sa.select(NODES.c.id).where(NODES.c.id == ref)).first() is not None:
        return ref
    escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    rows = conn.execute(
        sa.select(NODES.c.id).where(NODES.c.id.like(escaped + "%", escape="\\")).limit(2)
    ).all()
    if not rows:
        raise NotFoundError(f"no Mnemos node with id {ref!r}; list ids with `mnemon mnemos nodes`")
    if len(rows) > 1:
        raise AmbiguousMatchError(
            f"node id prefix {ref!r} matches several nodes; give more characters"
        )
    return str(rows[0].id)


def node_summary(conn: Connection, task_id: str) -> NodeSummary:
    """Counts by status, and active nodes by type (CheckpointNodes are not graph nodes)."""
    rows = conn.execute(
        sa.select(NODES.c.status, NODES.c.type, sa.func.count())
        .where(NODES.c.task_id == task_id)
        .group_by(NODES.c.status, NODES.c.type)
    ).all()
    by_status: dict[str, int] = {}
    by_type: dict[str, int] = {}
    for status, node_type, count in rows:
        by_status[status] = by_status.get(status, 0) + count
        if status == "active":
            by_type[node_type] = by_type.get(node_type, 0) + count
    return NodeSummary(
        total=sum(by_status.values()),
        active=by_status.get("active", 0),
        compressed=by_status.get("compressed", 0),
        evicted=by_status.get("evicted", 0),
        by_type=by_type,
    )


def decay_weights(conn: Connection, task_id: str, factor: float, floor: float = 0.01) -> int:
    """weight ← max(floor, weight × factor) for the task's active, non-exempt nodes."""
    scaled = NODES.c.weight * factor
    result = conn.execute(
        sa.update(NODES)
        .where(
            NODES.c.task_id == task_id,
            NODES.c.status == "active",
            NODES.c.type.not_in(sorted(DECAY_EXEMPT_TYPES)),
        )
        .values(weight=sa.case((scaled < floor, floor), else_=scaled))
    )
    return int(result.rowcount or 0)


def _task_union() -> Any:
    return sa.union(
        sa.select(NODES.c.task_id),
        sa.select(CHECKPOINT_NODES.c.task_id),
        sa.select(SIGNALS.c.task_id),
    ).subquery()


def task_ids(conn: Connection) -> list[str]:
    """Every task that has nodes, CheckpointNodes or signals, sorted."""
    union = _task_union()
    return sorted(str(r[0]) for r in conn.execute(sa.select(union.c[0])))


def delete_task(conn: Connection, task_id: str) -> None:
    """Remove a task's nodes, links, signals, fatigue log and native CheckpointNodes."""
    ids = sa.select(NODES.c.id).where(NODES.c.task_id == task_id).scalar_subquery()
    conn.execute(
        sa.delete(NODE_LINKS).where(
            sa.or_(NODE_LINKS.c.source_id.in_(ids), NODE_LINKS.c.target_id.in_(ids))
        )
    )
    conn.execute(sa.delete(NODES).where(NODES.c.task_id == task_id))
    conn.execute(sa.delete(SIGNALS).where(SIGNALS.c.task_id == task_id))
    conn.execute(sa.delete(FATIGUE_LOG).where(FATIGUE_LOG.c.task_id == task_id))
    conn.execute(
        sa.delete(CHECKPOINT_NODES).where(
            CHECKPOINT_NODES.c.task_id == task_id, CHECKPOINT_NODES.c.source == "mnemos"
        )
    )


def copy_task(conn: Connection, source: str, target: str) -> int:
    """Copy a task's nodes (new ids, links remapped) and native CheckpointNodes to ``target``.

    Returns the number of nodes copied. LangGraph CheckpointNodes are copied by the
    checkpointer together with their checkpoints.
    """
    rows = conn.execute(
        sa.select(NODES).where(NODES.c.task_id == source).order_by(NODES.c.seq)
    ).all()
    mapping = {r.id: new_id() for r in rows}
    if rows:
        values = []
        for r in rows:
            data = dict(r._mapping)
            data.pop("seq")
            data.update(id=mapping[r.id], task_id=target)
            values.append(data)
        conn.execute(sa.insert(NODES), values)
        links = conn.execute(
            sa.select(NODE_LINKS).where(NODE_LINKS.c.source_id.in_(list(mapping)))
        ).all()
        remapped = [
            {
                "source_id": mapping[link.source_id],
                "target_id": mapping.get(link.target_id, link.target_id),
                "link_type": link.link_type,
                "created_at": link.created_at,
            }
            for link in links
        ]
        if remapped:
            conn.execute(sa.insert(NODE_LINKS), remapped)
    native = conn.execute(
        sa.select(CHECKPOINT_NODES)
        .where(CHECKPOINT_NODES.c.task_id == source, CHECKPOINT_NODES.c.source == "mnemos")
        .order_by(CHECKPOINT_NODES.c.seq)
    ).all()
    if native:
        copies = []
        for r in native:
            data = dict(r._mapping)
            data.pop("seq")
            data.update(id=new_id(), task_id=target)
            copies.append(data)
        conn.execute(sa.insert(CHECKPOINT_NODES), copies)
    return len(rows)


# --------------------------------------------------------------------------------------------
# Task owners: which user a task (a LangGraph thread) belongs to

_OWNER_METADATA = sa.MetaData()

TASK_OWNERS = sa.Table(
    "mnemos_task_owners",
    _OWNER_METADATA,
    sa.Column("task_id", sa.Text, primary_key=True),
    # An owner key such as "user:alice" (contracts.Scope.user_key); no row = the local user's.
    sa.Column("owner", sa.Text, nullable=False),
    sa.Column("claimed_at", sa.Float, nullable=False),
    sa.Index("ix_mnemos_task_owners_owner", "owner"),
)


def _create_owners_v1(conn: Connection) -> None:
    create_tables(conn, (TASK_OWNERS,))


OWNER_MIGRATIONS: tuple[Migration, ...] = (
    Migration("mnemos_owners", 1, "The owner (a user key) of each Mnemos task", _create_owners_v1),
)
"""Schema steps of the task-owner table (a component of its own: tasks have no table)."""


def claim_owner(conn: Connection, task_id: str, owner: str, moment: float) -> str:
    """Record ``owner`` for ``task_id`` unless it has one; return the owner now recorded."""
    conn.execute(
        insert_ignore(conn.dialect.name, TASK_OWNERS, ["task_id"]).values(
            task_id=task_id, owner=owner, claimed_at=moment
        )
    )
    recorded = conn.execute(
        sa.select(TASK_OWNERS.c.owner).where(TASK_OWNERS.c.task_id == task_id)
    ).scalar_one()
    return str(recorded)


def owned_task_ids(conn: Connection, owner: str, *, unowned: bool) -> list[str]:
    """Tasks (with nodes, CheckpointNodes or signals) recorded for ``owner``, sorted; with
    ``unowned`` also the tasks no owner ever claimed."""
    union = _task_union()
    task = union.c[0]
    wanted = TASK_OWNERS.c.owner == owner
    if unowned:
        wanted = sa.or_(wanted, TASK_OWNERS.c.owner.is_(None))
    query = (
        sa.select(task)
        .select_from(union.outerjoin(TASK_OWNERS, TASK_OWNERS.c.task_id == task))
        .where(wanted)
    )
    return sorted(str(r[0]) for r in conn.execute(query))


# --------------------------------------------------------------------------------------------
# CheckpointNodes


def checkpoint_node_values(
    *,
    task_id: str,
    source: str,
    created_at: float,
    summary: TaskSummary | None,
    node_counts: NodeSummary | None = None,
    emergency: bool = False,
    fatigue_state: str | None = None,
    thread_id: str | None = None,
    checkpoint_ns: str | None = None,
    checkpoint_id: str | None = None,
    step: int | None = None,
) -> dict[str, Any]:
    """Column values of a CheckpointNode row (``summary=None`` writes a bare node)."""
    values: dict[str, Any] = {
        "id": new_id(),
        "task_id": task_id,
        "created_at": created_at,
        "source": source,
        "emergency": emergency,
        "thread_id": thread_id,
        "checkpoint_ns": checkpoint_ns,
        "checkpoint_id": checkpoint_id,
        "step": step,
        "fatigue": None,
        "fatigue_state": fatigue_state,
        "has_summary": summary is not None,
        "goal": None,
        "constraints": None,
        "results": None,
        "current_subgoal": None,
        "working_memory": None,
        "narrative": None,
        "recent_files": None,
        "git_state": None,
        "node_summary": node_counts.model_dump() if node_counts is not None else None,
    }
    if summary is not None:
        values.update(
            fatigue=summary.fatigue,
            goal=summary.goal,
            constraints=list(summary.constraints),
            results=list(summary.results),
            current_subgoal=summary.current_subgoal,
            working_memory=summary.working_memory,
            narrative=summary.narrative,
            recent_files=[f.model_dump() for f in summary.recent_files],
            git_state=summary.git_state.model_dump(mode="json") if summary.git_state else None,
        )
    return values


_NODE_UPDATE_COLUMNS = tuple(
    c.name
    for c in CHECKPOINT_NODES.columns
    if c.name not in ("seq", "id", "thread_id", "checkpoint_ns", "checkpoint_id")
)


def insert_checkpoint_node(conn: Connection, values: dict[str, Any]) -> None:
    """Insert a CheckpointNode row (values from :func:`checkpoint_node_values`)."""
    conn.execute(sa.insert(CHECKPOINT_NODES), values)


@cache
def _node_upsert(dialect: str) -> Any:
    return upsert(
        dialect,
        CHECKPOINT_NODES,
        ("thread_id", "checkpoint_ns", "checkpoint_id"),
        _NODE_UPDATE_COLUMNS,
    )


def upsert_langgraph_checkpoint_node(
    conn: Connection, dialect: str, values: dict[str, Any] | Sequence[dict[str, Any]]
) -> None:
    """Insert the CheckpointNode of a LangGraph checkpoint, replacing one stored before."""
    conn.execute(_node_upsert(dialect), values)


def _checkpoint(row: Any) -> CheckpointRecord:
    summary = TaskSummary()
    if row.has_summary:
        summary = TaskSummary.model_validate(
            {
                "goal": row.goal,
                "constraints": row.constraints or (),
                "results": row.results or (),
                "current_subgoal": row.current_subgoal,
                "working_memory": row.working_memory,
                "narrative": row.narrative,
                "recent_files": row.recent_files or (),
                "git_state": row.git_state,
                "fatigue": row.fatigue,
            }
        )
    return CheckpointRecord(
        id=row.id,
        task_id=row.task_id,
        created_at=to_datetime(row.created_at),
        source=row.source,
        emergency=bool(row.emergency),
        thread_id=row.thread_id,
        checkpoint_ns=row.checkpoint_ns,
        checkpoint_id=row.checkpoint_id,
        step=row.step,
        fatigue=row.fatigue,
        fatigue_state=row.fatigue_state,
        has_summary=bool(row.has_summary),
        summary=summary,
        node_summary=row.node_summary,
    )


def latest_checkpoint(
    conn: Connection, task_id: str, *, source: str | None = None, root_only: bool = True
) -> CheckpointRecord | None:
    """The newest CheckpointNode of a task (root-graph ones only when ``root_only``)."""
    stmt = sa.select(CHECKPOINT_NODES).where(CHECKPOINT_NODES.c.task_id == task_id)
    if source is not None:
        stmt = stmt.where(CHECKPOINT_NODES.c.source == source)
    if root_only:
        stmt = stmt.where(
            sa.or_(
                CHECKPOINT_NODES.c.checkpoint_ns.is_(None), CHECKPOINT_NODES.c.checkpoint_ns == ""
            )
        )
    row = conn.execute(stmt.order_by(CHECKPOINT_NODES.c.seq.desc()).limit(1)).first()
    return _checkpoint(row) if row is not None else None


def list_checkpoints(
    conn: Connection, task_id: str, limit: int, source: str | None = None
) -> list[CheckpointRecord]:
    """The newest CheckpointNodes of a task (of one ``source`` when given), newest first."""
    stmt = sa.select(CHECKPOINT_NODES).where(CHECKPOINT_NODES.c.task_id == task_id)
    if source is not None:
        stmt = stmt.where(CHECKPOINT_NODES.c.source == source)
    rows = conn.execute(stmt.order_by(CHECKPOINT_NODES.c.seq.desc()).limit(limit)).all()
    return [_checkpoint(r) for r in rows]


def trim_checkpoints(conn: Connection, task_id: str, keep: int) -> int:
    """Delete all but the newest ``keep`` native CheckpointNodes of a task; returns how many."""
    cutoff = conn.execute(
        sa.select(CHECKPOINT_NODES.c.seq)
        .where(CHECKPOINT_NODES.c.task_id == task_id, CHECKPOINT_NODES.c.source == "mnemos")
        .order_by(CHECKPOINT_NODES.c.seq.desc())
        .offset(keep)
        .limit(1)
    ).scalar()
    if cutoff is None:
        return 0
    result = conn.execute(
        sa.delete(CHECKPOINT_NODES).where(
            CHECKPOINT_NODES.c.task_id == task_id,
            CHECKPOINT_NODES.c.source == "mnemos",
            CHECKPOINT_NODES.c.seq <= cutoff,
        )
    )
    return int(result.rowcount or 0)


def count_checkpoints(conn: Connection, task_id: str) -> int:
    """How many CheckpointNodes a task has."""
    return int(
        conn.execute(
            sa.select(sa.func.count()).where(CHECKPOINT_NODES.c.task_id == task_id)
        ).scalar_one()
    )


# --------------------------------------------------------------------------------------------
# Signals and fatigue log


def tool_window(conn: Connection, task_id: str, size: int) -> list[ToolCall]:
    """The last ``size`` tool calls of a task, oldest first.

    A row's ``args_digest`` is the digest of its re-read key (``_signals.resource_key``), so
    it is also the call's :attr:`~.fatigue.ToolCall.resource`.
    """
    rows = conn.execute(_tool_window_statement(), {"task": task_id, "size": size}).all()
    return [
        ToolCall(
            name=r.tool_name or "",
            args_digest=r.args_digest,
            dir_key=r.dir_key,
            read_only=bool(r.read_only),
            status=r.status,
            resource=r.args_digest,
        )
        for r in reversed(rows)
    ]


@functools.cache
def _tool_window_statement() -> Any:
    return (
        sa.select(
            SIGNALS.c.tool_name,
            SIGNALS.c.args_digest,
            SIGNALS.c.dir_key,
            SIGNALS.c.read_only,
            SIGNALS.c.status,
        )
        .where(SIGNALS.c.task_id == sa.bindparam("task"), SIGNALS.c.kind == "tool")
        .order_by(SIGNALS.c.seq.desc())
        .limit(sa.bindparam("size"))
    )


def fetch_signals(conn: Connection, task_id: str, limit: int) -> list[Any]:
    """The last ``limit`` tool-call rows of a task, oldest first."""
    rows = conn.execute(
        sa.select(SIGNALS)
        .where(SIGNALS.c.task_id == task_id, SIGNALS.c.kind == "tool")
        .order_by(SIGNALS.c.seq.desc())
        .limit(limit)
    ).all()
    return list(reversed(rows))


class StoredUsage(NamedTuple):
    """A token reading as the signals table keeps it."""

    tokens: int | None
    context_window: int | None
    window_source: str | None
    estimated: bool


def latest_usage(conn: Connection, task_id: str) -> Any:
    """The newest token-usage signal of a task, or ``None``."""
    return conn.execute(
        sa.select(
            SIGNALS.c.tokens,
            SIGNALS.c.context_window,
            SIGNALS.c.window_source,
            SIGNALS.c.estimated,
        )
        .where(SIGNALS.c.task_id == task_id, SIGNALS.c.kind == "usage")
        .order_by(SIGNALS.c.seq.desc())
        .limit(1)
    ).first()


FATIGUE_KEPT = 1_000
"""Logged fatigue readings kept per task (Mnemos reads before every model call)."""
USAGE_KEPT = 100
"""Token readings kept per task: only the newest is read; a few more keep re-observed ids."""
_TRIM_EVERY = 64


def trim_oldest(conn: Connection, table: sa.Table, task_id: str, keep: int, *where: Any) -> int:
    """Delete all but the newest ``keep`` rows of ``task_id`` in ``table`` (matching ``where``).

    Returns:
        How many rows were deleted.
    """
    scope = (table.c.task_id == task_id, *where)
    cutoff = conn.execute(
        sa.select(table.c.seq).where(*scope).order_by(table.c.seq.desc()).offset(keep).limit(1)
    ).scalar()
    if cutoff is None:
        return 0
    return conn.execute(sa.delete(table).where(*scope, table.c.seq <= cutoff)).rowcount or 0


def trim_now(result: Any) -> bool:
    """Whether an insert's new ``seq`` is one that trims its log (every 64th: amortised)."""
    key = result.inserted_primary_key
    return bool(key) and trims_at(key[0])


def trims_at(seq: Any) -> bool:
    """Whether a new row's ``seq`` is one that trims its log (every 64th: amortised).

    Example:
        >>> trims_at(128), trims_at(129)
        (True, False)
    """
    return isinstance(seq, int) and seq % _TRIM_EVERY == 0


_FATIGUE_INSERT = sa.insert(FATIGUE_LOG)  # built once: the values are parameters


def insert_fatigue(conn: Connection, reading: FatigueReading) -> None:
    """Append a reading to the fatigue log (the newest :data:`FATIGUE_KEPT` per task stay)."""
    result = conn.execute(
        _FATIGUE_INSERT,
        {
            "task_id": reading.task_id,
            "token_utilization": reading.token_utilization,
            "scope_scatter": reading.scope_scatter,
            "reread_ratio": reading.reread_ratio,
            "error_density": reading.error_density,
            "composite": reading.composite,
            "state": reading.state,
            "tool_calls": reading.tool_calls,
            "tokens_estimated": reading.tokens_estimated,
            "computed_at": reading.computed_at.timestamp(),
            "tokens_used": reading.tokens_used,
            "context_window": reading.context_window,
            "window_source": reading.window_source,
        },
    )
    if trim_now(result):
        trim_oldest(conn, FATIGUE_LOG, reading.task_id, FATIGUE_KEPT)


def list_fatigue(
    conn: Connection, task_id: str, limit: int, fallback: ContextWindow
) -> list[FatigueReading]:
    """Logged readings of a task, newest first, each with the window it was measured against
    (``fallback`` for a reading logged before readings stored their window)."""
    rows = conn.execute(
        sa.select(FATIGUE_LOG)
        .where(FATIGUE_LOG.c.task_id == task_id)
        .order_by(FATIGUE_LOG.c.seq.desc())
        .limit(limit)
    ).all()
    return [
        FatigueReading(
            task_id=r.task_id,
            token_utilization=r.token_utilization,
            scope_scatter=r.scope_scatter,
            reread_ratio=r.reread_ratio,
            error_density=r.error_density,
            composite=r.composite,
            state=r.state,
            tool_calls=r.tool_calls,
            tokens_used=r.tokens_used,
            context_window=r.context_window or fallback.tokens,
            window_source=(r.window_source or "given") if r.context_window else fallback.source,
            tokens_estimated=bool(r.tokens_estimated),
            computed_at=to_datetime(r.computed_at),
        )
        for r in rows
    ]
