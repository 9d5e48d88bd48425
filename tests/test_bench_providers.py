"""bench/providers.py on a tiny slice: the table's rows and columns, and failing providers as rows.

The bench runs for real (every provider, the reference HTTP server on a free port, the
HashingEmbedder) on the first LoCoMo dev conversation, 10 questions, one round.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import providers as bench

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = [
    "provider",
    "ingest s",
    "stored",
    "recall p50 ms",
    "p95 ms",
    "p50 ÷ mnemos",
    "R@5",
    "MRR",
    "R@5 Δ mnemos",
    "R@5 strict-v1",
    "failed",
]
SLICE = ["--conversations", "1", "--questions", "10", "--rounds", "1", "--embedder", "hashing"]
TURNS = 419  # dialog turns of conv-26, the first conversation


@pytest.fixture(scope="module", autouse=True)
def _data() -> None:
    if not bench.DATA.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"LoCoMo dev data missing at {bench.DATA} under CI=true")
        pytest.skip(f"LoCoMo dev data not found at {bench.DATA} (../shared/bench)")


def _table(stdout: str) -> tuple[list[str], dict[str, list[str]]]:
    lines = [ln for ln in stdout.splitlines() if ln.startswith("|")]
    assert len(lines) >= 3, stdout
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    assert set(lines[1].replace("|", "")) == {"-"}
    rows = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == len(head), line
        rows[cells[0]] = cells
    return head, rows


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "providers.py"), *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_every_provider_gets_a_measured_row() -> None:
    done = _run(*SLICE)
    head, rows = _table(done.stdout)
    assert head == COLUMNS
    assert list(rows) == list(bench.PROVIDERS)
    for name, cells in rows.items():
        assert not cells[1].startswith(("not available", "failed")), cells
        assert cells[2] == f"{TURNS}/{TURNS}", cells  # every turn committed
        p50, p95 = float(cells[3]), float(cells[4])
        assert 0 < p50 <= p95, cells
        for score in (cells[6], cells[7], cells[9]):
            assert 0.0 <= float(score) <= 1.0, cells
        assert cells[10] == "0", f"{name}: recalls answered unavailable"
    base = rows["mnemos"]
    assert base[5] == "1.00×"
    assert base[8] == "+0.000"
    assert float(base[6]) >= 0.3  # the native ranking finds evidence on this slice
    for cells in rows.values():
        assert float(cells[8]) == pytest.approx(float(cells[6]) - float(base[6]), abs=2e-3)
    assert "Command: python bench/providers.py --conversations 1" in done.stdout
    assert "Machine: " in done.stdout
    assert "10 questions" in done.stdout
    assert "[providers] mnemos: ingested conv-26" in done.stderr  # progress goes to stderr
    assert "[providers]" not in done.stdout


def test_providers_option_selects_rows() -> None:
    done = _run(*SLICE, "--providers", "store", "mnemos")
    _, rows = _table(done.stdout)
    assert list(rows) == ["store", "mnemos"]
    assert rows["mnemos"][5] == "1.00×"


def _missing(ctx: bench.Context) -> bench.Built:
    raise ImportError("No module named 'not_installed'")


def _broken(ctx: bench.Context) -> bench.Built:
    raise RuntimeError("backend refused the folder")


def test_missing_or_broken_provider_is_a_row_not_a_crash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(bench.FACTORIES, "mem0", _missing)
    monkeypatch.setitem(bench.FACTORIES, "facts", _broken)
    bench.main([*SLICE, "--questions", "3", "--providers", "mnemos", "mem0", "facts"])
    head, rows = _table(capsys.readouterr().out)
    assert list(rows) == ["mnemos", "mem0", "facts"]
    assert rows["mem0"][1] == "not available: ImportError: No module named 'not_installed'"
    assert rows["facts"][1] == "failed: RuntimeError: backend refused the folder"
    assert rows["mem0"][2:] == ["—"] * (len(head) - 2)
    assert rows["mnemos"][2] == f"{TURNS}/{TURNS}"


def test_without_baseline_ratios_are_blank(capsys: pytest.CaptureFixture[str]) -> None:
    bench.main([*SLICE, "--questions", "3", "--providers", "store"])
    _, rows = _table(capsys.readouterr().out)
    assert rows["store"][5] == "—"
    assert rows["store"][8] == "—"
    assert float(rows["store"][3]) > 0


def test_bad_slice_is_refused() -> None:
    with pytest.raises(SystemExit, match="at least 1"):
        bench.main(["--conversations", "0"])
