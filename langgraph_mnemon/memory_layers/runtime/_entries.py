"""Runtime Memory entry rules: what an entry, a target, an importance and a branch list may be,
how big entries are once joined, and the checks every request and compaction input passes.

Everything here is pure (no I/O) and raises :class:`InvalidInputError` with the messages the
API has always given. Importance words are :data:`langgraph_mnemon.contracts.Importance`, ranked
by :data:`langgraph_mnemon.contracts.IMPORTANCE_LEVELS` (critical=5, normal=3, low=1).

Example:
    >>> normalize_content("  Prefers   tea. ")
    'Prefers tea.'
    >>> joined_bytes(["ab", "cd"])  # two 2-byte entries and the 4-byte delimiter
    8
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from langgraph_mnemon.contracts import IMPORTANCE_LEVELS, Importance, check_text
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.runtime._models import (
    CompactedEntry,
    MaintenancePlan,
    RuntimeEntry,
    RuntimeMutation,
    RuntimeTarget,
)

__all__ = [
    "DELIMITER",
    "DELIMITER_BYTES",
    "FILE_NAMES",
    "MAX_BRANCHES",
    "MAX_BRANCH_CHARS",
    "MAX_ENTRY_BYTES",
    "TARGETS",
    "check_compaction_args",
    "check_request",
    "checked_candidates",
    "entry_bytes",
    "entry_from_json",
    "joined_bytes",
    "make_request",
    "normalize_content",
    "reject_bad_candidates",
    "render_projection",
    "validate_branches",
    "validate_importance",
    "validate_target",
]

DELIMITER = "\n§\n"
DELIMITER_BYTES = len(DELIMITER.encode())  # 4: "§" is two bytes in UTF-8
MAX_ENTRY_BYTES = 8192
MAX_BRANCHES = 16
MAX_BRANCH_CHARS = 128
TARGETS: tuple[RuntimeTarget, ...] = ("user", "memory")
FILE_NAMES = {"user": "USER.md", "memory": "MEMORY.md"}
_WHITESPACE = re.compile(r"[\s\ufeff]+")
_BRANCH_CHARS = re.compile(r"^[A-Za-z0-9._/-]+$")
_MAX_RAW_CHARS = 64 * MAX_ENTRY_BYTES  # longer input cannot collapse to a storable entry


# --- single values ---------------------------------------------------------------------------


def normalize_content(value: Any, field: str = "content") -> str:
    """Trim and collapse whitespace; reject what cannot be stored.

    NUL characters are refused, not stripped (they would sit in USER.md / MEMORY.md and in
    every prompt), as are lone surrogates, the ``§`` delimiter and more than
    :data:`MAX_ENTRY_BYTES`.

    Raises:
        InvalidInputError: not text, empty after trimming, holds ``§``, or too large.
    """
    value = check_text(value, field)
    if len(value) > _MAX_RAW_CHARS:
        raise InvalidInputError(
            f"{field} is too large ({len(value)} characters; max {MAX_ENTRY_BYTES} bytes)"
        )
    text = _WHITESPACE.sub(" ", value).strip()
    if not text:
        raise InvalidInputError(f"{field} is required")
    if "§" in text:
        raise InvalidInputError(f"{field} must not contain the reserved § entry delimiter")
    size = len(text.encode())
    if size > MAX_ENTRY_BYTES:
        raise InvalidInputError(f"{field} is too large ({size} bytes; max {MAX_ENTRY_BYTES})")
    return text


def validate_target(value: Any) -> RuntimeTarget:
    """``user`` or ``memory`` (:class:`InvalidInputError` otherwise)."""
    if not isinstance(value, str) or value not in TARGETS:
        raise InvalidInputError("target must be memory or user")
    return value  # type: ignore[return-value]


def validate_importance(value: Any) -> Importance:
    """One of the :data:`~langgraph_mnemon.contracts.IMPORTANCE_LEVELS` words."""
    if not isinstance(value, str) or value not in IMPORTANCE_LEVELS:
        raise InvalidInputError("importance must be critical, normal, or low")
    return value  # type: ignore[return-value]


def validate_branches(value: Any) -> tuple[str, ...] | None:
    """Validate git branch names for a MEMORY entry; ``[]`` / ``None`` mean unscoped."""
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidInputError("branches must be a list of branch names")
    names = list(value)
    if not names:
        return None
    if len(names) > MAX_BRANCHES:
        raise InvalidInputError(f"branches accepts at most {MAX_BRANCHES} names")
    seen: set[str] = set()
    for name in names:
        problem = _branch_problem(name)
        if problem:
            raise InvalidInputError(f"invalid branch name {name!r}: {problem}")
        if name in seen:
            raise InvalidInputError(f"branch {name!r} is listed twice")
        seen.add(name)
    return tuple(names)


def _branch_problem(name: Any) -> str | None:
    if not isinstance(name, str):
        return "must be a string"
    if not name:
        return "must not be empty"
    if len(name) > MAX_BRANCH_CHARS:
        return f"longer than {MAX_BRANCH_CHARS} characters"
    if not _BRANCH_CHARS.match(name):
        return "only letters, digits, '.', '_', '/' and '-' are allowed"
    if name[0] in "/-":
        return "must not start with '/' or '-'"
    if name[-1] in "/.":
        return "must not end with '/' or '.'"
    for bad in ("..", "//", "@{"):
        if bad in name:
            return f"must not contain {bad!r}"
    return None


def _target_branches(value: Any, target: str) -> tuple[str, ...] | None:
    branches = validate_branches(value)
    if target == "user" and branches is not None:
        raise InvalidInputError("branches applies to target=memory only")
    return branches


# --- sizes and projections -------------------------------------------------------------------


def entry_bytes(content: str) -> int:
    """UTF-8 bytes of one entry."""
    return len(content.encode())


def joined_bytes(contents: Iterable[str]) -> int:
    """UTF-8 bytes of ``contents`` joined by the 4-byte delimiter."""
    total = count = 0
    for content in contents:
        total += entry_bytes(content)
        count += 1
    return total + DELIMITER_BYTES * max(count - 1, 0)


def render_projection(contents: Sequence[str]) -> str:
    """The body of USER.md / MEMORY.md: entries joined by the delimiter, a trailing newline."""
    return DELIMITER.join(contents) + "\n" if contents else ""


# --- stored entries --------------------------------------------------------------------------


def entry_from_json(item: Any) -> RuntimeEntry:
    """One entry of ``memories.json``, every field checked (``ValueError`` on a bad one)."""
    if not isinstance(item, dict):
        raise InvalidInputError("not an object")
    target = validate_target(item.get("target"))
    content = _stored_content(item.get("content"))
    importance = validate_importance(item.get("importance", "normal"))
    for key in ("created_at", "updated_at"):
        if not isinstance(item.get(key), str):
            raise InvalidInputError(f"{key} must be a string")
    branches = None
    if "branches" in item:
        if target == "user":
            raise InvalidInputError("branches applies to target=memory only")
        branches = validate_branches(item["branches"])
        if branches is None:
            raise InvalidInputError("branches must list 1 to 16 names when present")
    # Every field was checked above; skip a second validation pass on each load.
    return RuntimeEntry.model_construct(
        content=content,
        created_at=item["created_at"],
        updated_at=item["updated_at"],
        target=target,
        importance=importance,
        branches=branches,
    )


def _stored_content(content: Any) -> str:
    if isinstance(content, str) and "\x00" in content:
        # Older builds accepted NUL: read such an entry without it (projections are repaired
        # and the next commit rewrites the authority clean).
        return normalize_content(content.replace("\x00", ""))
    if normalize_content(content) != content:
        raise InvalidInputError("content is not whitespace-normalised")
    return content  # type: ignore[no-any-return]


# --- requests --------------------------------------------------------------------------------


def make_request(action: str, target: Any, **fields: Any) -> RuntimeMutation:
    """A checked, normalised :class:`RuntimeMutation` from loose arguments.

    ``branches=[]`` on a replace means "clear" (kept as ``()``); ``None`` keeps the old ones.
    """
    target = validate_target(target)
    importance = fields.get("importance")
    if importance is not None:
        importance = validate_importance(importance)
    branches = fields.get("branches")
    if branches is not None:
        branches = _target_branches(branches, target)
        if branches is None and action == "replace":
            branches = ()  # explicit [] clears on replace
    return RuntimeMutation(
        action=action,  # type: ignore[arg-type]
        target=target,
        content=normalize_content(fields.get("content")) if action != "remove" else None,
        old_text=normalize_content(fields.get("old_text"), "old_text") if action != "add" else None,
        importance=importance,
        branches=branches,
    )


def check_request(request: Any) -> RuntimeMutation:
    """``request`` re-checked field by field (it may come from ``model_construct``)."""
    if not isinstance(request, RuntimeMutation):
        raise InvalidInputError("request must be a RuntimeMutation")
    # getattr: a model_construct()-ed request may lack fields or hold any value.
    action = getattr(request, "action", None)
    if not isinstance(action, str) or action not in ("add", "replace", "remove"):
        raise InvalidInputError("action must be add, replace or remove")
    return make_request(
        action,
        getattr(request, "target", None),
        content=getattr(request, "content", None),
        old_text=getattr(request, "old_text", None),
        importance=getattr(request, "importance", None),
        branches=getattr(request, "branches", None),
    )


# --- compaction input ------------------------------------------------------------------------


def check_compaction_args(revision: Any, max_bytes: Any) -> None:
    """The plan revision is a string; ``max_bytes`` is None or a non-negative integer."""
    if not isinstance(revision, str):
        raise InvalidInputError("revision must be the plan's revision string")
    if max_bytes is not None and (
        isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0
    ):
        raise InvalidInputError("max_bytes must be a non-negative integer")


def checked_candidates(compacted: Any, target: str) -> list[CompactedEntry]:
    """Compacted entries (models or dicts) with normalised content, importance and branches."""
    if isinstance(compacted, (str, bytes)) or not isinstance(compacted, Sequence):
        raise InvalidInputError("compacted must be a list of CompactedEntry")
    return [_candidate(item, index, target) for index, item in enumerate(compacted)]


def _candidate(item: Any, index: int, target: str) -> CompactedEntry:
    if isinstance(item, dict):
        try:
            item = CompactedEntry.model_validate(item)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise InvalidInputError(f"compacted[{index}] is not a CompactedEntry: {exc}") from None
    if not isinstance(item, CompactedEntry):
        raise InvalidInputError(f"compacted[{index}] must be a CompactedEntry")
    branches = _target_branches(item.branches, target)
    return CompactedEntry(
        content=normalize_content(item.content, f"compacted[{index}].content"),
        importance=validate_importance(item.importance),
        branches=branches,
        source_indexes=item.source_indexes,
    )


def reject_bad_candidates(
    candidates: Sequence[CompactedEntry], plan: MaintenancePlan | None
) -> None:
    """Refuse duplicates, the pending content, and the entry being replaced or removed."""
    pending = plan.pending.content if plan is not None and plan.pending else None
    excluded = plan.excluded.content if plan is not None and plan.excluded else None
    seen: set[str] = set()
    for cand in candidates:
        if cand.content in seen:
            raise InvalidInputError("compacted runtime memory contains duplicate entries")
        seen.add(cand.content)
        if cand.content == pending:
            raise InvalidInputError("compacted runtime memory duplicates the pending mutation")
        if cand.content == excluded:
            raise InvalidInputError(
                "compacted runtime memory reintroduces the replaced or removed entry"
            )
