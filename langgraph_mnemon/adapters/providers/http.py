"""The ``http`` provider: any memory service that speaks the ``mnemon-memory/1`` JSON contract.

Each Memory Space names a service by its base URL (``config.endpoint``: absolute http or https,
a host, no credentials, query or fragment) and a ``namespace`` on it (default: the space id).
The optional key lives host-side in ``secrets.api_key`` and is sent as
``Authorization: Bearer <key>``; it never appears in config, ``repr``, logs, errors or status.
The contract (endpoints, bodies, errors) is documented in ``docs/http-provider.md``; a
reference server lives in ``tests/support/http_memory_service.py``.

Every call is bounded: a timeout for each attempt as a whole, ``retries`` retries with backoff
on connection failures and 502 / 503 / 504 (writes carry an ``Idempotency-Key``, so a retried
remember never stores twice), no redirects, and answers over ``max_response_bytes`` refused.
Answers are validated; a malformed one is a :class:`ProviderError` with code ``bad-response``.
Status never raises: an unreachable service is ``healthy=False`` with the reason. Error texts
never repeat what the service sent, and a refused connection, a broken answer, a timeout and a
body that is not JSON all read the same (``unreachable``), so a test cannot map a network.

Given ``allowed_hosts`` (the host passes ``http.allowed_hosts``), the provider never connects
to an internal address (loopback, private, link-local, unspecified, multicast) that the list
does not name: :meth:`HttpProvider.check_destination` refuses such an endpoint before a space
is stored or tested, and every connection resolves the host once, checks each address and
connects to a checked one (:mod:`._http_guard`). Without ``allowed_hosts`` (a provider you
build and point yourself) there is no such check.

Example:
    >>> provider = HttpProvider()
    >>> provider.check_config({"endpoint": "https://memory.example.com/api/"}, {})
    {'endpoint': 'https://memory.example.com/api'}
"""

from __future__ import annotations

import math
import threading
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import langgraph_mnemon.adapters.providers._http_wire as wire
from langgraph_mnemon.adapters.providers.base import BaseProvider
from langgraph_mnemon.config import outbound_host
from langgraph_mnemon.contracts import check_text, shown
from langgraph_mnemon.errors import InvalidInputError, ProviderError
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    Capabilities,
    ConfigField,
    LinkRequest,
    MemoryRecord,
    ProviderDescriptor,
    ProviderSearchRequest,
    ProviderSearchResult,
    ProviderStatus,
    RelatedRequest,
    RememberItem,
    SpaceBinding,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["CONTRACT", "HttpProvider"]

CONTRACT = wire.CONTRACT
_BATCH = 100  # items per POST /memories; larger writes are split, one key per request
_KEYS_KEPT = 32

_CONFIG_FIELDS = (
    ConfigField(
        name="endpoint",
        label="Service URL",
        kind="url",
        required=True,
        help=(
            "Base URL of a mnemon-memory/1 service, e.g. https://memory.example.com/api "
            "(no credentials, query or fragment)"
        ),
    ),
    ConfigField(
        name="namespace",
        label="Namespace",
        help="The service's namespace for this space (default: the space id)",
    ),
    ConfigField(
        name="api_key",
        label="API key",
        kind="secret",
        help="Sent as 'Authorization: Bearer <key>'; stored host-side only",
    ),
)


