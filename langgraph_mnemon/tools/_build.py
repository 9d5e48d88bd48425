"""The tools table and :func:`build_tools`, which binds its rows into LangChain tools.

One row per tool (:data:`TOOLS`): its name, the function running it, its argument model, the
(layer, channel) pairs it works on and the strategy it belongs to. :data:`TOOL_CHANNELS`,
:data:`WRITE_TOOLS` and :data:`VIEW_TOOLS` are derived from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ValidationError

from langgraph_mnemon.memory_layers.kernel import Channel, Layer, acting
from langgraph_mnemon.memory_layers.turns import OFFER_CHANNELS
from langgraph_mnemon.nodes import memory_step
from langgraph_mnemon.tools._args import (
    DocumentCreateArgs,
    DocumentManageArgs,
    DocumentSearchArgs,
    ForgetArgs,
    LinkArgs,
    MemoryBodyCreateArgs,
    MemoryBodyMergeArgs,
    MemoryBodyUpdateArgs,
    NoArgs,
    RecallArgs,
    RelatedArgs,
    RememberArgs,
    RuntimeMemoryArgs,
    TaskArgs,
    ViewActionArgs,
    ViewRouteArgs,
)
from langgraph_mnemon.tools._context import ToolContext, scoped_context
from langgraph_mnemon.tools._layered import (
    catalog,
    document_create,
    document_search,
    forget,
    link,
    manage_document,
    memory_body_create,
    memory_body_merge,
    memory_body_update,
    recall,
    related,
    remember,
    runtime_channel,
    runtime_memory,
    status,
    task,
)
from langgraph_mnemon.tools._results import dumps, failure, invalid_result, validation_result
from langgraph_mnemon.tools._view import view_action, view_route

__all__ = ["TOOLS", "TOOL_CHANNELS", "VIEW_TOOLS", "WRITE_TOOLS", "ToolSpec", "build_tools"]

ToolChannel = tuple[Layer, Channel]


@dataclass(frozen=True)
class ToolSpec:
    """One model-facing tool: what runs it, what it takes and which channels it works on.

    ``channels`` empty: a management read, always offered. ``channel_of`` picks the one channel
    a call works on when the tool has several; ``needs``: a provider capability some active
    Memory Space must have for the tool to be offered.
    """

    name: str
    run: Callable[[ToolContext, Any], dict[str, Any]]
    args: type[BaseModel]
    channels: tuple[ToolChannel, ...] = ()
    description: str = ""
    strategy: Literal["layered", "general"] = "layered"
    needs: str | None = None
    channel_of: Callable[[dict[str, Any]], ToolChannel] | None = None

    def call_channel(self, args: dict[str, Any]) -> ToolChannel | None:
        """The one (layer, channel) a call with ``args`` works on, when the tool has one."""
        if self.channel_of is not None:
            return self.channel_of(args)
        return self.channels[0] if len(self.channels) == 1 else None


_SPACES_RECALL: tuple[ToolChannel, ...] = (("memory_spaces", "recall"),)
_SPACES_WRITE: tuple[ToolChannel, ...] = (("memory_spaces", "write"),)
_SPACES_MAINTENANCE: tuple[ToolChannel, ...] = (("memory_spaces", "maintenance"),)
_DOCUMENTS_WRITE: tuple[ToolChannel, ...] = (("documents", "write"),)
# each route / action asks its own channel when it runs (turns.OFFER_CHANNELS)
_VIEW_WRITES = tuple(
    dict.fromkeys(c for c in OFFER_CHANNELS.values() if c is not None and c[1] != "recall")
)

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("mnemon_status", status, NoArgs, (), "Memory health and size at a glance."),
    ToolSpec(
        "mnemon_memory_bodies", catalog, NoArgs, (), "The Memory Spaces catalog (at most 16 items)."
    ),
    ToolSpec("mnemon_recall", recall, RecallArgs, _SPACES_RECALL),
    ToolSpec("mnemon_related", related, RelatedArgs, _SPACES_RECALL),
    ToolSpec(
        "mnemon_document_search", document_search, DocumentSearchArgs, (("documents", "recall"),)
    ),
    ToolSpec(  # add / replace / remove ask runtime write, search asks runtime recall
        "mnemon_runtime_memory",
        runtime_memory,
        RuntimeMemoryArgs,
        (("runtime", "write"), ("runtime", "recall")),
        channel_of=runtime_channel,
    ),
    ToolSpec("mnemon_remember", remember, RememberArgs, _SPACES_WRITE),
    ToolSpec("mnemon_document_create", document_create, DocumentCreateArgs, _DOCUMENTS_WRITE),
    ToolSpec("mnemon_document_manage", manage_document, DocumentManageArgs, _DOCUMENTS_WRITE),
    ToolSpec("mnemon_link", link, LinkArgs, _SPACES_WRITE, needs="link"),
    ToolSpec("mnemon_forget", forget, ForgetArgs, _SPACES_WRITE, needs="forget"),
    ToolSpec(
        "mnemon_memory_body_create", memory_body_create, MemoryBodyCreateArgs, _SPACES_MAINTENANCE
    ),
    ToolSpec(
        "mnemon_memory_body_update", memory_body_update, MemoryBodyUpdateArgs, _SPACES_MAINTENANCE
    ),
    ToolSpec(
        "mnemon_memory_body_merge", memory_body_merge, MemoryBodyMergeArgs, _SPACES_MAINTENANCE
    ),
    ToolSpec("mnemon_task", task, TaskArgs, (("mnemos", "write"),)),
    ToolSpec("mnemon_view_route", view_route, ViewRouteArgs, strategy="general"),
    ToolSpec("mnemon_view_action", view_action, ViewActionArgs, _VIEW_WRITES, strategy="general"),
)
"""Every model-facing tool, in the order :func:`build_tools` offers them."""

TOOL_CHANNELS: dict[str, tuple[ToolChannel, ...]] = {s.name: s.channels for s in TOOLS}
"""Tool name → the (layer, channel) pairs it works on. A tool is offered while the kernel
admits a model to one of them (``()``: management reads, always offered)."""
WRITE_TOOLS = frozenset(
    name
    for name, channels in TOOL_CHANNELS.items()
    if channels and all(channel != "recall" for _, channel in channels)
)
"""Tools that only change memory (never offered while ``write_enabled`` is false)."""
VIEW_TOOLS = frozenset(s.name for s in TOOLS if s.strategy == "general")
"""The General strategy's tools: the model reaches memory only through the View's offers."""


def call_tool(ctx: ToolContext, spec: ToolSpec, **kwargs: Any) -> str:
    """Run one tool call as an automatic trigger; any failure becomes a structured result.

    The kernel is asked for the call's channel before any I/O (a switch flipped since the tools
    were built refuses it). Typed errors keep their code; a storage or provider failure, or
    anything unexpected (``internal``), is also logged and recorded in ``ctx.health`` under
    ``tool:<name>``.
    """
    value: Any = None
    # A model's call is an automatic trigger; whatever the tool sets off inherits it.
    with acting("automatic"), memory_step(ctx.health, f"tool:{spec.name}", answers=True) as step:
        try:
            channel = spec.call_channel(kwargs)
            if channel is not None:
                ctx.kernel.admit(*channel)
            # The turn's (or run's) user and project: every read and write below stays there.
            scoped = scoped_context(ctx, kwargs.get("state"))
            value = spec.run(scoped, spec.args.model_validate(kwargs))
        except ValidationError as exc:  # a value the layer's own model refused
            value = invalid_result(exc)
    if step.failed:
        value = failure(ctx, step)
    return dumps(value)


def offered(ctx: ToolContext, spec: ToolSpec) -> bool:
    """Whether the kernel admits a model to one of the tool's channels right now, and the
    Memory Spaces support what it needs."""
    if spec.channels and not any(ctx.kernel.model_admits(*c) for c in spec.channels):
        return False
    return spec.needs is None or any(
        spec.needs in r.capabilities for r in ctx.spaces.list_spaces(active=True)
    )


def bind(ctx: ToolContext, spec: ToolSpec) -> BaseTool:
    """``spec`` as a LangChain tool bound to ``ctx``; arguments that do not fit its schema
    come back as an ``invalid-input`` result."""

    def run(**kwargs: Any) -> str:  # a plain function: ToolNode reads its type hints
        return call_tool(ctx, spec, **kwargs)

    return StructuredTool.from_function(
        run,
        name=spec.name,
        description=spec.description or spec.args.__doc__ or "",
        args_schema=spec.args,
        handle_validation_error=validation_result,
    )


def build_tools(ctx: ToolContext) -> list[BaseTool]:
    """The memory tools a model may use now: those whose channel (:data:`TOOL_CHANNELS`) the
    kernel admits for an automatic trigger (management reads always).

    Under the Layered strategy every operation has its own tool; ``mnemon_link`` /
    ``mnemon_forget`` only when an active Memory Space's provider supports them. Under the
    General strategy the model reaches memory only through the routes and actions of the turn's
    View: ``mnemon_view_route`` and ``mnemon_view_action``.

    Args:
        ctx: the host (a :class:`~langgraph_mnemon.Mnemon`, or anything that satisfies
            :class:`~langgraph_mnemon.tools.ToolContext`).

    Returns:
        The tools, in the order of :data:`TOOLS`. Calling one never raises: every failure or
        kernel refusal is an ``{"error": code, "message": ...}`` JSON result.

    Raises:
        MnemonError: the Memory Spaces catalog cannot be read while deciding whether
            ``mnemon_link`` / ``mnemon_forget`` are offered (Layered strategy only).

    Example:
        >>> tools = build_tools(mem)            # what mem.tools() returns
        >>> agent = create_agent(model, tools=tools, middleware=[mem.middleware()])
    """
    strategy = "general" if ctx.config.strategy == "general" else "layered"
    return [bind(ctx, s) for s in TOOLS if s.strategy == strategy and offered(ctx, s)]
