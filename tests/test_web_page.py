"""The control-plane web page in a real browser: uvicorn serves ``create_app(host)`` on a free
port, headless Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright) loads every page.

The host is seeded through its own API (Runtime entries, Documents, Memory Spaces with a link,
Mnemos nodes and fatigue readings); the tests assert what the page renders from the HTTP API,
write through the page and check the write on disk. Any console error or page error fails the
test, except the one 4xx a test provokes on purpose. Screenshots go to
``$MNEMON_TEST_ARTIFACTS/web/`` (default ``test-artifacts/web/``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from server_support import CHROMIUM, CHROMIUM_ARGS, browser_missing, uvicorn_in_thread

from langgraph_mnemon import Mnemon
from langgraph_mnemon.memory_layers.runtime import RuntimeMutation

TASK = "web-ui"
HTML_ENTRY = 'Answers quote markup literally: <img src=x onerror="window.pwned=1"> <b>bold</b>'

TIMEOUT_MS = 15_000


def _artifacts() -> Path:
    folder = Path(os.environ.get("MNEMON_TEST_ARTIFACTS", "test-artifacts")) / "web"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass
class Served:
    host: Mnemon
    root: Path
    url: str
    space_id: str
    scratch_id: str
    memory_ids: dict[str, str]


def _seed(host: Mnemon) -> tuple[str, str, dict[str, str]]:
    """Data for every page, written through the host's own API."""
    for target, content in [
        ("user", "Prefers concise answers in British English."),
        ("memory", "Tests run with `pytest -q` from the repository root."),
        ("memory", HTML_ENTRY),
    ]:
        receipt = host.write_runtime(RuntimeMutation(action="add", target=target, content=content))
        assert receipt.committed, receipt
    doc = host.write_document(
        {
            "action": "create",
            "title": "Deploy guide",
            "description": "How we ship",
            "content": "# Deploy\n\nRun `make deploy` after the release train has left.",
        }
    )
    assert doc.committed, doc

    space = host.spaces.create_space("Project facts", "Facts about the project")
    assert space.committed
    assert space.space is not None
    sid = space.space.id
    facts = {
        "staging": ("The staging database listens on port 5433.", ["staging", "postgres"]),
        "release": ("The release train leaves every Thursday at 10:00.", ["release"]),
        "billing": ("Alice owns the billing service.", ["alice", "billing"]),
    }
    ids = {}
    for key, (content, entities) in facts.items():
        receipt = host.spaces.remember(content, space_id=sid, category="fact", entities=entities)
        assert receipt.committed, receipt
        assert receipt.id, receipt
        ids[key] = receipt.id
    linked = host.spaces.link(ids["staging"], ids["release"], space_id=sid, type="causal")
    assert linked.committed, linked
    scratch = host.spaces.create_space("Scratch pad", "Inactive on purpose", active=False)
    assert scratch.committed
    assert scratch.space is not None

    mnemos = host.mnemos
    mnemos.add_node(TASK, "goal", "Ship the control-plane page")
    mnemos.add_node(TASK, "constraint", "No external URLs in the page")
    mnemos.add_node(TASK, "result", "Status page renders the tiers")
    for tokens in (20_000, 45_000, 70_000, 90_000, 60_000):
        mnemos.record_usage(TASK, tokens, context_window=128_000)
        mnemos.fatigue(TASK)
    assert mnemos.checkpoint(TASK, force=True).status == "committed"
    return sid, scratch.space.id, ids


def _require_browser() -> None:
    if not CHROMIUM.exists():
        browser_missing("Chromium at /usr/bin/chromium", "apt-get install chromium")
    try:
        import playwright.sync_api  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        browser_missing(f"Python package {exc.name}", "pip install playwright uvicorn")


@contextmanager
def _serve(host: Mnemon) -> Iterator[str]:
    """Serve ``create_app(host)`` with uvicorn on a free loopback port; yields the page URL."""
    from langgraph_mnemon.server.http import create_app

    with uvicorn_in_thread(create_app(host)) as port:
        yield f"http://127.0.0.1:{port}/mnemon/"


