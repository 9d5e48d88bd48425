"""``mnemon docs …``: Documents, the project records (active / archived)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from langgraph_mnemon.cli._common import JsonOption, app, group, open_host, out, print_json
from langgraph_mnemon.errors import InvalidInputError

if TYPE_CHECKING:
    from langgraph_mnemon.host import Mnemon

__all__ = ["docs_app"]

docs_app = group("Documents: project records (active / archived).")
app.add_typer(docs_app, name="docs")

DocumentId = Annotated[
    str, typer.Argument(help="Document id or a unique prefix of it (at least 4 characters).")
]
_ID_CHARS = re.compile(r"[0-9a-fA-F-]+")


def _doc_id(mem: Mnemon, value: str) -> str:
    """A full document id from an id or a unique id prefix (the layer's exact messages)."""
    return mem.documents.find_id(value)


@docs_app.command("list")
def docs_list(
    ctx: typer.Context,
    archived: Annotated[bool, typer.Option("--archived", help="List archived documents.")] = False,
    show_all: Annotated[bool, typer.Option("--all", help="List active and archived.")] = False,
    as_json: JsonOption = False,
) -> None:
    """List documents, most recently updated first."""
    status = "all" if show_all else ("archived" if archived else "active")
    mem = open_host(ctx)
    records = mem.documents.list(status)  # type: ignore[arg-type]
    if as_json:
        print_json([r.model_dump(mode="json") for r in records])
        return
    usage = mem.documents.usage()
    table = Table(title=f"{status} documents — active {usage.used} / {usage.limit} bytes")
    for column in ("id", "rev", "status", "title", "bytes", "updated"):
        table.add_column(column, justify="right" if column in ("rev", "bytes") else "left")
    for r in records:
        table.add_row(
            r.id[:8], str(r.revision), r.status, r.title, str(r.size_bytes), r.updated_at[:19]
        )
    out.print(table)
    if not records:
        out.print(f"no {status} documents")


@docs_app.command("show")
def docs_show(ctx: typer.Context, document_id: DocumentId, as_json: JsonOption = False) -> None:
    """Print one document: its record, then its body."""
    mem = open_host(ctx)
    doc_id = _doc_id(mem, document_id)
    record = mem.documents.get(doc_id)
    body = mem.documents.read(doc_id)
    if as_json:
        print_json({"document": record.model_dump(mode="json"), "content": body})
        return
    typer.echo(f"{record.title}  [{record.status}, revision {record.revision}]")
    typer.echo(f"id: {record.id}")
    if record.description:
        typer.echo(f"description: {record.description}")
    typer.echo(f"file: {mem.documents.display_path(record.relative_path)}")
    if record.source_paths:
        typer.echo(f"sources: {', '.join(record.source_paths)}")
    typer.echo(f"updated: {record.updated_at}; size: {record.size_bytes} bytes")
    if record.archive_summary:
        typer.echo(f"archive summary: {record.archive_summary}")
    typer.echo("")
    typer.echo(body)


def _body(content: str | None, file: Path | None) -> str:
    if (content is None) == (file is None):
        raise typer.BadParameter("give the body as an argument or with --file (exactly one)")
    if file is None:
        return sys.stdin.read() if content == "-" else str(content)
    try:
        return file.read_bytes().decode()
    except OSError as exc:
        raise InvalidInputError(f"cannot read --file {file}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InvalidInputError(f"--file {file} is not UTF-8 text") from None


@docs_app.command("create")
def docs_create(
    ctx: typer.Context,
    content: Annotated[
        str | None, typer.Argument(help="The body text ('-' reads stdin). Or use --file.")
    ] = None,
    title: Annotated[str, typer.Option("--title", help="Title (required, ≤160 chars).")] = "",
    description: Annotated[str, typer.Option(help="Short description (≤600 chars).")] = "",
    source_path: Annotated[
        list[str] | None,
        typer.Option("--source-path", "-s", help="Workspace-relative file it describes (repeat)."),
    ] = None,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", help="Read the body from this UTF-8 file.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Create an active document."""
    body = _body(content, file)
    receipt = open_host(ctx).documents.create(
        title, body, description=description, source_paths=source_path or ()
    )
    _print_doc_receipt(receipt, as_json)


@docs_app.command("search")
def docs_search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for ('' lists recent).")],
    archived: Annotated[
        bool, typer.Option("--archived", help="Include archived documents.")
    ] = False,
    limit: Annotated[int, typer.Option(help="Most results (1-50).")] = 10,
    as_json: JsonOption = False,
) -> None:
    """Search documents (titles, descriptions, bodies; English and Chinese)."""
    result = open_host(ctx).documents.search(query, include_archived=archived, limit=limit)
    if as_json:
        print_json(result)
        return
    hits = result.results or result.suggestions
    if result.results:
        typer.echo(f"{result.total} match(es)")
    else:
        typer.echo("no match" + ("; recent documents:" if hits else ""))
    for hit in hits:
        typer.echo(f"\n[{hit.score}] {hit.title}  ({hit.id[:8]}, {hit.status})")
        typer.echo(hit.content if len(hit.content) <= 400 else hit.content[:400] + "…")


@docs_app.command("archive")
def docs_archive(
    ctx: typer.Context,
    document_id: DocumentId,
    summary: Annotated[str | None, typer.Option(help="What the document covered.")] = None,
    revision: Annotated[
        int | None,
        typer.Option(help="Archive only if the document is still at this revision."),
    ] = None,
    memory_space: Annotated[
        list[str] | None,
        typer.Option(
            "--space",
            "--memory-space",
            help="Memory Space already holding its cold reference (repeat).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Archive an active document: cold reference in a Memory Space first, then the move.

    With no options the cold-archive worker writes the reference (when an active Memory Space
    can take it, else the document moves without one). --space names spaces that
    already hold a reference you wrote yourself.
    """
    mem = open_host(ctx)
    doc_id = _doc_id(mem, document_id)
    if not memory_space and summary is None and revision is None:
        _print_doc_receipt(mem.archive_document(doc_id), as_json)
        return
    expected = revision if revision is not None else mem.documents.get(doc_id).revision
    if memory_space:
        receipt = mem.documents.archive(doc_id, expected, summary, memory_space)
    else:
        receipt = mem.documents.archive_without_index(doc_id, expected, summary)
    _print_doc_receipt(receipt, as_json)


def _print_doc_receipt(receipt: Any, as_json: bool) -> None:
    if as_json:
        print_json(receipt)
        return
    doc = receipt.document
    out.print(
        f"{receipt.message} {doc.id} revision {doc.revision} ({doc.status}, {doc.size_bytes} "
        f"bytes); active {receipt.usage.used}/{receipt.usage.limit} bytes",
        markup=False,
    )
