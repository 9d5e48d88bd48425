"""``mnemon runtime …``: Runtime Memory (USER.md and MEMORY.md).

The arguments come in the order of the Python API: ``mnemon runtime add user TEXT`` is
``mem.runtime.add("user", text)``, ``replace TARGET OLD_TEXT NEW_TEXT`` and ``remove TARGET
OLD_TEXT`` likewise. The older order (``add TEXT --target user``, the target defaulting to
``memory``) still works for existing scripts, with a deprecation note on stderr. ``list`` is
``show``.
"""

from __future__ import annotations

import shlex
import sys
from typing import Annotated, Any

import typer

from langgraph_mnemon.cli._common import (
    IMPORTANCE_HELP,
    ImportanceWord,
    JsonOption,
    alias,
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

# The spelling before TARGET became the first argument; kept (hidden) so scripts keep working.
TargetAlias = Annotated[str | None, typer.Option("--target", "-t", hidden=True)]
Target = Annotated[
    str, typer.Argument(metavar="TARGET", help="user (USER.md) or memory (MEMORY.md).")
]
_TARGETS = ("user", "memory")


def _target_first(
    ctx: typer.Context, command: str, words: list[str | None], option: str | None
) -> tuple[str, list[str]]:
    """The target and the texts of ``mnemon runtime COMMAND``, in either argument order.

    ``words`` are the positionals as typed, as many as the new order takes (a missing last one
    is None). All given: TARGET comes first. One short: the old order, the target from
    ``--target`` (default ``memory``), with a deprecation note on stderr.

    Args:
        ctx: the command's context (a usage error points at its ``--help``).
        command: ``add``, ``replace`` or ``remove`` (for the messages).
        words: the positionals; only the last may be None.
        option: the value of the hidden ``--target`` option, if given.

    Returns:
        ``(target, texts)``: the target (checked later by the layer) and the remaining texts.

    Raises:
        typer.BadParameter: two different targets, a TARGET that is not user or memory, or the
            new order with its last text missing (a usage error, exit 2).

    Example:
        >>> _target_first(ctx, "add", ["user", "Prefers tea."], None)  # doctest: +SKIP
        ('user', ['Prefers tea.'])
    """
    given = [w for w in words if w is not None]
    if len(given) == len(words):
        target, texts = given[0], given[1:]
        if target not in _TARGETS:
            raise typer.BadParameter(
                f"TARGET must be user or memory, not {target!r}; the order is "
                f"`mnemon runtime {command} TARGET {_texts_metavar(command)}`",
                ctx=ctx,
            )
        if option is not None and option != target:
            raise typer.BadParameter(
                f"two targets given ({target!r} and --target {option!r}); give TARGET once",
                ctx=ctx,
            )
        if option is not None:
            _deprecated(command, target, texts)
        return target, texts
    if option is None and given[0] in _TARGETS:
        # ``add user`` is the new order missing its text, not the old one storing "user".
        raise typer.BadParameter(
            f"{_texts_metavar(command).split()[-1]} is missing: "
            f"`mnemon runtime {command} {given[0]} {_texts_metavar(command)}`",
            ctx=ctx,
        )
    target = option if option is not None else "memory"
    _deprecated(command, target, given)
    return target, given


def _texts_metavar(command: str) -> str:
    return {"add": "TEXT", "replace": "OLD_TEXT NEW_TEXT", "remove": "OLD_TEXT"}[command]


def _deprecated(command: str, target: str, texts: list[str]) -> None:
    spelled = " ".join(shlex.quote(t) for t in (target, *texts))
    print(
        f"mnemon: deprecated: TARGET now comes first, as in mem.runtime.{command}(); write "
        f"`mnemon runtime {command} {spelled}` (TEXT --target is the old order)",
        file=sys.stderr,
    )


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


alias(runtime_app, "list", runtime_show, of="show")


@runtime_app.command("add")
def runtime_add(
    ctx: typer.Context,
    target: Target,
    content: Annotated[
        str | None, typer.Argument(metavar="TEXT", help="The entry text.", show_default=False)
    ] = None,
    target_alias: TargetAlias = None,
    importance: ImportanceWord = "normal",
    branch: Annotated[
        list[str] | None, typer.Option("--branch", "-b", help="Scope to a git branch (repeat).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Add an entry to TARGET (an identical entry is a no-op)."""
    chosen, (text,) = _target_first(ctx, "add", [target, content], target_alias)
    receipt = open_host(ctx).runtime.add(
        chosen,  # type: ignore[arg-type]
        text,
        importance=importance,  # type: ignore[arg-type]
        branches=branch or None,
    )
    _print_receipt(receipt, as_json)


@runtime_app.command("replace")
def runtime_replace(
    ctx: typer.Context,
    target: Target,
    old_text: Annotated[
        str, typer.Argument(metavar="OLD_TEXT", help="Text identifying one entry.")
    ],
    content: Annotated[
        str | None,
        typer.Argument(metavar="NEW_TEXT", help="The new entry text.", show_default=False),
    ] = None,
    target_alias: TargetAlias = None,
    importance: Annotated[
        str | None,
        typer.Option(
            parser=importance_word, metavar="LEVEL", help=f"{IMPORTANCE_HELP} Default: keep."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Replace the entry of TARGET that OLD_TEXT identifies."""
    chosen, (old, new) = _target_first(ctx, "replace", [target, old_text, content], target_alias)
    receipt = open_host(ctx).runtime.replace(
        chosen,  # type: ignore[arg-type]
        old,
        new,
        importance=importance,  # type: ignore[arg-type]
    )
    _print_receipt(receipt, as_json)


@runtime_app.command("remove")
def runtime_remove(
    ctx: typer.Context,
    target: Target,
    old_text: Annotated[
        str | None,
        typer.Argument(metavar="OLD_TEXT", help="Text identifying one entry.", show_default=False),
    ] = None,
    target_alias: TargetAlias = None,
    as_json: JsonOption = False,
) -> None:
    """Remove the entry of TARGET that OLD_TEXT identifies."""
    chosen, (old,) = _target_first(ctx, "remove", [target, old_text], target_alias)
    receipt = open_host(ctx).runtime.remove(chosen, old)  # type: ignore[arg-type]
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
