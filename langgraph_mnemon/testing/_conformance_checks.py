"""The conformance checks for the descriptor, status, writes, search, scores, browse and forget.

Every corpus is fixed text, so a run is deterministic apart from the random space ids.
"""

from __future__ import annotations

import itertools
import re
import time
from typing import Any

from langgraph_mnemon.errors import NotFoundError
from langgraph_mnemon.memory_layers.spaces import (
    SEARCH_MODES,
    ProviderDescriptor,
    ProviderStatus,
    RememberItem,
    is_committed,
    is_pending,
    settle,
)
from langgraph_mnemon.testing._conformance_base import (
    CheckFailed,
    Context,
    expect,
    finite,
    receipt_id,
    short,
)

__all__ = [
    "DISTRACTORS",
    "TARGETS",
    "check_browse",
    "check_descriptor",
    "check_forget",
    "check_remember_many",
    "check_remember_receipt",
    "check_score_semantics",
    "check_search_modes",
    "check_status",
    "seed_search_corpus",
]

_OPERATIONS = (
    "status",
    "search",
    "browse",
    "graph",
    "remember",
    "remember_many",
    "related",
    "link",
    "forget",
    "discover",
)
_ID_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,63}$")
# Capabilities that only make sense when rows can be addressed by id.
_NEEDS_ROWS = ("related", "link", "graph", "entities", "forget")

DISTRACTORS: tuple[tuple[str, str], ...] = (
    ("The cafeteria serves lentil soup on Mondays.", "fact"),
    ("Backups of the wiki run nightly at two in the morning.", "fact"),
    ("Maya prefers dark mode in every editor she uses.", "preference"),
    ("The team decided to retire the legacy billing cron job.", "decision"),
    ("Bicycle parking is behind the north entrance.", "context"),
    ("Quarterly planning happens in the large meeting room.", "context"),
    ("Use British spelling in customer newsletters.", "preference"),
    ("The printer on floor three jams with glossy paper.", "fact"),
    ("We chose Redis for the session cache last spring.", "decision"),
    ("Visitors must sign in at the reception desk.", "general"),
    ("Code reviews need one approval from another team.", "general"),
    ("The staging cluster scales down every Friday evening.", "insight"),
)
# One target per mode: (content, category, query made of words the content holds verbatim).
TARGETS: dict[str, tuple[str, str, str]] = {
    "smart": (
        "Marigold invoices are archived every Tuesday in the basement vault.",
        "fact",
        "marigold invoices basement vault",
    ),
    "keyword": (
        "The telescope calibration uses a cobalt reference lamp.",
        "decision",
        "telescope cobalt lamp",
    ),
    "basic": (
        "Penguin enclosure humidity stays near sixty percent.",
        "insight",
        "penguin enclosure humidity",
    ),
}
ABSENT_QUERY = "xylophonic quasarium brontosaurial"


def check_descriptor(ctx: Context) -> str:
    """A valid descriptor whose capabilities, modes and methods fit together."""
    descriptor = ctx.descriptor
    expect(isinstance(descriptor, ProviderDescriptor), "descriptor is not a ProviderDescriptor")
    ProviderDescriptor.model_validate(descriptor.model_dump())
    expect(_ID_PATTERN.match(descriptor.id), f"descriptor id {descriptor.id!r} is not a slug")
    caps = descriptor.capabilities
    expect(not caps.remember_many or caps.remember, "remember_many is declared without remember")
    readable = caps.search or caps.browse
    for name in _NEEDS_ROWS:
        expect(
            not getattr(caps, name) or readable,
            f"{name} is declared but neither search nor browse can show row ids",
        )
    expect(
        (descriptor.deletion_mode == "unsupported") == (not caps.forget),
        f"deletion_mode {descriptor.deletion_mode!r} does not match forget={caps.forget}",
    )
    _check_fields(descriptor)
    for name in _OPERATIONS:
        method = getattr(ctx.provider, name, None)
        expect(callable(method), f"the provider has no {name}()")
    closer = getattr(ctx.provider, "close", None) or getattr(ctx.provider, "aclose", None)
    expect(callable(closer), "the provider has no close()")
    for value in ctx.secrets.values():
        expect(value not in repr(ctx.provider), "repr(provider) shows a secret value")
    checked = ctx.provider.check_config(dict(ctx.config), dict(ctx.secrets))
    expect(isinstance(checked, dict), f"check_config returned {type(checked).__name__}")
    placed = ctx.provider.place("cf-placed", dict(checked))
    expect(isinstance(placed, dict), f"place returned {type(placed).__name__}")
    for value in ctx.secrets.values():
        expect(value not in repr(placed), "place() put a secret value into the space config")
    return f"{descriptor.id}: {', '.join(caps.names())}"


