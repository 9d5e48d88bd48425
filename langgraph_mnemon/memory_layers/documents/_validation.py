"""Argument checks of the Documents layer: every ``validate_*`` and the shared checks behind them.

Each public entry point passes its arguments through here before any I/O. The messages are
part of the interface (the CLI, tools and tests show them), so they are kept word for word; the
repeated shapes (a bounded text field, an integer in a range, a flag, a list of strings) each
have one helper.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from langgraph_mnemon.contracts import check_text, shown
from langgraph_mnemon.errors import InvalidInputError, NotFoundError
from langgraph_mnemon.memory_layers.documents._models import (
    DOCUMENT_ID_PATTERN,
    MAX_DESCRIPTION_CHARS,
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
    MAX_SESSION_ID_CHARS,
    MAX_SESSION_IDS,
    MAX_SOURCE_PATH_CHARS,
    MAX_SOURCE_PATHS,
    MAX_SPACE_ID_CHARS,
    MAX_SPACE_IDS,
    MAX_SUMMARY_CHARS,
    MAX_TITLE_CHARS,
    DocumentMutation,
)

__all__ = [
    "as_tuple",
    "checked_bool",
    "checked_int",
    "checked_mutation",
    "optional_tuple",
    "validate_body",
    "validate_description",
    "validate_document_id",
    "validate_id_prefix",
    "validate_limits",
    "validate_query",
    "validate_revision",
    "validate_search_limit",
    "validate_session_ids",
    "validate_source_path",
    "validate_source_paths",
    "validate_space_ids",
    "validate_summary",
    "validate_title",
]

_SPACES = re.compile(r"\s+")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")
_BODY_LIMIT_MAX = 64 * 1024 * 1024
_ACTIVE_LIMIT_MAX = 1024 * 1024 * 1024
# Fields of a mutation in the order they are checked (the first bad one is reported).
_CREATE_FIELDS = ("title", "content", "description", "source_paths", "session_ids")
_UPDATE_FIELDS = ("title", "description", "content", "source_paths", "session_ids")
_LIST_FIELDS = ("source_paths", "session_ids")


# --- shared shapes ----------------------------------------------------------------------------


def checked_int(value: Any, message: str, *, low: int = 1, high: int | None = None) -> int:
    """``value`` if it is an int (not a bool) in ``low..high``, else ``InvalidInputError``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        raise InvalidInputError(message)
    return value


def checked_bool(value: Any, field: str) -> bool:
    """``value`` if it is a bool, else ``InvalidInputError`` ("``field`` must be true or false")."""
    if not isinstance(value, bool):
        raise InvalidInputError(f"{field} must be true or false")
    return value


def as_tuple(value: Any, field: str) -> tuple[Any, ...]:
    """A list argument as a tuple; a string or a non-iterable is refused."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidInputError(f"{field} must be a list of strings")
    return tuple(value)


def optional_tuple(value: Any, field: str) -> tuple[Any, ...] | None:
    """:func:`as_tuple`, with ``None`` kept (an update that leaves the field alone)."""
    return None if value is None else as_tuple(value, field)


def _string_list(value: Any, field: str, most: int) -> list[Any]:
    if value is None:
        return []
    items = list(as_tuple(value, field))
    if len(items) > most:
        raise InvalidInputError(f"{field} accepts at most {most} items (got {len(items)})")
    return items


def _no_controls(value: str, field: str, allowed: str = "") -> None:
    for char in value:
        if unicodedata.category(char) == "Cc" and char not in allowed:
            raise InvalidInputError(f"{field} must not contain control characters")


def _check_str(value: Any, field: str) -> str:
    """``value`` if it is a string without lone surrogates (:func:`contracts.check_text`).

    NUL is each field's own rule: bodies drop it, every other field refuses it as a control
    character, so it is left in the returned value for that rule to see.
    """
    check_text(value, field, nul="strip")
    return value  # type: ignore[no-any-return]


def _not_too_long(text: str, field: str, max_chars: int) -> str:
    if len(text) > max_chars:
        raise InvalidInputError(f"{field} is too long ({len(text)} characters; max {max_chars})")
    return text


def _bounded(text: str, field: str, max_chars: int, allowed: str = "") -> str:
    """A text field's common tail: no control characters (but ``allowed``), ≤ ``max_chars``."""
    _no_controls(text, field, allowed)
    return _not_too_long(text, field, max_chars)


# --- fields -----------------------------------------------------------------------------------


def validate_title(value: Any) -> str:
    """A title with whitespace collapsed: required, at most 160 characters, no controls."""
    title = _SPACES.sub(" ", _check_str(value, "title")).strip()
    if not title:
        raise InvalidInputError("title is required")
    return _bounded(title, "title", MAX_TITLE_CHARS)


