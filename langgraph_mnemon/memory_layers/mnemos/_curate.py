"""The model's curation of its task memory (the ``mnemon_task`` tool): set the goal, add a
constraint, record a result, mark the task done.

Nodes written here have origin ``model``, so they are told apart from the host's derived ones
(origin ``derived``) and never changed by derivation; a model goal also stops derivation from
naming the task. :func:`check_curation` checks the input before any I/O; :func:`curate_into`
runs inside the caller's write transaction.

Example:
    >>> action, text = check_curation("set_goal", "Ship the CSV importer")
    >>> with db.write() as conn:
    ...     curate_into(conn, "task-1", action, text, moment=time.time()).node.origin
    'model'
"""

from __future__ import annotations

from typing import Any, Literal, cast

import sqlalchemy as sa

from langgraph_mnemon.contracts import shown
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.mnemos._checks import check_content
from langgraph_mnemon.memory_layers.mnemos._derive import normalize_constraint
from langgraph_mnemon.memory_layers.mnemos._models import CurationReceipt, MnemoNode
from langgraph_mnemon.memory_layers.mnemos._nodes import NewNode, insert_node, mark_compressed
from langgraph_mnemon.memory_layers.mnemos._resume import compress_summary
from langgraph_mnemon.memory_layers.mnemos._summary import pick_goal
from langgraph_mnemon.memory_layers.mnemos.store import fetch_nodes, new_id

__all__ = [
    "CURATION_ACTIONS",
    "MAX_CURATION_CHARS",
    "MODEL_ORIGIN",
    "check_curation",
    "curate_into",
]

CurationAction = Literal["set_goal", "add_constraint", "record_result", "mark_done"]
CURATION_ACTIONS: tuple[CurationAction, ...] = (
    "set_goal",
    "add_constraint",
    "record_result",
    "mark_done",
)
MODEL_ORIGIN = "model"
MAX_CURATION_CHARS = 2000
"""The longest text the model may give one node (a goal, a constraint, a result)."""


def check_curation(action: Any, text: Any) -> tuple[CurationAction, str | None]:
    """Check a curation request before any I/O.

    Args:
        action: set_goal, add_constraint, record_result or mark_done.
        text: the node text (at most 2,000 characters); optional for mark_done only.

    Returns:
        ``(action, text)`` with the text trimmed (``None`` for a mark_done without text).

    Raises:
        InvalidInputError: an unknown action, a missing or blank text, or a text too long.

    Example:
        >>> check_curation("mark_done", None)
        ('mark_done', None)
    """
    if action not in CURATION_ACTIONS:
        raise InvalidInputError(
            f"action must be one of {', '.join(CURATION_ACTIONS)} (got {shown(action)})"
        )
    if text is None and action == "mark_done":
        return "mark_done", None
    if text is None:
        raise InvalidInputError(f"{action} needs text: the {_WHAT[action]} in one or two lines")
    words = check_content(text, "text")
    if len(words) > MAX_CURATION_CHARS:
        raise InvalidInputError(
            f"text is too long ({len(words)} characters; max {MAX_CURATION_CHARS}); "
            "say it in one or two lines"
        )
    return cast("CurationAction", action), words


_WHAT = {"set_goal": "goal", "add_constraint": "constraint", "record_result": "result"}


def curate_into(
    conn: sa.Connection, task: str, action: CurationAction, text: str | None, *, moment: float
) -> CurationReceipt:
    """Apply one checked curation request (:func:`check_curation`) to ``task``.

    ``set_goal`` compresses every other active goal of the task (summary ``Superseded: ...``)
    and inserts the model's; ``add_constraint`` inserts one unless the same words are an
    active constraint already; ``record_result`` inserts a result; ``mark_done`` records the
    result ``Done: <text or the task's goal>``.

    Args:
        conn: the open write connection. task: the checked task id.
        action, text: from :func:`check_curation`. moment: now (UNIX seconds).

    Returns:
        A :class:`CurationReceipt` (``committed``, or ``skipped`` for a goal or constraint
        that is active already).

    Raises:
        InvalidInputError: mark_done without text while the task has no goal.

    Example:
        >>> curate_into(conn, "task-1", "mark_done", None, moment=0.0).node.content
        'Done: Ship the CSV importer'
    """
    if action == "set_goal":
        return _set_goal(conn, task, cast("str", text), moment)
    if action == "add_constraint":
        return _add_constraint(conn, task, cast("str", text), moment)
    if action == "record_result":
        return _receipt(action, _insert(conn, task, "result", cast("str", text), moment))
    goal = text or pick_goal(fetch_nodes(conn, task_id=task, types=["goal"], order="seq"))
    if not goal:
        raise InvalidInputError(
            "mark_done needs text here: this task has no goal recorded (say what is done)"
        )
    return _receipt(action, _insert(conn, task, "result", f"Done: {goal}", moment))


def _set_goal(conn: sa.Connection, task: str, text: str, moment: float) -> CurationReceipt:
    active = fetch_nodes(conn, task_id=task, types=["goal"], order="seq")
    keep = next((g for g in active if g.origin == MODEL_ORIGIN and _same(g.content, text)), None)
    others = [g for g in active if g is not keep]
    for goal in others:
        mark_compressed(conn, goal, "Superseded: " + compress_summary(goal.content, goal.summary))
    superseded = tuple(g.id for g in others)
    if keep is not None:  # the same goal again: only the others go
        return _receipt("set_goal", keep, changed=bool(others), superseded=superseded)
    return _receipt("set_goal", _insert(conn, task, "goal", text, moment), superseded=superseded)


def _add_constraint(conn: sa.Connection, task: str, text: str, moment: float) -> CurationReceipt:
    for node in fetch_nodes(conn, task_id=task, types=["constraint"], order="seq"):
        if _same(node.content, text):
            return _receipt("add_constraint", node, changed=False)
    return _receipt("add_constraint", _insert(conn, task, "constraint", text, moment))


def _same(a: str, b: str) -> bool:
    return normalize_constraint(a) == normalize_constraint(b)


def _insert(conn: sa.Connection, task: str, type_: str, text: str, moment: float) -> MnemoNode:
    node = NewNode(type=type_, content=text, origin=MODEL_ORIGIN)
    return insert_node(conn, task, node, new_id(), moment=moment)


def _receipt(
    action: CurationAction,
    node: MnemoNode,
    *,
    changed: bool = True,
    superseded: tuple[str, ...] = (),
) -> CurationReceipt:
    what = {"goal": "goal", "constraint": "constraint", "result": "result"}[node.type]
    message = (
        f"the same {what} is active already ({node.id[:8]})"
        if not changed
        else f"{what} recorded ({node.id[:8]})"
        + (f"; {len(superseded)} earlier goal(s) superseded" if superseded else "")
    )
    return CurationReceipt(
        status="committed" if changed else "skipped",
        message=message,
        changed=changed,
        revision=node.id,
        action=action,
        node=node,
        superseded=superseded,
    )
