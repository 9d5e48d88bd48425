"""Without ``fcntl`` (as on Windows) the package imports, writes, and its locks exclude (issue 31).

A Python whose ``import fcntl`` fails (``support/no_fcntl/sitecustomize.py`` first on
PYTHONPATH, inherited by every child process) imports every module of the package, opens a
``Mnemon`` on a temporary folder and writes Runtime Memory and a Document, with the SQLite
kernel lock. Then the suite's lock tests, the ones that run on ``flock`` in the normal run, run
again in such a Python: a held lock bounds a writer's wait and a killed holder frees it at
once, four processes add concurrently and lose nothing, threads queue fairly, a search does not
wait for a writer, a held facts-file lock times out, and two open locks on one file exclude each
other (two tests of this module, which also run on ``flock`` here). The last test takes away
what else Windows lacks (``pread``, folder descriptors, ``fdatasync``) and commits anyway.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from lock_support import REPO, no_fcntl

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import StorageError
from langgraph_mnemon.storage import _locks, files
from langgraph_mnemon.storage.files import NOFOLLOW

_WRITES = """
import importlib, pkgutil, sys
try:
    import fcntl
except ImportError:
    pass
else:
    sys.exit("fcntl is importable: the test would prove nothing")
import langgraph_mnemon
from langgraph_mnemon import Mnemon
from langgraph_mnemon.storage import _locks

names = [m.name for m in pkgutil.walk_packages(langgraph_mnemon.__path__, "langgraph_mnemon.")]
for name in names:
    importlib.import_module(name)
with Mnemon.open(sys.argv[1]) as mem:
    assert mem.runtime.add("user", "Prefers tea.").committed
    assert mem.documents.create("Runbook", "Restart the worker.").committed
print(_locks.kind(), len(names), sys.modules["fcntl"])
"""

# The lock tests of the suite (plus the two below), run again in a Python without fcntl.
LOCK_TESTS = [
    "tests/test_portable_locks.py::test_this_process_uses_the_lock_of_its_platform",
    "tests/test_portable_locks.py::test_two_open_locks_on_one_file_exclude_each_other",
    "tests/test_runtime_processes.py",
    "tests/test_documents_search.py::test_search_does_not_wait_for_a_writer_holding_the_lock",
    "tests/test_facts_provider.py::test_a_held_lock_times_out_with_a_storage_error",
    "tests/test_facts_provider.py::test_eight_threads_remembering_lose_nothing",
]


def test_issue31_without_fcntl_the_package_imports_and_writes(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WRITES, str(tmp_path / "root")],
        capture_output=True,
        text=True,
        env=no_fcntl(),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    kind, modules, fcntl_entry = done.stdout.split()
    assert kind == "sqlite"
    assert int(modules) > 100  # every module of the package, not a few
    assert fcntl_entry == "None"  # the import was refused, never satisfied
    with Mnemon.open(tmp_path / "root") as mem:  # what it wrote reads back here, on flock
        assert [e.content for e in mem.runtime.entries("user")] == ["Prefers tea."]
        assert [d.title for d in mem.documents.list()] == ["Runbook"]


@pytest.mark.timeout(900)
def test_issue31_the_lock_tests_pass_without_fcntl() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *LOCK_TESTS],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=no_fcntl(),
        timeout=850,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    passed = re.fullmatch(r"=* ?(\d+) passed in .*", summary)
    assert passed, summary  # nothing failed, skipped or deselected
    assert int(passed.group(1)) >= len(LOCK_TESTS) + 3  # test_runtime_processes has four


def test_this_process_uses_the_lock_of_its_platform() -> None:
    try:
        import fcntl  # noqa: F401
    except ImportError:
        expected = "sqlite"
    else:
        expected = "flock"
    assert _locks.kind() == expected


def test_two_open_locks_on_one_file_exclude_each_other(tmp_path: Path) -> None:
    """Two holders in one process, below the in-process queue: the kernel lock alone."""
    path = tmp_path / ".test.lock"
    flags = os.O_RDWR | os.O_CREAT | NOFOLLOW
    first, second = (_locks.open_lock(os.open(path, flags, 0o600), path) for _ in range(2))
    try:
        assert first.try_acquire()
        assert not second.try_acquire()
        taken = threading.Event()
        waiter = threading.Thread(target=lambda: (second.acquire(), taken.set()))
        waiter.start()
        assert not taken.wait(0.5)  # the blocking acquire waits while first holds it
        started = time.monotonic()
        first.release()
        assert taken.wait(10)
        assert time.monotonic() - started < 5
        waiter.join()
        assert not first.try_acquire()
        second.close()  # closing the file lets go of the lock
        assert first.try_acquire()
    finally:
        first.close()
    assert path.read_bytes() == b""  # the lock file is never written


def test_without_pread_folder_descriptors_or_fdatasync_the_files_still_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What Windows lacks besides fcntl, taken away here: each primitive's fallback commits."""
    monkeypatch.delattr(os, "pread")
    monkeypatch.setattr(files, "_DIRECTORY", None)  # no O_DIRECTORY: no folder descriptors
    synced: list[int] = []
    monkeypatch.setattr(files, "_DATASYNC", lambda fd: synced.append(fd) or os.fsync(fd))
    with Mnemon.open(tmp_path / "root") as mem:
        alice = mem.scoped(user="alice", project="billing")  # nested folders, made one by one
        assert alice.runtime.add("user", "Prefers metric units.").committed
        doc = alice.documents.create("Runbook", "Restart the worker.").document
        assert alice.documents.search("worker").results  # an access journal line
        assert alice.documents.search("restart").results  # appended after a pread of its end
        assert alice.documents.get(doc.id).last_accessed_at  # the journal read back, by offset
        assert [e.content for e in alice.runtime.entries("user")] == ["Prefers metric units."]
        assert mem.runtime.entries("user") == []
    assert synced  # temp files were synced with the stand-in
    # A folder on the way that is a link is still refused, checked by lstat.
    real = tmp_path / "elsewhere"
    real.mkdir()
    (tmp_path / "root2").mkdir()
    (tmp_path / "root2" / "scopes").symlink_to(real, target_is_directory=True)
    with pytest.raises(StorageError) as info:
        files.ensure_dir_below(tmp_path / "root2", tmp_path / "root2" / "scopes" / "x")
    assert info.value.code == "symlink-refused"
    assert list(real.iterdir()) == []
