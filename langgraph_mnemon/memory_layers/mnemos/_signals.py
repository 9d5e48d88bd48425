"""Signals: what a run shows Mnemos (tool calls, their outcome, token usage), as signal rows.

A tool call becomes one row per call id (a repeated id only updates its status); token usage
is one row per model call id. A tool row's ``args_digest`` column holds the digest of the
call's *re-read key* (:func:`resource_key`: what the call reads, so a second read of the same
file with another offset has the same digest); ``path`` holds its first file path (never a
URL). Everything observed is made storable with
:func:`~langgraph_mnemon.contracts.safe_text` (model output may hold lone surrogates or NUL)
instead of failing the turn. :func:`observe` reads a LangChain message list (or dicts).

Example:
    >>> is_read_only_tool("read_file"), is_read_only_tool("SearchWeb"), is_read_only_tool("edit")
    (True, True, False)
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import sqlalchemy as sa

from langgraph_mnemon.contracts import safe_text
from langgraph_mnemon.memory_layers.messages import (
    MessageText,
    message_id,
    messages_chars,
    role_of,
)
from langgraph_mnemon.memory_layers.mnemos._models import ContextWindow, SeenMessages
from langgraph_mnemon.memory_layers.mnemos._scope import (
    dir_key,
    extract_paths,
    normalize_path,
    string_arguments,
)
from langgraph_mnemon.memory_layers.mnemos.schema import SIGNALS
from langgraph_mnemon.memory_layers.mnemos.store import (
    USAGE_KEPT,
    trim_now,
    trim_oldest,
    trims_at,
)
from langgraph_mnemon.storage.db import upsert

__all__ = [
    "Observation",
    "SignalSource",
    "is_edit_tool",
    "is_read_only_tool",
    "observe",
    "resource_key",
    "set_tool_status",
    "store_tool_rows",
    "store_usage",
]

_READ_VERBS = frozenset(
    {
        "read",
        "get",
        "view",
        "cat",
        "open",
        "fetch",
        "search",
        "grep",
        "glob",
        "find",
        "list",
        "ls",
        "show",
        "lookup",
        "query",
        "head",
        "tail",
        "inspect",
        "describe",
        "retrieve",
        "recall",
    }
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORDS = re.compile(r"[^a-z0-9]+")
_MAX_TOKENS = 2**31 - 1  # the signals' INTEGER column; a model may report anything
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#]+[^\s]*$")
# What a search looks for is part of what it reads: grep "foo" and grep "bar" in src/ differ.
_QUERY_KEYS = frozenset(
    {"pattern", "query", "q", "regex", "search", "glob", "term", "terms", "keyword", "keywords"}
)
_RECORD_KEYS = frozenset(
    {"id", "key", "uri", "urn", "uuid", "slug", "record", "record_id", "document_id", "doc_id"}
)
_MAX_KEY_VALUE = 1024
_ID_BATCH = 500


def is_read_only_tool(name: str, extra: Iterable[str] = ()) -> bool:
    """Whether a tool name reads without changing anything (``read_file``, ``SearchWeb``...).

    Args:
        name: the tool name as the model called it.
        extra: names that always count as read-only (``MnemosConfig.read_only_tools``).

    Returns:
        True for names listed in ``extra`` and for names whose first word is a read verb
        (read, get, view, search, grep, glob, list, fetch, ...).

    Example:
        >>> is_read_only_tool("getUser"), is_read_only_tool("deploy", extra=["deploy"])
        (True, True)
    """
    if name in set(extra):
        return True
    words = [w for w in _WORDS.split(_CAMEL.sub(" ", name).lower()) if w]
    return bool(words) and words[0] in _READ_VERBS


_EDIT_VERBS = frozenset(
    {
        "edit",
        "write",
        "create",
        "patch",
        "apply",
        "replace",
        "update",
        "delete",
        "remove",
        "move",
        "rename",
        "append",
        "insert",
        "modify",
        "save",
        "mkdir",
        "rm",
        "mv",
        "touch",
    }
)


def is_edit_tool(name: str | None) -> bool:
    """Whether a tool name changes files (``edit_file``, ``str_replace_based_edit_tool``...).

    A tool that neither reads nor edits (``run_tests``, ``bash``) only *touches* the paths it
    names: resume does not list them as edited.

    Example:
        >>> is_edit_tool("write_file"), is_edit_tool("run_tests")
        (True, False)
    """
    words = _WORDS.split(_CAMEL.sub(" ", name or "").lower())
    return any(w in _EDIT_VERBS for w in words)


@dataclass(frozen=True, slots=True)
class SignalSource:
    """What turns an observed call into a row: the workspace, read-only names, the clock."""

    workspace: Path | None
    read_only_tools: tuple[str, ...]
    clock: Callable[[], float]

    def tool_row(
        self, task: str, name: str, args: Any, call_id: str | None, status: str = "pending"
    ) -> dict[str, Any]:
        """The signal row of one tool call (its first path-like argument gives the path)."""
        path = self._first_path(args)
        return {
            "task_id": task,
            "kind": "tool",
            "call_id": safe_text(call_id) if call_id is not None else None,
            "tool_name": safe_text(name)[:256],
            "args_digest": self._reread_digest(name, args, path),
            "path": path,
            "dir_key": dir_key(path) if path else None,
            "read_only": is_read_only_tool(name, self.read_only_tools),
            "status": status,
            "tokens": None,
            "context_window": None,
            "window_source": None,
            "estimated": False,
            "created_at": self.clock(),
        }

    def _first_path(self, args: Any) -> str | None:
        """The first path-like argument that is no URL, normalized; None when there is none."""
        try:
            paths = [p for p in extract_paths(args) if "://" not in p]
        except Exception:  # hostile argument objects (a raising __str__): no path, not a failure
            return None
        return normalize_path(safe_text(paths[0]), self.workspace) if paths else None

    def _reread_digest(self, name: str, args: Any, path: str | None) -> str:
        try:
            return _digest(resource_key(name, args, path=path))
        except Exception:  # hostile argument objects: the arguments' digest, not a failure
            return _args_digest(args)


def resource_key(name: str, args: Any, *, path: str | None = None) -> str:
    """What a tool call reads, as a key: two reads with the same key are a re-read.

    In order: the call's first file path (``path``, as :class:`SignalSource` normalized it)
    with its search pattern if it has one; else its first URL (scheme and host lower-cased,
    fragment and trailing ``/`` dropped); else its record id arguments (``id``, ``key``,
    ``uri``, ``record_id``, ``document_id``, any ``*_id``) with the tool name; else the tool
    name with the identical arguments. Offsets, limits, encodings and other arguments do not
    count for the first three.

    Args:
        name: the tool name.
        args: the call's arguments (a mapping, a string or anything JSON-like).
        path: the call's first path, normalized (None: the call has none).

    Returns:
        ``path:…``, ``url:…``, ``record:<tool>:…`` or ``args:<tool>:…``.

    Example:
        >>> resource_key("read_file", {"path": "a.py", "offset": 200}, path="a.py")
        'path:a.py'
        >>> resource_key("fetch", {"url": "HTTPS://Docs.x.io/a/#top", "max_length": 5})
        'url:https://docs.x.io/a'
        >>> resource_key("get_issue", {"issue_id": 7, "fields": ["title"]})
        'record:get_issue:[["issue_id","7"]]'
    """
    query = _query_terms(args)
    if path is not None:
        return f"path:{path}{query}"
    url = next((_normal_url(v) for _, v in _string_args(args) if _URL.match(v)), None)
    if url is not None:
        return f"url:{url}{query}"
    records = _record_ids(args)
    if records:
        return f"record:{safe_text(name)}:{_json(records)}"
    return f"args:{safe_text(name)}:{_json(args)}"


def _string_args(args: Any) -> list[tuple[str | None, str]]:
    """(key, text) of the short, non-blank string arguments (see ``string_arguments``)."""
    return [(k, v) for k, v in string_arguments(args) if v and len(v) <= _MAX_KEY_VALUE]


def _normal_url(url: str) -> str:
    parts = urlsplit(safe_text(url))
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


def _query_terms(args: Any) -> str:
    if not isinstance(args, Mapping):
        return ""
    terms = sorted(
        (safe_text(k).lower(), safe_text(v))
        for k, v in args.items()
        if isinstance(k, str) and k.lower() in _QUERY_KEYS and isinstance(v, (str, int, float))
    )
    return f"|{_json(terms)}" if terms else ""


def _record_ids(args: Any) -> list[tuple[str, str]]:
    if not isinstance(args, Mapping):
        return []
    found = []
    for key, value in args.items():
        if not isinstance(key, str) or isinstance(value, bool):
            continue
        lowered = safe_text(key).lower()
        named = lowered in _RECORD_KEYS or lowered.endswith("_id") or key.endswith("Id")
        if named and isinstance(value, (str, int)) and str(value).strip():
            found.append((lowered, safe_text(str(value).strip())[:_MAX_KEY_VALUE]))
    return sorted(found)


# --- storing -------------------------------------------------------------------------------


def store_tool_rows(conn: sa.Connection, task: str, rows: list[dict[str, Any]]) -> int:
    """Insert the rows of new call ids and set the outcome of known ones
    (:func:`merge_tool_rows`); returns how many rows were new (one read more)."""
    if not rows:
        return 0
    ids = [r["call_id"] for r in rows if r["call_id"] is not None]
    known = _known_statuses(conn, task, ids)
    new = len(set(ids).difference(known)) + sum(1 for r in rows if r["call_id"] is None)
    merge_tool_rows(conn, task, rows)
    return new


def merge_tool_rows(conn: sa.Connection, task: str, rows: list[dict[str, Any]]) -> None:
    """Store tool rows in one statement: new call ids are inserted, a known one takes a row's
    outcome (never back to ``pending``)."""
    if not rows:
        return
    unique: dict[Any, dict[str, Any]] = {}
    for row in rows:  # one row per call id (a statement may not touch a row twice)
        key = row["call_id"] if row["call_id"] is not None else id(row)
        if key not in unique or row["status"] != "pending":
            unique[key] = row
    conn.execute(_merge_statement(conn.dialect.name), list(unique.values()))


@functools.cache
def _merge_statement(dialect: str) -> Any:
    """The upsert of :func:`merge_tool_rows` (built once: ``excluded`` proxies every column)."""
    return upsert(
        dialect,
        SIGNALS,
        ("task_id", "kind", "call_id"),
        ("status",),
        where=lambda excluded: excluded.status != "pending",
    )


def _known_statuses(conn: sa.Connection, task: str, ids: list[str]) -> dict[str, str]:
    known: dict[str, str] = {}
    for start in range(0, len(ids), _ID_BATCH):
        batch = ids[start : start + _ID_BATCH]
        for call_id, status in conn.execute(
            sa.select(SIGNALS.c.call_id, SIGNALS.c.status).where(
                SIGNALS.c.task_id == task,
                SIGNALS.c.kind == "tool",
                SIGNALS.c.call_id.in_(batch),
            )
        ):
            known[call_id] = status
    return known


def _update_status(conn: sa.Connection, task: str, call_id: str, status: str) -> Any:
    return conn.execute(
        sa.update(SIGNALS)
        .where(
            SIGNALS.c.task_id == task,
            SIGNALS.c.kind == "tool",
            SIGNALS.c.call_id == call_id,
        )
        .values(status=status)
    )


def set_tool_status(conn: sa.Connection, task: str, call_id: str, *, error: bool) -> bool:
    """Set the outcome of a recorded call; False when the call is unknown."""
    result = _update_status(conn, task, call_id, "error" if error else "ok")
    return bool(result.rowcount)


def store_usage(
    conn: sa.Connection,
    task: str,
    tokens: int,
    window: ContextWindow | None,
    estimated: bool,
    call_id: str | None,
    *,
    moment: float,
) -> bool:
    """Record a token reading, once per ``call_id``; whether it is now the task's newest.

    A reading whose ``call_id`` is already stored is updated in place and keeps its place in
    the order: a history that still holds an old AI message (after a compaction) re-observes
    its usage without making that stale reading the newest again. ``window``: the window the
    calling model declared (or the caller gave), kept with the reading.
    """
    values = {
        "tokens": tokens,
        "context_window": window.tokens if window is not None else None,
        "window_source": window.source if window is not None else None,
        "estimated": estimated,
    }
    row = {
        "task_id": task,
        "kind": "usage",
        "call_id": call_id,
        "tool_name": None,
        "args_digest": None,
        "path": None,
        "dir_key": None,
        "read_only": False,
        "status": "ok",
        "created_at": moment,
        **values,
    }
    if call_id is None:  # no call id, no conflict: a plain insert (NULLs are distinct)
        result = conn.execute(sa.insert(SIGNALS).values(**row))
        if trim_now(result):  # one reading per model call: keep the newest few
            trim_oldest(conn, SIGNALS, task, USAGE_KEPT, SIGNALS.c.kind == "usage")
        return True
    # One statement instead of UPDATE-then-INSERT: the conflict keeps the row (and its seq)
    # and sets the values; a kept row keeps its created_at, so it tells an insert apart.
    seq, created = conn.execute(_usage_statement(conn.dialect.name), row).one()
    if created == moment and trims_at(seq):
        trim_oldest(conn, SIGNALS, task, USAGE_KEPT, SIGNALS.c.kind == "usage")
    return bool(created == moment)


_USAGE_VALUES = ("tokens", "context_window", "window_source", "estimated")


@functools.cache
def _usage_statement(dialect: str) -> Any:
    """The reading's upsert: a known call id keeps its row (and seq), takes the values."""
    stmt = upsert(dialect, SIGNALS, ("task_id", "kind", "call_id"), _USAGE_VALUES)
    return stmt.returning(SIGNALS.c.seq, SIGNALS.c.created_at)


