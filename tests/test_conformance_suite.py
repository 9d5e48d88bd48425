"""The conformance suite's own tests: a correct minimal provider passes every check, and
deliberately broken providers are each caught by the check that covers their bug.

The providers here keep rows in a plain in-process ``Shelf`` (their backend); a "down" shelf
refuses every access like an unreachable server would. Only the suite is under test.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import time
import unicodedata
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from langgraph_mnemon.adapters.providers.base import BaseProvider, unsupported
from langgraph_mnemon.contracts import text_problem
from langgraph_mnemon.errors import InvalidInputError, NotFoundError, ProviderError
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    Capabilities,
    DiscoveredSpace,
    GraphProjection,
    LinkRequest,
    MemoryRecord,
    ProviderDescriptor,
    ProviderSearchRequest,
    ProviderSearchResult,
    ProviderStatus,
    RelatedRequest,
    RememberItem,
    SpaceBinding,
)
from langgraph_mnemon.memory_layers.text import tokenize
from langgraph_mnemon.testing import providers
from langgraph_mnemon.testing.providers import (
    CHECKS,
    CheckResult,
    ConformanceError,
    ConformanceReport,
    ProviderHarness,
    acheck_provider,
    check_provider,
)


class Shelf:
    """The in-process backend: rows and edges per space; ``up=False`` refuses every access."""

    def __init__(self, up: bool = True) -> None:
        self.up = up
        self.rows: dict[str, dict[str, dict[str, Any]]] = {}
        self.edges: dict[str, set[tuple[str, str]]] = {}
        self.seq = itertools.count(1)

    def space(self, space_id: str) -> dict[str, dict[str, Any]]:
        if not self.up:
            raise ConnectionError("connection refused by the shelf server")
        return self.rows.setdefault(space_id, {})


class Notes(BaseProvider):
    """A correct minimal provider: normalized word-overlap scores, hard delete, links."""

    descriptor: ClassVar[ProviderDescriptor] = ProviderDescriptor(
        id="notes",
        label="Notes",
        capabilities=Capabilities(
            search=True,
            browse=True,
            remember=True,
            related=True,
            link=True,
            forget=True,
            discover=True,
        ),
        score_semantics="normalized",
        write_mode="exact",
        deletion_mode="hard",
    )

    def __init__(self, shelf: Shelf) -> None:
        self.shelf = shelf

    def rows(self, space: SpaceBinding) -> dict[str, dict[str, Any]]:
        try:
            return self.shelf.space(space.id)
        except ConnectionError as exc:
            raise ProviderError(f"notes backend unreachable: {exc}") from None

    def _status(self, space: SpaceBinding) -> ProviderStatus:
        try:
            rows = self.shelf.space(space.id)
        except ConnectionError as exc:
            return ProviderStatus(healthy=False, error=str(exc))
        return ProviderStatus(healthy=True, total_insights=len(rows), deleted_insights=0)

    def _remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        problem = text_problem(item.content)
        if problem:
            raise InvalidInputError(f"content {problem}")
        rows = self.rows(space)
        seq = next(self.shelf.seq)
        rid = f"n{seq}"
        rows[rid] = {"content": item.content, "category": item.category, "seq": seq}
        return {"status": "stored", "id": rid}

    def record(self, rid: str, row: dict[str, Any], score: float | None = None) -> MemoryRecord:
        return MemoryRecord(
            id=rid,
            content=row["content"],
            category=row["category"],
            score=score,
            created_at=float(row["seq"]),
        )

    def scored(self, space: SpaceBinding, request: ProviderSearchRequest) -> list[MemoryRecord]:
        words = set(tokenize(request.query, 32))
        found = []
        for rid, row in self.rows(space).items():
            if request.category and row["category"] != request.category:
                continue
            present = set(tokenize(row["content"], 4096))
            hits = len(words & present)
            if not hits or (request.mode == "basic" and hits < len(words)):
                continue
            found.append((hits / len(words), row["seq"], rid, row))
        found.sort(key=lambda x: (-x[0], -x[1]))
        return [self.record(rid, row, score) for score, _, rid, row in found]

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        return ProviderSearchResult(results=self.scored(space, request)[: request.limit])

    def _browse(self, space: SpaceBinding, request: BrowseRequest) -> list[MemoryRecord]:
        rows = sorted(self.rows(space).items(), key=lambda kv: -kv[1]["seq"])
        rows = [kv for kv in rows if not request.category or kv[1]["category"] == request.category]
        page = rows[request.offset : request.offset + request.limit]
        return [self.record(rid, row) for rid, row in page]

    def _forget(self, space: SpaceBinding, insight_id: str) -> dict[str, Any]:
        rows = self.rows(space)
        if insight_id not in rows:
            raise NotFoundError(f"no memory {insight_id!r}; search for the exact id")
        del rows[insight_id]
        return {"status": "deleted", "id": insight_id}

    def _link(self, space: SpaceBinding, request: LinkRequest) -> dict[str, Any]:
        rows = self.rows(space)
        if request.source_id not in rows or request.target_id not in rows:
            raise NotFoundError("link needs two stored ids")
        self.shelf.edges.setdefault(space.id, set()).add((request.source_id, request.target_id))
        return {"status": "linked", "id": request.source_id}

    def _related(self, space: SpaceBinding, request: RelatedRequest) -> list[MemoryRecord]:
        rows = self.rows(space)
        if request.id not in rows:
            raise NotFoundError(f"no memory {request.id!r}")
        peers = [
            b if a == request.id else a
            for a, b in self.shelf.edges.get(space.id, set())
            if request.id in (a, b)
        ]
        return [self.record(p, rows[p]) for p in sorted(peers) if p in rows]

    def _discover(
        self, config: Mapping[str, Any], secrets: Mapping[str, str]
    ) -> list[DiscoveredSpace]:
        if not self.shelf.up:
            raise ProviderError("notes backend unreachable")
        return [DiscoveredSpace(external_id=s, name=s) for s in sorted(self.shelf.rows)]


def harness(cls: type[Notes] = Notes, **kwargs: Any) -> ProviderHarness:
    shelf = Shelf()
    return ProviderHarness(
        make=lambda: cls(shelf), make_down=lambda: cls(Shelf(up=False)), **kwargs
    )


def outcome(cls: type[Notes], check: str, **kwargs: Any) -> CheckResult:
    [result] = check_provider(harness(cls, **kwargs), checks=[check]).results
    return result


# ------------------------------------------------------------------ the correct provider


def test_a_correct_minimal_provider_passes_every_check() -> None:
    report = check_provider(harness())
    assert [r.name for r in report.results] == list(CHECKS)
    assert report.passed, str(report)
    report.raise_for_failures()
    by_name = {r.name: r.outcome for r in report.results}
    assert by_name["undeclared_refused"] == "passed"  # graph is undeclared and refused
    assert all(o == "passed" for o in by_name.values()), by_name
    assert report.provider_id == "notes"


def test_an_async_factory_and_the_async_entry_point_work() -> None:
    shelf = Shelf()

    async def make() -> Notes:
        await asyncio.sleep(0)
        return Notes(shelf)

    report = asyncio.run(acheck_provider(ProviderHarness(make=make), checks=["search_modes"]))
    assert [r.outcome for r in report.results] == ["passed"], str(report)


class AsyncHooks(Notes):
    """The same provider written the way providers were before the sync contract: every hook
    an ``async def``, and ``aclose`` instead of ``close``."""

    closed: ClassVar[list[str]] = []

    async def _status(self, space: SpaceBinding) -> ProviderStatus:
        await asyncio.sleep(0)
        return Notes._status(self, space)

    async def _remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        await asyncio.sleep(0)
        return Notes._remember(self, space, item)

    async def _search(
        self, space: SpaceBinding, request: ProviderSearchRequest
    ) -> ProviderSearchResult:
        await asyncio.sleep(0)
        return Notes._search(self, space, request)

    async def _browse(self, space: SpaceBinding, request: BrowseRequest) -> list[MemoryRecord]:
        return Notes._browse(self, space, request)

    async def _forget(self, space: SpaceBinding, insight_id: str) -> dict[str, Any]:
        return Notes._forget(self, space, insight_id)

    async def _link(self, space: SpaceBinding, request: LinkRequest) -> dict[str, Any]:
        return Notes._link(self, space, request)

    async def _related(self, space: SpaceBinding, request: RelatedRequest) -> list[MemoryRecord]:
        return Notes._related(self, space, request)

    async def _discover(
        self, config: Mapping[str, Any], secrets: Mapping[str, str]
    ) -> list[DiscoveredSpace]:
        return Notes._discover(self, config, secrets)

    close = None  # type: ignore[assignment]  # no close(): only the old aclose()

    async def aclose(self) -> None:
        AsyncHooks.closed.append("closed")


def test_a_provider_with_async_hooks_works_through_the_sync_methods() -> None:
    provider = AsyncHooks(Shelf())
    space = SpaceBinding(id="old", name="Old")
    receipt = provider.remember(space, RememberItem(content="Ada keeps the lighthouse log."))
    assert receipt["status"] == "stored"
    found = provider.search(space, ProviderSearchRequest(query="lighthouse log"))
    assert [r.content for r in found.results] == ["Ada keeps the lighthouse log."]
    assert [r.id for r in provider.browse(space, BrowseRequest())] == [receipt["id"]]
    assert provider.status(space).total_insights == 1
    many = provider.remember_many(space, [RememberItem(content="Bob reads it.")])
    assert [r["status"] for r in many] == ["stored"]

    async def inside_a_loop() -> dict[str, Any]:  # settle() runs the hook in its own thread
        return provider.forget(space, receipt["id"])

    assert asyncio.run(inside_a_loop())["status"] == "deleted"
    with pytest.raises(NotFoundError):  # an async hook's error reaches the caller as is
        provider.forget(space, receipt["id"])


def test_a_provider_with_async_hooks_passes_the_conformance_suite() -> None:
    AsyncHooks.closed.clear()
    report = check_provider(harness(AsyncHooks))
    assert report.passed, str(report)
    assert all(r.outcome == "passed" for r in report.results), str(report)
    assert len(AsyncHooks.closed) == len(CHECKS) + 2  # the down providers are closed too


def test_without_make_down_backend_down_is_not_run_but_allowed() -> None:
    shelf = Shelf()
    report = check_provider(ProviderHarness(make=lambda: Notes(shelf)), checks=["backend_down"])
    assert report.results[0].outcome == "not_run"
    assert "make_down" in report.results[0].detail
    assert report.passed
    report.raise_for_failures()


# ------------------------------------------------------------------ broken providers


class LinkButNoRelated(Notes):
    """Declares link + related, but related never finds the linked row."""

    def _related(self, space: SpaceBinding, request: RelatedRequest) -> list[MemoryRecord]:
        self.rows(space)
        return []


class RelatedRaises(Notes):
    def _related(self, space: SpaceBinding, request: RelatedRequest) -> list[MemoryRecord]:
        raise RuntimeError("graph index missing")


class ScoreSeven(Notes):
    """Declares normalized scores but reports 7.0."""

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        rows = self.scored(space, request)[: request.limit]
        return ProviderSearchResult(results=[r.model_copy(update={"score": 7.0}) for r in rows])


class Unsorted(Notes):
    """Normalized scores, but worst first."""

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        rows = self.scored(space, request)[: request.limit]
        rows = [r.model_copy(update={"score": 0.1 + 0.05 * n}) for n, r in enumerate(rows)]
        return ProviderSearchResult(results=rows)


class ReceiptLies(Notes):
    """Says stored, stores nothing."""

    def _remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        self.rows(space)
        return {"status": "stored", "id": f"ghost-{next(self.shelf.seq)}"}


class IoBeforeRefusal(Notes):
    """Graph is undeclared, but the provider reads a file before it refuses."""

    def graph(self, space: SpaceBinding, limit: int = 200) -> GraphProjection:
        with open(__file__, encoding="utf-8") as handle:  # the I/O the suite must catch
            handle.read(10)
        raise unsupported(self.descriptor.id, "graph")


class ConnectsInAThread(Notes):
    """Graph is undeclared, but a worker thread opens a socket before the refusal (an
    ``async def`` method handing work to ``asyncio.to_thread``: recorded all the same)."""

    async def graph(self, space: SpaceBinding, limit: int = 200) -> GraphProjection:
        await asyncio.to_thread(_try_connect)
        raise unsupported(self.descriptor.id, "graph")


def _try_connect() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with contextlib.suppress(OSError):  # a closed port: the attempt is what counts
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


class ConnectsBeforeRefusal(Notes):
    """Graph is undeclared, but the provider talks to its backend first (down: it fails)."""

    def graph(self, space: SpaceBinding, limit: int = 200) -> GraphProjection:
        self.rows(space)
        raise unsupported(self.descriptor.id, "graph")


class ForgetKeepsRow(Notes):
    """Declares hard delete, but the row stays browsable."""

    def _forget(self, space: SpaceBinding, insight_id: str) -> dict[str, Any]:
        if insight_id not in self.rows(space):
            raise NotFoundError("no such memory")
        return {"status": "deleted", "id": insight_id}


class Leaky(Notes):
    """Searches every space, not just the one asked about."""

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        rows: list[MemoryRecord] = []
        for space_id in list(self.shelf.rows):
            rows += self.scored(SpaceBinding(id=space_id, name=space_id), request)
        rows.sort(key=lambda r: -(r.score or 0))
        return ProviderSearchResult(results=rows[: request.limit])


class Normalizes(Notes):
    """Stores text NFC-normalised: combining marks do not round-trip exactly."""

    def _remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        text = unicodedata.normalize("NFC", item.content)
        return super()._remember(space, item.model_copy(update={"content": text}))


class AcceptsSurrogates(Notes):
    # BaseProvider refuses bad text before _remember; a provider that overrides the public
    # method (or does not use BaseProvider) skips that, and the suite must notice.
    def remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        rows = self.rows(space)
        seq = next(self.shelf.seq)
        rows[f"n{seq}"] = {"content": item.content, "category": item.category, "seq": seq}
        return {"status": "stored", "id": f"n{seq}"}


class Truncates(Notes):
    """Silently keeps the first 8,000 characters."""

    def _remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        short = item.model_copy(update={"content": item.content[:8000]})
        return super()._remember(space, short)


class RacyShared(Notes):
    """Keeps the query in shared state across a pause: concurrent searches mix up."""

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        self.current = request
        time.sleep(0.005)  # another thread's search overwrites self.current meanwhile
        return ProviderSearchResult(results=self.scored(space, self.current)[: request.limit])


class StatusRaisesWhenDown(Notes):
    def _status(self, space: SpaceBinding) -> ProviderStatus:
        return ProviderStatus(healthy=True, total_insights=len(self.rows(space)))


class MismatchedDeletion(Notes):
    descriptor = Notes.descriptor.model_copy(update={"deletion_mode": "unsupported"})


class AsyncClaimsCommitted(Notes):
    """write_mode async, commits nothing visible, yet says stored."""

    descriptor = Notes.descriptor.model_copy(update={"write_mode": "async"})

    def _remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        self.rows(space)
        return {"status": "stored", "id": "later"}


class AsyncPending(Notes):
    """write_mode async done right: pending receipts; rows appear once the queue drains."""

    descriptor = Notes.descriptor.model_copy(update={"write_mode": "async"})
    queue: ClassVar[list[tuple[Notes, SpaceBinding, RememberItem]]] = []

    def _remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        problem = text_problem(item.content)
        if problem:
            raise InvalidInputError(f"content {problem}")
        self.rows(space)
        AsyncPending.queue.append((self, space, item))
        return {"status": "pending"}


def drain() -> None:
    while AsyncPending.queue:
        provider, space, item = AsyncPending.queue.pop(0)
        Notes._remember(provider, space, item)


@pytest.mark.parametrize(
    ("cls", "check", "needle"),
    [
        (LinkButNoRelated, "related_link", "misses its peer"),
        (RelatedRaises, "related_link", "RuntimeError"),
        (ScoreSeven, "score_semantics", "outside 0..1"),
        (Unsorted, "score_semantics", "not best first"),
        (ReceiptLies, "remember_receipt", "does not show the committed row"),
        (IoBeforeRefusal, "undeclared_refused", "did I/O before refusing: ['open("),
        (ConnectsInAThread, "undeclared_refused", "socket.connect"),
        (ConnectsBeforeRefusal, "undeclared_refused", "on a down backend raised ProviderError"),
        (ForgetKeepsRow, "forget", "still browsable"),
        (Leaky, "score_semantics", "returned rows of another space"),
        (Normalizes, "unicode", "does not round-trip exactly"),
        (AcceptsSurrogates, "unicode", "lone surrogate was accepted"),
        (Truncates, "size_limits", "truncated"),
        (RacyShared, "concurrent_search", "differs when concurrent"),
        (StatusRaisesWhenDown, "backend_down", "status raised ProviderError"),
        (MismatchedDeletion, "descriptor", "deletion_mode"),
        (AsyncClaimsCommitted, "remember_receipt", "receipt says committed, but"),
    ],
)
def test_each_broken_provider_is_caught_by_its_check(
    cls: type[Notes], check: str, needle: str
) -> None:
    shelf = Shelf()
    report = check_provider(
        ProviderHarness(
            make=lambda: cls(shelf), make_down=lambda: cls(Shelf(up=False)), settle=drain
        ),
        checks=[check],
    )
    [result] = report.results
    assert result.outcome == "failed", str(report)
    assert needle in result.detail, result.detail
    assert not report.passed
    with pytest.raises(ConformanceError, match=check):
        report.raise_for_failures()


def test_the_broken_providers_pass_the_checks_their_bug_is_not_about() -> None:
    # The suite blames the right check: a score bug leaves browse, forget, unicode alone.
    report = check_provider(harness(ScoreSeven), checks=["browse", "forget", "unicode"])
    assert report.passed, str(report)


def test_an_async_provider_with_pending_receipts_and_settle_passes() -> None:
    report = check_provider(harness(AsyncPending, settle=drain))
    assert report.passed, str(report)


def test_an_async_provider_without_settle_fails_saying_what_is_missing() -> None:
    result = outcome(AsyncPending, "search_modes")
    assert result.outcome == "failed"
    assert "settle" in result.detail


# ------------------------------------------------------------------ the runner itself


def test_unknown_check_names_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="no_such_check"):
        check_provider(harness(), checks=["search_modes", "no_such_check"])
    with pytest.raises(InvalidInputError, match="list of check names"):
        check_provider(harness(), checks="search_modes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="ProviderHarness"):
        check_provider(lambda: Notes(Shelf()))  # type: ignore[arg-type]


def test_checks_run_in_suite_order_whatever_order_is_asked() -> None:
    report = check_provider(harness(), checks=["forget", "descriptor"])
    assert [r.name for r in report.results] == ["descriptor", "forget"]


def test_check_provider_also_runs_inside_a_running_loop() -> None:
    async def inside() -> ConformanceReport:
        return check_provider(harness(), checks=["descriptor", "search_modes"])

    report = asyncio.run(inside())
    assert [r.outcome for r in report.results] == ["passed", "passed"], str(report)


def test_the_report_lists_each_failure() -> None:
    shelf = Shelf()
    report = check_provider(
        ProviderHarness(make=lambda: ScoreSeven(shelf), name="seven"),
        checks=["descriptor", "score_semantics", "backend_down"],
    )
    text = str(report)
    assert text.splitlines()[0] == "conformance of 'seven'"
    assert "score_semantics" in text
    assert "failed" in text
    assert "outside 0..1" in text
    assert [r.name for r in report.failures] == ["score_semantics"]
    with pytest.raises(ConformanceError) as caught:
        report.raise_for_failures()
    message = str(caught.value)
    assert "seven: 1 conformance check(s) failed" in message
    assert "- score_semantics: " in message
    assert isinstance(caught.value, AssertionError)


def test_a_not_run_outside_the_allowed_ones_counts_as_a_failure() -> None:
    report = ConformanceReport(
        "x", [CheckResult("backend_down", "not_run", "no make_down", 0.0)], allowed_not_run=()
    )
    assert not report.passed
    with pytest.raises(ConformanceError, match="backend_down"):
        report.raise_for_failures()


class Hangs(Notes):
    def _status(self, space: SpaceBinding) -> ProviderStatus:
        time.sleep(5)
        return ProviderStatus(healthy=True)


def test_a_check_that_hangs_fails_on_its_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers, "CHECK_TIMEOUT", 0.3)
    result = outcome(Hangs, "status")
    assert result.outcome == "failed"
    assert "timed out" in result.detail
    assert result.seconds < 5


class HangsInAThread(Notes):
    """An ``async def`` hook whose worker thread sleeps past the check's timeout."""

    async def _status(self, space: SpaceBinding) -> ProviderStatus:
        await asyncio.to_thread(time.sleep, 3)
        return ProviderStatus(healthy=True)


