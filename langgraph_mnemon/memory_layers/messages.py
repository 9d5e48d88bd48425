"""Any chat message -> its text and parts: the one reading every surface shares.

LangChain messages come in many shapes: ``content`` a string, or a list of blocks — text,
images, Anthropic ``tool_use`` / ``tool_result`` / ``thinking`` blocks, OpenAI responses output
(``output_text``, ``reasoning`` summaries, ``function_call`` items), LangChain's standard blocks
(``reasoning``, ``tool_call``, ``image``, ``file``) — plus ``tool_calls`` on AI messages,
``status`` on tool messages and ``usage_metadata``. :func:`read_message` reads any of them (a
LangChain message object or its dict form) into one :class:`MessageText`; activity scoring,
dirty admission, the review transcript, fatigue estimates, node derivation and compaction all
use it, so no surface counts a block-shaped message as empty.

Duck-typed on purpose: this module imports nothing from LangChain, so the plain-Python layers
can read messages too. It never raises on odd input (a hostile ``__str__``, a lone surrogate,
unknown blocks): what it cannot read counts by its JSON size and carries no text.

Example:
    >>> m = read_message({"type": "human", "content": [{"type": "text", "text": "Fix it"}]})
    >>> m.role, m.text
    ('user', 'Fix it')
    >>> is_error_text("Traceback (most recent call last):\\n  ...")
    True
"""

from __future__ import annotations

import json
import operator
import re
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langgraph_mnemon.contracts import safe_text

__all__ = [
    "MessageText",
    "Part",
    "PartKind",
    "Role",
    "ToolCallPart",
    "is_error_text",
    "is_request",
    "latest_request_index",
    "message_id",
    "messages_chars",
    "plugin_form_of",
    "read_message",
    "read_messages",
    "role_of",
]

Role = Literal["user", "assistant", "tool", "system", "other"]
PartKind = Literal["text", "reasoning", "image", "file", "tool_call", "tool_result", "other"]

_ROLES: dict[str, Role] = {
    "human": "user",
    "user": "user",
    "HumanMessageChunk": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "AIMessageChunk": "assistant",
    "tool": "tool",
    "ToolMessageChunk": "tool",
    "function": "tool",
    "FunctionMessageChunk": "tool",
    "function_call_output": "tool",  # an OpenAI responses input item
    "system": "system",
    "SystemMessageChunk": "system",
    "developer": "system",
}
_TEXT_BLOCKS = frozenset({"text", "output_text", "input_text", "summary_text", "refusal"})
_REASONING_BLOCKS = frozenset({"thinking", "reasoning", "redacted_thinking"})
_IMAGE_BLOCKS = frozenset({"image", "image_url", "input_image"})
_FILE_BLOCKS = frozenset(
    {"file", "input_file", "document", "audio", "input_audio", "video", "text-plain"}
)
_CALL_BLOCKS = frozenset(
    {"tool_use", "tool_call", "function_call", "server_tool_use", "server_tool_call"}
)
_RESULT_BLOCKS = frozenset(
    {"tool_result", "function_call_output", "web_search_tool_result", "server_tool_result"}
)
_MAX_DEPTH = 4
_PLUGIN_KEY = "mnemon"

