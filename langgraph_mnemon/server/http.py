"""The control-plane HTTP API and web page, as a Starlette app (everything under ``/mnemon``).

``langgraph.json`` names the module-level :data:`app` (``"http": {"app":
"./langgraph_mnemon/server/http.py:app"}``); standalone: ``uvicorn
langgraph_mnemon.server.http:app --no-proxy-headers``. Routes, bodies and status codes follow
the API contract; ``GET /mnemon/openapi.json`` describes them, generated from the route table.

Every request first passes the guard of :mod:`._authority` (Host, Origin, JSON content type,
who may read and change; on the path the router sees, under any root path or prefix), then
runs in the caller's scope (:mod:`._callers`: the LangGraph-authenticated user, a user token,
or the local user; the ``project`` parameter): its handler works on ``host.scoped(scope)``, so
an id of another scope is 404 like an unknown one. Every
handler runs on a worker thread, so no endpoint blocks the event loop (LangGraph server runs
``blockbuster``). Errors are JSON ``{"error": code, "message": text}``: a full disk is 507,
any other storage error (and an ``OSError`` a layer did not type) 503; only an unexpected
exception is logged and answered with 500 ``internal``, without a traceback. A refusal by the
kernel (``write_enabled=false``, a layer disabled, a channel ``off`` or ``manual``) is 403 and
adds ``"decision"``: layer, channel, trigger, mode and the setting (with its environment
variable) that would allow it. Every control-plane request is an *explicit* trigger (a person
or an application asked), so ``manual`` channels admit it.

Example:
    >>> from langgraph_mnemon import Mnemon
    >>> from langgraph_mnemon.server.http import create_app
    >>> app = create_app(Mnemon.open("./.mnemon"))   # then: uvicorn.run(app, port=8765)
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from pydantic import BaseModel, ValidationError
from pydantic_core import to_json
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route, compile_path
from starlette.schemas import SchemaGenerator
from starlette.staticfiles import StaticFiles

from langgraph_mnemon import __version__
from langgraph_mnemon.contracts import Receipt
from langgraph_mnemon.errors import (
    AmbiguousMatchError,
    AuthorityError,
    CapacityError,
    ConflictError,
    InvalidInputError,
    MnemonError,
    NoMatchError,
    NotFoundError,
    ParticipationError,
    ProviderError,
    ReadOnlyError,
    StorageError,
)
from langgraph_mnemon.memory_layers.spaces import SpaceReceipt

from ._api import ENDPOINTS, Endpoint
from ._authority import (
    PREFIX,
    READ_METHODS,
    AuthorityMiddleware,
    Unauthorized,
    UnsupportedMediaType,
)
from ._callers import PROJECT_PARAMETER, resolve_caller
from ._openapi import docstring, operation

if TYPE_CHECKING:
    from langgraph_mnemon.config import MnemonConfig
    from langgraph_mnemon.contracts import Scope
    from langgraph_mnemon.host import Mnemon

__all__ = ["WEB_DIR", "app", "body_limit", "create_app", "error_response"]

logger = logging.getLogger(__name__)

WEB_DIR = Path(__file__).parent / "web"
"""The web page folder (``index.html``, ``app.js``, ``app.css``) served at ``/mnemon/``."""

_STATUS: tuple[tuple[type[MnemonError] | tuple[type[MnemonError], ...], int], ...] = (
    (Unauthorized, 401),
    # The kernel's refusals (write_enabled, participation): the body carries its decision.
    ((AuthorityError, ReadOnlyError, ParticipationError), 403),
    (UnsupportedMediaType, 415),
    (InvalidInputError, 422),
    (NotFoundError, 404),
    ((ConflictError, NoMatchError, AmbiguousMatchError, CapacityError), 409),
    (ProviderError, 502),
    (StorageError, 503),
)
_HTTP_CODES = {
    404: "not-found",
    405: "method-not-allowed",
    401: "unauthorized",
    413: "too-large",
}


def body_limit(config: MnemonConfig) -> int:
    """The largest request body the control plane reads: room for the largest Document body
    (``documents.body_limit_bytes``) even when JSON escaping doubles it."""
    return 2 * config.documents.body_limit_bytes + 64 * 1024


_ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
_JSON = "application/json"
_JSON_OBJECT = {_JSON: {"schema": {"type": "object"}}}


def error_response(exc: BaseException) -> Response:
    """The JSON response for ``exc``: typed errors by class (a full disk 507, other storage
    errors and stray ``OSError`` 503), anything else 500 (logged)."""
    headers: dict[str, str] = {}
    if isinstance(exc, OSError):  # an I/O error a layer did not type: still a storage error
        exc = _storage_error(exc)
    if isinstance(exc, MnemonError):
        status = next((code for kind, code in _STATUS if isinstance(exc, kind)), 500)
        if isinstance(exc, StorageError) and exc.code == "storage-full":
            status = 507
        body = exc.to_dict()  # {"error", "message"} and, for a kernel refusal, "decision"
        if status == 401:
            headers["WWW-Authenticate"] = 'Bearer realm="mnemon"'
    elif isinstance(exc, ValidationError):  # a layer model refused a value
        status, body = 422, {"error": "invalid-input", "message": _explain(exc)}
    elif isinstance(exc, HTTPException):
        status = exc.status_code
        body = {"error": _HTTP_CODES.get(status, "http-error"), "message": exc.detail}
        headers.update(exc.headers or {})
    else:
        logger.error("control plane: unexpected error", exc_info=exc)
        status = 500
        body = {
            "error": "internal",
            "message": f"internal error ({type(exc).__name__}); details are in the server log",
        }
    return Response(to_json(body), status_code=status, headers=headers, media_type=_JSON)


def _storage_error(exc: OSError) -> StorageError:
    logger.error("control plane: an I/O error reached the HTTP layer", exc_info=exc)
    typed = StorageError.from_os_error(exc, "complete the request")
    reason = exc.strerror or type(exc).__name__
    return StorageError(
        f"the storage refused the request ({reason}); check the disk and the storage root, "
        "then retry. Details are in the server log.",
        code=typed.code,
    )


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"])
        reason = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            reason = "is not a known field"
        parts.append(f"{loc}: {reason}" if loc else reason)
    return "; ".join(parts)


def _validate(model: type[BaseModel], data: bytes | dict[str, str], where: str) -> BaseModel:
    try:
        if isinstance(data, bytes):
            return model.model_validate_json(data if data.strip() else b"{}")
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidInputError(f"invalid {where}: {_explain(exc)}") from None


# A receipt that did not commit is still the whole answer, but not a 200: clients that only
# look at the status code must not take a failed write for a stored one.
_RECEIPT_STATUS = {"rejected": 409, "failed": 502}


def _ok(result: Any) -> Response:
    outcome = (
        getattr(result, "status", None) if isinstance(result, (Receipt, SpaceReceipt)) else None
    )
    status = _RECEIPT_STATUS.get(outcome, 200)
    return Response(to_json(result), status_code=status, media_type=_JSON)


class _HostRef:
    """The host of an app: given, or ``shared_host()`` opened on the first request."""

    def __init__(self, host: Mnemon | None) -> None:
        self._host = host
        self._lock = threading.Lock()

    def _resolve(self) -> Mnemon:
        with self._lock:
            if self._host is None:
                from ._host import shared_host

                try:
                    self._host = shared_host()
                except Exception as exc:
                    logger.error("control plane: the mnemon host could not be opened", exc_info=exc)
                    raise StorageError(
                        f"the mnemon host could not be opened ({type(exc).__name__}); check the "
                        "MNEMON_* settings and the server log",
                        code="host-unavailable",
                    ) from None
            return self._host

    def known(self) -> Mnemon | None:
        """The host if it is open already (never opens it)."""
        return self._host

    async def get(self) -> Mnemon:
        """The host; opened on a worker thread the first time."""
        if self._host is not None:
            return self._host
        return await anyio.to_thread.run_sync(self._resolve)

    async def config(self) -> MnemonConfig:
        """The host's live configuration."""
        return (await self.get()).config


