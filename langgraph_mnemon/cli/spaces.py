"""``mnemon spaces …``: Memory Spaces, long-term memory behind providers."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.table import Table

from langgraph_mnemon.cli._common import (
    ImportanceLevel,
    JsonOption,
    SpaceOption,
    app,
    group,
    open_host,
    out,
    print_json,
)

__all__ = ["spaces_app"]

spaces_app = group("Memory Spaces: long-term memory behind providers (mnemos, chroma, ...).")
app.add_typer(spaces_app, name="spaces")


@spaces_app.command("list")
def spaces_list(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List Memory Spaces (secret values are never shown)."""
    records = open_host(ctx).spaces.list_spaces()
    if as_json:
        print_json([r.model_dump(mode="json") for r in records])
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
    out.print(table)
    if not records:
        out.print("no Memory Spaces yet; `mnemon spaces remember TEXT` creates the default one")


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
    receipt = open_host(ctx).spaces.create_space(
        name, description, provider_id=provider, space_id=space_id, active=active or None
    )
    if as_json:
        print_json(receipt)
        return
    space = receipt.space
    assert space is not None
    state = "active" if space.active else "inactive until its first write"
    out.print(f"{receipt.message} Provider {space.provider_id}, {state}.", markup=False)


@spaces_app.command("remember")
def spaces_remember(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="The memory text ('-' reads stdin).")],
    space: SpaceOption = None,
    category: Annotated[
        str, typer.Option(help="preference, decision, fact, insight, context or general.")
    ] = "general",
    importance: ImportanceLevel = 3,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Tag (repeat).")] = None,
    entity: Annotated[list[str] | None, typer.Option("--entity", help="Entity (repeat).")] = None,
    source: Annotated[str, typer.Option(help="user, agent or external.")] = "user",
    as_json: JsonOption = False,
) -> None:
    """Store one memory in a Memory Space."""
    text = sys.stdin.read() if content == "-" else content
    receipt = open_host(ctx).spaces.remember(
        text,
        space_id=space,
        category=category,
        importance=importance,
        tags=tag,
        entities=entity,
        source=source,
    )
    if as_json:
        print_json(receipt)
    else:
        out.print(f"[{receipt.status}] {receipt.message} id {receipt.id}", markup=False)
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
    result = open_host(ctx).spaces.search(
        query, limit=limit, mode=mode, space_ids=space or None, policy=policy
    )
    if as_json:
        print_json(result)
        return
    for row in result.results:
        score = "-" if row.score is None else f"{row.score:.3f}"
        out.print(
            f"[{row.relevance_tier} {score}] {row.content}  ({row.space_id}/{row.id})",
            markup=False,
        )
    if not result.results:
        out.print(result.hint or "no results", markup=False)
    for source_report in result.sources:
        if source_report.hint and source_report.status != "ready":
            out.print(
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
    receipt = open_host(ctx).spaces.forget(memory_id, space_id=space)
    if as_json:
        print_json(receipt)
    else:
        out.print(f"[{receipt.status}] {receipt.message}", markup=False)
    if not receipt.committed:
        raise typer.Exit(1)