class HttpProvider(BaseProvider):
    """Memory Spaces on remote services that implement the ``mnemon-memory/1`` contract.

    Args:
        provider_id: The provider id spaces name (register several with different ids to
            declare different capabilities).
        label: The human-readable name.
        related: Declare ``related`` (the services behind it serve ``POST /related``).
        link: Declare ``link`` (the services behind it serve ``POST /links``).
        timeout_s: Seconds one attempt of one call may take, end to end (0 < t <= 300).
        retries: Extra attempts after a connect failure or a 502 / 503 / 504 (0-10).
        max_response_bytes: Largest answer body accepted (1 KiB - 256 MiB).
        transport: An ``httpx.BaseTransport`` to send through (default: the network).
        allowed_hosts: Internal hosts it may reach (names, addresses, CIDR networks); with
            a list (even an empty one) every other internal address is refused; ``None``: no
            address check (``transport`` given: the transport decides).

    Raises:
        InvalidInputError: an argument out of range.

    Example:
        >>> provider = HttpProvider(related=True, link=True, timeout_s=5.0)
        >>> provider.descriptor.capabilities.related
        True
    """

    descriptor = ProviderDescriptor(
        id="http",
        label="HTTP memory service",
        capabilities=Capabilities(
            search=True, browse=True, remember=True, remember_many=True, forget=True
        ),
        score_semantics="normalized",
        write_mode="exact",
        deletion_mode="hard",
        local=False,
        secret_fields=("api_key",),
        config_fields=_CONFIG_FIELDS,
    )

    def __init__(
        self,
        *,
        provider_id: str = "http",
        label: str = "HTTP memory service",
        related: bool = False,
        link: bool = False,
        timeout_s: float = 10.0,
        retries: int = 2,
        max_response_bytes: int = 2 * 1024 * 1024,
        transport: httpx.BaseTransport | None = None,
        allowed_hosts: Iterable[str] | None = None,
    ) -> None:
        _check_bounds(timeout_s, retries, max_response_bytes)
        if transport is not None:
            import httpx

            if not isinstance(transport, httpx.BaseTransport):
                raise InvalidInputError(
                    "transport must be an httpx.BaseTransport (the provider is synchronous)"
                )
        caps = type(self).descriptor.capabilities.model_copy(
            update={"related": bool(related), "link": bool(link)}
        )
        try:
            self.descriptor = ProviderDescriptor.model_validate(
                {
                    **type(self).descriptor.model_dump(),
                    "id": provider_id,
                    "label": label,
                    "capabilities": caps.model_dump(),
                }
            )
        except ValueError:
            raise InvalidInputError(
                f"provider_id must be 1-64 lower-case letters, digits or '-' starting with a "
                f"letter, and label a string (got {shown(provider_id)}, {shown(label)})"
            ) from None
        self.timeout_s = float(timeout_s)
        self.retries = retries
        self.max_response_bytes = max_response_bytes
        self._transport = transport
        self.allowed_hosts = None if allowed_hosts is None else _hosts(allowed_hosts)
        self._policy: Any = None  # the AddressPolicy, built with the first client
        self._lock = threading.Lock()
        self._http: Any = None  # the httpx.Client (thread-safe), opened by the first call
        self._keys: dict[str, None] = {}

    def __repr__(self) -> str:
        return (
            f"HttpProvider(id={self.descriptor.id!r}, timeout_s={self.timeout_s:g}, "
            f"retries={self.retries}, max_response_bytes={self.max_response_bytes})"
        )

    # ------------------------------------------------------------------ configuration

    def check_config(self, config: Mapping[str, Any], secrets: Mapping[str, str]) -> dict[str, Any]:
        """Accepts ``endpoint`` (required) and ``namespace``; the one secret ``api_key``.

        Args:
            config: ``{"endpoint": "https://...", "namespace"?: "..."}``.
            secrets: ``{"api_key"?: "..."}``.

        Returns:
            The normalised config (endpoint without a trailing slash).

        Raises:
            InvalidInputError: an unknown key, a bad endpoint, namespace or key (the message
                says what to fix and never repeats the key).

        Example:
            >>> HttpProvider().check_config({"endpoint": "https://m.example/v1"}, {})
            {'endpoint': 'https://m.example/v1'}
        """
        unknown = set(config) - {"endpoint", "namespace"}
        if unknown:
            raise InvalidInputError(
                f"http spaces take only 'endpoint' and 'namespace' (got "
                f"{', '.join(sorted(shown(k, 40) for k in unknown))}); a key goes in "
                "secrets.api_key"
            )
        if "endpoint" not in config:
            raise InvalidInputError(
                "http spaces need config.endpoint, the service's base URL "
                "(e.g. https://memory.example.com/api)"
            )
        out: dict[str, Any] = {"endpoint": wire.check_endpoint(config["endpoint"])}
        if config.get("namespace") is not None:
            out["namespace"] = wire.check_namespace(config["namespace"])
        extra = set(secrets) - {"api_key"}
        if extra:
            raise InvalidInputError(
                f"http spaces take only the secret 'api_key' (got {', '.join(sorted(extra))})"
            )
        if "api_key" in secrets:
            wire.check_api_key(secrets["api_key"])
        return out

    def place(self, space_id: str, config: dict[str, Any]) -> dict[str, Any]:
        """The config pinned with its namespace (the space id unless one was given)."""
        return {**config, "namespace": config.get("namespace") or space_id}

    def check_destination(self, config: Mapping[str, Any]) -> None:
        """Refuse an endpoint whose host is, or resolves to, an internal address that
        ``allowed_hosts`` does not name (resolves the name; connects to nothing).

        Args:
            config: A space's settings (an unreadable endpoint is left to ``check_config``).

        Raises:
            AuthorityError: code ``internal-address`` (HTTP 403), with the decision naming
                ``http.allowed_hosts``.

        Example:
            >>> HttpProvider(allowed_hosts=[]).check_destination(
            ...     {"endpoint": "http://127.1:8080"})
            Traceback (most recent call last):
            AuthorityError: the endpoint host '127.1' is, or resolves to, an internal address ...
        """
        if self.allowed_hosts is None or not isinstance(config, Mapping):
            return
        try:
            parts = urlsplit(wire.check_endpoint(config.get("endpoint")))
        except InvalidInputError:
            return
        port = parts.port or (443 if parts.scheme == "https" else 80)
        self._address_policy().check(parts.hostname or "", port)

    def _address_policy(self) -> Any:
        from langgraph_mnemon.adapters.providers._http_guard import AddressPolicy

        with self._lock:
            if self._policy is None:
                self._policy = AddressPolicy(self.allowed_hosts or ())
            return self._policy

    def secrets_in_use(self) -> tuple[str, ...]:
        """The keys recent calls sent, so no health message can show them."""
        with self._lock:
            return tuple(self._keys)

    # ------------------------------------------------------------------ plumbing

    def _target(self, space: SpaceBinding) -> tuple[str, str, dict[str, str], tuple[str, ...]]:
        """``(endpoint, namespace, headers, secrets)`` of a space, checked before any I/O."""
        try:
            endpoint = wire.check_endpoint(space.config.get("endpoint"))
            namespace = wire.check_namespace(space.config.get("namespace") or space.id)
            key = space.secrets.get("api_key")
            headers = {}
            if key is not None:
                headers["Authorization"] = f"Bearer {wire.check_api_key(key)}"
        except InvalidInputError as exc:
            raise ProviderError(
                f"Memory Space {space.id!r} is not configured for the http provider: {exc}",
                code="not-configured",
            ) from None
        if key:
            with self._lock:
                self._keys.pop(key, None)
                self._keys[key] = None
                while len(self._keys) > _KEYS_KEPT:
                    self._keys.pop(next(iter(self._keys)))
        return endpoint, namespace, headers, (key,) if key else ()

    def _client(self) -> Any:
        from langgraph_mnemon.adapters.providers._http_client import make_client

        policy = None if self.allowed_hosts is None else self._address_policy()
        with self._lock:
            if self._http is None or self._http.is_closed:
                self._http = make_client(self._transport, self.timeout_s, policy)
            return self._http

    def _call(
        self,
        space: SpaceBinding,
        method: str,
        path: str,
        op: str,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        write: bool = False,
        missing: str | None = None,
    ) -> Any:
        """The parsed answer of one call on ``space`` (its namespace added to every request)."""
        from langgraph_mnemon.adapters.providers._http_client import Call, send

        endpoint, namespace, headers, secrets = self._target(space)
        if write:
            headers["Idempotency-Key"] = uuid.uuid4().hex
        if body is not None:
            body = {"namespace": namespace, **body}
        call = Call(
            method=method,
            url=endpoint + path,
            op=op,
            timeout_s=self.timeout_s,
            retries=self.retries,
            max_bytes=self.max_response_bytes,
            params={"namespace": namespace, **(params or {})} if body is None else {},
            body=body,
            headers=headers,
            secrets=secrets,
            missing=missing,
        )
        return send(self._client(), call)

    # ------------------------------------------------------------------ hooks

    def _status(self, space: SpaceBinding) -> ProviderStatus:
        if not space.config.get("endpoint"):
            # The health probe of a provider with no space yet: no service to ask.
            return ProviderStatus(healthy=True)
        secrets = tuple(v for v in space.secrets.values() if isinstance(v, str))
        try:
            body = self._call(space, "GET", "/status", "status")
            return wire.parse_status(body)
        except Exception as exc:  # status reports, never raises
            return ProviderStatus(healthy=False, error=wire.mask(str(exc), secrets) or "error")

    def _search(self, space: SpaceBinding, request: ProviderSearchRequest) -> ProviderSearchResult:
        query = check_text(request.query, "the search query")
        body = {
            "query": query,
            "mode": request.mode,
            "limit": request.limit,
            "category": _opt_text(request.category, "category"),
            "source": _opt_text(request.source, "source"),
        }
        answer = self._call(space, "POST", "/search", "search", body=body)
        rows, hint = wire.parse_records(answer, space, request.limit)
        return ProviderSearchResult(results=rows, hint=hint)

    def _browse(self, space: SpaceBinding, request: BrowseRequest) -> list[MemoryRecord]:
        params: dict[str, Any] = {"limit": request.limit, "offset": request.offset}
        if request.category:
            params["category"] = check_text(request.category, "category")
        answer = self._call(space, "GET", "/memories", "browse", params=params)
        return wire.parse_records(answer, space, request.limit)[0]

    def _remember(self, space: SpaceBinding, item: RememberItem) -> dict[str, Any]:
        return (self._remember_many(space, [item]))[0]

    def _remember_many(
        self, space: SpaceBinding, items: list[RememberItem]
    ) -> list[dict[str, Any]]:
        payload = [_item(item) for item in items]  # every item checked before any request
        receipts: list[dict[str, Any]] = []
        for start in range(0, len(payload), _BATCH):
            batch = payload[start : start + _BATCH]
            answer = self._call(
                space, "POST", "/memories", "remember", body={"items": batch}, write=True
            )
            receipts.extend(wire.parse_receipts(answer, len(batch)))
        return receipts

    def _forget(self, space: SpaceBinding, insight_id: str) -> dict[str, Any]:
        answer = self._call(
            space,
            "DELETE",
            f"/memories/{_segment(insight_id)}",
            "forget",
            write=True,
            missing=_missing(space, insight_id),
        )
        return wire.parse_deleted(answer, insight_id)

    def _related(self, space: SpaceBinding, request: RelatedRequest) -> list[MemoryRecord]:
        body = {
            "id": check_text(request.id, "the memory id"),
            "depth": request.depth,
            "edge": request.edge,
            "limit": request.limit,
        }
        answer = self._call(
            space, "POST", "/related", "related", body=body, missing=_missing(space, request.id)
        )
        return wire.parse_records(answer, space, request.limit)[0]

    def _link(self, space: SpaceBinding, request: LinkRequest) -> dict[str, Any]:
        body = {
            "source_id": check_text(request.source_id, "source_id"),
            "target_id": check_text(request.target_id, "target_id"),
            "type": request.type,
            "weight": request.weight,
            "reason": _opt_text(request.reason, "reason"),
        }
        missing = (
            f"no memory {shown(request.source_id)} or {shown(request.target_id)} in Memory Space "
            f"{space.id!r}; search or browse the space for the exact ids"
        )
        answer = self._call(space, "POST", "/links", "link", body=body, write=True, missing=missing)
        return wire.parse_linked(answer, request.source_id, request.target_id)

    def close(self) -> None:
        """Close the HTTP client (idempotent); the next call opens a new one."""
        with self._lock:
            client, self._http = self._http, None
        if client is not None:
            client.close()


