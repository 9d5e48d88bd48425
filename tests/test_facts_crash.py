"""Kill-mid-write: a real writer process is SIGKILLed at random moments, some during
``remember_many``; every committed receipt must survive and the file must stay whole.

The writer prints ``R <revision> <id> ...`` only after a receipt came back (so every printed id
was committed), and ``B`` right before each large batch. After each kill the parent checks:
the file parses (as JSON and through the provider), every printed id is in it, the revision is
the last printed one or one more (a commit renamed before its receipt was printed) with the
fact count matching, and a temp file left by the dead writer does not break a read.
"""

from __future__ import annotations

import json
import os
import random
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

from langgraph_mnemon.adapters.providers.facts import FactFileProvider
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    ProviderSearchRequest,
    RememberItem,
    SpaceBinding,
)

ROUNDS = 10
BATCH = 250

_WRITER = """
import sys
from langgraph_mnemon.adapters.providers.facts import FactFileProvider
from langgraph_mnemon.memory_layers.spaces import RememberItem, SpaceBinding
provider = FactFileProvider(sys.argv[1])
space = SpaceBinding(id="notes", name="Notes", config=provider.place("notes", {}))
tag, batch = sys.argv[2], int(sys.argv[3])
def main():
    i = 0
    while True:
        size = batch if i % 3 == 2 else 1
        if size > 1:
            print("B", flush=True)
        items = [RememberItem(content=f"round {tag} write {i} item {j}") for j in range(size)]
        receipts = provider.remember_many(space, items)
        print("R", receipts[0]["revision"], *[r["id"] for r in receipts], flush=True)
        i += 1
main()
"""


def _kill_at_random(proc: subprocess.Popen[str], rng: random.Random, in_batch: bool) -> str:
    """Read the writer's output until a random moment, SIGKILL it, return all output."""
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    out, deadline, started = "", None, time.monotonic()
    fd = proc.stdout.fileno()
    while True:
        if time.monotonic() - started > 60:
            proc.kill()
            raise AssertionError(f"the writer never got going: {out[-500:]!r}")
        if deadline is not None and time.monotonic() >= deadline:
            break
        if sel.select(timeout=0.005):
            chunk = os.read(fd, 65536).decode()
            if not chunk:
                raise AssertionError(f"the writer exited: {proc.wait()} {out[-500:]!r}")
            out += chunk
        if deadline is None and out:
            # Batch rounds: kill a few ms after a batch began; others: anywhere in 0-300 ms.
            if in_batch and out.count("B\n") >= 2:
                deadline = time.monotonic() + rng.uniform(0.0, 0.004)
            elif not in_batch:
                deadline = time.monotonic() + rng.uniform(0.0, 0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    rest = proc.stdout.read()
    sel.close()
    return out + rest


def _receipts(output: str) -> tuple[list[int], list[str], bool]:
    """Revisions and ids of the complete ``R`` lines; whether the kill hit an open batch."""
    lines = output.split("\n")
    complete = lines[:-1]  # the last piece has no newline: cut by the kill
    revisions, ids = [], []
    for line in complete:
        parts = line.split()
        if parts and parts[0] == "R":
            revisions.append(int(parts[1]))
            ids.extend(parts[2:])
    in_batch = bool(complete) and complete[-1] == "B"
    return revisions, ids, in_batch


def _check_file(path: Path, last_revision: int, printed: set[str]) -> dict[str, object]:
    data = json.loads(path.read_text())
    stored = [f["id"] for f in data["facts"]]
    assert len(stored) == len(set(stored))
    missing = printed - set(stored)
    assert not missing, f"{len(missing)} committed ids lost"
    extra = len(stored) - len(printed)
    if data["revision"] == last_revision:
        assert extra == 0
    else:
        assert data["revision"] == last_revision + 1, (data["revision"], last_revision)
        assert extra in (1, BATCH)  # the one commit whose receipt was never printed
    return data


def test_sigkill_during_writes_loses_no_committed_fact(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    path = tmp_path / "facts" / "notes.json"
    rng = random.Random(19)
    printed: set[str] = set()
    last_revision = 0
    batch_kills = 0
    for round_no in range(ROUNDS):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(tmp_path), str(round_no), str(BATCH)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        output = _kill_at_random(proc, rng, in_batch=round_no % 2 == 1)
        revisions, ids, in_batch = _receipts(output)
        batch_kills += in_batch
        printed.update(ids)
        last_revision = max([last_revision, *revisions])
        data = _check_file(path, last_revision, printed)
        last_revision = int(data["revision"])  # an unprinted commit still counts from now on
        printed = {f["id"] for f in data["facts"]}  # type: ignore[index, union-attr]
        # Whatever temp the dead writer left, a fresh reader sees the whole file.
        reader = FactFileProvider(tmp_path)
        space = SpaceBinding(id="notes", name="Notes", config=reader.place("notes", {}))
        rows = reader.browse(space, BrowseRequest(limit=500))
        assert len(rows) == min(500, len(printed))
    assert batch_kills >= 1, "no kill landed inside remember_many"
    assert last_revision >= ROUNDS

    writer = FactFileProvider(tmp_path)
    space = SpaceBinding(id="notes", name="Notes", config=writer.place("notes", {}))
    receipt = writer.remember(space, RememberItem(content="after the crashes"))
    assert receipt["revision"] == last_revision + 1
    assert not list(path.parent.glob(".notes.json.*.tmp"))  # the next writer cleaned up
    found = writer.search(space, ProviderSearchRequest(query="after crashes"))
    assert [r.id for r in found.results] == [receipt["id"]]
