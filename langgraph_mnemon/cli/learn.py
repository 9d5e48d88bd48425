"""``mnemon learn``: run a learning pass over a thread, list the passes, undo one.

A pass reads the thread's newest checkpoint in this root's checkpointer (the one
``mem.checkpointer()`` gives an agent) and turns its new messages into memories of the
scope's learned Memory Space, one receipt per change or refusal::

    mnemon --user alice learn --thread t1
    mnemon learn --list --user alice
    mnemon learn --undo 3f2a...

The kernel decides as for every automatic write: with the Memory Spaces write channel ``off``
or ``manual`` the pass writes nothing and says why (exit 1, like a failed pass).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from langgraph_mnemon.cli._common import JsonOption, app, open_host, out, print_json

if TYPE_CHECKING:
    from langgraph_mnemon.host import Mnemon
    from langgraph_mnemon.memory_layers.learning import LearnPass

__all__ = ["learn"]

_FAILED = ("refused", "failed")  # a pass that could not learn: exit 1


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


def _learned(record: LearnPass) -> int:
    """The memories the pass wrote (after an undo its ``undo`` receipts are not learning)."""
    return sum(1 for r in record.learned if r.action != "undo")


def _scoped(ctx: typer.Context, user: str | None, project: str | None) -> Mnemon:
    """The host in this command's scope: its own ``--user`` / ``--project``, else those given
    to ``mnemon`` (or ``MNEMON_USER`` / ``MNEMON_PROJECT``)."""
    host = open_host(ctx)
    if user is None and project is None:
        return host
    return host.scoped(user=user or host.scope.user, project=project or host.scope.project)


def _print_pass(record: LearnPass) -> None:
    """One line per receipt, then the pass's status and reason."""
    for r in record.receipts:
        memory = r.memory_id or "-"
        replaced = f" (replaces {r.replaced_id})" if r.replaced_id else ""
        out.print(
            f"[{r.status}] {r.action} {memory}{replaced}: {r.content!r} — {r.message}",
            markup=False,
        )
    reason = f": {record.reason}" if record.reason else ""
    out.print(
        f"pass {record.pass_id} on thread {record.thread_id} ({record.extractor}): "
        f"{record.status}, {_learned(record)} learned{reason}",
        markup=False,
    )


def _print_list(records: list[LearnPass]) -> None:
    # One line per pass, never a table: a table cuts the full pass id (which --undo takes)
    # on a narrow terminal.
    for p in records:
        out.print(
            f"{p.pass_id}  {p.thread_id}  {_when(p.finished_at)}  {p.extractor}  {p.status}  "
            f"{_learned(p)} learned",
            markup=False,
        )
    if not records:
        out.print("no learning passes yet; `mnemon learn --thread ID` runs one")


@app.command()
def learn(
    ctx: typer.Context,
    thread: Annotated[
        str | None,
        typer.Option("--thread", metavar="ID", help="Learn from this LangGraph thread now."),
    ] = None,
    list_passes: Annotated[
        bool, typer.Option("--list", help="List passes, newest first (--thread: its own).")
    ] = False,
    undo: Annotated[
        str | None, typer.Option("--undo", metavar="PASS_ID", help="Undo one pass.")
    ] = None,
    user: Annotated[
        str | None, typer.Option("--user", metavar="ID", help="Work in this user's scope.")
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", metavar="ID", help="Work in this project's scope.")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            metavar="PROVIDER:MODEL",
            help="The model that proposes (default: worker_model, else heuristics).",
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option(min=1, max=500, metavar="N", help="Most passes --list shows (1-500).")
    ] = 20,
    as_json: JsonOption = False,
) -> None:
    """Learn from a thread's conversation now, list the learning passes, or undo one."""
    chosen = [name for name, given in (("--list", list_passes), ("--undo", undo)) if given]
    if len(chosen) > 1 or (undo is not None and thread is not None):
        raise typer.BadParameter("give one of --thread ID, --list or --undo PASS_ID")
    if not chosen and thread is None:
        raise typer.BadParameter("give --thread ID to learn, --list or --undo PASS_ID")
    if model is not None and chosen:
        raise typer.BadParameter("--model goes with --thread ID only")
    host = _scoped(ctx, user, project)
    if list_passes:
        records = host.learning.list_passes(thread_id=thread, limit=limit)
        if as_json:
            print_json([r.model_dump(mode="json") for r in records])
        else:
            _print_list(records)
        return
    record = host.learning.undo(undo) if undo is not None else host.learn(thread or "", model=model)
    if as_json:
        print_json(record)
    else:
        _print_pass(record)
    if record.status in _FAILED:
        raise typer.Exit(1)
