"""The shipped conformance suite on the native ``MnemosProvider``: SQLite and PostgreSQL.

Backend down, really failing even for root: on SQLite a database path whose parent is a
regular file (it can never be created); on PostgreSQL the same server URL on a closed port.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from langgraph_mnemon.adapters.embeddings import HashingEmbedder
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.storage.db import Database, create_engine, ensure_sqlite_directory
from langgraph_mnemon.testing.providers import CHECKS, ProviderHarness, check_provider


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _provider(url: str) -> MnemosProvider:
    return MnemosProvider(
        Database(create_engine(url), owns_engine=True), embedder=HashingEmbedder(256)
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def native(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ProviderHarness]:
    """A harness per backend; every check shares one database (fresh space ids)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'mnemon.db'}"
        ensure_sqlite_directory(url)
        (tmp_path / "not-a-folder").write_text("a regular file\n")
        down_url = f"sqlite:///{tmp_path / 'not-a-folder' / 'mnemon.db'}"
    else:
        url = str(request.getfixturevalue("postgres_url"))
        host_port = url.split("@", 1)[1].split("/", 1)[0]
        down_url = url.replace(host_port, f"127.0.0.1:{_closed_port()}", 1)
    database = Database(create_engine(url), owns_engine=True)
    yield ProviderHarness(
        make=lambda: MnemosProvider(database, embedder=HashingEmbedder(256)),
        make_down=lambda: _provider(down_url),
        name=f"mnemos-{request.param}",
    )
    database.dispose()


@pytest.mark.parametrize("check", CHECKS)
def test_native_provider_conforms(check: str, native: ProviderHarness) -> None:
    report = check_provider(native, checks=[check])
    report.raise_for_failures()
    [result] = report.results
    # The native provider declares every capability: only the refusal check has nothing to do.
    expected = "not_declared" if check == "undeclared_refused" else "passed"
    assert result.outcome == expected, report


def test_down_database_reports_why_without_the_password(native: ProviderHarness) -> None:
    [result] = check_provider(native, checks=["backend_down"]).results
    assert result.outcome == "passed", result
    assert "mnemon:mnemon@" not in result.detail  # the URL's password is masked
    why = "cannot be created" if native.name == "mnemos-sqlite" else "mnemon:***@"
    assert why in result.detail, result.detail
