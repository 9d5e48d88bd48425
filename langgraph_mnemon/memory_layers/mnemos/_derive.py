"""Nodes from activity: a task's goal, constraints, results, context and working node derived
from a run's messages, deterministically and without a model.

:meth:`Mnemos.observe_messages` calls :func:`derive_into` on every model call with the whole,
growing message list (``Mnemos.maintain(since=)``: only its new part), inside its write
transaction. A pass is idempotent and cheap: ONE
SELECT of the task's derived nodes (:func:`~.store.fetch_derivation_rows`), the plan in
memory, then at most one INSERT and one UPDATE (both executemany) for what changed. The same
list again changes nothing.

Rules (plugin messages and system messages are never the user):

* **goal** (``derived_key`` ``goal``): the non-constraint sentences of the first real user
  request, whitespace collapsed, at most 300 characters (the whole text when every sentence is
  a constraint). A later user message with a restatement cue (:data:`RESTATEMENT_CUES`)
  replaces it: the old derived goal is compressed (``Superseded: ...``), a new one inserted.
  No derived goal while an active goal of another origin (``model``, ``agent_generated``)
  exists.
* **constraints** (``constraint:<hash of the normalized text>``): every sentence of a real
  user message with a requirement word (:data:`REQUIREMENT_WORDS`), verbatim (stripped, at most
  500 characters). Beyond ``max_constraint_nodes`` the oldest derived one is compressed.
* **results** (``result:call:<call id>``): one per tool call that has its answer,
  ``tool(key args) -> ok: <first line>`` or ``-> failed: <first line>`` (at most 200
  characters); the plugin's own ``mnemon_*`` tools are not results. Plus the assistant's final
  answer of a turn (``result:answer:<hash>``): ``Answered: <at most 300 characters>``. Beyond
  ``max_result_nodes`` active derived results the oldest are compressed.
* **context** (``context:<hash of the resource>:<hash of the read>``): the answer of a
  read-only tool whose arguments name a file path, URL or record id, ``Read <resource>:
  <at most 300 characters>``, scope tags from the path. A later read of the same resource
  rewrites that node in place (and brings an evicted one back); the second hash tells a new
  read from the one already recorded. Beyond ``max_context_nodes`` the least recently read
  derived context node is evicted.
* **working** (``working``): ONE node with the text (else the reasoning) of the latest AI
  message that calls tools and says something, at most 600 characters, rewritten when it
  changes.

Every derived node has origin ``derived``; nodes of any other origin are never changed.

Example:
    >>> with db.write() as conn:
    ...     derive_into(conn, "task-1", read_messages(messages), MnemosConfig(),
    ...                 workspace=None, moment=time.time()).created
    3
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.contracts import safe_text
from langgraph_mnemon.memory_layers.messages import MessageText, ToolCallPart
from langgraph_mnemon.memory_layers.mnemos._models import DerivationResult
from langgraph_mnemon.memory_layers.mnemos._nodes import (
    DerivedNode,
    insert_derived,
    rewrite_derived,
)
from langgraph_mnemon.memory_layers.mnemos._resume import compress_summary
from langgraph_mnemon.memory_layers.mnemos._scope import (
    extract_paths,
    normalize_path,
    scope_tags_for_path,
)
from langgraph_mnemon.memory_layers.mnemos._signals import is_read_only_tool
from langgraph_mnemon.memory_layers.mnemos.store import fetch_derivation_rows, new_id

__all__ = [
    "DERIVED_ORIGIN",
    "REQUIREMENT_WORDS",
    "RESTATEMENT_CUES",
    "constraint_key",
    "derive_into",
    "goal_text",
    "is_constraint",
    "is_restatement",
    "normalize_constraint",
    "split_sentences",
]

DERIVED_ORIGIN = "derived"
GOAL_KEY = "goal"
WORKING_KEY = "working"
_GOAL_CHARS = 300
_CONSTRAINT_CHARS = 500
_RESULT_CHARS = 200
_ANSWER_CHARS = 300
_CONTEXT_CHARS = 300
_WORKING_CHARS = 600
_ARG_CHARS = 60
_TICK = 1e-6  # orders the nodes one pass touches (they share one moment)

REQUIREMENT_WORDS: tuple[str, ...] = (
    "must", "must not", "mustn't", "never", "always", "don't", "do not", "only",
    "should not", "shouldn't", "make sure", "avoid", "ensure", "under no circumstances",
    "必须", "不要", "不能", "务必", "禁止", "只能", "不得", "不可", "切勿", "不许",
)  # fmt: skip
"""Words that make a user's sentence a constraint (English whole words, Chinese anywhere)."""