# --- reading a message list ----------------------------------------------------------------


@dataclass(slots=True)
class Observation:
    """What a message list shows: tool rows (with known outcomes), the token reading and the
    running totals the next pass starts from (see :class:`~._models.SeenMessages`)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    tokens: int | None = None
    estimated: bool = False
    usage_id: str | None = None
    chars: int = 0
    usage_ref: str | None = None  # the newest assistant message with usage (no "+n")
    usage_base: int = 0
    after_chars: int = 0
    after_count: int = 0


def observe(
    task: str,
    messages: Sequence[MessageText],
    source: SignalSource,
    chars_per_token: float,
    *,
    offset: int = 0,
    fresh: int = 0,
    prior: SeenMessages | None = None,
) -> Observation:
    """Tool rows of the AI messages' tool calls (outcomes from tool messages: an error by
    status or by content) and the token reading of the last AI message (a character estimate
    of all messages when it reported none). ``messages`` are read with
    :func:`~langgraph_mnemon.memory_layers.messages.read_messages`: content blocks count.

    A pass over the new part of a longer list gives ``offset`` (the list position of
    ``messages[0]``), ``fresh`` (where the messages not seen before start in ``messages``: an
    assistant message re-read for the calls its tool answers comes before it) and ``prior``
    (the totals up to ``offset + fresh``): the reading is then the one the whole list gives.
    """
    seen = Observation()
    outcomes: dict[str, str] = {}
    last_ai: tuple[int, MessageText] | None = None
    for i, message in enumerate(messages):
        if message.role == "assistant":
            last_ai = (i, message)
            seen.rows += _call_rows(task, offset + i, message, source)
        elif message.role == "tool" and message.tool_call_id:
            outcomes[message.tool_call_id] = "error" if message.is_error else "ok"
    for row in seen.rows:
        if row["call_id"] in outcomes:
            row["status"] = outcomes[row["call_id"]]
    _read_tokens(seen, messages, last_ai, offset, fresh, prior, chars_per_token)
    return seen


def _read_tokens(
    seen: Observation,
    messages: Sequence[MessageText],
    last_ai: tuple[int, MessageText] | None,
    offset: int,
    fresh: int,
    prior: SeenMessages | None,
    chars_per_token: float,
) -> None:
    """The reading: the newest AI message's usage plus what came after it, else estimated."""
    new_chars = messages_chars(messages[fresh:])
    seen.chars = (prior.chars if prior is not None else 0) + new_chars
    if last_ai is not None and last_ai[1].usage_tokens is not None:
        # The model counted everything up to its answer; what came after it (tool results, a
        # new user message) is on its way into the next call, so it counts too, estimated.
        i, ai = last_ai
        seen.usage_ref, seen.usage_base = ai.id or f"msg{offset + i}", ai.usage_tokens
        seen.after_chars, seen.after_count = (
            messages_chars(messages[i + 1 :]),
            len(messages) - i - 1,
        )
    elif last_ai is None and prior is not None and prior.usage_id is not None:
        # The newest AI message came before this part: its reading grows by what is new.
        seen.usage_ref, seen.usage_base = prior.usage_id, prior.usage_tokens
        seen.after_chars = prior.after_chars + new_chars
        seen.after_count = prior.after_count + len(messages) - fresh
    if seen.usage_ref is not None:
        seen.tokens = min(seen.usage_base + round(seen.after_chars / chars_per_token), _MAX_TOKENS)
        seen.usage_id = seen.usage_ref
        if seen.after_chars:
            seen.usage_id = f"{seen.usage_ref}+{seen.after_count}"
    elif offset + len(messages):
        seen.tokens = min(round(seen.chars / chars_per_token), _MAX_TOKENS)
        seen.estimated = True
        seen.usage_id = f"estimate:{offset + len(messages)}"


