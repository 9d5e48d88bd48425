"""The reference server of the ``mnemon-memory/1`` contract (docs/http-provider.md).

A Starlette app over one SQLite file (stdlib ``sqlite3``): namespaces, a bearer-token check,
keyword scoring (the fraction of query terms a row contains) blended with cosine similarity
when an embedder is given, every score in 0..1, and ``Idempotency-Key`` replay for every write
(the write and its replay record commit in one transaction, so a retried request never stores
twice). It is our contract's reference, used by the HTTP provider's tests and by
``bench/providers.py``; it is not an imitation of any other service.

Example:
    >>> with serve(tmp_path / "memory.db", token="s3cr3t") as url:
    ...     provider = HttpProvider()   # space config {"endpoint": url}, secrets {"api_key": ...}
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp

from langgraph_mnemon.adapters.providers.text import analyze

__all__ = ["CONTRACT", "MemoryStore", "ServiceError", "create_app", "serve", "serve_app"]

CONTRACT = "mnemon-memory/1"
MODES = ("smart", "keyword", "basic")
CATEGORIES = ("preference", "decision", "fact", "insight", "context", "general")
SOURCES = ("user", "agent", "external")
EDGES = ("temporal", "semantic", "causal", "entity")
_NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
MAX_BODY = 8 * 1024 * 1024
MAX_CONTENT = 64 * 1024
MAX_ITEMS = 100
SCAN = 20_000  # rows scored per search, newest first
SEMANTIC_FLOOR = 0.2  # a row with no query term needs at least this cosine to be a hit

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL, id TEXT NOT NULL, content TEXT NOT NULL,
    category TEXT NOT NULL, importance INTEGER NOT NULL, tags TEXT NOT NULL,
    entities TEXT NOT NULL, source TEXT NOT NULL, metadata TEXT NOT NULL,
    terms TEXT NOT NULL, vector BLOB, created_at REAL NOT NULL,
    UNIQUE (namespace, id)
);
CREATE TABLE IF NOT EXISTS links (
    namespace TEXT NOT NULL, source_id TEXT NOT NULL, target_id TEXT NOT NULL,
    type TEXT NOT NULL, weight REAL NOT NULL, reason TEXT,
    PRIMARY KEY (namespace, source_id, target_id, type)
);
CREATE TABLE IF NOT EXISTS replays (
    namespace TEXT NOT NULL, key TEXT NOT NULL, digest TEXT NOT NULL,
    status INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (namespace, key)
);
"""


