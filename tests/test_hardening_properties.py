"""Hostile values against the whole public API (issue 12, "Typed errors everywhere").

Hypothesis draws arguments from hostile strategies (lone surrogates, NUL, huge strings, wrong
types) for every public entry point: Runtime Memory, Documents, Memory Spaces, Mnemos, the
BaseStore facade and the model-facing tools. The properties:

- only ``MnemonError`` subclasses escape (the store facade's namespace refusal is also
  LangGraph's ``InvalidNamespaceError``, as its contract documents); a tool never raises at
  all, it answers a JSON result;
- a call that fails changes nothing: every file under the root is byte-identical and every
  row of the SQLite database is unchanged;
- nothing stored ever holds a lone surrogate or NUL.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_support import fixed_settings

from langgraph_mnemon import Mnemon
from langgraph_mnemon.contracts import text_problem
from langgraph_mnemon.errors import MnemonError

SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
_PLAIN = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)


@st.composite
def _with_hostile_part(draw: st.DrawFn) -> str:
    """A plausible text with a lone surrogate or NUL spliced in somewhere."""
    base = draw(_PLAIN)
    bad = draw(st.one_of(SURROGATES, st.just("\x00"), st.just("\ud83d")))
    at = draw(st.integers(0, len(base)))
    return base[:at] + bad + base[at:]


HOSTILE_TEXT = st.one_of(
    _with_hostile_part(),
    st.text(SURROGATES, min_size=1, max_size=5),
    st.sampled_from(["", " ", "\x00", "§", "\n\n", "a" * 70_000, "é" * 3_000_000]),
)
WRONG_TYPES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.binary(max_size=8),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.just(object()),
)
HOSTILE = st.one_of(HOSTILE_TEXT, WRONG_TYPES, _PLAIN)

SETTINGS = fixed_settings(60)


# --- state of the root: files and database rows --------------------------------------------


def _files(root: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and not path.name.startswith("mnemon.db"):
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [
        name
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
            " ORDER BY name"
        )
    ]


def _table_rows(root: Path) -> list[tuple[str, tuple[Any, ...]]]:
    database = root / "mnemon.db"
    if not database.exists():
        return []
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        return [
            (table, row)
            for table in _tables(conn)
            for row in conn.execute(f'SELECT * FROM "{table}" ORDER BY 1')
        ]


def _rows(root: Path) -> list[str]:
    return [f"{table}:{row!r}" for table, row in _table_rows(root)]


def _state(root: Path) -> tuple[dict[str, bytes], list[str]]:
    return _files(root), _rows(root)


def _nothing_hostile_stored(root: Path) -> None:
    for name, data in _files(root).items():
        assert b"\x00" not in data or name.endswith(".lock"), f"NUL stored in {name}"
        text = data.decode("utf-8", "surrogatepass")
        assert all(not 0xD800 <= ord(c) <= 0xDFFF for c in text), f"surrogate stored in {name}"
    for table, row in _table_rows(root):
        if "_fts" in table:
            continue  # SQLite's full-text index keeps binary segments of its own
        for value in row:
            if isinstance(value, str):
                assert "\x00" not in value, f"NUL stored in {table}: {row!r:.120}"


def _call(root: Path, fn: Callable[[], Any]) -> None:
    """Run ``fn``; if it raises, the error is typed and the root is unchanged."""
    before = _state(root)
    try:
        fn()
    except MnemonError:
        pass
    except Exception as exc:  # the property under test
        raise AssertionError(f"untyped {type(exc).__name__} escaped: {exc!r}"[:500]) from exc
    else:
        return
    assert _state(root) == before, "a failed call changed the root"


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Mnemon]:
    host = Mnemon.open(tmp_path / "root", embedding={"enabled": False}, chroma={"enabled": False})
    host.runtime.add("memory", "Deploys go through CI.")
    host.runtime.add("user", "Works from Lisbon.")
    host.documents.create("Runbook", "Restart the worker with `make restart`.")
    space = host.spaces.create_space("Project", "Project facts").space
    host.spaces.remember("The API lives in api/.", space_id=space.id)
    host.mnemos.add_node("task-1", "goal", "Ship the release.")
    try:
        yield host
    finally:
        host.close()


def _root(mem: Mnemon) -> Path:
    return Path(mem.root)


# --- Runtime Memory ---------------------------------------------------------------------------


@SETTINGS
@given(target=st.one_of(st.sampled_from(["user", "memory"]), HOSTILE), content=HOSTILE)
def test_runtime_add_hostile(mem: Mnemon, target: Any, content: Any) -> None:
    _call(_root(mem), lambda: mem.runtime.add(target, content))
    _nothing_hostile_stored(_root(mem))


@SETTINGS
@given(old=HOSTILE, content=HOSTILE, importance=st.one_of(st.just("normal"), HOSTILE))
def test_runtime_replace_remove_hostile(mem: Mnemon, old: Any, content: Any, importance: Any):
    root = _root(mem)
    _call(root, lambda: mem.runtime.replace("memory", old, content, importance=importance))
    _call(root, lambda: mem.runtime.remove("user", old))
    _call(root, lambda: mem.runtime.add("memory", "x", importance=importance))
    _nothing_hostile_stored(root)


@SETTINGS
@given(branch=HOSTILE, target=HOSTILE)
def test_runtime_reads_hostile(mem: Mnemon, branch: Any, target: Any) -> None:
    root = _root(mem)
    _call(root, lambda: mem.runtime.snapshot(branch=branch))
    _call(root, lambda: mem.runtime.entries(target))
    _call(root, lambda: mem.runtime.usage(target))


# --- Documents -------------------------------------------------------------------------------


@SETTINGS
@given(title=HOSTILE, content=HOSTILE, description=st.one_of(st.none(), HOSTILE))
def test_documents_create_hostile(mem: Mnemon, title: Any, content: Any, description: Any):
    root = _root(mem)
    _call(root, lambda: mem.documents.create(title, content, description=description))
    _nothing_hostile_stored(root)


@SETTINGS
@given(value=HOSTILE, limit=st.one_of(st.just(4), HOSTILE))
def test_documents_other_calls_hostile(mem: Mnemon, value: Any, limit: Any) -> None:
    root = _root(mem)
    doc = mem.documents.list("active")[0]
    _call(root, lambda: mem.documents.search(value, limit=limit))
    _call(root, lambda: mem.documents.get(value))
    _call(root, lambda: mem.documents.read(value))
    _call(root, lambda: mem.documents.update(doc.id, title=value))
    _call(root, lambda: mem.documents.update(doc.id, content=value))
    _call(root, lambda: mem.documents.list(value))
    _call(root, lambda: mem.documents.archive(value, 1))
    _nothing_hostile_stored(root)


# --- Memory Spaces ---------------------------------------------------------------------------


@SETTINGS
@given(name=HOSTILE, description=HOSTILE)
def test_spaces_create_hostile(mem: Mnemon, name: Any, description: Any) -> None:
    _call(_root(mem), lambda: mem.spaces.create_space(name, description))
    _nothing_hostile_stored(_root(mem))


@SETTINGS
@given(value=HOSTILE, number=st.one_of(st.integers(-3, 10), HOSTILE))
def test_spaces_calls_hostile(mem: Mnemon, value: Any, number: Any) -> None:
    root = _root(mem)
    space = mem.spaces.list_spaces()[0].id
    _call(root, lambda: mem.spaces.remember(value, space_id=space))
    _call(root, lambda: mem.spaces.remember("ok text", space_id=space, tags=[value]))
    _call(root, lambda: mem.spaces.remember("ok text", space_id=space, importance=number))
    _call(root, lambda: mem.spaces.search(value))
    _call(root, lambda: mem.spaces.search("api", limit=number))
    _call(root, lambda: mem.spaces.search("api", space_ids=[value]))
    _call(root, lambda: mem.spaces.forget(value, space_id=space))
    _call(root, lambda: mem.spaces.browse(value))
    _call(root, lambda: mem.spaces.browse(space, limit=number, category=value))
    _call(root, lambda: mem.spaces.related(value, space_id=space))
    _call(root, lambda: mem.spaces.set_active(value, True))
    _call(root, lambda: mem.spaces.get_space(value))
    _nothing_hostile_stored(root)


# --- Mnemos task memory ----------------------------------------------------------------------


@SETTINGS
@given(task=st.one_of(st.just("task-1"), HOSTILE), value=HOSTILE)
def test_mnemos_calls_hostile(mem: Mnemon, task: Any, value: Any) -> None:
    root = _root(mem)
    _call(root, lambda: mem.mnemos.add_node(task, "constraint", value))
    _call(root, lambda: mem.mnemos.add_node(task, value, "Keep the API stable."))
    _call(root, lambda: mem.mnemos.nodes(task))
    _call(root, lambda: mem.mnemos.fatigue(task, log=False))
    _call(root, lambda: mem.mnemos.touch(value))
    _call(root, lambda: mem.mnemos.resume(task))
    _call(root, lambda: mem.mnemos.observe_messages(task, [value]))
    _nothing_hostile_stored(root)


# --- the BaseStore facade --------------------------------------------------------------------


@SETTINGS
@given(label=HOSTILE, key=HOSTILE, value=st.one_of(HOSTILE, st.dictionaries(HOSTILE_TEXT, HOSTILE)))
def test_store_facade_hostile(mem: Mnemon, label: Any, key: Any, value: Any) -> None:
    root = _root(mem)
    store = mem.store()
    _call(root, lambda: store.put(("users", label), "k", {"v": 1}))
    _call(root, lambda: store.put(("users", "alice"), key, {"v": 1}))
    _call(root, lambda: store.put(("users", "alice"), "k", value))
    _call(root, lambda: store.get(("users", label), key))
    _call(root, lambda: store.search(("users",), query=key))
    _call(root, lambda: store.delete(("users", "alice"), key))
    _call(root, lambda: store.list_namespaces(prefix=(label,)))
    _nothing_hostile_stored(root)


# --- the model-facing tools: never raise, always a JSON result --------------------------------


def _tool_inputs(name: str, value: Any) -> list[dict[str, Any]]:
    state = {"messages": [], "mnemon_turn": None}
    table: dict[str, list[dict[str, Any]]] = {
        "mnemon_runtime_memory": [
            {"action": "add", "target": "memory", "content": value},
            {"action": "replace", "target": "user", "old_text": value, "content": "x"},
            {"action": "remove", "target": value, "old_text": "x"},
        ],
        "mnemon_remember": [{"content": value}, {"content": "ok", "tags": [value]}],
        "mnemon_document_create": [{"title": value, "content": "body"}],
        "mnemon_document_manage": [
            {"action": "update", "id": value, "title": "t", "state": state},
            {"action": "create", "title": "t", "content": value, "state": state},
        ],
        "mnemon_recall": [{"query": value, "state": state}],
        "mnemon_related": [{"id": value, "state": state}],
        "mnemon_document_search": [{"query": value, "state": state}],
        "mnemon_forget": [{"id": value}],
        "mnemon_link": [{"source_id": value, "target_id": "x"}],
        "mnemon_memory_body_create": [{"name": value, "description": "d"}],
        "mnemon_memory_body_update": [{"memory_body_id": value, "name": "n"}],
        "mnemon_memory_body_merge": [{"source_memory_body_ids": [value]}],
        "mnemon_status": [{}],
        "mnemon_memory_bodies": [{}],
    }
    return table.get(name, [])


@SETTINGS
@given(value=HOSTILE)
def test_tools_never_raise(mem: Mnemon, value: Any) -> None:
    root = _root(mem)
    tools = {t.name: t for t in mem.tools()}
    for name, tool in tools.items():
        for args in _tool_inputs(name, value):
            before = _state(root)
            result = tool.invoke(args)
            assert isinstance(result, str), f"{name} answered {type(result).__name__}"
            answer = json.loads(result)
            if isinstance(answer, dict) and "error" in answer:
                assert _state(root) == before, f"{name} failed but changed the root"
    _nothing_hostile_stored(root)


def test_hostile_strategies_are_hostile() -> None:
    """The strategies really produce what they claim (so the properties above mean something)."""
    found = {"surrogate": False, "nul": False}

    @settings(max_examples=200, deadline=None, derandomize=True)
    @given(HOSTILE_TEXT)
    def probe(text: str) -> None:
        problem = text_problem(text) or ""
        found["surrogate"] |= "surrogate" in problem
        found["nul"] |= "NUL" in problem

    probe()
    assert found == {"surrogate": True, "nul": True}
