"""Pure recall machinery for federated Memory Space search: quality policies, fusion, anchors.

* :func:`candidate_limit` — rows asked of each provider: ``min(50, max(limit, ⌈limit×m⌉))``.
* :func:`fuse` — reciprocal-rank fusion ``1/(60+rank)`` when more than one provider *kind* was
  queried; otherwise rows are ordered by their raw score. Raw scores are never rewritten.
* Quality policies (:func:`apply_quality`): ``strict-v1`` (the model's envelope by default),
  ``balanced-v1`` and ``exhaustive-v1`` (what a search without a policy runs: every ranked
  row, each classified, nothing cut), registered by id; a policy that raises or returns
  something invalid falls back to ``strict-v1`` and the fallback is recorded.
* Anchors and coverage plans (:func:`extract_anchors`, :func:`coverage_plan`): dates, letter-led
  identifiers, percentages (``12%``, ``12 percent``, ``百分之12``, ``百分之十二``), clock times,
  versions and integers; a lexical plan uses the Documents tokenizer (§4.4).

No I/O here: everything is a function of its arguments.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from langgraph_mnemon.contracts import FrozenModel
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.text import required_coverage, tokenize

__all__ = [
    "CANDIDATE_CAP",
    "DEPTH_POLICY",
    "MAX_ANCHORS",
    "RECOVERY_TOKEN_CAP",
    "RRF_K",
    "Candidate",
    "CoveragePlan",
    "QualityOutcome",
    "QualityPolicy",
    "QualitySettings",
    "QualityStats",
    "Tier",
    "apply_quality",
    "candidate_limit",
    "classify_score",
    "coverage_count",
    "coverage_plan",
    "extract_anchors",
    "fuse",
    "normalize_anchor_text",
    "quality_policies",
    "register_quality_policy",
    "strict_selection",
]

CANDIDATE_CAP = 50
RRF_K = 60
MAX_ANCHORS = 8
RECOVERY_TOKEN_CAP = 32
DEFAULT_POLICY = "strict-v1"
DEPTH_POLICY = "exhaustive-v1"  # a search no caller asked to cut: depth, tiers on every row
_POLICY_ID = re.compile(r"^[a-z][a-z0-9-]{0,63}$")

Tier = Literal["high", "medium", "low", "unknown"]
Reason = Literal[
    "scored", "unscored", "invalid-score", "unscaled-score", "non-positive-score", "low-score"
]


def candidate_limit(limit: int, multiplier: float) -> int:
    """Rows to ask of each provider: ``min(50, max(limit, ceil(limit × multiplier)))``."""
    return min(CANDIDATE_CAP, max(limit, math.ceil(limit * multiplier)))


# --------------------------------------------------------------------------------------------
# Candidates and fusion


@dataclass
class Candidate:
    """One provider row on its way through fusion and quality.

    ``rank`` is the 1-based position in its provider's answer, ``order`` the position of its
    space among the queried spaces, ``normalized`` whether the provider declared normalised
    relevance scores.
    """

    row: Any
    space_id: str
    provider_id: str
    rank: int
    order: int
    normalized: bool
    score: float | None
    federated_score: float | None = None
    tier: Tier | None = None
    normalized_score: float | None = None
    reason: str | None = None
    recovered: bool = False
    coverage: int = 0

    @property
    def key(self) -> tuple[str, str]:
        """Identity of the row across providers: ``(space id, row id)``."""
        return (self.space_id, str(getattr(self.row, "id", id(self.row))))


def fuse(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Order candidates from all spaces into one list.

    More than one distinct provider id → ``federated_score = 1/(60 + rank)``, sorted by it
    (ties: space order, then rank). One provider → sorted by raw score, best first (rows
    without a finite score keep their provider order after scored ones).
    """
    providers = {c.provider_id for c in candidates}
    if len(providers) > 1:
        for c in candidates:
            c.federated_score = 1.0 / (RRF_K + c.rank)
        return sorted(candidates, key=lambda c: (-(c.federated_score or 0.0), c.order, c.rank))

    def by_score(c: Candidate) -> tuple[int, float, int, int]:
        s = c.score
        if s is None or not math.isfinite(s):
            return (1, 0.0, c.order, c.rank)
        return (0, -s, c.order, c.rank)

    return sorted(candidates, key=by_score)


