"""One served deployment with three users, for the many-users regression tests (issue 29).

``langgraph dev`` (through ``mnemon serve``) with the example custom auth (``examples/auth.py``)
and three bearer tokens:

* ``alice``: granted the projects ``team`` and ``alice-billing``;
* ``bob``: granted ``team``;
* ``admin``: ``mnemon:admin`` and every project (``mnemon:project:*``).

The session fixture ``many_users`` (``tests/conftest.py``) serves it once per xdist worker; every
test using it is kept on one worker. Tests that need a server-wide setting add it to
:data:`SERVER_ENV` (one key each; the server is shared).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_sync_client
from server_support import Served, http, serve

REPO = Path(__file__).parents[1]
EXAMPLE_AUTH = REPO / "examples" / "auth.py"
API = "/mnemon/api"
ALICE, BOB, ADMIN = "alice", "bob", "admin"
USERS: dict[str, dict[str, Any]] = {
    ALICE: {"permissions": ["mnemon:project:team", "mnemon:project:alice-billing"]},
    BOB: {"permissions": ["mnemon:project:team"]},
    ADMIN: {"permissions": ["mnemon:admin", "mnemon:project:*"]},
}
SERVER_ENV: dict[str, str] = {
    "MNEMON_IDLE_REVIEW__DELAY_MS": "5000",
    "MNEMON_IDLE_REVIEW__MIN_INTERVAL_MS": "5000",
    # test_many_users_providers: the one internal address an admin's http space may reach.
    "MNEMON_HTTP__ALLOWED_HOSTS": "127.0.0.2",
}
"""Server-wide settings of the shared deployment (each test adds only keys of its own)."""


ODD_IDENTITIES = ("alice\u3000", "alice\xa0", "\u2003alice", "local")
"""Logins the auth layer issues that must never become Alice or the operator (issue 29, 5)."""


def token(user: str) -> str:
    """The bearer token of ``user`` (one of :data:`USERS` or :data:`ODD_IDENTITIES`)."""
    return "tok-" + hashlib.sha256(user.encode()).hexdigest()[:16]


def tokens_env() -> str:
    """``MNEMON_EXAMPLE_TOKENS`` for ``examples/auth.py``: token -> identity and permissions."""
    users = {**USERS, **{odd: {"permissions": []} for odd in ODD_IDENTITIES}}
    return json.dumps({token(user): {"identity": user, **grants} for user, grants in users.items()})


@dataclass
class ManyUsers:
    """The served deployment: ``sdk(user)`` for LangGraph's API, ``api(user, ...)`` for ours."""

    served: Served

    @property
    def url(self) -> str:
        return self.served.url

    @property
    def root(self) -> Path:
        return self.served.root

    def headers(self, user: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token(user)}"} if user else {}

    def sdk(self, user: str) -> Any:
        """A ``langgraph_sdk`` sync client sending ``user``'s token."""
        return get_sync_client(url=self.url, api_key=None, headers=self.headers(user))

    def api(self, user: str | None, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """A control-plane request (``path`` under ``/mnemon/api``) as ``user`` (None: no token)."""
        headers = {**self.headers(user), **kwargs.pop("headers", {})}
        return http.request(method, f"{self.url}{API}{path}", headers=headers, **kwargs)


@contextmanager
def serve_many_users(root: Path) -> Iterator[ManyUsers]:
    """Serve the three-user deployment on ``root`` until the block ends."""
    env = {
        "MNEMON_SERVE_AUTH": f"{EXAMPLE_AUTH}:auth",
        "MNEMON_EXAMPLE_TOKENS": tokens_env(),
        **SERVER_ENV,
    }
    with serve(root, env=env) as served:
        yield ManyUsers(served)
