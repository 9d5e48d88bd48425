"""Recall latency and LoCoMo R@5 through every Memory Space provider, against the native one.

The same LoCoMo dev conversations (../shared/bench/locomo-dev.json, read in place, never
copied), the same questions and the same ingestion as ``bench/locomo.py`` (one memory per
dialog turn through ``MemorySpaces.aremember_many``, text and metadata from
``bench.locomo.memory_items``) go into one Memory Space per (provider, conversation), all in
one ``MemorySpaces`` over one SQLite catalog, every provider with the same embedder instance:

  * ``mnemos`` — the native provider on the catalog's SQLite database (the baseline row);
  * ``chroma`` — ``ChromaProvider`` over a local folder (``PersistentClient``);
  * ``store``  — ``StoreProvider`` over LangGraph's ``InMemoryStore`` with a vector index on
    ``content`` built from the same embedder (cosine scores, so ``normalized_scores=True``);
  * ``facts``  — ``FactFileProvider``: one atomic JSON fact file per space;
  * ``mem0``   — ``Mem0Provider`` (mem0 ``Memory`` + local qdrant, ``infer=False``: verbatim);
  * ``http``   — ``HttpProvider`` against the contract's reference server
    (``tests/support/http_memory_service.serve``) on a free port in this process, bearer
    token in the space's secrets. Its latency includes the server's own work and the
    loopback HTTP round trip (the server shares this process and its GIL).

Recall is the host path a LangGraph server takes: ``MemorySpaces.asearch(question,
space_ids=[that space], limit=20, policy="exhaustive-v1")`` — exhaustive so R@5 / MRR measure
the provider's ranking, not the quality cut. ``R@5 strict-v1`` is the same search under the
model's envelope policy, ``strict-v1`` (one untimed pass), i.e. what the model's recall keeps;
providers without normalised scores are capped there by ``max_unknown_results``. Latency:
after one untimed warm-up recall per space, each question's time is the median over
``--rounds`` (providers in rotated order each round); p50 / p95 are over questions.
Questions: categories 1-4 with evidence; category 5 (adversarial) is omitted here
(bench/locomo.py reports it for native).
R@k / MRR as in bench/locomo.py.
A provider whose module is missing (or whose setup fails) is a row ``not available: <error>``,
never a crash; ``failed`` counts recalls where its space answered ``unavailable``.

Run:  python bench/providers.py                          (all 6 providers, 5 conversations,
                                                          3 rounds, WordLlama: ≈7.5 minutes)
      python bench/providers.py --conversations 4          (≈4.5 minutes)
      python bench/providers.py --providers mnemos mem0 --rounds 1
      python bench/providers.py --conversations 1 --questions 10 --rounds 1 --embedder hashing

Run time with default args: about 5 minutes on 2 cores (mem0 is the slowest row: local
Qdrant runs in Python; each mem0 space has its own collection, so one space's recall does not
pay for the others).
Prints the command line, the machine, one Markdown table, and exits. Progress on stderr.
Not a test (tests/test_bench_providers.py runs a tiny slice).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import logging
import os
import platform
import secrets
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.embeddings import Embeddings

from bench.locomo import DATA, K, Question, Scores, Turn, _p95, load, make_embedder, memory_items
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.memory_layers.spaces import MemorySpaces
from langgraph_mnemon.storage.db import Database, create_engine

PROVIDERS = ("mnemos", "chroma", "store", "facts", "mem0", "http")
BASELINE = "mnemos"
EXHAUSTIVE = "exhaustive-v1"
_CHUNK = 200
Conversation = tuple[str, list[Turn], list[Question]]


@dataclass
class Context:
    """What a provider factory may use: the run's folder, catalog database and embedder."""

    stack: ExitStack
    folder: Path
    database: Database
    embedder: Any


@dataclass
class Built:
    """A provider and the space configuration / secrets its spaces are created with."""

    provider: Any
    config: dict[str, Any] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)


