"""A/B timing of ``mem.spaces.search`` between two checkouts of the code on a busy machine.

Two worker processes, one per checkout (``PYTHONPATH`` set to it), each load the LoCoMo dev
data as ``bench/locomo.py`` does (SQLite, default configuration) and warm up; then every
question is searched by A and at once by B, each keeping its fastest of ``--repeat`` searches.
The other processes of the machine slow both sides alike, so the per-question ratio B/A and
the two distributions compare the code, not the moment. Not a test; it needs
``../shared/bench/locomo-dev.json``.

Run:  python bench/_ab_search.py /path/to/old/checkout /path/to/new/checkout [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

_WORKER = r"""
import sys, tempfile, time
from pathlib import Path
from bench.locomo import K, load, memory_items
from langgraph_mnemon import Mnemon

data_path, repeat = Path(sys.argv[1]), int(sys.argv[2])
with tempfile.TemporaryDirectory() as tmp:
    mem = Mnemon.open(Path(tmp) / "root")
    questions = []
    for sample, turns, qs in load(data_path):
        mem.spaces.create_space(f"LoCoMo {sample}", space_id=sample)
        for start in range(0, len(turns), 200):
            mem.spaces.remember_many(memory_items(turns[start : start + 200]), space_id=sample)
        questions.extend((sample, q.text) for q in qs)
    for sample, text in questions[::10]:  # warm-up: caches, statements, the embedder
        mem.spaces.search(text, limit=K, space_ids=[sample])
    print(len(questions), flush=True)
    for line in sys.stdin:
        sample, text = questions[int(line)]
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            mem.spaces.search(text, limit=K, space_ids=[sample])
            best = min(best, time.perf_counter() - start)
        print(best, flush=True)
    mem.close()
"""


def _worker(checkout: Path, data: Path, repeat: int) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    return subprocess.Popen(
        [sys.executable, "-c", _WORKER, str(data), str(repeat)],
        cwd=checkout,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _ask(worker: subprocess.Popen[str], index: int) -> float:
    assert worker.stdin is not None
    assert worker.stdout is not None
    worker.stdin.write(f"{index}\n")
    worker.stdin.flush()
    return float(worker.stdout.readline())


def _summary(name: str, times: list[float]) -> str:
    ordered = sorted(times)
    p50 = ordered[len(ordered) // 2] * 1000
    p95 = ordered[int(0.95 * len(ordered)) - 1] * 1000
    return (
        f"{name}: p50 {p50:.3f} ms, p95 {p95:.3f} ms, mean {statistics.fmean(times) * 1000:.3f} ms"
    )


def main(argv: Sequence[str] | None = None) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.locomo import DATA

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    workers = [_worker(p.resolve(), args.data.resolve(), args.repeat) for p in (args.a, args.b)]
    counts = []
    for w in workers:
        assert w.stdout is not None
        counts.append(int(w.stdout.readline()))
    if counts[0] != counts[1]:
        raise SystemExit(f"the two sides loaded different questions: {counts}")
    a_times, b_times = [], []
    for i in range(counts[0]):
        a_times.append(_ask(workers[0], i))
        b_times.append(_ask(workers[1], i))
    for w in workers:
        assert w.stdin is not None
        w.stdin.close()
        w.wait()
    ratios = sorted(b / a for a, b in zip(a_times, b_times, strict=True))
    print(_summary(f"A {args.a}", a_times))
    print(_summary(f"B {args.b}", b_times))
    print(f"B/A per question: median {ratios[len(ratios) // 2]:.3f}")


if __name__ == "__main__":
    main()
