"""Start-up: what importing the package, ``mnemon --help``, a refused ``mnemon serve`` and the
first operation on a new root cost, each in fresh processes.

Every measurement is a cold run in a new ``python`` process (``--runs`` rounds, at least 5),
and each round runs the subject and its baseline one after the other, the order alternating
from round to round, so machine load drifts into both. The table shows the medians, the ratio
of the medians and whether the goal of issue 28 holds:

1. ``from langgraph_mnemon import Mnemon`` against ``import langgraph.graph,
   langchain_core.messages`` (what any LangGraph agent imports anyway): at most 1.5x.
2. ``mnemon --help`` against ``--help`` of a minimal Typer app (one command, written to a temp
   file): at most 2x.
3. ``mnemon serve`` refusing a busy port (a socket of this script listens on a free loopback
   port) and refusing a bad setting (``MNEMON_TIMEOUT_MS=5``, below its range), wall time from
   start to exit: at most 2 s each, and the refusal must be the expected one-line error.
4. The first operation on a new root, timed inside the child after its imports:
   ``Mnemon.open(root).status()``, and ``Mnemon.open(root, memory_storage="database")
   .runtime.add(...)`` (creates the SQLite schema; on PostgreSQL too when ``--postgres URL``
   or ``MNEMON_TEST_POSTGRES_URL`` is set, each run in a fresh schema): at most 0.5 s each
   (the goal is for a quiet machine).

The children run with no ``MNEMON_*`` variable of the caller, in a temp folder that is removed.
The default run takes about a minute.

    python bench/startup.py [--runs 7] [--postgres postgresql://...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from langgraph_mnemon.testing.postgres import fresh_schema

MINIMAL_TYPER_APP = """\
import typer

app = typer.Typer()


@app.command()
def hello(name: str = "world") -> None:
    print(f"hello {name}")


app()
"""

FIRST_OPERATION = """\
import sys, time
from langgraph_mnemon import Mnemon

root, operation = sys.argv[1], sys.argv[2]
settings = {} if operation == "status" else {"memory_storage": "database"}
if len(sys.argv) > 3:
    settings["database_url"] = sys.argv[3]
started = time.perf_counter()
with Mnemon.open(root, **settings) as mem:
    if operation == "status":
        mem.status()
    else:
        assert mem.runtime.add("user", "Prefers concise answers.").status == "committed"
    print(time.perf_counter() - started)
"""


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMON_")}
    return {**env, **extra}


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, str]:
    """Wall seconds of one fresh process, and what it wrote (stdout + stderr)."""
    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=cwd, env=env or child_env(), capture_output=True, text=True, timeout=300
    )
    seconds = time.perf_counter() - started
    return seconds, done.stdout + done.stderr + f"\n[exit {done.returncode}]"


def mnemon_command() -> list[str]:
    """The ``mnemon`` console script next to this interpreter (else ``python -m``)."""
    script = Path(sys.executable).parent / "mnemon"
    if script.is_file():
        return [str(script)]
    found = shutil.which("mnemon")
    return [found] if found else [sys.executable, "-m", "langgraph_mnemon.cli"]


def paired(
    runs: int, subject: Callable[[], float], baseline: Callable[[], float]
) -> tuple[list[float], list[float]]:
    """``runs`` rounds of subject and baseline, the order alternating round by round."""
    times: dict[str, list[float]] = {"subject": [], "baseline": []}
    for round_ in range(runs):
        order = [("subject", subject), ("baseline", baseline)]
        for name, measure in order if round_ % 2 == 0 else reversed(order):
            times[name].append(measure())
    return times["subject"], times["baseline"]


def checked(seconds_and_output: tuple[float, str], expected: str) -> float:
    seconds, output = seconds_and_output
    if expected not in output:
        raise SystemExit(f"expected {expected!r} in the output, got:\n{output[-2000:]}")
    return seconds


@contextmanager
def busy_port() -> Iterator[int]:
    """A free loopback port (never 2024) with a socket of ours listening on it."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield int(taken.getsockname()[1])


