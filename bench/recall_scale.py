"""Recall latency and ingest rate of one native Memory Space at 10k and 100k memories.

Synthetic English-like memories (a third function words, the rest from a Zipf-distributed
vocabulary of 20,000 invented words; 8-40 words each; every tenth with an entity) are
written through ``MemorySpaces.remember_many`` (the normal write path: validation,
receipts, keyword index, term statistics, temporal and entity edges) in batches of 1,000,
without dense vectors. Queries are 2-6 words taken from random stored
memories plus one unrelated word, searched with ``MemorySpaces.search`` (default pipeline:
smart mode, strict-v1 quality, anchor / lexical recovery), limit 10, on a warm process.

Goals (issue 4): p95 ≤ 25 ms at 100k on a 2-core machine; ingest ≥ 2,000 memories/s without
dense vectors. A last row repeats 100k with WordLlama vectors (the default embedder) for
reference.

Run:  python bench/recall_scale.py                  (10k, 100k, 100k + vectors; ≈3 minutes)
      python bench/recall_scale.py --sizes 10000 --queries 300

Prints one Markdown table and exits. Not a test.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph_mnemon.adapters.embeddings import WordLlamaEmbedder
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.memory_layers.spaces import MemorySpaces
from langgraph_mnemon.storage.db import Database, create_engine

_SYLLABLES = (
    "ka", "lo", "mi", "ren", "sta", "por", "vel", "dan", "qui", "tor", "ex", "am", "bri", "sel",
    "nu", "gra", "fen", "zo", "lit", "mar", "cor", "pre", "tal", "vis", "ob", "un", "tri", "pel",
    "ras", "hon", "gil", "wen",
)  # fmt: skip


_FUNCTION = frozenset(
    ("the", "a", "of", "to", "and", "in", "is", "it", "that", "for", "on", "with", "as", "was",
     "at", "by", "this", "be", "are", "from")
)  # fmt: skip
_FUNCTION_WORDS = sorted(_FUNCTION)


def vocabulary(size: int, rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Corpus:
    def __init__(self, seed: int = 7, vocab: int = 20_000) -> None:
        self.rng = random.Random(seed)
        # Function words take a third of the tokens (as in English); content words follow a
        # Zipf law whose head is a few percent of the tokens.
        self.words = vocabulary(vocab, self.rng)
        weights = [1.0 / (rank + 30) for rank in range(len(self.words))]
        total = sum(weights)
        self.cum: list[float] = []
        acc = 0.0
        for w in weights:
            acc += w / total
            self.cum.append(acc)

    def word(self) -> str:
        import bisect

        return self.words[min(bisect.bisect(self.cum, self.rng.random()), len(self.words) - 1)]

    def memory(self, index: int) -> dict[str, object]:
        n = self.rng.randint(8, 40)
        text = (
            " ".join(
                self.rng.choice(_FUNCTION_WORDS) if self.rng.random() < 0.33 else self.word()
                for _ in range(n)
            ).capitalize()
            + "."
        )
        item: dict[str, object] = {"content": text, "metadata": {"n": index}}
        if index % 10 == 0:
            item["entities"] = [f"{self.word()}-project"]
        return item


def run(size: int, queries: int, batch: int, dense: bool) -> dict[str, float]:
    corpus = Corpus()
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(create_engine(f"sqlite:///{tmp}/scale.db"))
        embedder = WordLlamaEmbedder() if dense else None
        spaces = MemorySpaces(db, root=tmp, providers=[MnemosProvider(db, embedder=embedder)])
        space = spaces.create_space("scale", space_id="scale").space
        assert space is not None
        stored: list[str] = []
        elapsed = 0.0
        for start in range(0, size, batch):
            items = [corpus.memory(i) for i in range(start, min(size, start + batch))]
            began = time.perf_counter()
            receipts = spaces.remember_many(items, space_id=space.id)
            elapsed += time.perf_counter() - began
            assert all(r.committed for r in receipts)
            stored.extend(str(i["content"]) for i in items[:5])
        rng = random.Random(11)
        texts = []
        for _ in range(queries):
            words = [
                w for w in rng.choice(stored).rstrip(".").lower().split() if w not in _FUNCTION
            ]
            k = rng.randint(2, min(6, len(words)))
            picked = [*rng.sample(words, k), corpus.word()]
            texts.append(" ".join(picked))
        for text in texts[:20]:  # warm-up
            spaces.search(text, space_ids=[space.id])
        latencies = []
        for text in texts:
            began = time.perf_counter()
            spaces.search(text, space_ids=[space.id])
            latencies.append(time.perf_counter() - began)
        spaces.close()
        db.dispose()
    latencies.sort()
    return {
        "dense": dense,
        "size": size,
        "ingest": size / elapsed,
        "p50": statistics.median(latencies) * 1000,
        "p95": latencies[min(len(latencies) - 1, math.ceil(0.95 * len(latencies)) - 1)] * 1000,
        "max": latencies[-1] * 1000,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument(
        "--dense-sizes",
        default="100000",
        help="Also run these sizes with WordLlama vectors (the default embedder); '' for none.",
    )
    args = parser.parse_args(argv)
    rows = [run(int(s), args.queries, args.batch, False) for s in args.sizes.split(",")]
    rows += [run(int(s), args.queries, args.batch, True) for s in args.dense_sizes.split(",") if s]
    print(
        "| memories | vectors | ingest memories/s | recall p50 ms | recall p95 ms | recall max ms |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        kind = "WordLlama (hybrid)" if r["dense"] else "none (keyword)"
        print(
            f"| {int(r['size']):,} | {kind} | {r['ingest']:,.0f} | {r['p50']:.2f} "
            f"| {r['p95']:.2f} | {r['max']:.2f} |"
        )


if __name__ == "__main__":
    main()
