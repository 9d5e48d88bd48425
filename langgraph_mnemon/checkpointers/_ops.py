"""Checkpointer operations as functions over one open connection (one transaction each).

``MnemosSaver`` calls them inside ``Database.read()`` / ``write()``; ``AsyncMnemosSaver`` runs
the very same functions through ``AsyncConnection.run_sync``. They return raw rows; decoding
with the serde happens in the saver, outside the transaction.

Concurrency: SQLite write transactions are exclusive (``BEGIN IMMEDIATE``). On PostgreSQL a put
holds a shared advisory lock on its thread and every operation that deletes elements (delete,
prune, delete_for_runs, copy) an exclusive one, so a put never references an element that a
concurrent prune is collecting.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from langgraph_mnemon.checkpointers._encoding import (
    ITEMS_TYPE,
    BlobValue,
    ItemCache,
    entries,
    pack_entries,
)
from langgraph_mnemon.checkpointers._sql import (
    CHECKPOINT_COLUMNS,
    PG_GET_LATEST,
    PG_GET_ONE,
    Cursor,
    Statements,
)
from langgraph_mnemon.errors import ConflictError, InvalidInputError, MnemonError
from langgraph_mnemon.memory_layers.mnemos import store
from langgraph_mnemon.memory_layers.mnemos.schema import (
    CHECKPOINT_NODES,
    LG_BLOBS,
    LG_CHECKPOINTS,
    LG_ITEMS,
    LG_WRITES,
    NODES,
)

# advisory_lock_id: the same lock key as advisory_lock, sent inside put's pipeline.
from langgraph_mnemon.storage.db import advisory_lock, advisory_lock_id

__all__ = [
    "DeltaPruneError",
    "ListQuery",
    "PutRequest",
    "RawTuple",
    "copy_thread",
    "delete_for_runs",
    "delete_thread",
    "get_raw",
    "json_equal",
    "list_page",
    "prune",
    "put",
    "put_writes",
    "put_writes_single",
]

_LOCK_SCOPE = "mnemon-lg-thread"
_BATCH = 400
_DIRECT_INSERTS = 4
_PG_SHARED_LOCK = "SELECT pg_advisory_xact_lock_shared(%s)"


class DeltaPruneError(MnemonError, NotImplementedError):
    """``prune(strategy="keep_latest")`` refused threads that use a ``DeltaChannel``.

    Their channel state is rebuilt from the writes of older checkpoints, so dropping those
    would silently corrupt it. Nothing was deleted.
    """

    code = "delta-prune-refused"


@dataclass(slots=True)
class PutRequest:
    """Everything one ``put`` writes, encoded."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    task_id: str
    run_id: str | None
    uses_delta: bool
    skeleton: dict[str, Any]
    metadata: dict[str, Any]
    blobs: list[BlobValue]
    node: dict[str, Any]
    created_at: float = field(default_factory=time.time)
    inserted: list[tuple[int, bytes, str, bytes]] = field(default_factory=list)


