"""The HTTP provider against real HTTP servers on free loopback ports.

The reference service (``tests/support/http_memory_service.py``, a real SQLite file) serves
every operation; small Starlette apps of this module play hostile or broken services: a
redirect, a 3 MiB answer, malformed bodies, a slow and a dripping server, a gateway that
fails twice, a write whose answer is lost after it committed. No HTTP is mocked.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from support.http_memory_service import create_app, serve, serve_app

from langgraph_mnemon.adapters.providers.http import HttpProvider
from langgraph_mnemon.errors import InvalidInputError, NotFoundError, ProviderError
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    LinkRequest,
    MemorySpaces,
    ProviderSearchRequest,
    RelatedRequest,
    RememberItem,
    SpaceBinding,
)
from langgraph_mnemon.storage.db import Database, create_engine

TOKEN = "tok-3f9a1c77e2b54d08"


def bind(
    url: str, *, key: str | None = TOKEN, provider: HttpProvider | None = None, **config: Any
) -> SpaceBinding:
    """A binding configured the way the host configures one (check_config, then place)."""
    provider = provider or HttpProvider()
    space_id = f"t-{uuid.uuid4().hex[:10]}"
    secrets = {"api_key": key} if key else {}
    checked = provider.check_config({"endpoint": url, **config}, secrets)
    return SpaceBinding(
        id=space_id, name="Test", config=provider.place(space_id, checked), secrets=secrets
    )


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The reference service under a base path, requiring ``TOKEN``."""
    path = Path(tmp_path_factory.mktemp("http-service")) / "memory.db"
    with serve(path, TOKEN, prefix="/api") as url:
        yield url


class Script:
    """A service that answers each request with the next answer (the last one repeats)."""

    def __init__(self, *answers: Response | Callable[[Request], Awaitable[Response]]) -> None:
        self.answers = list(answers)
        self.seen: list[dict[str, Any]] = []

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        self.seen.append(
            {
                "method": request.method,
                "path": request.scope["path"],  # as the service's router sees it (decoded)
                "headers": dict(request.headers),
                "body": body,
            }
        )
        answer = self.answers[min(len(self.seen) - 1, len(self.answers) - 1)]
        return answer if isinstance(answer, Response) else await answer(request)

    def app(self) -> Starlette:
        methods = ["GET", "POST", "DELETE"]
        return Starlette(routes=[Route("/{path:path}", self.handle, methods=methods)])


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------------------- every operation


def test_every_operation_round_trips_through_the_reference_service(service: str) -> None:
    provider = HttpProvider(related=True, link=True)
    space = bind(service, provider=provider)

    def scenario() -> None:
        assert (provider.status(space)).total_insights == 0
        first = provider.remember(
            space,
            RememberItem(
                content="Deploys are frozen on Fridays after 16:00 UTC.",
                category="decision",
                importance=5,
                tags=("deploy",),
                entities=("CI",),
                metadata={"turn": "D1:3", "weight": 0.5, "pinned": True},
            ),
        )
        assert first["status"] == "stored"
        assert first["id"]
        others = provider.remember_many(
            space,
            [RememberItem(content="Alice prefers green tea."), RememberItem(content="Bob: café")],
        )
        assert [r["status"] for r in others] == ["stored", "stored"]
        status = provider.status(space)
        assert (status.healthy, status.total_insights, status.deleted_insights) == (True, 3, 0)

        found = provider.search(space, ProviderSearchRequest(query="deploys frozen friday"))
        top = found.results[0]
        assert (top.id, top.category, top.importance) == (first["id"], "decision", 5)
        assert (top.tags, top.entities, top.source) == (["deploy"], ["CI"], "agent")
        assert top.metadata == {"turn": "D1:3", "weight": 0.5, "pinned": True}
        assert 0 < top.score <= 1
        assert top.space_id == space.id
        keyword = provider.search(space, ProviderSearchRequest(query="zebra", mode="keyword"))
        assert keyword.results == []

        rows = provider.browse(space, BrowseRequest())
        assert [r.content for r in rows] == ["Bob: café", "Alice prefers green tea.", top.content]
        decided = provider.browse(space, BrowseRequest(category="decision"))
        assert [r.id for r in decided] == [first["id"]]
        assert len(provider.browse(space, BrowseRequest(limit=1, offset=1))) == 1

        linked = provider.link(
            space, LinkRequest(source_id=first["id"], target_id=others[0]["id"], type="causal")
        )
        assert linked["status"] == "linked"
        related = provider.related(space, RelatedRequest(id=first["id"]))
        assert [(r.id, r.depth, r.edge_type) for r in related] == [(others[0]["id"], 1, "causal")]

        assert (provider.forget(space, first["id"])) == {
            "id": first["id"],
            "status": "deleted",
        }
        assert (provider.status(space)).total_insights == 2
        with pytest.raises(NotFoundError, match="search or browse the space"):
            provider.forget(space, first["id"])
        with pytest.raises(NotFoundError):
            provider.related(space, RelatedRequest(id="no-such-id"))
        provider.close()

    scenario()


