"""Issue 35, item 5: learning passes on the web page, in headless Chromium (as in test_web_page).

A pass learned through the host's API and a thread checkpointed by a real LangGraph run: the
Learning page lists the pass (thread, when, extractor, status) with what each receipt did,
learns from the checkpointed thread with "Learn now", and undoes that pass (a second click
confirms). Stored text shows as text, never as HTML. The Status page counts the passes.
Screenshots go to ``$MNEMON_TEST_ARTIFACTS/web/learning-*.png``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph
from test_web_page import _artifacts, _require_browser, _serve, _workspace
from test_web_page import browser as browser  # the same module-scoped Chromium fixture
from test_web_page_tasks import _expect, _ui

from langgraph_mnemon import Mnemon

SEEDED = "thread-seeded"
LIVE = "thread-live"
MARKUP = 'I prefer <img src=x onerror="window.pwned=1"> tea over coffee.'
ALLERGY = "I'm allergic to peanuts."


def _checkpoint(host: Mnemon, thread: str, text: str) -> None:
    """A real LangGraph run on the host's checkpointer, so "Learn now" has a thread to read."""

    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("Noted.", id=f"{thread}-reply")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    graph = builder.compile(checkpointer=host.checkpointer())
    graph.invoke(
        {"messages": [HumanMessage(text, id=f"{thread}-1")]},
        {"configurable": {"thread_id": thread}},
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Mnemon]]:
    _require_browser()
    base = tmp_path_factory.mktemp("web-learning")
    host = Mnemon.open(base / "m", workspace=_workspace(base), chroma={"enabled": False})
    try:
        seeded = host.learn(
            SEEDED,
            messages=[
                HumanMessage(MARKUP, id="s1"),
                AIMessage("Tea it is.", id="s2"),
                HumanMessage("Nice weather today, right?", id="s3"),
            ],
        )
        assert seeded.status == "committed", seeded
        _checkpoint(host, LIVE, ALLERGY)
        with _serve(host) as url:
            yield url, host
    finally:
        host.close()


def test_learning_page_lists_learns_and_undoes(browser: Any, served: tuple[str, Mnemon]) -> None:
    expect = _expect()
    url, host = served
    with _ui(browser, url) as ui:
        ui.open("learning")
        seeded = ui.page.locator("[data-testid='learn-pass'][data-status='committed']")
        expect(seeded).to_have_count(1)
        expect(seeded.get_by_test_id("learn-pass-thread")).to_have_text(SEEDED)
        expect(seeded).to_contain_text("heuristic")
        receipt = seeded.get_by_test_id("learn-receipt-content").first
        expect(receipt).to_contain_text('<img src=x onerror="window.pwned=1">')  # text, not HTML
        assert ui.page.evaluate("window.pwned") is None
        assert ui.page.locator("[data-testid='learning-passes'] img").count() == 0

        ui.testid("learn-thread").fill(LIVE)
        ui.testid("learn-submit").click()
        live = ui.page.locator("[data-testid='learn-pass']", has_text=LIVE)
        expect(live).to_have_attribute("data-status", "committed")
        expect(live.get_by_test_id("learn-receipt-content")).to_have_text(ALLERGY)
        expect(ui.testid("message-info")).to_contain_text("1 memory learned")
        expect(ui.testid("learning-count")).to_have_text("2 passes")
        ui.page.screenshot(path=str(_artifacts() / "learning-desktop.png"), full_page=True)

        undo = live.get_by_role("button", name="Undo")
        undo.click()  # arms
        live.get_by_role("button", name="Confirm undo").click()
        expect(live).to_have_attribute("data-status", "undone")
        expect(live.locator("[data-action='undo'][data-status='committed']")).to_have_count(1)
        expect(live.get_by_role("button", name="Undo")).to_have_count(0)
        expect(ui.testid("message-info")).to_contain_text("what it learned is forgotten")
        hits = host.spaces.search("peanuts allergy").results
        assert not [h for h in hits if "peanuts" in h.content]

        ui.open("status")
        expect(ui.testid("status-learning-passes")).to_have_text("2")
        expect(ui.testid("status-learning-learned")).to_have_text("1")
        ui.page.screenshot(path=str(_artifacts() / "learning-status.png"), full_page=True)


def test_learning_page_refuses_an_unknown_thread_and_holds_at_phone_width(
    browser: Any, served: tuple[str, Mnemon]
) -> None:
    expect = _expect()
    url, _ = served
    with _ui(browser, url, width=360) as ui:
        ui.open("learning")
        expect(ui.testid("learn-pass").first).to_be_visible()
        wide = ui.page.evaluate("document.documentElement.scrollWidth")
        assert wide <= 360 + 1, f"the page scrolls sideways at 360 px ({wide} px wide)"
        ui.page.screenshot(path=str(_artifacts() / "learning-phone.png"), full_page=True)
        ui.allow.append(r"status of 404")  # the browser logs the refused request
        ui.testid("learn-thread").fill("never-checkpointed")
        ui.testid("learn-submit").click()
        error = ui.testid("message-error")
        expect(error).to_contain_text("not-found")
        ui.testid("messages").locator("button.close").click()  # _ui fails on a left banner