def _api_route(endpoint: Endpoint, hosts: _HostRef) -> Route:
    async def handle(request: Request) -> Response:
        try:
            kwargs: dict[str, Any] = dict(request.path_params)
            params = dict(request.query_params)
            # Every request runs in one scope; ``project`` picks it, on every endpoint.
            caller = resolve_caller(
                request.scope, await hosts.config(), project=params.pop(PROJECT_PARAMETER, None)
            )
            if endpoint.body is not None:
                limit = body_limit(await hosts.config())
                kwargs["body"] = _validate(endpoint.body, await _read_body(request, limit), "body")
            if endpoint.query is not None:
                kwargs["query"] = _validate(endpoint.query, params, "query")
            elif params:
                raise InvalidInputError(
                    f"this endpoint takes no query parameters (got {', '.join(sorted(params))})"
                )
            if endpoint.caller:
                kwargs["caller"] = caller
            host = await hosts.get()
            # Opening a scope's files may touch the disk: off the event loop, with the handler.
            call = functools.partial(_in_scope, endpoint.handler, host, caller.scope, kwargs)
            result = await anyio.to_thread.run_sync(call)
        except Exception as exc:
            return error_response(exc)
        return _ok(result)

    handle.__name__ = handle.__qualname__ = endpoint.handler.__name__
    known = hosts.known()  # a given host states its own body limit; else the default
    limit = known.config.documents.body_limit_bytes if known is not None else None
    op = operation(endpoint, _tag(endpoint.path), body_limit=limit)
    handle.__doc__ = docstring(endpoint.summary, op)
    return Route(endpoint.path, handle, methods=[endpoint.method])