class ServiceError(Exception):
    """An error answer: HTTP ``status`` with ``{"error": {"code", "message"}}``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _invalid(message: str) -> ServiceError:
    return ServiceError(400, "invalid-input", message)


# ---------------------------------------------------------------------------- request checks


def _namespace(value: Any) -> str:
    if not isinstance(value, str) or not _NAMESPACE.match(value):
        raise _invalid("namespace must be 1-128 of A-Z a-z 0-9 . _ : - starting alnum")
    return value


def _int(value: Any, name: str, low: int, high: int, default: int | None = None) -> int:
    if value is None and default is not None:
        return default
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _invalid(f"{name} must be an integer between {low} and {high}")
    return value


def _choice(value: Any, name: str, allowed: Sequence[str], optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    if value not in allowed:
        raise _invalid(f"{name} must be one of {', '.join(allowed)}")
    return str(value)


def _text(value: Any, name: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > limit or "\x00" in value:
        raise _invalid(f"{name} must be a non-empty string of at most {limit} characters")
    return value


def _strings(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > 64:
        raise _invalid(f"{name} must be a list of at most 64 strings")
    return [_text(v, name, 256) for v in value]


def _metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > 64:
        raise _invalid("metadata must be an object of at most 64 entries")
    for key, item in value.items():
        _text(key, "a metadata key", 128)
        ok = isinstance(item, (str, bool, int)) or (isinstance(item, float) and math.isfinite(item))
        if not ok:
            raise _invalid("metadata values must be strings, numbers or booleans")
    return dict(value)


def _item(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _invalid("every item must be an object")
    return {
        "content": _text(raw.get("content"), "content", MAX_CONTENT),
        "category": _choice(raw.get("category"), "category", CATEGORIES) or "general",
        "importance": _int(raw.get("importance"), "importance", 1, 5, default=3),
        "tags": _strings(raw.get("tags"), "tags"),
        "entities": _strings(raw.get("entities"), "entities"),
        "source": _choice(raw.get("source"), "source", SOURCES) or "agent",
        "metadata": _metadata(raw.get("metadata")),
    }


# ---------------------------------------------------------------------------- the store


class MemoryStore:
    """Memories, links and write replays of every namespace in one SQLite file.

    Args:
        path: The database file (created with its folder).
        embedder: Optional object with ``embed_documents`` / ``embed_query`` returning
            L2-normalised vectors; without one, ranking is by keywords alone.
    """

    def __init__(self, path: str | Path, embedder: Any = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.embedder = embedder
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.row_factory = sqlite3.Row
        return db

    # -- reads

    def status(self, namespace: str) -> dict[str, Any]:
        with self._connect() as db:
            (total,) = db.execute(
                "SELECT count(*) FROM memories WHERE namespace = ?", (namespace,)
            ).fetchone()
        # Deletes are hard: a forgotten row is gone, so nothing is ever counted as deleted.
        return {"contract": CONTRACT, "healthy": True, "total": total, "deleted": 0}

    def browse(
        self, namespace: str, limit: int, offset: int, category: str | None
    ) -> list[dict[str, Any]]:
        sql, args = "SELECT * FROM memories WHERE namespace = ?", [namespace]
        if category:
            sql, args = sql + " AND category = ?", [*args, category]
        sql += " ORDER BY seq DESC LIMIT ? OFFSET ?"
        with self._connect() as db:
            rows = db.execute(sql, (*args, limit, offset)).fetchall()
        return [_memory(r) for r in rows]

    def search(self, namespace: str, request: dict[str, Any]) -> dict[str, Any]:
        terms = set(analyze(request["query"]))
        use_vectors = self.embedder is not None and request["mode"] != "keyword"
        if not terms and not use_vectors:
            return {"results": [], "hint": "the query has no searchable words"}
        sql, args = "SELECT * FROM memories WHERE namespace = ?", [namespace]
        for name in ("category", "source"):
            if request[name]:
                sql, args = f"{sql} AND {name} = ?", [*args, request[name]]
        with self._connect() as db:
            rows = db.execute(f"{sql} ORDER BY seq DESC LIMIT {SCAN}", args).fetchall()
        query_vec = _vector(self.embedder.embed_query(request["query"])) if use_vectors else None
        scored = []
        for row in rows:
            score = _score(row, terms, query_vec, request["mode"])
            if score is not None:
                scored.append((score, row["seq"], row))
        scored.sort(key=lambda s: (-s[0], -s[1]))
        results = [{**_memory(r), "score": round(s, 6)} for s, _, r in scored[: request["limit"]]]
        return {"results": results, "hint": None}

    def related(self, namespace: str, request: dict[str, Any]) -> dict[str, Any]:
        with self._connect() as db:
            self._require(db, namespace, request["id"])
            edges = db.execute(
                "SELECT source_id, target_id, type FROM links WHERE namespace = ?", (namespace,)
            ).fetchall()
            found = _walk(edges, request["id"], request["depth"], request["edge"])
            results = []
            for rid, (depth, edge) in list(found.items())[: request["limit"]]:
                row = db.execute(
                    "SELECT * FROM memories WHERE namespace = ? AND id = ?", (namespace, rid)
                ).fetchone()
                if row is not None:
                    results.append({**_memory(row), "depth": depth, "edge_type": edge})
        return {"results": results}

    # -- writes (each inside one transaction with its replay record)

    def write(
        self, namespace: str, key: str | None, digest: str, action: Callable[..., Any]
    ) -> tuple[int, dict[str, Any]]:
        """Run ``action(db)`` once per idempotency key; a repeat replays the first answer."""
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            if key is not None:
                seen = db.execute(
                    "SELECT digest, status, body FROM replays WHERE namespace = ? AND key = ?",
                    (namespace, key),
                ).fetchone()
                if seen is not None:
                    db.execute("ROLLBACK")
                    if seen["digest"] != digest:
                        raise ServiceError(
                            422,
                            "idempotency-conflict",
                            "this Idempotency-Key was used for a different request; send a new key",
                        )
                    return seen["status"], json.loads(seen["body"])
            status, body = action(db)
            if key is not None:
                db.execute(
                    "INSERT INTO replays VALUES (?, ?, ?, ?, ?)",
                    (namespace, key, digest, status, json.dumps(body)),
                )
            db.execute("COMMIT")
            return status, body
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()

    def remember_action(self, namespace: str, items: list[dict[str, Any]]) -> Callable[..., Any]:
        vectors: list[Any] = [None] * len(items)
        if self.embedder is not None:
            embedded = self.embedder.embed_documents([i["content"] for i in items])
            vectors = [_vector(v).tobytes() for v in embedded]

        def action(db: sqlite3.Connection) -> tuple[int, dict[str, Any]]:
            receipts, now = [], time.time()
            for item, vector in zip(items, vectors, strict=True):
                rid = uuid.uuid4().hex
                words = " ".join([item["content"], *item["tags"], *item["entities"]])
                db.execute(
                    "INSERT INTO memories (namespace, id, content, category, importance, tags,"
                    " entities, source, metadata, terms, vector, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        namespace, rid, item["content"], item["category"], item["importance"],
                        json.dumps(item["tags"]), json.dumps(item["entities"]), item["source"],
                        json.dumps(item["metadata"]), json.dumps(sorted(set(analyze(words)))),
                        vector, now,
                    ),
                )  # fmt: skip
                receipts.append({"id": rid, "status": "stored"})
            return 200, {"receipts": receipts}

        return action

    def forget_action(self, namespace: str, rid: str) -> Callable[..., Any]:
        def action(db: sqlite3.Connection) -> tuple[int, dict[str, Any]]:
            self._require(db, namespace, rid)
            db.execute("DELETE FROM memories WHERE namespace = ? AND id = ?", (namespace, rid))
            db.execute(
                "DELETE FROM links WHERE namespace = ? AND (source_id = ? OR target_id = ?)",
                (namespace, rid, rid),
            )
            return 200, {"id": rid, "status": "deleted"}

        return action

    def link_action(self, namespace: str, link: dict[str, Any]) -> Callable[..., Any]:
        def action(db: sqlite3.Connection) -> tuple[int, dict[str, Any]]:
            for rid in (link["source_id"], link["target_id"]):
                self._require(db, namespace, rid)
            db.execute(
                "INSERT OR REPLACE INTO links VALUES (?, ?, ?, ?, ?, ?)",
                (namespace, link["source_id"], link["target_id"], link["type"], link["weight"],
                 link["reason"]),
            )  # fmt: skip
            return 200, {
                "status": "linked",
                "source_id": link["source_id"],
                "target_id": link["target_id"],
                "type": link["type"],
            }

        return action

    @staticmethod
    def _require(db: sqlite3.Connection, namespace: str, rid: str) -> None:
        found = db.execute(
            "SELECT 1 FROM memories WHERE namespace = ? AND id = ?", (namespace, rid)
        ).fetchone()
        if found is None:
            raise ServiceError(404, "not-found", f"no memory {rid[:80]!r} in this namespace")


def _vector(values: Any) -> Any:
    import numpy as np

    vec = np.asarray(values, dtype=np.float32)
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm else vec


def _score(row: sqlite3.Row, terms: set[str], query_vec: Any, mode: str) -> float | None:
    """The row's score in 0..1 for ``mode``, or ``None`` when it is not a hit."""
    import numpy as np

    keyword = len(terms & set(json.loads(row["terms"]))) / len(terms) if terms else 0.0
    if mode == "keyword" or query_vec is None or row["vector"] is None:
        return keyword if keyword > 0 else None
    vec = np.frombuffer(row["vector"], dtype=np.float32)
    cosine = max(0.0, min(1.0, float(vec @ query_vec))) if vec.shape == query_vec.shape else 0.0
    if keyword == 0 and cosine < SEMANTIC_FLOOR:
        return None
    return cosine if mode == "basic" else 0.6 * keyword + 0.4 * cosine


