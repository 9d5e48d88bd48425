"""What a turn shows the model: its system sections and its Wake.

The system sections a turn adds to the model's system prompt: ``mnemon:runtime-memory-protocol``
(static, byte-identical across writes, present only while Runtime Memory is projected) and
``mnemon:routing`` (what memory to use how; absent when ``routing_guidance`` is false).

Both depend only on the configuration and the kernel's switches, never on memory content, so
the system prefix stays stable across turns (and prompt caches keep working).

The Wake (the complete memory state a turn shows the model), the one reminder cue per
thread, and :class:`WakeTracker`, which remembers what each thread was last sent.

The Wake is this plugin's own message: projected fragments, then the tools / routes /
availability lines. It is sent only when its digest differs from the last Wake sent in the
thread; at most one short recall / writeback cue is sent per thread, and never to a child
agent. Source text is inserted literally; nothing here is ever used as a format template.

Example:
    >>> sections = system_sections(mem.config, view, kernel=mem.kernel)
    >>> [name for name, _ in sections]
    ['mnemon:runtime-memory-protocol', 'mnemon:routing']
    >>> tracker = WakeTracker()
    >>> wake = tracker.wake_for("t1", view)      # None when the thread already has this Wake
    >>> cue = tracker.cue_for("t1", mem.config, view)    # at most one per thread
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.memory_layers.expiry import ExpiringMap
from langgraph_mnemon.memory_layers.kernel import Kernel
from langgraph_mnemon.memory_layers.runtime import RUNTIME_MEMORY_PROTOCOL
from langgraph_mnemon.memory_layers.turns._facts import ViewDiagnostic
from langgraph_mnemon.memory_layers.turns._models import (
    Cue,
    TurnView,
    ViewFragment,
    Wake,
    plugin_metadata,
)
from langgraph_mnemon.memory_layers.turns._offers import (
    SOURCE_LAYERS,
    VIEW_ACTION_TOOL,
    VIEW_ROUTE_TOOL,
    ActionOffer,
    RouteOffer,
    Switches,
)

__all__ = [
    "AVAILABILITY_HEADER",
    "ROUTES_HEADER",
    "ROUTING_SECTION",
    "RUNTIME_PROTOCOL_SECTION",
    "TOOLS_HEADER",
    "WakeTracker",
    "reminder_cue",
    "render_wake",
    "routing_text",
    "system_sections",
    "tool_bindings",
]


ROUTING_SECTION = "mnemon:routing"
RUNTIME_PROTOCOL_SECTION = "mnemon:runtime-memory-protocol"


def _general_routing(writes: bool) -> list[str]:
    lines = [
        "MNEMON MEMORY ROUTING",
        (
            "Follow the current View: the newest Wake lists the memory routes and actions "
            "available this turn."
        ),
        f"- Read memory only with {VIEW_ROUTE_TOOL}, naming a route id exactly as offered.",
    ]
    if writes:
        lines.append(
            f"- Change memory only with {VIEW_ACTION_TOOL}, naming an action id exactly as "
            "offered, and only for new user facts or an explicit request to save or correct."
        )
    lines.append(
        "- An offer says what can be reached; it is not permission to act beyond what the "
        "user asked."
    )
    return lines


def _layered_routing(switches: Switches) -> list[str]:
    lines = ["MNEMON MEMORY ROUTING", "Use memory only when the task needs it."]
    if switches.readable["documents"]:
        lines.append(
            "- For substantial project records (designs, decisions, runbooks), search "
            "Documents with mnemon_document_search."
        )
    if switches.readable["memory-spaces"]:
        lines.append(
            "- For durable history or an exact earlier detail that is not in view, call "
            "mnemon_recall. Never infer a past rule that memory does not state."
        )
    if switches.writable["runtime"]:
        lines.append(
            "- Use mnemon_runtime_memory only for new facts the user gives or an explicit "
            "request to save or correct something; never store retrieved evidence there."
        )
    return lines


def routing_text(config: MnemonConfig, kernel: Kernel | None = None) -> str | None:
    """The ``mnemon:routing`` text for a configuration; ``None`` when routing guidance is off.

    Depends only on the configuration (what ``kernel``, default one over ``config``, admits a
    model to do), so the system prefix stays stable across turns.
    """
    if not config.routing_guidance:
        return None
    switches = Switches(kernel or Kernel(config))
    writes = any(switches.writable.values()) or switches.maintainable["memory-spaces"]
    general = config.strategy == "general"
    lines = _general_routing(writes) if general else _layered_routing(switches)
    if writes:
        lines.append("- A memory write exists only once its receipt says committed.")
    return "\n".join(lines)


def system_sections(
    config: MnemonConfig, view: TurnView | None = None, *, kernel: Kernel | None = None
) -> list[tuple[str, str]]:
    """Ordered ``(name, text)`` system sections: the Runtime protocol, then routing.

    Args:
        config: the configuration (``strategy``, ``routing_guidance``).
        view: the turn's pinned view; the protocol follows its projection when given.
        kernel: decides what a model may do (default: one over ``config``).

    Returns:
        The protocol (:data:`RUNTIME_MEMORY_PROTOCOL` verbatim, only while Runtime Memory is
        projected), then routing (omitted when ``routing_guidance`` is false).

    Example:
        >>> "\\n\\n".join(text for _, text in system_sections(mem.config))
    """
    sections: list[tuple[str, str]] = []
    decider = kernel or Kernel(config)
    projected = (
        view.runtime_projected
        if view is not None
        else decider.model_admits(SOURCE_LAYERS["runtime"], "projection")
    )
    if projected:
        sections.append((RUNTIME_PROTOCOL_SECTION, RUNTIME_MEMORY_PROTOCOL))
    routing = routing_text(config, decider)
    if routing is not None:
        sections.append((ROUTING_SECTION, routing))
    return sections


TOOLS_HEADER = "MNEMON VIEW TOOLS (available in this View): "
ROUTES_HEADER = (
    "MNEMON VIEW ROUTES (quoted routing data; use mnemon_view_route or mnemon_view_action "
    "by exact id): "
)
AVAILABILITY_HEADER = (
    "MNEMON VIEW AVAILABILITY (quoted diagnostics; unavailable Sources are not evidence): "
)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tool_bindings(
    view_routes: Sequence[RouteOffer], view_actions: Sequence[ActionOffer]
) -> list[str]:
    """Tool bindings in offer order (each once: a tool may serve a route and an action), then
    the generic view tools when any offer is unbound."""
    offers = (*view_routes, *view_actions)
    bindings = list(dict.fromkeys(" / ".join(o.tools) for o in offers if o.tools))
    if any(not r.tools for r in view_routes):
        bindings.append(VIEW_ROUTE_TOOL)
    if any(not a.tools for a in view_actions):
        bindings.append(VIEW_ACTION_TOOL)
    return bindings


def _routes_payload(
    fragments: Sequence[ViewFragment],
    routes: Sequence[RouteOffer],
    actions: Sequence[ActionOffer],
) -> list[dict[str, Any]]:
    covers = {f.source: f.text for f in fragments if f.role == "cover"}
    payload = []
    for source in ("runtime", "documents", "memory-spaces"):
        unbound_routes = [r for r in routes if r.source == source and not r.tools]
        unbound_actions = [a for a in actions if a.source == source and not a.tools]
        if not unbound_routes and not unbound_actions:
            continue
        entry: dict[str, Any] = {"source": source}
        if source in covers:
            entry["cover"] = covers[source]
        entry["routes"] = [
            {"id": r.id, "description": r.description, "inputSchema": r.input_schema}
            | ({"maxCalls": r.max_calls} if r.max_calls else {})
            for r in unbound_routes
        ]
        entry["actions"] = [
            {"id": a.id, "description": a.description, "inputSchema": a.input_schema}
            for a in unbound_actions
        ]
        payload.append(entry)
    return payload


def render_wake(
    fragments: Sequence[ViewFragment],
    routes: Sequence[RouteOffer],
    actions: Sequence[ActionOffer],
    diagnostics: Sequence[ViewDiagnostic],
) -> str:
    """The Wake text: projected fragments, then the tools, routes and availability lines.

    Covers of Sources with operations reachable only through ``mnemon_view_route`` /
    ``mnemon_view_action`` travel inside the routes line instead of as their own paragraph.
    """
    payload = _routes_payload(fragments, routes, actions)
    in_routes = {entry["source"] for entry in payload if "cover" in entry}
    parts = [
        f.text for f in fragments if f.text and not (f.role == "cover" and f.source in in_routes)
    ]
    bindings = tool_bindings(routes, actions)
    if bindings:
        parts.append(TOOLS_HEADER + ", ".join(bindings))
    if payload:
        parts.append(ROUTES_HEADER + _json(payload))
    if diagnostics:
        parts.append(
            AVAILABILITY_HEADER
            + _json(
                [{"source": d.source, "status": d.status, "detail": d.detail} for d in diagnostics]
            )
        )
    return "\n\n".join(parts)


def _general_cue(config: MnemonConfig, tools: set[str]) -> tuple[list[str], str]:
    reads: list[str] = []
    write = ""
    if config.recall_mode == "guided" and VIEW_ROUTE_TOOL in tools:
        reads.append(
            f"read memory with {VIEW_ROUTE_TOOL} using a route id from the newest "
            "MNEMON VIEW ROUTES line"
        )
    if config.writeback_mode == "guided" and VIEW_ACTION_TOOL in tools:
        write = (
            f"Change memory with {VIEW_ACTION_TOOL} only for new facts the user gave or an "
            "explicit request to save or correct something."
        )
    return reads, write


def _layered_cue(config: MnemonConfig, view: TurnView, tools: set[str]) -> tuple[list[str], str]:
    reads: list[str] = []
    write = ""
    if config.recall_mode == "guided":
        if "mnemon_document_search" in tools:
            reads.append("search Documents (mnemon_document_search) for substantial records")
        if "mnemon_recall" in tools:
            reads.append(
                "call mnemon_recall only for durable history or exact earlier details you "
                "are missing"
            )
    if config.writeback_mode == "guided" and any(a.id == "runtime/write" for a in view.actions):
        write = (
            "Write to mnemon_runtime_memory only new facts the user gave or an explicit "
            "request to remember or correct something, never evidence you retrieved."
        )
    return reads, write


def reminder_cue(config: MnemonConfig, view: TurnView) -> str | None:
    """The recall / writeback cue text for a root turn, or ``None`` when no cue applies.

    The recall part needs ``recall_mode=guided`` and a read the view offers; the writeback
    part needs ``writeback_mode=guided`` and a write the view offers (the kernel decided the
    offers: ``write_enabled=false`` offers none). ``lifecycle_enabled=false`` silences both.

    Example:
        >>> reminder_cue(mem.config, view)
        '[MNEMON] If this turn needs memory, ...'
    """
    if not config.lifecycle_enabled:
        return None
    tools = set(view.tool_names)
    if view.strategy == "general":
        reads, write = _general_cue(config, tools)
    else:
        reads, write = _layered_cue(config, view, tools)
    if not reads and not write:
        return None
    text = "[MNEMON]"
    if reads:
        text += " If this turn needs memory, " + "; ".join(reads) + "."
    if write:
        text += " " + write
    closing = "Otherwise use no memory tool." if reads else "Otherwise leave memory unchanged."
    return text + " " + closing


class WakeTracker:
    """Per-thread delivery state: the digest of the last Wake sent and whether a cue was sent.

    In-process and thread-safe. A host that persists conversations can restore the state with
    :meth:`restore` (for example from the ``source.digest`` metadata of the newest Wake message;
    the turn service does so at every turn). Bounded: a thread unused for ``ttl_seconds`` is
    forgotten, and beyond ``cap`` threads the least recently used go first (its next turn
    restores it from its messages).

    Args:
        ttl_seconds: how long an unused thread's state is kept (default: a week).
        cap: the most threads kept.
        clock: seconds (default: ``time.monotonic``).

    Example:
        >>> tracker = WakeTracker()
        >>> tracker.wake_for("t1", view) is not None, tracker.wake_for("t1", view)
        (True, None)
    """

    def __init__(
        self,
        *,
        ttl_seconds: float = 7 * 24 * 3600.0,
        cap: int = 10_000,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        # thread -> (digest of the last Wake sent or None, whether the cue was sent)
        self._threads: ExpiringMap[str, tuple[str | None, bool]] = ExpiringMap(
            ttl_seconds=ttl_seconds, cap=cap, clock=clock
        )

    def _get(self, thread_id: str) -> tuple[str | None, bool]:
        return self._threads.get(thread_id) or (None, False)

    def _set(self, thread_id: str, digest: str | None, cued: bool) -> None:
        if digest is None and not cued:
            self._threads.pop(thread_id)
        else:
            self._threads[thread_id] = (digest, cued)

    def __len__(self) -> int:
        with self._lock:
            self._threads.expire()
            return len(self._threads)

    def last_digest(self, thread_id: str) -> str | None:
        """Digest of the last Wake sent in ``thread_id`` (``None`` before the first)."""
        with self._lock:
            return self._get(thread_id)[0]

    def needs_wake(self, thread_id: str, view: TurnView) -> bool:
        """True when the view's Wake differs from the last one sent in the thread."""
        with self._lock:
            return self._get(thread_id)[0] != view.wake_digest

    def wake_for(self, thread_id: str, view: TurnView) -> Wake | None:
        """The Wake to append now (recorded as sent), or ``None`` when the thread has it."""
        with self._lock:
            digest, cued = self._get(thread_id)
            if digest == view.wake_digest:
                return None
            self._set(thread_id, view.wake_digest, cued)
        return view.wake()

    def cue_for(
        self, thread_id: str, config: MnemonConfig, view: TurnView, *, root: bool = True
    ) -> Cue | None:
        """The thread's one reminder cue (recorded as sent), or ``None``.

        Child agents (``root=False``) never get a cue; a thread that already had one gets none.
        """
        if not root:
            return None
        with self._lock:
            digest, cued = self._get(thread_id)
            if cued:
                return None
            text = reminder_cue(config, view)
            if text is None:
                return None
            self._set(thread_id, digest, True)
        return Cue(text=text, metadata=plugin_metadata("instructions"))

    def restore(self, thread_id: str, *, digest: str | None, cued: bool) -> None:
        """Set a thread's state, e.g. after loading a conversation or compacting it."""
        with self._lock:
            self._set(thread_id, digest, cued)

    def forget(self, thread_id: str) -> None:
        """Drop a thread's state, so the next turn sends the Wake (and cue) again."""
        self.restore(thread_id, digest=None, cued=False)