# --------------------------------------------------------------------------------------------
# Quality


class QualitySettings(FrozenModel):
    """Thresholds and caps of the quality policies (``recall_quality.*`` in the config)."""

    low_score_threshold: float = 0.25
    high_score_threshold: float = 0.6
    max_medium_results: int = 4
    max_unknown_results: int = 2


def classify_score(
    score: float | None, normalized: bool, settings: QualitySettings
) -> tuple[Tier | None, float | None, Reason]:
    """The strict-v1 tier of one score: ``(tier or None when dropped, normalised, reason)``.

    No score → unknown; non-finite → dropped; provider without normalised scores → unknown;
    ``≤ 0`` → dropped as low (normalised 0); ``> 1`` → unknown; below the low threshold →
    dropped as low; below the high threshold → medium; else high.
    """
    if score is None:
        return ("unknown", None, "unscored")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        return (None, None, "invalid-score")
    if not normalized:
        return ("unknown", None, "unscaled-score")
    if score <= 0:
        return (None, 0.0, "non-positive-score")
    if score > 1:
        return ("unknown", None, "unscaled-score")
    if score < settings.low_score_threshold:
        return (None, float(score), "low-score")
    if score < settings.high_score_threshold:
        return ("medium", float(score), "scored")
    return ("high", float(score), "scored")


class QualityStats(FrozenModel):
    """How one source's rows fared under the quality policy (never shown to the model)."""

    policy_id: str
    fallback_from: str | None = None
    fetched: int = 0
    retained: int = 0
    selected: int = 0
    dropped_low_score: int = 0
    dropped_non_positive_score: int = 0
    dropped_invalid_score: int = 0
    unscored: int = 0
    unscaled: int = 0


class QualityPolicy(Protocol):
    """A pure quality policy: classify and select ranked candidates, at most ``limit``."""

    id: str

    def select(
        self, ranked: Sequence[Candidate], limit: int, settings: QualitySettings
    ) -> list[Candidate]:
        """Return the selected candidates (a subset of ``ranked``), best first."""
        ...


def _classify_all(ranked: Sequence[Candidate], settings: QualitySettings) -> None:
    for c in ranked:
        tier, norm, reason = classify_score(c.score, c.normalized, settings)
        c.normalized_score = norm
        c.reason = reason
        if tier is None:
            c.tier = "low" if reason in ("low-score", "non-positive-score") else None
        else:
            c.tier = tier


class StrictV1:
    """All high rows, then the first ``max_medium`` medium, then the first ``max_unknown``
    unknown, capped at ``limit`` and kept in ranked order; low rows never pad the list."""

    id = "strict-v1"

    def select(
        self, ranked: Sequence[Candidate], limit: int, settings: QualitySettings
    ) -> list[Candidate]:
        """Select from ``ranked`` (see the class docstring)."""
        _classify_all(ranked, settings)
        highs = [c for c in ranked if c.tier == "high" and c.reason == "scored"]
        mediums = [c for c in ranked if c.tier == "medium"][: settings.max_medium_results]
        unknowns = [c for c in ranked if c.tier == "unknown"][: settings.max_unknown_results]
        chosen = {id(c) for c in (highs + mediums + unknowns)[:limit]}
        return [c for c in ranked if id(c) in chosen]


def strict_selection(ranked: Sequence[Candidate], settings: QualitySettings) -> list[Candidate]:
    """The rows of ``ranked`` strict-v1 keeps, with no row limit: the head a deeper selection
    must leave in its place (coverage ordering never lifts a deeper row above it)."""
    return StrictV1().select(ranked, len(ranked), settings)


