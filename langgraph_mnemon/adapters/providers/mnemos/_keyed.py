"""Keyed items of the native provider: statements and step functions on a Connection.

A keyed item is a live row whose ``store_key`` column holds its key; the unique partial index
``(space_id, store_key) WHERE deleted_at IS NULL`` (schema step 2) makes a key lookup one
indexed statement whatever the space holds. A write replaces the live row of its key inside
the caller's transaction: the old row is forgotten (out of the keyword index, the term
statistics and the vectors) and the new one inserted through :func:`._write.insert`, so keyed
items keep their keyword-index entries, statistics, edges and vectors and stay in recall.
Replacing a key keeps its first write time in ``metadata["store_created_at"]``; writing the
same content and metadata again changes nothing. A write may name the text its row is indexed
by (keyword terms and vector; the store's index fields): ``None`` indexes the content.

A key that is a memory id (32 hex digits) with no keyed row finds the unkeyed row of that id:
rows written by other paths are addressed by their id.

A write with a time to live sets ``expires_at`` (``now + ttl``) and ``ttl_minutes`` (schema
step 3). Reads here take ``now`` and treat a row whose ``expires_at`` has passed as gone;
a write finds it, retires it and writes the key afresh (a new ``created_at``), and an
identical re-put of a live row only restarts its expiry. :func:`refresh` restarts the expiry
of rows a read returned, :func:`sweep` soft-deletes expired rows through the expiry index.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.pool import StaticPool

import langgraph_mnemon.adapters.providers.mnemos._write as _write
from langgraph_mnemon.adapters.providers.mnemos._sql import UNEXPIRED
from langgraph_mnemon.memory_layers.spaces import (
    Embedder,
    KeyedPut,
    KeyedRow,
    RememberItem,
    SpaceBinding,
    StaleSpace,
)
from langgraph_mnemon.memory_layers.spaces.schema import INSIGHTS, SPACES
from langgraph_mnemon.storage.db import Database, advisory_lock_id, database_errors, translate

__all__ = [
    "CREATED_KEY",
    "KeyedWrites",
    "StaleVectors",
    "current_rows",
    "expired",
    "expired_rows",
    "get_one",
    "keyed_row",
    "live_spaces",
    "needs_vectors",
    "page",
    "refresh",
    "refreshable",
    "rows_by_seq",
    "sweep",
    "vector_hints",
    "write_space",
]

CREATED_KEY = "store_created_at"
"""The metadata field that keeps a key's first write time across replacements."""

KeyedWrites = Sequence[tuple[SpaceBinding, Sequence[KeyedPut]]]
"""``(space, [KeyedPut(key, item or None to delete, index text, ttl minutes), ...])``."""

