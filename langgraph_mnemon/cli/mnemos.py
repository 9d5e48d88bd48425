"""``mnemon mnemos …``: Mnemos task memory (nodes, fatigue, checkpoints, resume).

Every command names its task as the positional TASK (a LangGraph thread id for saver
checkpoints); the older ``--task`` / ``-t`` spelling still works.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from langgraph_mnemon.cli._common import (
    JsonOption,
    alias,
    app,
    group,
    open_host,
    out,
    print_json,
    task_of,
)
from langgraph_mnemon.errors import InvalidInputError

__all__ = ["mnemos_app"]

mnemos_app = group("Mnemos task memory: nodes, fatigue, checkpoints, resume.")
app.add_typer(mnemos_app, name="mnemos")

Task = Annotated[
    str | None,
    typer.Argument(
        help="Task id (a LangGraph thread id for saver checkpoints). Default: manual.",
        show_default=False,
    ),
]
TaskFilter = Annotated[
    str | None, typer.Argument(help="Only this task (default: every task).", show_default=False)
]
# The spelling before TASK became positional; kept so scripts keep working.
TaskAlias = Annotated[str | None, typer.Option("--task", "-t", hidden=True)]
_STATUS_ICONS = {"active": "+", "compressed": "~", "evicted": "-"}


@mnemos_app.command("status")
def mnemos_status(
    ctx: typer.Context,
    task: TaskFilter = None,
    task_alias: TaskAlias = None,
    as_json: JsonOption = False,
) -> None:
    """Goal, node counts, checkpoints (Mnemos / LangGraph) and last fatigue per task."""
    mem = open_host(ctx)
    overview = mem.mnemos.status(task_of(task, task_alias, None))
    if as_json:
        print_json([o.model_dump(mode="json") for o in overview])
        return
    table = Table(title=f"Mnemos — {mem.database.url}")
    table.add_column("task (goal)", justify="left")
    for column in ("active", "compressed", "evicted", "mnemos cp", "langgraph cp"):
        table.add_column(column, justify="right")
    table.add_column("last Mnemos checkpoint", justify="left")
    table.add_column("fatigue")
    for o in overview:
        last = o.last_mnemos_checkpoint
        fatigue = o.last_fatigue
        table.add_row(
            # The goal names the task; the id stays beside it for the other commands.
            Text(o.label).append(f"\n{o.task_id}", style="dim") if o.goal else Text(o.task_id),
            str(o.nodes.active),
            str(o.nodes.compressed),
            str(o.nodes.evicted),
            str(o.mnemos_checkpoints),
            str(o.langgraph_checkpoints),
            f"{last.id[:8]} {last.created_at:%Y-%m-%d %H:%M:%S}" if last else "-",
            f"{fatigue.composite:.2f} {fatigue.state}" if fatigue else "not measured",
        )
    out.print(table)
    if not overview:
        out.print("no Mnemos tasks yet; add a node with `mnemon mnemos add goal TEXT TASK`")


alias(mnemos_app, "list", mnemos_status, of="status")


@mnemos_app.command("nodes")
def mnemos_nodes(
    ctx: typer.Context,
    task: TaskFilter = None,
    task_alias: TaskAlias = None,
    node_type: Annotated[str | None, typer.Option("--type", help="Only this node type.")] = None,
    show_all: Annotated[
        bool, typer.Option("--all", help="Include compressed and evicted nodes.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """List nodes, heaviest first, with their origin (derived, model, agent_generated)."""
    chosen = task_of(task, task_alias, None)
    status = "all" if show_all else "active"
    nodes = open_host(ctx).mnemos.nodes(chosen, type=node_type, status=status)
    if as_json:
        print_json([n.model_dump(mode="json") for n in nodes])
        return
    out.print(f"MNEMO NODES ({len(nodes)}):", markup=False)
    for n in nodes:
        text = " ".join(n.text.split())
        if len(text) > 60:
            text = text[:57] + "..."
        icon = _STATUS_ICONS.get(n.status, "?")
        line = f"[{icon}] {n.id[:8]} {n.type:<10} {n.origin:<15} w={n.weight:.2f} {text}"
        if chosen is None:
            line += f"  (task {n.task_id})"
        out.print(line, markup=False, highlight=False)
        if n.scope_tags:
            out.print(f"      scope: {', '.join(n.scope_tags[:3])}", markup=False)


@mnemos_app.command("fatigue")
def mnemos_fatigue(
    ctx: typer.Context,
    task: Task = None,
    task_alias: TaskAlias = None,
    no_log: Annotated[bool, typer.Option("--no-log", help="Do not log this reading.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Measure a task's fatigue (logged) and print the dimensions."""
    chosen = task_of(task, task_alias, "manual")
    reading = open_host(ctx).mnemos.fatigue(chosen, log=not no_log)
    if as_json:
        print_json(reading)
        return
    filled = round(reading.composite * 20)
    out.print(
        f"[{'#' * filled}{'.' * (20 - filled)}] {reading.composite:.2f} {reading.state}",
        markup=False,
    )
    tokens = (
        f"{reading.tokens_used:,} / {reading.window.label}"
        + (", estimated" if reading.tokens_estimated else "")
        if reading.tokens_used is not None
        else f"no usage recorded (window {reading.window.label})"
    )
    rows = (
        ("token utilisation", 0.40, reading.token_utilization, tokens),
        ("scope scatter", 0.25, reading.scope_scatter, "directories of recent tool calls"),
        ("re-read ratio", 0.20, reading.reread_ratio, "repeated identical reads"),
        ("error density", 0.15, reading.error_density, "failed tool calls"),
    )
    for name, weight, value, source in rows:
        out.print(f"  {name:<18} {value:.4f} (x{weight:.2f})  {source}", markup=False)
    out.print(f"  composite          {reading.composite:.4f} over {reading.tool_calls} tool calls")
    from langgraph_mnemon.memory_layers.mnemos import actions_for

    actions = actions_for(reading.state)
    out.print(f"actions: {', '.join(actions) if actions else 'none'}", markup=False)


