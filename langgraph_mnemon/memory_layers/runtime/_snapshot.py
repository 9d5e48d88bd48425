"""The model-facing Runtime Memory snapshot: both files with importance and age annotations,
MEMORY entries scoped to other git branches hidden. Each file is a fenced block
(:mod:`._fence`): stored text cannot close or open a block or fake an entry header.

Example:
    >>> snap = render_snapshot(entries, revision, branch="main", moment=now, limits=limits)
    >>> snap.text.splitlines()[0]
    'MNEMON RUNTIME MEMORY SNAPSHOT'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from langgraph_mnemon.memory_layers.runtime._entries import FILE_NAMES, joined_bytes
from langgraph_mnemon.memory_layers.runtime._fence import SnapshotEntry, fence_file
from langgraph_mnemon.memory_layers.runtime._models import RuntimeEntry, RuntimeSnapshot
from langgraph_mnemon.storage.git import current_branch

__all__ = ["current_git_branch", "render_snapshot"]

_ROLES = (("user", "user profile"), ("memory", "working reference"))


def current_git_branch(workspace: Path | str | None) -> str | None:
    """The checked-out branch of the git work tree containing ``workspace``.

    Args:
        workspace: any folder inside the work tree; ``None`` means "no workspace".

    Returns:
        The branch name, or ``None`` outside git, on a detached HEAD or without ``workspace``
        (see :func:`langgraph_mnemon.storage.git.current_branch`).

    Example:
        >>> current_git_branch(None) is None
        True
    """
    return current_branch(workspace)


def render_snapshot(
    entries: Sequence[RuntimeEntry],
    revision: str,
    *,
    branch: str | None,
    moment: datetime,
    limits: Mapping[str, int],
) -> RuntimeSnapshot:
    """The snapshot of ``entries`` (both targets, file order) at ``revision``.

    ``moment`` (aware) dates the age annotations; ``branch`` hides MEMORY entries scoped to
    other branches (``None`` shows every entry and no branch line).
    """
    hidden = sum(1 for e in entries if not _visible(e, branch))
    lines = ["MNEMON RUNTIME MEMORY SNAPSHOT", f"Revision: {revision}"]
    if branch is not None:
        suffix = ""
        if hidden:
            suffix = f" ({hidden} branch-scoped entr{'y' if hidden == 1 else 'ies'} hidden)"
        lines.append(f"Git branch: {branch}{suffix}")
    for target, role in _ROLES:
        stored = [e for e in entries if e.target == target]
        lines += _file_section(target, role, stored, branch, moment, limits[target])
    return RuntimeSnapshot(text="\n".join(lines), revision=revision, branch=branch, hidden=hidden)


def _file_section(
    target: str,
    role: str,
    stored: list[RuntimeEntry],
    branch: str | None,
    moment: datetime,
    limit: int,
) -> list[str]:
    shown = [e for e in stored if _visible(e, branch)]
    used = joined_bytes(e.content for e in stored)
    name = FILE_NAMES[target]
    fenced = [
        SnapshotEntry.model_construct(  # fields are the host's own: no second validation
            importance=e.importance,
            created=_age(e.created_at, moment),
            updated=_age(e.updated_at, moment),
            content=e.content,
        )
        for e in shown
    ]
    return [
        "",
        (f"Contents of {name} ({role}; entries: {len(shown)}; UTF-8 bytes: {used}/{limit})"),
        *fence_file(name, fenced),
    ]


def _age(stamp: str, now: datetime) -> str:
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return "unknown"
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    seconds = (now - then).total_seconds()
    if seconds < 0:
        return "future"
    return f"{int(seconds // 86400)}d"


def _visible(entry: RuntimeEntry, branch: str | None) -> bool:
    if entry.target == "user" or branch is None or not entry.branches:
        return True
    return branch in entry.branches