def test_a_hung_worker_thread_does_not_hold_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers, "CHECK_TIMEOUT", 0.3)
    started = time.perf_counter()
    result = outcome(HangsInAThread, "status")
    assert result.outcome == "failed"
    assert "timed out" in result.detail
    assert time.perf_counter() - started < 2.5  # the sleeping thread is not waited for


class Unbuildable(Notes):
    def __init__(self, shelf: Shelf) -> None:
        raise OSError("cannot reach the notes server")


def test_a_provider_that_cannot_be_built_fails_every_check() -> None:
    report = check_provider(harness(Unbuildable), checks=["descriptor", "search_modes"])
    assert [r.outcome for r in report.results] == ["failed", "failed"]
    assert all("OSError: cannot reach the notes server" in r.detail for r in report.results)
    assert report.provider_id == "(unbuilt provider)"


class LeaksSecret(Notes):
    def _status(self, space: SpaceBinding) -> ProviderStatus:
        raise RuntimeError(f"login failed for token {space.secrets.get('token')}")

    def check_config(self, config: Mapping[str, Any], secrets: Mapping[str, str]) -> dict:
        return {}


def test_a_secret_in_a_provider_error_never_reaches_the_report() -> None:
    [result] = check_provider(
        harness(LeaksSecret, secrets={"token": "tok-98765"}), checks=["status"]
    ).results
    assert result.outcome == "failed"
    assert "tok-98765" not in result.detail
    assert "login failed for token ***" in result.detail


def test_every_provider_the_suite_built_is_closed() -> None:
    closed: list[str] = []

    class Tracked(Notes):
        def close(self) -> None:
            closed.append("closed")

    shelf = Shelf()
    check_provider(
        ProviderHarness(make=lambda: Tracked(shelf), make_down=lambda: Tracked(Shelf(up=False))),
        checks=["status", "backend_down"],
    )
    assert closed == ["closed"] * 3  # status: one; backend_down: the provider and the down one


def test_the_harness_repr_hides_secret_values() -> None:
    shown = repr(ProviderHarness(make=lambda: Notes(Shelf()), secrets={"api_key": "sk-12345"}))
    assert "sk-12345" not in shown
    assert "api_key" in shown
