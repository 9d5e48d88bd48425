"""Runtime Memory add latency and throughput against the floor of a bare durable atomic write.

MEMORY.md runs at its default 10 KiB limit, kept full: when an add would overflow, the oldest
entry is removed (untimed) and the add retried, so every timed add commits into a realistic hot
file (~100 entries). The floor writes the very JSON bytes each add committed (temp file + fsync +
rename; no lock, no projections, no directory fsync). 1 process, then N processes on one root.

Goal: add latency and throughput <= 2x the floor (ratios ours / floor for latency, floor / ours
for throughput). Each scenario runs ``--rounds`` rounds (3 by default) on a fresh root; the table
shows the median of the per-round figures. With 1 process ours and the floor alternate op by op;
with N processes the side that goes first alternates round by round (a floor-first round writes
the bytes the previous round committed). The default run takes about a minute.

    python bench/runtime_memory.py [--adds 400] [--procs 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph_mnemon.errors import AmbiguousMatchError, CapacityError, NoMatchError
from langgraph_mnemon.memory_layers.runtime import RuntimeMemory

LIMIT = 10_240


def _floor_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _add_keeping_full(rm: RuntimeMemory, text: str) -> tuple[float, int]:
    """Time one committed add; evict the oldest entry (untimed) whenever it would overflow."""
    evictions = 0
    while True:
        t0 = time.perf_counter()
        try:
            rm.add("memory", text)
        except CapacityError:
            with contextlib.suppress(NoMatchError, AmbiguousMatchError):
                rm.remove("memory", rm.entries("memory")[0].content)
                evictions += 1
            continue
        return time.perf_counter() - t0, evictions


def _floor_loop(floor_path: Path, committed: list[bytes]) -> tuple[list[float], float]:
    """Write each committed JSON the floor's way; the per-write latencies and the wall time."""
    floor: list[float] = []
    start = time.perf_counter()
    for data in committed:
        t0 = time.perf_counter()
        _floor_write(floor_path, data)
        floor.append(time.perf_counter() - t0)
    return floor, time.perf_counter() - start


def _worker(args: tuple[str, str, int, int, mp.synchronize.Barrier, list[bytes] | None]) -> dict:
    root, floor_dir, worker, count, barrier, floor_first = args
    rm = RuntimeMemory(root, memory_limit_bytes=LIMIT, user_limit_bytes=LIMIT)
    authority = Path(root) / "runtime" / "memories.json"
    floor_path = Path(floor_dir) / "memories.json"
    ours: list[float] = []
    floor: list[float] = []
    committed: list[bytes] = []
    commits = 0
    interleave = worker < 0  # the single-process run alternates ours and floor op by op
    floor_wall = 0.0
    if floor_first is not None:  # this round the floor goes first, on last round's bytes
        barrier.wait()
        floor, floor_wall = _floor_loop(floor_path, floor_first)
    barrier.wait()
    start = time.perf_counter()
    for i in range(count):
        took, evictions = _add_keeping_full(
            rm, f"worker {worker} remembers fact number {i}: the build uses uv and ruff."
        )
        ours.append(took)
        commits += 1 + evictions
        data = authority.read_bytes()
        if interleave:
            t0 = time.perf_counter()
            _floor_write(floor_path, data)
            floor.append(time.perf_counter() - t0)
        else:
            committed.append(data)
    ours_wall = time.perf_counter() - start
    if interleave:
        return {"ours": ours, "floor": floor, "ours_wall": None, "commits": commits}
    if floor_first is None:
        barrier.wait()
        floor, floor_wall = _floor_loop(floor_path, committed)
    return {
        "committed": committed,
        "ours": ours,
        "floor": floor,
        "ours_wall": ours_wall,
        "floor_wall": floor_wall,
        "commits": commits,
    }