@mnemos_app.command("checkpoint")
def mnemos_checkpoint(
    ctx: typer.Context,
    task: Task = None,
    task_alias: TaskAlias = None,
    force: Annotated[bool, typer.Option("--force", help="Ignore the cooldown.")] = False,
    no_git: Annotated[bool, typer.Option("--no-git", help="Do not record git state.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Write a CheckpointNode of the task (the cooldown applies unless --force)."""
    chosen = task_of(task, task_alias, "manual")
    receipt = open_host(ctx).mnemos.checkpoint(chosen, force=force, git=False if no_git else None)
    if as_json:
        print_json(receipt)
        return
    cp = receipt.checkpoint
    out.print(receipt.message, markup=False)
    fatigue = f"{cp.fatigue:.2f}" if cp.fatigue is not None else "n/a"
    out.print(
        f"goal: {(cp.summary.goal or 'No goal recorded')[:60]}; "
        f"{len(cp.summary.constraints)} constraints, {len(cp.summary.results)} results; "
        f"fatigue {fatigue}",
        markup=False,
    )


@mnemos_app.command("resume")
def mnemos_resume(ctx: typer.Context, task: Task = None, task_alias: TaskAlias = None) -> None:
    """Print the resume Markdown of the task's newest checkpoint."""
    typer.echo(open_host(ctx).mnemos.resume(task_of(task, task_alias, "manual")), nl=False)


@mnemos_app.command("consolidate")
def mnemos_consolidate(
    ctx: typer.Context,
    task: Task = None,
    task_alias: TaskAlias = None,
    scope: Annotated[
        list[str] | None, typer.Option("--scope", help="Current scope tag (repeat).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Micro-consolidation: compress old results, evict the coldest context, decay."""
    result = open_host(ctx).mnemos.consolidate(task_of(task, task_alias, "manual"), scope=scope)
    if as_json:
        print_json(result)
        return
    out.print(f"compressed {result.compressed}, evicted {result.evicted}, decayed {result.decayed}")


@mnemos_app.command("add")
def mnemos_add(
    ctx: typer.Context,
    node_type: Annotated[
        str, typer.Argument(help="goal, constraint, context, working, result or skill.")
    ],
    content: Annotated[str, typer.Argument(help="The node text.")],
    task: Task = None,
    task_alias: TaskAlias = None,
    scope: Annotated[list[str] | None, typer.Option("--scope", help="Scope tag (repeat).")] = None,
    path: Annotated[
        list[str] | None, typer.Option("--path", help="File the node is about (repeat).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Add a node to a task's graph: TYPE CONTENT [TASK]."""
    if node_type == "handoff":
        raise InvalidInputError("handoff nodes are written by Mnemos.handoff(task_id)")
    chosen = task_of(task, task_alias, "manual")
    node = open_host(ctx).mnemos.add_node(chosen, node_type, content, scope=scope, paths=path)
    if as_json:
        print_json(node)
        return
    out.print(f"added {node.type} node {node.id[:8]} to task {node.task_id}", markup=False)
