"""``Mnemos``: task-scoped working memory with fatigue, consolidation, checkpoints and resume.

Every public method validates its input and raises a typed error from
:mod:`langgraph_mnemon.errors`; every mutation runs in one transaction, so a failure leaves the
rows as they were. Task ids, node ids, content, summaries, scope tags and paths refuse NUL
characters, lone surrogates and values of the wrong type with :class:`InvalidInputError`.
Reads never create the tables: before the first write they answer empty (``resume`` raises
:class:`NotFoundError`), and on a read-only host (``write_enabled=false``) ``fatigue()`` does
not log its reading.

Example:
    >>> mnemos = Mnemos(Database(create_engine("sqlite:///./.mnemon/mnemon.db")))
    >>> mnemos.setup()
    >>> goal = mnemos.add_node("task-1", "goal", "Ship the password reset flow")
    >>> mnemos.add_node("task-1", "constraint", "Keep the public API backward compatible")
    >>> mnemos.checkpoint("task-1").status
    'committed'
    >>> print(mnemos.resume("task-1"))  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path, PurePosixPath
from typing import Any

import sqlalchemy as sa

from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.contracts import check_text, safe_text, shown, text_problem
from langgraph_mnemon.errors import InvalidInputError, NotFoundError
from langgraph_mnemon.memory_layers.kernel import Kernel
from langgraph_mnemon.memory_layers.mnemos import fatigue as fatigue_model
from langgraph_mnemon.memory_layers.mnemos import store
from langgraph_mnemon.memory_layers.mnemos.git import collect_git_state
from langgraph_mnemon.memory_layers.mnemos.models import (
    ADDABLE_NODE_TYPES,
    CheckpointReceipt,
    CheckpointRecord,
    ConsolidationResult,
    FatigueReading,
    FatigueResponse,
    MnemoNode,
    NodeSummary,
    RecentFile,
    TaskOverview,
    TaskSummary,
)
from langgraph_mnemon.memory_layers.mnemos.resume import (
    compress_summary,
    render_handoff,
    render_resume,
)
from langgraph_mnemon.memory_layers.mnemos.schema import MIGRATIONS, NODE_LINKS, NODES, SIGNALS
from langgraph_mnemon.memory_layers.mnemos.scope import (
    dir_key,
    extract_paths,
    jaccard,
    merge_tags,
    normalize_path,
    scope_tags_for_path,
)
from langgraph_mnemon.storage.db import Database

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_TASK_ID_CHARS",
    "Mnemos",
    "is_read_only_tool",
    "summary_from_state",
    "validate_task_id",
]

MAX_TASK_ID_CHARS = 512
MAX_CONTENT_CHARS = 65_536
MAX_TAGS = 16
MAX_TAG_CHARS = 128
LINK_TYPES = ("related", "depends_on", "caused_by")
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
_RECENT_SIGNALS = 100
_NARRATIVE_SIGNALS = 50
_MAX_RECENT_FILES = 15
_MAX_TOKENS = 2**31 - 1  # the signals' INTEGER column; a model may report anything


# --------------------------------------------------------------------------------------------
# Validation


def validate_task_id(value: Any, field: str = "task_id") -> str:
    """A task id: a non-empty string of at most 512 characters without control characters
    or lone surrogates (:class:`InvalidInputError` otherwise)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be a string (got {type(value).__name__})")
    if not value.strip():
        raise InvalidInputError(f"{field} is required (for a LangGraph thread: its thread_id)")
    if len(value) > MAX_TASK_ID_CHARS:
        raise InvalidInputError(f"{field} is longer than {MAX_TASK_ID_CHARS} characters")
    if any(ord(ch) < 32 for ch in value):
        raise InvalidInputError(f"{field} must not contain control characters")
    return check_text(value, field)  # a lone surrogate cannot be stored


def _content(value: Any, field: str = "content") -> str:
    text = check_text(value, field).strip()  # NUL and lone surrogates are refused
    if not text:
        raise InvalidInputError(f"{field} is required")
    if len(text) > MAX_CONTENT_CHARS:
        raise InvalidInputError(
            f"{field} is too long ({len(text)} characters; max {MAX_CONTENT_CHARS}); "
            "store a summary and keep the full text in a Document"
        )
    return text


def _string_list(value: Any, field: str, *, max_items: int, max_chars: int) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidInputError(f"{field} must be a list of strings")
    items = list(value)
    if len(items) > max_items:
        raise InvalidInputError(f"{field} accepts at most {max_items} items")
    out = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise InvalidInputError(f"{field} items must be non-empty strings (got {shown(item)})")
        if len(item) > max_chars or any(ord(ch) < 32 for ch in item) or text_problem(item):
            raise InvalidInputError(
                f"{field} item {item[:40]!r} is too long or has control characters"
            )
        out.append(item.strip())
    return out


