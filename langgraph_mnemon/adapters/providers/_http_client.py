"""One bounded HTTP exchange with a memory service: timeouts, retries, size limit, error mapping.

Every call of the HTTP provider goes through :func:`send`, synchronously (``httpx.Client``).
An attempt is bounded by ``timeout_s`` as a whole, not per socket read, so a server that drips
bytes cannot hold a call open: through the guarded transport (:mod:`._http_guard`) every read
and write waits at most the time left; with another transport the body is read in chunks
against the deadline. Connection failures of any kind and the gateway answers 502 / 503 / 504
are retried ``retries`` times with exponential backoff; writes are safe to retry because they
carry an ``Idempotency-Key``. Redirects are never followed. A body is read as a stream and
refused once it passes ``max_bytes``. Every failure becomes a typed error whose message names
the service's origin (never a key) and says what to do, and never repeats what the service sent
(its error text, a redirect target, its status code). A refused connection, a broken or cut
answer, a timeout and a body that is not JSON read the same (code ``unreachable``): the answer
of a test must not tell a closed port from a database or a web server behind the address.

This module imports ``httpx``; the provider loads it on its first request, not at import.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from langgraph_mnemon.adapters.providers._http_guard import (
    AddressPolicy,
    GuardedTransport,
    deadline,
)
from langgraph_mnemon.adapters.providers._http_wire import service_error
from langgraph_mnemon.errors import NotFoundError, ProviderError

__all__ = ["Call", "make_client", "send"]

RETRY_STATUSES = frozenset({502, 503, 504})
BACKOFF_S = 0.2
_ERROR_BYTES = 64 * 1024
_USER_AGENT = "langgraph-mnemon-http/1 (mnemon-memory/1)"


@dataclass(frozen=True)
class Call:
    """One request to send, with its bounds.

    ``missing`` is the :class:`NotFoundError` message for a contract ``not-found`` answer
    (``None``: a 404 means the endpoint is wrong). ``secrets`` are masked in every message.
    """

    method: str
    url: str
    op: str
    timeout_s: float
    retries: int
    max_bytes: int
    params: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    secrets: tuple[str, ...] = field(default=(), repr=False)
    missing: str | None = None

    @property
    def origin(self) -> str:
        """``scheme://host[:port]`` of the service (the URL has no credentials)."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"


def make_client(
    transport: httpx.BaseTransport | None,
    timeout_s: float,
    policy: AddressPolicy | None = None,
) -> httpx.Client:
    """The provider's client: no redirects, uncompressed answers, the given transport (else,
    with a ``policy``, the network through :class:`GuardedTransport`)."""
    if transport is None and policy is not None:
        transport = GuardedTransport(policy)
    return httpx.Client(
        transport=transport,
        follow_redirects=False,
        timeout=httpx.Timeout(timeout_s),
        headers={"User-Agent": _USER_AGENT, "Accept": "application/json"},
    )


def send(client: httpx.Client, call: Call) -> Any:
    """Send ``call`` (retrying as documented) and return the parsed JSON body of a 2xx answer.

    Raises:
        ProviderError: codes ``unreachable`` (no connection, a broken answer, a timeout, a
            body that is not JSON), ``internal-address`` (refused before connecting),
            ``redirect``, ``unauthorized``, ``bad-endpoint``, ``rejected``, ``service-error``,
            ``response-too-large`` or ``bad-response``.
        NotFoundError: the service answered ``not-found`` for an id (when ``call.missing``).
    """
    content = None
    if call.body is not None:
        content = json.dumps(call.body, ensure_ascii=False, allow_nan=False).encode("utf-8")
    attempt = 0
    while True:
        try:
            status, headers, raw = _attempt(client, call, content)
        except (TimeoutError, httpx.TimeoutException):
            raise _unreachable(call) from None
        except httpx.TransportError:
            if attempt < call.retries:
                time.sleep(BACKOFF_S * 2**attempt)
                attempt += 1
                continue
            raise _unreachable(call) from None
        except httpx.HTTPError:
            raise _unreachable(call) from None
        if status in RETRY_STATUSES and attempt < call.retries:
            time.sleep(BACKOFF_S * 2**attempt)
            attempt += 1
            continue
        return _answer(call, status, headers, raw)