class BalancedV1:
    """Like strict-v1 for the non-low rows, then low-score rows after all of them."""

    id = "balanced-v1"

    def select(
        self, ranked: Sequence[Candidate], limit: int, settings: QualitySettings
    ) -> list[Candidate]:
        """Select from ``ranked`` (see the class docstring)."""
        strict = StrictV1().select(ranked, limit, settings)
        lows = [c for c in ranked if c.reason == "low-score"]
        return (strict + lows)[:limit]


class ExhaustiveV1:
    """Every finite row in ranked order, including low and non-positive scores."""

    id = "exhaustive-v1"

    def select(
        self, ranked: Sequence[Candidate], limit: int, settings: QualitySettings
    ) -> list[Candidate]:
        """Select from ``ranked`` (see the class docstring)."""
        _classify_all(ranked, settings)
        return [c for c in ranked if c.reason != "invalid-score"][:limit]


_POLICIES: dict[str, QualityPolicy] = {}


def register_quality_policy(policy: QualityPolicy) -> None:
    """Register a pure quality policy under its ``id`` (``[a-z][a-z0-9-]{0,63}``)."""
    pid = getattr(policy, "id", None)
    if not isinstance(pid, str) or not _POLICY_ID.match(pid):
        raise InvalidInputError(
            f"quality policy id must match [a-z][a-z0-9-]{{0,63}} (got {pid!r})"
        )
    if not callable(getattr(policy, "select", None)):
        raise InvalidInputError(f"quality policy {pid!r} needs a select(ranked, limit, settings)")
    _POLICIES[pid] = policy


def quality_policies() -> list[str]:
    """Ids of the registered quality policies."""
    return sorted(_POLICIES)


for _builtin in (StrictV1(), BalancedV1(), ExhaustiveV1()):
    register_quality_policy(_builtin)


@dataclass
class QualityOutcome:
    """The selected candidates plus the policy that produced them."""

    selected: list[Candidate]
    policy_id: str
    fallback_from: str | None = None


def apply_quality(
    policy_id: str, ranked: Sequence[Candidate], limit: int, settings: QualitySettings
) -> QualityOutcome:
    """Run the policy ``policy_id``; fall back to strict-v1 when it fails or misbehaves.

    An unknown id raises :class:`InvalidInputError`. Misbehaving means raising, returning
    something that is not a list of the given candidates, duplicates or more than ``limit``.
    """
    policy = _POLICIES.get(policy_id)
    if policy is None:
        raise InvalidInputError(
            f"unknown recall quality policy {policy_id!r}; use one of "
            f"{', '.join(quality_policies())}"
        )
    try:
        selected = policy.select(ranked, limit, settings)
        _check_selection(selected, ranked, limit)
        _classify_all(selected, settings)
        return QualityOutcome(list(selected), policy.id)
    except Exception:
        if policy_id == DEFAULT_POLICY:
            raise
        strict = _POLICIES[DEFAULT_POLICY].select(ranked, limit, settings)
        return QualityOutcome(strict, DEFAULT_POLICY, fallback_from=policy_id)


def _check_selection(selected: Any, ranked: Sequence[Candidate], limit: int) -> None:
    if not isinstance(selected, list) or len(selected) > limit:
        raise ValueError("policy returned more rows than the limit or not a list")
    allowed = {id(c) for c in ranked}
    seen: set[int] = set()
    for c in selected:
        if id(c) not in allowed or id(c) in seen:
            raise ValueError("policy returned a row it was not given, or a duplicate")
        seen.add(id(c))


def quality_stats(
    fetched: Sequence[Candidate],
    selected: Sequence[Candidate],
    policy_id: str,
    fallback_from: str | None,
) -> QualityStats:
    """Per-source counts for the candidates of one source."""
    chosen = {id(c) for c in selected}
    counts = {
        "low-score": 0,
        "non-positive-score": 0,
        "invalid-score": 0,
        "unscored": 0,
        "unscaled-score": 0,
    }
    retained = 0
    for c in fetched:
        if c.reason in counts:
            counts[c.reason] += 1
        if c.reason in ("scored", "unscored", "unscaled-score"):
            retained += 1
    return QualityStats(
        policy_id=policy_id,
        fallback_from=fallback_from,
        fetched=len(fetched),
        retained=retained,
        selected=sum(1 for c in fetched if id(c) in chosen),
        dropped_low_score=counts["low-score"],
        dropped_non_positive_score=counts["non-positive-score"],
        dropped_invalid_score=counts["invalid-score"],
        unscored=counts["unscored"],
        unscaled=counts["unscaled-score"],
    )