@dataclass
class Row:
    """One provider's results."""

    name: str
    error: str | None = None
    ingest_seconds: float = 0.0
    ingested: int = 0
    stored: int = 0
    failed: int = 0
    hint: str | None = None
    exhaustive: Scores = field(default_factory=Scores)
    default: Scores = field(default_factory=Scores)
    latencies: list[float] = field(default_factory=list)
    spaces: dict[str, str] = field(default_factory=dict)


class _LangChainEmbeddings(Embeddings):
    """The run's embedder as LangChain ``Embeddings`` (what InMemoryStore's index takes)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(v) for v in self.embedder.embed_documents(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        return list(self.embedder.embed_query(text))


# ---------------------------------------------------------------------- provider factories


def _mnemos(ctx: Context) -> Built:
    return Built(MnemosProvider(ctx.database, embedder=ctx.embedder))


def _chroma(ctx: Context) -> Built:
    from langgraph_mnemon.adapters.providers.chroma import ChromaProvider

    return Built(ChromaProvider(ctx.embedder, path=ctx.folder / "chroma"))


def _store(ctx: Context) -> Built:
    from langgraph.store.memory import InMemoryStore

    from langgraph_mnemon.adapters.providers.store import StoreProvider

    dims = len(ctx.embedder.embed_query("probe"))
    index: Any = {"dims": dims, "embed": _LangChainEmbeddings(ctx.embedder), "fields": ["content"]}
    return Built(StoreProvider(InMemoryStore(index=index), normalized_scores=True))


def _facts(ctx: Context) -> Built:
    from langgraph_mnemon.adapters.providers.facts import FactFileProvider

    return Built(FactFileProvider(ctx.folder / "facts", embedder=ctx.embedder))


def _mem0(ctx: Context) -> Built:
    from langgraph_mnemon.adapters.providers.mem0 import Mem0Provider

    return Built(Mem0Provider(ctx.folder / "mem0", embedder=ctx.embedder))


def _http(ctx: Context) -> Built:
    from langgraph_mnemon.adapters.providers.http import HttpProvider
    from tests.support.http_memory_service import serve

    token = secrets.token_urlsafe(24)
    # The reference server ranks with the same embedder (keyword + cosine, 0..1).
    url = ctx.stack.enter_context(
        serve(ctx.folder / "http-service.db", token, embedder=ctx.embedder)
    )
    return Built(HttpProvider(), {"endpoint": url}, {"api_key": token})


FACTORIES: dict[str, Callable[[Context], Built]] = {
    "mnemos": _mnemos,
    "chroma": _chroma,
    "store": _store,
    "facts": _facts,
    "mem0": _mem0,
    "http": _http,
}


# ---------------------------------------------------------------------- run


def progress(message: str) -> None:
    """One progress line on stderr."""
    print(f"[providers] {message}", file=sys.stderr, flush=True)


def _one_line(exc: BaseException) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text[:300]


async def ingest(
    spaces: MemorySpaces, row: Row, built: Built, data: Sequence[Conversation]
) -> None:
    """One space per conversation for ``row``'s provider, filled through the write path."""
    for sample, turns, _ in data:
        space_id = f"{row.name}-{sample}"
        await spaces.acreate_space(
            f"LoCoMo {sample} ({row.name})",
            provider_id=built.provider.descriptor.id,
            config=built.config,
            secrets=built.secrets or None,
            space_id=space_id,
        )
        row.spaces[sample] = space_id
        start = time.perf_counter()
        for chunk in range(0, len(turns), _CHUNK):
            items = memory_items(turns[chunk : chunk + _CHUNK])
            receipts = await spaces.aremember_many(items, space_id=space_id)
            row.stored += sum(1 for r in receipts if r.committed)
        took = time.perf_counter() - start
        row.ingest_seconds += took
        row.ingested += len(turns)
        progress(f"{row.name}: ingested {sample} ({len(turns)} turns, {took:.1f} s)")


