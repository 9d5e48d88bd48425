"""``mnemon ingest FILE.jsonl``: bulk-load memories of any number of lines into a Memory Space.

Every line is validated before anything is written (a bad line is named by its number); the
writes then go in ``--batch`` chunks with a progress bar. A re-run of the same file resumes:
what is already stored is skipped (the ``mnemos`` and ``chroma`` providers keep one row per
exact content and metadata) and counted as such.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from langgraph_mnemon.cli._common import (
    JsonOption,
    SpaceOption,
    app,
    importance_level,
    open_host,
    out,
    print_json,
)
from langgraph_mnemon.errors import InvalidInputError

if TYPE_CHECKING:
    from langgraph_mnemon.memory_layers.spaces import MemoryReceipt, MemorySpaces

__all__ = ["ingest", "read_jsonl"]

#: The most items one ``remember_many`` call takes (its per-call cap).
MAX_BATCH = 1000


def _line_item(path: Path, number: int, raw: bytes) -> dict[str, Any] | None:
    """One line as a remember item; None for a blank line."""
    where = f"{path}:{number}"
    try:
        line = raw.decode()
    except UnicodeDecodeError:
        raise InvalidInputError(f"{where}: not UTF-8 text") from None
    if not line.strip():
        return None
    try:
        value = json.loads(line)
    except ValueError as exc:
        raise InvalidInputError(f"{where}: not valid JSON ({exc.msg})") from None
    if isinstance(value, str):
        value = {"content": value}
    if not isinstance(value, dict):
        raise InvalidInputError(
            f"{where}: each line must be a JSON object with 'content' or a JSON string"
        )
    if isinstance(value.get("importance"), str):  # the same words as every other command
        try:
            value["importance"] = importance_level(value["importance"])
        except typer.BadParameter as exc:
            raise InvalidInputError(f"{where}: {exc.message}") from None
    return value


def read_jsonl(path: Path, spaces: MemorySpaces) -> tuple[list[dict[str, Any]], list[int]]:
    """Every item of a JSONL file, validated, and the line number of each.

    Raises :class:`InvalidInputError` naming the first bad line; nothing is written.
    """
    items: list[dict[str, Any]] = []
    numbers: list[int] = []
    try:
        with path.open("rb") as lines:
            for number, raw in enumerate(lines, start=1):
                item = _line_item(path, number, raw)
                if item is None:
                    continue
                try:
                    spaces.validate_items([item])
                except InvalidInputError as exc:
                    detail = exc.message.removeprefix("items[0]: ")
                    detail = detail.replace("items[0] ", "the line ", 1)
                    raise InvalidInputError(f"{path}:{number}: {detail}") from None
                items.append(item)
                numbers.append(number)
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror}") from None
    if not items:
        raise InvalidInputError(f"{path} has no memories (one JSON object per line)")
    return items, numbers


def _kind(receipt: MemoryReceipt) -> str:
    """How a receipt counts: stored now, already stored, pending, failed or rejected."""
    if receipt.status == "committed":
        return "committed" if receipt.changed else "already_stored"
    if receipt.status == "skipped":
        return "pending"
    return receipt.status


def _write(
    spaces: MemorySpaces, items: list[dict[str, Any]], numbers: list[int], options: dict[str, Any]
) -> dict[str, Any]:
    """Write ``items`` in chunks; stop after a chunk with failures (a re-run resumes)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    counts = dict.fromkeys(("committed", "already_stored", "pending", "failed", "rejected"), 0)
    space_id, batch, stopped = options["space"], options["batch"], None
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=options["quiet"],
    ) as progress:
        task = progress.add_task(f"ingest {options['name']}", total=len(items))
        for start in range(0, len(items), batch):
            receipts = spaces.remember_many(items[start : start + batch], space_id=space_id)
            kinds = [_kind(r) for r in receipts]
            for kind in kinds:
                counts[kind] += 1
            if receipts and space_id is None:
                space_id = receipts[0].space_id  # the rest goes where the first chunk went
            progress.advance(task, len(receipts))
            if "failed" in kinds:
                stopped = numbers[start + kinds.index("failed")]
                break
    return {"space_id": space_id, "stopped_at_line": stopped, **counts}


@app.command("ingest")
def ingest(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="JSONL: one {content, category, ...} per line.")],
    space: SpaceOption = None,
    batch: Annotated[
        int, typer.Option(min=1, max=MAX_BATCH, help="Memories per write (1-1000).")
    ] = 200,
    as_json: JsonOption = False,
) -> None:
    """Bulk-load memories from a JSONL file of any size into a Memory Space.

    Every line is validated before anything is written, then the memories go in --batch
    chunks with a progress bar. Re-running the same file resumes: memories already stored
    (in a mnemos or chroma space) are skipped and counted as already stored. Importance is a
    word or 1-5 as elsewhere.
    """
    mem = open_host(ctx)
    items, numbers = read_jsonl(file, mem.spaces)
    options = {"space": space, "batch": batch, "quiet": as_json, "name": file.name}
    report = {"file": str(file), "total": len(items), **_write(mem.spaces, items, numbers, options)}
    report["skipped"] = report["already_stored"] + report["pending"]
    if as_json:
        print_json(report)
    else:
        out.print(_summary(report), markup=False)
    if report["failed"]:
        raise typer.Exit(1)


def _summary(report: dict[str, Any]) -> str:
    line = (
        f"ingested {report['committed']}/{report['total']} into {report['space_id']} "
        f"({report['already_stored']} already stored, skipped; {report['pending']} pending; "
        f"{report['failed']} failed)"
    )
    if report["stopped_at_line"] is not None:
        line += (
            f"; stopped at line {report['stopped_at_line']}: fix the cause and run the same "
            "command again to resume"
        )
    return line
