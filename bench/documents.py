"""Benchmark Documents: create throughput and search latency at 1,000 and 10,000 documents.

Synthetic, mixed English / Chinese documents (Zipf-distributed vocabularies, ~1-3 KB bodies)
are created through the public ``Documents.create`` (every create is a full durable commit:
temp files, fsync, rename, index.json rewrite). Searches use queries cut from random documents
(English words, Chinese phrases, mixed) plus 10 % that match nothing (suggestion path).

Goal: search p95 <= 20 ms at 1,000 documents (the table's ``p95 / goal`` column, limit 4).
No baseline runs beside it; each of the ``--rounds`` rounds (3) builds a fresh corpus with the
same seed, and the table shows the median of each figure over the rounds. Creates grow with the
corpus (each rewrites ``index.json``), so a 10,000-document round takes minutes: the default
stops at 3,000 (about 1.5 minutes on a quiet 2-core machine).

Run:  python bench/documents.py                               (sizes 1000,3000, 3 rounds)
      python bench/documents.py --sizes 1000,10000 --rounds 3   (the bigger run, ~15 minutes)

Prints one Markdown table and exits. Not a test.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph_mnemon.memory_layers.documents import Documents

_SYLLABLES = [
    "ka", "lo", "mi", "ren", "sta", "por", "vel", "dan", "qui", "tor", "ex", "am", "bri",
    "sel", "nu", "gra", "fen", "zo", "lit", "mar", "cor", "pre", "tal", "vis",
]  # fmt: skip
_TECH_WORDS = (
    "database migration rollback deploy cluster kafka consumer lag latency index cache "
    "schema release pipeline incident runbook postgres replica failover backup restore "
    "queue worker timeout retry gateway token auth storage archive search vector embedding "
    "config secret tenant billing invoice metric alert dashboard capacity budget"
)
_HAN = (
    "数据库迁移回滚部署集群消费者延迟索引缓存模式发布流水线事故手册主从副本故障切换备份恢复"
    "队列工作超时重试网关令牌认证存储归档搜索向量嵌入配置密钥租户账单发票指标告警看板容量预算"
    "我们决定使用下个季度完成方案保留三十天评估选项性能安全团队负责审核上线计划变更记录"
)


def _zipf_pick(rng: random.Random, items: list[str]) -> str:
    # Rank r has weight 1/r: a few very common words, a long tail.
    return items[min(int(len(items) ** rng.random()) - 1, len(items) - 1)]


class Corpus:
    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        self.rng = rng
        words = set(_TECH_WORDS.split())
        while len(words) < 4000:
            words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
        self.english = sorted(words)  # sets iterate in hash order: sort for repeatability
        rng.shuffle(self.english)
        han = sorted(set(_HAN))
        phrases = set()
        while len(phrases) < 3000:
            phrases.add("".join(rng.choice(han) for _ in range(rng.randint(2, 4))))
        self.chinese = sorted(phrases)
        rng.shuffle(self.chinese)

    def sentence(self, chinese: bool) -> str:
        rng = self.rng
        if chinese:
            parts = [_zipf_pick(rng, self.chinese) for _ in range(rng.randint(4, 12))]
            if rng.random() < 0.3:
                parts.insert(rng.randrange(len(parts)), " " + _zipf_pick(rng, self.english) + " ")
            return "".join(parts) + "。"
        words = [_zipf_pick(rng, self.english) for _ in range(rng.randint(6, 16))]
        if rng.random() < 0.2:
            words.insert(rng.randrange(len(words)), _zipf_pick(rng, self.chinese))
        return " ".join(words).capitalize() + "."

    def document(self, n: int) -> tuple[str, str, str]:
        rng = self.rng
        chinese = rng.random() < 0.4
        title = self.sentence(chinese)[:60].rstrip("。.") + f" {n}"
        description = self.sentence(chinese)[:200]
        paragraphs = [
            " ".join(self.sentence(chinese) for _ in range(rng.randint(2, 5)))
            for _ in range(rng.randint(2, 6))
        ]
        return title, description, "\n\n".join(paragraphs)

    def query(self, bodies: list[str]) -> str:
        rng = self.rng
        if rng.random() < 0.1:
            return rng.choice(["量子纠缠实验", "zebra quantum telescope", "火星基地 mars base"])
        body = rng.choice(bodies)
        start = rng.randrange(max(1, len(body) - 40))
        chunk = body[start : start + 40]
        han = [c for c in chunk if "\u4e00" <= c <= "\u9fff"]
        if len(han) >= 4 and rng.random() < 0.6:
            i = rng.randrange(len(han) - 3)
            return "".join(han[i : i + rng.randint(2, 4)])
        words = [w.strip(".,。") for w in chunk.split()[1:-1] if w.strip(".,。")]
        if not words:
            return rng.choice(self.english[:50])
        i = rng.randrange(len(words))
        return " ".join(words[i : i + rng.randint(1, 3)])


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _timed_searches(docs: Documents, qs: list[str]) -> tuple[list[float], list[float], int]:
    """Latencies of every query at limit 4 and at limit 20, and how many found something."""
    for q in qs[:20]:
        docs.search(q)  # warm the in-memory index of this instance
    lat4, lat20, hits = [], [], 0
    for q in qs:
        t0 = time.perf_counter()
        result = docs.search(q, limit=4)
        lat4.append(time.perf_counter() - t0)
        hits += bool(result.results)
        t0 = time.perf_counter()
        docs.search(q, limit=20)
        lat20.append(time.perf_counter() - t0)
    return lat4, lat20, hits


def run(sizes: list[int], queries: int, seed: int) -> list[dict[str, float]]:
    """One round: grow a fresh corpus through ``sizes``; one row of figures (ms) per size."""
    corpus = Corpus(seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mnemon-bench-") as tmp:
        docs = Documents(
            Path(tmp) / ".mnemon", workspace=tmp, active_limit_bytes=1024 * 1024 * 1024
        )
        bodies: list[str] = []
        count = 0
        for size in sizes:
            create_times = []
            started = time.perf_counter()
            while count < size:
                title, description, body = corpus.document(count)
                t0 = time.perf_counter()
                docs.create(title, body, description=description)
                create_times.append(time.perf_counter() - t0)
                bodies.append(body)
                count += 1
            elapsed = time.perf_counter() - started
            last = create_times[-min(len(create_times), 200) :]
            # Cold: a fresh instance (another process) reads every body once to build its index.
            fresh = Documents(docs.root, workspace=tmp, active_limit_bytes=1024 * 1024 * 1024)
            t0 = time.perf_counter()
            fresh.search("database")
            cold = time.perf_counter() - t0
            qs = [corpus.query(bodies) for _ in range(queries)]
            lat4, lat20, hits = _timed_searches(docs, qs)
            rows.append(
                {
                    "size": size,
                    "mib": docs.usage().used / 1048576,
                    "creates": len(create_times) / elapsed,
                    "create50": statistics.median(last) * 1e3,
                    "create95": pct(last, 0.95) * 1e3,
                    "s4_50": statistics.median(lat4) * 1e3,
                    "s4_95": pct(lat4, 0.95) * 1e3,
                    "s20_50": statistics.median(lat20) * 1e3,
                    "s20_95": pct(lat20, 0.95) * 1e3,
                    "cold": cold * 1e3,
                    "hits": hits,
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,3000", help="comma-separated corpus sizes")
    parser.add_argument("--queries", type=int, default=300, help="queries per size")
    parser.add_argument("--rounds", type=int, default=3, help="fresh corpora built and measured")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    began = time.perf_counter()
    rounds = [run(sizes, args.queries, args.seed) for _ in range(args.rounds)]
    took = time.perf_counter() - began

    def med(i: int, key: str) -> float:
        return statistics.median(r[i][key] for r in rounds)

    print(
        f"Documents: medians of {args.rounds} rounds (a fresh corpus each, same seed), "
        f"{args.queries} queries per size, {took:.0f} s\n"
    )
    print(
        "| documents | active MiB | creates/s (this step) | create p50 / p95 ms (last 200) "
        "| search p50 / p95 ms (limit 4) | search p50 / p95 ms (limit 20) "
        "| search p95 / goal (20 ms) | cold first search ms | queries with results |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for i, size in enumerate(sizes):
        print(
            f"| {size:,} | {med(i, 'mib'):.1f} | {med(i, 'creates'):.0f} "
            f"| {med(i, 'create50'):.1f} / {med(i, 'create95'):.1f} "
            f"| {med(i, 's4_50'):.2f} / {med(i, 's4_95'):.2f} "
            f"| {med(i, 's20_50'):.2f} / {med(i, 's20_95'):.2f} "
            f"| {med(i, 's4_95') / 20:.2f}x | {med(i, 'cold'):.0f} "
            f"| {med(i, 'hits'):.0f}/{args.queries} |"
        )


if __name__ == "__main__":
    main()
