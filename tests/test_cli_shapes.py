"""A consistent ``mnemon`` command line (issue 17, item 6): every error is one line on stderr
(usage errors exit 2, library errors exit 1, a ``--root`` that is a file included), the same
argument style for the same thing, exact messages, flags shown as flags, one importance
vocabulary. The table runs through ``cli.main`` in-process (the console script's own path);
a sample runs as real subprocesses."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from langgraph_mnemon import Mnemon


@dataclass
class Done:
    code: int
    out: str
    err: str


@pytest.fixture
def mnemon(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., Done]:
    """Run ``mnemon ARGS`` through ``cli.main``; hosts the command opened are closed after."""
    from langgraph_mnemon import cli

    opened: list[Mnemon] = []

    class Tracked(Mnemon):
        @classmethod
        def open(cls, root: Any = None, **settings: Any) -> Any:  # type: ignore[override]
            host = Mnemon.open(root, **settings)
            opened.append(host)
            return host

    monkeypatch.setattr(cli, "Mnemon", Tracked)
    monkeypatch.setenv("COLUMNS", "200")

    def run(*args: str) -> Done:
        capsys.readouterr()
        try:
            with monkeypatch.context() as scoped:  # the console script reads sys.argv
                scoped.setattr(sys, "argv", ["mnemon", *args])
                cli.main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            while opened:
                opened.pop().close()
        captured = capsys.readouterr()
        return Done(code, captured.out, captured.err)

    return run


def _one_line(done: Done, code: int) -> str:
    assert done.code == code, done
    assert "Traceback" not in done.err
    lines = done.err.strip().splitlines()
    assert len(lines) == 1, done.err
    assert lines[0].startswith("mnemon: error: "), done.err
    return lines[0]


# Each command with a bad argument: (args after --root ROOT, exit code, text in the line).
BAD_ARGUMENTS = [
    (["status", "--json", "true"], 2, "flags such as --json take no value"),
    (["runtime", "show", "--branch"], 2, "requires an argument"),
    (["runtime", "add", "memory", "x", "--importance", "huge"], 2, "'huge' is not an importance"),
    (["runtime", "add", "memory", "a § b"], 1, "reserved § entry delimiter"),
    (["runtime", "replace", "memory"], 2, "Missing argument"),
    (["runtime", "replace", "memory", "nothing", "new"], 1, 'No memory entry contains "nothing".'),
    (["runtime", "remove"], 2, "Missing argument"),
    (["runtime", "remove", "memory", "nothing"], 1, 'No memory entry contains "nothing".'),
    (["runtime", "add", "user"], 2, "TEXT is missing: `mnemon runtime add user TEXT`"),
    (["runtime", "replace", "user", "tea"], 2, "NEW_TEXT is missing"),
    (["runtime", "remove", "memory"], 2, "OLD_TEXT is missing"),
    (["runtime", "add", "both", "x"], 2, "TARGET must be user or memory, not 'both'"),
    (["runtime", "add", "user", "x", "--target", "memory"], 2, "two targets given"),
    (["docs", "list", "--archived", "yes"], 2, "take no value"),
    (["docs", "show"], 2, "Missing argument"),
    (["docs", "show", "nope"], 1, "'nope' is not a document id"),
    (["docs", "show", "ab"], 1, "give at least its first 4 characters"),
    (["docs", "show", "abcd"], 1, "no document id starts with 'abcd'"),
    (["docs", "create", "body"], 1, "title is required"),
    (["docs", "create", "--title", "T"], 2, "exactly one"),
    (["docs", "search", "q", "--limit", "many"], 2, "Invalid value for '--limit'"),
    (["docs", "search", "q", "--limit", "99"], 1, "limit must be an integer in 1..50"),
    (["docs", "archive"], 2, "Missing argument"),
    (["docs", "archive", "abcd1234"], 1, "no document id starts with 'abcd1234'"),
    (["spaces", "list", "--nope"], 2, "No such option: --nope"),
    (["spaces", "create"], 2, "Missing argument"),
    (["spaces", "create", ""], 1, "name must not be empty"),
    (["spaces", "remember", "x", "--importance", "9"], 2, "'9' is not an importance"),
    (["spaces", "remember", "x", "--space", "ghost"], 1, "ghost"),
    (["spaces", "search"], 2, "Missing argument"),
    (["spaces", "search", "q", "--mode", "weird"], 1, "mode must be one of smart"),
    (["spaces", "forget"], 2, "Missing argument"),
    (["spaces", "forget", "nope", "--space", "ghost"], 1, "no Memory Space 'ghost'"),
    (["ingest"], 2, "Missing argument"),
    (["ingest", "missing.jsonl"], 1, "cannot read missing.jsonl"),
    (["ingest", "missing.jsonl", "--batch", "0"], 2, "Invalid value for '--batch'"),
    (["remember", "x", "--importance", "seven"], 2, "'seven' is not an importance"),
    (["remember", "x", "--category", "gossip"], 1, "invalid memory"),
    (["query"], 2, "Missing argument"),
    (["query", ""], 1, "query must not be empty"),
    (["serve", "--port", "70000"], 2, "Invalid value for '--port'"),
    (["serve", "--chroma", "/var/chroma"], 1, "a folder is not a server"),
    (["serve", "--postgres", "mysql://u@h/db"], 1, "--postgres must be a PostgreSQL URL"),
    (["mnemos", "status", "a", "--task", "b"], 2, "two tasks given"),
    (["mnemos", "nodes", "a", "b"], 2, "unexpected extra argument"),
    (["mnemos", "nodes", "--type", "bogus"], 1, "type must be one of goal"),
    (["mnemos", "fatigue", "t", "extra"], 2, "unexpected extra argument"),
    (["mnemos", "checkpoint", "t", "--force", "yes"], 2, "unexpected extra argument"),
    (["mnemos", "resume", "missing"], 1, "no checkpoint found to resume task 'missing'"),
    (["mnemos", "consolidate", "t", "--scope"], 2, "requires an argument"),
    (["mnemos", "add", "goal"], 2, "Missing argument"),
    (["mnemos", "add", "handoff", "x"], 1, "handoff nodes are written by Mnemos.handoff"),
    (["mnemos", "add", "badtype", "x"], 1, "node type must be one of goal"),
    (["nosuch"], 2, "No such command 'nosuch'"),
]


@pytest.mark.parametrize(("args", "code", "text"), BAD_ARGUMENTS, ids=lambda v: str(v))
def test_item17_6_every_command_errors_in_one_line(
    mnemon: Callable[..., Done],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    code: int,
    text: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    line = _one_line(mnemon("--root", str(tmp_path / "root"), *args), code)
    assert text in line
    if code == 2:  # a usage error points at the help of the command it is about
        assert "--help`)" in line


# Every command, with valid arguments, on a --root that is a file.
EVERY_COMMAND = [
    ["status"],
    ["runtime", "show"],
    ["runtime", "add", "memory", "x"],
    ["runtime", "replace", "memory", "a", "b"],
    ["runtime", "remove", "memory", "a"],
    ["docs", "list"],
    ["docs", "show", "abcd1234"],
    ["docs", "create", "body", "--title", "T"],
    ["docs", "search", "q"],
    ["docs", "archive", "abcd1234"],
    ["spaces", "list"],
    ["spaces", "create", "Notes"],
    ["spaces", "remember", "x"],
    ["spaces", "search", "q"],
    ["spaces", "forget", "id1"],
    ["ingest", "data.jsonl"],
    ["remember", "x"],
    ["query", "q"],
    ["serve", "--port", "1"],
    ["mnemos", "status"],
    ["mnemos", "nodes"],
    ["mnemos", "fatigue", "t"],
    ["mnemos", "checkpoint", "t"],
    ["mnemos", "resume", "t"],
    ["mnemos", "consolidate", "t"],
    ["mnemos", "add", "goal", "x", "t"],
]


@pytest.mark.parametrize("args", EVERY_COMMAND, ids=lambda v: " ".join(v))
def test_item17_6_a_root_that_is_a_file_is_one_line(
    mnemon: Callable[..., Done], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.jsonl").write_text('{"content": "x"}\n', encoding="utf-8")
    afile = tmp_path / "notes.txt"
    afile.write_text("not a folder\n", encoding="utf-8")
    line = _one_line(mnemon("--root", str(afile), *args), 1)
    assert f"storage root ({afile})" in line
    assert afile.read_text(encoding="utf-8") == "not a folder\n"


def test_item17_6_errors_are_one_line_in_real_processes(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    env = dict(os.environ, COLUMNS="80")
    cases = [
        (["--root", str(afile), "status"], 1),
        (["--root", str(tmp_path / "r"), "status", "--json", "true"], 2),
        (["--root", str(tmp_path / "r"), "docs", "show", "nope"], 1),
        (["--root", str(tmp_path / "r"), "mnemos", "nodes", "a", "--task", "b"], 2),
    ]
    for args, code in cases:
        done = subprocess.run(
            [sys.executable, "-m", "langgraph_mnemon.cli", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        _one_line(Done(done.returncode, done.stdout, done.stderr), code)
    # With MNEMON_ROOT instead of --root too.
    done = subprocess.run(
        [sys.executable, "-m", "langgraph_mnemon.cli", "spaces", "list"],
        capture_output=True,
        text=True,
        env={**env, "MNEMON_ROOT": str(afile)},
        timeout=120,
    )
    _one_line(Done(done.returncode, done.stdout, done.stderr), 1)


# --- help: flags shown as flags; the importance scale documented ---------------------------

COMMAND_PATHS = [
    [],
    ["status"],
    ["ingest"],
    ["remember"],
    ["query"],
    ["serve"],
    *(["runtime", c] for c in ("show", "add", "replace", "remove")),
    *(["docs", c] for c in ("list", "show", "create", "search", "archive")),
    *(["spaces", c] for c in ("list", "create", "remember", "search", "forget")),
    *(["mnemos", c] for c in ("status", "nodes", "fatigue", "checkpoint", "resume")),
    ["mnemos", "consolidate"],
    ["mnemos", "add"],
]


def test_item17_6_help_shows_flags_without_a_value(mnemon: Callable[..., Done]) -> None:
    for path in COMMAND_PATHS:
        done = mnemon(*path, "--help")
        assert done.code == 0, (path, done)
        assert "<bool>" not in done.out, path
        for line in done.out.splitlines():
            if line.strip().startswith(("--json", "--help", "--all", "--force", "--archived")):
                assert "<" not in line.split()[0], line
        if "--json" in done.out:
            assert any(line.split()[:1] == ["--json"] for line in done.out.splitlines()), path
    takes_importance = (["runtime", "add"], ["runtime", "replace"], ["spaces", "remember"])
    for path in (*takes_importance, ["remember"]):
        text = " ".join(mnemon(*path, "--help").out.split())
        assert "critical=5, normal=3, low=1" in text, path


def test_item17_6_one_importance_vocabulary_everywhere(
    mnemon: Callable[..., Done], tmp_path: Path
) -> None:
    root = str(tmp_path / "root")
    assert (
        mnemon(
            "--root", root, "runtime", "add", "memory", "Never push to main.", "--importance", "5"
        ).code
        == 0
    )
    assert (
        mnemon(
            "--root", root, "runtime", "add", "memory", "Tabs or spaces.", "--importance", "2"
        ).code
        == 0
    )
    assert (
        mnemon("--root", root, "runtime", "add", "memory", "Use uv.", "--importance", "normal").code
        == 0
    )
    done = mnemon(
        "--root", root, "spaces", "remember", "Deploys on Tuesday.", "--importance", "critical"
    )
    assert done.code == 0, done
    done = mnemon("--root", root, "remember", "The wiki moved to docs/.", "--importance", "low")
    assert done.code == 0, done
    with Mnemon.open(root) as mem:
        words = {e.content: e.importance for e in mem.runtime.entries("memory")}
        levels = {i.content: i.importance for i in mem.spaces.browse("default")}
    assert words == {
        "Never push to main.": "critical",
        "Tabs or spaces.": "low",
        "Use uv.": "normal",
    }
    assert levels == {"Deploys on Tuesday.": 5, "The wiki moved to docs/.": 1}

    from langgraph_mnemon.cli._common import importance_level, importance_word

    assert [importance_word(n) for n in range(1, 6)] == [
        "low",
        "low",
        "normal",
        "critical",
        "critical",
    ]
    assert [importance_level(w) for w in ("critical", "normal", "low")] == [5, 3, 1]
    # The round trip word -> level -> word is the identity.
    assert all(importance_word(importance_level(w)) == w for w in ("critical", "normal", "low"))


def test_item17_6_mnemos_task_is_positional_everywhere(
    mnemon: Callable[..., Done], tmp_path: Path
) -> None:
    root = ("--root", str(tmp_path / "root"))
    assert (
        "added goal node" in mnemon(*root, "mnemos", "add", "goal", "Ship the reset flow", "t1").out
    )
    assert mnemon(*root, "mnemos", "add", "result", "Old flag", "--task", "t2").code == 0  # alias
    positional = mnemon(*root, "mnemos", "nodes", "t1")
    assert positional.code == 0
    assert "Ship the reset flow" in positional.out
    assert "Old flag" not in positional.out
    assert mnemon(*root, "mnemos", "nodes", "--task", "t1").out == positional.out
    assert mnemon(*root, "mnemos", "nodes", "-t", "t1").out == positional.out
    assert mnemon(*root, "mnemos", "fatigue", "t1", "--json").code == 0
    assert mnemon(*root, "mnemos", "consolidate", "t1").code == 0
    made = mnemon(*root, "mnemos", "checkpoint", "t1", "--force", "--no-git")
    assert made.code == 0, made
    assert "Ship the reset flow" in mnemon(*root, "mnemos", "resume", "t1").out
    status = mnemon(*root, "mnemos", "status", "t1", "--json")
    assert '"task_id": "t1"' in status.out
    assert "t2" not in status.out
    for command in ("status", "nodes", "fatigue", "checkpoint", "resume", "consolidate", "add"):
        usage = mnemon("mnemos", command, "--help").out.splitlines()[0]
        assert "[task]" in usage.lower(), usage
        assert "--task" not in mnemon("mnemos", command, "--help").out  # the alias is hidden


def test_item17_6_messages_use_the_given_name(mnemon: Callable[..., Done], tmp_path: Path) -> None:
    root = ("--root", str(tmp_path / "root"))
    done = mnemon(*root, "spaces", "create", "project-notes", "--description", "Notes")
    assert done.code == 0, done
    assert done.out.startswith("Memory Space 'project-notes' created"), done.out
    assert "Provider mnemos, inactive until its first write." in done.out


# --- issue 31: runtime arguments in the Python API's order; `list` where users type it -------

# (CLI arguments, the same call on mem.runtime), one per command, in order.
NEW_ORDER = [
    (["add", "user", "Prefers tea."], ("add", "user", "Prefers tea.")),
    (["add", "memory", "Run tests with pytest -q"], ("add", "memory", "Run tests with pytest -q")),
    (
        ["replace", "user", "tea", "Prefers green tea."],
        ("replace", "user", "tea", "Prefers green tea."),
    ),
    (["add", "user", "Works nights."], ("add", "user", "Works nights.")),
    (["remove", "user", "nights"], ("remove", "user", "nights")),
    (
        ["replace", "memory", "pytest -q", "Run tests with pytest -x"],
        ("replace", "memory", "pytest -q", "Run tests with pytest -x"),
    ),
]


def _entries(root: Path) -> dict[str, list[str]]:
    with Mnemon.open(root) as mem:
        return {t: [e.content for e in mem.runtime.entries(t)] for t in ("user", "memory")}


def test_issue31_runtime_takes_the_python_api_order(
    mnemon: Callable[..., Done], tmp_path: Path
) -> None:
    cli_root, api_root = tmp_path / "cli", tmp_path / "api"
    for args, _call in NEW_ORDER:
        done = mnemon("--root", str(cli_root), "runtime", *args)
        assert done.code == 0, done
        assert done.err == ""  # the documented order draws no note
    with Mnemon.open(api_root) as mem:
        for _args, (method, *call) in NEW_ORDER:
            getattr(mem.runtime, method)(*call)
    assert (
        _entries(cli_root)
        == _entries(api_root)
        == {
            "user": ["Prefers green tea."],
            "memory": ["Run tests with pytest -x"],
        }
    )


# The old order (TEXT --target T, the target defaulting to memory): still works, with a note.
OLD_ORDER = [
    ["add", "Prefers tea.", "--target", "user"],
    ["add", "Run tests with pytest -q"],
    ["add", "Works nights.", "-t", "user"],
    ["replace", "tea", "Prefers green tea.", "--target", "user"],
    ["remove", "nights", "--target", "user"],
    ["replace", "pytest -q", "Run tests with pytest -x"],
]


def test_issue31_old_runtime_order_still_works_with_a_deprecation_note(
    mnemon: Callable[..., Done], tmp_path: Path
) -> None:
    old_root, suggested_root = tmp_path / "old", tmp_path / "suggested"
    for args in OLD_ORDER:
        done = mnemon("--root", str(old_root), "runtime", *args)
        assert done.code == 0, done
        note = done.err.strip().splitlines()
        assert len(note) == 1, done.err
        assert note[0].startswith("mnemon: deprecated: "), done.err
        # The note spells the command in the new order; that command does the same.
        suggested = shlex.split(note[0].split("`")[1])
        assert suggested[:3] == ["mnemon", "runtime", args[0]], note
        again = mnemon("--root", str(suggested_root), *suggested[1:])
        assert again.code == 0, again
        assert again.err == "", again
    assert (
        _entries(old_root)
        == _entries(suggested_root)
        == {
            "user": ["Prefers green tea."],
            "memory": ["Run tests with pytest -x"],
        }
    )
    # A bad --target in the old order is still the layer's refusal (exit 1), after the note.
    done = mnemon("--root", str(old_root), "runtime", "add", "x", "--target", "both")
    assert done.code == 1
    assert done.err.splitlines()[-1] == "mnemon: error: target must be memory or user"


# `list` where a user types it: (alias, the command it names).
LIST_ALIASES = [
    (["runtime", "list"], ["runtime", "show"]),
    (["settings", "list"], ["settings", "show"]),
    (["mnemos", "list"], ["mnemos", "status"]),
    (["docs", "list"], ["docs", "list"]),
    (["spaces", "list"], ["spaces", "list"]),
]


def test_issue31_list_works_in_every_group(mnemon: Callable[..., Done], tmp_path: Path) -> None:
    root = ("--root", str(tmp_path / "root"))
    assert mnemon(*root, "runtime", "add", "user", "Prefers tea.").code == 0
    assert mnemon(*root, "settings", "set", "recall_mode", "off").code == 0
    assert mnemon(*root, "mnemos", "add", "goal", "Ship the reset flow", "t1").code == 0
    assert mnemon(*root, "docs", "create", "Body.", "--title", "Runbook").code == 0
    assert mnemon(*root, "spaces", "create", "Notes").code == 0
    for alias, command in LIST_ALIASES:
        listed, shown = mnemon(*root, *alias, "--json"), mnemon(*root, *command, "--json")
        assert listed.code == 0, (alias, listed)
        assert listed.err == "", (alias, listed)
        assert listed.out == shown.out, alias
        assert json.loads(listed.out), alias  # each lists what was just stored
        group_help = mnemon(alias[0], "--help").out
        assert any(line.split()[:1] == ["list"] for line in group_help.splitlines()), alias
    assert "Prefers tea." in mnemon(*root, "runtime", "list").out
