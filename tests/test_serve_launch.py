"""An honest ``mnemon serve`` (issue 17, item 2): checked before it starts, the address printed
once it answers, ``--chroma`` as ``HOST:PORT`` or ``http(s)://HOST:PORT``, the Chroma target in
status. Real subprocesses, a real ``langgraph dev``, the real ``chroma run`` server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import pytest
from server_support import free_port, http

from langgraph_mnemon import Mnemon, MnemonConfig
from langgraph_mnemon.config import chroma_server
from langgraph_mnemon.errors import InvalidInputError, MnemonError
from langgraph_mnemon.server.launch import check_port, server_env


def _serve(root: Path, *args: str, env: dict[str, str] | None = None, **popen: object):
    command = [sys.executable, "-m", "langgraph_mnemon.cli", "--root", str(root), "serve"]
    full_env = {**os.environ, **(env or {})}
    if popen:
        return subprocess.Popen([*command, *args], env=full_env, **popen)  # type: ignore[call-overload]
    return subprocess.run(
        [*command, *args], env=full_env, capture_output=True, text=True, timeout=120
    )


def _one_line_refusal(done: subprocess.CompletedProcess[str], root: Path) -> str:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("mnemon: error: ")
    assert not (root / "server").exists()  # nothing was launched
    return lines[0]


# --- refused before launching -------------------------------------------------------------


def test_item17_2_serve_refuses_a_busy_port_in_one_line(tmp_path: Path) -> None:
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        line = _one_line_refusal(_serve(tmp_path / "r", "--port", str(port)), tmp_path / "r")
    assert f"port {port} on 127.0.0.1 is already in use" in line
    assert "--port" in line
    with socket.socket() as again:
        again.bind(("127.0.0.1", port))
        again.listen()
        with pytest.raises(MnemonError, match="already in use"):
            check_port("127.0.0.1", port)
    check_port("127.0.0.1", port)  # free again once the listener closed


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"MNEMON_MODEL": "openai:gpt-4.1-mini"}, ("MNEMON_MODEL='openai:gpt-4.1-mini'",)),
        ({"MNEMON_MODEL": "nosuch:model"}, ("MNEMON_MODEL", "Unsupported provider")),
        ({"MNEMON_WORKER_MODEL": "nosuch:model"}, ("MNEMON_WORKER_MODEL", "heuristics")),
    ],
)
def test_item17_2_serve_refuses_an_unresolvable_model_in_one_line(
    tmp_path: Path, env: dict[str, str], names: tuple[str, ...]
) -> None:
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    command = [sys.executable, "-m", "langgraph_mnemon.cli", "--root", str(tmp_path / "r")]
    done = subprocess.run(
        [*command, "serve", "--port", str(free_port())],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = _one_line_refusal(done, tmp_path / "r")
    for name in names:
        assert name in line
    if "openai:" in line:  # the missing key, or the missing integration package, is named
        assert "OPENAI_API_KEY" in line or "pip install langchain-openai" in line
    assert "serving on" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("/var/lib/chroma", "a folder is not a server"),
        ("./chroma", "a folder is not a server"),
        ("127.0.0.1", "the port is missing"),
        ("http://127.0.0.1", "the port is missing"),
        ("http://admin:hunter2@127.0.0.1:8000", "no user:password@"),
        ("admin:hunter2@127.0.0.1:8000", "no user:password@"),
        ("http://127.0.0.1:8000/api/v2", "no path or query"),
        ("ftp://127.0.0.1:8000", "is not a Chroma server scheme"),
        ("127.0.0.1:99999", "from 1 to 65535"),
    ],
)
def test_item17_2_chroma_forms_refused_at_start(tmp_path: Path, value: str, why: str) -> None:
    with pytest.raises(InvalidInputError, match="--chroma must be HOST:PORT or http") as bad:
        chroma_server(value)
    assert why in str(bad.value)
    assert "hunter2" not in str(bad.value)
    line = _one_line_refusal(_serve(tmp_path / "r", "--chroma", value), tmp_path / "r")
    assert why in line
    assert "hunter2" not in line


def test_item17_2_chroma_forms_parse(tmp_path: Path) -> None:
    assert chroma_server("127.0.0.1:8000").model_dump() == {
        "host": "127.0.0.1",
        "port": 8000,
        "ssl": False,
        "scheme": "",
    }
    assert chroma_server("https://chroma.example.internal:443/").ssl is True
    assert chroma_server("[::1]:8000").host == "::1"
    env = server_env(tmp_path, chroma="https://chroma.example.internal:8443", base={})
    assert (env["MNEMON_CHROMA__HOST"], env["MNEMON_CHROMA__PORT"]) == (
        "chroma.example.internal",
        "8443",
    )
    assert env["MNEMON_CHROMA__SSL"] == "true"
    # The setting takes the same address (what `chroma run` and .ci/start-chroma.sh print).
    cfg = MnemonConfig(chroma={"host": "http://127.0.0.1:58123"}).chroma
    assert (cfg.host, cfg.port, cfg.ssl) == ("127.0.0.1", 58123, False)
    with pytest.raises(InvalidInputError, match=r"chroma\.host .*a folder is not a server"):
        MnemonConfig(chroma={"host": "/var/lib/chroma"})


# --- both forms against the real Chroma server -------------------------------------------


@pytest.mark.parametrize("form", ["host:port", "url"])
def test_item17_2_chroma_both_forms_write_and_search_on_the_server(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    chroma_server: tuple[str, int],
    form: str,
) -> None:
    host, port = chroma_server
    value = f"{host}:{port}" if form == "host:port" else f"http://{host}:{port}"
    env = server_env(tmp_path / "root", chroma=value, base={})
    for key in ("MNEMON_CHROMA__HOST", "MNEMON_CHROMA__PORT", "MNEMON_CHROMA__SSL"):
        monkeypatch.setenv(key, env[key])
    with Mnemon(MnemonConfig(root=tmp_path / "root")) as mem:
        assert mem.status().chroma == f"http://{host}:{port}"
        made = mem.spaces.create_space(
            f"vectors {form} {uuid.uuid4().hex[:6]}", "", provider_id="chroma"
        )
        assert made.space is not None
        fact = f"The {form} deploy runs the canary for {uuid.uuid4().hex[:6]} minutes."
        stored = mem.spaces.remember(fact, space_id=made.space.id)
        assert stored.committed, stored
        found = mem.spaces.search("how long does the canary run", space_ids=[made.space.id])
        assert fact in [r.content for r in found.results]
        collection = mem.spaces.get_space(made.space.id).config["collection"]
    import chromadb

    # The vectors are on the server, not in a local folder.
    remote = chromadb.HttpClient(host=host, port=port)
    assert fact in remote.get_collection(collection).get()["documents"]
    assert not (tmp_path / "root" / "chroma").exists()


def test_item17_2_status_names_the_chroma_target_without_the_token(tmp_path: Path) -> None:
    local = Mnemon.open(tmp_path / "a")
    assert local.status().chroma == f"local {tmp_path / 'a' / 'chroma'}"
    local.close()
    remote = Mnemon.open(
        tmp_path / "b", chroma={"host": "https://chroma.internal:8443", "token": "s3cret-token"}
    )
    status = remote.status()
    remote.close()
    assert status.chroma == "https://chroma.internal:8443"
    assert "s3cret-token" not in status.model_dump_json()
    off = Mnemon.open(tmp_path / "c", chroma={"enabled": False})
    assert off.status().chroma is None
    off.close()
    shown = subprocess.run(
        [sys.executable, "-m", "langgraph_mnemon.cli", "--root", str(tmp_path / "a"), "status"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert f"chroma: local {tmp_path / 'a' / 'chroma'}" in shown.stdout


# --- a real launch: the address printed after it answered, stopped with mnemon serve ---------


@contextmanager
def _launched(root: Path, port: int, *args: str) -> Iterator[subprocess.Popen[str]]:
    log = root.parent / "serve.log"
    with log.open("w") as sink:
        process = _serve(
            root,
            "--port",
            str(port),
            *args,
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def _wait_for_line(log: Path, text: str, process: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if text in line:
                return line
        assert process.poll() is None, log.read_text(errors="replace")[-3000:]
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never printed:\n{log.read_text(errors='replace')[-3000:]}")


def test_item17_2_serve_prints_the_address_that_answers_and_serves_the_chroma_url(
    tmp_path: Path, chroma_server: tuple[str, int]
) -> None:
    host, chroma_port = chroma_server
    chroma_url = f"http://{host}:{chroma_port}"  # the exact form .ci/start-chroma.sh prints
    root, port = tmp_path / "root", free_port()
    with _launched(root, port, "--chroma", chroma_url) as process:
        line = _wait_for_line(tmp_path / "serve.log", "mnemon: serving on", process)
        url = f"http://127.0.0.1:{port}"
        assert line.startswith(
            f"mnemon: serving on {url} — web page and control plane at {url}/mnemon/"
        )
        assert http.get(f"{url}/ok", timeout=10).status_code == 200  # printed = answering
        status = http.get(f"{url}/mnemon/api/status", timeout=30).json()
        assert status["chroma"] == chroma_url
        assert status["root"] == str(root.absolute())
        api = f"{url}/mnemon/api"
        made = http.post(
            f"{api}/spaces",
            json={"name": f"served {uuid.uuid4().hex[:6]}", "provider_id": "chroma"},
            timeout=60,
        )
        assert made.status_code == 200, made.text
        space = made.json()["space"]["id"]
        fact = f"The served chroma space keeps fact {uuid.uuid4().hex[:8]}."
        stored = http.post(f"{api}/spaces/{space}/memories", json={"content": fact}, timeout=60)
        assert stored.status_code == 200, stored.text
        assert stored.json()["status"] == "committed", stored.text
        # Stopping `mnemon serve` stops the server it started, and it exits cleanly.
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                http.get(f"{url}/ok", timeout=1)
            except httpx.HTTPError:
                break
            time.sleep(0.3)
        else:
            raise AssertionError("the server kept answering after mnemon serve stopped")
