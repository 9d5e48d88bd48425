"""The per-turn recall envelope over real Memory Spaces (SQLite + a real InMemoryStore).

Exact numbers are checked with :class:`TieredProvider`: the shipped ``StoreProvider`` over a
real LangGraph ``InMemoryStore`` whose rows carry their score in metadata, so quality tiers are
chosen by the test. It counts its searches (the "zero provider calls" assertions) and can be
told to fail or to pause.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.providers.store import StoreProvider
from langgraph_mnemon.errors import ConflictError, InvalidInputError, NotFoundError
from langgraph_mnemon.memory_layers.documents import tokenize
from langgraph_mnemon.memory_layers.spaces import (
    MemoryRecord,
    ProviderSearchRequest,
    ProviderSearchResult,
    SpaceBinding,
)
from langgraph_mnemon.memory_layers.turns import (
    ELLIPSIS,
    FIRST_ATTEMPT_CHARS,
    FIRST_ATTEMPT_RESULTS,
    HINT_EXHAUSTED,
    HINT_FIRST,
    HINT_FIRST_EMPTY,
    HINT_REPLAY,
    HINT_SECOND,
    ITEM_CHARS,
    RESULT_LIMIT,
    TOTAL_CHARS,
    TurnRetrieval,
    TurnRetrievals,
    admit,
    clip_text,
    content_digest,
    query_digest,
    query_terms,
)


class TieredProvider(StoreProvider):
    """Rows of a real store; a row's score is its ``metadata["score"]`` (absent = unscored).

    A search returns the rows sharing a word with the query, best score first (unscored last,
    then oldest first). ``searches`` counts calls; ``fail_next`` makes the next calls raise;
    ``delay`` pauses each search (to make calls overlap).
    """

    def __init__(self) -> None:
        super().__init__(
            InMemoryStore(), provider_id="tiered", label="Tiered", normalized_scores=True
        )
        self.searches = 0
        self.requests: list[ProviderSearchRequest] = []
        self.fail_next = 0
        self.delay = 0.0

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        self.searches += 1
        self.requests.append(request)
        if self.delay:
            time.sleep(self.delay)
        if self.fail_next:
            self.fail_next -= 1
            raise ConnectionError("upstream refused the connection")
        words = set(tokenize(request.query, 32))
        rows = []
        for item in self.store.search(self._ns(space), limit=1000):
            score = item.value.get("metadata", {}).get("score")
            row = self._insight(item, space, via="scripted", score=score)
            if words & set(tokenize(row.content, 512)):
                rows.append(row)
        rows.sort(key=lambda r: (r.score is None, -(r.score or 0.0), r.created_at or 0.0))
        return ProviderSearchResult(results=rows[: request.limit])


class Counting:
    """A counting wrapper around a real ``MemorySpaces`` (or ``Documents``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if not callable(target):
            return target
        if asyncio.iscoroutinefunction(target):

            async def counted_async(*args: Any, **kwargs: Any) -> Any:
                self.calls[name] = self.calls.get(name, 0) + 1
                return await target(*args, **kwargs)

            return counted_async

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return target(*args, **kwargs)

        return counted


def remember(mem: Mnemon, space_id: str, content: str, score: float | None = None) -> str:
    metadata = {} if score is None else {"score": score}
    receipt = mem.spaces.remember(content, space_id=space_id, metadata=metadata)
    assert receipt.status == "committed", receipt
    return str(receipt.id)


@pytest.fixture
def tiered(mem: Mnemon) -> tuple[TieredProvider, str]:
    provider = TieredProvider()
    mem.spaces.register_provider(provider)
    space = mem.spaces.create_space("Tiered", "scored rows", provider_id="tiered", active=True)
    assert space.space is not None
    return provider, space.space.id


def filler(word: str, index: int, size: int) -> str:
    head = f"{word} record {index} "
    return head + "z" * (size - len(head))


# --------------------------------------------------------------------------------------------
# Pure helpers


def test_clip_text_keeps_the_ellipsis_inside_the_limit() -> None:
    assert clip_text("short", 10) == ("short", False)
    text, cut = clip_text("a" * 50, 10)
    assert cut
    assert len(text) == 10
    assert text.endswith(ELLIPSIS)
    # A combining mark is never separated from its base character.
    text, _ = clip_text("abcde\u0301fgh", 6)
    assert text == "abcd" + ELLIPSIS
    # Nor are the halves of a surrogate pair.
    pair = "\ud83d\ude00"
    text, _ = clip_text("abcd" + pair + "xyz", 6)
    assert text == "abcd" + ELLIPSIS


def test_digests_ignore_case_punctuation_and_whitespace() -> None:
    assert query_terms("How do we DEPLOY, to staging?!") == "how do we deploy to staging"
    assert query_terms("Ünïcode-Straße 12%") == "ünïcode straße 12"
    a = query_digest("memory-spaces", "Deploy: staging?", ["b", "a"])
    assert a == query_digest("memory-spaces", "deploy   STAGING", ["a", "b"])
    assert a != query_digest("memory-spaces", "deploy staging", ["a"])
    assert a != query_digest("other-source", "deploy staging", ["a", "b"])
    assert content_digest("  one\n two  ") == content_digest("one two")


def row(rid: str, content: str, tier: str | None, space: str = "s") -> MemoryRecord:
    return MemoryRecord(id=rid, content=content, relevance_tier=tier, space_id=space)  # type: ignore[arg-type]


def test_admit_slots_duplicates_and_budgets() -> None:
    rows = [
        row("h1", "high one", "high"),
        row("l1", "low one", "low"),
        row("m1", "medium one", "medium"),
        row("m2", "medium two", "medium"),
        row("u1", "unscored one", None),
        row("u2", "unknown two", "unknown"),
        row("dup", "  high   one ", "high"),  # same content digest as h1
        row("x" * 1001, "id too long", "high"),
        row("seen", "seen by ref", "high"),
        row("h2", "h" * 50, "high"),
    ]
    got = admit(
        rows,
        max_results=6,
        max_chars=40,
        max_medium=1,
        max_unknown=1,
        seen_refs=[("s", "seen")],
        item_chars=30,
    )
    assert [r.id for r in got.rows] == ["h1", "m1", "u1", "h2"]
    # 8 + 10 + 12 = 30 chars, then h2 is clipped to the 10 remaining.
    assert got.rows[-1].content == "h" * 9 + ELLIPSIS
    assert got.chars == 40
    assert got.truncated
    assert admit(rows, max_results=0, max_chars=100, max_medium=1, max_unknown=1).rows == []


# --------------------------------------------------------------------------------------------
# Recall envelope numbers


def test_first_attempt_then_refinement_fill_the_envelope_exactly(
    mem: Mnemon, tiered: tuple[TieredProvider, str]
) -> None:
    provider, sid = tiered
    for i in range(6):
        remember(mem, sid, filler("alpha", i, 1000), 0.9)
    for i in range(4):
        remember(mem, sid, filler("beta", i, 1000), 0.9)
    turn = TurnRetrieval([sid], view_id="view-1")

    first = turn.recall(mem.spaces, "alpha")
    assert first.status == "searched"
    assert first.attempt == 1
    assert len(first.results) == FIRST_ATTEMPT_RESULTS == 4
    sizes = [len(r.content) for r in first.results]
    assert sizes == [1000, 1000, 1000, 600]
    assert sum(sizes) == FIRST_ATTEMPT_CHARS
    assert first.results[-1].content.endswith(ELLIPSIS)
    assert first.hint == HINT_FIRST
    assert first.evidence.truncated
    assert turn.recall_usage == (4, 3600)

    second = turn.recall(mem.spaces, "beta")
    assert second.status == "searched"
    assert second.attempt == 2
    assert [len(r.content) for r in second.results] == [1000, 200]
    assert turn.recall_usage == (RESULT_LIMIT, TOTAL_CHARS)
    assert second.hint == HINT_SECOND
    assert provider.searches == 2


def test_limits_and_per_item_clip(mem: Mnemon, tiered: tuple[TieredProvider, str]) -> None:
    provider, sid = tiered
    for i in range(3):
        remember(mem, sid, filler("gamma", i, 1500), 0.9)
    turn = TurnRetrieval([sid])
    got = turn.recall(mem.spaces, "gamma", limit=2, category="fact", source="user", intent="x")
    assert [len(r.content) for r in got.results] == [ITEM_CHARS, ITEM_CHARS]
    assert all(r.content.endswith(ELLIPSIS) for r in got.results)
    # Model-chosen filters never reach the provider; the limit is capped at 6.
    request = provider.requests[-1]
    assert (request.category, request.source, request.intent) == (None, None, None)
    assert turn.shape("gamma", limit=50).limit == RESULT_LIMIT
    assert turn.shape("gamma").limit == RESULT_LIMIT


def test_one_medium_and_one_unknown_per_attempt(
    mem: Mnemon, tiered: tuple[TieredProvider, str]
) -> None:
    _, sid = tiered
    high = remember(mem, sid, "delta high fact", 0.9)
    mediums = [remember(mem, sid, f"delta medium fact {i}", 0.4) for i in range(3)]
    unknowns = [remember(mem, sid, f"delta unscored fact {i}") for i in range(2)]
    turn = TurnRetrieval([sid])
    first = turn.recall(mem.spaces, "delta fact")
    tiers = sorted(r.relevance_tier or "" for r in first.results)
    assert tiers == ["high", "medium", "unknown"]
    assert {r.id for r in first.results} & {high, mediums[0], unknowns[0]} == {
        high,
        mediums[0],
        unknowns[0],
    }
    # The refinement admits one more medium and one more unknown, never a duplicate.
    second = turn.recall(mem.spaces, "delta facts please")
    assert sorted(r.relevance_tier or "" for r in second.results) == ["medium", "unknown"]
    assert not {r.id for r in second.results} & {r.id for r in first.results}


def test_low_rows_are_never_admitted(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path / "root", recall_quality={"policy": "balanced-v1"}) as m:
        provider = TieredProvider()
        m.spaces.register_provider(provider)
        sid = m.spaces.create_space("T", "", provider_id="tiered", active=True).space.id
        remember(m, sid, "epsilon good row", 0.9)
        remember(m, sid, "epsilon weak row", 0.1)
        searched = m.spaces.search("epsilon row", limit=6)
        assert "low" in {r.relevance_tier for r in searched.results}  # balanced keeps it
        got = TurnRetrieval([sid]).recall(m.spaces, "epsilon row")
        assert [r.content for r in got.results] == ["epsilon good row"]


def test_empty_first_attempt_hint(mem: Mnemon, tiered: tuple[TieredProvider, str]) -> None:
    _, sid = tiered
    remember(mem, sid, "zeta row", 0.9)
    got = TurnRetrieval([sid]).recall(mem.spaces, "nothing matches this")
    assert got.results == ()
    assert got.hint == HINT_FIRST_EMPTY
    assert got.attempt == 1


# --------------------------------------------------------------------------------------------
# Replay, join, exhaustion, grant, failures


def test_case_and_punctuation_variants_replay_without_a_provider_call(
    mem: Mnemon, tiered: tuple[TieredProvider, str]
) -> None:
    provider, sid = tiered
    other = mem.spaces.create_space("Other", "", provider_id="tiered", active=True).space.id
    remember(mem, sid, "eta deploy note", 0.9)
    turn = TurnRetrieval([sid, other])
    first = turn.recall(mem.spaces, "Eta deploy?")
    calls = provider.searches
    for variant in ("eta, DEPLOY!", "  eta   deploy  ", "ETA-deploy"):
        again = turn.recall(mem.spaces, variant, space_ids=[other, sid])
        assert again.status == "replayed"
        assert again.hint == HINT_REPLAY
        assert again.evidence.id == first.evidence.id
        assert again.results == first.results
        assert not again.provider_called
    assert provider.searches == calls
    assert len(turn.attempts) == 1


def test_concurrent_identical_calls_join_and_distinct_ones_serialize(
    mem: Mnemon, tiered: tuple[TieredProvider, str]
) -> None:
    provider, sid = tiered
    remember(mem, sid, "theta one", 0.9)
    remember(mem, sid, "iota two", 0.9)
    remember(mem, sid, "kappa three", 0.9)
    provider.delay = 0.05

    async def scenario() -> list[Any]:
        turn = TurnRetrieval([sid])
        joined = await asyncio.gather(
            turn.arecall(mem.spaces, "Theta"), turn.arecall(mem.spaces, "theta!")
        )
        distinct = await asyncio.gather(
            turn.arecall(mem.spaces, "iota"), turn.arecall(mem.spaces, "kappa")
        )
        return [joined, distinct, turn]

    joined, distinct, turn = asyncio.run(scenario())
    assert sorted(e.status for e in joined) == ["joined", "searched"]
    assert joined[0].evidence.id == joined[1].evidence.id
    # Two provider calls so far: theta, then iota; kappa waited and found the budget exhausted.
    assert [e.status for e in distinct] == ["searched", "exhausted"]
    assert distinct[1].hint == HINT_EXHAUSTED
    assert distinct[1].evidence.id == distinct[0].evidence.id
    assert provider.searches == 2
    assert len(turn.attempts) == 2


def test_third_distinct_query_replays_latest_evidence(
    mem: Mnemon, tiered: tuple[TieredProvider, str]
) -> None:
    provider, sid = tiered
    for word in ("lambda", "mu", "nu"):
        remember(mem, sid, f"{word} fact", 0.9)
    turn = TurnRetrieval([sid])
    turn.recall(mem.spaces, "lambda")
    second = turn.recall(mem.spaces, "mu")
    third = turn.recall(mem.spaces, "nu")
    assert third.status == "exhausted"
    assert not third.provider_called
    assert third.evidence.id == second.evidence.id
    assert third.results == second.results
    assert provider.searches == 2
    # Replays of earlier queries still work after exhaustion.
    assert turn.recall(mem.spaces, "LAMBDA").status == "replayed"
    assert provider.searches == 2


def test_ungranted_space_is_rejected_without_a_provider_call(
    mem: Mnemon, tiered: tuple[TieredProvider, str]
) -> None:
    provider, sid = tiered
    remember(mem, sid, "xi row", 0.9)
    turn = TurnRetrieval([sid], view_id="view-9")
    with pytest.raises(InvalidInputError, match="outside pinned Source view-9") as info:
        turn.recall(mem.spaces, "xi", space_ids=[sid, "elsewhere"])
    assert info.value.code == "recall-rejected"
    assert provider.searches == 0
    assert turn.attempts == []
    # Trimmed, deduplicated ids inside the grant are fine; an empty list means "all granted".
    assert turn.shape("xi", space_ids=[f" {sid} ", sid]).space_ids == (sid,)
    assert turn.shape("xi", space_ids=[]).space_ids == (sid,)
    with pytest.raises(InvalidInputError, match="grants no Memory Space"):
        TurnRetrieval([]).recall(mem.spaces, "xi")
    with pytest.raises(InvalidInputError, match="empty"):
        turn.recall(mem.spaces, "   ")


def test_failed_attempt_does_not_consume_budget(
    mem: Mnemon, tiered: tuple[TieredProvider, str]
) -> None:
    provider, sid = tiered
    remember(mem, sid, "omicron fact", 0.9)
    remember(mem, sid, "pi fact", 0.9)
    provider.fail_next = 1
    turn = TurnRetrieval([sid])
    failed = turn.recall(mem.spaces, "omicron")
    assert failed.status == "failed"
    assert failed.results == ()
    assert "upstream refused" in failed.unavailable[0]
    assert turn.attempts == []
    assert turn.recall_usage == (0, 0)
    retried = turn.recall(mem.spaces, "omicron")  # not a replay: the failure was not stored
    assert retried.status == "searched"
    assert retried.attempt == 1
    assert turn.recall(mem.spaces, "pi").attempt == 2
    assert provider.searches == 3


def test_one_unavailable_space_is_reported_not_failed(
    mem: Mnemon, tiered: tuple[TieredProvider, str]
) -> None:
    provider, sid = tiered
    other = mem.spaces.create_space("Second", "", provider_id="tiered", active=True).space.id
    remember(mem, sid, "rho fact one", 0.9)
    remember(mem, other, "rho fact two", 0.9)
    provider.fail_next = 1
    got = TurnRetrieval([sid, other]).recall(mem.spaces, "rho")
    assert got.status == "searched"
    assert len(got.results) == 1
    assert len(got.unavailable) == 1
    assert "upstream refused" in got.to_model()["unavailable"][0]


def test_failing_search_call_is_a_failed_attempt(mem: Mnemon) -> None:
    sid = mem.spaces.create_space("Native", "", active=True).space.id
    turn = TurnRetrieval([sid, "deleted-space"])
    failed = turn.recall(mem.spaces, "anything")
    assert failed.status == "failed"
    assert "NotFoundError" in failed.unavailable[0]
    assert turn.attempts == []


# --------------------------------------------------------------------------------------------
# Related


def test_related_only_from_admitted_ids_and_only_once(mem: Mnemon) -> None:
    sid = mem.spaces.create_space("Ops", "deploys", active=True).space.id
    a = remember(mem, sid, "The rho service deploys through staging first.")
    b = remember(mem, sid, "Staging approvals come from the release manager.")
    c = remember(mem, sid, "The cafeteria opens at eight.")
    mem.spaces.link(a, b, space_id=sid, type="causal", weight=0.9)
    mem.spaces.link(c, b, space_id=sid, type="semantic", weight=0.9)
    spaces = Counting(mem.spaces)
    turn = TurnRetrieval([sid])

    found = turn.recall(spaces, "rho service deploys", limit=1)
    assert [r.id for r in found.results] == [a]
    assert turn.admitted_refs == {(sid, a)}

    refused = turn.related(spaces, c)  # memory_body_id optional: one granted space
    assert refused.status == "not-admitted"
    assert refused.results == ()
    assert spaces.calls.get("related", 0) == 0

    traversed = turn.related(spaces, a, memory_body_id=sid)
    assert traversed.status == "traversed"
    assert spaces.calls["related"] == 1
    assert b in {r.id for r in traversed.results}
    assert a not in {r.id for r in traversed.results}  # already admitted
    assert {(sid, r.id) for r in traversed.results} <= turn.admitted_refs

    again = turn.related(spaces, a)
    assert again.status == "replayed"
    assert again.evidence == traversed.evidence
    assert spaces.calls["related"] == 1
    json_out = again.to_model()
    assert json_out["evidence"]["id"].startswith("evidence:")

    with pytest.raises(InvalidInputError, match="outside pinned Source"):
        turn.related(spaces, a, memory_body_id="elsewhere")
    other = mem.spaces.create_space("Other", "", active=True).space.id
    with pytest.raises(InvalidInputError, match="requires one Memory Space"):
        TurnRetrieval([sid, other]).related(spaces, a)


def test_related_envelope_caps_rows_and_characters(mem: Mnemon) -> None:
    sid = mem.spaces.create_space("Graph", "", active=True).space.id
    hub = remember(mem, sid, "sigma hub memory")
    spokes = [remember(mem, sid, filler(f"spoke{i}", i, 1500)) for i in range(6)]
    for spoke in spokes:
        mem.spaces.link(hub, spoke, space_id=sid, type="semantic", weight=0.8)

    async def scenario() -> Any:
        turn = TurnRetrieval([sid])
        await turn.arecall(mem.spaces, "sigma hub")
        assert (sid, hub) in turn.admitted_refs
        return await asyncio.gather(
            turn.arelated(mem.spaces, hub, depth=1), turn.arelated(mem.spaces, hub, depth=1)
        )

    first, second = asyncio.run(scenario())
    assert sorted([first.status, second.status]) == ["replayed", "traversed"]
    traversal = first if first.status == "traversed" else second
    # ≤4 rows (all unscored = unknown, 4 allowed), 1,200 per row, 4,000 in all.
    assert [len(r.content) for r in traversal.results] == [ITEM_CHARS, ITEM_CHARS, ITEM_CHARS, 400]
    assert second.evidence == first.evidence


# --------------------------------------------------------------------------------------------
# Documents


def test_one_documents_search_per_turn(mem: Mnemon) -> None:
    for i in range(6):
        mem.documents.create(f"Runbook {i}", f"Deploy runbook {i}: " + "step " * 600)
    docs = Counting(mem.documents)
    turn = TurnRetrieval([])
    first = turn.search_documents(docs, "deploy runbook", limit=10)
    assert not first.not_run
    # 2,600-character windows: 2,600 + 2,600 + 800 fill the 6,000-character budget exactly.
    assert [len(h.content) for h in first.results] == [2600, 2600, 800]
    assert first.total == 6
    second = turn.search_documents(docs, "something else", limit=0)
    assert second.not_run
    assert second.results == ()
    assert "one search per turn" in second.hint
    assert docs.calls == {"search": 1}
    assert turn.documents_result == first

    async def concurrent() -> list[Any]:
        fresh = TurnRetrieval([])
        return await asyncio.gather(
            fresh.asearch_documents(docs, "runbook", limit=0),
            fresh.asearch_documents(docs, "runbook", limit=3),
        )

    a, b = asyncio.run(concurrent())
    assert [a.not_run, b.not_run].count(True) == 1
    ran = a if not a.not_run else b
    assert len(ran.results) == 1  # limit 0 → max(1, 0) = 1 (the first call took the slot)
    assert docs.calls == {"search": 2}

    bad = TurnRetrieval([])
    with pytest.raises(InvalidInputError):
        bad.search_documents(docs, "x" * 3000)
    for i in range(6):
        mem.documents.create(f"Checklist {i}", f"Release checklist {i}.")
    small = bad.search_documents(docs, "release checklist", limit=10)  # the slot was freed
    assert not small.not_run
    assert len(small.results) == 4  # min(4, max(1, 10))


# --------------------------------------------------------------------------------------------
# Turns and the model-facing shape


def test_each_turn_gets_fresh_budgets(mem: Mnemon, tiered: tuple[TieredProvider, str]) -> None:
    _provider, sid = tiered
    for word in ("tau", "upsilon", "phi"):
        remember(mem, sid, f"{word} fact", 0.9)
    turns = TurnRetrievals(max_turns=2)
    t1 = turns.begin("thread-1:turn-1", [sid], view_id="v1")
    t1.recall(mem.spaces, "tau")
    t1.recall(mem.spaces, "upsilon")
    assert t1.recall(mem.spaces, "phi").status == "exhausted"
    assert turns.begin("thread-1:turn-1", [sid], view_id="v1") is t1  # parallel calls share
    t2 = turns.begin("thread-1:turn-2", [sid], view_id="v1")
    assert t2 is not t1
    fresh = t2.recall(mem.spaces, "tau")
    assert fresh.status == "searched"
    assert fresh.attempt == 1
    assert fresh.evidence.id != t1.attempts[0].evidence.id
    with pytest.raises(ConflictError):
        turns.begin("thread-1:turn-2", [sid, "x"], view_id="v1")
    turns.begin("child:turn-1", [sid])  # LRU keeps 2
    assert len(turns) == 2
    with pytest.raises(NotFoundError):
        turns.get("thread-1:turn-1")
    assert turns.end("child:turn-1")
    assert not turns.end("child:turn-1")


def test_model_facing_json_has_no_scores(mem: Mnemon, tiered: tuple[TieredProvider, str]) -> None:
    _, sid = tiered
    remember(mem, sid, "chi fact with tags", 0.9)
    got = TurnRetrieval([sid], view_id="v7").recall(mem.spaces, "chi")
    out = got.to_model()
    assert set(out) == {"query", "mode", "results", "hint", "evidence"}
    item = out["results"][0]
    assert {"score", "normalized_score", "relevance_tier", "metadata"} & set(item) == set()
    assert item["memory_body_id"] == sid
    assert item["content"] == "chi fact with tags"
    assert out["evidence"]["view_id"] == "v7"
    assert out["evidence"]["route_id"] == "memory-spaces/recall"
