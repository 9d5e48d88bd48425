"""Ranking and graph walks over one fact file's state (pure: no file I/O).

Keyword relevance is BM25 over the analysed terms of a fact (content, tags and entities; see
:mod:`.text`) divided by the BM25 of an ideal fact that holds each query term once, capped at 1.
Dense relevance is the cosine similarity of unit vectors rescaled to 0..1 by the embedder's
``similarity_range``. Smart mode combines them as ``1 - (1 - keyword) * (1 - dense)``.

Edges: *explicit* links from the file; *entity* edges between facts that share an entity
(compared case-insensitively); *semantic* edges between facts whose cosine similarity reaches
the top of the embedder's similarity range (only with an embedder).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from langgraph_mnemon.adapters.providers._facts_file import Fact, FactState
from langgraph_mnemon.adapters.providers.text import analyze
from langgraph_mnemon.errors import ProviderError
from langgraph_mnemon.memory_layers.spaces import Embedder

__all__ = [
    "Edge",
    "FactIndex",
    "graph_edges",
    "index_of",
    "neighbours",
    "similarity_range",
]

_K1 = 1.2
_B = 0.75
_DENSE_FLOOR = 0.2  # dense-only candidates below this relevance are noise
_SEMANTIC_FANOUT = 5  # derived semantic neighbours per fact
_ENTITY_FANOUT = 50  # newest facts per shared entity a walk follows
_BLOCK = 512  # rows per block of a pairwise similarity product


@dataclass(frozen=True, slots=True)
class Analysis:
    """The term counts and length of one fact."""

    counts: dict[str, int]
    length: int


@dataclass(frozen=True, slots=True)
class Edge:
    """One edge of a walk or a graph (``source`` and ``target`` are fact ids)."""

    source: str
    target: str
    type: str
    weight: float


def _analysis(fact: Fact) -> Analysis:
    if fact.analysis is None:
        terms = analyze(" ".join([fact.content, *fact.tags, *fact.entities]))
        fact.analysis = Analysis(dict(Counter(terms)), len(terms))
    return fact.analysis


def similarity_range(embedder: Embedder | None) -> tuple[float, float]:
    """The cosine range the embedder declares meaningful (``(0, 1)`` when it declares none)."""
    value = getattr(embedder, "similarity_range", None)
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
        and value[1] > value[0]
    ):
        return (float(value[0]), float(value[1]))
    return (0.0, 1.0)


def _unit(rows: np.ndarray) -> np.ndarray:
    if rows.ndim != 2 or not np.all(np.isfinite(rows)):
        raise ProviderError("the embedder returned invalid vectors (not finite numbers)")
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0, norms, 1.0)


class FactIndex:
    """Postings, entity lists and (lazily) a vector matrix of one state."""

    def __init__(self, state: FactState) -> None:
        self.facts = state.facts
        self.position = {f.id: i for i, f in enumerate(self.facts)}
        self.postings: dict[str, list[tuple[int, int]]] = {}
        self.lengths: list[int] = []
        self.entity_facts: dict[str, list[int]] = {}
        for pos, fact in enumerate(self.facts):
            analysis = _analysis(fact)
            self.lengths.append(analysis.length)
            for term, count in analysis.counts.items():
                self.postings.setdefault(term, []).append((pos, count))
            for entity in {e.casefold() for e in fact.entities}:
                self.entity_facts.setdefault(entity, []).append(pos)
        self.avg_length = (sum(self.lengths) / len(self.lengths)) if self.lengths else 1.0
        self.links: dict[str, list[Edge]] = {}
        for link in state.links:
            edge = Edge(link.source, link.target, link.type, link.weight)
            self.links.setdefault(link.source, []).append(edge)
            self.links.setdefault(link.target, []).append(edge)
        self._matrix: tuple[str, np.ndarray] | None = None

    # -- keyword ---------------------------------------------------------------------------

    def keyword(self, terms: Sequence[str], require_all: bool) -> dict[int, float]:
        """Normalised BM25 of every fact holding a query term (every term with ``require_all``)."""
        n = len(self.facts)
        if not n or not terms:
            return {}
        idf = {}
        for term in terms:
            df = len(self.postings.get(term, ()))
            idf[term] = math.log(1 + (n - df + 0.5) / (df + 0.5))
        ideal = sum(idf.values()) or 1.0
        raw: dict[int, float] = {}
        hits: Counter[int] = Counter()
        for term in terms:
            for pos, tf in self.postings.get(term, ()):
                norm = _K1 * (1 - _B + _B * self.lengths[pos] / self.avg_length)
                raw[pos] = raw.get(pos, 0.0) + idf[term] * tf * (_K1 + 1) / (tf + norm)
                hits[pos] += 1
        if require_all:
            raw = {p: s for p, s in raw.items() if hits[p] == len(terms)}
        return {p: min(1.0, s / ideal) for p, s in raw.items()}

    # -- dense -----------------------------------------------------------------------------

    def matrix(self, embedder: Embedder) -> np.ndarray:
        """Unit vectors of every fact (rows in file order), embedding what is not cached."""
        model = embedder.model_id
        if self._matrix is not None and self._matrix[0] == model:
            return self._matrix[1]
        missing = [f for f in self.facts if model not in f.vectors]
        if missing:
            try:
                vectors = embedder.embed_documents([f.content for f in missing])
            except Exception as exc:
                raise ProviderError(f"embedding the facts failed: {exc}") from exc
            if len(vectors) != len(missing):
                raise ProviderError("the embedder returned a different number of vectors")
            rows = _unit(np.asarray(vectors, dtype=np.float32))
            for fact, row in zip(missing, rows, strict=True):
                fact.vectors[model] = row
        if self.facts:
            matrix = np.stack([f.vectors[model] for f in self.facts])
        else:
            matrix = np.zeros((0, 1), dtype=np.float32)
        self._matrix = (model, matrix)
        return matrix

    def dense(self, embedder: Embedder, query: str) -> np.ndarray:
        """Dense relevance (0..1) of every fact to ``query``."""
        matrix = self.matrix(embedder)
        if not len(matrix):
            return np.zeros(0, dtype=np.float32)
        try:
            vector = np.asarray(embedder.embed_query(query), dtype=np.float32)
        except Exception as exc:
            raise ProviderError(f"embedding the query failed: {exc}") from exc
        if vector.shape != (matrix.shape[1],):
            raise ProviderError("the query vector does not match the fact vectors")
        low, high = similarity_range(embedder)
        cosine = matrix @ _unit(vector[None, :])[0]
        return np.clip((cosine - low) / (high - low), 0.0, 1.0)

    def rank(
        self, terms: Sequence[str], mode: str, dense: np.ndarray | None
    ) -> dict[int, tuple[float, str]]:
        """Relevance and ``matched_via`` of every candidate fact, by position."""
        keyword = self.keyword(terms, require_all=mode == "basic")
        if dense is None:
            return {p: (s, "keyword") for p, s in keyword.items()}
        out: dict[int, tuple[float, str]] = {}
        for pos in set(keyword) | {int(p) for p in np.flatnonzero(dense >= _DENSE_FLOOR)}:
            kw, dn = keyword.get(pos, 0.0), float(dense[pos])
            via = "hybrid" if kw > 0 and dn > 0 else ("keyword" if kw > 0 else "semantic")
            out[pos] = (1.0 - (1.0 - kw) * (1.0 - dn), via)
        return out

    # -- edges -----------------------------------------------------------------------------

    def entity_edges(self, pos: int) -> list[Edge]:
        """Edges to the newest facts that share an entity with the fact at ``pos``."""
        fact = self.facts[pos]
        mine = {e.casefold() for e in fact.entities}
        seen: dict[int, None] = {}
        for entity in mine:
            for other in reversed(self.entity_facts.get(entity, ())[-_ENTITY_FANOUT - 1 :]):
                if other != pos:
                    seen.setdefault(other, None)
        return [self.pair_entity_edge(pos, other) for other in seen]

    def pair_entity_edge(self, a: int, b: int) -> Edge:
        """The entity edge from the fact at ``a`` to the one at ``b`` (Jaccard weight)."""
        mine = {e.casefold() for e in self.facts[a].entities}
        theirs = {e.casefold() for e in self.facts[b].entities}
        weight = len(mine & theirs) / max(len(mine | theirs), 1)
        return Edge(self.facts[a].id, self.facts[b].id, "entity", round(weight, 6))

    def semantic_edges(self, embedder: Embedder, positions: Sequence[int]) -> list[list[Edge]]:
        """Derived semantic edges of each fact in ``positions`` (to any fact of the file)."""
        matrix = self.matrix(embedder)
        threshold = similarity_range(embedder)[1]
        out: list[list[Edge]] = []
        for start in range(0, len(positions), _BLOCK):
            block = list(positions[start : start + _BLOCK])
            sims = matrix[block] @ matrix.T
            for row, pos in zip(sims, block, strict=True):
                row[pos] = -1.0
                top = heapq.nlargest(_SEMANTIC_FANOUT, range(len(row)), key=row.__getitem__)
                out.append(
                    [
                        Edge(self.facts[pos].id, self.facts[t].id, "semantic", _weight(row[t]))
                        for t in top
                        if row[t] >= threshold
                    ]
                )
        return out


def _weight(value: Any) -> float:
    return round(min(1.0, max(0.0, float(value))), 6)


def index_of(state: FactState) -> FactIndex:
    """The search index of ``state``, built once per state (states are shared, never changed)."""
    if state.index is None:
        state.index = FactIndex(state)
    return state.index


def neighbours(
    index: FactIndex,
    frontier: Sequence[int],
    edge_type: str | None,
    embedder: Embedder | None,
) -> list[list[Edge]]:
    """Every edge out of each fact of ``frontier`` (explicit, entity, semantic), strongest first."""
    semantic: list[list[Edge]] = [[] for _ in frontier]
    if embedder is not None and edge_type in (None, "semantic") and frontier:
        semantic = index.semantic_edges(embedder, frontier)
    out = []
    for pos, derived in zip(frontier, semantic, strict=True):
        fact_id = index.facts[pos].id
        edges = [_outward(e, fact_id) for e in index.links.get(fact_id, ())]
        if edge_type in (None, "entity"):
            edges.extend(index.entity_edges(pos))
        edges.extend(derived)
        if edge_type is not None:
            edges = [e for e in edges if e.type == edge_type]
        edges.sort(key=lambda e: -e.weight)
        out.append(edges)
    return out


def _outward(edge: Edge, fact_id: str) -> Edge:
    if edge.source == fact_id:
        return edge
    return Edge(fact_id, edge.source, edge.type, edge.weight)


def graph_edges(
    index: FactIndex, positions: Sequence[int], embedder: Embedder | None, cap: int
) -> list[Edge]:
    """Edges among the facts at ``positions``, strongest first, at most ``cap``.

    Explicit links keep their direction; an entity or semantic edge appears once per pair.
    """
    inside = {index.facts[p].id for p in positions}
    found: dict[tuple[str, str, str], Edge] = {}
    for fact_id in inside:
        for edge in index.links.get(fact_id, ()):
            if edge.source in inside and edge.target in inside:
                found[(edge.source, edge.target, edge.type)] = edge
    groups: dict[str, list[int]] = {}
    for pos in positions:
        for entity in {e.casefold() for e in index.facts[pos].entities}:
            groups.setdefault(entity, []).append(pos)
    for members in groups.values():
        for a, b in itertools.combinations(members[: _ENTITY_FANOUT + 1], 2):
            _add_pair(found, index.pair_entity_edge(a, b))
            if len(found) >= cap * 4:  # enough to choose the strongest from
                break
    if embedder is not None and positions:
        for edges in index.semantic_edges(embedder, positions):
            for edge in edges:
                if edge.target in inside:
                    _add_pair(found, edge)
    return sorted(found.values(), key=lambda e: -e.weight)[:cap]


def _add_pair(found: dict[tuple[str, str, str], Edge], edge: Edge) -> None:
    low, high = sorted((edge.source, edge.target))
    found.setdefault((low, high, edge.type), edge)
