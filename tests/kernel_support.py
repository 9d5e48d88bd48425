"""Shared pieces of the participation matrix (tests/test_kernel_matrix.py).

A seeded storage root built once per module and copied per cell (files + one SQLite database:
copying is far cheaper than seeding), the settings / environment for each mode, the expected
decision for each mode and trigger, and byte-level snapshots (every file under the root, every
row of every table) to prove that a refusal wrote nothing.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph_mnemon import Mnemon, MnemonConfig

LAYERS = ("runtime", "documents", "memory_spaces")
CHANNELS = ("recall", "write", "projection", "maintenance")
MODES = ("off", "manual", "automatic", "disabled", "read-only")
WRITING = frozenset({"write", "maintenance"})
DECISION_KEYS = {"layer", "channel", "trigger", "mode", "admitted", "setting", "env"}
PARTICIPATION_CODES = {"channel-off", "channel-manual", "layer-disabled"}

# Everything local, fast and offline: no Chroma, keyword-only native search, no idle review.
BASE: dict[str, Any] = {
    "chroma": {"enabled": False},
    "embedding": {"enabled": False},
    "idle_review": {"enabled": False},
}
BASE_ENV = {
    "MNEMON_CHROMA__ENABLED": "false",
    "MNEMON_EMBEDDING__ENABLED": "false",
    "MNEMON_IDLE_REVIEW__ENABLED": "false",
    "COLUMNS": "200",
}

USER = ("Prefers short answers.", "Name is Ada.")
MEMORY = ("Deploys go through CI.", "Tests run with pytest -q.")
DOCUMENT = ("Runbook", "Restart the queue worker with make restart.")
SPACE_ID = "default"
MEMORIES = ("The staging database is on port 5433.", "The production database is on port 5432.")

NEW_RULE = "Release notes go in CHANGELOG.md."
OVERFLOW_RULE = "Release notes go in CHANGELOG.md under the Unreleased heading."
NEW_DOCUMENT = ("Design", "The queue uses Redis streams with consumer groups per worker pool.")
NEW_MEMORY = "The release train leaves every Thursday."
NEW_SPACE = ("Research", "Papers and reading notes")
BATCH = ("The build cache lives in S3.", "Nightly jobs run at 02:00 UTC.")
# Active Documents limit at which NEW_DOCUMENT only fits once the Runbook is cold-archived.
DOCUMENTS_OVERFLOW_LIMIT = 700


@dataclass(frozen=True)
class Seed:
    """The template root and the ids the cells need."""

    template: Path
    document_id: str
    memory_ids: tuple[str, ...]
    memory_used: int  # MEMORY.md bytes in the template
    batch_file: Path  # BATCH as JSONL, for `mnemon ingest`

    def settings_for_memory_overflow(self) -> dict[str, Any]:
        """A MEMORY.md limit at which OVERFLOW_RULE overflows but fits alone."""
        limit = max(self.memory_used, len(OVERFLOW_RULE.encode())) + 8
        return {"runtime": {"memory_limit_bytes": limit}}


def build_template(path: Path) -> Seed:
    """Seed a storage root: USER/MEMORY entries, one Document, one active space, two memories.

    Every schema the cells touch (Memory Spaces, Mnemos task memory) is created here, so a
    cell's snapshot never sees a table appear because a host opened it.
    """
    with Mnemon.open(path, **BASE) as mem:
        for text in USER:
            mem.runtime.add("user", text)
        for text in MEMORY:
            mem.runtime.add("memory", text)
        document = mem.documents.create(*DOCUMENT).document
        created = mem.spaces.create_space("Ops", "Operations and infrastructure", active=True)
        assert created.space is not None, created
        assert created.space.id == SPACE_ID, created
        ids = tuple(mem.spaces.remember(text, space_id=SPACE_ID).id for text in MEMORIES)
        _one_turn(mem)  # the schemas the agent loop keeps (task memory, review activity)
        mem.checkpointer()
        used = mem.runtime.usage("memory").used
    batch = path.parent / "batch.jsonl"
    batch.write_text("".join(json.dumps({"content": text}) + "\n" for text in BATCH))
    return Seed(
        template=path, document_id=document.id, memory_ids=ids, memory_used=used, batch_file=batch
    )


def _one_turn(mem: Mnemon) -> None:
    """One plain agent turn (no tool call) on another thread than the cells use."""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage

    from langgraph_mnemon.testing import ScriptedChatModel

    model = ScriptedChatModel(responses=[AIMessage("ok")])
    agent = create_agent(model, tools=mem.tools(), middleware=[mem.middleware()])
    agent.invoke({"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": "seed"}})


def fresh_root(seed: Seed, dest: Path) -> Path:
    """A private copy of the template root for one cell."""
    shutil.copytree(seed.template, dest)
    return dest


# --- modes -------------------------------------------------------------------------------------


def mode_settings(layer: str, channel: str, mode: str) -> dict[str, Any]:
    """``Mnemon.open`` settings that put ``layer``/``channel`` in ``mode`` (others default)."""
    if mode == "read-only":
        return {"write_enabled": False}
    if mode == "disabled":
        return {"layers": {layer: {"enabled": False}}}
    return {"layers": {layer: {"participation": {channel: mode}}}}


def mode_env(layer: str, channel: str, mode: str) -> dict[str, str]:
    """The same switch as environment variables (what a CLI user sets)."""
    if mode == "read-only":
        return {"MNEMON_WRITE_ENABLED": "false"}
    if mode == "disabled":
        return {f"MNEMON_LAYERS__{layer.upper()}__ENABLED": "false"}
    return {f"MNEMON_LAYERS__{layer.upper()}__PARTICIPATION__{channel.upper()}": mode}


def flip(config: MnemonConfig, layer: str, channel: str, mode: str) -> None:
    """Change the switch on a live configuration (validate_assignment), as PATCH /settings does."""
    section = getattr(config.layers, layer)
    if mode == "disabled":
        section.enabled = False
    else:
        setattr(section.participation, channel, mode)


def open_host(root: Path, layer: str, channel: str, mode: str, **extra: Any) -> Mnemon:
    settings = _merge(BASE, mode_settings(layer, channel, mode))
    return Mnemon.open(root, **_merge(settings, extra))


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def expected(mode: str, trigger: str, channel: str) -> str | None:
    """The refusal code the kernel must give, or None when the operation is admitted.

    off refuses every trigger; manual admits explicit only; automatic both; a disabled layer
    refuses everything; write_enabled=false refuses writes and maintenance only.
    """
    if mode == "automatic":
        return None
    if mode == "manual":
        return None if trigger == "explicit" else "channel-manual"
    if mode == "off":
        return "channel-off"
    if mode == "disabled":
        return "layer-disabled"
    return "read-only" if channel in WRITING else None


def expected_overflow(mode: str, trigger: str) -> str | None:
    """For capacity maintenance set off by a write that overflows: the write itself is
    admitted unless the layer is disabled or read-only; a refused maintenance channel leaves
    the original ``CapacityError`` (code containing "capacity"), nothing written."""
    code = expected(mode, trigger, "maintenance")
    if code in ("channel-off", "channel-manual"):
        return "capacity"
    return code


def decision_matches(
    decision: Any, layer: str, channel: str, trigger: str, mode: str, code: str
) -> None:
    """The decision carried by a refusal names what was refused and what would allow it."""
    assert isinstance(decision, dict), decision
    assert set(decision) == DECISION_KEYS, decision
    assert decision["admitted"] is False
    assert decision["trigger"] == trigger, decision
    if code == "read-only":
        assert decision["mode"] == "read-only"
        assert decision["setting"] == "write_enabled"
        assert decision["env"] == "MNEMON_WRITE_ENABLED"
        return
    assert (decision["layer"], decision["channel"]) == (layer, channel), decision
    assert decision["mode"] == mode, decision
    if code == "layer-disabled":
        assert decision["setting"] == f"layers.{layer}.enabled"
        assert decision["env"] == f"MNEMON_LAYERS__{layer.upper()}__ENABLED"
    else:
        assert decision["setting"] == f"layers.{layer}.participation.{channel}"
        assert (
            decision["env"] == f"MNEMON_LAYERS__{layer.upper()}__PARTICIPATION__{channel.upper()}"
        )


# --- snapshots ---------------------------------------------------------------------------------

_DB_FILES = ("mnemon.db", "mnemon.db-wal", "mnemon.db-shm", "mnemon.db-journal")


@dataclass(frozen=True)
class Snapshot:
    """Every file under a root (bytes; folders as None) and every row of every table."""

    files: dict[str, bytes | None]
    rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)

    def diff(self, other: Snapshot) -> list[str]:
        changed = [
            f"file {name}"
            for name in sorted(set(self.files) | set(other.files))
            if self.files.get(name, b"<absent>") != other.files.get(name, b"<absent>")
        ]
        changed += [
            f"table {name}"
            for name in sorted(set(self.rows) | set(other.rows))
            if self.rows.get(name) != other.rows.get(name)
        ]
        return changed


def agent_bookkeeping(table: str) -> bool:
    """Tables every agent run writes by design, whatever the switches: Mnemos task memory and
    the checkpointer (``mnemos_*``), idle-review activity, and the live turns a turn that
    outlives its first model call is kept in for other processes (``mnemon_turns``,
    ``mnemon_turn_views``; their schema step is ``mnemon_schema_version:turns``). Not one of
    the three layers."""
    return (
        table.startswith(("mnemos_", "mnemon_turn"))
        or "review" in table
        or "activit" in table
        or table == "mnemon_schema_version:turns"
    )


def snapshot(root: Path, *, skip: Callable[[str], bool] | None = None) -> Snapshot:
    """Snapshot ``root``: the database as rows (its file bytes move with WAL checkpoints even
    when no row changes), every other file as bytes. ``skip``: tables left out."""
    files: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if path.name in _DB_FILES and path.parent == root:
            continue
        files[name] = None if path.is_dir() else path.read_bytes()
    return Snapshot(files=files, rows=_rows(root / "mnemon.db", skip))


def _rows(database: Path, skip: Callable[[str], bool] | None) -> dict[str, list[tuple[Any, ...]]]:
    if not database.exists():
        return {}
    # Read-only URI: taking the snapshot must not write (no WAL recovery, no journal).
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        tables = [
            row[0]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        rows: dict[str, list[tuple[Any, ...]]] = {}
        for table in tables:
            if skip is not None and skip(table):
                continue
            data = connection.execute(f'SELECT * FROM "{table}"').fetchall()
            if table == "mnemon_schema_version" and skip is not None:  # a skipped component's steps
                data = [r for r in data if not skip(f"mnemon_schema_version:{r[0]}")]
            rows[table] = sorted(data, key=repr)
        rows["<schema>"] = sorted(
            connection.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
            ).fetchall(),
            key=repr,
        )
        if skip is not None:
            rows["<schema>"] = [r for r in rows["<schema>"] if not skip(str(r[2]))]
        return rows
    finally:
        connection.close()


def space_rows(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Only the Memory Spaces tables (catalog and the native provider's rows)."""
    rows = _rows(root / "mnemon.db", agent_bookkeeping)
    return {name: data for name, data in rows.items() if name.startswith("mnemon_")}


def tool_result(messages: list[Any], name: str) -> dict[str, Any]:
    """The parsed result of the (single) call of tool ``name`` in a run's messages."""
    from langchain_core.messages import ToolMessage

    results = [m for m in messages if isinstance(m, ToolMessage) and m.name == name]
    assert len(results) == 1, [getattr(m, "name", m.type) for m in messages]
    value = json.loads(results[0].content)
    assert isinstance(value, dict), value
    return value