def _workspace(base: Path) -> Path:
    # A workspace of its own: resume text must not pick up this repository's git state.
    folder = base / "workspace"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    _require_browser()
    base = tmp_path_factory.mktemp("web")
    root = base / "m"
    host = Mnemon.open(root, workspace=_workspace(base))
    try:
        sid, scratch, ids = _seed(host)
        with _serve(host) as url:
            yield Served(host, root, url, sid, scratch, ids)
    finally:
        host.close()


@pytest.fixture(scope="module")
def read_only_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An empty host with ``write_enabled=False``: empty states and the read-only refusal."""
    _require_browser()
    base = tmp_path_factory.mktemp("web-ro")
    host = Mnemon.open(base / "m", workspace=_workspace(base), write_enabled=False)
    try:
        with _serve(host) as url:
            yield url
    finally:
        host.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    _require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@dataclass
class Page:
    """A fresh browser page plus what it logged; ``allow`` lists expected console errors."""

    page: Any
    url: str
    errors: list[str] = field(default_factory=list)
    allow: list[str] = field(default_factory=list)

    def open(self, route: str) -> Any:
        """Load ``#/route`` and wait until the page says that route finished loading."""
        self.page.goto(f"{self.url}#/{route}")
        page_name = route.split("/")[0]
        self.page.wait_for_selector(f"body[data-loaded='{page_name}']", timeout=TIMEOUT_MS)
        return self.page

    def testid(self, name: str) -> Any:
        return self.page.get_by_test_id(name)

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(_artifacts() / f"{name}.png"), full_page=True)

    def unexpected(self) -> list[str]:
        return [e for e in self.errors if not any(re.search(a, e) for a in self.allow)]


@pytest.fixture
def ui(browser: Any, served: Served) -> Iterator[Page]:
    # A fixed locale keeps number formatting ("4,096") the same on every machine.
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    seen = Page(page, served.url)
    page.on("console", lambda m: seen.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen.errors.append(f"pageerror: {e}"))
    try:
        yield seen
        if not seen.allow:
            # An error banner nobody asked for is a failure too.
            banners = page.get_by_test_id("message-error").all_inner_texts()
            assert not banners, f"unexpected error messages on the page: {banners}"
    finally:
        context.close()
    assert not seen.unexpected(), f"browser console errors: {seen.unexpected()}"


def _expect() -> Any:
    from playwright.sync_api import expect

    return expect


# --- pages ----------------------------------------------------------------------------------


def test_index_and_assets_are_served_locally(ui: Page, served: Served) -> None:
    requests: list[str] = []
    ui.page.on("request", lambda r: requests.append(r.url))
    ui.open("status")
    assert requests, "the page made no requests"
    foreign = [u for u in requests if not u.startswith(served.url.split("/mnemon/")[0])]
    assert not foreign, f"the page reached outside the server: {foreign}"
    assert any(u.endswith("/mnemon/static/app.js") for u in requests)
    assert any(u.endswith("/mnemon/static/app.css") for u in requests)


def test_status_page(ui: Page, served: Served) -> None:
    expect = _expect()
    ui.open("status")
    expect(ui.testid("status-write-enabled")).to_have_text("true")
    expect(ui.testid("status-remote-access")).to_have_text(served.host.config.remote_access)
    expect(ui.testid("status-documents-active")).to_have_text(
        str(len(served.host.documents.list("active")))
    )
    expect(ui.testid("status-spaces-total")).to_have_text(
        str(len(served.host.spaces.list_spaces()))
    )
    expect(ui.testid("status-summary")).to_contain_text(str(served.root))
    ui.shot("status")


