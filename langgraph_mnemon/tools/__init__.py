"""Model-facing memory tools bound to a host.

Every tool takes a pydantic argument schema and returns compact JSON. Every failure comes back as
an ``{"error": code, "message": ...}`` result, never as an exception that would end the agent
run: typed library errors with their code, arguments with lone surrogates or NUL as
``invalid-input``, anything unexpected as ``internal`` (logged with its traceback and recorded
in ``mem.health``). No tool result contains paths, provider settings or secrets.

Every tool body runs as an *automatic* trigger (the kernel's ``acting("automatic")``), and one
table (:data:`TOOL_CHANNELS`) names the layer and channel of each tool: a tool is offered by
:func:`build_tools` only while the kernel admits a model to one of its channels (``manual``,
``off``, a disabled layer or ``write_enabled=false`` for a write offer nothing), and each call
asks the kernel again before any I/O, so a switch changed after the tools were built refuses
the next call with ``{"error": code, "message": ..., "decision": {...}}`` and writes nothing.
A refusal is an answer, not a memory failure: ``mem.health`` does not record it. Under the
Layered strategy each operation has its own tool; under the General strategy the model reads
and changes memory only through the offers of its turn's pinned View (``mnemon_view_route`` /
``mnemon_view_action``), each offer asking its own channel and each read route within its
per-turn call budget.

Modules, bottom to top: ``_context`` (what the tools need from the host, and the executing
run's turn), ``_args`` (argument models), ``_results`` (results and how spaces look to the
model), ``_layered`` (one function per Layered tool), ``_view`` (the General strategy's routes
and actions, over the same functions), ``_build`` (the tools table and :func:`build_tools`).

Example:
    >>> agent = create_agent(model, tools=mem.tools(), middleware=[mem.middleware()])
"""

from langgraph_mnemon.tools._build import TOOL_CHANNELS, VIEW_TOOLS, WRITE_TOOLS, build_tools
from langgraph_mnemon.tools._context import ToolContext
from langgraph_mnemon.tools._layered import CATALOG_LIMIT

__all__ = [
    "CATALOG_LIMIT",
    "TOOL_CHANNELS",
    "VIEW_TOOLS",
    "WRITE_TOOLS",
    "ToolContext",
    "build_tools",
]
