"""Every message shape counts: provider responses parsed by the real integrations.

The fixtures under ``tests/data/provider_responses/`` are recorded in the wire format of each
API (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses). The LangChain messages are
built FROM that JSON by the parsing code of ``langchain-anthropic`` / ``langchain-openai``
(client objects with a dummy key; nothing goes over the network), in their default output
and, where the installed versions support it, in LangChain's standard ``output_version="v1"``
content blocks. Each shape must read like the same conversation written as strings: activity,
dirty admission, explicit-save detection, the review transcript and the fatigue estimate.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic.types
import openai.types.chat
import openai.types.responses
import pytest
from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_anthropic.chat_models import _format_messages
from langchain_core.language_models._utils import _update_message_content_to_blocks
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langchain_openai.chat_models.base import (
    _construct_lc_result_from_responses_api,
    _convert_dict_to_message,
)
from review_support import wait_for

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.messages import plugin_form, transcript, user_texts
from langgraph_mnemon.memory_layers.activity import (
    ReviewGate,
    ReviewSettings,
    ThreadActivity,
    TurnActivity,
)
from langgraph_mnemon.memory_layers.messages import (
    ToolCallPart,
    is_error_text,
    messages_chars,
    read_message,
    read_messages,
)
from langgraph_mnemon.memory_layers.turns import plugin_metadata
from langgraph_mnemon.nodes.turn import thread_facts, turn_activity
from langgraph_mnemon.reviews import BackgroundReviews
from langgraph_mnemon.testing import ScriptedChatModel

DATA = Path(__file__).parent / "data" / "provider_responses"

USER_TEXT = (
    "The importer crashes with the error in this screenshot. Raise its retry limit to 5. "
    "You must not touch the production DSN."
)
FIRST_TEXT = "I'll start by reading the importer's configuration to see the current retry settings."
FINAL_TEXT = (
    "The importer now retries 5 times: I changed MAX_RETRIES from 3 to 5 in "
    "src/importer/config.py and left the production DSN untouched, as you asked.\n"
    "Run the importer tests to confirm the new limit before you deploy."
)
FILE_TEXT = (
    "# importer settings\nMAX_RETRIES = 3\nBACKOFF_SECONDS = 2.5\n"
    'PRODUCTION_DSN = "postgresql://importer@db.internal/prod"\n'
)
READ_ARGS = {"path": "src/importer/config.py"}
IMAGE_B64 = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
ANTHROPIC_ID = "toolu_01T1x1fJ34qAmk2tNTrN7Up6"
CHAT_ID = "call_Jz8W3n1vF5qK2pL7sA9dR4tY"
RESPONSES_ID = "call_Vb3N8m2qK7xP1wL5sD9fG4hJ"


def _load(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


# --- building messages with the integrations' own parsing code ------------------------------


def _anthropic(name: str) -> AIMessage:
    model = ChatAnthropic(model="claude-sonnet-4-5-20250929", api_key="sk-ant-dummy")
    response = anthropic.types.Message.model_validate(_load(name))
    return model._format_output(response).generations[0].message


def _chat(name: str) -> AIMessage:
    model = ChatOpenAI(model="gpt-4.1-2025-04-14", api_key="sk-dummy")
    response = openai.types.chat.ChatCompletion.model_validate(_load(name))
    return model._create_chat_result(response).generations[0].message


def _responses(name: str, output_version: str | None = None) -> AIMessage:
    response = openai.types.responses.Response.model_validate(_load(name))
    result = _construct_lc_result_from_responses_api(response, output_version=output_version)
    return result.generations[0].message


def _v1(message: BaseMessage) -> BaseMessage:
    """What ``BaseChatModel`` returns with ``output_version="v1"``: standard content blocks."""
    return _update_message_content_to_blocks(message, "v1")


def _anthropic_tool_messages() -> list[ToolMessage]:
    """ToolMessages whose content is the block list of recorded Anthropic tool_result blocks;
    ``is_error`` becomes ``status`` (the third result is an error by its content only)."""
    out = []
    for wire in _load("anthropic_tool_result.json")["messages"]:
        (block,) = wire["content"]
        status = "error" if block["is_error"] else "success"
        out.append(ToolMessage(block["content"], tool_call_id=block["tool_use_id"], status=status))
    return out


def _anthropic_user() -> BaseMessage:
    return convert_to_messages([_load("anthropic_user_image.json")])[0]


def _openai_user() -> BaseMessage:
    return _convert_dict_to_message(_load("openai_chat_user_image.json"))


def _standard_user() -> BaseMessage:
    return HumanMessage(
        content_blocks=[
            {"type": "text", "text": USER_TEXT},
            {"type": "image", "base64": IMAGE_B64, "mime_type": "image/png"},
        ]
    )


@dataclass(frozen=True)
class Shape:
    """One provider shape of the same turn and what reading it must give."""

    messages: list[BaseMessage]  # user, the AI call, its tool result, the final answer
    call_id: str
    call_text: str  # the visible text of the calling AI message
    reasoning: str  # a phrase of its reasoning ("" when the provider sent none)
    call_tokens: int
    final_tokens: int


def _anthropic_shape(v1: bool = False) -> Shape:
    wrap: Callable[[BaseMessage], BaseMessage] = _v1 if v1 else (lambda m: m)
    messages = [
        wrap(_anthropic_user()),
        wrap(_anthropic("anthropic_tool_use.json")),
        _anthropic_tool_messages()[0],
        wrap(_anthropic("anthropic_final.json")),
    ]
    # usage: input + cache reads + output (what langchain-anthropic reports as total)
    return Shape(messages, ANTHROPIC_ID, FIRST_TEXT, "read the importer config", 3023, 3510)


def _chat_shape() -> Shape:
    tool = _convert_dict_to_message({"role": "tool", "tool_call_id": CHAT_ID, "content": FILE_TEXT})
    messages = [
        _openai_user(),
        _chat("openai_chat_tool_calls.json"),
        tool,
        _chat("openai_chat_final.json"),
    ]
    return Shape(messages, CHAT_ID, "", "", 1833, 2444)


def _responses_shape(version: str | None = None) -> Shape:
    parse_as = "v0" if version == "v0" else None
    call = _responses("openai_responses_tool_call.json", parse_as)
    final = _responses("openai_responses_final.json", parse_as)
    if version == "v1":
        call, final = _v1(call), _v1(final)
    messages = [_standard_user(), call, ToolMessage(FILE_TEXT, tool_call_id=RESPONSES_ID), final]
    return Shape(messages, RESPONSES_ID, FIRST_TEXT, "read the importer config", 1960, 2470)


SHAPES: dict[str, Callable[[], Shape]] = {
    "anthropic": _anthropic_shape,
    "anthropic-v1": lambda: _anthropic_shape(v1=True),
    "openai-chat": _chat_shape,
    "openai-responses": _responses_shape,
    "openai-responses-v0": lambda: _responses_shape("v0"),
    "openai-responses-v1": lambda: _responses_shape("v1"),
}


def _strings(shape: Shape) -> list[BaseMessage]:
    """The same turn with string contents (reasoning where string-content providers keep it)."""
    call = read_message(shape.messages[1])
    final = read_message(shape.messages[3])
    return [
        HumanMessage(USER_TEXT),
        AIMessage(
            call.text,
            tool_calls=[{"name": "read_file", "args": READ_ARGS, "id": shape.call_id}],
            additional_kwargs={"reasoning_content": call.reasoning} if call.reasoning else {},
        ),
        ToolMessage(FILE_TEXT, tool_call_id=shape.call_id),
        AIMessage(
            FINAL_TEXT,
            additional_kwargs={"reasoning_content": final.reasoning} if final.reasoning else {},
        ),
    ]


def _without_usage(messages: list[BaseMessage]) -> list[BaseMessage]:
    return [
        m.model_copy(update={"usage_metadata": None}) if isinstance(m, AIMessage) else m
        for m in messages
    ]


shapes = pytest.mark.parametrize("name", list(SHAPES))


# --- the shapes really are the integrations' ------------------------------------------------


def test_the_fixtures_parse_into_block_content() -> None:
    anthropic_call = _anthropic("anthropic_tool_use.json")
    assert [b["type"] for b in anthropic_call.content] == ["thinking", "text", "tool_use"]
    assert [b["type"] for b in _v1(anthropic_call).content] == ["reasoning", "text", "tool_call"]
    responses_call = _responses("openai_responses_tool_call.json")
    assert [b["type"] for b in responses_call.content] == ["reasoning", "text", "function_call"]
    assert responses_call.content[2]["id"].startswith("fc_")  # the item id, not the call id
    assert _chat("openai_chat_tool_calls.json").content == ""  # calls only in tool_calls
    assert [b["type"] for b in _anthropic_user().content] == ["text", "image"]
    assert [b["type"] for b in _openai_user().content] == ["text", "image_url"]
    # ChatAnthropic and ChatOpenAI take output_version="v1" (the standard blocks used above)
    assert ChatAnthropic(model="m", api_key="k", output_version="v1").output_version == "v1"
    assert ChatOpenAI(model="m", api_key="k", output_version="v1").output_version == "v1"


def test_tool_messages_are_what_langchain_anthropic_sends_as_tool_result() -> None:
    recorded = _load("anthropic_tool_result.json")["messages"]
    for wire, message in zip(recorded, _anthropic_tool_messages(), strict=True):
        call = AIMessage("", tool_calls=[{"name": "run", "args": {}, "id": message.tool_call_id}])
        _, formatted = _format_messages(
            [HumanMessage("go"), call, message], model="claude-sonnet-4-5-20250929"
        )
        assert formatted[-1] == wire


# --- read_message -----------------------------------------------------------------------------


@shapes
def test_read_message_of_each_shape(name: str) -> None:
    shape = SHAPES[name]()
    user, call, result, final = read_messages(shape.messages)
    assert (user.role, user.text, user.has_images) == ("user", USER_TEXT, True)
    assert IMAGE_B64 not in user.text
    assert user.chars == len(USER_TEXT)
    assert call.role == "assistant"
    assert call.text == shape.call_text
    assert call.tool_calls == (ToolCallPart(shape.call_id, "read_file", READ_ARGS),)
    assert shape.reasoning in call.reasoning
    assert not shape.reasoning or shape.reasoning not in call.text
    assert call.usage_tokens == shape.call_tokens
    assert call.chars >= len(call.text) + len("read_file") + len(json.dumps(READ_ARGS)) - 1
    assert (result.role, result.tool_call_id, result.text) == ("tool", shape.call_id, FILE_TEXT)
    assert not result.is_error
    assert result.chars == len(FILE_TEXT)
    assert (final.role, final.text, final.tool_calls) == ("assistant", FINAL_TEXT, ())
    assert final.usage_tokens == shape.final_tokens
    assert all(m.chars > 0 and not m.is_plugin for m in (user, call, result, final))


@shapes
def test_dict_forms_read_like_the_messages(name: str) -> None:
    """What the LangGraph SDK / a JSON checkpoint hands back: ``model_dump()`` dicts."""
    for message in SHAPES[name]().messages:
        as_object, as_dict = read_message(message), read_message(message.model_dump())
        assert (as_dict.role, as_dict.text, as_dict.tool_calls) == (
            as_object.role,
            as_object.text,
            as_object.tool_calls,
        )
        assert (as_dict.reasoning, as_dict.chars) == (as_object.reasoning, as_object.chars)


def test_a_call_only_in_blocks_counts_once() -> None:
    anthropic_call = _anthropic("anthropic_tool_use.json")
    responses_call = _responses("openai_responses_tool_call.json")
    for message, call_id in ((anthropic_call, ANTHROPIC_ID), (responses_call, RESPONSES_ID)):
        listed = read_message(message)
        blocks_only = read_message(message.model_copy(update={"tool_calls": []}))
        assert [c.id for c in listed.tool_calls] == [call_id]  # the block is not a second call
        assert blocks_only.tool_calls == listed.tool_calls
        assert blocks_only.chars == listed.chars


def test_a_refusal_and_a_wrapped_block_keep_their_text() -> None:
    refusal = read_message({"type": "ai", "content": [{"type": "refusal", "refusal": "I can't."}]})
    assert refusal.text == "I can't."
    wrapped = read_message(
        {
            "type": "ai",
            "content": [{"type": "non_standard", "value": {"type": "text", "text": "x"}}],
        }
    )
    assert wrapped.text == "x"
    item = read_message(
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix it"}]}
    )  # an OpenAI responses input item
    assert (item.role, item.text) == ("user", "Fix it")


# --- activity and admission -------------------------------------------------------------------


@shapes
def test_turn_activity_counts_every_shape_like_strings(name: str) -> None:
    shape = SHAPES[name]()
    activity = turn_activity(shape.messages)
    assert activity.user_text == USER_TEXT
    assert activity.assistant_chars == len(shape.call_text) + len(FINAL_TEXT)
    assert activity.tool_calls == ("read_file",)
    assert activity == turn_activity(_strings(shape))
    # a call only in tool_use / function_call blocks, with its result, counts too
    blocks_only = [
        m.model_copy(update={"tool_calls": []}) if isinstance(m, AIMessage) else m
        for m in shape.messages
    ]
    if name not in ("openai-chat", "openai-responses-v0"):  # no call blocks to fall back on
        assert turn_activity(blocks_only).tool_calls == ("read_file",)
    # a call without a result did not complete
    assert turn_activity(shape.messages[:2]).tool_calls == ()


def test_plugin_messages_and_tool_results_are_not_the_user() -> None:
    wake = HumanMessage(
        [{"type": "text", "text": "<mnemon:wake>...</mnemon:wake>"}],
        additional_kwargs={"mnemon": plugin_metadata("recall")},
    )
    raw_result = convert_to_messages([_load("anthropic_tool_result.json")["messages"][0]])[0]
    messages = [_anthropic_user(), _anthropic("anthropic_tool_use.json"), raw_result, wake]
    activity = turn_activity(messages)
    assert activity.user_text == USER_TEXT  # not the Wake, not the tool_result user message
    assert turn_activity([wake]).user_text == ""
    facts = thread_facts(messages)
    assert not facts.new_thread
    assert thread_facts([_anthropic_user()]).new_thread


def _gate_after(turns: list[TurnActivity]) -> float | None:
    gate = ReviewGate(ReviewSettings(), clock=lambda: 1000.0)
    for turn in turns:
        gate.record_turn("t", turn)
    return gate.on_turn_end("t")


@shapes
def test_assistant_blocks_admit_like_strings(name: str) -> None:
    """Four short questions, each answered with the shape's final answer: 4 x 210 assistant
    characters pass the 600 of dirty admission, as the string answers do."""
    final = SHAPES[name]().messages[3]
    question = [{"type": "text", "text": "Why does the importer crash?"}]
    blocks = [turn_activity([HumanMessage(question), final]) for _ in range(4)]
    strings = [turn_activity([HumanMessage(question[0]["text"]), AIMessage(FINAL_TEXT)])] * 4
    assert blocks == strings
    assert ThreadActivity(list(blocks)).admitted()
    assert _gate_after(blocks) == _gate_after(strings) == 30.0
    # the same turns without the answers' characters are not admitted: the test can fail
    no_answer = TurnActivity(user_text=blocks[0].user_text)
    assert _gate_after([no_answer] * 4) is None


@pytest.mark.parametrize("user", [_anthropic_user, _openai_user, _standard_user])
def test_user_blocks_admit_like_strings(user: Callable[[], BaseMessage]) -> None:
    """Three block-shaped requests (122 characters each, an image each) pass the 320 user
    characters of dirty admission without any tool work."""
    blocks = [turn_activity([user(), AIMessage("ok")]) for _ in range(3)]
    strings = [turn_activity([HumanMessage(USER_TEXT), AIMessage("ok")])] * 3
    assert blocks == strings
    assert blocks[0].user_chars == len(USER_TEXT)
    assert _gate_after(blocks) == _gate_after(strings) == 30.0
    no_words = TurnActivity(assistant_chars=blocks[0].assistant_chars)
    assert _gate_after([no_words] * 3) is None  # the test can fail


@pytest.mark.parametrize(
    "text", ["Please remember that releases are cut on Tuesdays.", "请记住：发布前先跑 lint"]
)
def test_explicit_save_is_seen_in_blocks(text: str) -> None:
    for content in (
        [
            {"type": "text", "text": text},
            {"type": "image", "base64": IMAGE_B64, "mime_type": "image/png"},
        ],
        [{"type": "input_text", "text": text}],
        [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": "x"}}],
    ):
        message = HumanMessage(content)
        activity = turn_activity([message, _anthropic("anthropic_final.json")])
        assert activity.explicit_save
        assert activity.user_text == text
        assert ThreadActivity([activity]).admitted()
        assert user_texts([message]) == [text]


# --- review transcript ------------------------------------------------------------------------


@shapes
def test_transcript_holds_the_users_and_assistants_words(name: str) -> None:
    shape = SHAPES[name]()
    cue = HumanMessage("cue text", additional_kwargs={"mnemon": plugin_metadata("instructions")})
    text = transcript([cue, *shape.messages], 100_000)
    assert f"[user] {USER_TEXT}\n[image]" in text
    if shape.call_text:
        assert f"[assistant] {shape.call_text}" in text
    assert f"[tool result] {FILE_TEXT.strip()}" in text
    assert text.endswith(f"[assistant] {FINAL_TEXT}")
    assert "cue text" not in text
    assert IMAGE_B64 not in text
    assert "MAX_RETRIES = 3. The user asked" not in text  # Anthropic thinking left out
    assert not shape.reasoning or shape.reasoning not in text  # reasoning left out
    assert '"path"' not in text  # tool-call arguments left out
    assert user_texts([cue, *shape.messages]) == [USER_TEXT]
    assert transcript(shape.messages, 40) == text[-40:]


def test_transcript_shows_raw_anthropic_tool_results() -> None:
    raw = convert_to_messages(_load("anthropic_tool_result.json")["messages"])
    text = transcript(raw, 10_000)
    assert text.splitlines()[0] == "[tool result] # importer settings"
    assert "[tool result] Error: src/importer/retry.py: No such file or directory" in text
    assert "[user]" not in text  # a message of tool results only is not the user speaking
    assert user_texts(raw) == []


# --- fatigue estimate and tool errors ---------------------------------------------------------


@shapes
def test_fatigue_estimate_sees_blocks_like_strings(name: str, tmp_path: Path) -> None:
    shape = SHAPES[name]()
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    try:
        mem.mnemos.observe_messages("blocks", _without_usage(shape.messages), derive=False)
        mem.mnemos.observe_messages("strings", _strings(shape), derive=False)
        blocks = mem.mnemos.fatigue("blocks", log=False)
        strings = mem.mnemos.fatigue("strings", log=False)
        assert blocks.tokens_estimated
        assert strings.tokens_estimated
        assert blocks.tokens_used is not None
        assert strings.tokens_used is not None
        assert blocks.tokens_used > 0
        assert abs(blocks.tokens_used - strings.tokens_used) <= 0.10 * strings.tokens_used
        assert blocks.tool_calls == strings.tool_calls == 1
        # the estimate is of what the model reads: every text, reasoning and tool argument
        chars = messages_chars(read_messages(shape.messages))
        assert chars >= len(USER_TEXT) + len(FILE_TEXT) + len(FINAL_TEXT)
    finally:
        mem.close()


@pytest.mark.parametrize(
    "text",
    [
        "Error: src/importer/retry.py: No such file or directory",
        "error: pathspec 'main2' did not match any file(s) known to git",
        "Traceback (most recent call last):\n  File \"run.py\", line 1\nKeyError: 'X'",
        'Running migrations...\nTraceback (most recent call last):\n  File "m.py"',
        "ValueError: retry limit must be positive",
        "fatal: not a git repository (or any of the parent directories): .git",
        "Command failed with exit code 1",
        "make: *** [build] Error 2\nexit status 2",
        '{"error": "not found", "path": "src/x.py"}',
        '{"status": "error", "message": "quota exceeded"}',
        '{"stdout": "", "stderr": "boom", "exit_code": 1}',
        "[ERROR] could not resolve host",
        "Failed to connect to db.internal:5432",
    ],
)
def test_errors_by_content(text: str) -> None:
    assert is_error_text(text)
    assert read_message(ToolMessage(text, tool_call_id="c")).is_error
    assert read_message(ToolMessage([{"type": "text", "text": text}], tool_call_id="c")).is_error


@pytest.mark.parametrize(
    "text",
    [
        "No errors found in 12 files",
        "exit code: 0",
        "Error handling lives in src/importer/errors.py; it retries on timeouts.",
        "ValueError is raised when the limit is negative.",
        "0 failed, 12 passed in 0.41s",
        '{"error": null, "ok": true}',
        '{"exit_code": 0, "stdout": "done"}',
        FILE_TEXT,
        "",
    ],
)
def test_ordinary_answers_are_not_errors(text: str) -> None:
    assert not is_error_text(text)
    assert not read_message(ToolMessage(text, tool_call_id="c")).is_error


def test_error_density_counts_errors_by_content(tmp_path: Path) -> None:
    """The recorded tool_result blocks: one answer, one ``is_error`` error, one traceback
    that only its content marks as an error. Two of three calls failed."""
    results = _anthropic_tool_messages()
    assert [read_message(m).is_error for m in results] == [False, True, True]
    assert results[2].status == "success"  # the trace is an error by content alone
    calls = [
        AIMessage("", tool_calls=[{"name": "run", "args": {"n": i}, "id": m.tool_call_id}])
        for i, m in enumerate(results)
    ]
    ok = [m.model_copy(update={"content": "No errors found", "status": "success"}) for m in results]
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    try:
        for task, answers in (("errors", results), ("clean", ok)):
            turn = [HumanMessage("run the checks")]
            for call, answer in zip(calls, answers, strict=True):
                turn += [call, answer]
            mem.mnemos.observe_messages(task, turn, derive=False)
        errors = mem.mnemos.fatigue("errors", log=False).error_density
        assert errors == pytest.approx(2 / 3, abs=1e-3)  # readings are rounded to 4 places
        assert mem.mnemos.fatigue("clean", log=False).error_density == 0
    finally:
        mem.close()


# --- through a real create_agent run ----------------------------------------------------------


@tool
def read_file(path: str) -> str:
    """Read a file of the workspace."""
    return FILE_TEXT if path == READ_ARGS["path"] else f"Error: {path}: No such file"


@pytest.mark.parametrize(
    "name", ["anthropic", "anthropic-v1", "openai-chat", "openai-responses", "openai-responses-v1"]
)
def test_a_create_agent_turn_in_provider_shapes_is_recorded(name: str, tmp_path: Path) -> None:
    shape = SHAPES[name]()
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    gate = ReviewGate(ReviewSettings(delay_seconds=600, min_interval_seconds=0))
    mem._reviews = BackgroundReviews(mem, gate)  # armed, never fired during the test
    try:
        model = ScriptedChatModel(responses=[shape.messages[1], shape.messages[3]])
        agent = create_agent(
            model, tools=[read_file], middleware=[mem.middleware()], checkpointer=mem.checkpointer()
        )
        out = agent.invoke({"messages": [shape.messages[0]]}, {"configurable": {"thread_id": "t"}})
        (turn,) = gate.activity("t").turns
        assert isinstance(turn, TurnActivity)
        assert turn.user_text == USER_TEXT
        assert turn.assistant_chars == len(shape.call_text) + len(FINAL_TEXT)
        assert turn.tool_calls == ("read_file",)
        (answer,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
        assert answer.tool_call_id == shape.call_id
        assert answer.content == FILE_TEXT
        conversation = [m for m in out["messages"] if plugin_form(m) is None]
        assert transcript(conversation, 10_000).endswith(f"[assistant] {FINAL_TEXT}")
        # token usage came from the provider's usage_metadata, not the character estimate
        reading = mem.mnemos.fatigue("t", log=False)
        assert reading.tokens_used == shape.final_tokens
        assert not reading.tokens_estimated
    finally:
        mem.close()


def test_an_explicit_save_in_blocks_is_reviewed_and_written(tmp_path: Path) -> None:
    """Two Anthropic-shaped turns; the request in text + image blocks asks to remember a fact:
    the heuristic idle review (no model) finds it and writes it."""
    mem = Mnemon.open(tmp_path / "root", workspace=tmp_path)
    gate = ReviewGate(ReviewSettings(delay_seconds=0.05, min_interval_seconds=0))
    mem._reviews = reviews = BackgroundReviews(mem, gate)
    try:
        replies = [_anthropic("anthropic_tool_use.json"), _anthropic("anthropic_final.json")]
        model = ScriptedChatModel(responses=[m.model_copy(deep=True) for m in replies * 2])
        agent = create_agent(
            model, tools=[read_file], middleware=[mem.middleware()], checkpointer=mem.checkpointer()
        )
        cfg = {"configurable": {"thread_id": "t"}}
        agent.invoke({"messages": [_anthropic_user()]}, cfg)
        save = "Please remember that releases are cut on Tuesdays. " + "Context. " * 12
        request = HumanMessage(
            [
                {"type": "text", "text": save},
                {"type": "image", "base64": IMAGE_B64, "mime_type": "image/png"},
            ]
        )
        agent.invoke({"messages": [request]}, cfg)
        assert wait_for(lambda: reviews.outcomes)
        thread, outcome = reviews.outcomes[0]
        assert (thread, outcome.action) == ("t", "changed")
        entries = [e.content for e in mem.runtime.entries("memory")]
        assert entries == ["Releases are cut on Tuesdays."]
    finally:
        mem.close()
