"""Two real replicas share live settings and provider secrets (issue 30, items 3 and 4).

Two ``mnemon serve`` processes (``langgraph dev``) with their own roots on one PostgreSQL
schema (``MNEMON_DATABASE_URL``) and one ``MNEMON_SECRET_KEY``: a settings flip through one
replica's control plane is in force on the other within 5 s (what it reports and what it
does), and a keyed ``http`` space (the reference memory service on a free loopback port, listed
in ``MNEMON_HTTP__ALLOWED_HOSTS``) created through one is searched through the other, which
returns its rows. The stored key row is encrypted; no API returns the key.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from langgraph_sdk import get_sync_client
from server_support import Served, http, serve
from support.http_memory_service import serve as serve_memory_service

API = "/mnemon/api"
SNAPSHOT = "MNEMON RUNTIME MEMORY SNAPSHOT"  # the Runtime Memory part of the Wake
DEADLINE = 5.0
SECRET_KEY = "replica-shared-secret-key-58c1e0"
TOKEN = "svc-bearer-token-replicas-2b7d"
WRITE_OFF = {"layers": {"runtime": {"participation": {"write": "off"}}}}
WRITE_ON = {"layers": {"runtime": {"participation": {"write": "automatic"}}}}

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The reference ``mnemon-memory/1`` service on loopback, requiring ``TOKEN``."""
    with serve_memory_service(tmp_path_factory.mktemp("svc") / "memory.db", token=TOKEN) as url:
        yield url


@pytest.fixture(scope="module")
def replicas(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: str
) -> Iterator[tuple[Served, Served, str]]:
    """Two servers on one fresh PostgreSQL schema (and the schema's URL)."""
    from langgraph_mnemon.testing.postgres import fresh_schema

    tmp = tmp_path_factory.mktemp("replicas")
    with fresh_schema(postgres_server) as url:
        env = {
            "MNEMON_DATABASE_URL": url,
            "MNEMON_SECRET_KEY": SECRET_KEY,
            "MNEMON_HTTP__ALLOWED_HOSTS": "127.0.0.1",  # the reference service's address
            "MNEMON_HTTP__RETRIES": "0",
        }
        with serve(tmp / "a", env=env) as first, serve(tmp / "b", env=env) as second:
            yield first, second, url


def _settings(served: Served) -> dict[str, Any]:
    answer = http.get(f"{served.url}{API}/settings")
    assert answer.status_code == 200, answer.text
    return answer.json()


