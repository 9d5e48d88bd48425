"""``mnemon spaces …`` and ``mnemon ingest`` (in-process runner, plus real subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from langgraph_mnemon.cli import app

runner = CliRunner()


def invoke(root: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["--root", str(root), *args], env={"COLUMNS": "200"})
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_spaces_commands_round_trip(tmp_path: Path) -> None:
    root = tmp_path / "root"
    code, out = invoke(root, "spaces", "list")
    assert code == 0
    assert "no Memory Spaces yet" in out
    code, out = invoke(root, "spaces", "create", "Ops notes", "--description", "Runbooks")
    assert code == 0
    assert "Memory Space 'Ops notes' created" in out
    code, out = invoke(
        root,
        "spaces",
        "remember",
        "The pager rotation changes every Monday.",
        "--category",
        "fact",
        "--tag",
        "oncall",
        "--json",
    )
    receipt = json.loads(out)
    assert code == 0
    assert receipt["status"] == "committed"
    assert receipt["activated"] is True
    code, out = invoke(root, "spaces", "search", "when does the pager rotation change")
    assert code == 0
    assert "The pager rotation changes every Monday." in out
    code, out = invoke(root, "spaces", "search", "pager rotation", "--json")
    found = json.loads(out)
    assert found["results"][0]["id"] == receipt["id"]
    code, out = invoke(root, "spaces", "list", "--json")
    assert [s["id"] for s in json.loads(out)] == ["default"]
    code, out = invoke(root, "spaces", "forget", receipt["id"])
    assert code == 0
    assert "[committed]" in out
    code, out = invoke(root, "status")
    assert code == 0
    assert "memory spaces: 1 (1 active)" in out


def test_ingest_validates_every_line_before_writing(tmp_path: Path) -> None:
    root = tmp_path / "root"
    good = tmp_path / "good.jsonl"
    lines = [json.dumps({"content": f"fact number {i}", "metadata": {"i": i}}) for i in range(25)]
    lines.insert(3, json.dumps("a plain string line is content too"))
    lines.insert(5, "")
    good.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out = invoke(root, "ingest", str(good), "--batch", "10", "--json")
    report = json.loads(out)
    assert code == 0
    assert (report["total"], report["committed"], report["failed"]) == (26, 26, 0)
    code, out = invoke(root, "spaces", "search", "plain string line", "--json")
    assert json.loads(out)["results"][0]["content"] == "a plain string line is content too"

    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"content": "fine"}) + "\n" + json.dumps({"content": "x", "importance": 7}),
        encoding="utf-8",
    )
    with pytest.raises(Exception, match=r"bad.jsonl:2: importance must be an integer"):
        invoke(root, "ingest", str(bad))
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"content": "ok"}\n{not json\n', encoding="utf-8")
    with pytest.raises(Exception, match=r"broken.jsonl:2: not valid JSON"):
        invoke(root, "ingest", str(broken))
    code, out = invoke(root, "spaces", "search", "fine", "--json", "--policy", "exhaustive-v1")
    assert all(r["content"] != "fine" for r in json.loads(out)["results"])


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MNEMON_ROOT=str(root), COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "langgraph_mnemon.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_cli_errors_are_one_line_and_ingest_shows_progress(tmp_path: Path) -> None:
    root = tmp_path / "root"
    data = tmp_path / "memories.jsonl"
    data.write_text(
        "\n".join(json.dumps({"content": f"memory {i}"}) for i in range(5)) + "\n",
        encoding="utf-8",
    )
    done = _run(root, "ingest", str(data))
    assert done.returncode == 0, done.stderr
    assert "ingested 5/5 into default" in done.stdout
    assert "5/5" in done.stderr  # the rich progress bar goes to stderr
    failed = _run(root, "spaces", "search", "x", "--limit", "99")
    assert failed.returncode == 1
    assert failed.stderr.strip().splitlines() == [
        "mnemon: error: limit must be an integer between 1 and 50"
    ]
    missing = _run(root, "spaces", "forget", "nope", "--space", "ghost")
    assert missing.returncode == 1
    assert "no Memory Space 'ghost'" in missing.stderr