# --------------------------------------------------------------------------------------------
# Anchors and coverage plans

_CN_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_CN_UNITS = {"十": 10, "百": 100}
_CN_NUMBER = "[零〇一二两三四五六七八九十百]+"
_NUM = r"\d+(?:\.\d+)?"
_PCT_CN_DIGITS = re.compile(rf"百分之\s*({_NUM})")
_PCT_CN_WORDS = re.compile(rf"百分之({_CN_NUMBER}(?:点[零〇一二三四五六七八九]+)?)")
_A = "0-9a-z_"  # ASCII word characters: Han text around a number is not part of it
_PCT_EN = re.compile(
    rf"(?<![{_A}.])({_NUM})\s*(?:%|percent(?:age)?(?![{_A}])|per\s+cent(?![{_A}]))"
)
_DATE = re.compile(rf"(?<![{_A}.])(\d{{4}})[-/.](\d{{1,2}})[-/.](\d{{1,2}})(?![{_A}])")
_TIME = re.compile(rf"(?<![{_A}:])(\d{{1,2}}):(\d{{2}})(?![{_A}:])")
_VERSION = re.compile(rf"(?<![{_A}.])(v\d+(?:\.\d+)*|\d+\.\d+\.\d+(?:\.\d+)*)(?![{_A}])")
_IDENT = re.compile(r"(?<![\w-])([^\W\d_][\w]*(?:[-_][\w]+)+)(?![\w-])")
_PCT_ANCHOR = re.compile(rf"(?<![{_A}.])({_NUM})%")
_INTEGER = re.compile(rf"(?<![{_A}.:/%-])(\d+)(?![{_A}.:%/-])")


def _cn_to_number(text: str) -> str | None:
    whole, _, frac = text.partition("点")
    total, current = 0, 0
    for ch in whole:
        if ch in _CN_DIGITS:
            current = _CN_DIGITS[ch]
        elif ch in _CN_UNITS:
            total += (current or 1) * _CN_UNITS[ch]
            current = 0
        else:
            return None
    total += current
    if frac:
        digits = "".join(str(_CN_DIGITS.get(ch, "")) for ch in frac)
        return f"{total}.{digits}" if digits else str(total)
    return str(total)


def normalize_anchor_text(text: str) -> str:
    """NFKC + lowercase, with every percentage form rewritten as ``N%``.

    >>> normalize_anchor_text("Growth was 12 percent, 百分之十五 and 7 ％")
    'growth was 12%, 15% and 7%'
    """
    norm = unicodedata.normalize("NFKC", text).lower()
    norm = _PCT_CN_DIGITS.sub(lambda m: f"{m.group(1)}%", norm)

    def _cn(m: re.Match[str]) -> str:
        value = _cn_to_number(m.group(1))
        return f"{value}%" if value is not None else m.group(0)

    norm = _PCT_CN_WORDS.sub(_cn, norm)
    return _PCT_EN.sub(lambda m: f"{m.group(1)}%", norm)


