"""Run LangGraph's own store test suites against ``mem.store()`` and print a table.

The suites are read from a LangGraph checkout (a work tree or a bare git folder), never
downloaded and never copied into this repository: they are extracted into a temporary folder,
run there with the plugin :mod:`langgraph_mnemon.testing.langgraph_suites` (which makes the
peers' constructors open a fresh Mnemon host instead) and removed.

Left out, with the reason printed in the table, are only the tests of the peers' internals:
their SQL builders, their own tables and migrations, their index-config objects, and the
``AsyncBatchedBaseStore`` machinery tested with mocks.

Usage::

    git clone https://github.com/langchain-ai/langgraph /tmp/langgraph   # once
    python scripts/langgraph_store_suites.py --langgraph /tmp/langgraph
    python scripts/langgraph_store_suites.py --langgraph /tmp/langgraph --suite sqlite -k ttl

``--postgres-url`` (default ``MNEMON_TEST_POSTGRES_URL``) names a database whose user may
create databases; the PostgreSQL suites make one per test, as they do for their own store.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path

PLUGIN = "langgraph_mnemon.testing.langgraph_suites"


@dataclass(frozen=True)
class Suite:
    """One peer's store tests: where they are, and which of them test the peer's internals."""

    name: str
    folder: str
    files: tuple[str, ...]
    left_out: dict[str, str] = field(default_factory=dict)


_MIGRATIONS = "the peer's own tables and migrations"
_SQL = "the peer's SQL builder"
_BATCH = "AsyncBatchedBaseStore machinery, tested with mocks of InMemoryStore"
_TABLES = "expires rows by writing to the peer's own table"
SUITES = (
    Suite(
        "base",
        "libs/checkpoint/tests",
        ("test_store.py",),
        {
            "test_async_batch_store_resilience": _BATCH,
            "test_async_batch_store ": _BATCH,
            "test_async_batch_store_handles_cancellation": _BATCH,
            "test_async_batch_store_deduplication": _BATCH,
            "test_get_text_at_path": "LangGraph's path helper, not a store",
        },
    ),
    Suite(
        "sqlite",
        "libs/checkpoint-sqlite/tests",
        ("test_store.py", "test_async_store.py", "test_ttl.py"),
        {
            "test_nonnull_migrations": _MIGRATIONS,
            "test_escape_glob_literal": _SQL,
            "test_namespace_match_pattern": _SQL,
        },
    ),
    Suite(
        "postgres",
        "libs/checkpoint-postgres/tests",
        ("test_store.py", "test_async_store.py"),
        {
            "test_nonnull_migrations": _MIGRATIONS,
            "test_escape_like_literal": _SQL,
            "test_namespace_match_pattern": _SQL,
            "test_store_ttl": _TABLES,
            "test_omit_expired_disabled_preserves_expired_rows": _TABLES,
            "test_omit_expired_filters_read_paths": _TABLES,
            "test_omit_expired_refresh_ttl_only_refreshes_live_rows": _TABLES,
            "test_omit_expired_search_pagination": _TABLES,
            "test_abatch_uses_single_pool_checkout": "the peer's connection pool",
        },
    ),
)


def extract(langgraph: Path, into: Path) -> None:
    """Copy the three ``tests`` folders out of a LangGraph work tree or bare git folder."""
    folders = [suite.folder for suite in SUITES]
    if (langgraph / "libs").is_dir():
        for folder in folders:
            shutil.copytree(langgraph / folder, into / folder)
        return
    archive = subprocess.run(
        ["git", f"--git-dir={langgraph}", "archive", "--format=tar", "HEAD", *folders],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")


def _prepare(root: Path, suite: Suite, postgres_url: str | None) -> Path:
    """The suite's folder, made runnable here: its conftest on our server, no mock plugin."""
    folder = root / suite.folder
    conftest = folder / "conftest.py"
    if conftest.exists() and postgres_url:
        admin = postgres_url.replace("postgresql+psycopg://", "postgres://")
        text = re.sub(
            r'^DEFAULT_URI = ".*"$', f'DEFAULT_URI = "{admin}"', conftest.read_text(), flags=re.M
        )
        conftest.write_text(text)
    # The base suite imports pytest-mock for its batching tests, which are left out.
    if not _has_module("pytest_mock"):
        (folder.parent / "pytest_mock.py").write_text("MockerFixture = object\n")
    return folder.parent


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def run(root: Path, suite: Suite, args: argparse.Namespace) -> dict[str, object]:
    """Run one suite in a subprocess; return its counts and failing test ids."""
    cwd = _prepare(root, suite, args.postgres_url)
    report = root / f"{suite.name}.xml"
    deselect = " and ".join(f"not {name.strip()}" for name in suite.left_out)
    keyword = f"({args.k}) and {deselect}" if args.k else deselect
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", PLUGIN, "-p", "no:cacheprovider",
        "-o", "asyncio_mode=auto", "-o", "addopts=", f"--junitxml={report}",
        "-k", keyword, *[f"tests/{name}" for name in suite.files],
    ]  # fmt: skip
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(cwd), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if args.verbose:
        print(done.stdout[-20000:], done.stderr[-5000:], sep="\n")
    return _counts(report, done)


def _counts(report: Path, done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    if not report.exists():
        raise SystemExit(f"pytest did not run (exit {done.returncode}):\n{done.stdout[-3000:]}")
    failed: list[str] = []
    passed = skipped = 0
    for case in ET.parse(report).getroot().iter("testcase"):
        outcome = {child.tag for child in case}
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        if outcome & {"failure", "error"}:
            failed.append(name)
        elif "skipped" in outcome:
            skipped += 1
        else:
            passed += 1
    return {"passed": passed, "failed": failed, "skipped": skipped}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--langgraph", type=Path, required=True, help="a LangGraph checkout")
    parser.add_argument("--suite", choices=[s.name for s in SUITES], action="append")
    parser.add_argument("--postgres-url", default=os.environ.get("MNEMON_TEST_POSTGRES_URL"))
    parser.add_argument("-k", default="", help="a pytest -k expression to narrow the run")
    parser.add_argument("--verbose", action="store_true", help="print pytest's output")
    args = parser.parse_args()
    chosen = [s for s in SUITES if not args.suite or s.name in args.suite]
    if not args.postgres_url:
        chosen = [s for s in chosen if s.name != "postgres"]
        print("postgres suite left out: set MNEMON_TEST_POSTGRES_URL or --postgres-url")
    root = Path(tempfile.mkdtemp(prefix="langgraph-suites-"))
    try:
        extract(args.langgraph.resolve(), root)
        rows = [(suite, run(root, suite, args)) for suite in chosen]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    _print(rows)
    return 1 if any(result["failed"] for _, result in rows) else 0


def _print(rows: list[tuple[Suite, dict[str, object]]]) -> None:
    print("\n| suite | passed | failed | skipped | names left out (peer internals) |")
    print("|---|---:|---:|---:|---:|")
    for suite, result in rows:
        failed = result["failed"]
        assert isinstance(failed, list)
        row = [suite.name, result["passed"], len(failed), result["skipped"], len(suite.left_out)]
        print("| " + " | ".join(str(cell) for cell in row) + " |")
    for suite, result in rows:
        for name in result["failed"]:  # type: ignore[attr-defined]
            print(f"FAILED {suite.name}: {name}")
        for name, why in suite.left_out.items():
            print(f"left out {suite.name}: {name.strip()} ({why})")


if __name__ == "__main__":
    raise SystemExit(main())
