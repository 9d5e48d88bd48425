"""Documents, Memory Spaces and Mnemos ask the kernel before any I/O (issue 13, items 1 and 2).

Every case runs on real components: a storage root with real files, the real SQLite database
(and PostgreSQL for the spaces write channel), the real cold-archive LangGraph graph. Each
refusal is checked to leave every file under the root and every database row byte-identical.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from langgraph.store.memory import InMemoryStore

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
from langgraph_mnemon.adapters.providers.store import StoreProvider
from langgraph_mnemon.errors import ParticipationError, ReadOnlyError
from langgraph_mnemon.graphs.document_archive import build_document_archive_graph
from langgraph_mnemon.memory_layers.documents import DocumentMutation
from langgraph_mnemon.memory_layers.kernel import Kernel, acting
from langgraph_mnemon.memory_layers.mnemos import Mnemos
from langgraph_mnemon.memory_layers.spaces import MemorySpaces
from langgraph_mnemon.memory_layers.write_worker import WriteCandidate
from tests.spaces_support import sqlite_database

MODES = ["off", "manual", "automatic", "disabled"]
TRIGGERS = ["explicit", "automatic"]
CODES = {"off": "channel-off", "manual": "channel-manual", "disabled": "layer-disabled"}


# --------------------------------------------------------------------------- helpers


def set_mode(mem: Mnemon, layer: str, channel: str, mode: str) -> None:
    """Flip a live switch on the host's config (the kernel reads it at every call)."""
    section = getattr(mem.config.layers, layer)
    if mode == "disabled":
        section.enabled = False
    else:
        section.enabled = True
        setattr(section.participation, channel, mode)


def admitted(mode: str, trigger: str) -> bool:
    return mode == "automatic" or (mode == "manual" and trigger == "explicit")


def files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def rows(mem: Mnemon) -> dict[str, list[str]]:
    """Every row of every table of the host's database (SQLite or PostgreSQL)."""
    return table_rows(mem.database.engine)


def table_rows(engine: sa.Engine) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    with engine.connect() as conn:
        for name in sorted(sa.inspect(conn).get_table_names()):
            table = sa.Table(name, sa.MetaData(), autoload_with=conn)
            out[name] = sorted(repr(tuple(r)) for r in conn.execute(sa.select(table)))
    return out


def check(
    op: Callable[[], Any],
    mode: str,
    trigger: str,
    layer: str,
    channel: str,
    state: Callable[[], Any],
) -> Any:
    """Run ``op`` under ``trigger``: admitted → its result; refused → the typed error, with
    ``state()`` (files or rows) unchanged."""
    before = state()
    with acting(trigger):  # type: ignore[arg-type]
        if admitted(mode, trigger):
            return op()
        with pytest.raises(ParticipationError) as info:
            op()
    assert state() == before, f"{layer} {channel} refused under {mode}/{trigger} but wrote"
    error = info.value
    assert error.code == CODES[mode]
    decision = error.decision
    assert decision is not None
    assert decision["layer"] == layer
    assert decision["channel"] == channel
    assert decision["trigger"] == trigger
    assert decision["admitted"] is False
    setting = (
        f"layers.{layer}.enabled"
        if mode == "disabled"
        else f"layers.{layer}.participation.{channel}"
    )
    assert decision["setting"] == setting
    assert decision["env"] == "MNEMON_" + setting.replace(".", "__").upper()
    assert error.to_dict()["decision"] == decision
    return None


class RecordingProvider(StoreProvider):
    """The shipped BaseStore provider over a real InMemoryStore, recording every call."""

    def __init__(self) -> None:
        super().__init__(InMemoryStore(), provider_id="recorded", label="Recorded")
        self.calls: list[str] = []

    def search(self, space: Any, request: Any) -> Any:
        self.calls.append("search")
        return super().search(space, request)

    def remember(self, space: Any, item: Any) -> Any:
        self.calls.append("remember")
        return super().remember(space, item)

    def remember_many(self, space: Any, items: Any) -> Any:
        self.calls.append("remember_many")
        return super().remember_many(space, items)

    def forget(self, space: Any, insight_id: str) -> Any:
        self.calls.append("forget")
        return super().forget(space, insight_id)


