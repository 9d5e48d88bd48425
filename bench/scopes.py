"""Shared storage and scopes: what a served, multi-user deployment pays, in one run.

1. Runtime add and Document create, p50 / p95 over ``--ops`` operations, on the file backend
   (the embedded default), on database tables in SQLite and on database tables in PostgreSQL;
   ratio against the file backend. The backends take turns op by op (rotating order). Each op
   is a fresh entry / document (a new title and body),
   MEMORY kept below its limit by removing the oldest entry first when the next would not fit
   (untimed).
2. begin + end of a turn (``begin_turn`` + ``end_turn``, the calls the middleware makes) on the
   single local scope and on ``--users`` scoped users (each with its own USER entries, the turns
   rotating over them), steady threads; ratio scoped / single. Files backend.
3. Two replicas on one PostgreSQL: two processes, each a host over the same database (tables
   backend). Process A adds a Runtime entry; process B begins turns until the entry is in its
   Wake (it polls with a fresh turn each time). Write-to-visible latency p50 / p95 over
   ``--rounds`` writes, measured from A's acknowledged write to B's Wake that shows it (both
   read one monotonic clock: ``time.perf_counter_ns`` is system-wide on Linux).

Every loop runs an uncounted warm-up first. The whole set runs ``--rounds`` times (3), each
round on fresh roots and a fresh PostgreSQL schema (dropped at the end); the table shows the
median over the rounds of each round's p50 / p95, and of each round's ratio (the backends of a
ratio run interleaved in that round). The PostgreSQL URL comes from ``--postgres`` or
``MNEMON_TEST_POSTGRES_URL`` (``bash .ci/start-postgres.sh`` prints one). Temp roots live under
the current directory and are removed. Goals: none fixed; the table shows what a served,
multi-user deployment pays against the embedded single-user default (ratio p50).

    python bench/scopes.py [--ops 200] [--turns 200] [--users 8] [--writes 20] [--rounds 3]
                           [--postgres URL]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.messages import AIMessage, HumanMessage

from langgraph_mnemon import Mnemon
from langgraph_mnemon.graphs.turn import begin_turn, end_turn
from langgraph_mnemon.testing.postgres import fresh_schema

WARMUP = 20


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: list[float]) -> tuple[float, float]:
    return statistics.median(values), pct(values, 0.95)


def _hosts(tmp: Path, pg: str) -> dict[str, Callable[[], Mnemon]]:
    quiet = {"chroma": {"enabled": False}, "idle_review": {"delay_ms": 600_000}}
    return {
        "files": lambda: Mnemon.open(tmp / "files", **quiet),
        "SQLite tables": lambda: Mnemon.open(tmp / "sqlite", memory_storage="database", **quiet),
        "PostgreSQL tables": lambda: Mnemon.open(tmp / "pg", database_url=pg, **quiet),
    }


def _add(mem: Mnemon, i: int) -> float:
    text = f"Note {i} {uuid.uuid4().hex[:8]}: service {i} deploys through staging first."
    while mem.runtime.usage("memory").used + len(text) + 8 > mem.runtime.limit("memory"):
        mem.runtime.remove("memory", mem.runtime.entries("memory")[0].content)  # untimed
    start = time.perf_counter()
    mem.runtime.add("memory", text)
    return (time.perf_counter() - start) * 1000


def _create(mem: Mnemon, i: int) -> float:
    body = f"Decision {i}: we use {uuid.uuid4().hex} for the cache layer. " * 8
    start = time.perf_counter()
    mem.documents.create(f"ADR {i} {uuid.uuid4().hex[:6]}", body)
    return (time.perf_counter() - start) * 1000


def storage_rows(tmp: Path, pg: str, ops: int) -> list[tuple[str, tuple, tuple]]:
    """Every backend takes its turn op by op, in a rotating order, so drift cancels."""
    hosts = {name: opener() for name, opener in _hosts(tmp, pg).items()}
    timings: dict[str, dict[str, list[float]]] = {n: {"add": [], "create": []} for n in hosts}
    try:
        for kind, op in (("add", _add), ("create", _create)):
            for i in range(WARMUP + ops):
                names = list(hosts)
                names = names[i % len(names) :] + names[: i % len(names)]
                for name in names:
                    took = op(hosts[name], i)
                    if i >= WARMUP:
                        timings[name][kind].append(took)
    finally:
        for mem in hosts.values():
            mem.close()
    return [(n, summary(t["add"]), summary(t["create"])) for n, t in timings.items()]


def _turn(mem: Mnemon, thread: str, config: dict[str, Any]) -> float:
    scope = mem.resolve_scope(config)
    messages = [HumanMessage("What changed?"), AIMessage("Nothing much.")]
    start = time.perf_counter()
    turn_id, _ = begin_turn(mem, thread, messages, agent_id="main", root=True, memory_scope=scope)
    end_turn(mem, thread, turn_id, messages, root=True)
    return (time.perf_counter() - start) * 1000


def turn_rows(tmp: Path, turns: int, users: int) -> tuple[tuple, tuple]:
    with Mnemon.open(
        tmp / "turns", chroma={"enabled": False}, idle_review={"delay_ms": 600_000}
    ) as mem:
        mem.runtime.add("user", "Prefers concise answers.")
        mem.runtime.add("memory", "Deploys go through CI.")
        for u in range(users):
            view = mem.scoped(user=f"user-{u}", project="bench")
            view.runtime.add("user", f"User {u} prefers metric units.")
            view.runtime.add("memory", "Bench project deploys on Tuesdays.")
        single: list[float] = []
        scoped: list[float] = []
        for i in range(WARMUP + turns):
            # Alternate the order so drift cancels.
            pair = [
                ("single", {}),
                ("scoped", {"user_id": f"user-{i % users}", "mnemon_project": "bench"}),
            ]
            for kind, conf in pair if i % 2 else reversed(pair):
                thread = f"{kind}-{i % users}"
                took = _turn(mem, thread, {"configurable": {"thread_id": thread, **conf}})
                if i >= WARMUP:
                    (single if kind == "single" else scoped).append(took)
    return summary(single), summary(scoped)


def _writer(url: str, root: str, rounds: int, ready: Any, go: Any, stamps: Any) -> None:
    with Mnemon.open(root, database_url=url, chroma={"enabled": False}) as mem:
        ready.wait()
        for i in range(rounds):
            go.wait()
            go.clear()
            mem.runtime.add("memory", f"Replica marker {i}")
            stamps.put((i, time.perf_counter_ns()))


def replica_latency(tmp: Path, pg: str, rounds: int) -> tuple[float, float]:
    ctx = mp.get_context("spawn")
    ready, go, stamps = ctx.Event(), ctx.Event(), ctx.Queue()
    writer = ctx.Process(
        target=_writer, args=(pg, str(tmp / "replica-a"), rounds + 3, ready, go, stamps)
    )
    writer.start()
    latencies: list[float] = []
    try:
        with Mnemon.open(
            tmp / "replica-b", database_url=pg, chroma={"enabled": False},
            idle_review={"delay_ms": 600_000},
        ) as mem:  # fmt: skip
            begin_turn(mem, "warm", [], agent_id="main", root=True)
            ready.set()
            for i in range(rounds + 3):
                go.set()
                marker = f"Replica marker {i}"
                while True:
                    turn_id, new = begin_turn(mem, f"r{i}", [], agent_id="main", root=True)
                    seen = time.perf_counter_ns()
                    mem.turns.end(turn_id)
                    if any(marker in str(m.content) for m in new):
                        break
                _, wrote = stamps.get(timeout=30)
                if i >= 3:  # the first rounds warm both processes
                    latencies.append((seen - wrote) / 1e6)
    finally:
        writer.join(timeout=60)
    return summary(latencies)


def one_round(postgres: str, args: argparse.Namespace) -> list[tuple[str, tuple, tuple]]:
    """Every section once; rows of (measurement, (p50, p95), baseline (p50, p95) or None)."""
    with (
        tempfile.TemporaryDirectory(dir=".") as folder,
        fresh_schema(postgres, prefix="bench") as pg,
    ):
        tmp = Path(folder)
        storage = storage_rows(tmp, pg, args.ops)
        single, scoped = turn_rows(tmp, args.turns, args.users)
    with (
        tempfile.TemporaryDirectory(dir=".") as folder,
        fresh_schema(postgres, prefix="bench") as pg,
    ):
        replica = replica_latency(Path(folder), pg, args.writes)
    files = storage[0]
    rows = []
    for k, kind in ((1, "Runtime add"), (2, "Document create")):
        rows.append((f"{kind}, files backend", files[k], None))
        rows.extend((f"{kind}, {row[0]} vs files", row[k], files[k]) for row in storage[1:])
    rows.append(("begin + end of a turn, single local scope (files)", single, None))
    rows.append((f"begin + end, {args.users} users x one project vs single", scoped, single))
    rows.append(("two replicas on one PostgreSQL: a Runtime write to the other's next Wake",
                 replica, None))  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=200, help="adds and creates per backend")
    parser.add_argument("--turns", type=int, default=200, help="turns per scope")
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--writes", type=int, default=20, help="replica writes per round")
    parser.add_argument("--rounds", type=int, default=3, help="times the whole set runs")
    parser.add_argument("--postgres", default=os.environ.get("MNEMON_TEST_POSTGRES_URL"))
    args = parser.parse_args()
    if not args.postgres:
        sys.exit("set --postgres or MNEMON_TEST_POSTGRES_URL (bash .ci/start-postgres.sh)")
    began = time.perf_counter()
    rounds = [one_round(args.postgres, args) for _ in range(args.rounds)]
    took = time.perf_counter() - began
    print(
        f"\nShared storage and scopes, ms, medians of {args.rounds} rounds ({args.ops} ops per "
        f"backend, {args.turns} turns per scope, {args.writes} replica writes each; {took:.0f} s)"
    )
    print("| measurement | p50 | p95 | baseline p50 | baseline p95 | ratio p50 | ratio p95 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for i, (name, _, base) in enumerate(rounds[0]):
        ours = [r[i][1] for r in rounds]
        cells = [f"{statistics.median(v[q] for v in ours):.2f}" for q in (0, 1)]
        if base is None:
            cells += ["–"] * 4
        else:
            bases = [r[i][2] for r in rounds]
            cells += [f"{statistics.median(b[q] for b in bases):.2f}" for q in (0, 1)]
            cells += [
                f"{statistics.median(o[q] / b[q] for o, b in zip(ours, bases, strict=True)):.2f}x"
                for q in (0, 1)
            ]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
