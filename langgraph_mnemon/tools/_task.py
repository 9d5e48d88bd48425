"""``mnemon_task``: the model curates its task memory (goal, constraints, results, done).

The task is the run's: ``configurable[mnemos.task_id_key]``, else the thread id (as the
middleware and the turn subgraph name it). Nodes it writes have origin ``model``.
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_config

from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.tools._args import TaskArgs
from langgraph_mnemon.tools._context import ToolContext

__all__ = ["task"]


def task(ctx: ToolContext, a: TaskArgs) -> dict[str, Any]:
    """``mnemon_task``: set the goal, add a constraint, record a result or mark the task done.

    Args:
        ctx: the host. a: the checked arguments (action, text).

    Returns:
        The receipt: status, message, action, the node (id, type, content, origin) and the ids
        of goals a new goal superseded.

    Raises:
        InvalidInputError: called outside a run, or a run without a thread id (and without
            ``configurable[mnemos.task_id_key]``). ReadOnlyError: writes are off.

    Example:
        >>> task(mem, TaskArgs(action="set_goal", text="Ship the importer"))["node"]["origin"]
        'model'
    """
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:
        raise InvalidInputError(
            "mnemon_task records the task of an agent run; call it from inside a run"
        ) from None
    task_id = configurable.get(ctx.config.mnemos.task_id_key) or configurable.get("thread_id")
    if not task_id:
        raise InvalidInputError(
            "mnemon_task needs the run's task: run the agent with "
            f"configurable.thread_id (or configurable.{ctx.config.mnemos.task_id_key})"
        )
    receipt = ctx.mnemos.curate(str(task_id), a.action, a.text)
    node = receipt.node
    return {
        "status": receipt.status,
        "message": receipt.message,
        "action": receipt.action,
        "node": {"id": node.id, "type": node.type, "content": node.content, "origin": node.origin},
        "superseded": list(receipt.superseded),
    }
