"""Who may use the control plane, from where and how: one ASGI guard, checked before any handler
and before any body is read.

The guard takes every HTTP request whose path *as the router sees it* is under ``/mnemon``:
Starlette strips ``root_path`` before routing (``uvicorn --root-path /x``, a parent app's
``Mount("/x", app)``, LangGraph server's ``http.mount_prefix``), so the guard uses the same
``get_route_path`` the router uses. A request the router would hand to a control-plane route is
never skipped because of a prefix. In order:

1. **Host** (DNS rebinding): the ``Host`` header must name a host this server answers to:
   ``localhost``, a loopback address (``127.0.0.1``, ``[::1]``), the address the connection came
   in on, the ``serve_host`` it was started with, or a name in ``allowed_hosts`` (any port). Else
   403 ``host-not-allowed``, for reads and writes alike.
2. **Origin**: when a browser sends ``Origin``, it must be the server's own origin (same
   scheme://host:port as the request) or one in ``allowed_origins``; ``Origin: null`` is refused.
   A mutation by method (POST/PUT/PATCH/DELETE) with ``Sec-Fetch-Site: cross-site`` is refused
   unless its origin is allowed. Else 403 ``cross-origin``. Clients that send no ``Origin``
   (curl, httpx, the CLI, langgraph_sdk) are not browsers and pass.
3. **Content type**: a POST/PUT/PATCH/DELETE needs ``Content-Type: application/json`` (a
   ``charset=utf-8`` parameter is allowed), else 415. A cross-site page can only send
   text/plain, form or multipart bodies without a CORS preflight, so this holds even where a
   browser omits ``Origin``.
4. **Read rule**: the client address is the socket peer (``scope["client"]``; ``X-Forwarded-For``
   and the like are never read) and must be in ``trusted_hosts`` → else 403. Every request
   passes it, mutations included: a response never hands data to a client that may not read.
5. **Write rule** (mutations): from loopback, or, with ``remote_access="trusted-host"``, from a
   trusted host sending ``Authorization: Bearer <remote_token>`` or the token of a user in
   ``scopes.user_tokens`` (constant-time compare; wrong or missing → 401). Under LangGraph
   server with custom auth on the custom routes (``auth.path`` and
   ``http.enable_custom_route_auth``), LangGraph authenticates the request *after* this guard:
   any other remote mutation passes here marked
   ``scope["state"]["mnemon_write_needs_user"]`` and the handler refuses it unless LangGraph
   authenticated a user (:mod:`._callers`).

Whether the operation itself may run (``write_enabled``, participation switches) is not this
guard's business: the layers ask the kernel, and its refusal becomes 403 with the decision.

Other paths pass untouched: inside LangGraph server this middleware wraps the whole server and
must leave LangGraph's own routes alone.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

# The router's own function (not a copy): the guard must see the path the router matches.
from starlette._utils import get_route_path

from langgraph_mnemon.config import MnemonConfig, host_name, normalize_origin
from langgraph_mnemon.contracts import LOCAL
from langgraph_mnemon.errors import AuthorityError, InvalidInputError

PREFIX = "/mnemon"
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""Methods that may change state: they need a JSON content type and a same-site caller."""

