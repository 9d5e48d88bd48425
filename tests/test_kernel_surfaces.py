"""Issue 13 on the human surfaces: the control plane, the CLI and the BaseStore facade ask the
kernel (through the layers) like every other entry point.

Real storage roots (files + SQLite) through ``Mnemon.open``; the control plane through httpx's
ASGI transport and once through a real uvicorn server; the CLI as real subprocesses; the store
facade over the real Memory Spaces. Every refusal is checked byte for byte: every file under
the root and every row of every table are the same before and after.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph.store.base import PutOp, SearchOp
from server_support import uvicorn_in_thread

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import InvalidInputError, ParticipationError, ReadOnlyError
from langgraph_mnemon.memory_layers.runtime import RuntimeMutation
from langgraph_mnemon.server.http import create_app

API = "/mnemon/api"
QUIET = {"chroma": {"enabled": False}, "embedding": {"enabled": False}}


def _open(root: Path, **settings: Any) -> Mnemon:
    return Mnemon.open(root, workspace=root.parent, **{**QUIET, **settings})


def _snapshot(root: Path) -> tuple[dict[str, str], dict[str, list[tuple[Any, ...]]]]:
    """Every file under ``root`` (hash) and every row of every table of its database."""
    files = {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith("mnemon.db")
    }
    rows: dict[str, list[tuple[Any, ...]]] = {}
    db = root / "mnemon.db"
    if db.exists():
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            tables = [
                name
                for (name,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"
                )
            ]
            for table in tables:
                found = conn.execute(f'SELECT * FROM "{table}"').fetchall()
                rows[table] = sorted(found, key=repr)
        finally:
            conn.close()
    return files, rows


def _seed(mem: Mnemon) -> dict[str, str]:
    """One entry, one Document and one Memory Space with one memory, through the Python API."""
    assert mem.runtime.add("memory", "Seeded MEMORY entry about staging.").committed
    doc = mem.documents.create("Seed runbook", "Staging restarts need the seed token.")
    space = mem.spaces.create_space("Project", "Project facts", active=True).space
    assert space is not None
    memory = mem.spaces.remember("The staging database listens on port 5433.", space_id=space.id)
    assert memory.committed
    assert memory.id
    return {"doc": doc.document.id, "space": space.id, "memory": memory.id}


def _switch(mem: Mnemon, layer: str, channel: str, mode: str) -> None:
    """Flip one switch on the live configuration (the kernel reads it at every operation)."""
    section = getattr(mem.config.layers, layer)
    if mode == "disabled":
        section.enabled = False
    else:
        setattr(section.participation, channel, mode)


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, client=("127.0.0.1", 5000)),
        base_url="http://127.0.0.1:8765",
        headers={"Content-Type": "application/json"},
    )


# --- item 1: the control plane, per layer and channel ---------------------------------------

# (layer, channel, method, path, body): every control-plane operation that is not a
# management read, with the channel the layer asks for.
OPERATIONS = [
    (
        "runtime",
        "write",
        "POST",
        "/runtime",
        {"action": "add", "target": "memory", "content": "X."},
    ),
    ("documents", "write", "POST", "/documents", {"title": "Runbook", "content": "Restart it."}),
    ("documents", "write", "POST", "/documents/{doc}/archive", None),
    ("documents", "recall", "GET", "/documents/search?q=staging", None),
    ("memory_spaces", "write", "POST", "/spaces/{space}/memories", {"content": "Port 5434."}),
    ("memory_spaces", "write", "DELETE", "/spaces/{space}/memories/{memory}", None),
    ("memory_spaces", "recall", "POST", "/recall", {"query": "staging database"}),
    ("memory_spaces", "recall", "POST", "/query", {"question": "Which port does staging use?"}),
    ("memory_spaces", "maintenance", "POST", "/spaces", {"name": "New space"}),
    ("memory_spaces", "maintenance", "POST", "/spaces/{space}/active", {"active": False}),
]
MANAGEMENT_READS = [
    "/status",
    "/runtime",
    "/documents",
    "/documents/{doc}",
    "/spaces",
    "/spaces/{space}/content",
    "/spaces/{space}/entities",
    "/spaces/{space}/graph",
]


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["off", "disabled", "manual", "automatic"])
@pytest.mark.parametrize(
    ("layer", "channel", "method", "path", "body"),
    OPERATIONS,
    ids=[f"{o[0]}-{o[1]}-{o[2]}-{o[3]}" for o in OPERATIONS],
)
async def test_item1_control_plane_asks_the_kernel(
    tmp_path: Path, mode: str, layer: str, channel: str, method: str, path: str, body: Any
) -> None:
    root = tmp_path / "m"
    mem = _open(root)
    try:
        ids = _seed(mem)
        _switch(mem, layer, channel, mode)
        before = _snapshot(root)
        async with _client(create_app(mem)) as api:
            response = await api.request(method, API + path.format(**ids), json=body)
            if mode in ("manual", "automatic"):  # the control plane is an explicit trigger
                assert response.status_code == 200, response.text
                return
            assert response.status_code == 403, response.text
            error = response.json()
            setting = (
                f"layers.{layer}.enabled"
                if mode == "disabled"
                else f"layers.{layer}.participation.{channel}"
            )
            env = "MNEMON_" + setting.replace(".", "__").upper()
            assert error["error"] == ("layer-disabled" if mode == "disabled" else "channel-off")
            assert error["decision"] == {
                "layer": layer,
                "channel": channel,
                "trigger": "explicit",
                "mode": mode,
                "admitted": False,
                "setting": setting,
                "env": env,
            }
            assert setting in error["message"]
            assert env in error["message"]
            # Switching a layer off never hides its data: management reads still answer.
            for read in MANAGEMENT_READS:
                listed = await api.get(API + read.format(**ids))
                assert listed.status_code == 200, (read, listed.text)
        assert _snapshot(root) == before  # nothing written, not even a row
    finally:
        mem.close()


@pytest.mark.asyncio
async def test_item1_settings_patch_is_a_write_the_kernel_refuses_when_read_only(
    tmp_path: Path,
) -> None:
    root = tmp_path / "m"
    _seed(_open(root))
    mem = _open(root, write_enabled=False)
    try:
        before = _snapshot(root)
        async with _client(create_app(mem)) as api:
            patch = {"layers": {"runtime": {"participation": {"write": "off"}}}}
            refused = await api.patch(f"{API}/settings", json=patch)
            assert refused.status_code == 403, refused.text
            assert refused.json()["error"] == "read-only"
            write = await api.post(
                f"{API}/runtime", json={"action": "add", "target": "memory", "content": "X."}
            )
            assert write.status_code == 403
            assert write.json()["decision"]["mode"] == "read-only"
            assert write.json()["decision"]["env"] == "MNEMON_WRITE_ENABLED"
        assert mem.config.layers.runtime.participation.write == "automatic"
        assert _snapshot(root) == before
    finally:
        mem.close()


# --- item 1 / "PATCH /settings during a served session" -------------------------------------


def test_item1_patch_settings_flip_applies_to_the_next_operation_in_a_served_session(
    tmp_path: Path,
) -> None:
    root = tmp_path / "m"
    mem = _open(root)
    add = {"action": "add", "target": "memory", "content": "Deploys go through CI."}
    try:
        with (
            uvicorn_in_thread(create_app(mem)) as port,
            httpx.Client(
                base_url=f"http://127.0.0.1:{port}",
                headers={"Content-Type": "application/json"},
                timeout=30,
            ) as api,
        ):
            first = api.post(f"{API}/runtime", json={**add, "content": "Tests run with pytest."})
            assert first.status_code == 200, first.text

            off = {"layers": {"runtime": {"participation": {"write": "off"}}}}
            patched = api.patch(f"{API}/settings", json=off)
            assert patched.status_code == 200, patched.text
            assert patched.json()["live"]["layers"]["runtime"]["participation"]["write"] == "off"
            before = _snapshot(root)
            refused = api.post(f"{API}/runtime", json=add)
            assert refused.status_code == 403, refused.text
            assert refused.json()["error"] == "channel-off"
            assert refused.json()["decision"]["setting"] == "layers.runtime.participation.write"
            assert _snapshot(root) == before
            # Other layers and channels are untouched by the switch.
            doc = api.post(f"{API}/documents", json={"title": "Runbook", "content": "Restart."})
            assert doc.status_code == 200, doc.text

            back = {"layers": {"runtime": {"participation": {"write": "automatic"}}}}
            assert api.patch(f"{API}/settings", json=back).status_code == 200
            committed = api.post(f"{API}/runtime", json=add)
            assert committed.status_code == 200, committed.text
            assert committed.json()["status"] == "committed"

            disable = api.patch(
                f"{API}/settings", json={"layers": {"documents": {"enabled": False}}}
            )
            assert disable.status_code == 200
            gone = api.post(f"{API}/documents", json={"title": "Other", "content": "Body."})
            assert gone.status_code == 403
            assert gone.json()["error"] == "layer-disabled"
            assert api.get(f"{API}/documents").json()["documents"]  # still listed
        assert [e.content for e in mem.runtime.entries("memory")] == [
            "Tests run with pytest.",
            "Deploys go through CI.",
        ]
    finally:
        mem.close()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("patch", "fragment"),
    [
        ({"layers": {"mnemos": {"enabled": False}}}, "mnemos"),
        ({"layers": {"runtime": {"participation": {"writes": "off"}}}}, "writes"),
        ({"layers": {"runtime": {"participation": {"write": "sometimes"}}}}, "write"),
        ({"layers": {"runtime": {"enabled": "no"}}}, "enabled"),
        ({"layers": {"runtime": {}}}, "runtime"),
        ({"layers": {}}, "layers"),
        (
            {"layers": {"runtime": {"participation": {"write": "off"}}}, "write_enabled": False},
            "write_enabled",
        ),
    ],
)
async def test_item1_participation_patches_are_validated_and_change_nothing_when_bad(
    tmp_path: Path, patch: dict[str, Any], fragment: str
) -> None:
    mem = _open(tmp_path / "m")
    try:
        before = mem.config.model_dump()
        async with _client(create_app(mem)) as api:
            response = await api.patch(f"{API}/settings", json=patch)
        assert response.status_code == 422, response.text
        assert fragment in response.json()["message"]
        assert mem.config.model_dump() == before
    finally:
        mem.close()


# --- item 1: the CLI -----------------------------------------------------------------------


def _cli(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {
        **os.environ,
        "MNEMON_CHROMA__ENABLED": "false",
        "MNEMON_EMBEDDING__ENABLED": "false",
        "MNEMON_WORKSPACE": str(root.parent),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "langgraph_mnemon.cli", "--root", str(root), *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
    )


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    root = tmp_path / "m"
    with _open(root) as mem:
        ids = _seed(mem)
    return root, ids


@pytest.mark.parametrize(
    ("args", "setting", "value", "code"),
    [
        (
            ("runtime", "add", "memory", "Deploys go through CI."),
            "layers.runtime.participation.write",
            "off",
            1,
        ),
        (
            ("runtime", "add", "memory", "Deploys go through CI."),
            "layers.runtime.participation.write",
            "manual",
            0,
        ),
        (("docs", "create", "Body.", "--title", "Runbook"), "layers.documents.enabled", "false", 1),
        (("docs", "search", "staging"), "layers.documents.participation.recall", "off", 1),
        (("spaces", "search", "staging"), "layers.memory_spaces.participation.recall", "off", 1),
        (("spaces", "search", "staging"), "layers.memory_spaces.participation.recall", "manual", 0),
        (("spaces", "create", "New"), "layers.memory_spaces.participation.maintenance", "off", 1),
        (("remember", "Alice owns billing."), "layers.memory_spaces.participation.write", "off", 1),
        (("runtime", "add", "memory", "Deploys go through CI."), "write_enabled", "false", 1),
    ],
)
def test_item1_cli_commands_are_explicit_and_refusals_name_the_setting(
    seeded: tuple[Path, dict[str, str]], args: tuple[str, ...], setting: str, value: str, code: int
) -> None:
    root, _ids = seeded
    env_name = "MNEMON_" + setting.replace(".", "__").upper()
    before = _snapshot(root)
    done = _cli(root, *args, **{env_name: value})
    assert done.returncode == code, (done.stdout, done.stderr)
    if code == 0:  # manual admits a person at the command line
        assert "error" not in done.stderr
        return
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("mnemon: error: "), done.stderr
    assert setting in line, line
    assert env_name in line, line
    assert "Traceback" not in done.stderr
    assert _snapshot(root) == before


def test_item1_cli_management_reads_work_with_every_layer_disabled(
    seeded: tuple[Path, dict[str, str]],
) -> None:
    root, ids = seeded
    off = {
        f"MNEMON_LAYERS__{layer}__ENABLED": "false"
        for layer in ("RUNTIME", "DOCUMENTS", "MEMORY_SPACES")
    }
    before = _snapshot(root)
    for args, shown in [
        (("docs", "list"), "Seed runbook"),
        (("spaces", "list"), ids["space"]),
        (("status",), "Runtime MEMORY.md"),
    ]:
        done = _cli(root, *args, **off)
        assert done.returncode == 0, done.stderr
        assert shown in done.stdout
    assert _snapshot(root) == before


# --- item 1: the BaseStore facade ---------------------------------------------------------------


def test_item1_store_put_and_search_are_refused_by_the_kernel(tmp_path: Path) -> None:
    root = tmp_path / "m"
    mem = _open(root)
    try:
        store = mem.store()
        store.put(("notes",), "a", {"text": "Deploys need two approvals."})
        mem.config.layers.memory_spaces.participation.write = "off"
        before = _snapshot(root)
        with pytest.raises(ParticipationError) as put:
            store.put(("notes",), "b", {"text": "Rollbacks need one."})
        assert put.value.decision["setting"] == "layers.memory_spaces.participation.write"
        with pytest.raises(ParticipationError):
            store.delete(("notes",), "a")
        # A batch with a put is refused before its first op (no get, no write ran).
        with pytest.raises(ParticipationError):
            store.batch([SearchOp(("notes",)), PutOp(("notes",), "c", {"x": 1})])
        assert _snapshot(root) == before
        assert store.get(("notes",), "a").value == {"text": "Deploys need two approvals."}

        mem.config.layers.memory_spaces.participation.recall = "off"
        with pytest.raises(ParticipationError) as search:
            store.search(("notes",), query="approvals")
        assert search.value.decision["channel"] == "recall"
        # Listing without a query and get are management reads.
        assert [i.key for i in store.search(("notes",))] == ["a"]
        assert store.list_namespaces() == [("notes",)]
        assert _snapshot(root) == before
    finally:
        mem.close()


def test_item1_an_automatic_store_is_refused_by_manual_channels(tmp_path: Path) -> None:
    root = tmp_path / "m"
    mem = _open(root)
    try:
        explicit, model_store = mem.store(), mem.store(trigger="automatic")
        assert model_store is mem.store(trigger="automatic")
        assert model_store.trigger == "automatic"
        assert explicit.trigger is None
        assert explicit.host is mem
        explicit.put(("notes",), "a", {"text": "Deploys need two approvals."})
        mem.config.layers.memory_spaces.participation.write = "manual"
        mem.config.layers.memory_spaces.participation.recall = "manual"
        before = _snapshot(root)
        with pytest.raises(ParticipationError) as refused:
            model_store.put(("notes",), "b", {"text": "A model wrote this."})
        assert refused.value.code == "channel-manual"
        assert refused.value.decision["trigger"] == "automatic"
        with pytest.raises(ParticipationError):
            asyncio.run(model_store.aput(("notes",), "b", {"text": "A model wrote this."}))

        async def sync_put_inside_a_loop() -> None:
            # The sync twin runs on a helper thread here: the trigger must travel with it.
            model_store.put(("notes",), "b", {"text": "A model wrote this."})

        with pytest.raises(ParticipationError):
            asyncio.run(sync_put_inside_a_loop())
        with pytest.raises(ParticipationError):
            model_store.search(("notes",), query="approvals")
        assert _snapshot(root) == before
        # The same channels admit the application (explicit).
        explicit.put(("notes",), "b", {"text": "The application wrote this."})
        # A query search ranks every item (LangGraph's stores): the matching one first.
        assert explicit.search(("notes",), query="application")[0].key == "b"
        with pytest.raises(InvalidInputError):
            mem.store(trigger="sometimes")  # type: ignore[arg-type]
    finally:
        mem.close()


def test_item2_a_failed_batch_op_is_not_presented_as_success(tmp_path: Path) -> None:
    root = tmp_path / "m"
    mem = _open(root)
    try:
        store = mem.store()
        store.put(("notes",), "seed", {"text": "Existing namespace."})
        # A put into a new namespace creates its Memory Space: catalog maintenance.
        mem.config.layers.memory_spaces.participation.maintenance = "off"
        ops = [
            PutOp(("notes",), "a", {"text": "Applied first."}),
            PutOp(("other",), "b", {"text": "Needs a new space."}),
            PutOp(("notes",), "c", {"text": "Never reached."}),
        ]
        with pytest.raises(ParticipationError) as failed:
            store.batch(ops)
        message = str(failed.value)
        assert "batch op 2 of 3 failed" in message
        assert "1 earlier put(s) were applied" in message
        assert "'a'" in message
        assert failed.value.applied == [(("notes",), "a")]  # type: ignore[attr-defined]
        assert failed.value.decision["channel"] == "maintenance"
        assert store.get(("notes",), "a") is not None  # what the error says was applied
        assert store.get(("notes",), "c") is None  # later ops did not run
        assert store.list_namespaces() == [("notes",)]
    finally:
        mem.close()


def test_item1_read_only_store_refuses_before_any_io(tmp_path: Path) -> None:
    root = tmp_path / "m"
    with _open(root) as mem:
        mem.store().put(("notes",), "a", {"text": "Seeded."})
    mem = _open(root, write_enabled=False)
    try:
        before = _snapshot(root)
        with pytest.raises(ReadOnlyError) as refused:
            mem.store().put(("notes",), "b", {"text": "No."})
        assert refused.value.decision["setting"] == "write_enabled"
        assert mem.store().get(("notes",), "a").value == {"text": "Seeded."}
        assert _snapshot(root) == before
    finally:
        mem.close()


# --- item 7: archived Runtime entries on the control plane ------------------------------------


@pytest.mark.asyncio
async def test_item7_runtime_view_lists_locally_archived_entries(tmp_path: Path) -> None:
    root = tmp_path / "m"
    # No Memory Space admits automatic writes: MEMORY archival keeps entries in runtime/archived.
    mem = _open(
        root,
        runtime={"memory_limit_bytes": 160},
        layers={"memory_spaces": {"participation": {"write": "manual"}}},
    )
    try:
        facts = [f"Fact {i}: <b>deploy</b> step {i} runs after the smoke tests." for i in range(4)]
        for fact in facts:  # overflow runs capacity maintenance (MEMORY archival)
            receipt = mem.write_runtime(
                RuntimeMutation(action="add", target="memory", content=fact)
            )
            assert receipt.committed, receipt
        archived = mem.runtime.archived("memory")
        assert archived, "MEMORY archival kept nothing locally"
        async with _client(create_app(mem)) as api:
            view = (await api.get(f"{API}/runtime")).json()
        shown = view["memory"]["archived"]
        assert [a["content"] for a in shown] == [r["entry"]["content"] for r in archived]
        assert all(a["archived_at"] and a["importance"] == "normal" for a in shown)
        assert view["user"]["archived"] == []
        live = {e["content"] for e in view["memory"]["entries"]}
        assert not live & {a["content"] for a in shown}
    finally:
        mem.close()


# --- item 3: GET /status tells the truth --------------------------------------------------------


@pytest.mark.asyncio
async def test_item3_status_marks_a_space_whose_provider_is_missing(tmp_path: Path) -> None:
    root = tmp_path / "m"
    with _open(root, chroma={"enabled": True}) as mem:
        chroma = mem.spaces.create_space("Vectors", "On chroma", provider_id="chroma").space
        native = mem.spaces.create_space("Native", "On the native provider").space
        assert chroma is not None
        assert native is not None
    mem = _open(root)  # chroma is not registered any more
    try:
        async with _client(create_app(mem)) as api:
            status = (await api.get(f"{API}/status")).json()
        assert status["healthy"] is False
        assert status["spaces"]["unreachable"] == [chroma.id]
        states = {p["id"]: p["state"] for p in status["spaces"]["provider_health"]}
        assert states["mnemos"] == "healthy"
    finally:
        mem.close()
