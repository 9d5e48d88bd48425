"""What every ``mnemon`` command shares: the app, the options, output, errors, vocabulary.

The argument style is one across commands: the thing a command acts on is positional (TEXT,
DOCUMENT_ID, MEMORY_ID, FILE, TASK), a Memory Space is ``--space``, flags take no value, and
importance is one vocabulary (:func:`importance_level` / :func:`importance_word`).
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from langgraph_mnemon.errors import InvalidInputError, MnemonError

if TYPE_CHECKING:
    # Commands load pydantic models and the host when they run, never for ``--help``.
    from pydantic import BaseModel

    from langgraph_mnemon.contracts import Importance
    from langgraph_mnemon.host import Mnemon

__all__ = [
    "IMPORTANCE_HELP",
    "ImportanceLevel",
    "ImportanceWord",
    "JsonOption",
    "SpaceOption",
    "alias",
    "app",
    "error_line",
    "group",
    "importance_level",
    "importance_word",
    "main",
    "open_host",
    "out",
    "print_json",
    "root_of",
    "scope_options",
    "task_of",
    "use_host_class",
]


def group(help: str) -> typer.Typer:
    """A command group with the app's settings: plain help (flags shown without a value
    type), no completion, no pretty tracebacks."""
    return typer.Typer(
        help=help,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )


def alias(parent: typer.Typer, name: str, command: Callable[..., None], *, of: str) -> None:
    """Register ``command`` of ``parent`` once more as ``name`` (e.g. ``list`` for ``show``).

    Args:
        parent: the command group both names belong to.
        name: the second name, the word users type (``list``).
        command: the function already registered as ``of``.
        of: the command's own name, shown in the alias's help.

    Example:
        >>> alias(runtime_app, "list", runtime_show, of="show")  # doctest: +SKIP
    """
    summary = (command.__doc__ or "").strip().splitlines()[0]
    parent.command(name, help=f"The same as `{of}`: {summary}")(command)


app = group("Layered long-term memory for LangGraph agents.")
app.info.name = "mnemon"
out = Console(soft_wrap=True)

RootOption = Annotated[
    Path | None,
    typer.Option("--root", envvar="MNEMON_ROOT", help="Storage root (default ./.mnemon)."),
]
UserOption = Annotated[
    str | None,
    typer.Option(
        "--user", envvar="MNEMON_USER", help="Work in this user's scope (default: local)."
    ),
]
ProjectOption = Annotated[
    str | None,
    typer.Option(
        "--project", envvar="MNEMON_PROJECT", help="Work in this project's scope (default: local)."
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
SpaceOption = Annotated[
    str | None,
    typer.Option("--space", "-s", help="Memory Space id (default: the single active space)."),
]


@app.callback()
def _options(
    ctx: typer.Context,
    root: RootOption = None,
    user: UserOption = None,
    project: ProjectOption = None,
) -> None:
    ctx.obj = {"root": root, "user": user, "project": project}


def root_of(ctx: typer.Context) -> Path | None:
    """The ``--root`` given to ``mnemon`` (or ``MNEMON_ROOT``); None = the default."""
    return (ctx.find_root().obj or {}).get("root")


# Where :func:`open_host` finds the host class. The package registers (on import, before any
# command can run) a resolver that reads its own ``Mnemon`` attribute at call time, so a subclass
# put there (``langgraph_mnemon.cli.Mnemon``) is the one opened; this module never imports the
# package (no import circle).
_host_class: list[Callable[[], type[Mnemon]]] = []


def use_host_class(resolver: Callable[[], type[Mnemon]]) -> None:
    """Make ``resolver()`` the host class every command opens (the package calls this once)."""
    _host_class[:] = [resolver]


def open_host(ctx: typer.Context, **settings: Any) -> Mnemon:
    """Open the storage root of this invocation, in the scope ``--user`` / ``--project`` name.

    The host class is looked up on the package, so a test or an embedding program can put a
    subclass there (``langgraph_mnemon.cli.Mnemon``).
    """
    host = _host_class[0]().open(root_of(ctx), **settings)
    user, project = scope_options(ctx)
    return host if user is None and project is None else host.scoped(user=user, project=project)


def scope_options(ctx: typer.Context) -> tuple[str | None, str | None]:
    """The ``--user`` and ``--project`` given to ``mnemon`` (None: the local one)."""
    obj = ctx.find_root().obj or {}
    return obj.get("user"), obj.get("project")


def print_json(value: BaseModel | dict[str, Any] | list[Any]) -> None:
    """Print a model, dict or list as JSON (non-ASCII kept)."""
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    out.print_json(json.dumps(value, ensure_ascii=False))


# --- importance: one vocabulary for every command --------------------------------------------

IMPORTANCE_HELP = (
    "critical, normal or low, or 1-5 (critical=5, normal=3, low=1; "
    "as a word 4-5 count as critical, 3 normal, 1-2 low)."
)


def importance_level(value: str | int) -> int:
    """:func:`contracts.importance_level` as a command-line parser (a usage error)."""
    from langgraph_mnemon import contracts

    try:
        return contracts.importance_level(value)
    except InvalidInputError as exc:
        raise typer.BadParameter(exc.message) from None


def importance_word(value: str | int) -> Importance:
    """:func:`contracts.importance_word` as a command-line parser (a usage error)."""
    from langgraph_mnemon import contracts

    try:
        return contracts.importance_word(value)
    except InvalidInputError as exc:
        raise typer.BadParameter(exc.message) from None


ImportanceLevel = Annotated[
    int, typer.Option(parser=importance_level, metavar="LEVEL", help=IMPORTANCE_HELP)
]
ImportanceWord = Annotated[
    str, typer.Option(parser=importance_word, metavar="LEVEL", help=IMPORTANCE_HELP)
]


# --- Mnemos tasks: TASK is positional; --task / -t still works (hidden) ---------------------


def task_of(positional: str | None, option: str | None, default: str | None) -> str | None:
    """The task a command names: TASK or the old ``--task`` spelling (not two different)."""
    if positional is not None and option is not None and positional != option:
        raise typer.BadParameter(
            f"two tasks given ({positional!r} and --task {option!r}); give TASK once"
        )
    chosen = positional if positional is not None else option
    return chosen if chosen is not None else default


# --- errors: one line on stderr --------------------------------------------------------------


def error_line(exc: MnemonError) -> str:
    """The stderr line for a library error; a kernel refusal also names its setting and env.

    Args:
        exc: the library error.

    Returns:
        One line starting ``mnemon: error:`` (whitespace collapsed).

    Example:
        >>> error_line(InvalidInputError("limit must be positive"))
        'mnemon: error: limit must be positive'
    """
    line = f"mnemon: error: {exc}"
    decision = exc.decision or {}
    if decision.get("env") and decision["env"] not in line:
        line += f" (setting {decision.get('setting')}, env {decision['env']})"
    return _one_line(line)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


# The click exceptions typer raises: its own vendored copy in recent typer, click before.
_clickerr: Any = importlib.import_module(typer.BadParameter.__module__)


def _usage_line(exc: Any) -> str:
    where = exc.ctx.command_path if exc.ctx is not None else "mnemon"
    message = exc.format_message()
    if "unexpected extra argument" in message and any(
        f"({word})" in message for word in ("true", "false", "yes", "no", "1", "0")
    ):
        message += "; flags such as --json take no value"
    return _one_line(f"mnemon: error: {message} (see `{where} --help`)")


def main(args: Sequence[str] | None = None) -> None:
    """Console-script entry point: ``mnemon ARGS``.

    Args:
        args: the arguments after ``mnemon`` (``sys.argv[1:]`` when None).

    Raises:
        SystemExit: always, with the exit code: 0 done, 1 a library error (one line on
            stderr), 2 a usage error (one line), 3 ``mnemon remember`` skipped (an identical
            memory exists), 130 aborted.

    Example:
        >>> main(["status", "--json"])  # doctest: +SKIP
    """
    try:
        code = app(args=args, prog_name="mnemon", standalone_mode=False)
    except _clickerr.NoArgsIsHelpError as exc:
        typer.echo(exc.ctx.get_help())
        sys.exit(2)
    except _clickerr.UsageError as exc:
        print(_usage_line(exc), file=sys.stderr)
        sys.exit(2)
    except _clickerr.ClickException as exc:
        print(_one_line(f"mnemon: error: {exc.format_message()}"), file=sys.stderr)
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("mnemon: aborted", file=sys.stderr)
        sys.exit(130)
    except MnemonError as exc:
        print(error_line(exc), file=sys.stderr)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
