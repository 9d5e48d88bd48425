"""The shipped provider conformance suite on ``FactFileProvider`` (real files under tmp_path).

Run without an embedder (keyword ranking only) and with the offline ``HashingEmbedder``
(hybrid smart search and derived semantic edges). Backend down: the storage root is a regular
file, so the space's ``facts`` folder can never exist (a real ``NotADirectoryError``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_mnemon.adapters.embeddings import HashingEmbedder
from langgraph_mnemon.adapters.providers.facts import FactFileProvider
from langgraph_mnemon.testing.providers import CHECKS, ProviderHarness, check_provider


def _down(tmp_path: Path) -> FactFileProvider:
    root = tmp_path / "root-is-a-file"
    root.write_text("not a folder\n")
    return FactFileProvider(root)


@pytest.mark.parametrize("embedder", [None, "hashing"])
@pytest.mark.parametrize("check", CHECKS)
def test_conformance(check: str, embedder: str | None, tmp_path: Path) -> None:
    def make() -> FactFileProvider:
        return FactFileProvider(tmp_path, embedder=HashingEmbedder() if embedder else None)

    harness = ProviderHarness(make=make, make_down=lambda: _down(tmp_path), name="facts")
    report = check_provider(harness, checks=[check])
    report.raise_for_failures()
    assert [r.name for r in report.results] == [check]
    assert report.results[0].outcome in ("passed", "not_declared"), report


def test_backend_down_names_the_unusable_folder(tmp_path: Path) -> None:
    harness = ProviderHarness(
        make=lambda: FactFileProvider(tmp_path), make_down=lambda: _down(tmp_path)
    )
    [result] = check_provider(harness, checks=["backend_down"]).results
    assert result.outcome == "passed", result
