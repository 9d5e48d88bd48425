"""Live settings live in the database (issue 30, item 3).

A switch changed through one host is in force on every host that shares the database within
5 s, and on a host opened later; start-up values come back after a reset. Two hosts in one
process on one SQLite file and on one PostgreSQL schema, a second process on the same SQLite
file, and the event loop: the refresh never blocks it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import InvalidInputError, ParticipationError, ReadOnlyError
from langgraph_mnemon.memory_layers.kernel import acting
from langgraph_mnemon.memory_layers.live_settings import LIVE_KEYS

DEADLINE = 5.0  # the promise: in force on every host within 5 s


def _open(root: Path, url: str, **settings: Any) -> Mnemon:
    settings.setdefault("chroma", {"enabled": False})
    settings.setdefault("embedding", {"enabled": False})
    return Mnemon.open(root, database_url=url, **settings)


@pytest.fixture
def pair(database_url: str, tmp_path: Path) -> Iterator[tuple[Mnemon, Mnemon, str]]:
    """Two hosts with their own roots on one database (as two replicas)."""
    first = _open(tmp_path / "a", database_url)
    second = _open(tmp_path / "b", database_url)
    try:
        yield first, second, database_url
    finally:
        first.close()
        second.close()


def _within(deadline: float, probe: Callable[[], Any], want: Any) -> float:
    """Seconds until ``probe()`` returns ``want``; fails after ``deadline`` seconds."""
    started = time.monotonic()
    while True:
        got = probe()
        if got == want:
            return time.monotonic() - started
        if time.monotonic() - started > deadline:
            pytest.fail(f"still {got!r} after {deadline} s (wanted {want!r})")
        time.sleep(0.05)


def test_a_change_through_one_host_is_in_force_on_the_other_within_5_s(
    pair: tuple[Mnemon, Mnemon, str],
) -> None:
    first, second, _ = pair
    assert second.kernel.mode("runtime", "write") == "automatic"  # B has looked once
    first.live_settings.change({"layers.runtime.participation.write": "off"})
    assert first.kernel.mode("runtime", "write") == "off"  # at once where it was made
    _within(DEADLINE, lambda: second.kernel.mode("runtime", "write"), "off")
    # The behaviour, not only the value: B refuses a Runtime write now.
    with pytest.raises(ParticipationError) as refused:
        second.runtime.add("memory", "Deploys go through CI.")
    assert refused.value.decision["setting"] == "layers.runtime.participation.write"
    # Every switch the control plane takes, through B this time.
    second.live_settings.change(
        {"recall_mode": "off", "idle_review.enabled": False, "layers.documents.enabled": False}
    )
    _within(DEADLINE, lambda: first.kernel.config.recall_mode, "off")
    _within(DEADLINE, lambda: first.kernel.mode("documents", "recall"), "disabled")
    assert first.config.idle_review.enabled is False
    assert first.live_settings.revision == second.live_settings.revision == 2


def test_stored_settings_survive_reopening_and_a_reset_brings_start_up_values_back(
    pair: tuple[Mnemon, Mnemon, str], tmp_path: Path
) -> None:
    first, second, url = pair
    first.live_settings.change({"layers.memory_spaces.participation.recall": "manual"})
    first.close()
    # A host opened later, even with a start-up value of its own, applies the stored one.
    start_up = {"memory_spaces": {"participation": {"recall": "off"}}, "documents": {}}
    with _open(tmp_path / "c", url, layers=start_up) as later:
        assert later.kernel.mode("memory_spaces", "recall") == "manual"
        assert later.kernel.mode("runtime", "write") == "automatic"  # not stored: start-up
        with acting("automatic"):
            assert not later.kernel.admits("memory_spaces", "recall")
        later.live_settings.reset()
        assert later.kernel.mode("memory_spaces", "recall") == "off"  # its start-up value
        _within(DEADLINE, lambda: second.kernel.mode("memory_spaces", "recall"), "automatic")
        assert later.live_settings.stored().values == {}


def test_precedence_stored_over_environment_over_defaults(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMON_RECALL_MODE", "off")
    monkeypatch.setenv("MNEMON_LAYERS__RUNTIME__PARTICIPATION__PROJECTION", "manual")
    with _open(tmp_path / "a", database_url) as mem:
        assert mem.config.recall_mode == "off"  # environment over the default
        mem.live_settings.change({"recall_mode": "guided"})
    with _open(tmp_path / "b", database_url) as mem:
        assert mem.kernel.mode("runtime", "projection") == "manual"  # env, nothing stored
        assert mem.kernel.config.recall_mode == "guided"  # stored over the environment
        # A direct assignment holds in this process until that key is stored again.
        mem.config.recall_mode = "off"
        mem.kernel.refresh()
        assert mem.config.recall_mode == "off"
        mem.live_settings.change({"routing_guidance": False})  # another key: kept as set
        assert (mem.config.recall_mode, mem.config.routing_guidance) == ("off", False)
        mem.live_settings.change({"recall_mode": "guided"})  # the same value: still as set
        assert mem.config.recall_mode == "off"
        mem.live_settings.reset(["recall_mode"])
        assert mem.config.recall_mode == "off"  # back to the start-up value (the env)
        assert mem.live_settings.stored().values == {"routing_guidance": False}


def test_bad_changes_are_refused_and_store_nothing(pair: tuple[Mnemon, Mnemon, str]) -> None:
    first, second, _ = pair
    bad: list[dict[str, Any]] = [
        {},
        {"write_enabled": False},  # start-up only
        {"layers.runtime.participation.write": "sometimes"},
        {"idle_review.enabled": "maybe"},
        {"layers.nope.enabled": False},
    ]
    for values in bad:
        with pytest.raises(InvalidInputError):
            first.live_settings.change(values)
    with pytest.raises(InvalidInputError, match="not a live setting"):
        first.live_settings.reset(["timeout_ms"])
    assert first.live_settings.stored().revision == 0
    assert second.live_settings.stored().values == {}
    assert "write_enabled" not in LIVE_KEYS


def test_a_read_only_host_applies_but_cannot_change(database_url: str, tmp_path: Path) -> None:
    with _open(tmp_path / "a", database_url) as writer:
        writer.live_settings.change({"writeback_mode": "off"})
        with _open(tmp_path / "b", database_url, write_enabled=False) as reader:
            assert reader.kernel.config.writeback_mode == "off"
            with pytest.raises(ReadOnlyError):
                reader.live_settings.change({"writeback_mode": "guided"})


def test_reading_creates_nothing_and_a_broken_database_keeps_the_values(tmp_path: Path) -> None:
    root = tmp_path / "root"
    url = f"sqlite:///{tmp_path}/elsewhere/m.db"
    with _open(root, url) as mem:
        for _ in range(3):
            assert mem.kernel.mode("runtime", "recall") == "automatic"
            mem.live_settings.refresh(force=True)
        assert not (tmp_path / "elsewhere").exists()  # no folder, no file for a read
        mem.live_settings.change({"recall_mode": "off"})
        db_file = tmp_path / "elsewhere" / "m.db"
        with sa.create_engine(f"sqlite:///{db_file}").begin() as conn:
            conn.exec_driver_sql("DROP TABLE mnemon_settings")
            conn.exec_driver_sql("CREATE TABLE mnemon_settings (garbage TEXT)")
        # The stored row cannot be read any more: the host keeps its values and goes on.
        assert mem.live_settings.refresh(force=True) is False
        assert mem.config.recall_mode == "off"
        assert mem.kernel.admits("runtime", "write")


@pytest.mark.asyncio
async def test_the_refresh_never_blocks_the_event_loop(database_url: str, tmp_path: Path) -> None:
    from blockbuster import BlockingError, blockbuster_ctx

    with _open(tmp_path / "a", database_url) as first, _open(tmp_path / "b", database_url) as b:
        await asyncio.to_thread(b.kernel.mode, "runtime", "write")
        await asyncio.to_thread(first.live_settings.change, {"recall_mode": "off"})
        with blockbuster_ctx():
            with pytest.raises(BlockingError):  # detection is live on this loop
                time.sleep(0.01)
            started = time.monotonic()
            while b.kernel.config.recall_mode != "off":  # on the loop: read off the loop
                assert time.monotonic() - started < DEADLINE
                await asyncio.sleep(0.05)


_OTHER_PROCESS = """
import sys
from langgraph_mnemon import Mnemon
with Mnemon.open(sys.argv[1], database_url=sys.argv[2], chroma={"enabled": False}) as mem:
    mem.live_settings.change({"layers.documents.participation.write": sys.argv[3]})
"""


def test_another_process_on_the_same_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/shared.db"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    with _open(tmp_path / "here", url) as mem:
        assert mem.kernel.mode("documents", "write") == "automatic"
        for mode in ("manual", "off"):
            subprocess.run(
                [sys.executable, "-c", _OTHER_PROCESS, str(tmp_path / "there"), url, mode],
                check=True,
                env=env,
                timeout=120,
            )
            _within(DEADLINE, lambda: mem.kernel.mode("documents", "write"), mode)