@pytest.fixture
def mem(tmp_path: Path) -> Any:
    with Mnemon.open(tmp_path / "root", workspace=tmp_path) as host:
        yield host


# --------------------------------------------------------------------------- Documents


@pytest.mark.parametrize("trigger", TRIGGERS)
@pytest.mark.parametrize("mode", MODES)
def test_item1_documents_write_channel(mem: Mnemon, mode: str, trigger: str) -> None:
    doc = mem.documents.create("ADR 1", "We use SQLite for storage.").document
    other = mem.documents.create("ADR 2", "We deploy with CI.").document
    set_mode(mem, "documents", "write", mode)
    revision = lambda d: mem.documents.get(d).revision  # noqa: E731 (a management read)
    ops: dict[str, Callable[[], Any]] = {
        "create": lambda: mem.documents.create("ADR 3", "Queues carry jobs."),
        "update": lambda: mem.documents.update(doc.id, content="We use SQLite and WAL."),
        "apply": lambda: mem.documents.apply({"action": "create", "title": "N", "content": "x"}),
        "archive": lambda: mem.documents.archive_without_index(doc.id, revision(doc.id)),
        "host archive": lambda: mem.archive_document(other.id),
    }
    for name, op in ops.items():
        result = check(op, mode, trigger, "documents", "write", lambda: files(mem.root))
        if admitted(mode, trigger):
            assert result.status == "committed", name
    if admitted(mode, trigger):
        assert mem.documents.get(doc.id).status == "archived"
        assert mem.documents.get(other.id).status == "archived"
    else:
        assert [d.status for d in mem.documents.list("all")] == ["active", "active"]


@pytest.mark.parametrize("trigger", TRIGGERS)
@pytest.mark.parametrize("mode", MODES)
def test_item1_documents_recall_channel(mem: Mnemon, mode: str, trigger: str) -> None:
    mem.documents.create("ADR 1", "We use SQLite for storage.")
    set_mode(mem, "documents", "recall", mode)
    # A search that answers records access times: a refusal must not even do that.
    found = check(
        lambda: mem.documents.search("sqlite"),
        mode,
        trigger,
        "documents",
        "recall",
        lambda: files(mem.root),
    )
    if admitted(mode, trigger):
        assert [r.title for r in found.results] == ["ADR 1"]
        assert (mem.root / "documents" / "access.jsonl").exists()


def test_item1_documents_management_reads_when_disabled(mem: Mnemon) -> None:
    doc = mem.documents.create("ADR 1", "We use SQLite for storage.").document
    mem.config.layers.documents.enabled = False
    assert [d.id for d in mem.documents.list("all")] == [doc.id]
    assert mem.documents.get(doc.id).title == "ADR 1"
    assert mem.documents.read(doc.id) == "We use SQLite for storage."
    assert mem.documents.find_id(doc.id[:8]) == doc.id
    assert mem.documents.usage().used > 0
    assert mem.status().documents.active == 1
    with pytest.raises(ParticipationError):
        mem.documents.search("sqlite")


BODY = "This runbook explains the release process. " + "Step details follow. " * 30
NEW = DocumentMutation(action="create", title="ADR 12: queues", content="We chose queues. " * 40)


@pytest.mark.parametrize(
    ("mode", "trigger"),
    [
        ("off", "explicit"),
        ("manual", "automatic"),
        ("disabled", "explicit"),
        ("manual", "explicit"),
    ],
)
def test_item1_document_lru_archive_is_documents_maintenance(
    tmp_path: Path, mode: str, trigger: str
) -> None:
    with Mnemon.open(
        tmp_path / "root", workspace=tmp_path, documents={"active_limit_bytes": 2200}
    ) as mem:
        first = mem.documents.create("Release runbook", BODY).document
        mem.documents.create("Incident guide", BODY)
        assert not mem.documents.capacity_plan(NEW).fits
        if mode == "disabled":  # the write itself stays allowed: only maintenance is off
            mem.config.layers.documents.participation.maintenance = "off"
            mode = "off"
        else:
            set_mode(mem, "documents", "maintenance", mode)
        graph = build_document_archive_graph(mem.documents, mem.spaces)
        out = check(
            lambda: graph.invoke({"mutation": NEW}),
            mode,
            trigger,
            "documents",
            "maintenance",
            lambda: files(mem.root),
        )
        if admitted(mode, trigger):
            assert "error" not in out, out.get("error")
            assert mem.documents.get(first.id).status == "archived"
            assert out["receipt"].outcome == "succeeded"


