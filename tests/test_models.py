"""Chat-model resolution and the scripted test model."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from langgraph_mnemon.adapters.models import resolve_chat_model
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.testing import ScriptedChatModel, tool_call


def test_none_and_instances_pass_through() -> None:
    assert resolve_chat_model(None) is None
    model = ScriptedChatModel(responses=["x"])
    assert resolve_chat_model(model) is model


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("gpt-4", 'must look like "provider:model"'),
        (42, "got int"),
        ("nosuchprovider:model", "cannot build chat model"),
        ("mistralai:mistral-small", "pip install langchain-mistralai"),
    ],
)
def test_bad_specs_explain_themselves(spec: object, fragment: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        resolve_chat_model(spec)
    assert fragment in str(info.value)


def test_a_missing_api_key_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langchain_openai", reason="langmem (a dev dependency) brings it")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(InvalidInputError, match=r"cannot build chat model 'openai:gpt-4\.1-mini'"):
        resolve_chat_model("openai:gpt-4.1-mini")


def test_scripted_model_drives_a_real_agent() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    model = ScriptedChatModel(responses=[tool_call("add", {"a": 2, "b": 3}), "five"])
    agent = create_agent(model, tools=[add])
    result = agent.invoke({"messages": [("user", "2+3?")]})
    assert result["messages"][2].content == "5"
    assert result["messages"][-1].content == "five"
    assert len(model.calls) == 2
    assert [t.name for t in model.bound_tools] == ["add"]


def test_scripted_model_raises_and_scripts() -> None:
    failing = ScriptedChatModel(responses=[RuntimeError("model down")])
    with pytest.raises(RuntimeError, match="model down"):
        failing.invoke("hi")
    echo = ScriptedChatModel(script=lambda msgs: AIMessage(content=f"saw {len(msgs)}"))
    assert echo.invoke("hi").content == "saw 1"
    with pytest.raises(ValueError, match="no responses"):
        ScriptedChatModel().invoke("hi")
