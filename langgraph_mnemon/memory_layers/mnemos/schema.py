"""Tables of the Mnemos store and of the LangGraph checkpoints kept beside it.

Mnemos (task memory):

* ``mnemos_nodes`` — the typed node graph (goal, constraint, context, working, result, skill,
  handoff) of each task; ``mnemos_node_links`` — edges between nodes.
* ``mnemos_checkpoint_nodes`` — CheckpointNodes: the typed summary of a task at one moment,
  written by ``Mnemos.checkpoint()`` or by the checkpointer for every LangGraph checkpoint.
* ``mnemos_signals`` — what a run showed (tool calls and their outcome, token usage);
  ``mnemos_fatigue_log`` — every fatigue reading.

LangGraph checkpoint data (written by ``MnemosSaver``; raw serde bytes, never mixed with the
typed columns above):

* ``mnemos_lg_checkpoints`` — one row per checkpoint: its skeleton (everything except channel
  values) as JSON, metadata as JSON (JSONB on PostgreSQL) and the Mnemos task it belongs to.
* ``mnemos_lg_blobs`` — channel values keyed by ``(thread, namespace, channel, version)``, so a
  put stores only the channels that changed.
* ``mnemos_lg_items`` — list elements stored once per thread (unique by a 16-byte digest, found by
  an integer id); a long list channel (a message history) is stored as the ``(id, digest)`` list
  of its elements.
* ``mnemos_lg_writes`` — pending writes with ``task_path``.

Times are UNIX seconds (``Float``); JSON text columns hold compact JSON. Integer keys (``seq``,
element ``id``) only ever grow while rows live; SQLite may reuse the number of a deleted newest
row, which nothing depends on (element references carry a digest too).
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from langgraph_mnemon.contracts import text_problem
from langgraph_mnemon.storage.db import DamagedValue, Migration, column_names, create_tables

__all__ = [
    "CHECKPOINT_NODES",
    "FATIGUE_LOG",
    "LG_BLOBS",
    "LG_CHECKPOINTS",
    "LG_ITEMS",
    "LG_WRITES",
    "METADATA",
    "MIGRATIONS",
    "NODES",
    "NODE_LINKS",
    "SIGNALS",
    "JsonText",
]


class JsonText(sa.TypeDecorator[Any]):
    """JSON stored as compact text (portable; no JSON operators needed on it).

    Text that UTF-8 cannot hold (a lone surrogate) is written with ``\\u`` escapes, so binding
    never fails; a stored value that is not JSON any more surfaces as
    :class:`~langgraph_mnemon.errors.StorageError` (``storage-damaged``, naming the database).
    """

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: sa.Dialect) -> str | None:
        """Dump a Python value to compact JSON text."""
        if value is None:
            return None
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        if not text.isascii() and text_problem(text) is not None:
            text = json.dumps(value, separators=(",", ":"))  # NUL is escaped by json already
        return text

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> Any:
        """Parse stored JSON text."""
        if value is None:
            return None
        try:
            return json.loads(value)
        except (TypeError, ValueError):
            raise DamagedValue(
                f"a stored JSON value is not JSON ({str(value)[:40]!r}...)"
            ) from None


class _JsonDocument(sa.TypeDecorator[Any]):
    """SQLAlchemy's JSON type, ``JSONB`` on PostgreSQL (its ``@>`` containment is indexable).

    ``sa.JSON().with_variant(JSONB(), "postgresql")`` would import the PostgreSQL dialect when
    this module loads; the dialect picks its type here instead, so SQLite never loads it.
    """

    impl = sa.JSON
    cache_ok = True
    should_evaluate_none = True  # as sa.JSON: Python None is stored as JSON null

    def load_dialect_impl(self, dialect: sa.Dialect) -> sa.types.TypeEngine[Any]:
        """``JSONB`` on PostgreSQL, ``JSON`` elsewhere."""
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB

            return dialect.type_descriptor(JSONB())
        return dialect.type_descriptor(sa.JSON())


_SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
# Checkpoint ids and versions sort bytewise (as LangGraph compares them) on every backend.
_KEY = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
_JSON_DOC = _JsonDocument()

METADATA = sa.MetaData()

NODES = sa.Table(
    "mnemos_nodes",
    METADATA,
    sa.Column("seq", _SEQ, primary_key=True, autoincrement=True),
    sa.Column("id", sa.String(32), nullable=False, unique=True),
    sa.Column("task_id", sa.Text, nullable=False),
    sa.Column("type", sa.String(16), nullable=False),
    sa.Column("content", sa.Text, nullable=False, server_default=""),
    sa.Column("summary", sa.Text, nullable=True),
    sa.Column("weight", sa.Float, nullable=False, server_default="1.0"),
    sa.Column("status", sa.String(16), nullable=False, server_default="active"),
    sa.Column("origin", sa.String(32), nullable=False, server_default="agent_generated"),
    sa.Column("confidence", sa.Float, nullable=False, server_default="1.0"),
    sa.Column("scope_tags", JsonText, nullable=False, server_default="[]"),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("last_accessed", sa.Float, nullable=False),
    sa.Column("access_count", sa.Integer, nullable=False, server_default="0"),
    # What a host-derived node stands for (goal, a constraint's words, a tool call, a resource):
    # derivation finds the node again by it instead of adding a duplicate. NULL otherwise.
    sa.Column("derived_key", sa.String(64), nullable=True),
    sa.Index("ix_mnemos_nodes_task", "task_id", "status", "type"),
    sa.Index("ix_mnemos_nodes_derived", "task_id", "derived_key"),
)

NODE_LINKS = sa.Table(
    "mnemos_node_links",
    METADATA,
    sa.Column(
        "source_id",
        sa.String(32),
        sa.ForeignKey("mnemos_nodes.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column(
        "target_id",
        sa.String(32),
        sa.ForeignKey("mnemos_nodes.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("link_type", sa.String(16), nullable=False, server_default="related"),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Index("ix_mnemos_node_links_target", "target_id"),
)

CHECKPOINT_NODES = sa.Table(
    "mnemos_checkpoint_nodes",
    METADATA,
    sa.Column("seq", _SEQ, primary_key=True, autoincrement=True),
    sa.Column("id", sa.String(32), nullable=False),  # a uuid4: unique without an index
    sa.Column("task_id", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("source", sa.String(16), nullable=False),  # mnemos | langgraph
    sa.Column("emergency", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("thread_id", sa.Text, nullable=True),
    sa.Column("checkpoint_ns", sa.Text, nullable=True),
    sa.Column("checkpoint_id", sa.Text, nullable=True),
    sa.Column("step", sa.Integer, nullable=True),
    sa.Column("fatigue", sa.Float, nullable=True),
    sa.Column("fatigue_state", sa.String(16), nullable=True),
    sa.Column("has_summary", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("goal", sa.Text, nullable=True),
    sa.Column("constraints", JsonText, nullable=True),
    sa.Column("results", JsonText, nullable=True),
    sa.Column("current_subgoal", sa.Text, nullable=True),
    sa.Column("working_memory", sa.Text, nullable=True),
    sa.Column("narrative", sa.Text, nullable=True),
    sa.Column("recent_files", JsonText, nullable=True),
    sa.Column("git_state", JsonText, nullable=True),
    sa.Column("node_summary", JsonText, nullable=True),
    sa.UniqueConstraint(
        "thread_id", "checkpoint_ns", "checkpoint_id", name="uq_mnemos_checkpoint_nodes_lg"
    ),
    sa.Index("ix_mnemos_checkpoint_nodes_task", "task_id", "seq"),
)

SIGNALS = sa.Table(
    "mnemos_signals",
    METADATA,
    sa.Column("seq", _SEQ, primary_key=True, autoincrement=True),
    sa.Column("task_id", sa.Text, nullable=False),
    sa.Column("kind", sa.String(8), nullable=False),  # tool | usage
    sa.Column("call_id", sa.Text, nullable=True),
    sa.Column("tool_name", sa.Text, nullable=True),
    sa.Column("args_digest", sa.String(32), nullable=True),
    sa.Column("path", sa.Text, nullable=True),
    sa.Column("dir_key", sa.Text, nullable=True),
    sa.Column("read_only", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("status", sa.String(8), nullable=False, server_default="pending"),
    sa.Column("tokens", sa.Integer, nullable=True),
    sa.Column("context_window", sa.Integer, nullable=True),
    sa.Column("window_source", sa.String(16), nullable=True),  # see _models.WindowSource
    sa.Column("estimated", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.UniqueConstraint("task_id", "kind", "call_id", name="uq_mnemos_signals_call"),
    sa.Index("ix_mnemos_signals_task", "task_id", "kind", "seq"),
)

FATIGUE_LOG = sa.Table(
    "mnemos_fatigue_log",
    METADATA,
    sa.Column("seq", _SEQ, primary_key=True, autoincrement=True),
    sa.Column("task_id", sa.Text, nullable=False),
    sa.Column("token_utilization", sa.Float, nullable=False),
    sa.Column("scope_scatter", sa.Float, nullable=False),
    sa.Column("reread_ratio", sa.Float, nullable=False),
    sa.Column("error_density", sa.Float, nullable=False),
    sa.Column("composite", sa.Float, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("tool_calls", sa.Integer, nullable=False),
    sa.Column("tokens_estimated", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("computed_at", sa.Float, nullable=False),
    sa.Column("tokens_used", sa.Integer, nullable=True),
    sa.Column("context_window", sa.Integer, nullable=True),  # the window of token_utilization
    sa.Column("window_source", sa.String(16), nullable=True),
    sa.Index("ix_mnemos_fatigue_log_task", "task_id", "seq"),
)

LG_CHECKPOINTS = sa.Table(
    "mnemos_lg_checkpoints",
    METADATA,
    sa.Column("thread_id", _KEY, primary_key=True),
    sa.Column("checkpoint_ns", _KEY, primary_key=True, server_default=""),
    sa.Column("checkpoint_id", _KEY, primary_key=True),
    sa.Column("parent_checkpoint_id", _KEY, nullable=True),
    sa.Column("task_id", sa.Text, nullable=False),
    sa.Column("run_id", sa.Text, nullable=True),
    sa.Column("uses_delta", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("checkpoint", JsonText, nullable=False),
    sa.Column("metadata", _JSON_DOC, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Index("ix_mnemos_lg_checkpoints_run", "run_id"),
)

LG_BLOBS = sa.Table(
    "mnemos_lg_blobs",
    METADATA,
    sa.Column("thread_id", _KEY, primary_key=True),
    sa.Column("checkpoint_ns", _KEY, primary_key=True, server_default=""),
    sa.Column("channel", _KEY, primary_key=True),
    sa.Column("version", _KEY, primary_key=True),
    sa.Column("type", sa.Text, nullable=False),
    sa.Column("blob", sa.LargeBinary, nullable=True),
)

LG_ITEMS = sa.Table(
    "mnemos_lg_items",
    METADATA,
    sa.Column("id", _SEQ, primary_key=True, autoincrement=True),
    sa.Column("thread_id", _KEY, nullable=False),
    sa.Column("digest", sa.LargeBinary, nullable=False),
    sa.Column("type", sa.Text, nullable=False),
    sa.Column("data", sa.LargeBinary, nullable=False),
    sa.UniqueConstraint("thread_id", "digest", name="uq_mnemos_lg_items_digest"),
)

LG_WRITES = sa.Table(
    "mnemos_lg_writes",
    METADATA,
    sa.Column("thread_id", _KEY, primary_key=True),
    sa.Column("checkpoint_ns", _KEY, primary_key=True, server_default=""),
    sa.Column("checkpoint_id", _KEY, primary_key=True),
    sa.Column("task_id", _KEY, primary_key=True),
    sa.Column("idx", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("task_path", sa.Text, nullable=False, server_default=""),
    sa.Column("channel", sa.Text, nullable=False),
    sa.Column("type", sa.Text, nullable=False),
    sa.Column("value", sa.LargeBinary, nullable=True),
)


def _create_v1(conn: sa.Connection) -> None:
    tables = (NODES, NODE_LINKS, CHECKPOINT_NODES, SIGNALS, FATIGUE_LOG)
    create_tables(conn, (*tables, LG_CHECKPOINTS, LG_BLOBS, LG_ITEMS, LG_WRITES))


def _add_derived_key(conn: sa.Connection) -> None:
    # A database made by version 1 lacks the column; one made now has it from create().
    columns = column_names(conn, NODES.name)
    if "derived_key" not in columns:
        conn.execute(sa.text(f"ALTER TABLE {NODES.name} ADD COLUMN derived_key VARCHAR(64)"))
    conn.execute(
        sa.text(
            "CREATE INDEX IF NOT EXISTS ix_mnemos_nodes_derived "
            f"ON {NODES.name} (task_id, derived_key)"
        )
    )


# Version 3: each reading keeps the window it was measured against and where that came from.
_WINDOW_COLUMNS = {
    SIGNALS.name: ("window_source VARCHAR(16)",),
    FATIGUE_LOG.name: (
        "tokens_used INTEGER",
        "context_window INTEGER",
        "window_source VARCHAR(16)",
    ),
}


def _add_window_columns(conn: sa.Connection) -> None:
    # A database made before version 3 lacks them; one made now has them from create().
    for table, columns in _WINDOW_COLUMNS.items():
        have = column_names(conn, table)
        for column in columns:
            if column.split()[0] not in have:
                conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN {column}")


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "mnemos",
        1,
        "Mnemos node graph, checkpoint nodes, signals, fatigue log and LangGraph checkpoints",
        _create_v1,
    ),
    Migration(
        "mnemos",
        2,
        "mnemos_nodes.derived_key: nodes derived from agent activity, found again by their key",
        _add_derived_key,
    ),
    Migration(
        "mnemos",
        3,
        "context windows: mnemos_signals.window_source, mnemos_fatigue_log.tokens_used, "
        "context_window and window_source",
        _add_window_columns,
    ),
)
"""Schema steps of the ``mnemos`` component, for :func:`~.db.migrate` / ``Database.setup``."""
