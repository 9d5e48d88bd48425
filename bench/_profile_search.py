"""Where one ``mem.spaces.search(question, limit=20, space_ids=[conv])`` spends its time on the
LoCoMo dev data (SQLite, default configuration, WordLlama, loaded as ``bench/locomo.py`` does).

Every stage is timed by wrapping the function that does it (inclusive times: a stage that
calls another includes it); the table shows each stage's p50 / mean per search over every
question, and how many times it ran per search. ``--cprofile`` also prints the top functions
of a cProfile run over all questions.

Run:  python bench/_profile_search.py [--cprofile] [--rounds 2]

Not a test; it needs ``../shared/bench/locomo-dev.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import io
import pstats
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import fresh_database
from bench.locomo import DATA, K, load, memory_items
from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.providers.mnemos import _provider, _ranking, _search
from langgraph_mnemon.memory_layers.spaces import _search as layer_search
from langgraph_mnemon.memory_layers.spaces import _service

_SPENT: dict[str, float] = defaultdict(float)
_CALLS: dict[str, int] = defaultdict(int)


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _SPENT[name] += time.perf_counter() - start
            _CALLS[name] += 1

    return wrapper


# (owner, attribute, stage name): wrapped in place for the profile.
_STAGES: list[tuple[Any, str, str]] = [
    (_service.MemorySpaces, "search", "0 total spaces.search"),
    (_service, "check_search", "1 layer: check_search"),
    (_service, "recalled", "1 layer: recalled (item text)"),
    (layer_search.FederatedSearch, "run", "1 layer: FederatedSearch.run"),
    (layer_search.FederatedSearch, "_ask_all", "2 layer: _ask_all (incl. provider)"),
    (layer_search, "fuse", "2 layer: fuse"),
    (layer_search, "apply_quality", "2 layer: apply_quality"),
    (layer_search, "coverage_plan", "2 layer: coverage_plan"),
    (layer_search.FederatedSearch, "_cover", "2 layer: _cover (incl. recovery search)"),
    (layer_search.FederatedSearch, "_recover", "3 layer: _recover (keyword pass)"),
    (layer_search, "covering", "3 layer: covering"),
    (layer_search.FederatedSearch, "_result", "2 layer: _result"),
    (_provider.MnemosProvider, "search", "4 provider: search (public, all calls)"),
    (_provider.MnemosProvider, "_embed_query", "5 provider: embed query"),
    (_provider.MnemosProvider, "_search_rows", "5 provider: _search_rows"),
    (_provider, "search", "6 sql+rank: _search.search"),
    (_search, "space_stats", "7 sql: space_stats"),
    (_search, "stats_and_frequencies", "7 sql: stats_and_frequencies"),
    (_search, "neighbour_terms", "7 sql: neighbour_terms"),
    (_search, "document_frequencies", "7 sql: document_frequencies"),
    (_search, "_keyword_pool", "7 sql: keyword pool (FTS5)"),
    (_search, "_dense_pool", "7 dense pool (cache refresh + top)"),
    (_search, "terms_by_seq", "7 sql: terms_by_seq"),
    (_search, "neighbour_seqs", "7 sql: neighbour_seqs"),
    (_search, "full_rows", "7 sql: full_rows"),
    (_search, "results", "7 hydrate: results (insight)"),
    (_search, "rank", "7 rank (incl. neighbour/feedback reads)"),
    (_search, "_feedback", "8 rank: feedback pass"),
    (_search, "apply_neighbour_boost", "8 rank: apply_neighbour_boost"),
    (_search, "ranked_seqs", "8 rank: ranked_seqs"),
    (_ranking.HybridScorer, "__init__", "8 rank: HybridScorer.__init__"),
]


def _install(fine: bool) -> None:
    for owner, attr, name in _STAGES if fine else _STAGES[:1]:
        if not hasattr(owner, attr):  # a stage of another version of the code
            continue
        setattr(owner, attr, _timed(name, getattr(owner, attr)))


def _load(mem: Any, path: Path) -> list[tuple[str, list[Any]]]:
    out = []
    for sample, turns, questions in load(path):
        mem.spaces.create_space(f"LoCoMo {sample}", space_id=sample)
        for start in range(0, len(turns), 200):
            mem.spaces.remember_many(memory_items(turns[start : start + 200]), space_id=sample)
        out.append((sample, questions))
    return out


def _table(per_search: dict[str, list[float]], calls: dict[str, list[int]]) -> str:
    lines = ["| stage | p50 ms | mean ms | calls / search |", "|---|---|---|---|"]
    for name in sorted(per_search):
        values = per_search[name]
        lines.append(
            f"| {name} | {statistics.median(values) * 1000:.3f} "
            f"| {statistics.fmean(values) * 1000:.3f} | {statistics.fmean(calls[name]):.2f} |"
        )
    return "\n".join(lines)


@contextlib.contextmanager
def _database(url: str | None) -> Iterator[str | None]:
    """A fresh PostgreSQL database on ``url``'s server (dropped after), or None: SQLite."""
    if not url:
        yield None
        return
    with fresh_database(url, "profile") as fresh:
        yield fresh


