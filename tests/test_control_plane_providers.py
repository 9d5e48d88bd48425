"""The control plane's provider endpoints (issue 19, part 5) over a real server.

``create_app(host)`` runs in a real uvicorn on a free loopback port and is driven with httpx
over the socket: list providers, test a configuration, add a space with settings and secrets,
reconfigure it (secrets write-only), test it, Disconnect a third-party space (its data stays in
the provider) and Remove a native one (after confirmation, body or query). The third-party
service is the reference ``mnemon-memory/1`` server (tests/support) on its own free port.
Authority (who may test a configuration) is checked through httpx's ASGI transport with a
chosen peer address, as the other control-plane tests do. No secret value may appear in any
response or log line.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_support import uvicorn_in_thread
from support.http_memory_service import serve

from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.providers import HttpProvider, MnemosProvider
from langgraph_mnemon.memory_layers.spaces import BrowseRequest, SpaceBinding
from langgraph_mnemon.server.http import create_app

API = "/mnemon/api"
TOKEN = "svc-token-51e0c2aa"
WRONG = "svc-wrong-9d13be"
NEW_KEY = "svc-rotated-77c1f0"


@dataclass
class Served:
    host: Mnemon
    root: Path
    api: str
    service: str


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    root = tmp_path / "m"
    # The reference service listens on loopback: an internal address the host must be told of.
    http = {"retries": 0, "allowed_hosts": ["127.0.0.1"]}
    host = Mnemon.open(root, chroma={"enabled": False}, http=http)
    try:
        with (
            serve(tmp_path / "service.db", token=TOKEN) as service,
            uvicorn_in_thread(create_app(host)) as port,
        ):
            yield Served(host, root, f"http://127.0.0.1:{port}{API}", service)
    finally:
        host.close()


def _client(base: str) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Content-Type": "application/json"}, timeout=30)


def _ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def _error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == code, body
    return body


def test_providers_are_listed_with_their_forms_and_no_secret(served: Served) -> None:
    with _client(served.api) as api:
        providers = {p["id"]: p for p in _ok(api.get("/providers"))["providers"]}
    assert next(iter(providers)) == "mnemos"
    assert providers["mnemos"]["removal"] == "remove"
    assert providers["http"]["removal"] == "disconnect"
    fields = {f["name"]: f for f in providers["http"]["config_fields"]}
    assert fields["api_key"]["kind"] == "secret"
    assert fields["endpoint"]["kind"] == "url"
    assert providers["http"]["local"] is False
    assert "path" in {f["name"] for f in providers["facts"]["config_fields"]}


def test_a_configuration_is_tested_without_storing_anything(served: Served) -> None:
    config = {"endpoint": served.service}
    with _client(served.api) as api:
        good = _ok(
            api.post("/providers/http/test", json={"config": config, "secrets": {"api_key": TOKEN}})
        )
        assert good["ok"] is True
        assert good["latency_ms"] >= 0
        wrong = api.post(
            "/providers/http/test", json={"config": config, "secrets": {"api_key": WRONG}}
        )
        assert wrong.status_code == 200
        assert wrong.json()["ok"] is False
        assert WRONG not in wrong.text
        refused = _ok(api.post("/providers/facts/test", json={"config": {"min_trust": 3}}))
        assert refused["ok"] is False
        assert "min_trust" in refused["error"]
        _error(api.post("/providers/nope/test", json={}), 404, "not-found")
        _error(api.post("/providers/Not_An_Id/test", json={}), 404, "not-found")
        assert _ok(api.get("/spaces"))["total"] == 0


def test_add_configure_test_and_disconnect_a_third_party_space(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    with _client(served.api) as api:
        created = api.post(
            "/spaces",
            json={
                "name": "Team memory",
                "provider_id": "http",
                "config": {"endpoint": served.service},
                "secrets": {"api_key": WRONG},
            },
        )
        seen.append(created.text)
        space = _ok(created)["space"]
        sid = space["id"]
        assert space["secrets_configured"] == ["api_key"]
        assert space["config"]["endpoint"] == served.service
        failing = _ok(api.post(f"/spaces/{sid}/test", json={}))
        assert failing["ok"] is False

        fixed = api.patch(f"/spaces/{sid}", json={"secrets": {"api_key": TOKEN}})
        seen.append(fixed.text)
        assert _ok(fixed)["changed"] is True
        tested = api.post(f"/spaces/{sid}/test", json={})
        seen.append(tested.text)
        assert _ok(tested)["ok"] is True
        stored = api.post(f"/spaces/{sid}/memories", json={"content": "Kept in the service."})
        assert _ok(stored)["status"] == "committed"

        bad = api.patch(f"/spaces/{sid}", json={"config": {"endpoint": "ftp://files.example"}})
        _error(bad, 422, "invalid-provider-config")
        renamed = _ok(api.patch(f"/spaces/{sid}", json={"name": "Team memory v2"}))
        assert renamed["space"]["name"] == "Team memory v2"
        assert renamed["space"]["secrets_configured"] == ["api_key"]
        listed = api.get("/spaces")
        seen.append(listed.text)

        _error(
            api.request("DELETE", f"/spaces/{sid}", json={"confirm": sid}),
            422,
            "remove-third-party",
        )
        _error(
            api.post(f"/spaces/{sid}/disconnect", json={"confirm": "team"}), 422, "confirm-mismatch"
        )
        gone = api.post(f"/spaces/{sid}/disconnect", json={"confirm": sid})
        seen.append(gone.text)
        assert "not touched" in _ok(gone)["message"]
        assert _ok(api.get("/spaces"))["total"] == 0
        _error(api.post(f"/spaces/{sid}/test", json={}), 404, "not-found")

    for text in [*seen, caplog.text]:
        assert TOKEN not in text
        assert WRONG not in text
    # The data stayed in the service: a fresh provider object still reads it.
    provider = HttpProvider(retries=0)
    binding = SpaceBinding(
        id=sid,
        name="t",
        config={"endpoint": served.service, "namespace": sid},
        secrets={"api_key": TOKEN},
    )
    rows = provider.browse(binding, BrowseRequest(limit=5))
    provider.close()
    assert [r.content for r in rows] == ["Kept in the service."]


def test_a_native_space_is_removed_only_with_its_id_in_the_body_or_query(served: Served) -> None:
    with _client(served.api) as api:
        first = _ok(api.post("/spaces", json={"name": "Scratch"}))["space"]["id"]
        second = _ok(api.post("/spaces", json={"name": "Other"}))["space"]["id"]
        for sid in (first, second):
            assert _ok(api.post(f"/spaces/{sid}/memories", json={"content": f"Row of {sid}."}))
        _error(
            api.post(f"/spaces/{first}/disconnect", json={"confirm": first}),
            422,
            "disconnect-native",
        )
        _error(api.request("DELETE", f"/spaces/{first}", json={}), 422, "confirm-mismatch")
        _error(
            api.request("DELETE", f"/spaces/{first}", json={"confirm": second}),
            422,
            "confirm-mismatch",
        )
        mixed = api.request(
            "DELETE", f"/spaces/{first}", params={"confirm": second}, json={"confirm": first}
        )
        _error(mixed, 422, "confirm-mismatch")
        assert _ok(api.get("/spaces"))["total"] == 2

        removed = _ok(api.request("DELETE", f"/spaces/{first}", json={"confirm": first}))
        assert removed["provider_receipt"]["removed"] == 1
        by_query = _ok(
            api.request("DELETE", f"/spaces/{second}", params={"confirm": second}, json={})
        )
        assert by_query["status"] == "committed"
        assert _ok(api.get("/spaces"))["total"] == 0
        _error(api.request("DELETE", f"/spaces/{first}", json={"confirm": first}), 404, "not-found")
    fresh = MnemosProvider(served.host.database)
    rows = fresh.browse(SpaceBinding(id=first, name="s"), BrowseRequest(limit=5))
    assert rows == []


def test_a_read_only_host_refuses_every_change(tmp_path: Path) -> None:
    root = tmp_path / "m"
    with Mnemon.open(root, chroma={"enabled": False}) as writer:
        sid = writer.spaces.create_space("Notes").space.id  # type: ignore[union-attr]
    host = Mnemon.open(root, chroma={"enabled": False}, write_enabled=False)
    try:
        with (
            uvicorn_in_thread(create_app(host)) as port,
            _client(f"http://127.0.0.1:{port}{API}") as api,
        ):
            _error(api.patch(f"/spaces/{sid}", json={"name": "New"}), 403, "read-only")
            _error(api.request("DELETE", f"/spaces/{sid}", json={"confirm": sid}), 403, "read-only")
            assert _ok(api.post(f"/spaces/{sid}/test", json={}))["ok"] is True
            assert _ok(api.get("/providers"))["providers"]
        assert host.spaces.get_space(sid).name == "Notes"
    finally:
        host.close()


@pytest.mark.asyncio
async def test_testing_a_configuration_is_a_change_a_stored_space_test_a_read(
    served: Served,
) -> None:
    """A configuration test makes the host call any address it names: loopback (or a token)
    only, like every change. Reading providers and testing a stored space follow the read rule."""
    served.host.config.trusted_hosts = ["127.0.0.0/8", "10.0.0.0/8"]
    sid = served.host.spaces.create_space("Notes").space.id  # type: ignore[union-attr]
    transport = httpx.ASGITransport(app=create_app(served.host), client=("10.1.2.3", 5000))
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://127.0.0.1:8765",
        headers={"Content-Type": "application/json"},
    ) as remote:
        refused = await remote.post(
            f"{API}/providers/http/test", json={"config": {"endpoint": served.service}}
        )
        assert refused.status_code == 403, refused.text
        assert (await remote.get(f"{API}/providers")).status_code == 200
        tested = await remote.post(f"{API}/spaces/{sid}/test", json={})
        assert tested.status_code == 200, tested.text
        denied = await remote.post(f"{API}/spaces/{sid}/disconnect", json={"confirm": sid})
        assert denied.status_code == 403


def test_openapi_states_the_new_routes_and_their_refusals(served: Served) -> None:
    with _client(served.api.removesuffix("/api")) as client:
        spec = _ok(client.get("/openapi.json"))
    paths = spec["paths"]
    assert "get" in paths[f"{API}/providers"]
    assert "post" in paths[f"{API}/providers/{{provider_id}}/test"]
    one = paths[f"{API}/spaces/{{space_id}}"]
    assert set(one) >= {"patch", "delete"}
    assert one["delete"]["x-mnemon-refusals"] == ["remove-third-party", "confirm-mismatch"]
    assert one["delete"]["requestBody"]["required"] is False
    assert {p["name"] for p in one["delete"]["parameters"]} == {"space_id", "confirm"}
    assert "invalid-provider-config" in one["patch"]["responses"]["422"]["description"]
    create = paths[f"{API}/spaces"]["post"]["requestBody"]["content"]["application/json"]
    assert {"config", "secrets"} <= set(create["schema"]["properties"])
    assert paths[f"{API}/spaces/{{space_id}}/disconnect"]["post"]["x-mnemon-mutates"] is True
    assert paths[f"{API}/spaces/{{space_id}}/test"]["post"]["x-mnemon-mutates"] is False
