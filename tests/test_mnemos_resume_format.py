"""Issue 16, item 5: a resume block that reads well.

The resume holds, in the reference's order, the goal, the constraints under "Active Constraints
(DO NOT VIOLATE)", the current sub-goal, working memory (never repeating the sub-goal), the
latest results (the LAST ones, newest last, at least five), the git state of a real repository
and the node summary. The goal is one goal, chosen by origin (model, then the agent's newest,
then the derived one); a superseded (compressed) goal never appears. Real SQLite, real git.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.memory_layers.mnemos import Database, Mnemos, create_engine, parse_resume
from langgraph_mnemon.memory_layers.mnemos.schema import NODES

TASK = "reset-flow"
GOAL = "Add a password reset flow to the auth service"
OLD_GOAL = "Write the login page"
CONSTRAINTS = (
    "Do not change the public API of /auth/login.",
    "Every new endpoint must require a token.",
)
SUBGOAL = "Wire the reset e-mail template into POST /auth/reset"
MEMORY = "Considering e-mail vs SMS codes; e-mail first."


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        self.now += 1  # every call a second later: creation order is unambiguous
        return self.now


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real git repository on branch feat/reset with one modified and one untracked file."""
    if shutil.which("git") is None:
        pytest.fail("git is required for the git-state section (apt-get install git)")
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    _git(work, "init", "-q", "-b", "feat/reset")
    _git(work, "config", "user.email", "t@example.org")
    _git(work, "config", "user.name", "Test")
    (work / "src" / "auth.py").write_text("def login():\n    pass\n")
    _git(work, "add", ".")
    _git(work, "commit", "-q", "-m", "init")
    (work / "src" / "auth.py").write_text("def login():\n    return True\n")
    (work / "src" / "reset.py").write_text("def reset():\n    pass\n")
    return work


def _open(tmp_path: Path, repo: Path, **config: object) -> tuple[Database, Mnemos]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    db = Database(create_engine(tmp_path / "m.db"), owns_engine=True)
    settings = MnemosConfig(git_state=True, checkpoint_cooldown_seconds=0, **config)
    return db, Mnemos(db, settings, workspace=repo, clock=Clock())


@pytest.fixture
def mnemos(tmp_path: Path, repo: Path) -> Iterator[Mnemos]:
    db, service = _open(tmp_path, repo)
    yield service
    db.dispose()


def _supersede(m: Mnemos, node_id: str) -> None:
    """What a restated goal leaves behind (derivation / mnemon_task set_goal): the old goal
    compressed with a "Superseded: ..." summary. Written directly: goals refuse compress()."""
    with m.db.write() as conn:
        conn.execute(
            sa.update(NODES)
            .where(NODES.c.id == node_id)
            .values(status="compressed", summary=f"Superseded: {OLD_GOAL}", content="")
        )


def _seed(m: Mnemos, results: int = 8) -> None:
    old = m.add_node(TASK, "goal", OLD_GOAL, origin="derived")
    _supersede(m, old.id)
    m.add_node(TASK, "goal", GOAL, origin="derived")
    for text in CONSTRAINTS:
        m.add_node(TASK, "constraint", text, origin="derived")
    for i in range(results):
        m.add_node(TASK, "result", f"run_tests(path=tests/test_{i}.py) -> ok: step {i} passed")
    # Equal weights: the newest working node is the sub-goal, the older ones working memory,
    # where the older copy of the sub-goal must not show up again.
    m.add_node(TASK, "working", SUBGOAL)
    m.add_node(TASK, "working", MEMORY)
    m.add_node(TASK, "working", SUBGOAL)


def _sections(text: str) -> dict[str, list[str]]:
    """Section title -> its non-empty lines, in document order (read by ``parse_resume``)."""
    block = parse_resume(text)
    assert block is not None, text
    return {s.title: [line for line in s.text.split("\n") if line] for s in block.sections}


