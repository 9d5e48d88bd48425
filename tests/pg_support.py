"""A private PostgreSQL server for tests that must stop and restart their database.

The shared server of ``.ci/start-postgres.sh`` is never stopped (other tests use it). A test that
needs the database to go away mid-run starts its own with the same commands: ``initdb`` into a
folder owned by ``postgres``, ``pg_ctl start`` on a free loopback port with ``runuser -u
postgres --``, ``fsync=off`` so it starts in about a second. Always stop it in a ``finally``.
"""

from __future__ import annotations

import glob
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from server_support import free_port


def _bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version)
    if not found:
        raise RuntimeError("PostgreSQL binaries not found under /usr/lib/postgresql/*/bin")
    return Path(found[-1])


def _version(path: str) -> tuple[int, ...]:
    return tuple(int(p) for p in Path(path).parent.name.split(".") if p.isdigit())


def _as_postgres(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["runuser", "-u", "postgres", "--", *args], capture_output=True, text=True, timeout=120
    )


class PrivatePostgres:
    """One ``postgres`` server of the test's own: ``url``, :meth:`stop`, :meth:`start`."""

    def __init__(self, data: Path, port: int) -> None:
        self.data = data
        self.port = port
        self.bin = _bin()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        options = f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1 -c fsync=off"
        done = _as_postgres(
            str(self.bin / "pg_ctl"), "-D", str(self.data / "db"), "-l",
            str(self.data / "server.log"), "-w", "-o", options, "start",
        )  # fmt: skip
        if done.returncode != 0:
            log = (self.data / "server.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"pg_ctl start failed: {done.stderr or done.stdout}\n{log}")

    def stop(self) -> None:
        """Stop the server at once (``-m immediate``: connections are cut, as in an outage)."""
        _as_postgres(str(self.bin / "pg_ctl"), "-D", str(self.data / "db"), "-m", "immediate",
                     "-w", "stop")  # fmt: skip

    @property
    def running(self) -> bool:
        done = _as_postgres(str(self.bin / "pg_ctl"), "-D", str(self.data / "db"), "status")
        return done.returncode == 0


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A started private server (trust authentication, loopback only); removed afterwards."""
    # Not under pytest's tmp_path: its parents are root-only, and the server runs as postgres.
    data = Path(tempfile.mkdtemp(prefix="mnemon-pg-", dir="/var/tmp"))
    shutil.chown(data, "postgres", "postgres")
    server = PrivatePostgres(data, free_port())
    try:
        done = _as_postgres(
            str(server.bin / "initdb"), "-D", str(data / "db"), "-A", "trust", "-U", "postgres",
            "--no-sync",
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr or done.stdout}")
        server.start()
        yield server
    finally:
        if (data / "db" / "PG_VERSION").exists():
            server.stop()
        shutil.rmtree(data, ignore_errors=True)
