"""``mnemon remember`` / ``mnemon query``: the write worker and the agent query graph."""

from __future__ import annotations

from typing import Annotated

import typer

from langgraph_mnemon.cli._common import (
    ImportanceLevel,
    JsonOption,
    SpaceOption,
    app,
    open_host,
    out,
    print_json,
)
from langgraph_mnemon.errors import InvalidInputError

__all__ = ["query", "remember"]


@app.command("remember")
def remember(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="The durable memory to keep.")],
    space: SpaceOption = None,
    category: Annotated[str, typer.Option(help="preference, decision, fact, ...")] = "general",
    importance: ImportanceLevel = 3,
    as_json: JsonOption = False,
) -> None:
    """Store a long-term memory through the write worker (honest receipt).

    Exit code 3 when it was skipped (an identical memory is already stored).
    """
    from pydantic import ValidationError

    from langgraph_mnemon.memory_layers.write_worker import WriteCandidate

    try:
        candidate = WriteCandidate(
            content=content, category=category, importance=importance, space_id=space
        )
    except ValidationError as exc:
        raise InvalidInputError(f"invalid memory: {exc.errors()[0]['msg']}") from None
    receipt = open_host(ctx).remember(candidate)
    if as_json:
        print_json(receipt)
        return
    out.print(
        f"{receipt.status}: {receipt.message} {' '.join(receipt.memory_ids)}".rstrip(),
        markup=False,
    )
    if receipt.status != "committed":
        raise typer.Exit(3 if receipt.status == "skipped" else 1)


@app.command("query")
def query(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="What to ask the stored memories.")],
    as_json: JsonOption = False,
) -> None:
    """Answer a question from Memory Spaces evidence, with citations."""
    answer = open_host(ctx).query(question)
    if as_json:
        print_json(answer)
        return
    typer.echo(answer.answer)
    for c in answer.citations:
        typer.echo(f"  [{c.space_id}/{c.id}]")
