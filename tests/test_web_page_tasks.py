"""Issue 16, item 5: Mnemos tasks on the web page, in headless Chromium (as in test_web_page).

A LangGraph thread run with the Mnemos checkpointer leaves one LangGraph checkpoint per
super-step (60+ here); two Mnemos checkpoints (``checkpoint()``) sit among them. The page labels
the task by its goal (the model's, not the derived or superseded one), lists every node with its
origin and node counts that match the rows, and shows the Mnemos and the LangGraph checkpoints
as two lists with their own counts, so the super-steps do not hide the Mnemos ones. The API
answers carry the same split. Screenshots go to ``$MNEMON_TEST_ARTIFACTS/web/tasks-*.png``.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypedDict

import httpx
import pytest
import sqlalchemy as sa
from langgraph.graph import END, START, StateGraph
from test_web_page import TIMEOUT_MS, Page, _artifacts, _require_browser, _serve, _workspace
from test_web_page import browser as browser  # the same module-scoped Chromium fixture

from langgraph_mnemon import Mnemon
from langgraph_mnemon.memory_layers.mnemos.schema import NODES

THREAD = "thread-7f3a"
GOAL = "Migrate the billing jobs to the new queue"
DERIVED_GOAL = "migrate billing jobs"
OLD_GOAL = "Look at the billing cron jobs"
STEPS = 60


class Work(TypedDict):
    count: int
    log: Annotated[list[str], operator.add]


def _step(state: Work) -> dict[str, Any]:
    return {"count": state["count"] + 1, "log": [f"step {state['count'] + 1}"]}


def _more(state: Work) -> str:
    return "work" if state["count"] < STEPS else END


def _run_graph(host: Mnemon) -> int:
    """A real LangGraph run on the host's checkpointer: one checkpoint per super-step."""
    builder = StateGraph(Work)
    builder.add_node("work", _step)
    builder.add_edge(START, "work")
    builder.add_conditional_edges("work", _more)
    saver = host.checkpointer()
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": THREAD}, "recursion_limit": STEPS + 10}
    assert graph.invoke({"count": 0, "log": []}, config)["count"] == STEPS
    return len(list(saver.list({"configurable": {"thread_id": THREAD}})))


def _seed(host: Mnemon) -> dict[str, int]:
    mnemos = host.mnemos
    old = mnemos.add_node(THREAD, "goal", OLD_GOAL, origin="derived")
    # What a restated goal leaves behind: the old one compressed ("Superseded: ...").
    with mnemos.db.write() as conn:
        conn.execute(
            sa.update(NODES)
            .where(NODES.c.id == old.id)
            .values(status="compressed", summary=f"Superseded: {OLD_GOAL}", content="")
        )
    mnemos.add_node(THREAD, "goal", DERIVED_GOAL, origin="derived")
    mnemos.add_node(THREAD, "goal", GOAL, origin="model")
    mnemos.add_node(THREAD, "constraint", "Never drop a queued job.", origin="derived")
    mnemos.add_node(THREAD, "result", "Done: moved the invoice job", origin="model")
    mnemos.add_node(THREAD, "result", "read_file(path=jobs/cron.py) -> ok: 12 jobs")
    mnemos.add_node(THREAD, "working", "Next: the dunning job", origin="derived")
    assert mnemos.checkpoint(THREAD, force=True, git=False).status == "committed"
    steps = _run_graph(host)
    assert mnemos.checkpoint(THREAD, force=True, git=False).status == "committed"
    mnemos.add_node("other-task", "context", "Nothing to do with billing")
    return {"langgraph": steps, "mnemos": 2, "nodes": 7}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Mnemon, dict]]:
    _require_browser()
    base = tmp_path_factory.mktemp("web-tasks")
    host = Mnemon.open(base / "m", workspace=_workspace(base))
    try:
        counts = _seed(host)
        with _serve(host) as url:
            yield url, host, counts
    finally:
        host.close()


@contextmanager
def _ui(browser: Any, url: str, width: int = 1280) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": width, "height": 900}, locale="en-US")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    seen = Page(page, url)
    page.on("console", lambda m: seen.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen.errors.append(f"pageerror: {e}"))
    try:
        yield seen
        assert not page.get_by_test_id("message-error").all_inner_texts()
    finally:
        context.close()
    assert not seen.unexpected(), f"browser console errors: {seen.unexpected()}"


def _expect() -> Any:
    from playwright.sync_api import expect

    return expect