_CHUNK = 500
_MEMORY_ID = re.compile(r"^[0-9a-f]{32}$")
_COLUMNS = (
    INSIGHTS.c.seq,
    INSIGHTS.c.id,
    INSIGHTS.c.space_id,
    INSIGHTS.c.content,
    INSIGHTS.c.created_at,
    INSIGHTS.c.category,
    INSIGHTS.c.importance,
    INSIGHTS.c.tags,
    INSIGHTS.c.entities,
    INSIGHTS.c.source,
    INSIGHTS.c.metadata,
    INSIGHTS.c.store_key,
    INSIGHTS.c.expires_at,
    INSIGHTS.c.ttl_minutes,
)
_LIVE = INSIGHTS.c.deleted_at.is_(None)
_UNEXPIRED = UNEXPIRED
# A write replaces the row it read: the key lookups also bring what retiring it needs.
_ROW_COLUMNS = (*_COLUMNS, INSIGHTS.c.terms, INSIGHTS.c.term_count)
# Built once: SQLAlchemy compiles (and caches) each statement once.
_BY_KEY = sa.select(*_ROW_COLUMNS).where(
    INSIGHTS.c.space_id == sa.bindparam("space"),
    INSIGHTS.c.store_key == sa.bindparam("key"),
    _LIVE,
)
_BY_KEYS = sa.select(*_ROW_COLUMNS).where(
    INSIGHTS.c.space_id == sa.bindparam("space"),
    INSIGHTS.c.store_key.in_(sa.bindparam("keys", expanding=True)),
    _LIVE,
)
_BY_ID = sa.select(*_ROW_COLUMNS).where(
    INSIGHTS.c.space_id == sa.bindparam("space"),
    INSIGHTS.c.id == sa.bindparam("id"),
    INSIGHTS.c.store_key.is_(None),
    _LIVE,
)
_LIVE_SPACES = sa.select(SPACES.c.id).where(
    SPACES.c.id.in_(sa.bindparam("ids", expanding=True)),
    sa.exists().where(INSIGHTS.c.space_id == SPACES.c.id, _LIVE, _UNEXPIRED),
)
# Every catalogued space with a live row: a fixed statement (no expanding list to render per
# call), one EXISTS probe of the space index per catalog row.
_ALL_LIVE_SPACES = sa.select(SPACES.c.id).where(
    sa.exists().where(INSIGHTS.c.space_id == SPACES.c.id, _LIVE, _UNEXPIRED)
)
_FEW = 8
# The space as the write finds it inside its transaction: the caller resolved the space
# from a cache, so the write confirms it still exists with the same name and description.
# On PostgreSQL the same round trip takes the space's writer lock.
_SPACE_NOW = sa.select(SPACES.c.name, SPACES.c.description).where(
    SPACES.c.id == sa.bindparam("space")
)
_SQLITE_SPACE_NOW = f"SELECT name, description FROM {SPACES.name} WHERE id = ?"
_LOCKED_SPACE_NOW = sa.select(
    sa.func.pg_advisory_xact_lock(sa.bindparam("lock", type_=sa.BigInteger)),
    _SPACE_NOW.with_only_columns(SPACES.c.name).scalar_subquery(),
    _SPACE_NOW.with_only_columns(SPACES.c.description).scalar_subquery(),
)


# The get of one key as driver SQL: a pooled DBAPI connection and one statement, without
# SQLAlchemy's transaction and compile machinery (that was ~90 % of a get).
_GET_SQL = (
    "SELECT store_key, id, seq, space_id, content, created_at, category, importance, tags, "
    "entities, source, metadata, expires_at, ttl_minutes FROM mnemon_insights "
    "WHERE space_id = {p} AND store_key = {p} AND deleted_at IS NULL"
)
_PARAM = {"sqlite": "?", "postgresql": "%s"}


def _json(text: Any) -> Any:
    return json.loads(text) if isinstance(text, str) else text


def expired(row: Mapping[str, Any] | KeyedRow, now: float) -> bool:
    """Whether a row's time to live has run out at ``now`` (a row without one never expires)."""
    at = row.expires_at if isinstance(row, KeyedRow) else row["expires_at"]
    return at is not None and float(at) <= now


def get_one(db: Database, space_id: str, key: str, now: float) -> KeyedRow | None:
    """The live, unexpired row of ``key``: one indexed statement on a pooled driver
    connection (a single SELECT is its own snapshot; PostgreSQL runs it in autocommit, no
    BEGIN/COMMIT).

    A memory-id key without a keyed row, and a shared in-memory SQLite connection (whose lock
    is the Database's), take the transaction path of :func:`current_rows`.

    Raises:
        StorageError: the database refused the read.
    """
    found = _get(db, space_id, key)
    return None if found is None or expired(found, now) else found


def _get(db: Database, space_id: str, key: str) -> KeyedRow | None:
    param = _PARAM.get(db.dialect)
    if param is None or isinstance(db.engine.pool, StaticPool):
        return _get_in_transaction(db, space_id, key)
    try:
        raw = db.engine.raw_connection()
        try:
            driver = raw.driver_connection
            assert driver is not None
            if db.dialect == "postgresql":
                before = driver.autocommit  # idle in the pool: switching is local, no trip
                driver.autocommit = True
                try:
                    row = driver.execute(_GET_SQL.format(p=param), (space_id, key)).fetchone()
                finally:
                    driver.autocommit = before
            else:
                row = driver.execute(_GET_SQL.format(p=param), (space_id, key)).fetchone()
        finally:
            raw.close()
    except database_errors() as exc:
        raise translate(exc, db.engine.url) from exc
    if row is None:
        return _get_in_transaction(db, space_id, key) if _MEMORY_ID.match(key) else None
    try:
        tags, entities, metadata = _json(row[8]), _json(row[9]), _json(row[11])
    except ValueError:
        return _get_in_transaction(db, space_id, key)  # the typed column says what is damaged
    return KeyedRow(
        row[0], row[1], int(row[2]), row[3], row[4], float(row[5]), row[6], int(row[7]),
        list(tags or []), list(entities or []), row[10], dict(metadata or {}),
        _float(row[12]), _float(row[13]),
    )  # fmt: skip


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _get_in_transaction(db: Database, space_id: str, key: str) -> KeyedRow | None:
    with db.read() as conn:
        found = current_rows(conn, space_id, [key]).get(key)
    return keyed_row(found) if found is not None else None


