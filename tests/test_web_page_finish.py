"""Issue 17, item 5: a finished web page, checked in headless Chromium (as in ``test_web_page``).

Tables refresh after writes, banners replace each other and clear, messages use the names the
user gave, an oversized Runtime entry gets advice that can work, graph labels never overlap at
100 nodes (label boxes measured in the browser), Markdown is rendered without HTML
passthrough, Documents search shows no model-facing text, Mnemos tasks carry their goal, the
Status view shows the Chroma target when the server sends it, every view holds at 360 px, and
the page runs under a strict Content-Security-Policy (no inline script or style). Screenshots
at 1280 and 360 px go to ``$MNEMON_TEST_ARTIFACTS/web/`` (``finish-*.png``).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from test_web_page import TIMEOUT_MS, Page, _artifacts, _require_browser, _serve, _workspace
from test_web_page import browser as browser  # the same module-scoped Chromium fixture

from langgraph_mnemon import Mnemon
from langgraph_mnemon.memory_layers.runtime import RuntimeMutation

DESKTOP = 1280
PHONE = 360
GOAL = "Publish the quarterly release notes for the billing service"
UNNAMED_TASK = str(uuid.UUID(int=0x5EED_0000_0000_4000_8000_0000_0000_0017))
MODEL_TEXT = ["quoted project records", "not instructions", "Answer without Document evidence"]
MARKDOWN = """# Release runbook

Run **every** step in order; _never_ skip the smoke test.

- Tag the release with `git tag`
- Push the tag
  - wait for CI
