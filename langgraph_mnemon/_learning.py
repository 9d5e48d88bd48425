"""The host's learning entry: which messages a pass reads and which model proposes.

``mem.learn(thread_id)`` reads the thread from the given ``messages``, else from the newest
checkpoint of the thread in the host's Mnemos checkpointer (the one ``mem.checkpointer()``
gives an agent, and ``langgraph.json``'s). A thread that was never checkpointed there needs
its messages passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from langgraph_mnemon.errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from langgraph_mnemon.memory_layers.learning import Learning, LearnPass

__all__ = ["run_learning", "thread_messages"]


def thread_messages(
    saver: BaseCheckpointSaver[Any], thread_id: str, owns: Callable[[str], bool]
) -> list[Any]:
    """The messages of the newest checkpoint of ``thread_id`` in ``saver``, when the thread
    is the scope's user's (``owns``): the checkpointer is keyed by thread id alone, so another
    user's thread would otherwise teach this user's space.

    Raises:
        NotFoundError: the thread is another user's, or has no checkpoint with messages
            there (the same answer: another user's thread is not found).
    """
    found = None
    if owns(thread_id):
        found = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    values = (found.checkpoint.get("channel_values") or {}) if found else {}
    messages = values.get("messages") if isinstance(values, dict) else None
    if not messages:
        raise NotFoundError(
            f"thread {thread_id!r} has no checkpointed messages in this host's checkpointer; "
            "pass messages=[...] or run the agent with checkpointer=mem.checkpointer()"
        )
    return list(messages)


def run_learning(
    learning: Learning,
    default_model: Callable[[], Any],
    saver: Callable[[], BaseCheckpointSaver[Any]],
    owns: Callable[[str], bool],
    thread_id: str,
    model: Any,
    messages: Sequence[Any] | None,
) -> LearnPass:
    """One learning pass over the thread (see :meth:`Mnemon.learn`).

    Args:
        learning: the scope's learning service.
        default_model: gives the host's worker model (None: the heuristic).
        saver: gives the host's checkpointer (read only when ``messages`` is None).
        owns: whether a thread is the scope's user's (checked before the checkpointer is read).
        thread_id: the thread.
        model: a chat model, a ``"provider:model"`` string or None (the default model).
        messages: the thread's messages, or None to read them from the checkpointer.
    """
    from langgraph_mnemon.adapters.models import resolve_chat_model
    from langgraph_mnemon.graphs import build_learning_graph
    from langgraph_mnemon.memory_layers.kernel import acting
    from langgraph_mnemon.memory_layers.learning import check_thread

    thread = check_thread(thread_id)
    if messages is not None and (
        isinstance(messages, str | bytes) or not hasattr(messages, "__iter__")
    ):
        raise InvalidInputError("messages must be a list of chat messages (or their dicts)")
    chosen = default_model() if model is None else resolve_chat_model(model)
    listed = list(messages) if messages is not None else thread_messages(saver(), thread, owns)
    graph = build_learning_graph(learning, chosen)
    with acting("automatic"):  # a pass is never a person's explicit write
        return graph.invoke({"thread_id": thread, "messages": listed})["outcome"]