def _unit(value: Any, field: str, *, low_open: bool = False, high_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{field} must be a number between 0 and 1")
    inside = 0 <= value <= 1  # compared before float(): a huge int does not fit one
    if not inside or value != value or (low_open and value == 0) or (high_open and value == 1):
        low = "(0" if low_open else "[0"
        high = "1)" if high_open else "1]"
        shown = repr(value) if isinstance(value, float) or inside else "an integer"
        raise InvalidInputError(f"{field} must lie in {low}, {high} (got {shown})")
    return float(value)


def _call_id(value: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > 512:
        raise InvalidInputError("call_id must be a non-empty string of at most 512 characters")
    return check_text(value, "call_id")


def _flag(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{field} must be true or false (got {type(value).__name__})")
    return value


def _positive_int(value: Any, field: str, *, maximum: int = 100_000) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidInputError(f"{field} must be an integer between 1 and {maximum}")
    return value


def is_read_only_tool(name: str, extra: Iterable[str] = ()) -> bool:
    """Whether a tool name reads without changing anything (``read_file``, ``SearchWeb``...).

    True for names listed in ``extra`` and for names whose first word is a read verb (read,
    get, view, search, grep, glob, list, fetch, ...).
    """
    if name in set(extra):
        return True
    words = [w for w in _WORDS.split(_CAMEL.sub(" ", name).lower()) if w]
    return bool(words) and words[0] in _READ_VERBS


def _args_digest(args: Any) -> str:
    # Model output may hold lone surrogates (half an emoji): "surrogatepass" hashes them
    # instead of failing, and gives the same digest as before for every encodable text.
    try:
        text = json.dumps(args, sort_keys=True, default=safe_text, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = safe_text(args)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _json_chars(value: Any) -> int:
    """How many characters ``value`` takes as JSON (its text when it cannot be dumped)."""
    try:
        return len(json.dumps(value, default=safe_text))
    except (TypeError, ValueError, RecursionError):
        return len(safe_text(value))


def _get(message: Any, name: str, default: Any = None) -> Any:
    if isinstance(message, Mapping):
        return message.get(name, default)
    return getattr(message, name, default)


def _message_kind(message: Any) -> str | None:
    kind = _get(message, "type") or _get(message, "role")
    if kind == "assistant":
        return "ai"
    if kind == "user":
        return "human"
    return kind if isinstance(kind, str) else None


def _message_chars(message: Any) -> int:
    content = _get(message, "content", "")
    total = 0
    if isinstance(content, str):
        total += len(content)
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                total += len(block)
            elif isinstance(block, Mapping):
                text = block.get("text")
                total += len(text) if isinstance(text, str) else _json_chars(block)
    calls = _get(message, "tool_calls", None)
    for call in calls if isinstance(calls, (list, tuple)) else ():
        total += _json_chars(_get(call, "args", {})) + len(safe_text(_get(call, "name", "")))
    return total


def _usage_tokens(usage: Any) -> int | None:
    if not isinstance(usage, Mapping):
        return None
    total = usage.get("total_tokens")
    if isinstance(total, int) and total > 0:
        return min(total, _MAX_TOKENS)
    parts = [usage.get("input_tokens"), usage.get("output_tokens")]
    numbers = [p for p in parts if isinstance(p, int) and p >= 0]
    return min(sum(numbers), _MAX_TOKENS) if numbers else None


# --------------------------------------------------------------------------------------------


class Mnemos:
    """Task memory on the shared SQL database (``Mnemon.mnemos``)."""

    def __init__(
        self,
        database: Database,
        config: MnemosConfig | None = None,
        *,
        workspace: Path | str | None = None,
        clock: Callable[[], float] = time.time,
        kernel: Kernel | None = None,
    ) -> None:
        if not isinstance(database, Database):
            raise InvalidInputError(
                f"Mnemos() takes a Database (got {type(database).__name__}); "
                "use Database(create_engine(url))"
            )
        if config is not None and not isinstance(config, MnemosConfig):
            raise InvalidInputError(f"config must be a MnemosConfig (got {type(config).__name__})")
        self.db = database
        self.config = config or MnemosConfig()
        self.workspace = Path(workspace).expanduser().absolute() if workspace else None
        self._clock = clock
        # Task-memory writes ask the kernel (write_enabled); alone: writable unless the
        # database handle is read-only.
        self.kernel = kernel or Kernel.standalone(write_enabled=not database.read_only)

    def __repr__(self) -> str:
        return f"Mnemos(database={self.db.url!r})"

    # ---------------------------------------------------------------------------- setup

    def setup(self) -> None:
        """Create or migrate the schema (idempotent; also done lazily by every write)."""
        self.kernel.admit("mnemos", "write")  # a read-only host creates no tables
        self.db.setup(MIGRATIONS)

    def _ready(self) -> None:
        """Before a write: ask the kernel, then create or migrate the schema."""
        self.kernel.admit("mnemos", "write")
        if not self.db.is_setup(MIGRATIONS):
            self.db.setup(MIGRATIONS)

    def _readable(self) -> bool:
        """Before a read: whether the tables exist (reads create nothing; absent = empty)."""
        return self.db.ready_for_read(MIGRATIONS)

    # ---------------------------------------------------------------------------- nodes

    def add_node(
        self,
        task_id: str,
        type: str,
        content: str,
        *,
        scope: Sequence[str] | None = None,
        paths: Sequence[str] | None = None,
        summary: str | None = None,
        origin: str = "agent_generated",
        confidence: float = 1.0,
        links: Sequence[str] = (),
    ) -> MnemoNode:
        """Add a typed node to a task's graph.

        ``scope`` gives scope tags directly; ``paths`` adds the parent directories of each path.
        ``links`` are ids (or unique prefixes) of nodes this one relates to.
        """
        task_id = validate_task_id(task_id)
        if type not in ADDABLE_NODE_TYPES:
            hint = (
                "; CheckpointNodes are written by checkpoint() and the checkpointer"
                if type == "checkpoint"
                else ""
            )
            raise InvalidInputError(
                f"node type must be one of {', '.join(ADDABLE_NODE_TYPES)} "
                f"(got {shown(type)}){hint}"
            )
        text = _content(content)
        tags = _string_list(scope, "scope", max_items=MAX_TAGS, max_chars=MAX_TAG_CHARS)
        path_list = _string_list(paths, "paths", max_items=64, max_chars=1024)
        for path in path_list:
            tags = merge_tags(tags, scope_tags_for_path(path, self.workspace))
        tags = tags[:MAX_TAGS]
        note = _content(summary, "summary") if summary is not None else None
        if not isinstance(origin, str) or not origin.strip() or len(origin) > 32:
            raise InvalidInputError("origin must be a short non-empty string")
        check_text(origin, "origin")
        trust = _unit(confidence, "confidence")
        link_refs = _string_list(links, "links", max_items=64, max_chars=64)
        self._ready()
        moment = self._clock()
        node_id = store.new_id()
        with self.db.write() as conn:
            targets = [store.resolve_node_id(conn, ref) for ref in link_refs]
            conn.execute(
                sa.insert(NODES).values(
                    id=node_id,
                    task_id=task_id,
                    type=type,
                    content=text,
                    summary=note,
                    weight=1.0,
                    status="active",
                    origin=origin.strip(),
                    confidence=trust,
                    scope_tags=tags,
                    created_at=moment,
                    last_accessed=moment,
                    access_count=0,
                )
            )
            for target in dict.fromkeys(targets):
                conn.execute(
                    sa.insert(NODE_LINKS).values(
                        source_id=node_id, target_id=target, link_type="related", created_at=moment
                    )
                )
            node = store.fetch_node(conn, node_id)
        assert node is not None
        return node

    def get_node(self, node_id: str) -> MnemoNode:
        """A node by id or unique id prefix (:class:`NotFoundError` if none)."""
        ref = self._node_ref(node_id)
        if not self._readable():
            raise NotFoundError(f"no Mnemos node with id {ref!r}; nothing is stored yet")
        with self.db.read() as conn:
            node = store.fetch_node(conn, store.resolve_node_id(conn, ref))
        assert node is not None
        return node

    def nodes(
        self,
        task_id: str | None = None,
        *,
        type: str | None = None,
        status: str = "active",
        limit: int | None = None,
    ) -> list[MnemoNode]:
        """Nodes of one task (or all tasks), heaviest first.

        ``status`` is ``active``, ``compressed``, ``evicted`` or ``all``.
        """
        task = validate_task_id(task_id) if task_id is not None else None
        if type is not None and type not in ADDABLE_NODE_TYPES:
            raise InvalidInputError(
                f"type must be one of {', '.join(ADDABLE_NODE_TYPES)} (got {shown(type)})"
            )
        if status not in ("active", "compressed", "evicted", "all"):
            raise InvalidInputError("status must be active, compressed, evicted or all")
        count = _positive_int(limit, "limit") if limit is not None else None
        if not self._readable():
            return []
        with self.db.read() as conn:
            return store.fetch_nodes(
                conn,
                task_id=task,
                types=[type] if type else None,
                statuses=None if status == "all" else [status],
                order="weight",
                limit=count,
            )

    def touch(self, node_id: str) -> MnemoNode:
        """Mark a node as used: weight back to 1.0, one more access, last access now."""
        ref = self._node_ref(node_id)
        self._ready()
        with self.db.write() as conn:
            node_id = store.resolve_node_id(conn, ref)
            conn.execute(
                sa.update(NODES)
                .where(NODES.c.id == node_id)
                .values(
                    weight=1.0,
                    access_count=NODES.c.access_count + 1,
                    last_accessed=self._clock(),
                )
            )
            node = store.fetch_node(conn, node_id)
        assert node is not None
        return node

    def link(self, source_id: str, target_id: str, link_type: str = "related") -> None:
        """Link two nodes (idempotent). ``link_type``: related, depends_on or caused_by."""
        source_ref = self._node_ref(source_id, "source_id")
        target_ref = self._node_ref(target_id, "target_id")
        if link_type not in LINK_TYPES:
            raise InvalidInputError(f"link_type must be one of {', '.join(LINK_TYPES)}")
        self._ready()
        with self.db.write() as conn:
            source = store.resolve_node_id(conn, source_ref)
            target = store.resolve_node_id(conn, target_ref)
            if source == target:
                raise InvalidInputError("a node cannot link to itself")
            exists = conn.execute(
                sa.select(NODE_LINKS.c.source_id).where(
                    NODE_LINKS.c.source_id == source, NODE_LINKS.c.target_id == target
                )
            ).first()
            if exists is None:
                conn.execute(
                    sa.insert(NODE_LINKS).values(
                        source_id=source,
                        target_id=target,
                        link_type=link_type,
                        created_at=self._clock(),
                    )
                )

    def compress(self, node_id: str, summary: str | None = None) -> MnemoNode:
        """Keep a summary (given, or the first 200 characters) and clear the content."""
        ref = self._node_ref(node_id)
        note = _content(summary, "summary") if summary is not None else None
        self._ready()
        with self.db.write() as conn:
            node = store.fetch_node(conn, store.resolve_node_id(conn, ref))
            assert node is not None
            self._require_active(node, "compress")
            if node.eviction_policy == "never":
                raise InvalidInputError(
                    f"{node.type} nodes are never compressed (node {node.id[:8]})"
                )
            self._compress(conn, node, note)
            node = store.fetch_node(conn, node.id)
        assert node is not None
        return node

    def evict(self, node_id: str) -> MnemoNode:
        """Drop a node's content and summary (status ``evicted``)."""
        ref = self._node_ref(node_id)
        self._ready()
        with self.db.write() as conn:
            node = store.fetch_node(conn, store.resolve_node_id(conn, ref))
            assert node is not None
            if node.status == "evicted":
                return node
            if node.eviction_policy == "never":
                raise InvalidInputError(f"{node.type} nodes are never evicted (node {node.id[:8]})")
            self._evict(conn, node.id)
            node = store.fetch_node(conn, node.id)
        assert node is not None
        return node

    def decay(self, task_id: str, factor: float | None = None) -> int:
        """Multiply the weight of the task's active non-exempt nodes by ``factor`` (floor 0.01).

        Goal, constraint, checkpoint and handoff nodes never decay. Returns the count.
        """
        task = validate_task_id(task_id)
        rate = (
            _unit(factor, "factor", low_open=True, high_open=True)
            if factor is not None
            else self.config.decay_factor
        )
        self._ready()
        with self.db.write() as conn:
            return store.decay_weights(conn, task, rate)

    def consolidate(
        self, task_id: str, *, scope: Sequence[str] | None = None
    ) -> ConsolidationResult:
        """Micro-consolidation: compress the 3 oldest active results, evict the coldest eligible
        context node, decay the rest.

        A context node is eligible when its weight is below 0.2, it was accessed fewer than 3
        times and its scope tags do not overlap ``scope`` (Jaccard 0). Without ``scope``, the
        scope of the task's most recent path-bearing tool calls is used; with no such calls
        every cold context node is eligible. Coldest first: lowest weight, then least recently
        accessed, then oldest.
        """
        task = validate_task_id(task_id)
        given = _string_list(scope, "scope", max_items=MAX_TAGS, max_chars=MAX_TAG_CHARS)
        cfg = self.config
        self._ready()
        with self.db.write() as conn:
            current = given if scope is not None else self._recent_scope(conn, task)
            results = store.fetch_nodes(conn, task_id=task, types=["result"], order="seq")
            compressed = results[: cfg.compress_batch]
            for node in compressed:
                self._compress(conn, node, None)
            candidates = [
                n
                for n in store.fetch_nodes(conn, task_id=task, types=["context"])
                if n.weight < cfg.evict_weight_below
                and n.access_count < cfg.evict_max_accesses
                and (not current or jaccard(n.scope_tags, current) == 0.0)
            ]
            candidates.sort(key=lambda n: (n.weight, n.last_accessed, n.created_at))
            evicted = candidates[:1]
            for node in evicted:
                self._evict(conn, node.id)
            decayed = store.decay_weights(conn, task, cfg.decay_factor)
        return ConsolidationResult(
            compressed=len(compressed),
            evicted=len(evicted),
            decayed=decayed,
            compressed_ids=tuple(n.id for n in compressed),
            evicted_ids=tuple(n.id for n in evicted),
        )

    # ---------------------------------------------------------------------------- signals

    def record_tool_call(
        self,
        task_id: str,
        tool_name: str,
        args: Any = None,
        *,
        call_id: str | None = None,
        status: str = "pending",
    ) -> None:
        """Record one tool call (once per ``call_id``; a repeated id only updates the status).

        ``status`` is ``pending`` (outcome not known yet), ``ok`` or ``error``.
        """
        task = validate_task_id(task_id)
        name = self._tool_name(tool_name)
        if status not in ("pending", "ok", "error"):
            raise InvalidInputError("status must be pending, ok or error")
        if call_id is not None:
            _call_id(call_id)
        row = self._tool_row(task, name, args, call_id, status)
        self._ready()
        with self.db.write() as conn:
            self._store_tool_rows(conn, task, [row])

    def record_tool_result(self, task_id: str, call_id: str, *, error: bool = False) -> bool:
        """Set the outcome of a recorded call; returns False when the call is unknown."""
        task = validate_task_id(task_id)
        _call_id(call_id)
        if not isinstance(error, bool):
            raise InvalidInputError("error must be true or false")
        self._ready()
        with self.db.write() as conn:
            result = conn.execute(
                sa.update(SIGNALS)
                .where(
                    SIGNALS.c.task_id == task,
                    SIGNALS.c.kind == "tool",
                    SIGNALS.c.call_id == call_id,
                )
                .values(status="error" if error else "ok")
            )
        return bool(result.rowcount)

    def record_usage(
        self,
        task_id: str,
        tokens: int,
        *,
        context_window: int | None = None,
        estimated: bool = False,
        call_id: str | None = None,
    ) -> None:
        """Record the tokens of the last model call (its ``usage_metadata`` total)."""
        task = validate_task_id(task_id)
        if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens < 2**31:
            raise InvalidInputError("tokens must be a non-negative integer below 2**31")
        if call_id is not None:
            _call_id(call_id)
        if not isinstance(estimated, bool):
            raise InvalidInputError("estimated must be true or false")
        window = (
            _positive_int(context_window, "context_window", maximum=100_000_000)
            if context_window is not None
            else None
        )
        self._ready()
        with self.db.write() as conn:
            self._store_usage(conn, task, tokens, window, bool(estimated), call_id)

    def observe_messages(self, task_id: str, messages: Sequence[Any]) -> int:
        """Feed fatigue signals from a run's message list (LangChain messages or dicts).

        Tool calls of AI messages become tool signals (once per tool call id), tool messages
        with ``status="error"`` mark their call failed, and the last AI message's
        ``usage_metadata`` gives the token reading (a character estimate of all messages when
        the model reported none). Safe to call again with the grown list. Returns how many tool
        calls were new.
        """
        task = validate_task_id(task_id)
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise InvalidInputError("messages must be a list of messages")
        rows: list[dict[str, Any]] = []
        outcomes: dict[str, str] = {}
        last_ai: tuple[int, Any] | None = None
        chars = 0
        for i, message in enumerate(messages):
            kind = _message_kind(message)
            chars += _message_chars(message)
            if kind == "ai":
                last_ai = (i, message)
                calls = _get(message, "tool_calls", None)
                for j, call in enumerate(calls if isinstance(calls, (list, tuple)) else ()):
                    name = _get(call, "name")
                    if not isinstance(name, str) or not name.strip():
                        continue
                    call_id = safe_text(_get(call, "id") or f"msg{i}:{j}")
                    rows.append(self._tool_row(task, name, _get(call, "args", {}), call_id))
            elif kind == "tool":
                call_id = _get(message, "tool_call_id")
                if isinstance(call_id, str) and call_id:
                    status = "error" if _get(message, "status") == "error" else "ok"
                    outcomes[safe_text(call_id)] = status
        for row in rows:
            if row["call_id"] in outcomes:
                row["status"] = outcomes[row["call_id"]]
        tokens: int | None = None
        estimated = False
        usage_id: str | None = None
        if last_ai is not None:
            tokens = _usage_tokens(_get(last_ai[1], "usage_metadata"))
            usage_id = safe_text(_get(last_ai[1], "id") or f"msg{last_ai[0]}")
        if tokens is None and messages:
            tokens = round(chars / self.config.chars_per_token)
            estimated = True
            usage_id = f"estimate:{len(messages)}"
        self._ready()
        with self.db.write() as conn:
            new = self._store_tool_rows(conn, task, rows)
            if tokens is not None:
                self._store_usage(conn, task, tokens, None, estimated, usage_id)
        return new

    # ---------------------------------------------------------------------------- fatigue

    def fatigue(self, task_id: str, *, log: bool = True) -> FatigueReading:
        """Measure the task's fatigue now; every reading is logged unless ``log=False`` or the
        host is read-only (``write_enabled=false``: a reading is then a pure read)."""
        task = validate_task_id(task_id)
        if _flag(log, "log") and self.kernel.write_enabled:
            self._ready()
            with self.db.write() as conn:
                reading = self._measure(conn, task)
                store.insert_fatigue(conn, reading)
        elif self._readable():
            with self.db.read() as conn:
                reading = self._measure(conn, task)
        else:
            reading = self._measure(None, task)
        return reading

    def fatigue_history(self, task_id: str, *, limit: int = 20) -> list[FatigueReading]:
        """Logged readings, newest first."""
        task = validate_task_id(task_id)
        count = _positive_int(limit, "limit")
        if not self._readable():
            return []
        with self.db.read() as conn:
            return store.list_fatigue(conn, task, count, self.config.context_window_tokens)

    def maintain(self, task_id: str) -> FatigueResponse:
        """Measure fatigue and take the actions of its state.

        COMPRESS consolidates; PRE_SLEEP checkpoints (cooldown applies) and consolidates; REM
        writes an emergency checkpoint (cooldown applies), consolidates and warns; EMERGENCY
        forces an emergency checkpoint, consolidates, writes a HandoffNode and warns.
        """
        task = validate_task_id(task_id)
        reading = self.fatigue(task)
        actions = fatigue_model.actions_for(reading.state)
        receipt = None
        consolidation = None
        handoff = None
        if "checkpoint" in actions or "emergency_checkpoint" in actions:
            receipt = self.checkpoint(
                task,
                force=reading.state == "EMERGENCY",
                emergency="emergency_checkpoint" in actions,
                reading=reading,
            )
        if "consolidate" in actions:
            consolidation = self.consolidate(task)
        if "handoff" in actions:
            handoff = self.handoff(task)
        return FatigueResponse(
            reading=reading,
            actions=actions,
            consolidation=consolidation,
            checkpoint=receipt,
            handoff=handoff,
            message=fatigue_model.STATE_MESSAGES[reading.state],
        )

    # ---------------------------------------------------------------------------- checkpoints

    def summarize(self, task_id: str) -> TaskSummary:
        """The task's typed summary from its live nodes and recent signals (no git state)."""
        task = validate_task_id(task_id)
        if not self._readable():
            return TaskSummary()
        with self.db.read() as conn:
            return self._summary(conn, task, fatigue=None)

    def checkpoint(
        self,
        task_id: str,
        *,
        force: bool = False,
        emergency: bool = False,
        git: bool | None = None,
        reading: FatigueReading | None = None,
    ) -> CheckpointReceipt:
        """Write a CheckpointNode of the task's current summary.

        Within the cooldown (120 s by default) after the task's last ``checkpoint()`` this
        keeps that one and returns ``status="skipped"``; ``force=True`` bypasses it. ``git``
        (default: config ``git_state``) records the workspace branch and changed files. Only
        the newest ``checkpoint_keep`` (100) native CheckpointNodes of a task are kept.
        """
        task = validate_task_id(task_id)
        if reading is not None and not isinstance(reading, FatigueReading):
            raise InvalidInputError("reading must be a FatigueReading")
        force, emergency = _flag(force, "force"), _flag(emergency, "emergency")
        with_git = self.config.git_state if git is None else _flag(git, "git")
        self._ready()
        moment = self._clock()
        with self.db.read() as conn:
            skipped = self._cooldown(conn, task, moment, force)
        if skipped is not None:
            return skipped
        if reading is None:
            reading = self.fatigue(task)
        git_state = None
        if with_git and self.workspace is not None:
            git_state = collect_git_state(self.workspace, timeout=self.config.git_timeout_seconds)
        with self.db.write() as conn:
            # Checked again under the write lock: another process may have written one since.
            skipped = self._cooldown(conn, task, moment, force)
            if skipped is not None:
                return skipped
            summary = self._summary(conn, task, fatigue=reading.composite)
            if git_state is not None:
                summary = summary.model_copy(update={"git_state": git_state})
            values = store.checkpoint_node_values(
                task_id=task,
                source="mnemos",
                created_at=moment,
                summary=summary,
                node_counts=store.node_summary(conn, task),
                emergency=emergency,
                fatigue_state=reading.state,
            )
            store.insert_checkpoint_node(conn, values)
            store.trim_checkpoints(conn, task, self.config.checkpoint_keep)
            record = store.latest_checkpoint(conn, task, source="mnemos", root_only=False)
        assert record is not None
        return CheckpointReceipt(
            status="committed",
            message=f"Checkpoint {record.id[:8]} written for task {task}.",
            changed=True,
            revision=record.id,
            checkpoint=record,
        )

    def _cooldown(
        self, conn: sa.Connection, task: str, moment: float, force: bool
    ) -> CheckpointReceipt | None:
        """A ``skipped`` receipt when the task's last checkpoint is within the cooldown."""
        if force:
            return None
        last = store.latest_checkpoint(conn, task, source="mnemos", root_only=False)
        cooldown = self.config.checkpoint_cooldown_seconds
        if last is None or moment - last.created_at.timestamp() >= cooldown:
            return None
        age = moment - last.created_at.timestamp()
        return CheckpointReceipt(
            status="skipped",
            message=(
                f"Checkpoint {last.id[:8]} is {age:.0f}s old (cooldown {cooldown:.0f}s); "
                "kept it. Pass force=True to write a new one."
            ),
            changed=False,
            revision=last.id,
            checkpoint=last,
        )

    def checkpoints(self, task_id: str, *, limit: int = 20) -> list[CheckpointRecord]:
        """The task's CheckpointNodes (native and LangGraph), newest first."""
        task = validate_task_id(task_id)
        count = _positive_int(limit, "limit")
        if not self._readable():
            return []
        with self.db.read() as conn:
            return store.list_checkpoints(conn, task, count)

    def latest_checkpoint(self, task_id: str) -> CheckpointRecord | None:
        """The newest root-graph CheckpointNode of the task, or ``None``."""
        task = validate_task_id(task_id)
        if not self._readable():
            return None
        with self.db.read() as conn:
            return store.latest_checkpoint(conn, task)

    def resume(self, task_id: str) -> str:
        """The resume Markdown of the task's newest CheckpointNode.

        For a LangGraph thread this is the CheckpointNode of the checkpoint LangGraph resumes
        from; when that run carried no Mnemos state the task's live nodes fill the summary.
        Raises :class:`NotFoundError` when the task has no checkpoint yet.
        """
        task = validate_task_id(task_id)
        readable = self._readable()
        with self.db.read() if readable else nullcontext() as conn:
            record = store.latest_checkpoint(conn, task) if readable else None
            if record is None:
                raise NotFoundError(
                    f"no checkpoint found to resume task {task!r} from; write one with "
                    "mnemos.checkpoint(task_id) or run a graph with the Mnemos checkpointer"
                )
            if record.has_summary:
                summary = record.summary
            else:
                summary = self._summary(conn, task, fatigue=record.fatigue)
            nodes = store.node_summary(conn, task)
        counts = record.node_summary if record.node_summary is not None else nodes
        return render_resume(record, summary, counts)

    def handoff(self, task_id: str) -> MnemoNode:
        """Write (and return) a HandoffNode: the task summary for a successor agent."""
        task = validate_task_id(task_id)
        self._ready()
        moment = self._clock()
        node_id = store.new_id()
        with self.db.write() as conn:
            summary = self._summary(conn, task, fatigue=None)
            counts = store.node_summary(conn, task)
            skills = [
                compress_summary(n.text)
                for n in store.fetch_nodes(conn, task_id=task, types=["skill"], order="weight")
            ][:10]
            history = store.list_fatigue(conn, task, 1, self.config.context_window_tokens)
            fatigue_line = (
                f"Fatigue: {history[0].composite:.2f} ({history[0].state})" if history else None
            )
            text = render_handoff(
                task,
                summary,
                counts,
                skills,
                checkpoints=store.count_checkpoints(conn, task),
                fatigue_line=fatigue_line,
            )
            conn.execute(
                sa.insert(NODES).values(
                    id=node_id,
                    task_id=task,
                    type="handoff",
                    content=text,
                    summary=None,
                    weight=1.0,
                    status="active",
                    origin="derived",
                    confidence=1.0,
                    scope_tags=[],
                    created_at=moment,
                    last_accessed=moment,
                    access_count=0,
                )
            )
            node = store.fetch_node(conn, node_id)
        assert node is not None
        return node

    # ---------------------------------------------------------------------------- overview

    def tasks(self) -> list[str]:
        """Every task id with nodes, checkpoints or signals."""
        if not self._readable():
            return []
        with self.db.read() as conn:
            return store.task_ids(conn)

    def status(self, task_id: str | None = None) -> list[TaskOverview]:
        """Node counts, checkpoints and last fatigue of one task or of every task."""
        task = validate_task_id(task_id) if task_id is not None else None
        if not self._readable():
            empty = TaskOverview(task_id=task, nodes=NodeSummary(), checkpoints=0) if task else None
            return [empty] if empty is not None else []
        with self.db.read() as conn:
            ids = [task] if task is not None else store.task_ids(conn)
            out = []
            for tid in ids:
                history = store.list_fatigue(conn, tid, 1, self.config.context_window_tokens)
                out.append(
                    TaskOverview(
                        task_id=tid,
                        nodes=store.node_summary(conn, tid),
                        checkpoints=store.count_checkpoints(conn, tid),
                        last_checkpoint=store.latest_checkpoint(conn, tid, root_only=False),
                        last_fatigue=history[0] if history else None,
                    )
                )
        return out

    # ---------------------------------------------------------------------------- internals

    @staticmethod
    def _node_ref(value: Any, field: str = "node_id") -> str:
        if not isinstance(value, str) or not 4 <= len(value.strip()) <= 64:
            raise InvalidInputError(
                f"{field} must be a node id or a unique prefix of at least 4 characters"
            )
        return check_text(value, field).strip()

    @staticmethod
    def _require_active(node: MnemoNode, verb: str) -> None:
        if node.status != "active":
            raise InvalidInputError(
                f"cannot {verb} node {node.id[:8]}: it is {node.status}, not active"
            )

    @staticmethod
    def _tool_name(value: Any) -> str:
        if not isinstance(value, str) or not value.strip() or len(value) > 256:
            raise InvalidInputError("tool_name must be a non-empty string of at most 256 chars")
        return check_text(value, "tool_name").strip()

    def _compress(self, conn: sa.Connection, node: MnemoNode, note: str | None) -> None:
        conn.execute(
            sa.update(NODES)
            .where(NODES.c.id == node.id)
            .values(
                status="compressed",
                summary=note or compress_summary(node.content, node.summary),
                content="",
            )
        )

    @staticmethod
    def _evict(conn: sa.Connection, node_id: str) -> None:
        conn.execute(
            sa.update(NODES)
            .where(NODES.c.id == node_id)
            .values(status="evicted", content="", summary=None)
        )

    def _tool_row(
        self, task: str, name: str, args: Any, call_id: str | None, status: str = "pending"
    ) -> dict[str, Any]:
        # Observed text: model output may hold lone surrogates or NUL, which no database
        # stores; safe_text makes it storable (U+FFFD, NUL dropped) instead of failing the turn.
        path = self._first_path(args)
        return {
            "task_id": task,
            "kind": "tool",
            "call_id": safe_text(call_id) if call_id is not None else None,
            "tool_name": safe_text(name)[:256],
            "args_digest": _args_digest(args),
            "path": path,
            "dir_key": dir_key(path) if path else None,
            "read_only": is_read_only_tool(name, self.config.read_only_tools),
            "status": status,
            "tokens": None,
            "context_window": None,
            "estimated": False,
            "created_at": self._clock(),
        }

    def _first_path(self, args: Any) -> str | None:
        """The first path-like argument, normalized; None when there is none."""
        try:
            paths = extract_paths(args)
        except Exception:  # hostile argument objects (a raising __str__): no path, not a failure
            return None
        return normalize_path(safe_text(paths[0]), self.workspace) if paths else None

    @staticmethod
    def _store_tool_rows(conn: sa.Connection, task: str, rows: list[dict[str, Any]]) -> int:
        if not rows:
            return 0
        ids = [r["call_id"] for r in rows if r["call_id"] is not None]
        known: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            for call_id, status in conn.execute(
                sa.select(SIGNALS.c.call_id, SIGNALS.c.status).where(
                    SIGNALS.c.task_id == task,
                    SIGNALS.c.kind == "tool",
                    SIGNALS.c.call_id.in_(batch),
                )
            ):
                known[call_id] = status
        fresh = []
        seen: set[str] = set()
        for row in rows:
            call_id = row["call_id"]
            if call_id is None:
                fresh.append(row)
            elif call_id in known:
                if row["status"] != "pending" and known[call_id] != row["status"]:
                    conn.execute(
                        sa.update(SIGNALS)
                        .where(
                            SIGNALS.c.task_id == task,
                            SIGNALS.c.kind == "tool",
                            SIGNALS.c.call_id == call_id,
                        )
                        .values(status=row["status"])
                    )
            elif call_id not in seen:
                seen.add(call_id)
                fresh.append(row)
        if fresh:
            conn.execute(sa.insert(SIGNALS), fresh)
        return len(fresh)

    def _store_usage(
        self,
        conn: sa.Connection,
        task: str,
        tokens: int,
        window: int | None,
        estimated: bool,
        call_id: str | None,
    ) -> None:
        values = {
            "task_id": task,
            "kind": "usage",
            "call_id": call_id,
            "tool_name": None,
            "args_digest": None,
            "path": None,
            "dir_key": None,
            "read_only": False,
            "status": "ok",
            "tokens": tokens,
            "context_window": window,
            "estimated": estimated,
            "created_at": self._clock(),
        }
        if call_id is not None:
            conn.execute(
                sa.delete(SIGNALS).where(
                    SIGNALS.c.task_id == task,
                    SIGNALS.c.kind == "usage",
                    SIGNALS.c.call_id == call_id,
                )
            )
        conn.execute(sa.insert(SIGNALS).values(**values))

    def _measure(self, conn: sa.Connection | None, task: str) -> FatigueReading:
        """The reading from the task's signals (none at all when ``conn`` is None)."""
        cfg = self.config
        calls = store.tool_window(conn, task, cfg.signal_window) if conn is not None else []
        usage = store.latest_usage(conn, task) if conn is not None else None
        window = cfg.context_window_tokens
        tokens = None
        estimated = False
        if usage is not None:
            tokens = usage.tokens
            window = usage.context_window or window
            estimated = bool(usage.estimated)
        token_util = fatigue_model.token_utilization(tokens, window)
        scatter = fatigue_model.scope_scatter([c.dir_key for c in calls], cfg.scatter_min_sample)
        reread = fatigue_model.reread_ratio(calls, cfg.reread_min_reads)
        errors = fatigue_model.error_density(calls)
        score = fatigue_model.composite_score(token_util, scatter, reread, errors)
        return FatigueReading(
            task_id=task,
            token_utilization=token_util,
            scope_scatter=scatter,
            reread_ratio=reread,
            error_density=errors,
            composite=score,
            state=fatigue_model.state_for(score),
            tool_calls=len(calls),
            tokens_used=tokens,
            context_window=window,
            tokens_estimated=estimated,
            computed_at=store.to_datetime(self._clock()),
        )

    def _recent_scope(self, conn: sa.Connection, task: str) -> list[str]:
        rows = [r for r in store.fetch_signals(conn, task, 20) if r.path]
        tags: list[str] = []
        for row in rows[-5:]:
            tags = merge_tags(tags, scope_tags_for_path(row.path))
        return tags

    def _summary(self, conn: sa.Connection, task: str, *, fatigue: float | None) -> TaskSummary:
        cfg = self.config
        nodes = store.fetch_nodes(
            conn,
            task_id=task,
            types=["goal", "constraint", "result", "working"],
            statuses=["active", "compressed"],
            order="seq",
        )
        goals = [n.content for n in nodes if n.type == "goal" and n.status == "active"]
        constraints = [n.content for n in nodes if n.type == "constraint" and n.status == "active"]
        results = [
            n.summary if n.status == "compressed" else compress_summary(n.content, n.summary)
            for n in nodes
            if n.type == "result"
        ][-cfg.checkpoint_results :]
        working = sorted(
            (n for n in nodes if n.type == "working" and n.status == "active"),
            key=lambda n: (-n.weight, -n.last_accessed.timestamp(), -n.created_at.timestamp()),
        )
        subgoal = working[0].content if working else None
        rest = [n.content for n in working[1:4]]
        signals = store.fetch_signals(conn, task, _RECENT_SIGNALS)
        return TaskSummary(
            goal="; ".join(goals) or None,
            constraints=tuple(constraints),
            results=tuple(r for r in results if r),
            current_subgoal=subgoal,
            working_memory="\n".join(rest) or None,
            narrative=self._narrative(signals[-_NARRATIVE_SIGNALS:]),
            recent_files=tuple(self._recent_files(signals)),
            fatigue=fatigue,
        )

    @staticmethod
    def _recent_files(signals: Sequence[Any]) -> list[RecentFile]:
        edits: Counter[str] = Counter()
        reads: Counter[str] = Counter()
        order: dict[str, int] = {}
        for i, row in enumerate(signals):
            if not row.path:
                continue
            (reads if row.read_only else edits)[row.path] += 1
            order[row.path] = i
        paths = sorted(order, key=lambda p: (-(edits[p] + reads[p]), -order[p]))
        return [
            RecentFile(path=p, edits=edits[p], reads=reads[p]) for p in paths[:_MAX_RECENT_FILES]
        ]

    @staticmethod
    def _narrative(signals: Sequence[Any]) -> str | None:
        if not signals:
            return None
        edits: Counter[str] = Counter()
        reads: Counter[str] = Counter()
        others: Counter[str] = Counter()
        dirs: Counter[str] = Counter()
        errors = 0
        last: dict[str, int] = {}  # ties go to the most recent, as in the Key Files list
        for i, row in enumerate(signals):
            if row.status == "error":
                errors += 1
            if row.path:
                name = PurePosixPath(row.path).name or row.path
                (reads if row.read_only else edits)[name] += 1
                last[name] = i
                if row.dir_key:
                    dirs[row.dir_key] += 1
                    last[row.dir_key] = i
            else:
                others[row.tool_name or "tool"] += 1
                last[row.tool_name or "tool"] = i

        def ranked(counter: Counter[str], n: int) -> list[tuple[str, int]]:
            names = sorted(counter, key=lambda k: (-counter[k], -last[k]))[:n]
            return [(k, counter[k]) for k in names]

        def top(counter: Counter[str]) -> str:
            return ", ".join(f"{name} ({n}x)" if n > 1 else name for name, n in ranked(counter, 5))

        parts = []
        if edits:
            parts.append(f"Editing: {top(edits)}")
        if reads:
            parts.append(f"Reading: {top(reads)}")
        if others:
            parts.append("Other tools: " + ", ".join(f"{n}:{c}" for n, c in ranked(others, 5)))
        if dirs:
            parts.append(f"Focus area: {ranked(dirs, 1)[0][0]}/")
        parts.append(f"Errors: {errors}/{len(signals)} tool calls failed")
        return ". ".join(parts) + "."


def summary_from_state(value: Any, *, state_key: str = "mnemos") -> TaskSummary:
    """Validate the Mnemos state a graph carries (a dict or a :class:`TaskSummary`)."""
    if isinstance(value, TaskSummary):
        return value
    if hasattr(value, "model_dump") and callable(value.model_dump):
        value = value.model_dump()
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"graph state key {state_key!r} must hold a Mnemos summary dict "
            f"(goal, constraints, results, ...), got {type(value).__name__}; rename the key or "
            "configure another MnemosConfig.state_key"
        )
    try:
        return TaskSummary.model_validate(dict(value))
    except ValueError as exc:
        raise InvalidInputError(
            f"graph state key {state_key!r} is not a valid Mnemos summary: {exc}"
        ) from None