# An error by content: an exception trace, an "Error:" answer, a non-zero exit code, a JSON
# error object. Anchored to the start (or a line start for traces) and tied to a colon, a
# bracket or the end of the line, so prose that merely mentions an error ("Error handling is
# in app.py", "ValueError is raised when ...", "No errors found") is not one.
_ERROR_START = re.compile(
    r"^\s*(?:\[\s*(?:error|fatal|exception|failed|failure)\s*\]"
    r"|(?:error|fatal|exception|failed|failure)(?:\s*[:!]|\s*$|\s+\d{3}\b)"
    r"|fatal error\b|failed to\b|permission denied\b)",
    re.IGNORECASE,
)
# ``ValueError: ...``, ``requests.exceptions.ConnectionError: ...``: a class name and a colon.
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b(?::|\s*$)")
_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):", re.MULTILINE)
_EXIT_CODE = re.compile(
    r"\b(?:exit(?:ed)?(?:\s+with)?\s*(?:code|status)|return\s*code|returncode|exit_code)"
    r"\s*[:=]?\s*(-?\d+)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """One tool call an assistant message makes."""

    id: str | None
    name: str
    args: Any = None


@dataclass(frozen=True, slots=True)
class Part:
    """One piece of a message: its kind and the text it carries ("" for an image)."""

    kind: PartKind
    text: str = ""
    call: ToolCallPart | None = None
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class MessageText:
    """What one message says, whatever its shape.

    ``text`` is what a reader sees: text blocks joined (no reasoning, no tool arguments).
    ``reasoning`` is thinking / reasoning text. ``chars`` counts everything the model reads
    (text, reasoning, tool arguments, tool results, unknown blocks by their JSON size).
    """

    role: Role
    text: str
    parts: tuple[Part, ...] = ()
    reasoning: str = ""
    tool_calls: tuple[ToolCallPart, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    usage_tokens: int | None = None
    id: str | None = None
    form: str | None = None
    chars: int = 0

    @property
    def is_plugin(self) -> bool:
        """Written by this plugin (a Wake, cue, resume block, warning), not by the user."""
        return self.form is not None

    @property
    def has_images(self) -> bool:
        return any(p.kind == "image" for p in self.parts)


def _get(message: Any, name: str, default: Any = None) -> Any:
    if isinstance(message, Mapping):
        return message.get(name, default)
    try:
        return getattr(message, name, default)
    except Exception:  # a hostile property
        return default


def _json_chars(value: Any) -> int:
    try:
        return len(json.dumps(value, default=safe_text, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        return len(safe_text(value))


def _args_of(value: Any) -> Any:
    """Tool-call arguments: a dict as given, a JSON string parsed, anything else as text."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return safe_text(value)
        return parsed if isinstance(parsed, dict) else safe_text(value)
    return value if value is not None else {}


def _block_text(value: Any, depth: int = 0) -> str:
    """Text nested in a block value: a string, a list of blocks, a dict with text keys."""
    if depth > _MAX_DEPTH:
        return ""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, (list, tuple)):
        texts = (_block_text(v, depth + 1) for v in value)
        return "\n".join(t for t in texts if t)
    if isinstance(value, Mapping):
        kind = value.get("type")
        if kind in _IMAGE_BLOCKS or kind in _FILE_BLOCKS:
            return ""
        for key in ("text", "thinking", "reasoning", "output", "content", "summary"):
            if key in value:
                found = _block_text(value[key], depth + 1)
                if found:
                    return found
    return ""


def _reasoning_text(block: Mapping[str, Any]) -> str:
    """Thinking text (Anthropic), a summary or reasoning text (OpenAI), standard reasoning."""
    for key in ("thinking", "reasoning", "summary", "content"):
        text = _block_text(block.get(key) or "")
        if text:
            return text
    return ""


def _call_part(block: Mapping[str, Any]) -> ToolCallPart:
    # A responses ``function_call`` item has ``id`` (fc_...) and ``call_id`` (call_...); the
    # tool message and ``tool_calls`` use ``call_id``.
    call_id = block.get("call_id") or block.get("id") or block.get("tool_call_id")
    args = block.get("input", block.get("args", block.get("arguments")))
    return ToolCallPart(
        id=safe_text(call_id) if call_id else None,
        name=safe_text(block.get("name") or "tool")[:256],
        args=_args_of(args),
    )


def _read_block(block: Any) -> tuple[Part, int]:
    """One content block as a part and how many characters the model reads of it."""
    if isinstance(block, str):
        text = safe_text(block)
        return Part("text", text), len(text)
    if not isinstance(block, Mapping):
        return Part("other"), _json_chars(block)
    kind = block.get("type")
    if kind == "non_standard" and isinstance(block.get("value"), Mapping):
        return _read_block(block["value"])  # a provider block LangChain's v1 form wrapped
    if kind in _TEXT_BLOCKS or (kind is None and isinstance(block.get("text"), str)):
        text = safe_text(block.get("text") or block.get("refusal") or "")
        return Part("text", text), len(text)
    if kind in _REASONING_BLOCKS:
        text = _reasoning_text(block)
        # No readable text: only an opaque payload (redacted thinking, encrypted reasoning)
        # takes room in the context; ids and an empty summary do not.
        opaque = block.get("data") or block.get("encrypted_content")
        return Part("reasoning", text), len(text) or (len(opaque) if isinstance(opaque, str) else 0)
    if kind in _IMAGE_BLOCKS:
        return Part("image"), 0  # providers bill images by size, not by their base64 text
    if kind in _FILE_BLOCKS:
        text = _block_text(block.get("text") or "")  # a text-plain file is read as text
        return Part("file", text), len(text)
    if kind in _CALL_BLOCKS:
        call = _call_part(block)
        return Part("tool_call", call=call), len(call.name) + _json_chars(call.args)
    if kind in _RESULT_BLOCKS:
        text = _block_text(block.get("content", block.get("output", "")))
        error = bool(block.get("is_error")) or is_error_text(text)
        return Part("tool_result", text, is_error=error), len(text)
    if kind == "message":  # an OpenAI responses output item holding content blocks
        text = _block_text(block.get("content"))
        return Part("text", text), len(text)
    text = _block_text(block)
    return Part("other", text), _json_chars(block)


