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
    no quality cut, anchor/lexical recovery). With ``--embedder`` other than the default,
    the same pipeline with that embedder (``none`` = keyword only);
  * ``mnemon strict-v1`` — the same search with the strict-v1 cut of the model's envelope
    (``policy="strict-v1"``; the default search cuts nothing and returns the depth asked);
  * ``SQLite FTS5`` — porter tokenizer, OR of the question's non-stopword terms, bm25 order;
  * ``bm25s`` — BM25 with English stopwords and the Snowball stemmer;
  * ``dense`` — cosine similarity with the same embedder the plugin uses;
  * ``RRF(FTS5, dense)`` — naive reciprocal-rank fusion, k = 60.

The tune / check columns split the conversations (tune: conv-26, conv-30, conv-41; check:
conv-42, conv-43) to show the defaults are not fitted to the questions they are judged on.

  * with ``--ablation``: ``mnemon default`` with no dense share in the score (``dense=0``: the
    fusion's gain over lexical-only), without the neighbour rows (``adjacent=0``), without
    pseudo-relevance feedback (``prf=0.1``, off by default), without the lead-term boost
    (``lead=0``), without the date cue (``dated=0``) and without any conversation cue
    (``question=0, reply=0, dated=0``), same process, same rounds.

Run:  python bench/locomo.py                       (≈2-3 minutes on 2 cores, 3 rounds)
      python bench/locomo.py --ablation            (≈6-8 minutes: six more systems)
      python bench/locomo.py --embedder hashing    (or wordllama, minilm, none)

The data is read from ../shared/bench/locomo-dev.json (CC BY-NC 4.0, evaluation only; never
copied into this repository). Prints one Markdown table and exits. Not a test.
"""

from __future__ import annotations

import argparse
import dataclasses
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
    MiniLMEmbedder,
    WordLlamaEmbedder,
)
from langgraph_mnemon.adapters.providers.mnemos import HybridWeights, MnemosProvider
from langgraph_mnemon.adapters.providers.text import STOPWORDS
from langgraph_mnemon.memory_layers.spaces import MemorySpaces

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo-dev.json"
TUNE = ("conv-26", "conv-30", "conv-41")
CHECK = ("conv-42", "conv-43")
K = 20
SESSION_DEPTH = 50  # the deepest search(limit=...) takes
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


def session_of(dia_id: str) -> int:
    """The session number of a dialog id (``"D3:5"`` -> 3)."""
    return int(dia_id[1:].split(":", 1)[0])


def session_hits(ranked: Sequence[str], truth: set[str], k: int = 10) -> tuple[float, float]:
    """``(any-hit, all-hit)`` at ``k`` sessions, as LongMemEval's turn-to-session evaluation
    counts them: the ranking is read down until its turns span ``k`` distinct sessions (or it
    ends), a session counts as retrieved when any of those turns belongs to it, and the
    question's evidence sessions are those of its evidence turns."""
    wanted = {session_of(d) for d in truth}
    seen: set[int] = set()
    for dia in ranked:
        if len(seen) >= k:
            break
        seen.add(session_of(dia))
    return float(bool(wanted & seen)), float(wanted <= seen)


@dataclass
class SystemResult:
    name: str
    main: Scores = field(default_factory=Scores)
    tune: Scores = field(default_factory=Scores)
    check: Scores = field(default_factory=Scores)
    adversarial: Scores = field(default_factory=Scores)
    categories: dict[int, Scores] = field(default_factory=dict)
    session_any: list[float] = field(default_factory=list)
    session_all: list[float] = field(default_factory=list)
    returned: list[int] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    ingest_seconds: float = 0.0
    ingested: int = 0

    def add(self, question: Question, ranked: Sequence[str]) -> None:
        self.categories.setdefault(question.category, Scores()).add(ranked, question.evidence)
        if question.category == 5:
            self.adversarial.add(ranked, question.evidence)
            return
        self.returned.append(len(ranked))
        self.main.add(ranked, question.evidence)
        (self.tune if question.sample in TUNE else self.check).add(ranked, question.evidence)

    def add_sessions(self, question: Question, ranked: Sequence[str]) -> None:
        """Session-level hits of a deep ranking (main categories only)."""
        if question.category != 5:
            hit_any, hit_all = session_hits(ranked, question.evidence)
            self.session_any.append(hit_any)
            self.session_all.append(hit_all)


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


def memory_items(turns: Sequence[Turn]) -> list[dict[str, Any]]:
    """The ``remember_many`` items of ``turns``: one memory per turn, the protocol's text and
    metadata (dia_id, session, session date)."""
    return [
        {"content": t.text, "metadata": {"dia_id": t.dia_id, "session": t.session, "date": t.date}}
        for t in turns
    ]


def _terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


Query = Callable[..., list[str]]
"""``(question, limit=K) -> dia ids``, best first."""


def setup_fts5(turns: list[Turn], result: SystemResult) -> Query:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='porter')")
    start = time.perf_counter()
    conn.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", enumerate(t.text for t in turns))
    conn.commit()
    result.ingest_seconds += time.perf_counter() - start
    result.ingested += len(turns)

    def query(text: str, limit: int = K) -> list[str]:
        terms = _terms(text)
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', "") + '"' for t in terms)
        rows = conn.execute(
            "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (match, limit)
        ).fetchall()
        return [turns[r[0]].dia_id for r in rows]

    return query


