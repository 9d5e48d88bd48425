"""Writers to kill: one interpreter imports once, then forks a fresh writer process per round.

A crash test kills a writer at random moments, dozens of times. Starting each writer as a new
``python -c`` pays for importing the package every round (most of such a test's time on a loaded
machine). Here one *forker* process imports the writer's modules once; each round it forks a
child that runs the writer script with its own pid, its own database connections and files, and
its stdout on a FIFO the test reads. The test kills the child with a real ``SIGKILL``; the forker
reaps it and reports its exit code. Nothing is opened before the fork, so no connection, lock or
thread is shared between rounds.

Example:
    >>> with Forker("from langgraph_mnemon.memory_layers.runtime import RuntimeMemory") as f:
    ...     child = f.spawn(tmp_path, "print('ready', flush=True)")  # doctest: +SKIP
    ...     child.stdout.readline()  # doctest: +SKIP
    'ready\\n'
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

_FORKER = r"""
import json, os, sys, traceback
exec(compile(sys.argv[1], "<imports>", "exec"), {})
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        fd = os.open(request["out"], os.O_WRONLY)  # the test holds the read end
        os.dup2(fd, 1)
        os.close(fd)
        sys.stdout = open(1, "w", buffering=1, encoding="utf-8", closefd=False)
        sys.argv = ["-c", *request["args"]]
        try:
            exec(compile(request["script"], "<writer>", "exec"), {"__name__": "__main__"})
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        sys.stdout.flush()
        os._exit(0)
    print(json.dumps({"pid": pid}), flush=True)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"pid": pid, "returncode": os.waitstatus_to_exitcode(status)}), flush=True)
"""


class Forked:
    """One forked writer: ``pid``, a line-buffered ``stdout`` and its exit code after ``wait``."""

    def __init__(self, forker: Forker, pid: int, stdout: IO[str]) -> None:
        self._forker = forker
        self.pid = pid
        self.stdout = stdout
        self.returncode: int | None = None

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)

    def wait(self, timeout: float = 30) -> int:
        """The writer's exit code (``-9`` after ``kill``), as the forker reaped it."""
        if self.returncode is None:
            message = self._forker._read(timeout, f"writer {self.pid} to exit")
            assert message["pid"] == self.pid, message
            self.returncode = int(message["returncode"])
        return self.returncode


class Forker:
    """A process that has run ``imports`` and forks a writer per :meth:`spawn` (context manager)."""

    def __init__(self, imports: str, env: dict[str, str] | None = None) -> None:
        self._imports = imports
        self._env = env
        self._process: subprocess.Popen[bytes] | None = None
        self._count = 0
        self._pending = b""  # read from the forker, not yet a whole line

    def __enter__(self) -> Forker:
        self._process = subprocess.Popen(
            [sys.executable, "-c", _FORKER, self._imports],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,  # lines are read off the raw pipe, so select() sees every one
            env=self._env,
        )
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._process is not None
        self._process.kill()
        self._process.wait(timeout=30)

    def spawn(self, folder: Path, script: str, *args: str) -> Forked:
        """Fork a writer that runs ``script`` with ``sys.argv[1:] == args``."""
        assert self._process is not None
        assert self._process.stdin is not None
        self._count += 1
        fifo = Path(folder) / f".writer-{self._count}.out"
        os.mkfifo(fifo)
        request = {"out": str(fifo), "script": script, "args": list(args)}
        self._process.stdin.write(json.dumps(request).encode() + b"\n")
        self._process.stdin.flush()
        stdout = open(fifo, encoding="utf-8")  # returns once the child opened its end  # noqa: SIM115
        fifo.unlink()
        pid = int(self._read(60, "the forked writer's pid")["pid"])
        return Forked(self, pid, stdout)

    def _read(self, timeout: float, what: str) -> dict[str, Any]:
        assert self._process is not None
        assert self._process.stdout is not None
        fd = self._process.stdout.fileno()
        while b"\n" not in self._pending:
            ready, _, _ = select.select([fd], [], [], timeout)
            chunk = os.read(fd, 4096) if ready else b""
            if not chunk:
                code = self._process.poll()
                raise AssertionError(f"waited {timeout:.0f} s for {what}; forker exit code {code}")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return json.loads(line)