def _walk(
    edges: Sequence[sqlite3.Row], start: str, depth: int, edge: str | None
) -> dict[str, tuple[int, str]]:
    """Ids reachable from ``start`` (either direction) within ``depth``: ``id -> (depth, type)``."""
    neighbours: dict[str, list[tuple[str, str]]] = {}
    for src, dst, kind in edges:
        if edge is None or kind == edge:
            neighbours.setdefault(src, []).append((dst, kind))
            neighbours.setdefault(dst, []).append((src, kind))
    found: dict[str, tuple[int, str]] = {}
    frontier, seen = [start], {start}
    for level in range(1, depth + 1):
        nxt = []
        for rid in frontier:
            for other, kind in neighbours.get(rid, []):
                if other not in seen:
                    seen.add(other)
                    found[other] = (level, kind)
                    nxt.append(other)
        frontier = nxt
    return found


def _memory(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "content": row["content"],
        "category": row["category"],
        "importance": row["importance"],
        "tags": json.loads(row["tags"]),
        "entities": json.loads(row["entities"]),
        "source": row["source"],
        "metadata": json.loads(row["metadata"]),
        "score": None,
        "created_at": row["created_at"],
    }


# ---------------------------------------------------------------------------- the app


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def _json_body(request: Request) -> dict[str, Any]:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise ServiceError(413, "too-large", f"request bodies are limited to {MAX_BODY} bytes")
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > MAX_BODY:
            raise ServiceError(413, "too-large", f"request bodies are limited to {MAX_BODY} bytes")
    try:
        body = json.loads(data)
    except ValueError:
        raise _invalid("the body must be a JSON object") from None
    if not isinstance(body, dict):
        raise _invalid("the body must be a JSON object")
    return body


