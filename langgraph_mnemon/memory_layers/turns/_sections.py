"""The system sections a turn adds to the model's system prompt: ``mnemon:runtime-memory-protocol``
(static, byte-identical across writes, present only while Runtime Memory is projected) and
``mnemon:routing`` (what memory to use how; absent when ``routing_guidance`` is false).

Both depend only on the configuration and the kernel's switches, never on memory content, so
the system prefix stays stable across turns (and prompt caches keep working).

Example:
    >>> sections = system_sections(mem.config, view, kernel=mem.kernel)
    >>> [name for name, _ in sections]
    ['mnemon:runtime-memory-protocol', 'mnemon:routing']
"""

from __future__ import annotations

from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.memory_layers.kernel import Kernel
from langgraph_mnemon.memory_layers.runtime import RUNTIME_MEMORY_PROTOCOL
from langgraph_mnemon.memory_layers.turns._models import TurnView
from langgraph_mnemon.memory_layers.turns._offers import (
    SOURCE_LAYERS,
    VIEW_ACTION_TOOL,
    VIEW_ROUTE_TOOL,
    Switches,
)

__all__ = ["ROUTING_SECTION", "RUNTIME_PROTOCOL_SECTION", "routing_text", "system_sections"]

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