@dataclass(slots=True)
class RawTuple:
    """One stored checkpoint with its blobs, elements and writes, not decoded yet."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    skeleton: dict[str, Any]
    metadata: dict[str, Any]
    blobs: dict[str, tuple[str, bytes | None]] = field(default_factory=dict)
    items: Mapping[int, tuple[str, bytes]] = field(default_factory=dict)
    writes: list[tuple[str, str, int, str, str, bytes | None]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ListQuery:
    """The filters of ``list``: address, metadata equality, ``before`` and a keyset cursor."""

    thread_id: str | None = None
    checkpoint_ns: str | None = None
    checkpoint_id: str | None = None
    metadata: Mapping[str, Any] | None = None
    before: str | None = None


def _batches(values: Sequence[Any], size: int = _BATCH) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


# --------------------------------------------------------------------------------------------
# put / put_writes


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _store_items(
    cur: Cursor, st: Statements, req: PutRequest, value: BlobValue, ids: dict[bytes, int]
) -> None:
    """Resolve the element ids of a list value, inserting the elements the thread lacks, and
    set the value's blob to its entries."""
    base = cur.one(
        st.select_base_items, (req.thread_id, req.checkpoint_ns, value.channel, ITEMS_TYPE)
    )
    if base is not None:
        for item_id, digest in entries(base[0]):
            ids.setdefault(digest, item_id)
    missing = list({i.digest: i for i in value.items if i.digest not in ids}.values())
    if missing:
        if len(missing) > _DIRECT_INSERTS:
            # Many unknown elements (a fork, a new namespace): look up those the thread has.
            for batch in _batches(missing):
                sql, params = st.item_ids(req.thread_id, [i.digest for i in batch])
                for digest, item_id in cur.all(sql, params):
                    ids[bytes(digest)] = item_id
        for item in missing:
            if item.digest in ids:
                continue
            typ, data = item.stored()
            row = cur.one(st.insert_item, (req.thread_id, item.digest, typ, data))
            if row is None:  # inserted meanwhile by a concurrent put of the same thread
                row = cur.one(st.select_item_id, (req.thread_id, item.digest))
            else:
                req.inserted.append((row[0], item.digest, typ, data))
            ids[item.digest] = row[0]
    value.blob = pack_entries((ids[i.digest], i.digest) for i in value.items)


def put(conn: Connection, st: Statements, req: PutRequest) -> None:
    """Store a checkpoint, the blobs of its changed channels, new list elements and its
    CheckpointNode, atomically (on PostgreSQL pipelined: a round trip for the thread lock and
    the base list, one per new element, one for the rest)."""
    req.inserted.clear()  # a batch that was rolled back runs the put again
    with Cursor(conn, pipeline=True) as cur:
        if st.dialect == "postgresql":
            # The shared lock of the thread (delete / prune take it exclusively), queued with
            # the statements after it rather than a round trip of its own.
            cur.run(_PG_SHARED_LOCK, (advisory_lock_id(_LOCK_SCOPE, req.thread_id),))
        ids: dict[bytes, int] = {}
        for value in req.blobs:
            if value.type == ITEMS_TYPE:
                _store_items(cur, st, req, value, ids)
        cur.many(
            st.upsert_blob,
            [
                (req.thread_id, req.checkpoint_ns, b.channel, b.version, b.type, b.blob)
                for b in req.blobs
            ],
        )
        cur.run(
            st.upsert_checkpoint,
            (
                req.thread_id,
                req.checkpoint_ns,
                req.checkpoint_id,
                req.parent_id,
                req.task_id,
                req.run_id,
                req.uses_delta,
                _dumps(req.skeleton),
                _dumps(req.metadata),
                req.created_at,
            ),
        )
        cur.run(st.upsert_node, st.node_row(req.node))


def put_writes(
    conn: Connection, st: Statements, rows: list[tuple[Any, ...]], replace: bool
) -> None:
    """Insert writes; ``replace`` upserts (used when every write is a special channel). On
    PostgreSQL the rows are pipelined with the transaction's BEGIN (one round trip)."""
    if not rows:
        return
    with Cursor(conn, pipeline=True) as cur:
        cur.many(st.upsert_write if replace else st.insert_write, rows)


def put_writes_single(
    conn: Connection, st: Statements, rows: list[tuple[Any, ...]], replace: bool
) -> None:
    """:func:`put_writes` as one multi-row statement, for an autocommit connection: atomic on
    its own, so it costs one round trip (no BEGIN / COMMIT)."""
    if not rows:
        return
    with Cursor(conn) as cur:
        cur.run(st.writes_rows(len(rows), replace), [v for row in rows for v in row])


# --------------------------------------------------------------------------------------------
# reads


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def _raw(row: Sequence[Any]) -> RawTuple:
    thread_id, ns, checkpoint_id, parent_id, skeleton, metadata = row
    return RawTuple(
        thread_id=thread_id,
        checkpoint_ns=ns,
        checkpoint_id=checkpoint_id,
        parent_id=parent_id,
        skeleton=_json(skeleton),
        metadata=_json(metadata),
    )


