"""The package's shape, as DESIGN.md fixes it: layer contracts, module and function sizes, no
import circle. These fail when a change grows a module past the limits or imports upward."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _structure():
    spec = importlib.util.spec_from_file_location("structure", ROOT / "scripts" / "structure.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module.measure(ROOT)


def test_import_linter_contracts_are_kept() -> None:
    command = shutil.which("lint-imports")
    assert command is not None, "install the dev extra: pip install -e '.[dev]'"
    done = subprocess.run(
        [command, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout or "broken" not in done.stdout.split("Contracts:")[-1]


def test_no_module_over_900_lines() -> None:
    figures = _structure()
    assert figures.over_limit == [], figures.over_limit


def test_long_functions_are_few_and_none_over_100_lines() -> None:
    figures = _structure()
    assert len(figures.long_functions) <= 5, figures.long_functions
    assert [f for f in figures.long_functions if f[0] > 100] == []


def test_no_import_circle() -> None:
    figures = _structure()
    assert figures.module_cycles == [], figures.module_cycles
    assert figures.layer_cycles == [], figures.layer_cycles
