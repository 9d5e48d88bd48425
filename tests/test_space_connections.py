"""Provider connections on the Memory Spaces layer (issue 19, part 5), and their CLI.

Listing providers with the form a new space takes, connection tests (the provider's own
``check_config``, then its ``status``; nothing written), reconfiguring a space (settings
re-checked, secrets write-only), **Disconnect** (third-party: catalog entry and host-side
secrets go, provider data stays) and **Remove** (native: the rows go, then the entry, only
after confirmation). Real components only: SQLite files under ``tmp_path`` (and a real
PostgreSQL schema for removal), the real fact-file provider, the real HTTP provider against the
reference memory service on a free port, the real LangGraph ``InMemoryStore``. The few
providers defined here are deterministic fakes of a *provider* (slow, remote, failing removal),
never of a database.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from langgraph.store.memory import InMemoryStore
from spaces_support import hashing, make_spaces, sqlite_database
from support.http_memory_service import serve
from typer.testing import CliRunner

from langgraph_mnemon.adapters.providers import (
    FactFileProvider,
    HttpProvider,
    MnemosProvider,
    StoreProvider,
)
from langgraph_mnemon.adapters.providers.base import BaseProvider
from langgraph_mnemon.adapters.providers.mnemos._sql import space_token
from langgraph_mnemon.cli import app as cli_app
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.errors import (
    InvalidInputError,
    MnemonError,
    NotFoundError,
    ProviderError,
    ReadOnlyError,
)
from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    MemorySpaces,
    ProviderDescriptor,
    ProviderStatus,
    SpaceBinding,
)
from langgraph_mnemon.memory_layers.spaces.schema import (
    EDGES,
    ENTITIES,
    FTS_TABLE,
    INSIGHTS,
    SPACE_STATS,
    SPACE_TERMS,
    VECTORS,
)
from langgraph_mnemon.storage.db import Database, create_engine

TOKEN = "ref-service-key-7f3a9c"
WRONG = "not-the-key-41b2d8"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[str]:
    """The reference ``mnemon-memory/1`` service (a real SQLite file), requiring TOKEN."""
    with serve(tmp_path / "service.db", token=TOKEN) as url:
        yield url


def _spaces(root: Path, *extra: Any, **kwargs: Any) -> MemorySpaces:
    root.mkdir(parents=True, exist_ok=True)
    return make_spaces(root, [FactFileProvider(root), HttpProvider(retries=0), *extra], **kwargs)


@pytest.fixture
def spaces(tmp_path: Path) -> Iterator[MemorySpaces]:
    svc = _spaces(tmp_path / "root")
    yield svc
    svc.close()


class SlowStatus(BaseProvider):
    """A provider whose status call takes ``delay`` seconds (a service that hangs)."""

    descriptor = ProviderDescriptor(id="slow", label="Slow service", local=True)

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def _status(self, space: SpaceBinding) -> ProviderStatus:
        time.sleep(self.delay)
        return ProviderStatus(healthy=True)


class RemoteCounting(BaseProvider):
    """A remote provider counting its status calls (it must not be called under local-only)."""

    descriptor = ProviderDescriptor(id="remote", label="Remote", local=False)

    def __init__(self) -> None:
        self.calls = 0

    def _status(self, space: SpaceBinding) -> ProviderStatus:
        self.calls += 1
        return ProviderStatus(healthy=True)


class LeakyStatus(BaseProvider):
    """A provider whose failure message quotes its credential and a host path."""

    descriptor = ProviderDescriptor(id="leaky", label="Leaky", secret_fields=("api_key",))

    def check_config(self, config: Any, secrets: Any) -> dict[str, Any]:
        return {}

    def _status(self, space: SpaceBinding) -> ProviderStatus:
        key = space.secrets.get("api_key", "")
        raise ConnectionError(f"login with {key} refused by /srv/secret/place/service.sock")


class UnconfirmedRemoval(MnemosProvider):
    """The native provider, but its removal does not confirm (the entry must stay)."""

    def remove_space(self, space: SpaceBinding) -> dict[str, Any]:
        return {"status": "failed", "error": "disk quota"}


def _counts(db: Database, space_id: str) -> dict[str, int]:
    tables = {
        "insights": INSIGHTS,
        "edges": EDGES,
        "entities": ENTITIES,
        "vectors": VECTORS,
        "terms": SPACE_TERMS,
    }
    with db.read() as conn:
        return {
            name: int(
                conn.execute(
                    sa.select(sa.func.count()).select_from(t).where(t.c.space_id == space_id)
                ).scalar()
                or 0
            )
            for name, t in tables.items()
        }


# --- listing providers ------------------------------------------------------------------------


def test_providers_list_declarations_form_fields_and_how_spaces_leave(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = StoreProvider(InMemoryStore())
    svc = _spaces(root, store)
    try:
        svc.create_space("On the store", provider_id="store", space_id="st")
        infos = {i.id: i for i in svc.list_providers()}
        assert next(iter(infos)) == "mnemos"  # registration order: the native one first
        assert set(infos) == {"mnemos", "facts", "http", "store"}
        assert infos["mnemos"].removal == "remove"
        assert {i.removal for k, i in infos.items() if k != "mnemos"} == {"disconnect"}
        assert infos["mnemos"].config_fields == []
        # The store declares no form: the listing adds its check_config key.
        assert [f.name for f in infos["store"].config_fields] == ["namespace"]
        http = {f.name: f for f in infos["http"].config_fields}
        assert http["api_key"].kind == "secret"
        assert http["endpoint"].required is True
        assert infos["http"].local is False
        assert infos["http"].secret_fields == ["api_key"]
        assert {"path", "default_trust", "min_trust"} <= {
            f.name for f in infos["facts"].config_fields
        }
        assert infos["store"].spaces == 1
    finally:
        svc.close()
    # A process without the store provider still lists it: its space names it.
    again = make_spaces(root, database=sqlite_database(root))
    try:
        missing = {i.id: i for i in again.list_providers()}["store"]
        assert missing.registered is False
        assert missing.spaces == 1
        assert missing.capabilities == []
    finally:
        again.close()


# --- connection tests ---------------------------------------------------------------------------


def test_a_connection_test_checks_settings_then_status_and_writes_nothing(
    spaces: MemorySpaces, service: str, tmp_path: Path
) -> None:
    native = spaces.test_connection("mnemos")
    assert native.ok
    assert native.healthy
    assert native.latency_ms is not None
    assert native.latency_ms >= 0
    assert native.deletion_mode == "soft"
    assert "remember" in native.capabilities

    good = spaces.test_connection("http", config={"endpoint": service}, secrets={"api_key": TOKEN})
    assert good.ok, good.error
    assert good.local is False
    assert good.status is not None
    assert good.status.healthy

    wrong = spaces.test_connection("http", config={"endpoint": service}, secrets={"api_key": WRONG})
    assert not wrong.ok
    assert not wrong.healthy
    assert wrong.error
    assert WRONG not in wrong.model_dump_json()

    refused = spaces.test_connection("facts", config={"min_trust": 2})
    assert not refused.ok
    assert refused.latency_ms is None  # refused before any status call
    assert "min_trust" in (refused.error or "")

    credential = spaces.test_connection("http", config={"endpoint": service, "token": "x"})
    assert not credential.ok
    assert "secrets=" in (credential.error or "")

    with pytest.raises(NotFoundError, match="no provider 'nope'"):
        spaces.test_connection("nope")
    # Nothing was written: no catalog table, no space, no secrets file.
    assert spaces.list_spaces() == []
    db_file = tmp_path / "root" / "mnemon.db"
    if db_file.exists():
        assert (
            "mnemon_spaces"
            not in sa.inspect(sa.create_engine(f"sqlite:///{db_file}")).get_table_names()
        )
    assert not (tmp_path / "root" / "state" / "space-secrets.json").exists()


def test_a_failing_provider_message_never_shows_the_secret_or_a_host_path(
    tmp_path: Path,
) -> None:
    svc = _spaces(tmp_path / "root", LeakyStatus())
    try:
        result = svc.test_connection("leaky", secrets={"api_key": "sk-live-93ad01"})
        assert not result.ok
        assert "refused" in (result.error or "")
        assert "sk-live-93ad01" not in result.model_dump_json()
        assert "/srv/secret" not in (result.error or "")
    finally:
        svc.close()


def test_a_hanging_provider_is_a_failed_test_within_the_timeout(tmp_path: Path) -> None:
    svc = _spaces(tmp_path / "root", SlowStatus(5.0), timeout_ms=300)
    try:
        started = time.monotonic()
        result = svc.test_connection("slow")
        assert time.monotonic() - started < 2.5
        assert not result.ok
        assert "300 ms" in (result.error or "")
    finally:
        svc.close()


def test_local_only_never_contacts_a_remote_provider(tmp_path: Path) -> None:
    remote = RemoteCounting()
    svc = _spaces(tmp_path / "root", remote, local_only=True)
    try:
        result = svc.test_connection("remote")
        assert not result.ok
        assert "local-only" in (result.error or "")
        assert remote.calls == 0
        with pytest.raises(InvalidInputError) as refused:
            svc.create_space("Remote", provider_id="remote")
        assert refused.value.code == "data-boundary"
    finally:
        svc.close()


def test_a_stored_space_is_tested_with_its_own_settings(spaces: MemorySpaces, service: str) -> None:
    created = spaces.create_space(
        "Team memory",
        provider_id="http",
        config={"endpoint": service},
        secrets={"api_key": TOKEN},
        space_id="team",
    )
    assert created.space is not None
    assert spaces.remember("The release train leaves on Thursday.", space_id="team").committed
    result = spaces.test_space("team")
    assert result.ok, result.error
    assert result.space_id == "team"
    assert result.status is not None
    assert result.status.total_insights == 1
    native = spaces.create_space("Notes", space_id="notes")
    assert native.committed
    assert spaces.test_space("notes").ok
    with pytest.raises(NotFoundError):
        spaces.test_space("absent")


# --- reconfiguring ----------------------------------------------------------------------------


def test_secrets_are_write_only_and_settings_are_checked_again(
    spaces: MemorySpaces, service: str, tmp_path: Path
) -> None:
    receipt = spaces.create_space(
        "Team memory",
        provider_id="http",
        config={"endpoint": service},
        secrets={"api_key": WRONG},
        space_id="team",
    )
    assert receipt.space is not None
    assert receipt.space.secrets_configured == ["api_key"]
    assert not spaces.test_space("team").ok  # the wrong key: unauthorized

    fixed = spaces.update_space("team", secrets={"api_key": TOKEN})
    assert fixed.changed
    assert fixed.space is not None
    assert fixed.space.secrets_configured == ["api_key"]
    assert spaces.test_space("team").ok
    for shown in (fixed.model_dump_json(), repr(spaces.get_space("team")), repr(spaces)):
        assert TOKEN not in shown
        assert WRONG not in shown
    store = spaces._catalog.secrets  # in the database, beside the catalog (no file)
    assert store.get("team") == {"api_key": TOKEN}
    assert not (tmp_path / "root" / "state" / "space-secrets.json").exists()

    # Settings merge into the stored ones and are checked by the provider again.
    renamed = spaces.update_space("team", name="Team memory v2", config={"namespace": "team-v2"})
    assert renamed.space is not None
    assert renamed.space.config == {"endpoint": service, "namespace": "team-v2"}
    assert renamed.space.secrets_configured == ["api_key"]  # absent keys stay
    before = spaces.get_space("team")
    for bad in ({"endpoint": "ftp://files.example"}, {"colour": "blue"}):
        with pytest.raises(InvalidInputError) as refused:
            spaces.update_space("team", config=bad)
        assert refused.value.code == "invalid-provider-config"
    with pytest.raises(InvalidInputError) as refused:
        spaces.update_space("team", secrets={"password": "x"})
    assert refused.value.code == "invalid-provider-config"
    assert spaces.get_space("team") == before  # nothing changed
    assert store.get("team") == {"api_key": TOKEN}

    same = spaces.update_space("team", secrets={"api_key": TOKEN})
    assert same.changed is False

    cleared = spaces.update_space("team", secrets={"api_key": ""})
    assert cleared.space is not None
    assert cleared.space.secrets_configured == []
    assert "team" not in store.names()
    assert not spaces.test_space("team").ok


def test_a_refused_secret_value_is_not_echoed(spaces: MemorySpaces) -> None:
    spaces.create_space("Facts", provider_id="facts", space_id="f")
    with pytest.raises(InvalidInputError) as refused:
        spaces.update_space("f", secrets={"api_key": "sk-never-echo-55"})
    assert "sk-never-echo-55" not in str(refused.value)


# --- Disconnect (third-party) and Remove (native) ----------------------------------------------


def test_disconnect_drops_the_entry_and_secrets_and_keeps_the_provider_data(
    spaces: MemorySpaces, service: str, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    spaces.create_space("Facts", provider_id="facts", space_id="facts-1")
    for fact in ("Ada prefers tea.", "Deploys need two approvals."):
        assert spaces.remember(fact, space_id="facts-1", category="fact").committed
    path = Path(spaces.get_space("facts-1").config["path"])
    spaces.create_space(
        "Team",
        provider_id="http",
        config={"endpoint": service},
        secrets={"api_key": TOKEN},
        space_id="team",
    )
    assert spaces.remember("On-call changes on Monday.", space_id="team").committed
    stored = spaces.get_space("team")

    with pytest.raises(InvalidInputError) as wrong:
        spaces.disconnect_space("facts-1", confirm="facts")
    assert wrong.value.code == "confirm-mismatch"
    assert spaces.get_space("facts-1").id == "facts-1"

    receipt = spaces.disconnect_space("facts-1", confirm="facts-1")
    assert receipt.committed
    assert receipt.space is not None
    assert "not touched" in receipt.message
    assert spaces.disconnect_space("team", confirm="team").committed
    assert [s.id for s in spaces.list_spaces()] == []
    assert "team" not in spaces._catalog.secrets.names()

    # The data is still where the providers keep it: fresh provider objects find it.
    assert path.exists()
    fresh_facts = FactFileProvider(root)
    rows = fresh_facts.browse(
        SpaceBinding(id="facts-1", name="Facts", config={"path": str(path)}),
        BrowseRequest(limit=10),
    )
    assert sorted(r.content for r in rows) == ["Ada prefers tea.", "Deploys need two approvals."]
    fresh_http = HttpProvider(retries=0)
    binding = SpaceBinding(id="team", name="Team", config=stored.config, secrets={"api_key": TOKEN})
    found = fresh_http.browse(binding, BrowseRequest(limit=10))
    fresh_http.close()
    assert [r.content for r in found] == ["On-call changes on Monday."]


def test_a_mem0_space_is_added_tested_and_disconnected_with_its_rows_kept(
    tmp_path: Path,
) -> None:
    if importlib.util.find_spec("mem0") is None and os.environ.get("CI") != "true":
        pytest.skip("mem0ai is an extra: pip install 'langgraph-mnemon[mem0]'")
    from langgraph_mnemon.adapters.providers import Mem0Provider

    root = tmp_path / "root"
    folder = tmp_path / "mem0"
    svc = _spaces(root, Mem0Provider(folder, embedder=hashing()))
    try:
        probe = svc.test_connection("mem0", config={"user_id": "team-a"})
        assert probe.ok, probe.error
        created = svc.create_space("Shared mem0", provider_id="mem0", space_id="m0")
        assert created.space is not None
        # a new space gets its own Qdrant collection, recorded with its mem0 user id
        assert created.space.config == {"user_id": "mnemon-m0", "collection": "mnemon-m0"}
        assert svc.remember("Ada takes her tea without sugar.", space_id="m0").committed
        tested = svc.test_space("m0")
        assert tested.ok, tested.error
        assert tested.status is not None
        assert tested.status.total_insights == 1
        assert svc.disconnect_space("m0", confirm="m0").committed
        assert svc.list_spaces() == []
    finally:
        svc.close()  # releases the local Qdrant folder for the fresh provider below
    fresh = Mem0Provider(folder, embedder=hashing())
    binding = SpaceBinding(
        id="m0", name="m", config={"user_id": "mnemon-m0", "collection": "mnemon-m0"}
    )

    try:
        rows = fresh.browse(binding, BrowseRequest(limit=5))
    finally:
        fresh.close()
    assert [r.content for r in rows] == ["Ada takes her tea without sugar."]


def test_native_spaces_are_removed_not_disconnected_and_the_reverse(
    spaces: MemorySpaces,
) -> None:
    spaces.create_space("Notes", space_id="notes")
    spaces.create_space("Facts", provider_id="facts", space_id="facts-1")
    with pytest.raises(InvalidInputError) as native:
        spaces.disconnect_space("notes", confirm="notes")
    assert native.value.code == "disconnect-native"
    assert "remove" in str(native.value)
    with pytest.raises(InvalidInputError) as third:
        spaces.remove_space("facts-1", confirm="facts-1")
    assert third.value.code == "remove-third-party"
    assert "provider data is never deleted from here" in str(third.value)
    assert {s.id for s in spaces.list_spaces()} == {"notes", "facts-1"}


def _indexed_terms(db: Database, space_id: str) -> list[str]:
    """The analysed terms of the space's live rows (what its keyword index holds)."""
    with db.read() as conn:
        rows = conn.execute(
            sa.select(INSIGHTS.c.terms).where(
                INSIGHTS.c.space_id == space_id, INSIGHTS.c.deleted_at.is_(None)
            )
        ).scalars()
        return sorted({t for terms in rows for t in (terms or "").split()})


