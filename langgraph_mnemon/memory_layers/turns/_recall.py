"""The recall envelope of one turn: two attempts within one evidence budget.

* Request shaping: model-chosen ``category`` / ``source`` / ``intent`` filters are dropped;
  ``limit = min(limit or 6, 6)``; requested space ids are trimmed and deduplicated and must be a
  subset of the turn's grant (otherwise :class:`~langgraph_mnemon.errors.InvalidInputError`
  before any provider call); none requested → every granted space.
* Query digest: SHA-256 of ``{source key, lowercased letter/digit runs joined by one space,
  sorted space ids}`` — queries that differ only in case or punctuation are the same query.
* Same digest → the stored evidence is replayed without a provider call; a concurrent identical
  call joins the pending one; distinct concurrent calls run one after the other; after two
  attempts every new query replays the latest evidence with an "exhausted" hint.
* Attempt 1 admits ≤ ``min(limit, 4)`` rows and ≤ 3,600 content characters; both attempts
  together ≤ 6 rows and ≤ 4,800 characters; ≤ 1,200 characters per row (clipped with ``…``
  inside the limit); ≤ 1 medium and ≤ 1 unknown row per attempt; ``low`` rows are skipped and a
  missing tier counts as ``unknown``; rows whose content digest (trimmed, whitespace-collapsed)
  or ``(space id, id)`` was already admitted are skipped.
* A failed attempt (the search raised, or every queried space was unavailable) is not recorded:
  it consumes no budget and the same query may be retried.

Example:
    >>> envelope = RecallEnvelope(TurnLedger(view_id="v1", source_key="memory-spaces"), ["ops"])
    >>> envelope.recall(mem.spaces, "How do we deploy?").status
    'searched'
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.spaces import SEARCH_MODES, MemoryRecord
from langgraph_mnemon.memory_layers.turns._budget import (
    ATTEMPTS,
    FIRST_ATTEMPT_CHARS,
    FIRST_ATTEMPT_RESULTS,
    MAX_MEDIUM_PER_ATTEMPT,
    MAX_QUERY_CHARS,
    MAX_UNKNOWN_PER_ATTEMPT,
    RESULT_LIMIT,
    TOTAL_CHARS,
)
from langgraph_mnemon.memory_layers.turns._evidence import (
    REFUSED,
    RecallEvidence,
    RecallRequest,
    SpaceSearcher,
    Step,
    TurnLedger,
    short,
)
from langgraph_mnemon.memory_layers.turns._text import query_digest

__all__ = [
    "HINT_EXHAUSTED",
    "HINT_FAILED",
    "HINT_FIRST",
    "HINT_FIRST_EMPTY",
    "HINT_REPLAY",
    "HINT_SECOND",
    "HINT_SECOND_EMPTY",
    "RECALL_ROUTE",
    "RecallEnvelope",
]

RECALL_ROUTE = "memory-spaces/recall"

HINT_FIRST = (
    "Answer from this evidence. Only if it is insufficient, make one materially different, "
    "focused mnemon_recall query; call mnemon_related only when graph context is required."
)
HINT_FIRST_EMPTY = (
    "No memory was admitted for this query. You may make one materially different query; "
    "otherwise answer and say what is uncertain."
)
HINT_SECOND = (
    "Refinement complete: this turn's Recall budget is now closed. Answer from the evidence "
    "of both queries."
)
HINT_SECOND_EMPTY = (
    "The refinement admitted no new memory and this turn's Recall budget is now closed. Answer "
    "from the evidence you have and say what is uncertain."
)
HINT_REPLAY = (
    "This query already ran in this turn; its evidence was replayed without a provider query."
)
HINT_EXHAUSTED = (
    "This turn's two-query Recall budget is exhausted; the latest evidence was replayed without "
    "a provider query. Answer now and say what is uncertain."
)
HINT_FAILED = (
    "Recall could not search the Memory Spaces; this attempt did not use the turn's budget. "
    "Retry once or answer and say what is uncertain."
)


def _query_text(query: Any) -> str:
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a string (got {type(query).__name__})")
    text = query.replace("\x00", "").strip()
    if not text:
        raise InvalidInputError("query must not be empty; say what to recall")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidInputError(
            f"query is too long ({len(text)} characters; max {MAX_QUERY_CHARS})"
        )
    return text


def _hint(attempt: int, admitted: bool) -> str:
    if attempt == 1:
        return HINT_FIRST if admitted else HINT_FIRST_EMPTY
    return HINT_SECOND if admitted else HINT_SECOND_EMPTY


class RecallEnvelope:
    """The recall attempts of one turn (see the module docstring for every rule).

    ``ledger`` is the turn's shared admitted state (Related reads and extends it); ``grant``
    the Memory Space ids the turn's view lets recall read. Thread- and task-safe.
    """

    def __init__(self, ledger: TurnLedger, grant: tuple[str, ...]) -> None:
        self.ledger = ledger
        self.grant = grant
        self._attempts: list[RecallEvidence] = []
        self._by_digest: dict[str, RecallEvidence] = {}
        self._pending: dict[str, Future[RecallEvidence]] = {}
        self._inflight: Future[RecallEvidence] | None = None
        self._results = 0
        self._chars = 0

    @property
    def attempts(self) -> list[RecallEvidence]:
        """Recorded (successful) recall attempts, in order."""
        with self.ledger.lock:
            return list(self._attempts)

    @property
    def usage(self) -> tuple[int, int]:
        """``(rows, characters)`` admitted by recall attempts so far (of 6 / 4,800)."""
        with self.ledger.lock:
            return (self._results, self._chars)

    @property
    def recorded(self) -> tuple[RecallEvidence, ...]:
        """The recorded attempts (read them under the ledger's lock)."""
        return tuple(self._attempts)

    def absorb(self, attempts: Sequence[RecallEvidence]) -> bool:
        """Add attempts recorded elsewhere (call under the ledger's lock); an attempt of a
        query digest already held here is kept as it is. Whether anything was added."""
        added = False
        for attempt in attempts:
            if attempt.digest in self._by_digest:
                continue
            self._attempts.append(attempt)
            self._by_digest[attempt.digest] = attempt
            self._results += len(attempt.results)
            self._chars += sum(len(r.content) for r in attempt.results)
            added = True
        return added

    # ---------------------------------------------------------------- shaping

    def shape(
        self,
        query: str,
        *,
        limit: int | None = None,
        space_ids: Sequence[str] | None = None,
        mode: str = "smart",
    ) -> RecallRequest:
        """Validate and shape a model's recall request; raises before any provider call."""
        text = _query_text(query)
        if mode not in SEARCH_MODES:
            raise InvalidInputError(f"mode must be one of {', '.join(SEARCH_MODES)}")
        if limit is None:
            limit = RESULT_LIMIT
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError("limit must be a positive integer (at most 6 are used)")
        wanted = self._requested(space_ids)
        return RecallRequest(
            query=text,
            mode=mode,
            limit=min(limit, RESULT_LIMIT),
            space_ids=wanted,
            digest=query_digest(self.ledger.source_key, text, wanted),
        )

    def _requested(self, space_ids: Sequence[str] | None) -> tuple[str, ...]:
        if not self.grant:
            raise InvalidInputError(
                f"this turn's view {self.ledger.view_id or '(unpinned)'} grants no Memory "
                "Space; activate or create a space before recalling"
            )
        if space_ids is None:
            return self.grant
        if isinstance(space_ids, str) or not isinstance(space_ids, Sequence):
            raise InvalidInputError("memory_body_ids must be a list of Memory Space ids")
        wanted: list[str] = []
        for raw in space_ids:
            if not isinstance(raw, str):
                raise InvalidInputError("memory_body_ids must be strings")
            sid = raw.strip()
            if sid and sid not in wanted:
                wanted.append(sid)
        if not wanted:
            return self.grant
        outside = [s for s in wanted if s not in self.grant]
        if outside:
            raise InvalidInputError(
                f"Recall requested a Memory Space outside pinned Source {self.ledger.where}: "
                f"{', '.join(outside)}; use only {', '.join(self.grant)} (or omit "
                "memory_body_ids)",
                code="recall-rejected",
            )
        return tuple(wanted)

    # ---------------------------------------------------------------- the state machine

    def _exhausted(self, request: RecallRequest) -> Step:
        latest = self._attempts[-1]
        wanted = set(request.space_ids)
        update = {
            "results": tuple(r for r in latest.results if r.space_id in wanted),
            "status": "exhausted",
            "hint": HINT_EXHAUSTED,
            "provider_called": False,
        }
        return Step("exhausted", output=latest.model_copy(update=update))

    def _begin(self, request: RecallRequest) -> Step:
        with self.ledger.lock:
            stored = self._by_digest.get(request.digest)
            if stored is not None:
                update = {"status": "replayed", "hint": HINT_REPLAY, "provider_called": False}
                return Step("replay", output=stored.model_copy(update=update))
            pending = self._pending.get(request.digest)
            if pending is not None:
                return Step("join", future=pending)
            if self._inflight is not None:
                return Step("wait", future=self._inflight)
            if len(self._attempts) >= ATTEMPTS:
                return self._exhausted(request)
            future: Future[RecallEvidence] = Future()
            self._pending[request.digest] = future
            self._inflight = future
            return Step("run", future=future, attempt=len(self._attempts) + 1)

    def _failed(self, request: RecallRequest, reasons: Sequence[str]) -> RecallEvidence:
        return RecallEvidence(
            query=request.query,
            mode=request.mode,
            hint=HINT_FAILED,
            unavailable=tuple(short(r) for r in reasons) or ("search failed",),
            evidence=self.ledger.record(RECALL_ROUTE, False),
            status="failed",
            digest=request.digest,
            provider_called=True,
        )

    def _finish(
        self, step: Step, request: RecallRequest, found: Any, error: BaseException | None
    ) -> RecallEvidence:
        """Admit a finished search (or record a failure) and release the pending slot."""
        assert step.future is not None
        try:
            if error is not None:
                output = self._failed(request, [f"{type(error).__name__}: {error}"])
            else:
                output = self._admit_attempt(step.attempt, request, found)
        except Exception as exc:  # an unexpected result shape: fail without using budget
            output = self._failed(request, [f"{type(exc).__name__}: {exc}"])
        with self.ledger.lock:
            self._pending.pop(request.digest, None)
            if self._inflight is step.future:
                self._inflight = None
        step.future.set_result(output)
        return output

    def _limits(self, attempt: int, request: RecallRequest) -> tuple[int, int]:
        """``(rows, characters)`` attempt ``attempt`` may still admit (call under the lock)."""
        if attempt == 1:
            return min(request.limit, FIRST_ATTEMPT_RESULTS), FIRST_ATTEMPT_CHARS
        return min(request.limit, RESULT_LIMIT - self._results), TOTAL_CHARS - self._chars

    def _admit_attempt(self, attempt: int, request: RecallRequest, found: Any) -> RecallEvidence:
        sources = list(getattr(found, "sources", []) or [])
        unavailable = [
            f"{s.name} ({s.space_id}): {s.hint or 'unavailable'}"
            for s in sources
            if s.status == "unavailable"
        ]
        if sources and len(unavailable) == len(sources):
            return self._failed(request, unavailable)
        rows = [r for r in found.results if isinstance(r, MemoryRecord)]
        with self.ledger.lock:
            max_results, max_chars = self._limits(attempt, request)
            admission = self.ledger.admit(
                rows,
                max_results=max(0, max_results),
                max_chars=max(0, max_chars),
                max_medium=MAX_MEDIUM_PER_ATTEMPT,
                max_unknown=MAX_UNKNOWN_PER_ATTEMPT,
            )
            output = RecallEvidence(
                query=request.query,
                mode=request.mode,
                results=tuple(admission.rows),
                hint=_hint(attempt, bool(admission.rows)),
                unavailable=tuple(short(u) for u in unavailable),
                evidence=self.ledger.record(RECALL_ROUTE, admission.truncated),
                status="searched",
                attempt=attempt,
                digest=request.digest,
                provider_called=True,
            )
            self._attempts.append(output)
            self._by_digest[request.digest] = output
            self.ledger.take(admission)
            self._results += len(admission.rows)
            self._chars += admission.chars
        return output

    @staticmethod
    def _joined(output: RecallEvidence) -> RecallEvidence:
        status = "joined" if output.status == "searched" else output.status
        return output.model_copy(update={"status": status, "provider_called": False})

    def _settle(
        self, step: Step, request: RecallRequest, found: Any, error: BaseException | None
    ) -> RecallEvidence:
        """Finish a run; a kernel refusal or a cancellation propagates after the slot is free."""
        output = self._finish(step, request, found, error)
        if error is not None and (not isinstance(error, Exception) or isinstance(error, REFUSED)):
            raise error
        return output

    def recall(self, spaces: SpaceSearcher, request: RecallRequest) -> RecallEvidence:
        """One recall call of this turn: replayed, joined, exhausted or searched."""
        while True:
            step = self._begin(request)
            if step.kind in ("replay", "exhausted"):
                return step.output
            assert step.future is not None
            if step.kind == "join":
                return self._joined(step.future.result())
            if step.kind == "wait":
                step.future.result()
                continue
            try:
                found = spaces.search(
                    request.query,
                    limit=request.limit,
                    mode=request.mode,
                    space_ids=list(request.space_ids),
                    policy=spaces.envelope_policy,  # the model's envelope: the configured cut
                )
            except BaseException as exc:
                return self._settle(step, request, None, exc)
            return self._settle(step, request, found, None)
