"""Git helpers shared by the layers: the checked-out branch and the work tree's changes.

Both read-only and failure-tolerant: outside a git work tree (or without ``git`` on PATH)
they answer ``None``, never raise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["current_branch", "run_git", "work_tree_changes"]

_MAX_FILES = 50


def run_git(workspace: Path, *args: str, timeout: float) -> str | None:
    """Run ``git -C workspace *args``; its stdout, or ``None`` on any failure."""
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


def work_tree_changes(workspace: Path, *, timeout: float = 5.0) -> dict[str, object] | None:
    """Branch plus uncommitted, staged and untracked paths (50 each), or ``None`` outside git.

    A detached HEAD reads ``(detached at <sha>)``; a repository without commits
    ``(no commits yet)``.
    """
    inside = run_git(workspace, "rev-parse", "--is-inside-work-tree", timeout=timeout)
    if inside is None or inside.strip() != "true":
        return None
    branch = (run_git(workspace, "branch", "--show-current", timeout=timeout) or "").strip()
    if not branch:
        head = (run_git(workspace, "rev-parse", "--short", "HEAD", timeout=timeout) or "").strip()
        branch = f"(detached at {head})" if head else "(no commits yet)"
    return {
        "branch": branch,
        "uncommitted": _files(run_git(workspace, "diff", "--name-only", timeout=timeout)),
        "staged": _files(run_git(workspace, "diff", "--cached", "--name-only", timeout=timeout)),
        "untracked": _files(
            run_git(workspace, "ls-files", "--others", "--exclude-standard", timeout=timeout)
        ),
    }


def current_branch(workspace: Path | str | None) -> str | None:
    """The checked-out branch of the git work tree containing ``workspace``.

    ``None`` outside git or on a detached HEAD. Reads ``.git/HEAD`` directly (no subprocess),
    so it is cheap enough for every turn.
    """
    if workspace is None:
        return None
    here = Path(workspace).expanduser().absolute()
    for folder in (here, *here.parents):
        dotgit = folder / ".git"
        if dotgit.is_dir():
            head = dotgit / "HEAD"
        elif dotgit.is_file():
            try:
                pointer = dotgit.read_text().strip()
            except OSError:
                return None
            if not pointer.startswith("gitdir:"):
                return None
            gitdir = Path(pointer.removeprefix("gitdir:").strip())
            head = (gitdir if gitdir.is_absolute() else folder / gitdir) / "HEAD"
        else:
            continue
        try:
            text = head.read_text().strip()
        except OSError:
            return None
        prefix = "ref: refs/heads/"
        return text[len(prefix) :] if text.startswith(prefix) else None
    return None
