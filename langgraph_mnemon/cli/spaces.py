"""``mnemon spaces …``: Memory Spaces, long-term memory behind providers.

Adding a space on a provider takes its settings as ``--config KEY=VALUE`` and its credentials
as ``--secret KEY=VALUE``. A secret typed on the command line stays in the shell history, so
there are two other ways: ``--secret-env api_key=MY_KEY`` reads the variable ``MY_KEY``, and
``--secret-stdin api_key`` reads the first line of standard input::

    pass show memory/api-key | mnemon spaces add "Team memory" --provider http \
        --config endpoint=https://memory.example.com/api --secret-stdin api_key
"""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Any

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


def _operators(ctx: typer.Context) -> Any:
    """The Memory Spaces of this invocation's scope, as the operator's (an admin's): the
    command line runs on the host, so it may name locations and set up spaces that connect
    out, also with ``--user`` / ``--project``."""
    return open_host(ctx).spaces.as_admin()


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
    receipt = _operators(ctx).create_space(
        name, description, provider_id=provider, space_id=space_id, active=active or None
    )
    _show_created(receipt, as_json)


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
        str | None,
        typer.Option(help="A quality cut: strict-v1, balanced-v1 or exhaustive-v1 (none: depth)."),
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


# --- providers and connections: add, test, configure, disconnect, remove ---------------------

ConfigOption = Annotated[
    list[str] | None,
    typer.Option(
        "--config",
        "-c",
        metavar="KEY=VALUE",
        help="A provider setting (repeat); VALUE is JSON when it parses as JSON "
        '(numbers, true/false, ["a","b"]), else text.',
    ),
]
SecretOption = Annotated[
    list[str] | None,
    typer.Option(
        "--secret",
        metavar="KEY=VALUE",
        help="A credential (repeat). Visible in shell history: prefer --secret-env or "
        "--secret-stdin.",
    ),
]
SecretEnvOption = Annotated[
    list[str] | None,
    typer.Option(
        "--secret-env",
        metavar="KEY=VARIABLE",
        help="A credential read from the environment variable VARIABLE (repeat).",
    ),
]
SecretStdinOption = Annotated[
    str | None,
    typer.Option(
        "--secret-stdin",
        metavar="KEY",
        help="A credential read from the first line of standard input (e.g. piped from a "
        "password manager).",
    ),
]
ConfirmOption = Annotated[
    str | None,
    typer.Option("--confirm", metavar="SPACE_ID", help="The space id typed again."),
]


def _pairs(values: list[str] | None, option: str) -> list[tuple[str, str]]:
    pairs = []
    for value in values or []:
        key, sep, rest = value.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"{option} takes KEY=VALUE (got {value!r})")
        pairs.append((key.strip(), rest))
    return pairs


def _config(values: list[str] | None) -> dict[str, Any] | None:
    if not values:
        return None
    config: dict[str, Any] = {}
    for key, raw in _pairs(values, "--config"):
        try:
            config[key] = json.loads(raw)
        except ValueError:
            config[key] = raw  # plain text: a URL, a path, a name
    return config


def _secrets(
    given: list[str] | None, from_env: list[str] | None, from_stdin: str | None
) -> dict[str, str] | None:
    """Credentials from ``--secret``, ``--secret-env`` and ``--secret-stdin`` (in that order,
    later ones winning)."""
    secrets = dict(_pairs(given, "--secret"))
    for key, variable in _pairs(from_env, "--secret-env"):
        if variable not in os.environ:
            raise typer.BadParameter(f"--secret-env {key}: the variable {variable!r} is not set")
        secrets[key] = os.environ[variable]
    if from_stdin is not None:
        if not from_stdin.strip():
            raise typer.BadParameter("--secret-stdin takes the secret's KEY")
        secrets[from_stdin.strip()] = sys.stdin.readline().rstrip("\r\n")
    return secrets or None


def _print_test(result: Any, as_json: bool) -> None:
    if as_json:
        print_json(result)
    elif result.ok:
        out.print(f"[ok] {result.provider_id} answered in {result.latency_ms} ms", markup=False)
    else:
        out.print(f"[failed] {result.provider_id}: {result.error or 'unhealthy'}", markup=False)
    if not result.ok:
        raise typer.Exit(1)


