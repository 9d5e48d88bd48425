"""Runtime Memory through the kernel (issue 13): write / maintenance / recall channels, MEMORY
archival destinations, multi-step receipts, USER compaction without a model, Runtime search.

Everything runs on real files under ``tmp_path`` (and the embedded SQLite database for Memory
Spaces); the archival graphs are real LangGraph runs. Refusals compare every byte under the
root and every row of every table before and after. Runtime Memory itself runs on every
backend (``backend``: files, a SQLite database, PostgreSQL; see ``runtime_support``), whose
rows are compared too; the test that damages ``memories.json`` stays on files.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from runtime_support import RuntimeBackend, backend_fixture  # noqa: F401  (the fixture)
from spaces_support import CountingStoreProvider, FailingProvider

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import (
    CapacityError,
    ParticipationError,
    ReadOnlyError,
    StorageError,
)
from langgraph_mnemon.graphs.memory_archival import build_memory_archival_graph
from langgraph_mnemon.graphs.user_compaction import build_user_compaction_graph
from langgraph_mnemon.memory_layers.kernel import acting
from langgraph_mnemon.memory_layers.runtime import (
    CompactedEntry,
    RuntimeMatch,
    RuntimeMutation,
)
from langgraph_mnemon.memory_layers.runtime._compaction import _fold, heuristic_compaction
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

MODES = ("off", "manual", "automatic", "disabled")
TRIGGERS = ("explicit", "automatic")
MEMORY_LIMIT = 560
RULES = [f"Rule {i}: the service {i} restarts with systemctl restart s{i}." for i in range(9)]
ONE_MORE = "Logs live in /var/log/app; rotate them weekly."


def _layer(mode: str, channel: str) -> dict[str, Any]:
    if mode == "disabled":
        return {"enabled": False}
    return {"participation": {channel: mode}}


def _admitted(mode: str, trigger: str) -> bool:
    return mode == "automatic" or (mode == "manual" and trigger == "explicit")


def _code(mode: str) -> str:
    return {"off": "channel-off", "manual": "channel-manual", "disabled": "layer-disabled"}[mode]


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (the SQLite files too: a refusal touches nothing at all)."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _stored(backend: RuntimeBackend, root: Path) -> tuple[dict[str, bytes], dict[str, Any]]:
    """Every file under ``root`` and every row of the backend's runtime tables."""
    return _tree(root), backend.dump()


def _rows(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    """A dump of every table of the embedded database (empty when it does not exist)."""
    path = root / "mnemon.db"
    if not path.exists():
        return {}
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: sorted(map(tuple, conn.execute(f'SELECT * FROM "{t}"'))) for t in tables}
    finally:
        conn.close()


_FILES = RuntimeBackend("files", None)


def _seed(backend: RuntimeBackend, root: Path, **settings: Any) -> None:
    """A root with one USER and one MEMORY entry, written with every channel open."""
    with backend.host(root, **settings) as mem:
        mem.runtime.add("user", "Prefers short answers.")
        mem.runtime.add("memory", "Deploys go through CI.")


def _full_memory(mem: Mnemon) -> None:
    for rule in RULES:
        mem.runtime.add("memory", rule)


def _add(text: str, target: str = "memory") -> RuntimeMutation:
    return RuntimeMutation(action="add", target=target, content=text)  # type: ignore[arg-type]


# --- item 1: the runtime write channel ------------------------------------------------------

WRITES = {
    "add": lambda rt: rt.add("memory", "Tests run with pytest -q."),
    "replace": lambda rt: rt.replace("memory", "Deploys", "Deploys go through CI and review."),
    "remove": lambda rt: rt.remove("memory", "Deploys"),
    "apply": lambda rt: rt.apply(_add("Tests run with pytest -q.")),
}