def _load(
    conn: Connection, st: Statements, tuples: list[RawTuple], cache: ItemCache | None = None
) -> list[RawTuple]:
    """Attach blobs, list elements and writes to ``tuples`` with a few batched queries
    (elements found in ``cache`` are not fetched again)."""
    if not tuples:
        return tuples
    cur = Cursor(conn)
    try:
        wanted: dict[tuple[str, str, str, str], list[RawTuple]] = defaultdict(list)
        for t in tuples:
            for channel, version in (t.skeleton.get("channel_versions") or {}).items():
                wanted[(t.thread_id, t.checkpoint_ns, channel, str(version))].append(t)
        wanted_ids: dict[int, bytes] = {}
        keys = list(wanted)
        for batch in _batches(keys, 100):
            params = [part for key in batch for part in key]
            for thread_id, ns, channel, version, typ, blob in cur.all(
                st.blobs_for(len(batch)), params
            ):
                data = bytes(blob) if blob is not None else None
                for t in wanted.get((thread_id, ns, channel, version), ()):
                    t.blobs[channel] = (typ, data)
                if typ == ITEMS_TYPE:
                    wanted_ids.update(entries(data))
        items, missing = cache.lookup(wanted_ids) if cache else ({}, list(wanted_ids))
        fetched = []
        for id_batch in _batches(sorted(missing), 512):
            sql, params = st.items_by_id(list(id_batch))
            for item_id, typ, data in cur.all(sql, params):
                items[item_id] = (typ, bytes(data))
                fetched.append((item_id, wanted_ids[item_id], typ, items[item_id][1]))
        if cache is not None and fetched:
            cache.add(fetched)
        for t in tuples:
            t.items = items
        by_key = {(t.thread_id, t.checkpoint_ns, t.checkpoint_id): t for t in tuples}
        if len(by_key) == 1:
            (only,) = by_key
            rows = cur.all(st.select_writes_one, only)
        else:
            rows = []
            groups: dict[tuple[str, str], list[str]] = defaultdict(list)
            for thread_id, ns, checkpoint_id in by_key:
                groups[(thread_id, ns)].append(checkpoint_id)
            for (thread_id, ns), ids in groups.items():
                for batch in _batches(ids):
                    rows.extend(cur.all(st.writes_for(len(batch)), [thread_id, ns, *batch]))
        for thread_id, ns, checkpoint_id, task_id, task_path, idx, channel, typ, value in rows:
            owner = by_key.get((thread_id, ns, checkpoint_id))
            if owner is not None:
                owner.writes.append((task_id, task_path, idx, channel, typ, value))
    finally:
        cur.close()
    return tuples


def _get_raw_postgres(
    conn: Connection, thread_id: str, ns: str, checkpoint_id: str | None
) -> RawTuple | None:
    cur = Cursor(conn)
    try:
        params = {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}
        rows = cur.all(PG_GET_ONE if checkpoint_id else PG_GET_LATEST, params)
    finally:
        cur.close()
    head = next((r for r in rows if r[0] == 0), None)
    if head is None:
        return None
    raw = _raw(head[1:7])
    items: dict[int, tuple[str, bytes]] = {}
    for kind, a, b, c, d, _e, _f, data, num in rows:
        if kind == 1:
            raw.blobs[a] = (c, bytes(data) if data is not None else None)
        elif kind == 2:
            items[int(num)] = (c, bytes(data))
        elif kind == 3:
            raw.writes.append((a, b, int(num), d, c, bytes(data) if data is not None else None))
    raw.items = items
    return raw


def get_raw(
    conn: Connection,
    st: Statements,
    thread_id: str,
    ns: str,
    checkpoint_id: str | None,
    cache: ItemCache | None = None,
) -> RawTuple | None:
    """The addressed checkpoint (or the latest of the thread and namespace), loaded."""
    if st.dialect == "postgresql":
        return _get_raw_postgres(conn, thread_id, ns, checkpoint_id)
    cur = Cursor(conn)
    try:
        if checkpoint_id:
            row = cur.one(st.select_one, (thread_id, ns, checkpoint_id))
        else:
            row = cur.one(st.select_latest, (thread_id, ns))
    finally:
        cur.close()
    if row is None:
        return None
    return _load(conn, st, [_raw(row)], cache)[0]


