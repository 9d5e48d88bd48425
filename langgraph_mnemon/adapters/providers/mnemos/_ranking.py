"""Scoring of the native provider: keyword (BM25), dense (cosine) and their hybrid blend.

Pure functions over numbers and analysed terms (no SQL, no I/O): the candidate rows come from
:mod:`._sql`, :mod:`._search` puts the two together.

The keyword score is BM25 with per-space document frequencies divided by the BM25 of an ideal
row that holds each query term once (capped at 1): the share of the query's information the
row carries. The smart score blends it with the cosine similarity, rescaled to 0..1 by the
embedder's ``similarity_range``, and adds a share of the best temporal neighbour's score.
The lifts after the blend (neighbours, feedback, the conversation cues) are not capped: rows
held at 1 used to tie at the top, where the newer row won. A returned score is at most 1
(:func:`._search.results`); the ranking keeps the uncapped order.

A row whose *leading* term (its first analysed term: the speaker of a chat turn written
``"Name: …"``, or the subject of a sentence such as ``"Alice prefers …"``) is one of the query's
terms gets ``HybridWeights.lead`` added: a question about a person is mostly answered by what
that person said, and BM25 alone gives a name that appears in half the rows almost no weight.

Pseudo-relevance feedback (``HybridWeights.prf``): the rarest terms of the best few rows that the
query does not contain (the words an answer tends to share with its neighbouring evidence) form
a second, expansion query; each candidate gains ``prf`` times its keyword score for it. Only
the document frequencies of those terms are read again (one statement), the candidates are the
ones already scored.

A search scores its candidates in batches (:meth:`HybridScorer.score_many`): the rows' terms
are kept once per process as integer arrays (a row table beside the parsed rows), and every
float operation of the row-by-row definition (:meth:`HybridScorer.__call__`) is done in the
same order, so both give the same bits (tests/test_ranking_batch.py).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Protocol

import numpy as np

from langgraph_mnemon.errors import ProviderError
from langgraph_mnemon.memory_layers.spaces import Embedder

__all__ = [
    "Cosines",
    "HybridScorer",
    "HybridWeights",
    "Score",
    "VectorCache",
    "VectorCaches",
    "VectorSource",
    "apply_adjacent",
    "apply_feedback",
    "apply_neighbour_boost",
    "expansion_terms",
    "feedback_candidates",
    "matched_via",
    "neighbour_candidates",
    "prune_terms",
    "ranked_seqs",
    "similarity_range",
    "unit_vector",
]

Score = tuple[float, float, float]
"""``(final, lexical, semantic)`` of one row, each in 0..1 (before the lifts of a search)."""


@dataclass(frozen=True)
class HybridWeights:
    """Scoring knobs of the native provider.

    ``k1``/``b`` are the BM25 parameters (memories are short, so length normalisation is
    weak). ``dense`` is the share of the dense similarity in the smart score (the keyword share
    is ``1 - dense``). ``unknown_term_weight`` is how much a query term that no row of the space
    contains counts in the ideal score. ``neighbour`` is the share of the best temporal
    neighbour's score added to a row in smart mode (a memory is often only meaningful next to
    the one written just before or after it), computed for the ``neighbour_top`` best rows;
    ``adjacent`` works the other way: a neighbour of one of those rows that was no candidate
    joins the ranking with its own score plus ``adjacent`` × that row's score × its keyword
    score, so the reply after a matching turn, which often shares no word with the question,
    is ranked (0 turns it off; only in a search without category or source filters:
    neighbours are read unfiltered).
    ``pool`` / ``dense_pool`` are the candidate pools taken from the keyword index and from the
    dense ranking; the keyword pool reads the postings of the rarest query terms up to
    ``posting_budget`` rows. The dense pool comes from an HNSW index in the database on
    PostgreSQL with pgvector, else from an exact scan of the space's vectors held in memory,
    whatever the space's size; a search asking for more rows than either pool gets that many
    from each (the dense pool fills its depth). ``lead`` is added to a matching row (any positive
    score) whose leading term is a query term (see the module docstring); 0 turns it off.
    ``prf`` is the weight of the pseudo-relevance feedback query (0 turns it off): the
    ``prf_terms`` rarest terms (summed idf, each seen in at least two rows) of the
    ``prf_docs`` best rows, scored like the query by BM25 and added in smart mode.
    ``question``, ``reply`` and ``dated`` are the shares of the conversation cues (:mod:`._cues`):
    a row that asks keeps ``1 - question`` of its score, the row right after one gains
    ``reply`` × its score, and a row dated as the query names gains ``dated`` × the best score
    (0 turns each off).
    Defaults were chosen on three LoCoMo-R conversations and checked on two others
    (bench/locomo.py); ``adjacent`` and ``dense`` were then set on the five dev conversations
    together with the paraphrase pairs of bench/paraphrases.py (neither from the questions'
    wording): the neighbour rows lift R@20, and a dense share of 0.15 keeps paraphrases in
    the top 5 without costing the adversarial questions. The cue shares were set on the three
    tune conversations (a grid, best R@5 + MRR) and checked on the two others; with the cues
    in place the feedback pass no longer paid for itself (tune split: R@5 equal, MRR +0.003;
    check split: MRR -0.004; 14 % of a search's time), so ``prf`` is 0 by default, and the
    pools were cut to 50 keyword and 20 dense rows (tune split, pools of 40-100 and 10-30:
    R@5 + MRR best at 50 and 20; fewer weak candidates, and a faster search).

    Example:
        >>> provider = MnemosProvider(db, weights=HybridWeights(dense=0.3, neighbour=0.0))
    """

    k1: float = 1.2
    b: float = 0.3
    dense: float = 0.15
    lead: float = 0.2
    prf: float = 0.0
    prf_docs: int = 3
    prf_terms: int = 10
    unknown_term_weight: float = 0.25
    neighbour: float = 0.2
    neighbour_top: int = 50
    question: float = 0.1
    reply: float = 0.4
    dated: float = 0.4
    adjacent: float = 0.5
    pool: int = 50
    dense_pool: int = 20
    posting_budget: int = 10_000


# ------------------------------------------------------------------ dense vectors


class VectorSource(Protocol):
    """Where a :class:`VectorCache` reads the stored vectors of one space and model
    (``._sql.SqlVectors``); each method is one statement."""

    def after(self, seq: int) -> tuple[Sequence[Any], tuple[int, int]]:
        """``(seq, float32 bytes)`` of every vector with a seq above ``seq``, and the
        ``(count, sum of seqs)`` of all stored vectors (one statement, one snapshot)."""
        ...

    def seqs(self) -> Sequence[int]:
        """The seqs of every stored vector."""
        ...

    def rows(self, seqs: Sequence[int]) -> Sequence[Any]:
        """``(seq, float32 bytes)`` of the vectors among ``seqs``."""
        ...


def _row_dots(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``row @ query`` for each row, as :meth:`VectorCache.similarity` computes one (a
    matrix-vector product may round differently in the last bit: the scores must not move).
    ``np.vecdot`` (NumPy 2) takes the same dot product per row in one call."""
    vecdot = getattr(np, "vecdot", None)
    if vecdot is not None and rows.dtype == query.dtype == np.float32:
        return vecdot(rows, query)
    return np.fromiter((float(r @ query) for r in rows), np.float64, rows.shape[0])


class VectorCache:
    """Vectors of one space (one model and dimension) held in memory, current at one space
    write version and brought up to date in place (see :meth:`refresh`).

    Rows live in a buffer that grows by doubling; a removed row is replaced by the last one,
    so an update costs the changed rows, never a copy of the whole space. Every read and
    update holds the cache's lock (another thread may refresh it while one searches).
    """

    def __init__(self, model: str, dim: int) -> None:
        self.model = model
        self.dim = dim
        self.version = -1
        self._buffer = np.zeros((0, dim), dtype=np.float32)
        self._seqs = np.zeros(0, dtype=np.int64)
        self.size = 0
        self.seq_sum = 0
        self.max_seq = 0
        self.position: dict[int, int] = {}
        self.other: set[int] = set()  # stored seqs whose vector has another dimension
        self.rows_read = 0  # vectors read from the database (a test's measure of the updates)
        self._lock = threading.RLock()

    @property
    def matrix(self) -> np.ndarray:
        """The live vectors, one row per seq (a view; do not keep it across refreshes)."""
        return self._buffer[: self.size]

    @property
    def seqs(self) -> np.ndarray:
        """The seq of each row of :attr:`matrix`."""
        return self._seqs[: self.size]

    def refresh(self, version: int, source: VectorSource) -> None:
        """Bring the cache to the space's ``version``: read the vectors written after the
        newest seq held, then compare the count and seq sum with the database's; only on a
        difference (rows forgotten, or a lower seq committed late by another process) read the
        stored seqs and add or drop the rows that differ."""
        with self._lock:
            if version == self.version:
                return
            rows, summary = source.after(self.max_seq)
            self._add(rows)
            held = (self.size + len(self.other), self.seq_sum + sum(self.other))
            if summary != held:
                stored = set(source.seqs())
                for seq in [s for s in self.position if s not in stored]:
                    self._remove(seq)
                self.other &= stored
                missing = sorted(stored.difference(self.position, self.other))
                if missing:
                    self._add(source.rows(missing))
            self.version = version

    def _add(self, found: Sequence[Any]) -> None:
        self.rows_read += len(found)
        rows = []
        for row in found:
            seq = int(row[0])
            if seq in self.position or seq in self.other:
                continue
            if len(row[1]) == 4 * self.dim:
                rows.append(row)
            else:
                self.other.add(seq)
                self.max_seq = max(self.max_seq, seq)
        if not rows:
            return
        need = self.size + len(rows)
        if need > self._buffer.shape[0]:
            grown = max(need, 2 * self._buffer.shape[0], 64)
            buffer = np.zeros((grown, self.dim), dtype=np.float32)
            buffer[: self.size] = self._buffer[: self.size]
            seqs = np.zeros(grown, dtype=np.int64)
            seqs[: self.size] = self._seqs[: self.size]
            self._buffer, self._seqs = buffer, seqs
        block = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.float32)
        self._buffer[self.size : need] = block.reshape(len(rows), self.dim)
        for i, row in enumerate(rows, start=self.size):
            seq = int(row[0])
            self._seqs[i] = seq
            self.position[seq] = i
            self.seq_sum += seq
            self.max_seq = max(self.max_seq, seq)
        self.size = need

    def _remove(self, seq: int) -> None:
        i = self.position.pop(seq)
        last = self.size - 1
        if i != last:  # the last row fills the hole
            moved = int(self._seqs[last])
            self._buffer[i] = self._buffer[last]
            self._seqs[i] = moved
            self.position[moved] = i
        self.size = last
        self.seq_sum -= seq

    def top(self, query: np.ndarray, k: int) -> dict[int, float]:
        """The ``k`` most similar rows: ``{seq: cosine}`` (an exact scan)."""
        with self._lock:
            if not self.size:
                return {}
            sims = self.matrix @ query
            k = min(k, sims.shape[0])
            idx = np.argpartition(-sims, k - 1)[:k] if k < sims.shape[0] else np.arange(k)
            return {int(self._seqs[i]): float(sims[i]) for i in idx}

    def similarity(self, seq: int, query: np.ndarray) -> float:
        """Cosine of one row (0 when it has no vector)."""
        with self._lock:
            i = self.position.get(seq)
            return 0.0 if i is None else float(self._buffer[i] @ query)

    def similarities(self, seqs: Sequence[int], query: np.ndarray) -> np.ndarray:
        """:meth:`similarity` of each of ``seqs``, as one array (the same bits)."""
        with self._lock:
            n = len(seqs)
            at = np.fromiter(map(self.position.get, seqs, repeat(-1, n)), np.int64, n)
            out = np.zeros(n, dtype=np.float64)
            have = (at >= 0).nonzero()[0]
            if have.size:
                out[have] = _row_dots(self._buffer[at[have]], query)
            return out

    def cosines(self, seqs: np.ndarray, query: np.ndarray) -> np.ndarray:
        """Cosine of each of ``seqs`` (0 where a row has no vector)."""
        with self._lock:
            at = np.fromiter((self.position.get(int(s), -1) for s in seqs), np.int64, seqs.size)
            if not self.size:
                return np.zeros(seqs.size, dtype=np.float64)
            sims = self.matrix @ query
            return np.where(at >= 0, sims[np.maximum(at, 0)], 0.0)