def _content_parts(content: Any) -> tuple[list[Part], int]:
    if content is None:
        return [], 0
    if isinstance(content, str):
        text = safe_text(content)
        return ([Part("text", text)] if text else []), len(text)
    if isinstance(content, (list, tuple)):
        parts, chars = [], 0
        for block in content:
            part, size = _read_block(block)
            parts.append(part)
            chars += size
        return parts, chars
    part, size = _read_block(content)
    return [part], size


def _tool_calls(message: Any, parts: Sequence[Part]) -> tuple[tuple[ToolCallPart, ...], int]:
    """The message's calls: ``tool_calls`` first, then call blocks not already listed."""
    calls: list[ToolCallPart] = []
    extra_chars = 0
    listed = _get(message, "tool_calls")
    for raw in listed if isinstance(listed, (list, tuple)) else ():
        if isinstance(raw, Mapping):
            function = raw.get("function")
            if isinstance(function, Mapping):  # the OpenAI chat dict form
                raw = {"id": raw.get("id"), **function}
            call = _call_part(raw)
            calls.append(call)
            extra_chars += len(call.name) + _json_chars(call.args)
    ids = {c.id for c in calls if c.id}
    for part in parts:
        if part.call is not None and (part.call.id is None or part.call.id not in ids):
            calls.append(part.call)
    return tuple(calls), extra_chars if not any(p.call for p in parts) else 0


def _usage_tokens(usage: Any) -> int | None:
    if not isinstance(usage, Mapping):
        return None
    total = usage.get("total_tokens")
    if isinstance(total, int) and not isinstance(total, bool) and total > 0:
        return total
    numbers = [
        v
        for v in (usage.get("input_tokens"), usage.get("output_tokens"))
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0
    ]
    return sum(numbers) if numbers else None


def plugin_form_of(message: Any) -> str | None:
    """The plugin mark ``additional_kwargs["mnemon"]["source"]["form"]``.

    Args:
        message: a LangChain message or its dict form.

    Returns:
        ``recall``, ``instructions``, ``resume``, ``warning`` ... or None for a message the
        plugin did not write.

    Example:
        >>> plugin_form_of({"type": "human", "content": "hi"}) is None
        True
    """
    extra = _get(message, "additional_kwargs")
    meta = extra.get(_PLUGIN_KEY) if isinstance(extra, Mapping) else None
    if isinstance(meta, Mapping):
        source = meta.get("source")
        form = source.get("form") if isinstance(source, Mapping) else meta.get("form")
        return form if isinstance(form, str) else None
    return None


def is_error_text(text: Any) -> bool:
    """Whether a tool's answer is an error by its content.

    True for an exception trace, an answer that starts with ``Error:`` / ``error`` /
    ``SomethingError:`` / ``Exception``, a non-zero exit code (``exit code 2``,
    ``"returncode": 1``) and a JSON object with a truthy ``error`` or ``is_error``.

    Example:
        >>> is_error_text("Error: file not found"), is_error_text("exit code: 0")
        (True, False)
        >>> is_error_text("No errors found in 12 files")
        False
    """
    if not isinstance(text, str):
        text = _block_text(text)
    head = text[:4000]
    if not head.strip():
        return False
    if _ERROR_START.match(head) or _TRACEBACK.search(head):
        return True
    if _EXCEPTION_LINE.match(head.lstrip()):
        return True
    code = _EXIT_CODE.search(head)
    if code and int(code.group(1)) != 0:
        return True
    stripped = head.lstrip()
    if stripped.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            return False
        if isinstance(value, Mapping):
            return _error_object(value)
    return False


def _error_object(value: Mapping[str, Any]) -> bool:
    """A JSON answer that reports a failure: ``error``, ``is_error``, a failed status or a
    non-zero exit code."""
    if value.get("error") or value.get("is_error") or value.get("isError"):
        return True
    status = value.get("status")
    if isinstance(status, str) and status.lower() in ("error", "failed", "failure"):
        return True
    code = next((value[k] for k in ("exit_code", "returncode", "exitCode") if k in value), 0)
    return isinstance(code, int) and not isinstance(code, bool) and code != 0


def message_id(message: Any) -> str | None:
    """A message's id (a LangChain message or its dict form); ``None`` without a text one.

    Example:
        >>> message_id({"type": "human", "content": "hi", "id": "m1"}), message_id("hi")
        ('m1', None)
    """
    value = _get(message, "id")
    return value if isinstance(value, str) and value else None