def test_ids_with_slashes_and_dots_reach_the_service_as_one_segment() -> None:
    script = Script(JSONResponse({"status": "deleted"}))
    with serve_app(script.app()) as url:
        provider, space = HttpProvider(), bind(url)
        for rid in ("a/b", "..", ".", "x?y#z", "é 1"):
            assert provider.forget(space, rid) == {"id": rid, "status": "deleted"}
    assert [s["path"] for s in script.seen] == ["/memories/a/b", "/memories/..", "/memories/.",
                                               "/memories/x?y#z", "/memories/é 1"]  # fmt: skip
    assert all(s["method"] == "DELETE" for s in script.seen)
    assert all("idempotency-key" in s["headers"] for s in script.seen)


def test_namespaces_keep_spaces_apart_and_default_to_the_space_id(service: str) -> None:
    provider = HttpProvider()
    one, two = bind(service), bind(service)
    shared_a, shared_b = bind(service, namespace="shared"), bind(service, namespace="shared")
    assert one.config["namespace"] == one.id  # place() pins the default

    def scenario() -> None:
        provider.remember(one, RememberItem(content="Only in space one: the kiwi."))
        provider.remember(shared_a, RememberItem(content="Shared: the walnut."))
        assert (provider.search(two, ProviderSearchRequest(query="kiwi"))).results == []
        assert [r.content for r in provider.browse(shared_b, BrowseRequest())] == [
            "Shared: the walnut."
        ]
        provider.close()

    scenario()


def test_remember_many_splits_large_writes_into_batches(service: str) -> None:
    provider = HttpProvider()
    space = bind(service)
    items = [RememberItem(content=f"Batch row number {i}.") for i in range(230)]

    def scenario() -> None:
        receipts = provider.remember_many(space, items)
        assert len(receipts) == 230
        assert len({r["id"] for r in receipts}) == 230
        assert (provider.status(space)).total_insights == 230
        provider.close()

    scenario()


def test_bad_text_is_refused_before_any_request() -> None:
    script = Script(JSONResponse({"receipts": [{"id": "x", "status": "stored"}]}))
    with serve_app(script.app()) as url:
        provider, space = HttpProvider(), bind(url)
        for item in (
            RememberItem(content="half \ud83d"),
            RememberItem(content="nul \x00 inside"),
            RememberItem(content="fine", tags=("bad\ud800",)),
            RememberItem(content="fine", metadata={"x": float("nan")}),
        ):
            with pytest.raises(InvalidInputError):
                provider.remember(space, item)
        with pytest.raises(InvalidInputError):
            provider.search(space, ProviderSearchRequest(query="lone \udc00"))
    assert script.seen == []


# ---------------------------------------------------------------------------- the key


def test_the_bearer_key_is_required_and_never_shown(service: str) -> None:
    wrong = "wrong-key-9d8c7b6a5f"
    provider = HttpProvider()
    for space in (bind(service, key=wrong), bind(service, key=None)):
        with pytest.raises(ProviderError) as caught:
            provider.search(space, ProviderSearchRequest(query="deploys"))
        assert caught.value.code == "unauthorized"
        assert "secrets.api_key" in str(caught.value)
        assert wrong not in str(caught.value)
        assert TOKEN not in str(caught.value)
        status = provider.status(space)
        assert status.healthy is False
        assert "refused the credentials" in str(status.error)
        assert wrong not in str(status.error)


