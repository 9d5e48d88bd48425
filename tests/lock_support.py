"""Holding a storage lock from another process, and running Python without ``fcntl``.

:func:`hold_lock` takes the package's own kernel lock (``storage.files.locked``) in a child
process, so it excludes this process whichever kind of lock the platform uses. :func:`no_fcntl`
is the environment of a Python without ``fcntl`` (as on Windows): the folder of
``support/no_fcntl/sitecustomize.py`` first on PYTHONPATH, inherited by every child.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
NO_FCNTL = TESTS / "support" / "no_fcntl"

_HOLDER = """
import sys, time
from pathlib import Path
from langgraph_mnemon.storage.files import locked
with locked(Path(sys.argv[1]), timeout=30, what="test holder"):
    print("locked", flush=True)
    sys.stdin.readline()  # held until the test closes stdin (or kills this process)
"""


def child_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (this process's environment) with the repository first on PYTHONPATH."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def no_fcntl(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment whose Python processes cannot import ``fcntl``."""
    env = child_env(base)
    env["PYTHONPATH"] = os.pathsep.join([str(NO_FCNTL), env["PYTHONPATH"]])
    return env


@contextmanager
def hold_lock(lock_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A child process holding the storage lock ``lock_path`` until the block ends.

    The child inherits this environment (so under :func:`no_fcntl` it holds the SQLite lock);
    the test may kill it inside the block to show a dead holder frees the lock.
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(lock_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait()
        for stream in (holder.stdin, holder.stdout):
            if stream is not None:
                stream.close()
