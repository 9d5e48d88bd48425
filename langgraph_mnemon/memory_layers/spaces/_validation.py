"""The limits of Memory Spaces and the checks every public call runs before any I/O.

Text arguments (names, descriptions, content, tags, entities, queries, ids) have NUL characters
dropped; a lone surrogate (half of a character pair) or a value of the wrong type raises
:class:`InvalidInputError`, and so does NUL in metadata keys, metadata values and secrets.
Each message names the argument and says what is allowed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from pydantic import ValidationError

from langgraph_mnemon.contracts import check_text, shown
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.spaces._fusion import quality_policies
from langgraph_mnemon.memory_layers.spaces._models import (
    CATEGORIES,
    EDGE_TYPES,
    INTENTS,
    SEARCH_MODES,
    SOURCES,
    RememberItem,
)

__all__ = [
    "DEFAULT_SPACE_ID",
    "MAX_BATCH",
    "MAX_BROWSE_OFFSET",
    "MAX_CONTENT_CHARS",
    "MAX_DESCRIPTION_CHARS",
    "MAX_ENTITIES",
    "MAX_ENTITY_CHARS",
    "MAX_ENTITY_SCAN_ROWS",
    "MAX_MEMORY_ID_CHARS",
    "MAX_MERGE_SOURCES",
    "MAX_NAME_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "NATIVE_PROVIDER_ID",
    "SPACE_ID_PATTERN",
    "SearchArgs",
    "check_choice",
    "check_confirm",
    "check_int",
    "check_link",
    "check_merge_sources",
    "check_policy",
    "check_search",
    "check_space_id",
    "check_text_arg",
    "remember_item",
    "remember_items",
    "string_list",
    "supersede_item",
]

DEFAULT_SPACE_ID = "default"
"""The id of the first space of an empty catalog."""
NATIVE_PROVIDER_ID = "mnemos"
MAX_QUERY_CHARS = 2000
MAX_CONTENT_CHARS = 65_536
MAX_NAME_CHARS = 120
MAX_DESCRIPTION_CHARS = 500
MAX_TAGS = 20
MAX_TAG_CHARS = 100
MAX_ENTITIES = 50
MAX_ENTITY_CHARS = 200
MAX_METADATA_KEYS = 32
MAX_METADATA_VALUE_CHARS = 1000
MAX_BATCH = 1000
MAX_MERGE_SOURCES = 20
MAX_ENTITY_SCAN_ROWS = 5000
SPACE_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""What a Memory Space id looks like (``default``, ``space-3f2a...``)."""
MAX_MEMORY_ID_CHARS = 200
MAX_BROWSE_OFFSET = 10_000_000
_ITEM_KEYS = ("content", "category", "importance", "tags", "entities", "source", "metadata")


def check_text_arg(value: Any, field: str, *, limit: int, required: bool = True) -> str:
    """``value`` as stripped text of at most ``limit`` characters (NUL dropped)."""
    text = check_text(value, field, nul="strip").strip()
    if required and not text:
        raise InvalidInputError(f"{field} must not be empty")
    if len(text) > limit:
        raise InvalidInputError(f"{field} is {len(text)} characters; the limit is {limit}")
    return text


def string_list(value: Any, field: str, *, most: int, chars: int) -> tuple[str, ...]:
    """A list of short texts (tags, entities), deduplicated in order; None is empty."""
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidInputError(f"{field} must be a list of strings")
    out: list[str] = []
    for item in value:
        text = check_text_arg(item, f"each of {field}", limit=chars)
        if text not in out:
            out.append(text)
    if len(out) > most:
        raise InvalidInputError(f"{field} has {len(out)} items; at most {most} are allowed")
    return tuple(out)


def _metadata_value(key: str, item: Any) -> None:
    if isinstance(item, str):
        if len(item) > MAX_METADATA_VALUE_CHARS:
            raise InvalidInputError(
                f"metadata[{key!r}] is longer than {MAX_METADATA_VALUE_CHARS} characters"
            )
        check_text(item, f"metadata[{key!r}]")
    elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 2**63:
        raise InvalidInputError(f"metadata[{key!r}] must fit in 64 bits")
    elif isinstance(item, float) and not math.isfinite(item):
        raise InvalidInputError(f"metadata[{key!r}] must be a finite number")
    elif not isinstance(item, (bool, int, float)):
        raise InvalidInputError(
            f"metadata[{key!r}] must be a string, number or boolean (got {type(item).__name__})"
        )