def _keyword_hits(db: Database, space_id: str, terms: list[str]) -> int:
    """Keyword-index entries of ``space_id`` for ``terms`` (SQLite FTS5 postings, checked for
    integrity; PostgreSQL's index is a generated column of the rows themselves)."""
    with db.read() as conn:
        if conn.dialect.name != "sqlite":
            return int(
                conn.execute(
                    sa.select(sa.func.count()).where(INSIGHTS.c.space_id == space_id)
                ).scalar()
                or 0
            )
        conn.exec_driver_sql(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('integrity-check')")
        query = " OR ".join(f'"{space_token(space_id)}{t}"' for t in terms)
        found = conn.exec_driver_sql(
            f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ?", (query,)
        ).scalar()
        return int(found or 0)


def _remove_native_rows(url: str, root: Path) -> None:
    db = Database(create_engine(url), owns_engine=True)
    svc = MemorySpaces(db, root=root, providers=[MnemosProvider(db, embedder=hashing())])
    try:
        svc.create_space("Scratch", space_id="scratch")
        svc.create_space("Kept", space_id="kept")
        first = svc.remember("The staging port is 5433.", space_id="scratch", entities=["staging"])
        second = svc.remember(
            "Staging runs on db-stage-2.", space_id="scratch", entities=["staging"]
        )
        gone = svc.remember("A row forgotten before removal.", space_id="scratch")
        assert svc.forget(gone.id or "", space_id="scratch").committed
        assert svc.link(
            first.id or "", second.id or "", space_id="scratch", type="causal"
        ).committed
        assert svc.remember("Kept spaces keep their rows.", space_id="kept").committed
        assert svc.search("staging port", space_ids=["scratch"]).results  # warms the caches
        assert _counts(db, "scratch")["insights"] == 3

        with pytest.raises(InvalidInputError) as wrong:
            svc.remove_space("scratch", confirm="kept")
        assert wrong.value.code == "confirm-mismatch"
        assert _counts(db, "scratch")["insights"] == 3

        terms = _indexed_terms(db, "scratch")
        assert terms
        receipt = svc.remove_space("scratch", confirm="scratch")
        assert receipt.committed
        assert receipt.provider_receipt["removed"] == 3
        assert receipt.provider_receipt["live"] == 2
        assert _counts(db, "scratch") == dict.fromkeys(
            ("insights", "edges", "entities", "vectors", "terms"), 0
        )
        with db.read() as conn:
            stats = conn.execute(
                sa.select(SPACE_STATS.c.docs).where(SPACE_STATS.c.space_id == "scratch")
            ).scalar()
        assert not stats
        assert _keyword_hits(db, "scratch", terms) == 0  # the keyword index forgot them
        with pytest.raises(NotFoundError):
            svc.get_space("scratch")
        kept = svc.search("kept spaces rows", space_ids=["kept"]).results
        assert [r.content for r in kept] == ["Kept spaces keep their rows."]

        # A new space of the same id starts empty: no keyword entry, vector or cache survives.
        svc.create_space("Scratch again", space_id="scratch")
        assert svc.remember("Completely different content.", space_id="scratch").committed
        for mode in ("smart", "keyword"):
            rows = svc.search("staging port 5433", space_ids=["scratch"], mode=mode).results
            assert all("5433" not in r.content for r in rows), (mode, rows)
        fresh = MnemosProvider(db)
        left = fresh.browse(SpaceBinding(id="scratch", name="s"), BrowseRequest(limit=10))
        assert [r.content for r in left] == ["Completely different content."]
    finally:
        svc.close()
        db.dispose()


def test_remove_deletes_a_native_space_rows_then_its_entry_on_sqlite(tmp_path: Path) -> None:
    _remove_native_rows(f"sqlite:///{tmp_path / 'mnemon.db'}", tmp_path)


def test_remove_deletes_a_native_space_rows_then_its_entry_on_postgresql(
    postgres_url: str, tmp_path: Path
) -> None:
    _remove_native_rows(postgres_url, tmp_path)


def test_a_removal_the_provider_did_not_confirm_keeps_the_entry(tmp_path: Path) -> None:
    db = sqlite_database(tmp_path)
    svc = MemorySpaces(db, root=tmp_path, providers=[UnconfirmedRemoval(db)])
    try:
        svc.create_space("Notes", space_id="notes")
        assert svc.remember("Still here.", space_id="notes").committed
        with pytest.raises(ProviderError) as failed:
            svc.remove_space("notes", confirm="notes")
        assert failed.value.code == "remove-failed"
        assert svc.get_space("notes").id == "notes"
        assert [r.content for r in svc.browse("notes")] == ["Still here."]
    finally:
        svc.close()


def test_every_change_asks_the_kernel_first(tmp_path: Path) -> None:
    root = tmp_path / "root"
    svc = _spaces(root)
    svc.create_space("Notes", space_id="notes")
    svc.create_space("Facts", provider_id="facts", space_id="facts-1")
    svc.close()
    read_only = _spaces(root, write_enabled=False)
    try:
        before = read_only.list_spaces()
        for call in (
            lambda: read_only.update_space("notes", name="Renamed"),
            lambda: read_only.disconnect_space("facts-1", confirm="facts-1"),
            lambda: read_only.remove_space("notes", confirm="notes"),
        ):
            with pytest.raises(ReadOnlyError):
                call()
        assert read_only.list_spaces() == before
        assert read_only.test_space("notes").ok  # a test is a read
    finally:
        read_only.close()


def test_a_scope_touches_only_its_own_spaces(spaces: MemorySpaces) -> None:
    alice = spaces.for_scope(Scope(user="alice", project="billing"))
    bob = spaces.for_scope(Scope(user="bob", project="ops"))
    mine = alice.create_space("Alice's notes").space
    theirs = bob.create_space("Bob's facts", provider_id="facts").space
    assert mine is not None
    assert theirs is not None
    for call in (
        lambda: alice.test_space(theirs.id),
        lambda: alice.update_space(theirs.id, name="Taken"),
        lambda: alice.disconnect_space(theirs.id, confirm=theirs.id),
        lambda: alice.remove_space(theirs.id, confirm=theirs.id),
    ):
        with pytest.raises(NotFoundError):
            call()
    assert bob.get_space(theirs.id).name == "Bob's facts"
    assert {i.id: i.spaces for i in alice.list_providers()}["facts"] == 0
    assert alice.remove_space(mine.id, confirm=mine.id).committed
    assert bob.disconnect_space(theirs.id, confirm=theirs.id).committed


def test_async_twins_run_on_the_callers_loop(spaces: MemorySpaces) -> None:
    async def run() -> None:
        created = await spaces.acreate_space("Async", space_id="a1")
        assert created.committed
        assert (await spaces.atest_space("a1")).ok
        assert next(p.id for p in await spaces.alist_providers()) == "mnemos"
        updated = await spaces.aupdate_space("a1", description="Made on a loop")
        assert updated.space is not None
        assert updated.space.description == "Made on a loop"
        assert (await spaces.aremove_space("a1", confirm="a1")).committed

    asyncio.run(run())


# --- the command line ---------------------------------------------------------------------------

runner = CliRunner()


def _cli(
    root: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> Any:
    result = runner.invoke(
        cli_app,
        ["--root", str(root), *args],
        input=stdin,
        # The reference service listens on loopback, which a host reaches only when allowed.
        env={"COLUMNS": "200", "MNEMON_HTTP__ALLOWED_HOSTS": "127.0.0.1", **(env or {})},
    )
    # A library error stays on the result (``mnemon`` prints it as one line and exits 1).
    if result.exception and not isinstance(result.exception, (SystemExit, MnemonError)):
        raise result.exception
    return result


def test_cli_adds_tests_configures_disconnects_and_removes(tmp_path: Path, service: str) -> None:
    root = tmp_path / "cli"
    listed = _cli(root, "spaces", "providers", "--json")
    assert listed.exit_code == 0, listed.output
    ids = [p["id"] for p in json.loads(listed.output)]
    assert ids[0] == "mnemos"
    assert {"facts", "http"} <= set(ids)

    # The key comes from standard input: it is never on the command line.
    added = _cli(
        root,
        "spaces", "add", "Team memory", "--provider", "http", "--id", "team",
        "--config", f"endpoint={service}", "--secret-stdin", "api_key", "--json",
        stdin=f"{TOKEN}\n",
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    assert json.loads(added.output)["space"]["secrets_configured"] == ["api_key"]
    assert TOKEN not in added.output
    tested = _cli(root, "spaces", "test", "team")
    assert tested.exit_code == 0, tested.output
    assert "[ok]" in tested.output

    # From an environment variable; a wrong key fails the test with exit 1.
    env = {"TEAM_KEY": WRONG}
    changed = _cli(root, "spaces", "configure", "team", "--secret-env", "api_key=TEAM_KEY", env=env)
    assert changed.exit_code == 0, changed.output
    assert "secrets configured: api_key" in changed.output
    failing = _cli(root, "spaces", "test", "team")
    assert failing.exit_code == 1
    assert "[failed]" in failing.output
    assert WRONG not in failing.output

    probe = _cli(
        root, "spaces", "test", "--provider", "http", "--config", f"endpoint={service}",
        "--secret", f"api_key={TOKEN}", "--json",
    )  # fmt: skip
    assert probe.exit_code == 0, probe.output
    assert json.loads(probe.output)["ok"] is True

    facts = _cli(root, "spaces", "add", "Facts", "--provider", "facts", "--config", "min_trust=0.2")
    assert facts.exit_code == 0, facts.output
    refused = _cli(root, "spaces", "add", "Bad", "--provider", "facts", "--config", "min_trust=7")
    assert isinstance(refused.exception, InvalidInputError)
    assert "min_trust" in str(refused.exception)

    unconfirmed = _cli(root, "spaces", "disconnect", "team")
    assert isinstance(unconfirmed.exception, InvalidInputError)
    assert unconfirmed.exception.code == "confirm-mismatch"
    gone = _cli(root, "spaces", "disconnect", "team", "--confirm", "team")
    assert gone.exit_code == 0, gone.output
    assert "was not touched" in gone.output

    native = _cli(root, "spaces", "create", "Scratch", "--id", "scratch")
    assert native.exit_code == 0
    assert _cli(root, "spaces", "remember", "Temp.", "--space", "scratch").exit_code == 0
    native_disconnect = _cli(root, "spaces", "disconnect", "scratch", "--confirm", "scratch")
    assert isinstance(native_disconnect.exception, InvalidInputError)
    removed = _cli(root, "spaces", "remove", "scratch", "--confirm", "scratch")
    assert removed.exit_code == 0, removed.output
    left = json.loads(_cli(root, "spaces", "list", "--json").output)
    assert [s["provider_id"] for s in left] == ["facts"]
