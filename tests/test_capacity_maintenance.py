"""Mnemon.write_runtime / write_document: Layered maintains capacity, General rejects."""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import CapacityError, ConflictError
from langgraph_mnemon.memory_layers.documents import DocumentMutation
from langgraph_mnemon.memory_layers.runtime import RuntimeMutation


def _full_memory(mem: Mnemon) -> None:
    for i in range(9):
        mem.runtime.add(
            "memory", f"Rule {i}: the service {i} restarts with systemctl restart s{i}."
        )


def _add(text: str, target: str = "memory") -> RuntimeMutation:
    return RuntimeMutation(action="add", target=target, content=text)  # type: ignore[arg-type]


def test_layered_archives_memory_into_a_space(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path, runtime={"memory_limit_bytes": 560}) as mem:
        space = mem.spaces.create_space("Ops", "Operations", active=True).space
        assert space is not None
        _full_memory(mem)
        receipt = mem.write_runtime(_add("Logs live in /var/log/app; rotate weekly."))
        assert receipt.status == "committed"
        assert mem.runtime.entries("memory")[-1].content.startswith("Logs live")
        assert len(mem.spaces.browse(space.id, limit=50)) == 9


def test_layered_compacts_user_locally(tmp_path: Path) -> None:
    # 54 bytes + the 25-byte add overflow 70; merging the two tea entries makes room (67).
    # (The old test used 60, where the heuristic archived "Lives in Oslo" out of USER.md.)
    with Mnemon.open(tmp_path, runtime={"user_limit_bytes": 70}) as mem:
        mem.runtime.add("user", "Prefers tea.")
        mem.runtime.add("user", "prefers TEA!")
        mem.runtime.add("user", "Lives in Oslo, Norway.")
        receipt = mem.write_runtime(_add("Works as a data engineer.", "user"))
        assert receipt.status == "committed"
        contents = [e.content for e in mem.runtime.entries("user")]
        assert contents == ["Prefers tea.", "Lives in Oslo, Norway.", "Works as a data engineer."]
        assert mem.spaces.list_spaces() == []  # USER content never goes to a Memory Space


def test_general_strategy_rejects_overflow(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path, strategy="general", runtime={"memory_limit_bytes": 560}) as mem:
        _full_memory(mem)
        before = (tmp_path / "runtime" / "memories.json").read_bytes()
        with pytest.raises(CapacityError, match="Would exceed memory runtime memory capacity"):
            mem.write_runtime(_add("One more rule that does not fit anymore."))
        assert (tmp_path / "runtime" / "memories.json").read_bytes() == before


def test_maintenance_off_for_a_layer_rejects(tmp_path: Path) -> None:
    layers = {"runtime": {"participation": {"maintenance": "off"}}}
    with Mnemon.open(tmp_path, layers=layers, runtime={"memory_limit_bytes": 560}) as mem:
        _full_memory(mem)
        with pytest.raises(CapacityError):
            mem.write_runtime(_add("One more rule that does not fit anymore."))


def test_documents_overflow_and_manual_archive(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path, workspace=tmp_path, documents={"active_limit_bytes": 4000}) as mem:
        first = mem.documents.create("Runbook", "Restart steps. " * 100).document
        mem.documents.create("Guide", "Guide text. " * 100)
        receipt = mem.write_document(
            DocumentMutation(action="create", title="ADR", content="Decision. " * 150)
        )
        assert receipt.document.title == "ADR"
        assert mem.documents.get(first.id).status == "archived"
        guide = next(d for d in mem.documents.list("active") if d.title == "Guide")
        archived = mem.archive_document(guide.id)
        assert archived.document.status == "archived"
        with pytest.raises(ConflictError, match="was not archived"):
            mem.archive_document(guide.id)  # already archived: nothing moves


def test_failed_maintenance_says_why(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path, workspace=tmp_path, documents={"active_limit_bytes": 3000})
    huge = DocumentMutation(action="create", title="Huge", content="x " * 2000)
    with pytest.raises(CapacityError, match="no other active document can move"):
        mem.write_document(huge)
    mem.close()
