"""Scope tags, directory keys and path extraction from tool arguments (pure functions).

A *scope tag* is a directory component of a path the task works on (``src/auth/login.py`` →
``["src", "auth"]``; a bare file name has none). Two tag lists overlap by Jaccard similarity;
two empty lists count as identical (1.0). A *directory key* is the parent directory of a path
(``src/auth`` for ``src/auth/login.py``, ``.`` for ``main.py``); fatigue counts directory keys,
never file names.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from langgraph_mnemon.contracts import safe_text

__all__ = [
    "MAX_SCOPE_TAGS",
    "PATH_ARGUMENT_KEYS",
    "dir_key",
    "extract_paths",
    "jaccard",
    "merge_tags",
    "normalize_path",
    "scope_tags_for_path",
]

MAX_SCOPE_TAGS = 5
PATH_ARGUMENT_KEYS = frozenset(
    {
        "path",
        "file",
        "file_path",
        "filepath",
        "filename",
        "file_name",
        "target_file",
        "source",
        "destination",
        "dir",
        "dir_path",
        "directory",
        "folder",
        "cwd",
        "paths",
        "files",
        "file_paths",
    }
)
"""Argument names whose string values are taken as paths whatever they look like."""

_PATHLIKE = re.compile(r"^(?:~|\.{1,2})?/?(?:[\w.@+\-]+/)+[\w.@+\-]*$")
_MAX_PATH_CHARS = 1024


def normalize_path(path: str, workspace: Path | None = None) -> str:
    """A POSIX-style path, relative to ``workspace`` when it lies inside it."""
    text = path.strip().replace("\\", "/")
    pure = PurePosixPath(text)
    if workspace is not None and pure.is_absolute():
        with contextlib.suppress(ValueError):
            pure = pure.relative_to(PurePosixPath(workspace.as_posix()))
    parts = [p for p in pure.parts if p not in ("", ".")]
    if pure.is_absolute():
        return "/" + "/".join(parts[1:]) if len(parts) > 1 else "/"
    return "/".join(parts) or "."


def scope_tags_for_path(path: str, workspace: Path | None = None) -> list[str]:
    """Directory components of ``path`` (file name and root dropped), at most 5."""
    normalized = normalize_path(path, workspace)
    parts = [p for p in PurePosixPath(normalized).parts[:-1] if p not in ("/", ".", "..")]
    return parts[:MAX_SCOPE_TAGS]


def dir_key(path: str, workspace: Path | None = None) -> str:
    """The parent directory of ``path`` (``"."`` for a bare file name)."""
    normalized = normalize_path(path, workspace)
    parent = str(PurePosixPath(normalized).parent)
    return parent or "."


def merge_tags(*tag_lists: Iterable[str]) -> list[str]:
    """Order-preserving union without duplicates."""
    seen: dict[str, None] = {}
    for tags in tag_lists:
        for tag in tags:
            seen.setdefault(tag, None)
    return list(seen)


def jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    """|a ∩ b| / |a ∪ b|; two empty lists give 1.0."""
    left, right = set(a), set(b)
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


def _pathlike(value: str) -> bool:
    return (
        0 < len(value) <= _MAX_PATH_CHARS
        and "://" not in value
        and not any(ch.isspace() for ch in value)
        and _PATHLIKE.match(value) is not None
    )


def extract_paths(args: Any) -> list[str]:
    """Path-like values in a tool call's arguments, in order.

    Strings under a known path key (``path``, ``file_path``, ``directory``, ``files`` ...) always
    count; other string values count when they look like a relative or absolute path with at
    least one ``/``. Nested dicts and lists are searched one level deep. Paths come back as
    storable text (``safe_text``: NUL dropped, a lone surrogate replaced), since they are
    observed, not accepted, and end up in the signal rows.
    """
    found: list[str] = []
    for key, text in string_arguments(args):
        named = key is not None and key.lower() in PATH_ARGUMENT_KEYS
        if (named and text and "\n" not in text and len(text) <= _MAX_PATH_CHARS) or _pathlike(
            text
        ):
            found.append(safe_text(text))
    return found


def string_arguments(args: Any) -> list[tuple[str | None, str]]:
    """``(key, stripped text)`` of every string in a tool call's arguments, in order: nested
    dicts and lists are searched one level deep (a list item takes its list's key)."""
    found: list[tuple[str | None, str]] = []

    def take(key: str | None, value: Any, depth: int) -> None:
        if isinstance(value, str):
            found.append((key, value.strip()))
        elif depth < 2 and isinstance(value, Mapping):
            for k, v in value.items():
                take(safe_text(k), v, depth + 1)
        elif depth < 2 and isinstance(value, (list, tuple)):
            for v in value:
                take(key, v, depth + 1)

    take(None, args, 0)
    return found
