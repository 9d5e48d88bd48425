"""``mnemon serve``: LangGraph server over the storage root, checked before it starts.

Before launching it refuses, each with one line: a bad ``--postgres`` / ``--chroma``, settings
that do not load, a port already in use, and a chat model (``MNEMON_MODEL`` /
``MNEMON_WORKER_MODEL``) that cannot be built (missing API key or integration package). The
options, the settings and the port are checked before the host is even imported, so those
refusals come at once. After launching it waits until the server answers on that port and
prints the address only then.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from langgraph_mnemon.cli._common import app, open_host, root_of
from langgraph_mnemon.errors import InvalidInputError, MnemonError

if TYPE_CHECKING:
    from langgraph_mnemon.host import Mnemon

__all__ = ["READY_TIMEOUT", "serve"]

#: Seconds ``mnemon serve`` waits for ``/ok`` (a cold start imports LangGraph server).
READY_TIMEOUT = 180.0


def _settings(env: dict[str, str], *, postgres: bool, chroma: bool) -> dict[str, Any]:
    """The settings ``--postgres`` / ``--chroma`` give the server, for the check here."""
    settings: dict[str, Any] = {}
    if postgres:
        settings["database_url"] = env["MNEMON_DATABASE_URL"]
    if chroma:
        settings["chroma"] = {
            "host": env["MNEMON_CHROMA__HOST"],
            "port": int(env["MNEMON_CHROMA__PORT"]),
            "ssl": env["MNEMON_CHROMA__SSL"] == "true",
        }
    return settings


def check_models(mem: Mnemon) -> None:
    """Build the configured chat models now, so a missing key or package is one line here
    instead of a traceback in the server's log."""
    for env, spec in (
        ("MNEMON_MODEL", mem.config.model),
        ("MNEMON_WORKER_MODEL", mem.config.worker_model),
    ):
        if spec is None:
            continue
        # Deferred: LangChain loads only when a model is configured.
        from langgraph_mnemon.adapters.models import resolve_chat_model

        try:
            resolve_chat_model(spec)
        except InvalidInputError as exc:
            fallback = "the offline scripted model" if env == "MNEMON_MODEL" else "heuristics"
            raise InvalidInputError(
                f"{env}={spec!r} cannot be used: {exc.message.rstrip('.')}. Fix that, or "
                f"unset {env} to run {fallback}"
            ) from None


class _Server:
    """The ``langgraph dev`` child: stopped with ``mnemon serve``, never left orphaned."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.stopping = False
        signal.signal(signal.SIGTERM, lambda *_: self.stop())

    def stop(self) -> None:
        self.stopping = True
        self.process.terminate()

    def exit_code(self, code: int) -> int:
        """0 when it stopped because we asked; a signal that killed it as 128 + its number."""
        if self.stopping and code in (0, -signal.SIGTERM, 128 + signal.SIGTERM):
            return 0
        return 128 - code if code < 0 else code

    def wait_up(self, root: Path, host: str, port: int) -> float:
        """Wait for ``/ok`` on the chosen port and check the server there serves ``root``;
        return the seconds it took."""
        from langgraph_mnemon.server.launch import local_url, served_root, wait_ready

        url = local_url(host, port)
        try:
            seconds = wait_ready(url, timeout=READY_TIMEOUT, process=self.process)
        except RuntimeError:
            if self.stopping:
                raise typer.Exit(self.exit_code(self.process.wait())) from None
            raise MnemonError(
                f"the server exited with status {self.process.returncode} before it answered "
                f"on {url}; its log is above"
            ) from None
        except TimeoutError:
            self.stop()
            raise MnemonError(
                f"the server did not answer on {url}/ok within {READY_TIMEOUT:.0f} s; "
                "its log is above"
            ) from None
        answered = served_root(url)
        if answered is not None and Path(answered).resolve() != root.expanduser().resolve():
            self.stop()
            raise MnemonError(
                f"another mnemon server (root {answered}) answered on port {port}; "
                "choose another port with --port"
            )
        return seconds


def _listening(host: str, port: int) -> str:
    """What to print: the address listened on, and where this machine reaches a wildcard."""
    from langgraph_mnemon.server.launch import local_url

    here = local_url(host, port)
    if host not in ("0.0.0.0", "::"):
        return f"{here} — web page and control plane at {here}/mnemon/"
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port} (all interfaces) — web page at {here}/mnemon/ on this machine"


def _check_before_launch(
    ctx: typer.Context,
    root: Path,
    *,
    host: str,
    port: int,
    postgres: str | None,
    chroma: str | None,
) -> None:
    """Every check before the launch, where a problem prints one line, not a server log.

    The cheap ones come first: the options, the settings (loaded as ``Mnemon.open`` will,
    raising :class:`InvalidInputError` naming the bad key) and the port are refused before the
    host is even imported; then the host opens the root and the chat models are built.
    """
    from langgraph_mnemon.config import MnemonConfig
    from langgraph_mnemon.server.launch import check_port, server_env

    env = server_env(root, postgres=postgres, chroma=chroma, host=host)
    overrides = _settings(env, postgres=postgres is not None, chroma=chroma is not None)
    given = root_of(ctx)
    MnemonConfig(**overrides, **({} if given is None else {"root": Path(given)}))
    check_port(host, port)
    with open_host(ctx, **overrides) as mem:
        check_models(mem)


def _auth_path(auth: Path) -> str:
    """``FILE.py:name`` with the file made absolute (the server runs in ROOT/server)."""
    file, _, name = str(auth).partition(":")
    if not Path(file).is_file():
        raise InvalidInputError(f"--auth {auth}: no such file; name FILE.py:auth")
    return f"{Path(file).resolve()}:{name or 'auth'}"


@app.command("serve")
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 2024,
    postgres: Annotated[
        str | None,
        typer.Option(help="PostgreSQL URL for the Mnemos store, spaces and checkpointer."),
    ] = None,
    chroma: Annotated[
        str | None,
        typer.Option(
            help="Chroma server for chroma Memory Spaces: HOST:PORT or http(s)://HOST:PORT "
            "(https = TLS)."
        ),
    ] = None,
    auth: Annotated[
        Path | None,
        typer.Option(
            help="A LangGraph custom auth module (auth.path: FILE.py:auth); the control plane "
            "then serves each authenticated user their own scope. See docs/multi-user.md."
        ),
    ] = None,
) -> None:
    """Serve the memory graphs, store, checkpointer and control plane with LangGraph server.

    Runs `langgraph dev` (no browser, no reload, no analytics or version check) with its
    working files in ROOT/server, after checking the settings, the chat models and that the
    port is free. The address is printed once the server answers; the control plane and web
    page are at /mnemon/. Ctrl-C (or SIGTERM) stops it.
    """
    from langgraph_mnemon.server.launch import start

    root = Path(root_of(ctx) or ".mnemon")
    _check_before_launch(ctx, root, host=host, port=port, postgres=postgres, chroma=chroma)
    server = _Server(
        start(
            root,
            host=host,
            port=port,
            postgres=postgres,
            chroma=chroma,
            auth=None if auth is None else _auth_path(auth),
        )
    )
    try:
        seconds = server.wait_up(root, host, port)
        typer.echo(
            f"mnemon: serving on {_listening(host, port)} (up in {seconds:.1f} s; Ctrl-C stops)",
            err=True,
        )
        code = server.process.wait()
    except KeyboardInterrupt:
        server.stop()
        code = server.process.wait()
    raise typer.Exit(server.exit_code(code))
