"""Benchmark: LangGraph's ``test_large_batches_async`` workload on ``mem.store()``.

The workload of LangGraph's store tests (``test_large_batches_async``): for ``m`` in
``range(M)`` and ``i`` in ``range(N)``, six concurrent operations on namespace
``("test", "foo", "bar", "baz", str(m % 2))``: ``aput``, ``aget``, ``alist_namespaces``
(``max_depth=m + 1``), ``asearch(("test",))``, ``aput`` again and ``adelete``; all
``6 * N * M`` coroutines gathered at once (60,000 with the defaults). The store runs on the
embedded SQLite file with default settings (busy timeout 5 s, the event loop's default
thread pool), or on PostgreSQL with ``--postgres URL``.

Before the SQLite write gate (issue 30, item 6) some runs failed with "database is locked";
a run now must end with zero failed operations. One table: operations, failures, seconds,
operations per second.

    python bench/store_large_batches.py [--n 1000] [--m 10] [--runs 1] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph_mnemon import Mnemon
from langgraph_mnemon.testing.postgres import fresh_schema
from langgraph_mnemon.testing.store_load import large_batches


def _run(n: int, m: int, postgres: str | None) -> tuple[int, list[BaseException], float]:
    with ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "root"
        options: dict[str, Any] = {}
        if postgres:
            options["database_url"] = stack.enter_context(fresh_schema(postgres, prefix="b"))
        host = stack.enter_context(Mnemon.open(root, **options))
        started = time.perf_counter()
        results = asyncio.run(large_batches(host.store(), n, m))
        seconds = time.perf_counter() - started
    failed = [r for r in results if isinstance(r, BaseException)]
    return len(results), failed, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--m", type=int, default=10)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server URL")
    args = parser.parse_args()
    database = "postgresql" if args.postgres else "sqlite"
    print(f"{'run':>3}  {'database':<10} {'ops':>7} {'failed':>6} {'seconds':>8} {'ops/s':>7}")
    failures = 0
    for run in range(1, args.runs + 1):
        ops, failed, seconds = _run(args.n, args.m, args.postgres)
        failures += len(failed)
        print(
            f"{run:>3}  {database:<10} {ops:>7} {len(failed):>6} {seconds:>8.1f} "
            f"{ops / seconds:>7.0f}"
        )
        for error in failed[:3]:
            print(f"     {type(error).__name__}: {str(error)[:200]}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
