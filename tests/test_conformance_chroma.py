"""The shipped conformance suite on ``ChromaProvider``: a local persistent folder and the real
``chroma run`` server at ``MNEMON_TEST_CHROMA_URL``.

Backend down, really failing even for root: locally a folder path under a regular file (it can
never be created); for the server an ``HttpClient`` to a closed port.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from langgraph_mnemon.adapters.embeddings import HashingEmbedder
from langgraph_mnemon.adapters.providers.chroma import ChromaProvider
from langgraph_mnemon.testing.providers import CHECKS, ProviderHarness, check_provider

# Chroma declares no graph operations: the suite checks that it refuses them instead.
NOT_DECLARED = {"related_link"}


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(params=["local", "server"])
def chroma(request: pytest.FixtureRequest, tmp_path: Path) -> ProviderHarness:
    if request.param == "local":
        (tmp_path / "not-a-folder").write_text("a regular file\n")
        folder, down_folder = tmp_path / "chroma", tmp_path / "not-a-folder" / "chroma"
        return ProviderHarness(
            make=lambda: ChromaProvider(HashingEmbedder(256), path=folder),
            make_down=lambda: ChromaProvider(HashingEmbedder(256), path=down_folder),
            name="chroma-local",
        )
    host, port = request.getfixturevalue("chroma_server")
    closed = _closed_port()
    return ProviderHarness(
        make=lambda: ChromaProvider(HashingEmbedder(256), host=host, port=port),
        make_down=lambda: ChromaProvider(HashingEmbedder(256), host="127.0.0.1", port=closed),
        name="chroma-server",
    )


@pytest.mark.parametrize("check", CHECKS)
def test_chroma_provider_conforms(check: str, chroma: ProviderHarness) -> None:
    report = check_provider(chroma, checks=[check])
    report.raise_for_failures()
    [result] = report.results
    assert result.outcome == ("not_declared" if check in NOT_DECLARED else "passed"), report


def test_chroma_down_says_why(chroma: ProviderHarness) -> None:
    [result] = check_provider(chroma, checks=["backend_down"]).results
    assert result.outcome == "passed", result
    why = "cannot be created" if chroma.name == "chroma-local" else "Could not connect"
    assert why in result.detail, result.detail


def test_undeclared_graph_calls_are_refused_on_the_down_backend_too(
    chroma: ProviderHarness,
) -> None:
    [result] = check_provider(chroma, checks=["undeclared_refused"]).results
    assert result.outcome == "passed", result
    assert "working and down backends" in result.detail
    assert "graph, related, link" in result.detail
