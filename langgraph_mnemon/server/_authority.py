"""Who may use the control plane from where: one ASGI middleware, checked before any handler.

- The client address is the socket peer the ASGI server reports (``scope["client"]``);
  ``X-Forwarded-For`` and similar headers are never read.
- Reads come from ``trusted_hosts`` networks only (default loopback) → else 403.
- Mutations come from loopback, or, with ``remote_access="trusted-host"``, from a trusted host
  that sends ``Authorization: Bearer <remote_token>`` (constant-time compare; wrong or missing
  token → 401).
- ``write_enabled=false`` refuses every mutation with 403 ``read-only``.

Only paths under ``/mnemon`` are checked: inside LangGraph server this middleware wraps the
whole server and must leave LangGraph's own routes alone.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from typing import Any

from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.errors import AuthorityError, ReadOnlyError

PREFIX = "/mnemon"
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

Scope = dict[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class Unauthorized(AuthorityError):
    """A remote mutation without the right bearer token (HTTP 401)."""

    code = "unauthorized"


def client_address(scope: Scope) -> Address | None:
    """The socket peer of the request (IPv4-mapped IPv6 unwrapped), or None if unknown."""
    client = scope.get("client")
    if not client:
        return None
    try:
        address = ipaddress.ip_address(str(client[0]).split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _trusted(address: Address, networks: list[str]) -> bool:
    for item in networks:
        network = ipaddress.ip_network(item, strict=False)
        if address.version == network.version and address in network:
            return True
    return False


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else None
    return None


def check(scope: Scope, config: MnemonConfig, *, mutates: bool) -> None:
    """Raise :class:`AuthorityError`, :class:`Unauthorized` or :class:`ReadOnlyError` unless
    the request in ``scope`` may proceed under ``config``."""
    address = client_address(scope)
    where = str(address) if address is not None else "an unknown address"
    if not mutates:
        if address is None or not _trusted(address, config.trusted_hosts):
            raise AuthorityError(
                f"reads of the control plane come from trusted_hosts only; {where} is not "
                "in MNEMON_TRUSTED_HOSTS"
            )
        return
    if address is None or not address.is_loopback:
        if config.remote_access != "trusted-host":
            raise AuthorityError(
                f"changes come from loopback only (remote_access=read-only); {where} may only read"
            )
        if not _trusted(address, config.trusted_hosts):
            raise AuthorityError(f"{where} is not in trusted_hosts; it may not change anything")
        expected = config.remote_token.get_secret_value() if config.remote_token else ""
        token = _bearer(scope)
        if (
            not expected
            or token is None
            or not hmac.compare_digest(token.encode(), expected.encode())
        ):
            raise Unauthorized(
                "remote changes need the header 'Authorization: Bearer <remote_token>' with "
                "the configured token"
            )
    if not config.write_enabled:
        raise ReadOnlyError.writes_disabled("anything through the control plane")


class AuthorityMiddleware:
    """ASGI middleware applying :func:`check` to every ``/mnemon`` request.

    ``config`` resolves the host's live configuration (awaited once per request);
    ``is_mutation(method, path)`` classifies the request; ``reject(scope, receive, send,
    error)`` sends the error response.
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
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == PREFIX or path.startswith(PREFIX + "/")):
            await self.app(scope, receive, send)
            return
        try:
            config = await self._config()
            check(scope, config, mutates=self._is_mutation(scope["method"], path))
        except Exception as exc:  # refused, or the host could not be opened
            await self._reject(scope, receive, send, exc)
            return
        await self.app(scope, receive, send)
