"""Documents under concurrency and crashes: real processes, real SIGKILLs, real files."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

from langgraph_mnemon.memory_layers.documents import Documents, render_document

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork() and SIGKILL")


def open_docs(root: Path) -> Documents:
    return Documents(root, workspace=root.parent)


def assert_consistent(root: Path) -> Documents:
    """Open (which repairs), then check every record has exactly one correct file."""
    docs = open_docs(root)
    directory = root / "documents"
    records = docs.list("all")
    assert len({r.id for r in records}) == len(records)
    expected = set()
    for record in records:
        path = directory / record.status / record.filename
        body = docs.read(record.id)  # verifies the SHA-256
        assert path.read_text() == render_document(record, body)
        assert record.size_bytes == path.stat().st_size
        expected.add((record.status, record.filename))
    present = {
        (status, p.name)
        for status in ("active", "archived")
        for p in (directory / status).iterdir()
    }
    assert present == expected  # nothing missing, nothing duplicated, no temp files
    recovery = directory / ".recovery"
    assert not recovery.exists() or list(recovery.iterdir()) == []
    assert [p.name for p in directory.iterdir() if p.name.endswith(".tmp")] == []
    return docs


# --------------------------------------------------------------------------------------------
# two processes creating at once

WORKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from langgraph_mnemon.memory_layers.documents import Documents
    root, name, count, go = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    docs = Documents(root, workspace=root.parent)
    while not go.exists():
        time.sleep(0.001)
    for i in range(count):
        docs.create(f"{name} document {i}", f"body of {name} {i} 数据 {i}")
    print("done")
    """
)


def test_concurrent_creates_from_two_processes_all_present(tmp_path: Path) -> None:
    root = tmp_path / ".mnemon"
    open_docs(root)
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(root), name, "15", str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for name in ("alpha", "beta")
    ]
    time.sleep(0.3)
    go.touch()
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        assert out.decode().strip() == "done"
    docs = assert_consistent(root)
    titles = sorted(r.title for r in docs.list())
    assert titles == sorted(f"{n} document {i}" for n in ("alpha", "beta") for i in range(15))
    assert {h.title for h in docs.search("beta document", limit=50).results} >= {
        f"beta document {i}" for i in range(15)
    }


# --------------------------------------------------------------------------------------------
# SIGKILL at random moments


def _churn(root: Path, write_fd: int, seed: int) -> None:
    """Child body: create / update / archive forever, reporting each committed receipt."""
    docs = open_docs(root)
    rng = random.Random(seed)
    os.write(write_fd, b"ready\n")
    n = 0
    while True:
        n += 1
        doc = docs.create(f"Doc {seed}-{n}", f"body {n} " * rng.randint(1, 200)).document
        os.write(write_fd, f"C {doc.id}\n".encode())
        updated = docs.update(doc.id, content=f"new body {n} " * rng.randint(1, 200)).document
        os.write(write_fd, f"U {doc.id} {updated.revision}\n".encode())
        archived = docs.archive_without_index(doc.id, updated.revision, "churn").document
        os.write(write_fd, f"A {doc.id} {archived.revision}\n".encode())


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks).decode()
        chunks.append(chunk)


def test_sigkill_at_random_moments_never_loses_or_duplicates(tmp_path: Path) -> None:
    root = tmp_path / ".mnemon"
    open_docs(root)
    rng = random.Random(1234)
    committed: dict[str, tuple[str, int]] = {}
    kills = 0
    for round_no in range(24):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            code = 1
            try:
                os.close(read_fd)
                _churn(root, write_fd, round_no)
            finally:
                os._exit(code)
        os.close(write_fd)
        assert os.read(read_fd, 6) == b"ready\n"
        seen = b""
        if round_no % 2:
            # Odd rounds let one create/update/archive cycle commit first, so progress does not
            # depend on machine load; even rounds kill at any moment, the first step included.
            while not any(line.startswith(b"A ") for line in seen.split(b"\n")[:-1]):
                chunk = os.read(read_fd, 4096)
                if not chunk:
                    break
                seen += chunk
        time.sleep(rng.uniform(0.0, 0.05))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        kills += os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        for line in (seen.decode() + _read_all(read_fd)).splitlines():
            kind, doc_id, *rest = line.split()
            revision = int(rest[0]) if rest else 1
            committed[doc_id] = ("archived" if kind == "A" else "active", revision)
        os.close(read_fd)
        docs = assert_consistent(root)
        for doc_id, (status, revision) in committed.items():
            record = docs.get(doc_id)  # a committed document is never missing
            assert record.revision >= revision
            if status == "archived":
                assert record.status == "archived"
    assert kills == 24
    # Every odd round committed at least one archive before its kill.
    assert len(committed) >= 5
    assert any(status == "archived" for status, _ in committed.values())


