"""Embedders: offline default, feature hashing, LangChain wrapper, HTTP (a real local server)."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from server_support import free_port
from spaces_support import make_spaces

from langgraph_mnemon.adapters.embeddings import (
    HashingEmbedder,
    HttpEmbedder,
    LangChainEmbedder,
    WordLlamaEmbedder,
    build_embedder,
    from_langchain,
)
from langgraph_mnemon.config import EmbeddingConfig
from langgraph_mnemon.errors import InvalidInputError, ProviderError
from langgraph_mnemon.memory_layers.spaces import Embedder


class _Handler(BaseHTTPRequestHandler):
    calls: ClassVar[dict[str, int]] = {}

    def log_message(self, *args: object) -> None:  # keep test output quiet
        return

    def _send(self, code: int, body: object, raw: bool = False) -> None:
        data = body if raw else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))  # type: ignore[arg-type]
        self.end_headers()
        # The client may have given up already (timeout test).
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(data)  # type: ignore[arg-type]

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        payload = json.loads(self.rfile.read(length) or b"{}")
        texts = payload.get("input", [])
        vectors = [[float(len(t)), float(t.count("a")) + 1.0, 1.0] for t in texts]
        path = self.path
        _Handler.calls[path] = _Handler.calls.get(path, 0) + 1
        if path == "/api/embed":
            self._send(200, {"model": payload.get("model"), "embeddings": vectors})
        elif path == "/v1/embeddings":
            if self.headers.get("Authorization") != "Bearer good-key":
                self._send(401, {"error": "bad key"})
                return
            data = [{"index": i, "embedding": v} for i, v in enumerate(vectors)]
            self._send(200, {"data": list(reversed(data))})
        elif path == "/flaky/api/embed":
            if _Handler.calls[path] <= 2:
                self._send(503, {"error": "warming up"})
            else:
                self._send(200, {"embeddings": vectors})
        elif path == "/slow/api/embed":
            time.sleep(1.0)
            self._send(200, {"embeddings": vectors})
        elif path == "/garbage/api/embed":
            self._send(200, b"<html>not json</html>", raw=True)
        elif path == "/short/api/embed":
            self._send(200, {"embeddings": vectors[:-1]})
        else:
            self._send(404, {"error": "no route"})


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.calls = {}
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_ollama_and_openai_protocols(server: str) -> None:
    ollama = HttpEmbedder(server, "nomic-embed-text", protocol="ollama")
    assert ollama.embed_documents(["ab", "aaa"]) == [[2.0, 2.0, 1.0], [3.0, 4.0, 1.0]]
    assert ollama.embed_query("a") == [1.0, 2.0, 1.0]
    assert ollama.model_id == "ollama:nomic-embed-text"
    openai = HttpEmbedder(
        server + "/v1", "text-embedding-3-small", protocol="openai", api_key="good-key"
    )
    assert openai.embed_documents(["ab", "aaa"]) == [[2.0, 2.0, 1.0], [3.0, 4.0, 1.0]]
    bad_key = HttpEmbedder(server + "/v1", "m", protocol="openai", api_key="wrong")
    with pytest.raises(ProviderError, match=r"check embedding\.api_key"):
        bad_key.embed_query("x")
    ollama.close()


def test_http_retries_then_succeeds(server: str) -> None:
    flaky = HttpEmbedder(server + "/flaky", "m", retries=2)
    assert flaky.embed_query("aa") == [2.0, 3.0, 1.0]
    assert _Handler.calls["/flaky/api/embed"] == 3


def test_http_errors_say_what_to_fix(server: str) -> None:
    with pytest.raises(ProviderError, match="not found"):
        HttpEmbedder(server + "/nowhere", "m").embed_query("x")
    with pytest.raises(ProviderError, match="timed out"):
        HttpEmbedder(server + "/slow", "m", timeout=0.2, retries=1).embed_query("x")
    with pytest.raises(ProviderError, match="unexpected body"):
        HttpEmbedder(server + "/garbage", "m").embed_query("x")
    with pytest.raises(ProviderError, match=r"1 vectors for 2 texts"):
        HttpEmbedder(server + "/short", "m").embed_documents(["a", "b"])
    port = free_port()
    with pytest.raises(ProviderError, match="check that the ollama server is running"):
        HttpEmbedder(f"http://127.0.0.1:{port}", "m", retries=1).embed_query("x")


@pytest.mark.parametrize(
    ("args", "kwargs", "fragment"),
    [
        (("ftp://host", "m"), {}, "absolute http"),
        (("http://user:pw@host", "m"), {}, "must not contain credentials"),
        (("http://host", "m"), {"protocol": "grpc"}, "protocol must be"),
        (("http://host", " "), {}, "non-empty name"),
        (("http://host", "m"), {"timeout": 0}, "timeout must be"),
        (("http://host", "m"), {"retries": 11}, "retries must be"),
    ],
)
def test_http_embedder_validates_its_settings(args: tuple, kwargs: dict, fragment: str) -> None:
    with pytest.raises(InvalidInputError, match=fragment):
        HttpEmbedder(*args, **kwargs)


def test_offline_default_loads_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network is disabled in this test")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(WordLlamaEmbedder, "_shared", None)
    embedder = WordLlamaEmbedder()
    vectors = np.asarray(embedder.embed_documents(["the cat sat", "a kitten rested", "tax law"]))
    assert vectors.shape == (3, 256)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    near = float(vectors[0] @ vectors[1])
    far = float(vectors[0] @ vectors[2])
    assert near > far
    assert embedder.model_id == "wordllama-l2_supercat-256"
    assert isinstance(embedder, Embedder)


def test_hashing_embedder_is_deterministic_and_normalised() -> None:
    embedder = HashingEmbedder(128)
    first = embedder.embed_documents(["Deploy the payments service", ""])
    assert first == embedder.embed_documents(["Deploy the payments service", ""])
    assert abs(np.linalg.norm(first[0]) - 1.0) < 1e-5
    assert not any(first[1])
    assert embedder.embed_query("deploying payment services") != [0.0] * 128
    with pytest.raises(InvalidInputError):
        HashingEmbedder(3)
    with pytest.raises(InvalidInputError):
        embedder.embed_documents("not a list")  # type: ignore[arg-type]


class _HashedLangChain(Embeddings):
    """A LangChain ``Embeddings`` subclass (vectors by feature hashing)."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(64)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def test_langchain_embeddings_power_native_search(tmp_path: Path) -> None:
    fake = DeterministicFakeEmbedding(size=32)
    wrapped = from_langchain(fake, model_id="fake-32")
    assert isinstance(wrapped, LangChainEmbedder)
    assert wrapped.model_id == "fake-32"
    assert len(wrapped.embed_documents(["a", "b"])) == 2
    assert len(wrapped.embed_query("a")) == 32
    assert from_langchain(wrapped) is wrapped
    embedder = from_langchain(_HashedLangChain(), similarity_range=(0.0, 0.8))
    assert embedder.model_id == "_HashedLangChain"
    with pytest.raises(InvalidInputError, match="LangChain Embeddings"):
        from_langchain(object())
    spaces = make_spaces(tmp_path, embedder=embedder)
    try:
        spaces.remember("Quarterly planning happens in the first week of March.")
        found = spaces.search("quarterly planning week")
        assert found.results[0].matched_via == "hybrid"
    finally:
        spaces.close()


