"""Provider secrets live in the database, sealed with ``secret_key`` (issue 30, item 4).

Two hosts with their own roots on one database (a SQLite file, a PostgreSQL schema) stand for
two replicas: a keyed ``http`` space created through one is searched through the other against
the reference memory service (a real server on a free port). The raw rows hold no plain text
under a key; a rotation re-encrypts them and the old key then opens nothing; a missing or wrong
key is a typed error naming the fix, and a recall answers with a hint instead of failing; an
old ``state/space-secrets.json`` is adopted into the table and deleted.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from support.http_memory_service import serve
from typer.testing import CliRunner

from langgraph_mnemon import Mnemon
from langgraph_mnemon.cli import app as cli_app
from langgraph_mnemon.errors import InvalidInputError, SecretKeyError
from langgraph_mnemon.storage.secret_box import SecretBox

KEY = "correct horse battery staple 7f"
NEW_KEY = "the key after the rotation 3c9"
TOKEN = "svc-bearer-token-9d41e2"
FACT = "On-call rotates every Monday at nine."


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The reference ``mnemon-memory/1`` service, requiring ``TOKEN``."""
    with serve(tmp_path_factory.mktemp("service") / "memory.db", token=TOKEN) as url:
        yield url


def _open(root: Path, url: str | None, **settings: Any) -> Mnemon:
    settings.setdefault("chroma", {"enabled": False})
    settings.setdefault("embedding", {"enabled": False})
    settings.setdefault("http", {"allowed_hosts": ["127.0.0.1"], "retries": 0})
    if url is not None:
        settings["database_url"] = url
    return Mnemon.open(root, **settings)


def _keyed_space(mem: Mnemon, service: str) -> str:
    config = {"endpoint": service, "namespace": f"t-{uuid.uuid4().hex[:12]}"}  # one service
    receipt = mem.spaces.create_space(
        "Team", provider_id="http", config=config, secrets={"api_key": TOKEN}
    )
    assert receipt.space is not None
    assert mem.spaces.remember(FACT, space_id=receipt.space.id).committed
    return receipt.space.id


def _found(mem: Mnemon, space_id: str) -> tuple[list[str], str | None]:
    result = mem.spaces.search("on-call monday", space_ids=[space_id])
    return [r.content for r in result.results], result.sources[0].hint


def _rows(url: str) -> list[Any]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.exec_driver_sql("SELECT * FROM mnemon_space_secrets").mappings())
    finally:
        engine.dispose()


def test_secrets_written_by_one_host_are_used_by_another_and_sealed_at_rest(
    database_url: str, tmp_path: Path, service: str
) -> None:
    with (
        _open(tmp_path / "a", database_url, secret_key=KEY) as first,
        _open(tmp_path / "b", database_url, secret_key=KEY) as second,
    ):
        space_id = _keyed_space(first, service)
        assert _found(second, space_id)[0] == [FACT]
        record = second.spaces.get_space(space_id)
        assert record.secrets_configured == ["api_key"]
        shown = [
            record.model_dump_json(),
            json.dumps([s.model_dump(mode="json") for s in second.spaces.list_spaces()]),
            second.spaces.search("on-call").model_dump_json(),
            second.status().model_dump_json(),
        ]
        assert not [text for text in shown if TOKEN in text]
        for root in (tmp_path / "a", tmp_path / "b"):
            assert not (root / "state" / "space-secrets.json").exists()
    [row] = _rows(database_url)
    assert (row["space_id"], row["scheme"]) == (space_id, "aes-256-gcm")
    assert row["key_id"] == SecretBox(KEY).key_id
    assert TOKEN not in row["payload"]
    assert KEY not in str(dict(row))
    if database_url.startswith("sqlite"):  # not in any byte of the file (nor its log)
        db_file = Path(database_url.removeprefix("sqlite:///"))
        for path in (db_file, Path(f"{db_file}-wal")):
            if path.exists():
                assert TOKEN.encode() not in path.read_bytes()


def test_rotation_re_encrypts_every_row_and_the_old_key_no_longer_opens_them(
    database_url: str, tmp_path: Path, service: str
) -> None:
    with _open(tmp_path / "a", database_url) as plain:  # no key yet: plain text
        first = _keyed_space(plain, service)
        assert _rows(database_url)[0]["scheme"] == "plain"
    with _open(tmp_path / "a", database_url, secret_key=KEY) as old:
        second = _keyed_space(old, service)
        report = old.spaces.secrets_report()
        assert (report.rows, report.plain, report.encrypted_current) == (2, 1, 1)
    rotating = {"secret_key": NEW_KEY, "secret_key_previous": KEY}
    with _open(tmp_path / "b", database_url, **rotating) as new:
        assert _found(new, first)[0] == [FACT]  # read with the previous key meanwhile
        assert new.spaces.secrets_report().encrypted_other == 1
        rotated = new.spaces.rotate_secrets()
        assert (rotated.rows, rotated.rotated, rotated.encrypted_current) == (2, 2, 2)
        assert new.spaces.rotate_secrets().rotated == 0  # nothing left to do
    assert {r["key_id"] for r in _rows(database_url)} == {SecretBox(NEW_KEY).key_id}
    with _open(tmp_path / "c", database_url, secret_key=KEY) as stale:
        results, hint = _found(stale, second)
        assert results == []
        assert "another key" in (hint or "")
        assert "MNEMON_SECRET_KEY" in (hint or "")
        with pytest.raises(SecretKeyError) as refused:
            stale.spaces.remember("Another fact.", space_id=second)
        assert refused.value.code == "secret-key"
        assert TOKEN not in str(refused.value)
    with _open(tmp_path / "d", database_url, secret_key=NEW_KEY) as current:
        assert _found(current, second)[0] == [FACT]


