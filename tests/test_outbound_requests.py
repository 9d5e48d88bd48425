"""Issue 29, item 2: outbound requests are an admin's, and never to internal addresses.

In process: the control plane (``create_app(mem)`` behind an authentication middleware that
puts an identity and its permissions on the request, as LangGraph server's custom auth does)
driven with httpx's ASGI transport. The destinations are real loopback listeners that count
the connections they accept (``tests/outbound_support.py``): every refused spelling must leave
the count at zero, and an allowed host must raise it, so each test can fail.

Also the connection path itself (the provider's guarded transport): it resolves once, checks
every address and connects to a checked one, so a name that resolved to a public address when
the space was set up and to loopback when it connects (DNS rebinding) is refused too. And the
answers: a closed port, a broken answer, a timeout and a body that is not JSON read the same,
and nothing a service sent is repeated.
"""

from __future__ import annotations

import re
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from auth_support import authed_app
from outbound_support import (
    INTERNAL_TEXT,
    Listener,
    closed_port,
    listening,
    loopback_spellings,
)

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.providers import HttpProvider
from langgraph_mnemon.adapters.providers._http_guard import AddressPolicy, GuardedTransport
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import AuthorityError, ProviderError
from langgraph_mnemon.memory_layers.spaces import ProviderSearchRequest, SpaceBinding

API = "/mnemon/api"


def _open(root: Path, **http: Any) -> Mnemon:
    return Mnemon.open(root, chroma={"enabled": False}, http={"retries": 0, **http})


def _client(mem: Mnemon, user: str) -> httpx.AsyncClient:
    app = authed_app(mem)
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, client=("127.0.0.1", 5000)),
        base_url="http://127.0.0.1:8765",
        headers={"Content-Type": "application/json", "X-Test-User": user},
    )


def _refused(response: httpx.Response, code: str) -> dict[str, Any]:
    assert response.status_code == 403, response.text
    body = response.json()
    assert body["error"] == code, body
    assert body["decision"]["layer"] == "memory_spaces"
    assert body["decision"]["admitted"] is False
    return body


@pytest.fixture
def listener() -> Iterator[Listener]:
    with listening(mode="status") as counting:
        yield counting


@pytest_asyncio.fixture
async def guarded(tmp_path: Path) -> AsyncIterator[Mnemon]:
    mem = _open(tmp_path / "m")  # http.allowed_hosts left empty: the default
    try:
        yield mem
    finally:
        mem.close()


# --- who may reach out ---------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_user_who_is_not_an_admin_cannot_test_add_or_point_an_endpoint(
    guarded: Mnemon, listener: Listener
) -> None:
    config = {"endpoint": listener.url()}
    async with _client(guarded, "bob") as bob:
        body = _refused(
            await bob.post(f"{API}/providers/http/test", json={"config": config}), "admin-required"
        )
        assert body["decision"]["mode"] == "admin-only"
        assert "mnemon:admin" in body["message"]
        _refused(
            await bob.post(f"{API}/spaces", json={"name": "Probe", "provider_id": "http",
                                                  "config": config}),
            "admin-required",
        )  # fmt: skip
        assert (await bob.get(f"{API}/spaces")).json()["spaces"] == []
    assert listener.accepted == 0


@pytest.mark.asyncio
async def test_every_spelling_of_loopback_is_refused_before_any_connection(
    guarded: Mnemon, listener: Listener
) -> None:
    spellings = loopback_spellings(listener)
    async with _client(guarded, "admin") as admin:
        for name, url in spellings.items():
            test = await admin.post(
                f"{API}/providers/http/test", json={"config": {"endpoint": url}}
            )
            body = _refused(test, "internal-address")
            assert body["decision"]["setting"] == "http.allowed_hosts", name
            assert body["decision"]["env"] == "MNEMON_HTTP__ALLOWED_HOSTS"
            create = {"name": f"Probe {name}", "provider_id": "http", "config": {"endpoint": url}}
            _refused(await admin.post(f"{API}/spaces", json=create), "internal-address")
        assert (await admin.get(f"{API}/spaces")).json()["spaces"] == []
    assert listener.accepted == 0, f"{listener.accepted} connection(s) to a refused address"


