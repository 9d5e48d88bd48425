"""Federated search over Memory Spaces (§5.1 of the reference).

Each readable space is asked for ``min(50, max(limit, ⌈limit × candidate_multiplier⌉))`` rows
(``limit`` when one space is searched with no quality cut: its ranking is the answer)
(one space in the caller's thread, several concurrently on the service's pool,
:mod:`._fanout`); a provider that raises or times out becomes a per-space hint with status
``unavailable`` (the search itself never fails for it); rows are fused with reciprocal-rank
fusion when more than one provider kind answered (raw scores kept); the quality policy selects.
Under a cut (the model's envelope, or any policy a caller names) or over rows another provider
than the native one ranked, when no selected row covers the query's exact anchors or enough of
its tokens, the native spaces are searched once more in keyword mode and covering rows are
merged ahead, and covering rows are finally ordered first. A search with no cut over native
rows alone keeps the native ranking, which already weighs the query's words, and runs no second
pass (both are the seeds' envelope rules; the depth already holds the keyword pool). The pure
pieces (fusion, quality, anchors) are in :mod:`._fusion`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from langgraph_mnemon.memory_layers.spaces._fanout import ProviderCalls
from langgraph_mnemon.memory_layers.spaces._fusion import (
    DEPTH_POLICY,
    RRF_K,
    Candidate,
    CoveragePlan,
    QualityOutcome,
    QualitySettings,
    apply_quality,
    candidate_limit,
    classify_score,
    coverage_plan,
    covering,
    fuse,
    quality_stats,
    strict_selection,
)
from langgraph_mnemon.memory_layers.spaces._models import (
    MemoryProvider,
    MemoryRecord,
    ProviderSearchRequest,
    ProviderSearchResult,
    SpaceBinding,
)
from langgraph_mnemon.memory_layers.spaces._records import (
    RecallResult,
    RecoveryReport,
    SourceReport,
    SourceStatus,
    SpaceRecord,
)
from langgraph_mnemon.memory_layers.spaces._registry import ProviderRegistry
from langgraph_mnemon.memory_layers.spaces._validation import NATIVE_PROVIDER_ID, SearchArgs

__all__ = ["Binder", "FederatedSearch", "SpaceAnswer", "decorate"]

Binder = Callable[[SpaceRecord], SpaceBinding]
"""Gives the binding a provider call gets for a space (its secrets included)."""


class SpaceAnswer(NamedTuple):
    """How one space answered: its status, the provider's hint and its candidate rows."""

    record: SpaceRecord
    status: SourceStatus
    hint: str | None
    found: list[Candidate]


@dataclass
class _Recovery:
    """The ranking and selection after the coverage step, and its report."""

    ranked: list[Candidate]
    outcome: QualityOutcome
    recovered: list[Candidate]
    report: RecoveryReport


def _labels(record: SpaceRecord, registry: ProviderRegistry) -> dict[str, Any]:
    return {
        "space_id": record.id,
        "space_name": record.name,
        "provider_id": record.provider_id,
        "capabilities": registry.capabilities(record.provider_id),
    }


def decorate(record: SpaceRecord, row: MemoryRecord, registry: ProviderRegistry) -> MemoryRecord:
    """``row`` labelled with the space and provider it came from."""
    return row.model_copy(update=_labels(record, registry))


def _content(row: Any) -> str:
    return unicodedata.normalize("NFKC", getattr(row, "content", "") or "")


