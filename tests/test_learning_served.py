"""A served agent learns from its conversations (issue 35), per user, on a real ``langgraph dev``.

The shared three-user deployment (``tests/many_users_support.py``): Alice talks to the served
demo agent; after the thread goes idle its review runs, then its learning pass (no model: the
offline heuristic). Alice's learned memory is read back through the control plane; Bob sees no
pass and recalls nothing of it; Bob cannot undo Alice's pass; Alice can.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from many_users_support import ALICE, BOB, ManyUsers

pytestmark = pytest.mark.timeout(300)


def _say(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _finished_passes(many_users: ManyUsers, user: str, thread: str) -> list[dict[str, Any]]:
    listed = many_users.api(user, "GET", "/learn/passes", params={"thread_id": thread})
    assert listed.status_code == 200, listed.text
    return [p for p in listed.json()["passes"] if p["status"] != "running"]


def _wait_for_pass(many_users: ManyUsers, user: str, thread: str) -> dict[str, Any]:
    deadline = time.monotonic() + 90  # review delay 5 s, then the pass, on a busy machine
    while time.monotonic() < deadline:
        done = _finished_passes(many_users, user, thread)
        if done:
            return done[0]
        time.sleep(1)
    health = many_users.api(user, "GET", "/status").json().get("health")
    raise AssertionError(f"no learning pass of thread {thread} within 90 s; health: {health}")


def test_a_served_agent_learns_what_alice_said_and_only_alice_sees_it(
    many_users: ManyUsers,
) -> None:
    allergy = f"I'm allergic to sesame {uuid.uuid4().hex[:6]} seeds."
    alice = many_users.sdk(ALICE)
    thread = alice.threads.create()["thread_id"]
    # Two turns, an explicit save and 150+ characters of the user's words: score 3 + 2 = 5,
    # so the thread is reviewed once idle (as in test_server's idle-review test).
    for text in (
        f"Please remember this. By the way, {allergy}",
        (
            "I prefer short status updates written as bullet points; please keep them under ten "
            "lines and send them before noon on weekdays"
        ),
    ):
        alice.runs.wait(thread, "mnemon_agent", input=_say(text))

    learned = _wait_for_pass(many_users, ALICE, thread)
    assert learned["status"] == "committed", learned
    contents = [r["content"] for r in learned["receipts"] if r["status"] == "committed"]
    assert allergy in contents, learned
    recall = many_users.api(ALICE, "POST", "/recall", json={"query": allergy})
    assert allergy in [r["content"] for r in recall.json()["results"]]

    # Bob: no pass, no memory, no undo of Alice's pass (404, as for an unknown pass).
    assert _finished_passes(many_users, BOB, thread) == []
    recall = many_users.api(BOB, "POST", "/recall", json={"query": allergy})
    assert allergy not in [r["content"] for r in recall.json().get("results", [])]
    undo = many_users.api(BOB, "POST", f"/learn/passes/{learned['pass_id']}/undo", json={})
    assert undo.status_code == 404, undo.text

    # Alice undoes her pass: the memory is gone from her recall.
    undo = many_users.api(ALICE, "POST", f"/learn/passes/{learned['pass_id']}/undo", json={})
    assert undo.status_code == 200, undo.text
    assert undo.json()["status"] == "undone"
    recall = many_users.api(ALICE, "POST", "/recall", json={"query": allergy})
    assert allergy not in [r["content"] for r in recall.json()["results"]]