def keyed_row(row: Mapping[str, Any]) -> KeyedRow:
    """A selected row as the layer's :class:`KeyedRow`."""
    return KeyedRow(
        key=row["store_key"],
        id=row["id"],
        seq=int(row["seq"]),
        space_id=row["space_id"],
        content=row["content"],
        created_at=float(row["created_at"]),
        category=row["category"],
        importance=int(row["importance"]),
        tags=list(row["tags"] or []),
        entities=list(row["entities"] or []),
        source=row["source"],
        metadata=dict(row["metadata"] or {}),
        expires_at=_float(row["expires_at"]),
        ttl_minutes=_float(row["ttl_minutes"]),
    )


def current_rows(conn: Connection, space_id: str, keys: Sequence[str]) -> dict[str, Any]:
    """The live row of each key found (by ``store_key``; a memory-id key without a keyed row
    by its unkeyed row's id)."""
    wanted = list(dict.fromkeys(keys))
    found: dict[str, Any] = {}
    if len(wanted) == 1:  # the common single-key call: one indexed equality lookup
        row = _one_by_key(conn, space_id, wanted[0])
        if row is not None:
            found[wanted[0]] = row
    else:
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            for row in conn.execute(_BY_KEYS, {"space": space_id, "keys": chunk}).mappings():
                found[row["store_key"]] = row
    for key in wanted:
        if key not in found and _MEMORY_ID.match(key):
            row = conn.execute(_BY_ID, {"space": space_id, "id": key}).mappings().first()
            if row is not None:
                found[key] = row
    return found


_ROW_NAMES = tuple(c.name for c in _ROW_COLUMNS)
_SQLITE_BY_KEY = (
    f"SELECT {', '.join(_ROW_NAMES)} FROM {INSIGHTS.name} "
    "WHERE space_id = ? AND store_key = ? AND deleted_at IS NULL"
)
_JSON_COLUMNS = ("tags", "entities", "metadata")


def _one_by_key(conn: Connection, space_id: str, key: str) -> Mapping[str, Any] | None:
    """The live row of one key. SQLite: driver SQL on the transaction's connection (the
    statement's compile and result machinery cost more than the indexed lookup)."""
    if conn.dialect.name == "sqlite":
        driver = conn.connection.driver_connection
        assert driver is not None
        found = driver.execute(_SQLITE_BY_KEY, (space_id, key)).fetchone()
        if found is None:
            return None
        row = dict(zip(_ROW_NAMES, found, strict=True))
        try:
            row.update({name: _json(row[name]) for name in _JSON_COLUMNS})
            return row
        except ValueError:
            pass  # damaged JSON: the typed read below says what is damaged
    return conn.execute(_BY_KEY, {"space": space_id, "key": key}).mappings().first()


def page(
    conn: Connection, space_ids: Sequence[str], limit: int, offset: int, now: float
) -> list[KeyedRow]:
    """Live, unexpired rows of the spaces, newest written first (``seq`` order, which the
    space index covers)."""
    stmt = (
        sa.select(*_COLUMNS)
        .where(INSIGHTS.c.space_id.in_(list(space_ids)), _LIVE, _UNEXPIRED)
        .order_by(INSIGHTS.c.seq.desc())
        .limit(limit)
        .offset(offset)
    )
    return [keyed_row(r) for r in conn.execute(stmt, {"now": now}).mappings()]


def rows_by_seq(conn: Connection, seqs: Sequence[int], now: float) -> list[KeyedRow]:
    """The live, unexpired rows among ``seqs``, in that order."""
    found: dict[int, KeyedRow] = {}
    wanted = list(dict.fromkeys(int(s) for s in seqs))
    for start in range(0, len(wanted), _CHUNK):
        stmt = sa.select(*_COLUMNS).where(INSIGHTS.c.seq.in_(wanted[start : start + _CHUNK]), _LIVE)
        found.update(
            (int(r["seq"]), keyed_row(r))
            for r in conn.execute(stmt).mappings()
            if not expired(r, now)
        )
    return [found[s] for s in wanted if s in found]