def validate_description(value: Any) -> str:
    """A trimmed description (``None`` → ``""``), at most 600 characters."""
    if value is None:
        return ""
    text = _check_str(value, "description").strip()
    return _bounded(text, "description", MAX_DESCRIPTION_CHARS, "\n\t\r")


def validate_body(value: Any, limit: int) -> str:
    """NUL characters removed, trimmed, non-empty, at most ``limit`` UTF-8 bytes."""
    body = _check_str(value, "content").replace("\x00", "").strip()
    if not body:
        raise InvalidInputError("content is required (the Document body is empty)")
    size = len(body.encode())
    if size > limit:
        raise InvalidInputError(
            f"content is too large: {size} bytes (limit {limit} bytes per Document). "
            "Split it into several Documents or shorten it.",
            code="document-too-large",
        )
    return body


def validate_summary(value: Any, *, required: bool) -> str | None:
    """A trimmed archive summary of at most 1,000 characters (``None`` when absent)."""
    text = "" if value is None else _check_str(value, "summary").strip()
    if not text:
        if required:
            raise InvalidInputError("summary is required")
        return None
    return _bounded(text, "summary", MAX_SUMMARY_CHARS, "\n\t\r")


def _ids(value: Any, field: str, most: int, max_chars: int) -> tuple[str, ...]:
    out: list[str] = []
    for item in _string_list(value, field, most):
        text = _check_str(item, f"{field} item").strip()
        if not text:
            raise InvalidInputError(f"{field} must not contain empty strings")
        _no_controls(text, f"{field} item")
        if len(text) > max_chars:
            raise InvalidInputError(f"{field} items are at most {max_chars} characters")
        if text not in out:
            out.append(text)
    return tuple(out)


def validate_session_ids(value: Any) -> tuple[str, ...]:
    """Up to 20 distinct non-empty session ids (agent threads) of at most 200 characters."""
    return _ids(value, "session_ids", MAX_SESSION_IDS, MAX_SESSION_ID_CHARS)


def validate_space_ids(value: Any) -> tuple[str, ...]:
    """Up to 20 distinct Memory Space ids of at most 1,000 characters.

    Messages name the argument by its wire name, ``memory_body_ids``.
    """
    return _ids(value, "memory_body_ids", MAX_SPACE_IDS, MAX_SPACE_ID_CHARS)


def validate_document_id(value: Any) -> str:
    """A document id (a UUID), lowercased."""
    if not isinstance(value, str) or not DOCUMENT_ID_PATTERN.match(value.strip().lower()):
        raise InvalidInputError(
            f"document id must be a UUID like 0f8fad5b-d9cb-469f-a165-70867728950e "
            f"(got {shown(value)}); list ids with `mnemon docs list`"
        )
    return value.strip().lower()


def validate_revision(value: Any, field: str = "expected_revision") -> int:
    """A document revision: a positive integer."""
    return checked_int(value, f"{field} must be a positive integer (a document revision)")


# --- source paths -----------------------------------------------------------------------------


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _path_parts(text: str) -> list[str]:
    """The segments of a source path written relative to the workspace, ``.`` dropped."""
    if "\\" in text:
        raise InvalidInputError(f"source path {text!r} must use '/' separators, not backslashes")
    if text.startswith("/") or _WINDOWS_DRIVE.match(text):
        raise InvalidInputError(
            f"source path {text!r} must be relative to the workspace, not absolute"
        )
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise InvalidInputError(
            f"source path {text!r} must stay inside the workspace ('..' is not allowed)"
        )
    if parts and parts[0] == "~":
        raise InvalidInputError(
            f"source path {text!r} must be relative to the workspace ('~' is not expanded)"
        )
    if not parts:
        raise InvalidInputError(f"source path {text!r} must name something inside the workspace")
    return parts


def _check_resolved(text: str, parts: list[str], workspace: Path, root: Path) -> None:
    """Where the path leads once existing links are followed: inside the workspace, not root."""
    real_workspace = os.path.realpath(workspace)
    target = os.path.realpath(os.path.join(real_workspace, *parts))
    if not _within(target, real_workspace) or target == real_workspace:
        raise InvalidInputError(
            f"source path {text!r} resolves outside the workspace {real_workspace} "
            "(through a symbolic link)"
        )
    if _within(target, os.path.realpath(root)):
        raise InvalidInputError(
            f"source path {text!r} points into the mnemon storage root; name the project file "
            "the Document describes instead"
        )


def validate_source_path(value: Any, workspace: Path, root: Path) -> str:
    """A workspace-relative, ``/``-separated path inside the workspace and outside ``root``.

    ``.`` segments and repeated slashes are dropped. The path need not exist and is never
    opened. Symbolic links that exist are followed for the inside/outside checks.
    """
    text = _check_str(value, "source path").strip()
    if not text:
        raise InvalidInputError("source paths must not be empty")
    _no_controls(text, "source path")
    parts = _path_parts(text)
    normal = "/".join(parts)
    if len(normal) > MAX_SOURCE_PATH_CHARS:
        raise InvalidInputError(f"source paths are at most {MAX_SOURCE_PATH_CHARS} characters")
    _check_resolved(text, parts, workspace, root)
    return normal