def setup_bm25s(turns: list[Turn], result: SystemResult) -> Query:
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

    def query(text: str, limit: int = K) -> list[str]:
        qt = bm25s.tokenize([text], stopwords="en", stemmer=stemmer, show_progress=False)
        if not qt.ids or not qt.ids[0]:
            return []
        docs, scores = retriever.retrieve(qt, k=min(limit, len(turns)), show_progress=False)
        return [turns[int(i)].dia_id for i, s in zip(docs[0], scores[0], strict=False) if s > 0]

    return query


class DenseIndex:
    def __init__(self, embedder: Any, turns: list[Turn]) -> None:
        start = time.perf_counter()
        vectors = np.asarray(embedder.embed_documents([t.text for t in turns]), dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        self.seconds = time.perf_counter() - start
        self.embedder = embedder
        self.vectors = vectors
        self.turns = turns

    def query(self, text: str, limit: int = K) -> list[str]:
        q = np.asarray(self.embedder.embed_query(text), dtype=np.float32)
        q /= max(float(np.linalg.norm(q)), 1e-12)
        sims = self.vectors @ q
        top = np.argsort(-sims)[:limit]
        return [self.turns[int(i)].dia_id for i in top]


def setup_dense(index: DenseIndex, result: SystemResult) -> Query:
    result.ingest_seconds += index.seconds
    result.ingested += len(index.turns)
    return index.query


def setup_rrf(turns: list[Turn], index: DenseIndex, result: SystemResult) -> Query:
    lexical = setup_fts5(turns, SystemResult("scratch"))
    result.ingest_seconds += index.seconds
    result.ingested += len(turns)

    def query(text: str, limit: int = K) -> list[str]:
        fused: dict[str, float] = {}
        for ranking in (lexical(text, limit * 3), index.query(text, limit)):
            for rank, dia in enumerate(ranking, start=1):
                fused[dia] = fused.get(dia, 0.0) + 1.0 / (60 + rank)
        return sorted(fused, key=lambda d: -fused[d])[:limit]

    return query


def setup_mnemon(
    spaces: MemorySpaces,
    sample: str,
    turns: list[Turn],
    results: dict[str, SystemResult],
    variants: dict[str, dict[str, float]] | None = None,
) -> dict[str, Query]:
    """Ingest through the write path once; one query function per configured policy. A name
    in ``variants`` searches with the provider's weights changed by those fields (the
    ablation), the others with the provider's own."""
    native = spaces.provider("mnemos")
    default = native.weights  # type: ignore[attr-defined]
    space = spaces.create_space(f"LoCoMo {sample}", space_id=sample).space
    assert space is not None
    start = time.perf_counter()
    for chunk in range(0, len(turns), 200):
        receipts = spaces.remember_many(memory_items(turns[chunk : chunk + 200]), space_id=space.id)
        assert all(r.committed for r in receipts), receipts[:1]
    seconds = time.perf_counter() - start
    queries: dict[str, Query] = {}
    for name, result in results.items():
        result.ingest_seconds += seconds
        result.ingested += len(turns)
        # The default is search() as a caller gets it (no cut: depth); strict-v1 is the cut
        # the model's envelope applies (recall_quality.policy).
        policy = "strict-v1" if "strict-v1" in name else None

        weights = dataclasses.replace(default, **(variants or {}).get(name, {}))

        def query(
            text: str,
            limit: int = K,
            policy: str | None = policy,
            space_id: str = space.id,
            weights: HybridWeights = weights,
        ) -> list[str]:
            native.weights = weights  # type: ignore[attr-defined]
            found = spaces.search(text, limit=limit, space_ids=[space_id], policy=policy)
            return [str(r.metadata.get("dia_id")) for r in found.results]

        queries[name] = query
    return queries


def measure(
    systems: Sequence[SystemResult],
    queries: Sequence[dict[str, Query]],
    questions: Sequence[list[Question]],
    rounds: int,
) -> None:
    """Run every system on every question ``rounds`` times, rotating the order of the systems
    each round; quality from the first round (rankings are deterministic), each question's
    latency the median of its rounds."""
    times: dict[str, list[list[float]]] = {s.name: [] for s in systems}
    for r in range(rounds):
        order = list(systems[r % len(systems) :]) + list(systems[: r % len(systems)])
        for system in order:
            took: list[float] = []
            for conv, qs in zip(queries, questions, strict=True):
                fn = conv[system.name]
                for q in qs:
                    start = time.perf_counter()
                    ranked = fn(q.text)
                    took.append(time.perf_counter() - start)
                    if r == 0:
                        system.add(q, ranked)
            times[system.name].append(took)
    for system in systems:
        per_round = times[system.name]
        system.latencies = [statistics.median(v) for v in zip(*per_round, strict=True)]
        # Session level wants a deep ranking (LongMemEval reads it until it spans 10
        # sessions): one untimed pass at the deepest limit a search takes.
        for conv, qs in zip(queries, questions, strict=True):
            for q in qs:
                system.add_sessions(q, conv[system.name](q.text, SESSION_DEPTH))


def make_embedder(name: str) -> Any:
    if name == "wordllama":
        return WordLlamaEmbedder()
    if name == "hashing":
        return HashingEmbedder()
    if name == "minilm":
        return MiniLMEmbedder()  # all-MiniLM-L6-v2 on onnxruntime (the same vectors as torch's)
    if name == "none":
        return None
    raise SystemExit(f"unknown embedder {name!r}")


def _p95(values: Sequence[float]) -> float:
    lat = sorted(values)
    return lat[min(len(lat) - 1, math.ceil(0.95 * len(lat)) - 1)] * 1000 if lat else 0.0


def table(results: list[SystemResult], baseline: SystemResult) -> str:
    """One Markdown table; the ``÷ FTS5`` columns are ratios against the FTS5 baseline."""
    head = (
        "| system | R@1 | R@5 | R@10 | R@20 | MRR | R@5 tune | MRR tune | R@5 check | MRR check "
        "| adv R@5 | adv MRR | p50 ms | p95 ms | R@5 check ÷ FTS5 | MRR check ÷ FTS5 "
        "| p95 ÷ FTS5 | ingest /s |"
    )
    lines = [head, "|" + "---|" * 18]
    base_p95 = _p95(baseline.latencies) or 1e-9
    base_r5, base_mrr = baseline.check.mean(5) or 1e-9, baseline.check.mean() or 1e-9
    for r in results:
        p50 = statistics.median(r.latencies) * 1000 if r.latencies else 0.0
        p95 = _p95(r.latencies)
        rate = r.ingested / r.ingest_seconds if r.ingest_seconds else 0.0
        lines.append(
            f"| {r.name} | {r.main.mean(1):.3f} | {r.main.mean(5):.3f} | {r.main.mean(10):.3f} "
            f"| {r.main.mean(20):.3f} | {r.main.mean():.3f} | {r.tune.mean(5):.3f} "
            f"| {r.tune.mean():.3f} | {r.check.mean(5):.3f} | {r.check.mean():.3f} "
            f"| {r.adversarial.mean(5):.3f} | {r.adversarial.mean():.3f} | {p50:.2f} "
            f"| {p95:.2f} | {r.check.mean(5) / base_r5:.2f}× | {r.check.mean() / base_mrr:.2f}× "
            f"| {p95 / base_p95:.1f}× | {rate:,.0f} |"
        )
    return "\n".join(lines)


CATEGORY_NAMES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}


