"""`.ci/check-resolution.py` reads pip's output right (issue 28, item 1).

The check itself runs in `.ci/run` against the real index; these tests pin how it reads pip's
lines, so that a backtracking resolution can never pass as a direct one.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "check-resolution.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_resolution", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BACKTRACKING = """\
Collecting schemathesis<5,>=4.0 (from langgraph-mnemon==0.1.0)
  Downloading schemathesis-4.32.5-py3-none-any.whl.metadata (13 kB)
Processing /opt/pypi/files/schemathesis-4.32.4-py3-none-any.whl (from langgraph-mnemon==0.1.0)
  Using cached schemathesis-4.31.1-py3-none-any.whl (300 kB)
  Downloading schemathesis-4.15.2-py3-none-any.whl (412 kB)
INFO: pip is looking at multiple versions of schemathesis to determine which version is compatible
  Downloading jsonschema_rs-0.44.1-cp39-abi3-manylinux_2_17_x86_64.whl (2.1 MB)
  Downloading PyStemmer-3.1.0.tar.gz (300 kB)
"""


def test_candidates_counts_each_version_pip_fetched_per_normalized_name() -> None:
    seen = _module().candidates(BACKTRACKING)
    assert seen["schemathesis"] == {"4.32.5", "4.32.4", "4.31.1", "4.15.2"}
    assert seen["jsonschema-rs"] == {"0.44.1"}
    assert seen["pystemmer"] == {"3.1.0"}


def test_a_backtracking_log_fails_and_a_direct_one_passes() -> None:
    module = _module()
    direct = "  Downloading schemathesis-4.15.2-py3-none-any.whl (412 kB)\n"
    for log, expected in ((BACKTRACKING, 1), (direct, 0)):
        module._resolve = lambda extras, limit, log=log: (log, 1.0, 0)
        assert module.main(["--max-candidates", "3"]) == expected


def test_a_resolution_over_the_limit_fails() -> None:
    module = _module()
    module._resolve = lambda extras, limit: ("", limit, None)
    assert module.main(["--limit", "240"]) == 1