def run(procs: int, adds: int, previous: list[dict] | None = None) -> tuple[dict, list[dict]]:
    """One round; ``previous`` (last round's worker results) makes the floor go first."""
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        root, floor_dir = Path(tmp) / "root", Path(tmp) / "floor"
        floor_dir.mkdir()
        RuntimeMemory(root, memory_limit_bytes=LIMIT, user_limit_bytes=LIMIT)
        ctx = mp.get_context("spawn")
        with ctx.Manager() as manager:
            barrier = manager.Barrier(procs)
            workers = [-1] if procs == 1 else list(range(procs))
            with ctx.Pool(procs) as pool:
                jobs = [
                    (str(root), str(floor_dir), w, adds, barrier,
                     previous[k]["committed"] if previous else None)
                    for k, w in enumerate(workers)
                ]  # fmt: skip
                results = pool.map(_worker, jobs)
        final = RuntimeMemory(root, memory_limit_bytes=LIMIT)
        assert final.usage("memory").used <= LIMIT
    ours = [x for r in results for x in r["ours"]]
    floor = [x for r in results for x in r["floor"]]
    row = {
        "ours_median": statistics.median(ours) * 1000,
        "ours_p95": statistics.quantiles(ours, n=20)[-1] * 1000,
        "floor_median": statistics.median(floor) * 1000,
        "floor_p95": statistics.quantiles(floor, n=20)[-1] * 1000,
    }
    if procs == 1:  # interleaved: throughput of each is the inverse of its mean latency
        row["ours_tput"] = len(ours) / sum(ours)
        row["floor_tput"] = len(floor) / sum(floor)
    else:  # every commit counts: the timed adds and the evicting removes
        row["ours_tput"] = sum(r["commits"] for r in results) / max(r["ours_wall"] for r in results)
        row["floor_tput"] = len(floor) / max(r["floor_wall"] for r in results)
    return row, results


def rounds(procs: int, adds: int, count: int) -> dict:
    """The median of each figure over ``count`` rounds; who goes first alternates (N procs)."""
    rows, previous = [], None
    for i in range(count):
        row, results = run(procs, adds, previous if i % 2 else None)
        row["lat_ratio"] = row["ours_median"] / row["floor_median"]  # paired within the round
        row["tput_ratio"] = row["floor_tput"] / row["ours_tput"]
        rows.append(row)
        previous = results if procs > 1 else None
    return {key: statistics.median(r[key] for r in rows) for key in rows[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adds", type=int, default=400, help="adds per process")
    parser.add_argument("--procs", type=int, default=4, help="processes in the concurrent run")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each scenario")
    args = parser.parse_args()
    began = time.perf_counter()
    rows = [
        ("1 process", rounds(1, args.adds, args.rounds)),
        (f"{args.procs} processes", rounds(args.procs, args.adds, args.rounds)),
    ]
    print(
        f"Runtime Memory add vs bare durable atomic write ({args.adds} adds per process, "
        f"MEMORY.md kept full at {LIMIT} bytes; medians of {args.rounds} rounds, "
        f"{time.perf_counter() - began:.0f} s)\n"
    )
    print(
        "| scenario | add median ms | add p95 ms | adds/s | floor median ms | floor p95 ms "
        "| floor writes/s | latency ratio | throughput ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in rows:
        print(
            f"| {name} | {r['ours_median']:.3f} | {r['ours_p95']:.3f} | {r['ours_tput']:.0f} "
            f"| {r['floor_median']:.3f} | {r['floor_p95']:.3f} | {r['floor_tput']:.0f} "
            f"| {r['lat_ratio']:.2f}x | {r['tput_ratio']:.2f}x |"
        )
    print(
        "\n1 process: ours and the floor alternate op by op; adds/s = 1 / mean add latency. "
        f"{args.procs} processes: all commits (adds + the evicting removes) / wall time, floor "
        "in the same process count with no lock, going first every other round. "
        "Ratios: ours / floor (latency), floor / ours (throughput); goal <= 2x."
    )


if __name__ == "__main__":
    main()