RESTATEMENT_CUES: tuple[str, ...] = (
    "actually", "instead", "change of plan", "new task", "scratch that", "the goal is",
    "the task is now", "new goal", "now let's", "let's instead", "forget that",
    "改成", "换成", "新的任务", "新任务", "目标是", "改为", "换个任务",
)  # fmt: skip
"""Cues that a later user message restates or changes the task (``actually`` only as the
message's first word, the others anywhere; English case-insensitive)."""

_LATIN_REQUIREMENTS = [w for w in REQUIREMENT_WORDS if w.isascii()]
_REQUIREMENT = re.compile(
    r"(?<![\w'])(?:"
    + "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in _LATIN_REQUIREMENTS)
    + r")(?![\w'])"
    + "|"
    + "|".join(re.escape(w) for w in REQUIREMENT_WORDS if not w.isascii()),
    re.IGNORECASE,
)
_RESTATEMENT = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|no|wait|hmm)\W+)*actually\b|"
    + "|".join(
        r"\b" + re.escape(c).replace(r"\ ", r"\s+") + r"\b"
        for c in RESTATEMENT_CUES
        if c.isascii() and c != "actually"
    )
    + "|"
    + "|".join(re.escape(c) for c in RESTATEMENT_CUES if not c.isascii()),
    re.IGNORECASE,
)
# A sentence ends at . ! ? ; (ASCII followed by space or end) or at 。！？； or a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")
# A sentence that is only a courtesy says nothing about the goal.
_COURTESY = re.compile(
    r"^\W*(?:thanks?(?: you)?(?: (?:a lot|so much))?|thx|please|hi|hello|hey|cheers|ok(?:ay)?|"
    r"谢谢|多谢|你好|请)\W*$",
    re.IGNORECASE,
)
_PREFERRED_ARGS = (
    "path", "file_path", "filepath", "file", "filename", "url", "uri", "query", "pattern",
    "id", "record_id", "key", "command", "cmd", "name", "target",
)  # fmt: skip
_RECORD_KEYS = frozenset({"id", "record_id", "key", "uuid", "slug"})