def _metadata(value: Any) -> dict[str, str | int | float | bool]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError("metadata must be a mapping of short keys to scalar values")
    if len(value) > MAX_METADATA_KEYS:
        raise InvalidInputError(f"metadata has {len(value)} keys; at most {MAX_METADATA_KEYS}")
    out: dict[str, str | int | float | bool] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key.strip() or len(key) > 64:
            raise InvalidInputError("metadata keys must be non-empty strings of ≤64 characters")
        check_text(key, "a metadata key")
        _metadata_value(key, item)
        out[key] = item
    return out


def check_choice(value: Any, field: str, allowed: Sequence[str], *, optional: bool) -> Any:
    """``value`` when it is one of ``allowed`` (or None with ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or value not in allowed:
        raise InvalidInputError(f"{field} must be one of {', '.join(allowed)} (got {shown(value)})")
    return value


def check_int(value: Any, field: str, low: int, high: int) -> int:
    """``value`` when it is an integer (not a bool) in ``low..high``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInputError(f"{field} must be an integer between {low} and {high}")
    return value


def check_space_id(value: Any, field: str = "space_id") -> str:
    """``value`` as a Memory Space id (see :data:`SPACE_ID_PATTERN`), stripped."""
    if not isinstance(value, str) or not SPACE_ID_PATTERN.match(value.strip()):
        raise InvalidInputError(
            f"{field} must be 1-64 characters of letters, digits, '.', '_' or '-' starting "
            f"with a letter or digit (got {shown(value)})"
        )
    return value.strip()


def check_policy(policy_id: Any) -> str:
    """``policy_id`` when a recall quality policy is registered under it."""
    if policy_id not in quality_policies():
        raise InvalidInputError(
            f"unknown recall quality policy {shown(policy_id)}; use one of "
            f"{', '.join(quality_policies())}"
        )
    return policy_id


def check_merge_sources(source_space_ids: Any, deactivate_sources: Any) -> list[str]:
    """The source ids of a merge (1 to :data:`MAX_MERGE_SOURCES` valid ids)."""
    if isinstance(source_space_ids, str) or not isinstance(source_space_ids, Sequence):
        raise InvalidInputError("source_space_ids must be a list of space ids")
    if not 1 <= len(source_space_ids) <= MAX_MERGE_SOURCES:
        raise InvalidInputError(f"merge takes 1 to {MAX_MERGE_SOURCES} source spaces")
    checked = [check_space_id(s, "source_space_ids[]") for s in source_space_ids]
    if not isinstance(deactivate_sources, bool):
        raise InvalidInputError("deactivate_sources must be true or false")
    return checked


class SearchArgs(NamedTuple):
    """The checked arguments of a federated search."""

    query: str
    limit: int
    mode: str
    category: str | None
    source: str | None
    intent: str | None
    policy_id: str


def check_search(
    query: Any,
    *,
    limit: Any,
    mode: Any,
    category: Any,
    source: Any,
    intent: Any,
    policy_id: Any,
    default_limit: int,
) -> SearchArgs:
    """The arguments of :meth:`MemorySpaces.asearch`, checked in the order they are listed."""
    text = check_text_arg(query, "query", limit=MAX_QUERY_CHARS)
    limit = default_limit if limit is None else check_int(limit, "limit", 1, 50)
    check_choice(mode, "mode", SEARCH_MODES, optional=False)
    check_choice(category, "category", CATEGORIES, optional=True)
    check_choice(source, "source", SOURCES, optional=True)
    check_choice(intent, "intent", INTENTS, optional=True)
    check_policy(policy_id)
    return SearchArgs(text, limit, mode, category, source, intent, policy_id)


def check_link(
    source_id: Any, target_id: Any, type: Any, weight: Any, reason: Any
) -> tuple[str, str, float, str | None]:
    """``(source id, target id, weight, reason)`` of a link; ``type`` must be an edge type."""
    src = check_text_arg(source_id, "source_id", limit=MAX_MEMORY_ID_CHARS)
    dst = check_text_arg(target_id, "target_id", limit=MAX_MEMORY_ID_CHARS)
    check_choice(type, "type", EDGE_TYPES, optional=False)
    if (
        isinstance(weight, bool)
        or not isinstance(weight, (int, float))
        or not (0 <= weight <= 1)  # before float(): a huge int does not fit one
        or not math.isfinite(weight)
    ):
        raise InvalidInputError("weight must be a number between 0 and 1")
    note = None if reason is None else check_text_arg(reason, "reason", limit=1000, required=False)
    return src, dst, float(weight), note or None


