"""OpenAPI operations generated from the route table and its pydantic models.

Each endpoint function gets a docstring ``<summary>\\n---\\n<operation as JSON>``: Starlette's
``SchemaGenerator`` (and LangGraph server's, which merges custom routes into its own
``/openapi.json``) read the operation from there. Schemas are inlined (no ``$ref``) so an
operation stands alone wherever it is merged.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from typing import Any, Literal

from pydantic import BaseModel

from ._api import Endpoint
from ._models import Empty, ErrorBody
from ._rules import PATH_PARAMETERS, with_body_limit

_PARAM = re.compile(r"{(\w+)(?::\w+)?}")
_ERRORS = {
    "401": "A remote change without the right bearer token.",
    "403": "Not allowed from this address, Host or web origin; a scope the caller may not "
    "act for (scope-mismatch); a host-wide setting changed by a non-admin user; a Memory Space "
    "setting the caller may not use (storage-location, admin-required, internal-address); or "
    "refused by the kernel: "
    "writes are switched off (read-only), the layer is disabled or its channel is off or "
    "manual (the body's decision names the setting that would allow it).",
    "404": "No such object (in the caller's scope).",
    "409": "Conflict, no unique match, or over capacity; nothing changed.",
    "415": "A POST, PUT, PATCH or DELETE without 'Content-Type: application/json'.",
    "422": "Invalid input (malformed JSON, wrong types, unknown keys, out-of-range values).",
    "502": "A Memory Space provider or the answering model failed.",
    "503": "Stored data unreadable, locked or refused by the file system; nothing changed.",
    "507": "The disk is full (storage-full); nothing changed.",
}


def schema_of(model: type[BaseModel], mode: Literal["validation", "serialization"]) -> dict:
    """The JSON schema of ``model`` with every ``$ref`` replaced by its definition (a copy:
    rendering is a pure function of the model, done once per model; every app built after the
    first takes a third of a second less)."""
    return copy.deepcopy(_rendered(model, mode))


@functools.cache
def _rendered(model: type[BaseModel], mode: Literal["validation", "serialization"]) -> dict:
    schema = model.model_json_schema(mode=mode)
    defs = schema.pop("$defs", {})

    def resolve(node: Any, depth: int) -> Any:
        if isinstance(node, list):
            return [resolve(item, depth) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            if depth > 12:  # a recursive model: stop expanding
                return {"type": "object"}
            target = resolve(defs[ref.removeprefix("#/$defs/")], depth + 1)
            rest = {k: resolve(v, depth) for k, v in node.items() if k != "$ref"}
            return {**target, **rest}
        # "default": null only says "optional" (absent from required), and would contradict
        # a property whose type excludes null.
        return {k: resolve(v, depth) for k, v in node.items() if (k, v) != ("default", None)}

    return resolve(schema, 0)


def _json(schema: dict) -> dict:
    return {"application/json": {"schema": schema}}


def operation(endpoint: Endpoint, tag: str, *, body_limit: int | None = None) -> dict[str, Any]:
    """The OpenAPI operation object of one endpoint; ``body_limit`` is the host's
    documents.body_limit_bytes when known (else the default)."""
    parameters: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": PATH_PARAMETERS[name]()}
        for name in _PARAM.findall(endpoint.path)
    ]
    if endpoint.query is not None:
        query = schema_of(endpoint.query, "validation")
        required = set(query.get("required", ()))
        for name, prop in query.get("properties", {}).items():
            parameters.append(
                {
                    "name": name,
                    "in": "query",
                    "required": name in required,
                    "description": prop.get("description", ""),
                    "schema": prop,
                }
            )
    success: dict[str, Any] = {"description": "OK"}
    if endpoint.returns is not None:
        success["content"] = _json(schema_of(endpoint.returns, "serialization"))
    else:
        success["content"] = _json({"type": "object"})
    error = _json(schema_of(ErrorBody, "serialization"))
    op: dict[str, Any] = {
        "tags": [tag],
        "summary": endpoint.summary,
        "operationId": endpoint.handler.__name__,
        "x-mnemon-mutates": endpoint.is_mutation,
        "parameters": parameters,
        "responses": {
            "200": success,
            **{code: {"description": text, "content": error} for code, text in _ERRORS.items()},
        },
    }
    if endpoint.body is not None:
        body = schema_of(endpoint.body, "validation")
        if body_limit is not None:
            body = with_body_limit(body, body_limit)
        op["requestBody"] = {
            "required": endpoint.body is not Empty and not endpoint.optional_body,
            "content": _json(body),
        }
    if endpoint.refusals:
        # Rules that depend on what is stored or on the provider, stated with their codes.
        op["x-mnemon-refusals"] = list(endpoint.refusals)
        op["responses"]["422"] = {
            "description": f"{_ERRORS['422']} Also refused with 422 for a rule of the stored "
            f"space or its provider, with one of the codes: {', '.join(endpoint.refusals)}.",
            "content": error,
        }
    return op


def docstring(summary: str, op: dict[str, Any]) -> str:
    """A docstring Starlette's ``SchemaGenerator`` parses into ``op``."""
    text = json.dumps(op, sort_keys=True).replace("---", "\\u002d\\u002d\\u002d")
    return f"{summary}\n---\n{text}"