def _json_path(key: str) -> str:
    return '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _metadata_prefilter(dialect: str, filters: Mapping[str, Any]) -> list[Any]:
    """SQL conditions that every row matching ``filters`` satisfies (never stricter)."""
    column = LG_CHECKPOINTS.c.metadata
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import JSONB  # deferred: PostgreSQL only

        doc = json.dumps(dict(filters), ensure_ascii=False)
        return [column.op("@>")(sa.cast(sa.literal(doc, sa.Text), JSONB))]
    conditions = []
    for key, value in filters.items():
        path = _json_path(key)
        if value is None:
            conditions.append(sa.func.json_type(column, path) == "null")
        elif isinstance(value, bool):
            conditions.append(sa.func.json_extract(column, path) == int(value))
        elif isinstance(value, (str, int, float)):
            conditions.append(sa.func.json_extract(column, path) == value)
        else:
            conditions.append(sa.func.json_type(column, path).is_not(None))
    return conditions


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values (``True`` is not ``1``; tuples equal lists)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def list_page(
    conn: Connection,
    st: Statements,
    query: ListQuery,
    after: tuple[str, str, str] | None,
    size: int,
    cache: ItemCache | None = None,
) -> list[RawTuple]:
    """One page of checkpoints, newest first; ``after`` is the last key of the previous page."""
    cp = LG_CHECKPOINTS.c
    stmt = sa.select(*CHECKPOINT_COLUMNS)
    if query.thread_id is not None:
        stmt = stmt.where(cp.thread_id == query.thread_id)
    if query.checkpoint_ns is not None:
        stmt = stmt.where(cp.checkpoint_ns == query.checkpoint_ns)
    if query.checkpoint_id is not None:
        stmt = stmt.where(cp.checkpoint_id == query.checkpoint_id)
    if query.before is not None:
        stmt = stmt.where(cp.checkpoint_id < query.before)
    if query.metadata:
        stmt = stmt.where(*_metadata_prefilter(st.dialect, query.metadata))
    if after is not None:
        stmt = stmt.where(
            sa.tuple_(cp.checkpoint_id, cp.thread_id, cp.checkpoint_ns) < sa.tuple_(*after)
        )
    stmt = stmt.order_by(
        cp.checkpoint_id.desc(), cp.thread_id.desc(), cp.checkpoint_ns.desc()
    ).limit(size)
    rows = [_raw(tuple(r)) for r in conn.execute(stmt)]
    return _load(conn, st, rows, cache)


# --------------------------------------------------------------------------------------------
# deletion, garbage collection, copy, prune


def _lock_threads(conn: Connection, thread_ids: Iterable[str]) -> None:
    for thread_id in sorted(set(thread_ids)):
        advisory_lock(conn, _LOCK_SCOPE, thread_id)


def _delete_checkpoint_rows(conn: Connection, thread_id: str) -> None:
    for table in (LG_CHECKPOINTS, LG_BLOBS, LG_ITEMS, LG_WRITES):
        conn.execute(sa.delete(table).where(table.c.thread_id == thread_id))
    conn.execute(sa.delete(CHECKPOINT_NODES).where(CHECKPOINT_NODES.c.thread_id == thread_id))


def delete_thread(conn: Connection, thread_id: str) -> None:
    """Delete every checkpoint, blob, element, write and CheckpointNode of a thread, and the
    Mnemos task memory of the task named like the thread."""
    _lock_threads(conn, [thread_id])
    _delete_checkpoint_rows(conn, thread_id)
    store.delete_task(conn, thread_id)


def _delete_checkpoints(
    conn: Connection, thread_id: str, ns: str, checkpoint_ids: Sequence[str]
) -> None:
    for batch in _batches(list(checkpoint_ids)):
        for table in (LG_WRITES, LG_CHECKPOINTS, CHECKPOINT_NODES):
            conn.execute(
                sa.delete(table).where(
                    table.c.thread_id == thread_id,
                    table.c.checkpoint_ns == ns,
                    table.c.checkpoint_id.in_(list(batch)),
                )
            )


