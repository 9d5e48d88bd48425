"""docs/http-provider.md's adapter passes the conformance suite, run as the page says (issue 31).

The page has the reader save two files, ``adapter.py`` (the contract over a dictionary) and
``test_adapter.py`` (the shipped suite, one pytest test per check), then run one of two commands:
``python -m pytest -q test_adapter.py`` (the test module serves ``adapter.py`` on a free port),
or the adapter started as its own process on port 8800 and named by ``ADAPTER_URL``. Each
command block runs here with bash, as written, in a folder holding exactly those two files; the
second with 8800 replaced by a free port. Every check must pass: none failed, none skipped.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
from pathlib import Path

import pytest
from server_support import free_port
from test_readme import REPO, Block, fenced_blocks, saved_files, script_env

from langgraph_mnemon.testing.providers import CHECKS

DOC = REPO / "docs" / "http-provider.md"
DOC_PORT = "8800"  # the port the page's second command names
COMMANDS = [b for b in fenced_blocks(DOC) if b.lang == "bash" and "test_adapter.py" in b.code]


def test_issue31_the_page_saves_an_adapter_and_its_conformance_test() -> None:
    files = saved_files(DOC)
    assert sorted(files) == ["adapter.py", "test_adapter.py"]
    assert "from adapter import KEY, serving" in files["test_adapter.py"]
    assert len(COMMANDS) == 2, "one command on a free port, one against a running adapter"
    assert DOC_PORT not in COMMANDS[0].code
    assert f"python adapter.py {DOC_PORT} &" in COMMANDS[1].code


def _run_block(block: Block, folder: Path, env: dict[str, str], port: int) -> str:
    """Run a bash block in its own process group; whatever it left running is killed."""
    script = folder.parent / "command.sh"
    script.write_text(block.code.replace(DOC_PORT, str(port)), encoding="utf-8")
    process = subprocess.Popen(
        ["bash", "-e", "-o", "pipefail", str(script)],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,  # the adapter's log; pytest reports on stdout
        text=True,
        start_new_session=True,  # the adapter it starts shares the group: one kill ends both
    )
    try:
        out, err = process.communicate(timeout=300)
    finally:
        with contextlib.suppress(ProcessLookupError):  # the block stopped all it started
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert process.returncode == 0, f"{block.where}: exit {process.returncode}\n{out}{err[-2000:]}"
    return out


@pytest.mark.timeout(600)
@pytest.mark.parametrize("block", COMMANDS, ids=[b.where for b in COMMANDS])
def test_issue31_the_conformance_command_passes_as_written(block: Block, tmp_path: Path) -> None:
    folder = tmp_path / "reader"
    folder.mkdir()
    for name, text in saved_files(DOC).items():
        (folder / name).write_text(text, encoding="utf-8")
    port = free_port()
    out = _run_block(block, folder, script_env(tmp_path), port)
    summary = out.strip().splitlines()[-1]
    assert re.fullmatch(rf"{len(CHECKS)} passed in [\d.]+s", summary), out[-6000:]
    with socket.socket() as probe:  # `kill %1` stopped the adapter the block started
        assert probe.connect_ex(("127.0.0.1", port)) != 0, f"port {port} still answers"
