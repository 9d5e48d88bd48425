"""Depth on request (issue 34, part 1).

``mem.spaces.search(limit=k)`` is not the model's envelope: it returns k ranked rows whenever
the spaces hold k (smart mode ranks every row with a vector), each with its normalised score
and quality tier, and cuts nothing unless the caller names a policy. The envelope (turn
recall, a view's search tool, the query graph, the write worker's recall) passes
``spaces.envelope_policy``, the configured cut (``strict-v1`` by default).

Real hosts on a SQLite file and on PostgreSQL, with the default offline embedder.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import InvalidInputError
from tests.spaces_support import keyword_host

CAT = "The cat sat on the warm windowsill all afternoon."
PARAPHRASE = "kitten resting near the window"
FILLER = [
    f"{subject} {verb} the {thing} on {day}."
    for subject, verb, thing, day in [
        ("Dana", "moved", "budget review", "Monday"),
        ("The team", "shipped", "nightly backup", "Tuesday"),
        ("Priya", "booked", "train tickets", "Wednesday"),
        ("Our landlord", "fixed", "kitchen tap", "Thursday"),
        ("Marco", "painted", "garden fence", "Friday"),
        ("The bakery", "baked", "rye bread", "Saturday"),
        ("Lena", "tuned", "old piano", "Sunday"),
        ("The server", "rotated", "log files", "midnight"),
        ("Sam", "returned", "library novel", "the weekend"),
        ("Alex", "renewed", "gym membership", "payday"),
        ("The council", "approved", "bike lanes", "election day"),
        ("Grandma", "knitted", "wool scarf", "her birthday"),
        ("The printer", "jammed", "invoice batch", "deadline day"),
        ("Omar", "planted", "tomato seedlings", "spring break"),
        ("The museum", "opened", "fossil wing", "new year"),
        ("Kim", "cancelled", "dentist visit", "short notice"),
        ("The choir", "rehearsed", "winter concert", "late evening"),
        ("Ravi", "upgraded", "laptop memory", "lunch break"),
        ("The river", "flooded", "footpath", "stormy night"),
        ("Jo", "sorted", "tax receipts", "rainy afternoon"),
        ("The cafe", "changed", "coffee beans", "last month"),
        ("Nina", "learned", "guitar chords", "summer camp"),
        ("The bus", "skipped", "station stop", "holiday schedule"),
        ("Theo", "wrote", "quarterly report", "Friday night"),
    ]
]


@pytest.fixture
def mem(database_url: str, tmp_path: Path) -> Iterator[Mnemon]:
    """A host on embedded defaults (the offline embedder) with its spaces on ``database_url``."""
    host = Mnemon.open(tmp_path / "m", database_url=database_url, chroma={"enabled": False})
    try:
        host.spaces.create_space("Notes", space_id="notes")
        receipts = host.spaces.remember_many(
            [{"content": text} for text in [CAT, *FILLER]], space_id="notes"
        )
        assert all(r.committed for r in receipts)
        yield host
    finally:
        host.close()


def test_search_fills_the_depth_asked(mem: Mnemon) -> None:
    held = 1 + len(FILLER)
    for limit in (5, 10, 20):
        found = mem.spaces.search("Who fixed the kitchen tap?", limit=limit, space_ids=["notes"])
        assert len(found.results) == limit
        assert found.policy_id == "exhaustive-v1"
        for row in found.results:
            assert row.relevance_tier in ("high", "medium", "low", "unknown")
            assert row.normalized_score is None or 0.0 <= row.normalized_score <= 1.0
        assert found.results[0].content.startswith("Our landlord fixed")
    every = mem.spaces.search("Who fixed the kitchen tap?", limit=50, space_ids=["notes"])
    assert len(every.results) == held
    assert len({r.id for r in every.results}) == held
    # Scores never rise down the ranking.
    scores = [r.score or 0.0 for r in every.results]
    assert scores == sorted(scores, reverse=True)


def test_the_envelope_policy_still_cuts(mem: Mnemon) -> None:
    deep = mem.spaces.search("Who fixed the kitchen tap?", limit=10, space_ids=["notes"])
    cut = mem.spaces.search(
        "Who fixed the kitchen tap?",
        limit=10,
        space_ids=["notes"],
        policy=mem.spaces.envelope_policy,
    )
    assert mem.spaces.envelope_policy == "strict-v1"
    assert cut.policy_id == "strict-v1"
    assert len(cut.results) < len(deep.results) == 10
    assert all(r.relevance_tier != "low" for r in cut.results)
    # The cut keeps the head of the deep ranking, in its order.
    assert [r.id for r in cut.results] == [r.id for r in deep.results[: len(cut.results)]]


def test_a_paraphrase_is_found_offline(mem: Mnemon) -> None:
    found = mem.spaces.search(PARAPHRASE, limit=5, space_ids=["notes"])
    assert CAT in [r.content for r in found.results]
    row = next(r for r in found.results if r.content == CAT)
    assert row.matched_via == "semantic"


def test_keyword_mode_returns_only_matching_rows(mem: Mnemon) -> None:
    found = mem.spaces.search("kitchen tap", limit=20, mode="keyword", space_ids=["notes"])
    assert [r.content for r in found.results] == [FILLER[3]]


def test_bad_depth_requests_are_refused(mem: Mnemon) -> None:
    for limit in (0, 51, -1):
        with pytest.raises(InvalidInputError, match="limit"):
            mem.spaces.search("tap", limit=limit)
    with pytest.raises(InvalidInputError, match="policy"):
        mem.spaces.search("tap", policy="loose-v9")


def test_the_envelope_policy_is_the_configured_one(tmp_path: Path) -> None:
    host = Mnemon.open(
        tmp_path / "b",
        recall_quality={"policy": "balanced-v1"},
        chroma={"enabled": False},
        embedding={"enabled": False},
    )
    try:
        assert host.spaces.envelope_policy == "balanced-v1"
        # A plain search still cuts nothing.
        host.spaces.create_space("Notes", space_id="notes")
        host.spaces.remember_many([{"content": t} for t in FILLER], space_id="notes")
        assert host.spaces.search("kitchen tap", space_ids=["notes"]).policy_id == ("exhaustive-v1")
    finally:
        host.close()


TALK = [
    "Caroline: I repaired the old bicycle chain this weekend.",
    "Melanie: We celebrated my daughter's birthday with a concert last night!",
    "Caroline: Wow, who played?",
    "Melanie: It was Matt Patterson, he is so talented.",
    "Caroline: My sister adopted a grey rabbit.",
    "Melanie: The museum trip with the kids was fun.",
]


@pytest.fixture
def talk(database_url: str, tmp_path: Path) -> Iterator[Mnemon]:
    """A chat, one memory per turn, keyword-only (the lift comes from the neighbours)."""
    with keyword_host(tmp_path / "t", database_url, TALK) as host:
        yield host


def test_the_reply_beside_a_matching_turn_is_ranked(talk: Mnemon) -> None:
    question = "Who performed at the concert for the daughter's birthday?"
    found = talk.spaces.search(question, limit=4, space_ids=["chat"])
    contents = [r.content for r in found.results]
    assert contents[0] == TALK[1]
    assert TALK[2] in contents  # the turns either side of it
    assert TALK[0] in contents
    beside = [r for r in found.results if r.content in (TALK[0], TALK[2])]
    assert {r.matched_via for r in beside} == {"neighbour"}
    assert all(0 < (r.score or 0) < found.results[0].score for r in beside)  # type: ignore[operator]
    # A filtered search reads neighbours unfiltered, so none joins it.
    filtered = talk.spaces.search(question, limit=4, space_ids=["chat"], category="context")
    assert [r.content for r in filtered.results] == [TALK[1]]


def test_the_neighbour_lift_can_be_turned_off(talk: Mnemon) -> None:
    native = talk.spaces.provider("mnemos")
    native.weights = dataclasses.replace(native.weights, adjacent=0.0)  # type: ignore[attr-defined]
    found = talk.spaces.search("concert birthday", limit=4, space_ids=["chat"])
    assert [r.content for r in found.results] == [TALK[1]]
