"""The shipped provider conformance suite on the mem0 provider (offline: mem0 + local Qdrant).

Every check builds its own provider on the test's folder and the suite closes it afterwards,
so the one local-Qdrant client per folder rule holds. ``make_down`` points the provider at a
folder below a regular file: the path cannot exist, so status is unhealthy and search raises.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from langgraph_mnemon.adapters.embeddings import HashingEmbedder
from langgraph_mnemon.adapters.providers.mem0 import Mem0Provider
from langgraph_mnemon.testing.providers import CHECKS, ProviderHarness, check_provider

# find_spec, not import: importing mem0 here would run its import-time side effects (a
# ~/.mem0 folder, telemetry) before the provider's guarded import. CI installs the extra.
if importlib.util.find_spec("mem0") is None and os.environ.get("CI") != "true":
    pytest.skip("mem0ai is an extra: pip install 'langgraph-mnemon[mem0]'", allow_module_level=True)


def _down(tmp_path: Path) -> Mem0Provider:
    blocker = tmp_path / "blocker"
    blocker.write_text("a regular file where the provider's parent folder should be")
    return Mem0Provider(blocker / "m0", embedder=HashingEmbedder(256))


@pytest.mark.parametrize("check", CHECKS)
def test_conformance(check: str, tmp_path: Path) -> None:
    harness = ProviderHarness(
        make=lambda: Mem0Provider(tmp_path / "m0", embedder=HashingEmbedder(256)),
        make_down=lambda: _down(tmp_path),
        name="mem0",
    )
    check_provider(harness, checks=[check]).raise_for_failures()