def test_api_answers_count_and_list_checkpoints_apart(served: tuple[str, Mnemon, dict]) -> None:
    url, _, counts = served
    assert counts["langgraph"] > 50  # more super-steps than the page lists
    with httpx.Client(base_url=f"{url}api", timeout=60) as api:
        tasks = {t["task_id"]: t for t in api.get("/mnemos/tasks").json()["tasks"]}
        row = tasks[THREAD]
        assert row["goal"] == GOAL  # the model's goal, not the derived or the superseded one
        assert row["mnemos_checkpoints"] == 2
        assert row["langgraph_checkpoints"] == counts["langgraph"]
        assert row["checkpoints"] == 2 + counts["langgraph"]  # the old field: all of them
        assert row["last_mnemos_checkpoint"]["source"] == "mnemos"
        assert row["nodes"]["total"] == counts["nodes"]
        assert tasks["other-task"]["goal"] is None
        answer = api.get(f"/mnemos/tasks/{THREAD}/checkpoints").json()
        assert [c["source"] for c in answer["mnemos"]] == ["mnemos", "mnemos"]
        assert answer["mnemos_total"] == 2
        assert answer["langgraph_total"] == counts["langgraph"]
        assert len(answer["langgraph"]) == 50
        assert {c["source"] for c in answer["langgraph"]} == {"langgraph"}
        steps = [c["step"] for c in answer["langgraph"]]
        assert steps == sorted(steps, reverse=True)  # newest first
        # The mixed list is still there; in it the Mnemos ones are lost among the steps.
        assert len(answer["checkpoints"]) == 2 + counts["langgraph"]


def test_task_page_shows_goal_origins_and_two_checkpoint_lists(
    browser: Any, served: tuple[str, Mnemon, dict]
) -> None:
    expect = _expect()
    url, host, counts = served
    with _ui(browser, url) as ui:
        ui.open("mnemos")
        row = ui.page.locator(f"tr[data-task-id='{THREAD}']")
        expect(row.get_by_test_id("task-open")).to_have_text(GOAL)
        expect(row.get_by_test_id("task-checkpoint-counts")).to_have_text(
            f"2 Mnemos · {counts['langgraph']} LangGraph"
        )
        expect(row.get_by_test_id("task-node-total")).to_have_text("6 active / 7")
        other = ui.page.locator("tr[data-task-id='other-task']")
        expect(other.get_by_test_id("task-open")).to_have_text("other-task")
        assert OLD_GOAL not in ui.testid("tasks-list").inner_text()

        row.get_by_test_id("task-open").click()
        ui.page.wait_for_selector("body[data-loaded='mnemos']")
        expect(ui.testid("task-title")).to_contain_text(f"Task: {GOAL}")
        # Node rows match the counts, and each says where it came from.
        expect(ui.testid("task-node")).to_have_count(counts["nodes"])
        expect(ui.testid("task-node-counts")).to_have_text("(7: 6 active, 1 compressed, 0 evicted)")
        expect(ui.testid("task-nodes-more")).to_be_hidden()
        origins = ui.testid("node-origin").all_inner_texts()
        assert sorted(origins) == sorted(n.origin for n in host.mnemos.nodes(THREAD, status="all"))
        assert {"derived", "model", "agent_generated"} <= set(origins)
        by_model = "[data-testid='task-node'][data-origin='model']"
        model_goal = ui.page.locator(by_model, has_text=GOAL)
        expect(model_goal).to_have_count(1)
        superseded = ui.page.locator("[data-testid='task-node'][data-status='compressed']")
        expect(superseded).to_contain_text(f"Superseded: {OLD_GOAL}")

        # Two checkpoint lists, each with its own count.
        own = ui.testid("mnemos-checkpoints").get_by_test_id("task-checkpoint")
        expect(own).to_have_count(2)
        for item in own.all():
            expect(item).to_have_attribute("data-source", "mnemos")
        expect(ui.testid("mnemos-checkpoint-count")).to_have_text("(2)")
        steps = ui.testid("langgraph-checkpoints").get_by_test_id("task-checkpoint")
        expect(steps).to_have_count(50)
        expect(steps.first).to_have_attribute("data-source", "langgraph")
        expect(steps.first).to_contain_text("step ")
        expect(ui.testid("langgraph-checkpoint-count")).to_have_text(f"({counts['langgraph']})")
        expect(ui.testid("langgraph-checkpoints-more")).to_have_text(
            f"Showing the newest 50 of {counts['langgraph']}."
        )
        assert ui.testid("mnemos-checkpoints").locator("[data-source='langgraph']").count() == 0

        ui.testid("resume-button").click()
        resume = ui.testid("resume-text")
        expect(resume).to_contain_text(GOAL)
        expect(resume).to_contain_text("Never drop a queued job.")
        assert OLD_GOAL not in resume.inner_text()
        ui.page.screenshot(path=str(_artifacts() / "tasks-desktop.png"), full_page=True)


def test_task_page_holds_at_phone_width(browser: Any, served: tuple[str, Mnemon, dict]) -> None:
    expect = _expect()
    url, _, _ = served
    with _ui(browser, url, width=360) as ui:
        ui.open(f"mnemos/{THREAD}")
        expect(ui.testid("task-title")).to_contain_text(GOAL)
        expect(ui.testid("mnemos-checkpoints").get_by_test_id("task-checkpoint")).to_have_count(2)
        wide = ui.page.evaluate("document.documentElement.scrollWidth")
        assert wide <= 360 + 1, f"the page scrolls sideways at 360 px ({wide} px wide)"
        ui.page.screenshot(path=str(_artifacts() / "tasks-phone.png"), full_page=True)
