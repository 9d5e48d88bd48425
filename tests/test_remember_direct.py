"""``Mnemon.remember`` without a worker model: the heuristic runs directly (no graph), and the
provider's insert-time dedupe is the duplicate check, with the same receipts as the graph."""

from __future__ import annotations

from pathlib import Path

from langgraph_mnemon import Mnemon
from langgraph_mnemon.graphs.write_worker import build_write_worker_graph
from langgraph_mnemon.memory_layers.write_worker import WriteCandidate, WriteReceipt


def _fields(receipt: WriteReceipt) -> tuple[str, str, int, list[str]]:
    """What a caller reads from a receipt (ids differ between roots)."""
    kinds = [w.kind for w in receipt.writes]
    return (receipt.status, receipt.message, len(receipt.memory_ids), kinds)


def test_heuristic_remember_builds_no_graph_and_skips_the_duplicate(mem: Mnemon) -> None:
    ops = mem.spaces.create_space("Ops", "Deploys, releases and infrastructure", active=True)
    assert ops.space is not None
    candidate = WriteCandidate(content="Production deploys need two approvals.", category="fact")
    first = mem.remember(candidate)
    again = mem.remember(candidate)
    assert "write_worker" not in mem._graphs  # the heuristic ran without the worker graph
    assert first.status == "committed"
    assert first.space_ids == (ops.space.id,)
    assert [w.kind for w in first.writes] == ["remember"]
    assert again.status == "skipped"
    assert "already stored" in again.message
    assert again.memory_ids == first.memory_ids
    assert again.writes == ()  # a duplicate is no write
    assert [r.content for r in mem.spaces.browse(ops.space.id, limit=10)] == [candidate.content]


def test_direct_path_gives_the_graph_path_receipts(tmp_path: Path) -> None:
    candidate = WriteCandidate(content="The user likes short answers.")
    with Mnemon.open(tmp_path / "a") as direct, Mnemon.open(tmp_path / "b") as graphed:
        graph = build_write_worker_graph(graphed.spaces)
        direct_receipts = [_fields(direct.remember(candidate)) for _ in range(2)]
        graph_receipts = [
            _fields(graph.invoke({"candidate": candidate})["receipt"]) for _ in range(2)
        ]
        assert direct_receipts == graph_receipts
        assert direct_receipts[0][0] == "committed"
        assert direct_receipts[0][3] == ["create-space", "remember"]  # the default space
        assert direct_receipts[1][:2] == (
            "skipped",
            "An identical memory is already stored; nothing written.",
        )