Scope = dict[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class Unauthorized(AuthorityError):
    """A remote mutation without the right bearer token (HTTP 401)."""

    code = "unauthorized"


class HostNotAllowed(AuthorityError):
    """The ``Host`` header names a host this server does not answer to (HTTP 403)."""

    code = "host-not-allowed"


class CrossOrigin(AuthorityError):
    """A browser request from another web origin (HTTP 403)."""

    code = "cross-origin"


class UnsupportedMediaType(InvalidInputError):
    """A request that may change state without a JSON body type (HTTP 415)."""

    code = "unsupported-media-type"


def route_path(scope: Scope) -> str:
    """The path the router matches: ``scope["path"]`` without the ``root_path`` prefix."""
    return get_route_path(scope)


def _address(text: str) -> Address | None:
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def client_address(scope: Scope) -> Address | None:
    """The socket peer of the request (IPv4-mapped IPv6 unwrapped), or None if unknown."""
    client = scope.get("client")
    return _address(str(client[0])) if client else None


def _trusted(address: Address, networks: list[str]) -> bool:
    for item in networks:
        network = ipaddress.ip_network(item, strict=False)
        if address.version == network.version and address in network:
            return True
    return False


def _header(scope: Scope, name: bytes, error: type[AuthorityError] = CrossOrigin) -> str | None:
    """The one value of header ``name``; two different values are refused as ambiguous."""
    values = {v.decode("latin-1").strip() for k, v in scope.get("headers", ()) if k.lower() == name}
    if len(values) > 1:
        raise error(f"the request carries several different {name.decode()} headers")
    return values.pop() if values else None


# --- 1. Host ----------------------------------------------------------------------------------


def _host_of(value: str) -> str | None:
    try:
        parts = urlsplit(f"//{value}")
        parts.port  # noqa: B018 - raises ValueError for a bad port
        if not parts.hostname or parts.username is not None or parts.path or parts.query:
            return None
        return host_name(parts.hostname)
    except ValueError:
        return None


def _answers_to(name: str, scope: Scope, config: MnemonConfig) -> bool:
    if name == "localhost" or name in config.allowed_hosts:
        return True
    served = config.serve_host
    address = _address(name)
    if address is None:
        return served is not None and name == served
    server = scope.get("server")
    served_address = _address(served) if served else None
    return (
        address.is_loopback
        or (bool(server) and _address(str(server[0])) == address)  # the address dialled
        or address == served_address
        # Started on 0.0.0.0 / ::, the server answers on every address it has. An IP literal
        # cannot be a rebinding name: a page can only send it from that very origin.
        or (served_address is not None and served_address.is_unspecified)
    )


def check_host(scope: Scope, config: MnemonConfig) -> None:
    """Raise :class:`HostNotAllowed` unless the ``Host`` header names this server."""
    value = _header(scope, b"host", HostNotAllowed)
    if value is None:
        return  # only HTTP/1.0 clients omit Host, and no browser does: nothing to rebind
    name = _host_of(value)
    if name is not None and _answers_to(name, scope, config):
        return
    raise HostNotAllowed(
        f"this server does not answer to the Host {value!r} (a page on a rebound DNS name?); "
        "if clients reach the control plane under that name, add it to MNEMON_ALLOWED_HOSTS"
    )


# --- 2. Origin and Sec-Fetch-Site ---------------------------------------------------------------


def _own_origin(scope: Scope) -> str | None:
    host = _header(scope, b"host")
    if host is None:
        return None
    try:
        return normalize_origin(f"{scope.get('scheme', 'http')}://{host}")
    except ValueError:
        return None


def check_origin(scope: Scope, config: MnemonConfig) -> None:
    """Raise :class:`CrossOrigin` for a browser request from a foreign web origin."""
    origin = _header(scope, b"origin")
    allowed = False
    if origin is not None:
        if origin.lower() == "null":
            raise CrossOrigin(
                "requests from an opaque origin (Origin: null: a sandboxed frame, a file:// "
                "page or a cross-site redirect) are refused; open the control plane's own page"
            )
        try:
            key = normalize_origin(origin)
        except ValueError:
            raise CrossOrigin(f"the Origin header {origin!r} is not a web origin") from None
        allowed = key in config.allowed_origins
        if not allowed and key != _own_origin(scope):
            raise CrossOrigin(
                f"requests from the web origin {key} are refused: it is not this server's own "
                "origin; if that page may use the control plane, add it to MNEMON_ALLOWED_ORIGINS"
            )
    if scope.get("method") in BODY_METHODS and not allowed:
        site = _header(scope, b"sec-fetch-site")
        if site is not None and site.lower() == "cross-site":
            raise CrossOrigin(
                "a cross-site browser request may not change anything (Sec-Fetch-Site: "
                "cross-site); use the control plane's own page or a non-browser client"
            )


# --- 3. Content type ----------------------------------------------------------------------------


def _is_json(value: str) -> bool:
    media, *params = value.split(";")
    if media.strip().lower() != "application/json":
        return False
    for param in params:
        name, _, arg = param.strip().partition("=")
        if param.strip() and (name.strip().lower(), arg.strip().strip('"').lower()) != (
            "charset",
            "utf-8",
        ):
            return False
    return True


def check_content_type(scope: Scope) -> None:
    """Raise :class:`UnsupportedMediaType` unless a POST/PUT/PATCH/DELETE declares JSON."""
    if scope.get("method") not in BODY_METHODS:
        return
    value = _header(scope, b"content-type")
    if value is None or not _is_json(value):
        got = f"Content-Type {value!r}" if value is not None else "no Content-Type"
        raise UnsupportedMediaType(
            f"{scope.get('method')} requests need the header 'Content-Type: application/json' "
            f"(got {got}); send the body as JSON, or {{}} when there is nothing to send"
        )


# --- 4. and 5. Read and write rules -----------------------------------------------------------


def bearer_token(scope: Scope) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, if the request sends one."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else None
    return None


def _same(token: str, expected: str) -> bool:
    return bool(expected) and hmac.compare_digest(token.encode(), expected.encode())


def token_user(token: str | None, config: MnemonConfig) -> str | None:
    """The user a bearer token stands for: ``local`` for ``remote_token``, the user id of a
    ``scopes.user_tokens`` token, else None (every token is compared, in constant time)."""
    if not token:
        return None
    found: str | None = None
    if config.remote_token is not None and _same(token, config.remote_token.get_secret_value()):
        found = LOCAL
    for user, secret in config.scopes.user_tokens.items():
        if _same(token, secret.get_secret_value()) and found is None:
            found = user
    return found


def langgraph_route_auth(env: dict[str, str] | None = None) -> bool:
    """Whether LangGraph server authenticates the custom routes: custom auth
    (``LANGGRAPH_AUTH``) and ``http.enable_custom_route_auth`` (``LANGGRAPH_HTTP``)."""
    env = dict(os.environ) if env is None else env
    if not langgraph_auth(env):
        return False
    try:
        http = json.loads(env.get("LANGGRAPH_HTTP") or "null")
    except ValueError:
        return False
    return isinstance(http, dict) and bool(http.get("enable_custom_route_auth"))


def langgraph_auth(env: dict[str, str] | None = None) -> bool:
    """Whether LangGraph server runs with custom auth (``auth.path`` in ``langgraph.json``)."""
    value = (os.environ if env is None else env).get("LANGGRAPH_AUTH", "").strip()
    return value not in ("", "null", "{}")


def authenticated_identity(scope: Scope) -> str | None:
    """The identity LangGraph's auth middleware put on the request (``scope["user"]``)."""
    user = scope.get("user")
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    try:
        identity = getattr(user, "identity", None)
    except NotImplementedError:  # a plain Starlette user: its display name is its id
        identity = None
    identity = identity or getattr(user, "display_name", None)
    # Not trimmed: an authenticated request whose identity is whitespace is refused by the
    # caller's check (resolve_caller), never treated as unauthenticated.
    return identity if isinstance(identity, str) and identity else None


def _check_write(scope: Scope, config: MnemonConfig, address: Address | None) -> None:
    where = str(address) if address is not None else "an unknown address"
    if address is None or not address.is_loopback:
        if config.remote_access != "trusted-host":
            raise AuthorityError(
                f"changes come from loopback only (remote_access=read-only); {where} may only read"
            )
        if token_user(bearer_token(scope), config) is not None:
            return
        if authenticated_identity(scope) is not None:
            return  # LangGraph authenticated the caller already (auth before this guard)
        if langgraph_route_auth():
            # LangGraph authenticates the custom routes after this guard: the handler checks.
            scope.setdefault("state", {})["mnemon_write_needs_user"] = True
            return
        raise Unauthorized(
            "remote changes need the header 'Authorization: Bearer <remote_token>' with "
            "the configured token (or a user's token from scopes.user_tokens)"
        )


def check(scope: Scope, config: MnemonConfig, *, mutates: bool) -> None:
    """Apply every rule of the guard to the request in ``scope`` (see the module docstring).

    Raises :class:`HostNotAllowed`, :class:`CrossOrigin`, :class:`UnsupportedMediaType`,
    :class:`AuthorityError` or :class:`Unauthorized`.
    """
    check_host(scope, config)
    check_origin(scope, config)
    check_content_type(scope)
    address = client_address(scope)
    if address is None or not _trusted(address, config.trusted_hosts):
        where = str(address) if address is not None else "an unknown address"
        raise AuthorityError(
            f"the control plane serves trusted_hosts only; {where} is not in MNEMON_TRUSTED_HOSTS"
        )
    if mutates:
        _check_write(scope, config, address)


class AuthorityMiddleware:
    """ASGI middleware applying :func:`check` to every ``/mnemon`` request (by route path).

    ``config`` resolves the host's live configuration (awaited once per request);
    ``is_mutation(method, path)`` classifies the request by its route path; ``reject(scope,
    receive, send, error)`` sends the error response.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        config: Callable[[], Awaitable[MnemonConfig]],
        is_mutation: Callable[[str, str], bool],
        reject: Callable[[Scope, Any, Any, Exception], Awaitable[None]],
    ) -> None:
        self.app = app
        self._config = config
        self._is_mutation = is_mutation
        self._reject = reject

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = route_path(scope)
        if not (path == PREFIX or path.startswith(PREFIX + "/")):
            await self.app(scope, receive, send)
            return
        try:
            config = await self._config()
            check(scope, config, mutates=self._is_mutation(scope["method"], path))
        except Exception as exc:  # refused, or the host could not be opened
            await self._reject(scope, receive, send, exc)
            return
        await self.app(scope, receive, send)
