"""An authentication middleware like LangGraph server's custom auth, for in-process apps.

``X-Test-User`` names the request's user; the user ``admin`` has ``mnemon:admin``;
``X-Test-Permissions`` (comma-separated) adds permissions such as ``mnemon:project:billing``.
"""

from __future__ import annotations

from typing import Any

from starlette.authentication import AuthCredentials, AuthenticationBackend, SimpleUser
from starlette.middleware.authentication import AuthenticationMiddleware

from langgraph_mnemon import Mnemon
from langgraph_mnemon.server.http import create_app


class HeaderAuth(AuthenticationBackend):
    """Authenticates like LangGraph server's custom auth, from test headers."""

    async def authenticate(self, conn: Any) -> tuple[AuthCredentials, SimpleUser] | None:
        user = conn.headers.get("x-test-user")
        if not user:
            return None
        extra = [p for p in conn.headers.get("x-test-permissions", "").split(",") if p]
        permissions = (["mnemon:admin"] if user == "admin" else []) + extra
        return AuthCredentials(permissions), SimpleUser(user)


def authed_app(mem: Mnemon) -> Any:
    """The control plane of ``mem`` behind :class:`HeaderAuth`."""
    return AuthenticationMiddleware(create_app(mem), backend=HeaderAuth())