def _in_scope(
    handler: Callable[..., Any], host: Mnemon, scope: Scope, kwargs: dict[str, Any]
) -> Any:
    return handler(host.scoped(scope), **kwargs)


async def _read_body(request: Request, limit: int) -> bytes:
    # Stop reading at the limit: an oversized upload must not be buffered whole first.
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _too_large(limit)
    return bytes(body)


def _too_large(limit: int) -> HTTPException:
    return HTTPException(
        413,
        f"request body is larger than {limit} bytes; send less (the limit follows "
        "documents.body_limit_bytes)",
    )


def _tag(path: str) -> str:
    part = path.removeprefix(f"{PREFIX}/api/").split("/", 1)[0]
    return part or "status"


WEB_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
"""The Content-Security-Policy of the web page and its files."""


def _web_routes(web_dir: Path) -> list[BaseRoute]:
    files = StaticFiles(directory=web_dir, check_dir=False)

    async def serve(path: str, request: Request) -> Response:
        relative = os.path.normpath(path) if path.strip("/") else ""
        try:
            if not relative or relative.startswith(".."):
                raise HTTPException(404, f"no web file {path!r}")
            response = await files.get_response(relative, request.scope)
        except Exception as exc:
            return error_response(exc)
        # The page loads nothing from elsewhere and runs no inline code: a page that is
        # injected into anyway can neither run script nor send data away.
        response.headers["Content-Security-Policy"] = WEB_CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response  # type: ignore[return-value]

    async def web_page(request: Request) -> Response:
        return await serve("index.html", request)

    async def web_file(request: Request) -> Response:
        return await serve(request.path_params["path"], request)

    web_page.__doc__ = docstring(
        "The control-plane web page.",
        {
            "tags": ["web"],
            "summary": "The control-plane web page (index.html).",
            "responses": {"200": {"description": "HTML", "content": {"text/html": {}}}},
        },
    )
    web_file.__doc__ = docstring(
        "A static asset of the web page.",
        {
            "tags": ["web"],
            "summary": "A static asset of the web page (app.js, app.css, ...).",
            "parameters": [
                {"name": "path", "in": "path", "required": True, "schema": {"type": "string"}}
            ],
            "responses": {
                "200": {"description": "The file"},
                "404": {"description": "No such file"},
            },
        },
    )
    return [
        Route(f"{PREFIX}/", web_page, methods=["GET"]),
        Route(f"{PREFIX}/static/{{path:path}}", web_file, methods=["GET"]),
    ]


