"""``mnemon serve``: LangGraph server (``langgraph dev``) over a storage root, offline.

The served configuration is one dict (:func:`langgraph_config`); the repository's
``langgraph.json`` is the same dict, so ``langgraph dev`` from a checkout and ``mnemon serve``
from an installed package serve the same things.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from langgraph_mnemon.config import chroma_server, redact_url
from langgraph_mnemon.errors import InvalidInputError, MnemonError

__all__ = [
    "AUTH_ENV",
    "GRAPHS_ENV",
    "OFFLINE_ENV",
    "check_port",
    "extra_graphs_from",
    "langgraph_config",
    "local_url",
    "serve_command",
    "served_root",
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


AUTH_ENV = "MNEMON_SERVE_AUTH"
"""An ``auth.path`` for ``mnemon serve`` (``path/to/auth.py:auth``): custom auth, also on the
control plane's routes (see docs/multi-user.md)."""

GRAPHS_ENV = "MNEMON_SERVE_GRAPHS"
"""Graphs of your own that ``mnemon serve`` serves beside ours, ``;``-separated
``graph_id=path/to/file.py:attr`` (or ``graph_id=module:attr``) entries; see
:func:`extra_graphs_from`."""


def langgraph_config(*, auth: str | None = None) -> dict[str, Any]:
    """The ``langgraph.json`` content: graphs, checkpointer, store and control plane.

    Args:
        auth: an ``auth.path`` (``"path/to/auth.py:auth"`` or ``"module:auth"``): LangGraph
            custom auth, switched on for the control plane's routes too
            (``http.enable_custom_route_auth``), so every request runs as its user.

    Returns:
        The configuration as a dict (without ``auth``: the repository's ``langgraph.json``).

    Example:
        >>> langgraph_config(auth="./examples/auth.py:auth")["auth"]
        {'path': '.../examples/auth.py:auth'}
    """
    config: dict[str, Any] = {
        "dependencies": ["."],
        "graphs": {f"mnemon_{g}": f"langgraph_mnemon.server.graphs:{g}" for g in GRAPHS},
        "checkpointer": {"path": "langgraph_mnemon.server.persistence.checkpointer"},
        "store": {"path": "langgraph_mnemon.server.persistence.store"},
        "http": {"app": "langgraph_mnemon.server.http:app"},
    }
    if auth is not None:
        config["auth"] = {"path": _auth_path(auth)}
        config["http"]["enable_custom_route_auth"] = True
    return config


def extra_graphs_from(value: str | None) -> dict[str, str]:
    """The graphs named by a :data:`GRAPHS_ENV` value, by graph id (file paths made absolute:
    the server runs in ``ROOT/server``).

    Args:
        value: ``"my_agent=./agent.py:graph; other=pkg.graphs:other"``; ``None`` or blank
            names none.

    Returns:
        Graph id → ``"path:attr"`` for ``langgraph.json``'s ``graphs``.

    Raises:
        InvalidInputError: an entry is not ``graph_id=path:attr``, a graph id is taken by
            ours (``mnemon_*``) or given twice, or a file does not exist.

    Example:
        >>> extra_graphs_from("hitl=tests/support/hitl_served.py:graph")
        {'hitl': '/.../tests/support/hitl_served.py:graph'}
    """
    graphs: dict[str, str] = {}
    for entry in (value or "").split(";"):
        if not entry.strip():
            continue
        name, sep, target = (part.strip() for part in entry.partition("="))
        if not sep or not name.isidentifier() or name.startswith("mnemon_") or name in graphs:
            raise InvalidInputError(
                f"{GRAPHS_ENV}: {entry.strip()!r} must be graph_id=path/to/file.py:attr with a "
                "graph id of your own (not mnemon_*, each once), entries separated by ';'"
            )
        graphs[name] = _auth_path(target, what=f"{GRAPHS_ENV}: graph {name!r}", attr="graph")
    return graphs


def _auth_path(value: str, *, what: str = "the auth path", attr: str = "auth") -> str:
    target, sep, name = value.strip().rpartition(":")
    if not sep or not target or not name.isidentifier():
        raise InvalidInputError(
            f"{what} must look like path/to/file.py:{attr} or module:{attr} (got {value!r})"
        )
    if target.endswith(".py") or "/" in target:  # a file: absolute, the server runs elsewhere
        path = Path(target).expanduser().absolute()
        if not path.is_file():
            raise InvalidInputError(f"{what}: the module {str(path)!r} does not exist")
        target = str(path)
    return f"{target}:{name}"


