"""Capacity maintenance latency in heuristic mode on the embedded defaults.

1. An add that overflows MEMORY.md (10 KiB, ~40 entries) → archival of every entry into a
   native Memory Space → committed receipt.
2. A create that overflows the active Documents budget (10 MiB) → cold reference in a native
   space → move of the LRU document → the create committed.
Goal: p50 <= 100 ms for each flow (the table's ``p50 / goal`` column). There is no baseline
run beside them. Each round uses a fresh root and runs both flows, the one that goes first
alternating round by round; the table shows the median (p50) and p95 over ``--rounds`` rounds
(15), after one uncounted warm-up round of each (imports, graph compilation, embedder load).

    python bench/worker_graphs.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph_mnemon import Mnemon
from langgraph_mnemon.memory_layers.documents import DocumentMutation
from langgraph_mnemon.memory_layers.runtime import RuntimeMutation

ENTRY = (
    "Rule {i}: service {i} deploys through the staging pipeline, needs two approvals, "
    "and is rolled back with the runbook in docs/ops; on-call pages the owner after {i} min. "
)


def memory_round(tmp: Path) -> tuple[float, int]:
    with Mnemon.open(tmp / "root", workspace=tmp) as mem:
        mem.spaces.create_space("Project", "Project rules", active=True)
        i = 0
        while True:
            text = (ENTRY.format(i=i) * 2)[:240]
            if mem.runtime.usage("memory").used + len(text) + 4 > mem.runtime.limit("memory"):
                break
            mem.runtime.add("memory", text)
            i += 1
        request = RuntimeMutation(action="add", target="memory", content="A new rule. " * 20)
        start = time.perf_counter()
        receipt = mem.write_runtime(request)
        took = time.perf_counter() - start
        assert receipt.status == "committed"
        return took, i


def document_round(tmp: Path) -> tuple[float, int]:
    with Mnemon.open(tmp / "root", workspace=tmp) as mem:
        mem.spaces.create_space("Docs", "Project documents", active=True)
        body = ("Design notes and decisions for the queue service. " * 20 + "\n") * 1000
        count = 0
        while mem.documents.capacity_plan(
            DocumentMutation(action="create", title=f"Design {count}", content=body)
        ).fits:
            mem.documents.create(f"Design {count}", body)
            count += 1
        mutation = DocumentMutation(action="create", title="ADR: queues", content=body)
        start = time.perf_counter()
        receipt = mem.write_document(mutation)
        took = time.perf_counter() - start
        assert receipt.status == "committed"
        return took, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    flows = (
        ("MEMORY add → archival → receipt", memory_round),
        ("Document create → cold archive → commit", document_round),
    )
    times: dict[str, list[float]] = {name: [] for name, _ in flows}
    sizes: dict[str, int] = {}
    began = time.perf_counter()
    for i in range(-1, args.rounds):  # round -1 warms up (imports, compilation, embedder load)
        for name, fn in flows if i % 2 == 0 else flows[::-1]:
            with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
                took, size = fn(Path(tmp))
            if i >= 0:
                times[name].append(took * 1000)
                sizes[name] = size
    took = time.perf_counter() - began
    print(
        f"Capacity maintenance, heuristic mode, embedded defaults ({args.rounds} rounds, "
        f"flows alternating, {took:.0f} s)\n"
    )
    print("| flow | items before | p50 ms | p95 ms | p50 / goal (100 ms) |")
    print("|---|---:|---:|---:|---:|")
    for name, _ in flows:
        p50 = statistics.median(times[name])
        p95 = statistics.quantiles(times[name], n=20)[-1]
        print(f"| {name} | {sizes[name]} | {p50:.1f} | {p95:.1f} | {p50 / 100:.2f}x |")


if __name__ == "__main__":
    main()
