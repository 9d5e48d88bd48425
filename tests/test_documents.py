"""Documents (tier 2): storage format, mutations, limits, archiving, repair, validation."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import pytest
from documents_support import Backend, Clock
from documents_support import backend as backend  # the fixture, on every backend

from langgraph_mnemon import Mnemon
from langgraph_mnemon.contracts import Receipt
from langgraph_mnemon.errors import (
    AmbiguousMatchError,
    CapacityError,
    ConflictError,
    InvalidInputError,
    MnemonError,
    NotFoundError,
    ReadOnlyError,
    StorageError,
)
from langgraph_mnemon.memory_layers.documents import (
    ArchivePlan,
    CapacityPlan,
    DocumentMutation,
    DocumentReceipt,
    DocumentRecord,
    Documents,
    render_document,
    slugify,
)

# --------------------------------------------------------------------------------------------
# helpers


def open_docs(tmp_path: Path, **kwargs: object) -> Documents:
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    kwargs.setdefault("clock", Clock())
    return Documents(workspace / ".mnemon", workspace=workspace, **kwargs)  # type: ignore[arg-type]


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (to prove nothing changed)."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def doc_files(docs: Documents) -> dict[str, list[str]]:
    return {
        status: sorted(p.name for p in docs.folder(status).glob("*.md"))  # type: ignore[arg-type]
        for status in ("active", "archived")
    }


# --------------------------------------------------------------------------------------------
# storage format


def test_create_writes_index_and_markdown_in_the_reference_format(tmp_path: Path) -> None:
    docs = open_docs(tmp_path)
    receipt = docs.create(
        'ADR 7: "Use SQLite"',
        "\n\n  We chose SQLite.\n\nIt is embedded.  \n\n",
        description="Storage decision\nfor the prototype",
        source_paths=["docs/adr/0007.md"],
        session_ids=["thread-1"],
    )
    doc = receipt.document
    assert isinstance(receipt, DocumentReceipt)
    assert isinstance(receipt, Receipt)
    assert receipt.status == "committed"
    assert receipt.changed is True
    assert receipt.message == "Document created."
    assert doc.revision == 1
    assert doc.status == "active"
    assert doc.filename == f"adr-7-use-sqlite-{doc.id[:8]}.md"
    assert doc.relative_path == f"documents/active/{doc.filename}"

    path = docs.directory / "active" / doc.filename
    text = path.read_text()
    expected = (
        "---\n"
        f'id: "{doc.id}"\n'
        'title: "ADR 7: \\"Use SQLite\\""\n'
        'description: "Storage decision\\nfor the prototype"\n'
        'status: "active"\n'
        f'created_at: "{doc.created_at}"\n'
        f'updated_at: "{doc.updated_at}"\n'
        f'content_hash: "{doc.content_hash}"\n'
        "source_paths:\n"
        '  - "docs/adr/0007.md"\n'
        "session_ids:\n"
        '  - "thread-1"\n'
        "memory_body_ids: []\n"
        "---\n"
        "\n"
        "We chose SQLite.\n\nIt is embedded.\n"
    )
    assert text == expected
    body = "We chose SQLite.\n\nIt is embedded."
    assert doc.content_hash == hashlib.sha256(body.encode()).hexdigest()
    assert doc.size_bytes == len(expected.encode())
    assert docs.read(doc.id) == body

    index = json.loads((docs.directory / "index.json").read_text())
    assert index["version"] == 1
    [stored] = index["documents"]
    assert stored["id"] == doc.id
    assert stored["revision"] == 1
    assert stored["size_bytes"] == doc.size_bytes
    assert stored["source_paths"] == ["docs/adr/0007.md"]
    assert stored["session_ids"] == ["thread-1"]
    assert stored["memory_body_ids"] == []
    assert "archived_at" not in stored
    assert set(stored) >= {
        "id",
        "title",
        "description",
        "status",
        "filename",
        "relative_path",
        "source_paths",
        "session_ids",
        "created_at",
        "updated_at",
        "last_accessed_at",
        "revision",
        "content_hash",
        "size_bytes",
        "memory_body_ids",
    }
    assert receipt.usage.used == doc.size_bytes
    assert receipt.revision == docs.revision


def test_slug_rules() -> None:
    assert slugify("Hello, World!  Ünïcödé") == "hello-world-unicode"
    assert slugify("数据库迁移") == "document"
    assert slugify("---") == "document"
    long = slugify("word " * 40)
    assert len(long) <= 48
    assert not long.endswith("-")
    assert slugify("ＡＢＣ full width") == "abc-full-width"


def test_frontmatter_quotes_unsafe_characters(tmp_path: Path) -> None:
    docs = open_docs(tmp_path)
    doc = docs.create("Title", "body", description="a\u2028b\u2029c\ufeffd").document
    text = (docs.directory / "active" / doc.filename).read_text()
    header = text.split("---\n\n")[0]
    assert "\u2028" not in header
    assert "\\u2028" in header
    assert "\\u2029" in header
    assert "\\ufeff" in header
    assert docs.get(doc.id).description == "a\u2028b\u2029c\ufeffd"
    with pytest.raises(InvalidInputError, match="control characters"):
        docs.create("Title", "body", description="a\u0085b")


def test_multibyte_size_accounting(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("数据库", "数据库迁移计划 🚀").document
    on_disk = backend.file_text(docs, doc).encode()
    assert doc.size_bytes == len(on_disk)
    assert docs.usage().used == len(on_disk)
    assert len("数据库迁移计划 🚀".encode()) == 26  # 7 × 3 + space + 4-byte emoji


# --------------------------------------------------------------------------------------------
# get / read / list / update


def test_get_read_list_and_find_id(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    a = docs.create("Alpha", "first").document
    b = docs.create("Beta", "second").document
    assert docs.get(a.id) == a
    assert docs.get(a.id.upper()) == a
    assert docs.read(b.id) == "second"
    assert [r.id for r in docs.list()] == [b.id, a.id]
    assert docs.list("archived") == []
    assert docs.find_id(a.id[:8]) == a.id
    with pytest.raises(NotFoundError):
        docs.get("00000000-0000-4000-8000-000000000000")
    with pytest.raises(NotFoundError):
        docs.find_id("ffffffff")
    with pytest.raises(InvalidInputError):
        docs.get("not-a-uuid")
    with pytest.raises(InvalidInputError):
        docs.list("deleted")  # type: ignore[arg-type]


def test_find_id_ambiguous_prefix(tmp_path: Path) -> None:
    docs = open_docs(tmp_path)
    # Hand-place two files whose ids share a prefix and let the index be rebuilt from them.
    for doc_id in ("abcd1111-0000-4000-8000-000000000000", "abcd2222-0000-4000-8000-000000000000"):
        record = DocumentRecord(
            id=doc_id,
            title="T",
            status="active",
            filename=f"t-{doc_id[:8]}.md",
            relative_path=f"documents/active/t-{doc_id[:8]}.md",
            created_at="2026-01-01T00:00:00.000Z",
            updated_at="2026-01-01T00:00:00.000Z",
            last_accessed_at="2026-01-01T00:00:00.000Z",
            revision=1,
            content_hash=hashlib.sha256(b"x").hexdigest(),
            size_bytes=0,
        )
        (docs.folder("active") / record.filename).write_text(render_document(record, "x"))
    (docs.directory / "index.json").unlink()
    again = open_docs(tmp_path)
    assert len(again.list()) == 2
    with pytest.raises(AmbiguousMatchError, match="2 document ids"):
        again.find_id("abcd")
    assert again.find_id("abcd2") == "abcd2222-0000-4000-8000-000000000000"
    with pytest.raises(InvalidInputError):
        again.find_id("ab")


def test_update_bumps_revision_and_renames_on_title_change(
    tmp_path: Path, backend: Backend
) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("Runbook", "step one", session_ids=["s1"]).document
    old_file = doc.filename
    r = docs.update(doc.id, content="step one\nstep two", expected_revision=1)
    assert r.document.revision == 2
    assert r.changed
    assert r.document.filename == old_file
    assert docs.read(doc.id) == "step one\nstep two"
    assert r.document.created_at == doc.created_at
    assert r.document.updated_at > doc.updated_at

    r = docs.update(doc.id, title="Deploy runbook", session_ids=["s2", "s1"])
    assert r.document.revision == 3
    assert r.document.filename == f"deploy-runbook-{doc.id[:8]}.md"
    assert r.document.session_ids == ("s2", "s1")
    assert backend.doc_files(docs)["active"] == [r.document.filename]
    assert docs.read(doc.id) == "step one\nstep two"

    # A no-op update is a committed no-change receipt with the same revision.
    same = docs.update(doc.id, title="Deploy runbook")
    assert same.changed is False
    assert same.document.revision == 3

    # description "" clears; source_paths [] clears
    docs.update(doc.id, description="desc", source_paths=["a.md"])
    cleared = docs.update(doc.id, description="", source_paths=[]).document
    assert cleared.description == ""
    assert cleared.source_paths == ()


def test_session_ids_union_keeps_the_20_most_recent(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("S", "x", session_ids=[f"s{i}" for i in range(15)]).document
    updated = docs.update(doc.id, session_ids=[f"t{i}" for i in range(10)]).document
    assert len(updated.session_ids) == 20
    assert updated.session_ids[-10:] == tuple(f"t{i}" for i in range(10))
    assert updated.session_ids[0] == "s5"
    with pytest.raises(InvalidInputError, match="at most 20"):
        docs.update(doc.id, session_ids=[f"u{i}" for i in range(21)])


def test_update_conflict_and_missing(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("A", "x").document
    docs.update(doc.id, content="y")
    before = backend.tree(docs)
    with pytest.raises(ConflictError, match="revision 2, not 1"):
        docs.update(doc.id, content="z", expected_revision=1)
    assert backend.tree(docs) == before
    with pytest.raises(NotFoundError):
        docs.update("00000000-0000-4000-8000-000000000000", content="z")


# --------------------------------------------------------------------------------------------
# limits


def test_body_limit_counts_utf8_bytes_after_stripping_nul(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path, body_limit_bytes=30)
    ok = docs.create("Fits", "数" * 10 + "\x00" * 50).document  # 30 bytes once NULs go
    assert docs.read(ok.id) == "数" * 10
    before = backend.tree(docs)
    with pytest.raises(InvalidInputError, match="31 bytes") as info:
        docs.create("Too big", "数" * 10 + "a")
    assert info.value.code == "document-too-large"
    with pytest.raises(InvalidInputError, match="33 bytes"):
        docs.update(ok.id, content="数" * 11)
    with pytest.raises(InvalidInputError, match="content is required"):
        docs.create("Only NUL", "\x00\x00 \n")
    assert backend.tree(docs) == before


def test_default_body_limit_is_2_mib(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    before = backend.tree(docs)
    with pytest.raises(InvalidInputError, match=f"limit {2 * 1024 * 1024} bytes"):
        docs.create("Huge", "é" * (1024 * 1024 + 1))  # 2 bytes each
    assert backend.tree(docs) == before


def test_active_capacity_rejects_with_plan_and_lru_candidates(
    tmp_path: Path, backend: Backend
) -> None:
    probe = backend.open_docs(tmp_path / "probe")
    size = probe.create("Doc 0", "数据" * 100).document.size_bytes
    docs = backend.open_docs(tmp_path, active_limit_bytes=3 * size + 10)
    ids = [docs.create(f"Doc {i}", "数据" * 100).document.id for i in range(3)]
    # Touch doc 0 so that doc 1 becomes the least recently used.
    assert [h.id for h in docs.search("doc 0", limit=1).results] == [ids[0]]
    before = backend.tree(docs)
    with pytest.raises(CapacityError) as info:
        docs.create("Doc 3", "数据" * 100)
    err = info.value
    assert str(err).startswith(
        f"Would exceed active document capacity: {4 * size} bytes (limit {3 * size + 10}). "
        "Archive the least-recently-used active document before retrying."
    )
    plan = err.plan
    assert isinstance(plan, CapacityPlan)
    assert plan.fits is False
    assert plan.used == 3 * size
    assert plan.projected == 4 * size
    assert [c.id for c in plan.candidates] == [ids[1], ids[2], ids[0]]
    assert backend.tree(docs) == before

    # capacity_plan says the same without raising and without writing.
    same = docs.capacity_plan(
        DocumentMutation(action="create", title="Doc 3", content="数据" * 100)
    )
    assert same.fits is False
    assert [c.id for c in same.candidates] == [ids[1], ids[2], ids[0]]
    # A growing update excludes itself from the candidates.
    grow = docs.capacity_plan({"action": "update", "id": ids[1], "content": "数据" * 200})
    assert grow.fits is False
    assert ids[1] not in [c.id for c in grow.candidates]
    assert grow.projected == 3 * size + 600
    with pytest.raises(CapacityError):
        docs.update(ids[1], content="数据" * 200)
    assert backend.tree(docs) == before

    # Archiving the LRU candidate makes room; the retried create then succeeds.
    lru = docs.plan_archive(mutation={"action": "create", "title": "x", "content": "y"})
    assert isinstance(lru, ArchivePlan)
    assert lru.document_id == ids[1]
    docs.archive_without_index(lru.document_id, lru.revision)
    assert docs.create("Doc 3", "数据" * 100).committed


def test_shrinking_update_is_allowed_over_a_lowered_limit(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("Big", "x" * 5000).document
    small = backend.open_docs(tmp_path, active_limit_bytes=1000)
    with pytest.raises(CapacityError):
        small.update(doc.id, content="x" * 6000)
    assert small.update(doc.id, content="x" * 4000).committed


def test_single_document_larger_than_budget_says_so(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path, active_limit_bytes=500)
    with pytest.raises(CapacityError, match="more than the whole budget"):
        docs.create("Big", "x" * 1000)


# --------------------------------------------------------------------------------------------
# archiving


def test_archive_moves_file_and_bumps_revision(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("Design", "The design.", source_paths=["src/app.py"]).document
    plan = docs.plan_archive(doc.id)
    assert plan is not None
    assert plan.revision == 1
    assert plan.content == "The design."
    assert plan.archived_relative_path == f"documents/archived/{doc.filename}"
    assert plan.archived_path == f".mnemon/documents/archived/{doc.filename}"
    ref = docs.cold_reference(plan, "  Covers the app design.  ")
    assert ref.summary == "Covers the app design."
    assert ref.sha256 == doc.content_hash
    assert ref.archived_path == plan.archived_path
    for piece in (doc.title, ref.summary, plan.archived_path, doc.content_hash, doc.id):
        assert piece in ref.text

    receipt = docs.archive(doc.id, plan.revision, ref.summary, ["space-a", "space-b"])
    archived = receipt.document
    assert receipt.indexed is True
    assert receipt.message == "Document archived."
    assert archived.status == "archived"
    assert archived.revision == 2
    assert archived.archived_at is not None
    assert archived.archive_summary == "Covers the app design."
    assert archived.memory_body_ids == ("space-a", "space-b")
    assert archived.relative_path == f"documents/archived/{doc.filename}"
    assert archived.updated_at == doc.updated_at
    assert backend.doc_files(docs) == {"active": [], "archived": [doc.filename]}
    text = backend.file_text(docs, archived)
    assert 'status: "archived"' in text
    assert 'memory_body_ids:\n  - "space-a"\n  - "space-b"\n' in text
    assert archived.size_bytes == len(text.encode())
    assert docs.read(doc.id) == "The design."
    assert receipt.usage.used == 0
    assert hashlib.sha256(docs.read(doc.id).encode()).hexdigest() == ref.sha256


def test_archived_documents_are_immutable(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("Old", "text").document
    docs.archive_without_index(doc.id, 1, "gone")
    before = backend.tree(docs)
    with pytest.raises(
        ReadOnlyError,
        match=r"^archived documents are immutable; create a new active revision instead$",
    ):
        docs.update(doc.id, content="new")
    with pytest.raises(ReadOnlyError, match=r"^only active documents can be archived$"):
        docs.archive(doc.id, 2, "again", ["s"])
    with pytest.raises(ReadOnlyError, match="only active documents can be archived"):
        docs.plan_archive(doc.id)
    with pytest.raises(ReadOnlyError):
        docs.capacity_plan({"action": "update", "id": doc.id, "content": "x"})
    assert backend.tree(docs) == before


def test_stale_revision_archive_conflict_keeps_active_copy(
    tmp_path: Path, backend: Backend
) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("Living doc", "v1").document
    plan = docs.plan_archive()
    assert plan is not None
    assert plan.document_id == doc.id
    docs.update(doc.id, content="v2")  # changes while the worker writes the reference
    before = backend.tree(docs)
    with pytest.raises(ConflictError) as info:
        docs.archive(plan.document_id, plan.revision, "summary", ["space"])
    assert str(info.value).startswith(
        "document changed while archival was running; the active copy was preserved"
    )
    assert backend.tree(docs) == before
    assert docs.get(doc.id).status == "active"
    assert docs.read(doc.id) == "v2"
    with pytest.raises(ConflictError):
        docs.archive_without_index(doc.id, 1)


def test_archive_requires_a_memory_space_or_the_explicit_no_index_path(
    tmp_path: Path, backend: Backend
) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("Doc", "x").document
    with pytest.raises(InvalidInputError, match="archive_without_index"):
        docs.archive(doc.id, 1, "s", [])
    receipt = docs.archive_without_index(doc.id, 1)
    assert receipt.indexed is False
    assert receipt.document.memory_body_ids == ()
    assert receipt.document.archive_summary == "Archived without a Memory Space index."


def test_plan_archive_picks_lru_and_excludes_the_updated_document(
    tmp_path: Path, backend: Backend
) -> None:
    docs = backend.open_docs(tmp_path)
    assert docs.plan_archive() is None
    a = docs.create("A", "a").document
    b = docs.create("B", "b").document
    assert docs.plan_archive().document_id == a.id  # type: ignore[union-attr]
    docs.search("a")  # touches A
    assert docs.plan_archive().document_id == b.id  # type: ignore[union-attr]
    plan = docs.plan_archive(mutation={"action": "update", "id": b.id, "content": "bb"})
    assert plan is not None
    assert plan.document_id == a.id
    with pytest.raises(InvalidInputError):
        docs.plan_archive(a.id, mutation={"action": "update", "id": b.id})


def test_plan_archive_truncates_body_for_the_worker(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("Long", "x" * 70_000).document
    plan = docs.plan_archive(doc.id)
    assert plan is not None
    assert len(plan.content) == 60_000
    assert plan.content_truncated is True


def test_cold_reference_validation(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("Doc", "x").document
    plan = docs.plan_archive(doc.id)
    assert plan is not None
    with pytest.raises(InvalidInputError, match="summary is required"):
        docs.cold_reference(plan, "   ")
    with pytest.raises(InvalidInputError, match="summary is too long"):
        docs.cold_reference(plan, "s" * 1001)
    with pytest.raises(InvalidInputError):
        docs.cold_reference({"document_id": doc.id}, "s")  # type: ignore[arg-type]


def test_cold_path_is_absolute_when_root_is_outside_workspace(
    tmp_path: Path, backend: Backend
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    docs = backend.documents(tmp_path / "store", workspace=workspace)
    doc = docs.create("Doc", "x").document
    plan = docs.plan_archive(doc.id)
    assert plan is not None
    assert plan.archived_path == str(tmp_path / "store" / "documents" / "archived" / doc.filename)


# --------------------------------------------------------------------------------------------
# source paths


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../x", "inside the workspace"),
        ("docs/../../x", "inside the workspace"),
        ("/etc/passwd", "not absolute"),
        ("C:/x", "not absolute"),
        ("docs\\a.md", "backslashes"),
        ("", "must not be empty"),
        ("./.", "must name something"),
        ("~/x", "'~' is not expanded"),
        (".mnemon/documents/index.json", "storage root"),
        ("a\x00b", "control characters"),
    ],
)
def test_bad_source_paths_are_rejected_with_nothing_written(
    tmp_path: Path, path: str, message: str, backend: Backend
) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("Doc", "x").document
    before = backend.tree(docs)
    with pytest.raises(InvalidInputError, match=message):
        docs.create("New", "y", source_paths=[path])
    with pytest.raises(InvalidInputError, match=message):
        docs.update(doc.id, source_paths=["ok.md", path])
    assert backend.tree(docs) == before


def test_source_path_through_symlink_outside_workspace_is_rejected(
    tmp_path: Path, backend: Backend
) -> None:
    docs = backend.open_docs(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (docs.workspace / "link").symlink_to(outside)
    with pytest.raises(InvalidInputError, match="symbolic link"):
        docs.create("Doc", "x", source_paths=["link/secret.txt"])


def test_source_paths_are_normalised_never_touched_and_need_not_exist(
    tmp_path: Path, backend: Backend
) -> None:
    docs = backend.open_docs(tmp_path)
    real = docs.workspace / "src" / "main.py"
    real.parent.mkdir()
    real.write_text("print('hi')\n")
    stat = real.stat()
    doc = docs.create(
        "Doc", "x", source_paths=["./src//main.py", "src/main.py", "docs/missing.md/"]
    ).document
    assert doc.source_paths == ("src/main.py", "docs/missing.md")
    assert real.read_text() == "print('hi')\n"
    assert real.stat().st_mtime_ns == stat.st_mtime_ns
    with pytest.raises(InvalidInputError, match="at most 50"):
        docs.create("Doc", "x", source_paths=[f"f{i}.md" for i in range(51)])
    with pytest.raises(InvalidInputError, match="list of strings"):
        docs.create("Doc", "x", source_paths="src/main.py")  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# validation of every public method


def test_invalid_inputs_raise_typed_errors_and_write_nothing(
    tmp_path: Path, backend: Backend
) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("Doc", "x").document
    before = backend.tree(docs)
    bad_calls = [
        lambda: docs.create(None, "x"),  # type: ignore[arg-type]
        lambda: docs.create("", "x"),
        lambda: docs.create("t" * 161, "x"),
        lambda: docs.create("a\x07b", "x"),
        lambda: docs.create("T", 42),  # type: ignore[arg-type]
        lambda: docs.create("T", b"bytes"),  # type: ignore[arg-type]
        lambda: docs.create("T", "\ud800 lone surrogate"),
        lambda: docs.create("T", "x", description="d" * 601),
        lambda: docs.create("T", "x", description=5),  # type: ignore[arg-type]
        lambda: docs.create("T", "x", session_ids=[f"s{i}" for i in range(21)]),
        lambda: docs.create("T", "x", session_ids=[""]),
        lambda: docs.create("T", "x", session_ids=[3]),  # type: ignore[list-item]
        lambda: docs.update("bad id", content="x"),
        lambda: docs.update(doc.id, expected_revision=0),
        lambda: docs.update(doc.id, expected_revision=True),  # type: ignore[arg-type]
        lambda: docs.update(doc.id, expected_revision="1"),  # type: ignore[arg-type]
        lambda: docs.archive(doc.id, 1, "s", [f"m{i}" for i in range(21)]),
        lambda: docs.archive(doc.id, 1, "s" * 1001, ["m"]),
        lambda: docs.archive(doc.id, "1", "s", ["m"]),  # type: ignore[arg-type]
        lambda: docs.archive(doc.id, 1, "s", "m"),  # type: ignore[arg-type]
        lambda: docs.archive(123, 1, "s", ["m"]),  # type: ignore[arg-type]
        lambda: docs.capacity_plan("create"),  # type: ignore[arg-type]
        lambda: docs.capacity_plan({"action": "delete"}),
        lambda: docs.capacity_plan({"action": "create", "title": "t", "content": "c", "x": 1}),
        lambda: docs.capacity_plan({"action": "create", "id": doc.id, "title": "t"}),
        lambda: docs.search(None),  # type: ignore[arg-type]
        lambda: docs.search("q" * 2001),
        lambda: docs.search("q", limit=0),
        lambda: docs.search("q", limit=51),
        lambda: docs.search("q", limit=True),  # type: ignore[arg-type]
        lambda: docs.search("q", include_archived="yes"),  # type: ignore[arg-type]
        lambda: docs.read(None),  # type: ignore[arg-type]
    ]
    for call in bad_calls:
        with pytest.raises(InvalidInputError):
            call()
    assert backend.tree(docs) == before
    assert issubclass(InvalidInputError, MnemonError)


def test_constructor_validation(tmp_path: Path) -> None:
    for kwargs in (
        {"body_limit_bytes": 0},
        {"body_limit_bytes": True},
        {"active_limit_bytes": "10"},
        {"lock_timeout": 0},
    ):
        with pytest.raises(InvalidInputError):
            Documents(tmp_path, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        Documents("")


# --------------------------------------------------------------------------------------------
# corrupt data and repair


def test_corrupt_index_raises_storage_error_naming_the_file_and_is_untouched(
    tmp_path: Path,
) -> None:
    docs = open_docs(tmp_path)
    docs.create("Doc", "x")
    index = docs.directory / "index.json"
    for garbage in (
        b"{not json",
        b'{"version": 2, "documents": []}',
        b'{"version": 1, "documents": [{"id": "x"}]}',
        b"\xff\xfe",
    ):
        index.write_bytes(garbage)
        with pytest.raises(StorageError) as info:
            open_docs(tmp_path)
        assert str(index) in str(info.value)
        assert "will not overwrite" in str(info.value)
        with pytest.raises(StorageError):
            docs.create("Another", "y")
        assert index.read_bytes() == garbage


def test_duplicate_ids_in_index_are_a_storage_error(tmp_path: Path) -> None:
    docs = open_docs(tmp_path)
    docs.create("Doc", "x")
    index = docs.directory / "index.json"
    data = json.loads(index.read_text())
    data["documents"].append(data["documents"][0])
    raw = json.dumps(data).encode()
    index.write_bytes(raw)
    with pytest.raises(StorageError, match="twice"):
        open_docs(tmp_path)
    assert index.read_bytes() == raw


def test_repair_rerenders_stale_frontmatter_and_removes_leftovers(tmp_path: Path) -> None:
    docs = open_docs(tmp_path)
    doc = docs.create("Doc", "the body").document
    path = docs.directory / "active" / doc.filename
    good = path.read_bytes()
    path.write_bytes(good.replace(b'title: "Doc"', b'title: "Hand edited"'))
    orphan = docs.directory / "active" / "crashed-create-12345678.md"
    orphan.write_text('---\nid: "12345678-0000-4000-8000-000000000000"\ntitle: "x"\n---\n\nx\n')
    foreign = docs.directory / "active" / "notes.md"
    foreign.write_text("my own notes\n")
    temp = docs.directory / ".index.json.abc123.tmp"
    temp.write_text("partial")
    report = open_docs(tmp_path).repair()
    assert report == type(report)()  # the constructor already repaired everything
    assert path.read_bytes() == good
    assert not orphan.exists()
    assert not temp.exists()
    assert foreign.read_text() == "my own notes\n"


def test_repair_report_and_unrecoverable_body(tmp_path: Path) -> None:
    docs = open_docs(tmp_path)
    keep = docs.create("Keep", "keep me").document
    lost = docs.create("Lost", "gone").document
    lost_path = docs.directory / "active" / lost.filename
    lost_path.write_text("---\nhand-written garbage\n")
    report = docs.repair()
    assert report.unrecoverable == (lost.id,)
    assert lost_path.read_text() == "---\nhand-written garbage\n"  # never overwritten
    with pytest.raises(StorageError, match=lost.filename):
        docs.read(lost.id)
    # Other documents keep working, and search still answers on title.
    assert docs.read(keep.id) == "keep me"
    result = docs.search("lost")
    assert [h.id for h in result.results] == [lost.id]
    assert "could not be read" in result.hint
    with pytest.raises(StorageError):
        docs.update(lost.id, title="x")


def test_repair_restores_body_from_another_copy(tmp_path: Path) -> None:
    docs = open_docs(tmp_path)
    doc = docs.create("Doc", "precious").document
    path = docs.directory / "active" / doc.filename
    good = path.read_bytes()
    # Simulate a crash between the in-place rename and the index rename: the recovery link
    # holds the committed copy, the file itself holds an uncommitted body.
    recovery = docs.directory / ".recovery"
    recovery.mkdir()
    os.link(path, recovery / f"active-{doc.filename}")
    path.unlink()
    path.write_bytes(good.replace(b"precious", b"uncommitted"))
    report = open_docs(tmp_path).repair()
    assert report.changed is False  # repaired while opening
    assert path.read_bytes() == good
    assert list(recovery.iterdir()) == []


def test_missing_index_is_rebuilt_from_files(tmp_path: Path) -> None:
    docs = open_docs(tmp_path)
    a = docs.create("Alpha", "first", source_paths=["a.md"]).document
    b = docs.create("Beta", "second").document
    docs.archive_without_index(b.id, 1)
    (docs.directory / "index.json").unlink()
    again = open_docs(tmp_path)
    got = {r.id: r for r in again.list("all")}
    assert set(got) == {a.id, b.id}
    assert got[a.id].status == "active"
    assert got[a.id].source_paths == ("a.md",)
    assert got[b.id].status == "archived"
    assert again.read(a.id) == "first"
    assert again.read(b.id) == "second"


def test_reading_verifies_the_hash(tmp_path: Path) -> None:
    docs = open_docs(tmp_path)
    doc = docs.create("Doc", "abcdef").document
    path = docs.directory / "active" / doc.filename
    # Same size, different bytes: not caught by the size check on open, caught by read().
    path.write_bytes(path.read_bytes().replace(b"abcdef", b"abcxyz"))
    with pytest.raises(StorageError, match=r"does not match index\.json"):
        open_docs(tmp_path).read(doc.id)


# --------------------------------------------------------------------------------------------
# concurrency inside one process


def test_threads_creating_at_once_all_commit(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(8):
                docs.create(f"T{n}-{i}", f"body {n} {i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    titles = sorted(r.title for r in backend.open_docs(tmp_path).list())
    assert titles == sorted(f"T{n}-{i}" for n in range(4) for i in range(8))
    assert len(backend.doc_files(docs)["active"]) == 32


def test_two_instances_see_each_others_commits(tmp_path: Path, backend: Backend) -> None:
    one = backend.open_docs(tmp_path)
    two = backend.open_docs(tmp_path)
    doc = one.create("Shared", "x").document
    assert two.get(doc.id).title == "Shared"
    two.update(doc.id, content="y")
    assert one.read(doc.id) == "y"
    with pytest.raises(ConflictError):
        one.update(doc.id, content="z", expected_revision=1)


# --------------------------------------------------------------------------------------------
# host wiring


def test_mnemon_exposes_documents_and_status(tmp_path: Path) -> None:
    mem = Mnemon.open(
        tmp_path / "root",
        workspace=tmp_path,
        documents={"active_limit_bytes": 4096, "body_limit_bytes": 1000},
    )
    assert isinstance(mem.documents, Documents)
    assert mem.documents.active_limit_bytes == 4096
    assert mem.documents.body_limit_bytes == 1000
    doc = mem.documents.create("Doc", "x").document
    mem.documents.create("Other", "y")
    mem.documents.archive_without_index(doc.id, 1)
    status = mem.status().documents
    assert status.active == 1
    assert status.archived == 1
    assert status.active_bytes.limit == 4096
    assert status.active_bytes.used == mem.documents.usage().used
    assert status.revision == mem.documents.revision


def test_item17_6_find_id_says_exactly_what_is_wrong(tmp_path: Path, backend: Backend) -> None:
    """The layer's own messages (the control plane and the CLI show them as they are)."""
    from langgraph_mnemon.errors import InvalidInputError, NotFoundError

    docs = backend.documents(tmp_path)
    with pytest.raises(NotFoundError, match="'nope' is not a document id"):
        docs.find_id("nope")
    with pytest.raises(InvalidInputError, match="too short to pick a document"):
        docs.find_id("3f2")
    with pytest.raises(NotFoundError, match="no document id starts with '3f2a'"):
        docs.find_id("3f2a")


def test_item17_6_one_importance_mapping() -> None:
    from langgraph_mnemon.contracts import IMPORTANCE_LEVELS, importance_level, importance_word
    from langgraph_mnemon.errors import InvalidInputError

    assert IMPORTANCE_LEVELS == {"critical": 5, "normal": 3, "low": 1}
    words = ["low", "low", "normal", "critical", "critical"]
    assert [importance_word(n) for n in range(1, 6)] == words
    assert importance_level(" Critical ") == 5
    with pytest.raises(InvalidInputError, match="not an importance"):
        importance_level("urgent")