@pytest.mark.asyncio
async def test_the_local_operator_is_refused_loopback_too_unless_allowed(
    guarded: Mnemon, listener: Listener
) -> None:
    with pytest.raises(AuthorityError) as refused:
        await guarded.spaces.atest_connection("http", config={"endpoint": listener.url()})
    assert refused.value.code == "internal-address"
    assert listener.accepted == 0


@pytest.mark.asyncio
async def test_an_allowed_host_is_reached_by_an_admin(tmp_path: Path, listener: Listener) -> None:
    mem = _open(tmp_path / "m", allowed_hosts=["127.0.0.1"])
    try:
        async with _client(mem, "admin") as admin:
            test = await admin.post(
                f"{API}/providers/http/test", json={"config": {"endpoint": listener.url()}}
            )
            assert test.status_code == 200, test.text
            assert test.json()["ok"] is True
            assert listener.accepted == 1
            # The address is allowed, whichever name resolves to it.
            by_name = f"http://localhost:{listener.ports['127.0.0.1']}"
            create = {
                "name": "Team service",
                "provider_id": "http",
                "config": {"endpoint": by_name},
            }
            made = await admin.post(f"{API}/spaces", json=create)
            assert made.status_code == 200, made.text
            sid = made.json()["space"]["id"]
            tested = await admin.post(f"{API}/spaces/{sid}/test", json={})
            assert tested.json()["ok"] is True
            assert listener.accepted == 2
            # [::1] is another address: not on the list.
            v6 = await admin.post(
                f"{API}/providers/http/test", json={"config": {"endpoint": listener.url("::1")}}
            )
            _refused(v6, "internal-address")
        async with _client(mem, "bob") as bob:  # still an admin's only
            _refused(
                await bob.post(f"{API}/providers/http/test",
                               json={"config": {"endpoint": listener.url()}}),
                "admin-required",
            )  # fmt: skip
        assert listener.accepted == 2
    finally:
        mem.close()


@pytest.mark.asyncio
async def test_an_allowed_name_admits_that_name_only(tmp_path: Path, listener: Listener) -> None:
    mem = _open(tmp_path / "m", allowed_hosts=["localhost"])
    try:
        port = listener.ports["127.0.0.1"]
        ok = await mem.spaces.atest_connection(
            "http", config={"endpoint": f"http://localhost:{port}"}
        )
        assert ok.ok is True
        assert listener.accepted == 1
        with pytest.raises(AuthorityError):
            await mem.spaces.atest_connection("http", config={"endpoint": listener.url()})
        assert listener.accepted == 1
    finally:
        mem.close()


@pytest.mark.asyncio
async def test_configuring_a_shared_endpoint_is_an_admins(
    tmp_path: Path, listener: Listener
) -> None:
    mem = _open(tmp_path / "m", allowed_hosts=["127.0.0.1"])
    try:
        shared = mem.spaces.for_scope(Scope(user="admin")).as_admin()
        space = (
            await shared.acreate_space(
                "Service", provider_id="http", config={"endpoint": listener.url()}
            )
        ).space
        assert space is not None
        user = mem.spaces.for_scope(Scope(user="admin"))  # the same owner, not an admin
        with pytest.raises(AuthorityError) as refused:
            await user.aupdate_space(space.id, config={"endpoint": listener.url("::1")})
        assert refused.value.code == "admin-required"
        with pytest.raises(AuthorityError):
            await user.aupdate_space(space.id, secrets={"api_key": "k-123456"})
        renamed = await user.aupdate_space(space.id, name="Renamed")  # no connection involved
        assert renamed.space is not None
        assert renamed.space.name == "Renamed"
        with pytest.raises(AuthorityError):
            await user.atest_space(space.id)
        assert listener.accepted == 0
    finally:
        mem.close()


def test_every_spelling_reaches_the_listener_without_the_guard(listener: Listener) -> None:
    """The control: a provider built by hand without ``allowed_hosts`` has no address check,
    and each spelling does reach the listener, so the zero counts above mean something."""
    provider = HttpProvider(retries=0)
    for name, url in loopback_spellings(listener).items():
        before = listener.accepted
        space = SpaceBinding(id="c", name="C", config={"endpoint": url})
        assert provider.status(space).healthy is True, name
        assert listener.accepted == before + 1, name


# --- the connection path checks again -----------------------------------------------------------


