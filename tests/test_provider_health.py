"""Health that tells the truth (issue 13, item 3): each provider's real state from a bounded,
briefly cached status call; spaces of a missing or failing provider are unreachable; status
says ``healthy`` only when that holds and no memory step is failing.

Real components: the native provider on SQLite files, the real Chroma server at
``MNEMON_TEST_CHROMA_URL``, LangGraph's InMemoryStore behind the shipped store provider.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from langgraph.store.memory import InMemoryStore

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.providers.chroma import ChromaProvider
from langgraph_mnemon.adapters.providers.store import StoreProvider
from langgraph_mnemon.memory_layers.spaces import ProviderStatus, SpaceBinding
from tests.spaces_support import SecretStoreProvider, hashing, make_spaces, sqlite_database

SECRET = "sk-live-9f8e7d6c5b4a"


class CountingStatus(StoreProvider):
    """The shipped store provider over a real InMemoryStore, counting status calls."""

    def __init__(self, provider_id: str = "counted") -> None:
        super().__init__(InMemoryStore(), provider_id=provider_id, label=provider_id)
        self.status_calls = 0

    def _status(self, space: SpaceBinding) -> ProviderStatus:
        self.status_calls += 1
        return super()._status(space)


class RaisingStatus(SecretStoreProvider):
    """A remote-style provider (per-space api_key) whose status call fails loudly, naming its
    secret, a credentialed URL and a host path."""

    def __init__(self, where: Path) -> None:
        super().__init__()
        self.where = where

    def _status(self, space: SpaceBinding) -> ProviderStatus:
        key = space.secrets.get("api_key", "")
        raise ConnectionError(
            f"https://svc:{key}@api.example.com/v1?token={key} refused; config at "
            f"{self.where}/state/vault.json (key {key})"
        )


class HangingStatus(StoreProvider):
    """A provider whose status call never answers in time (an ``async def`` hook: a provider
    written before the sync contract hangs the same way)."""

    def __init__(self) -> None:
        super().__init__(InMemoryStore(), provider_id="hanging", label="Hanging")

    async def _status(self, space: SpaceBinding) -> ProviderStatus:
        await asyncio.sleep(30)
        return ProviderStatus(healthy=True)


def test_item3_missing_provider_marks_its_space_unreachable(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with Mnemon.open(root) as mem:
        mem.spaces.register_provider(CountingStatus("external"))
        mem.spaces.create_space("External", provider_id="external", space_id="ext", active=True)
        mem.spaces.remember("Native knows the VPN address.")
        status = mem.status()
        assert status.healthy is True
        assert status.spaces is not None
        assert status.spaces.unreachable == []
    with Mnemon.open(root) as mem:  # a new process: the "external" provider is not configured
        report = mem.spaces.health()
        states = {p.id: p.state for p in report.providers}
        assert states["external"] == "missing"
        assert states["mnemos"] == "healthy"
        assert set(states) == {"external", *mem.spaces.providers}
        assert report.unreachable == ["ext"]
        ext = next(s for s in report.spaces if s.space_id == "ext")
        assert ext.reachable is False
        assert "not registered" in (ext.reason or "")
        status = mem.status()
        assert status.healthy is False  # no longer a hard-coded true
        assert status.spaces is not None
        assert status.spaces.unreachable == ["ext"]
        assert "external" not in status.spaces.providers  # the names of registered ones
        shown = {p.id: p.state for p in status.spaces.provider_health}
        assert shown == states


def test_item3_failing_provider_is_reported_redacted(tmp_path: Path) -> None:
    spaces = make_spaces(tmp_path, [RaisingStatus(tmp_path)])
    try:
        spaces.create_space(
            "Vault", provider_id="vault", space_id="vault", secrets={"api_key": SECRET}
        )
        spaces.create_space("Native", space_id="native")
        report = spaces.health()
        vault = next(p for p in report.providers if p.id == "vault")
        assert vault.state == "failing"
        assert "refused" in vault.message
        for leak in (SECRET, str(tmp_path), "/state/vault.json"):
            assert leak not in vault.message
        assert report.unreachable == ["vault"]
        reason = next(s.reason for s in report.spaces if s.space_id == "vault")
        assert reason is not None
        assert SECRET not in reason
        assert "failing" in reason
        assert report.degraded
    finally:
        spaces.close()


def test_item3_hanging_provider_is_failing_within_the_bound(tmp_path: Path) -> None:
    for timeout_ms, bound in ((500, 1.5), (10_000, 3.5)):  # capped at 2 s whatever timeout_ms
        hanging = HangingStatus()
        spaces = make_spaces(tmp_path / str(timeout_ms), [hanging], timeout_ms=timeout_ms)
        try:
            spaces.create_space("Slow", provider_id="hanging", space_id="slow", active=True)
            started = time.monotonic()
            report = spaces.health()
            elapsed = time.monotonic() - started
            assert elapsed < bound, elapsed
            slow = next(p for p in report.providers if p.id == "hanging")
            assert slow.state == "failing"
            assert f"within {min(timeout_ms, 2000)} ms" in slow.message
            assert report.unreachable == ["slow"]
        finally:
            spaces.close()


def test_item3_healthy_native_and_chroma_server(
    tmp_path: Path, chroma_server: tuple[str, int]
) -> None:
    host, port = chroma_server
    chroma = ChromaProvider(hashing(), host=host, port=port)
    spaces = make_spaces(tmp_path, [chroma], embedder=hashing())
    try:
        spaces.create_space("Vectors", provider_id="chroma", space_id="vectors", active=True)
        spaces.create_space("Native", space_id="native", active=True)
        assert spaces.remember("Chroma holds the design notes.", space_id="vectors").committed
        report = spaces.health(max_age=0)
        assert [(p.id, p.state) for p in report.providers] == [
            ("chroma", "healthy"),
            ("mnemos", "healthy"),
        ]
        assert report.unreachable == []
        assert not report.degraded
        assert all(s.reachable and s.reason is None for s in report.spaces)
    finally:
        spaces.close()


def test_item3_unreachable_chroma_server_is_failing(tmp_path: Path) -> None:
    dead = ChromaProvider(hashing(), host="127.0.0.1", port=1)  # nothing listens there
    spaces = make_spaces(tmp_path, [dead])
    try:
        started = time.monotonic()
        report = spaces.health()
        assert time.monotonic() - started < 3.5
        assert next(p for p in report.providers if p.id == "chroma").state == "failing"
        assert report.unreachable == []  # no space uses it: the provider alone is reported
    finally:
        spaces.close()


def test_item3_health_is_cached_for_max_age(tmp_path: Path) -> None:
    counted = CountingStatus()
    spaces = make_spaces(tmp_path, [counted])
    try:
        spaces.create_space("Counted", provider_id="counted", space_id="c", active=True)
        first = spaces.health()
        assert counted.status_calls == 1
        assert spaces.health() == first  # within max_age: no new status call
        assert counted.status_calls == 1
        spaces.health(max_age=0)
        assert counted.status_calls == 2
        time.sleep(0.3)
        spaces.health(max_age=0.2)  # older than 0.2 s: probed again
        assert counted.status_calls == 3

        results: list[Any] = []
        errors: list[BaseException] = []

        def ask() -> None:
            try:
                results.append(spaces.health())
            except BaseException as exc:  # pragma: no cover - the assertion shows it
                errors.append(exc)

        threads = [threading.Thread(target=ask) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
        assert errors == []
        assert len(results) == 8
        assert all(r == results[0] for r in results)
        assert counted.status_calls == 3  # every thread read the cached state
    finally:
        spaces.close()


def test_item3_status_healthy_follows_memory_step_failures(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path / "root") as mem:
        mem.spaces.remember("The VPN lives at vpn.example.org.")
        assert mem.status().healthy is True
        mem.health.failed("tool:mnemon_recall", "storage-full", "disk full")
        status = mem.status()
        assert status.healthy is False
        assert status.health.degraded
        mem.health.succeeded("tool:mnemon_recall")
        assert mem.status().healthy is True


def test_item3_unreadable_catalog_is_unhealthy(tmp_path: Path) -> None:
    down = "postgresql+psycopg://mnemon:hunter2@127.0.0.1:1/mnemon?connect_timeout=2"
    with Mnemon.open(tmp_path / "root", database_url=down) as mem:
        report = mem.spaces.health()
        assert report.catalog_error is not None
        assert "hunter2" not in report.catalog_error
        assert next(p for p in report.providers if p.id == "mnemos").state == "failing"
        status = mem.status()
        assert status.spaces is None
        assert status.healthy is False
        assert "hunter2" not in status.model_dump_json()


def test_item3_health_of_an_empty_catalog_probes_providers(tmp_path: Path) -> None:
    db = sqlite_database(tmp_path)
    counted = CountingStatus()
    spaces = make_spaces(tmp_path, [counted], database=db)
    try:
        report = spaces.health()
        assert [(p.id, p.state) for p in report.providers] == [
            ("counted", "healthy"),
            ("mnemos", "healthy"),
        ]
        assert report.spaces == []
        assert counted.status_calls == 1
        assert not (tmp_path / "mnemon.db").exists() or spaces.list_spaces() == []
    finally:
        spaces.close()
        db.dispose()
