"""The ``mnemon`` command line: inspect and edit a storage root.

Errors from the library print one line on stderr and exit with status 1; usage errors exit 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from langgraph_mnemon.errors import MnemonError
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
    _out.print(table)
    _out.print(f"runtime revision: {rt.revision}")
    if rt.locally_archived:
        _out.print(f"entries in runtime/archived/: {rt.locally_archived}")
    _out.print(f"database: {report.database_url}")
    _out.print(f"strategy: {report.strategy}; writes {'on' if report.write_enabled else 'off'}")


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


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except MnemonError as exc:
        print(f"mnemon: error: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
