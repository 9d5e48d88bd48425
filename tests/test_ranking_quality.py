"""Ranking quality mechanisms of the native provider, on small synthetic corpora.

The lead-term boost (``HybridWeights.lead``): a row whose first analysed term is a query term
(the speaker of a ``"Name: …"`` chat turn, the subject of a sentence) is lifted, so a question
about a person prefers what that person said. Pseudo-relevance feedback (``HybridWeights.prf``):
the rare words of the best rows form an expansion query that re-orders the candidates. Real
SQLite files, real provider, real embedder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_mnemon.adapters.embeddings import HashingEmbedder
from langgraph_mnemon.adapters.providers.mnemos import HybridWeights, MnemosProvider
from langgraph_mnemon.adapters.providers.mnemos._ranking import (
    HybridScorer,
    expansion_terms,
    feedback_candidates,
)
from langgraph_mnemon.memory_layers.spaces import (
    ProviderSearchRequest,
    RememberItem,
    SpaceBinding,
)
from tests.spaces_support import sqlite_database

SPACE = SpaceBinding(id="chat", name="Chat")

# A two-person chat: Bob's line shares one more word with the question than Alice's, so plain
# BM25 prefers it although the question is about Alice.
_CHAT = [
    "Alice: good morning, how was the weekend?",
    "Bob: quiet, I repaired the bicycle and cooked pasta",
    "Alice: I love hiking in the mountains",
    "Alice: the weather forecast says rain on Sunday",
    "Bob: my sister bought a new camera for the summer trip",
    "Bob: I love hiking in summer",
    "Alice: we should plan a concert evening soon",
    "Bob: the museum opens a painting exhibition in May",
]


def _provider(tmp_path: Path, weights: HybridWeights, embedder: object = None) -> MnemosProvider:
    provider = MnemosProvider(sqlite_database(tmp_path), embedder=embedder, weights=weights)
    provider.remember_many(SPACE, [RememberItem(content=text) for text in _CHAT])
    return provider


def _search(provider: MnemosProvider, query: str, mode: str = "keyword") -> list[tuple[str, float]]:
    request = ProviderSearchRequest(query=query, mode=mode, limit=10)
    vector = provider._embed_query(query) if mode == "smart" and provider.embedder else None
    found = provider._search_rows(SPACE, request, vector)
    return [(r.content, float(r.score or 0.0)) for r in found.results]


@pytest.mark.parametrize("mode", ["keyword", "smart"])
def test_a_question_naming_a_speaker_prefers_that_speakers_turn(tmp_path: Path, mode: str) -> None:
    query = "Where does Alice love hiking in summer?"
    # Feedback off in both: this test isolates the lead boost (on eight rows the feedback
    # terms of the best rows are the two hiking lines' own words).
    off = _provider(tmp_path / "off", HybridWeights(lead=0.0, prf=0.0), HashingEmbedder())
    on = _provider(tmp_path / "on", HybridWeights(prf=0.0), HashingEmbedder())
    # Without the boost Bob's line (one more shared word) comes first ...
    assert _search(off, query, mode)[0][0] == "Bob: I love hiking in summer"
    # ... with it, the named speaker's own turn does.
    assert _search(on, query, mode)[0][0] == "Alice: I love hiking in the mountains"
    off.db.dispose()
    on.db.dispose()


def test_the_boost_leaves_queries_without_a_leading_term_unchanged(tmp_path: Path) -> None:
    off = _provider(tmp_path / "off", HybridWeights(lead=0.0))
    on = _provider(tmp_path / "on", HybridWeights())
    query = "museum painting exhibition"
    assert _search(on, query) == _search(off, query)
    off.db.dispose()
    on.db.dispose()


def test_scores_stay_in_0_1_and_are_monotone_in_the_boost(tmp_path: Path) -> None:
    provider = _provider(tmp_path, HybridWeights(lead=0.9), HashingEmbedder())
    ranked = _search(provider, "Bob love hiking mountains summer camera", "smart")
    assert ranked, "the query matches rows"
    assert all(0.0 <= score <= 1.0 for _, score in ranked)
    assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
    provider.db.dispose()


def test_the_scorer_adds_the_lead_share_only_for_a_matching_first_term() -> None:
    df = {"alic": 4, "hike": 2, "bob": 4}
    weights = HybridWeights(lead=0.2)
    scorer = HybridScorer(["alic", "hike"], df, (8, 40), weights, (0.0, 1.0), (None, {}, None))
    plain = HybridScorer(
        ["alic", "hike"], df, (8, 40), HybridWeights(lead=0.0), (0.0, 1.0), (None, {}, None)
    )
    led, lexical, _ = scorer(1, "alic love hike mountain")
    assert led == pytest.approx(min(1.0, lexical + 0.2))
    # "alic" present but not first: no lead share, same as without the boost.
    assert scorer(2, "bob told alic hike")[0] == pytest.approx(plain(2, "bob told alic hike")[0])
    # A row that matches nothing stays at 0 even when its first term would match nothing.
    assert scorer(3, "museum paint")[0] == 0.0


# A pet story: the query word "puppy" is in the story's first line and in an unrelated remark;
# only the story shares its rarer words (beagle, Biscuit, harbour) with other rows.
_STORY = [
    "we adopted a puppy from the harbour shelter, a tiny beagle called Biscuit",
    "the weather is cold and grey today",
    "Biscuit the beagle sleeps all afternoon by the harbour wall",
    "I cooked pasta with tomatoes for dinner",
    "my neighbour says a puppy is too much work",
    "the train to the city was late again",
    "we watched a film about the moon landing",
    "the harbour market sells fresh fish on Fridays",
]


def _story(tmp_path: Path, prf: float) -> list[tuple[str, float]]:
    weights = HybridWeights(prf=prf, neighbour=0.0)
    database = sqlite_database(tmp_path)
    provider = MnemosProvider(database, embedder=HashingEmbedder(), weights=weights)
    provider.remember_many(SPACE, [RememberItem(content=text) for text in _STORY])
    try:
        return _search(provider, "What do we know about the puppy?", "smart")
    finally:
        provider.db.dispose()


def test_feedback_prefers_the_candidate_that_shares_the_best_rows_rare_words(
    tmp_path: Path,
) -> None:
    off = _story(tmp_path / "off", 0.0)
    on = _story(tmp_path / "on", 0.3)
    # Without feedback the short remark (the query word in fewer words) comes first ...
    assert off[0][0] == _STORY[4]
    # ... with it, the story whose words other rows share does.
    assert on[0][0] == _STORY[0]
    # Feedback re-orders the candidates, it adds none, and scores stay in 0..1.
    assert {c for c, _ in on} == {c for c, _ in off}
    assert all(0.0 <= score <= 1.0 for _, score in on)


def test_expansion_terms_are_the_rare_shared_non_query_words() -> None:
    texts = ["alic adopt puppi beagl harbour", "bob puppi beagl harbour work"]
    assert feedback_candidates(texts, ["puppi"]) == [
        "alic",
        "adopt",
        "beagl",
        "harbour",
        "bob",
        "work",
    ]
    df = {"alic": 50, "adopt": 1, "beagl": 2, "harbour": 5, "bob": 50, "work": 100}
    # adopt: in one row of the space only; work: in every row; beagl rarer than harbour.
    assert expansion_terms(texts, df, 100, 10) == ["beagl", "harbour", "alic", "bob"]
    assert expansion_terms(texts, df, 100, 1) == ["beagl"]
    assert expansion_terms(texts, {}, 100, 10) == []