class Cosines:
    """Cosines the database computed for one query (pgvector): the stand-in for a
    :class:`VectorCache` in :class:`HybridScorer`."""

    __slots__ = ("values",)

    def __init__(self, values: Mapping[int, float]) -> None:
        self.values = dict(values)

    def similarity(self, seq: int, query: np.ndarray | None) -> float:
        """Cosine of one row (0 when it has no vector of the model)."""
        return self.values.get(seq, 0.0)

    def similarities(self, seqs: Sequence[int], query: np.ndarray | None) -> np.ndarray:
        """Cosine of each of ``seqs`` (0 where a row has no vector of the model)."""
        get = self.values.get
        return np.fromiter((get(s, 0.0) for s in seqs), np.float64, len(seqs))


class VectorCaches:
    """One :class:`VectorCache` per space, model and dimension, shared by the threads of one
    provider."""

    def __init__(self) -> None:
        self._caches: dict[tuple[str, str, int], VectorCache] = {}
        self._lock = threading.Lock()

    def peek(self, space_id: str, model: str, dim: int) -> VectorCache | None:
        """The space's cache as it is (current or not), or None; reads nothing."""
        with self._lock:
            return self._caches.get((space_id, model, dim))

    def get(
        self, space_id: str, version: int, model: str, dim: int, source: VectorSource
    ) -> VectorCache | None:
        """The space's cache brought up to ``version`` (built on first use, then updated in
        place, see :meth:`VectorCache.refresh`); None when the space has no vectors of
        ``model`` and ``dim``."""
        key = (space_id, model, dim)
        with self._lock:
            cache = self._caches.get(key)
            if cache is None:
                cache = self._caches[key] = VectorCache(model, dim)
        cache.refresh(version, source)
        return cache if cache.size else None

    @property
    def rows_read(self) -> int:
        """Vectors read from the database by every cache so far."""
        with self._lock:
            return sum(c.rows_read for c in self._caches.values())