def write_config(
    directory: Path, *, extra_graphs: dict[str, str] | None = None, auth: str | None = None
) -> Path:
    """Write ``langgraph.json`` into ``directory`` (created) and return its path.

    ``extra_graphs`` (graph id → ``"path/file.py:name"``) serves more graphs beside ours;
    ``auth`` is an ``auth.path`` (:func:`langgraph_config`).
    """
    config = langgraph_config(auth=auth)
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
    if chroma is not None:  # HOST:PORT or http(s)://HOST:PORT; anything else is refused
        address = chroma_server(chroma)
        env["MNEMON_CHROMA__HOST"] = address.host
        env["MNEMON_CHROMA__PORT"] = str(address.port)
        env["MNEMON_CHROMA__SSL"] = "true" if address.ssl else "false"
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
    auth: str | None = None,
    **popen: Any,
) -> subprocess.Popen[bytes]:
    """Start the server in ``<root>/server`` (its run queue and thread files live there).

    ``auth`` (default: the ``MNEMON_SERVE_AUTH`` environment variable) is an ``auth.path``;
    ``extra_graphs`` (default: those the ``MNEMON_SERVE_GRAPHS`` environment variable names)
    are served beside ours.

    Raises:
        InvalidInputError: ``MNEMON_SERVE_GRAPHS`` or ``auth`` is malformed.
    """
    env = server_env(root, postgres=postgres, chroma=chroma, host=host)
    workdir = Path(env["MNEMON_ROOT"]) / "server"
    auth = auth if auth is not None else (os.environ.get(AUTH_ENV) or None)
    if extra_graphs is None:
        extra_graphs = extra_graphs_from(os.environ.get(GRAPHS_ENV))
    config = write_config(workdir, extra_graphs=extra_graphs, auth=auth)
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
            if httpx.get(f"{url}/ok", timeout=1.0, trust_env=False).status_code == 200:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{url}/ok did not answer within {timeout:.0f} s")
        time.sleep(0.1)


# --- before and after the launch: the port is free, the server that answers is ours ---------


def check_port(host: str, port: int) -> None:
    """Refuse a port something already listens on, before ``langgraph dev`` silently moves
    to another one.

    The check binds like ``langgraph dev`` does (``SO_REUSEADDR``: a socket of a stopped
    server in TIME_WAIT does not count). Raises :class:`MnemonError` (``port-in-use``, or
    ``port-unavailable`` when ``host`` is not an address of this machine).

    Example:
        >>> check_port("127.0.0.1", 2024)  # raises when port 2024 is taken
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise MnemonError(
            f"--host {host!r} is not an address of this machine ({exc}); e.g. --host 127.0.0.1",
            code="port-unavailable",
        ) from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise MnemonError(
                    f"port {port} on {host} is already in use; stop what listens there or "
                    f"choose another port with --port (e.g. --port {_free_port(host)})",
                    code="port-in-use",
                ) from None
            raise MnemonError(
                f"cannot listen on {host} port {port} ({exc.strerror}); check --host and --port",
                code="port-unavailable",
            ) from None


def _free_port(host: str) -> int:
    """A port free right now, to suggest instead of a busy one."""
    six = ":" in host
    with socket.socket(socket.AF_INET6 if six else socket.AF_INET) as probe:
        probe.bind(("::1" if six else "127.0.0.1", 0))
        return int(probe.getsockname()[1])


def local_url(host: str, port: int) -> str:
    """The URL this machine reaches a server on ``host``:``port`` at (a wildcard host is
    reached on loopback).

    Example:
        >>> local_url("0.0.0.0", 2024), local_url("::1", 8123)
        ('http://127.0.0.1:2024', 'http://[::1]:8123')
    """
    name = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    try:
        if ipaddress.ip_address(name).version == 6:
            name = f"[{name}]"
    except ValueError:
        pass
    return f"http://{name}:{port}"


def served_root(url: str, *, timeout: float = 10.0) -> str | None:
    """The storage root the mnemon server at ``url`` serves (from its status), or None when
    the status cannot be read there."""
    import httpx

    try:
        response = httpx.get(f"{url}/mnemon/api/status", timeout=timeout, trust_env=False)
        root = response.json().get("root") if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return root if isinstance(root, str) else None