def test_resume_holds_every_section_in_order(mnemos: Mnemos) -> None:
    _seed(mnemos)
    receipt = mnemos.checkpoint(TASK, force=True)
    assert receipt.status == "committed"
    text = mnemos.resume(TASK)
    sections = _sections(text)
    order = [
        "Goal",
        "Active Constraints (DO NOT VIOLATE)",
        "Current Sub-Goal",
        "Working Memory",
        "Progress So Far",
        "Git State",
        "MnemoGraph Summary",
    ]
    present = [title for title in sections if title in order]
    assert present == order, text
    assert sections["Goal"] == [GOAL]
    assert sections["Active Constraints (DO NOT VIOLATE)"] == [f"- {c}" for c in CONSTRAINTS]
    assert sections["Current Sub-Goal"] == [SUBGOAL]
    assert sections["Working Memory"] == [MEMORY]  # no second copy of the sub-goal
    progress = sections["Progress So Far"]
    assert progress[-5:] == [
        f"- run_tests(path=tests/test_{i}.py) -> ok: step {i} passed" for i in range(3, 8)
    ]
    git = sections["Git State"]
    assert git[0] == "Branch: feat/reset"
    assert "  - src/auth.py" in git
    assert "  - src/reset.py" in git
    nodes = sections["MnemoGraph Summary"]
    # 1 goal + 2 constraints + 8 results + 3 working active; the old goal compressed
    assert nodes[0] == "Nodes: 14 active, 1 compressed, 15 total"
    assert nodes[1] == "Types: constraint:2, goal:1, result:8, working:3"
    # The superseded goal is nowhere, not even joined to the new one.
    assert OLD_GOAL not in text
    assert "; " + GOAL not in text
    assert GOAL + ";" not in text


def test_the_last_results_are_kept_newest_last_and_at_least_five(
    tmp_path: Path, repo: Path
) -> None:
    # checkpoint_results=2 asks for fewer than five: five are kept all the same.
    db, m = _open(tmp_path, repo, checkpoint_results=2)
    try:
        _seed(m, results=30)
        m.consolidate(TASK)  # compresses the three oldest results: they stay in order
        summary = m.checkpoint(TASK, force=True).checkpoint.summary
        assert summary.results == tuple(
            f"run_tests(path=tests/test_{i}.py) -> ok: step {i} passed" for i in range(25, 30)
        )
    finally:
        db.dispose()
    db, m = _open(tmp_path / "b", repo, checkpoint_results=12)
    try:
        _seed(m, results=30)
        results = m.summarize(TASK).results
        assert len(results) == 12
        assert results[-1].endswith("step 29 passed")
        assert results[0].endswith("step 18 passed")
    finally:
        db.dispose()


def test_goal_is_chosen_by_origin_never_joined(mnemos: Mnemos) -> None:
    mnemos.add_node(TASK, "goal", "Derived from the user's words", origin="derived")
    assert mnemos.summarize(TASK).goal == "Derived from the user's words"
    mnemos.add_node(TASK, "goal", "Set by the agent first")
    mnemos.add_node(TASK, "goal", "Set by the agent later")
    assert mnemos.summarize(TASK).goal == "Set by the agent later"  # the newest of the agent's
    mnemos.add_node(TASK, "goal", "Stated by the model", origin="model")
    assert mnemos.summarize(TASK).goal == "Stated by the model"
    (overview,) = mnemos.status(TASK)
    assert overview.goal == "Stated by the model"  # the task is labelled by the same goal
    assert overview.label == "Stated by the model"
    mnemos.checkpoint(TASK, force=True)
    text = mnemos.resume(TASK)
    assert _sections(text)["Goal"] == ["Stated by the model"]
    assert "Set by the agent" not in text
    assert "Derived from" not in text


def test_multiline_results_stay_one_list_item(mnemos: Mnemos) -> None:
    mnemos.add_node(TASK, "goal", GOAL)
    mnemos.add_node(TASK, "result", "Answered: the reset flow works.\n\n- step one\n- step two")
    mnemos.checkpoint(TASK, force=True)
    progress = _sections(mnemos.resume(TASK))["Progress So Far"]
    assert progress == ["- Answered: the reset flow works. - step one - step two"]


def test_a_task_without_goal_is_labelled_by_its_id(mnemos: Mnemos) -> None:
    mnemos.add_node("bare-task", "context", "Read README.md: nothing about goals")
    (overview,) = mnemos.status("bare-task")
    assert overview.goal is None
    assert overview.label == "bare-task"
    assert (overview.mnemos_checkpoints, overview.langgraph_checkpoints) == (0, 0)
