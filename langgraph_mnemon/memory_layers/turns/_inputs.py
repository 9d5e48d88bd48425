"""Inputs of the General strategy's View routes and actions: plain pydantic models.

The offers table (``_offers.py``) names one of these per offer; the model-facing tools and the
JSON schemas the View shows are derived from them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from langgraph_mnemon.contracts import CleanStr
from langgraph_mnemon.memory_layers.turns._offers import RUNTIME_SEARCH_EVIDENCE

__all__ = [
    "DocumentSearchInput",
    "EdgeType",
    "ForgetInput",
    "LinkInput",
    "RelatedInput",
    "RememberInput",
    "RuntimeSearchInput",
    "SpaceManageInput",
    "SpacesSearchInput",
    "ViewInput",
]

EdgeType = Literal["temporal", "semantic", "causal", "entity"]


class ViewInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RuntimeSearchInput(ViewInput):
    query: CleanStr = Field(min_length=1, max_length=2000)
    target: Literal["user", "memory"]
    limit: int = Field(RUNTIME_SEARCH_EVIDENCE[0], ge=1, le=RUNTIME_SEARCH_EVIDENCE[0])


class DocumentSearchInput(ViewInput):
    query: CleanStr = Field(max_length=2000)
    include_archived: bool = False
    limit: int = Field(4, ge=1, le=4)


class SpacesSearchInput(ViewInput):
    query: CleanStr = Field(min_length=1, max_length=2000)
    limit: int = Field(6, ge=1, le=6)
    space_ids: list[CleanStr] = Field(default_factory=list)


class RelatedInput(ViewInput):
    id: CleanStr = Field(min_length=1, max_length=200)
    depth: int = Field(2, ge=1, le=5)
    edge: EdgeType | None = None
    space_id: CleanStr | None = None


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
