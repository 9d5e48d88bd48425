"""Runtime Memory across processes: concurrent writers and writers killed mid-write."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from crash_support import Forker
from lock_support import child_env, hold_lock

from langgraph_mnemon.errors import StorageError
from langgraph_mnemon.memory_layers.runtime import DELIMITER, RuntimeMemory

_WRITER = """
import sys
from langgraph_mnemon.memory_layers.runtime import RuntimeMemory
root, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
rm = RuntimeMemory(root, memory_limit_bytes=1_048_576, user_limit_bytes=1_048_576)
print("ready", flush=True)
sys.stdin.readline()  # start together
for i in range(count):
    target = "user" if i % 2 else "memory"
    r = rm.add(target, f"worker {worker} entry {i} " + "中文😀" * (i % 3))
    assert r.changed, r
"""

_CHURN_IMPORTS = "from langgraph_mnemon.memory_layers.runtime import RuntimeMemory"
_CHURN = """
import itertools, os, sys
from langgraph_mnemon.memory_layers.runtime import RuntimeMemory
rm = RuntimeMemory(sys.argv[1], memory_limit_bytes=1_048_576, user_limit_bytes=1_048_576)
me = os.getpid()
print("ready", flush=True)
for i in itertools.count():
    rm.add("memory", f"churn {me}-{i} " + "payload " * 200)
    rm.add("user", f"user {me}-{i} 中文")
    if i % 3 == 0:
        rm.replace("memory", f"churn {me}-{i} ", f"churned {me}-{i} " + "x" * 300)
    if i % 4 == 0:
        rm.remove("user", f"user {me}-{i} 中文")
    if i == 0:
        print("cycle", flush=True)
"""


def test_four_processes_add_concurrently(tmp_path: Path) -> None:
    workers, per_worker = 4, 25
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(tmp_path), str(w), str(per_worker)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        for w in range(workers)
    ]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    rm = RuntimeMemory(tmp_path, memory_limit_bytes=1_048_576, user_limit_bytes=1_048_576)
    contents = [e.content for e in rm.entries()]
    expected = {
        f"worker {w} entry {i} " + "中文😀" * (i % 3)
        for w in range(workers)
        for i in range(per_worker)
    }
    expected = {" ".join(e.split()) for e in expected}
    assert len(contents) == workers * per_worker
    assert set(contents) == expected
    for target, name in (("user", "USER.md"), ("memory", "MEMORY.md")):
        on_disk = (tmp_path / "runtime" / name).read_text()
        assert on_disk == DELIMITER.join(e.content for e in rm.entries(target)) + "\n"


def test_writer_killed_at_random_moments(tmp_path: Path) -> None:
    # Each round's writer is a fresh forked process (crash_support): the package is imported once.
    rng = random.Random(20261129)
    authority = tmp_path / "runtime" / "memories.json"
    kills = 0
    seen_states: set[int] = set()
    mid_commit = 0
    with Forker(_CHURN_IMPORTS, env=child_env()) as forker:
        for round_no in range(32):
            proc = forker.spawn(tmp_path, _CHURN, str(tmp_path))
            assert proc.stdout.readline().strip() == "ready"
            if round_no % 2:
                # Odd rounds let one cycle commit first, so progress does not depend on machine
                # load; even rounds kill at any moment, the first write included.
                assert proc.stdout.readline().strip() == "cycle"
            time.sleep(rng.uniform(0.0, 0.08))
            proc.kill()
            assert proc.wait(timeout=30) == -signal.SIGKILL
            proc.stdout.close()
            kills += 1
            # The authority always parses: it is only ever replaced by a complete file.
            data = json.loads(authority.read_text())
            assert data["version"] == 1
            seen_states.add(len(data["entries"]))
            mid_commit += bool(list((tmp_path / "runtime").glob(".*.tmp")))
            rm = RuntimeMemory(tmp_path, memory_limit_bytes=1_048_576, user_limit_bytes=1_048_576)
            for target, name in (("user", "USER.md"), ("memory", "MEMORY.md")):
                entries = [e["content"] for e in data["entries"] if e["target"] == target]
                expected = DELIMITER.join(entries) + "\n" if entries else ""
                assert (tmp_path / "runtime" / name).read_text() == expected
                assert [e.content for e in rm.entries(target)] == entries  # type: ignore[arg-type]
            assert not list((tmp_path / "runtime").glob(".*.tmp")), "temp files left after reopen"
    assert kills >= 30
    assert len(seen_states) > 5, "the writer was not killed at varied moments"
    assert mid_commit >= 1, "no kill landed inside a commit"


def test_lock_wait_is_bounded_and_a_killed_holder_frees_it(tmp_path: Path) -> None:
    rm = RuntimeMemory(tmp_path, lock_timeout=0.3)
    rm.add("memory", "before")
    before = (tmp_path / "runtime" / "memories.json").read_bytes()
    with hold_lock(tmp_path / "runtime" / ".memories.lock") as holder:
        started = time.monotonic()
        with pytest.raises(StorageError, match=r"timed out after 0\.3s waiting for the runtime"):
            rm.add("memory", "blocked")
        assert 0.25 < time.monotonic() - started < 5
        assert (tmp_path / "runtime" / "memories.json").read_bytes() == before
        # A process that dies holding the lock releases it at once: no stale-lock timeout.
        slow = RuntimeMemory(tmp_path, lock_timeout=30)
        started = time.monotonic()
        os.kill(holder.pid, signal.SIGKILL)
        assert slow.add("memory", "after the holder died").changed
        assert time.monotonic() - started < 5
    assert [e.content for e in rm.entries("memory")] == ["before", "after the holder died"]


def test_threads_of_one_process_queue_fairly(tmp_path: Path) -> None:
    shared = RuntimeMemory(tmp_path, memory_limit_bytes=1_048_576)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        own = RuntimeMemory(tmp_path, memory_limit_bytes=1_048_576) if n % 2 else shared
        try:
            for i in range(20):
                own.add("memory", f"thread {n} item {i}")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    contents = [e.content for e in shared.entries("memory")]
    assert sorted(contents) == sorted(f"thread {n} item {i}" for n in range(8) for i in range(20))
