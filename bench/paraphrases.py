"""Paraphrase recall of the offline embedders: a memory found from a question in other words.

:data:`PAIRS`: the 26 pairs of ``spaces_scale.py`` plus 18 written here (people, places, food,
work, health, dates, tools); each question shares NO analysed term with its memory (the script
asserts it, as ``spaces_scale.check_pairs`` does). The memories are stored among ``--size``
distractors (2,000 synthetic memories of ``_common.Corpus``; ``--locomo`` adds the LoCoMo dev
turns, real conversation, as further distractors). Per embedder, the share of pairs whose
memory is in the top 5:

  (a) ``cosine``   — cosine similarity alone over every stored vector;
  (b) ``provider`` — the native provider's smart search (``ProviderSearchRequest``, limit 5);
  (c) ``layer``    — ``spaces.search(question, limit=5, policy="exhaustive-v1")``.

Embedders (:func:`make_embedder`): ``wordllama`` (the default), ``wordllama-128`` and
``wordllama-64`` (Matryoshka truncations), ``minilm-onnx`` (:class:`MiniLMEmbedder`),
``static-distilled`` (``static_distill.py``), ``minilm-torch`` when sentence-transformers is
installed. Target: at least 80 % in the top 5.

Run:  python bench/paraphrases.py [--size 2000] [--embedders wordllama minilm-onnx ...]
      [--locomo]
Prints one Markdown table. Not a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import Corpus
from bench.spaces_scale import PAIRS as SCALE_PAIRS
from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.embeddings import MiniLMEmbedder, WordLlamaEmbedder
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.adapters.providers.text import analyze
from langgraph_mnemon.memory_layers.spaces import (
    MemorySpaces,
    ProviderSearchRequest,
    SpaceBinding,
)

NEW_PAIRS = (
    ("Priya is learning to play the cello.", "Which string instrument has she started practising?"),
    ("My sister lives in a small village near Edinburgh.", "Where in Scotland is her home?"),
    ("We had sushi for dinner on Friday night.", "What Japanese food did we eat that evening?"),
    (
        "Dad's blood pressure medication is taken every morning.",
        "When does father swallow his heart pills?",
    ),
    (
        "The project deadline is the fifteenth of October.",
        "By what date must the work be delivered?",
    ),
    ("Sam fixed the leaking sink with a wrench.", "Which tool repaired the dripping basin?"),
    ("Lena runs five kilometres before breakfast.", "How far does she jog early in the day?"),
    ("The hiking boots are stored in the garage.", "Where do we keep the trekking shoes?"),
    ("Our anniversary is on the second of July.", "When do we celebrate the wedding date?"),
    ("I sprained my ankle playing football.", "Which joint got hurt during the soccer match?"),
    (
        "The new hire starts in the marketing department next week.",
        "When does the recently recruited colleague join advertising?",
    ),
    ("Ben bakes sourdough bread every Sunday.", "Which loaf does he make at the weekend?"),
    ("The team uses Jira to track bugs.", "Which software do colleagues manage defects in?"),
    ("Aunt Rosa is vegetarian.", "Does my relative eat meat?"),
    ("The museum is closed on Mondays.", "Which weekday can we not visit the gallery?"),
    ("Our neighbour's dog barks all night.", "Whose puppy makes noise after dark?"),
    ("Mia got a promotion to senior engineer.", "What new job title did she earn at work?"),
    ("The flu shot is scheduled for November.", "When is the influenza vaccine appointment?"),
)
PAIRS = tuple(SCALE_PAIRS) + NEW_PAIRS
NAMES = ("wordllama", "wordllama-128", "wordllama-64", "minilm-onnx", "static-distilled")
SPACE = "paraphrase"


def check_pairs() -> None:
    """Assert that no question shares an analysed term with its memory."""
    for memory, question in PAIRS:
        shared = set(analyze(memory)) & set(analyze(question))
        assert not shared, f"{question!r} shares {sorted(shared)} with {memory!r}"


def make_embedder(name: str) -> Any:
    """The embedder called ``name`` (see the module docstring)."""
    if name == "wordllama":
        return WordLlamaEmbedder()
    if name.startswith("wordllama-"):
        return WordLlamaEmbedder(dim=int(name.split("-")[1]))
    if name == "minilm-onnx":
        return MiniLMEmbedder()
    if name == "static-distilled":
        from bench.static_distill import StaticMiniLMEmbedder

        return StaticMiniLMEmbedder()
    if name == "minilm-torch":
        from langgraph_mnemon.adapters.embeddings import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder()
    raise SystemExit(f"unknown embedder {name!r}")


def distractors(size: int, locomo: bool) -> list[str]:
    """``size`` synthetic memories, plus the LoCoMo dev turns with ``locomo``."""
    corpus = Corpus()
    texts = [str(corpus.memory(i)["content"]) for i in range(size)]
    if locomo:
        from bench.locomo import DATA, load

        texts += [t.text for _, turns, _ in load(DATA) for t in turns]
    return texts


def open_spaces(root: Path, embedder: Any) -> tuple[Mnemon, MemorySpaces]:
    """A host (keyword-only) and Memory Spaces whose native provider uses ``embedder``."""
    mem = Mnemon.open(root, embedding={"enabled": False})
    spaces = MemorySpaces(
        mem.database, root=root, providers=[MnemosProvider(mem.database, embedder=embedder)]
    )
    return mem, spaces


def measure(name: str, texts: list[str], root: Path) -> dict[str, Any]:
    """The three top-5 shares and the search p50 of one embedder over ``texts`` + memories."""
    embedder = make_embedder(name)
    memories = [m for m, _ in PAIRS]
    mem, spaces = open_spaces(root, embedder)
    try:
        spaces.create_space(SPACE, space_id=SPACE)
        items = [{"content": t} for t in texts + memories]
        for start in range(0, len(items), 200):
            spaces.remember_many(items[start : start + 200], space_id=SPACE)
        vectors = np.asarray(embedder.embed_documents(texts + memories), dtype=np.float32)
        provider = spaces.provider("mnemos")
        binding = SpaceBinding(id=SPACE, name=SPACE)
        hits = {"cosine": 0, "provider": 0, "layer": 0}
        took: list[float] = []
        for index, (memory, question) in enumerate(PAIRS):
            query = np.asarray(embedder.embed_query(question), dtype=np.float32)
            top = np.argsort(-(vectors @ query))[:5]
            hits["cosine"] += len(texts) + index in set(top.tolist())
            request = ProviderSearchRequest(query=question, limit=5, mode="smart")
            began = time.perf_counter()
            found = provider.search(binding, request)
            took.append((time.perf_counter() - began) * 1000)
            hits["provider"] += any(r.content == memory for r in found.results)
            layer = spaces.search(question, space_ids=[SPACE], limit=5, policy="exhaustive-v1")
            hits["layer"] += any(r.content == memory for r in layer.results)
    finally:
        spaces.close()
        mem.close()
    return {"name": name, **hits, "p50": statistics.median(took)}


def table(rows: Sequence[dict[str, Any]], size: int, command: str) -> str:
    """The Markdown table of :func:`measure`'s rows."""
    n = len(PAIRS)
    lines = [
        f"Paraphrase pairs: {n} among {size:,} distractors; share with the memory in the top 5.",
        "",
        (
            "| embedder | (a) cosine | (b) provider smart | (c) spaces.search exhaustive "
            "| provider p50 ms | target ≥ 80 % |"
        ),
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        shares = [r[k] / n for k in ("cosine", "provider", "layer")]
        met = "met" if min(shares[1:]) >= 0.8 else "not met"
        cells = " | ".join(
            f"{s:.0%} ({r[k]}/{n})"
            for s, k in zip(shares, ("cosine", "provider", "layer"), strict=True)
        )
        lines.append(f"| {r['name']} | {cells} | {r['p50']:.1f} | {met} |")
    medians = [statistics.median(r[k] / n for r in rows) for k in ("cosine", "provider", "layer")]
    lines.append("| median | " + " | ".join(f"{m:.0%}" for m in medians) + " | | |")
    lines += ["", f"Command: `{command}`"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=2000, help="Synthetic distractors.")
    parser.add_argument("--embedders", nargs="*", default=list(NAMES))
    parser.add_argument("--locomo", action="store_true", help="Add the LoCoMo dev turns.")
    args = parser.parse_args(argv)
    check_pairs()
    texts = distractors(args.size, args.locomo)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, name in enumerate(args.embedders):
            rows.append(measure(name, texts, Path(tmp) / f"root{n}"))
    command = "python bench/paraphrases.py " + " ".join(argv if argv is not None else sys.argv[1:])
    print(table(rows, len(texts), command.strip()))


if __name__ == "__main__":
    main()
