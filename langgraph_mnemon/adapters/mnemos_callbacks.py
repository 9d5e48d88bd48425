"""A LangChain callback handler that feeds Mnemos fatigue signals from a running agent.

Attach it to a run (``config={"callbacks": [MnemosSignalHandler(mem.mnemos)]}``) and every tool
call, its outcome and every model call's ``usage_metadata`` are recorded for the task. The task is
``task_id`` when given, else the run's ``mnemos_task_id`` or ``thread_id`` metadata (LangGraph puts
the configurable thread id there). A run without a task is ignored. Recording never breaks the run:
LangChain logs handler errors instead of raising them.

A callback does not see the model object, so the handler is told the agent's model (``model=``):
each token reading keeps that model's window (``profile["max_input_tokens"]``, else
``mnemos.context_window_tokens``; ``mnemos.context_window`` overrides it), or a number of tokens
(``context_window_tokens=``, labelled "given by the caller").

Example:
    >>> handler = MnemosSignalHandler(mem.mnemos, model=model)
    >>> graph.invoke(inputs, {"configurable": {"thread_id": "t1"}, "callbacks": [handler]})
    >>> mem.mnemos.fatigue("t1").state
    'FLOW'
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from langgraph_mnemon.adapters.models import check_window_model, model_window
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.messages import is_error_text, read_message
from langgraph_mnemon.memory_layers.mnemos import ContextWindow, Mnemos, check_window

__all__ = ["MnemosSignalHandler"]


class MnemosSignalHandler(BaseCallbackHandler):
    """Record tool calls, tool outcomes and token usage as Mnemos fatigue signals.

    Args:
        mnemos: the Mnemos service (``mem.mnemos``).
        task_id: the task of every run (``None``: the run's ``mnemos_task_id`` / ``thread_id``).
        model: the agent's chat model; its ``profile["max_input_tokens"]`` is the window
            kept with each token reading.
        context_window_tokens: a window to keep instead (without ``model``).

    Raises:
        InvalidInputError: a bad argument, or both ``model`` and ``context_window_tokens``.
    """

    raise_error = False

    def __init__(
        self,
        mnemos: Mnemos,
        task_id: str | None = None,
        *,
        model: Any = None,
        context_window_tokens: int | None = None,
    ) -> None:
        if not isinstance(mnemos, Mnemos):
            raise InvalidInputError(
                f"MnemosSignalHandler() takes a Mnemos service (got {type(mnemos).__name__}); "
                "pass mem.mnemos"
            )
        if task_id is not None and (not isinstance(task_id, str) or not task_id):
            raise InvalidInputError("task_id must be a non-empty string or None")
        if model is not None and context_window_tokens is not None:
            raise InvalidInputError(
                "pass model (its profile gives the window) or context_window_tokens, not both"
            )
        self.mnemos = mnemos
        self.task_id = task_id
        self.window: ContextWindow | None = (
            model_window(check_window_model(model), mnemos.config)
            if model is not None
            else check_window(context_window_tokens, "context_window_tokens")
        )
        self._lock = threading.Lock()
        self._tools: dict[UUID, tuple[str, str]] = {}
        self._models: dict[UUID, str] = {}

    def _task(self, metadata: Mapping[str, Any] | None) -> str | None:
        if self.task_id is not None:
            return self.task_id
        for key in (self.mnemos.config.task_id_key, "thread_id"):
            value = (metadata or {}).get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
                return str(value)
        return None

    # ------------------------------------------------------------------ tools

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Record the call (pending until its end or error)."""
        task = self._task(metadata)
        if task is None:
            return
        name = kwargs.get("name") or (serialized or {}).get("name") or "tool"
        call_id = str(kwargs.get("tool_call_id") or run_id)
        with self._lock:
            self._tools[run_id] = (task, call_id)
        self.mnemos.record_tool_call(
            task, str(name), inputs if inputs is not None else input_str, call_id=call_id
        )

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Mark the call done; it failed when its answer is an error by status or content.

        A ``ToolMessage`` with ``status="error"`` failed, and so does an answer (a
        ``ToolMessage``'s content or a plain string) that is an error by its text: a trace,
        ``Error: ...``, a non-zero exit code, ``{"error": ...}``
        (:func:`~langgraph_mnemon.memory_layers.messages.is_error_text`).
        """
        with self._lock:
            entry = self._tools.pop(run_id, None)
        if entry is not None:
            self.mnemos.record_tool_result(entry[0], entry[1], error=_failed(output))

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Mark the call failed."""
        with self._lock:
            entry = self._tools.pop(run_id, None)
        if entry is not None:
            self.mnemos.record_tool_result(entry[0], entry[1], error=True)

    # ------------------------------------------------------------------ models

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[Any]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember which task the model call belongs to."""
        task = self._task(metadata)
        if task is not None:
            with self._lock:
                self._models[run_id] = task

    def on_llm_start(
        self,
        serialized: dict[str, Any],
        prompts: list[str],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember which task the model call belongs to."""
        self.on_chat_model_start(serialized, [], run_id=run_id, metadata=metadata)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Record the call's token total from ``usage_metadata`` (or ``llm_output`` usage)."""
        with self._lock:
            task = self._models.pop(run_id, None)
        if task is None:
            return
        tokens = _tokens(response)
        if tokens is not None:
            self.mnemos.record_usage(
                task,
                tokens,
                context_window=self.window,
                call_id=f"llm:{run_id}",
            )

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget a failed model call."""
        with self._lock:
            self._models.pop(run_id, None)


def _failed(output: Any) -> bool:
    """Whether a tool's answer is an error (never raises: a handler must not break the run)."""
    try:
        if isinstance(output, str):
            return is_error_text(output)
        read = read_message(output)
        if read.role == "tool":
            return read.is_error
        if getattr(output, "status", None) == "error":
            return True
        if isinstance(output, Mapping):  # a tool returning {"error": ...} itself
            return is_error_text(json.dumps(output, default=str))
        content = getattr(output, "content", None)
        return content is not None and is_error_text(content)
    except Exception:  # an odd output object: counted as an answer, not a failure
        return False


def _tokens(response: LLMResult) -> int | None:
    for generations in reversed(response.generations or []):
        for generation in reversed(generations):
            usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
            if isinstance(usage, Mapping):
                total = usage.get("total_tokens") or (
                    (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0)
                )
                if isinstance(total, int) and total > 0:
                    return total
    usage = (response.llm_output or {}).get("token_usage") or {}
    total = usage.get("total_tokens") if isinstance(usage, Mapping) else None
    return total if isinstance(total, int) and total > 0 else None
