"""Mnemos node graph: types, eviction policies, touch, decay, compress / evict, consolidation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.errors import AmbiguousMatchError, InvalidInputError, NotFoundError
from langgraph_mnemon.memory_layers.mnemos import Database, Mnemos, create_engine
from langgraph_mnemon.memory_layers.mnemos._scope import (
    dir_key,
    extract_paths,
    jaccard,
    merge_tags,
    scope_tags_for_path,
)
from langgraph_mnemon.memory_layers.mnemos.schema import NODES


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        self.now += 0.001
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def mnemos(tmp_path: Path, clock: Clock) -> Iterator[Mnemos]:
    db = Database(create_engine(tmp_path / "m.db"), owns_engine=True)
    service = Mnemos(db, MnemosConfig(git_state=False), workspace=tmp_path, clock=clock)
    yield service
    db.dispose()


def _set_weight(m: Mnemos, node_id: str, weight: float, accesses: int = 0) -> None:
    with m.db.write() as conn:
        conn.execute(
            sa.update(NODES)
            .where(NODES.c.id == node_id)
            .values(weight=weight, access_count=accesses)
        )


def test_scope_helpers() -> None:
    assert scope_tags_for_path("src/auth/login.py") == ["src", "auth"]
    assert scope_tags_for_path("main.py") == []
    assert scope_tags_for_path("/ws/src/a.py", Path("/ws")) == ["src"]
    assert scope_tags_for_path("a/b/c/d/e/f/g/h.py") == ["a", "b", "c", "d", "e"]
    assert dir_key("src/auth/login.py") == "src/auth"
    assert dir_key("main.py") == "."
    assert jaccard([], []) == 1.0
    assert jaccard(["a"], []) == 0.0
    assert jaccard(["a", "b"], ["b", "c"]) == pytest.approx(1 / 3)
    assert merge_tags(["a", "b"], ["b", "c"]) == ["a", "b", "c"]
    assert extract_paths({"path": "main.py", "query": "hello world", "x": "src/a.py"}) == [
        "main.py",
        "src/a.py",
    ]
    assert extract_paths({"url": "https://example.com/a/b", "n": 3}) == []
    assert extract_paths({"files": ["a/b.py", "c.py"]}) == ["a/b.py", "c.py"]


def test_add_node_types_policies_and_scope(mnemos: Mnemos) -> None:
    goal = mnemos.add_node("t", "goal", "  Ship it  ")
    assert goal.content == "Ship it"
    assert goal.weight == 1.0
    assert goal.status == "active"
    assert goal.eviction_policy == "never"
    ctx = mnemos.add_node("t", "context", "file", paths=["src/auth/a.py"], scope=["api"])
    assert ctx.scope_tags == ("api", "src", "auth")
    assert ctx.eviction_policy == "evictable"
    result = mnemos.add_node("t", "result", "done", links=[goal.id[:8]])
    assert result.eviction_policy == "compress_first"
    assert result.links == (goal.id,)
    assert mnemos.get_node(goal.id[:6]).id == goal.id
    assert {n.type for n in mnemos.nodes("t")} == {"goal", "context", "result"}
    assert [n.type for n in mnemos.nodes("t", type="goal")] == ["goal"]


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (("", "goal", "x"), {}, "task_id is required"),
        (("t", "checkpoint", "x"), {}, "written by checkpoint"),
        (("t", "idea", "x"), {}, "node type must be one of"),
        (("t", "goal", "   "), {}, "content is required"),
        (("t", "goal", 5), {}, "content must be a string"),
        (("t", "goal", "x" * 70_000), {}, "too long"),
        (("t", "goal", "x"), {"scope": "src"}, "scope must be a list"),
        (("t", "goal", "x"), {"confidence": 2}, "confidence"),
        (("t", "goal", "x"), {"links": ["nope-nope"]}, "no Mnemos node"),
        (("t\x00", "goal", "x"), {}, "control characters"),
    ],
)
def test_add_node_rejects_bad_input(
    mnemos: Mnemos, args: tuple[object, ...], kwargs: dict[str, object], match: str
) -> None:
    with pytest.raises((InvalidInputError, NotFoundError), match=match):
        mnemos.add_node(*args, **kwargs)  # type: ignore[arg-type]
    assert mnemos.nodes("t") == []  # nothing was stored


def test_node_lookup_errors(mnemos: Mnemos) -> None:
    with pytest.raises(NotFoundError):
        mnemos.get_node("deadbeef")
    with pytest.raises(InvalidInputError):
        mnemos.get_node("ab")
    ids = {mnemos.add_node("t", "goal", f"g{i}").id for i in range(40)}
    prefixes = {i[:4] for i in ids}
    if len(prefixes) < len(ids):  # two ids share a 4-char prefix: ambiguous
        shared = next(p for p in prefixes if sum(i.startswith(p) for i in ids) > 1)
        with pytest.raises(AmbiguousMatchError):
            mnemos.get_node(shared)


def test_touch_resets_weight_and_counts_access(mnemos: Mnemos) -> None:
    node = mnemos.add_node("t", "context", "x")
    _set_weight(mnemos, node.id, 0.3)
    touched = mnemos.touch(node.id)
    assert touched.weight == 1.0
    assert touched.access_count == 1
    assert touched.last_accessed > node.last_accessed


def test_decay_multiplies_with_floor_and_exempts_never_types(mnemos: Mnemos) -> None:
    goal = mnemos.add_node("t", "goal", "g")
    constraint = mnemos.add_node("t", "constraint", "c")
    handoff = mnemos.add_node("t", "handoff", "h")
    ctx = mnemos.add_node("t", "context", "x")
    work = mnemos.add_node("t", "working", "w")
    skill = mnemos.add_node("t", "skill", "s")
    low = mnemos.add_node("t", "result", "r")
    other_task = mnemos.add_node("u", "context", "other")
    _set_weight(mnemos, low.id, 0.0101)
    assert mnemos.decay("t") == 4
    weights = {n.id: n.weight for n in mnemos.nodes("t")}
    assert weights[goal.id] == weights[constraint.id] == weights[handoff.id] == 1.0
    assert weights[ctx.id] == weights[work.id] == weights[skill.id] == pytest.approx(0.95)
    assert weights[low.id] == pytest.approx(0.01)  # floor
    assert mnemos.get_node(other_task.id).weight == 1.0
    mnemos.decay("t", factor=0.5)
    assert mnemos.get_node(ctx.id).weight == pytest.approx(0.475)
    with pytest.raises(InvalidInputError):
        mnemos.decay("t", factor=1.0)


def test_compress_and_evict(mnemos: Mnemos) -> None:
    text = "word " * 80
    result = mnemos.add_node("t", "result", text)
    compressed = mnemos.compress(result.id)
    assert compressed.status == "compressed"
    assert compressed.content == ""
    assert compressed.summary is not None
    assert compressed.summary.endswith("...")
    assert len(compressed.summary) <= 203
    with pytest.raises(InvalidInputError, match="not active"):
        mnemos.compress(result.id)
    ctx = mnemos.add_node("t", "context", "raw tool output", summary="tool output")
    evicted = mnemos.evict(ctx.id)
    assert evicted.status == "evicted"
    assert evicted.content == ""
    assert evicted.summary is None
    goal = mnemos.add_node("t", "goal", "g")
    with pytest.raises(InvalidInputError, match="never"):
        mnemos.evict(goal.id)
    with pytest.raises(InvalidInputError, match="never"):
        mnemos.compress(goal.id)
    short = mnemos.add_node("t", "working", "short note")
    assert mnemos.compress(short.id, summary="kept").summary == "kept"


def test_consolidation_compresses_three_oldest_results(mnemos: Mnemos) -> None:
    results = [mnemos.add_node("t", "result", f"result {i}") for i in range(5)]
    outcome = mnemos.consolidate("t")
    assert outcome.compressed == 3
    assert outcome.compressed_ids == tuple(r.id for r in results[:3])
    statuses = {n.id: n.status for n in mnemos.nodes("t", status="all")}
    assert [statuses[r.id] for r in results] == ["compressed"] * 3 + ["active"] * 2
    assert mnemos.consolidate("t").compressed == 2


def test_consolidation_evicts_the_coldest_eligible_context(mnemos: Mnemos) -> None:
    warm = mnemos.add_node("t", "context", "warm")
    cold = mnemos.add_node("t", "context", "cold")
    colder_but_used = mnemos.add_node("t", "context", "used")
    hot = mnemos.add_node("t", "context", "hot")
    _set_weight(mnemos, warm.id, 0.15)
    _set_weight(mnemos, cold.id, 0.05)
    _set_weight(mnemos, colder_but_used.id, 0.01, accesses=3)
    _set_weight(mnemos, hot.id, 0.5)
    first = mnemos.consolidate("t")
    assert first.evicted_ids == (cold.id,)  # not the warmest eligible one (reference bug)
    second = mnemos.consolidate("t")
    assert second.evicted_ids == (warm.id,)
    third = mnemos.consolidate("t")
    assert third.evicted == 0  # the rest is either used 3 times or too warm
    assert mnemos.get_node(colder_but_used.id).status == "active"


def test_consolidation_spares_context_in_the_current_scope(mnemos: Mnemos) -> None:
    in_scope = mnemos.add_node("t", "context", "auth", paths=["src/auth/a.py"])
    elsewhere = mnemos.add_node("t", "context", "docs", paths=["docs/guide/x.md"])
    untagged = mnemos.add_node("t", "context", "note")
    _set_weight(mnemos, in_scope.id, 0.01)
    _set_weight(mnemos, elsewhere.id, 0.1)
    _set_weight(mnemos, untagged.id, 0.15)
    assert mnemos.consolidate("t", scope=["src", "auth"]).evicted_ids == (elsewhere.id,)
    assert mnemos.consolidate("t", scope=["src", "auth"]).evicted_ids == (untagged.id,)
    assert mnemos.consolidate("t", scope=["src", "auth"]).evicted == 0
    # without an explicit scope, recent tool calls give it
    mnemos.record_tool_call("t", "read_file", {"path": "src/auth/b.py"}, call_id="c1")
    assert mnemos.consolidate("t").evicted == 0
    assert mnemos.consolidate("t", scope=[]).evicted_ids == (in_scope.id,)


def test_consolidation_decays_the_rest_and_returns_counts(mnemos: Mnemos) -> None:
    mnemos.add_node("t", "goal", "g")
    ctx = mnemos.add_node("t", "context", "c")
    mnemos.add_node("t", "working", "w")
    mnemos.add_node("t", "result", "r")
    outcome = mnemos.consolidate("t")
    # the result got compressed, so only context + working decay
    assert (outcome.compressed, outcome.evicted, outcome.decayed) == (1, 0, 2)
    assert mnemos.get_node(ctx.id).weight == pytest.approx(0.95)


def test_links_are_idempotent_and_validated(mnemos: Mnemos) -> None:
    a = mnemos.add_node("t", "goal", "a")
    b = mnemos.add_node("t", "constraint", "b")
    mnemos.link(b.id, a.id, "depends_on")
    mnemos.link(b.id, a.id, "depends_on")
    assert mnemos.get_node(b.id).links == (a.id,)
    with pytest.raises(InvalidInputError):
        mnemos.link(a.id, a.id)
    with pytest.raises(InvalidInputError):
        mnemos.link(a.id, b.id, "friends")


def test_status_and_tasks(mnemos: Mnemos) -> None:
    mnemos.add_node("a", "goal", "g")
    mnemos.add_node("b", "result", "r")
    assert mnemos.tasks() == ["a", "b"]
    overview = {o.task_id: o for o in mnemos.status()}
    assert overview["a"].nodes.by_type == {"goal": 1}
    assert overview["b"].checkpoints == 0
    assert overview["b"].last_fatigue is None