async def setup(
    spaces: MemorySpaces, ctx: Context, names: Sequence[str], data: Sequence[Conversation]
) -> list[Row]:
    """Build, register and fill each provider; a missing or failing one becomes an error row."""
    rows = []
    for name in names:
        row = Row(name)
        rows.append(row)
        try:
            built = FACTORIES[name](ctx)
        except ImportError as exc:
            row.error = f"not available: {_one_line(exc)}"
            progress(f"{name}: {row.error}")
            continue
        except Exception as exc:  # a provider that cannot be built is a row too
            row.error = f"failed: {_one_line(exc)}"
            progress(f"{name}: {row.error}")
            continue
        try:
            spaces.register_provider(built.provider)
            await ingest(spaces, row, built, data)
        except Exception as exc:  # a broken provider is a row, never a crashed bench
            row.error = f"failed: {_one_line(exc)}"
            progress(f"{name}: {row.error}")
    return rows


async def _ranked(
    spaces: MemorySpaces, row: Row, space_id: str, text: str, policy: str | None
) -> list[str]:
    found = await spaces.asearch(text, space_ids=[space_id], limit=K, policy=policy)
    for source in found.sources:
        if source.status == "unavailable":
            row.failed += 1
            row.hint = row.hint or source.hint
    return [str(r.metadata.get("dia_id")) for r in found.results]


async def measure(
    spaces: MemorySpaces, rows: Sequence[Row], data: Sequence[Conversation], rounds: int
) -> None:
    """Warm each space with one recall, time every live row's recalls ``rounds`` times in
    rotated order (quality from the first round), then one untimed strict-v1 pass."""
    live = [r for r in rows if r.error is None]
    for row in live:  # one untimed recall per space: caches and indexes are built warm
        for sample, _, questions in data:
            if questions:
                await spaces.asearch(questions[0].text, space_ids=[row.spaces[sample]], limit=K)
    times: dict[str, list[list[float]]] = {r.name: [] for r in live}
    for n in range(rounds):
        shift = n % len(live) if live else 0
        for row in live[shift:] + live[:shift]:
            took: list[float] = []
            start_row = time.perf_counter()
            for sample, _, questions in data:
                for q in questions:
                    start = time.perf_counter()
                    ranked = await _ranked(spaces, row, row.spaces[sample], q.text, EXHAUSTIVE)
                    took.append(time.perf_counter() - start)
                    if n == 0:
                        row.exhaustive.add(ranked, q.evidence)
            times[row.name].append(took)
            spent = time.perf_counter() - start_row
            progress(f"round {n + 1}/{rounds}: {row.name} {len(took)} recalls, {spent:.1f} s")
    for row in live:
        row.latencies = [statistics.median(v) for v in zip(*times[row.name], strict=True)]
        for sample, _, questions in data:
            for q in questions:
                row.default.add(
                    await _ranked(spaces, row, row.spaces[sample], q.text, "strict-v1"),
                    q.evidence,
                )
        progress(f"{row.name}: strict-v1 pass done")


async def _session(
    spaces: MemorySpaces, ctx: Context, args: argparse.Namespace, data: Sequence[Conversation]
) -> list[Row]:
    try:
        rows = await setup(spaces, ctx, args.providers, data)
        await measure(spaces, rows, data, max(1, args.rounds))
    finally:
        for provider in spaces.providers.values():
            try:
                provider.close()
            except Exception as exc:  # closing is best effort
                progress(f"closing {provider.descriptor.id}: {_one_line(exc)}")
    return rows


def run(args: argparse.Namespace, data: Sequence[Conversation]) -> list[Row]:
    """Set every selected provider up in a temporary folder, measure, close."""
    embedder = make_embedder(args.embedder)
    with tempfile.TemporaryDirectory(prefix="mnemon-providers-") as tmp, ExitStack() as stack:
        folder = Path(tmp)
        database = Database(create_engine(f"sqlite:///{folder}/catalog.db"), owns_engine=True)
        spaces = MemorySpaces(database, root=folder / "root")
        try:
            return asyncio.run(
                _session(spaces, Context(stack, folder, database, embedder), args, data)
            )
        finally:
            spaces.close()
            database.dispose()


