"""Git state of the workspace for CheckpointNodes (branch, uncommitted, staged, untracked)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from langgraph_mnemon.memory_layers.mnemos.models import GitState

__all__ = ["collect_git_state"]

_MAX_FILES = 50


def _git(workspace: Path, *args: str, timeout: float) -> str | None:
    git = shutil.which("git")
    if git is None:
        return None
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(
            [git, "-C", str(workspace), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _files(output: str | None) -> tuple[str, ...]:
    if not output:
        return ()
    return tuple(line for line in output.splitlines() if line.strip())[:_MAX_FILES]


def collect_git_state(workspace: Path, *, timeout: float = 5.0) -> GitState | None:
    """The work tree's branch and changed files, or ``None`` outside git (or without git).

    Unlike the reference it lists untracked files too (``git ls-files --others
    --exclude-standard``); each list keeps at most 50 paths.
    """
    inside = _git(workspace, "rev-parse", "--is-inside-work-tree", timeout=timeout)
    if inside is None or inside.strip() != "true":
        return None
    branch = (_git(workspace, "branch", "--show-current", timeout=timeout) or "").strip()
    if not branch:
        head = (_git(workspace, "rev-parse", "--short", "HEAD", timeout=timeout) or "").strip()
        branch = f"(detached at {head})" if head else "(no commits yet)"
    return GitState(
        branch=branch,
        uncommitted=_files(_git(workspace, "diff", "--name-only", timeout=timeout)),
        staged=_files(_git(workspace, "diff", "--cached", "--name-only", timeout=timeout)),
        untracked=_files(
            _git(workspace, "ls-files", "--others", "--exclude-standard", timeout=timeout)
        ),
    )