def _collect_blobs(conn: Connection, thread_id: str, ns: str) -> None:
    """Delete the blobs of ``(thread, ns)`` that no remaining checkpoint references."""
    referenced: set[tuple[str, str]] = set()
    for (skeleton,) in conn.execute(
        sa.select(LG_CHECKPOINTS.c.checkpoint).where(
            LG_CHECKPOINTS.c.thread_id == thread_id, LG_CHECKPOINTS.c.checkpoint_ns == ns
        )
    ):
        for channel, version in (skeleton.get("channel_versions") or {}).items():
            referenced.add((channel, str(version)))
    stored = conn.execute(
        sa.select(LG_BLOBS.c.channel, LG_BLOBS.c.version).where(
            LG_BLOBS.c.thread_id == thread_id, LG_BLOBS.c.checkpoint_ns == ns
        )
    ).all()
    garbage = [(c, v) for c, v in stored if (c, v) not in referenced]
    for batch in _batches(garbage):
        conn.execute(
            sa.delete(LG_BLOBS).where(
                LG_BLOBS.c.thread_id == thread_id,
                LG_BLOBS.c.checkpoint_ns == ns,
                sa.tuple_(LG_BLOBS.c.channel, LG_BLOBS.c.version).in_(list(batch)),
            )
        )


def _collect_items(conn: Connection, thread_id: str) -> None:
    """Delete the list elements of a thread that no remaining blob references."""
    referenced: set[int] = set()
    for (blob,) in conn.execute(
        sa.select(LG_BLOBS.c.blob).where(
            LG_BLOBS.c.thread_id == thread_id, LG_BLOBS.c.type == ITEMS_TYPE
        )
    ):
        referenced.update(item_id for item_id, _ in entries(blob))
    stored = [
        int(i)
        for (i,) in conn.execute(sa.select(LG_ITEMS.c.id).where(LG_ITEMS.c.thread_id == thread_id))
    ]
    garbage = [i for i in stored if i not in referenced]
    for batch in _batches(garbage):
        conn.execute(sa.delete(LG_ITEMS).where(LG_ITEMS.c.id.in_(list(batch))))


def delete_for_runs(conn: Connection, run_ids: Sequence[str]) -> None:
    """Delete the checkpoints (and their writes and CheckpointNodes) of the given runs."""
    doomed: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for batch in _batches(list(run_ids)):
        for thread_id, ns, checkpoint_id in conn.execute(
            sa.select(
                LG_CHECKPOINTS.c.thread_id,
                LG_CHECKPOINTS.c.checkpoint_ns,
                LG_CHECKPOINTS.c.checkpoint_id,
            ).where(LG_CHECKPOINTS.c.run_id.in_(list(batch)))
        ):
            doomed[thread_id][ns].append(checkpoint_id)
    _lock_threads(conn, doomed)
    for thread_id, namespaces in doomed.items():
        for ns, ids in namespaces.items():
            _delete_checkpoints(conn, thread_id, ns, ids)
            _collect_blobs(conn, thread_id, ns)
        _collect_items(conn, thread_id)


def copy_thread(conn: Connection, dialect: str, source: str, target: str) -> int:
    """Copy every checkpoint (the whole parent chain, all namespaces), blob, element, write
    and CheckpointNode of ``source`` to ``target``; returns the checkpoints copied.

    The copy belongs to task ``target`` when the source belonged to task ``source`` (and then
    the task's nodes are copied too, unless ``target`` already has nodes); a custom task id is
    kept. Raises :class:`ConflictError` when ``target`` already has checkpoints.
    """
    _lock_threads(conn, [source, target])
    _refuse_existing_target(conn, source, target)
    count = conn.execute(
        sa.select(sa.func.count()).where(LG_CHECKPOINTS.c.thread_id == source)
    ).scalar_one()
    if not count:
        return 0
    _copy_plain_rows(conn, source, target)
    _copy_list_blobs(conn, source, target)
    _copy_checkpoint_rows(conn, source, target)
    _copy_checkpoint_nodes(conn, source, target)
    _copy_task_memory(conn, source, target)
    return int(count)