# ---------------------------------------------------------------------- output


def _cell(text: str) -> str:
    return text.replace("|", "/")


def table(rows: Sequence[Row]) -> str:
    """One Markdown table; the ratio and delta columns compare with the ``mnemos`` row."""
    head = (
        "| provider | ingest s | stored | recall p50 ms | p95 ms | p50 ÷ mnemos | R@5 | MRR "
        "| R@5 Δ mnemos | R@5 strict-v1 | failed |"
    )
    lines = [head, "|" + "---|" * 11]
    base = next((r for r in rows if r.name == BASELINE and r.error is None), None)
    base_p50 = statistics.median(base.latencies) * 1000 if base and base.latencies else None
    for r in rows:
        if r.error is not None:
            lines.append(f"| {r.name} | {_cell(r.error)} |" + " — |" * 9)
            continue
        p50 = statistics.median(r.latencies) * 1000 if r.latencies else 0.0
        ratio = f"{p50 / base_p50:.2f}×" if base_p50 else "—"
        delta = f"{r.exhaustive.mean(5) - base.exhaustive.mean(5):+.3f}" if base else "—"
        lines.append(
            f"| {r.name} | {r.ingest_seconds:.1f} | {r.stored}/{r.ingested} | {p50:.2f} "
            f"| {_p95(r.latencies):.2f} | {ratio} | {r.exhaustive.mean(5):.3f} "
            f"| {r.exhaustive.mean():.3f} | {delta} | {r.default.mean(5):.3f} | {r.failed} |"
        )
    return "\n".join(lines)


def machine() -> str:
    """CPU, cores, memory, Python and the versions of the backends."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = []
    for dist in ("langgraph", "chromadb", "mem0ai", "qdrant-client", "httpx"):
        try:
            versions.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{dist} absent")
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}; " + ", ".join(versions)
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--embedder",
        default="wordllama",
        choices=["wordllama", "hashing", "minilm"],
        help="The one embedder every provider uses (default: the offline default, WordLlama).",
    )
    parser.add_argument(
        "--providers", nargs="+", choices=PROVIDERS, default=list(PROVIDERS), help="Rows to run."
    )
    parser.add_argument(
        "--conversations", type=int, default=5, help="The first N conversations (default: all 5)."
    )
    parser.add_argument(
        "--questions", type=int, default=None, help="At most N questions per conversation."
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="Timing rounds (median per query; default 3)."
    )
    return parser


def select(args: argparse.Namespace) -> list[Conversation]:
    """The conversations and questions (categories 1-4) the arguments ask for."""
    if not args.data.exists():
        raise SystemExit(f"LoCoMo data not found at {args.data}; pass --data")
    if args.conversations < 1 or (args.questions is not None and args.questions < 1):
        raise SystemExit("--conversations and --questions must be at least 1")
    out = []
    for sample, turns, questions in load(args.data)[: args.conversations]:
        main_set = [q for q in questions if q.category != 5]
        out.append((sample, turns, main_set[: args.questions] if args.questions else main_set))
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the arguments, run, print the command, the machine and the table."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    args.providers = list(dict.fromkeys(args.providers))
    for name in ("chromadb", "mem0", "httpx", "uvicorn", "qdrant_client"):
        logging.getLogger(name).setLevel(logging.WARNING)
    data = select(args)
    start = time.perf_counter()
    rows = run(args, data)
    questions = sum(len(q) for _, _, q in data)
    print(f"Command: {shlex.join(['python', 'bench/providers.py', *argv])}")
    print(f"Machine: {machine()}")
    print(
        f"LoCoMo dev, {len(data)} conversations, {questions} questions (categories 1-4; "
        f"adversarial omitted), embedder {args.embedder}, top {K}, policy {EXHAUSTIVE} "
        f"(R@5 strict-v1: the model's envelope policy); latency = median of {max(1, args.rounds)} "
        f"rounds per query; wall time {time.perf_counter() - start:.0f} s."
    )
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