def remember_item(
    content: Any,
    category: Any,
    importance: Any,
    tags: Any,
    entities: Any,
    source: Any,
    metadata: Any,
) -> RememberItem:
    """One checked write (content, category, importance 1-5, tags, entities, source, metadata)."""
    text = check_text_arg(content, "content", limit=MAX_CONTENT_CHARS)
    check_choice(category, "category", CATEGORIES, optional=False)
    check_int(importance, "importance", 1, 5)
    check_choice(source, "source", SOURCES, optional=False)
    try:
        return RememberItem(
            content=text,
            category=category,
            importance=importance,
            tags=string_list(tags, "tags", most=MAX_TAGS, chars=MAX_TAG_CHARS),
            entities=string_list(entities, "entities", most=MAX_ENTITIES, chars=MAX_ENTITY_CHARS),
            source=source,
            metadata=_metadata(metadata),
        )
    except ValidationError as exc:
        raise InvalidInputError(f"invalid memory: {exc.errors()[0]['msg']}") from None


HISTORY_KEYS = ("supersedes", "superseded_by", "superseded_at")
"""Metadata keys the host writes for a supersede (a caller's own are refused there)."""


def supersede_item(
    old_id: str,
    content: Any,
    category: Any,
    importance: Any,
    tags: Any,
    entities: Any,
    source: Any,
    metadata: Any,
) -> RememberItem:
    """The checked successor of ``old_id``: :func:`remember_item` with ``supersedes`` added to
    its metadata (the 32-key limit counts it)."""
    item = remember_item(content, category, importance, tags, entities, source, metadata)
    taken = [key for key in HISTORY_KEYS if key in item.metadata]
    if taken:
        raise InvalidInputError(
            f"metadata key {taken[0]!r} is written by supersede itself; leave it out"
        )
    linked = {**item.metadata, "supersedes": old_id}
    if len(linked) > MAX_METADATA_KEYS:
        raise InvalidInputError(
            f"metadata has {len(item.metadata)} keys; a supersede adds 'supersedes', so at "
            f"most {MAX_METADATA_KEYS - 1}"
        )
    return item.model_copy(update={"metadata": linked})


def _mapped_item(index: int, raw_item: Any) -> RememberItem:
    if not isinstance(raw_item, Mapping):
        raise InvalidInputError(f"items[{index}] must be a mapping with 'content'")
    extra = set(raw_item) - set(_ITEM_KEYS)
    if extra:
        raise InvalidInputError(
            f"items[{index}] has unknown keys {', '.join(sorted(extra))}; allowed: "
            f"{', '.join(sorted(_ITEM_KEYS))}"
        )
    try:
        return remember_item(
            raw_item.get("content"),
            raw_item.get("category", "general"),
            raw_item.get("importance", 3),
            raw_item.get("tags"),
            raw_item.get("entities"),
            raw_item.get("source", "agent"),
            raw_item.get("metadata"),
        )
    except InvalidInputError as exc:
        raise InvalidInputError(f"items[{index}]: {exc.message}") from None


def remember_items(items: Any) -> list[RememberItem]:
    """Every item of a batch write, checked; the error names the first bad item."""
    if isinstance(items, (str, Mapping)) or not isinstance(items, Sequence):
        raise InvalidInputError("items must be a list of mappings with a 'content' key")
    if len(items) > MAX_BATCH:
        raise InvalidInputError(f"at most {MAX_BATCH} items per call; split the batch")
    return [_mapped_item(index, raw_item) for index, raw_item in enumerate(items)]


def check_confirm(space_id: str, confirm: Any, action: str) -> None:
    """``confirm`` must be the space id typed again (surrounding blanks ignored).

    Raises:
        InvalidInputError: code ``confirm-mismatch``; nothing was changed.
    """
    if not isinstance(confirm, str) or confirm.strip() != space_id:
        raise InvalidInputError(
            f"to {action} Memory Space {space_id!r}, pass confirm={space_id!r} (the space id "
            "typed again); nothing was changed",
            code="confirm-mismatch",
        )
