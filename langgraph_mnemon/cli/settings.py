"""``mnemon settings …`` and ``mnemon secrets …``: what is stored host-wide in the database.

``settings`` shows, sets and resets the live switches every host on the database applies (what the
control plane's ``PATCH /settings`` stores); ``secrets`` reports how the Memory Space provider
secrets are kept and re-encrypts them with a new ``MNEMON_SECRET_KEY``.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from langgraph_mnemon.cli._common import (
    JsonOption,
    alias,
    app,
    group,
    open_host,
    out,
    print_json,
)

__all__ = ["secrets_app", "settings_app"]

settings_app = group("Live settings stored in the database (every host applies them).")
app.add_typer(settings_app, name="settings")
secrets_app = group("Memory Space provider secrets stored in the database.")
app.add_typer(secrets_app, name="secrets")


@settings_app.command("show")
def settings_show(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Show the stored live settings (they override MNEMON_* and start-up values)."""
    stored = open_host(ctx).live_settings.stored()
    if as_json:
        print_json(stored)
        return
    if not stored.values:
        out.print(f"no live settings stored (revision {stored.revision}); start-up values apply")
        return
    out.print(f"revision {stored.revision}:", markup=False)
    for key, value in sorted(stored.values.items()):
        out.print(f"  {key} = {value!r}", markup=False)


alias(settings_app, "list", settings_show, of="show")


@settings_app.command("set")
def settings_set(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="A live setting (dotted, e.g. recall_mode).")],
    value: Annotated[str, typer.Argument(help="Its value: off, manual, true, false, ...")],
    as_json: JsonOption = False,
) -> None:
    """Store one live setting: every host on the database applies it within seconds."""
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value  # a bare word such as off or guided
    stored = open_host(ctx).live_settings.change({key: parsed})
    if as_json:
        print_json(stored)
        return
    out.print(f"{key} = {stored.values[key]!r} (revision {stored.revision})", markup=False)


@settings_app.command("reset")
def settings_reset(
    ctx: typer.Context,
    keys: Annotated[
        list[str] | None,
        typer.Argument(help="Live settings to drop (dotted, e.g. recall_mode); none = all."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Drop stored live settings: their start-up values apply again, on every host."""
    stored = open_host(ctx).live_settings.reset(keys or None)
    if as_json:
        print_json(stored)
        return
    left = ", ".join(sorted(stored.values)) or "none"
    out.print(f"reset (revision {stored.revision}); still stored: {left}", markup=False)


@secrets_app.command("status")
def secrets_status(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Count the stored secrets by how they are kept (never a name or a value)."""
    report = open_host(ctx).spaces.secrets_report()
    if as_json:
        print_json(report)
        return
    key = "configured" if report.key_configured else "not set (stored as plain text)"
    out.print(
        f"{report.rows} spaces with secrets: {report.encrypted_current} encrypted with the "
        f"current key, {report.encrypted_other} with another key, {report.plain} plain text; "
        f"MNEMON_SECRET_KEY {key}",
        markup=False,
    )


@secrets_app.command("rotate")
def secrets_rotate(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Re-encrypt every stored secret with MNEMON_SECRET_KEY (the old key in
    MNEMON_SECRET_KEY_PREVIOUS); afterwards the old key opens nothing."""
    report = open_host(ctx).spaces.rotate_secrets()
    if as_json:
        print_json(report)
        return
    out.print(
        f"rotated {report.rotated} of {report.rows}; every stored secret is now encrypted with "
        "the current key (MNEMON_SECRET_KEY_PREVIOUS may be removed)",
        markup=False,
    )
