"""``mnemon serve``: LangGraph server (``langgraph dev``) over a storage root, offline.

The served configuration is one dict (:func:`langgraph_config`); the repository's
``langgraph.json`` is the same dict, so ``langgraph dev`` from a checkout and ``mnemon serve``
from an installed package serve the same things.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from langgraph_mnemon.config import redact_url
from langgraph_mnemon.errors import InvalidInputError

__all__ = [
    "OFFLINE_ENV",
    "langgraph_config",
    "serve_command",
    "server_env",
    "start",
    "wait_ready",
    "write_config",
]

GRAPHS = (
    "agent",
    "turn",
    "recall",
    "write_worker",
    "idle_review",
    "agent_query",
)

#: What keeps ``langgraph dev`` from calling out: CLI analytics, the version check, tracing.
OFFLINE_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "HF_HUB_OFFLINE": "1",
}


def langgraph_config() -> dict[str, Any]:
    """The ``langgraph.json`` content: graphs, checkpointer, store and control plane."""
    return {
        "dependencies": ["."],
        "graphs": {f"mnemon_{g}": f"langgraph_mnemon.server.graphs:{g}" for g in GRAPHS},
        "checkpointer": {"path": "langgraph_mnemon.server.persistence.checkpointer"},
        "store": {"path": "langgraph_mnemon.server.persistence.store"},
        "http": {"app": "langgraph_mnemon.server.http:app"},
    }


def write_config(directory: Path, *, extra_graphs: dict[str, str] | None = None) -> Path:
    """Write ``langgraph.json`` into ``directory`` (created) and return its path.

    ``extra_graphs`` (graph id → ``"path/file.py:name"``) serves more graphs beside ours.
    """
    config = langgraph_config()
    config["graphs"].update(extra_graphs or {})
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "langgraph.json"
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return path


def _postgres_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres", "postgresql+psycopg") or not parts.hostname:
        raise InvalidInputError(
            f"--postgres must be a PostgreSQL URL like postgresql://user:pass@host:5432/db "
            f"(got {redact_url(url)!r})"
        )
    return "postgresql+psycopg://" + url.split("://", 1)[1]


def _chroma_address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise InvalidInputError(f"--chroma must be HOST:PORT, e.g. 127.0.0.1:8000 (got {value!r})")
    return host, int(port)


def server_env(
    root: Path,
    *,
    postgres: str | None = None,
    chroma: str | None = None,
    host: str | None = None,
    base: dict[str, str] | None = None,
) -> dict[str, str]:
    """The environment of the server process: the storage root, scale-out targets, offline.

    ``host`` (the ``--host`` the server listens on) becomes ``MNEMON_SERVE_HOST``: the control
    plane answers to that name besides loopback (any other Host header is refused).
    """
    env = dict(os.environ if base is None else base)
    env.update(OFFLINE_ENV)
    env["MNEMON_ROOT"] = str(root.expanduser().absolute())
    if host is not None:
        env["MNEMON_SERVE_HOST"] = host
    if postgres is not None:
        env["MNEMON_DATABASE_URL"] = _postgres_url(postgres)
    if chroma is not None:
        host, port = _chroma_address(chroma)
        env["MNEMON_CHROMA__HOST"] = host
        env["MNEMON_CHROMA__PORT"] = str(port)
    return env


def serve_command(config: Path, *, host: str = "127.0.0.1", port: int = 2024) -> list[str]:
    """The ``langgraph dev`` command line (no browser, no reload)."""
    if not 1 <= port <= 65535:
        raise InvalidInputError(f"port must be 1..65535 (got {port})")
    return [
        sys.executable,
        "-m",
        "langgraph_cli",
        "dev",
        "--no-browser",
        "--no-reload",
        "--host",
        host,
        "--port",
        str(port),
        "--config",
        str(config),
    ]


def start(
    root: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 2024,
    postgres: str | None = None,
    chroma: str | None = None,
    extra_graphs: dict[str, str] | None = None,
    **popen: Any,
) -> subprocess.Popen[bytes]:
    """Start the server in ``<root>/server`` (its run queue and thread files live there)."""
    env = server_env(root, postgres=postgres, chroma=chroma, host=host)
    workdir = Path(env["MNEMON_ROOT"]) / "server"
    config = write_config(workdir, extra_graphs=extra_graphs)
    return subprocess.Popen(
        serve_command(config, host=host, port=port), cwd=workdir, env=env, **popen
    )


def wait_ready(
    url: str, *, timeout: float = 30.0, process: subprocess.Popen[Any] | None = None
) -> float:
    """Poll ``url/ok`` until the server answers; return the seconds it took.

    Raises ``TimeoutError`` (or ``RuntimeError`` when ``process`` exits first).
    """
    import time

    import httpx

    started = time.monotonic()
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(
                f"the server exited with status {process.returncode} before {url}/ok answered"
            )
        try:
            if httpx.get(f"{url}/ok", timeout=1.0).status_code == 200:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{url}/ok did not answer within {timeout:.0f} s")
        time.sleep(0.1)
