"""Federated recall across the native, mem0, fact-file and HTTP providers, with one of them down.

Every provider is real: the native one on a SQLite file, mem0 on a local Qdrant folder, the fact
file on disk, and the HTTP provider against the reference service on a free port. One recall
goes to all four spaces at once. When one backend stops answering (the HTTP service shut down,
or the fact file replaced by something unreadable), recall still returns the other three
spaces' rows and reports the broken space as a per-space hint: it never raises.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from langgraph_mnemon.adapters.embeddings import HashingEmbedder
from langgraph_mnemon.adapters.providers.facts import FactFileProvider
from langgraph_mnemon.adapters.providers.http import HttpProvider
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.memory_layers.spaces import MemorySpaces
from langgraph_mnemon.storage.db import Database
from tests.support.http_memory_service import serve

if importlib.util.find_spec("mem0") is None and os.environ.get("CI") != "true":
    pytest.skip(
        "mem0ai is not installed: pip install -e '.[dev]' (CI installs it)",
        allow_module_level=True,
    )

from langgraph_mnemon.adapters.providers.mem0 import Mem0Provider

TOKEN = "fed-token-0123456789"
# One topic in every space, in each space's own words, so each has one clear answer.
FACTS = {
    "native": "The release train for billing leaves every Tuesday at noon.",
    "mem0": "Billing releases need a sign-off from the finance lead.",
    "facts": "The billing release checklist lives in docs/billing-release.md.",
    "http": "Billing release notes are posted in the #billing-releases channel.",
}


class Deployment:
    """Four spaces on four providers over one catalog; ``stop_http`` shuts the service down."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._stack = ExitStack()
        self.url = self._stack.enter_context(serve(root / "service.db", TOKEN))
        embedder = HashingEmbedder(256)
        self.db = Database(create_engine(f"sqlite:///{root / 'mnemon.db'}"))
        self.spaces = MemorySpaces(
            self.db,
            root=root,
            providers=[
                MnemosProvider(self.db, embedder=embedder),
                Mem0Provider(root / "mem0", embedder=embedder),
                FactFileProvider(root, embedder=embedder),
                HttpProvider(timeout_s=2.0, retries=1),
            ],
        )
        made = {
            "native": self.spaces.create_space("Native", "Release train.", active=True),
            "mem0": self.spaces.create_space("Mem0", "Sign-offs.", provider_id="mem0", active=True),
            "facts": self.spaces.create_space(
                "Facts", "Checklists.", provider_id="facts", active=True
            ),
            "http": self.spaces.create_space(
                "Service",
                "Release notes.",
                provider_id="http",
                config={"endpoint": self.url},
                secrets={"api_key": TOKEN},
                active=True,
            ),
        }
        self.ids = {name: receipt.space.id for name, receipt in made.items()}
        for name, text in FACTS.items():
            receipt = self.spaces.remember(text, space_id=self.ids[name], category="fact")
            assert receipt.status == "committed", (name, receipt)

    def stop_http(self) -> None:
        self._stack.close()

    def recall(self, query: str = "billing release") -> tuple[set[str], dict[str, object]]:
        result = self.spaces.search(query, limit=10, policy="exhaustive-v1")
        by_space = {s.space_id: s for s in result.sources}
        return {r.content for r in result.results}, by_space

    def close(self) -> None:
        self.spaces.close()
        self._stack.close()
        self.db.dispose()


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    made = Deployment(tmp_path)
    try:
        yield made
    finally:
        made.close()


def test_one_recall_reaches_all_four_providers(deployment: Deployment) -> None:
    contents, sources = deployment.recall()
    assert contents == set(FACTS.values())
    assert {sources[i].provider_id for i in deployment.ids.values()} == {
        "mnemos",
        "mem0",
        "facts",
        "http",
    }
    assert all(sources[i].status == "ready" for i in deployment.ids.values()), sources


def test_the_http_service_down_is_a_hint_for_its_space_only(deployment: Deployment) -> None:
    deployment.stop_http()
    contents, sources = deployment.recall()
    assert contents == {FACTS["native"], FACTS["mem0"], FACTS["facts"]}
    down = sources[deployment.ids["http"]]
    assert down.status == "unavailable", down
    assert down.hint, down
    assert TOKEN not in (down.hint or "")
    for name in ("native", "mem0", "facts"):
        assert sources[deployment.ids[name]].status == "ready", sources[deployment.ids[name]]


def test_an_unreadable_fact_file_is_a_hint_and_the_rest_still_answer(
    deployment: Deployment,
) -> None:
    [path] = (deployment.root / "facts").glob("*.json")
    path.unlink()
    path.mkdir()  # the space's file is now a folder: every read of it fails
    try:
        contents, sources = deployment.recall()
    finally:
        shutil.rmtree(path)
    assert contents == {FACTS["native"], FACTS["mem0"], FACTS["http"]}
    broken = sources[deployment.ids["facts"]]
    assert broken.status == "unavailable", broken
    assert broken.hint, broken
