"""The shipped provider conformance suite on the HTTP provider, against the reference server.

The reference service (``tests/support/http_memory_service.py``) runs on a free loopback port
over a real SQLite file, with a bearer key and the hashing embedder; the provider declares
related and link too, so those checks run. ``make_down`` points a provider at a port that was
just closed, so its connections are refused. A second run uses the default descriptor (no
related / link) against a keyword-only service without a key.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from support.http_memory_service import serve

from langgraph_mnemon.adapters.embeddings import HashingEmbedder
from langgraph_mnemon.adapters.providers.http import HttpProvider
from langgraph_mnemon.testing.providers import CHECKS, ProviderHarness, check_provider

TOKEN = "conformance-key-6f1d2b"


@pytest.fixture(scope="module")
def http_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a reference service (embedder on, key required, under a base path)."""
    path = Path(tmp_path_factory.mktemp("http-service")) / "memory.db"
    with serve(path, TOKEN, embedder=HashingEmbedder(256), prefix="/memory/v1") as url:
        yield url


@pytest.fixture(scope="module")
def keyword_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A reference service without an embedder (keyword scores only) and without a key."""
    path = Path(tmp_path_factory.mktemp("http-keyword")) / "memory.db"
    with serve(path) as url:
        yield url


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("check", CHECKS)
def test_conformance(check: str, http_service: str) -> None:
    """Related and link declared; a bearer key; semantic + keyword scores."""
    down_url = f"http://127.0.0.1:{_closed_port()}"
    harness = ProviderHarness(
        make=lambda: HttpProvider(related=True, link=True, timeout_s=10.0),
        config={"endpoint": http_service},
        secrets={"api_key": TOKEN},
        make_down=lambda: _DownProvider(down_url),
        name="http",
    )
    check_provider(harness, checks=[check]).raise_for_failures()


@pytest.mark.parametrize("check", CHECKS)
def test_conformance_without_graph_or_key(check: str, keyword_service: str) -> None:
    """The default descriptor (related / link refused before I/O) on a keyword-only service."""
    down_url = f"http://127.0.0.1:{_closed_port()}"
    harness = ProviderHarness(
        make=HttpProvider,
        config={"endpoint": keyword_service},
        make_down=lambda: _DownProvider(down_url, graph=False),
        name="http-plain",
    )
    check_provider(harness, checks=[check]).raise_for_failures()


class _DownProvider(HttpProvider):
    """The same provider kind, but every space it serves points at a closed port."""

    def __init__(self, url: str, *, graph: bool = True) -> None:
        super().__init__(related=graph, link=graph, timeout_s=5.0, retries=1)
        self._down = url

    def check_config(self, config: Mapping[str, Any], secrets: Mapping[str, str]) -> dict[str, Any]:
        return super().check_config({**config, "endpoint": self._down}, secrets)