def unit_vector(vec: np.ndarray) -> np.ndarray:
    """``vec`` scaled to length 1 (a zero vector stays zero).

    Raises:
        ProviderError: the embedder returned something that is not a finite 1-d vector.
    """
    if vec.ndim != 1 or not np.all(np.isfinite(vec)):
        raise ProviderError("the embedder returned an invalid vector")
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm > 0 else vec


def similarity_range(embedder: Embedder | None) -> tuple[float, float]:
    """The cosine range the embedder declares meaningful (``(0, 1)`` when it declares none)."""
    value = getattr(embedder, "similarity_range", None)
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(v, (int, float)) for v in value)
        and value[1] > value[0]
    ):
        return (float(value[0]), float(value[1]))
    return (0.0, 1.0)


# ------------------------------------------------------------------ keyword


def prune_terms(terms: Sequence[str], df: Mapping[str, int], budget: int) -> list[str]:
    """The rarest query terms whose postings fit ``budget`` (at least the rarest one).

    Very common terms add little to BM25 but cost a posting read per row; rows that match
    only them are left to the dense pool and to the Python re-scoring of the candidates.
    """
    chosen: list[str] = []
    total = 0
    for term in sorted(terms, key=lambda t: df.get(t, 0)):
        count = df.get(term, 0)
        if chosen and total + count > budget:
            break
        chosen.append(term)
        total += count
    return chosen