def create_app(path: str | Path, token: str | None = None, *, embedder: Any = None) -> Starlette:
    """The reference service over the SQLite file ``path``.

    Args:
        path: The database file.
        token: The bearer key every request must carry (``None``: no check).
        embedder: Optional embedder for semantic scoring (see :class:`MemoryStore`).

    Returns:
        A Starlette app serving the contract at its root.
    """
    store = MemoryStore(path, embedder)

    def guarded(handler: Callable[..., Any]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            if token is not None:
                sent = request.headers.get("authorization", "")
                if not hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
                    return _error(401, "unauthorized", "send Authorization: Bearer <key>")
            try:
                status, body = await handler(request)
            except ServiceError as exc:
                return _error(exc.status, exc.code, exc.message)
            return JSONResponse(body, status_code=status)

        return endpoint

    async def status(request: Request) -> tuple[int, dict[str, Any]]:
        namespace = _namespace(request.query_params.get("namespace"))
        return 200, await run_in_threadpool(store.status, namespace)

    async def search(request: Request) -> tuple[int, dict[str, Any]]:
        body = await _json_body(request)
        checked = {
            "query": _text(body.get("query"), "query", 4000),
            "mode": _choice(body.get("mode"), "mode", MODES) or "smart",
            "limit": _int(body.get("limit"), "limit", 1, 50, default=10),
            "category": _choice(body.get("category"), "category", CATEGORIES),
            "source": _choice(body.get("source"), "source", SOURCES),
        }
        return 200, await run_in_threadpool(
            store.search, _namespace(body.get("namespace")), checked
        )

    async def memories(request: Request) -> tuple[int, dict[str, Any]]:
        if request.method == "GET":
            params = request.query_params
            rows = await run_in_threadpool(
                store.browse,
                _namespace(params.get("namespace")),
                _int(params.get("limit"), "limit", 1, 500, default=50),
                _int(params.get("offset"), "offset", 0, 10**9, default=0),
                _choice(params.get("category"), "category", CATEGORIES),
            )
            return 200, {"results": rows}
        raw = await _json_body(request)
        items = raw.get("items")
        if not isinstance(items, list) or not 1 <= len(items) <= MAX_ITEMS:
            raise _invalid(f"items must be a list of 1 to {MAX_ITEMS} memories")
        namespace, checked = _namespace(raw.get("namespace")), [_item(i) for i in items]
        action = await run_in_threadpool(store.remember_action, namespace, checked)
        return await _write(request, namespace, raw, action)

    async def forget(request: Request) -> tuple[int, dict[str, Any]]:
        namespace = _namespace(request.query_params.get("namespace"))
        rid = request.path_params["id"]
        action = store.forget_action(namespace, rid)
        return await _write(request, namespace, {"delete": rid}, action)

    async def related(request: Request) -> tuple[int, dict[str, Any]]:
        body = await _json_body(request)
        checked = {
            "id": _text(body.get("id"), "id", 512),
            "depth": _int(body.get("depth"), "depth", 1, 5, default=2),
            "edge": _choice(body.get("edge"), "edge", EDGES),
            "limit": _int(body.get("limit"), "limit", 1, 100, default=20),
        }
        namespace = _namespace(body.get("namespace"))
        return 200, await run_in_threadpool(store.related, namespace, checked)

    async def links(request: Request) -> tuple[int, dict[str, Any]]:
        body = await _json_body(request)
        weight = body.get("weight", 0.5)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight <= 1:
            raise _invalid("weight must be a number between 0 and 1")
        link = {
            "source_id": _text(body.get("source_id"), "source_id", 512),
            "target_id": _text(body.get("target_id"), "target_id", 512),
            "type": _choice(body.get("type"), "type", EDGES) or "semantic",
            "weight": float(weight),
            "reason": body.get("reason") if isinstance(body.get("reason"), str) else None,
        }
        namespace = _namespace(body.get("namespace"))
        return await _write(request, namespace, body, store.link_action(namespace, link))

    async def _write(
        request: Request, namespace: str, payload: Any, action: Callable[..., Any]
    ) -> tuple[int, dict[str, Any]]:
        key = request.headers.get("idempotency-key")
        if key is not None and not 1 <= len(key) <= 255:
            raise _invalid("Idempotency-Key must be 1-255 characters")
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        return await run_in_threadpool(store.write, namespace, key, digest, action)

    routes = [
        Route("/status", guarded(status), methods=["GET"]),
        Route("/search", guarded(search), methods=["POST"]),
        Route("/memories", guarded(memories), methods=["GET", "POST"]),
        Route("/memories/{id:path}", guarded(forget), methods=["DELETE"]),
        Route("/related", guarded(related), methods=["POST"]),
        Route("/links", guarded(links), methods=["POST"]),
    ]
    app = Starlette(routes=routes)
    app.state.store = store
    return app


# ---------------------------------------------------------------------------- serving


@contextmanager
def serve_app(app: ASGIApp) -> Iterator[str]:
    """Run ``app`` with uvicorn on a free loopback port in a thread; yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=2
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"memory-service-{port}", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError(f"the memory service on port {port} did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()


@contextmanager
def serve(
    path: str | Path, token: str | None = None, *, embedder: Any = None, prefix: str = ""
) -> Iterator[str]:
    """Serve the reference service over ``path``; yields the endpoint URL (with ``prefix``).

    Args:
        path: The SQLite file.
        token: The bearer key to require (``None``: no check).
        embedder: Optional embedder for semantic scoring.
        prefix: A base path to mount the contract under (e.g. ``"/memory/v1"``).
    """
    app: ASGIApp = create_app(path, token, embedder=embedder)
    if prefix:
        app = Starlette(routes=[Mount(prefix, app=app)])
    with serve_app(app) as url:
        yield url + prefix