def live_spaces(conn: Connection, space_ids: Sequence[str], now: float) -> set[str]:
    """Which of the catalogued ``space_ids`` hold a live, unexpired row: one statement, an
    ``EXISTS`` per space on the space index."""
    out: set[str] = set()
    ids = list(dict.fromkeys(space_ids))
    if len(ids) > _FEW:
        return set(conn.execute(_ALL_LIVE_SPACES, {"now": now}).scalars()) & set(ids)
    for start in range(0, len(ids), _CHUNK):
        chunk = {"ids": ids[start : start + _CHUNK], "now": now}
        out.update(conn.execute(_LIVE_SPACES, chunk).scalars())
    return out


# A row a read may refresh: live, unexpired and given a time to live.
_REFRESHABLE = sa.and_(
    INSIGHTS.c.id.in_(sa.bindparam("ids", expanding=True)),
    INSIGHTS.c.ttl_minutes.is_not(None),
    _LIVE,
    INSIGHTS.c.expires_at > sa.bindparam("now"),
)
_DUE_FOR_REFRESH = sa.select(INSIGHTS.c.id).where(_REFRESHABLE)
_REFRESH = (
    INSIGHTS.update()
    .where(_REFRESHABLE)
    .values(expires_at=sa.bindparam("now") + INSIGHTS.c.ttl_minutes * 60.0)
)


def refreshable(conn: Connection, ids: Sequence[str], now: float) -> list[str]:
    """Those of ``ids`` whose row a read would refresh (a read: no write lock when none)."""
    out: list[str] = []
    wanted = list(dict.fromkeys(ids))
    for start in range(0, len(wanted), _CHUNK):
        chunk = {"ids": wanted[start : start + _CHUNK], "now": now}
        out.extend(conn.execute(_DUE_FOR_REFRESH, chunk).scalars())
    return out


def refresh(conn: Connection, ids: Sequence[str], now: float) -> int:
    """Restart the expiry of the rows ``ids`` (``now + ttl_minutes``) that are live, unexpired
    and have a time to live, in the caller's write transaction; how many were refreshed."""
    done = 0
    wanted = list(dict.fromkeys(ids))
    for start in range(0, len(wanted), _CHUNK):
        chunk = {"ids": wanted[start : start + _CHUNK], "now": now}
        done += conn.execute(_REFRESH, chunk).rowcount
    return done


# Expired live rows, oldest expiry first: a range of the partial expiry index.
_EXPIRED = (
    sa.select(INSIGHTS.c.seq, INSIGHTS.c.space_id)
    .where(_LIVE, INSIGHTS.c.expires_at <= sa.bindparam("now"))
    .order_by(INSIGHTS.c.expires_at)
    .limit(sa.bindparam("limit"))
)
# The same rows again, by primary key, inside the sweeping transaction.
_CLAIM = sa.select(INSIGHTS.c.seq, INSIGHTS.c.terms, INSIGHTS.c.term_count).where(
    INSIGHTS.c.seq.in_(sa.bindparam("seqs", expanding=True)),
    INSIGHTS.c.space_id == sa.bindparam("space"),
    _LIVE,
    INSIGHTS.c.expires_at <= sa.bindparam("now"),
)


def expired_rows(conn: Connection, now: float, limit: int) -> dict[str, list[int]]:
    """Up to ``limit`` rows expired at ``now``, oldest expiry first, by space (one read)."""
    out: dict[str, list[int]] = {}
    for seq, space_id in conn.execute(_EXPIRED, {"now": now, "limit": limit}).all():
        out.setdefault(space_id, []).append(int(seq))
    return out