class _Grown:
    """One growing array: appends double its buffer, so a reader that took :attr:`data` keeps
    a valid view of every line written before (writers only fill lines past the size)."""

    def __init__(self, dtype: type) -> None:
        self.data = np.zeros(64, dtype=dtype)
        self.size = 0

    def extend(self, values: Sequence[Any]) -> None:
        need = self.size + len(values)
        if need > self.data.shape[0]:
            grown = np.zeros(max(need, 2 * self.data.shape[0]), dtype=self.data.dtype)
            grown[: self.size] = self.data[: self.size]
            self.data = grown
        self.data[self.size : need] = values
        self.size = need


class _RowTable:
    """The parsed rows of one parsed-row cache (see :func:`_row_table`) as arrays, so a batch
    of rows is gathered and scored with a few array operations whatever its size.

    Terms are integers (``ids``). Each row is a run of lines, one per distinct term in order
    of first appearance (term id and count), and one entry per row: where its lines start,
    how many there are, its length in terms and its leading term's id (-1: none).
    """

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.rows: dict[str, int] = {}  # text -> row index
        self.line_term = _Grown(np.int64)
        self.line_tf = _Grown(np.float64)
        self.row_start = _Grown(np.int64)
        self.row_lines = _Grown(np.int64)
        self.row_length = _Grown(np.float64)
        self.row_lead = _Grown(np.int64)
        self._lock = threading.Lock()  # one writer at a time: ids and rows stay aligned

    def of(self, terms: Sequence[str]) -> np.ndarray:
        """The ids of ``terms`` (new terms get the next ids)."""
        ids = self.ids
        if any(t not in ids for t in terms):
            with self._lock:
                for t in terms:
                    ids.setdefault(t, len(ids))
        return np.fromiter((ids[t] for t in terms), np.int64, len(terms))

    def add(self, rows: Sequence[tuple[str, list[str], str]]) -> list[int]:
        """Store rows ``(text, terms, leading term)`` (one lock and one append per array for
        the batch); returns their indexes."""
        counted = []
        for _, terms, _ in rows:
            counts = dict.fromkeys(terms, 0)  # in order of first appearance
            for t in terms:
                counts[t] += 1
            counted.append(counts)
        with self._lock:
            ids = self.ids
            index = self.row_start.size
            starts, lines, lengths, leads, terms_out, tfs = [], [], [], [], [], []
            for (_, terms, first), counts in zip(rows, counted, strict=True):
                for t in counts:
                    terms_out.append(ids.setdefault(t, len(ids)))
                starts.append(self.line_term.size + len(tfs))
                lines.append(len(counts))
                lengths.append(float(len(terms)))
                leads.append(ids[first] if first in counts else -1)
                tfs.extend(counts.values())
            for grown, values in (
                (self.row_start, starts),
                (self.row_lines, lines),
                (self.row_length, lengths),
                (self.row_lead, leads),
                (self.line_term, terms_out),
                (self.line_tf, tfs),
            ):
                grown.extend(values)
            found = list(range(index, index + len(rows)))
            self.rows.update(zip((r[0] for r in rows), found, strict=True))
        return found