def _refuse_existing_target(conn: Connection, source: str, target: str) -> None:
    exists = conn.execute(
        sa.select(LG_CHECKPOINTS.c.checkpoint_id)
        .where(LG_CHECKPOINTS.c.thread_id == target)
        .limit(1)
    ).first()
    if exists is not None:
        raise ConflictError(
            f"cannot copy thread {source!r} to {target!r}: the target already has checkpoints; "
            "delete it first or pick a new thread id"
        )


def _copy_plain_rows(conn: Connection, source: str, target: str) -> None:
    """Writes, list elements (with new ids) and non-list blobs, copied server-side."""
    target_literal = sa.literal(target, sa.Text)
    for table, skip in (
        (LG_WRITES, ()),
        (LG_ITEMS, ("id",)),
        (LG_BLOBS, ()),
    ):
        columns = [c for c in table.columns if c.name != "thread_id" and c.name not in skip]
        query = sa.select(target_literal, *columns).where(table.c.thread_id == source)
        if table is LG_BLOBS:
            query = query.where(table.c.type != ITEMS_TYPE)
        conn.execute(sa.insert(table).from_select(["thread_id", *(c.name for c in columns)], query))


def _copy_list_blobs(conn: Connection, source: str, target: str) -> None:
    """List blobs name element ids: rewrite them to the ids of the copied elements."""
    new_ids = dict(
        conn.execute(
            sa.select(LG_ITEMS.c.digest, LG_ITEMS.c.id).where(LG_ITEMS.c.thread_id == target)
        ).all()
    )
    new_ids = {bytes(d): i for d, i in new_ids.items()}
    lists = conn.execute(
        sa.select(LG_BLOBS).where(LG_BLOBS.c.thread_id == source, LG_BLOBS.c.type == ITEMS_TYPE)
    ).all()
    if lists:
        conn.execute(
            sa.insert(LG_BLOBS),
            [
                {
                    "thread_id": target,
                    "checkpoint_ns": row.checkpoint_ns,
                    "channel": row.channel,
                    "version": row.version,
                    "type": row.type,
                    "blob": pack_entries((new_ids[d], d) for _, d in entries(row.blob)),
                }
                for row in lists
            ],
        )


def _copy_checkpoint_rows(conn: Connection, source: str, target: str) -> None:
    """The checkpoints; those of task ``source`` move to task ``target``."""
    target_literal = sa.literal(target, sa.Text)
    cp = LG_CHECKPOINTS.c
    others = [c for c in LG_CHECKPOINTS.columns if c.name not in ("thread_id", "task_id")]
    task = sa.case((cp.task_id == source, target_literal), else_=cp.task_id)
    conn.execute(
        sa.insert(LG_CHECKPOINTS).from_select(
            ["thread_id", "task_id", *(c.name for c in others)],
            sa.select(target_literal, task, *others).where(cp.thread_id == source),
        )
    )


def _copy_checkpoint_nodes(conn: Connection, source: str, target: str) -> None:
    """The CheckpointNodes of ``source`` under new ids, in their original order."""
    nodes = conn.execute(
        sa.select(CHECKPOINT_NODES)
        .where(CHECKPOINT_NODES.c.thread_id == source)
        .order_by(CHECKPOINT_NODES.c.seq)
    ).all()
    copies = []
    for row in nodes:
        data = dict(row._mapping)
        data.pop("seq")
        data.update(
            id=store.new_id(),
            thread_id=target,
            task_id=target if row.task_id == source else row.task_id,
        )
        copies.append(data)
    if copies:
        conn.execute(sa.insert(CHECKPOINT_NODES), copies)


def _copy_task_memory(conn: Connection, source: str, target: str) -> None:
    """When ``source`` owned its task: copy the task's nodes, unless ``target`` has some."""
    cp = LG_CHECKPOINTS.c
    owns_task = conn.execute(
        sa.select(cp.checkpoint_id).where(cp.thread_id == source, cp.task_id == source).limit(1)
    ).first()
    if owns_task is not None:
        has_nodes = conn.execute(
            sa.select(NODES.c.id).where(NODES.c.task_id == target).limit(1)
        ).first()
        if has_nodes is None:
            store.copy_task(conn, source, target)