_MAX_ID_CHARS = 512  # SeenMessages.last_id: a longer id is not kept (the next pass reads all)


def new_part(
    messages: Sequence[Any], since: SeenMessages | None
) -> tuple[int, int, SeenMessages | None]:
    """Where a pass over ``messages`` reads from: ``(offset, fresh, prior)``.

    ``(0, 0, None)`` reads everything: no cursor, or the list no longer holds the message the
    cursor stopped at in its place (a compacted or rewritten history). Otherwise the new part
    starts at ``since.count``; when it starts with tool answers, the assistant message that
    made those calls is read again (``offset`` before ``offset + fresh``) so the calls get
    their outcomes and results. Only a few messages are looked at, whatever the list's length.

    Example:
        >>> new_part(msgs, None)
        (0, 0, None)
    """
    if since is None or since.count > len(messages):
        return 0, 0, None
    if message_id(messages[since.count - 1]) != since.last_id:
        return 0, 0, None
    offset = since.count
    if offset < len(messages) and role_of(messages[offset]) == "tool":
        back = offset - 1
        while back >= 0 and role_of(messages[back]) == "tool":
            back -= 1
        if back >= 0 and role_of(messages[back]) == "assistant":
            offset = back
    return offset, since.count - offset, since


def cursor_after(messages: Sequence[Any], seen: Observation) -> SeenMessages | None:
    """Where an observation of all of ``messages`` stopped (``None``: the last message has no
    usable id, and the next pass reads everything)."""
    last = message_id(messages[-1]) if messages else None
    if not last or len(last) > _MAX_ID_CHARS:
        return None
    usage = seen.usage_ref
    if usage is not None and len(usage) > _MAX_ID_CHARS:
        return None
    return SeenMessages(
        last_id=last,
        count=len(messages),
        chars=seen.chars,
        usage_id=usage,
        usage_tokens=seen.usage_base,
        after_chars=seen.after_chars,
        after_count=seen.after_count,
    )


def _call_rows(
    task: str, index: int, message: MessageText, source: SignalSource
) -> list[dict[str, Any]]:
    rows = []
    for j, call in enumerate(message.tool_calls):
        if not call.name.strip():
            continue
        call_id = call.id or f"msg{index}:{j}"
        rows.append(source.tool_row(task, call.name, call.args, call_id))
    return rows


def _json(value: Any) -> str:
    try:
        return json.dumps(
            value, sort_keys=True, default=safe_text, ensure_ascii=False, separators=(",", ":")
        )
    except (TypeError, ValueError, RecursionError):
        return safe_text(value)


def _digest(text: str) -> str:
    # Model output may hold lone surrogates (half an emoji): "surrogatepass" hashes them
    # instead of failing.
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _args_digest(args: Any) -> str:
    try:
        text = json.dumps(args, sort_keys=True, default=safe_text, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = safe_text(args)
    return _digest(text)