# A key no analysed text can be (texts are terms joined by single spaces): where a parsed-row
# cache keeps its row table, so the two are dropped together.
_TABLE_KEY = " \x00rows"


def _row_table(parsed: dict[str, Any]) -> _RowTable:
    found = parsed.get(_TABLE_KEY)
    if found is None:
        found = parsed.setdefault(_TABLE_KEY, _RowTable())
    return found


class _Doc:
    """One candidate's analysed terms split once per process (the provider's parsed-row
    cache): every scorer reuses it, per row (:meth:`HybridScorer.__call__`) or per batch
    (:meth:`HybridScorer.score_many`, through its ``index`` in the cache's row table)."""

    __slots__ = ("first", "index", "present", "terms")

    def __init__(self, terms: list[str], first: str, index: int) -> None:
        self.terms = terms
        self.present = frozenset(terms)
        self.first = first
        self.index = index


def _parse(texts: Sequence[str], table: _RowTable) -> list[_Doc]:
    """Split ``texts`` (distinct) and store them in ``table``."""
    rows = [(text, text.split(), text.split(" ", 1)[0]) for text in texts]
    found = table.add(rows)
    return [_Doc(terms, first, i) for (_, terms, first), i in zip(rows, found, strict=True)]


def _bm25(doc: _Doc, idf: Mapping[str, float], avgdl: float, k1: float, b: float) -> float:
    terms, present = doc.terms, doc.present
    if not idf or not terms:
        return 0.0
    hits: Any = present.intersection(idf)
    if not hits:
        return 0.0
    if len(hits) > 2:
        # Summed in the row's order of first appearance, as ever: float addition is not
        # associative and the scores must not move (one or two terms commute exactly).
        hits = sorted(hits, key=terms.index)
    norm = k1 * (1.0 - b + b * len(terms) / avgdl)
    total = 0.0
    for t in hits:
        tf = terms.count(t)
        total += idf[t] * tf * (k1 + 1.0) / (tf + norm)
    return total


