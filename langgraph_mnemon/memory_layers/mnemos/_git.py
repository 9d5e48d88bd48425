"""Git state of the workspace for CheckpointNodes (branch, uncommitted, staged, untracked)."""

from __future__ import annotations

from pathlib import Path

from langgraph_mnemon.memory_layers.mnemos._models import GitState
from langgraph_mnemon.storage.git import work_tree_changes

__all__ = ["collect_git_state"]


def collect_git_state(workspace: Path, *, timeout: float = 5.0) -> GitState | None:
    """The work tree's branch and changed files, or ``None`` outside git (or without git).

    Unlike the reference it lists untracked files too (``git ls-files --others
    --exclude-standard``); each list keeps at most 50 paths.
    """
    changes = work_tree_changes(workspace, timeout=timeout)
    return None if changes is None else GitState.model_validate(changes)
