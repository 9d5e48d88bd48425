"""Memory Spaces at scale: paraphrase recall, search right after a bulk load, a million memories.

Three measurements (issue 32's targets), each chosen by a flag; each prints one Markdown table
with the durability and indexing of every database it ran on.

``--paraphrase``: a native space of ``--size`` (60,000) synthetic memories (the corpus of
``recall_scale.py``, written through ``mem.spaces.remember_many`` with the default WordLlama
vectors) plus the target memories of :data:`PAIRS`, each with a question that shares NO term
with it after our analyser (``text.analyze``: the script asserts it). Per database (SQLite;
PostgreSQL from ``--database-url``; the pgvector server from ``--pgvector``): how many targets
the native provider's smart search ranks in its top 10 (recall@10, dense candidates included;
target: every one found) and that search's p50, and how many ``mem.spaces.search(question,
limit=10)`` returns (its strict quality cut drops weak rows; issue 34 gives search its depth).
The databases take turns inside each of ``--rounds`` rounds.

``--after-bulk``: per size (``--sizes``, 2,000 and 20,000), path (``mem.store().batch`` and
``mem.spaces.remember_many``), database and round: a FRESH database (SQLite: a new file;
PostgreSQL: ``CREATE DATABASE`` on the server of the URL, dropped after) with autovacuum
disabled on every table (``autovacuum_enabled=false``, checked: no table was auto-analysed),
the bulk load, the search p50 right after it, ``ANALYZE``, the p50 again. Ratio: after bulk /
after ``ANALYZE`` (target ≤ 2x).

``--million``: PostgreSQL (the pgvector server when given, else ``--database-url``), ``--size``
(1,000,000) memories with WordLlama vectors through ``remember_many`` (batches of ``--batch``),
then ``ANALYZE``: ingest rate, and search p50 / p95 of ``mem.spaces.search`` beside the bare
``tsv @@ tsquery`` floor (as ``recall_scale.py``). ``--keep`` keeps the corpus in a schema
named after the size and reuses it on the next run; a load that was cut off resumes (the rows
stored are skipped as duplicates). ``--writers N`` loads with N processes at once (pgvector's
HNSW inserts are single-threaded per connection); the ingest rate counts the new rows.

Run (PostgreSQL URLs default to ``MNEMON_TEST_POSTGRES_URL`` / ``MNEMON_TEST_PGVECTOR_URL``):
    python bench/spaces_scale.py --paraphrase [--size 60000] [--rounds 3]
    python bench/spaces_scale.py --after-bulk [--sizes 2000,20000] [--rounds 3]
    python bench/spaces_scale.py --million [--size 1000000] [--keep] [--writers 2]
    python bench/spaces_scale.py --paraphrase --after-bulk --size 2000 --sizes 500 --rounds 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import langgraph_mnemon.adapters.providers.mnemos._pgvector as pgvector
from bench._common import (
    Corpus,
    create_vector_extension,
    fill,
    floor,
    fresh_database,
    has_vector_extension,
    load,
    measure,
    p50,
    pg_durability,
    pg_index_kinds,
    plain_url,
    queries,
    rotated,
    schema_url,
)
from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.providers.text import analyze
from langgraph_mnemon.memory_layers.spaces import ProviderSearchRequest, SpaceBinding
from langgraph_mnemon.memory_layers.spaces.schema import vector_index_name

# Everyday facts and a question about each that shares no word with it (after stemming and
# stop-word removal); written once, not tuned to the engine.
PAIRS = (
    ("The staging box lives in Frankfurt.", "Which city hosts the pre-production server?"),
    ("Maria takes her coffee black, no sugar.", "How does she like her morning espresso drink?"),
    ("Our office cat is called Pixel.", "What name did we give the workplace kitten?"),
    (
        "The quarterly invoices are paid by the finance team in Lisbon.",
        "Who settles bills every three months?",
    ),
    ("Backups run every night at two o'clock.", "When do snapshot copies happen?"),
    ("Tom is allergic to peanuts.", "Which food makes him sick?"),
    (
        "The wifi password is written on the fridge door.",
        "Where can I find the wireless passphrase?",
    ),
    (
        "Our release train leaves on the first Monday of each month.",
        "How often do we ship new versions?",
    ),
    (
        "The car needs new tyres before winter.",
        "What should be replaced on the vehicle ahead of the cold season?",
    ),
    (
        "Grandma's birthday falls on the ninth of March.",
        "When does granny celebrate turning a year older?",
    ),
    (
        "The spare house key hides under the blue flowerpot.",
        "Where is the extra door opener kept?",
    ),
    (
        "The team lunch is booked at the Thai restaurant downtown.",
        "Where are colleagues eating together at noon?",
    ),
    ("Jenny prefers trains over planes for short trips.", "How does she like to travel nearby?"),
    (
        "The database password rotates every ninety days.",
        "How frequently do credentials for storage change?",
    ),
    ("Kevin moved to Toronto last spring.", "Which Canadian city did he relocate to?"),
    (
        "The printer on floor three jams constantly.",
        "Which office device keeps getting paper stuck?",
    ),
    ("Our dentist appointment is on Thursday afternoon.", "When should we visit the tooth doctor?"),
    ("The garden hose leaks near the tap.", "What is dripping outside by the faucet?"),
    ("The kids go to swimming lessons on Saturdays.", "When do children have pool classes?"),
    (
        "The landlord raised the rent by five percent.",
        "How much more must we pay for the apartment?",
    ),
    ("Alex speaks fluent Japanese.", "Which Asian language can he talk easily?"),
    (
        "The laptop battery lasts only two hours now.",
        "How long does the notebook run unplugged?",
    ),
    (
        "Our flight to Madrid departs at dawn.",
        "When does the plane for Spain's capital take off?",
    ),
    (
        "The recipe calls for three eggs and a cup of flour.",
        "What ingredients does the cake need?",
    ),
    (
        "The conference call with investors moved to Friday.",
        "When is the meeting with shareholders now?",
    ),
    ("The dog must not eat chocolate.", "Which treat is poisonous for our puppy?"),
)


def check_pairs() -> None:
    """Assert that no question shares an analysed term with its memory.

    Raises:
        AssertionError: a pair shares a term (the pair would not test dense recall).
    """
    for memory, question in PAIRS:
        shared = set(analyze(memory)) & set(analyze(question))
        assert not shared, f"{question!r} shares {sorted(shared)} with {memory!r}"


@dataclass
class Target:
    """One database a measurement runs on: its label, URL (None: a SQLite file), what it is."""

    label: str
    url: str | None
    durability: str = ""
    indexing: str = ""


def targets(args: argparse.Namespace, sqlite: bool = True) -> list[Target]:
    """SQLite, the PostgreSQL server and the pgvector server, as far as they are given."""
    found = [Target("SQLite", None, "SQLite WAL + NORMAL (ours' default)")] if sqlite else []
    for label, url in (("PostgreSQL", args.database_url), ("PostgreSQL + pgvector", args.pgvector)):
        if not url:
            continue
        if label.endswith("pgvector") and not has_vector_extension(url):
            raise SystemExit("--pgvector: that server has no 'vector' extension")
        found.append(Target(label, url, f"PostgreSQL {pg_durability(url)}"))
    return found


@contextmanager
def opened(target: Target, root: Path, fresh: bool = True) -> Iterator[tuple[Mnemon, str | None]]:
    """A host on ``target``: a new SQLite root, or a fresh database on its server (dropped)."""
    if target.url is None:
        with Mnemon.open(root) as host:
            yield host, None
        return
    with fresh_database(target.url, "spaces_scale") as url:
        if target.label.endswith("pgvector"):
            create_vector_extension(url)
        with Mnemon.open(root, database_url=url) as host:
            yield host, url


def indexing(target: Target, url: str | None) -> str:
    """The indexes of our tables: FTS5 on SQLite; the index methods on PostgreSQL."""
    if url is None:
        return "FTS5 + B-trees; vectors: in-process index"
    kinds = pg_index_kinds(url, like="mnemon%")
    return f"{kinds}; vectors: {'pgvector HNSW' if 'hnsw' in kinds else 'in process'}"


# --- paraphrase -------------------------------------------------------------------------------


def paraphrase(args: argparse.Namespace, tmp: Path) -> None:
    """Load the space on every database, then ask every question, databases in turn."""
    check_pairs()
    extra = [{"content": memory, "category": "fact"} for memory, _ in PAIRS]
    found: dict[str, list[bool]] = {}
    latency: dict[str, list[float]] = {}
    with ExitStack() as stack:
        hosts: dict[str, Mnemon] = {}
        places = targets(args)
        for n, target in enumerate(places):
            host, url = stack.enter_context(opened(target, tmp / f"para{n}"))
            began = time.perf_counter()
            load(host.spaces, "paraphrase", args.size, args.batch, extra)
            took = time.perf_counter() - began
            target.indexing = f"{indexing(target, url)}; loaded in {took:.0f} s"
            hosts[target.label] = host
        for r in range(args.rounds):
            for label in rotated(list(hosts), r):
                found[label], spent = _ask(hosts[label])
                latency.setdefault(label, []).append(spent)
        layer = {label: _layer_hits(host) for label, host in hosts.items()}
        sweep = _ef_sweep(hosts, args.ef_search)
    rows = [
        (t, found[t.label], statistics.median(latency[t.label]), layer[t.label]) for t in places
    ]
    _paraphrase_table(rows, args)
    if sweep:
        print("\n| hnsw.ef_search (pgvector) | found in top 10 | recall@10 | search p50 ms |")
        print("|---:|---:|---:|---:|")
        for ef, (hits, spent) in sweep.items():
            print(
                f"| {ef} | {sum(hits)} / {len(hits)} | {sum(hits) / len(hits):.2f} | {spent:.1f} |"
            )


def _ef_sweep(hosts: dict[str, Mnemon], values: str) -> dict[int, tuple[list[bool], float]]:
    """The provider's top 10 on the pgvector server at each ``hnsw.ef_search`` of ``values``
    (the module's setting, restored after)."""
    host = hosts.get("PostgreSQL + pgvector")
    if host is None or not values:
        return {}
    out: dict[int, tuple[list[bool], float]] = {}
    default = pgvector.EF_SEARCH
    try:
        for ef in (int(v) for v in values.split(",")):
            pgvector.EF_SEARCH = ef
            out[ef] = _ask(host)
    finally:
        pgvector.EF_SEARCH = default
    return out


def _ask(host: Mnemon) -> tuple[list[bool], float]:
    """Each question once: whether its memory is in the top 10 of the native provider's
    ranking (dense candidates included, before the layer's quality policy), and the p50 in ms
    of that search."""
    provider = host.spaces.provider("mnemos")
    space = SpaceBinding(id="paraphrase", name="paraphrase")
    hits: list[bool] = []
    times: list[float] = []
    for memory, question in PAIRS:
        request = ProviderSearchRequest(query=question, limit=10, mode="smart")
        began = time.perf_counter()
        result = provider.search(space, request)
        times.append((time.perf_counter() - began) * 1000)
        hits.append(any(row.content == memory for row in result.results))
    return hits, statistics.median(times)


def _layer_hits(host: Mnemon) -> int:
    """How many memories ``mem.spaces.search(limit=10)`` returns (its strict quality cut
    drops weak rows: issue 34 gives search its depth)."""
    return sum(
        any(
            row.content == memory
            for row in host.spaces.search(question, space_ids=["paraphrase"], limit=10).results
        )
        for memory, question in PAIRS
    )


def _paraphrase_table(
    rows: list[tuple[Target, list[bool], float, int]], args: argparse.Namespace
) -> None:
    print(
        f"| database @ {args.size:,} + {len(PAIRS)} memories | durability | indexing "
        "| found in top 10 | recall@10 | search p50 ms | missed questions "
        "| mem.spaces.search top 10 | target |"
    )
    print("|---|---|---|---:|---:|---:|---|---:|---|")
    for target, hits, spent, layer in rows:
        missed = ", ".join(str(i + 1) for i, hit in enumerate(hits) if not hit) or "none"
        print(
            f"| {target.label} | {target.durability} | {target.indexing} | {sum(hits)} / "
            f"{len(hits)} | {sum(hits) / len(hits):.2f} | {spent:.1f} | {missed} "
            f"| {layer} / {len(hits)} | every one |"
        )
    print(
        f"\nThe native provider's smart search (limit 10, the query embedded inside the "
        f"timing) over one space; mem.spaces.search adds the layer's strict quality cut. "
        f"Median p50 of "
        f"{args.rounds} rounds (databases in turn); questions share no analysed term with their "
        f"memories (asserted). Command: python bench/spaces_scale.py --paraphrase "
        f"--size {args.size} --rounds {args.rounds}"
    )


# --- search right after a bulk load -----------------------------------------------------------

PATHS = ("mem.store().batch", "mem.spaces.remember_many")
NS = ("bench", "bulk")


def _autovacuum_off(url: str) -> int:
    """Switch autovacuum (and so auto-analyse) off on every table of ``url``'s database."""
    import psycopg

    with psycopg.connect(plain_url(url), autocommit=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables "
                                             "WHERE schemaname = current_schema()")]  # fmt: skip
        for table in tables:
            conn.execute(
                f'ALTER TABLE "{table}" SET (autovacuum_enabled = false, '
                "toast.autovacuum_enabled = false)"
            )
    if "mnemon_insights" not in tables:
        raise SystemExit(f"the memory tables are not there yet: {tables}")
    return len(tables)


