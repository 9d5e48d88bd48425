"""Serving: control-plane direct search and a full agent turn through LangGraph server.

For each database (SQLite file; PostgreSQL when ``--postgres URL`` or ``MNEMON_TEST_POSTGRES_URL``
is set) a fresh root is seeded in-process with ``--memories`` synthetic memories in one native
Memory Space (the generator of ``bench/recall_scale.py``), then ``mnemon serve`` starts on a
free loopback port and is measured:

1. Control-plane direct search, ``POST /mnemon/api/recall`` (limit 10), ``--clients`` concurrent
   clients (threads with their own keep-alive connection), each sending ``--requests`` requests
   with distinct queries (2-4 words of a stored memory). Reports p50 / p95 latency and
   requests/s over the whole bounded loop, and the p50 of one client alone. Baseline: the same
   queries through ``mem.spaces.search`` in-process, one client (what HTTP and the server add).
2. A full agent turn: ``runs.wait`` of the demo agent (scripted model; the turn lifecycle, one
   ``mnemon_runtime_memory`` tool call, checkpoints in our saver) on a new thread each turn,
   ``--turns`` turns, p50 / p95. Baselines: the same scripted model and tool call served by the
   same server without memory (``bench/_serve_baseline.py``: no middleware, a tool that stores
   nothing), interleaved run by run; and our agent in-process
   (``create_agent(..., checkpointer=mem.checkpointer())`` invoked directly). The served
   baseline carries the dev server's own queue latency (its in-memory queue polls every 0.5 s).

Every measurement runs ``--rounds`` times (3) against one server per database, the five loops of
a round in a rotated order (served 8 clients, served 1 client, in-process search, served turns,
in-process turns), each round on its own slice of distinct queries; the table shows the median
over the rounds of each round's p50 / p95 / rate, and of each round's ratio. The first round's
loops run an uncounted warm-up first. Roots live under a temp folder and are removed. Goals: the
control plane adds little to a search (1-client ratio near 1x) and the memory adds little to a
served turn (ratio to bare near 1x). The default run takes about 4 minutes (two databases).

    python bench/serve.py [--memories 2000] [--clients 8] [--requests 50] [--turns 8]
                          [--rounds 3] [--postgres postgresql://...]
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from langchain.agents import create_agent
from langgraph_sdk import get_sync_client

from bench._common import Corpus
from langgraph_mnemon import Mnemon
from langgraph_mnemon.server.demo import demo_model
from langgraph_mnemon.server.launch import start, wait_ready

WARMUP = 5


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def seed(root: Path, memories: int, database_url: str | None) -> list[str]:
    """Fill one native space; return the queries (2-4 words of stored memories)."""
    corpus = Corpus()
    items = [corpus.memory(i) for i in range(memories)]
    settings: dict[str, Any] = {"idle_review": {"delay_ms": 600_000}}
    if database_url:
        settings["database_url"] = database_url
    with Mnemon.open(root, **settings) as mem:
        space = mem.spaces.create_space("Bench", "Synthetic memories for bench/serve.py").space
        assert space is not None
        for start in range(0, len(items), 500):
            mem.spaces.remember_many(items[start : start + 500], space_id=space.id)
    rng = random.Random(11)
    queries = []
    for item in items:
        words = str(item["content"]).rstrip(".").split()
        k = min(len(words), rng.randint(2, 4))
        at = rng.randrange(0, len(words) - k + 1)
        queries.append(" ".join(words[at : at + k]))
    rng.shuffle(queries)
    return queries


def direct_search(
    url: str, queries: list[str], clients: int, requests: int, warmup: int = WARMUP
) -> dict[str, float]:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client(index: int) -> None:
        own = queries[index * requests : (index + 1) * requests]
        with httpx.Client(base_url=url, timeout=60) as http:
            for q in queries[len(queries) - warmup :]:
                http.post("/mnemon/api/recall", json={"query": q, "limit": 10})
            barrier.wait()
            for q in own:
                t0 = time.perf_counter()
                r = http.post("/mnemon/api/recall", json={"query": q, "limit": 10})
                dt = time.perf_counter() - t0
                with lock:
                    latencies.append(dt)
                    if r.status_code != 200:
                        errors.append(r.text[:200])

    barrier = threading.Barrier(clients + 1)
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        raise SystemExit(f"direct search failed: {errors[0]}")
    return {
        "p50": percentile(latencies, 0.5),
        "p95": percentile(latencies, 0.95),
        "rps": len(latencies) / wall,
    }


def inprocess_search(
    root: Path, queries: list[str], database_url: str | None, warmup: int = WARMUP
) -> dict[str, float]:
    settings = {"database_url": database_url} if database_url else {}
    with Mnemon.open(root, **settings) as mem:
        for q in queries[len(queries) - warmup :]:
            mem.spaces.search(q, limit=10)
        latencies = []
        t_all = time.perf_counter()
        for q in queries:
            t0 = time.perf_counter()
            mem.spaces.search(q, limit=10)
            latencies.append(time.perf_counter() - t0)
        wall = time.perf_counter() - t_all
    return {
        "p50": percentile(latencies, 0.5),
        "p95": percentile(latencies, 0.95),
        "rps": len(latencies) / wall,
    }


def _turn_input(i: int) -> dict[str, Any]:
    text = f"remember that service {i} is owned by team {uuid.uuid4().hex[:6]}"
    return {"messages": [{"role": "user", "content": text}]}


def served_turns(url: str, turns: int, warmup: int = WARMUP) -> dict[str, list[float]]:
    """Our agent and the bare baseline, interleaved (the order alternates) so drift cancels."""
    client = get_sync_client(url=url, api_key=None)
    out: dict[str, list[float]] = {"mnemon_agent": [], "bare_agent": []}
    for i in range(warmup + turns):
        order = list(out) if i % 2 == 0 else list(reversed(out))
        for graph in order:
            thread = client.threads.create()["thread_id"]
            t0 = time.perf_counter()
            result = client.runs.wait(thread, graph, input=_turn_input(i))
            dt = time.perf_counter() - t0
            if not any(m["type"] == "tool" for m in result["messages"]):
                raise SystemExit(f"the served {graph} turn made no tool call: {result}")
            if i >= warmup:
                out[graph].append(dt)
    return out


def inprocess_turns(
    root: Path, turns: int, database_url: str | None, warmup: int = WARMUP
) -> list[float]:
    settings: dict[str, Any] = {"idle_review": {"delay_ms": 600_000}}
    if database_url:
        settings["database_url"] = database_url
    with Mnemon.open(root, **settings) as mem:
        agent = create_agent(
            demo_model(mem),
            tools=mem.tools(),
            middleware=[mem.middleware()],
            checkpointer=mem.checkpointer(),
        )
        out = []
        for i in range(warmup + turns):
            config = {"configurable": {"thread_id": uuid.uuid4().hex}}
            t0 = time.perf_counter()
            agent.invoke(_turn_input(i), config)
            dt = time.perf_counter() - t0
            if i >= warmup:
                out.append(dt)
    return out


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def one_round(
    r: int, server_url: str, root: Path, url: str | None, queries: list[str], args: Any
) -> dict[str, Any]:
    """The five loops of round ``r`` in a rotated order, on the round's slice of queries."""
    n = args.clients * args.requests
    own = queries[r * n : (r + 1) * n]
    warm = WARMUP if r == 0 else 1
    agent_root = root.parent / f"{root.name}-agent"
    loops: dict[str, Callable[[], Any]] = {
        "search": lambda: direct_search(server_url, own, args.clients, args.requests, warm),
        "alone": lambda: direct_search(server_url, own[::-1], 1, args.requests, warm),
        "base_search": lambda: inprocess_search(root, own, url, warm),
        "turns": lambda: served_turns(server_url, args.turns, warm),
        "base_turns": lambda: inprocess_turns(agent_root, args.turns, url, warm),
    }
    names = list(loops)
    names = names[r % len(names) :] + names[: r % len(names)]
    return {name: loops[name]() for name in names}


