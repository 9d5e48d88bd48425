"""The conformance checks for graph operations, discovery, refusals, text limits and concurrency."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langgraph_mnemon.errors import InvalidInputError, MnemonError, NotFoundError, ProviderError
from langgraph_mnemon.memory_layers.spaces import (
    EDGE_TYPES,
    BrowseRequest,
    DiscoveredSpace,
    GraphProjection,
    LinkRequest,
    MemoryProvider,
    MemoryRecord,
    ProviderSearchRequest,
    RelatedRequest,
    RememberItem,
    SpaceBinding,
    is_committed,
    settle,
)
from langgraph_mnemon.testing._conformance_audit import recording
from langgraph_mnemon.testing._conformance_base import (
    CheckFailed,
    Context,
    NotDeclared,
    expect,
    made,
    receipt_id,
    short,
)
from langgraph_mnemon.testing._conformance_checks import TARGETS, seed_search_corpus

__all__ = [
    "UNICODE_SAMPLES",
    "check_concurrent_search",
    "check_discover",
    "check_related_link",
    "check_size_limits",
    "check_undeclared_refused",
    "check_unicode",
]

UNICODE_SAMPLES: tuple[str, ...] = (
    "uniprobe cjk 部署在周五冻结，数据库在东京。",
    "uniprobe emoji release party 🎉🚀 tonight 👩🏽‍💻",
    "uniprobe rtl שלום עולם مرحبا بالعالم",
    "uniprobe combining Cafe\u0301 nai\u0308ve re\u0301sume\u0301",
    "uniprobe astral 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𐍈 𓂀",
)
BAD_TEXTS: tuple[tuple[str, str], ...] = (
    ("a lone surrogate", "badprobe half \ud83d emoji"),
    ("a NUL character", "badprobe nul \x00 byte"),
)
BIG_CONTENT_BYTES = 16 * 1024


def check_related_link(ctx: Context) -> str:
    """Link -> committed receipt; related finds the linked row; graph shows rows and typed
    edges."""
    caps = ctx.descriptor.capabilities
    if not (caps.related or caps.link or caps.graph):
        raise NotDeclared("the descriptor declares none of related, link, graph")
    ctx.require_writes()
    space = ctx.space("graph")
    first = "Graph probe A: the lighthouse keeper logs fog at dusk."
    second = "Graph probe B: fog delays the morning ferry."
    receipts = ctx.write(space, [first, second])
    ids = [receipt_id(r) for r in receipts]
    if not ctx.exact:
        ids = [_shown_id(ctx, space, content) for content in (first, second)]
    expect(all(ids), f"the written rows have no ids: {ids}")
    done = []
    if caps.link:
        raw = settle(
            ctx.provider.link(
                space, LinkRequest(source_id=ids[0], target_id=ids[1], type="causal", weight=0.8)
            )
        )
        expect(is_committed(raw), f"the link receipt is not committed: {short(raw)}")
        done.append("link committed")
    if caps.related:
        rows = settle(ctx.provider.related(space, RelatedRequest(id=ids[0], depth=2)))
        expect(isinstance(rows, list), f"related returned {short(rows)}")
        if caps.link:
            expect(ids[1] in [r.id for r in rows], "related from a linked row misses its peer")
        _related_unknown(ctx, space)
        done.append("related finds the peer")
    if caps.graph:
        _check_graph(ctx, space, ids, linked=caps.link)
        done.append("graph typed")
    return "; ".join(done)


def _shown_id(ctx: Context, space: SpaceBinding, content: str) -> str | None:
    """The id an async provider gave the row holding ``content`` (after settle)."""
    rows = ctx.visible(space, content)
    return rows[0].id if rows else None


def _related_unknown(ctx: Context, space: SpaceBinding) -> None:
    try:
        rows = settle(ctx.provider.related(space, RelatedRequest(id="cf-no-such-row-0000")))
    except NotFoundError:
        return
    expect(rows == [], f"related from an unknown id returned {short(rows)}")


def _check_graph(ctx: Context, space: SpaceBinding, ids: list[Any], linked: bool) -> None:
    projection = settle(ctx.provider.graph(space, 200))
    expect(isinstance(projection, GraphProjection), f"graph returned {short(projection)}")
    nodes = {n.id for n in projection.nodes}
    expect(set(ids) <= nodes, f"graph nodes {short(sorted(nodes))} miss the written rows")
    for edge in projection.edges:
        expect(edge.type in EDGE_TYPES, f"graph edge type {edge.type!r} is not an edge type")
        expect({edge.source, edge.target} <= nodes, f"graph edge {edge} names unknown nodes")
    if linked:
        pairs = {frozenset((e.source, e.target)) for e in projection.edges}
        expect(frozenset(ids) in pairs, "graph does not show the edge just linked")


def check_discover(ctx: Context) -> str:
    """Discovery returns DiscoveredSpace rows and does not fail on a fresh backend."""
    ctx.require("discover")
    found = settle(ctx.provider.discover(dict(ctx.config), dict(ctx.secrets)))
    expect(isinstance(found, list), f"discover returned {short(found)}")
    expect(all(isinstance(s, DiscoveredSpace) for s in found), "discover returned other objects")
    for value in ctx.secrets.values():
        expect(value not in repr(found), "discover shows a secret value")
    return f"{len(found)} spaces discovered"


def _undeclared_calls(
    provider: MemoryProvider, space: SpaceBinding, ctx: Context
) -> dict[str, Callable[[], Any]]:
    """One valid call per contract operation, by capability name."""
    item = RememberItem(content="Refusal probe: this must never be stored.")
    return {
        "search": lambda: provider.search(space, ProviderSearchRequest(query="refusal probe")),
        "browse": lambda: provider.browse(space, BrowseRequest(limit=5)),
        "graph": lambda: provider.graph(space, 10),
        "related": lambda: provider.related(space, RelatedRequest(id="cf-refusal-row")),
        "remember": lambda: provider.remember(space, item),
        "remember_many": lambda: provider.remember_many(space, [item]),
        "link": lambda: provider.link(space, LinkRequest(source_id="cf-a", target_id="cf-b")),
        "forget": lambda: provider.forget(space, "cf-refusal-row"),
        "discover": lambda: provider.discover(dict(ctx.config), dict(ctx.secrets)),
    }


def _refused(ctx: Context) -> list[str]:
    caps = ctx.descriptor.capabilities
    calls = _undeclared_calls(ctx.provider, ctx.space("x"), ctx)
    names = [n for n in calls if not getattr(caps, n)]
    if "remember_many" in names and caps.remember:
        names.remove("remember_many")  # BaseProvider writes item by item instead
    return names


def _expect_refusal(name: str, call: Callable[[], Any], where: str) -> None:
    with recording() as events:
        try:
            settle(call())
        except ProviderError as exc:
            if exc.code != "unsupported":
                raise CheckFailed(
                    f"undeclared {name} on {where} raised ProviderError(code={exc.code!r}), "
                    "not code='unsupported'"
                ) from None
        except Exception as exc:
            raise CheckFailed(
                f"undeclared {name} on {where} raised {type(exc).__name__}: "
                f"{short(str(exc))}, not ProviderError(code='unsupported')"
            ) from None
        else:
            raise CheckFailed(f"undeclared {name} on {where} did not raise")
    expect(not events, f"undeclared {name} on {where} did I/O before refusing: {events[:5]}")


def check_undeclared_refused(ctx: Context) -> str:
    """Every undeclared operation raises ProviderError(code='unsupported') with no I/O, on a
    working backend and on a down one."""
    names = _refused(ctx)
    if not names:
        raise NotDeclared("the descriptor declares every operation")
    space = ctx.space("refusal")
    calls = _undeclared_calls(ctx.provider, space, ctx)
    for name in names:
        _expect_refusal(name, calls[name], "a working backend")
    where = "working backend only"
    if ctx.make_down is not None:
        down = made(ctx.make_down)
        ctx.opened.append(down)
        down_space = ctx.space("refusal-down", provider=down)
        down_calls = _undeclared_calls(down, down_space, ctx)
        for name in names:
            _expect_refusal(name, down_calls[name], "a down backend")
        where = "working and down backends"
    return f"refused without I/O on {where}: {', '.join(names)}"


def check_unicode(ctx: Context) -> str:
    """Unicode round-trips exactly; lone surrogates and NUL are refused with a typed error and
    nothing is stored."""
    ctx.require("remember")
    space = ctx.space("unicode")
    receipts = ctx.write(space, list(UNICODE_SAMPLES))
    for n, content in enumerate(UNICODE_SAMPLES):
        rows = ctx.visible(space, content)
        expect(rows, f"sample {n} does not round-trip exactly: {short(content)}")
        if ctx.exact:
            expect(rows[0].id == receipt_id(receipts[n]), f"sample {n} shows another id")
        if ctx.declares("search"):
            found = ctx.search(space, content, limit=10)
            expect(content in [r.content for r in found], f"search misses sample {n} exactly")
    for what, content in BAD_TEXTS:
        try:
            raw = settle(ctx.provider.remember(space, RememberItem(content=content)))
        except (InvalidInputError, ProviderError):
            pass
        except Exception as exc:
            raise CheckFailed(
                f"content with {what} raised {type(exc).__name__}, not a typed error"
            ) from None
        else:
            raise CheckFailed(f"content with {what} was accepted: {short(raw)}")
    ctx.settle()
    if ctx.declares("browse"):
        stored = [r.content for r in ctx.browse(space, limit=500)]
        expect(len(stored) == len(UNICODE_SAMPLES), "a refused write left a row behind")
        expect(not [s for s in stored if "badprobe" in s], "a refused write was stored")
    if ctx.declares("search"):
        found = ctx.search(space, "badprobe half nul byte emoji", mode="keyword", limit=10)
        expect(not [r for r in found if "badprobe" in r.content], "a refused write is searchable")
    return f"{len(UNICODE_SAMPLES)} samples exact; surrogate and NUL refused"


def check_size_limits(ctx: Context) -> str:
    """16 KiB round-trips exactly or is refused with a typed error; browse limit 500 works."""
    ctx.require("remember")
    space = ctx.space("size")
    unit = "sizeprobe 16kib content block with words "
    content = (unit * (BIG_CONTENT_BYTES // len(unit) + 1))[:BIG_CONTENT_BYTES]
    outcome = "refused with a typed error"
    try:
        raw = settle(ctx.provider.remember(space, RememberItem(content=content)))
    except MnemonError:
        raw = None
    except Exception as exc:
        raise CheckFailed(
            f"a 16 KiB write raised {type(exc).__name__}, not a typed error"
        ) from None
    if raw is not None and (is_committed(raw) or not ctx.exact):
        ctx.settle()
        rows = [r for r in _all_rows(ctx, space) if r.content.startswith("sizeprobe")]
        expect(rows, "a 16 KiB write was accepted but no row shows it")
        expect(
            rows[0].content == content,
            f"a 16 KiB write came back as {len(rows[0].content)} characters (truncated?)",
        )
        outcome = "round-trips exactly"
    elif raw is not None:
        raise CheckFailed(f"a 16 KiB write returned an uncommitted receipt: {short(raw)}")
    if ctx.declares("browse"):
        rows = ctx.browse(space, limit=500)
        expect(len(rows) <= 500, f"browse limit=500 returned {len(rows)} rows")
    return f"16 KiB {outcome}; browse limit 500 ok"


def _all_rows(ctx: Context, space: SpaceBinding) -> list[MemoryRecord]:
    if ctx.declares("browse"):
        return ctx.browse(space, limit=500)
    return ctx.search(space, "sizeprobe content block words", limit=10)


def check_concurrent_search(ctx: Context) -> str:
    """16 concurrent searches give the ids the same searches give one by one."""
    ctx.require("search")
    ctx.require_writes()
    space = ctx.space("concurrent")
    seed_search_corpus(ctx, space)
    plan = [(q, mode) for mode, (_, _, q) in TARGETS.items()]
    plan += [("lentil soup Mondays", "smart"), ("team decided billing", "keyword")]
    plan = (plan * 4)[:16]
    sequential = [[r.id for r in ctx.search(space, q, mode=m, limit=5)] for q, m in plan]
    with ThreadPoolExecutor(max_workers=len(plan), thread_name_prefix="cf-search") as pool:
        together = list(pool.map(lambda p: ctx.search(space, p[0], mode=p[1], limit=5), plan))
    concurrent = [[r.id for r in rows] for rows in together]
    for n, (one, other) in enumerate(zip(sequential, concurrent, strict=True)):
        expect(one == other, f"search {n} {plan[n]} differs when concurrent: {one} vs {other}")
    return "16 concurrent searches match the sequential ones"
