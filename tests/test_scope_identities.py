"""Identities are exact (issue 29, item 3): ids are compared as given, never trimmed.

An id with leading or trailing whitespace (any Unicode space), a control character (C0, DEL,
C1), NUL or a lone surrogate, or over 200 characters, is refused where the scope is resolved. The
operator's local scope cannot be claimed by an authenticated identity, neither by a run nor by a
control-plane request.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from langgraph_mnemon import Mnemon
from langgraph_mnemon.config import MnemonConfig, ScopesConfig
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import InvalidInputError, ScopeMismatchError
from langgraph_mnemon.memory_layers.scopes import resolve_scope, scope_folder, scope_of
from langgraph_mnemon.server._callers import resolve_caller
from langgraph_mnemon.testing import ScriptedChatModel

LOOKALIKES = ["alice\u3000", "alice\xa0", "\u2003alice", " alice", "alice ", "alice\n", "\talice"]
CONTROLS = ["al\x00ice", "al\x07ice", "al\x7fice", "al\x85ice", "al\ud800ice", "x" * 201, ""]


def _authed(identity: str) -> dict[str, Any]:
    return {"langgraph_auth_user_id": identity, "langgraph_auth_user": {"identity": identity}}


@pytest.mark.parametrize("bad", LOOKALIKES + CONTROLS)
def test_item3_an_id_that_is_not_exact_is_refused_as_user_and_as_project(bad: str) -> None:
    with pytest.raises(InvalidInputError):
        scope_of(bad)
    with pytest.raises(InvalidInputError):
        scope_of("alice", bad)
    if bad:  # an empty user_id means "not given" in a run's config
        with pytest.raises(InvalidInputError):
            resolve_scope({"user_id": bad}, ScopesConfig())


@pytest.mark.parametrize("lookalike", LOOKALIKES)
def test_item3_a_lookalike_login_never_maps_to_alices_scope(lookalike: str) -> None:
    with pytest.raises(InvalidInputError, match=r"whitespace|control"):
        resolve_scope(_authed(lookalike), ScopesConfig())
    assert resolve_scope(_authed("alice"), ScopesConfig()) == Scope(user="alice")


def test_item3_a_whitespace_login_is_refused_not_made_local() -> None:
    with pytest.raises(InvalidInputError):
        resolve_scope(_authed("   "), ScopesConfig())


def test_item3_the_local_scope_cannot_be_claimed_by_a_login() -> None:
    with pytest.raises(ScopeMismatchError, match="operator's local scope"):
        resolve_scope(_authed("local"), ScopesConfig())
    # Without auth, local use is unchanged.
    assert resolve_scope({"user_id": "local"}, ScopesConfig()).is_local


def _request(identity: str) -> dict[str, Any]:
    user = SimpleNamespace(is_authenticated=True, identity=identity, display_name=identity)
    return {"type": "http", "headers": [], "client": ("127.0.0.1", 5000), "user": user}


@pytest.mark.parametrize("identity", ["local", *LOOKALIKES, "al\x00ice"])
def test_item3_the_control_plane_refuses_such_a_login_with_403(identity: str) -> None:
    with pytest.raises(ScopeMismatchError):  # an AuthorityError: HTTP 403
        resolve_caller(_request(identity), MnemonConfig())
    assert resolve_caller(_request("alice"), MnemonConfig()).scope.user == "alice"


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=60), st.text(min_size=1, max_size=60))
def test_item3_accepted_ids_map_to_exactly_one_scope_and_never_share_one(a: str, b: str) -> None:
    scopes = []
    for value in (a, b):
        try:
            scopes.append(scope_of(value, value))
        except InvalidInputError:
            return
    first, second = scopes
    assert (first.user, first.project) == (a, a)  # kept exactly as given
    assert (second.user, second.project) == (b, b)
    if a != b:
        assert first.user_key != second.user_key
        assert first.project_key() != second.project_key()
        assert scope_folder(a) != scope_folder(b)
    else:
        assert first == second


@pytest.mark.parametrize("identity", ["alice\u3000", "local"])
def test_item3_a_run_under_such_a_login_finishes_without_memory_and_health_says_why(
    tmp_path: Path, identity: str
) -> None:
    with Mnemon.open(tmp_path / "root") as mem:
        mem.scoped(user="alice").runtime.add("user", "Alice's locker code is 4711.")
        mem.runtime.add("user", "The operator's note: the vault opens at nine.")
        model = ScriptedChatModel(responses=["Answer without memory."])
        agent = create_agent(
            model, tools=mem.tools(), middleware=[mem.middleware()], checkpointer=mem.checkpointer()
        )
        config = {"configurable": {"thread_id": "t1", **_authed(identity)}}
        out = agent.invoke({"messages": [HumanMessage("What is my locker code?")]}, config)
        assert out["messages"][-1].content == "Answer without memory."
        assert "4711" not in str(model.calls)
        assert "vault" not in str(model.calls)
        report = mem.health.report()
        assert report.degraded
        assert re.search(r"whitespace|operator's local scope", str(report.problems))
