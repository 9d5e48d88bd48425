"""Issue 12, the control plane: one request guard (Host, Origin, content type, authority) that
holds under every root path and prefix, typed storage errors, redacted URLs, an OpenAPI
document that states every rule the server enforces.

Real storage roots through ``Mnemon.open``; requests in-process through httpx's ASGI transport
with a chosen peer address (a non-loopback peer is only ever simulated in the ASGI scope, never
dialled), a real uvicorn on loopback for ``--root-path``, LangGraph server's own app (built in a
subprocess) for ``http.mount_prefix``, a real PostgreSQL for URL redaction, a small tmpfs for a
full and a read-only disk, and schemathesis for schema-valid requests.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_support import free_port
from starlette.applications import Starlette
from starlette.routing import Mount

from langgraph_mnemon import Mnemon, MnemonConfig
from langgraph_mnemon.config import redact_url
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers import documents as documents_layer
from langgraph_mnemon.memory_layers import spaces as spaces_layer
from langgraph_mnemon.memory_layers.mnemos import MAX_TASK_ID_CHARS
from langgraph_mnemon.server.http import create_app
from langgraph_mnemon.storage.db import parse_database_url
from langgraph_mnemon.storage.db import redact_url as redact_db_url

API = "/mnemon/api"
BASE = "http://127.0.0.1:8765"
REMOTE = "192.0.2.7"  # TEST-NET-1: only ever a peer address in an in-process ASGI scope
ADD = {"action": "add", "target": "memory", "content": "Planted by a hostile page."}
REPO = Path(__file__).resolve().parents[1]


def _open(root: Path, **settings: Any) -> Mnemon:
    settings.setdefault("chroma", {"enabled": False})
    return Mnemon.open(root, **settings)


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Mnemon]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    mem = _open(tmp_path / "m", workspace=workspace)
    yield mem
    mem.close()


def _client(
    app: Any, ip: str = "127.0.0.1", *, base: str = BASE, root_path: str = "", **headers: str
) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, client=(ip, 5000), root_path=root_path),
        base_url=base,
        headers=headers,
    )


def _files(root: Path) -> dict[str, bytes]:
    """The bytes of every file under ``root``."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _error(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "message"}, body
    assert body["error"] == code, body
    assert "Traceback" not in body["message"]
    return str(body["message"])


async def _stream(body: bytes, read: threading.Event) -> AsyncIterator[bytes]:
    """A request body that records whether the server began to read it."""
    read.set()
    yield body


def _entries(host: Mnemon) -> list[str]:
    return [e.content for e in host.runtime.entries()]


# --- item 1: Host, Origin, Sec-Fetch-Site, Content-Type ------------------------------------


@pytest.mark.asyncio
async def test_item01_a_foreign_host_header_is_refused_for_reads_and_writes(
    host: Mnemon, tmp_path: Path
) -> None:
    app = create_app(host)
    before = _files(tmp_path / "m")
    async with _client(app, base="http://evil.example:1234") as rebound:
        message = _error(await rebound.get(f"{API}/runtime"), 403, "host-not-allowed")
        assert "MNEMON_ALLOWED_HOSTS" in message
        _error(await rebound.get("/mnemon/"), 403, "host-not-allowed")
        _error(await rebound.post(f"{API}/runtime", json=ADD), 403, "host-not-allowed")
    async with _client(app, Host="localhost.") as dotted:  # resolved through DNS: not loopback
        _error(await dotted.get(f"{API}/status"), 403, "host-not-allowed")
    assert _entries(host) == []
    assert _files(tmp_path / "m") == before

    for name in ("127.0.0.1:8765", "localhost:2024", "[::1]:80", "127.0.0.1", "LOCALHOST"):
        async with _client(app, Host=name) as local:
            assert (await local.get(f"{API}/status")).status_code == 200, name
    host.config.allowed_hosts = ["mnemon.internal"]
    async with _client(app, base="http://mnemon.internal:2024") as named:
        assert (await named.post(f"{API}/runtime", json=ADD)).status_code == 200
    async with _client(app, base="http://evil.example:1234") as rebound:
        _error(await rebound.get(f"{API}/status"), 403, "host-not-allowed")
    assert _entries(host) == [ADD["content"]]


