"""The ``mnemon`` command line: inspect and edit a storage root.

Every command is an explicit request: ``manual`` channels admit it, ``off`` and disabled ones
refuse it. Library errors print one line on stderr and exit 1 (a kernel refusal names the
setting and environment variable that would allow it); usage errors exit 2.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.table import Table

from langgraph_mnemon.errors import InvalidInputError, MnemonError
from langgraph_mnemon.host import Mnemon

__all__ = ["app", "main"]

app = typer.Typer(
    name="mnemon",
    help="Layered long-term memory for LangGraph agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
runtime_app = typer.Typer(
    help="Runtime Memory: USER.md and MEMORY.md.", no_args_is_help=True, add_completion=False
)
app.add_typer(runtime_app, name="runtime")

_out = Console(soft_wrap=True)
RootOption = Annotated[
    Path | None,
    typer.Option("--root", envvar="MNEMON_ROOT", help="Storage root (default ./.mnemon)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
TargetOption = Annotated[str, typer.Option("--target", "-t", help="user or memory.")]


@app.callback()
def _options(ctx: typer.Context, root: RootOption = None) -> None:
    ctx.obj = {"root": root}


def _open(ctx: typer.Context) -> Mnemon:
    root = (ctx.find_root().obj or {}).get("root")
    return Mnemon.open(root)


def _print_json(value: BaseModel | dict[str, Any] | list[Any]) -> None:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    _out.print_json(json.dumps(value, ensure_ascii=False))


@app.command()
def status(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Show where memory lives and how full each tier is."""
    report = _open(ctx).status()
    if as_json:
        _print_json(report)
        return
    table = Table(title=f"mnemon — {report.root}", show_header=True)
    table.add_column("tier")
    table.add_column("entries", justify="right")
    table.add_column("bytes used / limit", justify="right")
    rt = report.runtime
    table.add_row("Runtime USER.md", str(rt.user_entries), f"{rt.user.used} / {rt.user.limit}")
    table.add_row(
        "Runtime MEMORY.md", str(rt.memory_entries), f"{rt.memory.used} / {rt.memory.limit}"
    )
    dc = report.documents
    table.add_row(
        "Documents (active)",
        str(dc.active),
        f"{dc.active_bytes.used} / {dc.active_bytes.limit}",
    )
    table.add_row("Documents (archived)", str(dc.archived), "-")
    _out.print(table)
    if report.spaces is not None:
        sp = report.spaces
        _out.print(
            f"memory spaces: {sp.total} ({sp.active} active); providers: "
            f"{', '.join(sp.providers) or 'none'}",
            markup=False,
        )
    _out.print(f"runtime revision: {rt.revision}")
    if rt.locally_archived:
        _out.print(f"entries in runtime/archived/: {rt.locally_archived}")
    _out.print(f"database: {report.database_url}")
    _out.print(f"strategy: {report.strategy}; writes {'on' if report.write_enabled else 'off'}")
    if report.health.degraded:
        problems = "; ".join(f"{p.step}: {p.code}: {p.message}" for p in report.health.problems)
        _out.print(f"memory degraded: {problems}", markup=False)


