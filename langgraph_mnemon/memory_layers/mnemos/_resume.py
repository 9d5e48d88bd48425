"""Rendering of the resume Markdown and the HandoffNode text, and the compression summary rule.

The resume keeps the reference's sections in its order — Goal, Active Constraints (DO NOT
VIOLATE), What You Were Working On, Current Sub-Goal, Working Memory, Progress So Far, Key Files,
Git State, MnemoGraph Summary — and omits every empty section except Goal (which says "No goal
recorded"). Each section is followed by a blank line.
"""

from __future__ import annotations

from langgraph_mnemon.contracts import iso_utc
from langgraph_mnemon.memory_layers.mnemos._models import (
    CheckpointRecord,
    NodeSummary,
    RecentFile,
    TaskSummary,
)

__all__ = [
    "SUMMARY_CHARS",
    "compress_summary",
    "format_key_file",
    "render_handoff",
    "render_resume",
]

SUMMARY_CHARS = 200
_MAX_KEY_FILES = 10
_MAX_GIT_FILES = 10


def compress_summary(content: str, existing: str | None = None, limit: int = SUMMARY_CHARS) -> str:
    """The summary a compressed node keeps.

    Stripped content up to ``limit`` characters; a longer text is cut back to its last space
    when that space lies in the last quarter, and gets ``"..."``. Empty content keeps the
    existing summary (or ``"(empty result)"``).
    """
    text = content.strip()
    if not text:
        return existing or "(empty result)"
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    if space > limit * 3 // 4:
        cut = cut[:space]
    return cut.rstrip() + "..."


def format_key_file(entry: RecentFile) -> str:
    """``path (edited 2x, read 1x)``, or ``path (touched)`` without counts."""
    parts = []
    if entry.edits:
        parts.append(f"edited {entry.edits}x")
    if entry.reads:
        parts.append(f"read {entry.reads}x")
    return f"{entry.path} ({', '.join(parts) if parts else 'touched'})"


def _section(lines: list[str], title: str, body: list[str]) -> None:
    if not body:
        return
    lines.append(f"### {title}")
    lines.extend(body)
    lines.append("")


def _node_summary_lines(nodes: NodeSummary | None) -> list[str]:
    if nodes is None or nodes.total == 0:
        return []
    body = [f"Nodes: {nodes.active} active, {nodes.compressed} compressed, {nodes.total} total"]
    if nodes.by_type:
        body.append("Types: " + ", ".join(f"{t}:{n}" for t, n in sorted(nodes.by_type.items())))
    return body


def render_resume(record: CheckpointRecord, summary: TaskSummary, nodes: NodeSummary | None) -> str:
    """The resume Markdown for ``record`` with ``summary`` (stored or live) and node counts."""
    fatigue = summary.fatigue if summary.fatigue is not None else record.fatigue
    lines = [
        "## Mnemos Session Resume",
        f"Checkpoint: {record.id[:8]}",
        f"Created: {iso_utc(record.created_at)}",
    ]
    if record.source == "langgraph" and record.checkpoint_id:
        lines.append(f"LangGraph checkpoint: {record.checkpoint_id} (thread {record.thread_id})")
    lines.append(
        f"Fatigue at checkpoint: {fatigue:.2f}"
        if fatigue is not None
        else "Fatigue at checkpoint: n/a"
    )
    lines.append("")
    _section(lines, "Goal", [summary.goal or "No goal recorded"])
    _section(lines, "Active Constraints (DO NOT VIOLATE)", [f"- {c}" for c in summary.constraints])
    _section(lines, "What You Were Working On", [summary.narrative] if summary.narrative else [])
    _section(
        lines, "Current Sub-Goal", [summary.current_subgoal] if summary.current_subgoal else []
    )
    _section(lines, "Working Memory", [summary.working_memory] if summary.working_memory else [])
    _section(lines, "Progress So Far", [f"- {r}" for r in summary.results])
    _section(
        lines,
        "Key Files (from recent activity)",
        [f"- {format_key_file(f)}" for f in summary.recent_files[:_MAX_KEY_FILES]],
    )
    git = summary.git_state
    if git is not None and git.branch:
        body = [f"Branch: {git.branch}"]
        for title, files in (
            ("Uncommitted files:", git.uncommitted),
            ("Staged files:", git.staged),
            ("Untracked files:", git.untracked),
        ):
            if files:
                body.append(title)
                body.extend(f"  - {f}" for f in files[:_MAX_GIT_FILES])
                if len(files) > _MAX_GIT_FILES:
                    body.append(f"  - ... and {len(files) - _MAX_GIT_FILES} more")
        if not (git.uncommitted or git.staged or git.untracked):
            body.append("Working tree clean.")
        _section(lines, "Git State", body)
    _section(lines, "MnemoGraph Summary", _node_summary_lines(nodes))
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


def render_handoff(
    task_id: str,
    summary: TaskSummary,
    nodes: NodeSummary,
    skills: list[str],
    *,
    checkpoints: int,
    fatigue_line: str | None,
) -> str:
    """The Markdown a HandoffNode stores: what a successor needs to take the task over."""
    lines = [f"## Handoff: task {task_id}", ""]
    _section(lines, "Goal", [summary.goal or "No goal recorded"])
    _section(lines, "Active Constraints (DO NOT VIOLATE)", [f"- {c}" for c in summary.constraints])
    open_work = [w for w in (summary.current_subgoal, summary.working_memory) if w]
    _section(lines, "Open Work", open_work)
    _section(lines, "Progress So Far", [f"- {r}" for r in summary.results])
    _section(lines, "Skills", [f"- {s}" for s in skills])
    _section(
        lines,
        "Key Files (from recent activity)",
        [f"- {format_key_file(f)}" for f in summary.recent_files[:_MAX_KEY_FILES]],
    )
    diagnostics = [
        (
            f"Nodes: {nodes.active} active, {nodes.compressed} compressed, "
            f"{nodes.evicted} evicted, {nodes.total} total"
        ),
        f"Checkpoints: {checkpoints}",
    ]
    if fatigue_line:
        diagnostics.append(fatigue_line)
    _section(lines, "Diagnostics", diagnostics)
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"
