"""The native provider's batch scoring gives what its row-by-row scoring gives, bit for bit.

A search scores its candidates in batches (:meth:`HybridScorer.score_many`, array operations)
while :meth:`HybridScorer.__call__` keeps the row-by-row definition: these tests compare the
two on random corpora (repeated terms, rows holding many query terms, empty rows, leading
terms, rows with and without vectors), with exact float equality, and the array-based picks of
the best rows with their plain-Python definitions (ties included).
"""

from __future__ import annotations

import heapq
import random

import numpy as np
import pytest

from langgraph_mnemon.adapters.providers.mnemos._ranking import (
    Cosines,
    HybridScorer,
    HybridWeights,
    VectorCache,
    apply_feedback,
    neighbour_candidates,
    ranked_seqs,
)

_WORDS = [f"w{i}" for i in range(40)]


class _Vectors:
    """A :class:`VectorSource` over vectors held in a dict (the cache's reads)."""

    def __init__(self, vectors: dict[int, np.ndarray]) -> None:
        self.vectors = vectors

    def after(self, seq: int) -> tuple[list[tuple[int, bytes]], tuple[int, int]]:
        rows = [(s, v.tobytes()) for s, v in self.vectors.items() if s > seq]
        return rows, (len(self.vectors), sum(self.vectors))

    def seqs(self) -> list[int]:
        return list(self.vectors)

    def rows(self, seqs: list[int]) -> list[tuple[int, bytes]]:
        return [(s, self.vectors[s].tobytes()) for s in seqs if s in self.vectors]


def _corpus(rng: random.Random, rows: int) -> dict[int, str]:
    texts = {}
    for seq in range(1, rows + 1):
        length = rng.choice([0, 1, 3, 8, 20, 40])
        # A small vocabulary: rows repeat terms and hold many of the query's.
        texts[seq] = " ".join(rng.choice(_WORDS[:15]) for _ in range(length))
    texts[rows + 1] = " w1 w2 w3"  # a leading space: no leading term
    return texts


def _scorer(
    rng: random.Random, texts: dict[int, str], dense: str, parsed: dict
) -> tuple[HybridScorer, list[str]]:
    terms = rng.sample(_WORDS[:20], rng.randint(1, 9))
    df = {t: rng.randint(1, 30) for t in terms if rng.random() < 0.85}
    weights = HybridWeights(lead=rng.choice([0.0, 0.2]))
    query = np.asarray([rng.gauss(0, 1) for _ in range(32)], dtype=np.float32)
    query /= np.linalg.norm(query)
    cache: VectorCache | Cosines | None = None
    pool: dict[int, float] = {}
    if dense == "cache":
        vectors = {}
        for seq in texts:
            if rng.random() < 0.8:  # some rows have no vector
                vec = np.asarray([rng.gauss(0, 1) for _ in range(32)], dtype=np.float32)
                vectors[seq] = vec / np.linalg.norm(vec)
        cache = VectorCache("m", 32)
        cache.refresh(1, _Vectors(vectors))
        pool = cache.top(query, 5)
    elif dense == "database":
        cache = Cosines({s: rng.uniform(-0.2, 0.9) for s in texts if rng.random() < 0.7})
        pool = {s: v for s, v in list(cache.values.items())[:4]}
    scorer = HybridScorer(
        terms, df, (60, 700), weights, (0.1, 0.8), (cache, pool, query), parsed=parsed
    )
    return scorer, terms


@pytest.mark.parametrize("dense", ["none", "cache", "database"])
def test_score_many_is_the_row_by_row_score_bit_for_bit(dense: str) -> None:
    rng = random.Random(f"batch-{dense}")
    parsed: dict = {}  # shared by every scorer, as a provider shares its parsed rows
    for _ in range(60):
        texts = _corpus(rng, rng.randint(1, 40))
        scorer, _ = _scorer(rng, texts, dense, parsed)
        seqs = list(texts)
        final, lexical, semantic = scorer.score_many(seqs, list(texts.values()))
        for i, seq in enumerate(seqs):
            assert (final[i], lexical[i], semantic[i]) == scorer(seq, texts[seq])
        assert scorer.lexical_many(list(texts.values())).tolist() == lexical.tolist()


def test_lexical_rows_counts_terms_in_order_of_first_appearance() -> None:
    # Three or more hits are summed in the row's order: the batch must add them the same way.
    parsed: dict = {}
    scorer = HybridScorer(
        ["b", "a", "c", "d"],
        {"a": 3, "b": 7, "c": 1, "d": 2},
        (10, 60),
        HybridWeights(),
        (0.0, 1.0),
        (None, {}, None),
        parsed=parsed,
    )
    texts = ["c a a d b", "d d c b a", "", "a", "x y z"]
    rows = scorer.rows(texts)
    assert scorer.lexical_rows(rows).tolist() == [scorer.lexical(t) for t in texts]
    assert scorer.lexical_rows(rows)[2:].tolist()[0] == 0.0


def test_score_many_of_nothing() -> None:
    scorer = HybridScorer(["a"], {"a": 1}, (1, 1), HybridWeights(), (0.0, 1.0), (None, {}, None))
    assert [p.size for p in scorer.score_many([], [])] == [0, 0, 0]
    assert scorer.lexical_many([]).size == 0


def test_neighbour_candidates_break_ties_by_the_newer_row() -> None:
    rng = random.Random("ties")
    for _ in range(200):
        base = {rng.randint(1, 500): (rng.choice([0.0, 0.1, 0.2, 0.5]), 0.0, 0.0)}
        for _ in range(rng.randint(0, 60)):
            base[rng.randint(1, 500)] = (rng.choice([0.0, 0.1, 0.2, 0.5]), 0.0, 0.0)
        top = rng.randint(1, 30)
        expected = heapq.nsmallest(top, base, key=lambda s: (-base[s][0], -s))
        assert neighbour_candidates(base, top) == expected
        # Whatever order the database returned the rows in.
        shuffled = dict(rng.sample(list(base.items()), len(base)))
        assert neighbour_candidates(shuffled, top) == expected


def test_ranked_seqs_order_and_fill() -> None:
    rng = random.Random("ranked")
    for _ in range(200):
        final = {s: rng.choice([0.0, 0.0, 0.3, 0.3, 0.7, rng.random()]) for s in range(40)}
        limit = rng.randint(1, 45)
        fill = {s: rng.random() for s in rng.sample(range(40), 10)}
        ranked = sorted((s for s in final if final[s] > 0), key=lambda s: (-final[s], -s))
        ranked = ranked[:limit]
        if len(ranked) < limit:
            rest = (s for s in fill if s in final and final[s] <= 0)
            ranked += sorted(rest, key=lambda s: (-fill[s], -s))[: limit - len(ranked)]
        assert ranked_seqs(final, limit, fill) == ranked


def test_apply_feedback_lifts_scored_rows_only() -> None:
    final = {4: 0.5, 9: 0.0, 2: 0.95}
    apply_feedback(final, lambda at: np.array([0.5, 1.0])[: at.size], 0.1)
    # Not capped at 1: the lift orders the rows (a returned score is capped, not the order).
    assert final == pytest.approx({4: 0.55, 9: 0.0, 2: 1.05})