@runtime_app.command("show")
def runtime_show(
    ctx: typer.Context,
    branch: Annotated[
        str | None, typer.Option(help="Git branch to filter by (default: the workspace's).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Print the model-facing Runtime Memory snapshot."""
    snap = _open(ctx).runtime.snapshot(branch=branch)
    if as_json:
        _print_json(snap)
    else:
        typer.echo(snap.text)


@runtime_app.command("add")
def runtime_add(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="The entry text.")],
    target: TargetOption = "memory",
    importance: Annotated[str, typer.Option(help="critical, normal or low.")] = "normal",
    branch: Annotated[
        list[str] | None, typer.Option("--branch", "-b", help="Scope to a git branch (repeat).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Add an entry (an identical entry is a no-op)."""
    receipt = _open(ctx).runtime.add(
        target,  # type: ignore[arg-type]
        content,
        importance=importance,  # type: ignore[arg-type]
        branches=branch or None,
    )
    _print_receipt(receipt, as_json)


@runtime_app.command("replace")
def runtime_replace(
    ctx: typer.Context,
    old_text: Annotated[str, typer.Argument(help="Text identifying one entry.")],
    content: Annotated[str, typer.Argument(help="The new entry text.")],
    target: TargetOption = "memory",
    importance: Annotated[
        str | None, typer.Option(help="critical, normal or low (default: keep).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Replace the entry that OLD_TEXT identifies."""
    receipt = _open(ctx).runtime.replace(
        target,  # type: ignore[arg-type]
        old_text,
        content,
        importance=importance,  # type: ignore[arg-type]
    )
    _print_receipt(receipt, as_json)


@runtime_app.command("remove")
def runtime_remove(
    ctx: typer.Context,
    old_text: Annotated[str, typer.Argument(help="Text identifying one entry.")],
    target: TargetOption = "memory",
    as_json: JsonOption = False,
) -> None:
    """Remove the entry that OLD_TEXT identifies."""
    receipt = _open(ctx).runtime.remove(target, old_text)  # type: ignore[arg-type]
    _print_receipt(receipt, as_json)


def _print_receipt(receipt: Any, as_json: bool) -> None:
    if as_json:
        _print_json(receipt)
        return
    usage = receipt.usage
    _out.print(
        f"{receipt.message} {receipt.target}: {receipt.entry_count} entries, "
        f"{usage.used}/{usage.limit} bytes; revision {receipt.revision[:12]}"
    )


# --------------------------------------------------------------------------------------------
# mnemon docs (Documents)

docs_app = typer.Typer(
    help="Documents: project records (active / archived).",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(docs_app, name="docs")


def _doc_id(mem: Mnemon, value: str) -> str:
    """A full document id from an id or a unique id prefix."""
    if len(value.strip()) == 36:
        return value.strip().lower()
    return mem.documents.find_id(value)


@docs_app.command("list")
def docs_list(
    ctx: typer.Context,
    archived: Annotated[bool, typer.Option("--archived", help="List archived documents.")] = False,
    show_all: Annotated[bool, typer.Option("--all", help="List active and archived.")] = False,
    as_json: JsonOption = False,
) -> None:
    """List documents, most recently updated first."""
    status = "all" if show_all else ("archived" if archived else "active")
    mem = _open(ctx)
    records = mem.documents.list(status)  # type: ignore[arg-type]
    if as_json:
        _print_json([r.model_dump(mode="json") for r in records])
        return
    usage = mem.documents.usage()
    table = Table(title=f"{status} documents — active {usage.used} / {usage.limit} bytes")
    for column in ("id", "rev", "status", "title", "bytes", "updated"):
        table.add_column(column, justify="right" if column in ("rev", "bytes") else "left")
    for r in records:
        table.add_row(
            r.id[:8], str(r.revision), r.status, r.title, str(r.size_bytes), r.updated_at[:19]
        )
    _out.print(table)
    if not records:
        _out.print(f"no {status} documents")


@docs_app.command("show")
def docs_show(
    ctx: typer.Context,
    document_id: Annotated[str, typer.Argument(help="Document id or a unique id prefix.")],
    as_json: JsonOption = False,
) -> None:
    """Print one document: its record, then its body."""
    mem = _open(ctx)
    doc_id = _doc_id(mem, document_id)
    record = mem.documents.get(doc_id)
    body = mem.documents.read(doc_id)
    if as_json:
        _print_json({"document": record.model_dump(mode="json"), "content": body})
        return
    typer.echo(f"{record.title}  [{record.status}, revision {record.revision}]")
    typer.echo(f"id: {record.id}")
    if record.description:
        typer.echo(f"description: {record.description}")
    typer.echo(f"file: {mem.documents.display_path(record.relative_path)}")
    if record.source_paths:
        typer.echo(f"sources: {', '.join(record.source_paths)}")
    typer.echo(f"updated: {record.updated_at}; size: {record.size_bytes} bytes")
    if record.archive_summary:
        typer.echo(f"archive summary: {record.archive_summary}")
    typer.echo("")
    typer.echo(body)


@docs_app.command("create")
def docs_create(
    ctx: typer.Context,
    content: Annotated[
        str | None, typer.Argument(help="The body text ('-' reads stdin). Or use --file.")
    ] = None,
    title: Annotated[str, typer.Option("--title", help="Title (required, ≤160 chars).")] = "",
    description: Annotated[str, typer.Option(help="Short description (≤600 chars).")] = "",
    source_path: Annotated[
        list[str] | None,
        typer.Option("--source-path", "-s", help="Workspace-relative file it describes (repeat)."),
    ] = None,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", help="Read the body from this UTF-8 file.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Create an active document."""
    if (content is None) == (file is None):
        raise typer.BadParameter("give the body as an argument or with --file (exactly one)")
    if file is not None:
        try:
            body = file.read_bytes().decode()
        except OSError as exc:
            raise InvalidInputError(f"cannot read --file {file}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise InvalidInputError(f"--file {file} is not UTF-8 text") from None
    else:
        body = sys.stdin.read() if content == "-" else str(content)
    receipt = _open(ctx).documents.create(
        title, body, description=description, source_paths=source_path or ()
    )
    _print_doc_receipt(receipt, as_json)


@docs_app.command("search")
def docs_search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for ('' lists recent).")],
    archived: Annotated[
        bool, typer.Option("--archived", help="Include archived documents.")
    ] = False,
    limit: Annotated[int, typer.Option(help="Most results (1-50).")] = 10,
    as_json: JsonOption = False,
) -> None:
    """Search documents (titles, descriptions, bodies; English and Chinese)."""
    result = _open(ctx).documents.search(query, include_archived=archived, limit=limit)
    if as_json:
        _print_json(result)
        return
    hits = result.results or result.suggestions
    if result.results:
        typer.echo(f"{result.total} match(es)")
    else:
        typer.echo("no match" + ("; recent documents:" if hits else ""))
    for hit in hits:
        typer.echo(f"\n[{hit.score}] {hit.title}  ({hit.id[:8]}, {hit.status})")
        typer.echo(hit.content if len(hit.content) <= 400 else hit.content[:400] + "…")


@docs_app.command("archive")
def docs_archive(
    ctx: typer.Context,
    document_id: Annotated[str, typer.Argument(help="Document id or a unique id prefix.")],
    summary: Annotated[str | None, typer.Option(help="What the document covered.")] = None,
    revision: Annotated[
        int | None,
        typer.Option(help="Archive only if the document is still at this revision."),
    ] = None,
    memory_space: Annotated[
        list[str] | None,
        typer.Option(
            "--memory-space", help="Memory Space already holding its cold reference (repeat)."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Archive an active document: cold reference in a Memory Space first, then the move.

    With no options the cold-archive worker writes the reference (when an active Memory Space
    can take it, else the document moves without one). --memory-space names spaces that
    already hold a reference you wrote yourself.
    """
    mem = _open(ctx)
    doc_id = _doc_id(mem, document_id)
    if not memory_space and summary is None and revision is None:
        _print_doc_receipt(mem.archive_document(doc_id), as_json)
        return
    expected = revision if revision is not None else mem.documents.get(doc_id).revision
    if memory_space:
        receipt = mem.documents.archive(doc_id, expected, summary, memory_space)
    else:
        receipt = mem.documents.archive_without_index(doc_id, expected, summary)
    _print_doc_receipt(receipt, as_json)


def _print_doc_receipt(receipt: Any, as_json: bool) -> None:
    if as_json:
        _print_json(receipt)
        return
    doc = receipt.document
    _out.print(
        f"{receipt.message} {doc.id} revision {doc.revision} ({doc.status}, {doc.size_bytes} "
        f"bytes); active {receipt.usage.used}/{receipt.usage.limit} bytes"
    )


# --------------------------------------------------------------------------------------------
# mnemon mnemos (Mnemos task memory)

mnemos_app = typer.Typer(
    help="Mnemos task memory: nodes, fatigue, checkpoints, resume.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(mnemos_app, name="mnemos")

TaskOption = Annotated[
    str,
    typer.Option("--task", "-t", help="Task id (a LangGraph thread id for saver checkpoints)."),
]
_STATUS_ICONS = {"active": "+", "compressed": "~", "evicted": "-"}


@mnemos_app.command("status")
def mnemos_status(
    ctx: typer.Context,
    task: Annotated[str | None, typer.Option("--task", "-t", help="Only this task.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Node counts, checkpoints and last fatigue per task."""
    mem = _open(ctx)
    overview = mem.mnemos.status(task)
    if as_json:
        _print_json([o.model_dump(mode="json") for o in overview])
        return
    table = Table(title=f"Mnemos — {mem.database.url}")
    for column in ("task", "active", "compressed", "evicted", "checkpoints", "last checkpoint"):
        table.add_column(
            column, justify="left" if column in ("task", "last checkpoint") else "right"
        )
    table.add_column("fatigue")
    for o in overview:
        last = o.last_checkpoint
        fatigue = o.last_fatigue
        table.add_row(
            o.task_id,
            str(o.nodes.active),
            str(o.nodes.compressed),
            str(o.nodes.evicted),
            str(o.checkpoints),
            f"{last.id[:8]} {last.created_at:%Y-%m-%d %H:%M:%S} ({last.source})" if last else "-",
            f"{fatigue.composite:.2f} {fatigue.state}" if fatigue else "not measured",
        )
    _out.print(table)
    if not overview:
        _out.print("no Mnemos tasks yet; add a node with `mnemon mnemos add goal TEXT --task ID`")


@mnemos_app.command("nodes")
def mnemos_nodes(
    ctx: typer.Context,
    task: Annotated[str | None, typer.Option("--task", "-t", help="Only this task.")] = None,
    node_type: Annotated[str | None, typer.Option("--type", help="Only this node type.")] = None,
    show_all: Annotated[
        bool, typer.Option("--all", help="Include compressed and evicted nodes.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """List nodes, heaviest first."""
    nodes = _open(ctx).mnemos.nodes(task, type=node_type, status="all" if show_all else "active")
    if as_json:
        _print_json([n.model_dump(mode="json") for n in nodes])
        return
    _out.print(f"MNEMO NODES ({len(nodes)}):", markup=False)
    for n in nodes:
        text = " ".join(n.text.split())
        if len(text) > 60:
            text = text[:57] + "..."
        line = (
            f"[{_STATUS_ICONS.get(n.status, '?')}] {n.id[:8]} {n.type:<10} w={n.weight:.2f} {text}"
        )
        if task is None:
            line += f"  (task {n.task_id})"
        _out.print(line, markup=False, highlight=False)
        if n.scope_tags:
            _out.print(f"      scope: {', '.join(n.scope_tags[:3])}", markup=False)


@mnemos_app.command("fatigue")
def mnemos_fatigue(
    ctx: typer.Context,
    task: TaskOption = "manual",
    no_log: Annotated[bool, typer.Option("--no-log", help="Do not log this reading.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Measure a task's fatigue (logged) and print the dimensions."""
    reading = _open(ctx).mnemos.fatigue(task, log=not no_log)
    if as_json:
        _print_json(reading)
        return
    filled = round(reading.composite * 20)
    _out.print(
        f"[{'#' * filled}{'.' * (20 - filled)}] {reading.composite:.2f} {reading.state}",
        markup=False,
    )
    tokens = (
        f"{reading.tokens_used} / {reading.context_window} tokens"
        + (" (estimated)" if reading.tokens_estimated else "")
        if reading.tokens_used is not None
        else "no usage recorded"
    )
    rows = (
        ("token utilisation", 0.40, reading.token_utilization, tokens),
        ("scope scatter", 0.25, reading.scope_scatter, "directories of recent tool calls"),
        ("re-read ratio", 0.20, reading.reread_ratio, "repeated identical reads"),
        ("error density", 0.15, reading.error_density, "failed tool calls"),
    )
    for name, weight, value, source in rows:
        _out.print(f"  {name:<18} {value:.4f} (x{weight:.2f})  {source}", markup=False)
    _out.print(f"  composite          {reading.composite:.4f} over {reading.tool_calls} tool calls")
    from langgraph_mnemon.memory_layers.mnemos.fatigue import actions_for

    actions = actions_for(reading.state)
    _out.print(f"actions: {', '.join(actions) if actions else 'none'}", markup=False)


@mnemos_app.command("checkpoint")
def mnemos_checkpoint(
    ctx: typer.Context,
    task: TaskOption = "manual",
    force: Annotated[bool, typer.Option("--force", help="Ignore the cooldown.")] = False,
    no_git: Annotated[bool, typer.Option("--no-git", help="Do not record git state.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Write a CheckpointNode of the task (the cooldown applies unless --force)."""
    receipt = _open(ctx).mnemos.checkpoint(task, force=force, git=False if no_git else None)
    if as_json:
        _print_json(receipt)
        return
    cp = receipt.checkpoint
    _out.print(receipt.message, markup=False)
    fatigue = f"{cp.fatigue:.2f}" if cp.fatigue is not None else "n/a"
    _out.print(
        f"goal: {(cp.summary.goal or 'No goal recorded')[:60]}; "
        f"{len(cp.summary.constraints)} constraints, {len(cp.summary.results)} results; "
        f"fatigue {fatigue}",
        markup=False,
    )


@mnemos_app.command("resume")
def mnemos_resume(ctx: typer.Context, task: TaskOption = "manual") -> None:
    """Print the resume Markdown of the task's newest checkpoint."""
    typer.echo(_open(ctx).mnemos.resume(task), nl=False)


@mnemos_app.command("consolidate")
def mnemos_consolidate(
    ctx: typer.Context,
    task: TaskOption = "manual",
    scope: Annotated[
        list[str] | None, typer.Option("--scope", help="Current scope tag (repeat).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Micro-consolidation: compress old results, evict the coldest context, decay."""
    result = _open(ctx).mnemos.consolidate(task, scope=scope)
    if as_json:
        _print_json(result)
        return
    _out.print(
        f"compressed {result.compressed}, evicted {result.evicted}, decayed {result.decayed}"
    )


@mnemos_app.command("add")
def mnemos_add(
    ctx: typer.Context,
    node_type: Annotated[
        str, typer.Argument(help="goal, constraint, context, working, result or skill.")
    ],
    content: Annotated[str, typer.Argument(help="The node text.")],
    task: TaskOption = "manual",
    scope: Annotated[list[str] | None, typer.Option("--scope", help="Scope tag (repeat).")] = None,
    path: Annotated[
        list[str] | None, typer.Option("--path", help="File the node is about (repeat).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Add a node to a task's graph."""
    if node_type == "handoff":
        raise InvalidInputError("handoff nodes are written by Mnemos.handoff(task_id)")
    node = _open(ctx).mnemos.add_node(task, node_type, content, scope=scope, paths=path)
    if as_json:
        _print_json(node)
        return
    _out.print(f"added {node.type} node {node.id[:8]} to task {node.task_id}", markup=False)


# --- end mnemon mnemos ----------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# mnemon spaces / mnemon ingest (Memory Spaces)

spaces_app = typer.Typer(
    help="Memory Spaces: long-term memory behind providers (mnemos, chroma, ...).",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(spaces_app, name="spaces")
SpaceOption = Annotated[
    str | None,
    typer.Option("--space", "-s", help="Memory Space id (default: the single active space)."),
]


@spaces_app.command("list")
def spaces_list(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List Memory Spaces (secret values are never shown)."""
    records = _open(ctx).spaces.list_spaces()
    if as_json:
        _print_json([r.model_dump(mode="json") for r in records])
        return
    table = Table(title="Memory Spaces")
    for column in ("id", "name", "provider", "active", "capabilities"):
        table.add_column(column)
    for r in records:
        table.add_row(
            r.id,
            r.name,
            r.provider_id if r.provider_registered else f"{r.provider_id} (not available)",
            "yes" if r.active else "no",
            ", ".join(r.capabilities),
        )
    _out.print(table)
    if not records:
        _out.print("no Memory Spaces yet; `mnemon spaces remember TEXT` creates the default one")


@spaces_app.command("create")
def spaces_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Display name (≤120 chars).")],
    description: Annotated[str, typer.Option(help="What belongs here (≤500 chars).")] = "",
    provider: Annotated[
        str | None, typer.Option(help="Provider id: mnemos, chroma, ... (default: mnemos).")
    ] = None,
    space_id: Annotated[str | None, typer.Option("--id", help="Explicit space id.")] = None,
    active: Annotated[bool, typer.Option("--active", help="Activate at once.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Create a Memory Space (inactive until its first write unless --active)."""
    receipt = _open(ctx).spaces.create_space(
        name, description, provider_id=provider, space_id=space_id, active=active or None
    )
    if as_json:
        _print_json(receipt)
        return
    assert receipt.space is not None
    _out.print(
        f"{receipt.message} provider {receipt.space.provider_id}, "
        f"{'active' if receipt.space.active else 'inactive until its first write'}",
        markup=False,
    )


@spaces_app.command("remember")
def spaces_remember(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="The memory text ('-' reads stdin).")],
    space: SpaceOption = None,
    category: Annotated[
        str, typer.Option(help="preference, decision, fact, insight, context or general.")
    ] = "general",
    importance: Annotated[int, typer.Option(help="1 (low) to 5 (critical).")] = 3,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Tag (repeat).")] = None,
    entity: Annotated[list[str] | None, typer.Option("--entity", help="Entity (repeat).")] = None,
    source: Annotated[str, typer.Option(help="user, agent or external.")] = "user",
    as_json: JsonOption = False,
) -> None:
    """Store one memory in a Memory Space."""
    text = sys.stdin.read() if content == "-" else content
    receipt = _open(ctx).spaces.remember(
        text,
        space_id=space,
        category=category,
        importance=importance,
        tags=tag,
        entities=entity,
        source=source,
    )
    if as_json:
        _print_json(receipt)
    else:
        _out.print(f"[{receipt.status}] {receipt.message} id {receipt.id}", markup=False)
    if not receipt.committed:
        raise typer.Exit(1)


@spaces_app.command("search")
def spaces_search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to recall.")],
    limit: Annotated[int | None, typer.Option(help="Most results (1-50).")] = None,
    mode: Annotated[str, typer.Option(help="smart, keyword or basic.")] = "smart",
    space: Annotated[
        list[str] | None, typer.Option("--space", "-s", help="Only this space (repeat).")
    ] = None,
    policy: Annotated[
        str | None, typer.Option(help="strict-v1, balanced-v1 or exhaustive-v1.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Federated recall over the active Memory Spaces."""
    result = _open(ctx).spaces.search(
        query, limit=limit, mode=mode, space_ids=space or None, policy=policy
    )
    if as_json:
        _print_json(result)
        return
    for row in result.results:
        score = "-" if row.score is None else f"{row.score:.3f}"
        _out.print(
            f"[{row.relevance_tier} {score}] {row.content}  ({row.space_id}/{row.id})",
            markup=False,
        )
    if not result.results:
        _out.print(result.hint or "no results", markup=False)
    for source_report in result.sources:
        if source_report.hint and source_report.status != "ready":
            _out.print(
                f"{source_report.space_id}: {source_report.status} — {source_report.hint}",
                markup=False,
            )


@spaces_app.command("forget")
def spaces_forget(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="The exact id of the memory.")],
    space: SpaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete one memory by id (soft or hard, as the provider declares)."""
    receipt = _open(ctx).spaces.forget(memory_id, space_id=space)
    if as_json:
        _print_json(receipt)
    else:
        _out.print(f"[{receipt.status}] {receipt.message}", markup=False)
    if not receipt.committed:
        raise typer.Exit(1)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSONL file as a remember item (a JSON string is the content)."""
    try:
        lines = path.read_bytes().decode().splitlines()
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InvalidInputError(f"{path} is not UTF-8 text") from None
    items: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise InvalidInputError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        if isinstance(value, str):
            value = {"content": value}
        if not isinstance(value, dict):
            raise InvalidInputError(
                f"{path}:{number}: each line must be a JSON object with 'content' or a string"
            )
        items.append(value)
    if not items:
        raise InvalidInputError(f"{path} has no memories (one JSON object per line)")
    return items


@app.command("ingest")
def ingest(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="JSONL: one {content, category, ...} per line.")],
    space: SpaceOption = None,
    batch: Annotated[int, typer.Option(help="Memories per write (1-1000).")] = 200,
    as_json: JsonOption = False,
) -> None:
    """Bulk-load memories from a JSONL file into a Memory Space (with a progress bar).

    Every line is validated before anything is written.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    if not 1 <= batch <= 1000:
        raise InvalidInputError("--batch must be between 1 and 1000")
    items = _read_jsonl(file)
    mem = _open(ctx)
    spaces = mem.spaces
    spaces.validate_items(items)
    counts = {"committed": 0, "skipped": 0, "failed": 0, "rejected": 0}
    space_id = space
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=as_json,
    ) as progress:
        task = progress.add_task(f"ingest {file.name}", total=len(items))
        for start in range(0, len(items), batch):
            receipts = spaces.remember_many(items[start : start + batch], space_id=space_id)
            for receipt in receipts:
                counts[receipt.status] += 1
            if receipts and space_id is None:
                space_id = receipts[0].space_id
            progress.advance(task, len(receipts))
    report = {"file": str(file), "space_id": space_id, "total": len(items), **counts}
    if as_json:
        _print_json(report)
    else:
        _out.print(
            f"ingested {counts['committed']}/{len(items)} into {space_id} "
            f"({counts['skipped']} pending/skipped, {counts['failed']} failed)",
            markup=False,
        )
    if counts["failed"]:
        raise typer.Exit(1)


# --- end mnemon spaces -------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# mnemon remember / query: the write worker and agent query


@app.command("remember")
def remember(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="The durable memory to keep.")],
    space: Annotated[str | None, typer.Option("--space", help="Memory Space id to use.")] = None,
    category: Annotated[str, typer.Option(help="preference, decision, fact, ...")] = "general",
    importance: Annotated[int, typer.Option(min=1, max=5)] = 3,
    as_json: JsonOption = False,
) -> None:
    """Store a long-term memory through the write worker (honest receipt)."""
    from langgraph_mnemon.memory_layers.write_worker import WriteCandidate

    try:
        candidate = WriteCandidate(
            content=content, category=category, importance=importance, memory_body_id=space
        )
    except ValidationError as exc:
        raise InvalidInputError(f"invalid memory: {exc.errors()[0]['msg']}") from None
    receipt = _open(ctx).remember(candidate)
    if as_json:
        _print_json(receipt)
        return
    _out.print(f"{receipt.status}: {receipt.message} {' '.join(receipt.memory_ids)}".rstrip())
    if receipt.status != "committed":
        raise typer.Exit(3 if receipt.status == "skipped" else 1)


@app.command("query")
def query(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="What to ask the stored memories.")],
    as_json: JsonOption = False,
) -> None:
    """Answer a question from Memory Spaces evidence, with citations."""
    answer = _open(ctx).query(question)
    if as_json:
        _print_json(answer)
        return
    typer.echo(answer.answer)
    for c in answer.citations:
        typer.echo(f"  [{c.memory_body_id}/{c.id}]")


@app.command("serve")
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 2024,
    postgres: Annotated[
        str | None,
        typer.Option(help="PostgreSQL URL for the Mnemos store, spaces and checkpointer."),
    ] = None,
    chroma: Annotated[
        str | None, typer.Option(help="Chroma server HOST:PORT for chroma Memory Spaces.")
    ] = None,
) -> None:
    """Serve the memory graphs, store, checkpointer and control plane with LangGraph server.

    Runs ``langgraph dev`` (no browser, no reload, no analytics or version check) with its
    working files in ROOT/server. The control plane and web page are at /mnemon/.
    """
    from langgraph_mnemon.server.launch import start

    root = (ctx.find_root().obj or {}).get("root") or Path(".mnemon")
    # Validate the settings here, where an error prints one line, not in the server's log.
    Mnemon.open(root).close()
    process = start(Path(root), host=host, port=port, postgres=postgres, chroma=chroma)
    typer.echo(f"mnemon: serving on http://{host}:{port} (control plane: /mnemon/)", err=True)
    # Stopping `mnemon serve` stops the server too, never leaving it orphaned.
    signal.signal(signal.SIGTERM, lambda *_: process.terminate())
    try:
        code = process.wait()
    except KeyboardInterrupt:
        process.terminate()
        code = process.wait()
    raise typer.Exit(code)


def _error_line(exc: MnemonError) -> str:
    """The stderr line for a library error; a kernel refusal also names its setting and env."""
    line = f"mnemon: error: {exc}"
    decision = exc.decision or {}
    if decision.get("env") and decision["env"] not in line:
        line += f" (setting {decision.get('setting')}, env {decision['env']})"
    return line


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except MnemonError as exc:
        print(_error_line(exc), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
