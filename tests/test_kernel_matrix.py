"""The participation matrix (issue 13): layer × channel × mode × trigger surface.

Every cell opens a private copy of one seeded root (USER/MEMORY entries, a Document, an active
Memory Space with two memories; files + SQLite) with one switch set, runs one real operation
and checks the kernel's verdict:

* ``off`` refuses every trigger (``channel-off``), ``manual`` admits explicit triggers only
  (``channel-manual`` for automatic ones), ``automatic`` admits both, ``disabled``
  (``layers.<layer>.enabled=false``) refuses everything (``layer-disabled``) and ``read-only``
  (``write_enabled=false``) refuses writes and maintenance (``read-only``) but no read;
* capacity maintenance set off by a write that overflows: a refused maintenance channel leaves
  the write's own ``CapacityError`` (nothing written); explicit writes set off explicit
  maintenance, a model's write automatic maintenance;
* for EACH refusal every file under the root and every row of every table is identical
  before and after (agent runs: Mnemos task memory and idle-review activity, which every run
  records by design, are left out of the row comparison);
* management reads (list, get, browse, status) work in every mode.

Surfaces and the operations of each cell (— = no such operation on that surface: not
generated). Python API, CLI and control plane are explicit; model tools (a real create_agent
run) and the worker / lifecycle are automatic.

runtime / write
    Python: runtime.add, write_runtime(remove) · CLI: runtime add · HTTP: POST /runtime ·
    model: mnemon_runtime_memory add · lifecycle: —
runtime / recall
    Python: runtime.search · CLI: — · HTTP: — · model: mnemon_runtime_memory search ·
    lifecycle: —
runtime / projection
    Python, CLI, HTTP, model: — · lifecycle: the Wake's Runtime Memory section
runtime / maintenance
    Python: write_runtime overflow, compact_target · CLI: — (its add never maintains) ·
    HTTP: POST /runtime overflow · model: — · lifecycle: overflow set off by a model's add
documents / write
    Python: documents.create, archive_document · CLI: docs create, docs archive ·
    HTTP: POST /documents, POST /documents/{id}/archive · model: mnemon_document_create,
    mnemon_document_manage archive · lifecycle: —
documents / recall
    Python: documents.search · CLI: docs search · HTTP: GET /documents/search ·
    model: mnemon_document_search · lifecycle: —
documents / projection
    Python, CLI, HTTP, model: — · lifecycle: the Wake's Documents cover
documents / maintenance
    Python: write_document overflow · CLI: — (docs create never maintains) ·
    HTTP: POST /documents overflow · model: — · lifecycle: overflow set off by a model's create
memory_spaces / write
    Python: spaces.remember, remember (write worker), spaces.remember_many, spaces.forget ·
    CLI: spaces remember, remember, spaces forget, ingest · HTTP: POST /spaces/{id}/memories,
    DELETE /spaces/{id}/memories/{mid} · model: mnemon_remember, mnemon_forget · lifecycle:
    where MEMORY archival and Document cold references land (a space only when it admits an
    automatic write, else locally)
memory_spaces / recall
    Python: spaces.search, query · CLI: spaces search, query · HTTP: POST /recall,
    POST /query · model: mnemon_recall · lifecycle: —
memory_spaces / projection
    Python, CLI, HTTP, model: — · lifecycle: the Wake's Memory Spaces cover
memory_spaces / maintenance
    Python: create_space, set_active · CLI: spaces create · HTTP: POST /spaces,
    POST /spaces/{id}/active · model: mnemon_memory_body_create · lifecycle: —

Model tools: a tool whose every channel cannot admit a model (off, manual, disabled,
read-only) is absent from ``mem.tools()``; a tool list built while the channel was automatic
and used after the switch flips on ``mem.config`` returns ``{"error": code, "message": ...,
"decision": {...}}`` and writes nothing. ``write_enabled`` is a startup setting, so read-only
model cells run only the tools a read-only host still offers (reads, and
``mnemon_runtime_memory``, offered for its search). Read-only archival / cold-archive cells are
the runtime / documents write refusals above.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from kernel_support import (
    BASE,
    BASE_ENV,
    BATCH,
    DOCUMENT,
    DOCUMENTS_OVERFLOW_LIMIT,
    LAYERS,
    MEMORIES,
    MEMORY,
    MODES,
    NEW_DOCUMENT,
    NEW_MEMORY,
    NEW_RULE,
    NEW_SPACE,
    OVERFLOW_RULE,
    SPACE_ID,
    USER,
    Seed,
    agent_bookkeeping,
    build_template,
    decision_matches,
    expected,
    expected_overflow,
    flip,
    fresh_root,
    mode_env,
    open_host,
    snapshot,
    space_rows,
    tool_result,
)
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import (
    CapacityError,
    MnemonError,
    ParticipationError,
    ReadOnlyError,
)
from langgraph_mnemon.memory_layers.kernel import acting
from langgraph_mnemon.memory_layers.runtime import CompactedEntry, RuntimeMutation
from langgraph_mnemon.memory_layers.write_worker import WriteCandidate
from langgraph_mnemon.testing import ScriptedChatModel, tool_call

API = "/mnemon/api"
QUESTION = "Which port is the staging database on?"


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    return build_template(tmp_path_factory.mktemp("template") / "root")


def _memory_overflow(seed: Seed) -> dict[str, Any]:
    return seed.settings_for_memory_overflow()


def _documents_overflow(seed: Seed) -> dict[str, Any]:
    return {"documents": {"active_limit_bytes": DOCUMENTS_OVERFLOW_LIMIT}}


def _contents(mem: Mnemon, target: str) -> list[str]:
    return [e.content for e in mem.runtime.entries(target)]  # type: ignore[arg-type]


def _stored(mem: Mnemon, space_id: str = SPACE_ID) -> list[str]:
    return [row.content for row in mem.spaces.browse(space_id, limit=200)]


def _assert_refused(
    error: BaseException, layer: str, channel: str, mode: str, trigger: str, code: str
) -> None:
    """``error`` is the typed refusal ``code`` with a decision naming what would allow it."""
    if code == "capacity":  # maintenance refused: the write's own CapacityError
        assert isinstance(error, CapacityError), repr(error)
        assert not isinstance(error, ParticipationError)
        return
    if code == "read-only":
        assert isinstance(error, ReadOnlyError), repr(error)
    else:
        assert isinstance(error, ParticipationError), repr(error)
        assert error.decision is not None
        assert error.decision["env"] in str(error)
    assert isinstance(error, MnemonError)
    assert error.code == code, repr(error)
    decision_matches(error.decision, layer, channel, trigger, mode, code)
    assert error.to_dict()["decision"] == error.decision


# =============================================================================================
# Python API (explicit)


@dataclass(frozen=True)
class Op:
    """One operation of a surface, the check of its effect when admitted, its settings."""

    layer: str
    channel: str
    name: str
    run: Callable[..., Any]
    check: Callable[..., None]
    overflow: bool = False  # capacity maintenance set off by an overflowing write
    settings: Callable[[Seed], dict[str, Any]] | None = None

    def code(self, mode: str, trigger: str) -> str | None:
        if self.overflow:
            return expected_overflow(mode, trigger)
        return expected(mode, trigger, self.channel)

    def refused_channel(self, code: str) -> str:
        # A disabled layer refuses the overflowing write itself, before any maintenance.
        return "write" if self.overflow and code == "layer-disabled" else self.channel


def _check_remember(mem: Mnemon, seed: Seed, receipt: Any) -> None:
    assert receipt.status == "committed", receipt
    assert NEW_MEMORY in _stored(mem)


PYTHON_OPS = (
    Op(
        "runtime",
        "write",
        "runtime.add",
        lambda mem, seed: mem.runtime.add("memory", NEW_RULE),
        lambda mem, seed, r: _check_equal(_contents(mem, "memory"), [*MEMORY, NEW_RULE]),
    ),
    Op(
        "runtime",
        "write",
        "write_runtime-remove",
        lambda mem, seed: mem.write_runtime(
            RuntimeMutation(action="remove", target="user", old_text=USER[1])
        ),
        lambda mem, seed, r: _check_equal(_contents(mem, "user"), [USER[0]]),
    ),
    Op(
        "runtime",
        "recall",
        "runtime.search",
        lambda mem, seed: mem.runtime.search("deploys CI"),
        lambda mem, seed, r: _check_true(any(m.content == MEMORY[0] for m in r), r),
    ),
    Op(
        "runtime",
        "maintenance",
        "write_runtime-overflow",
        lambda mem, seed: mem.write_runtime(
            RuntimeMutation(action="add", target="memory", content=OVERFLOW_RULE)
        ),
        lambda mem, seed, r: _check_true(
            r.status == "committed" and OVERFLOW_RULE in _contents(mem, "memory"), r
        ),
        overflow=True,
        settings=_memory_overflow,
    ),
    Op(
        "runtime",
        "maintenance",
        "compact_target",
        lambda mem, seed: mem.runtime.compact_target(
            mem.runtime.revision,
            "memory",
            [
                CompactedEntry(content=text, source_indexes=(i,))
                for i, text in enumerate(MEMORY, start=1)
            ],
        ),
        lambda mem, seed, r: _check_true(r.status == "committed", r),
    ),
    Op(
        "documents",
        "write",
        "documents.create",
        lambda mem, seed: mem.documents.create(*NEW_DOCUMENT),
        lambda mem, seed, r: _check_true(
            NEW_DOCUMENT[0] in [d.title for d in mem.documents.list("active")], r
        ),
    ),
    Op(
        "documents",
        "write",
        "archive_document",
        lambda mem, seed: mem.archive_document(seed.document_id),
        lambda mem, seed, r: _check_equal(mem.documents.get(seed.document_id).status, "archived"),
    ),
    Op(
        "documents",
        "recall",
        "documents.search",
        lambda mem, seed: mem.documents.search("queue worker"),
        lambda mem, seed, r: _check_true([h.id for h in r.results] == [seed.document_id], r),
    ),
    Op(
        "documents",
        "maintenance",
        "write_document-overflow",
        lambda mem, seed: mem.write_document(
            {"action": "create", "title": NEW_DOCUMENT[0], "content": NEW_DOCUMENT[1]}
        ),
        lambda mem, seed, r: _check_equal(
            {d.title: d.status for d in mem.documents.list("all")},
            {NEW_DOCUMENT[0]: "active", DOCUMENT[0]: "archived"},
        ),
        overflow=True,
        settings=_documents_overflow,
    ),
    Op(
        "memory_spaces",
        "write",
        "spaces.remember",
        lambda mem, seed: mem.spaces.remember(NEW_MEMORY, space_id=SPACE_ID),
        _check_remember,
    ),
    Op(
        "memory_spaces",
        "write",
        "remember",
        lambda mem, seed: mem.remember(WriteCandidate(content=NEW_MEMORY)),
        _check_remember,
    ),
    Op(
        "memory_spaces",
        "write",
        "spaces.remember_many",
        lambda mem, seed: mem.spaces.remember_many(
            [{"content": text} for text in BATCH], space_id=SPACE_ID
        ),
        lambda mem, seed, r: _check_true(
            [x.status for x in r] == ["committed"] * 2 and set(BATCH) <= set(_stored(mem)), r
        ),
    ),
    Op(
        "memory_spaces",
        "write",
        "spaces.forget",
        lambda mem, seed: mem.spaces.forget(seed.memory_ids[1], space_id=SPACE_ID),
        lambda mem, seed, r: _check_equal(_stored(mem), [MEMORIES[0]]),
    ),
    Op(
        "memory_spaces",
        "recall",
        "spaces.search",
        lambda mem, seed: mem.spaces.search("staging database port"),
        lambda mem, seed, r: _check_true(MEMORIES[0] in [row.content for row in r.results], r),
    ),
    Op(
        "memory_spaces",
        "recall",
        "query",
        lambda mem, seed: mem.query(QUESTION),
        lambda mem, seed, r: _check_true(
            seed.memory_ids[0] in [c.id for c in r.citations] and "5433" in r.answer, r
        ),
    ),
    Op(
        "memory_spaces",
        "maintenance",
        "create_space",
        lambda mem, seed: mem.spaces.create_space(*NEW_SPACE),
        lambda mem, seed, r: _check_true(
            NEW_SPACE[0] in [s.name for s in mem.spaces.list_spaces()], r
        ),
    ),
    Op(
        "memory_spaces",
        "maintenance",
        "set_active",
        lambda mem, seed: mem.spaces.set_active(SPACE_ID, False),
        lambda mem, seed, r: _check_equal(mem.spaces.get_space(SPACE_ID).active, False),
    ),
)


def _check_true(value: bool, detail: Any) -> None:
    assert value, detail


def _check_equal(actual: Any, wanted: Any) -> None:
    assert actual == wanted


def _cells(ops: tuple[Any, ...], modes: tuple[str, ...] = MODES) -> list[Any]:
    return [
        pytest.param(op, mode, id=f"{op.layer}-{op.channel}-{op.name}-{mode}")
        for op in ops
        for mode in modes
    ]


@pytest.mark.parametrize(("op", "mode"), _cells(PYTHON_OPS))
def test_item1_python_api(seed: Seed, tmp_path: Path, op: Op, mode: str) -> None:
    root = fresh_root(seed, tmp_path / "root")
    extra = op.settings(seed) if op.settings else {}
    code = op.code(mode, "explicit")
    with open_host(root, op.layer, op.channel, mode, **extra) as mem:
        mem.spaces.list_spaces()  # a management read: the catalog is open before the snapshot
        before = snapshot(root)
        if code is None:
            op.check(mem, seed, op.run(mem, seed))
            return
        with pytest.raises(MnemonError) as caught:
            op.run(mem, seed)
        _assert_refused(caught.value, op.layer, op.refused_channel(code), mode, "explicit", code)
    assert before.diff(snapshot(root)) == []


def _management_reads(mem: Mnemon, seed: Seed) -> None:
    """List, get, browse and status show the seeded data, whatever the switches."""
    assert _contents(mem, "user") == list(USER)
    assert _contents(mem, "memory") == list(MEMORY)
    assert mem.runtime.archived("memory") == []
    assert [d.id for d in mem.documents.list("active")] == [seed.document_id]
    assert mem.documents.get(seed.document_id).title == DOCUMENT[0]
    assert DOCUMENT[1] in mem.documents.read(seed.document_id)
    assert [s.id for s in mem.spaces.list_spaces()] == [SPACE_ID]
    assert mem.spaces.get_space(SPACE_ID).active is True
    assert sorted(_stored(mem)) == sorted(MEMORIES)
    mem.spaces.entities(SPACE_ID)
    status = mem.status()
    assert (status.runtime.user_entries, status.runtime.memory_entries) == (2, 2)
    assert status.documents.active == 1
    assert status.spaces is not None
    assert status.spaces.total == 1


ALL_OFF = {"recall": "off", "write": "off", "projection": "off", "maintenance": "off"}
READ_MODES = ("all-off", "disabled", "read-only")


def _read_settings(layer: str, mode: str) -> dict[str, Any]:
    if mode == "all-off":
        return {**BASE, "layers": {layer: {"participation": ALL_OFF}}}
    if mode == "disabled":
        return {**BASE, "layers": {layer: {"enabled": False}}}
    return {**BASE, "write_enabled": False}


@pytest.mark.parametrize("trigger", ["explicit", "automatic"])
@pytest.mark.parametrize("mode", READ_MODES)
@pytest.mark.parametrize("layer", LAYERS)
def test_item1_management_reads_python(
    seed: Seed, tmp_path: Path, layer: str, mode: str, trigger: str
) -> None:
    root = fresh_root(seed, tmp_path / "root")
    with Mnemon.open(root, **_read_settings(layer, mode)) as mem:
        before = snapshot(root)
        with acting(trigger):  # type: ignore[arg-type]
            _management_reads(mem, seed)
    assert before.diff(snapshot(root)) == []


# =============================================================================================
# CLI (explicit): the real typer app through its console entry point, in this process


@dataclass(frozen=True)
class CliOp:
    layer: str
    channel: str
    name: str
    args: Callable[[Seed], list[str]]
    check: Callable[[Mnemon, Seed, str], None]


CLI_OPS = (
    CliOp(
        "runtime",
        "write",
        "runtime-add",
        lambda seed: ["runtime", "add", "memory", NEW_RULE],
        lambda mem, seed, out: _check_equal(_contents(mem, "memory"), [*MEMORY, NEW_RULE]),
    ),
    CliOp(
        "documents",
        "write",
        "docs-create",
        lambda seed: ["docs", "create", NEW_DOCUMENT[1], "--title", NEW_DOCUMENT[0]],
        lambda mem, seed, out: _check_true(
            NEW_DOCUMENT[0] in [d.title for d in mem.documents.list("active")], out
        ),
    ),
    CliOp(
        "documents",
        "write",
        "docs-archive",
        lambda seed: ["docs", "archive", seed.document_id],
        lambda mem, seed, out: _check_equal(mem.documents.get(seed.document_id).status, "archived"),
    ),
    CliOp(
        "documents",
        "recall",
        "docs-search",
        lambda seed: ["docs", "search", "queue worker", "--json"],
        lambda mem, seed, out: _check_true(seed.document_id in out, out),
    ),
    CliOp(
        "memory_spaces",
        "write",
        "spaces-remember",
        lambda seed: ["spaces", "remember", NEW_MEMORY, "--space", SPACE_ID],
        lambda mem, seed, out: _check_true(NEW_MEMORY in _stored(mem), out),
    ),
    CliOp(
        "memory_spaces",
        "write",
        "remember",
        lambda seed: ["remember", NEW_MEMORY],
        lambda mem, seed, out: _check_true(NEW_MEMORY in _stored(mem), out),
    ),
    CliOp(
        "memory_spaces",
        "write",
        "spaces-forget",
        lambda seed: ["spaces", "forget", seed.memory_ids[1], "--space", SPACE_ID],
        lambda mem, seed, out: _check_equal(_stored(mem), [MEMORIES[0]]),
    ),
    CliOp(
        "memory_spaces",
        "write",
        "ingest",
        lambda seed: ["ingest", str(seed.batch_file), "--space", SPACE_ID, "--json"],
        lambda mem, seed, out: _check_true(set(BATCH) <= set(_stored(mem)), out),
    ),
    CliOp(
        "memory_spaces",
        "recall",
        "spaces-search",
        lambda seed: ["spaces", "search", "staging database port", "--json"],
        lambda mem, seed, out: _check_true(MEMORIES[0] in out, out),
    ),
    CliOp(
        "memory_spaces",
        "recall",
        "query",
        lambda seed: ["query", QUESTION, "--json"],
        lambda mem, seed, out: _check_true(seed.memory_ids[0] in out, out),
    ),
    CliOp(
        "memory_spaces",
        "maintenance",
        "spaces-create",
        lambda seed: ["spaces", "create", NEW_SPACE[0], "--description", NEW_SPACE[1]],
        lambda mem, seed, out: _check_true(
            NEW_SPACE[0] in [s.name for s in mem.spaces.list_spaces()], out
        ),
    ),
)


@dataclass
class CliRun:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., CliRun]:
    """Run ``mnemon ARGS`` through ``cli.main`` with ``MNEMON_ROOT`` and extra env; the hosts
    the command opened are closed afterwards."""
    from langgraph_mnemon import cli as cli_module

    opened: list[Mnemon] = []

    class Tracked(Mnemon):
        @classmethod
        def open(cls, root: Any = None, **settings: Any) -> Any:  # type: ignore[override]
            host = Mnemon.open(root, **settings)
            opened.append(host)
            return host

    monkeypatch.setattr(cli_module, "Mnemon", Tracked)

    def run(root: Path, args: list[str], env: dict[str, str]) -> CliRun:
        with monkeypatch.context() as scoped:
            for key, value in {**BASE_ENV, **env, "MNEMON_ROOT": str(root)}.items():
                scoped.setenv(key, value)
            scoped.setattr(sys, "argv", ["mnemon", *args])
            capsys.readouterr()
            try:
                cli_module.main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            finally:
                while opened:
                    opened.pop().close()
            captured = capsys.readouterr()
        return CliRun(code, captured.out, captured.err)

    return run


@pytest.mark.parametrize(("op", "mode"), _cells(CLI_OPS))
def test_item1_cli(
    seed: Seed, tmp_path: Path, cli: Callable[..., CliRun], op: CliOp, mode: str
) -> None:
    root = fresh_root(seed, tmp_path / "root")
    before = snapshot(root)
    done = cli(root, op.args(seed), mode_env(op.layer, op.channel, mode))
    code = expected(mode, "explicit", op.channel)
    if code is None:
        assert done.code == 0, done
        with Mnemon.open(root, **BASE) as mem:
            op.check(mem, seed, done.out)
        return
    assert done.code != 0, done
    assert "Traceback" not in done.err
    assert done.err.startswith("mnemon: error:"), done
    if code == "read-only":
        assert "read-only" in done.err, done
    else:  # the message names the setting and its environment variable
        assert mode_env(op.layer, op.channel, mode).popitem()[0] in done.err, done
    assert before.diff(snapshot(root)) == []


CLI_READS = (
    ["status", "--json"],
    ["runtime", "show"],
    ["docs", "list", "--all"],
    ["docs", "show", "{document_id}"],
    ["spaces", "list"],
)


@pytest.mark.parametrize("mode", READ_MODES)
@pytest.mark.parametrize("layer", LAYERS)
def test_item1_management_reads_cli(
    seed: Seed, tmp_path: Path, cli: Callable[..., CliRun], layer: str, mode: str
) -> None:
    root = fresh_root(seed, tmp_path / "root")
    if mode == "all-off":
        env = {k: v for c in ALL_OFF for k, v in mode_env(layer, c, "off").items()}
    else:  # disabled, read-only
        env = mode_env(layer, "write", mode)
    before = snapshot(root)
    outputs = []
    for args in CLI_READS:
        done = cli(root, [a.format(document_id=seed.document_id) for a in args], env)
        assert done.code == 0, (args, done)
        outputs.append(done.out)
    text = "\n".join(outputs)
    for seeded in (*USER, *MEMORY, DOCUMENT[0], DOCUMENT[1], "Ops"):
        assert seeded in text, seeded
    assert before.diff(snapshot(root)) == []


# =============================================================================================
# Control plane (explicit): the ASGI app over httpx's ASGI transport, from loopback


@dataclass(frozen=True)
class HttpOp:
    layer: str
    channel: str
    name: str
    method: str
    path: str
    check: Callable[[Mnemon, Seed, Any], None]
    body: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    overflow: bool = False
    settings: Callable[[Seed], dict[str, Any]] | None = None

    def code(self, mode: str) -> str | None:
        if self.overflow:
            return expected_overflow(mode, "explicit")
        return expected(mode, "explicit", self.channel)


HTTP_OPS = (
    HttpOp(
        "runtime",
        "write",
        "post-runtime",
        "POST",
        "/runtime",
        lambda mem, seed, body: _check_equal(_contents(mem, "memory"), [*MEMORY, NEW_RULE]),
        body={"action": "add", "target": "memory", "content": NEW_RULE},
    ),
    HttpOp(
        "runtime",
        "maintenance",
        "post-runtime-overflow",
        "POST",
        "/runtime",
        lambda mem, seed, body: _check_true(OVERFLOW_RULE in _contents(mem, "memory"), body),
        body={"action": "add", "target": "memory", "content": OVERFLOW_RULE},
        overflow=True,
        settings=_memory_overflow,
    ),
    HttpOp(
        "documents",
        "write",
        "post-documents",
        "POST",
        "/documents",
        lambda mem, seed, body: _check_true(
            NEW_DOCUMENT[0] in [d.title for d in mem.documents.list("active")], body
        ),
        body={"title": NEW_DOCUMENT[0], "content": NEW_DOCUMENT[1]},
    ),
    HttpOp(
        "documents",
        "write",
        "post-document-archive",
        "POST",
        "/documents/{document_id}/archive",
        lambda mem, seed, body: _check_equal(
            mem.documents.get(seed.document_id).status, "archived"
        ),
        body={},
    ),
    HttpOp(
        "documents",
        "recall",
        "get-documents-search",
        "GET",
        "/documents/search",
        lambda mem, seed, body: _check_equal(
            [h["id"] for h in body["results"]], [seed.document_id]
        ),
        params={"q": "queue worker"},
    ),
    HttpOp(
        "documents",
        "maintenance",
        "post-documents-overflow",
        "POST",
        "/documents",
        lambda mem, seed, body: _check_equal(
            {d.title: d.status for d in mem.documents.list("all")},
            {NEW_DOCUMENT[0]: "active", DOCUMENT[0]: "archived"},
        ),
        body={"title": NEW_DOCUMENT[0], "content": NEW_DOCUMENT[1]},
        overflow=True,
        settings=_documents_overflow,
    ),
    HttpOp(
        "memory_spaces",
        "write",
        "post-memories",
        "POST",
        f"/spaces/{SPACE_ID}/memories",
        lambda mem, seed, body: _check_true(NEW_MEMORY in _stored(mem), body),
        body={"content": NEW_MEMORY},
    ),
    HttpOp(
        "memory_spaces",
        "write",
        "delete-memory",
        "DELETE",
        f"/spaces/{SPACE_ID}/memories/{{memory_id}}",
        lambda mem, seed, body: _check_equal(_stored(mem), [MEMORIES[0]]),
    ),
    HttpOp(
        "memory_spaces",
        "recall",
        "post-recall",
        "POST",
        "/recall",
        lambda mem, seed, body: _check_true(
            MEMORIES[0] in [r["content"] for r in body["results"]], body
        ),
        body={"query": "staging database port"},
    ),
    HttpOp(
        "memory_spaces",
        "recall",
        "post-query",
        "POST",
        "/query",
        lambda mem, seed, body: _check_true(
            seed.memory_ids[0] in [c["id"] for c in body["citations"]], body
        ),
        body={"question": QUESTION},
    ),
    HttpOp(
        "memory_spaces",
        "maintenance",
        "post-spaces",
        "POST",
        "/spaces",
        lambda mem, seed, body: _check_true(
            NEW_SPACE[0] in [s.name for s in mem.spaces.list_spaces()], body
        ),
        body={"name": NEW_SPACE[0], "description": NEW_SPACE[1]},
    ),
    HttpOp(
        "memory_spaces",
        "maintenance",
        "post-space-inactive",
        "POST",
        f"/spaces/{SPACE_ID}/active",
        lambda mem, seed, body: _check_equal(mem.spaces.get_space(SPACE_ID).active, False),
        body={"active": False},
    ),
)


def _requests(mem: Mnemon, calls: list[tuple[str, str, dict[str, Any]]]) -> list[httpx.Response]:
    """Requests to the control plane of ``mem`` from a loopback peer (JSON content type: the
    request guard takes changes only as JSON)."""
    from langgraph_mnemon.server.http import create_app

    app = create_app(mem)

    async def go() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://127.0.0.1:8765",
            headers={"Content-Type": "application/json"},
        ) as client:
            return [
                await client.request(method, f"{API}{path}", **kwargs)
                for method, path, kwargs in calls
            ]

    return asyncio.run(go())


@pytest.mark.parametrize(("op", "mode"), _cells(HTTP_OPS))
def test_item1_control_plane(seed: Seed, tmp_path: Path, op: HttpOp, mode: str) -> None:
    root = fresh_root(seed, tmp_path / "root")
    extra = op.settings(seed) if op.settings else {}
    path = op.path.format(document_id=seed.document_id, memory_id=seed.memory_ids[1])
    code = op.code(mode)
    with open_host(root, op.layer, op.channel, mode, **extra) as mem:
        mem.spaces.list_spaces()
        before = snapshot(root)
        [response] = _requests(mem, [(op.method, path, {"json": op.body, "params": op.params})])
        if code is None:
            assert response.status_code == 200, response.text
            op.check(mem, seed, response.json())
            return
    body = response.json()
    if code == "capacity":
        assert response.status_code == 409, response.text
        assert "capacity" in body["error"], body
    else:
        assert response.status_code == 403, response.text
        assert set(body) == {"error", "message", "decision"}, body
        assert body["error"] == code, body
        channel = "write" if op.overflow else op.channel
        decision_matches(body["decision"], op.layer, channel, "explicit", mode, code)
        assert "Traceback" not in body["message"]
    assert before.diff(snapshot(root)) == []


HTTP_READS = (
    "/status",
    "/runtime",
    "/documents?status=all",
    "/documents/{document_id}",
    "/spaces",
    f"/spaces/{SPACE_ID}/content",
    f"/spaces/{SPACE_ID}/entities",
    "/settings",
)


@pytest.mark.parametrize("mode", READ_MODES)
@pytest.mark.parametrize("layer", LAYERS)
def test_item1_management_reads_control_plane(
    seed: Seed, tmp_path: Path, layer: str, mode: str
) -> None:
    root = fresh_root(seed, tmp_path / "root")
    with Mnemon.open(root, **_read_settings(layer, mode)) as mem:
        mem.spaces.list_spaces()
        before = snapshot(root)
        paths = [path.format(document_id=seed.document_id) for path in HTTP_READS]
        responses = _requests(mem, [("GET", path, {}) for path in paths])
    for path, response in zip(paths, responses, strict=True):
        assert response.status_code == 200, (path, response.text)
    text = "\n".join(response.text for response in responses)
    for seeded in (*USER, *MEMORY, DOCUMENT[0], DOCUMENT[1], *MEMORIES):
        assert seeded in text, seeded
    assert before.diff(snapshot(root)) == []


# =============================================================================================
# Model tools in a real create_agent run (automatic)

# Each memory tool and the (layer, channel) pairs it serves: offered when any admits a model.
TOOL_CHANNELS: dict[str, tuple[tuple[str, str], ...]] = {
    "mnemon_runtime_memory": (("runtime", "write"), ("runtime", "recall")),
    "mnemon_document_create": (("documents", "write"),),
    "mnemon_document_manage": (("documents", "write"),),
    "mnemon_document_search": (("documents", "recall"),),
    "mnemon_remember": (("memory_spaces", "write"),),
    "mnemon_link": (("memory_spaces", "write"),),
    "mnemon_forget": (("memory_spaces", "write"),),
    "mnemon_recall": (("memory_spaces", "recall"),),
    "mnemon_related": (("memory_spaces", "recall"),),
    "mnemon_memory_body_create": (("memory_spaces", "maintenance"),),
    "mnemon_memory_body_update": (("memory_spaces", "maintenance"),),
    "mnemon_memory_body_merge": (("memory_spaces", "maintenance"),),
}
MANAGEMENT_TOOLS = ("mnemon_status", "mnemon_memory_bodies")
# Task memory has no participation switches: its tool is offered whenever writes are on.
MNEMOS_TOOLS = ("mnemon_task",)


def _mode_of(cell: tuple[str, str, str], layer: str, channel: str) -> str:
    """The mode ``layer``/``channel`` has in a cell that set ``cell = (layer, channel, mode)``."""
    cell_layer, cell_channel, mode = cell
    if mode == "read-only" or (mode == "disabled" and layer == cell_layer):
        return mode
    return mode if (layer, channel) == (cell_layer, cell_channel) else "automatic"


def _offered(tool: str, cell: tuple[str, str, str]) -> bool:
    return any(
        expected(_mode_of(cell, layer, channel), "automatic", channel) is None
        for layer, channel in TOOL_CHANNELS[tool]
    )


TOOL_CELLS = sorted({pair for pairs in TOOL_CHANNELS.values() for pair in pairs})


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("layer", "channel"), TOOL_CELLS)
def test_item1_model_tool_offers(
    seed: Seed, tmp_path: Path, layer: str, channel: str, mode: str
) -> None:
    root = fresh_root(seed, tmp_path / "root")
    with open_host(root, layer, channel, mode) as mem:
        names = {t.name for t in mem.tools()}
    cell = (layer, channel, mode)
    wanted = {tool for tool in TOOL_CHANNELS if _offered(tool, cell)} | set(MANAGEMENT_TOOLS)
    if mode != "read-only":
        wanted |= set(MNEMOS_TOOLS)
    assert names == wanted


@dataclass(frozen=True)
class ToolOp:
    layer: str
    channel: str
    name: str
    tool: str
    args: Callable[[Seed], dict[str, Any]]
    check: Callable[[Mnemon, Seed, dict[str, Any]], None]
    overflow: bool = False
    settings: Callable[[Seed], dict[str, Any]] | None = None

    def code(self, mode: str) -> str | None:
        if self.overflow:
            return expected_overflow(mode, "automatic")
        return expected(mode, "automatic", self.channel)


def _text_in(result: dict[str, Any], text: str) -> None:
    assert "error" not in result, result
    assert text in json.dumps(result, ensure_ascii=False), result


TOOL_OPS = (
    ToolOp(
        "runtime",
        "write",
        "add",
        "mnemon_runtime_memory",
        lambda seed: {"action": "add", "target": "memory", "content": NEW_RULE},
        lambda mem, seed, r: _check_equal(_contents(mem, "memory"), [*MEMORY, NEW_RULE]),
    ),
    ToolOp(
        "runtime",
        "recall",
        "search",
        "mnemon_runtime_memory",
        lambda seed: {"action": "search", "target": "memory", "query": "deploys CI"},
        lambda mem, seed, r: _text_in(r, MEMORY[0]),
    ),
    ToolOp(
        "documents",
        "write",
        "create",
        "mnemon_document_create",
        lambda seed: {"title": NEW_DOCUMENT[0], "content": NEW_DOCUMENT[1]},
        lambda mem, seed, r: _check_true(
            NEW_DOCUMENT[0] in [d.title for d in mem.documents.list("active")], r
        ),
    ),
    ToolOp(
        "documents",
        "write",
        "manage-archive",
        "mnemon_document_manage",
        lambda seed: {"action": "archive", "id": seed.document_id},
        lambda mem, seed, r: _check_equal(mem.documents.get(seed.document_id).status, "archived"),
    ),
    ToolOp(
        "documents",
        "recall",
        "search",
        "mnemon_document_search",
        lambda seed: {"query": "queue worker"},
        lambda mem, seed, r: _text_in(r, seed.document_id),
    ),
    ToolOp(
        "memory_spaces",
        "write",
        "remember",
        "mnemon_remember",
        lambda seed: {"content": NEW_MEMORY},
        lambda mem, seed, r: _check_true(NEW_MEMORY in _stored(mem), r),
    ),
    ToolOp(
        "memory_spaces",
        "write",
        "forget",
        "mnemon_forget",
        lambda seed: {"id": seed.memory_ids[1], "memory_body_id": SPACE_ID},
        lambda mem, seed, r: _check_equal(_stored(mem), [MEMORIES[0]]),
    ),
    ToolOp(
        "memory_spaces",
        "recall",
        "recall",
        "mnemon_recall",
        lambda seed: {"query": "staging database port"},
        lambda mem, seed, r: _text_in(r, MEMORIES[0]),
    ),
    ToolOp(
        "memory_spaces",
        "maintenance",
        "body-create",
        "mnemon_memory_body_create",
        lambda seed: {"name": NEW_SPACE[0], "description": NEW_SPACE[1]},
        lambda mem, seed, r: _check_true(
            NEW_SPACE[0] in [s.name for s in mem.spaces.list_spaces()], r
        ),
    ),
    # worker / lifecycle: capacity maintenance set off by a model's write runs automatic
    ToolOp(
        "runtime",
        "maintenance",
        "add-overflow",
        "mnemon_runtime_memory",
        lambda seed: {"action": "add", "target": "memory", "content": OVERFLOW_RULE},
        lambda mem, seed, r: _check_true(OVERFLOW_RULE in _contents(mem, "memory"), r),
        overflow=True,
        settings=_memory_overflow,
    ),
    ToolOp(
        "documents",
        "maintenance",
        "manage-create-overflow",
        "mnemon_document_manage",
        lambda seed: {"action": "create", "title": NEW_DOCUMENT[0], "content": NEW_DOCUMENT[1]},
        lambda mem, seed, r: _check_equal(
            {d.title: d.status for d in mem.documents.list("all")},
            {NEW_DOCUMENT[0]: "active", DOCUMENT[0]: "archived"},
        ),
        overflow=True,
        settings=_documents_overflow,
    ),
)


def _tool_cells() -> list[Any]:
    cells = []
    for op in TOOL_OPS:
        for mode in MODES:
            # write_enabled is read at startup: read-only runs only what a read-only host offers
            if mode == "read-only" and not _offered(op.tool, (op.layer, op.channel, mode)):
                continue
            cells.append(pytest.param(op, mode, id=f"{op.layer}-{op.channel}-{op.name}-{mode}"))
    return cells


def _agent(mem: Mnemon, tools: list[Any], tool: str, args: dict[str, Any]) -> Any:
    model = ScriptedChatModel(responses=[tool_call(tool, args, "call_1"), AIMessage("done")])
    return create_agent(model, tools=tools, middleware=[mem.middleware()])


def _invoke(agent: Any, text: str = "Please use memory.") -> list[BaseMessage]:
    out = agent.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": "m"}})
    return list(out["messages"])


@pytest.mark.parametrize(("op", "mode"), _tool_cells())
def test_item1_model_tool(seed: Seed, tmp_path: Path, op: ToolOp, mode: str) -> None:
    root = fresh_root(seed, tmp_path / "root")
    extra = op.settings(seed) if op.settings else {}
    code = op.code(mode)
    # Offered under the cell's switches: run there. Not offered: build the agent while the
    # channel is automatic, then flip the switch on the live config (the next call refuses).
    direct = _offered(op.tool, (op.layer, op.channel, mode))
    with open_host(root, op.layer, op.channel, mode if direct else "automatic", **extra) as mem:
        tools = mem.tools()
        assert op.tool in {t.name for t in tools}
        agent = _agent(mem, tools, op.tool, op.args(seed))
        if not direct:
            flip(mem.config, op.layer, op.channel, mode)
        before = snapshot(root, skip=agent_bookkeeping)
        result = tool_result(_invoke(agent), op.tool)
        if code is None:
            assert "error" not in result, result
            op.check(mem, seed, result)
            return
        assert mem.health.report().degraded is False  # a refusal is an answer, not a failure
    if code == "capacity":
        assert "capacity" in result["error"], result
    else:
        assert result["error"] == code, result
        assert set(result) >= {"error", "message", "decision"}, result
        channel = "write" if op.overflow else op.channel
        decision_matches(result["decision"], op.layer, channel, "automatic", mode, code)
    assert before.diff(snapshot(root, skip=agent_bookkeeping)) == []


@pytest.mark.parametrize("mode", READ_MODES)
@pytest.mark.parametrize("layer", LAYERS)
def test_item1_management_reads_model(seed: Seed, tmp_path: Path, layer: str, mode: str) -> None:
    root = fresh_root(seed, tmp_path / "root")
    with Mnemon.open(root, **_read_settings(layer, mode)) as mem:
        tools = mem.tools()
        assert set(MANAGEMENT_TOOLS) <= {t.name for t in tools}
        model = ScriptedChatModel(
            responses=[
                AIMessage(
                    content="",
                    tool_calls=[
                        {"name": name, "args": {}, "id": f"c{i}", "type": "tool_call"}
                        for i, name in enumerate(MANAGEMENT_TOOLS)
                    ],
                ),
                AIMessage("done"),
            ]
        )
        agent = create_agent(model, tools=tools, middleware=[mem.middleware()])
        before = snapshot(root, skip=agent_bookkeeping)
        messages = _invoke(agent)
        status = tool_result(messages, "mnemon_status")
        catalog = tool_result(messages, "mnemon_memory_bodies")
    assert "error" not in status, status
    assert "error" not in catalog, catalog
    assert [item["id"] for item in catalog["items"]] == [SPACE_ID]
    assert before.diff(snapshot(root, skip=agent_bookkeeping)) == []


# =============================================================================================
# Worker / lifecycle (automatic)

# What each layer contributes to the Wake when it is projected.
WAKE_MARKERS = {
    "runtime": MEMORY[0],
    "documents": "active project Document(s)",
    "memory_spaces": "configured Memory Space(s)",
}


def _wake(messages: list[BaseMessage]) -> str:
    from langgraph_mnemon.adapters.messages import plugin_form

    wakes = [m.text for m in messages if plugin_form(m) == "recall"]
    assert len(wakes) <= 1, wakes
    return wakes[0] if wakes else ""


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("layer", LAYERS)
def test_item1_wake_projection(seed: Seed, tmp_path: Path, layer: str, mode: str) -> None:
    root = fresh_root(seed, tmp_path / "root")
    with open_host(root, layer, "projection", mode) as mem:
        model = ScriptedChatModel(responses=[AIMessage("ok")])
        agent = create_agent(model, tools=mem.tools(), middleware=[mem.middleware()])
        before = snapshot(root, skip=agent_bookkeeping)
        wake = _wake(_invoke(agent))
    projected = expected(mode, "automatic", "projection") is None
    for name, marker in WAKE_MARKERS.items():
        wanted = projected if name == layer else True
        assert (marker in wake) is wanted, (name, wake)
    assert before.diff(snapshot(root, skip=agent_bookkeeping)) == []


SPACE_WRITE_MODES = ("off", "manual", "automatic", "disabled")


def _spaces_settings(mode: str) -> dict[str, Any]:
    if mode == "disabled":
        return {"layers": {"memory_spaces": {"enabled": False}}}
    return {"layers": {"memory_spaces": {"participation": {"write": mode}}}}


@pytest.mark.parametrize("trigger", ["explicit", "automatic"])
@pytest.mark.parametrize("mode", SPACE_WRITE_MODES)
def test_item1_memory_archival_destination(
    seed: Seed, tmp_path: Path, mode: str, trigger: str
) -> None:
    """A MEMORY.md overflow archives into a Memory Space only when the space admits an
    AUTOMATIC write, whatever the trigger of the add; else into runtime/archived/."""
    root = fresh_root(seed, tmp_path / "root")
    settings = {**BASE, **_memory_overflow(seed), **_spaces_settings(mode)}
    with Mnemon.open(root, **settings) as mem:
        spaces_before = space_rows(root)
        if trigger == "explicit":
            receipt = mem.write_runtime(
                RuntimeMutation(action="add", target="memory", content=OVERFLOW_RULE)
            )
            assert receipt.status == "committed", receipt
        else:
            args = {"action": "add", "target": "memory", "content": OVERFLOW_RULE}
            result = tool_result(
                _invoke(_agent(mem, mem.tools(), "mnemon_runtime_memory", args)),
                "mnemon_runtime_memory",
            )
            assert "error" not in result, result
        hot = _contents(mem, "memory")
        assert OVERFLOW_RULE in hot
        local = [row["entry"]["content"] for row in mem.runtime.archived("memory")]
        left_out = [text for text in MEMORY if text not in hot]
        assert left_out  # the overflow had to move something
        if mode == "automatic":
            assert set(left_out) <= set(_stored(mem)), _stored(mem)
            assert local == []
        else:  # the seed's "none anywhere" path: kept locally, not a row in any space
            assert sorted(local) == sorted(left_out)
            assert space_rows(root) == spaces_before


@pytest.mark.parametrize("trigger", ["explicit", "automatic"])
@pytest.mark.parametrize("mode", SPACE_WRITE_MODES)
def test_item1_cold_archive_destination(
    seed: Seed, tmp_path: Path, mode: str, trigger: str
) -> None:
    """A Document cold-archived for capacity leaves a cold reference in a Memory Space only
    when the space admits an AUTOMATIC write; else it moves with no space row written."""
    root = fresh_root(seed, tmp_path / "root")
    settings = {**BASE, **_documents_overflow(seed), **_spaces_settings(mode)}
    with Mnemon.open(root, **settings) as mem:
        spaces_before = space_rows(root)
        if trigger == "explicit":
            receipt = mem.write_document(
                {"action": "create", "title": NEW_DOCUMENT[0], "content": NEW_DOCUMENT[1]}
            )
            assert receipt.status == "committed", receipt
        else:
            args = {"action": "create", "title": NEW_DOCUMENT[0], "content": NEW_DOCUMENT[1]}
            result = tool_result(
                _invoke(_agent(mem, mem.tools(), "mnemon_document_manage", args)),
                "mnemon_document_manage",
            )
            assert "error" not in result, result
        statuses = {d.title: d.status for d in mem.documents.list("all")}
        assert statuses == {NEW_DOCUMENT[0]: "active", DOCUMENT[0]: "archived"}
        references = [text for text in _stored(mem) if DOCUMENT[0] in text]
        if mode == "automatic":
            assert references, _stored(mem)
        else:
            assert references == []
            assert space_rows(root) == spaces_before


def test_item1_matrix_covers_every_layer_and_channel() -> None:
    """Every (layer, channel) pair has cells on at least one explicit and one automatic
    surface (the table in the module docstring)."""
    explicit = {(op.layer, op.channel) for op in (*PYTHON_OPS, *CLI_OPS, *HTTP_OPS)}
    automatic = {(op.layer, op.channel) for op in TOOL_OPS} | {
        (layer, "projection") for layer in WAKE_MARKERS
    }
    automatic.add(("memory_spaces", "write"))  # archival / cold-archive destinations
    every = {(layer, channel) for layer in LAYERS for channel in ("recall", "write", "maintenance")}
    assert every <= explicit
    assert every | {(layer, "projection") for layer in LAYERS} <= automatic


def test_item1_snapshot_sees_every_change(seed: Seed, tmp_path: Path) -> None:
    """The refusal check is not vacuous: one byte, one new file or one row is a difference."""
    import sqlite3

    root = fresh_root(seed, tmp_path / "root")
    before = snapshot(root)
    assert before.files
    assert before.rows["mnemon_insights"]
    memory_md = root / "runtime" / "MEMORY.md"
    memory_md.write_bytes(b"x" + memory_md.read_bytes())
    (root / "documents" / "stray").mkdir()
    connection = sqlite3.connect(root / "mnemon.db")
    with connection:
        connection.execute("UPDATE mnemon_insights SET importance = importance + 1")
    connection.close()
    assert before.diff(snapshot(root)) == [
        "file documents/stray",
        "file runtime/MEMORY.md",
        "table mnemon_insights",
    ]
    assert snapshot(root, skip=agent_bookkeeping).rows.keys() <= before.rows.keys()