# --------------------------------------------------------------------------------------------
# Text rules (pure)


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped, in order (empty ones dropped).

    Example:
        >>> split_sentences("Fix the importer. Never touch main!")
        ['Fix the importer.', 'Never touch main!']
    """
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def is_constraint(sentence: str) -> bool:
    """Whether a sentence states a requirement (one of :data:`REQUIREMENT_WORDS`).

    Example:
        >>> is_constraint("Do not touch the main branch."), is_constraint("不要修改配置文件")
        (True, True)
    """
    return _REQUIREMENT.search(sentence.replace("\u2019", "'")) is not None


def is_restatement(text: str) -> bool:
    """Whether a user message restates or changes the task (:data:`RESTATEMENT_CUES`).

    Example:
        >>> is_restatement("Actually, port the CLI to typer."), is_restatement("Thanks!")
        (True, False)
    """
    return _RESTATEMENT.search(text) is not None


def normalize_constraint(text: str) -> str:
    """A constraint's words for comparison: case-folded, whitespace collapsed, end punctuation
    dropped."""
    return " ".join(text.casefold().split()).rstrip(" .!?;。！？；")


def constraint_key(text: str) -> str:
    """The ``derived_key`` of a constraint (the same words give the same key)."""
    return "constraint:" + _digest(normalize_constraint(text), 40)


def goal_text(text: str) -> str:
    """The goal a user request states: its non-constraint sentences (all of it when every
    sentence is a constraint; courtesies such as "Thanks!" dropped), whitespace collapsed, at
    most 300 characters.

    Example:
        >>> goal_text("Fix the CSV importer.  Never touch main.")
        'Fix the CSV importer.'
    """
    sentences = [s for s in split_sentences(text) if not _COURTESY.match(s)] or [text.strip()]
    kept = [s for s in sentences if not is_constraint(s)] or sentences
    return _clip(" ".join(" ".join(kept).split()), _GOAL_CHARS)


def _digest(text: str, size: int) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:size]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


# --------------------------------------------------------------------------------------------
# Reading the messages (pure)


def _user_texts(messages: Sequence[MessageText]) -> list[str]:
    """The real user requests in order (plugin messages are never the user)."""
    return [m.text for m in messages if m.role == "user" and not m.is_plugin and m.text.strip()]


def _completed_calls(
    messages: Sequence[MessageText],
) -> Iterator[tuple[int, ToolCallPart, MessageText]]:
    """Each tool call that has its answer: (the answer's position, the call, the answer), in
    the order answers came."""
    calls: dict[str, ToolCallPart] = {}
    for i, m in enumerate(messages):
        if m.role == "assistant":
            for call in m.tool_calls:
                if call.id:
                    calls[call.id] = call
        elif m.role == "tool" and m.tool_call_id in calls:
            yield i, calls.pop(m.tool_call_id), m


def _scalar(value: Any) -> str | None:
    if isinstance(value, (bool, int, float)):
        return str(value)
    if isinstance(value, str) and value.strip() and "\n" not in value.strip():
        return _clip(safe_text(value.strip()), _ARG_CHARS)  # arguments are observed, not checked
    return None


def _key_args(args: Any) -> str:
    """Up to two short scalar arguments (path, query, url, id, command ... first)."""
    if not isinstance(args, Mapping):
        shown = _scalar(args)
        return shown or ""
    keys = [k for k in _PREFERRED_ARGS if k in args] + [k for k in args if k not in _PREFERRED_ARGS]
    picked: list[str] = []
    for key in keys:
        shown = _scalar(args[key])
        if shown is not None and isinstance(key, str):
            picked.append(f"{safe_text(key)}={shown}")
        if len(picked) == 2:
            break
    return ", ".join(picked)


def _result_text(call: ToolCallPart, answer: MessageText) -> str:
    name = answer.name or call.name
    outcome = "failed" if answer.is_error else "ok"
    line = _first_line(answer.text) or "(no output)"
    return _clip(f"{name}({_key_args(call.args)}) -> {outcome}: {line}", _RESULT_CHARS)


def _call_key(call_id: str) -> str:
    key = "result:call:" + call_id
    return key if len(key) <= 64 else "result:call:#" + _digest(call_id, 40)


def _final_answers(messages: Sequence[MessageText]) -> Iterator[tuple[int, MessageText]]:
    """AI messages with text and no tool calls that end a turn (or the list), with their
    positions."""
    for i, m in enumerate(messages):
        if m.role != "assistant" or m.is_plugin or m.tool_calls or not m.text.strip():
            continue
        after = messages[i + 1] if i + 1 < len(messages) else None
        if after is None or after.role not in ("assistant", "tool"):
            yield i, m


def _resource(call: ToolCallPart, workspace: Path | None) -> tuple[str, str | None] | None:
    """What a read names: ``(resource, path or None)`` for a URL, a file path or a record."""
    args = call.args if isinstance(call.args, Mapping) else {}
    for value in args.values():
        if isinstance(value, str) and value.strip().lower().startswith(("http://", "https://")):
            return _clip(value.strip(), 300), None
    paths = extract_paths(args)
    if paths:
        path = normalize_path(paths[0], workspace)
        return _clip(path, 300), path
    for key, value in args.items():
        shown = _scalar(value)
        if isinstance(key, str) and shown and (key.lower() in _RECORD_KEYS or key.endswith("_id")):
            return f"{call.name} {safe_text(key)}={shown}", None
    return None


# --------------------------------------------------------------------------------------------
# One pass over the stored rows (in memory)


class _Pass:
    """The task's derived rows, the changes one pass makes to them, and its counts."""

    def __init__(self, rows: Sequence[Any], moment: float) -> None:
        self.moment = moment
        self.nodes = [_stored(r) for r in rows]
        self.next_order = max((n.order for n in self.nodes), default=0.0) + 1
        self.ticks = 0
        self.updated: set[str] = set()
        self.retired = 0

    def derived(self, type_: str, status: str | None = "active") -> list[DerivedNode]:
        return [
            n
            for n in self.nodes
            if n.type == type_ and n.origin == DERIVED_ORIGIN and n.key is not None
            if status is None or n.status == status
        ]

    def by_key(self, key: str) -> DerivedNode | None:
        found = [n for n in self.nodes if n.key == key and n.origin == DERIVED_ORIGIN]
        return found[-1] if found else None

    def stamp(self) -> float:
        self.ticks += 1
        return self.moment + self.ticks * _TICK

    def add(self, type_: str, key: str, content: str, tags: Sequence[str] = ()) -> DerivedNode:
        node = DerivedNode(
            id=new_id(),
            type=type_,
            key=key,
            content=safe_text(content),  # storable whatever the run carried
            scope_tags=list(tags),
            order=self.next_order,
            created_at=self.moment,
            last_accessed=self.stamp(),
            new=True,
        )
        self.next_order += 1
        self.nodes.append(node)
        return node

    def rewrite(self, node: DerivedNode, content: str, *, key: str | None = None) -> None:
        """New content (an inactive node comes back), touched."""
        node.content, node.status, node.summary = safe_text(content), "active", None
        node.key = key or node.key
        node.last_accessed, node.weight = self.stamp(), 1.0
        node.access_count += 1
        node.dirty = True
        if not node.new:
            self.updated.add(node.id)

    def retire(self, node: DerivedNode, status: str, summary: str | None) -> None:
        node.status, node.summary, node.content = status, summary, ""
        node.dirty = True
        self.retired += 1

    def result(self) -> DerivationResult:
        created = [n.id for n in self.nodes if n.new]
        return DerivationResult(
            created=len(created),
            updated=len(self.updated),
            retired=self.retired,
            created_ids=tuple(created),
        )


def _stored(row: Any) -> DerivedNode:
    # by position (the column order of fetch_derivation_rows): named access costs more
    node_id, type_, status, origin, content, summary, key, tags, seq, created, accessed = row[:11]
    return DerivedNode(
        id=node_id,
        type=type_,
        key=key,
        content=content,
        origin=origin,
        status=status,
        summary=summary,
        scope_tags=list(tags or ()),
        order=float(seq),
        created_at=created,
        last_accessed=accessed,
        weight=row[11],
        access_count=row[12],
    )


# --------------------------------------------------------------------------------------------
# The rules


def _derive_goal(p: _Pass, users: Sequence[str], continuing: bool) -> None:
    if not users:
        return
    active = [n for n in p.nodes if n.type == "goal" and n.status == "active" and n.content]
    if any(n.origin != DERIVED_ORIGIN for n in active):
        return  # the model's (or the agent's) goal names the task
    # The first request states the goal; every later one may restate it (in a pass over the
    # new part of a list, every request is a later one).
    restated = [t for t in (users if continuing else users[1:]) if is_restatement(t)]
    if not active:
        p.add("goal", GOAL_KEY, goal_text(restated[-1] if restated else users[0]))
        return
    if not restated:
        return  # only a restatement changes a goal already recorded
    wanted = goal_text(restated[-1])
    if any(n.content == wanted for n in active):
        return
    for node in active:
        p.retire(node, "compressed", "Superseded: " + compress_summary(node.content))
    p.add("goal", GOAL_KEY, wanted)


def _derive_constraints(p: _Pass, users: Sequence[str], cap: int) -> None:
    known = {n.key for n in p.nodes if n.key}
    # The same words given by the model or the agent are not derived again.
    known |= {
        constraint_key(n.content)
        for n in p.nodes
        if n.type == "constraint" and n.status == "active" and n.origin != DERIVED_ORIGIN
    }
    for text in users:
        for sentence in split_sentences(text):
            key = constraint_key(sentence)
            if key not in known and is_constraint(sentence):
                known.add(key)
                p.add("constraint", key, _clip(sentence, _CONSTRAINT_CHARS))
    active = sorted(p.derived("constraint"), key=lambda n: n.order)
    for node in active[: max(0, len(active) - cap)]:
        p.retire(node, "compressed", compress_summary(node.content))


def _result_items(messages: Sequence[MessageText]) -> list[tuple[int, str, Any]]:
    """``(position, key, source)`` of every result the messages hold, in the order they
    happened: a completed call's ``(call, answer)``, or a final answer (the text is built only
    for a new key)."""
    items: list[tuple[int, str, Any]] = []
    for i, call, answer in _completed_calls(messages):
        if not call.name.startswith("mnemon_") and call.id:
            items.append((i, _call_key(call.id), (call, answer)))
    for i, m in _final_answers(messages):
        items.append((i, "result:answer:" + _digest(m.id or m.text, 40), m))
    return sorted(items, key=lambda item: item[0])


def _derive_results(p: _Pass, items: Sequence[tuple[int, str, Any]], cap: int) -> None:
    known = {n.key for n in p.nodes if n.key}
    for _, key, source in items:
        if key not in known:
            known.add(key)
            text = (
                _result_text(*source)
                if isinstance(source, tuple)
                else "Answered: " + _clip(_one_line(source.text), _ANSWER_CHARS)
            )
            p.add("result", key, text)
    active = sorted(p.derived("result"), key=lambda n: n.order)
    for node in active[: max(0, len(active) - cap)]:
        p.retire(node, "compressed", compress_summary(node.content, node.summary))


def _reads(
    messages: Sequence[MessageText], config: MnemosConfig, workspace: Path | None
) -> dict[str, tuple[str, str, str | None, MessageText]]:
    """The latest read of each resource, in the order of last reads: resource hash →
    (read hash, resource, path or None, the answer)."""
    extra = tuple(config.read_only_tools)
    reads: dict[str, tuple[str, str, str | None, MessageText]] = {}
    for _, call, answer in _completed_calls(messages):
        name = call.name
        if name.startswith("mnemon_") or answer.is_error or not is_read_only_tool(name, extra):
            continue
        found = _resource(call, workspace)
        if found is None:
            continue
        resource, path = found
        digest = _digest(resource, 24)
        reads.pop(digest, None)  # re-insert: dict order = order of last read
        reads[digest] = (_digest(f"{call.id}\x00{answer.text}", 16), resource, path, answer)
    return reads


def _derive_contexts(
    p: _Pass,
    reads: dict[str, tuple[str, str, str | None, MessageText]],
    config: MnemosConfig,
    workspace: Path | None,
) -> None:
    stored: dict[str, DerivedNode] = {}
    for node in p.derived("context", status=None):
        stored[node.key.split(":")[1] if node.key else ""] = node
    for digest, (read, resource, path, answer) in reads.items():
        key = f"context:{digest}:{read}"
        node = stored.get(digest)
        if node is not None and node.key == key:
            continue  # this read is recorded already
        body = _clip(_one_line(answer.text), _CONTEXT_CHARS) or "(empty)"
        content = f"Read {resource}: {body}"
        tags = scope_tags_for_path(path, workspace) if path else []
        if node is None:
            p.add("context", key, content, tags)
        else:  # a new read of a known resource: that node, rewritten
            p.rewrite(node, content, key=key)
            node.scope_tags = list(tags)
    active = sorted(p.derived("context"), key=lambda n: (n.last_accessed, n.order))
    for node in active[: max(0, len(active) - config.max_context_nodes)]:
        p.retire(node, "evicted", None)


def _latest_plan(messages: Sequence[MessageText]) -> str | None:
    """The text (else the reasoning) of the newest AI message that calls tools and says so."""
    return next(
        (
            m.text.strip() or m.reasoning.strip()
            for m in reversed(messages)
            if m.role == "assistant" and not m.is_plugin and m.tool_calls
            if m.text.strip() or m.reasoning.strip()
        ),
        None,
    )


def _derive_working(p: _Pass, plan: str | None) -> None:
    if plan is None:
        return
    content = _clip(plan, _WORKING_CHARS)
    node = p.by_key(WORKING_KEY)
    if node is None:
        p.add("working", WORKING_KEY, content)
    elif node.status == "active" and node.content != content:
        p.rewrite(node, content)
    elif node.status != "active" and node.summary != compress_summary(content):
        p.rewrite(node, content)  # compressed by consolidation: back only for a new plan


_MAX_KEYS = 500  # a bigger new part reads every derived node (one query all the same)


def _narrowed(
    users: Sequence[str],
    results: Sequence[tuple[int, str, Any]],
    reads: Mapping[str, Any],
    plan: str | None,
) -> tuple[set[str], set[str]] | None:
    """``(types, keys)`` a pass over the new part of a list can touch: the node types its
    rules derive, and the keys it could derive (what it compares against among the retired
    nodes). ``None`` (read every derived node) past :data:`_MAX_KEYS` keys."""
    types: set[str] = set()
    keys: set[str] = set()
    if users:
        types |= {"goal", "constraint"}
        keys.add(GOAL_KEY)
        keys.update(
            constraint_key(sentence)
            for text in users
            for sentence in split_sentences(text)
            if is_constraint(sentence)
        )
    if results:
        types.add("result")
        keys.update(key for _, key, _ in results)
    if reads:
        types.add("context")
    if plan is not None:
        types.add("working")
        keys.add(WORKING_KEY)
    return (types, keys) if len(keys) <= _MAX_KEYS else None


def derive_into(
    conn: sa.Connection,
    task: str,
    messages: Sequence[MessageText],
    config: MnemosConfig,
    *,
    workspace: Path | None,
    moment: float,
    continuing: bool = False,
) -> DerivationResult:
    """Derive the task's nodes from ``messages`` inside the caller's write transaction.

    Args:
        conn: the open write connection (nothing here commits).
        task: the task id (already checked).
        messages: the run's messages, read (:func:`~langgraph_mnemon.memory_layers.messages.
            read_messages`): the whole list, or the part of it a pass has not seen yet
            (with the assistant message whose calls its tool answers reply to).
        config: caps (``max_constraint_nodes``, ``max_result_nodes``, ``max_context_nodes``)
            and ``read_only_tools``.
        workspace: paths are made relative to it (resources, scope tags).
        moment: the pass's time (UNIX seconds).
        continuing: ``messages`` is the new part of a longer list: its first user request is
            a later one (it may restate the goal), not the task's first.

    Returns:
        A :class:`DerivationResult`: nodes created, rewritten and retired (superseded,
        compressed or evicted by a cap). The same list again gives all zeros.

    Raises:
        StorageError: the database refused a statement (the caller's transaction rolls back).

    Example:
        >>> with db.write() as conn:
        ...     derive_into(conn, "t", read_messages([HumanMessage("Fix it. Never push.")]),
        ...                 MnemosConfig(), workspace=None, moment=0.0).created
        2
    """
    users = _user_texts(messages)
    results = _result_items(messages)
    reads = _reads(messages, config, workspace)
    plan = _latest_plan(messages)
    narrow = _narrowed(users, results, reads, plan) if continuing else None
    if narrow is not None and not narrow[0]:
        return DerivationResult()  # nothing in the new part derives a node: no statement
    resources = [f"context:{digest}:" for digest in reads]
    p = _Pass(fetch_derivation_rows(conn, task, narrow, resources), moment)
    _derive_goal(p, users, continuing)
    _derive_constraints(p, users, config.max_constraint_nodes)
    _derive_results(p, results, config.max_result_nodes)
    _derive_contexts(p, reads, config, workspace)
    _derive_working(p, plan)
    insert_derived(conn, task, [n for n in p.nodes if n.new])
    rewrite_derived(conn, [n for n in p.nodes if n.dirty and not n.new])
    return p.result()
