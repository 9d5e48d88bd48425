"""An example ``auth.path`` module for a multi-user ``mnemon serve`` / ``langgraph dev``.

Two bearer tokens, two users. Every request (LangGraph's own API, the store API and, with
``http.enable_custom_route_auth``, the mnemon control plane) carries
``Authorization: Bearer <token>``; LangGraph server makes the token's user the request's
identity, and mnemon runs it in that user's scope (``langgraph_auth_user``). Threads are
private to the user who created them. Serve with it:

    mnemon serve --auth examples/auth.py:auth   # or MNEMON_SERVE_AUTH=examples/auth.py:auth

(or name it in your own ``langgraph.json``: ``"auth": {"path": "./examples/auth.py:auth"}``
and ``"http": {"app": "langgraph_mnemon.server.http:app", "enable_custom_route_auth": true}``).

Permissions are the grants. ``mnemon:admin`` may change host-wide settings and providers;
``mnemon:project:<id>`` lets the user into project ``<id>`` (``mnemon:project:*``: every
project). Without a project grant a user has their own memory only: MEMORY.md and Documents of
their own, and a run naming another project gets no memory.

The tokens here are for a demo on one machine only. A real deployment checks a signed token
(JWT, OAuth introspection) and reads no secret from source. ``MNEMON_EXAMPLE_TOKENS``
(JSON ``{"token": "user id"}`` or ``{"token": {"identity": ..., "permissions": [...]}}``)
replaces the two demo tokens. A user in ``ADMINS`` gets the ``mnemon:admin`` permission.
"""

from __future__ import annotations

import json
import os
from typing import Any

from langgraph_sdk import Auth

DEMO_TOKENS = {"alice-demo-token": "alice", "bob-demo-token": "bob"}
ADMINS: frozenset[str] = frozenset()
# The web page and its files carry no data: a browser may load them before the token is set.
_PAGE_PATHS = ("/mnemon/", "/mnemon/static/")

auth = Auth()


def _tokens() -> dict[str, Any]:
    configured = os.environ.get("MNEMON_EXAMPLE_TOKENS")
    return json.loads(configured) if configured else DEMO_TOKENS


def _user(entry: Any) -> Auth.types.MinimalUserDict:
    if isinstance(entry, dict):  # {"identity": ..., "permissions": [...]}
        return {"identity": entry["identity"], "permissions": list(entry.get("permissions", []))}
    return {"identity": entry, "permissions": ["mnemon:admin"] if entry in ADMINS else []}


@auth.authenticate
async def authenticate(
    authorization: str | None, path: str, method: str
) -> Auth.types.MinimalUserDict:
    """The user of the request's bearer token; 401 without a known one."""
    scheme, _, token = (authorization or "").partition(" ")
    entry = _tokens().get(token.strip()) if scheme.lower() == "bearer" else None
    if entry is None:
        if method == "GET" and (path == "/mnemon/" or path.startswith(_PAGE_PATHS[1])):
            return {"identity": "page-visitor", "permissions": []}
        raise Auth.exceptions.HTTPException(
            status_code=401, detail="send 'Authorization: Bearer <token>' with a known token"
        )
    return _user(entry)


@auth.on.threads
async def own_threads(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> dict[str, str]:
    """Threads (and their runs) are private: stamped with their owner, filtered by it."""
    metadata = value.setdefault("metadata", {})
    if metadata is None:
        metadata = value["metadata"] = {}
    metadata["owner"] = ctx.user.identity  # in place: the server stores this very dict
    return {"owner": ctx.user.identity}