def test_runtime_add_edit_remove(ui: Page, served: Served) -> None:
    expect = _expect()
    ui.open("runtime")
    expect(ui.testid("runtime-user-list")).to_contain_text("Prefers concise answers")
    expect(ui.testid("runtime-memory-list")).to_contain_text("pytest -q")
    expect(ui.testid("usage-user")).to_contain_text("/ 4,096 bytes")
    # Stored text is shown as text, never parsed as HTML.
    expect(ui.testid("runtime-memory-list")).to_contain_text(HTML_ENTRY)
    assert ui.page.locator("#page-runtime img, #page-runtime b").count() == 0
    assert ui.page.evaluate("window.pwned") is None

    added = "The web page test adds this MEMORY entry."
    ui.testid("runtime-add-target").select_option("memory")
    ui.testid("runtime-add-content").fill(added)
    ui.testid("runtime-add-submit").click()
    expect(ui.testid("runtime-memory-list")).to_contain_text(added)
    expect(ui.testid("message-info").first).to_be_visible()
    # A fresh host reads the authority file: the entry is on disk, not only in this process.
    with Mnemon.open(served.root, workspace=served.host.config.workspace) as fresh:
        assert added in [e.content for e in fresh.runtime.entries("memory")]
    ui.shot("runtime")

    row = ui.testid("runtime-memory-list").get_by_test_id("runtime-entry").filter(has_text=added)
    row.get_by_test_id("runtime-edit").click()
    edited = "The web page test edited this MEMORY entry."
    ui.testid("runtime-edit-content").fill(edited)
    ui.testid("runtime-save").click()
    expect(ui.testid("runtime-memory-list")).to_contain_text(edited)
    expect(ui.testid("runtime-memory-list")).not_to_contain_text(added)
    contents = [e.content for e in served.host.runtime.entries("memory")]
    assert edited in contents
    assert added not in contents

    row = ui.testid("runtime-memory-list").get_by_test_id("runtime-entry").filter(has_text=edited)
    remove = row.get_by_role("button", name="Remove")
    remove.click()  # arms the button
    row.get_by_role("button", name="Confirm remove").click()
    expect(ui.testid("runtime-memory-list")).not_to_contain_text(edited)
    assert edited not in [e.content for e in served.host.runtime.entries("memory")]


def test_api_error_is_shown(ui: Page, served: Served) -> None:
    expect = _expect()
    ui.allow.append(r"status of 422")  # Chromium logs the failed fetch itself
    ui.open("runtime")
    before = served.host.runtime.revision
    ui.testid("runtime-add-content").fill("")
    ui.testid("runtime-add-submit").click()
    banner = ui.testid("message-error")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("422")
    assert banner.inner_text().strip() != ""
    assert served.host.runtime.revision == before
    ui.shot("runtime-error")


def test_documents_read_create_archive(ui: Page, served: Served) -> None:
    expect = _expect()
    ui.open("documents")
    expect(ui.testid("doc-active")).to_contain_text("Deploy guide")
    ui.testid("doc-active").get_by_role("button", name="Deploy guide").click()
    expect(ui.testid("doc-reader-content")).to_contain_text("make deploy")
    ui.testid("doc-search-q").fill("deploy release train")
    ui.testid("doc-search-submit").click()
    expect(ui.testid("doc-search-results")).to_contain_text("Deploy guide")

    ui.testid("doc-title").fill("Old onboarding notes")
    ui.testid("doc-content").fill("Ask Bob for a laptop on day one.")
    ui.testid("doc-create-submit").click()
    expect(ui.testid("doc-reader-title")).to_have_text("Old onboarding notes")
    expect(ui.testid("doc-active")).to_contain_text("Old onboarding notes")

    reader = ui.testid("doc-reader")
    reader.get_by_role("button", name="Archive").click()
    reader.get_by_role("button", name="Confirm archive").click()
    expect(ui.testid("doc-archived")).to_contain_text("Old onboarding notes")
    expect(ui.testid("doc-active")).not_to_contain_text("Old onboarding notes")
    archived = [d.title for d in served.host.documents.list("archived")]
    assert "Old onboarding notes" in archived
    ui.shot("documents")