def _auto_analysed(url: str) -> list[str]:
    """Tables that autovacuum touched anyway (should be none)."""
    import psycopg

    with psycopg.connect(plain_url(url), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT relname FROM pg_stat_user_tables WHERE last_autoanalyze IS NOT NULL "
            "OR last_autovacuum IS NOT NULL"
        ).fetchall()
    return [r[0] for r in rows]


def _analyze(host: Mnemon, url: str | None) -> None:
    if url is None:
        with host.database.write() as conn:
            conn.exec_driver_sql("ANALYZE")
        return
    import psycopg

    with psycopg.connect(plain_url(url), autocommit=True) as conn:
        conn.execute("ANALYZE")


def _bulk_load(
    host: Mnemon, path: str, items: list[dict[str, Any]], batch: int
) -> Callable[[str], Any]:
    """Load ``items`` through ``path``; the search of what was loaded."""
    if path == "mem.store().batch":
        store = host.store()
        fill(store, 0, len(items), NS, lambda _rng, i: {"text": items[i]["content"]}, batch)
        return lambda q: store.search(NS, query=q, limit=10)
    for start in range(0, len(items), batch):
        receipts = host.spaces.remember_many(items[start : start + batch], space_id="bulk")
        assert all(r.committed for r in receipts), receipts[0]
    return lambda q: host.spaces.search(q, space_ids=["bulk"], limit=10)


