"""Start ``mnemon serve`` (LangGraph server) as a subprocess for tests, and stop it cleanly;
the headless Chromium the web page tests drive."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

# Requests to a served process: a loaded 2-core machine can take longer than httpx's 5 s default,
# and a request that never answers still fails, after this long, naming the URL.
REQUEST_TIMEOUT = httpx.Timeout(60.0, connect=10.0)
# Tests send plain requests to their own server through this client (no proxy from the env).
http = httpx.Client(timeout=REQUEST_TIMEOUT, trust_env=False)

# Debian's chromium (no browser download); the same flags for every web page test.
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def browser_missing(what: str, install: str) -> None:
    """Skip without ``what`` locally; under ``CI=true`` a missing browser fails the run."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required under CI=true ({install})")
    pytest.skip(f"{what} not available: {install}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def non_loopback_address() -> str | None:
    """An address of this machine that is not loopback (peers connecting to it aren't either)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent; this only picks a route
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


@dataclass
class Served:
    url: str
    root: Path
    port: int
    startup_seconds: float
    log: Path
    process: subprocess.Popen[bytes] | None = None  # its group: see with_group


@contextmanager
def serve(
    root: Path,
    *,
    host: str = "127.0.0.1",
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> Iterator[Served]:
    """Run ``python -m langgraph_mnemon.cli --root ROOT serve`` until the block ends."""
    from langgraph_mnemon.server.launch import wait_ready

    port = free_port()
    log = root.parent / f"{root.name}-server.log"
    full_env = dict(os.environ)
    full_env.update(env or {})
    command = [sys.executable, "-m", "langgraph_mnemon.cli", "--root", str(root), "serve"]
    command += ["--host", host, "--port", str(port), *args]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, env=full_env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    started = time.monotonic()
    try:
        try:
            wait_ready(f"http://127.0.0.1:{port}", timeout=180, process=process)
        except (TimeoutError, RuntimeError) as exc:
            raise AssertionError(f"{exc}\n--- server log ---\n{log.read_text()[-4000:]}") from None
        yield Served(
            url=f"http://127.0.0.1:{port}",
            root=root,
            port=port,
            startup_seconds=time.monotonic() - started,
            log=log,
            process=process,
        )
    finally:
        stop_group(process, timeout=15)


def stop_group(process: subprocess.Popen[bytes], *, timeout: float) -> None:
    """SIGTERM to a served process's group, SIGKILL if it is still there after ``timeout``."""
    with_group(process, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with_group(process, signal.SIGKILL)
        process.wait(timeout=5)


def with_group(process: subprocess.Popen[bytes], sig: int) -> None:
    with suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


@contextmanager
def uvicorn_in_thread(app: Any, *, host: str = "127.0.0.1") -> Iterator[int]:
    """Serve an ASGI ``app`` with a real uvicorn on a free port; yields the port."""
    import threading

    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
    )
    # Server.run installs no signal handlers outside the main thread.
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise AssertionError("uvicorn did not start serving")
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=20)
