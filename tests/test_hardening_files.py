"""Issue 12 hardening of the file-backed layers: Runtime Memory and Documents.

Real files only: a tmpfs of the test's own for the full disk and the read-only remount
(``small_disk``), real symbolic links, real roots. Items of the issue's list:
item 4 (full disk / read-only file system), item 5 (typed errors), item 6 (symbolic links),
item 10 (``write_enabled=false`` creates nothing; file side).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import InvalidInputError, MnemonError, StorageError
from langgraph_mnemon.memory_layers.documents import DocumentMutation, Documents
from langgraph_mnemon.memory_layers.runtime import (
    CompactedEntry,
    RuntimeMemory,
    RuntimeMutation,
)

# --- helpers ---------------------------------------------------------------------------------


def tree(root: Path) -> dict[str, Any]:
    """Every file under ``root`` with its bytes, every folder, a link as ``("link", target)``.
    No link is followed, so a folder a link points to is not part of the tree."""
    out: dict[str, Any] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            path = Path(folder) / name
            key = str(path.relative_to(root))
            if path.is_symlink():
                out[key] = ("link", os.readlink(path))
            elif path.is_dir():
                out[key] = "folder"
            else:
                out[key] = path.read_bytes()
    return out


def temp_files(root: Path) -> list[str]:
    return [k for k in tree(root) if Path(k).name.endswith(".tmp")]


def open_host(root: Path, **settings: Any) -> Mnemon:
    return Mnemon.open(root, embedding={"enabled": False}, chroma={"enabled": False}, **settings)


def populate(root: Path) -> tuple[Mnemon, list[str]]:
    """A root with Runtime entries in both targets and three Documents; returns their ids."""
    mem = open_host(root)
    mem.runtime.add("memory", "Deploys go through CI.")
    mem.runtime.add("memory", "Tests run with pytest -q.", importance="low")
    mem.runtime.add("user", "Works from Lisbon.")
    ids = [
        mem.documents.create("Release runbook", "Tag the release, then publish.").document.id,
        mem.documents.create(
            "Storage design", "We keep files and one SQLite database."
        ).document.id,
        mem.documents.create("Oncall notes", "Page the secondary after ten minutes.").document.id,
    ]
    assert mem.documents.search("release").results  # access.jsonl exists from here on
    return mem, ids


def expect_storage_error(call: Callable[[], object], code: str) -> StorageError:
    with pytest.raises(StorageError) as info:
        call()
    assert info.value.code == code, (info.value.code, info.value.message)
    return info.value


def writes(mem: Mnemon, ids: list[str]) -> list[tuple[str, Callable[[], object]]]:
    """One of every Runtime and Documents mutation, each of which must write a new file."""
    rt, docs = mem.runtime, mem.documents
    return [
        ("runtime.add memory", lambda: rt.add("memory", "Releases are tagged on main.")),
        ("runtime.add user", lambda: rt.add("user", "Prefers short answers.")),
        ("runtime.replace", lambda: rt.replace("memory", "Deploys", "Deploys go through CD.")),
        ("runtime.remove", lambda: rt.remove("user", "Lisbon")),
        (
            # Left-out entries go to runtime/archived/memory.jsonl first: the fallback append.
            "runtime.compact_target",
            lambda: rt.compact_target(
                rt.revision, "memory", [CompactedEntry(content="CI deploys; pytest -q tests.")]
            ),
        ),
        ("documents.create", lambda: docs.create("New doc", "A body.")),
        ("documents.update in place", lambda: docs.update(ids[0], content="Tag, then ship.")),
        ("documents.update renaming", lambda: docs.update(ids[1], title="Storage layout")),
        (
            "documents.archive",
            lambda: docs.archive(ids[1], docs.get(ids[1]).revision, "Notes.", ["sp-1"]),
        ),
        ("documents.archive_without_index", lambda: docs.archive_without_index(ids[2], 1)),
    ]


def assert_reads_answer(mem: Mnemon, ids: list[str]) -> None:
    rt, docs = mem.runtime, mem.documents
    assert [e.content for e in rt.entries("user")] == ["Works from Lisbon."]
    assert "Deploys go through CI." in rt.snapshot(branch="main").text
    assert rt.usage("memory").used > 0
    assert len(docs.list("active")) == 3
    assert docs.read(ids[0]) == "Tag the release, then publish."
    found = docs.search("release publish")
    assert [hit.id for hit in found.results] == [ids[0]]


# --- item 4: full disk, read-only file system --------------------------------------------------


def test_item04_full_disk_writes_raise_storage_full_and_change_nothing(small_disk: Any) -> None:
    root = small_disk.path / "root"
    mem, ids = populate(root)
    small_disk.fill()
    before = tree(root)
    for name, call in writes(mem, ids):
        error = expect_storage_error(call, "storage-full")
        assert str(root) in error.message, name  # the message names the file
        assert tree(root) == before, f"{name} changed a file on a full disk"
        assert temp_files(root) == [], name
    # Reads keep working; a search still answers (recording its access time is best effort).
    assert_reads_answer(mem, ids)
    small_disk.free()
    for name, call in writes(mem, ids):
        receipt = call()
        assert receipt.status == "committed", name  # type: ignore[attr-defined]
    assert temp_files(root) == []


def test_item04_read_only_file_system_refuses_writes_and_reads_work(small_disk: Any) -> None:
    root = small_disk.path / "root"
    mem, ids = populate(root)
    small_disk.read_only(True)
    before = tree(root)
    for name, call in writes(mem, ids):
        expect_storage_error(call, "storage-read-only")
        assert tree(root) == before, name
    assert_reads_answer(mem, ids)
    hint = mem.documents.search("oncall").hint
    assert "Access times could not be recorded." in hint
    # A fresh host opens the read-only root and answers reads.
    fresh = open_host(root)
    assert_reads_answer(fresh, ids)
    expect_storage_error(lambda: fresh.runtime.add("user", "x y z"), "storage-read-only")
    assert tree(root) == before


def test_item04_repair_that_the_disk_refuses_is_logged_and_reads_answer(
    small_disk: Any, caplog: pytest.LogCaptureFixture
) -> None:
    root = small_disk.path / "root"
    _, ids = populate(root)
    (root / "runtime" / "MEMORY.md").unlink()  # a stale projection: repair wants to write
    (root / "documents" / "active" / ".left-by-a-dead-writer.md.0a1b.tmp").write_bytes(b"x")
    small_disk.read_only(True)
    before = tree(root)
    with caplog.at_level(logging.WARNING):
        mem = open_host(root)
    assert "storage-read-only" in caplog.text
    assert "Deploys go through CI." in mem.runtime.snapshot(branch="main").text
    assert mem.documents.read(ids[2]) == "Page the secondary after ten minutes."
    assert tree(root) == before


def test_item04_full_disk_open_with_needed_repair_still_reads(
    small_disk: Any, caplog: pytest.LogCaptureFixture
) -> None:
    root = small_disk.path / "root"
    populate(root)
    (root / "runtime" / "USER.md").unlink()
    small_disk.fill()
    before = tree(root)
    with caplog.at_level(logging.WARNING):
        mem = open_host(root)
    assert "storage-full" in caplog.text
    assert [e.content for e in mem.runtime.entries("user")] == ["Works from Lisbon."]
    assert tree(root) == before


def test_item04_runtime_rename_failure_mid_commit_puts_every_file_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = RuntimeMemory(tmp_path)
    rt.add("memory", "Deploys go through CI.")
    before = tree(tmp_path)
    real = os.replace

    def replace(src: Any, dst: Any) -> None:
        if Path(dst).name == "memories.json":  # after MEMORY.md was already renamed
            raise OSError(5, "Input/output error")
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    expect_storage_error(lambda: rt.add("memory", "Another rule."), "storage-error")
    monkeypatch.undo()
    assert tree(tmp_path) == before
    assert [e.content for e in rt.entries("memory")] == ["Deploys go through CI."]


def test_item04_documents_index_rename_failure_puts_every_file_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = Documents(tmp_path)
    doc = docs.create("Runbook", "Step one.").document
    before = tree(tmp_path)
    real = os.replace

    def replace(src: Any, dst: Any) -> None:
        if Path(dst).name == "index.json":  # after the in-place file was replaced
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    expect_storage_error(lambda: docs.update(doc.id, content="Step two."), "storage-full")
    monkeypatch.undo()
    after = tree(tmp_path)
    assert after.pop("documents/.recovery") == "folder"  # an empty folder, nothing left in it
    assert after == before
    assert docs.read(doc.id) == "Step one."


# --- item 5: typed errors from every public call ------------------------------------------


def expect_invalid(root: Path, calls: list[tuple[str, Callable[[], object]]]) -> None:
    before = tree(root)
    for name, call in calls:
        try:
            call()
        except InvalidInputError:
            pass
        except MnemonError as exc:  # typed, but this table expects invalid input
            raise AssertionError(f"{name}: {type(exc).__name__} {exc}") from exc
        except Exception as exc:
            raise AssertionError(f"{name}: untyped {type(exc).__name__}: {exc!r}"[:300]) from exc
        else:
            raise AssertionError(f"{name} accepted a hostile value")
        assert tree(root) == before, f"{name} changed a file"


def test_item05_runtime_lone_surrogates_are_invalid_input(tmp_path: Path) -> None:
    rt = RuntimeMemory(tmp_path)
    rt.add("memory", "Deploys go through CI.")
    expect_invalid(
        tmp_path,
        [
            ("add content", lambda: rt.add("user", "half an emoji \ud83d")),
            ("replace old_text", lambda: rt.replace("memory", "Deploys \ud83d", "New text.")),
            ("replace content", lambda: rt.replace("memory", "Deploys", "bad \udc00 text")),
            ("remove old_text", lambda: rt.remove("memory", "\ud800")),
            (
                "apply",
                lambda: rt.apply(RuntimeMutation(action="add", target="user", content="\ud800")),
            ),
        ],
    )


def test_item05_runtime_wrong_types_are_invalid_input(tmp_path: Path) -> None:
    rt = RuntimeMemory(tmp_path)
    rt.add("memory", "Deploys go through CI.")
    revision = rt.revision
    bad: Any = RuntimeMutation.model_construct(action="drop", target="user", content="x")
    empty: Any = RuntimeMutation.model_construct()
    expect_invalid(
        tmp_path,
        [
            ("importance list", lambda: rt.add("user", "Likes tea.", importance=["critical"])),  # type: ignore[arg-type]
            ("importance dict", lambda: rt.add("user", "Likes tea.", importance={})),  # type: ignore[arg-type]
            ("importance int", lambda: rt.add("user", "Likes tea.", importance=1)),  # type: ignore[arg-type]
            ("replace importance", lambda: rt.replace("memory", "CI", "CD.", importance=[1])),  # type: ignore[arg-type]
            ("target list", lambda: rt.add(["user"], "Likes tea.")),  # type: ignore[arg-type]
            ("target dict", lambda: rt.entries({})),  # type: ignore[arg-type]
            ("content bytes", lambda: rt.add("user", b"Likes tea.")),  # type: ignore[arg-type]
            ("content None", lambda: rt.add("user", None)),  # type: ignore[arg-type]
            ("content dict", lambda: rt.add("user", {"text": "tea"})),  # type: ignore[arg-type]
            ("content huge", lambda: rt.add("memory", "a " * 2_000_000)),
            ("old_text int", lambda: rt.remove("memory", 5)),  # type: ignore[arg-type]
            ("branches int", lambda: rt.add("memory", "Rule.", branches=5)),  # type: ignore[arg-type]
            ("branches bytes", lambda: rt.add("memory", "Rule.", branches=b"main")),  # type: ignore[arg-type]
            ("snapshot branch int", lambda: rt.snapshot(branch=5)),  # type: ignore[arg-type]
            ("snapshot branch bytes", lambda: rt.snapshot(branch=b"main")),  # type: ignore[arg-type]
            ("snapshot branch surrogate", lambda: rt.snapshot(branch="ma\ud800in")),
            ("snapshot now str", lambda: rt.snapshot(now="yesterday")),  # type: ignore[arg-type]
            ("usage bool", lambda: rt.usage(True)),  # type: ignore[arg-type]
            ("archived list", lambda: rt.archived(["memory"])),  # type: ignore[arg-type]
            ("apply str", lambda: rt.apply("add")),  # type: ignore[arg-type]
            ("apply bad action", lambda: rt.apply(bad)),
            ("apply empty model", lambda: rt.apply(empty)),
            ("plan None", lambda: rt.plan_maintenance(None)),  # type: ignore[arg-type]
            ("compact revision int", lambda: rt.compact_target(5, "memory", [])),  # type: ignore[arg-type]
            ("compact str", lambda: rt.compact_target(revision, "memory", "abc")),  # type: ignore[arg-type]
            ("compact dict item", lambda: rt.compact_target(revision, "memory", [{"content": 5}])),
            ("compact NUL", lambda: rt.compact_target(revision, "memory", [{"content": "a\x00"}])),
            (
                "compact max_bytes",
                lambda: rt.compact_target(revision, "memory", [], max_bytes=True),
            ),  # type: ignore[arg-type]
            ("root int", lambda: RuntimeMemory(5)),  # type: ignore[arg-type]
            ("root NUL", lambda: RuntimeMemory(tmp_path / "a\x00b")),
            ("root surrogate", lambda: RuntimeMemory(tmp_path / "a\ud800")),
            ("user_root bytes", lambda: RuntimeMemory(tmp_path, user_root=b"/x")),  # type: ignore[arg-type]
            ("host root NUL", lambda: open_host(tmp_path / "a\x00b")),
        ],
    )


def test_item05_runtime_nul_is_refused_and_never_reaches_the_projections(tmp_path: Path) -> None:
    rt = RuntimeMemory(tmp_path)
    rt.add("user", "Works from Lisbon.")
    expect_invalid(
        tmp_path,
        [
            ("add", lambda: rt.add("user", "Prefers\x00 tea.")),
            ("replace content", lambda: rt.replace("user", "Lisbon", "Works from\x00 Porto.")),
            ("replace old_text", lambda: rt.replace("user", "Lis\x00bon", "Works from Porto.")),
            ("remove", lambda: rt.remove("user", "\x00")),
        ],
    )
    with pytest.raises(InvalidInputError, match="NUL"):
        rt.add("memory", "a\x00b")
    for name in ("USER.md", "MEMORY.md", "memories.json"):
        assert b"\x00" not in (tmp_path / "runtime" / name).read_bytes()


def test_item05_legacy_entry_with_nul_is_read_without_it(tmp_path: Path) -> None:
    rt = RuntimeMemory(tmp_path)
    rt.add("user", "Prefers tea.")
    authority = tmp_path / "runtime" / "memories.json"
    data = json.loads(authority.read_text())
    data["entries"][0]["content"] = "Prefers\x00 tea."  # what an older build let through
    authority.write_text(json.dumps(data))
    reopened = RuntimeMemory(tmp_path)
    assert [e.content for e in reopened.entries("user")] == ["Prefers tea."]
    assert b"\x00" not in (tmp_path / "runtime" / "USER.md").read_bytes()
    assert "\x00" not in reopened.snapshot(branch="main").text
    reopened.add("user", "Works from Lisbon.")  # the next commit rewrites the authority clean
    assert b"\\u0000" not in authority.read_bytes()


def test_item05_documents_hostile_values_are_invalid_input(tmp_path: Path) -> None:
    docs = Documents(tmp_path)
    doc = docs.create("Runbook", "Restart the worker.").document
    plan = docs.plan_archive(doc.id)
    assert plan is not None
    hostile_model = DocumentMutation(action="create", title="\ud800", content="x")
    expect_invalid(
        tmp_path,
        [
            ("create title surrogate", lambda: docs.create("Half \ud83d", "Body.")),
            ("create title NUL", lambda: docs.create("Ti\x00tle", "Body.")),
            ("create content surrogate", lambda: docs.create("T", "bad \udfff")),
            ("create content dict", lambda: docs.create("T", {"a": 1})),  # type: ignore[arg-type]
            ("create content NUL only", lambda: docs.create("T", "\x00\x00")),
            ("create description bytes", lambda: docs.create("T", "B.", description=b"d")),  # type: ignore[arg-type]
            ("create description NUL", lambda: docs.create("T", "B.", description="d\x00")),
            ("create source_paths", lambda: docs.create("T", "B.", source_paths=[5])),  # type: ignore[list-item]
            ("create session_ids str", lambda: docs.create("T", "B.", session_ids="s1")),  # type: ignore[arg-type]
            ("create session surrogate", lambda: docs.create("T", "B.", session_ids=["\ud800"])),
            ("create huge", lambda: docs.create("T", "é" * 3_000_000)),
            ("update id int", lambda: docs.update(5, content="x")),  # type: ignore[arg-type]
            ("update id huge", lambda: docs.update("a" * 1_000_000, content="x")),
            ("update title surrogate", lambda: docs.update(doc.id, title="\udc00")),
            (
                "update revision bool",
                lambda: docs.update(doc.id, content="x", expected_revision=True),
            ),  # type: ignore[arg-type]
            ("archive revision str", lambda: docs.archive(doc.id, "1", "s", ["sp"])),  # type: ignore[arg-type]
            ("archive ids", lambda: docs.archive(doc.id, 1, "s", [None])),  # type: ignore[list-item]
            ("archive summary NUL", lambda: docs.archive(doc.id, 1, "s\x00", ["sp"])),
            ("get None", lambda: docs.get(None)),  # type: ignore[arg-type]
            ("read bytes", lambda: docs.read(b"x")),  # type: ignore[arg-type]
            ("find_id int", lambda: docs.find_id(5)),  # type: ignore[arg-type]
            ("list int", lambda: docs.list(5)),  # type: ignore[arg-type]
            ("list list", lambda: docs.list(["active"])),  # type: ignore[arg-type]
            ("search int", lambda: docs.search(5)),  # type: ignore[arg-type]
            ("search surrogate", lambda: docs.search("run \ud800")),
            ("search huge", lambda: docs.search("q" * 100_000)),
            ("search limit bool", lambda: docs.search("run", limit=True)),
            ("search archived str", lambda: docs.search("run", include_archived="yes")),  # type: ignore[arg-type]
            ("capacity_plan str", lambda: docs.capacity_plan("create")),  # type: ignore[arg-type]
            ("capacity_plan key", lambda: docs.capacity_plan({"action": "create", 5: "x"})),  # type: ignore[dict-item]
            ("capacity_plan model", lambda: docs.capacity_plan(hostile_model)),
            ("apply bad action", lambda: docs.apply({"action": "delete", "id": doc.id})),
            ("plan_archive int", lambda: docs.plan_archive(5)),  # type: ignore[arg-type]
            ("cold_reference None", lambda: docs.cold_reference(None, "s")),  # type: ignore[arg-type]
            ("cold_reference summary", lambda: docs.cold_reference(plan, "\ud800")),
            ("root int", lambda: Documents(5)),  # type: ignore[arg-type]
            ("root surrogate", lambda: Documents(tmp_path / "\udc00")),
            ("workspace NUL", lambda: Documents(tmp_path, workspace="a\x00")),
        ],
    )


def test_item05_documents_query_nul_is_stripped_and_search_answers(tmp_path: Path) -> None:
    docs = Documents(tmp_path)
    doc = docs.create("Runbook", "Restart the worker.").document
    assert [h.id for h in docs.search("Run\x00book").results] == [doc.id]


# --- item 6: never follow a symbolic link out of the root --------------------------------------


def _link(path: Path, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.symlink_to(target, target_is_directory=target.is_dir())


def test_item06_documents_active_linked_into_another_root_is_refused(tmp_path: Path) -> None:
    other, _ = populate(tmp_path / "other")
    other.close()
    mine, _ = populate(tmp_path / "mine")
    mine.close()
    _link(tmp_path / "mine" / "documents" / "active", tmp_path / "other" / "documents" / "active")
    before = tree(tmp_path / "other")
    for write_enabled in (True, False):
        error = expect_storage_error(
            lambda w=write_enabled: open_host(tmp_path / "mine", write_enabled=w), "symlink-refused"
        )
        assert str(tmp_path / "mine" / "documents" / "active") in error.message
        expect_storage_error(lambda: Documents(tmp_path / "mine"), "symlink-refused")
    # Nothing of the other root was deleted, moved or rewritten.
    assert tree(tmp_path / "other") == before
    assert len(list((tmp_path / "other" / "documents" / "active").glob("*.md"))) == 3


MANAGED = [
    "runtime",
    "runtime/memories.json",
    "runtime/USER.md",
    "runtime/MEMORY.md",
    "runtime/.memories.lock",
    "runtime/archived",
    "runtime/archived/memory.jsonl",
    "documents",
    "documents/index.json",
    "documents/archived",
    "documents/.recovery",
    "documents/access.jsonl",
    "documents/.index.lock",
]


@pytest.mark.parametrize("managed", MANAGED)
def test_item06_a_linked_managed_path_is_refused_at_open(tmp_path: Path, managed: str) -> None:
    for name in ("mine", "other"):
        mem, ids = populate(tmp_path / name)
        mem.runtime.compact_target(mem.runtime.revision, "memory", [])  # runtime/archived/
        mem.documents.update(ids[0], content="Changed in place.")  # documents/.recovery/
        assert mem.documents.search("oncall").results  # documents/access.jsonl again
        mem.close()
    target = tmp_path / "other" / managed
    assert target.exists(), managed
    _link(tmp_path / "mine" / managed, target)
    before = tree(tmp_path / "other")
    for write_enabled in (True, False):
        error = expect_storage_error(
            lambda w=write_enabled: open_host(tmp_path / "mine", write_enabled=w), "symlink-refused"
        )
        assert str(tmp_path / "mine" / managed) in error.message
    assert tree(tmp_path / "other") == before


def test_item06_global_user_root_with_a_linked_runtime_folder_is_refused(tmp_path: Path) -> None:
    other, _ = populate(tmp_path / "other")
    other.close()
    (tmp_path / "global").mkdir()
    (tmp_path / "global" / "runtime").symlink_to(tmp_path / "other" / "runtime")
    before = tree(tmp_path / "other")
    error = expect_storage_error(
        lambda: open_host(
            tmp_path / "mine", runtime_user_scope="global", global_root=tmp_path / "global"
        ),
        "symlink-refused",
    )
    assert str(tmp_path / "global" / "runtime") in error.message
    assert tree(tmp_path / "other") == before


def test_item06_links_made_after_open_are_never_written_through(tmp_path: Path) -> None:
    mem, ids = populate(tmp_path / "mine")
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("USER.md", "index.json", "access.jsonl"):
        (outside / name).write_bytes(b"not yours\n")
    before = tree(outside)
    _link(tmp_path / "mine" / "runtime" / "USER.md", outside / "USER.md")
    expect_storage_error(lambda: mem.runtime.add("user", "Prefers tea."), "symlink-refused")
    _link(tmp_path / "mine" / "documents" / "access.jsonl", outside / "access.jsonl")
    found = mem.documents.search("release publish")  # still answers; records nothing
    assert [hit.id for hit in found.results] == [ids[0]]
    assert "Access times could not be recorded." in found.hint
    expect_storage_error(lambda: mem.documents.create("New", "Body."), "symlink-refused")
    _link(tmp_path / "mine" / "documents" / "index.json", outside / "index.json")
    expect_storage_error(lambda: mem.documents.list(), "symlink-refused")
    assert tree(outside) == before
    assert (tmp_path / "mine" / "documents" / "access.jsonl").is_symlink()


def test_item06_a_linked_document_file_is_never_read_or_deleted(tmp_path: Path) -> None:
    other, other_ids = populate(tmp_path / "other")
    other.close()
    mem, ids = populate(tmp_path / "mine")
    mem.close()
    active = tmp_path / "mine" / "documents" / "active"
    record = Documents(tmp_path / "mine").get(ids[0])
    # A perfect copy outside the root: reading through the link would return the right body.
    outside = tmp_path / "outside.md"
    shutil.copyfile(active / record.filename, outside)
    _link(active / record.filename, outside)
    # A stray link to another root's document: repair used to read its header and delete it.
    foreign = Documents(tmp_path / "other").get(other_ids[1])
    stray = active / foreign.filename
    stray.symlink_to(tmp_path / "other" / "documents" / "active" / foreign.filename)
    before_other, before_outside = tree(tmp_path / "other"), outside.read_bytes()

    docs = Documents(tmp_path / "mine")  # the folders are real: opening works
    assert docs.repair().unrecoverable == (ids[0],)
    error = expect_storage_error(lambda: docs.read(ids[0]), "symlink-refused")
    assert str(active / record.filename) in error.message
    hits = docs.search("release publish", include_archived=True).results
    assert all("Tag the release" not in hit.content for hit in hits)
    assert docs.read(ids[1]) == "We keep files and one SQLite database."
    before_mine = tree(tmp_path / "mine")
    expect_storage_error(lambda: docs.update(ids[0], content="New body."), "symlink-refused")
    expect_storage_error(lambda: docs.archive_without_index(ids[0], 1), "symlink-refused")
    assert tree(tmp_path / "mine") == before_mine
    # Both links and what they point to are untouched.
    assert (active / record.filename).is_symlink()
    assert stray.is_symlink()
    assert outside.read_bytes() == before_outside
    assert tree(tmp_path / "other") == before_other


# --- item 10 (file side): write_enabled=false creates nothing ---------------------------------


def file_reads(mem: Mnemon) -> None:
    rt, docs = mem.runtime, mem.documents
    status = mem.status()
    assert status.write_enabled is False
    rt.entries()
    rt.entries("user")
    rt.snapshot(branch="main")
    rt.snapshot()
    rt.usage("memory")
    rt.archived("memory")
    assert isinstance(rt.revision, str)
    docs.list("all")
    docs.search("release")
    docs.search("")
    docs.usage()
    assert isinstance(docs.revision, str)
    for record in docs.list("active"):
        docs.get(record.id)
        docs.read(record.id)


def test_item10_write_disabled_on_a_fresh_path_creates_no_folder(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    mem = open_host(root, write_enabled=False)
    file_reads(mem)
    assert mem.runtime.entries() == []
    assert mem.documents.list() == []
    assert not root.exists()


def test_item10_write_disabled_on_an_existing_root_creates_no_file(tmp_path: Path) -> None:
    root = tmp_path / "root"
    mem, _ = populate(root)
    mem.close()
    for leftover in ("runtime/.memories.lock", "documents/.index.lock", "documents/access.jsonl"):
        (root / leftover).unlink()
    before = tree(root)
    mem = open_host(root, write_enabled=False)
    file_reads(mem)
    assert mem.documents.search("release").results
    assert tree(root) == before
