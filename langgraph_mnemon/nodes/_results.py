"""Run-scoped result tools: the one way a worker model hands its answer to the host."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from langchain_core.messages import AIMessage
from langgraph.graph import END
from pydantic import BaseModel

__all__ = ["bounded", "parse_result", "tool_schema", "unless_error"]

_M = TypeVar("_M", bound=BaseModel)


def tool_schema(name: str, description: str, model: type[BaseModel]) -> dict[str, Any]:
    """An OpenAI-style function tool whose parameters are ``model``'s JSON schema."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": model.model_json_schema(),
        },
    }


def bounded(bound: Any, model: Any, max_tokens: int | None) -> Any:
    """``bound`` (a model with tools bound) with its replies bounded by ``max_tokens``, when the
    chat model has a ``max_tokens`` setting a call may bind (OpenAI, Anthropic, most
    integrations); a model without one gets no unknown keyword."""
    if max_tokens is not None and "max_tokens" in getattr(type(model), "model_fields", {}):
        return bound.bind(max_tokens=max_tokens)
    return bound


def parse_result(reply: Any, tool: str, model: type[_M]) -> _M:
    """Validate the worker's call of ``tool`` (or a JSON reply) against ``model``.

    Raises ``ValueError`` (or pydantic's ``ValidationError``) when there is no valid result.
    """
    if not isinstance(reply, AIMessage):
        raise ValueError("no message came back")
    for call in reply.tool_calls:
        if call["name"] == tool:
            return model.model_validate(call["args"])
    if isinstance(reply.content, str) and reply.content.strip():
        return model.model_validate(json.loads(reply.content))
    raise ValueError(f"the worker did not call {tool}")


def unless_error(target: str, otherwise: str = END) -> Any:
    """A conditional edge: go on to ``target``, or to ``otherwise`` (``END``) once a node has
    set ``error``."""

    def route(state: dict[str, Any]) -> str:
        return otherwise if state.get("error") else target

    return route