def _check_fields(descriptor: ProviderDescriptor) -> None:
    names = [f.name for f in descriptor.config_fields]
    expect(len(names) == len(set(names)), f"config_fields repeat a name: {names}")
    secret = set(descriptor.secret_fields)
    for config_field in descriptor.config_fields:
        if config_field.kind == "secret":
            expect(
                config_field.name in secret,
                f"config field {config_field.name!r} is a secret but not in secret_fields",
            )
        else:
            expect(
                config_field.name not in secret,
                f"config field {config_field.name!r} is in secret_fields but not kind='secret'",
            )


def _counts(status: ProviderStatus) -> dict[str, int | None]:
    return {
        "total_insights": status.total_insights,
        "deleted_insights": status.deleted_insights,
        "edge_count": status.edge_count,
        "db_size_bytes": status.db_size_bytes,
    }


def _status(ctx: Context, space: Any) -> ProviderStatus:
    status = settle(ctx.provider.status(space))
    expect(isinstance(status, ProviderStatus), f"status returned {short(status)}")
    for name, value in _counts(status).items():
        expect(
            value is None or (type(value) is int and value >= 0),
            f"status {name} is {value!r}, not an int >= 0",
        )
    return status


def check_status(ctx: Context) -> str:
    """Healthy on an empty space; counts are ints >= 0 that grow after writes."""
    space = ctx.space("status")
    before = _status(ctx, space)
    expect(before.healthy is True, f"an empty space is not healthy: {before.error!r}")
    expect(before.total_insights in (None, 0), f"an empty space counts {before.total_insights}")
    if not ctx.declares("remember"):
        return "healthy (no writes to count)"
    ctx.write(space, ["Status probe: the kettle in room 4 is broken."])
    after = _status(ctx, space)
    expect(after.healthy is True, f"status unhealthy after a write: {after.error!r}")
    if after.total_insights is None:
        return "healthy; counts not reported"
    expect(after.total_insights >= 1, f"total_insights is {after.total_insights} after a write")
    return f"healthy; total {before.total_insights} -> {after.total_insights}"


def check_remember_receipt(ctx: Context) -> str:
    """Exact writes commit and are visible at once with the receipt's id; async ones settle."""
    ctx.require("remember")
    space = ctx.space("receipt")
    content = "Receipt probe: the zephyrquokka badge opens the east lab."
    raw = settle(ctx.provider.remember(space, RememberItem(content=content, category="fact")))
    expect(isinstance(raw, dict), f"remember returned {short(raw)}, not a dict")
    committed = is_committed(raw)
    if ctx.exact:
        expect(committed, f"write_mode='exact' but the receipt is not committed: {short(raw)}")
        rid = receipt_id(raw)
        expect(rid, f"the committed receipt names no id: {short(raw)}")
        _visible_with_id(ctx, space, content, rid, "zephyrquokka badge east lab")
        return f"committed, id {rid} visible at once"
    if committed:  # an async provider may only claim what is already visible
        rid = receipt_id(raw)
        try:
            _visible_with_id(ctx, space, content, rid, "zephyrquokka badge east lab")
        except CheckFailed as exc:
            raise CheckFailed(
                f"write_mode='async' and the receipt says committed, but {exc}; report "
                "pending until the row is visible"
            ) from None
        return "async provider committed a write that was visible at once"
    expect(
        is_pending(raw) or str(raw.get("status", "")).lower() == "skipped",
        f"an async receipt is neither committed nor pending/skipped: {short(raw)}",
    )
    ctx.settle()
    rows = ctx.search(space, "zephyrquokka badge east lab", limit=10)
    expect(
        any("zephyrquokka" in r.content.lower() for r in rows),
        "after settle() the accepted write is still not searchable",
    )
    return "pending, visible after settle()"


def _visible_with_id(ctx: Context, space: Any, content: str, rid: Any, query: str) -> None:
    if ctx.declares("browse"):
        shown = [r for r in ctx.browse(space, limit=50) if r.id == rid]
        expect(shown, f"browse does not show the committed row {rid!r} at once")
        expect(shown[0].content == content, f"browse shows {short(shown[0].content)}")
    if ctx.declares("search"):
        rows = ctx.search(space, query, limit=10)
        expect(
            any(r.id == rid and r.content == content for r in rows),
            f"search does not find the committed row {rid!r} at once (got "
            f"{short([r.id for r in rows])})",
        )