def test_the_key_is_sent_as_a_bearer_header_and_kept_out_of_reprs() -> None:
    script = Script(JSONResponse({"contract": "mnemon-memory/1", "healthy": True, "total": 0}))
    with serve_app(script.app()) as url:
        provider = HttpProvider()
        space = bind(url)
        assert provider.status(space).healthy
    headers = script.seen[0]["headers"]
    assert headers["authorization"] == f"Bearer {TOKEN}"
    assert headers["accept-encoding"] == "identity"
    assert script.seen[0]["path"] == "/status"
    for text in (repr(provider), str(provider), repr(space), space.model_dump_json()):
        assert TOKEN not in text
    assert provider.secrets_in_use() == (TOKEN,)


@pytest.mark.parametrize("key", ["", "has space", "line\nbreak", "tab\tkey", "ключ", "x" * 4097])
def test_malformed_keys_are_refused_without_echoing_them(key: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        HttpProvider().check_config({"endpoint": "https://m.example"}, {"api_key": key})
    assert "visible ASCII" in str(caught.value)
    if len(key) > 3:
        assert key not in str(caught.value)


# ---------------------------------------------------------------------------- endpoint table

GOOD_ENDPOINTS = [
    ("https://memory.example.com", "https://memory.example.com"),
    ("HTTPS://Memory.Example.com/api/v1/", "https://memory.example.com/api/v1"),
    ("http://127.0.0.1:8080/", "http://127.0.0.1:8080"),
    ("http://[::1]:9000/mem", "http://[::1]:9000/mem"),
    ("  https://m.example/base  ", "https://m.example/base"),
]

BAD_ENDPOINTS = [
    ("https://user:pw@memory.example.com", "put the key in secrets.api_key"),
    ("https://token@memory.example.com", "put the key in secrets.api_key"),
    ("https://memory.example.com/?key=abc", "must not have a query string"),
    ("https://memory.example.com/?", "must not have a query string"),
    ("https://memory.example.com/#frag", "must not have a fragment"),
    ("ftp://memory.example.com", "must start with http:// or https://"),
    ("memory.example.com/api", "must start with http:// or https://"),
    ("/relative/path", "must start with http:// or https://"),
    ("https://", "has no host"),
    ("https://:8080/x", "has no host"),
    ("https://memory.example.com:99999", "not a valid URL"),
    ("https://memory.example.com/a/../b", "'..' segments"),
    ("https://memory.example.com/a b", "without spaces"),
    ("https://memory.example.com\\evil", "backslashes"),
    ("", "base URL"),
    ("https://m.example/" + "a" * 2100, "at most 2048"),
]


@pytest.mark.parametrize(("endpoint", "normalised"), GOOD_ENDPOINTS)
def test_good_endpoints_are_normalised(endpoint: str, normalised: str) -> None:
    assert HttpProvider().check_config({"endpoint": endpoint}, {}) == {"endpoint": normalised}


@pytest.mark.parametrize(("endpoint", "advice"), BAD_ENDPOINTS)
def test_bad_endpoints_are_refused_with_what_to_fix(endpoint: str, advice: str) -> None:
    with pytest.raises(InvalidInputError, match=advice.replace("?", r"\?")) as caught:
        HttpProvider().check_config({"endpoint": endpoint}, {})
    assert "user:pw" not in str(caught.value)
    assert "key=abc" not in str(caught.value)


@pytest.mark.parametrize(
    ("config", "secrets", "advice"),
    [
        ({}, {}, "need config.endpoint"),
        ({"endpoint": 42}, {}, "base URL"),
        ({"endpoint": "https://m.example", "timeout": 3}, {}, "take only 'endpoint'"),
        ({"endpoint": "https://m.example", "namespace": "bad ns"}, {}, "namespace must be"),
        ({"endpoint": "https://m.example", "namespace": "x" * 129}, {}, "namespace must be"),
        ({"endpoint": "https://m.example"}, {"token": "abc"}, "only the secret 'api_key'"),
    ],
)
def test_bad_configs_are_refused(config: dict, secrets: dict, advice: str) -> None:
    with pytest.raises(InvalidInputError, match=advice):
        HttpProvider().check_config(config, secrets)


def test_a_space_with_a_tampered_config_is_refused_before_any_request() -> None:
    space = SpaceBinding(id="s1", name="S", config={"endpoint": "https://a:b@m.example"})
    with pytest.raises(ProviderError) as caught:
        HttpProvider().search(space, ProviderSearchRequest(query="x"))
    assert caught.value.code == "not-configured"
    assert ":b@" not in str(caught.value)
    # the health probe of a provider with no space has no service to ask
    probe = SpaceBinding(id="probe", name="Probe")
    assert HttpProvider().status(probe).healthy is True


@pytest.mark.parametrize(
    "kwargs",
    [{"timeout_s": 0}, {"timeout_s": float("inf")}, {"retries": -1}, {"retries": True},
     {"max_response_bytes": 10}, {"provider_id": "Bad Id"}, {"transport": object()}],
)  # fmt: skip
def test_constructor_arguments_are_checked(kwargs: dict) -> None:
    with pytest.raises((InvalidInputError, ValueError)):
        HttpProvider(**kwargs)


def test_constructing_the_provider_imports_no_httpx() -> None:
    code = (
        "import sys\n"
        "from langgraph_mnemon.adapters.providers.http import HttpProvider\n"
        "HttpProvider(related=True)\n"
        "print('httpx' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------------- hostile services


def test_a_redirect_is_refused_and_not_followed() -> None:
    target = Script(JSONResponse({"results": []}))
    with serve_app(target.app()) as elsewhere:
        script = Script(Response(status_code=307, headers={"location": f"{elsewhere}/search?k=1"}))
        with serve_app(script.app()) as url, pytest.raises(ProviderError) as caught:
            HttpProvider().search(bind(url), ProviderSearchRequest(query="x"))
    assert caught.value.code == "redirect"
    assert "set the space's endpoint to the final URL" in str(caught.value)
    assert "k=1" not in str(caught.value)
    assert target.seen == []


def _big_json() -> bytes:
    row = {"id": "r", "content": "x" * 1000}
    return json.dumps({"results": [row] * 3200}).encode()  # about 3.2 MB


def test_an_oversized_answer_is_refused_with_and_without_content_length() -> None:
    body = _big_json()
    assert len(body) > 3 * 1024 * 1024

    async def chunked(request: Request) -> Response:
        async def chunks() -> Any:
            for i in range(0, len(body), 65536):
                yield body[i : i + 65536]

        return StreamingResponse(chunks(), media_type="application/json")

    for answer in (Response(body, media_type="application/json"), chunked):
        script = Script(answer)
        with serve_app(script.app()) as url, pytest.raises(ProviderError) as caught:
            HttpProvider().search(bind(url), ProviderSearchRequest(query="x"))
        assert caught.value.code == "response-too-large"
        assert "max_response_bytes" in str(caught.value)
    # a bigger allowance accepts the same answer (truncated to the request's limit)
    script = Script(Response(body, media_type="application/json"))
    with serve_app(script.app()) as url:
        provider = HttpProvider(max_response_bytes=8 * 1024 * 1024)
        rows = provider.search(bind(url), ProviderSearchRequest(query="x", limit=5))
    assert len(rows.results) == 5


MALFORMED = [
    ("not json at all", "not JSON"),
    ("[]", "not a JSON object"),
    ('{"results": "many"}', "'results' is a string"),
    ('{"results": [{"content": "no id"}]}', "results[0].id"),
    ('{"results": [{"id": 7, "content": "x"}]}', "results[0].id"),
    ('{"results": [{"id": "a", "content": null}]}', "results[0].content"),
    ('{"results": [{"id": "a", "content": "x", "tags": "t"}]}', "results[0].tags"),
    ('{"results": [{"id": "a", "content": "x", "importance": 9}]}', "importance"),
    ('{"results": [{"id": "a", "content": "x", "created_at": "today"}]}', "created_at"),
    ('{"results": [{"id": "a", "content": "x", "metadata": {"k": [1]}}]}', "metadata.k"),
    ('{"results": [{"id": "a", "content": "x", "score": "high"}]}', "score"),
    ('{"results": [{"id": "a", "content": "half \\ud83d"}]}', "lone surrogate"),
    ('{"results": [], "hint": 5}', "'hint'"),
    ("[" * 100000 + "]" * 100000, "not JSON"),
]


@pytest.mark.parametrize(("body", "what"), MALFORMED)
def test_a_malformed_search_answer_is_a_bad_response(body: str, what: str) -> None:
    script = Script(Response(body, media_type="application/json"))
    with serve_app(script.app()) as url, pytest.raises(ProviderError) as caught:
        HttpProvider().search(bind(url), ProviderSearchRequest(query="x"))
    if what == "not JSON":  # reads like no answer at all: a test cannot map a network (issue 29)
        assert caught.value.code == "unreachable"
        assert "could not reach the memory service" in str(caught.value)
        return
    assert caught.value.code == "bad-response"
    assert what in str(caught.value)


@pytest.mark.parametrize(
    ("body", "what"),
    [
        ({"receipts": []}, "list of 1 receipt"),
        ({"receipts": [{"id": "a", "status": "done"}]}, "status must be one of"),
        ({"receipts": [{"status": "stored"}]}, "carries no id"),
        ({"ok": True}, "list of 1 receipt"),
    ],
)
def test_a_malformed_write_answer_is_a_bad_response(body: dict, what: str) -> None:
    script = Script(JSONResponse(body))
    with serve_app(script.app()) as url, pytest.raises(ProviderError, match=what) as caught:
        HttpProvider().remember(bind(url), RememberItem(content="x"))
    assert caught.value.code == "bad-response"


def test_scores_outside_zero_to_one_become_none_with_a_hint() -> None:
    body = (
        '{"results": [{"id": "a", "content": "x", "score": 7.5},'
        ' {"id": "b", "content": "y", "score": NaN}, {"id": "c", "content": "z", "score": 0.4}],'
        ' "hint": "partial index"}'
    )
    script = Script(Response(body, media_type="application/json"))
    with serve_app(script.app()) as url:
        result = HttpProvider().search(bind(url), ProviderSearchRequest(query="x"))
    assert [r.score for r in result.results] == [None, None, 0.4]
    assert result.hint is not None
    assert "partial index" in result.hint
    assert "2 score(s)" in result.hint


def test_status_reports_a_wrong_contract_or_a_broken_body_as_unhealthy() -> None:
    for answer, expected in (
        (JSONResponse({"contract": "other/2", "healthy": True}), "does not speak"),
        (JSONResponse({"contract": "mnemon-memory/1"}), "'healthy'"),
        (JSONResponse({"contract": "mnemon-memory/1", "healthy": False}), "reports unhealthy"),
        (Response("oops", status_code=500), "failed to answer status"),
    ):
        with serve_app(Script(answer).app()) as url:
            status = HttpProvider(retries=0).status(bind(url))
        assert status.healthy is False
        assert expected in str(status.error)
        assert "other/2" not in str(status.error)  # what the service sent is never repeated
        assert "500" not in str(status.error)


def test_error_answers_map_to_typed_errors_without_the_key() -> None:
    echo = {"error": {"code": "invalid-input", "message": f"bad request from {TOKEN}"}}
    cases = [
        (JSONResponse(echo, status_code=400), ProviderError, "rejected"),
        (JSONResponse({"error": {"code": "not-found"}}, status_code=404), NotFoundError, None),
        (Response("Not Found", status_code=404), ProviderError, "bad-endpoint"),
        (JSONResponse(echo, status_code=500), ProviderError, "service-error"),
    ]
    for answer, kind, code in cases:
        with serve_app(Script(answer).app()) as url, pytest.raises(kind) as caught:
            HttpProvider().forget(bind(url), "some-id")
        assert TOKEN not in str(caught.value)
        if code:
            assert caught.value.code == code


def test_a_slow_service_times_out_within_the_bound() -> None:
    async def slow(request: Request) -> Response:
        await asyncio.sleep(4)
        return JSONResponse({"results": []})

    async def drip(request: Request) -> Response:
        async def chunks() -> Any:
            yield b'{"results": ['
            for _ in range(40):
                await asyncio.sleep(0.1)  # each read is quick; the whole answer is not
                yield b" "
            yield b"]}"

        return StreamingResponse(chunks(), media_type="application/json")

    for answer in (slow, drip):
        with serve_app(Script(answer).app()) as url:
            provider = HttpProvider(timeout_s=0.5)
            started = time.monotonic()
            with pytest.raises(ProviderError) as caught:
                provider.search(bind(url), ProviderSearchRequest(query="x"))
            elapsed = time.monotonic() - started
        assert caught.value.code == "unreachable"  # like a closed port (issue 29)
        assert "timeout_s" in str(caught.value)
        assert elapsed < 2.5  # timeout_s=0.5; the service would take 4 s


def test_the_guarded_transport_ends_a_slow_drip_at_the_deadline() -> None:
    """Each pause is under timeout_s, so only a bound on the attempt as a whole stops it: the
    guarded transport waits on every read only for the time left."""

    async def drip(request: Request) -> Response:
        async def chunks() -> Any:
            yield b'{"results": ['
            for _ in range(20):
                await asyncio.sleep(0.9)  # under timeout_s each time; 18 s in all
                yield b" "
            yield b"]}"

        return StreamingResponse(chunks(), media_type="application/json")

    with serve_app(Script(drip).app()) as url:
        provider = HttpProvider(timeout_s=1.0, retries=0, allowed_hosts=["127.0.0.1"])
        started = time.monotonic()
        with pytest.raises(ProviderError) as caught:
            provider.search(bind(url), ProviderSearchRequest(query="x"))
        elapsed = time.monotonic() - started
        provider.close()
    assert caught.value.code == "unreachable"
    assert 0.9 < elapsed < 1.7  # the deadline itself, not the next chunk (at 1.8 s) after it


def test_an_unreachable_service_is_retried_then_reported() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    provider = HttpProvider(retries=2)
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        provider.search(bind(url), ProviderSearchRequest(query="x"))
    assert caught.value.code == "unreachable"
    assert "could not reach the memory service" in str(caught.value)
    assert "attempt" not in str(caught.value)  # the same text whatever is (not) listening
    assert 0.5 < time.monotonic() - started < 5  # two backoffs (0.2 s + 0.4 s), bounded
    status = provider.status(bind(url))
    assert status.healthy is False
    assert "could not reach" in str(status.error)
    assert TOKEN not in str(status.error)


def test_gateway_failures_are_retried_then_answered() -> None:
    unavailable = JSONResponse({"error": {"code": "busy"}}, status_code=503)
    script = Script(unavailable, Response(status_code=502), JSONResponse({"results": []}))
    with serve_app(script.app()) as url:
        result = HttpProvider(retries=2).search(bind(url), ProviderSearchRequest(query="x"))
    assert result.results == []
    assert len(script.seen) == 3
    script = Script(unavailable)
    with serve_app(script.app()) as url, pytest.raises(ProviderError) as caught:
        HttpProvider(retries=1).search(bind(url), ProviderSearchRequest(query="x"))
    assert caught.value.code == "service-error"
    assert len(script.seen) == 2
    script = Script(JSONResponse({"error": {"code": "invalid-input"}}, status_code=400))
    with serve_app(script.app()) as url, pytest.raises(ProviderError):
        HttpProvider(retries=2).search(bind(url), ProviderSearchRequest(query="x"))
    assert len(script.seen) == 1  # a refusal is not retried


class LoseFirstWriteAnswer:
    """Lets the first ``POST .../memories`` commit in the real service, then answers 503."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.keys: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        is_write = scope["type"] == "http" and scope["method"] == "POST"
        if not (is_write and scope["path"].endswith("/memories")):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        self.keys.append(headers.get(b"idempotency-key", b"").decode())
        if len(self.keys) > 1:
            await self.app(scope, receive, send)
            return

        async def swallow(message: Any) -> None:
            return None

        await self.app(scope, receive, swallow)  # the write commits; its answer is lost
        lost = JSONResponse({"error": {"code": "gateway"}}, status_code=503)
        await lost(scope, receive, send)


def test_a_retried_remember_does_not_store_twice(tmp_path: Path) -> None:
    app = LoseFirstWriteAnswer(create_app(tmp_path / "memory.db", TOKEN))
    with serve_app(app) as url:
        provider = HttpProvider(retries=2)
        space = bind(url)

        def scenario() -> tuple[list[dict[str, Any]], list[Any]]:
            receipts = provider.remember_many(
                space, [RememberItem(content="Written once."), RememberItem(content="Also once.")]
            )
            return receipts, provider.browse(space, BrowseRequest())

        receipts, rows = scenario()
    assert len(app.keys) == 2
    assert app.keys[0] == app.keys[1]
    assert len(app.keys[0]) >= 16
    assert sorted(r.content for r in rows) == ["Also once.", "Written once."]
    assert [r["id"] for r in receipts] == [r.id for r in reversed(rows)]


def test_the_reference_service_refuses_a_reused_key_for_another_body(service: str) -> None:
    import httpx

    headers = {"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": uuid.uuid4().hex}
    first = {"namespace": "idem", "items": [{"content": "one"}]}
    second = {"namespace": "idem", "items": [{"content": "two"}]}
    with httpx.Client(timeout=60) as client:
        a = client.post(f"{service}/memories", json=first, headers=headers)
        again = client.post(f"{service}/memories", json=first, headers=headers)
        other = client.post(f"{service}/memories", json=second, headers=headers)
    assert a.status_code == 200
    assert again.json() == a.json()
    assert other.status_code == 422
    assert other.json()["error"]["code"] == "idempotency-conflict"


# ---------------------------------------------------------------------------- threads


def test_one_provider_serves_several_threads_and_closes_idempotently(service: str) -> None:
    provider = HttpProvider()
    space = bind(service)
    provider.remember(space, RememberItem(content="Thread one wrote this."))
    # another thread, and a thread that runs an event loop, share the one pooled client
    with ThreadPoolExecutor(max_workers=4) as pool:
        totals = list(pool.map(lambda _: provider.status(space).total_insights, range(8)))
    assert totals == [1] * 8

    async def in_a_loop() -> int | None:
        return provider.status(space).total_insights

    assert asyncio.run(in_a_loop()) == 1

    provider.close()
    provider.close()  # idempotent; the next call opens a new client
    assert provider.status(space).healthy


# ---------------------------------------------------------------------------- the host path


def test_receipts_go_through_the_host_rules(tmp_path: Path) -> None:
    answers = {
        "stored": {"receipts": [{"id": "m1", "status": "stored"}]},
        "pending": {"receipts": [{"id": "m2", "status": "pending"}]},
        "failed": {"receipts": [{"id": None, "status": "failed", "error": "disk full"}]},
    }
    script = Script(*(JSONResponse(a) for a in answers.values()))
    database = Database(create_engine(f"sqlite:///{tmp_path / 'mnemon.db'}"), owns_engine=True)
    with serve_app(script.app()) as url:
        spaces = MemorySpaces(database, root=tmp_path, providers=[HttpProvider()])
        try:
            created = spaces.create_space(
                "Remote",
                provider_id="http",
                space_id="remote",
                config={"endpoint": url},
                secrets={"api_key": TOKEN},
            )
            assert created.status == "committed"
            stored, pending, failed = (
                spaces.remember(f"row {name}", space_id="remote") for name in answers
            )
            with pytest.raises(InvalidInputError, match="secrets"):
                spaces.create_space(
                    "Leaky",
                    provider_id="http",
                    config={"endpoint": url, "api_key": TOKEN},
                )
        finally:
            spaces.close()
            database.dispose()
    assert (stored.status, stored.completion, stored.id) == ("committed", "committed", "m1")
    assert (pending.status, pending.completion) == ("skipped", "pending")
    assert (failed.status, failed.completion) == ("failed", "none")
    sent = json.loads(script.seen[0]["body"])
    assert sent["namespace"] == "remote"
    assert sent["items"][0]["content"] == "row stored"