def role_of(message: Any) -> Role:
    """A message's role without reading its content.

    Example:
        >>> role_of(AIMessage("x")), role_of({"role": "tool", "content": "ok"})
        ('assistant', 'tool')
    """
    return _role_of(message)


def _role_of(message: Any) -> Role:
    """``type`` (LangChain), else ``role`` (dict forms, ``ChatMessage``, responses items)."""
    for key in ("type", "role"):
        kind = _get(message, key)
        if isinstance(kind, str) and kind in _ROLES:
            return _ROLES[kind]
    return "other"


def _kwargs_reasoning(message: Any) -> str:
    """Reasoning an AI message keeps in ``additional_kwargs``: ``reasoning_content``
    (DeepSeek, OpenAI-compatible servers) or a responses ``reasoning`` item (output v0)."""
    extra = _get(message, "additional_kwargs")
    if not isinstance(extra, Mapping):
        return ""
    found = extra.get("reasoning_content")
    if isinstance(found, str) and found.strip():
        return safe_text(found)
    item = extra.get("reasoning")
    return _reasoning_text(item) if isinstance(item, Mapping) else ""


# A message read once is not read again: the turn's steps read the same history several times
# (observation, activity, Wake facts), and every turn reads the thread's older messages again.
# A message with an ``id`` (LangGraph gives every state message one) is keyed by it and checked
# by equality of every attribute the reading uses, so the copy a checkpoint load makes hits and
# a changed message reads afresh; one without is keyed by the object while it lives and checked
# by identity. Dicts are read every time.
_READ_ATTRS = (
    "content", "type", "role", "tool_calls", "additional_kwargs", "tool_call_id", "status",
    "name", "id", "usage_metadata", "output", "call_id",
)  # fmt: skip
_BY_ID_KEPT = 4096  # readings kept by message id (the oldest go first)
_by_id: dict[str, tuple[tuple[Any, ...], MessageText]] = {}
_by_object: dict[int, tuple[weakref.ref[Any], tuple[Any, ...], MessageText]] = {}
_cache_lock = threading.Lock()


_plain_types: dict[type, bool] = {}


def _plain(kind: type) -> bool:
    """Whether ``kind`` keeps every attribute a reading uses in its instance dict (no property,
    no custom ``__getattribute__``): a LangChain message does."""
    found = _plain_types.get(kind)
    if found is None:
        found = kind.__getattribute__ is object.__getattribute__ and not any(
            hasattr(getattr(kind, name, None), "__get__") for name in _READ_ATTRS
        )
        _plain_types[kind] = found
    return found


def _attrs(message: Any) -> tuple[Any, ...] | None:
    """The attribute values a reading uses, from the instance dict (``None``: a class that
    computes them, or keeps no ``content`` there: read it every time)."""
    fields = getattr(message, "__dict__", None)
    if not isinstance(fields, dict) or "content" not in fields or not _plain(type(message)):
        return None
    get = fields.get
    return tuple([get(name) for name in _READ_ATTRS])


def _forget(key: int, ref: weakref.ref[Any]) -> None:
    entry = _by_object.get(key)
    if entry is not None and entry[0] is ref:
        del _by_object[key]


def _same(before: tuple[Any, ...], now: tuple[Any, ...]) -> bool:
    try:
        return before == now
    except Exception:  # an odd value that cannot compare: read it again
        return False


def _cached(message: Any, attrs: tuple[Any, ...]) -> MessageText | None:
    key = attrs[_READ_ATTRS.index("id")]
    if isinstance(key, str) and key:
        entry = _by_id.get(key)
        return entry[1] if entry is not None and _same(entry[0], attrs) else None
    held = _by_object.get(id(message))
    if held is not None and held[0]() is message and all(map(operator.is_, held[1], attrs)):
        return held[2]
    return None


def _keep(message: Any, attrs: tuple[Any, ...], read: MessageText) -> None:
    key = attrs[_READ_ATTRS.index("id")]
    if isinstance(key, str) and key:
        with _cache_lock:
            _by_id.pop(key, None)
            _by_id[key] = (attrs, read)
            while len(_by_id) > _BY_ID_KEPT:
                del _by_id[next(iter(_by_id))]
        return
    held = id(message)
    try:
        ref = weakref.ref(message, lambda r: _forget(held, r))
    except TypeError:  # no weak references: read every time
        return
    _by_object[held] = (ref, attrs, read)


