"""Many users on one server (issue 29): findings 1 and 4, reproduced against a real
``langgraph dev`` with custom auth (``tests/many_users_support.py``: Alice and Bob are users,
``admin`` has ``mnemon:admin``; the server lists ``127.0.0.2`` in ``http.allowed_hosts``).

1. A space's settings pointed straight at another user's data: Bob's ``facts`` space on
   Alice's fact file, Alice's mem0 ids in Bob's space, a path outside the root (created by the
   server), a fact file planted at a future project's ``documents/index.json``.
4. The server made requests anywhere for anyone: any user could test an HTTP provider against
   any address (``localhost``, ``[::1]``, ``0.0.0.0``, ``2130706433``, ``127.1``), and the
   answers told a closed port from other services and echoed their error texts.

Each test reproduces a finding as Bob and asserts the refusal (403 and its code), that nothing
was created and that Alice's data is untouched, and that the admin can still do what is allowed.
The endpoints are real loopback listeners that count connections (``tests/outbound_support.py``).
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from many_users_support import ADMIN, ALICE, BOB, ManyUsers
from outbound_support import INTERNAL_TEXT, closed_port, listening, loopback_spellings

from langgraph_mnemon.memory_layers.scopes import scope_folder

pytestmark = pytest.mark.timeout(300)

ALLOWED = "127.0.0.2"  # SERVER_ENV["MNEMON_HTTP__ALLOWED_HOSTS"]


def _ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def _refused(response: httpx.Response, code: str) -> dict[str, Any]:
    assert response.status_code == 403, response.text
    body = response.json()
    assert body["error"] == code, body
    assert body["decision"]["layer"] == "memory_spaces"
    assert body["decision"]["admitted"] is False
    return body


def _space(name: str, provider: str, **config: Any) -> dict[str, Any]:
    return {"name": name, "provider_id": provider, "config": config}


def _ids(many_users: ManyUsers, user: str) -> set[str]:
    return {s["id"] for s in _ok(many_users.api(user, "GET", "/spaces"))["spaces"]}


def _alices_fact_file(many_users: ManyUsers) -> tuple[str, Path, str]:
    fact = f"Alice's door code is {uuid.uuid4().int % 100000:05d}."
    created = many_users.api(ALICE, "POST", "/spaces", json=_space("Private", "facts"))
    space = _ok(created)["space"]
    stored = many_users.api(
        ALICE, "POST", f"/spaces/{space['id']}/memories", json={"content": fact}
    )
    assert _ok(stored)["status"] == "committed"
    path = Path(space["config"]["path"])
    assert path.is_file()
    return space["id"], path, fact


# --- 1. a space's settings pointed at another user's data ---------------------------------------


def test_many_users_1_bob_cannot_open_alices_fact_file(many_users: ManyUsers) -> None:
    alice_space, alice_file, fact = _alices_fact_file(many_users)
    before = alice_file.read_bytes()
    spaces = _ids(many_users, BOB)
    steal = _space("Notes", "facts", path=str(alice_file))
    body = _refused(many_users.api(BOB, "POST", "/spaces", json=steal), "storage-location")
    assert body["decision"]["mode"] == "admin-only"
    probe = {"config": {"path": str(alice_file)}}
    _refused(many_users.api(BOB, "POST", "/providers/facts/test", json=probe), "storage-location")
    assert _ids(many_users, BOB) == spaces
    assert many_users.api(BOB, "GET", f"/spaces/{alice_space}/content").status_code == 404
    assert alice_file.read_bytes() == before
    rows = _ok(many_users.api(ALICE, "GET", f"/spaces/{alice_space}/content"))["items"]
    assert [r["content"] for r in rows] == [fact]


def test_many_users_1_bob_cannot_copy_alices_mem0_ids(many_users: ManyUsers) -> None:
    providers = {p["id"] for p in _ok(many_users.api(ALICE, "GET", "/providers"))["providers"]}
    if "mem0" not in providers:
        pytest.skip("mem0ai is not installed on the served host")
    alice = _ok(many_users.api(ALICE, "POST", "/spaces", json=_space("M", "mem0")))["space"]
    ids = alice["config"]
    spaces = _ids(many_users, BOB)
    for config in (
        {"user_id": ids["user_id"], "collection": ids["collection"]},
        {"user_id": ids["user_id"]},
        {"collection": ids["collection"]},
    ):
        copy = _space("Copy", "mem0", **config)
        _refused(many_users.api(BOB, "POST", "/spaces", json=copy), "storage-location")
    assert _ids(many_users, BOB) == spaces
    own = _ok(many_users.api(BOB, "POST", "/spaces", json=_space("Own", "mem0")))["space"]
    assert own["config"]["user_id"] != ids["user_id"]
    assert own["config"]["collection"] != ids["collection"]
    change = {"config": {"user_id": ids["user_id"]}}
    _refused(many_users.api(BOB, "PATCH", f"/spaces/{own['id']}", json=change), "storage-location")


def test_many_users_1_a_path_outside_the_root_creates_nothing(
    many_users: ManyUsers, tmp_path: Path
) -> None:
    outside = tmp_path / f"outside-{uuid.uuid4().hex[:8]}"
    config = {"path": str(outside / "deep" / "facts.json")}
    _refused(
        many_users.api(BOB, "POST", "/spaces", json=_space("Out", "facts", **config)),
        "storage-location",
    )
    # The admin too: this server allows no folder outside its root (providers.allowed_paths).
    body = _refused(
        many_users.api(ADMIN, "POST", "/spaces", json=_space("Out", "facts", **config)),
        "storage-location",
    )
    assert body["decision"]["setting"] == "providers.allowed_paths"
    assert not outside.exists()


def test_many_users_1_a_fact_file_cannot_be_planted_in_a_future_project(
    many_users: ManyUsers,
) -> None:
    project = f"future-{uuid.uuid4().hex[:8]}"
    folder = many_users.root / "scopes" / "projects" / scope_folder(project)
    config = {"path": str(folder / "documents" / "index.json")}
    for user in (BOB, ADMIN):
        planted = many_users.api(user, "POST", "/spaces", json=_space("Plant", "facts", **config))
        _refused(planted, "storage-location")
    assert not folder.exists()
    listed = many_users.api(ADMIN, "GET", "/documents", params={"project": project})
    assert _ok(listed)["documents"] == []
    doc = {"title": "Kickoff", "content": "The project starts."}
    created = many_users.api(ADMIN, "POST", "/documents", params={"project": project}, json=doc)
    assert _ok(created)["status"] == "committed"


def test_many_users_1_the_admin_keeps_spaces_of_the_servers_choosing(
    many_users: ManyUsers,
) -> None:
    made = _ok(many_users.api(ADMIN, "POST", "/spaces", json=_space("Admin notes", "facts")))
    path = Path(made["space"]["config"]["path"])
    assert path.parent == many_users.root / "facts"
    sid = made["space"]["id"]
    _ok(many_users.api(ADMIN, "POST", f"/spaces/{sid}/memories", json={"content": "Admin's."}))
    rows = _ok(many_users.api(ADMIN, "GET", f"/spaces/{sid}/content"))["items"]
    assert [r["content"] for r in rows] == ["Admin's."]
    assert sid not in _ids(many_users, BOB)


# --- 4. the server made requests anywhere for anyone --------------------------------------------


def test_many_users_4_bob_cannot_test_or_add_an_endpoint(many_users: ManyUsers) -> None:
    with listening(mode="status") as listener:
        for name, url in loopback_spellings(listener).items():
            test = many_users.api(
                BOB, "POST", "/providers/http/test", json={"config": {"endpoint": url}}
            )
            body = _refused(test, "admin-required")
            assert body["decision"]["mode"] == "admin-only", name
            add = many_users.api(BOB, "POST", "/spaces", json=_space("S", "http", endpoint=url))
            _refused(add, "admin-required")
        assert listener.accepted == 0


def test_many_users_4_loopback_is_refused_for_the_admin_in_every_spelling(
    many_users: ManyUsers,
) -> None:
    with listening(mode="status") as listener:
        for name, url in loopback_spellings(listener).items():
            test = many_users.api(
                ADMIN, "POST", "/providers/http/test", json={"config": {"endpoint": url}}
            )
            body = _refused(test, "internal-address")
            assert body["decision"]["setting"] == "http.allowed_hosts", name
            add = many_users.api(ADMIN, "POST", "/spaces", json=_space("S", "http", endpoint=url))
            _refused(add, "internal-address")
        assert listener.accepted == 0


def test_many_users_4_the_admin_reaches_an_allowed_host(many_users: ManyUsers) -> None:
    with listening((ALLOWED,), mode="status") as listener:
        config = {"endpoint": listener.url(ALLOWED)}
        tested = _ok(many_users.api(ADMIN, "POST", "/providers/http/test", json={"config": config}))
        assert tested["ok"] is True
        assert listener.accepted >= 1
        made = _ok(many_users.api(ADMIN, "POST", "/spaces", json=_space("Svc", "http", **config)))
        sid = made["space"]["id"]
        assert _ok(many_users.api(ADMIN, "POST", f"/spaces/{sid}/test", json={}))["ok"] is True
        seen = listener.accepted
        # Bob may not test it for himself, and never sees the admin's space.
        _refused(
            many_users.api(BOB, "POST", "/providers/http/test", json={"config": config}),
            "admin-required",
        )
        assert many_users.api(BOB, "POST", f"/spaces/{sid}/test", json={}).status_code == 404
        assert listener.accepted == seen


def test_many_users_4_answers_do_not_tell_services_apart(many_users: ManyUsers) -> None:
    errors: dict[str, str] = {}
    with (
        listening((ALLOWED,), mode="garbage") as garbage,
        listening((ALLOWED,), mode="not-json") as page,
        listening((ALLOWED,), mode="error") as failing,
    ):
        targets = {
            "closed": f"http://{ALLOWED}:{closed_port(ALLOWED)}",
            "protocol": garbage.url(ALLOWED),
            "not-json": page.url(ALLOWED),
        }
        for what, url in targets.items():
            answer = many_users.api(
                ADMIN, "POST", "/providers/http/test", json={"config": {"endpoint": url}}
            )
            result = _ok(answer)
            assert result["ok"] is False, what
            errors[what] = re.sub(r":\d+", ":PORT", result["error"])
        internal = _ok(
            many_users.api(
                ADMIN,
                "POST",
                "/providers/http/test",
                json={"config": {"endpoint": failing.url(ALLOWED)}},
            )
        )
    assert len(set(errors.values())) == 1, errors
    assert "could not reach" in errors["closed"]
    assert internal["ok"] is False
    assert INTERNAL_TEXT not in internal["error"]
    assert "db-down" not in internal["error"]
