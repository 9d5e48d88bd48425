"""Issue 12, item 1 in a real browser: a hostile page on another loopback origin cannot change
memory through the control plane, and the control plane's own page still can.

uvicorn serves ``create_app(host)`` on ``http://127.0.0.1:<p1>``; two more uvicorn servers
serve a hostile page on ``http://127.0.0.2:<p2>`` and ``http://localhost:<p3>``. Headless
Chromium (Debian's, driven by Playwright, launched as in ``test_web_page``) opens the hostile
page, which tries every request a page can send without the user: ``fetch`` with ``mode:
"no-cors"`` and ``text/plain`` (no preflight), HTML form POSTs (url-encoded, and the text/plain
enctype that smuggles a JSON body), a bodiless no-cors POST, and a JSON ``fetch`` (which needs a
CORS preflight). A recorder around the control plane logs what reached it and how it answered.
Screenshots go to ``$MNEMON_TEST_ARTIFACTS/web/``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from server_support import uvicorn_in_thread
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route
from test_web_page import _artifacts, _require_browser
from test_web_page import browser as browser  # the same module-scoped Chromium fixture

from langgraph_mnemon import Mnemon
from langgraph_mnemon.server.http import create_app

TIMEOUT_MS = 15_000
ABSENT = object()  # a server from before the health record

HOSTILE_PAGE = """<!doctype html>
<title>Totally harmless</title>
<h1>Nothing to see here</h1>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe><iframe name="sink3"></iframe>
<form id="urlencoded" method="POST" target="sink1" action="TARGET/mnemon/api/runtime">
  <input name="action" value="add"><input name="target" value="memory">
  <input name="content" value="PLANTED-form">
</form>
<form id="textplain" method="POST" target="sink2" enctype="text/plain"
      action="TARGET/mnemon/api/spaces">
  <input name='{"name": "PLANTED-form-space", "x": "' value='"}'>
</form>
<form id="archive" method="POST" target="sink3" enctype="text/plain"
      action="TARGET/mnemon/api/documents/DOC/archive">
  <input name='{"' value='": 1}'>
</form>
<script>
const T = "TARGET/mnemon/api";
const tries = [
  ["no-cors text/plain runtime", `${T}/runtime`, {method: "POST", mode: "no-cors",
    headers: {"Content-Type": "text/plain"},
    body: JSON.stringify({action: "add", target: "memory", content: "PLANTED-no-cors"})}],
  ["no-cors text/plain document", `${T}/documents`, {method: "POST", mode: "no-cors",
    headers: {"Content-Type": "text/plain"},
    body: JSON.stringify({title: "PLANTED-doc", content: "PLANTED-no-cors"})}],
  ["no-cors text/plain space", `${T}/spaces`, {method: "POST", mode: "no-cors",
    headers: {"Content-Type": "text/plain"}, body: JSON.stringify({name: "PLANTED-space"})}],
  ["no-cors text/plain memory", `${T}/spaces/SPACE/memories`, {method: "POST", mode: "no-cors",
    headers: {"Content-Type": "text/plain"}, body: JSON.stringify({content: "PLANTED-memory"})}],
  ["no-cors bodiless archive", `${T}/documents/DOC/archive`, {method: "POST", mode: "no-cors"}],
  ["cors json runtime", `${T}/runtime`, {method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify({action: "add", target: "memory", content: "PLANTED-json"})}],
  ["cors read runtime", `${T}/runtime`, {method: "GET"}],
];
window.results = {};
(async () => {
  for (const [name, url, init] of tries) {
    try {
      const r = await fetch(url, init);
      window.results[name] = r.type === "opaque" ? "opaque" : `read ${r.status}`;
    } catch (err) {
      window.results[name] = `blocked: ${err.name}`;
    }
  }
  for (const id of ["urlencoded", "textplain", "archive"]) document.getElementById(id).submit();
  await new Promise((resolve) => setTimeout(resolve, 1500));
  window.done = true;
})();
</script>
"""


class Recorder:
    """ASGI middleware: what reached the control plane and the status it answered."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[dict[str, Any]] = []
        # None: pass GET .../status through; a dict: inject it as "health"; ABSENT: drop it.
        self.health: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        row = {
            "method": scope["method"],
            "path": scope["path"],
            "origin": headers.get("origin"),
            "content_type": headers.get("content-type"),
        }
        self.seen.append(row)
        inject = self.health is not None and scope["path"].endswith("/mnemon/api/status")
        held: list[Any] = []

        async def record(message: Any) -> None:
            if message["type"] == "http.response.start":
                row["status"] = message["status"]
                if inject:
                    held.append(message)
                    return
            if inject and message["type"] == "http.response.body":
                data = json.loads(message["body"])
                data.pop("health", None)
                if self.health is not ABSENT:
                    data["health"] = self.health
                body = json.dumps(data).encode()
                start = held.pop()
                start["headers"] = [
                    (k, str(len(body)).encode() if k.lower() == b"content-length" else v)
                    for k, v in start["headers"]
                ]
                await send(start)
                message = {**message, "body": body}
            await send(message)

        await self.app(scope, receive, record)