def read_message(message: Any) -> MessageText:
    """Read one message (a LangChain message or its dict form) into a :class:`MessageText`.

    Args:
        message: a ``BaseMessage``, a ``{"type"|"role": ..., "content": ...}`` dict, or anything
            with those attributes.

    Returns:
        The message's role, visible text, parts, reasoning, tool calls, tool-result facts,
        reported usage, id, plugin mark and character count. Never raises.

    Example:
        >>> read_message({"role": "assistant", "content": [
        ...     {"type": "thinking", "thinking": "plan"},
        ...     {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.py"}},
        ... ]}).tool_calls[0].name
        'read_file'
    """
    if isinstance(message, Mapping) or not hasattr(message, "content"):
        return _read_message(message)
    attrs = _attrs(message)
    if attrs is None:
        return _read_message(message)
    read = _cached(message, attrs)
    if read is None:
        read = _read_message(message)
        _keep(message, attrs, read)
    return read


def _read_message(message: Any) -> MessageText:
    role = _role_of(message)
    content = _get(message, "content")
    if content is None and _get(message, "type") == "function_call_output":
        content = _get(message, "output")  # the responses input item carries ``output``
    parts, chars = _content_parts(content)
    calls, call_chars = _tool_calls(message, parts) if role == "assistant" else ((), 0)
    text = "\n".join(p.text for p in parts if p.kind == "text" and p.text)
    reasoning = "\n".join(p.text for p in parts if p.kind == "reasoning" and p.text)
    if role == "assistant" and not reasoning:
        reasoning = _kwargs_reasoning(message)  # v0 forms keep it beside the content
        chars += len(reasoning)
    is_error = False
    call_id = None
    if role == "tool":
        raw_id = _get(message, "tool_call_id") or _get(message, "call_id")
        call_id = safe_text(raw_id) if raw_id else None
        body = text or "\n".join(p.text for p in parts if p.text)
        is_error = (
            _get(message, "status") == "error"
            or any(p.is_error for p in parts)
            or is_error_text(body)
        )
        text = body
    raw_name = _get(message, "name")
    raw_id = _get(message, "id")
    return MessageText(
        role=role,
        text=text,
        parts=tuple(parts),
        reasoning=reasoning,
        tool_calls=calls,
        tool_call_id=call_id,
        name=safe_text(raw_name)[:256] if isinstance(raw_name, str) and raw_name else None,
        is_error=is_error,
        usage_tokens=_usage_tokens(_get(message, "usage_metadata")),
        id=safe_text(raw_id) if isinstance(raw_id, str) and raw_id else None,
        form=plugin_form_of(message),
        chars=chars + call_chars,
    )


def read_messages(messages: Iterable[Any]) -> list[MessageText]:
    """:func:`read_message` over a list.

    Args:
        messages: LangChain messages or their dict forms (``None`` reads as no messages).

    Returns:
        One :class:`MessageText` per message, in order. Never raises on odd messages.

    Example:
        >>> [m.role for m in read_messages([{"role": "user", "content": "hi"}])]
        ['user']
    """
    return [read_message(m) for m in messages or ()]


def messages_chars(messages: Iterable[MessageText]) -> int:
    """Characters a model reads of these messages (the fatigue estimate's numerator).

    Args:
        messages: messages already read with :func:`read_messages`.

    Returns:
        The sum of their ``chars``: text, reasoning, tool arguments and tool results, unknown
        blocks by their JSON size; images and known blocks' ids and signatures count nothing.

    Example:
        >>> messages_chars(read_messages([{"role": "user", "content": "hello"}]))
        5
    """
    return sum(m.chars for m in messages)


def is_request(message: MessageText) -> bool:
    """Whether a message is a request the user wrote: a user message that is not the
    plugin's (Wake, cue, resume block, stub) and not only tool results (Anthropic's raw form
    sends those as a user message).

    Args:
        message: a message read with :func:`read_message`.

    Returns:
        True for the user's own words (text, images, files; an empty message too).

    Example:
        >>> is_request(read_message({"role": "user", "content": "Fix it"}))
        True
    """
    return (
        message.role == "user"
        and not message.is_plugin
        and not (message.parts and all(p.kind == "tool_result" for p in message.parts))
    )


def latest_request_index(messages: Sequence[MessageText]) -> int | None:
    """The index of the newest :func:`is_request` message, or None when there is none.

    Example:
        >>> latest_request_index(read_messages([{"role": "user", "content": "hi"},
        ...                                     {"role": "assistant", "content": "hello"}]))
        0
    """
    for index in range(len(messages) - 1, -1, -1):
        if is_request(messages[index]):
            return index
    return None
