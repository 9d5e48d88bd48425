"""Deterministic chat models for tests, notebooks and the offline demo (no API key needed).

Example:
    >>> from langchain_core.messages import AIMessage
    >>> model = ScriptedChatModel(responses=[AIMessage(content="hello")])
    >>> model.invoke("hi").content
    'hello'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

__all__ = ["ScriptedChatModel", "tool_call"]


def tool_call(name: str, args: dict[str, Any], call_id: str | None = None) -> AIMessage:
    """An AI message that calls one tool."""
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": call_id or f"call_{name}", "type": "tool_call"}
        ],
    )


class ScriptedChatModel(FakeMessagesListChatModel):
    """A fake chat model that supports ``bind_tools`` and records what it was shown.

    ``responses`` are replayed in order (cycling); an ``Exception`` instance among them is raised
    instead of returned, to test model failures. With ``script``, the reply is computed from the
    input messages instead, so one instance can serve many independent runs (a server demo).
    """

    responses: list[Any] = Field(default_factory=list)
    script: Callable[[list[BaseMessage]], BaseMessage] | None = None
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[Any] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        self.bound_tools = list(tools)
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls.append(list(messages))
        if self.script is not None:
            reply = self.script(list(messages))
        else:
            if not self.responses:
                raise ValueError("ScriptedChatModel has no responses left to give")
            reply = self.responses[self.i % len(self.responses)]
            self.i += 1
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, str):
            reply = AIMessage(content=reply)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @property
    def _llm_type(self) -> str:
        return "mnemon-scripted"
