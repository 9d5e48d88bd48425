"""One bounded HTTP exchange with a memory service: timeouts, retries, size limit, error mapping.

Every call of the HTTP provider goes through :func:`send`. An attempt is bounded by
``timeout_s`` as a whole (not per socket read), so a server that drips bytes cannot hold a call
open. Connect failures and the gateway answers 502 / 503 / 504 are retried ``retries`` times
with exponential backoff; writes are safe to retry because they carry an ``Idempotency-Key``.
Redirects are never followed. A body is read as a stream and refused once it passes
``max_bytes``. Every failure becomes a typed error whose message names the service's origin
(never a key) and says what to do.

This module imports ``httpx``; the provider loads it on its first request, not at import.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from langgraph_mnemon.adapters.providers._http_wire import mask, service_error
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


def make_client(transport: httpx.AsyncBaseTransport | None, timeout_s: float) -> httpx.AsyncClient:
    """The provider's client: no redirects, uncompressed answers, the given transport."""
    return httpx.AsyncClient(
        transport=transport,
        follow_redirects=False,
        timeout=httpx.Timeout(timeout_s),
        headers={"User-Agent": _USER_AGENT, "Accept": "application/json"},
    )


async def send(client: httpx.AsyncClient, call: Call) -> Any:
    """Send ``call`` (retrying as documented) and return the parsed JSON body of a 2xx answer.

    Raises:
        ProviderError: codes ``unreachable``, ``timeout``, ``redirect``, ``unauthorized``,
            ``bad-endpoint``, ``rejected``, ``service-error``, ``response-too-large`` or
            ``bad-response``.
        NotFoundError: the service answered ``not-found`` for an id (when ``call.missing``).
    """
    content = None
    if call.body is not None:
        content = json.dumps(call.body, ensure_ascii=False, allow_nan=False).encode("utf-8")
    attempt = 0
    while True:
        try:
            status, headers, raw = await _attempt(client, call, content)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            if attempt < call.retries:
                await asyncio.sleep(BACKOFF_S * 2**attempt)
                attempt += 1
                continue
            raise _unreachable(call, exc, attempt + 1) from None
        except (TimeoutError, httpx.TimeoutException):
            raise ProviderError(
                f"the memory service at {call.origin} gave no {call.op} answer within "
                f"{call.timeout_s:g} s; check that it is running, or raise timeout_s",
                code="timeout",
            ) from None
        except httpx.HTTPError as exc:
            raise ProviderError(
                f"the connection to the memory service at {call.origin} failed during "
                f"{call.op} ({type(exc).__name__}); check the service and its network",
                code="unreachable",
            ) from None
        if status in RETRY_STATUSES and attempt < call.retries:
            await asyncio.sleep(BACKOFF_S * 2**attempt)
            attempt += 1
            continue
        return _answer(call, status, headers, raw)


async def _attempt(
    client: httpx.AsyncClient, call: Call, content: bytes | None
) -> tuple[int, httpx.Headers, bytes]:
    headers = {**call.headers, "Accept-Encoding": "identity"}
    if content is not None:
        headers["Content-Type"] = "application/json"
    async with asyncio.timeout(call.timeout_s):
        async with client.stream(
            call.method,
            call.url,
            params=call.params or None,
            content=content,
            headers=headers,
            timeout=call.timeout_s,
        ) as response:
            status = response.status_code
            if 300 <= status < 400:
                return status, response.headers, b""
            limit = call.max_bytes if 200 <= status < 300 else _ERROR_BYTES
            return status, response.headers, await _read(response, call, limit)


async def _read(response: httpx.Response, call: Call, limit: int) -> bytes:
    """The body, at most ``limit`` bytes: a 2xx beyond it is refused, an error body cut."""
    ok = 200 <= response.status_code < 300
    declared = response.headers.get("content-length", "")
    if ok and declared.isdigit() and int(declared) > limit:
        raise _too_large(call)
    data = bytearray()
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) > limit:
            if ok:
                raise _too_large(call)
            return bytes(data[:limit])
    return bytes(data)


def _too_large(call: Call) -> ProviderError:
    return ProviderError(
        f"the memory service at {call.origin} sent a {call.op} answer over "
        f"{call.max_bytes} bytes; ask for fewer rows or raise max_response_bytes",
        code="response-too-large",
    )


def _unreachable(call: Call, exc: Exception, attempts: int) -> ProviderError:
    reason = mask(str(exc) or type(exc).__name__, call.secrets)[:120]
    return ProviderError(
        f"could not reach the memory service at {call.origin} for {call.op} after "
        f"{attempts} attempt(s) ({reason}); check that it is running and that the space's "
        "endpoint is right",
        code="unreachable",
    )


def _json(call: Call, raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise ProviderError(
            f"the memory service at {call.origin} answered {call.op} with a body that is not "
            "JSON; it must follow the mnemon-memory/1 contract (docs/http-provider.md)",
            code="bad-response",
        ) from None


def _answer(call: Call, status: int, headers: httpx.Headers, raw: bytes) -> Any:
    if 200 <= status < 300:
        return _json(call, raw)
    if 300 <= status < 400:
        target = urlsplit(headers.get("location", ""))
        where = f" to {target.scheme}://{target.netloc}{target.path}" if target.netloc else ""
        raise ProviderError(
            f"the memory service at {call.origin} answered {call.op} with a redirect (HTTP "
            f"{status}){mask(where, call.secrets)}; redirects are not followed: set the space's "
            "endpoint to the final URL",
            code="redirect",
        )
    try:
        code, message = service_error(json.loads(raw)) if raw else (None, None)
    except (ValueError, RecursionError):
        code, message = None, None
    detail = f": {mask(message, call.secrets)}" if message else ""
    said = f"HTTP {status}" + (f", {mask(code)}" if code else "")
    if status in (401, 403):
        raise ProviderError(
            f"the memory service at {call.origin} refused the credentials ({said}); set "
            "secrets.api_key of the space to a key the service accepts",
            code="unauthorized",
        )
    if status == 404 and code == "not-found" and call.missing:
        raise NotFoundError(call.missing)
    if status == 404:
        raise ProviderError(
            f"the memory service at {call.origin} has no route for {call.op} ({said}); check "
            "that the endpoint is the base URL of a mnemon-memory/1 service",
            code="bad-endpoint",
        )
    if status < 500:
        raise ProviderError(
            f"the memory service at {call.origin} rejected the {call.op} request ({said}){detail}",
            code="rejected",
        )
    raise ProviderError(
        f"the memory service at {call.origin} failed to answer {call.op} ({said}){detail}; "
        "check the service's logs",
        code="service-error",
    )
