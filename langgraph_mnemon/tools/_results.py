"""Tool results as compact JSON, every failure as a result instead of an exception, and how
Memory Spaces and their receipts look to the model.

A result may quote what the model sent; it never shows where memory lives (storage roots, the
database address, a space's config or secrets) and its text is always storable (no lone
surrogates, no NUL).
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from langgraph_mnemon.contracts import safe_text
from langgraph_mnemon.errors import InvalidInputError, MnemonError
from langgraph_mnemon.memory_layers.health import MemoryStep
from langgraph_mnemon.memory_layers.spaces import SpaceRecord
from langgraph_mnemon.storage.db import redact_url
from langgraph_mnemon.tools._context import ToolContext

__all__ = [
    "dumps",
    "failure",
    "invalid_result",
    "memory_receipt",
    "parse_input",
    "problems",
    "space_item",
    "space_receipt",
    "validation_result",
    "without_locations",
]


M = TypeVar("M", bound=BaseModel)


def dumps(value: Any) -> str:
    """``value`` as compact JSON text a message can carry."""
    # A result may quote what the model sent (a query, an id); the message must still be
    # storable and sendable text, so lone surrogates become U+FFFD and NUL is dropped.
    return safe_text(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


def problems(exc: ValidationError) -> str:
    """The first few validation errors as one line (``field: message; ...``)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'input'}: {err['msg']}"
        for err in exc.errors()[:5]
    )


def parse_input(model: type[M], data: Any, what: str) -> M:
    """Validate a model-supplied input; a mismatch becomes an ``invalid-input`` result."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidInputError(f"invalid input for {what}: {problems(exc)}") from None


def validation_result(exc: Any) -> str:
    """Arguments that do not fit a tool's schema: an ``invalid-input`` result, not a crash."""
    message = problems(exc) if isinstance(exc, ValidationError) else safe_text(exc)
    return dumps({"error": "invalid-input", "message": f"invalid arguments: {message}"})


def invalid_result(exc: ValidationError) -> dict[str, Any]:
    """A value a layer's own model refused, as an ``invalid-input`` result."""
    return {"error": "invalid-input", "message": f"invalid input: {problems(exc)}"}


def failure(ctx: ToolContext, step: MemoryStep) -> dict[str, Any]:
    """A failed or refused step as a tool result; a kernel refusal keeps its decision."""
    value = step.result()
    decision = getattr(step.error, "decision", None)
    if isinstance(step.error, MnemonError) and decision is not None:
        value["decision"] = dict(decision)
    if value["error"].startswith("database-"):  # the driver's text names host and port
        value["message"] = (
            f"the memory database is not available right now ({value['error']}); memory "
            "is degraded and the agent can go on without it (status shows the details)"
        )
    # A storage error names its file: the model sees no host paths.
    value["message"] = without_locations(ctx, value["message"])
    return value


def without_locations(ctx: ToolContext, message: str) -> str:
    """``message`` with the storage roots and the database address replaced by placeholders:
    a tool result never shows the model where memory lives."""
    url = ctx.config.resolved_database_url  # masked as the database errors mask it
    places = [
        (redact_url(url), "<database>"),
        (url, "<database>"),
        (str(ctx.root), "<memory root>"),
        (str(ctx.config.global_root_path), "<user memory root>"),
    ]
    for place, placeholder in sorted(places, key=lambda p: -len(p[0])):  # longest first
        if place:
            message = message.replace(place, placeholder)
    return message


def space_item(record: SpaceRecord, reachable: bool | None = None) -> dict[str, Any]:
    """A Memory Space as the model sees it; ``reachable`` (the catalog) says whether its
    provider answers right now."""
    item: dict[str, Any] = {
        "id": record.id,
        "name": record.name[:120],
        "description": record.description[:500],
        "active": record.active,
        "provider": {"id": record.provider_id, "capabilities": record.capabilities},
    }
    if reachable is not None:
        item["reachable"] = reachable
    return item


def memory_receipt(receipt: Any) -> dict[str, Any]:
    """A link or forget receipt: what changed, where, and how far it completed."""
    return receipt.model_dump(
        mode="json", include={"status", "message", "changed", "space_id", "id", "completion"}
    )


def space_receipt(receipt: Any) -> dict[str, Any]:
    """A Memory Space create / update / merge receipt, with the space and the merged sources."""
    out: dict[str, Any] = {
        "status": receipt.status,
        "message": receipt.message,
        "changed": receipt.changed,
    }
    if receipt.space is not None:
        out["memoryBody"] = space_item(receipt.space)
    if receipt.spaces:
        out["sources"] = [space_item(r) for r in receipt.spaces]
    return out