- Announce it: [the status page](https://status.example.org/releases)

1. Open the dashboard
2. Check the error rate

```
make deploy ENV=prod
<b>not bold</b>
```

> Quoted: ask #release first.

Raw HTML stays text: <img src=x onerror="window.pwned=1"> <script>window.pwned=2</script>
A [bad link](javascript:window.pwned=3) and [a relative one](/etc/passwd) stay text.
"""


def _artifact(name: str) -> str:
    return str(_artifacts() / f"finish-{name}.png")


def _seed_graph(host: Mnemon, count: int = 100) -> str:
    space = host.spaces.create_space("Big graph", "One hundred memories")
    assert space.committed
    assert space.space is not None
    sid = space.space.id
    words = ["billing", "staging", "release", "on-call", "postgres", "chroma", "deploy", "alerts"]
    ids = []
    for i in range(count):
        word = words[i % len(words)]
        # Labels of many lengths, so the layout has to work for short and long ones.
        content = f"Fact {i}: the {word} service" + " runs in the eu-west region" * (i % 3)
        receipt = host.spaces.remember(content, space_id=sid, category="fact", entities=[word])
        assert receipt.committed, receipt
        assert receipt.id, receipt
        ids.append(receipt.id)
    for i in range(0, count - 7, 7):
        assert host.spaces.link(ids[i], ids[i + 7], space_id=sid, type="semantic").committed
    return sid


def _seed(host: Mnemon) -> dict[str, str]:
    for target, content in [
        ("user", "Prefers concise answers in British English."),
        ("memory", "Tests run with `pytest -q` from the repository root."),
    ]:
        assert host.write_runtime(RuntimeMutation(action="add", target=target, content=content))
    doc = host.write_document(
        {
            "action": "create",
            "title": "Release runbook",
            "description": "How we ship",
            "content": MARKDOWN,
        }
    )
    assert doc.committed
    assert doc.document is not None
    sid = _seed_graph(host)
    host.mnemos.add_node("release-notes", "goal", GOAL)
    host.mnemos.add_node("release-notes", "constraint", "No external URLs")
    host.mnemos.add_node(UNNAMED_TASK, "context", "A task that never stated its goal")
    assert host.mnemos.checkpoint("release-notes", force=True).status == "committed"
    return {"space_id": sid, "document_id": doc.document.id}


@pytest.fixture(scope="module")
def rich(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """A host with Runtime entries, a Markdown Document, a 100-node space and two tasks."""
    _require_browser()
    base = tmp_path_factory.mktemp("web-finish")
    host = Mnemon.open(base / "m", workspace=_workspace(base))
    try:
        seeded = _seed(host)
        with _serve(host) as url:
            yield url, seeded
    finally:
        host.close()


@pytest.fixture
def empty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Mnemon]]:
    """A host with nothing in it: the first space created gets the id ``default``."""
    _require_browser()
    base = tmp_path_factory.mktemp("web-empty")
    host = Mnemon.open(base / "m", workspace=_workspace(base))
    try:
        with _serve(host) as url:
            yield url, host
    finally:
        host.close()


@contextmanager
def _ui(
    browser: Any, url: str, width: int = DESKTOP, allow: tuple[str, ...] = ()
) -> Iterator[Page]:
    """A fresh page at ``width``; console errors (except ``allow``) fail the test."""
    context = browser.new_context(viewport={"width": width, "height": 800}, locale="en-US")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    seen = Page(page, url, allow=list(allow))
    page.on("console", lambda m: seen.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen.errors.append(f"pageerror: {e}"))
    try:
        yield seen
    finally:
        context.close()
    assert not seen.unexpected(), f"browser console errors: {seen.unexpected()}"


def _expect() -> Any:
    from playwright.sync_api import expect

    return expect


def _banners(ui: Page) -> list[str]:
    return ui.page.locator("#messages .msg").all_inner_texts()


# --- tables, names, banners -------------------------------------------------------------------


def test_item17_5_messages_use_the_names_the_user_gave(
    browser: Any, empty: tuple[str, Mnemon]
) -> None:
    expect = _expect()
    url, host = empty
    with _ui(browser, url) as ui:
        ui.open("spaces")
        ui.testid("space-name").fill("project-notes")
        ui.testid("space-create-submit").click()
        expect(ui.testid("space-title")).to_contain_text("project-notes")
        (space,) = host.spaces.list_spaces()
        assert space.id == "default"  # the id the message used to show
        info = ui.testid("message-info")
        expect(info).to_contain_text("Memory Space 'project-notes' created")
        assert "'default'" not in info.inner_text()

        ui.testid("tab-remember").click()
        ui.testid("remember-content").fill("CI runs every night at 02:00 UTC.")
        ui.testid("remember-submit").click()
        expect(ui.testid("message-info")).to_contain_text("Remembered in 'project-notes'")
        row = ui.page.locator(f"tr[data-space-id='{space.id}']")
        row.get_by_test_id("space-toggle").click()
        expect(ui.testid("message-info")).to_contain_text(
            "Memory Space 'project-notes' is now inactive"
        )
        assert "'default'" not in ui.testid("message-info").inner_text()
        ui.page.screenshot(path=_artifact("spaces-named"), full_page=True)


def test_item17_5_space_shows_active_after_its_first_write_without_reload(
    browser: Any, empty: tuple[str, Mnemon]
) -> None:
    expect = _expect()
    url, host = empty
    created = host.spaces.create_space("Fresh notes", "Inactive until its first memory")
    assert created.space is not None
    assert not created.space.active
    sid = created.space.id
    with _ui(browser, url) as ui:
        ui.open(f"spaces/{sid}")
        row = ui.page.locator(f"tr[data-space-id='{sid}']")
        expect(row.get_by_test_id("space-active")).to_have_text("inactive")
        expect(ui.page.locator("#spaces-count")).to_have_text("0 active of 1")
        ui.testid("tab-remember").click()
        ui.testid("remember-content").fill("CI runs every night at 02:00 UTC.")
        ui.testid("remember-submit").click()
        # No reload: the row and the count show what the server now says.
        expect(row.get_by_test_id("space-active")).to_have_text("active")
        expect(ui.page.locator("#spaces-count")).to_have_text("1 active of 1")
        assert host.spaces.get_space(sid).active is True

        ui.testid("tab-content").click()
        item = ui.testid("content-item").filter(has_text="CI runs every night")
        item.get_by_role("button", name="Forget").click()
        item.get_by_role("button", name="Confirm forget").click()
        expect(ui.testid("content-list")).to_contain_text("This space is empty.")


def test_item17_5_banners_replace_each_other_and_errors_clear(
    browser: Any, rich: tuple[str, dict[str, str]]
) -> None:
    expect = _expect()
    url, _ = rich
    with _ui(browser, url, allow=(r"status of 422",)) as ui:
        ui.open("runtime")
        for i in range(7):
            ui.testid("runtime-add-content").fill(f"Banner check entry number {i}.")
            ui.testid("runtime-add-submit").click()
            expect(ui.testid("runtime-user-list")).to_contain_text(
                f"Banner check entry number {i}."
            )
        assert len(_banners(ui)) == 1, _banners(ui)  # seven receipts, one banner

        ui.testid("runtime-add-content").fill("")
        ui.testid("runtime-add-submit").click()
        expect(ui.testid("message-error")).to_contain_text("422")
        assert len(_banners(ui)) == 1, _banners(ui)
        ui.testid("runtime-add-content").fill("A success after an error clears the error.")
        ui.testid("runtime-add-submit").click()
        expect(ui.testid("message-info")).to_be_visible()
        expect(ui.testid("message-error")).to_have_count(0)

        ui.testid("runtime-add-content").fill("")
        ui.testid("runtime-add-submit").click()
        expect(ui.testid("message-error")).to_be_visible()
        ui.testid("nav-documents").click()
        ui.page.wait_for_selector("body[data-loaded='documents']")
        expect(ui.testid("message-error")).to_have_count(0)  # navigation clears it
        ui.page.screenshot(path=_artifact("banners"), full_page=True)


def test_item17_5_oversized_entry_gets_advice_that_can_work(
    browser: Any, rich: tuple[str, dict[str, str]]
) -> None:
    expect = _expect()
    url, _ = rich
    with _ui(browser, url, allow=(r"status of 409", r"status of 422")) as ui:
        ui.open("runtime")
        for target, size in [("user", 5000), ("memory", 9000)]:
            ui.testid("runtime-add-target").select_option(target)
            ui.testid("runtime-add-content").fill("word " * (size // 5))
            ui.testid("runtime-add-submit").click()
            banner = ui.testid("message-error")
            expect(banner).to_contain_text(
                "Shorten it, split it into smaller entries, or store it as a Document."
            )
            text = banner.inner_text()
            assert "compact runtime memory" not in text, text
            assert "retry" not in text.lower(), text
        expect(ui.testid("runtime-user-list")).not_to_contain_text("word word")
        ui.page.screenshot(path=_artifact("oversized"), full_page=True)


# --- graph ------------------------------------------------------------------------------------

# Every label's and circle's box on screen, and the pairs of label boxes that intersect (or a
# label that covers another node's circle).
_COLLISIONS = """() => {
  const nodes = [...document.querySelectorAll("[data-testid=graph-node]")];
  const label = nodes.map((n) => n.querySelector("text").getBoundingClientRect());
  const dot = nodes.map((n) => n.querySelector("circle").getBoundingClientRect());
  const hit = (a, b) =>
    a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const clashes = [];
  for (let i = 0; i < nodes.length; i++) {
    for (let j = 0; j < nodes.length; j++) {
      if (i < j && hit(label[i], label[j])) clashes.push(["label", i, j]);
      if (i !== j && hit(label[i], dot[j])) clashes.push(["dot", i, j]);
    }
  }
  return { count: nodes.length, clashes, heights: label.map((r) => r.height),
           widths: label.map((r) => r.width) };
}"""


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
def test_item17_5_graph_labels_never_overlap_at_100_nodes(
    browser: Any, rich: tuple[str, dict[str, str]], width: int
) -> None:
    expect = _expect()
    url, seeded = rich
    with _ui(browser, url, width) as ui:
        ui.open(f"spaces/{seeded['space_id']}")
        ui.testid("tab-graph").click()
        expect(ui.testid("graph-svg")).to_be_visible()
        found = ui.page.evaluate(_COLLISIONS)
        assert found["count"] == 100
        assert ui.testid("graph-edge").count() >= 99
        assert not found["clashes"], found["clashes"][:10]
        # Readable: labels are drawn at their 11 px size, never scaled down to fit.
        assert min(found["heights"]) >= 11, min(found["heights"])
        assert min(found["widths"]) > 20
        ui.page.screenshot(path=_artifact(f"graph-{width}"), full_page=True)
        ui.testid("graph-box").screenshot(path=_artifact(f"graph-box-{width}"))


# --- Markdown and Documents ---------------------------------------------------------------------


def test_item17_5_markdown_is_rendered_without_html_passthrough(
    browser: Any, rich: tuple[str, dict[str, str]]
) -> None:
    expect = _expect()
    url, _ = rich
    with _ui(browser, url) as ui:
        ui.open("documents")
        ui.testid("doc-active").get_by_role("button", name="Release runbook").click()
        reader = ui.testid("doc-reader-content")
        expect(reader.locator("h3")).to_have_text("Release runbook")
        assert reader.locator("strong").all_inner_texts() == ["every"]
        assert reader.locator("em").all_inner_texts() == ["never"]
        assert reader.locator(":scope > ul > li").count() == 3
        assert reader.locator("ul ul > li").all_inner_texts() == ["wait for CI"]
        assert reader.locator("ol > li").all_inner_texts() == [
            "Open the dashboard",
            "Check the error rate",
        ]
        assert reader.locator("pre code").inner_text() == "make deploy ENV=prod\n<b>not bold</b>"
        expect(reader.locator("blockquote")).to_have_text("Quoted: ask #release first.")
        links = reader.locator("a")
        assert links.count() == 1
        assert links.get_attribute("href") == "https://status.example.org/releases"
        assert links.inner_text() == "the status page"
        # Markup and unsafe links arrive as the text they are.
        expect(reader).to_contain_text('<img src=x onerror="window.pwned=1">')
        expect(reader).to_contain_text("<script>window.pwned=2</script>")
        expect(reader).to_contain_text("bad link (javascript:window.pwned=3)")
        assert ui.page.locator("#doc-reader img, #doc-reader script, #doc-reader b").count() == 0
        assert ui.page.evaluate("window.pwned") is None
        ui.page.screenshot(path=_artifact("markdown"), full_page=True)


def test_item17_5_markdown_renderer_edge_cases(
    browser: Any, rich: tuple[str, dict[str, str]]
) -> None:
    url, _ = rich
    with _ui(browser, url) as ui:
        ui.open("status")
        rendered = ui.page.evaluate(
            """(cases) => cases.map((text) => {
                 const box = document.createElement("div");
                 box.append(window.MnemonMarkdown.render(text));
                 const tags = [...box.querySelectorAll("*")].map((n) => n.tagName.toLowerCase());
                 return { html: box.innerHTML, text: box.textContent, tags };
               })""",
            [
                "snake_case_name and 2 * 3 * 4",
                "[x](JAVASCRIPT:alert(1)) [y](data:text/html,hi) <https://ok.example/a>",
                "```\nunclosed <img src=x onerror=alert(1)>",
                "\\*not em\\* and `<i>code</i>`",
                "see https://example.org/page.",
            ],
        )
        assert rendered[0]["tags"] == ["p"], rendered[0]  # no emphasis inside words
        assert rendered[1]["html"].count("<a ") == 1, rendered[1]  # javascript: and data: stay text
        assert 'href="https://ok.example/a"' in rendered[1]["html"]
        assert "img" not in rendered[2]["tags"]
        assert "onerror=alert(1)>" in rendered[2]["text"]
        assert rendered[3]["text"] == "*not em* and <i>code</i>"
        assert "i" not in rendered[3]["tags"]
        assert 'href="https://example.org/page"' in rendered[4]["html"]  # the full stop stays out


def test_item17_5_documents_search_shows_no_model_facing_text(
    browser: Any, rich: tuple[str, dict[str, str]]
) -> None:
    expect = _expect()
    url, _ = rich
    with _ui(browser, url) as ui:
        ui.open("documents")
        ui.testid("doc-search-q").fill("release runbook smoke test")
        ui.testid("doc-search-submit").click()
        results = ui.testid("doc-search-results")
        expect(results).to_contain_text("Release runbook")
        page_text = ui.page.locator("body").inner_text()
        for text in MODEL_TEXT:
            assert text not in page_text, text
        expect(ui.testid("doc-search-summary")).to_have_text("1 matching document")
        excerpt = ui.testid("doc-search-excerpt").first
        expect(excerpt).to_be_visible()
        assert "# " not in excerpt.inner_text()  # the excerpt's Markdown is rendered
        ui.page.screenshot(path=_artifact("documents-search"), full_page=True)

        ui.testid("doc-search-q").fill("zebra quantum")
        ui.testid("doc-search-submit").click()
        expect(results).to_contain_text("No document matched")
        page_text = ui.page.locator("body").inner_text()
        for text in [*MODEL_TEXT, "Suggestions are the most recently updated"]:
            assert text not in page_text, text


# --- Mnemos, status, layout -----------------------------------------------------------------------


def test_item17_5_tasks_are_labelled_by_goal(
    browser: Any, rich: tuple[str, dict[str, str]]
) -> None:
    expect = _expect()
    url, _ = rich
    with _ui(browser, url) as ui:
        ui.open("mnemos")
        named = ui.page.locator("tr[data-task-id='release-notes']")
        expect(named.get_by_test_id("task-open")).to_have_text(GOAL)
        unnamed = ui.page.locator(f"tr[data-task-id='{UNNAMED_TASK}']")
        expect(unnamed.get_by_test_id("task-open")).to_have_text(f"{UNNAMED_TASK[:8]}…")
        assert UNNAMED_TASK not in ui.testid("tasks-list").inner_text()
        named.get_by_test_id("task-open").click()
        expect(ui.testid("task-title")).to_contain_text(f"Task: {GOAL}")
        ui.testid("resume-button").click()
        resume = ui.testid("resume-text")
        expect(resume).to_contain_text(GOAL)
        assert resume.locator("h3, h4, h5, li").count() >= 1  # the resume Markdown, rendered
        assert "## " not in resume.inner_text()
        ui.page.screenshot(path=_artifact("mnemos"), full_page=True)


def test_item17_5_status_shows_the_chroma_target_when_the_server_sends_it(
    browser: Any, rich: tuple[str, dict[str, str]]
) -> None:
    import json

    expect = _expect()
    url, _ = rich
    with _ui(browser, url) as ui:
        ui.open("status")
        expect(ui.testid("status-spaces-total")).to_be_visible()
        sent = ui.page.evaluate("() => fetch('api/status').then((r) => r.json())")
        if sent.get("chroma"):  # the server's own target
            expect(ui.testid("status-chroma")).to_have_text(sent["chroma"])
        else:  # a server without the field: no row, no error
            expect(ui.testid("status-chroma")).to_have_count(0)

        def with_chroma(route: Any) -> None:
            response = route.fetch()
            body = response.json()
            body["chroma"] = "127.0.0.1:58123"
            route.fulfill(response=response, body=json.dumps(body))

        status_url = re.compile(r".*/mnemon/api/status$")
        ui.page.route(status_url, with_chroma)
        ui.page.reload()
        ui.page.wait_for_selector("body[data-loaded='status']")
        expect(ui.testid("status-chroma")).to_have_text("127.0.0.1:58123")

        def without_chroma(route: Any) -> None:
            response = route.fetch()
            body = response.json()
            body.pop("chroma", None)
            route.fulfill(response=response, body=json.dumps(body))

        ui.page.unroute(status_url)
        ui.page.route(status_url, without_chroma)
        ui.page.reload()
        ui.page.wait_for_selector("body[data-loaded='status']")
        expect(ui.testid("status-spaces-total")).to_be_visible()
        expect(ui.testid("status-chroma")).to_have_count(0)


def _views(ui: Page, seeded: dict[str, str]) -> Iterator[str]:
    """Walk every view (and the panels inside), yielding a name at each stop."""
    for route in ["status", "runtime"]:
        ui.open(route)
        yield route
    ui.open("documents")
    ui.testid("doc-active").get_by_role("button", name="Release runbook").click()
    ui.page.wait_for_selector("[data-testid=doc-reader-content] h3")
    yield "documents"
    ui.open("spaces")
    yield "spaces"
    ui.open(f"spaces/{seeded['space_id']}")
    for tab in ["recall", "content", "entities", "graph", "remember"]:
        ui.testid(f"tab-{tab}").click()
        ui.page.wait_for_selector(f"#space-panel .tab[data-tab={tab}]:not([hidden])")
        yield f"space-{tab}"
    ui.open("mnemos/release-notes")
    ui.testid("resume-button").click()
    ui.page.wait_for_selector("[data-testid=resume-text]:not([hidden])")
    yield "mnemos"


@pytest.mark.parametrize("width", [PHONE, DESKTOP])
def test_item17_5_every_view_holds_at_phone_and_desktop_width(
    browser: Any, rich: tuple[str, dict[str, str]], width: int
) -> None:
    url, seeded = rich
    with _ui(browser, url, width) as ui:
        for name in _views(ui, seeded):
            scroll = ui.page.evaluate("() => [document.documentElement.scrollWidth, innerWidth]")
            assert scroll[0] <= scroll[1], f"{name} at {width} px: {scroll[0]} > {scroll[1]}"
            nav = ui.testid("nav").bounding_box()
            assert nav is not None
            assert nav["x"] + nav["width"] <= width, (name, nav)
            ui.page.screenshot(path=_artifact(f"{name}-{width}"), full_page=True)
        assert Path(_artifact(f"status-{width}")).stat().st_size > 0


STRICT_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


def test_item17_5_page_runs_under_a_strict_content_security_policy(
    browser: Any, rich: tuple[str, dict[str, str]]
) -> None:
    """No inline script or style and nothing from elsewhere: a violation is a console error."""
    url, seeded = rich
    with _ui(browser, url, DESKTOP) as ui:

        def with_csp(route: Any) -> None:
            response = route.fetch()
            headers = {**response.headers, "content-security-policy": STRICT_CSP}
            route.fulfill(response=response, headers=headers)

        ui.page.route(re.compile(r".*/mnemon/(#.*)?$"), with_csp)  # also what the server sends
        violations: list[str] = []
        ui.page.on(
            "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
        )
        stops = list(_views(ui, seeded))
        assert "mnemos" in stops
        assert ui.page.evaluate("() => document.querySelector('.bar span').style.width") != ""
        assert not violations, violations


def test_item17_5_the_server_sends_the_strict_policy_with_every_web_file(
    rich: tuple[str, dict[str, str]],
) -> None:
    from server_support import http

    url, _seeded = rich
    for name in ("", "static/app.js", "static/app.css", "static/markdown.js", "static/graph.js"):
        response = http.get(url.rstrip("/") + "/" + name, headers={"Host": "127.0.0.1"})
        assert response.status_code == 200, name
        assert response.headers["content-security-policy"] == STRICT_CSP
        assert response.headers["x-content-type-options"] == "nosniff"