def validate_source_paths(value: Any, workspace: Path, root: Path) -> tuple[str, ...]:
    """Up to 50 distinct source paths (see :func:`validate_source_path`), first-seen order."""
    out: list[str] = []
    for item in _string_list(value, "source_paths", MAX_SOURCE_PATHS):
        path = validate_source_path(item, workspace, root)
        if path not in out:
            out.append(path)
    return tuple(out)


# --- whole arguments --------------------------------------------------------------------------


def _mutation_dict(mutation: Any) -> dict[Any, Any]:
    """A mutation as a dict with known keys and a valid action."""
    if isinstance(mutation, DocumentMutation):
        mutation = mutation.model_dump()
    if not isinstance(mutation, dict):
        raise InvalidInputError("mutation must be a DocumentMutation or a dict")
    unknown = {str(k)[:40] for k in mutation} - set(DocumentMutation.model_fields)
    if unknown:
        raise InvalidInputError(f"unknown mutation field(s): {', '.join(sorted(unknown))}")
    if mutation.get("action") not in ("create", "update"):
        raise InvalidInputError("mutation action must be create or update")
    return mutation


def checked_mutation(
    mutation: Any, *, body_limit: int, workspace: Path, root: Path
) -> DocumentMutation:
    """A :class:`DocumentMutation` (or its dict form) with every field validated.

    A create needs a title and content and takes no id; an update needs the id and checks only
    the fields it sets (``None`` keeps the stored value).
    """
    raw = _mutation_dict(mutation)
    checks: dict[str, Callable[[Any], Any]] = {
        "title": validate_title,
        "content": lambda v: validate_body(v, body_limit),
        "description": validate_description,
        "source_paths": lambda v: validate_source_paths(v, workspace, root),
        "session_ids": validate_session_ids,
    }
    fields: dict[str, Any] = {"action": raw["action"]}
    if raw["action"] == "create":
        if raw.get("id") is not None or raw.get("expected_revision") is not None:
            raise InvalidInputError("a create takes no id or expected_revision")
        for key in _CREATE_FIELDS:
            value = raw.get(key)
            fields[key] = checks[key]((value or ()) if key in _LIST_FIELDS else value)
        return DocumentMutation(**fields)
    fields["id"] = validate_document_id(raw.get("id"))
    for key in _UPDATE_FIELDS:
        if raw.get(key) is not None:
            fields[key] = checks[key](raw[key])
    if raw.get("expected_revision") is not None:
        fields["expected_revision"] = validate_revision(raw["expected_revision"])
    return DocumentMutation(**fields)


def validate_limits(body_limit_bytes: Any, active_limit_bytes: Any, lock_timeout: Any) -> None:
    """The constructor's numbers: byte limits in range, a lock timeout in (0, 600] seconds."""
    for name, value, high in (
        ("body_limit_bytes", body_limit_bytes, _BODY_LIMIT_MAX),
        ("active_limit_bytes", active_limit_bytes, _ACTIVE_LIMIT_MAX),
    ):
        checked_int(value, f"{name} must be an integer in 1..{high} (got {value!r})", high=high)
    if (
        isinstance(lock_timeout, bool)
        or not isinstance(lock_timeout, (int, float))
        or not 0 < lock_timeout <= 600
    ):
        raise InvalidInputError("lock_timeout must be a number of seconds in (0, 600]")


def validate_query(value: Any) -> str:
    """A search query: text (NUL dropped), at most 2,000 characters, then trimmed."""
    query = check_text(value, "query", nul="strip")
    return _not_too_long(query, "query", MAX_QUERY_CHARS).strip()


def validate_search_limit(value: Any) -> int:
    """How many search results: an integer in 1..50."""
    return checked_int(
        value, f"limit must be an integer in 1..{MAX_SEARCH_LIMIT}", high=MAX_SEARCH_LIMIT
    )


def validate_id_prefix(prefix: Any) -> str:
    """A document id prefix of at least 4 hexadecimal characters, lowercased.

    Raises ``NotFoundError`` for text that cannot start an id (the user named no document),
    ``InvalidInputError`` when it is too short to pick one.
    """
    text = check_text(prefix, "document id").strip()
    if not re.fullmatch(r"[0-9a-fA-F-]{1,36}", text):
        raise NotFoundError(
            f"{shown(text)} is not a document id (ids are hexadecimal, e.g. 3f2a9c1e); "
            "see `mnemon docs list`"
        )
    if len(text) < 4:
        raise InvalidInputError(
            f"{shown(text)} is too short to pick a document: give at least its first 4 characters"
        )
    return text.lower()