def _check_bounds(timeout_s: Any, retries: Any, max_response_bytes: Any) -> None:
    if (
        isinstance(timeout_s, bool)
        or not isinstance(timeout_s, (int, float))
        or not math.isfinite(timeout_s)
        or not 0 < timeout_s <= 300
    ):
        raise InvalidInputError("timeout_s must be a number of seconds above 0 and at most 300")
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
        raise InvalidInputError("retries must be an integer between 0 and 10")
    if (
        isinstance(max_response_bytes, bool)
        or not isinstance(max_response_bytes, int)
        or not 1024 <= max_response_bytes <= 256 * 1024 * 1024
    ):
        raise InvalidInputError("max_response_bytes must be an integer between 1024 and 256 MiB")


def _hosts(values: Iterable[str]) -> tuple[str, ...]:
    if isinstance(values, str):
        raise InvalidInputError("allowed_hosts must be a list of host names, addresses or networks")
    try:
        return tuple(outbound_host(v) for v in values)
    except ValueError as exc:
        raise InvalidInputError(f"allowed_hosts: {exc}") from None


def _opt_text(value: str | None, what: str) -> str | None:
    return None if value is None else check_text(value, what)


def _segment(insight_id: str) -> str:
    """The id as one path segment; '.' and '..' are escaped so no URL parser drops them."""
    quoted = quote(insight_id, safe="")
    return quoted.replace(".", "%2E") if quoted in (".", "..") else quoted


def _missing(space: SpaceBinding, insight_id: str) -> str:
    return (
        f"no memory {shown(insight_id)} in Memory Space {space.id!r}; search or browse the space "
        "for the exact id"
    )


def _item(item: RememberItem) -> dict[str, Any]:
    """The wire form of one write; refuses text JSON or the service could not store exactly."""
    return {
        "content": check_text(item.content, "content"),
        "category": item.category,
        "importance": item.importance,
        "tags": [check_text(t, "a tag") for t in item.tags],
        "entities": [check_text(e, "an entity") for e in item.entities],
        "source": item.source,
        "metadata": {
            check_text(k, "a metadata key"): _meta_value(k, v) for k, v in item.metadata.items()
        },
    }


def _meta_value(key: str, value: Any) -> Any:
    if isinstance(value, str):
        return check_text(value, f"metadata {shown(key)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInputError(f"metadata {shown(key)} must be a finite number")
    return value
