"""write_enabled=false: every mutation of every layer is rejected and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import ReadOnlyError
from langgraph_mnemon.graphs import build_user_compaction_graph
from langgraph_mnemon.memory_layers.runtime import CompactedEntry, RuntimeMutation


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith("mnemon.db")
    }


def test_every_mutation_is_rejected(tmp_path: Path) -> None:
    with Mnemon.open(tmp_path) as writable:
        writable.runtime.add("memory", "Existing rule.")
        doc = writable.documents.create("Runbook", "Steps.").document
        space = writable.spaces.create_space("Ops", "Ops notes", active=True).space
        assert space is not None
    before = _tree(tmp_path)
    with Mnemon.open(tmp_path, write_enabled=False) as mem:
        rt, docs, spaces = mem.runtime, mem.documents, mem.spaces
        calls = [
            lambda: rt.add("memory", "New rule."),
            lambda: rt.replace("memory", "Existing", "Changed rule."),
            lambda: rt.remove("memory", "Existing"),
            lambda: rt.apply(RuntimeMutation(action="add", target="user", content="x")),
            lambda: rt.compact_target(rt.revision, "memory", [CompactedEntry(content="y")]),
            lambda: docs.create("New", "Body."),
            lambda: docs.update(doc.id, content="Changed."),
            lambda: docs.archive_without_index(doc.id, doc.revision),
            lambda: spaces.remember("A memory.", space_id=space.id),
            lambda: spaces.create_space("New", "x"),
        ]
        for call in calls:
            with pytest.raises(ReadOnlyError, match=r"write_enabled: false"):
                call()
        # Reads still work and record nothing.
        assert "Existing rule." in rt.snapshot(branch="main").text
        assert docs.search("Steps").results
        out = build_user_compaction_graph(rt).invoke(
            {"request": RuntimeMutation(action="add", target="user", content="Prefers tea.")}
        )
        assert "read-only" in out["error"]
    assert _tree(tmp_path) == before