@spaces_app.command("providers")
def spaces_providers(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List the providers a space can use, what they declare and the settings they take."""
    infos = open_host(ctx).spaces.list_providers()
    if as_json:
        print_json([i.model_dump(mode="json") for i in infos])
        return
    table = Table(title="Providers")
    for column in ("id", "label", "data", "settings", "secrets", "spaces", "leaving"):
        table.add_column(column)
    for i in infos:
        table.add_row(
            i.id if i.registered else f"{i.id} (not registered)",
            i.label,
            "local" if i.local else "remote",
            ", ".join(f.name for f in i.config_fields if f.kind != "secret") or "-",
            ", ".join(f.name for f in i.config_fields if f.kind == "secret") or "-",
            str(i.spaces),
            "remove (deletes data)" if i.removal == "remove" else "disconnect (keeps data)",
        )
    out.print(table)


@spaces_app.command("add")
def spaces_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Display name (≤120 chars).")],
    provider: Annotated[
        str | None, typer.Option(help="Provider id (see `mnemon spaces providers`).")
    ] = None,
    description: Annotated[str, typer.Option(help="What belongs here (≤500 chars).")] = "",
    config: ConfigOption = None,
    secret: SecretOption = None,
    secret_env: SecretEnvOption = None,
    secret_stdin: SecretStdinOption = None,
    space_id: Annotated[str | None, typer.Option("--id", help="Explicit space id.")] = None,
    active: Annotated[bool, typer.Option("--active", help="Activate at once.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Add a Memory Space on a provider, with its settings and (host-side) secrets."""
    receipt = _operators(ctx).create_space(
        name,
        description,
        provider_id=provider,
        config=_config(config),
        secrets=_secrets(secret, secret_env, secret_stdin),
        space_id=space_id,
        active=active or None,
    )
    _show_created(receipt, as_json)


@spaces_app.command("test")
def spaces_test(
    ctx: typer.Context,
    space_id: Annotated[
        str | None, typer.Argument(help="A stored space to test (or give --provider).")
    ] = None,
    provider: Annotated[
        str | None, typer.Option(help="Test settings on this provider instead (nothing stored).")
    ] = None,
    config: ConfigOption = None,
    secret: SecretOption = None,
    secret_env: SecretEnvOption = None,
    secret_stdin: SecretStdinOption = None,
    as_json: JsonOption = False,
) -> None:
    """Test a connection: a stored space, or settings on a provider (exit 1 when not ok)."""
    if (space_id is None) == (provider is None):
        raise typer.BadParameter("give a SPACE_ID or --provider ID (one of them)")
    spaces = _operators(ctx)
    if space_id is not None:
        if config or secret or secret_env or secret_stdin:
            raise typer.BadParameter("a stored space is tested with its own settings")
        result = spaces.test_space(space_id)
    else:
        assert provider is not None
        secrets = _secrets(secret, secret_env, secret_stdin)
        result = spaces.test_connection(provider, config=_config(config), secrets=secrets)
    _print_test(result, as_json)


@spaces_app.command("configure")
def spaces_configure(
    ctx: typer.Context,
    space_id: Annotated[str, typer.Argument(help="The space to change.")],
    name: Annotated[str | None, typer.Option(help="A new name.")] = None,
    description: Annotated[str | None, typer.Option(help="A new description.")] = None,
    config: ConfigOption = None,
    unset: Annotated[
        list[str] | None, typer.Option("--unset", metavar="KEY", help="Remove a setting.")
    ] = None,
    secret: SecretOption = None,
    secret_env: SecretEnvOption = None,
    secret_stdin: SecretStdinOption = None,
    clear_secret: Annotated[
        list[str] | None,
        typer.Option("--clear-secret", metavar="KEY", help="Remove a stored credential."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Change a space's name, description, settings or secrets (secrets are write-only)."""
    changes = _config(config) or {}
    changes.update(dict.fromkeys(unset or []))
    secrets = _secrets(secret, secret_env, secret_stdin) or {}
    secrets.update(dict.fromkeys(clear_secret or [], ""))
    receipt = _operators(ctx).update_space(
        space_id,
        name=name,
        description=description,
        config=changes or None,
        secrets=secrets or None,
    )
    if as_json:
        print_json(receipt)
        return
    out.print(receipt.message, markup=False)
    space = receipt.space
    if space is not None and space.secrets_configured:
        out.print(f"secrets configured: {', '.join(space.secrets_configured)}", markup=False)


@spaces_app.command("disconnect")
def spaces_disconnect(
    ctx: typer.Context,
    space_id: Annotated[str, typer.Argument(help="A third-party space.")],
    confirm: ConfirmOption = None,
    as_json: JsonOption = False,
) -> None:
    """Disconnect a third-party space: its entry and secrets go, the provider's data stays."""
    _show_receipt(open_host(ctx).spaces.disconnect_space(space_id, confirm=confirm or ""), as_json)


@spaces_app.command("remove")
def spaces_remove(
    ctx: typer.Context,
    space_id: Annotated[str, typer.Argument(help="A native (mnemos) space.")],
    confirm: ConfirmOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remove a native space for good: its memories are deleted, then its entry."""
    _show_receipt(open_host(ctx).spaces.remove_space(space_id, confirm=confirm or ""), as_json)


def _show_created(receipt: Any, as_json: bool) -> None:
    if as_json:
        print_json(receipt)
        return
    space = receipt.space
    assert space is not None
    state = "active" if space.active else "inactive until its first write"
    out.print(f"{receipt.message} Provider {space.provider_id}, {state}.", markup=False)


def _show_receipt(receipt: Any, as_json: bool) -> None:
    if as_json:
        print_json(receipt)
    else:
        out.print(receipt.message, markup=False)