def test_spaces_direct_recall(ui: Page, served: Served) -> None:
    expect = _expect()
    ui.open("spaces")
    expect(ui.testid("spaces-list")).to_contain_text("Project facts")
    ui.testid("spaces-list").get_by_role("link", name="Project facts").click()
    expect(ui.testid("space-panel")).to_be_visible()
    expect(ui.testid("space-title")).to_contain_text("Project facts")
    ui.testid("recall-query").fill("staging database port")
    ui.testid("recall-mode-direct").check()
    ui.testid("recall-submit").click()
    expect(ui.testid("recall-results")).to_contain_text("port 5433")
    ui.shot("spaces-recall")


def test_spaces_agent_query(ui: Page, served: Served) -> None:
    expect = _expect()
    ui.open(f"spaces/{served.space_id}")
    ui.testid("recall-query").fill("Which port does the staging database listen on?")
    ui.testid("recall-mode-agent").check()
    ui.testid("recall-submit").click()
    expect(ui.testid("agent-answer")).to_contain_text("5433")
    expect(ui.testid("agent-citation").first).to_contain_text(
        f"{served.space_id}/{served.memory_ids['staging']}"
    )
    ui.shot("spaces-agent")


def test_spaces_content_entities_graph(ui: Page, served: Served) -> None:
    expect = _expect()
    ui.open(f"spaces/{served.space_id}")
    ui.testid("tab-content").click()
    expect(ui.testid("content-list")).to_contain_text("Alice owns the billing service.")
    assert ui.testid("content-item").count() >= 3
    expect(ui.testid("content-prev")).to_be_disabled()
    ui.shot("spaces-content")

    ui.testid("tab-entities").click()
    chip = ui.testid("entity").filter(has_text="staging")
    expect(chip).to_be_visible()
    ui.shot("spaces-entities")
    chip.click()  # entity recall: a direct recall for the entity name
    expect(ui.testid("recall-query")).to_have_value("staging")
    expect(ui.testid("recall-results")).to_contain_text("port 5433")

    ui.testid("tab-graph").click()
    expect(ui.testid("graph-svg")).to_be_visible()
    assert ui.testid("graph-node").count() >= 3
    assert ui.testid("graph-edge").count() >= 1
    ui.shot("spaces-graph")


def test_space_remember_and_forget(ui: Page, served: Served) -> None:
    expect = _expect()
    ui.open(f"spaces/{served.space_id}")
    ui.testid("tab-remember").click()
    fact = "The on-call rotation changes every Monday."
    ui.testid("remember-content").fill(fact)
    ui.testid("remember-entities").fill("on-call, rotation")
    ui.testid("remember-submit").click()
    expect(ui.testid("message-info").first).to_be_visible()
    stored = [r for r in served.host.spaces.browse(served.space_id) if r.content == fact]
    assert len(stored) == 1
    assert stored[0].entities == ["on-call", "rotation"]

    ui.testid("tab-content").click()
    item = ui.testid("content-item").filter(has_text=fact)
    expect(item).to_have_count(1)
    item.get_by_role("button", name="Forget").click()
    item.get_by_role("button", name="Confirm forget").click()
    expect(ui.testid("content-list")).not_to_contain_text(fact)
    assert fact not in [r.content for r in served.host.spaces.browse(served.space_id)]


def test_space_activation(ui: Page, served: Served) -> None:
    expect = _expect()
    ui.open("spaces")
    row = ui.page.locator(f"tr[data-space-id='{served.scratch_id}']")
    expect(row.get_by_test_id("space-active")).to_have_text("inactive")
    row.get_by_test_id("space-toggle").click()
    expect(row.get_by_test_id("space-active")).to_have_text("active")
    assert served.host.spaces.get_space(served.scratch_id).active is True
    row.get_by_test_id("space-toggle").click()
    expect(row.get_by_test_id("space-active")).to_have_text("inactive")
    assert served.host.spaces.get_space(served.scratch_id).active is False

    ui.testid("space-name").fill("Created in the browser")
    ui.testid("space-create-submit").click()
    expect(ui.testid("space-title")).to_contain_text("Created in the browser")
    assert "Created in the browser" in [s.name for s in served.host.spaces.list_spaces()]
    ui.shot("spaces")