def table_rows(store: str, clients: int, rounds: list[dict[str, Any]]) -> list[list[str]]:
    """One store's rows: each figure the median over the rounds (ratios per round first)."""

    def med(fn: Callable[[dict[str, Any]], float]) -> float:
        return statistics.median(fn(r) for r in rounds)

    def turn(r: dict[str, Any], graph: str, q: float) -> float:
        return percentile(r["turns"][graph], q)

    ours_p50 = med(lambda r: turn(r, "mnemon_agent", 0.5))
    bare_p50 = med(lambda r: turn(r, "bare_agent", 0.5))
    base_p50 = med(lambda r: percentile(r["base_turns"], 0.5))
    return [
        [store, f"direct search, served, {clients} clients", ms(med(lambda r: r["search"]["p50"])),
         ms(med(lambda r: r["search"]["p95"])), f"{med(lambda r: r['search']['rps']):.0f}",
         "in-process search, 1 client", ms(med(lambda r: r["base_search"]["p50"])),
         f"{med(lambda r: r['base_search']['rps']):.0f}", "–",
         f"{med(lambda r: r['search']['rps'] / r['base_search']['rps']):.2f}× req/s"],
        [store, "direct search, served, 1 client", ms(med(lambda r: r["alone"]["p50"])),
         ms(med(lambda r: r["alone"]["p95"])), f"{med(lambda r: r['alone']['rps']):.0f}",
         "in-process search, 1 client", ms(med(lambda r: r["base_search"]["p50"])),
         f"{med(lambda r: r['base_search']['rps']):.0f}",
         ms(med(lambda r: r["alone"]["p50"] - r["base_search"]["p50"])),
         f"{med(lambda r: r['alone']['p50'] / r['base_search']['p50']):.2f}× p50"],
        [store, "agent turn, served", ms(ours_p50),
         ms(med(lambda r: turn(r, "mnemon_agent", 0.95))), "–", "bare agent, served",
         ms(bare_p50), "–",
         ms(med(lambda r: turn(r, "mnemon_agent", 0.5) - turn(r, "bare_agent", 0.5))),
         f"{med(lambda r: turn(r, 'mnemon_agent', 0.5) / turn(r, 'bare_agent', 0.5)):.2f}× p50"],
        [store, "agent turn, in-process", ms(base_p50),
         ms(med(lambda r: percentile(r["base_turns"], 0.95))), "–", "–", "–", "–", "–", "–"],
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=50, help="per client and round")
    parser.add_argument("--turns", type=int, default=8, help="per graph and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--postgres", default=os.environ.get("MNEMON_TEST_POSTGRES_URL"))
    args = parser.parse_args()
    if args.memories < args.rounds * args.clients * args.requests:
        parser.error("--memories must be at least --rounds × --clients × --requests")

    backends: list[tuple[str, str | None]] = [("SQLite", None)]
    if args.postgres:
        backends.append(("PostgreSQL", args.postgres))
    else:
        print("PostgreSQL skipped: pass --postgres URL (bash .ci/start-postgres.sh prints one)")

    rows: list[list[str]] = []
    began = time.perf_counter()
    # "tmp..." in the checkout: .gitignore's /tmp*/ keeps a running bench's roots out of git.
    with tempfile.TemporaryDirectory(prefix="tmp-bench-serve-", dir=".") as tmp:
        for name, url in backends:
            if url:
                url = fresh_database(url)
            root = Path(tmp) / name.lower()
            print(f"[{name}] seeding {args.memories} memories ...", file=sys.stderr)
            queries = seed(root, args.memories, url)
            with served(root, url) as server_url:
                rounds = [
                    one_round(r, server_url, root, url, queries, args) for r in range(args.rounds)
                ]
            rows.extend(table_rows(name, args.clients, rounds))
    took = time.perf_counter() - began
    print(
        f"\nServing, medians of {args.rounds} rounds: direct search ({args.clients} clients × "
        f"{args.requests} requests a round, {args.memories} memories, limit 10) and a full "
        f"agent turn (demo agent, scripted model, one tool call, {args.turns} turns a round); "
        f"{took:.0f} s"
    )
    print(
        "| store | measurement | p50 | p95 | per s | baseline | baseline p50 | baseline per s "
        "| added p50 | ratio |"
    )
    print("|---|---|---:|---:|---:|---|---:|---:|---:|---:|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


@contextmanager
def served(root: Path, postgres: str | None) -> Iterator[str]:
    """``mnemon serve``'s server on a free loopback port, its log under the root."""
    os.environ["MNEMON_IDLE_REVIEW__DELAY_MS"] = "600000"  # no review during the timed loops
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (root / "server.log").open("wb")
    baseline = Path(__file__).resolve().parent / "_serve_baseline.py"
    process = start(
        root,
        port=port,
        postgres=postgres,
        extra_graphs={"bare_agent": f"{baseline}:agent"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, timeout=60, process=process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def fresh_database(url: str) -> str:
    """A new schema on the PostgreSQL server, so each run starts empty."""
    import psycopg

    plain = url.replace("postgresql+psycopg://", "postgresql://", 1)
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{schema}"


if __name__ == "__main__":
    main()