def sweep(conn: Connection, space_id: str, seqs: Sequence[int], now: float) -> int:
    """Soft-delete those of ``seqs`` (rows of one space) that are still live and expired, in
    the caller's write transaction: out of the keyword index, statistics and vectors.

    On PostgreSQL it takes the space's writer lock first, as a put does (one space per
    transaction, so no lock order to get wrong), and reads the rows ``FOR UPDATE``: a put or
    another replica's sweep retiring the same row waits and then finds it gone, so no row is
    counted out of the statistics twice.

    Returns:
        How many rows were deleted.
    """
    statement = _CLAIM
    if conn.dialect.name == "postgresql":
        lock = advisory_lock_id("mnemon-store", space_id)
        conn.execute(sa.select(sa.func.pg_advisory_xact_lock(lock)))
        statement = statement.with_for_update()
    params = {"seqs": list(seqs), "space": space_id, "now": now}
    found = conn.execute(statement, params).all()
    rows = [_write.Retired(int(seq), terms or "", int(count)) for seq, terms, count in found]
    _write.forget_rows(conn, space_id, rows, now)
    return len(rows)


class StaleVectors(Exception):
    """A write chosen before the transaction as needing no vector (an identical re-put)
    needs one now: another writer changed the key in between. The caller embeds everything
    and writes again."""


def needs_vectors(
    conn: Connection,
    writes: KeyedWrites,
    now: float,
) -> list[list[bool]]:
    """Per write, whether it will insert a row (so it needs a vector): a delete, a write that
    a later one of the same key supersedes, and an identical re-put of a live, unexpired key
    do not."""
    out: list[list[bool]] = []
    for space, group in writes:
        final = {key: index for index, (key, *_) in enumerate(group)}
        existing = current_rows(conn, space.id, list(final))
        flags = []
        for index, (key, item, *_) in enumerate(group):
            old = existing.get(key)
            same = item is not None and old is not None and _same(old, item, now)
            flags.append(item is not None and final[key] == index and not same)
        out.append(flags)
    return out


_HINT_SQL = (
    "SELECT store_key, content, metadata, source, expires_at FROM mnemon_insights "
    "WHERE space_id = {p} AND store_key {match} AND deleted_at IS NULL"
)
_HINT_MATCH = {"sqlite": "IN (SELECT value FROM json_each(?))", "postgresql": "= ANY(%s)"}


def vector_hints(db: Database, writes: KeyedWrites, now: float) -> list[list[bool]]:
    """:func:`needs_vectors` read outside any transaction: one driver statement per space on
    a pooled connection (no BEGIN / COMMIT; PostgreSQL in autocommit). The answer is a hint
    (the write transaction raises :class:`StaleVectors` when a key changed in between).

    Raises:
        StorageError: the database refused the read.
    """
    param = _PARAM.get(db.dialect)
    if param is None or isinstance(db.engine.pool, StaticPool):
        return db.run_single(needs_vectors, writes, now)
    sql = _HINT_SQL.format(p=param, match=_HINT_MATCH[db.dialect])
    found: list[dict[str, Any]] = []
    try:
        raw = db.engine.raw_connection()
        try:
            driver = raw.driver_connection
            assert driver is not None
            before = driver.autocommit if db.dialect == "postgresql" else None
            if before is not None:
                driver.autocommit = True  # idle in the pool: switching is local, no trip
            try:
                for space, group in writes:
                    keys = list(dict.fromkeys(put.key for put in group))
                    bound = json.dumps(keys) if db.dialect == "sqlite" else keys
                    rows = driver.execute(sql, (space.id, bound)).fetchall()
                    found.append({r[0]: r for r in rows})
            finally:
                if before is not None:
                    driver.autocommit = before
        finally:
            raw.close()
    except database_errors() as exc:
        raise translate(exc, db.engine.url) from exc
    return [_wanted(group, rows, now) for (_, group), rows in zip(writes, found, strict=True)]


def _wanted(group: Sequence[KeyedPut], rows: Mapping[str, Any], now: float) -> list[bool]:
    """Per write of one space, whether it inserts a row (see :func:`needs_vectors`)."""
    final = {key: index for index, (key, *_) in enumerate(group)}
    flags = []
    for index, (key, item, *_) in enumerate(group):
        raw = rows.get(key)
        same = False
        if item is not None and raw is not None:
            try:
                old = {
                    "store_key": raw[0], "content": raw[1], "metadata": _json(raw[2]),
                    "source": raw[3], "expires_at": raw[4],
                }  # fmt: skip
                same = _same(old, item, now)
            except ValueError:
                same = False  # damaged: embed; the write's typed read reports the damage
        flags.append(item is not None and final[key] == index and not same)
    return flags