def check_remember_many(ctx: Context) -> str:
    """One receipt per item, in order, distinct ids, each naming its own row."""
    ctx.require("remember")
    space = ctx.space("many")
    items = [
        RememberItem(content="Batch probe one: the orchid greenhouse is watered at dawn."),
        RememberItem(content="Batch probe two: the violin workshop closes at noon."),
        RememberItem(content="Batch probe three: the glacier survey uses red flags."),
    ]
    receipts = settle(ctx.provider.remember_many(space, items))
    expect(isinstance(receipts, list), f"remember_many returned {short(receipts)}")
    expect(len(receipts) == len(items), f"{len(receipts)} receipts for {len(items)} items")
    if not ctx.exact:
        ctx.settle()
        return f"{len(receipts)} receipts (async provider)"
    ids = [receipt_id(r) for r in receipts]
    expect(all(is_committed(r) for r in receipts), f"not every write committed: {receipts}")
    expect(all(ids) and len(set(ids)) == len(ids), f"receipt ids are not distinct: {ids}")
    for item, rid in zip(items, ids, strict=True):
        rows = ctx.visible(space, item.content)
        expect(
            any(r.id == rid for r in rows),
            f"receipt id {rid!r} is not the row holding {short(item.content)} (order broken?)",
        )
    return f"{len(ids)} committed receipts in order"


def seed_search_corpus(ctx: Context, space: Any) -> dict[str, str]:
    """Write the distractors and one target per mode; the target ids by mode."""
    items = [RememberItem(content=c, category=cat) for c, cat in DISTRACTORS]  # type: ignore[arg-type]
    for content, category, _ in TARGETS.values():
        items.append(RememberItem(content=content, category=category))  # type: ignore[arg-type]
    receipts = ctx.write(space, items)
    if not ctx.exact:
        found: dict[str, str] = {}
        for mode, (content, _, query) in TARGETS.items():
            rows = ctx.search(space, query, mode=mode, limit=10)
            match = [r.id for r in rows if r.content == content]
            found[mode] = match[0] if match else ""
        return found
    ids = [receipt_id(r) or "" for r in receipts]
    return dict(zip(TARGETS, ids[len(DISTRACTORS) :], strict=True))


def check_search_modes(ctx: Context) -> str:
    """Each mode finds its target in the top 3; limit and category hold; keyword finds no
    row for words no row holds."""
    ctx.require("search")
    ctx.require_writes()
    space = ctx.space("modes")
    targets = seed_search_corpus(ctx, space)
    for mode, (content, _, query) in TARGETS.items():
        rows = ctx.search(space, query, mode=mode, limit=10)
        top = [r.content for r in rows[:3]]
        expect(content in top, f"{mode} search for {query!r} misses its row in the top 3: {top}")
        expect(not targets[mode] or targets[mode] in [r.id for r in rows[:3]], f"{mode}: id")
        for limit in (1, 2):
            few = ctx.search(space, query, mode=mode, limit=limit)
            expect(len(few) <= limit, f"{mode} search returned {len(few)} rows for limit {limit}")
    content, category, query = TARGETS["keyword"]
    for mode in SEARCH_MODES:
        rows = ctx.search(space, query, mode=mode, category=category, limit=10)
        expect(
            all(r.category == category for r in rows),
            f"{mode} search with category={category!r} returned "
            f"{short(sorted({r.category for r in rows}))}",
        )
        expect(content in [r.content for r in rows], f"{mode} category filter lost the match")
        other = ctx.search(space, query, mode=mode, category="preference", limit=10)
        expect(
            all(r.category == "preference" for r in other),
            f"{mode} search with category='preference' returned other categories",
        )
    absent = ctx.search(space, ABSENT_QUERY, mode="keyword", limit=10)
    expect(not absent, f"keyword search for words in no row returned {short(absent)}")
    return "smart/keyword/basic find their rows; limit and category honoured"


def check_score_semantics(ctx: Context) -> str:
    """Scores keep the declared semantics; no row ever comes from another space."""
    ctx.require("search")
    ctx.require_writes()
    space = ctx.space("scores")
    other = ctx.space("isolated")
    seed_search_corpus(ctx, space)
    normalized = ctx.descriptor.score_semantics == "normalized"
    queries = [q for _, _, q in TARGETS.values()] + ["lentil soup Mondays", "team decided"]
    counted = 0
    for mode in SEARCH_MODES:
        for query in queries:
            rows = ctx.search(space, query, mode=mode, limit=10)
            _check_scores(rows, normalized, f"{mode} {query!r}")
            counted += len(rows)
            expect(
                all(r.space_id in (None, space.id) for r in rows),
                f"{mode} search labelled rows with another space id",
            )
            leaked = ctx.search(other, query, mode=mode, limit=10)
            expect(not leaked, f"{mode} search of an empty space returned rows of another space")
    if ctx.declares("browse"):
        expect(not ctx.browse(other), "browse of an empty space shows another space's rows")
    return f"{ctx.descriptor.score_semantics} scores on {counted} rows; spaces isolated"


