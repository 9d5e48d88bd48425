"""``mnemon export`` / ``mnemon import``: one scope's Runtime Memory and Documents as files.

With ``memory_storage=database`` (or a PostgreSQL ``database_url``) Runtime Memory and
Documents live in tables. ``export`` writes a scope's tables as the file layout the embedded
default uses (a storage root: ``runtime/``, ``documents/``, or ``scopes/...`` for other scopes);
``import`` loads such a root into the tables. A round trip is byte-identical.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from langgraph_mnemon.cli._common import JsonOption, app, open_host, print_json
from langgraph_mnemon.errors import ConflictError, InvalidInputError

if TYPE_CHECKING:
    from langgraph_mnemon.host import Mnemon

__all__ = ["export_scope", "import_scope"]

FolderArgument = Annotated[
    Path, typer.Argument(help="A storage root folder (the file layout of the embedded default).")
]
ReplaceOption = Annotated[
    bool, typer.Option("--replace", help="Overwrite a destination that already holds memory.")
]


def _file_layers(host: Mnemon, folder: Path, *, writable: bool = True) -> tuple:
    """File-backed Runtime Memory and Documents of the host's scope, rooted at ``folder``
    (an import source is opened read-only: not even a projection repair touches it)."""
    # Deferred: the layers load only when a command runs, never for ``mnemon --help``.
    from langgraph_mnemon.memory_layers.kernel import Kernel
    from langgraph_mnemon.memory_layers.scopes import build_documents, build_runtime

    if not host.config.layers_in_database:
        raise InvalidInputError(
            "Runtime Memory and Documents are already files here (memory_storage=files); "
            "export and import move them between database tables and files: set "
            "MNEMON_DATABASE_URL to the PostgreSQL database (or MNEMON_MEMORY_STORAGE=database)"
        )
    config = host.config.model_copy(update={"root": folder, "memory_storage": "files"})
    kernel = host.kernel if writable else Kernel.standalone(write_enabled=False)
    if writable:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    runtime = build_runtime(config, kernel, host.scope, lambda: host.database)
    documents = build_documents(config, kernel, host.scope, lambda: host.database)
    return runtime, documents


@app.command("export")
def export_scope(
    ctx: typer.Context,
    folder: FolderArgument,
    replace: ReplaceOption = False,
    as_json: JsonOption = False,
) -> None:
    """Write the scope's Runtime Memory and Documents (database tables) to files under FOLDER."""
    _copy(ctx, folder, replace, as_json, to_files=True)


@app.command("import")
def import_scope(
    ctx: typer.Context,
    folder: FolderArgument,
    replace: ReplaceOption = False,
    as_json: JsonOption = False,
) -> None:
    """Load the scope's Runtime Memory and Documents from files under FOLDER into the tables."""
    _copy(ctx, folder, replace, as_json, to_files=False)


def _copy(
    ctx: typer.Context, folder: Path, replace: bool, as_json: bool, *, to_files: bool
) -> None:
    from langgraph_mnemon.memory_layers.documents import copy_documents
    from langgraph_mnemon.memory_layers.runtime import export_runtime

    host = open_host(ctx)
    if not to_files and not folder.is_dir():
        raise InvalidInputError(f"{folder} is not a folder; name a storage root to import")
    runtime, documents = _file_layers(host, folder, writable=to_files)
    tables, files = (host.runtime, host.documents), (runtime, documents)
    source, dest = (tables, files) if to_files else (files, tables)
    _refuse_filled(dest[0], dest[1], replace, str(folder) if to_files else "the database")
    entries = export_runtime(source[0], dest[0], replace=replace)
    docs = copy_documents(source[1], dest[1], replace=replace)
    _report(as_json, "exported" if to_files else "imported", entries, docs, folder)


def _refuse_filled(runtime: Any, documents: Any, replace: bool, where: str) -> None:
    # Both tiers are checked before either is copied: a refusal leaves both as they were.
    if replace:
        return
    held = [
        f"{n} {what}"
        for n, what in (
            (len(runtime.entries()), "Runtime Memory entries"),
            (len(documents.list("all")), "Documents"),
        )
        if n
    ]
    if held:
        raise ConflictError(
            f"{where} already holds {' and '.join(held)} in this scope; nothing was copied. "
            "Pass --replace to overwrite them."
        )


def _report(as_json: bool, verb: str, entries: int, docs: int, folder: Path) -> None:
    if as_json:
        print_json({"action": verb, "runtime_entries": entries, "documents": docs})
    else:
        typer.echo(f"{verb} {entries} Runtime Memory entries and {docs} Documents ({folder})")
