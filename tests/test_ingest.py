"""``mnemon ingest`` of any size (issue 17, item 3): validated up front, written in ``--batch``
chunks with the progress bar, resumable. Real subprocesses on a real SQLite root."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

LINES = 2500


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MNEMON_ROOT=str(root), COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "langgraph_mnemon.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def _memories(count: int) -> list[str]:
    return [
        json.dumps({"content": f"Service {i} listens on port {10000 + i}.", "category": "fact"})
        for i in range(count)
    ]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _rows(root: Path) -> tuple[int, int]:
    """(live rows, distinct contents) of the native provider's table."""
    with sqlite3.connect(root / "mnemon.db") as db:
        return db.execute(
            "SELECT count(*), count(DISTINCT content) FROM mnemon_insights WHERE deleted_at IS NULL"
        ).fetchone()


def test_item17_3_ingest_2500_lines_in_batches_then_resume(tmp_path: Path) -> None:
    root = tmp_path / "root"
    lines = _memories(LINES)
    # A first run that stopped part-way: the first 1,200 lines are stored.
    first = _run(root, "ingest", str(_write(tmp_path / "part.jsonl", lines[:1200])), "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["committed"] == 1200

    data = _write(tmp_path / "all.jsonl", lines)
    resumed = _run(root, "ingest", str(data), "--batch", "500")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == (
        f"ingested 1300/{LINES} into default (1200 already stored, skipped; 0 pending; 0 failed)"
    )
    assert f"{LINES}/{LINES}" in resumed.stderr  # the rich progress bar, on stderr
    assert _rows(root) == (LINES, LINES)

    again = _run(root, "ingest", str(data), "--batch", "1000", "--json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert (report["total"], report["committed"], report["already_stored"]) == (LINES, 0, LINES)
    assert (report["skipped"], report["failed"], report["stopped_at_line"]) == (LINES, 0, None)
    assert _rows(root) == (LINES, LINES)  # no duplicate row


def test_item17_3_a_bad_line_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    root = tmp_path / "root"
    lines = _memories(LINES)
    lines[2000] = json.dumps({"content": "far down", "importance": "urgent"})
    bad = _run(root, "ingest", str(_write(tmp_path / "bad.jsonl", lines)))
    assert bad.returncode == 1
    assert "Traceback" not in bad.stderr
    expected = (
        f"mnemon: error: {tmp_path / 'bad.jsonl'}:2001: 'urgent' is not an importance; give "
        "critical, normal or low, or 1-5 (critical=5, normal=3, low=1; as a word 4-5 count as "
        "critical, 3 normal, 1-2 low)."
    )
    assert bad.stderr.strip().splitlines() == [expected]
    lines[2000] = json.dumps({"content": "far down", "colour": "red"})
    unknown = _run(root, "ingest", str(_write(tmp_path / "bad.jsonl", lines)))
    assert unknown.returncode == 1
    assert "bad.jsonl:2001: the line has unknown keys colour" in unknown.stderr
    assert not (root / "mnemon.db").exists() or _rows(root) == (0, 0)


def test_item17_3_importance_words_and_batch_limits(tmp_path: Path) -> None:
    root = tmp_path / "root"
    data = _write(
        tmp_path / "words.jsonl",
        [
            json.dumps({"content": "Never force-push main.", "importance": "critical"}),
            json.dumps({"content": "Tabs are fine in Makefiles.", "importance": "low"}),
            json.dumps({"content": "Lint before pushing.", "importance": 4}),
        ],
    )
    done = _run(root, "ingest", str(data), "--json")
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(root / "mnemon.db") as db:
        stored = dict(db.execute("SELECT content, importance FROM mnemon_insights").fetchall())
    assert stored == {
        "Never force-push main.": 5,
        "Tabs are fine in Makefiles.": 1,
        "Lint before pushing.": 4,
    }
    too_big = _run(root, "ingest", str(data), "--batch", "1001")
    assert too_big.returncode == 2
    assert too_big.stderr.count("\n") == 1
    assert "Invalid value for '--batch'" in too_big.stderr
    assert "1000" in too_big.stderr


def test_item17_3_a_resumed_ingest_into_a_chroma_space_skips_what_is_stored(
    tmp_path: Path,
) -> None:
    """Chroma keys memories by content too: a re-run (and a repeat inside one batch) is a
    duplicate, never a second row."""
    from langgraph_mnemon import Mnemon

    root = tmp_path / "root"
    with Mnemon.open(root) as mem:
        space = mem.spaces.create_space("Chroma notes", "ingest test", provider_id="chroma")
        space_id = space.space.id
    lines = _memories(300)
    first = _run(
        root, "ingest", str(_write(tmp_path / "a.jsonl", lines[:120])), "--space", space_id
    )
    assert first.returncode == 0, first.stderr
    repeat = [*lines, lines[0]]  # the same memory twice in one file
    again = _run(
        root, "ingest", str(_write(tmp_path / "b.jsonl", repeat)), "--space", space_id, "--json"
    )
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert (report["committed"], report["already_stored"], report["failed"]) == (180, 121, 0)
    with Mnemon.open(root) as mem:
        rows = mem.spaces.browse(space_id, limit=500)
        assert len(rows) == 300
        assert len({row.content for row in rows}) == 300