@pytest.mark.asyncio
async def test_item01_the_served_host_is_answered_and_a_wildcard_takes_ip_literals_only(
    host: Mnemon,
) -> None:
    app = create_app(host)
    host.config.serve_host = "10.1.2.3"
    async with _client(app, Host="10.1.2.3:2024") as served:
        assert (await served.get(f"{API}/status")).status_code == 200
    async with _client(app, Host="10.9.9.9:2024") as other:
        _error(await other.get(f"{API}/status"), 403, "host-not-allowed")
    host.config.serve_host = "0.0.0.0"
    async with _client(app, Host="192.0.2.55:2024") as literal:
        assert (await literal.get(f"{API}/status")).status_code == 200
    async with _client(app, Host="rebind.example:2024") as rebound:
        _error(await rebound.get(f"{API}/status"), 403, "host-not-allowed")
    # mnemon serve passes its --host on to the server process
    from langgraph_mnemon.server.launch import server_env

    env = server_env(Path("/tmp/r"), host="0.0.0.0", base={})
    assert env["MNEMON_SERVE_HOST"] == "0.0.0.0"
    assert MnemonConfig(serve_host="[::1]").serve_host == "::1"


@pytest.mark.asyncio
async def test_item01_changes_need_a_json_content_type_checked_before_the_body_is_read(
    host: Mnemon, tmp_path: Path
) -> None:
    memory = host.spaces.remember("Kept.", space_id=host.spaces.create_space("S").space.id)
    app = create_app(host)
    before = _files(tmp_path / "m")
    body = json.dumps(ADD).encode()
    async with _client(app) as local:
        for content_type in (
            "text/plain",
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/json; charset=latin-1",
            "application/jsonx",
            None,
        ):
            headers = {"Content-Type": content_type} if content_type else {}
            read = threading.Event()
            response = await local.post(
                f"{API}/runtime", content=_stream(body, read), headers=headers
            )
            message = _error(response, 415, "unsupported-media-type")
            assert "application/json" in message
            assert not read.is_set(), f"the body was read for {content_type}"
        gone = await local.delete(f"{API}/spaces/{memory.space_id}/memories/{memory.id}")
        _error(gone, 415, "unsupported-media-type")
        assert _entries(host) == []
        assert _files(tmp_path / "m") == before
        ok = await local.post(
            f"{API}/runtime",
            content=body,
            headers={"Content-Type": "application/json; charset=UTF-8"},
        )
        assert ok.status_code == 200, ok.text
        forgotten = await local.delete(
            f"{API}/spaces/{memory.space_id}/memories/{memory.id}",
            headers={"Content-Type": "application/json"},
        )
        assert forgotten.status_code == 200, forgotten.text
    assert _entries(host) == [ADD["content"]]