def depth_table(results: list[SystemResult], baseline: SystemResult) -> str:
    """Session level (LongMemEval's turn-to-session any-hit / all-hit at 10 sessions, from a
    ranking of up to 50 turns) and the depth each system returned at limit 20."""
    lines = [
        (
            "| system | session any-hit@10 | session all-hit@10 | any-hit − FTS5 "
            "| all-hit − FTS5 | rows returned at limit 20, median | questions with < 10 rows |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    base_any, base_all = _mean(baseline.session_any), _mean(baseline.session_all)
    for r in results:
        few = sum(1 for n in r.returned if n < 10) / max(1, len(r.returned))
        lines.append(
            f"| {r.name} | {_mean(r.session_any):.3f} | {_mean(r.session_all):.3f} "
            f"| {_mean(r.session_any) - base_any:+.3f} | {_mean(r.session_all) - base_all:+.3f} "
            f"| {statistics.median(r.returned) if r.returned else 0:.1f} | {few:.0%} |"
        )
    return "\n".join(lines)


def category_table(results: list[SystemResult]) -> str:
    """R@5 / MRR / R@20 per LoCoMo category (5, adversarial, outside the main set)."""
    cats = sorted({c for r in results for c in r.categories})
    head = " | ".join(f"{CATEGORY_NAMES.get(c, c)} ({c}) R@5 / MRR / R@20" for c in cats)
    lines = [f"| system | {head} |", "|---|" + "---|" * len(cats)]
    for r in results:
        cells = []
        for c in cats:
            sc = r.categories.get(c, Scores())
            cells.append(f"{sc.mean(5):.3f} / {sc.mean():.3f} / {sc.mean(20):.3f}")
        lines.append(f"| {r.name} | " + " | ".join(cells) + " |")
    counts = ", ".join(f"{c}: {len(results[0].categories.get(c, Scores()).mrr)}" for c in cats)
    return "\n".join(lines) + f"\n\nQuestions per category: {counts}."


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _ours(
    label: str, ablation: bool
) -> tuple[dict[str, SystemResult], dict[str, dict[str, float]]]:
    """Our systems (default, strict-v1 and, with ``ablation``, the default with one part off
    each: see the module docstring) and the weight changes of the ablation systems."""
    ours = {
        f"mnemon default ({label})": SystemResult(f"mnemon default ({label})"),
        f"mnemon strict-v1 ({label})": SystemResult(f"mnemon strict-v1 ({label})"),
    }
    variants: dict[str, dict[str, float]] = {}
    if ablation:
        ablations = (
            ("no dense share", {"dense": 0.0}),
            ("no neighbour rows", {"adjacent": 0.0}),
            ("with PRF", {"prf": 0.1}),
            ("no lead", {"lead": 0.0}),
            ("no date cue", {"dated": 0.0}),
            ("no conversation cues", {"question": 0.0, "reply": 0.0, "dated": 0.0}),
        )
        for name, change in ablations:
            full = f"mnemon default ({label}), {name}"
            ours[full] = SystemResult(full)
            variants[full] = change
    return ours, variants


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--embedder",
        default="wordllama",
        choices=["wordllama", "hashing", "minilm", "none"],
        help="Embedder of the plugin and of the dense baseline (default: the offline default).",
    )
    parser.add_argument("--samples", nargs="*", help="Only these sample ids.")
    parser.add_argument(
        "--rounds", type=int, default=3, help="Timing rounds (median per query; default 3)."
    )
    parser.add_argument(
        "--ablation",
        action="store_true",
        help="Also mnemon default without the dense share, the neighbour rows, feedback, and "
        "feedback and lead boost.",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    if not args.data.exists():
        raise SystemExit(f"LoCoMo data not found at {args.data}; pass --data")
    data = load(args.data)
    if args.samples:
        data = [d for d in data if d[0] in set(args.samples)]
    embedder = None if args.embedder == "wordllama" else make_embedder(args.embedder)
    label = args.embedder
    ours, variants = _ours(label, args.ablation)
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
        systems = [*ours.values(), fts, bm]
        if embedder is not None:
            systems += [dense, rrf]
        queries: list[dict[str, Query]] = []
        for sample, turns, _ in data:
            conv = setup_mnemon(spaces, sample, turns, ours, variants)
            conv[fts.name] = setup_fts5(turns, fts)
            conv[bm.name] = setup_bm25s(turns, bm)
            if embedder is not None:
                index = DenseIndex(embedder, turns)
                conv[dense.name] = setup_dense(index, dense)
                conv[rrf.name] = setup_rrf(turns, index, rrf)
            queries.append(conv)
        measure(systems, queries, [q for _, _, q in data], max(1, args.rounds))
        spaces.close()
        mem.close()
    questions = sum(len(q) for _, _, q in data)
    print(
        f"LoCoMo-R on {len(data)} conversations, {questions} questions with evidence "
        f"(categories 1-4 main, 5 adversarial), top {K}; latency = median of {args.rounds} "
        "rounds per query (systems in rotated order each round)."
    )
    print(table(systems, fts))
    print()
    print(depth_table(systems, fts))
    print()
    print(category_table(systems))


if __name__ == "__main__":
    main()