def test_build_embedder_from_configuration() -> None:
    assert build_embedder(EmbeddingConfig(enabled=False)) is None
    assert isinstance(build_embedder(EmbeddingConfig()), WordLlamaEmbedder)
    ollama = build_embedder(EmbeddingConfig(endpoint="http://127.0.0.1:11434"))
    assert isinstance(ollama, HttpEmbedder)
    assert ollama.protocol == "ollama"
    openai = build_embedder(
        EmbeddingConfig(endpoint="http://127.0.0.1:9/v1", model="m", api_key="k")
    )
    assert isinstance(openai, HttpEmbedder)
    assert openai.protocol == "openai"
    explicit = build_embedder(EmbeddingConfig(protocol="offline", endpoint="http://x:1"))
    assert isinstance(explicit, WordLlamaEmbedder)
    with pytest.raises(InvalidInputError):
        build_embedder({"enabled": True})  # type: ignore[arg-type]


def test_embedder_failure_writes_nothing(tmp_path: Path, server: str) -> None:
    broken = HttpEmbedder(server + "/nowhere", "m", retries=0)
    spaces = make_spaces(tmp_path, embedder=broken)
    try:
        receipt = spaces.remember("this cannot be embedded")
        assert receipt.status == "failed"
        assert "embedding failed" in receipt.message
        assert spaces.browse() == []
    finally:
        spaces.close()


def test_chroma_collections_use_the_registered_mnemon_function(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    from langgraph_mnemon.adapters.providers.chroma import (
        ChromaProvider,
        MnemonEmbeddingFunction,
    )

    spaces = make_spaces(tmp_path, [ChromaProvider(HashingEmbedder(64), path=tmp_path / "ch")])
    try:
        spaces.create_space("Vectors", provider_id="chroma", space_id="vectors")
        spaces.remember("Grafana dashboards live in the observability repo.", space_id="vectors")
        name = spaces.get_space("vectors").config["collection"]
    finally:
        spaces.close()
    client = chromadb.PersistentClient(
        path=str(tmp_path / "ch"), settings=Settings(anonymized_telemetry=False)
    )
    collection = client.get_collection(name)
    function = collection.configuration["embedding_function"]
    assert isinstance(function, MnemonEmbeddingFunction)
    assert function.name() == "mnemon"
    assert function.get_config() == {"kind": "hashing", "model_id": "hashing-64", "dim": 64}
    found = collection.query(query_texts=["grafana dashboards"], n_results=1)
    assert found["documents"][0] == ["Grafana dashboards live in the observability repo."]
    with pytest.raises(ValueError, match="cannot be rebuilt"):
        MnemonEmbeddingFunction.build_from_config({"kind": "custom", "model_id": "x"})