@pytest.mark.asyncio
async def test_item01_browser_requests_from_another_origin_are_refused(
    host: Mnemon, tmp_path: Path
) -> None:
    app = create_app(host)
    before = _files(tmp_path / "m")
    async with _client(app) as local:
        for headers in (
            {"Origin": "http://localhost:9999"},
            {"Origin": "http://127.0.0.2:8765"},
            {"Origin": "https://127.0.0.1:8765"},  # another scheme is another origin
            {"Origin": "null"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Origin": "http://127.0.0.1:8765", "Sec-Fetch-Site": "cross-site"},
        ):
            response = await local.post(f"{API}/runtime", json=ADD, headers=headers)
            _error(response, 403, "cross-origin")
        # A cross-origin read (a CORS fetch: LangGraph server answers CORS with "*")
        refused = await local.get(f"{API}/runtime", headers={"Origin": "http://evil.example"})
        _error(refused, 403, "cross-origin")
        assert _files(tmp_path / "m") == before

        same = {"Origin": "http://127.0.0.1:8765", "Sec-Fetch-Site": "same-origin"}
        assert (await local.post(f"{API}/runtime", json=ADD, headers=same)).status_code == 200
        plain = {**ADD, "content": "From curl: no Origin at all."}
        assert (await local.post(f"{API}/runtime", json=plain)).status_code == 200
        assert (
            await local.get(f"{API}/runtime", headers={"Sec-Fetch-Site": "cross-site"})
        ).is_success
        host.config.allowed_origins = ["https://dash.example"]
        allowed = {"Origin": "https://dash.example", "Sec-Fetch-Site": "cross-site"}
        dash = {**ADD, "content": "From an allowed dashboard."}
        assert (await local.post(f"{API}/runtime", json=dash, headers=allowed)).status_code == 200
    assert _entries(host) == [ADD["content"], plain["content"], dash["content"]]


def test_item01_allowed_hosts_and_origins_are_settings_with_env_lists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MNEMON_ALLOWED_HOSTS", "mnemon.internal, [::1] ,10.0.0.5")
    monkeypatch.setenv("MNEMON_ALLOWED_ORIGINS", '["HTTPS://Dash.Example:443/"]')
    monkeypatch.setenv("MNEMON_TRUSTED_HOSTS", "127.0.0.0/8,10.0.0.0/8")
    config = MnemonConfig()
    assert config.allowed_hosts == ["mnemon.internal", "::1", "10.0.0.5"]
    assert config.allowed_origins == ["https://dash.example"]
    assert config.trusted_hosts == ["127.0.0.0/8", "10.0.0.0/8"]
    for bad in ({"allowed_hosts": ["http://x"]}, {"allowed_origins": ["dash.example"]}):
        with pytest.raises(InvalidInputError):
            MnemonConfig(**bad)
    monkeypatch.setenv("MNEMON_ALLOWED_HOSTS", "[not json")
    with pytest.raises(InvalidInputError, match="MNEMON_ALLOWED_HOSTS"):
        MnemonConfig()


# --- item 2: under a root path and a prefix -------------------------------------------------


class _RootPath:
    """An app that sets ``root_path`` itself (as FastAPI(root_path=...) does)."""

    def __init__(self, app: Any, root_path: str) -> None:
        self.app, self.root_path = app, root_path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app({**scope, "root_path": self.root_path}, receive, send)


@pytest.mark.asyncio
async def test_item02_authority_holds_under_a_root_path_and_a_mount(
    host: Mnemon, tmp_path: Path
) -> None:
    app = create_app(host)
    before = _files(tmp_path / "m")
    mounted = Starlette(routes=[Mount("/x", app=app)])
    cases = [
        (app, "/x", "/x"),  # uvicorn --root-path /x: path keeps the prefix, root_path names it
        (mounted, "", "/x"),  # a parent app's Mount
        (_RootPath(app, "/x"), "", "/x"),  # an app created with root_path
        (_RootPath(app, "/x"), "", ""),  # ... behind a proxy that stripped the prefix
    ]
    for target, root_path, prefix in cases:
        async with _client(target, REMOTE, root_path=root_path) as remote:
            posted = await remote.post(f"{prefix}{API}/runtime", json=ADD)
            _error(posted, 403, "forbidden")
            _error(await remote.get(f"{prefix}{API}/runtime"), 403, "forbidden")
        async with _client(target, root_path=root_path) as local:
            foreign = await local.get(f"{prefix}{API}/status", headers={"Host": "evil.example"})
            _error(foreign, 403, "host-not-allowed")
            text = await local.post(
                f"{prefix}{API}/runtime", content=b"{}", headers={"Content-Type": "text/plain"}
            )
            _error(text, 415, "unsupported-media-type")
    assert _entries(host) == []
    assert _files(tmp_path / "m") == before
    async with _client(mounted) as local:  # the control plane still works under the prefix
        assert (await local.post(f"/x{API}/runtime", json=ADD)).status_code == 200
    assert _entries(host) == [ADD["content"]]


def test_item02_authority_holds_under_real_uvicorn_root_path(host: Mnemon, tmp_path: Path) -> None:
    import uvicorn

    port = free_port()
    config = uvicorn.Config(
        create_app(host), host="127.0.0.1", port=port, root_path="/x", log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive(), "uvicorn stopped"
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        before = _files(tmp_path / "m")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", trust_env=False, timeout=60) as c:
            # uvicorn puts the root path in front (scope path /x/mnemon/...): the old guard
            # saw that path and skipped every rule; the router strips it and serves the route.
            planted = c.post(f"{API}/runtime", content=json.dumps(ADD), headers={
                "Content-Type": "text/plain", "Origin": "http://evil.example"})  # fmt: skip
            _error(planted, 403, "cross-origin")
            text = c.post(
                f"{API}/runtime", content=json.dumps(ADD), headers={"Content-Type": "text/plain"}
            )
            _error(text, 415, "unsupported-media-type")
            rebound = c.get(f"{API}/status", headers={"Host": f"evil.example:{port}"})
            _error(rebound, 403, "host-not-allowed")
            assert _files(tmp_path / "m") == before
            assert c.get(f"{API}/status").status_code == 200
            assert c.post(f"{API}/runtime", json=ADD).status_code == 200
    finally:
        server.should_exit = True
        thread.join(timeout=20)
    assert _entries(host) == [ADD["content"]]


_MOUNT_PREFIX_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    import httpx
    import langgraph_api.server as server  # builds LangGraph server's app from the environment

    ADD = {"action": "add", "target": "memory", "content": sys.argv[1]}

    async def main():
        out = {}
        async def call(name, ip, method, path, **kw):
            transport = httpx.ASGITransport(app=server.app, client=(ip, 5000))
            base = "http://127.0.0.1:2024"
            async with httpx.AsyncClient(transport=transport, base_url=base) as c:
                r = await c.request(method, path, **kw)
                out[name] = [r.status_code, r.json().get("error") if r.content else None]
        await call("remote_post", "192.0.2.7", "POST", "/lg/mnemon/api/runtime", json=ADD)
        await call("remote_get", "192.0.2.7", "GET", "/lg/mnemon/api/runtime")
        await call("cors_read", "127.0.0.1", "GET", "/lg/mnemon/api/runtime",
                   headers={"Origin": "http://evil.example"})
        await call("rebound", "127.0.0.1", "GET", "/lg/mnemon/api/status",
                   headers={"Host": "evil.example"})
        await call("local_post", "127.0.0.1", "POST", "/lg/mnemon/api/runtime",
                   json={**ADD, "content": "local"})
        print("RESULT " + json.dumps(out))

    asyncio.run(main())
    """
)


def test_item02_authority_holds_under_langgraph_mount_prefix(tmp_path: Path) -> None:
    """LangGraph server's own app with ``http.mount_prefix`` (built as ``langgraph dev`` does)."""
    root = tmp_path / "root"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "MNEMON_ROOT": str(root),
        "MNEMON_CHROMA__ENABLED": "false",
        "MIGRATIONS_PATH": "__inmem",
        "DATABASE_URI": ":memory:",
        "REDIS_URI": "fake",
        "LANGGRAPH_RUNTIME_EDITION": "inmem",
        "LANGSMITH_LANGGRAPH_API_VARIANT": "local_dev",
        "LANGGRAPH_DISABLE_FILE_PERSISTENCE": "true",
        "LANGGRAPH_HTTP": json.dumps(
            {"app": "langgraph_mnemon.server.http:app", "mount_prefix": "/lg"}
        ),
        "LANGSMITH_TRACING": "false",
    }
    done = subprocess.run(
        [sys.executable, "-c", _MOUNT_PREFIX_SCRIPT, ADD["content"]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0, done.stderr[-3000:]
    assert lines, done.stdout[-3000:]
    result = json.loads(lines[0].removeprefix("RESULT "))
    assert result["remote_post"] == [403, "forbidden"]
    assert result["remote_get"] == [403, "forbidden"]
    assert result["cors_read"] == [403, "cross-origin"]
    assert result["rebound"] == [403, "host-not-allowed"]
    assert result["local_post"][0] == 200
    with _open(root) as mem:
        assert _entries(mem) == ["local"]


# --- item 7: empty space_ids ----------------------------------------------------------------


@pytest.mark.asyncio
async def test_item07_empty_space_ids_is_the_same_422_for_query_and_recall(host: Mnemon) -> None:
    async with _client(create_app(host), **{"Content-Type": "application/json"}) as local:
        recall = await local.post(f"{API}/recall", json={"query": "x", "space_ids": []})
        query = await local.post(f"{API}/query", json={"question": "x?", "space_ids": []})
    for response in (recall, query):
        message = _error(response, 422, "invalid-input")
        assert "space_ids" in message
        assert "omit space_ids" in message


# --- item 8: credentials in URLs ---------------------------------------------------------------

_SECRET = "zz-secret-zz"


def test_item08_redact_url_masks_every_credential_and_keeps_clean_urls() -> None:
    for url in (
        f"postgresql+psycopg://app:{_SECRET}@db:5432/mnemon",
        f"postgresql://app@db/mnemon?password={_SECRET}&sslmode=require",
        f"postgresql://db/m?PWD={_SECRET}",
        f"postgresql://db/m?passwd={_SECRET}",
        f"http://h:11434/v1?api_key={_SECRET}",
        f"http://h/v1?apikey={_SECRET}&model=nomic",
        f"http://h/v1?x-api-key={_SECRET}",
        f"http://h/v1?client_secret={_SECRET}",
        f"http://h/v1?access_token={_SECRET}",
        f"http://h/v1?token={_SECRET}",
        f"http://h/v1?key={_SECRET}",
        f"http://h/v1?Auth={_SECRET}",
        f"https://blob/x?sv=2024&sig={_SECRET}",
        f"https://s3/x?X-Amz-Signature={_SECRET}",
        f"postgresql://db/m?sslpassword={_SECRET}",
        f"http://h/cb#access_token={_SECRET}&state=1",
        f"postgresql+psycopg://app:pa/{_SECRET}@db/mnemon",  # SQLAlchemy reads "/" in it
    ):
        for shown in (redact_url(url), redact_db_url(url)):
            assert _SECRET not in shown, (url, shown)
            assert "***" in shown, (url, shown)
    assert redact_url("http://h/v1?api_key=k&model=nomic&monkey=banana").endswith(
        "model=nomic&monkey=banana"
    )
    for clean in (
        "sqlite:////tmp/x/mnemon.db",
        "postgresql+psycopg://app@db:5432/mnemon?sslmode=require&application_name=a%20b",
        "http://localhost:11434",
        "https://h/v1?model=nomic-embed-text&keyspace=x",
        "not a url at all?password=visible",  # not a URL: shown as given
    ):
        assert redact_url(clean) == clean
        assert redact_db_url(clean) == clean


@pytest.mark.asyncio
async def test_item08_status_and_settings_show_no_url_credential(
    postgres_url: str, tmp_path: Path
) -> None:
    database_url = f"{postgres_url}&sslpassword={_SECRET}&application_name=mnemon-redaction"
    mem = _open(
        tmp_path / "m",
        database_url=database_url,
        embedding={"enabled": False, "endpoint": f"http://127.0.0.1:9/v1?api_key={_SECRET}"},
    )
    try:
        async with _client(create_app(mem)) as local:
            status = await local.get(f"{API}/status")
            settings = await local.get(f"{API}/settings")
        for response in (status, settings):
            assert response.status_code == 200, response.text
            assert _SECRET not in response.text
            assert "mnemon:mnemon@" not in response.text  # the userinfo password
            assert "application_name=mnemon-redaction" in response.text  # the rest is kept
        assert settings.json()["embedding"]["endpoint"] == "http://127.0.0.1:9/v1?api_key=***"
        assert _SECRET not in mem.status().database_url
    finally:
        mem.close()


def test_item08_error_messages_redact_urls() -> None:
    from langgraph_mnemon.server.launch import server_env

    with pytest.raises(InvalidInputError) as bad_model:  # over chroma.host's 253 characters
        MnemonConfig(chroma={"host": f"https://u:{_SECRET}@h/{'x' * 260}?token={_SECRET}"})
    with pytest.raises(InvalidInputError) as bad_postgres:
        server_env(Path("/tmp/r"), postgres=f"mysql://u:{_SECRET}@h/db?password={_SECRET}")
    with pytest.raises(InvalidInputError) as bad_port:  # make_url's own ValueError, typed
        parse_database_url(f"postgresql://u:{_SECRET}@h:port/db?password={_SECRET}")
    for error in (bad_model.value, bad_postgres.value, bad_port.value):
        assert _SECRET not in str(error)
        assert "***" in str(error)


def test_item08_embedding_endpoint_errors_redact_the_key() -> None:
    from langgraph_mnemon.adapters.embeddings import HttpEmbedder
    from langgraph_mnemon.errors import ProviderError

    closed = f"http://127.0.0.1:{free_port()}/v1?api_key={_SECRET}"  # nothing listens there
    embedder = HttpEmbedder(closed, protocol="openai", model="m", timeout=0.5, retries=0)
    with pytest.raises(ProviderError) as unreachable:
        embedder.embed_documents(["hello"])
    with pytest.raises(InvalidInputError) as relative:
        HttpEmbedder(f"ftp://h/?key={_SECRET}", protocol="openai", model="m")
    for error in (unreachable.value, relative.value):
        assert _SECRET not in str(error)
        assert "***" in str(error)


# --- item 9: the OpenAPI document states the rules ----------------------------------------------


@pytest.mark.asyncio
async def test_item09_openapi_states_id_patterns_and_non_empty_rules(host: Mnemon) -> None:
    import jsonschema

    async with _client(create_app(host)) as local:
        spec = (await local.get("/mnemon/openapi.json")).json()
        paths = spec["paths"]

        def param(path: str, method: str, name: str) -> dict[str, Any]:
            found = [p for p in paths[path][method]["parameters"] if p["name"] == name]
            return found[0]["schema"]

        def body(path: str, method: str = "post") -> dict[str, Any]:
            return paths[path][method]["requestBody"]["content"]["application/json"]["schema"]

        space = param(f"{API}/spaces/{{space_id}}/content", "get", "space_id")
        assert space["pattern"] == spaces_layer.SPACE_ID_PATTERN.pattern
        document = param(f"{API}/documents/{{document_id}}", "get", "document_id")
        assert document["pattern"] == documents_layer.DOCUMENT_ID_PATTERN.pattern
        task = param(f"{API}/mnemos/tasks/{{task_id}}/nodes", "get", "task_id")
        assert task["maxLength"] == MAX_TASK_ID_CHARS
        memory = param(f"{API}/spaces/{{space_id}}/memories/{{memory_id}}", "delete", "memory_id")
        assert memory["minLength"] == 1
        category = param(f"{API}/spaces/{{space_id}}/content", "get", "category")
        assert "gossip" not in category["enum"]
        assert body(f"{API}/settings", "patch")["minProperties"] == 1
        assert body(f"{API}/recall")["properties"]["space_ids"]["minItems"] == 1
        names = body(f"{API}/spaces")["properties"]["name"]
        assert names["maxLength"] == spaces_layer.MAX_NAME_CHARS

        # Each request the issue saw refused for a rule the schema did not state: the schema
        # now says it is invalid, and the server still refuses it.
        refused = [
            ("post", f"{API}/spaces", {"name": ""}),
            ("post", f"{API}/spaces", {"name": "   "}),
            ("post", f"{API}/runtime", {"action": "add", "target": "memory"}),
            ("post", f"{API}/runtime", {"action": "add", "target": "memory", "content": " "}),
            ("post", f"{API}/runtime", {"action": "remove", "target": "user"}),
            ("post", f"{API}/documents", {"title": "", "content": "c"}),
            ("post", f"{API}/documents", {"title": "t", "content": "c", "source_paths": ["/x"]}),
            ("post", f"{API}/spaces/default/memories", {"content": "x", "importance": 9}),
            ("post", f"{API}/spaces/default/memories", {"content": "x", "category": "gossip"}),
            ("post", f"{API}/spaces/default/memories", {"content": "x", "tags": [""]}),
            ("post", f"{API}/recall", {"query": " "}),
            ("post", f"{API}/recall", {"query": "x", "space_ids": []}),
            ("post", f"{API}/query", {"question": "x", "space_ids": []}),
            ("patch", f"{API}/settings", {}),
        ]
        host.spaces.create_space("Default", active=True)
        for method, path, data in refused:
            schema = body(
                path.replace("/default/", "/{space_id}/") if "/default/" in path else path, method
            )
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(data, schema)
            response = await local.request(
                method, path, json=data, headers={"Content-Type": "application/json"}
            )
            assert response.status_code == 422, (path, data, response.text)


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")  # its own formats
def test_item09_schema_valid_requests_are_never_refused_with_422(
    host: Mnemon, tmp_path: Path
) -> None:
    """schemathesis, positive data only, in-process on the ASGI app (Starlette's TestClient)."""
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from schemathesis import GenerationMode
    from starlette.testclient import TestClient

    seed = host.spaces.create_space("Seeded", active=True).space
    assert seed is not None
    memory = host.spaces.remember("The staging port is 5433.", space_id=seed.id)
    document = host.documents.create("Seeded doc", "Body of the seeded doc.")
    host.mnemos.add_node("seeded-task", "goal", "Keep the schema honest.")
    real = {
        "space_id": seed.id,
        "memory_id": memory.id,
        "document_id": document.document.id,
        "task_id": "seeded-task",
        "provider_id": "mnemos",  # takes no settings: a test never leaves the host
    }
    client = TestClient(
        create_app(host), base_url=BASE, client=("127.0.0.1", 5000), raise_server_exceptions=False
    )
    spec = client.get("/mnemon/openapi.json").json()
    operations = [
        result.ok() for result in schemathesis.openapi.from_dict(spec).get_all_operations()
    ]
    assert len(operations) >= 25
    failures: list[str] = []
    seen: dict[str, set[int]] = {}

    def check(operation: Any) -> None:
        @settings(
            max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck)
        )
        @given(case=operation.as_strategy(generation_mode=GenerationMode.POSITIVE), data=st.data())
        def run(case: Any, data: Any) -> None:
            for name in list(case.path_parameters or {}):  # half the time, an id that exists
                if name in real and data.draw(st.booleans()):
                    case.path_parameters[name] = real[name]
            sent = case.as_transport_kwargs(base_url=BASE)
            headers = {k: v for k, v in (sent.get("headers") or {}).items() if k != "User-Agent"}
            if case.method.upper() in ("POST", "PUT", "PATCH", "DELETE"):
                headers["Content-Type"] = "application/json"
            response = client.request(
                case.method, sent["url"], params=sent.get("params"), headers=headers,
                json=sent.get("json"),
            )  # fmt: skip
            seen.setdefault(operation.label, set()).add(response.status_code)
            if response.status_code == 422 and _stated_refusal(
                spec, case.method, case.path, response
            ):
                return  # a rule of the stored space or its provider, stated with its code
            if response.status_code == 422 or response.status_code >= 500:
                failures.append(
                    f"{operation.label} {sent['url']} params={sent.get('params')} "
                    f"body={str(sent.get('json'))[:200]} -> {response.status_code} "
                    f"{response.text[:300]}"
                )

        run()

    for operation in operations:
        check(operation)
    assert not failures, "\n".join(failures[:20])
    # The generated data reached the handlers (not only 404s): writes were committed.
    assert 200 in seen[f"POST {API}/runtime"]
    assert 200 in seen[f"POST {API}/spaces/{{space_id}}/memories"]
    assert 200 in seen[f"POST {API}/documents"]


def _stated_refusal(spec: dict[str, Any], method: str, path: str, response: Any) -> bool:
    """Whether a 422 carries a code the operation's OpenAPI entry states (``x-mnemon-refusals``:
    rules that depend on the stored space or its provider, which no schema can express)."""
    stated = spec["paths"][path][method.lower()].get("x-mnemon-refusals", [])
    try:
        return response.json().get("error") in stated
    except ValueError:
        return False


# --- item 10: settings follow the read rule; an empty PATCH -----------------------------------


@pytest.mark.asyncio
async def test_item10_no_settings_response_for_a_client_the_read_rule_refuses(
    host: Mnemon,
) -> None:
    host.config.trusted_hosts = ["10.0.0.0/8"]  # loopback removed
    async with _client(create_app(host), **{"Content-Type": "application/json"}) as local:
        _error(await local.get(f"{API}/settings"), 403, "forbidden")
        for body in ({}, {"recall_mode": "off"}):
            response = await local.patch(f"{API}/settings", json=body)
            _error(response, 403, "forbidden")
            assert "remote_access" not in response.text
        _error(await local.post(f"{API}/runtime", json=ADD), 403, "forbidden")
    assert host.config.recall_mode == "guided"
    assert _entries(host) == []


@pytest.mark.asyncio
async def test_item10_a_settings_patch_with_nothing_to_change_is_422(host: Mnemon) -> None:
    async with _client(create_app(host), **{"Content-Type": "application/json"}) as local:
        for content in (b"", b"{}", b'{"recall_mode": null}'):
            response = await local.patch(f"{API}/settings", content=content)
            assert "nothing to change" in _error(response, 422, "invalid-input")
        changed = await local.patch(f"{API}/settings", json={"recall_mode": "off"})
        assert changed.status_code == 200
    assert host.config.recall_mode == "off"


# --- item 4, HTTP side: storage errors are 507 / 503, never 500 -------------------------------


def test_item04_a_full_disk_is_507_and_a_read_only_disk_503(small_disk: Any) -> None:
    root = small_disk.path / "m"
    mem = _open(root, workspace=small_disk.path)
    client_kw = {"base_url": BASE, "client": ("127.0.0.1", 5000), "raise_server_exceptions": False}
    from starlette.testclient import TestClient

    try:
        mem.runtime.add("memory", "Seeded before the disk filled up.")
        client = TestClient(create_app(mem), **client_kw)
        small_disk.fill()
        before = _files(root)
        response = client.post(f"{API}/runtime", json={**ADD, "content": "x" * 4000})
        assert response.status_code == 507, response.text
        assert response.json()["error"] == "storage-full"
        assert _files(root) == before
        small_disk.free()
        small_disk.read_only(True)
        try:
            before = _files(root)
            response = client.post(f"{API}/runtime", json=ADD)
            assert response.status_code == 503, response.text
            assert response.json()["error"].startswith("storage-")
            assert _files(root) == before
            assert client.get(f"{API}/runtime").status_code == 200  # reads still work
        finally:
            small_disk.read_only(False)
    finally:
        mem.close()


@pytest.mark.asyncio
async def test_item04_an_os_error_that_escapes_a_handler_is_a_503_not_a_500(
    host: Mnemon, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(request: Any) -> Any:
        raise OSError(errno.EIO, "Input/output error", "/secret/place/memories.json")

    monkeypatch.setattr(host, "write_runtime", broken)
    async with _client(create_app(host)) as local:
        response = await local.post(f"{API}/runtime", json=ADD)
    message = _error(response, 503, "storage-error")
    assert "/secret/place" not in message
    assert "server log" in message
    assert "Input/output error" in caplog.text


# --- the degraded flag (What to build 2): the control plane shows it ---------------------------


@pytest.mark.asyncio
async def test_item03_control_plane_status_shows_the_degraded_flag(host: Mnemon) -> None:
    from langgraph_mnemon.errors import StorageError

    async with _client(create_app(host)) as local:
        healthy = (await local.get(f"{API}/status")).json()["health"]
        assert healthy == {"degraded": False, "problems": []}
        with host.health.guard("turns.end"):
            raise StorageError("could not write MEMORY.md: disk full", code="storage-full")
        health = (await local.get(f"{API}/status")).json()["health"]
    assert health["degraded"] is True
    assert [(p["step"], p["code"]) for p in health["problems"]] == [("turns.end", "storage-full")]
    assert set(health["problems"][0]) == {"step", "code", "message", "at"}
