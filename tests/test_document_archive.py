"""Document cold-archive graph on real Documents and Memory Spaces."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from documents_support import BACKENDS
from langchain_core.messages import AIMessage

from langgraph_mnemon import Mnemon
from langgraph_mnemon.graphs.document_archive import build_document_archive_graph
from langgraph_mnemon.memory_layers.documents import DocumentMutation, Documents
from langgraph_mnemon.memory_layers.documents._sql_schema import DOCUMENTS, HEADS
from langgraph_mnemon.memory_layers.spaces import MemorySpaces
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

BODY = "This runbook explains the release process. " + "Step details follow. " * 60


class Env:
    """A host's Memory Spaces with Documents on one backend (the host's own on files)."""

    def __init__(self, host: Mnemon, documents: Documents) -> None:
        self.host = host
        self.root = host.root
        self.spaces: MemorySpaces = host.spaces
        self.documents = documents


@pytest.fixture(params=BACKENDS)
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Env]:
    settings: dict[str, Any] = {"workspace": tmp_path, "documents": {"active_limit_bytes": 5000}}
    if request.param == "postgres":
        # The host's own tiers stay on files; these Documents and the spaces use PostgreSQL.
        settings |= {
            "database_url": request.getfixturevalue("postgres_url"),
            "memory_storage": "files",
        }
    m = Mnemon.open(tmp_path / "root", **settings)
    documents = m.documents
    if request.param != "files":
        documents = Documents(
            m.root,
            workspace=tmp_path,
            active_limit_bytes=5000,
            kernel=m.kernel,
            database=m.database,
            owner_key="project:local",
        )
    yield Env(m, documents)
    m.close()


def _docs(mem: Env) -> list[str]:
    ids = []
    for title in ("Release runbook", "Incident guide", "Schema notes"):
        ids.append(
            mem.documents.create(title, BODY, description=f"{title} for the team").document.id
        )
    return ids


NEW = DocumentMutation(action="create", title="ADR 12: queues", content="We chose queues. " * 80)


def _doc_files(mem: Env) -> Any:
    """Everything the Documents hold but access times (files, or the owner's rows)."""
    if mem.documents.database is None:
        folder = mem.root / "documents"
        return {
            str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "access.jsonl" and ".recovery" not in p.parts
        }
    columns = [c for c in DOCUMENTS.c if c.name != "last_accessed_at"]
    with mem.documents.database.read() as conn:
        rows = conn.execute(
            sa.select(*columns)
            .where(DOCUMENTS.c.owner == "project:local")
            .order_by(DOCUMENTS.c.position)
        ).all()
        head = conn.execute(
            sa.select(HEADS.c.generation).where(HEADS.c.owner == "project:local")
        ).all()
    return [tuple(r) for r in rows], [tuple(h) for h in head]


def _space(mem: Env, name: str = "Docs index") -> str:
    space = mem.spaces.create_space(name, "Where project documents are indexed", active=True).space
    assert space is not None
    return space.id


def test_overflow_without_spaces_moves_without_index(mem: Env) -> None:
    first, *_ = _docs(mem)
    assert not mem.documents.capacity_plan(NEW).fits
    out = build_document_archive_graph(mem.documents, mem.spaces).invoke({"mutation": NEW})
    assert "error" not in out, out.get("error")
    assert out["receipt"].document.title == "ADR 12: queues"
    archived = out["archived"][0]
    assert archived.document.id == first  # least recently used
    assert archived.indexed is False
    assert mem.documents.get(first).status == "archived"


def test_overflow_writes_a_verified_reference_first(mem: Env) -> None:
    first, *_ = _docs(mem)
    space = _space(mem)
    out = build_document_archive_graph(mem.documents, mem.spaces).invoke({"mutation": NEW})
    assert "error" not in out, out.get("error")
    record = mem.documents.get(first)
    assert record.status == "archived"
    assert list(record.memory_body_ids) == [space]
    stored = [row.content for row in mem.spaces.browse(space, limit=50)]
    assert len(stored) == 1
    assert "Release runbook" in stored[0]
    assert record.content_hash in stored[0]
    assert "documents/archived/" in stored[0]
    assert out["receipt"].status == "committed"


def test_model_summary_and_destination(mem: Env) -> None:
    _docs(mem)
    a = _space(mem, "Runbooks")
    _space(mem, "Other")
    model = ScriptedChatModel(
        responses=[
            tool_call(
                "mnemon_cold_reference",
                {"summary": "How we cut and ship releases.", "memory_body_id": a},
            )
        ]
    )
    out = build_document_archive_graph(mem.documents, mem.spaces, model).invoke({"mutation": NEW})
    assert "error" not in out, out.get("error")
    assert "How we cut and ship releases." in mem.spaces.browse(a, limit=5)[0].content
    assert "Title: Release runbook" in model.calls[0][1].content


BAD: dict[str, Any] = {
    "unknown destination": tool_call(
        "mnemon_cold_reference", {"summary": "x", "memory_body_id": "nope"}
    ),
    "empty summary": tool_call("mnemon_cold_reference", {"summary": "", "memory_body_id": "A"}),
    "invalid json": AIMessage(content="summary: releases"),
    "no result": AIMessage(content=""),
    "model exception": RuntimeError("worker crashed"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_worker_output_keeps_everything(mem: Env, case: str) -> None:
    ids = _docs(mem)
    space = _space(mem)
    reply = BAD[case]
    if isinstance(reply, AIMessage) and reply.tool_calls:
        args = dict(reply.tool_calls[0]["args"])
        if args.get("memory_body_id") == "A":
            args["memory_body_id"] = space
        reply = tool_call("mnemon_cold_reference", args)
    before = _doc_files(mem)
    out = build_document_archive_graph(
        mem.documents, mem.spaces, ScriptedChatModel(responses=[reply])
    ).invoke({"mutation": NEW})
    assert out.get("error"), case
    assert _doc_files(mem) == before
    assert all(mem.documents.get(i).status == "active" for i in ids)
    assert mem.spaces.browse(space, limit=5) == []


def test_revision_conflict_keeps_the_document_active(mem: Env) -> None:
    first, *_ = _docs(mem)
    space = _space(mem)

    def worker(messages: list) -> AIMessage:
        # The document is edited while the worker writes its summary.
        mem.documents.update(first, description="edited meanwhile")
        return tool_call(
            "mnemon_cold_reference", {"summary": "Release process.", "memory_body_id": space}
        )

    out = build_document_archive_graph(
        mem.documents, mem.spaces, ScriptedChatModel(script=worker)
    ).invoke({"mutation": NEW})
    assert "document changed while archival was running" in out["error"]
    record = mem.documents.get(first)
    assert record.status == "active"
    assert record.description == "edited meanwhile"
    assert len(mem.spaces.browse(space, limit=5)) == 1  # a safe duplicate reference remains


def test_manual_archive_and_fitting_mutation(mem: Env) -> None:
    ids = _docs(mem)
    _space(mem)
    out = build_document_archive_graph(mem.documents, mem.spaces).invoke({"document_id": ids[1]})
    assert "error" not in out, out.get("error")
    assert [r.document.id for r in out["archived"]] == [ids[1]]
    assert mem.documents.get(ids[1]).status == "archived"
    small = DocumentMutation(action="create", title="Tiny", content="fits")
    out = build_document_archive_graph(mem.documents, mem.spaces).invoke({"mutation": small})
    assert out["receipt"].document.title == "Tiny"
    assert "archived" not in out


def test_gives_up_after_max_rounds(mem: Env) -> None:
    _docs(mem)
    huge = DocumentMutation(action="create", title="Huge", content="x " * 2600)
    out = build_document_archive_graph(mem.documents, mem.spaces, max_rounds=1).invoke(
        {"mutation": huge}
    )
    assert "still does not fit after archiving 1" in out["error"]