@pytest.mark.parametrize("spaces_write", ["manual", "off", "disabled", "automatic"])
def test_item1_cold_reference_is_an_automatic_spaces_write(mem: Mnemon, spaces_write: str) -> None:
    space = mem.spaces.create_space("Docs index", "Project documents", active=True).space
    assert space is not None
    doc = mem.documents.create("Release runbook", BODY, description="How we release").document
    set_mode(mem, "memory_spaces", "write", spaces_write)
    before = rows(mem)
    receipt = mem.archive_document(doc.id)  # an explicit request: the reference is still automatic
    assert receipt.document.status == "archived"
    assert receipt.outcome == "succeeded"
    if spaces_write == "automatic":
        assert receipt.indexed is True
        assert [s.target for s in receipt.steps] == [f"reference:{space.id}", f"archive:{doc.id}"]
        assert rows(mem) != before
    else:  # the seed's local path: archived without an index, nothing in any space
        assert receipt.indexed is False
        assert [s.target for s in receipt.steps] == [f"archive:{doc.id}"]
        assert rows(mem) == before


# --------------------------------------------------------------------------- Memory Spaces


@pytest.mark.parametrize("trigger", TRIGGERS)
@pytest.mark.parametrize("mode", MODES)
def test_item1_spaces_write_channel(
    tmp_path: Path, database_url: str, mode: str, trigger: str
) -> None:
    with Mnemon.open(tmp_path / "root", database_url=database_url) as mem:
        first = mem.spaces.remember("The staging database listens on port 5433.")
        second = mem.spaces.remember("Deploys run from the release branch.")
        set_mode(mem, "memory_spaces", "write", mode)
        ops: dict[str, Callable[[], Any]] = {
            "remember": lambda: mem.spaces.remember("Backups run nightly."),
            "remember_many": lambda: mem.spaces.remember_many([{"content": "Logs go to Loki."}]),
            "link": lambda: mem.spaces.link(first.id or "", second.id or "", type="semantic"),
            "forget": lambda: mem.spaces.forget(second.id or ""),
        }
        for name, op in ops.items():
            result = check(op, mode, trigger, "memory_spaces", "write", lambda: rows(mem))
            if admitted(mode, trigger):
                receipts = result if isinstance(result, list) else [result]
                assert all(r.status == "committed" for r in receipts), name


@pytest.mark.parametrize("trigger", TRIGGERS)
@pytest.mark.parametrize("mode", MODES)
def test_item1_spaces_recall_channel_reaches_no_provider(
    mem: Mnemon, mode: str, trigger: str
) -> None:
    recorded = RecordingProvider()
    mem.spaces.register_provider(recorded)
    mem.spaces.create_space("Recorded", provider_id="recorded", space_id="rec", active=True)
    native = mem.spaces.create_space("Native", space_id="native", active=True).space
    assert native is not None
    a = mem.spaces.remember("The staging database listens on port 5433.", space_id="native")
    b = mem.spaces.remember("Staging deploys use the release branch.", space_id="native")
    mem.spaces.link(a.id or "", b.id or "", space_id="native")
    mem.spaces.remember("Staging runs three replicas.", space_id="rec")
    set_mode(mem, "memory_spaces", "recall", mode)
    recorded.calls.clear()
    state = lambda: (rows(mem), list(recorded.calls))  # noqa: E731
    found = check(
        lambda: mem.spaces.search("staging"), mode, trigger, "memory_spaces", "recall", state
    )
    related = check(
        lambda: mem.spaces.related(a.id or "", space_id="native"),
        mode,
        trigger,
        "memory_spaces",
        "recall",
        state,
    )
    answer = check(
        lambda: mem.query("Which port does staging use?"),
        mode,
        trigger,
        "memory_spaces",
        "recall",
        state,
    )
    if admitted(mode, trigger):
        assert found.results
        assert "search" in recorded.calls
        assert [r.id for r in related.results] == [b.id]
        assert answer.citations
    else:
        assert recorded.calls == []