def _print_min_of(mem: Any, data: list[tuple[str, list[Any]]], repeat: int) -> None:
    """Each question searched ``repeat`` times in a row, its fastest time kept: a measure of
    the work a search does that the other processes of a busy machine disturb little."""
    best = []
    for sample, questions in data:
        for q in questions:
            took = []
            for _ in range(repeat):
                start = time.perf_counter()
                mem.spaces.search(q.text, limit=K, space_ids=[sample])
                took.append(time.perf_counter() - start)
            best.append(min(took))
    best.sort()
    p50, p95 = best[len(best) // 2] * 1000, best[int(0.95 * len(best)) - 1] * 1000
    mean = statistics.fmean(best) * 1000
    print(f"min of {repeat}: p50 {p50:.3f} ms, p95 {p95:.3f} ms, mean {mean:.3f} ms")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cprofile", action="store_true")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--database-url", default=None, help="PostgreSQL server (a fresh database on it)."
    )
    parser.add_argument(
        "--min-of", type=int, default=0, help="Also each question's fastest of N searches."
    )
    parser.add_argument(
        "--total", action="store_true", help="Time only the whole search (no stage wrappers)."
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, _database(args.database_url) as url:
        mem = Mnemon.open(Path(tmp) / "root", **({"database_url": url} if url else {}))
        data = _load(mem, args.data)
        for sample, questions in data:  # warm-up: caches, statements, the embedder
            for q in questions[:5]:
                mem.spaces.search(q.text, limit=K, space_ids=[sample])
        if args.cprofile:
            profile = cProfile.Profile()
            profile.enable()
            for sample, questions in data:
                for q in questions:
                    mem.spaces.search(q.text, limit=K, space_ids=[sample])
            profile.disable()
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(45)
            pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(70)
            print(out.getvalue())
        _install(not args.total)
        per_search: dict[str, list[float]] = defaultdict(list)
        calls: dict[str, list[int]] = defaultdict(list)
        cpu = time.process_time()
        for _ in range(args.rounds):
            for sample, questions in data:
                for q in questions:
                    _SPENT.clear()
                    _CALLS.clear()
                    mem.spaces.search(q.text, limit=K, space_ids=[sample])
                    for _, _, name in _STAGES if not args.total else _STAGES[:1]:
                        per_search[name].append(_SPENT.get(name, 0.0))
                        calls[name].append(_CALLS.get(name, 0))
        cpu = (time.process_time() - cpu) / max(1, len(per_search[_STAGES[0][2]]))
        if args.min_of:
            _print_min_of(mem, data, args.min_of)
        mem.close()
    print(f"CPU time per search {cpu * 1000:.3f} ms")
    print(_table(per_search, calls))
    total = sorted(per_search[_STAGES[0][2]])
    print(f"total p95 {total[int(0.95 * len(total)) - 1] * 1000:.2f} ms")


if __name__ == "__main__":
    main()