def test_mnemos_task_fatigue_chart(ui: Page, served: Served) -> None:
    expect = _expect()
    ui.open("mnemos")
    expect(ui.testid("tasks-list")).to_contain_text(TASK)
    # Tasks are listed by their goal; the id stays beside it.
    ui.testid("tasks-list").get_by_role("link", name="Ship the control-plane page").click()
    expect(ui.testid("fatigue-svg")).to_be_visible()
    expect(ui.testid("fatigue-point").first).to_be_attached()
    assert ui.testid("fatigue-point").count() >= 5  # the five seeded readings
    assert ui.testid("fatigue-line").count() == 1
    expect(ui.testid("task-nodes")).to_contain_text("Ship the control-plane page")
    assert ui.testid("task-node").count() >= 3
    assert ui.testid("task-checkpoint").count() >= 1
    ui.testid("resume-button").click()
    expect(ui.testid("resume-text")).to_contain_text("Ship the control-plane page")
    ui.shot("mnemos")


def test_read_only_host_and_empty_pages(ui: Page, read_only_url: str) -> None:
    expect = _expect()
    ui.url = read_only_url
    ui.allow.append(r"status of 403")  # the refused write below
    for route, empty in [
        ("runtime", "No entries."),
        ("documents", "No active documents."),
        ("spaces", "No Memory Spaces yet."),
        ("mnemos", "No Mnemos tasks yet."),
    ]:
        ui.open(route)
        expect(ui.testid(f"page-{route}")).to_contain_text(empty)
    assert not ui.errors, ui.errors
    ui.open("status")
    expect(ui.testid("status-write-enabled")).to_have_text("false")
    expect(ui.page.locator("body.read-only")).to_have_count(1)

    ui.open("runtime")
    ui.testid("runtime-add-content").fill("Never stored: the host is read-only.")
    ui.testid("runtime-add-submit").click()
    expect(ui.testid("message-error")).to_contain_text("read-only (403)")
    expect(ui.testid("runtime-user-list")).to_contain_text("No entries.")
    ui.shot("read-only")


@pytest.fixture(scope="module")
def archived_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str]]]:
    """A host whose MEMORY archival kept entries in ``runtime/archived/`` (no Memory Space
    admits automatic writes), one of them carrying markup."""
    _require_browser()
    base = tmp_path_factory.mktemp("web-archived")
    host = Mnemon.open(
        base / "m",
        workspace=_workspace(base),
        runtime={"memory_limit_bytes": 200},
        layers={"memory_spaces": {"participation": {"write": "manual"}}},
    )
    try:
        for i in range(5):
            fact = f"Release step {i}: {HTML_ENTRY}"
            mutation = RuntimeMutation(action="add", target="memory", content=fact)
            assert host.write_runtime(mutation).committed
        archived = [r["entry"]["content"] for r in host.runtime.archived("memory")]
        assert archived
        with _serve(host) as url:
            yield url, archived
    finally:
        host.close()


def test_item7_runtime_page_lists_archived_entries_as_text(
    ui: Page, archived_url: tuple[str, list[str]]
) -> None:
    expect = _expect()
    ui.url, archived = archived_url
    ui.open("runtime")
    section = ui.testid("runtime-memory-archived")
    expect(section).to_contain_text(
        f"{len(archived)} {'entry' if len(archived) == 1 else 'entries'}"
    )
    section.locator("summary").click()
    rows = ui.testid("runtime-archived-content")
    assert rows.all_inner_texts() == archived
    expect(ui.testid("runtime-memory-archived-list")).to_contain_text(HTML_ENTRY)
    assert ui.page.locator("#page-runtime img, #page-runtime b").count() == 0
    assert ui.page.evaluate("window.pwned") is None
    expect(ui.testid("runtime-user-archived")).to_have_count(0)  # nothing archived from USER
    ui.shot("runtime-archived")