@pytest.mark.parametrize("trigger", TRIGGERS)
@pytest.mark.parametrize("mode", MODES)
def test_item1_spaces_maintenance_channel(mem: Mnemon, mode: str, trigger: str) -> None:
    mem.spaces.create_space("Target", space_id="target", active=True)
    mem.spaces.create_space("Source", space_id="source", active=True)
    mem.spaces.remember("Source knows the VPN address.", space_id="source")
    set_mode(mem, "memory_spaces", "maintenance", mode)
    ops: dict[str, Callable[[], Any]] = {
        "create_space": lambda: mem.spaces.create_space("New", space_id="new"),
        "update_space": lambda: mem.spaces.update_space("target", description="Changed"),
        "set_active": lambda: mem.spaces.set_active("target", False),
        "merge_spaces": lambda: mem.spaces.merge_spaces("target", ["source"]),
        "discover sync": lambda: mem.spaces.discover("mnemos", sync=True),
    }
    for name, op in ops.items():
        result = check(op, mode, trigger, "memory_spaces", "maintenance", lambda: rows(mem))
        if admitted(mode, trigger):
            assert result.status == "committed", name


def test_item1_spaces_management_reads_when_disabled(mem: Mnemon) -> None:
    receipt = mem.spaces.remember("The VPN lives at vpn.example.org.", entities=["VPN"])
    mem.config.layers.memory_spaces.enabled = False
    assert [s.id for s in mem.spaces.list_spaces()] == [receipt.space_id]
    assert mem.spaces.get_space(receipt.space_id).active is True
    assert [r.id for r in mem.spaces.browse(receipt.space_id)] == [receipt.id]
    assert mem.spaces.entities(receipt.space_id)[0].name == "VPN"
    assert mem.spaces.status().total == 1
    assert mem.spaces.health().unreachable == []
    assert mem.status().spaces is not None
    with pytest.raises(ParticipationError):
        mem.spaces.search("vpn")


def test_item1_remember_refused_before_any_provider_call(mem: Mnemon) -> None:
    recorded = RecordingProvider()
    mem.spaces.register_provider(recorded)
    mem.spaces.create_space("Recorded", provider_id="recorded", space_id="rec", active=True)
    mem.config.layers.memory_spaces.participation.write = "off"
    before = rows(mem)
    recorded.calls.clear()
    for op in (
        lambda: mem.remember(WriteCandidate(content="The VPN lives at vpn.example.org.")),
        lambda: mem.spaces.remember("The VPN lives at vpn.example.org.", space_id="rec"),
    ):
        with pytest.raises(ParticipationError) as info:
            op()
        assert info.value.decision["setting"] == "layers.memory_spaces.participation.write"
    assert recorded.calls == []
    assert rows(mem) == before