def _check_scores(rows: list[Any], normalized: bool, where: str) -> None:
    scores = [r.score for r in rows]
    if not normalized:
        expect(
            all(s is None or finite(s) for s in scores), f"{where}: a score is not finite: {scores}"
        )
        return
    for score in scores:
        expect(finite(score), f"{where}: normalized score {score!r} is not a finite number")
        expect(0 <= score <= 1, f"{where}: normalized score {score!r} is outside 0..1")
    for first, second in itertools.pairwise(scores):
        expect(first >= second - 1e-9, f"{where}: scores are not best first: {scores}")


def check_browse(ctx: Context) -> str:
    """Newest first; limit and offset page through; the category filter holds."""
    ctx.require("browse")
    ctx.require_writes()
    space = ctx.space("browse")
    categories = ["fact", "decision", "fact", "decision", "fact"]
    contents = [f"Browse probe {n}: shelf {n} holds the {w} jars." for n, w in enumerate("abcde")]
    ids: list[str] = []
    for content, category in zip(contents, categories, strict=True):
        [raw] = ctx.write(space, [RememberItem(content=content, category=category)])  # type: ignore[arg-type]
        ids.append(receipt_id(raw) or "")
        time.sleep(0.02)  # distinct creation times for providers that sort by time
    newest = [r.content for r in ctx.browse(space, limit=50)]
    expect(newest == contents[::-1], f"browse is not newest first: {short(newest, 400)}")
    first = [r.content for r in ctx.browse(space, limit=2)]
    second = [r.content for r in ctx.browse(space, limit=2, offset=2)]
    expect(first == contents[::-1][:2], f"browse limit=2 gave {short(first)}")
    expect(second == contents[::-1][2:4], f"browse limit=2 offset=2 gave {short(second)}")
    past = ctx.browse(space, limit=10, offset=10)
    expect(not past, f"browse past the end returned {len(past)} rows")
    decisions = ctx.browse(space, limit=50, category="decision")
    expect(
        sorted(r.content for r in decisions) == sorted(contents[1::2]),
        f"browse category='decision' gave {short([r.content for r in decisions])}",
    )
    if ctx.exact:
        expect(
            [r.id for r in ctx.browse(space, limit=50)] == ids[::-1],
            "browse ids differ from receipt ids",
        )
    return "newest first; limit/offset/category honoured"


def check_forget(ctx: Context) -> str:
    """The row leaves search and browse; counts follow the deletion mode; unknown id ->
    NotFoundError; the receipt is committed."""
    ctx.require("forget")
    ctx.require_writes()
    space = ctx.space("forget")
    keep = "Forget probe keep: the walrus statue stands in the lobby."
    drop = "Forget probe drop: the pelican mural faces the river."
    receipts = ctx.write(space, [keep, drop])
    rows = ctx.visible(space, drop)
    expect(rows, "the row to forget is not visible after writing it")
    target = receipt_id(receipts[1]) if ctx.exact else rows[0].id
    before = _status(ctx, space)
    raw = settle(ctx.provider.forget(space, str(target)))
    expect(is_committed(raw), f"the forget receipt is not committed: {short(raw)}")
    ctx.settle()
    if ctx.declares("browse"):
        shown = [r.id for r in ctx.browse(space, limit=50)]
        expect(target not in shown, "the forgotten row is still browsable")
    if ctx.declares("search"):
        for mode in SEARCH_MODES:
            found = ctx.search(space, "pelican mural river", mode=mode, limit=10)
            expect(target not in [r.id for r in found], f"{mode} search still finds the row")
    after = _status(ctx, space)
    _check_counts(ctx.descriptor.deletion_mode, before, after)
    try:
        settle(ctx.provider.forget(space, "cf-no-such-memory-0000"))
    except NotFoundError:
        pass
    except Exception as exc:
        raise CheckFailed(
            f"forgetting an unknown id raised {type(exc).__name__}, not NotFoundError"
        ) from None
    else:
        raise CheckFailed("forgetting an unknown id did not raise NotFoundError")
    return f"{ctx.descriptor.deletion_mode} delete; unknown id -> NotFoundError"


def _check_counts(mode: str, before: ProviderStatus, after: ProviderStatus) -> None:
    if before.total_insights is None or after.total_insights is None:
        return
    down = after.total_insights == before.total_insights - 1
    if mode == "hard":
        expect(down, f"hard delete: total {before.total_insights} -> {after.total_insights}")
        return
    deleted_up = (
        before.deleted_insights is not None
        and after.deleted_insights == before.deleted_insights + 1
    )
    expect(
        down or deleted_up,
        f"soft delete: total {before.total_insights} -> {after.total_insights}, deleted "
        f"{before.deleted_insights} -> {after.deleted_insights}",
    )
