"""Input checks of the Mnemos API: task ids, node references, content, tag lists, numbers.

Every check returns the value as it is stored (trimmed where the API trims) or raises
:class:`InvalidInputError` naming the field. Text refuses NUL characters and lone surrogates
(:func:`langgraph_mnemon.contracts.check_text`).

Example:
    >>> validate_task_id("task-1")
    'task-1'
    >>> string_list(["src", "auth"], "scope", max_items=16, max_chars=128)
    ['src', 'auth']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langgraph_mnemon.contracts import check_text, shown, text_problem
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.mnemos._models import ADDABLE_NODE_TYPES, ContextWindow

__all__ = [
    "LINK_TYPES",
    "MAX_CONTENT_CHARS",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MAX_TASK_ID_CHARS",
    "check_call_id",
    "check_content",
    "check_flag",
    "check_node_ref",
    "check_node_type",
    "check_origin",
    "check_positive_int",
    "check_tool_name",
    "check_unit",
    "check_window",
    "string_list",
    "validate_task_id",
]

MAX_TASK_ID_CHARS = 512
MAX_CONTENT_CHARS = 65_536
MAX_TAGS = 16
MAX_TAG_CHARS = 128
LINK_TYPES = ("related", "depends_on", "caused_by")


def validate_task_id(value: Any, field: str = "task_id") -> str:
    """A task id: a non-empty string of at most 512 characters without control characters
    or lone surrogates.

    Args:
        value: the id to check (for a LangGraph thread: its ``thread_id``).
        field: the name the error message uses.

    Returns:
        ``value`` unchanged.

    Raises:
        InvalidInputError: not a string, blank, too long, or holding a control character or
            a lone surrogate.

    Example:
        >>> validate_task_id("thread-42")
        'thread-42'
    """
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be a string (got {type(value).__name__})")
    if not value.strip():
        raise InvalidInputError(f"{field} is required (for a LangGraph thread: its thread_id)")
    if len(value) > MAX_TASK_ID_CHARS:
        raise InvalidInputError(f"{field} is longer than {MAX_TASK_ID_CHARS} characters")
    if any(ord(ch) < 32 for ch in value):
        raise InvalidInputError(f"{field} must not contain control characters")
    return check_text(value, field)  # a lone surrogate cannot be stored


def check_content(value: Any, field: str = "content") -> str:
    """Node text (content or summary): trimmed, non-empty, at most 65,536 characters."""
    text = check_text(value, field).strip()  # NUL and lone surrogates are refused
    if not text:
        raise InvalidInputError(f"{field} is required")
    if len(text) > MAX_CONTENT_CHARS:
        raise InvalidInputError(
            f"{field} is too long ({len(text)} characters; max {MAX_CONTENT_CHARS}); "
            "store a summary and keep the full text in a Document"
        )
    return text


def string_list(value: Any, field: str, *, max_items: int, max_chars: int) -> list[str]:
    """A list of short, non-empty strings without control characters (``None`` is ``[]``)."""
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidInputError(f"{field} must be a list of strings")
    items = list(value)
    if len(items) > max_items:
        raise InvalidInputError(f"{field} accepts at most {max_items} items")
    out = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise InvalidInputError(f"{field} items must be non-empty strings (got {shown(item)})")
        if len(item) > max_chars or any(ord(ch) < 32 for ch in item) or text_problem(item):
            raise InvalidInputError(
                f"{field} item {item[:40]!r} is too long or has control characters"
            )
        out.append(item.strip())
    return out


def check_unit(value: Any, field: str, *, low_open: bool = False, high_open: bool = False) -> float:
    """A number in [0, 1] (or an open end: ``low_open`` excludes 0, ``high_open`` excludes 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{field} must be a number between 0 and 1")
    inside = 0 <= value <= 1  # compared before float(): a huge int does not fit one
    if not inside or value != value or (low_open and value == 0) or (high_open and value == 1):
        low = "(0" if low_open else "[0"
        high = "1)" if high_open else "1]"
        said = repr(value) if isinstance(value, float) or inside else "an integer"
        raise InvalidInputError(f"{field} must lie in {low}, {high} (got {said})")
    return float(value)


def check_call_id(value: Any) -> str:
    """A tool call id: a non-empty string of at most 512 characters."""
    if not isinstance(value, str) or not value or len(value) > 512:
        raise InvalidInputError("call_id must be a non-empty string of at most 512 characters")
    return check_text(value, "call_id")


def check_flag(value: Any, field: str) -> bool:
    """A real ``bool`` (``1`` or ``"yes"`` are refused)."""
    if not isinstance(value, bool):
        raise InvalidInputError(f"{field} must be true or false (got {type(value).__name__})")
    return value


def check_positive_int(value: Any, field: str, *, maximum: int = 100_000) -> int:
    """An integer in 1..``maximum``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidInputError(f"{field} must be an integer between 1 and {maximum}")
    return value


MAX_WINDOW = 100_000_000


def check_window(value: Any, field: str = "context_window") -> ContextWindow | None:
    """A context window: ``None``, a :class:`ContextWindow`, or a number of tokens (``given``).

    Example:
        >>> check_window(8_000).label
        '8,000 tokens (given by the caller)'
    """
    if value is None or isinstance(value, ContextWindow):
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WINDOW:
        raise InvalidInputError(
            f"{field} must be a number of tokens between 1 and {MAX_WINDOW:,}, a "
            "ContextWindow or None (None: the window of the last reading, else the settings)"
        )
    return ContextWindow(tokens=value, source="given")


def check_node_ref(value: Any, field: str = "node_id") -> str:
    """A node id or a unique id prefix of 4 to 64 characters, trimmed."""
    if not isinstance(value, str) or not 4 <= len(value.strip()) <= 64:
        raise InvalidInputError(
            f"{field} must be a node id or a unique prefix of at least 4 characters"
        )
    return check_text(value, field).strip()


def check_node_type(value: Any) -> str:
    """A type ``add_node`` accepts (CheckpointNodes are written by ``checkpoint()``)."""
    if value not in ADDABLE_NODE_TYPES:
        hint = (
            "; CheckpointNodes are written by checkpoint() and the checkpointer"
            if value == "checkpoint"
            else ""
        )
        raise InvalidInputError(
            f"node type must be one of {', '.join(ADDABLE_NODE_TYPES)} (got {shown(value)}){hint}"
        )
    return value  # type: ignore[no-any-return]


def check_origin(value: Any) -> str:
    """Where a node came from (``agent_generated``, ``derived``, ...): at most 32 characters."""
    if not isinstance(value, str) or not value.strip() or len(value) > 32:
        raise InvalidInputError("origin must be a short non-empty string")
    check_text(value, "origin")
    return value.strip()


def check_tool_name(value: Any) -> str:
    """A tool name: non-empty, at most 256 characters, trimmed."""
    if not isinstance(value, str) or not value.strip() or len(value) > 256:
        raise InvalidInputError("tool_name must be a non-empty string of at most 256 chars")
    return check_text(value, "tool_name").strip()
