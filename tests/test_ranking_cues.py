"""The conversation cues of native smart search (issue 34): a row that asks is lowered, the row
written after it is lifted, and a query naming a date lifts the memories dated then.

Pure functions first (the date parser, the two lifts), then real hosts on a SQLite file and on
PostgreSQL (``database_url``), keyword-only so the cues, not an embedder, decide; each cue is
also turned off to show the order it changes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.providers.mnemos._cues import apply_cues, apply_dates
from langgraph_mnemon.adapters.providers.mnemos._dates import (
    DateMention,
    memory_date,
    named_date,
)
from langgraph_mnemon.adapters.providers.mnemos._ranking import HybridWeights
from tests.spaces_support import keyword_host

# ------------------------------------------------------------------ dates


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Ana cook in May 2023?", (2023, 5, None)),
        ("Where was Tim on 16 November, 2023?", (2023, 11, 16)),
        ("What did Joanna watch on February 7, 2022?", (2022, 2, 7)),
        ("What did we decide on 2024-03-05?", (2024, 3, 5)),
        ("What did she plan for March?", (None, 3, None)),
        ("Which trips did he take in 2021?", (2021, None, None)),
        ("What happened on the 3rd of Sept 2020?", (2020, 9, 3)),
    ],
)
def test_a_query_names_a_date(query: str, expected: tuple[int | None, ...]) -> None:
    assert named_date(query) == DateMention(*expected)


@pytest.mark.parametrize(
    "query",
    [
        "What may Ana cook?",  # the verb
        "When is May's birthday?",  # a name, no day or year beside it
        "Can you march with us?",  # lower case
        "What did Tim say at 5 pm?",
        "Room 12 and 45 chairs",
        "",
    ],
)
def test_a_query_without_a_date(query: str) -> None:
    assert named_date(query) is None


def test_a_memory_date_comes_from_its_metadata_then_from_when_it_was_written() -> None:
    assert memory_date({"date": "1:56 pm on 8 May, 2023"}, 0.0) == (2023, 5, 8)
    assert memory_date({"date": "2023-05-08T13:56:00Z"}, 0.0) == (2023, 5, 8)
    assert memory_date({"date": "May 8th, 2023"}, None) == (2023, 5, 8)
    written = datetime(2025, 2, 3, 10, tzinfo=UTC).timestamp()
    # Not a full date, not text, too long, no metadata: the day it was written.
    for metadata in ({"date": "May 2023"}, {"date": 20230508}, {"date": "8 May 2023 " * 40}, None):
        assert memory_date(metadata, written) == (2025, 2, 3)  # type: ignore[arg-type]
    assert memory_date({}, None) is None


def test_a_mention_agrees_with_the_parts_it_names() -> None:
    assert DateMention(2023, 5, None).agrees((2023, 5, 30))
    assert not DateMention(2023, 5, None).agrees((2024, 5, 30))
    assert DateMention(None, 11, 16).agrees((1999, 11, 16))
    assert not DateMention(None, 11, 16).agrees((1999, 11, 17))
    assert not DateMention(2023, None, None).agrees(None)


# ------------------------------------------------------------------ the lifts


def test_a_question_is_lowered_and_the_row_after_it_lifted() -> None:
    weights = HybridWeights(question=0.5, reply=0.5)
    final = {3: 0.2, 4: 0.9, 5: 0.5, 6: 0.4}
    apply_cues(final, {4: (3, 5), 6: (5, 7)}, {4, 7}, weights)
    # 4 asks: halved; 5 follows it: + 0.5 × 0.9; 7 asks but scored nothing, 6 is before it.
    assert final == pytest.approx({3: 0.2, 4: 0.45, 5: 0.95, 6: 0.4})
    # The previous row of a listed row counts too (the listed row is the answer).
    final = {4: 0.9, 5: 0.1}
    apply_cues(final, {5: (4, 6)}, {4}, weights)
    assert final == pytest.approx({4: 0.45, 5: 0.55})


def test_the_cues_are_off_at_zero() -> None:
    final = {4: 0.9, 5: 0.5}
    apply_cues(final, {4: (3, 5)}, {4}, HybridWeights(question=0.0, reply=0.0))
    assert final == {4: 0.9, 5: 0.5}


def test_rows_dated_as_the_query_names_gain_a_share_of_the_best_score() -> None:
    final = {1: 0.8, 2: 0.5, 3: 0.4}
    apply_dates(final, {2: (2023, 5, 8), 3: (2022, 5, 8)}, DateMention(2023, 5, None), 0.5)
    assert final == pytest.approx({1: 0.8, 2: 0.9, 3: 0.4})


# ------------------------------------------------------------------ on real hosts

CHAT = [
    "Ana: I finally fixed the leaking kitchen tap this morning.",
    "Tim: How long have you been playing the piano, by the way?",
    "Ana: About four months now, and I practise the piano every evening.",
    "Tim: My brother bought a second-hand bicycle.",
    "Ana: The bakery near the station closed for the summer.",
    "Tim: We are painting the garden fence on Sunday.",
]


@pytest.fixture
def host(database_url: str, tmp_path: Path) -> Iterator[Mnemon]:
    """A keyword-only host (the cues decide, not an embedder) on ``database_url``."""
    with keyword_host(tmp_path / "m", database_url, []) as mem:
        yield mem


def _weights(mem: Mnemon, **changes: float) -> None:
    native = mem.spaces.provider("mnemos")
    native.weights = dataclasses.replace(native.weights, **changes)  # type: ignore[attr-defined]


def _order(mem: Mnemon, query: str, space: str = "chat") -> list[str]:
    found = mem.spaces.search(query, limit=6, space_ids=[space])
    scores = [r.score or 0.0 for r in found.results]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    return [r.content for r in found.results]


def test_the_answer_outranks_the_question_it_answers(host: Mnemon) -> None:
    host.spaces.remember_many([{"content": t} for t in CHAT], space_id="chat")
    query = "How long has Ana been playing the piano?"
    order = _order(host, query)
    assert order.index(CHAT[2]) < order.index(CHAT[1])
    # A native-only search with no cut keeps this order: no coverage re-sort, no second pass.
    deep = host.spaces.search(query, limit=6, space_ids=["chat"])
    assert deep.recovery is not None
    assert deep.recovery.ran is False
    _weights(host, question=0.0, reply=0.0)
    order = _order(host, query)
    assert order.index(CHAT[1]) < order.index(CHAT[2])  # without the cues, the question leads


def test_a_named_date_lifts_the_memories_dated_then(host: Mnemon) -> None:
    dated = [
        ("Ana cooked a lentil soup for the neighbours.", "1:56 pm on 8 May, 2023"),
        ("Ana cooked a mushroom risotto for the neighbours.", "2024-01-12"),
        ("Ana cooked a pumpkin curry for the neighbours.", "3 March, 2022"),
    ]
    host.spaces.remember_many(
        [{"content": text, "metadata": {"date": day}} for text, day in dated], space_id="chat"
    )
    assert _order(host, "What did Ana cook for the neighbours in May 2023?")[0] == dated[0][0]
    assert _order(host, "What did Ana cook for the neighbours in January 2024?")[0] == dated[1][0]
    assert (
        _order(host, "What did Ana cook for the neighbours on 3 March, 2022?")[0] == (dated[2][0])
    )
    _weights(host, dated=0.0)
    # Without the cue the query's date changes nothing: the same order for every date.
    assert _order(host, "What did Ana cook for the neighbours in May 2023?") == _order(
        host, "What did Ana cook for the neighbours in January 2024?"
    )


def test_a_memory_without_a_date_is_dated_when_it_was_written(host: Mnemon) -> None:
    host.spaces.remember_many(
        [
            {
                "content": "Ana baked rye bread with the children.",
                "metadata": {"date": "2019-03-01"},
            },
            {"content": "Ana baked rye bread with the neighbours."},
        ],
        space_id="chat",
    )
    today = datetime.now(UTC)
    now_query = f"What did Ana bake in {today:%B} {today.year}?"
    assert _order(host, now_query)[0] == "Ana baked rye bread with the neighbours."
    then_query = "What did Ana bake in March 2019?"
    assert _order(host, then_query)[0] == "Ana baked rye bread with the children."


def test_odd_dates_in_metadata_never_fail_a_search(host: Mnemon) -> None:
    odd = [{"date": 5}, {"date": True}, {"date": "not a date"}, {"date": "8 May 2023 " * 90}]
    host.spaces.remember_many(
        [{"content": f"Ana walked the dog, note {i}.", "metadata": m} for i, m in enumerate(odd)],
        space_id="chat",
    )
    assert len(_order(host, "Where did Ana walk the dog in May 2023?")) == len(odd)
