"""``mnemon docs ...`` and the Documents row of ``mnemon status``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from langgraph_mnemon.cli import app
from langgraph_mnemon.errors import InvalidInputError, NotFoundError
from langgraph_mnemon.memory_layers.documents import Documents


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Run the CLI inside ``tmp_path`` (the workspace) with ``--root tmp_path/.mnemon``."""
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    root = tmp_path / ".mnemon"

    def run(*args: str, input: str | None = None):
        return runner.invoke(app, ["--root", str(root), *args], input=input)

    run.root = root  # type: ignore[attr-defined]
    return run


def test_create_list_show_search_archive(cli, tmp_path: Path) -> None:
    made = cli(
        "docs",
        "create",
        "--title",
        "部署手册",
        "--description",
        "How we deploy",
        "--source-path",
        "deploy/README.md",
        "先构建镜像，再部署到生产环境。Then run the smoke tests.",
        "--json",
    )
    assert made.exit_code == 0, made.output
    doc = json.loads(made.output)["document"]
    assert doc["title"] == "部署手册"
    assert doc["source_paths"] == ["deploy/README.md"]

    (tmp_path / "body.md").write_text("Body from a file.\nSecond line.\n")
    from_file = cli("docs", "create", "--title", "From file", "--file", "body.md")
    assert from_file.exit_code == 0, from_file.output
    assert "Document created." in from_file.output

    from_stdin = cli("docs", "create", "--title", "Stdin", "-", input="piped body\n")
    assert from_stdin.exit_code == 0, from_stdin.output

    listed = cli("docs", "list", "--json")
    assert listed.exit_code == 0
    assert [d["title"] for d in json.loads(listed.output)] == ["Stdin", "From file", "部署手册"]
    table = cli("docs", "list")
    assert "From file" in table.output
    assert doc["id"][:8] in table.output

    shown = cli("docs", "show", doc["id"][:6])
    assert shown.exit_code == 0, shown.output
    assert "部署手册" in shown.output
    assert "先构建镜像" in shown.output
    assert ".mnemon/documents/active/" in shown.output
    shown_json = json.loads(cli("docs", "show", doc["id"], "--json").output)
    assert shown_json["content"].startswith("先构建镜像")

    found = cli("docs", "search", "部署生产", "--json")
    assert found.exit_code == 0
    result = json.loads(found.output)
    assert [r["id"] for r in result["results"]] == [doc["id"]]
    missing = cli("docs", "search", "kubernetes")
    assert "no match; recent documents:" in missing.output

    archived = cli("docs", "archive", doc["id"][:8], "--summary", "Deployment steps.")
    assert archived.exit_code == 0, archived.output
    assert "archived without a Memory Space index" in archived.output
    assert json.loads(cli("docs", "list", "--archived", "--json").output)[0]["id"] == doc["id"]
    assert len(json.loads(cli("docs", "list", "--all", "--json").output)) == 3
    docs = Documents(cli.root, workspace=tmp_path)
    assert docs.get(doc["id"]).archive_summary == "Deployment steps."
    assert docs.read(doc["id"]).startswith("先构建镜像")


def test_archive_with_memory_space_and_stale_revision(cli) -> None:
    made = json.loads(cli("docs", "create", "--title", "T", "body", "--json").output)
    doc_id = made["document"]["id"]
    stale = cli("docs", "archive", doc_id, "--revision", "7", "--memory-space", "s1")
    assert stale.exit_code == 1
    assert "document changed while archival was running" in str(stale.exception)
    done = cli("docs", "archive", doc_id, "--revision", "1", "--memory-space", "s1", "--json")
    receipt = json.loads(done.output)
    assert receipt["indexed"] is True
    assert receipt["document"]["memory_body_ids"] == ["s1"]


def test_status_has_documents_rows(cli) -> None:
    cli("docs", "create", "--title", "T", "body")
    status = cli("status")
    assert status.exit_code == 0
    assert "Documents (active)" in status.output
    assert "Documents (archived)" in status.output
    data = json.loads(cli("status", "--json").output)
    assert data["documents"]["active"] == 1
    assert data["documents"]["active_bytes"]["limit"] == 10 * 1024 * 1024


def test_bad_input_is_a_typed_error_and_writes_nothing(cli, tmp_path: Path) -> None:
    cli("docs", "list")  # creates the root
    index = cli.root / "documents" / "index.json"
    before = index.read_bytes()
    bad = cli("docs", "create", "--title", "T", "--source-path", "../outside.md", "body")
    assert bad.exit_code == 1
    assert isinstance(bad.exception, InvalidInputError)
    assert "must stay inside the workspace" in str(bad.exception)
    no_title = cli("docs", "create", "body")
    assert isinstance(no_title.exception, InvalidInputError)
    missing_file = cli("docs", "create", "--title", "T", "--file", "nope.md")
    assert isinstance(missing_file.exception, InvalidInputError)
    (tmp_path / "latin1.md").write_bytes(b"caf\xe9")
    not_utf8 = cli("docs", "create", "--title", "T", "--file", "latin1.md")
    assert "not UTF-8" in str(not_utf8.exception)
    both = cli("docs", "create", "--title", "T", "--file", "latin1.md", "body")
    assert both.exit_code == 2
    unknown = cli("docs", "show", "abcdef12")
    assert isinstance(unknown.exception, NotFoundError)
    assert index.read_bytes() == before
    assert list((cli.root / "documents" / "active").iterdir()) == []


def test_errors_print_one_line_and_exit_1(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "langgraph_mnemon.cli",
            "--root",
            str(tmp_path / ".mnemon"),
            "docs",
            "create",
            "--title",
            "T",
            "--source-path",
            "/etc/passwd",
            "body",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("mnemon: error: source path '/etc/passwd' must be relative")
