"""``mnemon runtime …``: Runtime Memory (USER.md and MEMORY.md)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from langgraph_mnemon.cli._common import (
    IMPORTANCE_HELP,
    ImportanceWord,
    JsonOption,
    app,
    group,
    importance_word,
    open_host,
    out,
    print_json,
)

__all__ = ["runtime_app"]

runtime_app = group("Runtime Memory: USER.md and MEMORY.md.")
app.add_typer(runtime_app, name="runtime")

TargetOption = Annotated[str, typer.Option("--target", "-t", help="user or memory.")]


@runtime_app.command("show")
def runtime_show(
    ctx: typer.Context,
    branch: Annotated[
        str | None, typer.Option(help="Git branch to filter by (default: the workspace's).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Print the model-facing Runtime Memory snapshot."""
    snap = open_host(ctx).runtime.snapshot(branch=branch)
    if as_json:
        print_json(snap)
    else:
        typer.echo(snap.text)


@runtime_app.command("add")
def runtime_add(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="The entry text.")],
    target: TargetOption = "memory",
    importance: ImportanceWord = "normal",
    branch: Annotated[
        list[str] | None, typer.Option("--branch", "-b", help="Scope to a git branch (repeat).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Add an entry (an identical entry is a no-op)."""
    receipt = open_host(ctx).runtime.add(
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
        str | None,
        typer.Option(
            parser=importance_word, metavar="LEVEL", help=f"{IMPORTANCE_HELP} Default: keep."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Replace the entry that OLD_TEXT identifies."""
    receipt = open_host(ctx).runtime.replace(
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
    receipt = open_host(ctx).runtime.remove(target, old_text)  # type: ignore[arg-type]
    _print_receipt(receipt, as_json)


def _print_receipt(receipt: Any, as_json: bool) -> None:
    if as_json:
        print_json(receipt)
        return
    usage = receipt.usage
    out.print(
        f"{receipt.message} {receipt.target}: {receipt.entry_count} entries, "
        f"{usage.used}/{usage.limit} bytes; revision {receipt.revision[:12]}",
        markup=False,
    )
