"""Mnemon host wiring and the mnemon command line (run as real subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from langgraph_mnemon import Mnemon, MnemonConfig
from langgraph_mnemon.errors import InvalidInputError, StorageError


def run_cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MNEMON_ROOT=str(root), COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "langgraph_mnemon.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_open_wires_runtime_and_status(tmp_path: Path) -> None:
    mem = Mnemon.open(tmp_path / "root", runtime={"user_limit_bytes": 100})
    mem.runtime.add("user", "Prefers tea.")
    status = mem.status()
    assert status.runtime.user.used == 12
    assert status.runtime.user.limit == 100
    assert status.runtime.revision == mem.runtime.revision
    assert status.root == str(tmp_path / "root")
    assert (tmp_path / "root" / "runtime" / "USER.md").read_text() == "Prefers tea.\n"
    with Mnemon(MnemonConfig(root=tmp_path / "root")) as again:
        assert [e.content for e in again.runtime.entries("user")] == ["Prefers tea."]


def test_open_validates(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        Mnemon.open("")
    with pytest.raises(InvalidInputError, match="MnemonConfig"):
        Mnemon({"root": str(tmp_path)})  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"runtime\.user_limit_bytes"):
        Mnemon.open(tmp_path, runtime={"user_limit_bytes": -1})


def test_global_user_scope_from_config(tmp_path: Path) -> None:
    mem = Mnemon.open(
        tmp_path / "project", runtime_user_scope="global", global_root=tmp_path / "home"
    )
    mem.runtime.add("user", "Name is Ada.")
    assert (tmp_path / "home" / "runtime" / "USER.md").read_text() == "Name is Ada.\n"
    assert (tmp_path / "project" / "runtime" / "USER.md").read_text() == ""


def test_cli_round_trip(tmp_path: Path) -> None:
    out = run_cli(
        tmp_path, "runtime", "add", "memory", "Run tests with pytest -q", "--importance", "critical"
    )
    assert out.returncode == 0, out.stderr
    assert "Entry added." in out.stdout
    out = run_cli(tmp_path, "runtime", "add", "user", "Prefers tea")
    assert out.returncode == 0, out.stderr
    out = run_cli(tmp_path, "runtime", "add", "memory", "Main only", "-b", "main", "--json")
    assert json.loads(out.stdout)["added"] == "Main only"
    out = run_cli(tmp_path, "runtime", "replace", "memory", "pytest -q", "Run tests with pytest -x")
    assert "Entry replaced." in out.stdout
    out = run_cli(tmp_path, "runtime", "show", "--branch", "dev")
    assert out.returncode == 0
    assert "Run tests with pytest -x" in out.stdout
    assert "Main only" not in out.stdout
    assert "(1 branch-scoped entry hidden)" in out.stdout
    out = run_cli(tmp_path, "runtime", "remove", "user", "Prefers tea")
    assert "Entry removed." in out.stdout
    # Scripts written for the old order keep working; stderr says how to write them now.
    out = run_cli(tmp_path, "runtime", "add", "Old script", "--target", "user")
    assert out.returncode == 0, out.stderr
    assert out.stderr.startswith("mnemon: deprecated: TARGET now comes first")
    assert "`mnemon runtime add user 'Old script'`" in out.stderr
    assert "Old script" in run_cli(tmp_path, "runtime", "list").stdout
    assert run_cli(tmp_path, "runtime", "remove", "user", "Old script").stderr == ""
    out = run_cli(tmp_path, "status", "--json")
    report = json.loads(out.stdout)
    assert report["runtime"]["memory_entries"] == 2
    assert report["runtime"]["user_entries"] == 0
    assert report["runtime"]["revision"] == Mnemon.open(tmp_path).runtime.revision
    out = run_cli(tmp_path, "status")
    assert "Runtime MEMORY.md" in out.stdout
    assert report["runtime"]["revision"] in out.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["runtime", "add", "memory", "a § b"], "must not contain the reserved § entry delimiter"),
        (["runtime", "add", "memory", "x", "-b", "bad..name"], "invalid branch name"),
        (
            ["runtime", "remove", "memory", "nothing here"],
            'No memory entry contains "nothing here".',
        ),
        (["runtime", "add", "user", "  "], "content is required"),
    ],
)
def test_cli_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    out = run_cli(tmp_path, *args)
    assert out.returncode == 1
    assert message in out.stderr
    assert out.stderr.count("\n") == 1
    assert "Traceback" not in out.stderr


def test_cli_reports_corrupt_state(tmp_path: Path) -> None:
    (tmp_path / "runtime").mkdir(parents=True)
    (tmp_path / "runtime" / "memories.json").write_text("{oops")
    out = run_cli(tmp_path, "status")
    assert out.returncode == 1
    assert "memories.json is unreadable" in out.stderr
    assert "Traceback" not in out.stderr
    assert (tmp_path / "runtime" / "memories.json").read_text() == "{oops"
    with pytest.raises(StorageError):
        Mnemon.open(tmp_path)


def test_cli_usage_error_exit_code(tmp_path: Path) -> None:
    out = run_cli(tmp_path, "runtime", "add")
    assert out.returncode == 2
    assert "Missing argument" in out.stderr
    out = run_cli(tmp_path, "runtime", "add", "memory", "x", "--importance", "huge")
    assert out.returncode == 2  # a value the option cannot take is a usage error
    assert out.stderr.count("\n") == 1
    assert "'huge' is not an importance; give critical, normal or low, or 1-5" in out.stderr
    out = run_cli(tmp_path, "--help")
    assert out.returncode == 0
    assert "runtime" in out.stdout


def test_cli_remember_query_and_archive(tmp_path: Path) -> None:
    out = run_cli(tmp_path, "remember", "Deploys need two approvals.", "--category", "fact")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("committed:")
    again = run_cli(tmp_path, "remember", "Deploys need two approvals.")
    assert again.returncode == 3  # skipped: an identical memory exists
    assert "already stored" in again.stdout
    answer = run_cli(tmp_path, "query", "deploy approvals")
    assert "Deploys need two approvals." in answer.stdout
    assert "[default/" in answer.stdout
    bad = run_cli(tmp_path, "remember", "x", "--category", "gossip")
    assert bad.returncode == 1
    assert "invalid memory" in bad.stderr
    created = run_cli(
        tmp_path, "docs", "create", "--title", "Runbook", "Restart with make restart."
    )
    assert created.returncode == 0, created.stderr
    doc_id = Mnemon.open(tmp_path).documents.list("active")[0].id
    archived = run_cli(tmp_path, "docs", "archive", doc_id[:8], "--json")
    assert archived.returncode == 0, archived.stderr
    receipt = json.loads(archived.stdout)
    assert receipt["document"]["status"] == "archived"
    assert receipt["indexed"] is True  # the default space took the cold reference
