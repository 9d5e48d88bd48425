"""Check that a speed change leaves the ranking alone: every LoCoMo dev question's ranked
``(dia_id, score)`` list from ``mem.spaces.search`` (default configuration, WordLlama, SQLite,
loaded as ``bench/locomo.py`` loads it), dumped to JSON and compared with an earlier dump.

Run:  python bench/_check_same_ranking.py dump before.json      (on the old code)
      python bench/_check_same_ranking.py dump after.json       (on the new code)
      python bench/_check_same_ranking.py compare before.json after.json

Both policies the benchmark runs are dumped (the default strict one and exhaustive-v1), with
the relevance tier and normalised score of each row, and the provider's unrounded scores of
every ranked row (``raw``: seq, final, lexical, semantic; the results round to 6 decimals).
``compare`` exits 1 on any difference (raw scores: more than ``--tolerance``, 1e-9) and prints
the first few. Not a test: it needs ``../shared/bench/locomo-dev.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.locomo import DATA, K, load, memory_items
from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.providers.mnemos import _search as native_search

POLICIES = (None, "exhaustive-v1")


def dump(path: Path, data_path: Path = DATA) -> int:
    """Search every question under both policies and write the ranked rows to ``path``.

    Returns:
        The number of questions searched.
    """
    data = load(data_path)
    out: dict[str, Any] = {}
    raw: list[list[Any]] = []
    results = native_search.results

    def recorded(space: Any, ranked: Any, full: Any, base: Any, final: Any) -> Any:
        raw.append([[s, final[s], base[s][1], base[s][2]] for s in ranked])
        return results(space, ranked, full, base, final)

    native_search.results = recorded  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        mem = Mnemon.open(Path(tmp) / "root")
        spaces = mem.spaces
        for sample, turns, questions in data:
            spaces.create_space(f"LoCoMo {sample}", space_id=sample)
            for start in range(0, len(turns), 200):
                spaces.remember_many(memory_items(turns[start : start + 200]), space_id=sample)
            for i, q in enumerate(questions):
                for policy in POLICIES:
                    raw.clear()
                    found = spaces.search(q.text, limit=K, space_ids=[sample], policy=policy)
                    out[f"raw/{sample}/{i}/{policy or 'default'}"] = list(raw)
                    out[f"{sample}/{i}/{policy or 'default'}"] = [
                        [
                            str(r.metadata.get("dia_id")),
                            r.score,
                            r.normalized_score,
                            r.relevance_tier,
                            r.matched_via,
                        ]
                        for r in found.results
                    ]
        spaces.close()
        mem.close()
    native_search.results = results  # type: ignore[assignment]
    path.write_text(json.dumps(out, sort_keys=True), "utf-8")
    return len(out) // len(POLICIES) // 2


def _same_raw(old: Any, new: Any, tolerance: float) -> bool:
    """Same provider calls, same seqs in the same order, scores within ``tolerance``."""
    if not isinstance(old, list) or not isinstance(new, list) or len(old) != len(new):
        return False
    for a_call, b_call in zip(old, new, strict=True):
        if len(a_call) != len(b_call):
            return False
        for a, b in zip(a_call, b_call, strict=True):
            if a[0] != b[0] or any(
                abs(x - y) > tolerance for x, y in zip(a[1:], b[1:], strict=True)
            ):
                return False
    return True


def compare(before: Path, after: Path, tolerance: float = 1e-9) -> list[str]:
    """The keys whose ranked rows differ between two dumps (a missing key counts; raw scores
    may differ by ``tolerance``)."""
    old = json.loads(before.read_text("utf-8"))
    new = json.loads(after.read_text("utf-8"))
    differ = []
    for k in sorted(set(old) | set(new)):
        if k.startswith("raw/"):
            if not _same_raw(old.get(k), new.get(k), tolerance):
                differ.append(k)
        elif old.get(k) != new.get(k):
            differ.append(k)
    return differ


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--data", type=Path, default=DATA)
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    c.add_argument("--tolerance", type=float, default=1e-9)
    args = parser.parse_args(argv)
    if args.cmd == "dump":
        print(f"{dump(args.out, args.data)} questions dumped to {args.out}")
        return 0
    differ = compare(args.before, args.after, args.tolerance)
    old = json.loads(args.before.read_text("utf-8"))
    new = json.loads(args.after.read_text("utf-8"))
    for key in differ[:5]:
        print(key, "\n  before:", old.get(key), "\n  after: ", new.get(key))
    print(f"{len(old)} searches compared, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
