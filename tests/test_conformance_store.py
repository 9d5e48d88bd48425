"""The shipped conformance suite on ``StoreProvider``: over LangGraph's ``InMemoryStore`` and
over LangGraph's ``PostgresStore`` on a real PostgreSQL (a fresh schema per test).

Backend down: a ``PostgresStore`` whose psycopg connection is closed (a real failure of the
store's backend, not a provider that raises on purpose).
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from langgraph.store.memory import InMemoryStore
from langgraph.store.postgres import PostgresStore
from psycopg.rows import dict_row

from langgraph_mnemon.adapters.providers.store import StoreProvider
from langgraph_mnemon.testing.providers import CHECKS, ProviderHarness, check_provider


def _plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def _closed_store(url: str) -> StoreProvider:
    conn = psycopg.connect(_plain(url), autocommit=True, prepare_threshold=0, row_factory=dict_row)
    conn.close()
    return StoreProvider(PostgresStore(conn))  # type: ignore[arg-type]


@pytest.fixture
def postgres_store(postgres_url: str) -> Iterator[PostgresStore]:
    with PostgresStore.from_conn_string(_plain(postgres_url)) as store:
        store.setup()
        yield store


@pytest.mark.parametrize("check", CHECKS)
def test_store_provider_over_inmemory_store(check: str, postgres_url: str) -> None:
    store = InMemoryStore()
    harness = ProviderHarness(
        make=lambda: StoreProvider(store),
        # The down variant of the same provider kind: a store whose connection is closed.
        make_down=lambda: _closed_store(postgres_url),
        name="store-inmemory",
    )
    report = check_provider(harness, checks=[check])
    report.raise_for_failures()
    assert [r.name for r in report.results] == [check]
    assert report.results[0].outcome in ("passed", "not_declared"), report


@pytest.mark.parametrize("check", CHECKS)
def test_store_provider_over_postgres_store(
    check: str, postgres_store: PostgresStore, postgres_url: str
) -> None:
    harness = ProviderHarness(
        make=lambda: StoreProvider(postgres_store),
        make_down=lambda: _closed_store(postgres_url),
        name="store-postgres",
    )
    report = check_provider(harness, checks=[check])
    report.raise_for_failures()
    assert report.results[0].outcome in ("passed", "not_declared"), report


def test_backend_down_really_reports_the_closed_connection(postgres_url: str) -> None:
    harness = ProviderHarness(
        make=lambda: StoreProvider(InMemoryStore()),
        make_down=lambda: _closed_store(postgres_url),
    )
    [result] = check_provider(harness, checks=["backend_down"]).results
    assert result.outcome == "passed", result
    assert "the connection is closed" in result.detail, result.detail
