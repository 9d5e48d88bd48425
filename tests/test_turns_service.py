"""The Turns service on its own: one registry of live turns, begin / end, Wake and cue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import NotFoundError
from langgraph_mnemon.memory_layers.activity import TurnActivity
from langgraph_mnemon.memory_layers.turns import (
    OFFER_CHANNELS,
    OFFERS,
    SpacesSearchInput,
    TurnFacts,
    Turns,
    TurnScope,
    offer,
)


class Reviews:
    def __init__(self) -> None:
        self.started: list[str] = []
        self.finished: list[tuple[str, int, TurnActivity]] = []

    def turn_started(self, thread_id: str) -> None:
        self.started.append(thread_id)

    def turn_finished(self, thread_id: str, messages: list[Any], turn: TurnActivity) -> None:
        self.finished.append((thread_id, len(messages), turn))


def _turns(mem: Mnemon, reviews: Reviews) -> Turns:
    return Turns(mem.config, kernel=mem.kernel, runtime=mem.runtime, documents=mem.documents,
                 spaces=lambda: mem.spaces, reviews=reviews)  # fmt: skip


def test_begin_pins_once_and_end_releases_everything(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path / "root", workspace=tmp_path) as mem:
        mem.runtime.add("user", "Prefers tea.")
        reviews = Reviews()
        turns = _turns(mem, reviews)
        start = turns.begin(TurnScope(thread_id="t1"), TurnFacts(new_thread=True))
        assert start.wake is not None
        assert "Prefers tea." in start.wake.text
        assert start.cue is not None
        assert turns.pinned(start.turn_id) is start.view
        assert turns.retrieval(start.turn_id).view_id == start.view.id
        assert turns.live_turns == [start.turn_id]
        assert reviews.started == ["t1"]
        facts = TurnFacts(last_wake_digest=start.view.wake_digest, cued=True)
        again = turns.begin(TurnScope(thread_id="t1"), facts)
        assert (again.wake, again.cue) == (None, None)
        turns.end(start.turn_id, TurnActivity(user_text="hi"), transcript=["m"])
        assert reviews.finished[0][:2] == ("t1", 1)
        with pytest.raises(NotFoundError):
            turns.pinned(start.turn_id)
        with pytest.raises(NotFoundError):
            turns.retrieval(start.turn_id)
        turns.end(again.turn_id)
        turns.end("gone")  # a turn of a restarted process: nothing to release
        assert turns.live_turns == []
        assert len(turns.budgets) == 0


def test_child_pins_the_retained_view_with_its_own_budgets(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path / "root", workspace=tmp_path) as mem:
        reviews = Reviews()
        turns = _turns(mem, reviews)
        parent = turns.begin(TurnScope(thread_id="p"))
        kept = turns.retain(parent.view)
        turns.end(parent.turn_id)
        child = turns.begin(TurnScope(thread_id="c", agent_id="kid", root=False), retained=kept)
        assert child.view is parent.view
        assert child.cue is None
        assert turns.retrieval(child.turn_id) is not turns.budgets.begin(
            "other", child.view.grants.space_ids, view_id=child.view.id
        )
        assert reviews.started == ["p"]
        turns.end(child.turn_id)
        assert turns.unretain(kept) == 0


def test_a_failing_begin_leaves_nothing_pinned(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path / "root", workspace=tmp_path) as mem:
        turns = _turns(mem, Reviews())
        with pytest.raises(NotFoundError):
            turns.begin(TurnScope(thread_id="t"), retained="view-missing")

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("boom")

        turns.budgets.begin = broken  # type: ignore[method-assign]
        with pytest.raises(RuntimeError):
            turns.begin(TurnScope(thread_id="t"))
        assert turns.live_turns == []


def test_the_offers_table_derives_channels_and_inputs() -> None:
    assert offer("memory-spaces/search").input is SpacesSearchInput
    assert offer("memory-spaces/recall") is offer("memory-spaces/search")
    assert {o.id for o in OFFERS} | {"memory-spaces/recall"} == set(OFFER_CHANNELS)
    assert all(OFFER_CHANNELS[o.id] == o.admitted_on for o in OFFERS)
    with pytest.raises(NotFoundError):
        offer("nope")