def test_item1_read_only_refusals_name_write_enabled(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with Mnemon.open(root) as mem:
        doc = mem.documents.create("ADR 1", "We use SQLite.").document
        mem.spaces.remember("The VPN lives at vpn.example.org.")
    with Mnemon.open(root, write_enabled=False) as mem:
        before = files(root)
        for op in (
            lambda: mem.documents.create("ADR 2", "x"),
            lambda: mem.documents.archive_without_index(doc.id, 1),
            lambda: mem.spaces.remember("x"),
            lambda: mem.spaces.create_space("New"),
        ):
            with pytest.raises(ReadOnlyError) as info:
                op()
            assert info.value.decision["setting"] == "write_enabled"
        assert files(root) == before
        assert mem.documents.search("sqlite").results  # recall is no write
        assert mem.spaces.search("vpn").results


def test_item1_mnemos_writes_ask_the_kernel_and_reads_do_not(tmp_path: Path) -> None:
    db = sqlite_database(tmp_path)
    writer = Mnemos(db)
    goal = writer.add_node("task-1", "goal", "Ship the password reset flow")
    writer.checkpoint("task-1")
    before = table_rows(db.engine)
    reader = Mnemos(db, kernel=Kernel.standalone(write_enabled=False))
    for op in (
        lambda: reader.add_node("task-1", "goal", "Another goal"),
        lambda: reader.touch(goal.id),
        lambda: reader.checkpoint("task-1", force=True),
        lambda: reader.consolidate("task-1"),
        lambda: reader.setup(),
    ):
        with pytest.raises(ReadOnlyError):
            op()
    assert reader.get_node(goal.id).content == "Ship the password reset flow"
    assert [n.id for n in reader.nodes("task-1")] == [goal.id]
    assert reader.fatigue("task-1").state  # measured, not logged
    assert reader.status("task-1")[0].checkpoints == 1
    assert "password reset" in reader.resume("task-1")
    assert table_rows(db.engine) == before
    db.dispose()


# --------------------------------------------------------------------------- receipts (item 2)


class FlakyMerge(MnemosProvider):
    """The native provider on the real database, whose copy of one named source fails."""

    def merge(self, target: Any, sources: Any) -> dict[str, Any]:
        if any(s.id == "broken" for s in sources):
            raise ConnectionError("the source rows could not be read")
        return super().merge(target, sources)


def test_item2_merge_with_a_failing_source_is_partial(tmp_path: Path) -> None:
    db = sqlite_database(tmp_path)
    spaces = MemorySpaces(db, root=tmp_path, providers=[FlakyMerge(db)])
    try:
        for sid in ("target", "good", "broken"):
            spaces.create_space(sid.title(), space_id=sid, active=True)
        spaces.remember("Good knows the VPN address.", space_id="good")
        spaces.remember("Broken knows the build cache.", space_id="broken")
        receipt = spaces.merge_spaces("target", ["good", "broken"])
        assert receipt.outcome == "partial"
        assert receipt.status == "committed"  # rows were copied: not "nothing happened"
        assert "broken" in receipt.message
        assert "Partly merged" in receipt.message
        assert [(s.target, s.status) for s in receipt.steps] == [
            ("copy:good", "committed"),
            ("copy:broken", "failed"),
            ("deactivate:good", "committed"),
        ]
        assert [r.content for r in spaces.browse("target")] == ["Good knows the VPN address."]
        assert spaces.get_space("good").active is False
        assert spaces.get_space("broken").active is True  # its rows are not in the target

        whole = spaces.merge_spaces("target", ["good"], deactivate_sources=False)
        assert whole.outcome == "succeeded"
        assert whole.provider_receipt["skipped_duplicates"] == 1

        failed = spaces.merge_spaces("target", ["broken"])
        assert failed.outcome == "failed"
        assert failed.status == "failed"
        assert not failed.changed
    finally:
        spaces.close()
        db.dispose()


def test_item2_cold_archive_that_stops_midway_is_partial(tmp_path: Path) -> None:
    with Mnemon.open(
        tmp_path / "root", workspace=tmp_path, documents={"active_limit_bytes": 3300}
    ) as mem:
        for title in ("Release runbook", "Incident guide", "Schema notes"):
            mem.documents.create(title, "Short note. " * 60)
        big = DocumentMutation(action="create", title="Big", content="Long text. " * 170)
        graph = build_document_archive_graph(mem.documents, mem.spaces, max_rounds=1)
        out = graph.invoke({"mutation": big})
        assert "still does not fit" in out["error"]
        assert out["outcome"] == "partial"
        assert [s.status for s in out["steps"]] == ["committed", "failed"]
        assert len(mem.documents.list("archived")) == 1

        roomy = build_document_archive_graph(mem.documents, mem.spaces)
        done = roomy.invoke({"mutation": big})
        assert done["outcome"] == "succeeded"
        assert done["receipt"].outcome == "succeeded"
        assert [s.target.split(":")[0] for s in done["receipt"].steps] == ["archive", "mutation"]
        assert len(mem.documents.list("archived")) == 2
