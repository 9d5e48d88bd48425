"""Live turns in the shared SQL database: a turn's pin any process can read (component
``"turns"``).

* ``mnemon_turn_views`` — one row per pinned (or retained) :class:`TurnView`, as JSON, written
  once per view (views are reused across turns while memory does not change); ``holders``
  counts the child agents retaining it, and each retention keeps it ``ttl`` seconds more.
* ``mnemon_turns`` — one row per live turn: its :class:`TurnScope`, the id of its view, its
  :class:`RetrievalState` (recall attempts, admitted evidence, Related, the Documents search,
  route answers) and a ``version`` that every recorded change moves on. A change is written
  only over the version it was made from (compare-and-set), so two writers never lose each
  other's calls.

Ending a turn deletes its row (the turn service batches those deletes into its next write).
A turn that never ends (a crashed worker, an interrupt nobody resumes) expires ``ttl`` seconds
after its last change, and :meth:`TurnStore.expire` removes expired turns and the expired
views no live turn pins (a child agent that is never closed does not keep its view for ever;
the process it lives in still holds it).

Example:
    >>> store = TurnStore(mem.database)
    >>> store.insert("turn-1", TurnScope(thread_id="t1"), view, turn.state())
    1
    >>> store.load("turn-1").view == view
    True
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import sqlalchemy as sa
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from langgraph_mnemon.errors import StorageError
from langgraph_mnemon.memory_layers.turns._models import TurnScope, TurnView
from langgraph_mnemon.memory_layers.turns._state import RetrievalState
from langgraph_mnemon.storage.db import Database, Migration, create_tables, upsert

__all__ = ["MIGRATIONS", "TURNS", "TURN_TTL_SECONDS", "TURN_VIEWS", "StoredTurn", "TurnStore"]

_M = TypeVar("_M", bound=BaseModel)

TURN_TTL_SECONDS = 7 * 24 * 3600.0
"""How long a turn that never ends (and a view nobody needs) is kept after its last change."""

METADATA = sa.MetaData()

TURN_VIEWS = sa.Table(
    "mnemon_turn_views",
    METADATA,
    sa.Column("view_id", sa.Text, primary_key=True),
    sa.Column("view", sa.Text, nullable=False),
    sa.Column("holders", sa.Integer, nullable=False, server_default="0"),
    sa.Column("expires_at", sa.Float, nullable=False, index=True),
)

TURNS = sa.Table(
    "mnemon_turns",
    METADATA,
    sa.Column("turn_id", sa.Text, primary_key=True),
    sa.Column("view_id", sa.Text, nullable=False, index=True),
    sa.Column("scope", sa.Text, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False, index=True),
)


def _create_v1(conn: sa.Connection) -> None:
    create_tables(conn, (TURN_VIEWS, TURNS))


MIGRATIONS: tuple[Migration, ...] = (
    Migration("turns", 1, "Live turns: pinned views, scopes and retrieval states", _create_v1),
)
"""Schema steps of the ``turns`` component, for ``Database.setup``."""

_WRITTEN_VIEWS = 64  # views this process knows are stored (skipped on the next insert)
# Built once: SQLAlchemy then reuses each compiled statement (a turn's begin is on the hot path).
_INSERT = TURNS.insert()
_DELETE = TURNS.delete().where(TURNS.c.turn_id.in_(sa.bindparam("ids", expanding=True)))


@dataclass(frozen=True)
class StoredTurn:
    """A live turn as the database holds it."""

    scope: TurnScope
    view: TurnView
    state: RetrievalState
    version: int


def _dump(model: BaseModel) -> str:
    """``model`` as JSON text (escaped ASCII when a string holds a lone surrogate)."""
    try:
        return model.model_dump_json()
    except PydanticSerializationError:
        return json.dumps(model.model_dump(mode="json"))


def _load(kind: type[_M], text: str, url: str) -> _M:
    """``text`` read back as ``kind``.

    Raises:
        StorageError: code ``storage-damaged``, the stored JSON is not a ``kind`` any more.
    """
    try:
        try:
            return kind.model_validate_json(text)
        except ValidationError:
            return kind.model_validate(json.loads(text))  # escaped lone surrogates
    except (ValueError, ValidationError) as exc:
        raise StorageError(
            f"a live turn stored in {url} cannot be read ({type(exc).__name__}); end the "
            "turn and begin a new one",
            code="storage-damaged",
        ) from None


class TurnStore:
    """Live turns and retained views in ``database`` (thread-safe: one transaction a call).

    Args:
        database: the host's SQL database (SQLite file or PostgreSQL shared by replicas).
        ttl: seconds a turn is kept after its last change when nobody ends it.
        clock: seconds since the epoch.

    Reads never create the schema (an absent table holds no turn); the first write does.

    Raises (every method):
        StorageError: the database cannot be read or written (its code says why: full,
            unavailable, read-only ...), or a stored turn is not readable (``storage-damaged``).
    """

    def __init__(
        self,
        database: Database,
        *,
        ttl: float = TURN_TTL_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = database
        self.ttl = float(ttl)
        self._clock = clock
        self._lock = threading.Lock()
        self._written: OrderedDict[str, float] = OrderedDict()  # view id -> when it was stored

    # -- turns -------------------------------------------------------------------------------

    def insert(
        self,
        turn_id: str,
        scope: TurnScope,
        view: TurnView,
        state: RetrievalState,
        *,
        ended: Sequence[str] = (),
    ) -> int:
        """Store a new live turn (and its view, unless stored lately); returns its version.

        ``ended``: turns that ended since, deleted in the same transaction.
        """
        self._ready()
        now = self._clock()
        values = {
            "turn_id": turn_id,
            "view_id": view.id,
            "scope": _dump(scope),
            "state": _dump(state),
            "version": 1,
            "expires_at": now + self.ttl,
        }
        fresh = self._needs_write(view.id, now)
        with self.db.write() as conn:
            if fresh:
                self._put_view(conn, view, now)
            if ended:
                conn.execute(_DELETE, {"ids": list(ended)})
            conn.execute(_INSERT, values)
        if fresh:
            self._wrote(view.id, now)
        return 1

    def load(self, turn_id: str) -> StoredTurn | None:
        """The live turn ``turn_id``, or ``None`` (ended, expired, or never stored)."""
        if not self.db.ready_for_read(MIGRATIONS):
            return None
        stmt = (
            sa.select(TURNS.c.scope, TURNS.c.state, TURNS.c.version, TURN_VIEWS.c.view)
            .join(TURN_VIEWS, TURN_VIEWS.c.view_id == TURNS.c.view_id)
            .where(TURNS.c.turn_id == turn_id, TURNS.c.expires_at > self._clock())
        )
        row = self.db.run_single(lambda conn: conn.execute(stmt).first())
        if row is None:
            return None
        url = self.db.url
        return StoredTurn(
            scope=_load(TurnScope, row.scope, url),
            view=_load(TurnView, row.view, url),
            state=_load(RetrievalState, row.state, url),
            version=int(row.version),
        )

    def version(self, turn_id: str) -> int | None:
        """The version of the live turn ``turn_id``, or ``None`` when it is not stored."""
        if not self.db.ready_for_read(MIGRATIONS):
            return None
        stmt = sa.select(TURNS.c.version).where(
            TURNS.c.turn_id == turn_id, TURNS.c.expires_at > self._clock()
        )
        found = self.db.run_single(lambda conn: conn.execute(stmt).scalar())
        return None if found is None else int(found)

    def update(self, turn_id: str, state: RetrievalState, *, expected: int) -> int | None:
        """Write ``state`` over version ``expected``; the new version, or ``None`` when the
        stored turn is at another version (or gone): read it again and merge."""
        if not self.db.ready_for_read(MIGRATIONS):
            return None
        stmt = (
            TURNS.update()
            .where(TURNS.c.turn_id == turn_id, TURNS.c.version == expected)
            .values(state=_dump(state), version=expected + 1, expires_at=self._clock() + self.ttl)
        )
        with self.db.write() as conn:
            done = conn.execute(stmt).rowcount
        return expected + 1 if done == 1 else None

    def delete(self, turn_ids: Sequence[str]) -> int:
        """Forget the live turns ``turn_ids`` (they ended); how many were stored."""
        if not turn_ids or not self.db.ready_for_read(MIGRATIONS):
            return 0
        with self.db.write() as conn:
            return int(conn.execute(_DELETE, {"ids": list(turn_ids)}).rowcount)

    # -- retained views (child agents) -------------------------------------------------------

    def retain(self, view: TurnView) -> int:
        """Count one more child agent retaining ``view`` (stored if it is not); returns how
        many retain it now."""
        self._ready()
        now = self._clock()
        with self.db.write() as conn:
            self._put_view(conn, view, now)
            conn.execute(
                TURN_VIEWS.update()
                .where(TURN_VIEWS.c.view_id == view.id)
                .values(holders=TURN_VIEWS.c.holders + 1, expires_at=now + self.ttl)
            )
            held = conn.execute(
                sa.select(TURN_VIEWS.c.holders).where(TURN_VIEWS.c.view_id == view.id)
            ).scalar_one()
        self._wrote(view.id, now)
        return int(held)

    def unretain(self, view_id: str) -> int | None:
        """One child agent fewer retains ``view_id``; how many still do (``None``: it is not
        retained)."""
        if not self.db.ready_for_read(MIGRATIONS):
            return None
        held = TURN_VIEWS.c.view_id == view_id
        with self.db.write() as conn:
            count = conn.execute(sa.select(TURN_VIEWS.c.holders).where(held)).scalar()
            if count is None or int(count) <= 0:
                return None
            conn.execute(TURN_VIEWS.update().where(held).values(holders=int(count) - 1))
        return int(count) - 1

    def retained(self, view_id: str) -> TurnView | None:
        """The view ``view_id`` while a child agent retains it, else ``None``."""
        if not self.db.ready_for_read(MIGRATIONS):
            return None
        stmt = sa.select(TURN_VIEWS.c.view).where(
            TURN_VIEWS.c.view_id == view_id, TURN_VIEWS.c.holders > 0
        )
        text = self.db.run_single(lambda conn: conn.execute(stmt).scalar())
        return None if text is None else _load(TurnView, text, self.db.url)

    # -- expiry ------------------------------------------------------------------------------

    def expire(self) -> int:
        """Remove expired turns, then the expired views no live turn pins; returns how many
        rows went."""
        if not self.db.ready_for_read(MIGRATIONS):
            return 0
        now = self._clock()
        used = sa.select(TURNS.c.view_id).where(TURNS.c.view_id == TURN_VIEWS.c.view_id)
        with self.db.write() as conn:
            turns = conn.execute(TURNS.delete().where(TURNS.c.expires_at <= now)).rowcount
            views = conn.execute(
                TURN_VIEWS.delete().where(TURN_VIEWS.c.expires_at <= now, ~sa.exists(used))
            ).rowcount
        with self._lock:
            self._written.clear()  # a view removed here is written again when next pinned
        return int(turns) + int(views)

    # -- helpers -----------------------------------------------------------------------------

    def _ready(self) -> None:
        if not self.db.is_setup(MIGRATIONS):
            self.db.setup(MIGRATIONS)

    def _needs_write(self, view_id: str, now: float) -> bool:
        """Whether the view must be (re)stored: not stored lately (within half the ttl)."""
        with self._lock:
            stored = self._written.get(view_id)
        return stored is None or now - stored > self.ttl / 2

    def _wrote(self, view_id: str, now: float) -> None:
        with self._lock:
            self._written.pop(view_id, None)
            self._written[view_id] = now
            while len(self._written) > _WRITTEN_VIEWS:
                self._written.popitem(last=False)

    def _put_view(self, conn: sa.Connection, view: TurnView, now: float) -> None:
        """Store ``view`` if absent, and push its expiry to ``now + ttl`` either way."""
        values: dict[str, Any] = {
            "view_id": view.id,
            "view": _dump(view),
            "holders": 0,
            "expires_at": now + self.ttl,
        }
        conn.execute(upsert(self.db.dialect, TURN_VIEWS, ["view_id"], ["expires_at"]), values)