def _patch(served: Served, body: dict[str, Any]) -> dict[str, Any]:
    answer = http.patch(f"{served.url}{API}/settings", json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _add(served: Served, content: str) -> httpx.Response:
    body = {"action": "add", "target": "memory", "content": content}
    return http.post(f"{served.url}{API}/runtime", json=body)


def _within(probe: Callable[[], Any], want: Any) -> float:
    """Seconds until ``probe()`` returns ``want`` (fails after :data:`DEADLINE`)."""
    started = time.monotonic()
    while True:
        got = probe()
        if got == want:
            return time.monotonic() - started
        if time.monotonic() - started > DEADLINE:
            pytest.fail(f"still {got!r} {DEADLINE} s after the change (wanted {want!r})")
        time.sleep(0.1)


def _turn_messages(served: Served) -> str:
    """One turn of the served demo agent (through ``langgraph_sdk``), its messages as text."""
    client = get_sync_client(url=served.url, api_key=None)
    thread = client.threads.create()["thread_id"]
    say = {"messages": [{"role": "user", "content": "hello"}]}
    return str(client.runs.wait(thread, "mnemon_agent", input=say)["messages"])


def _runtime_write(settings: dict[str, Any]) -> str:
    return settings["live"]["layers"]["runtime"]["participation"]["write"]


def test_a_settings_flip_through_one_replica_is_in_force_on_the_other_within_5_s(
    replicas: tuple[Served, Served, str],
) -> None:
    first, second, _ = replicas
    assert _runtime_write(_settings(second)) == "automatic"
    assert _add(second, f"Before the flip {uuid.uuid4().hex[:6]}.").status_code == 200
    changed = _patch(first, WRITE_OFF)
    assert _runtime_write(changed) == "off"
    _within(lambda: _runtime_write(_settings(second)), "off")  # what it reports
    refused = _add(second, "Refused by the kernel.")  # and what it does
    assert refused.status_code == 403, refused.text
    assert refused.json()["decision"]["setting"] == "layers.runtime.participation.write"
    # Back through the other replica; the first one follows, in behaviour too.
    _patch(second, WRITE_ON)
    _within(lambda: _add(first, f"After the flip {uuid.uuid4().hex[:6]}.").status_code, 200)
    # The other live switches travel the same way.
    _patch(second, {"recall_mode": "off", "idle_review_enabled": False})
    _within(lambda: _settings(first)["live"]["recall_mode"], "off")
    assert _settings(first)["live"]["idle_review_enabled"] is False
    _patch(first, {"recall_mode": "guided", "idle_review_enabled": True})
    _within(lambda: _settings(second)["live"]["recall_mode"], "guided")


def test_a_projection_switch_reaches_the_other_replicas_agent_runs(
    replicas: tuple[Served, Served, str],
) -> None:
    first, second, _ = replicas
    assert _add(first, f"Projected fact {uuid.uuid4().hex[:6]}.").status_code == 200
    assert SNAPSHOT in _turn_messages(second)
    _patch(first, {"layers": {"runtime": {"participation": {"projection": "off"}}}})
    try:
        _turns_until(second, lambda text: SNAPSHOT not in text)
    finally:
        _patch(first, {"layers": {"runtime": {"participation": {"projection": "automatic"}}}})
    _turns_until(second, lambda text: SNAPSHOT in text)


def _turns_until(served: Served, ok: Callable[[str], bool]) -> None:
    """Run turns on ``served`` until one passes ``ok``; one that started within
    :data:`DEADLINE` of the change must."""
    changed = time.monotonic()
    while True:
        started = time.monotonic()
        if ok(_turn_messages(served)):
            return
        if started - changed > DEADLINE:
            pytest.fail(f"a turn started {started - changed:.1f} s after the change missed it")
        time.sleep(0.2)


def test_a_keyed_http_space_created_on_one_replica_is_searched_on_the_other(
    replicas: tuple[Served, Served, str], service: str
) -> None:
    first, second, url = replicas
    fact = f"On-call rotates every Monday ({uuid.uuid4().hex[:6]})."
    body = {
        "name": "Team memory",
        "provider_id": "http",
        "config": {"endpoint": service, "namespace": f"team-{uuid.uuid4().hex[:8]}"},
        "secrets": {"api_key": TOKEN},
    }
    created = http.post(f"{first.url}{API}/spaces", json=body)
    assert created.status_code == 200, created.text
    space_id = created.json()["space"]["id"]
    saved = http.post(f"{first.url}{API}/spaces/{space_id}/memories", json={"content": fact})
    assert saved.status_code == 200, saved.text

    listed = http.get(f"{second.url}{API}/spaces")
    assert listed.status_code == 200, listed.text
    [space] = [s for s in listed.json()["spaces"] if s["id"] == space_id]
    assert space["secrets_configured"] == ["api_key"]  # configured: never the value
    assert TOKEN not in listed.text
    settings = http.get(f"{second.url}{API}/settings")
    assert TOKEN not in settings.text
    assert SECRET_KEY not in settings.text
    assert settings.json()["secret_key"] == "configured"

    found = http.post(
        f"{second.url}{API}/recall", json={"query": "on-call monday", "space_ids": [space_id]}
    )
    assert found.status_code == 200, found.text
    assert [r["content"] for r in found.json()["results"]] == [fact]
    assert TOKEN not in found.text

    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            row = conn.execute(
                sa.text("SELECT scheme, payload FROM mnemon_space_secrets WHERE space_id = :space"),
                {"space": space_id},
            ).one()
    finally:
        engine.dispose()
    assert row.scheme == "aes-256-gcm"
    assert TOKEN not in row.payload
    for served in (first, second):
        assert not (served.root / "state" / "space-secrets.json").exists()
