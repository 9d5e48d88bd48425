"""Benchmark: MnemosSaver against the shipped LangGraph savers on an agent-like loop.

A 200-step loop alternates an AI message with a tool call and a tool result (about 1 KB of
distinct text each), so the message list grows by one message per step, as in a tool-calling
agent. Each step stores the node's writes (``put_writes``), the new checkpoint (``put``) and
reads the thread's latest checkpoint back (``get_tuple``). Reported: median ``put`` and
``get_tuple`` time, the ratio Mnemos / reference pair by pair (below 1.0 = Mnemos faster or
smaller), and the database size at the end (SQLite: the file after a WAL checkpoint;
PostgreSQL: total relation size of the saver's tables).

The whole-loop row runs a real compiled ``StateGraph`` (state ``messages: Annotated[list,
add_messages]``, one node appending the next message of the same 200) invoked step by step on
one thread, so LangGraph itself calls ``get_tuple`` / ``put`` / ``put_writes`` (3 checkpoints
and 2 write batches per invoke, saved in the background as with the default durability);
reported as total ms per invoke, median over rounds.

Durability: SqliteSaver / AsyncSqliteSaver run WAL with SQLite's default ``synchronous=FULL``
(every commit fsyncs the WAL). MnemosSaver defaults to WAL + ``synchronous=NORMAL`` (a commit
survives a process crash, not a power loss); the ``synchronous=FULL`` rows are the
equal-durability comparison. On both sides every put / put_writes returns only after its own
commit (MnemosSaver group-commits calls that queue during a commit: one fsync per batch).

Pairs: MnemosSaver vs SqliteSaver and AsyncMnemosSaver vs AsyncSqliteSaver on SQLite files;
with ``--postgres URL`` (or ``MNEMON_TEST_POSTGRES_URL``) also MnemosSaver vs PostgresSaver and
AsyncMnemosSaver vs AsyncPostgresSaver, each in a fresh schema.

    python bench/checkpointer.py [--steps 200] [--message-bytes 1024] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

_WORDS = [
    "agent",
    "graph",
    "state",
    "node",
    "edge",
    "tool",
    "call",
    "result",
    "memory",
    "checkpoint",
    "thread",
    "channel",
    "version",
    "token",
    "context",
    "window",
    "message",
    "summary",
    "goal",
    "constraint",
    "working",
    "file",
    "path",
    "error",
    "retry",
    "fatigue",
    "consolidate",
    "resume",
    "handoff",
    "scope",
    "read",
    "write",
    "edit",
    "search",
    "plan",
    "step",
    "value",
    "reducer",
]


def _text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_WORDS)
        if rng.random() < 0.15:
            word = f"{word}{rng.randrange(10_000)}"
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


def _message(rng: random.Random, step: int, size: int) -> BaseMessage:
    if step % 2 == 0:
        return AIMessage(
            content=_text(rng, size - 120),
            id=str(uuid.UUID(int=rng.getrandbits(128))),
            tool_calls=[
                {
                    "name": "read_file",
                    "args": {"path": f"src/module_{step % 17}/file_{step}.py"},
                    "id": f"call_{step}",
                    "type": "tool_call",
                }
            ],
            usage_metadata={
                "input_tokens": 1000 + 300 * step,
                "output_tokens": 120,
                "total_tokens": 1120 + 300 * step,
            },
        )
    return ToolMessage(
        content=_text(rng, size),
        tool_call_id=f"call_{step - 1}",
        name="read_file",
        id=str(uuid.UUID(int=rng.getrandbits(128))),
    )


class _Loop:
    """Builds the checkpoints and writes of one agent-like run, identically for every saver."""

    def __init__(self, saver: BaseCheckpointSaver, steps: int, size: int) -> None:
        self.saver = saver
        self.steps = steps
        self.size = size

    def plan(self) -> list[tuple[Any, ...]]:
        rng = random.Random(42)
        thread = "bench-thread"
        messages: list[BaseMessage] = []
        versions: dict[str, Any] = {}
        seen: dict[str, dict[str, Any]] = {}
        parent: str | None = None
        plan = []
        for step in range(self.steps):
            node = "agent" if step % 2 == 0 else "tools"
            message = _message(rng, step, self.size)
            messages = [*messages, message]
            branch = f"branch:to:{'tools' if node == 'agent' else 'agent'}"
            changed = {}
            for channel in ("messages", branch):
                versions[channel] = self.saver.get_next_version(versions.get(channel), None)
                changed[channel] = versions[channel]
            seen[node] = dict(versions)
            checkpoint: Checkpoint = {
                "v": 4,
                "id": str(uuid6(clock_seq=step)),
                "ts": f"2026-01-01T00:00:{step % 60:02d}+00:00",
                "channel_values": {"messages": messages, branch: None},
                "channel_versions": dict(versions),
                "versions_seen": {k: dict(v) for k, v in seen.items()},
                "updated_channels": sorted(changed),
            }
            config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
            if parent:
                config["configurable"]["checkpoint_id"] = parent
            metadata = {"source": "loop", "step": step, "parents": {}, "run_id": "bench-run"}
            writes = [("messages", [message]), (branch, None)]
            plan.append((config, checkpoint, metadata, changed, writes, f"task-{step}"))
            parent = checkpoint["id"]
        return plan


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _median(samples: dict[str, list[float]]) -> dict[str, float]:
    return {k: statistics.median(v) for k, v in samples.items()}


def _merge(into: dict[str, list[float]], stats: dict[str, list[float]]) -> None:
    for key, values in stats.items():
        into.setdefault(key, []).extend(values)


def run_sync(saver: BaseCheckpointSaver, steps: int, size: int) -> dict[str, list[float]]:
    plan = _Loop(saver, steps, size).plan()
    puts, gets, writes = [], [], []
    latest = {"configurable": {"thread_id": "bench-thread", "checkpoint_ns": ""}}
    for config, checkpoint, metadata, changed, step_writes, task in plan:
        if "checkpoint_id" in config["configurable"]:
            writes.append(_timed(lambda c=config, w=step_writes, t=task: saver.put_writes(c, w, t)))
        puts.append(
            _timed(lambda c=config, cp=checkpoint, m=metadata, n=changed: saver.put(c, cp, m, n))
        )
        gets.append(_timed(lambda: saver.get_tuple(latest)))
    final = saver.get_tuple(latest)
    assert final is not None
    assert len(final.checkpoint["channel_values"]["messages"]) == steps
    return {"put": puts, "get": gets, "writes": writes}


async def run_async(saver: BaseCheckpointSaver, steps: int, size: int) -> dict[str, list[float]]:
    plan = _Loop(saver, steps, size).plan()
    puts, gets, writes = [], [], []
    latest = {"configurable": {"thread_id": "bench-thread", "checkpoint_ns": ""}}
    for config, checkpoint, metadata, changed, step_writes, task in plan:
        if "checkpoint_id" in config["configurable"]:
            start = time.perf_counter()
            await saver.aput_writes(config, step_writes, task)
            writes.append(time.perf_counter() - start)
        start = time.perf_counter()
        await saver.aput(config, checkpoint, metadata, changed)
        puts.append(time.perf_counter() - start)
        start = time.perf_counter()
        await saver.aget_tuple(latest)
        gets.append(time.perf_counter() - start)
    final = await saver.aget_tuple(latest)
    assert final is not None
    assert len(final.checkpoint["channel_values"]["messages"]) == steps
    return {"put": puts, "get": gets, "writes": writes}


class _LoopState(TypedDict):
    messages: Annotated[list, add_messages]


def _graph(saver: BaseCheckpointSaver, steps: int, size: int) -> tuple[Any, list[BaseMessage]]:
    """The add_messages graph: each invoke appends the next message of one fixed sequence."""
    rng = random.Random(42)
    messages = [_message(rng, step, size) for step in range(steps)]

    def step(state: _LoopState) -> dict[str, Any]:
        return {"messages": [messages[len(state["messages"])]]}

    builder = StateGraph(_LoopState)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    return builder.compile(checkpointer=saver), messages


def run_graph_sync(saver: BaseCheckpointSaver, steps: int, size: int) -> float:
    """Seconds per invoke of the whole add_messages loop."""
    graph, _ = _graph(saver, steps, size)
    config = {"configurable": {"thread_id": "bench-graph"}}
    start = time.perf_counter()
    for _ in range(steps):
        graph.invoke({"messages": []}, config)
    elapsed = (time.perf_counter() - start) / steps
    assert len(graph.get_state(config).values["messages"]) == steps
    return elapsed


async def run_graph_async(saver: BaseCheckpointSaver, steps: int, size: int) -> float:
    """Seconds per ``ainvoke`` of the whole add_messages loop."""
    graph, _ = _graph(saver, steps, size)
    config = {"configurable": {"thread_id": "bench-graph"}}
    start = time.perf_counter()
    for _ in range(steps):
        await graph.ainvoke({"messages": []}, config)
    elapsed = (time.perf_counter() - start) / steps
    assert len((await graph.aget_state(config)).values["messages"]) == steps
    return elapsed


def _sqlite_size(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return path.stat().st_size


def _plain_pg(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def _pg(sql: str, url: str, *params: Any) -> Any:
    import psycopg

    with psycopg.connect(_plain_pg(url), autocommit=True) as conn:
        cursor = conn.execute(sql, params or None)
        row = cursor.fetchone() if cursor.description else None
    return row[0] if row else None


def _pg_size(url: str, schema: str) -> int:
    return int(
        _pg(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind = 'r'",
            url,
            schema,
        )
    )


def _with_schema(url: str, schema: str) -> str:
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{schema}"


class Contender:
    """One saver on one backend: how to open it fresh, run the loop and size its database."""

    def __init__(
        self,
        backend: str,
        name: str,
        kind: str,
        postgres: str | None = None,
        *,
        synchronous: str | None = None,
    ) -> None:
        self.backend = backend
        self.name = name
        self.synchronous = synchronous
        self.kind = kind  # "sync" | "async"
        self.postgres = postgres
        self.samples: dict[str, list[float]] = {}
        self.size = 0

    @property
    def label(self) -> str:
        if self.synchronous:
            return f"{self.name} (synchronous={self.synchronous})"
        return self.name

    def run(self, steps: int, size: int, folder: Path) -> None:
        """One round: the per-operation loop, then the whole graph loop, each on a fresh
        database (size measured after the per-operation loop)."""
        for graph in (False, True):
            if self.postgres:
                schema = f"bench_{uuid.uuid4().hex[:10]}"
                _pg(f'CREATE SCHEMA "{schema}"', self.postgres)
                try:
                    self._run(_with_schema(self._url(), schema), steps, size, graph)
                    if not graph:
                        self.size = _pg_size(self.postgres, schema)
                finally:
                    _pg(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE', self.postgres)
            else:
                path = folder / f"{self.name}-{uuid.uuid4().hex[:8]}.db"
                self._run(str(path), steps, size, graph)
                if not graph:
                    self.size = _sqlite_size(path)

    def _url(self) -> str:
        assert self.postgres is not None
        return self.postgres if "Mnemos" in self.name else _plain_pg(self.postgres)

    def _run(self, target: str, steps: int, size: int, graph: bool) -> None:
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        from langgraph_mnemon.checkpointers import AsyncMnemosSaver, MnemosSaver

        classes = {
            "MnemosSaver": MnemosSaver,
            "AsyncMnemosSaver": AsyncMnemosSaver,
            "SqliteSaver": SqliteSaver,
            "AsyncSqliteSaver": AsyncSqliteSaver,
            "PostgresSaver": PostgresSaver,
            "AsyncPostgresSaver": AsyncPostgresSaver,
        }
        cls: Any = classes[self.name]
        kwargs: dict[str, Any] = {}
        if self.synchronous:
            from langgraph_mnemon.config import MnemosConfig

            kwargs["config"] = MnemosConfig(sqlite_synchronous=self.synchronous)
        if self.kind == "sync":
            with cls.from_conn_string(target, **kwargs) as saver:
                saver.setup()
                if graph:
                    _merge(self.samples, {"loop": [run_graph_sync(saver, steps, size)]})
                else:
                    _merge(self.samples, run_sync(saver, steps, size))
            return

        async def go() -> None:
            async with cls.from_conn_string(target, **kwargs) as saver:
                await saver.setup()
                if graph:
                    _merge(self.samples, {"loop": [await run_graph_async(saver, steps, size)]})
                else:
                    _merge(self.samples, await run_async(saver, steps, size))

        asyncio.run(go())


def contenders(postgres: str | None) -> list[tuple[list[Contender], Contender]]:
    """Groups of (Mnemos savers, the reference saver they are compared with)."""
    groups = [
        (
            [
                Contender("SQLite", "MnemosSaver", "sync"),
                # SqliteSaver leaves SQLite's default synchronous=FULL; the same, for fairness:
                Contender("SQLite", "MnemosSaver", "sync", synchronous="FULL"),
            ],
            Contender("SQLite", "SqliteSaver", "sync"),
        ),
        (
            [Contender("SQLite", "AsyncMnemosSaver", "async")],
            Contender("SQLite", "AsyncSqliteSaver", "async"),
        ),
    ]
    if postgres:
        groups += [
            (
                [Contender("PostgreSQL", "MnemosSaver", "sync", postgres)],
                Contender("PostgreSQL", "PostgresSaver", "sync", postgres),
            ),
            (
                [Contender("PostgreSQL", "AsyncMnemosSaver", "async", postgres)],
                Contender("PostgreSQL", "AsyncPostgresSaver", "async", postgres),
            ),
        ]
    return groups


def _table(
    groups: list[tuple[list[Contender], Contender]], steps: int, size: int, rounds: int
) -> str:
    lines = [
        (
            f"Checkpointer benchmark: {steps}-step agent loop, ~{size} B per message, "
            f"{rounds} round(s), rounds in rotated order, "
            f"Python {sys.version.split()[0]}"
        ),
        "",
        (
            "| backend | saver | whole loop (ms/invoke) | put (ms) | get_tuple (ms) "
            "| put_writes (ms) | DB size (KiB) | loop ratio | put ratio | get ratio "
            "| size ratio |"
        ),
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for ours, reference in groups:
        theirs = _median(reference.samples)
        for contender in [*ours, reference]:
            stats = _median(contender.samples)
            if contender is reference:
                ratios = ("1.00", "1.00", "1.00", "1.00")
            else:
                ratios = (
                    f"**{stats['loop'] / theirs['loop']:.2f}**",
                    f"**{stats['put'] / theirs['put']:.2f}**",
                    f"**{stats['get'] / theirs['get']:.2f}**",
                    f"**{contender.size / reference.size:.2f}**",
                )
            lines.append(
                f"| {contender.backend} {contender.kind} | {contender.label} "
                f"| {stats['loop'] * 1000:.2f} | {stats['put'] * 1000:.3f} "
                f"| {stats['get'] * 1000:.3f} "
                f"| {stats['writes'] * 1000:.3f} | {contender.size / 1024:,.0f} | "
                + " | ".join(ratios)
                + " |"
            )
    lines.append("")
    lines.append(
        "Ratios: Mnemos / reference saver of the same backend and mode (whole loop: goal "
        "≤ 0.80 at equal durability, i.e. the synchronous=FULL row on SQLite). Per-op columns: "
        "median over all steps of all rounds; whole loop: median of the rounds' ms per invoke."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--message-bytes", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3, help="Fresh runs per saver (default 3).")
    parser.add_argument(
        "--postgres",
        default=os.environ.get("MNEMON_TEST_POSTGRES_URL"),
        help="PostgreSQL URL (default: $MNEMON_TEST_POSTGRES_URL); omit to skip PostgreSQL.",
    )
    args = parser.parse_args(argv)
    if args.steps < 2 or args.message_bytes < 200 or args.rounds < 1:
        parser.error("--steps must be ≥ 2, --message-bytes ≥ 200 and --rounds ≥ 1")
    groups = contenders(args.postgres)
    with tempfile.TemporaryDirectory(prefix="mnemon-bench-") as folder:
        for round_ in range(args.rounds):
            for ours, reference in groups:
                # Rotate who goes first so that warm caches and load favour nobody.
                everyone = [*ours, reference]
                shift = round_ % len(everyone)
                order = everyone[shift:] + everyone[:shift]
                for contender in order:
                    contender.run(args.steps, args.message_bytes, Path(folder))
    print(_table(groups, args.steps, args.message_bytes, args.rounds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
