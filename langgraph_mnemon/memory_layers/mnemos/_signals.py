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
from langgraph_mnemon.memory_layers.messages import MessageText, messages_chars
from langgraph_mnemon.memory_layers.mnemos._models import ContextWindow
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
    """Insert the rows of new call ids and update the status of known ones; returns how many
    rows were new."""
    if not rows:
        return 0
    known = _known_statuses(conn, task, [r["call_id"] for r in rows if r["call_id"] is not None])
    fresh = []
    seen: set[str] = set()
    for row in rows:
        call_id = row["call_id"]
        if call_id is None:
            fresh.append(row)
        elif call_id in known:
            if row["status"] != "pending" and known[call_id] != row["status"]:
                _update_status(conn, task, call_id, row["status"])
        elif call_id not in seen:
            seen.add(call_id)
            fresh.append(row)
    if fresh:
        conn.execute(sa.insert(SIGNALS), fresh)
    return len(fresh)


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
) -> None:
    """Record a token reading, once per ``call_id``.

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
        return
    # One statement instead of UPDATE-then-INSERT: the conflict keeps the row (and its seq)
    # and sets the values; a kept row keeps its created_at, so it tells an insert apart.
    stmt = upsert(conn.dialect.name, SIGNALS, ("task_id", "kind", "call_id"), tuple(values))
    seq, created = conn.execute(
        stmt.values(**row).returning(SIGNALS.c.seq, SIGNALS.c.created_at)
    ).one()
    if created == moment and trims_at(seq):
        trim_oldest(conn, SIGNALS, task, USAGE_KEPT, SIGNALS.c.kind == "usage")


# --- reading a message list ----------------------------------------------------------------


@dataclass(slots=True)
class Observation:
    """What a message list shows: tool rows (with known outcomes) and the token reading."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    tokens: int | None = None
    estimated: bool = False
    usage_id: str | None = None


def observe(
    task: str, messages: Sequence[MessageText], source: SignalSource, chars_per_token: float
) -> Observation:
    """Tool rows of the AI messages' tool calls (outcomes from tool messages: an error by
    status or by content) and the token reading of the last AI message (a character estimate
    of all messages when it reported none). ``messages`` are read with
    :func:`~langgraph_mnemon.memory_layers.messages.read_messages`: content blocks count."""
    seen = Observation()
    outcomes: dict[str, str] = {}
    last_ai: tuple[int, MessageText] | None = None
    for i, message in enumerate(messages):
        if message.role == "assistant":
            last_ai = (i, message)
            seen.rows += _call_rows(task, i, message, source)
        elif message.role == "tool" and message.tool_call_id:
            outcomes[message.tool_call_id] = "error" if message.is_error else "ok"
    for row in seen.rows:
        if row["call_id"] in outcomes:
            row["status"] = outcomes[row["call_id"]]
    if last_ai is not None and last_ai[1].usage_tokens is not None:
        # The model counted everything up to its answer; what came after it (tool results, a
        # new user message) is on its way into the next call, so it counts too, estimated.
        after = messages_chars(messages[last_ai[0] + 1 :])
        seen.tokens = min(last_ai[1].usage_tokens + round(after / chars_per_token), _MAX_TOKENS)
        seen.usage_id = last_ai[1].id or f"msg{last_ai[0]}"
        if after:
            seen.usage_id = f"{seen.usage_id}+{len(messages) - last_ai[0] - 1}"
    if seen.tokens is None and messages:
        seen.tokens = min(round(messages_chars(messages) / chars_per_token), _MAX_TOKENS)
        seen.estimated = True
        seen.usage_id = f"estimate:{len(messages)}"
    return seen


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