def _bulk_once(
    target: Target, path: str, items: list[dict[str, Any]], texts: list[str], root: Path, batch: int
) -> tuple[float, float, float]:
    """A fresh database, the load, p50 right after it, ``ANALYZE``, p50 again."""
    with opened(target, root) as (host, url):
        # the tables exist once a space does; the bulk space is empty until the load
        host.spaces.create_space("bulk", space_id="bulk", description="bulk load")
        if url is not None:
            _autovacuum_off(url)
        began = time.perf_counter()
        search = _bulk_load(host, path, items, batch)
        rate = len(items) / (time.perf_counter() - began)
        for text in texts[:3]:  # warm-up: the embedder, statement caches (no statistics)
            search(text)
        before = p50(lambda i: search(texts[i]), len(texts))
        if url is not None and (touched := _auto_analysed(url)):
            raise SystemExit(f"autovacuum analysed {touched} during the measurement")
        _analyze(host, url)
        after = p50(lambda i: search(texts[i]), len(texts))
        if not target.indexing:
            target.indexing = indexing(target, url)
    return rate, before, after


def after_bulk(args: argparse.Namespace, tmp: Path) -> None:
    """Every (database, path) in turn inside each round, per size."""
    places = targets(args)
    sizes = [int(s) for s in args.sizes.split(",")]
    got: dict[tuple[str, str, int], list[tuple[float, float, float]]] = {}
    run = 0
    for size in sizes:
        corpus = Corpus()
        items = [corpus.memory(i) for i in range(size)]
        texts = queries([str(i["content"]) for i in items[:: max(1, size // 500)]], args.queries)
        combos = [(t, path) for t in places for path in PATHS]
        for r in range(args.rounds):
            for target, path in rotated(combos, r):
                run += 1
                figures = _bulk_once(target, path, items, texts, tmp / f"bulk{run}", args.batch)
                got.setdefault((target.label, path, size), []).append(figures)
    _bulk_table(places, sizes, got, args)


def _bulk_table(
    places: list[Target],
    sizes: list[int],
    got: dict[tuple[str, str, int], list[tuple[float, float, float]]],
    args: argparse.Namespace,
) -> None:
    print(
        "| database | durability | indexing | path | items | load items/s "
        "| search p50 ms right after the load | after ANALYZE | after load / after ANALYZE "
        "| target |"
    )
    print("|---|---|---|---|---:|---:|---:|---:|---:|---|")
    for target in places:
        for path in PATHS:
            for size in sizes:
                runs = got[(target.label, path, size)]
                rate, before, after = (statistics.median(f[k] for f in runs) for k in range(3))
                ratio = statistics.median(f[1] / f[2] for f in runs)
                print(
                    f"| {target.label} | {target.durability} | {target.indexing} | {path} "
                    f"| {size:,} | {rate:,.0f} | {before:.1f} | {after:.1f} | {ratio:.2f}× | ≤ 2× |"
                )
    print(
        f"\nEach cell: median over {args.rounds} rounds, each on a fresh database (SQLite: a new "
        "file, no autovacuum there; PostgreSQL: CREATE DATABASE, autovacuum_enabled=false on "
        "every table before the load, checked untouched before ANALYZE); p50 of "
        f"{args.queries} queries, limit 10; (database, path) pairs in turn inside each round. "
        f"Command: python bench/spaces_scale.py --after-bulk --sizes {args.sizes} "
        f"--rounds {args.rounds}"
    )


# --- a million memories -----------------------------------------------------------------------


@contextmanager
def _schema(server: str, name: str, keep: bool) -> Iterator[str]:
    """Schema ``name`` on ``server`` (made when missing; dropped after unless ``keep``)."""
    import psycopg

    with psycopg.connect(plain_url(server), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{name}"')
    try:
        yield schema_url(server, name)
    finally:
        if not keep:
            with psycopg.connect(plain_url(server), autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def _million_load(
    host: Mnemon, url: str, args: argparse.Namespace, tmp: Path
) -> tuple[float | None, list[str]]:
    """The corpus written by ``--writers`` processes at once (batch ``b`` by writer
    ``b % writers``; pgvector's HNSW inserts run in parallel), resuming a load that was cut
    off (its rows are skipped as duplicates). ``(new rows/s or None when reused, sample)``."""
    size, batch = args.size, args.batch
    sample = [
        str(item["content"])
        for b, items in _batches(size, batch)
        for item in items[:5]  # as load(): the first five texts of each batch
    ]
    known = {s.id: s for s in host.spaces.list_spaces()}
    if "million" in known and known["million"].description == f"corpus {size}":
        return None, sample
    if "million" not in known:
        host.spaces.create_space("million", space_id="million", description="loading")
    before = _live_rows(url)
    if args.defer_index:
        _without_index(host, url)
    began = time.perf_counter()
    defer = ["--defer-index"] if args.defer_index else []
    others = [
        subprocess.Popen([sys.executable, __file__, "--million-writer", f"{k}/{args.writers}",
                          "--size", str(size), "--batch", str(batch), "--database-url", url,
                          *defer])
        for k in range(1, args.writers)
    ]  # fmt: skip
    _write_share(host, 0, args.writers, size, batch)
    if any(p.wait() != 0 for p in others):
        raise SystemExit("a writer process failed")
    added = _live_rows(url) - before
    rate = added / (time.perf_counter() - began)
    if args.defer_index:
        built = time.perf_counter()
        _build_index(url, *_vector_model(host))
        print(f"HNSW index built after the load in {time.perf_counter() - built:.0f} s")
    host.spaces.update_space("million", description=f"corpus {size}")
    return rate, sample


def _without_index(host: Mnemon, url: str | None) -> None:
    """Load without the HNSW index (built after, :func:`_build_index`): drop it, and tell this
    process it exists so no write creates it again."""
    model, dim = _vector_model(host)
    with pgvector._LOCK:
        pgvector._INDEXED.setdefault(host.database.engine, set()).add((model, dim))
    if url is not None:
        import psycopg

        with psycopg.connect(plain_url(url), autocommit=True) as conn:
            conn.execute(f"DROP INDEX IF EXISTS {vector_index_name(model, dim)}")


def _build_index(url: str, model: str, dim: int) -> None:
    """The HNSW index over every stored vector, built in one go (the product's DDL; parallel
    workers, the graph in memory)."""
    import sqlalchemy as sa

    from langgraph_mnemon.memory_layers.spaces.schema import create_vector_index, pgvector_schema

    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("SET LOCAL maintenance_work_mem = '6GB'")
            conn.exec_driver_sql("SET LOCAL max_parallel_maintenance_workers = 2")
            schema = pgvector_schema(conn)
            assert schema is not None, "no vector extension"
            create_vector_index(conn, schema, model, dim)
    finally:
        engine.dispose()


def _vector_model(host: Mnemon) -> tuple[str, int]:
    """The native provider's embedder model id and dimension."""
    embedder = host.spaces.providers["mnemos"].embedder
    assert embedder is not None
    return embedder.model_id, len(embedder.embed_query("probe"))


def _batches(size: int, batch: int) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """``(batch number, items)`` of the corpus, made in order: each memory depends on the ones
    before it (one random stream), so every writer makes them all and keeps its own."""
    corpus = Corpus()
    for b, start in enumerate(range(0, size, batch)):
        yield b, [corpus.memory(i) for i in range(start, min(size, start + batch))]


def _write_share(host: Mnemon, k: int, writers: int, size: int, batch: int) -> None:
    """Writer ``k``'s batches of the corpus into the ``million`` space (duplicates skipped)."""
    for b, items in _batches(size, batch):
        if b % writers == k:
            host.spaces.remember_many(items, space_id="million")


def _live_rows(url: str) -> int:
    import psycopg

    with psycopg.connect(plain_url(url)) as conn:
        row = conn.execute(
            "SELECT count(*) FROM mnemon_insights WHERE space_id = 'million' AND deleted_at IS NULL"
        ).fetchone()
    return int(row[0]) if row else 0


def million(args: argparse.Namespace, tmp: Path) -> None:
    """Load (or reuse) the corpus, ``ANALYZE`` after a load, then floor vs spaces in turn."""
    places = targets(args, sqlite=False)
    if not places:
        raise SystemExit("--million runs on PostgreSQL: give --database-url or --pgvector")
    target = places[-1]  # the pgvector server when there is one
    if target.label.endswith("pgvector"):
        create_vector_extension(target.url or "")
    with (
        _schema(target.url or "", f"spaces_scale_{args.size}", args.keep) as url,
        Mnemon.open(tmp / "million", database_url=url) as host,
    ):
        began = time.perf_counter()
        rate, sample = _million_load(host, url, args, tmp)
        took = time.perf_counter() - began
        if rate is not None:
            _analyze(host, url)
        texts = queries(sample, args.queries)
        runs = {
            "floor": floor(host.database, "million"),
            "spaces": lambda q: host.spaces.search(q, space_ids=["million"], limit=10),
        }
        result = measure(runs, texts, args.rounds)
        target.indexing = indexing(target, url)
    writers = f", {args.writers} writers" if args.writers > 1 else ""
    loaded = f"{took:.0f} s ({rate:,.0f}/s{writers})" if rate else f"reused ({took:.0f} s to check)"
    print(
        f"| {target.label} {args.size:,} memories | durability | indexing | ingest "
        "| path | p50 ms | p95 ms | p50 / floor | p95 / floor |"
    )
    print("|---|---|---|---|---|---:|---:|---:|---:|")
    f50, f95 = result["floor"]
    for name, (v50, v95) in result.items():
        print(
            f"| {args.size:,} | {target.durability} | {target.indexing} | {loaded} | {name} "
            f"| {v50:.2f} | {v95:.2f} | {v50 / f50:.2f}x | {v95 / f95:.2f}x |"
        )
    print(
        f"\nWordLlama vectors; remember_many in batches of {args.batch}, then ANALYZE; floor = "
        "tsv @@ tsquery by ts_rank, top 10, one statement (no vectors); spaces = "
        f"mem.spaces.search(limit=10). Median of {args.rounds} rounds (in turn), "
        f"{args.queries} queries. Command: python bench/spaces_scale.py --million "
        f"--size {args.size}{' --keep' if args.keep else ''}"
        f"{f' --writers {args.writers}' if args.writers > 1 else ''}"
        f"{' --defer-index' if args.defer_index else ''}"
    )


def live_ingest(args: argparse.Namespace, tmp: Path) -> None:
    """``remember_many`` with the HNSW index live, into a space beside the kept ``--million``
    corpus (the index covers every space): the ingest rate at that scale, one batch at a time.
    The probe space is removed after."""
    places = targets(args, sqlite=False)
    if not places:
        raise SystemExit("--live-ingest runs on PostgreSQL: give --database-url or --pgvector")
    target = places[-1]
    count = args.live_ingest
    corpus = Corpus(seed=99)  # other texts than the corpus's: none is a duplicate
    items = [corpus.memory(i) for i in range(count)]
    with (
        _schema(target.url or "", f"spaces_scale_{args.size}", True) as url,
        Mnemon.open(tmp / "probe", database_url=url) as host,
    ):
        stored = _live_rows(url)
        host.spaces.create_space("ingest probe", space_id="ingest-probe", description="probe")
        began = time.perf_counter()
        for start in range(0, count, args.batch):
            host.spaces.remember_many(items[start : start + args.batch], space_id="ingest-probe")
        took = time.perf_counter() - began
        host.spaces.remove_space("ingest-probe", confirm="ingest-probe")
    print(
        f"| {target.label} | {stored:,} memories stored | remember_many, {count:,} new, batches "
        f"of {args.batch}, HNSW index live | {took:.1f} s | {count / took:,.0f} memories/s |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paraphrase", action="store_true", help="dense recall at 60k")
    parser.add_argument("--after-bulk", action="store_true", help="search after a bulk load")
    parser.add_argument("--million", action="store_true", help="recall at 1M on PostgreSQL")
    parser.add_argument("--size", type=int, default=None, help="60,000 / 1,000,000 memories")
    parser.add_argument("--sizes", default="2000,20000", help="--after-bulk items")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=None, help="30; --million 300")
    parser.add_argument("--batch", type=int, default=1000, help="items per write call")
    parser.add_argument("--keep", action="store_true", help="--million: keep and reuse")
    parser.add_argument(
        "--ef-search", default="", help="--paraphrase: also on pgvector at these hnsw.ef_search"
    )
    parser.add_argument(
        "--database-url", default=os.environ.get("MNEMON_TEST_POSTGRES_URL"), help="PostgreSQL"
    )
    parser.add_argument(
        "--pgvector", default=os.environ.get("MNEMON_TEST_PGVECTOR_URL"), help="with pgvector"
    )
    parser.add_argument("--writers", type=int, default=1, help="--million: parallel writers")
    parser.add_argument(
        "--live-ingest", type=int, default=0, help="N memories beside the kept --million corpus"
    )
    parser.add_argument(
        "--defer-index", action="store_true", help="--million: build the HNSW index after"
    )
    parser.add_argument("--million-writer", default="", help=argparse.SUPPRESS)  # "k/n"
    args = parser.parse_args()
    if args.million_writer:  # one of --writers processes: its share of the load, then exit
        k, n = (int(x) for x in args.million_writer.split("/"))
        with (
            tempfile.TemporaryDirectory() as root,
            Mnemon.open(Path(root), database_url=args.database_url) as host,
        ):
            if args.defer_index:
                _without_index(host, None)
            _write_share(host, k, n, args.size, args.batch)
        return
    if args.live_ingest:
        with tempfile.TemporaryDirectory(prefix="spaces-scale-") as tmp:
            live_ingest(_with(args, size=1_000_000, queries=0), Path(tmp))
        return
    if not (args.paraphrase or args.after_bulk or args.million):
        parser.error("choose --paraphrase, --after-bulk and/or --million")
    with tempfile.TemporaryDirectory(prefix="spaces-scale-") as tmp:
        if args.paraphrase:
            paraphrase(_with(args, size=60_000, queries=30), Path(tmp))
        if args.after_bulk:
            after_bulk(_with(args, size=0, queries=30), Path(tmp))
        if args.million:
            million(_with(args, size=1_000_000, queries=300), Path(tmp))


def _with(args: argparse.Namespace, size: int, queries: int) -> argparse.Namespace:
    """``args`` with this measurement's defaults where the command line left them out."""
    return argparse.Namespace(
        **{**vars(args), "size": args.size or size, "queries": args.queries or queries}
    )


if __name__ == "__main__":
    main()