def _members(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Whether each of ``values`` is in ``sorted_set`` (a sorted array)."""
    if not sorted_set.size:
        return np.zeros(values.shape, dtype=bool)
    at = sorted_set.searchsorted(values)
    np.minimum(at, sorted_set.size - 1, out=at)
    return sorted_set[at] == values


# ------------------------------------------------------------------ hybrid


class HybridScorer:
    """Scores rows of one space for one query: ``scorer(seq, terms) -> (final, lexical,
    semantic)`` for one row, :meth:`score_many` for a batch (the same floats, bit for bit: a
    search scores its candidates in batches). Without a vector cache the final score is the
    keyword score."""

    def __init__(
        self,
        terms: Sequence[str],
        df: Mapping[str, int],
        stats: tuple[int, int],
        weights: HybridWeights,
        similarity: tuple[float, float],
        dense: tuple[VectorCache | Cosines | None, Mapping[int, float], np.ndarray | None],
        parsed: dict[str, Any] | None = None,
    ) -> None:
        docs, total_terms = stats
        self.weights = weights
        self.idf = {t: math.log(1.0 + (docs - n + 0.5) / (n + 0.5)) for t, n in df.items()}
        unknown_idf = math.log(1.0 + (docs + 0.5) / 1.5) * weights.unknown_term_weight
        self.ideal = sum(self.idf.get(t, unknown_idf) for t in terms) or 1.0
        self.avgdl = max(total_terms / docs, 1.0)
        self.lo, self.hi = similarity
        self.cache, self.dense, self.query_vector = dense
        self.query_terms = frozenset(terms)
        # Rows split once per search; pass ``parsed=`` of another scorer to share them.
        self.parsed: dict[str, Any] = {} if parsed is None else parsed
        self._table = _row_table(self.parsed)
        # The idf terms' ids sorted, with their idf: a batch finds its hits by binary search.
        ids = self._table.of(list(self.idf))
        order = np.argsort(ids)
        self._ids = ids[order]
        self._idf = np.fromiter(self.idf.values(), np.float64, len(self.idf))[order]
        self._query_ids = np.sort(self._table.of(list(self.query_terms)))

    def __call__(self, seq: int, text: str) -> Score:
        w = self.weights
        lexical = self.lexical(text)
        if self.cache is None:
            return (self._lead(lexical, text), lexical, 0.0)
        cos = self.dense.get(seq)
        if cos is None:
            cos = self.cache.similarity(seq, self.query_vector)  # type: ignore[arg-type]
        semantic = min(1.0, max(0.0, (cos - self.lo) / (self.hi - self.lo)))
        blended = (1.0 - w.dense) * lexical + w.dense * semantic
        return (self._lead(blended, text), lexical, semantic)

    def doc(self, text: str) -> _Doc:
        """One row's terms, split once per scorer family (see ``parsed``)."""
        found = self.parsed.get(text)
        if found is None:
            found = self.parsed[text] = _parse([text], self._table)[0]
        return found

    def lexical(self, text: str) -> float:
        """The keyword score of one row's analysed terms (0..1)."""
        w = self.weights
        return min(1.0, _bm25(self.doc(text), self.idf, self.avgdl, w.k1, w.b) / self.ideal)

    def _lead(self, score: float, text: str) -> float:
        """``score`` plus the lead share when the row's first term is a query term."""
        if score <= 0 or self.weights.lead <= 0:
            return score
        first = self.doc(text).first
        return min(1.0, score + self.weights.lead) if first in self.query_terms else score

    def score_many(
        self, seqs: Sequence[int], texts: Sequence[str], index: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(final, lexical, semantic)`` arrays of the rows ``seqs`` with analysed ``texts``:
        what :meth:`__call__` gives each row, computed with array operations (``index``: the
        rows' :meth:`rows`, when the caller has them).

        Example:
            >>> final, lexical, semantic = scorer.score_many([3, 4], ["alic hike", "bob tea"])
        """
        w = self.weights
        if not texts:
            return (np.zeros(0, dtype=np.float64),) * 3  # type: ignore[return-value]
        index = self.rows(texts) if index is None else index
        lexical = self.lexical_rows(index)
        if self.cache is None:
            blended, semantic = lexical, np.zeros(len(texts), dtype=np.float64)
        else:
            cos = self._cosines(seqs)
            semantic = np.minimum(1.0, np.maximum(0.0, (cos - self.lo) / (self.hi - self.lo)))
            blended = (1.0 - w.dense) * lexical + w.dense * semantic
        if w.lead <= 0 or not self._query_ids.size:
            return blended, lexical, semantic
        leads = _members(self._table.row_lead.data[index], self._query_ids)
        lifted = np.minimum(1.0, blended + w.lead)
        return np.where(leads & (blended > 0), lifted, blended), lexical, semantic

    def lexical_many(self, texts: Sequence[str]) -> np.ndarray:
        """:meth:`lexical` of each of ``texts``, as one array."""
        if not self._ids.size:
            return np.zeros(len(texts), dtype=np.float64)
        return self.lexical_rows(self.rows(texts))

    def rows(self, texts: Sequence[str]) -> np.ndarray:
        """The rows' indexes in the row table of the scorer's ``parsed`` cache (parsing the
        new ones): what :meth:`lexical_rows` takes, valid for every scorer sharing ``parsed``."""
        n = len(texts)
        rows = np.fromiter(map(self._table.rows.get, texts, repeat(-1, n)), np.int64, n)
        missing = (rows < 0).nonzero()[0]
        if missing.size:  # new rows: split and stored as one batch
            new = list(dict.fromkeys(texts[i] for i in missing.tolist()))
            self.parsed.update(zip(new, _parse(new, self._table), strict=True))
            rows[missing] = [self._table.rows[texts[i]] for i in missing.tolist()]
        return rows

    def lexical_rows(self, rows: np.ndarray) -> np.ndarray:
        """The keyword score of each of ``rows`` (see :meth:`rows`): :func:`_bm25` over a
        batch, the same bits (each row's terms added from 0.0 in its order of first
        appearance, as ``np.bincount`` adds its weights), over the ideal, capped at 1."""
        n = rows.size
        ids = self._ids
        if not n or not ids.size:
            return np.zeros(n, dtype=np.float64)
        table = self._table
        # Every line of the batch's rows: each row's run of lines, one after the other.
        count = table.row_lines.data[rows]
        ends = count.cumsum()
        lines = (table.row_start.data[rows] - (ends - count)).repeat(count)
        lines += np.arange(lines.size)
        terms = table.line_term.data[lines]
        at = ids.searchsorted(terms)
        np.minimum(at, ids.size - 1, out=at)
        hit = (ids[at] == terms).nonzero()[0]
        if not hit.size:
            return np.zeros(n, dtype=np.float64)
        row = ends.searchsorted(hit, side="right")  # the batch row of each hit
        tf = table.line_tf.data[lines[hit]]
        k1, b = self.weights.k1, self.weights.b
        norm = k1 * (1.0 - b + b * table.row_length.data[rows][row] / self.avgdl)
        values = self._idf[at[hit]] * tf * (k1 + 1.0) / (tf + norm)
        return np.minimum(1.0, np.bincount(row, values, n) / self.ideal)

    def _cosines(self, seqs: Sequence[int]) -> np.ndarray:
        """Each row's cosine: the dense pool's, else the cache's (as :meth:`__call__`)."""
        n = len(seqs)
        cos = np.fromiter(map(self.dense.get, seqs, repeat(math.nan, n)), np.float64, n)
        missing = np.isnan(cos).nonzero()[0]
        if missing.size and self.cache is not None:
            rest = [seqs[i] for i in missing]
            cos[missing] = self.cache.similarities(rest, self.query_vector)
        return cos


def apply_adjacent(
    final: dict[int, float],
    base: Mapping[int, Score],
    near: Mapping[int, tuple[int, ...]],
    share: float,
) -> None:
    """Add to ``final`` each neighbour of the rows of ``near`` that was no candidate, scored
    its own score plus ``share`` × the row's final score × the row's keyword score (the best
    such row counts; not capped); the candidates keep their scores (lifting them too
    measured worse at the top ranks).

    Example:
        >>> final = {1: 0.8}
        >>> apply_adjacent(final, {1: (0.8, 0.5, 0), 2: (0.0, 0, 0)}, {1: (2,)}, 0.5)
        >>> final
        {1: 0.8, 2: 0.2}
    """
    candidates = set(final)
    for seq, pair in near.items():
        # Scaled by the row's own keyword share: beside a row that matched by meaning or by
        # one common word, a neighbour must not crowd out what the dense side found.
        lift = share * final.get(seq, 0.0) * base[seq][1]
        for other in pair:
            if other not in base or other in candidates:
                continue
            value = base[other][0] + lift
            if value > final.get(other, 0.0):
                final[other] = value


def neighbour_candidates(base: Mapping[int, Score], top: int) -> list[int]:
    """The ``top`` best-scored rows, best first, ties to the newer row (as
    :func:`ranked_seqs`; never the order the database returned them in, so SQLite and
    PostgreSQL choose the same rows): the ones whose temporal neighbours may lift them.

    Example:
        >>> neighbour_candidates({1: (0.2, 0, 0), 2: (0.5, 0, 0), 3: (0.2, 0, 0)}, 2)
        [2, 3]
    """
    seqs = np.fromiter(base, np.int64, len(base))
    scores = np.fromiter((v[0] for v in base.values()), np.float64, len(base))
    return seqs[np.lexsort((-seqs, -scores))[:top]].tolist()


def apply_neighbour_boost(
    final: dict[int, float],
    base: Mapping[int, Score],
    near: Mapping[int, tuple[int, ...]],
    share: float,
) -> None:
    """Add ``share`` of the best neighbour's score to each row of ``near`` (not capped: the
    lifts only order the rows, and rows held at 1 tied at the top)."""
    get = base.get
    for seq, pair in near.items():
        boost = 0.0  # the best neighbour's score (scores are never negative)
        for other in pair:
            found = get(other)
            if found is not None and found[0] > boost:
                boost = found[0]
        final[seq] = final[seq] + share * boost


def feedback_candidates(texts: Sequence[str], terms: Sequence[str]) -> list[str]:
    """The distinct terms of the feedback rows' ``texts`` that are not query ``terms``, in
    order of first appearance (their document frequencies are read next).

    Example:
        >>> feedback_candidates(["alic hike alp", "bob hike"], ["hike"])
        ['alic', 'alp', 'bob']
    """
    query = set(terms)
    seen = dict.fromkeys(t for text in texts for t in text.split() if t not in query)
    return list(seen)


def expansion_terms(
    texts: Sequence[str], df: Mapping[str, int], docs: int, count: int
) -> list[str]:
    """The ``count`` expansion terms of the feedback rows: summed idf over the rows that hold
    each term, terms seen in fewer than two rows of the space left out (a typo or a one-off
    word says nothing about other rows).

    Args:
        texts: analysed terms of the feedback rows (query terms already removed or not: only
            terms in ``df`` count, and the caller looks up only non-query terms).
        df: per-space document frequency of the candidate terms.
        docs: live rows of the space.
        count: how many terms to keep.

    Returns:
        The terms, best first (ties by the term, so every database chooses alike).

    Example:
        >>> expansion_terms(["alp hike", "alp"], {"alp": 2, "hike": 40}, 100, 1)
        ['alp']
    """
    weight: dict[str, float] = {}
    for text in texts:
        for term in set(text.split()):
            n = df.get(term, 0)
            if 1 < n < docs:
                weight[term] = weight.get(term, 0.0) + math.log(docs / n)
    ranked = sorted(weight, key=lambda t: (-weight[t], t))
    return ranked[:count]


def apply_feedback(
    final: dict[int, float],
    lexical: Callable[[np.ndarray], np.ndarray],
    share: float,
) -> None:
    """Add ``share`` of each candidate's keyword score for the expansion query to its final
    score (not capped); rows that scored nothing stay at 0. ``lexical(positions)`` scores the
    rows at those positions of ``final`` (its order), e.g. with
    :meth:`HybridScorer.lexical_rows` of a scorer of the expansion terms."""
    values = np.fromiter(final.values(), np.float64, len(final))
    at = (values > 0).nonzero()[0]
    if not at.size:
        return
    lifted = values[at] + share * lexical(at)
    seqs = list(final)
    final.update(zip([seqs[i] for i in at.tolist()], lifted.tolist(), strict=True))


def ranked_seqs(
    final: Mapping[int, float], limit: int, fill: Mapping[int, float] | None = None
) -> list[int]:
    """The ``limit`` best rows with a positive score (ties go to the newer row); when fewer
    than ``limit`` score, the depth is filled with the scored rows of ``fill`` (seq -> cosine:
    the dense pool) that scored nothing, most similar first: a search asked for k rows
    returns k whenever the space holds them.

    Example:
        >>> ranked_seqs({1: 0.5, 2: 0.0, 3: 0.0}, 3, fill={2: 0.1, 3: 0.2})
        [1, 3, 2]
    """
    seqs = np.fromiter(final, np.int64, len(final))
    scores = np.fromiter(final.values(), np.float64, len(final))
    scored = (scores > 0).nonzero()[0]
    order = np.lexsort((-seqs[scored], -scores[scored]))[:limit]
    ranked: list[int] = seqs[scored[order]].tolist()
    if fill and len(ranked) < limit:
        rest = (s for s in fill if s in final and final[s] <= 0)
        ranked += sorted(rest, key=lambda s: (-fill[s], -s))[: limit - len(ranked)]
    return ranked


def matched_via(lexical: float, semantic: float, final: float) -> str:
    """Which signal found a ranked row: ``hybrid``, ``semantic`` or ``keyword``; a row that
    scored nothing fills the depth from the dense pool (``semantic``), and one with neither
    signal that scored came with a neighbour (``neighbour``).

    Example:
        >>> matched_via(0.4, 0.0, 0.4), matched_via(0.0, 0.0, 0.2), matched_via(0.0, 0.0, 0.0)
        ('keyword', 'neighbour', 'semantic')
    """
    if final <= 0:
        return "semantic"
    if lexical > 0 and semantic > 0:
        return "hybrid"
    if semantic > 0:
        return "semantic"
    return "keyword" if lexical > 0 else "neighbour"