def _attempt(
    client: httpx.Client, call: Call, content: bytes | None
) -> tuple[int, httpx.Headers, bytes]:
    headers = {**call.headers, "Accept-Encoding": "identity"}
    if content is not None:
        headers["Content-Type"] = "application/json"
    ends = time.monotonic() + call.timeout_s
    with (
        deadline(call.timeout_s),
        client.stream(
            call.method,
            call.url,
            params=call.params or None,
            content=content,
            headers=headers,
            timeout=call.timeout_s,
        ) as response,
    ):
        status = response.status_code
        if 300 <= status < 400:
            return status, response.headers, b""
        limit = call.max_bytes if 200 <= status < 300 else _ERROR_BYTES
        return status, response.headers, _read(response, call, limit, ends)


def _read(response: httpx.Response, call: Call, limit: int, ends: float) -> bytes:
    """The body, at most ``limit`` bytes: a 2xx beyond it is refused, an error body cut.

    Raises:
        TimeoutError: the answer did not end by ``ends`` (the attempt's bound as a whole).
    """
    ok = 200 <= response.status_code < 300
    declared = response.headers.get("content-length", "")
    if ok and declared.isdigit() and int(declared) > limit:
        raise _too_large(call)
    data = bytearray()
    for chunk in response.iter_bytes():
        if time.monotonic() > ends:
            raise TimeoutError
        data += chunk
        if len(data) > limit:
            if ok:
                raise _too_large(call)
            return bytes(data[:limit])
    if time.monotonic() > ends:
        raise TimeoutError
    return bytes(data)


def _too_large(call: Call) -> ProviderError:
    return ProviderError(
        f"the memory service at {call.origin} sent a {call.op} answer over "
        f"{call.max_bytes} bytes; ask for fewer rows or raise max_response_bytes",
        code="response-too-large",
    )


def _unreachable(call: Call) -> ProviderError:
    """The one answer for every way of not getting a usable reply (the same text whatever
    listens at the address, or nothing)."""
    return ProviderError(
        f"could not reach the memory service at {call.origin} for {call.op}; check that it is "
        "running, that the space's endpoint is the base URL of a mnemon-memory/1 service "
        "(docs/http-provider.md), and timeout_s",
        code="unreachable",
    )


def _json(call: Call, raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise _unreachable(call) from None


def _answer(call: Call, status: int, headers: httpx.Headers, raw: bytes) -> Any:
    if 200 <= status < 300:
        return _json(call, raw)
    if 300 <= status < 400:
        raise ProviderError(
            f"the memory service at {call.origin} answered {call.op} with a redirect; redirects "
            "are not followed: set the space's endpoint to the final URL",
            code="redirect",
        )
    try:
        code = service_error(json.loads(raw))[0] if raw else None
    except (ValueError, RecursionError):
        code = None
    if status in (401, 403):
        raise ProviderError(
            f"the memory service at {call.origin} refused the credentials; set "
            "secrets.api_key of the space to a key the service accepts",
            code="unauthorized",
        )
    if status == 404 and code == "not-found" and call.missing:
        raise NotFoundError(call.missing)
    if status == 404:
        raise ProviderError(
            f"the memory service at {call.origin} has no route for {call.op}; check that the "
            "endpoint is the base URL of a mnemon-memory/1 service",
            code="bad-endpoint",
        )
    if status < 500:
        raise ProviderError(
            f"the memory service at {call.origin} rejected the {call.op} request; check the "
            "request against the mnemon-memory/1 contract and the service's logs",
            code="rejected",
        )
    raise ProviderError(
        f"the memory service at {call.origin} failed to answer {call.op}; check the service's logs",
        code="service-error",
    )