def _refuse_delta(conn: Connection, thread_ids: Sequence[str]) -> None:
    delta = set()
    for batch in _batches(list(thread_ids)):
        delta.update(
            r[0]
            for r in conn.execute(
                sa.select(LG_CHECKPOINTS.c.thread_id)
                .where(LG_CHECKPOINTS.c.thread_id.in_(list(batch)), LG_CHECKPOINTS.c.uses_delta)
                .distinct()
            )
        )
    if delta:
        raise DeltaPruneError(
            "keep_latest can't prune thread(s) that use a DeltaChannel: "
            f"{', '.join(sorted(delta))}. Their state is rebuilt from older checkpoints; "
            "prune them with strategy='delete' or leave them as they are. Nothing was deleted"
        )


def _keep_latest(conn: Connection, thread_id: str) -> None:
    cp = LG_CHECKPOINTS.c
    heads = dict(
        conn.execute(
            sa.select(cp.checkpoint_ns, sa.func.max(cp.checkpoint_id))
            .where(cp.thread_id == thread_id)
            .group_by(cp.checkpoint_ns)
        ).all()
    )
    if not heads:
        return
    root_head = heads.get("")
    root_ids = {
        r[0]
        for r in conn.execute(
            sa.select(cp.checkpoint_id).where(cp.thread_id == thread_id, cp.checkpoint_ns == "")
        )
    }
    # A subgraph *call* ("node:task-id") goes with the root checkpoint it ran under: when
    # that root checkpoint is being pruned, the whole call namespace goes too.
    dropped: list[str] = []
    for ns, head in heads.items():
        if ns == "" or ":" not in ns:
            continue
        metadata = conn.execute(
            sa.select(cp.metadata).where(
                cp.thread_id == thread_id, cp.checkpoint_ns == ns, cp.checkpoint_id == head
            )
        ).scalar()
        parents = (metadata or {}).get("parents") if isinstance(metadata, dict) else None
        root = parents.get("") if isinstance(parents, dict) else None
        if root and root in root_ids and root != root_head:
            dropped.append(ns)
    for ns in dropped:
        for table in (LG_CHECKPOINTS, LG_BLOBS, LG_WRITES, CHECKPOINT_NODES):
            conn.execute(
                sa.delete(table).where(table.c.thread_id == thread_id, table.c.checkpoint_ns == ns)
            )
    for ns, head in heads.items():
        if ns in dropped:
            continue
        unkept = [
            r[0]
            for r in conn.execute(
                sa.select(cp.checkpoint_id).where(
                    cp.thread_id == thread_id, cp.checkpoint_ns == ns, cp.checkpoint_id != head
                )
            )
        ]
        if not unkept:
            continue
        _delete_checkpoints(conn, thread_id, ns, unkept)
        conn.execute(
            sa.update(LG_CHECKPOINTS)
            .where(cp.thread_id == thread_id, cp.checkpoint_ns == ns, cp.checkpoint_id == head)
            .values(parent_checkpoint_id=None)
        )
        _collect_blobs(conn, thread_id, ns)
    _collect_items(conn, thread_id)


def prune(conn: Connection, thread_ids: Sequence[str], strategy: str) -> None:
    """``keep_latest``: keep the newest checkpoint per namespace (with its writes); ``delete``
    (or ``delete_all``): remove every checkpoint. Mnemos task memory is kept either way."""
    if strategy not in ("keep_latest", "delete", "delete_all"):
        raise InvalidInputError(
            f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'"
        )
    threads = sorted(set(thread_ids))
    if not threads:
        return
    _lock_threads(conn, threads)
    if strategy == "keep_latest":
        _refuse_delta(conn, threads)
        for thread_id in threads:
            _keep_latest(conn, thread_id)
    else:
        for thread_id in threads:
            _delete_checkpoint_rows(conn, thread_id)