@dataclass(frozen=True)
class FederatedSearch:
    """One federated search over the given spaces (see the module docstring).

    Args:
        registry: The registered providers.
        bind: Gives each provider call its space binding.
        calls: The service's pool for asking several spaces at once.
        quality: Thresholds of the quality policies.
        candidate_multiplier: How many more rows than ``limit`` each space is asked for.
        timeout: Seconds a provider may take before it counts as unavailable.
    """

    registry: ProviderRegistry
    bind: Binder
    calls: ProviderCalls
    quality: QualitySettings
    candidate_multiplier: float
    timeout: float

    def run(self, args: SearchArgs, records: Sequence[SpaceRecord]) -> RecallResult:
        """Ask every space, fuse, select, recover coverage and report per space."""
        fetch = candidate_limit(args.limit, self.candidate_multiplier)
        if len(records) == 1 and args.policy_id == DEPTH_POLICY:
            fetch = args.limit  # one ranking, nothing cut: the first `limit` rows are the answer
        request = ProviderSearchRequest(
            query=args.query,
            mode=args.mode,
            limit=fetch,
            category=args.category,
            source=args.source,
            intent=args.intent,
        )
        answers = self._ask_all(list(enumerate(records)), request)
        ranked = fuse([c for answer in answers for c in answer.found])
        outcome = apply_quality(args.policy_id, ranked, args.limit, self.quality)
        filtered = bool(args.category or args.source or args.intent)
        smart = args.mode == "smart" and not filtered
        plan = coverage_plan(args.query) if smart else CoveragePlan("none")
        if plan.kind == "none":
            report = RecoveryReport(kind=plan.kind, terms=plan.terms, required=plan.required)
            recovery = _Recovery(ranked, outcome, [], report)
        else:
            recovery = self._cover(plan, answers, ranked, outcome, args, fetch)
        return self._result(args, answers, recovery)

    # ------------------------------------------------------------------ the spaces

    def _ask_all(
        self, spaces: Sequence[tuple[int, SpaceRecord]], request: ProviderSearchRequest
    ) -> list[SpaceAnswer]:
        """Ask each ``(order, space)``: one space of a ``runs_inline`` provider in this
        thread, anything else on the pool, each within the timeout; a failure or timeout is an
        ``unavailable`` answer, never an error."""
        asked: list[tuple[int, SpaceRecord, MemoryProvider]] = []
        answers: dict[int, SpaceAnswer] = {}
        for order, record in spaces:
            provider = self.registry.get(record.provider_id)
            if provider is None:
                hint = "unavailable: provider is not registered"
                answers[order] = SpaceAnswer(record, "unavailable", hint, [])
            elif not provider.descriptor.capabilities.search:
                hint = "search is not supported by this provider"
                answers[order] = SpaceAnswer(record, "unsupported", hint, [])
            else:
                asked.append((order, record, provider))
        calls = [self._search_call(provider, record, request) for _, record, provider in asked]
        # One space runs in the caller's thread only when its provider bounds its own calls
        # (in-process SQL); any other provider's call is cut off at the timeout on the pool.
        inline = len(asked) == 1 and getattr(asked[0][2], "runs_inline", False) is True
        for (order, record, provider), got in zip(
            asked, self.calls.run(calls, self.timeout, inline=inline), strict=True
        ):
            answers[order] = self._answer(got, order, record, provider, request.limit)
        return [answers[order] for order, _ in spaces]

    def _search_call(
        self, provider: MemoryProvider, record: SpaceRecord, request: ProviderSearchRequest
    ) -> Callable[[], ProviderSearchResult]:
        return lambda: provider.search(self.bind(record), request)

    def _answer(
        self,
        got: ProviderSearchResult | BaseException,
        order: int,
        record: SpaceRecord,
        provider: MemoryProvider,
        limit: int,
    ) -> SpaceAnswer:
        if isinstance(got, TimeoutError):
            hint = f"unavailable: no answer within {int(self.timeout * 1000)} ms"
            return SpaceAnswer(record, "unavailable", hint, [])
        if isinstance(got, BaseException):
            message = " ".join(str(got).split())[:300] or type(got).__name__
            return SpaceAnswer(record, "unavailable", f"unavailable: {message}", [])
        found = self._candidates(got, record, provider, order, limit)
        return SpaceAnswer(record, "ready" if found else "empty", got.hint, found)

    @staticmethod
    def _candidates(
        answer: ProviderSearchResult,
        record: SpaceRecord,
        provider: MemoryProvider,
        order: int,
        limit: int,
    ) -> list[Candidate]:
        descriptor = provider.descriptor
        normalized = descriptor.score_semantics == "normalized"
        return [
            Candidate(
                row=row,
                space_id=record.id,
                provider_id=descriptor.id,
                rank=rank,
                order=order,
                normalized=normalized,
                score=row.score,
            )
            for rank, row in enumerate(answer.results[:limit], start=1)
            if isinstance(row, MemoryRecord)
        ]

    # ------------------------------------------------------------------ coverage recovery

    def _cover(
        self,
        plan: CoveragePlan,
        answers: Sequence[SpaceAnswer],
        ranked: list[Candidate],
        outcome: QualityOutcome,
        args: SearchArgs,
        fetch: int,
    ) -> _Recovery:
        """Under a cut, or over rows another provider ranked (often by the dense score alone):
        the native keyword pass when no selected row covers the plan, then the covering rows
        first (each group in the fused order). With no cut over native rows alone, only the
        coverage it reports is counted: the native ranking already weighs the query's words
        (re-sorting it put a question that repeats them above its answer)."""
        recovered: list[Candidate] = []
        ran = False
        counted = {id(c) for c in outcome.selected}
        native_only = all(c.provider_id == NATIVE_PROVIDER_ID for c in ranked)
        cut = args.policy_id != DEPTH_POLICY or not native_only
        if not covering(plan, outcome.selected, _content) and cut:
            natives = [
                (order, answer.record)
                for order, answer in enumerate(answers)
                if answer.record.provider_id == NATIVE_PROVIDER_ID
                and answer.status in ("ready", "empty")
            ]
            if natives:
                ran = True
                recovered = self._recover(plan, natives, fetch)
            if recovered:
                counted.update(id(c) for c in recovered)  # _recover counted them
                ranked = _merged_ahead(recovered, ranked, fetch)
                outcome = apply_quality(args.policy_id, ranked, args.limit, self.quality)
        # Only rows the new selection brought in still need their coverage counted (tokenising
        # every selected row twice was a good part of the layer's own time).
        covering(plan, [c for c in outcome.selected if id(c) not in counted], _content)
        need = plan.required
        if cut:
            # Plan-covering rows first, each group in the fused order (sorting the covering
            # rows by raw match count measured worse on LoCoMo-R: common words inflate
            # counts). The rows strict-v1 would keep stay ahead of a looser policy's deeper
            # rows.
            head = {id(c) for c in strict_selection(outcome.selected, self.quality)}
            outcome.selected = sorted(
                outcome.selected,
                key=lambda c: (id(c) not in head, 0 if need and c.coverage >= need else 1),
            )
        report = RecoveryReport(
            kind=plan.kind,
            terms=plan.terms,
            required=plan.required,
            covered=any(c.coverage >= need for c in outcome.selected) if need else False,
            ran=ran,
            recovered=sum(1 for c in outcome.selected if c.recovered),
        )
        return _Recovery(ranked, outcome, recovered, report)

    def _recover(
        self, plan: CoveragePlan, natives: list[tuple[int, SpaceRecord]], fetch: int
    ) -> list[Candidate]:
        request = ProviderSearchRequest(query=plan.recovery_query, mode="keyword", limit=fetch)
        found: list[Candidate] = []
        for answer in self._ask_all(natives, request):
            found.extend(answer.found)
        covering(plan, found, _content)
        keep = [c for c in found if c.coverage >= plan.required]
        keep.sort(key=lambda c: (-c.coverage, -(c.score if c.score is not None else 0.0)))
        for c in keep:
            c.recovered = True
        return keep[:fetch]

    # ------------------------------------------------------------------ the result

    def _result(
        self, args: SearchArgs, answers: Sequence[SpaceAnswer], recovery: _Recovery
    ) -> RecallResult:
        by_space = _by_space(answers, recovery.recovered)
        for group in by_space.values():
            for c in group:
                if c.reason is None:  # a row no policy classified (not selected, or recovered)
                    tier, norm, reason = classify_score(c.score, c.normalized, self.quality)
                    c.tier = tier or ("low" if reason != "invalid-score" else None)
                    c.normalized_score, c.reason = norm, reason
        outcome = recovery.outcome
        rows = self._rows(outcome, answers, recovery.ranked)
        hint = None
        if not answers:
            hint = "no active Memory Space to search; remember something or activate a space"
        elif not rows:
            hint = "no memory passed the quality policy for this query"
        return RecallResult(
            query=args.query,
            mode=args.mode,
            limit=args.limit,
            policy_id=outcome.policy_id,
            fallback_from=outcome.fallback_from,
            results=rows,
            sources=[
                self._source(answer, by_space.get(answer.record.id, []), outcome, args)
                for answer in answers
            ],
            recovery=recovery.report,
            hint=hint,
        )

    def _source(
        self,
        answer: SpaceAnswer,
        group: list[Candidate],
        outcome: QualityOutcome,
        args: SearchArgs,
    ) -> SourceReport:
        record = answer.record
        stats = None
        if answer.status in ("ready", "empty"):
            stats = quality_stats(group, outcome.selected, outcome.policy_id, outcome.fallback_from)
        return SourceReport(
            space_id=record.id,
            name=record.name,
            provider_id=record.provider_id,
            provider_label=self.registry.label(record.provider_id),
            mode=args.mode,
            status=answer.status,
            item_count=len(answer.found),
            hint=answer.hint,
            quality=stats,
        )

    def _rows(
        self, outcome: QualityOutcome, answers: Sequence[SpaceAnswer], ranked: list[Candidate]
    ) -> list[MemoryRecord]:
        multi = len({c.provider_id for c in ranked}) > 1
        records = {}
        for answer in answers:
            records.setdefault(answer.record.id, answer.record)
        rows: list[MemoryRecord] = []
        labels: dict[str, dict[str, Any]] = {}  # per space: the registry is asked once
        for c in outcome.selected:
            label = labels.get(c.space_id)
            if label is None:
                label = labels[c.space_id] = _labels(records[c.space_id], self.registry)
            update = {
                "normalized_score": c.normalized_score,
                "relevance_tier": c.tier,
                "federated_score": c.federated_score if multi else None,
                **label,
                "capabilities": list(label["capabilities"]),  # each row its own list
                "matched_via": c.row.matched_via or ("keyword-recovery" if c.recovered else None),
            }
            rows.append(c.row.model_copy(update=update))
        return rows


def _merged_ahead(
    recovered: list[Candidate], ranked: list[Candidate], fetch: int
) -> list[Candidate]:
    """Recovered rows ahead of the fused ones (no duplicates, at most ``fetch``); with several
    provider kinds a recovered row gets the fusion score of its new position."""
    keys = {c.key for c in recovered}
    merged = (recovered + [c for c in ranked if c.key not in keys])[:fetch]
    if len({c.provider_id for c in merged}) > 1:
        for position, c in enumerate(merged, start=1):
            if c.recovered:
                c.federated_score = 1.0 / (RRF_K + position)
    return merged


def _by_space(
    answers: Sequence[SpaceAnswer], recovered: list[Candidate]
) -> dict[str, list[Candidate]]:
    """Every candidate a space gave (recovered ones included once), by space id."""
    by_space: dict[str, list[Candidate]] = {}
    seen: set[tuple[str, str]] = set()
    for answer in answers:
        for c in answer.found:
            by_space.setdefault(c.space_id, []).append(c)
            seen.add(c.key)
    for c in recovered:
        if c.key not in seen:
            by_space.setdefault(c.space_id, []).append(c)
    return by_space
