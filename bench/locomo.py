"""LoCoMo-R: retrieval quality of Memory Space recall on LoCoMo conversations (no LLM needed).

Protocol (../shared/bench/README.md): one memory per dialog turn, ingested in order through the
normal write path (``MemorySpaces.remember_many``) with text ``"{speaker}: {text}"`` (plus
``" [shares {blip_caption}]"`` for image turns) and metadata dia_id / session / session date;
one Memory Space per conversation; the query is the question verbatim; the truth is the
normalised evidence ids. R@k = share of a question's evidence turns in the top k, MRR = 1/rank
of the first relevant turn (0 when none in the top 20). Categories 1-4 are the main set;
category 5 (adversarial) is reported separately.

Systems, all in this process over the same text:
  * ``mnemon default`` — ``Mnemon.open(root).spaces.search`` with the default configuration
    (native provider, smart mode = BM25 + WordLlama hybrid with temporal-neighbour context,
    strict-v1 quality, anchor/lexical recovery). With ``--embedder`` other than the default,
    the same pipeline with that embedder (``none`` = keyword only);
  * ``mnemon exhaustive`` — the same pipeline with the exhaustive-v1 policy (no quality cut);
  * ``SQLite FTS5`` — porter tokenizer, OR of the question's non-stopword terms, bm25 order;
  * ``bm25s`` — BM25 with English stopwords and the Snowball stemmer;
  * ``dense`` — cosine similarity with the same embedder the plugin uses;
  * ``RRF(FTS5, dense)`` — naive reciprocal-rank fusion, k = 60.

The tune / check columns split the conversations (tune: conv-26, conv-30, conv-41; check:
conv-42, conv-43) to show the defaults are not fitted to the questions they are judged on.

Run:  python bench/locomo.py                       (≈1-2 minutes on 2 cores)
      python bench/locomo.py --embedder hashing    (or wordllama, minilm, none)

The data is read from ../shared/bench/locomo-dev.json (CC BY-NC 4.0, evaluation only; never
copied into this repository). Prints one Markdown table and exits. Not a test.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.embeddings import (
    HashingEmbedder,
    SentenceTransformerEmbedder,
    WordLlamaEmbedder,
)
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.adapters.providers.text import STOPWORDS
from langgraph_mnemon.memory_layers.spaces import MemorySpaces

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo-dev.json"
TUNE = ("conv-26", "conv-30", "conv-41")
CHECK = ("conv-42", "conv-43")
K = 20
_EVIDENCE = re.compile(r"D(\d+):(\d+)")
_WORD = re.compile(r"\w+")


@dataclass
class Turn:
    dia_id: str
    text: str
    session: int
    date: str


@dataclass
class Question:
    sample: str
    text: str
    category: int
    evidence: set[str]


@dataclass
class Scores:
    recall: dict[int, list[float]] = field(default_factory=lambda: {1: [], 5: [], 10: [], 20: []})
    mrr: list[float] = field(default_factory=list)

    def add(self, ranked: Sequence[str], truth: set[str]) -> None:
        for k in self.recall:
            top = set(ranked[:k])
            self.recall[k].append(len(top & truth) / len(truth))
        rr = 0.0
        for i, dia in enumerate(ranked[:K], start=1):
            if dia in truth:
                rr = 1.0 / i
                break
        self.mrr.append(rr)

    def mean(self, k: int | None = None) -> float:
        values = self.mrr if k is None else self.recall[k]
        return sum(values) / len(values) if values else 0.0


@dataclass
class SystemResult:
    name: str
    main: Scores = field(default_factory=Scores)
    tune: Scores = field(default_factory=Scores)
    check: Scores = field(default_factory=Scores)
    adversarial: Scores = field(default_factory=Scores)
    latencies: list[float] = field(default_factory=list)
    ingest_seconds: float = 0.0
    ingested: int = 0

    def add(self, question: Question, ranked: Sequence[str], seconds: float) -> None:
        self.latencies.append(seconds)
        if question.category == 5:
            self.adversarial.add(ranked, question.evidence)
            return
        self.main.add(ranked, question.evidence)
        (self.tune if question.sample in TUNE else self.check).add(ranked, question.evidence)


def load(path: Path) -> list[tuple[str, list[Turn], list[Question]]]:
    """Conversations with their turns and questions (evidence normalised per the README)."""
    samples = json.loads(path.read_text("utf-8"))
    out = []
    for sample in samples:
        conv = sample["conversation"]
        turns: list[Turn] = []
        sessions = sorted(
            int(k.split("_")[1])
            for k, v in conv.items()
            if re.fullmatch(r"session_\d+", k) and isinstance(v, list)
        )
        for n in sessions:
            date = conv.get(f"session_{n}_date_time", "")
            for turn in conv[f"session_{n}"]:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares {turn['blip_caption']}]"
                turns.append(Turn(turn["dia_id"], text, n, date))
        known = {t.dia_id for t in turns}
        questions = []
        for qa in sample["qa"]:
            evidence: set[str] = set()
            for item in qa.get("evidence", []):
                for s, t in _EVIDENCE.findall(str(item)):
                    dia = f"D{int(s)}:{int(t)}"
                    if dia in known:
                        evidence.add(dia)
            if evidence:
                questions.append(
                    Question(sample["sample_id"], qa["question"], int(qa["category"]), evidence)
                )
        out.append((sample["sample_id"], turns, questions))
    return out


def _terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def _timed(fn: Callable[[], list[str]]) -> tuple[list[str], float]:
    start = time.perf_counter()
    ranked = fn()
    return ranked, time.perf_counter() - start


def run_fts5(turns: list[Turn], questions: list[Question], result: SystemResult) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='porter')")
    start = time.perf_counter()
    conn.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", enumerate(t.text for t in turns))
    conn.commit()
    result.ingest_seconds += time.perf_counter() - start
    result.ingested += len(turns)
    for q in questions:
        terms = _terms(q.text)

        def query(terms: list[str] = terms) -> list[str]:
            if not terms:
                return []
            match = " OR ".join('"' + t.replace('"', "") + '"' for t in terms)
            rows = conn.execute(
                "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (match, K)
            ).fetchall()
            return [turns[r[0]].dia_id for r in rows]

        ranked, seconds = _timed(query)
        result.add(q, ranked, seconds)


def run_bm25s(turns: list[Turn], questions: list[Question], result: SystemResult) -> None:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    start = time.perf_counter()
    tokens = bm25s.tokenize(
        [t.text for t in turns], stopwords="en", stemmer=stemmer, show_progress=False
    )
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    result.ingest_seconds += time.perf_counter() - start
    result.ingested += len(turns)
    for q in questions:

        def query(text: str = q.text) -> list[str]:
            qt = bm25s.tokenize([text], stopwords="en", stemmer=stemmer, show_progress=False)
            if not qt.ids or not qt.ids[0]:
                return []
            docs, scores = retriever.retrieve(qt, k=min(K, len(turns)), show_progress=False)
            return [turns[int(i)].dia_id for i, s in zip(docs[0], scores[0], strict=False) if s > 0]

        ranked, seconds = _timed(query)
        result.add(q, ranked, seconds)


class DenseIndex:
    def __init__(self, embedder: Any, turns: list[Turn]) -> None:
        start = time.perf_counter()
        vectors = np.asarray(embedder.embed_documents([t.text for t in turns]), dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        self.seconds = time.perf_counter() - start
        self.embedder = embedder
        self.vectors = vectors
        self.turns = turns

    def query(self, text: str) -> list[str]:
        q = np.asarray(self.embedder.embed_query(text), dtype=np.float32)
        q /= max(float(np.linalg.norm(q)), 1e-12)
        sims = self.vectors @ q
        top = np.argsort(-sims)[:K]
        return [self.turns[int(i)].dia_id for i in top]


def run_dense(index: DenseIndex, questions: list[Question], result: SystemResult) -> None:
    result.ingest_seconds += index.seconds
    result.ingested += len(index.turns)
    for q in questions:
        ranked, seconds = _timed(lambda text=q.text: index.query(text))
        result.add(q, ranked, seconds)


def run_rrf(
    turns: list[Turn], index: DenseIndex, questions: list[Question], result: SystemResult
) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='porter')")
    start = time.perf_counter()
    conn.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", enumerate(t.text for t in turns))
    result.ingest_seconds += time.perf_counter() - start + index.seconds
    result.ingested += len(turns)
    for q in questions:

        def query(text: str = q.text) -> list[str]:
            terms = _terms(text)
            lexical: list[str] = []
            if terms:
                match = " OR ".join('"' + t.replace('"', "") + '"' for t in terms)
                rows = conn.execute(
                    "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (match, K * 3)
                ).fetchall()
                lexical = [turns[r[0]].dia_id for r in rows]
            dense = index.query(text)
            fused: dict[str, float] = {}
            for ranking in (lexical, dense):
                for rank, dia in enumerate(ranking, start=1):
                    fused[dia] = fused.get(dia, 0.0) + 1.0 / (60 + rank)
            return sorted(fused, key=lambda d: -fused[d])[:K]

        ranked, seconds = _timed(query)
        result.add(q, ranked, seconds)


def run_mnemon(
    spaces: MemorySpaces,
    sample: str,
    turns: list[Turn],
    questions: list[Question],
    results: dict[str, SystemResult],
) -> None:
    """Ingest through the write path once; query with each configured policy."""
    space = spaces.create_space(f"LoCoMo {sample}", space_id=sample).space
    assert space is not None
    start = time.perf_counter()
    for chunk in range(0, len(turns), 200):
        receipts = spaces.remember_many(
            [
                {
                    "content": t.text,
                    "metadata": {"dia_id": t.dia_id, "session": t.session, "date": t.date},
                }
                for t in turns[chunk : chunk + 200]
            ],
            space_id=space.id,
        )
        assert all(r.committed for r in receipts), receipts[:1]
    seconds = time.perf_counter() - start
    for name, result in results.items():
        result.ingest_seconds += seconds
        result.ingested += len(turns)
        policy = "exhaustive-v1" if "exhaustive" in name else None
        for q in questions:

            def query(text: str = q.text, policy: str | None = policy) -> list[str]:
                found = spaces.search(text, limit=K, space_ids=[space.id], policy=policy)
                return [str(r.metadata.get("dia_id")) for r in found.results]

            ranked, took = _timed(query)
            result.add(q, ranked, took)


def make_embedder(name: str) -> Any:
    if name == "wordllama":
        return WordLlamaEmbedder()
    if name == "hashing":
        return HashingEmbedder()
    if name == "minilm":
        return SentenceTransformerEmbedder()
    if name == "none":
        return None
    raise SystemExit(f"unknown embedder {name!r}")


def table(results: list[SystemResult]) -> str:
    head = (
        "| system | R@1 | R@5 | R@10 | R@20 | MRR | R@5 tune | MRR tune | R@5 check | MRR check "
        "| adv R@5 | adv MRR | p50 ms | p95 ms | ingest /s |"
    )
    lines = [head, "|" + "---|" * 15]
    for r in results:
        lat = sorted(r.latencies)
        p50 = statistics.median(lat) * 1000 if lat else 0.0
        p95 = lat[min(len(lat) - 1, math.ceil(0.95 * len(lat)) - 1)] * 1000 if lat else 0.0
        rate = r.ingested / r.ingest_seconds if r.ingest_seconds else 0.0
        lines.append(
            f"| {r.name} | {r.main.mean(1):.3f} | {r.main.mean(5):.3f} | {r.main.mean(10):.3f} "
            f"| {r.main.mean(20):.3f} | {r.main.mean():.3f} | {r.tune.mean(5):.3f} "
            f"| {r.tune.mean():.3f} | {r.check.mean(5):.3f} | {r.check.mean():.3f} "
            f"| {r.adversarial.mean(5):.3f} | {r.adversarial.mean():.3f} | {p50:.2f} "
            f"| {p95:.2f} | {rate:,.0f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--embedder",
        default="wordllama",
        choices=["wordllama", "hashing", "minilm", "none"],
        help="Embedder of the plugin and of the dense baseline (default: the offline default).",
    )
    parser.add_argument("--samples", nargs="*", help="Only these sample ids.")
    args = parser.parse_args(argv)
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    if not args.data.exists():
        raise SystemExit(f"LoCoMo data not found at {args.data}; pass --data")
    data = load(args.data)
    if args.samples:
        data = [d for d in data if d[0] in set(args.samples)]
    embedder = None if args.embedder == "wordllama" else make_embedder(args.embedder)
    label = args.embedder
    ours = {
        f"mnemon default ({label})": SystemResult(f"mnemon default ({label})"),
        f"mnemon exhaustive-v1 ({label})": SystemResult(f"mnemon exhaustive-v1 ({label})"),
    }
    fts = SystemResult("SQLite FTS5 (porter, OR)")
    bm = SystemResult("bm25s (stopwords + Snowball)")
    dense = SystemResult(f"dense only ({label})")
    rrf = SystemResult(f"RRF k=60 (FTS5, {label})")
    with tempfile.TemporaryDirectory() as tmp:
        if args.embedder == "wordllama":
            # The default configuration, exactly as a user gets it from Mnemon.open().
            mem = Mnemon.open(Path(tmp) / "root")
            spaces = mem.spaces
            native = spaces.provider("mnemos")
            assert isinstance(native.embedder, WordLlamaEmbedder)  # type: ignore[attr-defined]
            embedder = native.embedder  # type: ignore[attr-defined]
        else:
            mem = Mnemon.open(Path(tmp) / "root", embedding={"enabled": False})
            spaces = MemorySpaces(
                mem.database,
                root=Path(tmp) / "root",
                providers=[MnemosProvider(mem.database, embedder=embedder)],
            )
        for sample, turns, questions in data:
            run_mnemon(spaces, sample, turns, questions, ours)
            run_fts5(turns, questions, fts)
            run_bm25s(turns, questions, bm)
            if embedder is not None:
                index = DenseIndex(embedder, turns)
                run_dense(index, questions, dense)
                run_rrf(turns, index, questions, rrf)
        spaces.close()
        mem.close()
    systems = [*ours.values(), fts, bm]
    if embedder is not None:
        systems += [dense, rrf]
    questions = sum(len(q) for _, _, q in data)
    print(
        f"LoCoMo-R on {len(data)} conversations, {questions} questions with evidence "
        f"(categories 1-4 main, 5 adversarial), top {K}."
    )
    print(table(systems))


if __name__ == "__main__":
    main()