def first_operation(tmp: Path, operation: str, postgres: str | None = None) -> float:
    """Seconds of the first operation on a new root, timed in the child after its imports."""
    root = tmp / f"root-{uuid.uuid4().hex[:8]}"
    command = [sys.executable, "-c", FIRST_OPERATION, str(root), operation]
    if postgres is None:
        _, output = run(command, tmp)
    else:
        with fresh_schema(postgres, prefix="bench_startup") as url:
            _, output = run([*command, url], tmp)
    try:
        return float(output.split("\n", 1)[0])
    except ValueError:
        raise SystemExit(f"the first {operation} failed:\n{output[-2000:]}") from None


Row = tuple[str, float, float | None, float | None, str, bool]


def measure(runs: int, tmp: Path, postgres: str | None) -> list[Row]:
    python = sys.executable
    rows: list[Row] = []

    subject, base = paired(
        runs,
        lambda: checked(run([python, "-c", "from langgraph_mnemon import Mnemon"], tmp), "exit 0"),
        lambda: checked(
            run([python, "-c", "import langgraph.graph, langchain_core.messages"], tmp), "exit 0"
        ),
    )
    rows.append(_ratio_row("from langgraph_mnemon import Mnemon", subject, base, 1.5))

    app = tmp / "minimal_typer_app.py"
    app.write_text(MINIMAL_TYPER_APP, encoding="utf-8")
    subject, base = paired(
        runs,
        lambda: checked(run([*mnemon_command(), "--help"], tmp), "Usage: mnemon"),
        lambda: checked(run([python, str(app), "--help"], tmp), "Usage:"),
    )
    rows.append(_ratio_row("mnemon --help (vs a minimal Typer app)", subject, base, 2.0))

    def refused_busy_port() -> float:
        with busy_port() as port:
            command = [*mnemon_command(), "--root", str(tmp / "served"), "serve", "--port"]
            return checked(run([*command, str(port)], tmp), "is already in use")

    def refused_bad_setting() -> float:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        command = [*mnemon_command(), "--root", str(tmp / "served"), "serve", "--port", str(port)]
        output = run(command, tmp, child_env(MNEMON_TIMEOUT_MS="5"))
        return checked(output, "invalid mnemon configuration: timeout_ms")

    busy, bad = paired(runs, refused_busy_port, refused_bad_setting)
    rows.append(_limit_row("mnemon serve refuses a busy port", busy, 2.0))
    rows.append(_limit_row("mnemon serve refuses a bad setting", bad, 2.0))

    status, add = paired(
        runs,
        lambda: first_operation(tmp, "status"),
        lambda: first_operation(tmp, "add"),
    )
    rows.append(_limit_row("first op: Mnemon.open(new root).status()", status, 0.5))
    rows.append(_limit_row("first op: runtime.add in SQLite tables (schema made)", add, 0.5))
    if postgres:
        times = [first_operation(tmp, "add", postgres) for _ in range(runs)]
        rows.append(_limit_row("first op: runtime.add in PostgreSQL (schema made)", times, 0.5))
    return rows


def _ratio_row(name: str, subject: list[float], base: list[float], limit: float) -> Row:
    median, baseline = statistics.median(subject), statistics.median(base)
    ratio = median / baseline
    return (name, median, baseline, ratio, f"≤ {limit:g}x", ratio <= limit)


def _limit_row(name: str, times: list[float], limit: float) -> Row:
    median = statistics.median(times)
    return (name, median, None, None, f"≤ {limit:g} s", median <= limit)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="cold runs of each (at least 5)")
    parser.add_argument("--postgres", default=os.environ.get("MNEMON_TEST_POSTGRES_URL"))
    args = parser.parse_args()
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    if not args.postgres:
        print("PostgreSQL skipped: pass --postgres URL (bash .ci/start-postgres.sh prints one)")

    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mnemon-bench-startup-") as tmp:
        rows = measure(args.runs, Path(tmp), args.postgres)
    took = time.perf_counter() - began
    print(
        f"\nStart-up, medians of {args.runs} cold runs each (fresh processes, subject and "
        f"baseline alternating); {took:.0f} s"
    )
    print("| measurement | median | baseline median | ratio | limit | holds? |")
    print("|---|---:|---:|---:|---|---|")
    for name, median, baseline, ratio, limit, holds in rows:
        cells = [
            name,
            f"{median:.3f} s",
            "–" if baseline is None else f"{baseline:.3f} s",
            "–" if ratio is None else f"{ratio:.2f}x",
            limit,
            "yes" if holds else "NO",
        ]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
