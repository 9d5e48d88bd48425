"""The ``mnemon-memory/1`` wire format: configuration checks and response parsing.

Everything here is pure (no I/O, no httpx): the HTTP provider checks a space's endpoint,
namespace and key before any request, and turns every JSON body it receives into contract
models or a :class:`ProviderError` with code ``bad-response`` that names the offending field.
A score outside 0..1 (or not finite) is not a broken body: the row keeps ``score=None`` and the
result carries a hint, because one service's odd scale must not hide its rows.

The contract itself is documented in ``docs/http-provider.md``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from langgraph_mnemon.config import redact_url
from langgraph_mnemon.contracts import shown, text_problem
from langgraph_mnemon.errors import InvalidInputError, ProviderError
from langgraph_mnemon.memory_layers.spaces import MemoryRecord, ProviderStatus, SpaceBinding

__all__ = [
    "CONTRACT",
    "RECEIPT_STATES",
    "check_api_key",
    "check_endpoint",
    "check_namespace",
    "mask",
    "parse_deleted",
    "parse_linked",
    "parse_receipts",
    "parse_records",
    "parse_status",
    "service_error",
]

CONTRACT = "mnemon-memory/1"
RECEIPT_STATES = frozenset({"stored", "pending", "skipped", "failed"})
_NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_MAX_URL = 2048
_MAX_KEY = 4096
_MAX_ID = 512
_TEXT_CHARS = 300


def check_endpoint(value: Any) -> str:
    """``value`` as the base URL of a memory service: absolute http(s), a host, no credentials.

    The scheme and host are lower-cased and a trailing ``/`` is dropped, so ``{endpoint}/status``
    is always one slash apart.

    Raises:
        InvalidInputError: what is wrong with the URL and how to fix it.

    Example:
        >>> check_endpoint("HTTPS://Memory.example.com/api/")
        'https://memory.example.com/api'
    """
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(
            "endpoint must be the service's base URL, e.g. https://memory.example.com/api"
        )
    url = value.strip()
    if len(url) > _MAX_URL or any(ch.isspace() or ord(ch) < 32 or ch == "\\" for ch in url):
        raise InvalidInputError(
            f"endpoint must be one URL of at most {_MAX_URL} characters without spaces, control "
            "characters or backslashes"
        )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise InvalidInputError(
            f"endpoint {shown(redact_url(url))} is not a valid URL; check the host and port"
        ) from None
    _check_parts(parts, url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc = f"{netloc}:{port}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/"), "", ""))


def _check_parts(parts: Any, url: str) -> None:
    if parts.scheme.lower() not in ("http", "https"):
        raise InvalidInputError(
            f"endpoint must start with http:// or https:// (got {shown(redact_url(url))}); "
            "give the absolute URL of the memory service"
        )
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise InvalidInputError(
            "endpoint must not carry credentials (user:password@); remove them from the URL "
            "and put the key in secrets.api_key"
        )
    if not parts.hostname:
        raise InvalidInputError(
            "endpoint has no host; give an absolute URL such as https://memory.example.com"
        )
    if parts.query or url.split("#", 1)[0].endswith("?"):
        raise InvalidInputError(
            "endpoint must not have a query string (?...); keys go in secrets.api_key and the "
            "namespace in config.namespace"
        )
    if parts.fragment or "#" in url:
        raise InvalidInputError("endpoint must not have a fragment (#...); remove it")
    if any(seg in (".", "..") for seg in parts.path.split("/")):
        raise InvalidInputError("endpoint path must not contain '.' or '..' segments")


def check_namespace(value: Any) -> str:
    """``value`` as a service namespace: 1-128 of ``A-Z a-z 0-9 . _ : -``, starting alnum.

    Raises:
        InvalidInputError: the namespace does not match.

    Example:
        >>> check_namespace("team-notes")
        'team-notes'
    """
    if not isinstance(value, str) or not _NAMESPACE.match(value):
        raise InvalidInputError(
            f"namespace must be 1-128 letters, digits, '.', '_', ':' or '-' starting with a "
            f"letter or digit (got {shown(value)})"
        )
    return value


def check_api_key(value: Any) -> str:
    """``value`` as a bearer key: 1-4096 visible ASCII characters (safe in a header).

    The message never repeats the value.

    Raises:
        InvalidInputError: the key is empty, too long or holds spaces / control characters.
    """
    if (
        not isinstance(value, str)
        or not 1 <= len(value) <= _MAX_KEY
        or not all(33 <= ord(ch) <= 126 for ch in value)
    ):
        raise InvalidInputError(
            "secrets.api_key must be 1-4096 visible ASCII characters without spaces or line "
            "breaks; paste the key exactly as the service issued it"
        )
    return value


def mask(text: Any, secrets: Iterable[str] = ()) -> str:
    """``text`` on one short line with every secret value replaced by ``***``.

    Example:
        >>> mask("denied for key s3cr3t\\n", ["s3cr3t"])
        'denied for key ***'
    """
    out = " ".join(str(text).split())
    for value in sorted((s for s in secrets if s and len(s) >= 3), key=len, reverse=True):
        out = out.replace(value, "***")
    out = "".join(ch if ch.isprintable() else "?" for ch in out)
    return out[:_TEXT_CHARS]


# ---------------------------------------------------------------------------- parsing


def _bad(what: str) -> ProviderError:
    return ProviderError(
        f"the memory service sent a malformed answer: {what}; it must follow the "
        f"{CONTRACT} contract (docs/http-provider.md)",
        code="bad-response",
    )


def _object(body: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise _bad(f"{what} is {_kind(body)}, not a JSON object")
    return body


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


def _text(value: Any, what: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _bad(f"{what} is {_kind(value)}, not a string")
    problem = text_problem(value)
    if problem:
        raise _bad(f"{what} {problem}")
    return value


def _count(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _bad(f"{what} must be a non-negative integer or null (got {_kind(value)})")
    return value


def _strings(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad(f"{what} is {_kind(value)}, not a list of strings")
    return [str(_text(v, f"{what}[{i}]")) for i, v in enumerate(value)]


def _metadata(value: Any, what: str) -> dict[str, str | int | float | bool]:
    if value is None:
        return {}
    meta = _object(value, what)
    out: dict[str, str | int | float | bool] = {}
    for key, item in meta.items():
        if isinstance(item, str):
            item = _text(item, f"{what}.{key}")
        elif not isinstance(item, (int, float, bool)) or (
            isinstance(item, float) and not math.isfinite(item)
        ):
            raise _bad(f"{what}.{key} must be a string, number or boolean")
        out[str(_text(key, f"a key of {what}"))] = item  # type: ignore[assignment]
    return out


def _score(value: Any, what: str) -> tuple[float | None, bool]:
    """``(score, out_of_range)``: a score outside 0..1 or not finite becomes ``None``."""
    if value is None:
        return None, False
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(f"{what} is {_kind(value)}, not a number")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        return None, True
    return float(value), False


def _record(raw: Any, where: str, space: SpaceBinding) -> tuple[MemoryRecord, bool]:
    row = _object(raw, where)
    rid = _text(row.get("id"), f"{where}.id")
    if not rid or not rid.strip() or len(rid) > _MAX_ID:
        raise _bad(f"{where}.id must be a non-empty string of at most {_MAX_ID} characters")
    importance = row.get("importance")
    if importance is not None and (
        isinstance(importance, bool) or not isinstance(importance, int) or not 1 <= importance <= 5
    ):
        raise _bad(f"{where}.importance must be an integer 1-5 or null")
    created = row.get("created_at")
    if created is not None and (
        isinstance(created, bool)
        or not isinstance(created, (int, float))
        or not math.isfinite(created)
    ):
        raise _bad(f"{where}.created_at must be seconds since the epoch (a number) or null")
    depth = row.get("depth")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int)):
        raise _bad(f"{where}.depth must be an integer or null")
    score, odd = _score(row.get("score"), f"{where}.score")
    record = MemoryRecord(
        id=rid,
        content=str(_text(row.get("content"), f"{where}.content")),
        category=_text(row.get("category"), f"{where}.category", optional=True) or "general",
        importance=importance,
        tags=_strings(row.get("tags"), f"{where}.tags"),
        entities=_strings(row.get("entities"), f"{where}.entities"),
        source=_text(row.get("source"), f"{where}.source", optional=True),
        metadata=_metadata(row.get("metadata"), f"{where}.metadata"),
        score=score,
        created_at=float(created) if created is not None else None,
        depth=depth,
        edge_type=_text(row.get("edge_type"), f"{where}.edge_type", optional=True),
        space_id=space.id,
        space_name=space.name,
    )
    return record, odd


def parse_records(
    body: Any, space: SpaceBinding, limit: int
) -> tuple[list[MemoryRecord], str | None]:
    """``(rows, hint)`` from a ``{"results": [Memory], "hint"?}`` body, at most ``limit`` rows.

    Raises:
        ProviderError: code ``bad-response`` when the body does not have that shape.
    """
    data = _object(body, "the body")
    results = data.get("results")
    if not isinstance(results, list):
        raise _bad(f"'results' is {_kind(results)}, not a list")
    rows, odd = [], 0
    for i, raw in enumerate(results[:limit]):
        record, out_of_range = _record(raw, f"results[{i}]", space)
        rows.append(record)
        odd += out_of_range
    hints = []
    service_hint = _text(data.get("hint"), "'hint'", optional=True)
    if service_hint:
        hints.append(mask(service_hint))
    if odd:
        hints.append(
            f"{odd} score(s) from the service were outside 0..1 or not finite and are shown "
            "without a score"
        )
    return rows, "; ".join(hints) or None


def parse_status(body: Any) -> ProviderStatus:
    """The :class:`ProviderStatus` of a ``GET /status`` body (a wrong contract is unhealthy)."""
    data = _object(body, "the body")
    contract = data.get("contract")
    if contract != CONTRACT:
        return ProviderStatus(
            healthy=False,
            error=(
                f"the service does not speak {CONTRACT} (its status names another contract); "
                "point the endpoint at a mnemon-memory/1 service"
            ),
        )
    healthy = data.get("healthy")
    if not isinstance(healthy, bool):
        raise _bad(f"'healthy' is {_kind(healthy)}, not a boolean")
    _text(data.get("error"), "'error'", optional=True)  # checked, never repeated
    return ProviderStatus(
        healthy=healthy,
        error=None if healthy else "the service reports unhealthy; check the service's logs",
        total_insights=_count(data.get("total"), "'total'"),
        deleted_insights=_count(data.get("deleted"), "'deleted'"),
    )


def parse_receipts(body: Any, expected: int) -> list[dict[str, Any]]:
    """One raw receipt ``{"id", "status", "error"?}`` per item, in order.

    Raises:
        ProviderError: code ``bad-response`` on a wrong count, state or id.
    """
    data = _object(body, "the body")
    receipts = data.get("receipts")
    if not isinstance(receipts, list) or len(receipts) != expected:
        raise _bad(f"'receipts' must be a list of {expected} receipt(s), one per item")
    out = []
    for i, raw in enumerate(receipts):
        row = _object(raw, f"receipts[{i}]")
        status = row.get("status")
        if status not in RECEIPT_STATES:
            raise _bad(f"receipts[{i}].status must be one of {', '.join(sorted(RECEIPT_STATES))}")
        rid = _text(row.get("id"), f"receipts[{i}].id", optional=True)
        if status == "stored" and not (rid and rid.strip()):
            raise _bad(f"receipts[{i}] says stored but carries no id")
        receipt: dict[str, Any] = {"id": rid, "status": status}
        error = _text(row.get("error"), f"receipts[{i}].error", optional=True)
        if error:
            receipt["error"] = mask(error)
        out.append(receipt)
    return out


def parse_deleted(body: Any, insight_id: str) -> dict[str, Any]:
    """The raw receipt of ``DELETE /memories/{id}``: ``{"id", "status": "deleted"}``."""
    data = _object(body, "the body")
    if data.get("status") != "deleted":
        raise _bad("a delete answer must say status 'deleted'")
    return {"id": insight_id, "status": "deleted"}


def parse_linked(body: Any, source_id: str, target_id: str) -> dict[str, Any]:
    """The raw receipt of ``POST /links``: ``{"status": "linked"}`` plus the two ids."""
    data = _object(body, "the body")
    if data.get("status") != "linked":
        raise _bad("a link answer must say status 'linked'")
    return {"status": "linked", "source_id": source_id, "target_id": target_id}


def service_error(body: Any) -> tuple[str | None, str | None]:
    """``(code, message)`` of a ``{"error": {"code", "message"}}`` body, else ``(None, None)``."""
    if not isinstance(body, Mapping) or not isinstance(body.get("error"), Mapping):
        return None, None
    error = body["error"]
    code, message = error.get("code"), error.get("message")
    return (
        code if isinstance(code, str) and len(code) <= 64 else None,
        message if isinstance(message, str) else None,
    )
