"""The web page's provider flows in a real browser (issue 19, part 5).

uvicorn serves ``create_app(host)`` on a free port and headless Chromium (Debian's
``/usr/bin/chromium``, driven by Playwright) adds spaces through the "Add a space" form (the
provider's fields come from GET providers), tests their connections, configures a secret
(password inputs are never filled in; a badge says "configured"), disconnects a third-party
space (its data stays in the provider) and removes a native one after the user typed its id
into the confirmation dialog. The third-party service is the reference ``mnemon-memory/1``
server (tests/support) on its own free port. Every step is checked against the host (and the
providers' own storage); any console error fails the test. Screenshots go to
``$MNEMON_TEST_ARTIFACTS/web/`` (default ``test-artifacts/web/``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from server_support import CHROMIUM, CHROMIUM_ARGS, browser_missing, uvicorn_in_thread
from support.http_memory_service import serve

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.providers import FactFileProvider, HttpProvider, MnemosProvider
from langgraph_mnemon.memory_layers.spaces import BrowseRequest, SpaceBinding

TIMEOUT_MS = 15_000
T = TypeVar("T")
TOKEN = "web-service-key-3b8e11"
WRONG = "web-wrong-key-60f2aa"


def _require_browser() -> None:
    if not CHROMIUM.exists():
        browser_missing("Chromium at /usr/bin/chromium", "apt-get install chromium")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        browser_missing(f"Python package {exc.name}", "pip install playwright")


def _artifacts() -> Path:
    folder = Path(os.environ.get("MNEMON_TEST_ARTIFACTS", "test-artifacts")) / "web"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass
class Served:
    host: Mnemon
    root: Path
    url: str
    service: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    _require_browser()
    from langgraph_mnemon.server.http import create_app

    base = tmp_path_factory.mktemp("web-providers")
    workspace = base / "workspace"
    workspace.mkdir()
    root = base / "m"
    # The reference service listens on loopback: an internal address the host must be told of.
    http = {"retries": 0, "allowed_hosts": ["127.0.0.1"]}
    host = Mnemon.open(root, workspace=workspace, chroma={"enabled": False}, http=http)
    try:
        with (
            serve(base / "service.db", token=TOKEN) as service,
            uvicorn_in_thread(create_app(host)) as port,
        ):
            yield Served(host, root, f"http://127.0.0.1:{port}/mnemon/", service)
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
    page: Any
    url: str
    errors: list[str] = field(default_factory=list)

    def open(self, route: str) -> Any:
        self.page.goto(f"{self.url}#/{route}")
        self.page.wait_for_selector(
            f"body[data-loaded='{route.split('/')[0]}']", timeout=TIMEOUT_MS
        )
        return self.page

    def testid(self, name: str) -> Any:
        return self.page.get_by_test_id(name)

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(_artifacts() / f"{name}.png"), full_page=True)


@pytest.fixture
def ui(browser: Any, served: Served) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    seen = Page(page, served.url)
    page.on("console", lambda m: seen.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen.errors.append(f"pageerror: {e}"))
    try:
        yield seen
        banners = page.get_by_test_id("message-error").all_inner_texts()
        assert not banners, f"unexpected error messages on the page: {banners}"
    finally:
        context.close()
    assert not seen.errors, f"browser console errors: {seen.errors}"


def _expect() -> Any:
    from playwright.sync_api import expect

    return expect


def _off_loop(call: Callable[[], T]) -> T:
    """Run ``call`` on a thread of its own (Playwright's sync API holds this thread's loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result()


def _browse(provider: Any, binding: SpaceBinding) -> list[Any]:
    try:
        return provider.browse(binding, BrowseRequest(limit=5))  # type: ignore[no-any-return]
    finally:
        provider.close()


def _space_id(ui: Page) -> str:
    match = re.search(r"#/spaces/([^/]+)$", ui.page.url)
    assert match, ui.page.url
    return match.group(1)


def _confirm(ui: Page, space_id: str) -> None:
    """Type the space id into the confirmation dialog (a wrong id keeps it disabled)."""
    expect = _expect()
    dialog = ui.testid("confirm-dialog")
    expect(dialog).to_be_visible()
    expect(ui.testid("confirm-expect")).to_have_text(space_id)
    submit = ui.testid("confirm-submit")
    expect(submit).to_be_disabled()
    ui.testid("confirm-input").fill(space_id + "x")
    expect(submit).to_be_disabled()
    ui.testid("confirm-input").fill(space_id)
    expect(submit).to_be_enabled()
    submit.click()
    expect(dialog).to_be_hidden()


def test_add_test_configure_and_disconnect_an_http_space(ui: Page, served: Served) -> None:
    expect = _expect()
    ui.open("spaces")
    ui.testid("space-provider").select_option("http")
    secret = ui.testid("new-field-api_key")
    expect(secret).to_have_attribute("type", "password")
    ui.testid("space-name").fill("Team memory")
    ui.testid("new-field-endpoint").fill(served.service)
    secret.fill(WRONG)
    ui.testid("space-test-new").click()
    outcome = ui.testid("new-test-outcome")
    expect(outcome).to_have_attribute("data-ok", "false")
    expect(outcome).to_contain_text("Connection failed")
    secret.fill(TOKEN)
    ui.testid("space-test-new").click()
    expect(ui.testid("new-test-outcome")).to_contain_text("Connection OK")
    ui.shot("providers-add-http")
    assert served.host.spaces.list_spaces() == []  # a test stores nothing

    ui.testid("space-create-submit").click()
    expect(ui.testid("space-title")).to_contain_text("Team memory")
    expect(ui.testid("new-field-api_key")).to_have_value("")  # the typed key is gone
    sid = _space_id(ui)
    space = served.host.spaces.get_space(sid)
    assert space.provider_id == "http"
    assert space.secrets_configured == ["api_key"]
    assert served.host.spaces.remember("The deploy freeze starts Friday.", space_id=sid).committed

    ui.testid("tab-settings").click()
    expect(ui.testid("config-field-api_key-badge")).to_have_text("configured")
    expect(ui.testid("config-field-api_key")).to_have_value("")  # never pre-filled
    expect(ui.testid("config-field-endpoint")).to_have_value(served.service)
    ui.testid("space-test").click()
    expect(ui.testid("space-test-outcome")).to_contain_text("Connection OK")
    expect(ui.testid("space-test-outcome")).to_contain_text("1 memory")

    # A wrong key saved: the input is empty again, the badge still says configured.
    ui.testid("config-field-api_key").fill(WRONG)
    ui.testid("space-config-save").click()
    expect(ui.testid("message-info").first).to_contain_text("saved")
    expect(ui.testid("config-field-api_key")).to_have_value("")
    expect(ui.testid("config-field-api_key-badge")).to_have_text("configured")
    assert not served.host.spaces.test_space(sid).ok
    ui.testid("space-test").click()
    expect(ui.testid("space-test-outcome")).to_contain_text("Connection failed")
    ui.testid("config-field-api_key").fill(TOKEN)
    ui.testid("space-config-save").click()
    expect(ui.testid("config-field-api_key")).to_have_value("")
    assert served.host.spaces.test_space(sid).ok
    ui.testid("space-test").click()
    expect(ui.testid("space-test-outcome")).to_contain_text("Connection OK")
    page_text = ui.page.content()
    assert TOKEN not in page_text
    assert WRONG not in page_text
    ui.shot("providers-configure")

    ui.testid("space-disconnect").click()
    ui.shot("providers-disconnect-dialog")
    _confirm(ui, sid)
    expect(ui.testid("message-info").first).to_contain_text("disconnected")
    expect(ui.testid("spaces-list")).not_to_contain_text("Team memory")
    assert sid not in [s.id for s in served.host.spaces.list_spaces()]
    # The data stayed in the service: a fresh provider object reads it.
    provider = HttpProvider(retries=0)
    binding = SpaceBinding(id=sid, name="t", config=space.config, secrets={"api_key": TOKEN})
    rows = _off_loop(lambda: _browse(provider, binding))
    assert [r.content for r in rows] == ["The deploy freeze starts Friday."]
    ui.shot("providers-after-disconnect")


def test_add_test_and_disconnect_a_fact_file_space(ui: Page, served: Served) -> None:
    expect = _expect()
    ui.open("spaces")
    ui.testid("space-provider").select_option("facts")
    expect(ui.testid("space-provider-note")).to_contain_text("disconnected (data kept)")
    ui.testid("space-name").fill("Household facts")
    ui.testid("new-field-min_trust").fill("0.2")
    ui.testid("space-test-new").click()
    expect(ui.testid("new-test-outcome")).to_contain_text("Connection OK")
    ui.testid("space-create-submit").click()
    expect(ui.testid("space-title")).to_contain_text("Household facts")
    sid = _space_id(ui)
    space = served.host.spaces.get_space(sid)
    assert space.config["min_trust"] == 0.2
    assert served.host.spaces.remember("The boiler is serviced in May.", space_id=sid).committed
    path = Path(space.config["path"])
    assert path.exists()

    ui.testid("tab-settings").click()
    ui.testid("space-test").click()
    expect(ui.testid("space-test-outcome")).to_contain_text("Connection OK")
    ui.testid("space-disconnect").click()
    _confirm(ui, sid)
    expect(ui.testid("spaces-list")).not_to_contain_text("Household facts")
    assert path.exists()  # the fact file is the provider's data: never deleted from here
    binding = SpaceBinding(id=sid, name="f", config={"path": str(path)})
    rows = _off_loop(lambda: _browse(FactFileProvider(served.root), binding))
    assert [r.content for r in rows] == ["The boiler is serviced in May."]


def test_a_native_space_is_removed_after_typing_its_id(ui: Page, served: Served) -> None:
    expect = _expect()
    created = served.host.spaces.create_space("Scratch notes", "Goes away")
    assert created.space is not None
    sid = created.space.id
    assert served.host.spaces.remember("Temporary note.", space_id=sid).committed
    ui.open(f"spaces/{sid}")
    ui.testid("tab-settings").click()
    expect(ui.testid("space-disconnect")).to_have_count(0)  # native: Remove, not Disconnect
    ui.testid("space-remove").click()
    expect(ui.testid("confirm-dialog")).to_be_visible()
    ui.testid("confirm-cancel").click()
    expect(ui.testid("confirm-dialog")).to_be_hidden()
    assert served.host.spaces.get_space(sid).id == sid  # cancelled: nothing happened
    ui.testid("space-remove").click()
    expect(ui.testid("confirm-text")).to_contain_text("deleted for good")
    ui.shot("providers-remove-dialog")
    _confirm(ui, sid)
    expect(ui.testid("message-info").first).to_contain_text("removed")
    expect(ui.testid("spaces-list")).not_to_contain_text("Scratch notes")
    assert sid not in [s.id for s in served.host.spaces.list_spaces()]
    fresh = MnemosProvider(served.host.database)
    rows = _off_loop(lambda: _browse(fresh, SpaceBinding(id=sid, name="s")))
    assert rows == []
    ui.testid("providers-box").locator("summary").click()
    expect(ui.testid("providers-list")).to_contain_text("Remove (deletes its data)")
    ui.shot("providers-after-remove")


def _fits(page: Any, name: str) -> None:
    width = page.evaluate("() => [document.documentElement.scrollWidth, innerWidth]")
    assert width[0] <= width[1], f"{name}: {width[0]} > {width[1]}"


def test_the_provider_forms_hold_at_phone_width(browser: Any, served: Served) -> None:
    created = served.host.spaces.create_space(
        "Phone check", provider_id="http", config={"endpoint": served.service},
        secrets={"api_key": TOKEN},
    )  # fmt: skip
    assert created.space is not None
    sid = created.space.id
    context = browser.new_context(viewport={"width": 360, "height": 800}, locale="en-US")
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        ui = Page(page, served.url)
        page.on("console", lambda m: ui.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: ui.errors.append(f"pageerror: {e}"))
        ui.open("spaces")
        ui.testid("space-provider").select_option("http")
        ui.testid("providers-box").locator("summary").click()
        _fits(page, "add form and providers")
        ui.shot("providers-phone-add")
        ui.open(f"spaces/{sid}")
        ui.testid("tab-settings").click()
        page.wait_for_selector("[data-testid=space-config-form]")
        _fits(page, "connection tab")
        ui.testid("space-disconnect").click()
        _fits(page, "confirmation dialog")
        ui.shot("providers-phone-dialog")
        ui.testid("confirm-cancel").click()
        assert not ui.errors, ui.errors
    finally:
        context.close()
        served.host.spaces.disconnect_space(sid, confirm=sid)