def extract_anchors(query: str) -> list[str]:
    """High-information exact anchors of a query, in order of appearance, ≤ 8, deduplicated.

    Dates (``YYYY-M-D``), letter-led identifiers with ``-``/``_`` (``feature-x_1``),
    percentages (``12%``, ``12 ％``, ``12 percent``, ``百分之12``, ``百分之十二`` → ``12%``),
    clock times (``9:30``), versions (``v1.2``, ``1.2.3``) and bare integers.

    >>> extract_anchors("Did release v2.1 ship on 2024-05-03 with 百分之12 coverage?")
    ['v2.1', '2024-05-03', '12%']
    """
    norm = normalize_anchor_text(query)
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []

    def claim(start: int, end: int, value: str) -> None:
        if any(start < e and s < end for s, e in taken):
            return
        taken.append((start, end))
        found.append((start, re.sub(r"\s+", "", value)))

    for m in _DATE.finditer(norm):
        claim(m.start(), m.end(), m.group(0).replace("/", "-").replace(".", "-"))
    for m in _PCT_ANCHOR.finditer(norm):
        claim(m.start(), m.end(), m.group(0))
    for m in _TIME.finditer(norm):
        claim(m.start(), m.end(), m.group(0))
    for m in _VERSION.finditer(norm):
        claim(m.start(), m.end(), m.group(0))
    for m in _IDENT.finditer(norm):
        claim(m.start(), m.end(), m.group(0))
    for m in _INTEGER.finditer(norm):
        claim(m.start(), m.end(), m.group(0))
    anchors: list[str] = []
    for _, value in sorted(found):
        if value not in anchors:
            anchors.append(value)
        if len(anchors) >= MAX_ANCHORS:
            break
    return anchors


@dataclass
class CoveragePlan:
    """What a row must contain to count as covering the query.

    ``kind`` is ``exact`` (anchors), ``lexical`` (tokens) or ``none``; ``recovery_query`` is
    what the one native keyword recovery pass searches for.
    """

    kind: Literal["exact", "lexical", "none"]
    terms: list[str] = field(default_factory=list)
    required: int = 0
    recovery_query: str = ""
    _patterns: list[re.Pattern[str]] = field(default_factory=list, repr=False)


def coverage_plan(query: str) -> CoveragePlan:
    """The coverage plan of a query: ≥ 2 anchors → exact plan requiring ``min(4, anchors)``;
    else ≥ 4 tokens → lexical plan with the Documents coverage rule; else none."""
    anchors = extract_anchors(query)
    if len(anchors) >= 2:
        patterns = [
            re.compile(rf"(?<![0-9a-z.]){re.escape(a)}(?![0-9a-z])")
            if a[:1].isalnum() and a[-1:].isalnum()
            else re.compile(re.escape(a))
            for a in anchors
        ]
        return CoveragePlan(
            "exact",
            anchors,
            min(4, len(anchors)),
            " ".join(anchors),
            patterns,
        )
    tokens = tokenize(query, RECOVERY_TOKEN_CAP)
    if len(tokens) >= 4:
        return CoveragePlan("lexical", tokens, required_coverage(len(tokens)), query)
    return CoveragePlan("none")


def coverage_count(plan: CoveragePlan, content: str) -> int:
    """How many of the plan's terms ``content`` contains."""
    short = len(content) <= _CACHED_CHARS  # the caches hold short rows only: bounded memory
    if plan.kind == "exact":
        norm = _anchor_text(content) if short else normalize_anchor_text(content)
        return sum(1 for p in plan._patterns if p.search(norm))
    if plan.kind == "lexical":
        present = _token_set(content) if short else frozenset(tokenize(content, 512))
        return sum(1 for t in plan.terms if t in present)
    return 0


_CACHED_CHARS = 2000


# A row's analysis depends on its text alone, and the same rows come back search after search
# (tokenising them was most of the layer's own time once searches returned their depth).
@functools.lru_cache(maxsize=4096)
def _token_set(content: str) -> frozenset[str]:
    return frozenset(tokenize(content, 512))


@functools.lru_cache(maxsize=4096)
def _anchor_text(content: str) -> str:
    return normalize_anchor_text(content)


def covering(
    plan: CoveragePlan, candidates: Sequence[Candidate], content: Callable[[Any], str]
) -> bool:
    """Annotate each candidate's ``coverage``; return whether any meets the plan."""
    met = False
    for c in candidates:
        c.coverage = coverage_count(plan, content(c.row))
        if plan.required and c.coverage >= plan.required:
            met = True
    return met
