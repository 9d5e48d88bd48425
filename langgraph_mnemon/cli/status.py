"""``mnemon status``: where memory lives and how full each tier is."""

from __future__ import annotations

import time
from typing import Any

import typer
from rich.table import Table

from langgraph_mnemon.cli._common import JsonOption, app, open_host, out, print_json

__all__ = ["status"]


@app.command()
def status(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Show where memory lives and how full each tier is."""
    report = open_host(ctx).status()
    if as_json:
        print_json(report)
        return
    table = Table(title=f"mnemon — {report.root}", show_header=True)
    table.add_column("tier")
    table.add_column("entries", justify="right")
    table.add_column("bytes used / limit", justify="right")
    rt, dc = report.runtime, report.documents
    if rt is not None:
        table.add_row("Runtime USER.md", str(rt.user_entries), f"{rt.user.used} / {rt.user.limit}")
        table.add_row(
            "Runtime MEMORY.md", str(rt.memory_entries), f"{rt.memory.used} / {rt.memory.limit}"
        )
    else:
        table.add_row("Runtime Memory", "-", "unavailable (see below)")
    if dc is not None:
        table.add_row(
            "Documents (active)",
            str(dc.active),
            f"{dc.active_bytes.used} / {dc.active_bytes.limit}",
        )
        table.add_row("Documents (archived)", str(dc.archived), "-")
    else:
        table.add_row("Documents", "-", "unavailable (see below)")
    out.print(table)
    if report.spaces is not None:
        sp = report.spaces
        out.print(
            f"memory spaces: {sp.total} ({sp.active} active); providers: "
            f"{', '.join(sp.providers) or 'none'}",
            markup=False,
        )
        if sp.dense is not None:
            out.print(f"dense search: {sp.dense}", markup=False)
    if report.learning is not None:
        _print_learning(report.learning)
    if rt is not None:
        out.print(f"runtime revision: {rt.revision}")
    if rt is not None and rt.locally_archived:
        out.print(f"entries in runtime/archived/: {rt.locally_archived}")
    out.print(f"database: {report.database_url}", markup=False)
    out.print(f"chroma: {report.chroma or 'disabled'}", markup=False)
    out.print(f"strategy: {report.strategy}; writes {'on' if report.write_enabled else 'off'}")
    if report.health.degraded:
        problems = "; ".join(f"{p.step}: {p.code}: {p.message}" for p in report.health.problems)
        out.print(f"memory degraded: {problems}", markup=False)


def _print_learning(learning: Any) -> None:
    """The scope's learning passes: counts, then the newest passes one line each."""
    out.print(
        f"learning passes: {learning.passes}; memories learned: {learning.learned}",
        markup=False,
    )
    for row in learning.recent:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.finished_at))
        out.print(
            f"  {row.pass_id[:12]}  {row.thread_id}  {when}  {row.extractor}  {row.status}  "
            f"learned {row.learned}",
            markup=False,
        )
