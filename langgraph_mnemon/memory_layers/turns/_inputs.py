"""Inputs of the General strategy's View routes and actions: plain pydantic models.

The offers table (``_offers.py``) names one of these per offer; the JSON schema the View shows
for an offer is :func:`view_schema` of its input, and a dispatcher validates a model's input
with the same class. Their bounds come from the per-turn evidence budgets (``_limits.py``).

Example:
    >>> view_schema(ForgetInput)["required"]
    ['id']
    >>> SpacesSearchInput(query="deploy").limit
    6
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

from langgraph_mnemon.contracts import CleanStr, Importance
from langgraph_mnemon.memory_layers.turns._budget import (
    DOCUMENT_MAX_RECORDS,
    MAX_QUERY_CHARS,
    RESULT_LIMIT,
    RUNTIME_SEARCH_RESULTS,
)

__all__ = [
    "DocumentManageInput",
    "DocumentSearchInput",
    "EdgeType",
    "ForgetInput",
    "LinkInput",
    "RelatedInput",
    "RememberInput",
    "RuntimeSearchInput",
    "RuntimeWriteInput",
    "SpaceManageInput",
    "SpacesSearchInput",
    "ViewInput",
    "view_schema",
]

EdgeType = Literal["temporal", "semantic", "causal", "entity"]


class ViewInput(BaseModel):
    """The base of every offer input (and the input of an offer that takes none)."""

    model_config = ConfigDict(extra="forbid")


class RuntimeSearchInput(ViewInput):
    query: CleanStr = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    target: Literal["user", "memory"]
    limit: int = Field(RUNTIME_SEARCH_RESULTS, ge=1, le=RUNTIME_SEARCH_RESULTS)


class DocumentSearchInput(ViewInput):
    query: CleanStr = Field(max_length=MAX_QUERY_CHARS)
    include_archived: bool = False
    limit: int = Field(DOCUMENT_MAX_RECORDS, ge=1, le=DOCUMENT_MAX_RECORDS)


class SpacesSearchInput(ViewInput):
    query: CleanStr = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    limit: int = Field(RESULT_LIMIT, ge=1, le=RESULT_LIMIT)
    space_ids: list[CleanStr] = Field(default_factory=list)


class RelatedInput(ViewInput):
    id: CleanStr = Field(min_length=1, max_length=200)
    depth: int = Field(2, ge=1, le=5)
    edge: EdgeType | None = None
    space_id: CleanStr | None = None


class RuntimeWriteInput(ViewInput):
    """runtime/write: add, replace or remove one Runtime Memory entry (never a search)."""

    action: Literal["add", "replace", "remove"]
    target: Literal["user", "memory"]
    content: CleanStr | None = None
    old_text: CleanStr | None = None
    importance: Importance | None = None
    branches: list[CleanStr] | None = None


class DocumentManageInput(ViewInput):
    """documents/manage: create, update or archive a project Document."""

    action: Literal["create", "update", "archive"]
    id: CleanStr | None = None
    title: CleanStr | None = None
    description: CleanStr | None = None
    content: CleanStr | None = None
    source_paths: list[CleanStr] | None = None


class RememberInput(ViewInput):
    content: CleanStr = Field(min_length=1)
    category: Literal["preference", "decision", "fact", "insight", "context", "general"] = "general"
    importance: int = Field(3, ge=1, le=5)
    tags: list[CleanStr] = Field(default_factory=list, max_length=20)
    entities: list[CleanStr] = Field(default_factory=list, max_length=50)
    space_id: CleanStr | None = None


class LinkInput(ViewInput):
    source_id: CleanStr = Field(min_length=1, max_length=200)
    target_id: CleanStr = Field(min_length=1, max_length=200)
    type: EdgeType = "semantic"
    weight: float = Field(0.5, ge=0, le=1)
    reason: CleanStr | None = Field(None, max_length=1000)
    space_id: CleanStr | None = None


class ForgetInput(ViewInput):
    id: CleanStr = Field(min_length=1, max_length=200)
    space_id: CleanStr | None = None


class SpaceManageInput(ViewInput):
    operation: Literal["create", "update", "merge"]
    space_id: CleanStr | None = None
    name: CleanStr | None = Field(None, min_length=1, max_length=120)
    description: CleanStr | None = Field(None, max_length=500)
    active: bool | None = None
    source_space_ids: list[CleanStr] | None = Field(None, min_length=1, max_length=20)


# --------------------------------------------------------------------------------------------
# The compact JSON schema the View shows


def _plain(annotation: Any) -> Any:
    """The annotation without ``None`` in a union and without ``Annotated`` metadata."""
    if get_origin(annotation) in (Union, types.UnionType):
        (annotation,) = [a for a in get_args(annotation) if a is not type(None)]
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _bounds(field: FieldInfo, low: str, high: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in field.metadata:
        if isinstance(item, annotated_types.Ge):
            out[low] = item.ge
        elif isinstance(item, annotated_types.Le):
            out[high] = item.le
        elif isinstance(item, annotated_types.MaxLen) and high == "maxLength":
            out[high] = item.max_length
    return out


def _type_schema(annotation: Any, field: FieldInfo | None) -> dict[str, Any]:
    kind = _plain(annotation)
    if get_origin(kind) is Literal:
        return {"enum": list(get_args(kind))}
    if get_origin(kind) is list:
        return {"type": "array", "items": _type_schema(get_args(kind)[0], None)}
    if kind is bool:
        return {"type": "boolean"}
    names = {int: ("integer", "minimum", "maximum"), float: ("number", "minimum", "maximum")}
    name, low, high = names.get(kind, ("string", "minLength", "maxLength"))
    return {"type": name, **(_bounds(field, low, high) if field is not None else {})}


def view_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema the View shows for an offer's input: each field's type, its enum
    choices and numeric / length maxima, and the fields without a default as ``required``.

    Args:
        model: a :class:`ViewInput` subclass.

    Returns:
        ``{"type": "object", "properties": {...}, "required": [...]}`` (``required`` only
        when a field has no default).

    Example:
        >>> view_schema(DocumentSearchInput)["properties"]["limit"]
        {'type': 'integer', 'minimum': 1, 'maximum': 4}
    """
    fields = model.model_fields
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: _type_schema(f.annotation, f) for name, f in fields.items()},
    }
    required = [name for name, f in fields.items() if f.is_required()]
    if required:
        schema["required"] = required
    return schema