def write_space(
    conn: Connection,
    space: SpaceBinding,
    writes: Sequence[KeyedPut],
    vectors: Sequence[np.ndarray | None] | None,
    embedder: Embedder | None,
    clock: Callable[[], float],
) -> list[dict[str, Any]]:
    """Apply the keyed writes of one space in the caller's transaction; one raw receipt per
    write. A later write of the same key supersedes an earlier one (it is reported as a
    duplicate of the final state). An expired row of a key is retired and the key written
    afresh; an identical re-put of a live row only restarts its expiry."""
    final = {key: index for index, (key, *_) in enumerate(writes)}
    existing = _checked_rows(conn, space, list(final))
    now = clock()
    receipts: list[dict[str, Any] | None] = [None] * len(writes)
    fresh: list[int] = []
    items: list[RememberItem] = []
    retired: list[_write.Retired] = []  # replaced or deleted: retired with the row in hand
    restarted: list[dict[str, Any]] = []  # identical re-puts whose expiry starts again
    for key, index in final.items():
        (_, item, _, ttl), old = writes[index], existing.get(key)
        if item is not None and old is not None and _same(old, item, now):
            if ttl is not None or old["ttl_minutes"] is not None:
                restarted.append({"b_seq": int(old["seq"]), **_expiry(ttl, now)})
            receipts[index] = {"status": "stored", "id": old["id"], "duplicate": True}
            continue
        gone = old is not None and expired(old, now)  # already gone for every read
        if old is not None:
            retired.append(_write.Retired(int(old["seq"]), old["terms"] or "", old["term_count"]))
        if item is None:
            deleted = int(old is not None and not gone)
            receipts[index] = {"status": "forgotten", "id": key, "deleted": deleted}
            continue
        if old is not None and old["store_key"] is not None and not gone:
            item = _keeping_first_time(item, old)
        fresh.append(index)
        items.append(item)
    if restarted:
        conn.execute(_RESTART, restarted)
    if items:
        analyses = [_analysis(item, writes[i].text) for item, i in zip(items, fresh, strict=True)]
        hashes = [_write.content_hash(i) for i in items]
        chosen = None if vectors is None else [vectors[i] for i in fresh]
        if chosen is not None and any(v is None for v in chosen):
            raise StaleVectors(space.id)
        stored = _write.insert(
            conn, space, items, analyses, hashes, chosen, embedder, now,
            keys=[writes[i][0] for i in fresh], retired=retired,
            expiry=[tuple(_expiry(writes[i].ttl, now).values()) for i in fresh],
        )  # fmt: skip
        for index, receipt in zip(fresh, stored, strict=True):
            receipts[index] = receipt
    elif retired:
        _write.forget_rows(conn, space.id, retired, now)
    return _superseded(writes, final, receipts)


def _analysis(item: RememberItem, text: str | None) -> _write.Analysis:
    """The keyword analysis of a row indexed by ``text`` (None: its content)."""
    return _write.Analysis(
        " ".join([item.content if text is None else text, *item.tags, *item.entities])
    )


def _superseded(
    writes: Sequence[KeyedPut], final: Mapping[str, int], receipts: list[dict[str, Any] | None]
) -> list[dict[str, Any]]:
    """The receipts with the writes a later write of the same key superseded in this call
    reported as duplicates of it."""
    for index, (key, *_) in enumerate(writes):
        if receipts[index] is None:
            last = receipts[final[key]] or {}
            receipts[index] = {"status": "stored", "id": last.get("id", key), "duplicate": True}
    return [r for r in receipts if r is not None]


_SPACE_AND_KEY = (
    "SELECT s.name, s.description, {cols} FROM {spaces} s LEFT JOIN {insights} i "
    "ON i.space_id = s.id AND i.deleted_at IS NULL AND i.store_key {match} WHERE s.id = ?"
)
_SPACE_AND_ONE = _SPACE_AND_KEY.format(
    cols=", ".join(f"i.{n}" for n in _ROW_NAMES), spaces=SPACES.name, insights=INSIGHTS.name,
    match="= ?",
)  # fmt: skip
_SPACE_AND_MANY = _SPACE_AND_KEY.format(
    cols=", ".join(f"i.{n}" for n in _ROW_NAMES), spaces=SPACES.name, insights=INSIGHTS.name,
    match="IN (SELECT value FROM json_each(?))",
)  # fmt: skip


