"""``mnemon export`` / ``mnemon import``: a file root -> database tables -> files, byte for byte.

Runs on database tables in SQLite (``memory_storage=database``) and in PostgreSQL (a
``database_url``, where tables are the default), for the local scope and a user x project scope.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from langgraph_mnemon import Mnemon
from langgraph_mnemon.cli import app
from langgraph_mnemon.errors import ConflictError, InvalidInputError
from langgraph_mnemon.memory_layers.documents import fold_access_times

SCOPES = [(), ("--user", "alice", "--project", "billing")]


def _tree(root: Path) -> dict[str, bytes]:
    """Every Runtime Memory and Documents file under ``root`` (locks and journals aside)."""
    out = {}
    for path in sorted(root.rglob("*")):
        name = path.name
        layer = "runtime" in path.parts or "documents" in path.parts
        if layer and path.is_file() and not name.startswith(".") and name != "access.jsonl":
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


def _seed(root: Path) -> None:
    """A file root with entries of both targets interleaved, an archive, and Documents."""
    mem = Mnemon.open(root, chroma={"enabled": False})
    alice = mem.scoped(user="alice", project="billing")
    for view in (mem, alice):
        view.runtime.add("memory", "Deploys go through CI.")
        view.runtime.add("user", "Prefers answers in British English.", importance="critical")
        view.runtime.add("memory", "Release notes live in docs/releases.", branches=["main"])
        doc = view.documents.create("Runbook 部署", "Restart with `systemctl restart app`.\n")
        view.documents.create("ADR 1", "We use SQLite for the embedded default.", description="x")
        view.archive_document(doc.document.id)
        view.documents.search("sqlite")  # an access time to fold
        fold_access_times(view.documents)
    mem.close()


@pytest.fixture(params=["sqlite-db", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    """``mnemon`` options that put Runtime Memory and Documents in database tables."""
    if request.param == "sqlite-db":
        return ["--root", str(tmp_path / "db-root")], {"MNEMON_MEMORY_STORAGE": "database"}
    url = request.getfixturevalue("postgres_url")
    return ["--root", str(tmp_path / "db-root")], {"MNEMON_DATABASE_URL": url}


def test_files_to_database_to_files_is_byte_identical(tmp_path: Path, database) -> None:
    options, env = database
    source, back = tmp_path / "source", tmp_path / "back"
    _seed(source)
    runner = CliRunner()
    before = {p: p.stat().st_mtime_ns for p in source.rglob("*")}
    for scope in SCOPES:
        done = runner.invoke(app, [*options, *scope, "import", str(source), "--json"], env=env)
        assert done.exit_code == 0, done.output
        assert json.loads(done.output) == {
            "action": "imported",
            "runtime_entries": 3,
            "documents": 2,
        }
    assert {p: p.stat().st_mtime_ns for p in source.rglob("*")} == before  # read, never written
    # The database root holds no Runtime or Documents file of its own.
    assert not (Path(options[1]) / "scopes").exists()
    for scope in SCOPES:
        done = runner.invoke(app, [*options, *scope, "export", str(back)], env=env)
        assert done.exit_code == 0, done.output
        assert "exported 3 Runtime Memory entries and 2 Documents" in done.output
    assert _tree(back) == _tree(source)
    assert any(k.startswith("scopes/users/") for k in _tree(back))
    # What an agent sees is the same through the tables.
    shown = runner.invoke(app, [*options, *SCOPES[1], "runtime", "show"], env=env)
    assert "British English" in shown.output


def test_import_refuses_a_filled_database_and_export_a_files_root(tmp_path: Path, database) -> None:
    options, env = database
    source = tmp_path / "source"
    _seed(source)
    runner = CliRunner()
    assert runner.invoke(app, [*options, "import", str(source)], env=env).exit_code == 0
    again = runner.invoke(app, [*options, "import", str(source)], env=env)
    assert isinstance(again.exception, ConflictError)
    assert "Pass --replace" in str(again.exception)
    assert (
        runner.invoke(app, [*options, "import", str(source), "--replace"], env=env).exit_code == 0
    )
    missing = runner.invoke(app, [*options, "import", str(tmp_path / "nowhere")], env=env)
    assert isinstance(missing.exception, InvalidInputError)
    assert "not a folder" in str(missing.exception)
    files = runner.invoke(app, ["--root", str(source), "export", str(tmp_path / "out")])
    assert isinstance(files.exception, InvalidInputError)
    assert "already files here" in str(files.exception)
    assert not (tmp_path / "out").exists()