@dataclass
class Served:
    host: Mnemon
    root: Path
    url: str
    recorder: Recorder
    hostile: list[str]
    space_id: str
    document_id: str
    memory_id: str
    errors: list[str] = field(default_factory=list)


def _hostile_app(target: str, space_id: str, document_id: str) -> Starlette:
    page = (
        HOSTILE_PAGE.replace("TARGET", target)
        .replace("SPACE", space_id)
        .replace("DOC", document_id)
    )

    async def index(request: Any) -> HTMLResponse:
        return HTMLResponse(page)

    return Starlette(routes=[Route("/", index)])


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    _require_browser()
    base = tmp_path_factory.mktemp("csrf")
    workspace = base / "workspace"
    workspace.mkdir()
    root = base / "m"
    host = Mnemon.open(root, workspace=workspace, chroma={"enabled": False})
    try:
        assert host.runtime.add("memory", "Deploys go through CI.").committed
        document = host.documents.create("Runbook", "Restart with `make restart`.").document
        space = host.spaces.create_space("Facts", active=True).space
        assert space is not None
        memory = host.spaces.remember("The staging port is 5433.", space_id=space.id)
        recorder = Recorder(create_app(host))
        with ExitStack() as stack:
            port = stack.enter_context(uvicorn_in_thread(recorder))
            target = f"http://127.0.0.1:{port}"
            hostile = _hostile_app(target, space.id, document.id)
            p2 = stack.enter_context(uvicorn_in_thread(hostile, host="127.0.0.2"))
            p3 = stack.enter_context(uvicorn_in_thread(hostile))
            yield Served(
                host,
                root,
                f"{target}/mnemon/",
                recorder,
                [f"http://127.0.0.2:{p2}/", f"http://localhost:{p3}/"],
                space.id,
                document.id,
                str(memory.id),
            )
    finally:
        host.close()


def _state(served: Served) -> dict[str, Any]:
    host = served.host
    return {
        "runtime": [e.content for e in host.runtime.entries()],
        "documents": [(d.id, d.status, d.title) for d in host.documents.list("all")],
        "spaces": [(s.id, s.name, s.active) for s in host.spaces.list_spaces()],
        "memories": [m.content for m in host.spaces.browse(served.space_id)],
    }


def test_item01_a_hostile_page_on_another_origin_changes_nothing(
    browser: Any, served: Served
) -> None:
    before_state = _state(served)
    before_files = _files(served.root)
    for hostile in served.hostile:
        context = browser.new_context(viewport={"width": 1000, "height": 700})
        page = context.new_page()
        try:
            served.recorder.seen.clear()
            page.goto(hostile)
            page.wait_for_function("window.done === true", timeout=TIMEOUT_MS)
            results = page.evaluate("window.results")
            name = "localhost" if "localhost" in hostile else "127-0-0-2"
            page.screenshot(path=str(_artifacts() / f"csrf-hostile-{name}.png"), full_page=True)
        finally:
            context.close()
        # Simple requests go out (opaque); the JSON one and the read are blocked by CORS.
        assert results["no-cors text/plain runtime"] == "opaque", results
        assert results["cors json runtime"].startswith("blocked"), results
        assert results["cors read runtime"].startswith("blocked"), results
        reached = [r for r in served.recorder.seen if r["path"].startswith("/mnemon/api/")]
        writes = [r for r in reached if r["method"] == "POST"]
        # 5 no-cors fetches and 3 forms reached the server; every one was refused.
        assert len(writes) == 8, reached
        assert all(r["status"] == 403 for r in writes), writes
        assert {r["origin"] for r in writes} == {hostile.rstrip("/")}
        preflights = [r for r in reached if r["method"] == "OPTIONS"]
        assert all(r["status"] >= 400 for r in preflights), preflights
        assert not [r for r in reached if r["method"] == "GET" and r["status"] == 200], reached
    assert _state(served) == before_state
    assert "PLANTED" not in json.dumps(_state(served))
    assert _files(served.root) == before_files


