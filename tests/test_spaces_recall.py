"""Federated recall (§5.1): candidate limit, quality policies, fusion, hints, anchors, recovery."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from spaces_support import (
    CountingStoreProvider,
    FailingProvider,
    ScriptedProvider,
    SlowProvider,
    make_spaces,
)

from langgraph_mnemon.errors import InvalidInputError, NotFoundError
from langgraph_mnemon.memory_layers.spaces import (
    Candidate,
    MemorySpaces,
    QualitySettings,
    apply_quality,
    candidate_limit,
    classify_score,
    coverage_count,
    coverage_plan,
    extract_anchors,
    is_committed,
    normalize_anchor_text,
    register_quality_policy,
)

S = QualitySettings()


def scripted_spaces(tmp_path: Path, *providers: ScriptedProvider, **kwargs: object) -> MemorySpaces:
    spaces = make_spaces(tmp_path, list(providers), **kwargs)
    for provider in providers:
        spaces.create_space(
            provider.descriptor.id,
            provider_id=provider.descriptor.id,
            space_id=provider.descriptor.id,
            active=True,
        )
    return spaces


@pytest.fixture
def closing() -> Iterator[list[MemorySpaces]]:
    opened: list[MemorySpaces] = []
    yield opened
    for spaces in opened:
        spaces.close()


# ------------------------------------------------------------------ candidate limit and tiers


@pytest.mark.parametrize(
    ("limit", "multiplier", "expected"),
    [(10, 3, 30), (2, 3, 6), (20, 3, 50), (1, 1, 1), (50, 5, 50), (7, 1.5, 11)],
)
def test_candidate_limit(limit: int, multiplier: float, expected: int) -> None:
    assert candidate_limit(limit, multiplier) == expected


@pytest.mark.parametrize(
    ("score", "normalized", "tier", "norm", "reason"),
    [
        (0.6, True, "high", 0.6, "scored"),
        (0.599, True, "medium", 0.599, "scored"),
        (0.25, True, "medium", 0.25, "scored"),
        (0.249, True, None, 0.249, "low-score"),
        (0.0, True, None, 0.0, "non-positive-score"),
        (-0.3, True, None, 0.0, "non-positive-score"),
        (None, True, "unknown", None, "unscored"),
        (1.7, True, "unknown", None, "unscaled-score"),
        (0.9, False, "unknown", None, "unscaled-score"),
        (math.nan, True, None, None, "invalid-score"),
        (math.inf, False, None, None, "invalid-score"),
    ],
)
def test_strict_tier_boundaries(
    score: float | None, normalized: bool, tier: str | None, norm: float | None, reason: str
) -> None:
    assert classify_score(score, normalized, S) == (tier, norm, reason)


def test_policy_boundaries_end_to_end(tmp_path: Path, closing: list[MemorySpaces]) -> None:
    rows = [
        ("exactly high", 0.6),
        ("just medium", 0.599),
        ("low edge medium", 0.25),
        ("just low", 0.249),
        ("zero", 0.0),
        ("no score", None),
        ("above one", 1.7),
    ]
    spaces = scripted_spaces(tmp_path, ScriptedProvider(rows))
    closing.append(spaces)
    result = spaces.search("anything at all", limit=10, policy=spaces.envelope_policy)
    got = {r.content: (r.relevance_tier, r.normalized_score, r.score) for r in result.results}
    assert got == {
        "exactly high": ("high", 0.6, 0.6),
        "just medium": ("medium", 0.599, 0.599),
        "low edge medium": ("medium", 0.25, 0.25),
        "no score": ("unknown", None, None),
        "above one": ("unknown", None, 1.7),
    }
    stats = result.sources[0].quality
    assert stats is not None
    assert (stats.fetched, stats.retained, stats.selected) == (7, 5, 5)
    assert (stats.dropped_low_score, stats.dropped_non_positive_score) == (1, 1)
    assert (stats.unscored, stats.unscaled, stats.dropped_invalid_score) == (1, 1, 0)
    assert stats.policy_id == "strict-v1"
    # Without a policy nothing is cut: every finite row, each with its tier.
    deep = spaces.search("anything at all", limit=10)
    tiers = {r.content: r.relevance_tier for r in deep.results}
    assert tiers == {
        "exactly high": "high",
        "just medium": "medium",
        "low edge medium": "medium",
        "just low": "low",
        "zero": "low",
        "no score": "unknown",
        "above one": "unknown",
    }
    assert deep.policy_id == "exhaustive-v1"


def test_non_normalized_provider_rows_are_unknown_and_capped(
    tmp_path: Path, closing: list[MemorySpaces]
) -> None:
    rows = [(f"row {i}", 0.95) for i in range(5)]
    spaces = scripted_spaces(tmp_path, ScriptedProvider(rows, normalized=False))
    closing.append(spaces)
    result = spaces.search("rows please", limit=10, policy=spaces.envelope_policy)
    assert [r.content for r in result.results] == ["row 0", "row 1"]
    assert len(spaces.search("rows please", limit=10).results) == 5
    assert {r.relevance_tier for r in result.results} == {"unknown"}
    assert all(r.score == 0.95 for r in result.results)


def test_medium_and_unknown_caps_and_no_padding(
    tmp_path: Path, closing: list[MemorySpaces]
) -> None:
    rows = [(f"medium {i}", 0.5 - i * 0.01) for i in range(6)]
    rows += [("high one", 0.9), ("unknown a", None), ("unknown b", None), ("unknown c", None)]
    rows += [(f"low {i}", 0.1) for i in range(5)]
    spaces = scripted_spaces(tmp_path, ScriptedProvider(rows))
    closing.append(spaces)
    result = spaces.search("caps", limit=20, policy="strict-v1")
    contents = [r.content for r in result.results]
    # Single provider: sorted by raw score; unscored rows after scored ones.
    assert contents == [
        "high one",
        "medium 0",
        "medium 1",
        "medium 2",
        "medium 3",
        "unknown a",
        "unknown b",
    ]
    small = spaces.search("caps", limit=3, policy="strict-v1")
    assert [r.content for r in small.results] == ["high one", "medium 0", "medium 1"]
    balanced = spaces.search("caps", limit=20, policy="balanced-v1")
    assert [r.content for r in balanced.results][-5:] == [f"low {i}" for i in range(5)]
    exhaustive = spaces.search("caps", limit=20, policy="exhaustive-v1")
    assert len(exhaustive.results) == 15
    assert exhaustive.policy_id == "exhaustive-v1"
    # The default search is the depth: the same 15 rows, in the same order.
    deep = spaces.search("caps", limit=20)
    assert [r.content for r in deep.results] == [r.content for r in exhaustive.results]


def test_a_failing_policy_falls_back_to_strict() -> None:
    class Broken:
        id = "broken-test-v1"

        def select(self, ranked, limit, settings):  # type: ignore[no-untyped-def]
            return [*ranked, *ranked]

    register_quality_policy(Broken())
    ranked = [
        Candidate(row=None, space_id="s", provider_id="p", rank=i, order=0, normalized=True,
                  score=0.9)
        for i in range(1, 4)
    ]  # fmt: skip
    outcome = apply_quality("broken-test-v1", ranked, 2, S)
    assert outcome.policy_id == "strict-v1"
    assert outcome.fallback_from == "broken-test-v1"
    assert len(outcome.selected) == 2
    with pytest.raises(InvalidInputError, match="unknown recall quality policy"):
        apply_quality("nope-v9", ranked, 2, S)
    with pytest.raises(InvalidInputError):
        register_quality_policy(type("Bad", (), {"id": "Bad Id"})())  # type: ignore[arg-type]


# ------------------------------------------------------------------ fusion and availability


def test_rrf_across_provider_kinds_keeps_raw_scores(
    tmp_path: Path, closing: list[MemorySpaces]
) -> None:
    first = ScriptedProvider([("a1", 0.99), ("a2", 0.98)], provider_id="alpha")
    second = ScriptedProvider([("b1", 0.61), ("b2", 0.7)], provider_id="beta")
    spaces = scripted_spaces(tmp_path, first, second)
    closing.append(spaces)
    result = spaces.search("fuse", limit=4)
    assert [r.content for r in result.results] == ["a1", "b1", "a2", "b2"]
    assert [r.federated_score for r in result.results] == pytest.approx(
        [1 / 61, 1 / 61, 1 / 62, 1 / 62]
    )
    assert [r.score for r in result.results] == [0.99, 0.61, 0.98, 0.7]


def test_one_provider_kind_sorts_by_raw_score(tmp_path: Path, closing: list[MemorySpaces]) -> None:
    spaces = make_spaces(tmp_path)
    closing.append(spaces)
    spaces.create_space("one", space_id="one")
    spaces.create_space("two", space_id="two")
    spaces.remember("kafka consumer lag alert fired twice", space_id="one")
    spaces.remember("kafka consumer lag alert fired on the orders topic", space_id="two")
    result = spaces.search("kafka consumer lag alert orders topic")
    scores = [r.score for r in result.results]
    assert scores == sorted(scores, reverse=True)
    assert all(r.federated_score is None for r in result.results)
    assert {r.space_id for r in result.results} == {"one", "two"}


def test_a_raising_provider_becomes_a_hint(tmp_path: Path, closing: list[MemorySpaces]) -> None:
    spaces = make_spaces(tmp_path, [FailingProvider()])
    closing.append(spaces)
    spaces.create_space("broken", provider_id="failing", space_id="broken", active=True)
    spaces.create_space("native", space_id="native")
    spaces.remember("the VPN gateway is vpn-2.corp", space_id="native")
    result = spaces.search("vpn gateway")
    broken = next(s for s in result.sources if s.space_id == "broken")
    assert broken.status == "unavailable"
    assert broken.hint == "unavailable: connection refused by upstream"
    assert broken.quality is None
    assert [r.content for r in result.results] == ["the VPN gateway is vpn-2.corp"]
    failed = spaces.remember("x", space_id="broken")
    assert failed.status == "failed"
    assert not failed.committed
    assert "connection refused" in failed.message
    assert spaces.get_space("broken").active is True


def test_a_slow_provider_times_out_into_a_hint(tmp_path: Path, closing: list[MemorySpaces]) -> None:
    spaces = make_spaces(tmp_path, [SlowProvider(2.0)], timeout_ms=200)
    closing.append(spaces)
    spaces.create_space("slow", provider_id="slow", space_id="slow", active=True)
    result = spaces.search("anything")
    assert result.sources[0].status == "unavailable"
    assert result.sources[0].hint == "unavailable: no answer within 200 ms"


def test_search_input_validation(tmp_path: Path, closing: list[MemorySpaces]) -> None:
    spaces = make_spaces(tmp_path)
    closing.append(spaces)
    for kwargs, error in [
        ({"query": ""}, InvalidInputError),
        ({"query": "x" * 2001}, InvalidInputError),
        ({"query": "ok", "limit": 0}, InvalidInputError),
        ({"query": "ok", "limit": 51}, InvalidInputError),
        ({"query": "ok", "mode": "fuzzy"}, InvalidInputError),
        ({"query": "ok", "category": "gossip"}, InvalidInputError),
        ({"query": "ok", "policy": "lenient"}, InvalidInputError),
        ({"query": "ok", "space_ids": "default"}, InvalidInputError),
        ({"query": "ok", "space_ids": ["missing"]}, NotFoundError),
    ]:
        with pytest.raises(error):
            spaces.search(**kwargs)  # type: ignore[arg-type]
    empty = spaces.search("nothing stored yet")
    assert empty.results == []
    assert "no active Memory Space" in (empty.hint or "")


# ------------------------------------------------------------------ anchors and coverage


@pytest.mark.parametrize(
    ("query", "anchors"),
    [
        ("Did release v2.1 ship on 2024-05-03?", ["v2.1", "2024-05-03"]),
        ("growth of 12 percent, then 7 ％ by 9:30", ["12%", "7%", "9:30"]),
        ("ticket feature-x_1 and build 1.2.3 on 2024/5/3", ["feature-x_1", "1.2.3", "2024-5-3"]),
        ("12 percentage points in 2023", ["12%", "2023"]),
        ("收入增长了百分之十五，版本1.2.3", ["15%", "1.2.3"]),
        ("转化率百分之12，v3 在 2024-06-01 上线", ["12%", "v3", "2024-06-01"]),
        ("百分之二十五点五的用户", ["25.5%"]),
        ("When did Caroline go to the support group?", []),
    ],
)
def test_anchor_extraction_english_and_chinese(query: str, anchors: list[str]) -> None:
    assert extract_anchors(query) == anchors


def test_anchors_are_deduplicated_and_capped() -> None:
    query = " ".join(str(n) for n in [1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    assert extract_anchors(query) == ["1", "2", "3", "4", "5", "6", "7", "8"]


def test_percent_forms_normalise_alike() -> None:
    forms = ["12%", "12 ％", "12 percent", "百分之12", "百分之十二"]
    assert {normalize_anchor_text(f) for f in forms} == {"12%"}


def test_coverage_plans() -> None:
    exact = coverage_plan("v2.1 shipped 2024-05-03 with 12% more users")
    assert (exact.kind, exact.required) == ("exact", 3)
    assert coverage_count(exact, "On 2024-05-03 we shipped V2.1 (+12 percent).") == 3
    assert coverage_count(exact, "v2.10 shipped on 2024-05-30") == 0
    lexical = coverage_plan("how do we rotate the staging database password")
    assert lexical.kind == "lexical"
    assert lexical.required == 2
    assert coverage_plan("short query").kind == "none"
    zh = coverage_plan("数据库迁移计划什么时候开始")
    assert zh.kind == "lexical"
    assert "数据" in zh.terms


# ------------------------------------------------------------------ recovery


def test_recovery_runs_once_and_only_on_native_spaces(
    tmp_path: Path, closing: list[MemorySpaces]
) -> None:
    scripted = ScriptedProvider([("generic rollout notes", 0.95)], provider_id="scripted")
    store = CountingStoreProvider()
    spaces = make_spaces(tmp_path, [scripted, store])
    closing.append(spaces)
    spaces.create_space("scripted", provider_id="scripted", space_id="scripted", active=True)
    spaces.create_space("native", space_id="native")
    spaces.create_space("store", provider_id="store", space_id="store")
    spaces.remember("Release v2.4.1 shipped on 2024-03-15 after the canary.", space_id="native")
    spaces.remember("The canary ran for two days without errors.", space_id="native")
    spaces.remember("rollout rollout rollout", space_id="store")
    result = spaces.search("did v2.4.1 ship on 2024-03-15", limit=1)
    assert result.recovery is not None
    assert (result.recovery.kind, result.recovery.ran, result.recovery.recovered) == (
        "exact",
        True,
        1,
    )
    assert result.recovery.covered is True
    assert [r.content for r in result.results] == [
        "Release v2.4.1 shipped on 2024-03-15 after the canary."
    ]
    assert store.modes == ["smart"]
    assert len(scripted.calls) == 1
    keyword = spaces.search("did v2.4.1 ship on 2024-03-15", limit=1, mode="keyword")
    assert keyword.recovery is not None
    assert keyword.recovery.kind == "none"
    filtered = spaces.search("did v2.4.1 ship on 2024-03-15", limit=1, category="fact")
    assert filtered.recovery is not None
    assert filtered.recovery.ran is False


def test_covering_rows_come_first(tmp_path: Path, closing: list[MemorySpaces]) -> None:
    rows = [
        ("staging notes without the numbers", 0.99),
        ("port 5433 and release 7.1.2 noted", 0.7),
    ]
    spaces = scripted_spaces(tmp_path, ScriptedProvider(rows))
    closing.append(spaces)
    # The envelope's rule: under a cut, the row that covers the query's anchors comes first.
    result = spaces.search("port 5433 release 7.1.2", limit=5, policy="balanced-v1")
    assert [r.content for r in result.results] == [rows[1][0], rows[0][0]]
    assert result.recovery is not None
    assert result.recovery.ran is False
    # With no cut too: a provider other than the native one ranks by its own measure, and
    # the covering row still comes first (a native-only depth search keeps the native
    # ranking: tests/test_ranking_cues.py).
    deep = spaces.search("port 5433 release 7.1.2", limit=5)
    assert [r.content for r in deep.results] == [rows[1][0], rows[0][0]]


def test_chinese_memories_are_found_and_recovered(
    tmp_path: Path, closing: list[MemorySpaces]
) -> None:
    spaces = make_spaces(tmp_path)
    closing.append(spaces)
    spaces.remember("数据库迁移计划在2024-06-01开始，预计影响百分之十二的用户。")
    spaces.remember("团队周五不发布新版本。")
    result = spaces.search("数据库迁移什么时候开始")
    assert result.results[0].content.startswith("数据库迁移计划")
    anchored = spaces.search("2024-06-01 的迁移会影响百分之12的用户吗")
    assert anchored.results[0].content.startswith("数据库迁移计划")
    assert anchored.recovery is not None
    assert anchored.recovery.kind == "exact"


# ------------------------------------------------------------------ receipts


@pytest.mark.parametrize(
    ("receipt", "committed"),
    [
        ({"status": "stored", "id": "1"}, True),
        ({"committed": True}, True),
        ({"durable": True}, True),
        ({"state": "SUCCEEDED"}, True),
        ({"edges_inserted": 2}, True),
        ({"created": 0}, False),
        ({"status": "queued"}, False),
        ({"status": "stored", "ok": False}, False),
        ({"status": "stored", "errors": ["boom"]}, False),
        ({"action": "skipped"}, False),
        ({"committed": True, "status": "pending"}, False),
        ({"memoryReceipt": {"status": "succeeded", "completion": "committed",
                            "committedAt": "2026-01-01T00:00:00Z"}}, True),
        ({"memory_receipt": {"status": "succeeded", "completion": "pending"}}, False),
        ({}, False),
        ("stored", False),
    ],
)  # fmt: skip
def test_receipt_classification(receipt: object, committed: bool) -> None:
    assert is_committed(receipt) is committed


def test_async_search_runs_inside_a_running_loop(
    tmp_path: Path, closing: list[MemorySpaces]
) -> None:
    spaces = make_spaces(tmp_path)
    closing.append(spaces)

    async def inside() -> tuple[str, str]:
        await spaces.aremember("The on-call rota lives in the ops wiki.")
        sync_result = spaces.search("on-call rota")  # a sync call from a running loop
        async_result = await spaces.asearch("on-call rota")
        return sync_result.results[0].content, async_result.results[0].content

    assert asyncio.run(inside()) == ("The on-call rota lives in the ops wiki.",) * 2