def _openapi_route(routes: list[BaseRoute]) -> Route:
    """``GET /mnemon/openapi.json``: the operations of ``routes`` (read from their docstrings)."""
    schema = SchemaGenerator(
        {
            "openapi": "3.1.0",
            "info": {
                "title": "langgraph-mnemon control plane",
                "version": __version__,
                "description": "Runtime Memory, Documents, Memory Spaces, Mnemos task memory "
                "and settings of one langgraph-mnemon host. Reads come from trusted_hosts; "
                "changes from loopback (or trusted hosts with the bearer token). The Host "
                "header must name this server (loopback, the served host or "
                "MNEMON_ALLOWED_HOSTS); a browser Origin must be the server's own (or "
                "MNEMON_ALLOWED_ORIGINS); POST, PUT, PATCH and DELETE need "
                "'Content-Type: application/json', bodiless ones too. Every request runs in "
                "one scope (user, project): the user LangGraph server authenticated, the user "
                "of a bearer token in scopes.user_tokens, else the local user (from loopback "
                "with no authentication configured, the X-Mnemon-User header picks one); the "
                "project is the 'project' query parameter or the X-Mnemon-Project header "
                "(percent-encoded UTF-8), else the local one. Ids of another scope answer 404.",
            },
        }
    )

    async def openapi(request: Request) -> Response:
        return _ok(schema.get_schema(routes=routes))

    openapi.__doc__ = docstring(
        "This OpenAPI document.",
        {
            "tags": ["status"],
            "summary": "The OpenAPI document of the control plane.",
            "responses": {"200": {"description": "OpenAPI 3.1", "content": _JSON_OBJECT}},
        },
    )
    return Route(f"{PREFIX}/openapi.json", openapi, methods=["GET"])


def _fallback_routes(known: list[BaseRoute]) -> list[BaseRoute]:
    """``/mnemon`` → ``/mnemon/``; any other ``/mnemon/...`` → JSON 404 (or 405 with Allow)."""

    async def redirect(request: Request) -> Response:
        return RedirectResponse(request.url.replace(path=request.url.path + "/"))

    async def unknown(request: Request) -> Response:
        path = request.url.path
        allowed = sorted(
            {
                method
                for route in known
                if isinstance(route, Route) and route.path_regex.match(path)
                for method in (route.methods or ())
            }
        )
        if allowed:
            return error_response(
                HTTPException(
                    405,
                    f"{request.method} is not allowed here; use {', '.join(allowed)}",
                    headers={"Allow": ", ".join(allowed)},
                )
            )
        return error_response(HTTPException(404, f"no control-plane endpoint {path}"))

    return [
        Route(PREFIX, redirect, methods=["GET"], include_in_schema=False),
        Route(f"{PREFIX}/{{rest:path}}", unknown, methods=_ALL_METHODS, include_in_schema=False),
    ]


def _classifier() -> Callable[[str, str], bool]:
    """``is_mutation(method, path)`` from the route table (unknown routes: by method)."""
    classified = [(e.method, compile_path(e.path)[0], e.is_mutation) for e in ENDPOINTS]

    def is_mutation(method: str, path: str) -> bool:
        for known, regex, mutates in classified:
            if known == method and regex.match(path):
                return mutates
        return method not in READ_METHODS

    return is_mutation


async def _reject(scope: Any, receive: Any, send: Any, exc: Exception) -> None:
    await error_response(exc)(scope, receive, send)


def create_app(host: Mnemon | None = None, *, web_dir: str | Path | None = None) -> Starlette:
    """The control-plane app for ``host`` (None: ``shared_host()``, opened on first request).

    ``web_dir`` overrides the web page folder (default :data:`WEB_DIR`); it may appear after
    the app is created.
    """
    hosts = _HostRef(host)
    routes: list[BaseRoute] = [_api_route(e, hosts) for e in ENDPOINTS]
    routes += _web_routes(Path(web_dir) if web_dir is not None else WEB_DIR)
    routes.append(_openapi_route(routes))
    routes += _fallback_routes(list(routes))
    authority = Middleware(
        AuthorityMiddleware, config=hosts.config, is_mutation=_classifier(), reject=_reject
    )
    return Starlette(routes=routes, middleware=[authority])


app = create_app()
"""The app ``langgraph.json`` names; it serves ``shared_host()`` (opened on first request)."""