def test_item01_the_control_planes_own_page_still_writes(browser: Any, served: Served) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    try:
        served.recorder.seen.clear()
        page.goto(f"{served.url}#/runtime")
        page.wait_for_selector("body[data-loaded='runtime']")
        added = "Added from the control plane's own page."
        page.get_by_test_id("runtime-add-target").select_option("memory")
        page.get_by_test_id("runtime-add-content").fill(added)
        page.get_by_test_id("runtime-add-submit").click()
        expect(page.get_by_test_id("runtime-memory-list")).to_contain_text(added)
        page.screenshot(path=str(_artifacts() / "csrf-own-page-runtime.png"), full_page=True)
        assert added in [e.content for e in served.host.runtime.entries("memory")]

        page.goto(f"{served.url}#/spaces/{served.space_id}")
        page.wait_for_selector("body[data-loaded='spaces']")
        page.get_by_test_id("tab-content").click()
        item = page.get_by_test_id("content-item").filter(has_text="staging port")
        item.get_by_role("button", name="Forget").click()
        item.get_by_role("button", name="Confirm forget").click()  # a DELETE, sent as JSON
        expect(page.get_by_test_id("content-list")).not_to_contain_text("staging port")
    finally:
        context.close()
    assert not errors, errors
    changes = [r for r in served.recorder.seen if r["method"] in ("POST", "DELETE")]
    assert {r["method"] for r in changes} == {"POST", "DELETE"}
    for row in changes:  # same-origin browser requests: Origin is the page's own, JSON body
        assert row["status"] == 200, row
        assert row["content_type"] == "application/json", row
        assert row["origin"] == served.url.removesuffix("/mnemon/"), row
    assert served.memory_id not in [m.id for m in served.host.spaces.browse(served.space_id)]


def test_status_page_shows_the_degraded_flag(browser: Any, served: Served) -> None:
    from playwright.sync_api import expect

    from langgraph_mnemon.errors import StorageError

    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    health = served.host.health
    try:
        # A real failed memory step, recorded by the host's own health guard.
        with health.guard("turns.end"):
            raise StorageError(
                "could not write MEMORY.md: No space left on device", code="storage-full"
            )
        page.goto(f"{served.url}#/status")
        page.wait_for_selector("body[data-loaded='status']")
        banner = page.get_by_test_id("status-degraded")
        expect(banner).to_be_visible()
        expect(banner).to_contain_text("degraded")
        problem = page.get_by_test_id("status-problem")
        expect(problem).to_contain_text("turns.end")
        expect(problem).to_contain_text("storage-full")
        expect(problem).to_contain_text("No space left on device")
        page.screenshot(path=str(_artifacts() / "status-degraded.png"), full_page=True)

        with health.guard("turns.end"):
            pass  # the step works again: no longer degraded
        page.reload()
        page.wait_for_selector("body[data-loaded='status']")
        expect(page.get_by_test_id("status-healthy")).to_be_visible()
        assert page.get_by_test_id("status-degraded").count() == 0

        served.recorder.health = ABSENT  # a server without the health record
        page.reload()
        page.wait_for_selector("body[data-loaded='status']")
        expect(page.get_by_test_id("status-write-enabled")).to_have_text("true")
        assert page.get_by_test_id("status-degraded").count() == 0
        assert page.get_by_test_id("status-healthy").count() == 0
    finally:
        served.recorder.health = None
        context.close()