def test_the_transport_itself_refuses_loopback_with_no_connection(listener: Listener) -> None:
    with httpx.Client(transport=GuardedTransport(AddressPolicy([]))) as client:
        for name, url in loopback_spellings(listener).items():
            with pytest.raises(ProviderError) as refused:
                client.get(url + "/status")
            assert refused.value.code == "internal-address", name
    assert listener.accepted == 0
    allowed = GuardedTransport(AddressPolicy(["127.0.0.1"]))
    with httpx.Client(transport=allowed) as client:
        answer = client.get(listener.url() + "/status")
    assert answer.status_code == 200
    assert listener.accepted == 1


def test_a_space_stored_before_the_check_is_refused_when_it_connects(
    listener: Listener,
) -> None:
    # A binding that no set-up check has seen (e.g. stored before this release).
    provider = HttpProvider(retries=0, allowed_hosts=[])
    space = SpaceBinding(id="old", name="Old", config={"endpoint": listener.url()})
    with pytest.raises(ProviderError) as refused:
        provider.search(space, ProviderSearchRequest(query="anything"))
    assert refused.value.code == "internal-address"
    status = provider.status(space)
    assert status.healthy is False
    assert "internal address" in str(status.error)
    provider.close()
    assert listener.accepted == 0


def test_a_name_that_rebinds_to_loopback_is_refused_when_it_connects(
    listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding: public when the space is set up, loopback when it connects."""
    answers = iter(["93.184.215.14", "127.0.0.1", "127.0.0.1"])
    real = socket.getaddrinfo

    def rebinding(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.example":
            return real(host, port, *args, **kwargs)
        address = next(answers)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    provider = HttpProvider(retries=0, allowed_hosts=[])
    endpoint = f"http://rebind.example:{listener.ports['127.0.0.1']}"
    provider.check_destination({"endpoint": endpoint})  # public now: admitted
    space = SpaceBinding(id="r", name="R", config={"endpoint": endpoint})
    with pytest.raises(ProviderError) as refused:
        provider.search(space, ProviderSearchRequest(query="x"))
    assert refused.value.code == "internal-address"
    with pytest.raises(AuthorityError):  # and set-up refuses it now as well
        provider.check_destination({"endpoint": endpoint})
    provider.close()
    assert listener.accepted == 0


# --- answers that tell nothing about the network ------------------------------------------------


def _shape(text: str | None) -> str:
    return re.sub(r":\d+", ":PORT", text or "")


@pytest.mark.asyncio
async def test_failures_read_the_same_and_repeat_nothing_the_service_sent(tmp_path: Path) -> None:
    mem = Mnemon.open(
        tmp_path / "m",
        chroma={"enabled": False},
        http={"retries": 2, "timeout_s": 1.0, "allowed_hosts": ["127.0.0.1"]},
    )
    host = ("127.0.0.1",)
    try:
        errors = {}
        with (
            listening(host, "garbage") as garbage,
            listening(host, "not-json") as html,
            listening(host, "silent") as silent,
            listening(host, "error") as failing,
        ):
            targets = {
                "closed": f"http://127.0.0.1:{closed_port()}",
                "garbage": garbage.url(),
                "not-json": html.url(),
                "silent": silent.url(),
            }
            for what, url in targets.items():
                result = await mem.spaces.atest_connection("http", config={"endpoint": url})
                assert result.ok is False, what
                errors[what] = _shape(result.error)
            failed = await mem.spaces.atest_connection("http", config={"endpoint": failing.url()})
        assert len(set(errors.values())) == 1, errors
        assert "could not reach the memory service" in errors["closed"]
        for text in errors.values():
            assert "attempt" not in text  # no count of retries
            assert "Error" not in text  # no exception name
        assert failed.ok is False
        assert INTERNAL_TEXT not in str(failed.error)
        assert "postgres" not in str(failed.error)
        assert "500" not in _shape(failed.error)
        assert "db-down" not in str(failed.error)
    finally:
        mem.close()


@pytest.mark.asyncio
async def test_a_non_admin_test_answers_alike_for_open_and_closed_ports(
    guarded: Mnemon, listener: Listener
) -> None:
    open_port = listener.url()
    closed = f"http://127.0.0.1:{closed_port()}"
    async with _client(guarded, "bob") as bob:
        answers = [
            await bob.post(f"{API}/providers/http/test", json={"config": {"endpoint": url}})
            for url in (open_port, closed)
        ]
    bodies = [(a.status_code, _shape(a.text)) for a in answers]
    assert bodies[0] == bodies[1]
    assert listener.accepted == 0