def test_a_missing_or_wrong_key_is_a_typed_error_never_a_failed_run(
    tmp_path: Path, service: str
) -> None:
    url = f"sqlite:///{tmp_path}/shared.db"
    with _open(tmp_path / "a", url, secret_key=KEY) as keyed:
        space_id = _keyed_space(keyed, service)
    for settings, says in (({}, "no secret key is configured"), ({"secret_key": "x"}, "another")):
        with _open(tmp_path / "b", url, **settings) as other:
            results, hint = _found(other, space_id)  # recall: a hint for that space
            assert results == []
            assert says in (hint or "")
            assert other.spaces.get_space(space_id).secrets_configured == ["api_key"]
            assert not other.spaces.test_space(space_id).ok
            with pytest.raises(SecretKeyError, match="MNEMON_SECRET_KEY"):
                other.spaces.remember("More.", space_id=space_id)
            with pytest.raises(SecretKeyError, match=r"no secret key to rotate to|another"):
                other.spaces.rotate_secrets()
    # A sealed value moved into another space's row does not open (bound to its row).
    with _open(tmp_path / "a", url, secret_key=KEY) as keyed:
        other_id = _keyed_space(keyed, service)
        with keyed.database.write() as conn:
            payload = conn.exec_driver_sql(
                "SELECT payload FROM mnemon_space_secrets WHERE space_id = ?", (space_id,)
            ).scalar()
            conn.exec_driver_sql(
                "UPDATE mnemon_space_secrets SET payload = ? WHERE space_id = ?",
                (payload, other_id),
            )
        assert "do not decrypt" in (_found(keyed, other_id)[1] or "")
    with pytest.raises(InvalidInputError, match="secret_key"):
        Mnemon.open(tmp_path / "e", secret_key="   ")


def _to_the_old_layout(mem: Mnemon, space_id: str) -> None:
    """The database as a release before the secrets table left it; the secrets in the file."""
    with mem.database.write() as conn:
        conn.exec_driver_sql("DROP TABLE mnemon_space_secrets")
        conn.exec_driver_sql("DELETE FROM mnemon_schema_version WHERE component = 'space_secrets'")
    state = mem.root / "state"
    state.mkdir(exist_ok=True)
    (state / "space-secrets.json").write_text(json.dumps({space_id: {"api_key": TOKEN}}))
    os.chmod(state / "space-secrets.json", 0o600)


def test_an_old_secrets_file_is_adopted_into_the_database_and_removed(
    database_url: str, tmp_path: Path, service: str
) -> None:
    root = tmp_path / "a"
    with _open(root, database_url) as mem:
        space_id = _keyed_space(mem, service)
        _to_the_old_layout(mem, space_id)
    old_file = root / "state" / "space-secrets.json"
    with _open(root, database_url, write_enabled=False) as reader:  # reads the file, moves none
        assert reader.spaces.get_space(space_id).secrets_configured == ["api_key"]
        assert _found(reader, space_id)[0] == [FACT]
    assert old_file.exists()
    with _open(tmp_path / "b", database_url) as elsewhere:  # another root: not its file
        assert elsewhere.spaces.get_space(space_id).secrets_configured == []
    with _open(root, database_url, secret_key=KEY) as mem:
        assert mem.spaces.get_space(space_id).secrets_configured == ["api_key"]
        assert not old_file.exists()  # adopted and deleted: no plain-text copy on disk
        assert _found(mem, space_id)[0] == [FACT]
    [row] = _rows(database_url)
    assert row["scheme"] == "aes-256-gcm"
    assert TOKEN not in row["payload"]
    with _open(tmp_path / "b", database_url, secret_key=KEY) as other:  # now every host's
        assert _found(other, space_id)[0] == [FACT]


def test_the_secrets_commands(tmp_path: Path, service: str) -> None:
    root = tmp_path / "root"
    with _open(root, None) as mem:
        _keyed_space(mem, service)
    runner = CliRunner()
    env = {"MNEMON_HTTP__ALLOWED_HOSTS": "127.0.0.1", "MNEMON_CHROMA__ENABLED": "false"}
    shown = runner.invoke(cli_app, ["--root", str(root), "secrets", "status"], env=env)
    assert shown.exit_code == 0, shown.output
    assert "1 plain text" in shown.output
    assert "not set" in shown.output
    refused = runner.invoke(cli_app, ["--root", str(root), "secrets", "rotate"], env=env)
    assert refused.exit_code != 0
    env["MNEMON_SECRET_KEY"] = KEY
    done = runner.invoke(cli_app, ["--root", str(root), "secrets", "rotate", "--json"], env=env)
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["rotated"] == 1
    assert TOKEN not in done.output
    assert _rows(f"sqlite:///{root}/mnemon.db")[0]["scheme"] == "aes-256-gcm"
    as_alice = runner.invoke(
        cli_app, ["--root", str(root), "--user", "alice", "secrets", "rotate"], env=env
    )
    assert as_alice.exit_code == 1  # every owner's rows: the host operator's command
    assert "host's own spaces" in " ".join(str(as_alice.exception or as_alice.output).split())