# --------------------------------------------------------------------------------------------
# SIGKILL before every file-system step of one operation

_STEPS = ("write", "fdatasync", "fsync", "replace", "link", "unlink", "rename")


def _die_at_step(target: int) -> None:
    """In a child: SIGKILL this process just before its ``target``-th file-system step."""
    counter = [0]
    for name in _STEPS:
        real = getattr(os, name)

        def step(*args: object, _real: Callable[..., object] = real) -> object:
            counter[0] += 1
            if counter[0] == target:
                os.kill(os.getpid(), signal.SIGKILL)
            return _real(*args)

        setattr(os, name, step)


def _crash_sweep(
    template: Path, operation: Callable[[Documents], object], check: Callable[[Documents], None]
) -> int:
    """Run ``operation`` on a copy of ``template``, killed before step 1, 2, ... until it
    completes; check every outcome. Returns the number of steps the operation takes + 1."""
    step = 0
    while True:
        step += 1
        assert step < 200, "operation never completed"
        root = template.parent / f"run-{step}" / template.name
        shutil.copytree(template, root, symlinks=True)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                docs = open_docs(root)
                _die_at_step(step)
                operation(docs)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        check(assert_consistent(root))
        shutil.rmtree(root.parent)
        if os.WIFEXITED(status):
            assert os.WEXITSTATUS(status) == 0
            return step
        assert os.WTERMSIG(status) == signal.SIGKILL


def test_archive_killed_at_every_step_is_fully_active_or_fully_archived(tmp_path: Path) -> None:
    root = tmp_path / ".mnemon"
    docs = open_docs(root)
    doc = docs.create("Design", "the design body " * 50).document
    other = docs.create("Other", "keep").document
    outcomes = set()

    def check(now: Documents) -> None:
        record = now.get(doc.id)
        outcomes.add(record.status)
        assert (record.status, record.revision) in {("active", 1), ("archived", 2)}
        assert now.read(doc.id) == ("the design body " * 50).strip()
        assert now.read(other.id) == "keep"

    steps = _crash_sweep(root, lambda d: d.archive(doc.id, 1, "summary", ["space"]), check)
    assert steps > 5
    assert outcomes == {"active", "archived"}


def test_in_place_update_killed_at_every_step_keeps_old_or_new_body(tmp_path: Path) -> None:
    root = tmp_path / ".mnemon"
    docs = open_docs(root)
    doc = docs.create("Runbook", "old body").document
    seen = set()

    def check(now: Documents) -> None:
        record = now.get(doc.id)
        body = now.read(doc.id)
        seen.add(body)
        assert (record.revision, body) in {(1, "old body"), (2, "new body")}

    _crash_sweep(root, lambda d: d.update(doc.id, content="new body"), check)
    assert seen == {"old body", "new body"}


def test_renaming_update_killed_at_every_step(tmp_path: Path) -> None:
    root = tmp_path / ".mnemon"
    docs = open_docs(root)
    doc = docs.create("Old title", "body").document
    seen = set()

    def check(now: Documents) -> None:
        record = now.get(doc.id)
        seen.add(record.title)
        assert (record.title, record.revision, now.read(doc.id)) in {
            ("Old title", 1, "body"),
            ("New title", 2, "new body"),
        }

    _crash_sweep(root, lambda d: d.update(doc.id, title="New title", content="new body"), check)
    assert seen == {"Old title", "New title"}


def test_create_killed_at_every_step_is_absent_or_complete(tmp_path: Path) -> None:
    root = tmp_path / ".mnemon"
    open_docs(root).create("Existing", "stays")
    counts = set()

    def check(now: Documents) -> None:
        titles = sorted(r.title for r in now.list())
        counts.add(len(titles))
        assert titles in (["Existing"], ["Existing", "New"])

    _crash_sweep(root, lambda d: d.create("New", "fresh body"), check)
    assert counts == {1, 2}


def test_search_access_journal_killed_at_every_step(tmp_path: Path) -> None:
    root = tmp_path / ".mnemon"
    docs = open_docs(root)
    doc = docs.create("Kafka", "consumer lag").document

    def check(now: Documents) -> None:
        assert now.get(doc.id).revision == 1
        assert [h.id for h in now.search("kafka").results] == [doc.id]

    _crash_sweep(root, lambda d: d.search("kafka"), check)


def test_torn_access_journal_line_is_ignored(tmp_path: Path) -> None:
    root = tmp_path / ".mnemon"
    docs = open_docs(root)
    doc = docs.create("Kafka", "consumer lag").document
    docs.search("kafka")
    with open(root / "documents" / "access.jsonl", "ab") as fh:
        fh.write(b'{"at": "2099-01-01T00:00:00.000Z", "ids": ["')
    again = open_docs(root)
    assert again.get(doc.id).last_accessed_at < "2099"
    again.search("kafka")
    assert again.get(doc.id).revision == 1