@pytest.mark.parametrize("trigger", TRIGGERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", sorted(WRITES))
def test_item1_runtime_write_channel(
    backend: RuntimeBackend, tmp_path: Path, op: str, mode: str, trigger: str
) -> None:
    _seed(backend, tmp_path)
    with backend.host(tmp_path, layers={"runtime": _layer(mode, "write")}) as mem:
        before = _stored(backend, tmp_path)
        with acting(trigger):  # type: ignore[arg-type]
            if _admitted(mode, trigger):
                receipt = WRITES[op](mem.runtime)
                assert receipt.status == "committed"
                assert receipt.changed
                assert _stored(backend, tmp_path) != before
                return
            with pytest.raises(ParticipationError) as info:
                WRITES[op](mem.runtime)
        assert _stored(backend, tmp_path) == before
        error = info.value
        assert error.code == _code(mode)
        assert error.decision is not None
        assert error.decision["layer"] == "runtime"
        assert error.decision["channel"] == "write"
        assert error.decision["trigger"] == trigger
        assert error.decision["admitted"] is False
        setting = (
            "layers.runtime.enabled" if mode == "disabled" else "layers.runtime.participation.write"
        )
        assert error.decision["setting"] == setting
        assert error.decision["env"] in str(error)
        assert error.to_dict()["decision"] == error.decision
        # Management reads stay available whatever the switch says.
        assert [e.content for e in mem.runtime.entries("memory")] == ["Deploys go through CI."]
        assert mem.status().runtime.memory_entries == 1


def test_item1_read_only_refuses_every_runtime_write_and_maintenance(
    backend: RuntimeBackend, tmp_path: Path
) -> None:
    _seed(backend, tmp_path)
    with backend.host(tmp_path, write_enabled=False) as mem:
        before = _stored(backend, tmp_path)
        rt = mem.runtime
        calls = [
            *(lambda op=op: WRITES[op](rt) for op in WRITES),
            lambda: rt.plan_maintenance(_add("x")),
            lambda: rt.compact_target(rt.revision, "memory", [CompactedEntry(content="y")]),
            lambda: rt.compact_and_mutate(rt.revision, _add("x"), []),
            lambda: mem.write_runtime(_add("x")),
        ]
        for call in calls:
            with pytest.raises(ReadOnlyError) as info:
                call()
            assert info.value.decision is not None
            assert info.value.decision["setting"] == "write_enabled"
        assert _stored(backend, tmp_path) == before


# --- item 1: the runtime maintenance channel ------------------------------------------------


def _overflowing(backend: RuntimeBackend, root: Path, maintenance: str, **settings: Any) -> Mnemon:
    layers = {"runtime": _layer(maintenance, "maintenance")}
    limits = {"memory_limit_bytes": MEMORY_LIMIT}
    mem = backend.host(root, layers=layers, runtime=limits, **settings)
    _full_memory(mem)
    return mem


@pytest.mark.parametrize(
    ("maintenance", "trigger", "strategy"),
    [
        ("off", "explicit", "layered"),
        ("off", "automatic", "layered"),
        ("manual", "automatic", "layered"),
        ("automatic", "explicit", "general"),  # the strategy rule: General never maintains
    ],
)
def test_item1_overflow_without_maintenance_is_a_capacity_error(
    backend: RuntimeBackend, tmp_path: Path, maintenance: str, trigger: str, strategy: str
) -> None:
    # (maintenance "disabled" = the layer disabled: its writes are refused first, see above)
    mem = _overflowing(backend, tmp_path, maintenance, strategy=strategy)
    space = mem.spaces.create_space("Ops", "Operations", active=True).space
    assert space is not None
    before, rows = _stored(backend, tmp_path), _rows(tmp_path)
    with acting(trigger), pytest.raises(CapacityError) as info:  # type: ignore[arg-type]
        mem.write_runtime(_add(ONE_MORE))
    assert "Would exceed memory runtime memory capacity" in str(info.value)
    assert info.value.plan is not None  # the original error, its plan included
    assert _stored(backend, tmp_path) == before
    assert _rows(tmp_path) == rows  # no archival copy in the space either
    assert not (tmp_path / "runtime" / "archived").exists()
    mem.close()


def test_item1_manual_maintenance_runs_for_an_explicit_write(
    backend: RuntimeBackend, tmp_path: Path
) -> None:
    with _overflowing(backend, tmp_path, "manual") as mem:
        receipt = mem.write_runtime(_add(ONE_MORE))  # the Python API: explicit
        assert receipt.status == "committed"
        assert receipt.action == "add"
        assert mem.runtime.entries("memory")[-1].content == ONE_MORE
        assert receipt.archived_locally == len(receipt.left_out) > 0
        assert receipt.outcome == "succeeded"
        assert [s.target for s in receipt.steps] == ["runtime/archived"]


def test_item1_maintenance_set_off_by_a_model_write_is_automatic(
    backend: RuntimeBackend, tmp_path: Path
) -> None:
    # runtime write automatic, maintenance manual: the model's write itself is admitted, the
    # maintenance it would set off is not (an automatic trigger on a manual channel).
    with _overflowing(backend, tmp_path, "manual") as mem:
        before = _stored(backend, tmp_path)
        with acting("automatic"), pytest.raises(CapacityError) as info:
            mem.write_runtime(_add(ONE_MORE))
        # A CapacityError, not a ParticipationError: the write was admitted, maintenance not.
        assert info.value.code == "runtime-capacity"
        assert "Capacity maintenance did not complete" not in str(info.value)  # never ran
        assert _stored(backend, tmp_path) == before


def test_item1_graph_run_directly_asks_the_kernel_before_any_space_write(
    backend: RuntimeBackend, tmp_path: Path
) -> None:
    # The served lifecycle graphs can be run on their own: the plan step asks maintenance.
    with _overflowing(backend, tmp_path, "off") as mem:
        space = mem.spaces.create_space("Ops", "Operations", active=True).space
        assert space is not None
        before, rows = _stored(backend, tmp_path), _rows(tmp_path)
        out = build_memory_archival_graph(mem.runtime, mem.spaces).invoke(
            {"request": _add(ONE_MORE)}
        )
        assert "maintenance is off" in out["error"]
        assert "receipt" not in out
        assert _stored(backend, tmp_path) == before
        assert _rows(tmp_path) == rows
        for call in (
            lambda: mem.runtime.compact_target(mem.runtime.revision, "memory", []),
            lambda: mem.runtime.compact_and_mutate(mem.runtime.revision, _add(ONE_MORE), []),
        ):
            with pytest.raises(ParticipationError, match="maintenance is off"):
                call()
        assert _stored(backend, tmp_path) == before


# --- item 1: MEMORY archival destinations are automatic Memory Space writes ----------------


@pytest.mark.parametrize("spaces_mode", ["off", "manual", "disabled"])
@pytest.mark.parametrize("trigger", TRIGGERS)
def test_item1_memory_archival_without_an_admitting_space_stays_local(
    backend: RuntimeBackend, tmp_path: Path, spaces_mode: str, trigger: str
) -> None:
    limits = {"memory_limit_bytes": MEMORY_LIMIT}
    with backend.host(tmp_path, runtime=limits) as setup:
        space = setup.spaces.create_space("Ops", "Operations", active=True).space
        assert space is not None
        _full_memory(setup)
    layers = {"memory_spaces": _layer(spaces_mode, "write")}
    with backend.host(tmp_path, layers=layers, runtime=limits) as mem:
        rows = _rows(tmp_path)
        with acting(trigger):  # type: ignore[arg-type]
            receipt = mem.write_runtime(_add(ONE_MORE))
        assert receipt.status == "committed"
        assert mem.runtime.entries("memory")[-1].content == ONE_MORE
        archived = {r["entry"]["content"] for r in mem.runtime.archived("memory")}
        assert archived == set(receipt.left_out) != set()
        assert archived == set(RULES) - {e.content for e in mem.runtime.entries("memory")}
        assert _rows(tmp_path) == rows  # not one row in any space
        assert receipt.outcome == "succeeded"
        assert [(s.target, s.status) for s in receipt.steps] == [("runtime/archived", "committed")]


def test_item1_memory_archival_into_an_admitting_space(
    backend: RuntimeBackend, tmp_path: Path
) -> None:
    with backend.host(tmp_path, runtime={"memory_limit_bytes": MEMORY_LIMIT}) as mem:
        space = mem.spaces.create_space("Ops", "Operations", active=True).space
        assert space is not None
        _full_memory(mem)
        with acting("automatic"):  # a model's write: the space write channel is automatic
            receipt = mem.write_runtime(_add(ONE_MORE))
        stored = {row.content for row in mem.spaces.browse(space.id, limit=50)}
        assert stored == set(RULES)
        assert mem.runtime.archived("memory") == []  # durable copies: nothing local
        assert receipt.outcome == "succeeded"
        assert len(receipt.steps) == 1
        step = receipt.steps[0]
        assert (step.target, step.status, len(step.ids)) == (space.id, "committed", len(RULES))


# --- item 2: a destination that fails makes the receipt partial ---------------------------


def _routes(mapping: list[tuple[list[int], str]]) -> AIMessage:
    routes = [{"source_indexes": s, "memory_body_id": m} for s, m in mapping]
    return tool_call(
        "mnemon_archive_routes", {"summary": "", "action": "planned", "routes": routes}
    )


def test_item2_a_failing_destination_is_partial_and_named(
    backend: RuntimeBackend, tmp_path: Path
) -> None:
    with backend.host(tmp_path, runtime={"memory_limit_bytes": MEMORY_LIMIT}) as mem:
        mem.spaces.register_provider(FailingProvider())
        good = mem.spaces.create_space("Ops", "Operations", active=True).space
        bad = mem.spaces.create_space("Broken", "x", provider_id="failing", active=True).space
        assert good is not None
        assert bad is not None
        _full_memory(mem)
        model = ScriptedChatModel(
            responses=[_routes([([1, 2, 3, 4], good.id), ([5, 6, 7, 8, 9], bad.id)])]
        )
        out = build_memory_archival_graph(mem.runtime, mem.spaces, model).invoke(
            {"request": _add(ONE_MORE)}
        )
        assert "error" not in out, out.get("error")
        receipt = out["receipt"]
        assert receipt.status == "committed"  # hot memory changed, the add is in
        assert mem.runtime.entries("memory")[-1].content == ONE_MORE
        assert receipt.outcome == "partial"
        by_target = {s.target: s for s in receipt.steps}
        assert by_target[good.id].status == "committed"
        assert len(by_target[good.id].ids) == 4
        assert by_target[bad.id].status == "failed"
        assert "connection refused" in by_target[bad.id].message
        assert by_target["runtime/archived"].status == "committed"
        assert bad.id in receipt.message
        assert "partial" in receipt.message
        # Nothing lost: every rule is hot, in the good space, or in the local archive.
        hot = {e.content for e in mem.runtime.entries("memory")}
        in_space = {row.content for row in mem.spaces.browse(good.id, limit=50)}
        local = {r["entry"]["content"] for r in mem.runtime.archived("memory")}
        assert in_space == set(RULES[:4])
        assert set(RULES) <= hot | in_space | local
        assert local == set(receipt.left_out) - in_space  # only what had no durable copy


# --- item 7: USER compaction without a model loses nothing ---------------------------------

PROFILE = [
    "I work from Lisbon.",
    "Prefers answers in British English.",
    "Uses a standing desk and two monitors.",
    "Has a cat called Miso.",
]


def test_item7_user_compaction_without_a_model_refuses_instead_of_archiving(
    backend: RuntimeBackend,
    tmp_path: Path,
) -> None:
    with backend.host(tmp_path, runtime={"user_limit_bytes": 130}) as mem:
        for fact in PROFILE:
            mem.runtime.add("user", fact)
        user_md = backend.projection(mem.runtime, tmp_path, "user")
        before = _stored(backend, tmp_path)
        with pytest.raises(CapacityError) as info:
            mem.write_runtime(_add("Speaks Portuguese and English at home.", "user"))
        message = str(info.value)
        assert "'I work from Lisbon.' (19 bytes)" in message
        assert "Shorten or remove entries" in message
        assert _stored(backend, tmp_path) == before
        assert backend.projection(mem.runtime, tmp_path, "user") == user_md
        assert not (tmp_path / "runtime" / "archived" / "user.jsonl").exists()
        assert [e.content for e in mem.runtime.entries("user")] == PROFILE
        assert mem.spaces.list_spaces() == []


def test_item7_near_duplicates_merge_and_keep_every_fact(
    backend: RuntimeBackend, tmp_path: Path
) -> None:
    profile = [
        "I work from Lisbon.",
        "i work from LISBON",
        "Prefers tea.",
        "Since 2021 I work from Lisbon, Portugal.",
        "Prefers tea, never coffee.",
    ]
    pending = "Has a cat called Miso."
    # 131 bytes stored; the add needs 26 more (limit 140); merged, the profile takes 70.
    with backend.host(tmp_path, runtime={"user_limit_bytes": 140}) as mem:
        for fact in profile:
            mem.runtime.add("user", fact)
        receipt = mem.write_runtime(_add(pending, "user"))
        assert receipt.status == "committed"
        hot = [e.content for e in mem.runtime.entries("user")]
        assert hot == [
            "Since 2021 I work from Lisbon, Portugal.",
            "Prefers tea, never coffee.",
            pending,
        ]
        # Every original fact is still in USER.md, word for word (folded).
        for fact in profile:
            assert any(f" {_fold(fact)} " in f" {_fold(h)} " for h in hot), fact


def test_item7_a_short_fact_inside_a_longer_one_is_not_blurred(
    backend: RuntimeBackend, tmp_path: Path
) -> None:
    with backend.host(tmp_path) as mem:
        for fact in ("Vegetarian.", "Partner is vegetarian.", "Prefers tea.", "prefers TEA"):
            mem.runtime.add("user", fact)
        plan = mem.runtime.plan_maintenance(_add("Has a cat.", "user"))
        groups = [p.source_indexes for p in heuristic_compaction(plan).compacted_entries]
        # The exact duplicate merges; "Vegetarian." is about the user, not the partner.
        assert groups == [[1], [2], [3, 4]]


def test_item7_the_model_path_is_still_validated_for_coverage(
    backend: RuntimeBackend, tmp_path: Path
) -> None:
    with backend.host(tmp_path, runtime={"user_limit_bytes": 130}) as mem:
        for fact in PROFILE:
            mem.runtime.add("user", fact)
        before = _stored(backend, tmp_path)
        dropped = tool_call(
            "mnemon_compaction_result",
            {
                "summary": "",
                "action": "compacted",
                "compacted_entries": [{"content": "Lisbon.", "source_indexes": [1]}],
            },
        )
        out = build_user_compaction_graph(
            mem.runtime, ScriptedChatModel(responses=[dropped])
        ).invoke({"request": _add("Speaks Portuguese.", "user")})
        assert "not covered" in out["error"]
        assert _stored(backend, tmp_path) == before


# --- item 7: Runtime recall over current and archived entries ------------------------------


def _with_archive(backend: RuntimeBackend, root: Path, **settings: Any) -> Mnemon:
    mem = backend.host(root, runtime={"memory_limit_bytes": MEMORY_LIMIT}, **settings)
    mem.runtime.add("user", "Lives in São Paulo.")
    _full_memory(mem)
    mem.write_runtime(_add(ONE_MORE))  # no space: left-out rules go to runtime/archived/
    return mem


def test_item7_search_finds_archived_entries(backend: RuntimeBackend, tmp_path: Path) -> None:
    with _with_archive(backend, tmp_path) as mem:
        archived = {r["entry"]["content"] for r in mem.runtime.archived("memory")}
        assert archived
        gone = sorted(archived)[0]
        number = gone.split(":")[0].split()[1]
        matches = mem.runtime.search(f"systemctl restart s{number}", target="memory")
        assert matches
        best = matches[0]
        assert isinstance(best, RuntimeMatch)
        assert (best.content, best.archived, best.target) == (gone, True, "memory")
        assert best.score == 1.0
        assert best.archived_at is not None
        assert all(m.score <= best.score for m in matches)
        # A current entry is found too, marked as not archived.
        current = mem.runtime.search("var log rotate weekly")
        assert (current[0].content, current[0].archived) == (ONE_MORE, False)
        # Accents and case fold; the target filter holds; the limit holds.
        user = mem.runtime.search("SAO PAULO")
        assert [(m.target, m.content) for m in user] == [("user", "Lives in São Paulo.")]
        assert mem.runtime.search("sao paulo", target="memory") == []
        assert len(mem.runtime.search("systemctl restart", limit=2)) == 2


def test_item7_search_asks_recall_before_reading_anything(tmp_path: Path) -> None:
    _with_archive(_FILES, tmp_path).close()
    for mode in ("off", "disabled"):
        layers = {"runtime": _layer(mode, "recall")}
        with Mnemon.open(tmp_path, layers=layers) as mem:
            # A damaged authority proves nothing was read: a read would raise StorageError.
            authority = tmp_path / "runtime" / "memories.json"
            good = authority.read_bytes()
            authority.write_bytes(b"{not json")
            try:
                with pytest.raises(ParticipationError) as info:
                    mem.runtime.search("systemctl")
                assert info.value.code == _code(mode)
                assert info.value.decision["channel"] == "recall"
            finally:
                authority.write_bytes(good)
    with Mnemon.open(tmp_path) as mem:  # control: with recall open the read does happen
        authority = tmp_path / "runtime" / "memories.json"
        good = authority.read_bytes()
        authority.write_bytes(b"{not json")
        try:
            with pytest.raises(StorageError):
                mem.runtime.search("systemctl")
        finally:
            authority.write_bytes(good)


def test_item7_search_under_manual_recall(backend: RuntimeBackend, tmp_path: Path) -> None:
    _with_archive(backend, tmp_path).close()
    with backend.host(tmp_path, layers={"runtime": _layer("manual", "recall")}) as mem:
        assert mem.runtime.search("systemctl")  # explicit: admitted
        with acting("automatic"), pytest.raises(ParticipationError) as info:
            mem.runtime.search("systemctl")
        assert info.value.code == "channel-manual"


def test_item7_search_never_touches_a_memory_space(backend: RuntimeBackend, tmp_path: Path) -> None:
    with _with_archive(backend, tmp_path) as mem:
        provider = CountingStoreProvider()
        mem.spaces.register_provider(provider)
        space = mem.spaces.create_space("Ops", "x", provider_id=provider.descriptor.id).space
        assert space is not None
        mem.spaces.remember("Restart with systemctl restart app.", space_id=space.id)
        rows = _rows(tmp_path)
        matches = mem.runtime.search("systemctl restart")
        assert matches
        assert all(m.content in RULES for m in matches)  # nothing from the space
        assert provider.modes == []  # the provider was never asked
        assert _rows(tmp_path) == rows
