"""The public ``langgraph-checkpoint-conformance`` suite: every capability, both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from langgraph_mnemon.checkpointers import AsyncMnemosSaver, MnemosSaver
from langgraph_mnemon.storage.db import AsyncDatabase, create_async_engine


def _factories(url: Callable[[], str]) -> dict[str, Callable[[], AsyncIterator[Any]]]:
    async def async_saver() -> AsyncIterator[Any]:
        async with AsyncMnemosSaver.from_conn_string(url()) as saver:
            yield saver

    async def sync_saver() -> AsyncIterator[Any]:
        with MnemosSaver.from_conn_string(url()) as saver:
            yield saver

    async def async_engine_saver() -> AsyncIterator[Any]:
        # An AsyncEngine handed in (aiosqlite / psycopg async): the run_sync path.
        engine = create_async_engine(url())
        saver = AsyncMnemosSaver(AsyncDatabase(engine, owns_engine=True))
        await saver.setup()
        try:
            yield saver
        finally:
            await saver.aclose()

    return {
        "AsyncMnemosSaver": async_saver,
        "MnemosSaver": sync_saver,
        "AsyncMnemosSaver(AsyncEngine)": async_engine_saver,
    }


async def _assert_full(name: str, factory: Callable[[], AsyncIterator[Any]]) -> None:
    registered = checkpointer_test(name=name)(factory)
    report = await validate(registered)
    failures = {cap: result.failures for cap, result in report.results.items() if not result.passed}
    assert report.passed_all_base(), failures
    assert report.passed_all(), failures
    detected = {cap for cap, result in report.results.items() if result.detected}
    assert detected == {c.value for c in ALL_CAPABILITIES}, detected
    assert sum(r.tests_passed for r in report.results.values()) >= 70


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "name", ["AsyncMnemosSaver", "MnemosSaver", "AsyncMnemosSaver(AsyncEngine)"]
)
async def test_conformance_sqlite(tmp_path: Path, name: str) -> None:
    counter = iter(range(1000))

    def url() -> str:
        return f"sqlite:///{tmp_path}/conformance-{next(counter)}.db"

    await _assert_full(f"{name} on SQLite", _factories(url)[name])


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "name", ["AsyncMnemosSaver", "MnemosSaver", "AsyncMnemosSaver(AsyncEngine)"]
)
async def test_conformance_postgres(postgres_url: str, name: str) -> None:
    await _assert_full(f"{name} on PostgreSQL", _factories(lambda: postgres_url)[name])