def _checked_rows(
    conn: Connection, space: SpaceBinding, keys: list[str]
) -> dict[str, Mapping[str, Any]]:
    """The space checked (and locked: see :func:`_lock_and_check`) and the live row of each
    key found, as :func:`current_rows` finds them. SQLite: both in ONE driver statement (the
    catalog row joined to the keys' rows on the unique key index)."""
    if conn.dialect.name != "sqlite":
        _lock_and_check(conn, space)
        return current_rows(conn, space.id, keys)
    driver = conn.connection.driver_connection
    assert driver is not None
    if len(keys) == 1:
        found = driver.execute(_SPACE_AND_ONE, (keys[0], space.id)).fetchall()
    else:
        found = driver.execute(_SPACE_AND_MANY, (json.dumps(keys), space.id)).fetchall()
    head = (found[0][0], found[0][1] or "") if found else None
    if head is None or head[0] is None or head != (space.name, space.description):
        raise StaleSpace([space.id])
    out: dict[str, Mapping[str, Any]] = {}
    for raw in found:
        if raw[2] is None:  # the space's row without a key row
            continue
        row = dict(zip(_ROW_NAMES, raw[2:], strict=True))
        try:
            row.update({name: _json(row[name]) for name in _JSON_COLUMNS})
        except ValueError:  # damaged JSON: the typed read says what is damaged
            return current_rows(conn, space.id, keys)
        out[row["store_key"]] = row
    for key in keys:
        if key not in out and _MEMORY_ID.match(key):
            row = conn.execute(_BY_ID, {"space": space.id, "id": key}).mappings().first()
            if row is not None:
                out[key] = row
    return out


def _lock_and_check(conn: Connection, space: SpaceBinding) -> None:
    """One writer per space (PostgreSQL; SQLite's write transaction is already exclusive) and
    the space still as the caller resolved it, in one statement.

    Raises:
        StaleSpace: the space is gone or renamed (the caller re-reads it and writes again).
    """
    if conn.dialect.name == "postgresql":
        lock = advisory_lock_id("mnemon-store", space.id)
        row = conn.execute(_LOCKED_SPACE_NOW, {"lock": lock, "space": space.id}).one()[1:]
    elif conn.dialect.name == "sqlite":  # driver SQL on the transaction's connection
        driver = conn.connection.driver_connection
        assert driver is not None
        row = driver.execute(_SQLITE_SPACE_NOW, (space.id,)).fetchone()
    else:
        row = conn.execute(_SPACE_NOW, {"space": space.id}).first()
    if row is None or row[0] is None or (row[0], row[1] or "") != (space.name, space.description):
        raise StaleSpace([space.id])


def _same(old: Mapping[str, Any], item: RememberItem, now: float) -> bool:
    """Whether ``item`` is what the live, unexpired keyed row ``old`` already holds."""
    meta = {k: v for k, v in (old["metadata"] or {}).items() if k != CREATED_KEY}
    return (
        old["store_key"] is not None
        and not expired(old, now)
        and old["content"] == item.content
        and meta == {k: v for k, v in item.metadata.items() if k != CREATED_KEY}
        and old["source"] == item.source
    )


_RESTART = (
    INSIGHTS.update()
    .where(INSIGHTS.c.seq == sa.bindparam("b_seq"))
    .values(expires_at=sa.bindparam("b_expires"), ttl_minutes=sa.bindparam("b_ttl"))
)


def _expiry(ttl: float | None, now: float) -> dict[str, float | None]:
    """The ``expires_at`` and ``ttl_minutes`` of a row written (or re-put) at ``now`` with
    ``ttl``, as the parameters of ``_RESTART`` (in that order)."""
    return {"b_expires": None if ttl is None else now + ttl * 60.0, "b_ttl": ttl}


def _keeping_first_time(item: RememberItem, old: Mapping[str, Any]) -> RememberItem:
    first = (old["metadata"] or {}).get(CREATED_KEY)
    if isinstance(first, bool) or not isinstance(first, (int, float)):
        first = float(old["created_at"])
    return item.model_copy(update={"metadata": {**item.metadata, CREATED_KEY: first}})
