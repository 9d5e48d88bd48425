"""``store.ttl`` of ``langgraph.json`` reaches the served store (issue 31).

LangGraph server hands a custom store's factory nothing and starts no sweeper for it; the
``store`` section reaches the process as the ``LANGGRAPH_STORE`` environment variable, which
``langgraph_mnemon.server.persistence.store`` reads. Two tests: the factory in process (fast,
on SQLite), and a real ``langgraph dev`` on PostgreSQL driven with ``langgraph_sdk``: a served
graph's put takes ``default_ttl``, the store API's put its own ``ttl``, ``refresh_on_read``
decides what a read refreshes, an expired item is gone at once and the server's sweeper
deletes it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from langgraph_sdk import get_sync_client
from server_support import free_port, stop_group

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.server import persistence
from langgraph_mnemon.server._host import set_shared_host
from langgraph_mnemon.server.launch import langgraph_config, serve_command, server_env, wait_ready
from langgraph_mnemon.storage.db import create_engine

pytestmark = [pytest.mark.timeout(600), pytest.mark.xdist_group("store_ttl_served")]

WRITER = Path(__file__).parent / "support" / "store_ttl_served.py"
# LangGraph server's schema takes whole minutes for the sweep interval.
TTL = {"default_ttl": 10, "refresh_on_read": False, "sweep_interval_minutes": 1}


def _store_section(ttl: Any) -> str:
    return json.dumps({"path": "langgraph_mnemon.server.persistence.store", "ttl": ttl})


def test_the_store_factory_reads_store_ttl_and_runs_the_sweeper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(persistence.STORE_ENV, _store_section(TTL))
    with Mnemon.open(tmp_path / "m", embedding={"enabled": False}) as mem:
        set_shared_host(mem)
        try:

            async def served() -> tuple[Any, bool]:
                async with persistence.store() as store:
                    assert store._facade is mem.store(ttl=TTL)  # what every op goes through
                    await mem.store(ttl=TTL).aput(("ns",), "k", {"v": 1})
                    return store, mem.store(ttl=TTL)._sweeper.running

            store, running = asyncio.run(served())
        finally:
            set_shared_host(None)
        assert store.supports_ttl is True
        assert running is True  # sweep_interval_minutes: the server runs the sweeper
        assert store.ttl_config == {"default_ttl": 10.0, "refresh_on_read": False,
                                    "sweep_interval_minutes": 1.0}  # fmt: skip
        assert not mem.store(ttl=TTL)._sweeper.running  # stopped with the server
        with mem.database.engine.connect() as conn:
            minutes = conn.execute(
                sa.text("SELECT ttl_minutes FROM mnemon_insights WHERE store_key = 'k'")
            ).scalar_one()
        assert minutes == 10  # default_ttl applied to a put without ttl


def test_the_store_factory_reads_store_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    section = {"path": "langgraph_mnemon.server.persistence.store", "index": {"fields": ["text"]}}
    monkeypatch.setenv(persistence.STORE_ENV, json.dumps(section))
    assert persistence.served_index() == {"fields": ["text"]}
    with Mnemon.open(tmp_path / "m", embedding={"enabled": False}) as mem:
        set_shared_host(mem)
        try:

            async def served() -> tuple[list[Any], list[Any]]:
                async with persistence.store() as served_store:
                    store = served_store._facade  # what every op goes through
                    assert store.index.fields == ("text",)
                    await store.aput(("ns",), "k", {"text": "lighthouse keeper", "tag": "zebra"})
                    hit = await store.asearch(("ns",), query="lighthouse")
                    miss = await store.asearch(("ns",), query="zebra")
                    return hit, miss

            hit, miss = asyncio.run(served())
        finally:
            set_shared_host(None)
    # Only the text field is indexed: the tag's word finds the item no better than nothing.
    assert [(i.key, i.score > 0) for i in hit] == [("k", True)]
    assert [(i.key, i.score) for i in miss] == [("k", 0.0)]


def test_a_bad_store_section_is_refused_with_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(persistence.STORE_ENV, "not json")
    with pytest.raises(InvalidInputError, match=r"JSON of langgraph\.json's store section"):
        persistence.served_ttl()
    monkeypatch.setenv(persistence.STORE_ENV, _store_section({"default_ttl": 5}))
    assert persistence.served_ttl() == {"default_ttl": 5}
    monkeypatch.delenv(persistence.STORE_ENV)
    assert persistence.served_ttl() is None


# --------------------------------------------------------------------------------------------
# a real `langgraph dev`


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: str
) -> Iterator[tuple[str, str]]:
    """``langgraph dev`` over a langgraph.json with ``store.ttl``, on a fresh PostgreSQL
    schema; ``(server url, database url)``."""
    from langgraph_mnemon.testing.postgres import fresh_schema

    tmp = tmp_path_factory.mktemp("ttl-served")
    config = langgraph_config()
    config["graphs"]["ttl_writer"] = f"{WRITER}:graph"
    config["store"]["ttl"] = TTL
    workdir = tmp / "server"
    workdir.mkdir()
    (workdir / "langgraph.json").write_text(json.dumps(config), encoding="utf-8")
    port = free_port()
    with fresh_schema(postgres_server) as url:
        env = server_env(tmp / "root")
        env.update({"MNEMON_DATABASE_URL": url, "MNEMON_CHROMA__ENABLED": "false"})
        log = (tmp / "server.log").open("wb")
        process = subprocess.Popen(
            serve_command(workdir / "langgraph.json", port=port), cwd=workdir, env=env,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            try:
                wait_ready(f"http://127.0.0.1:{port}", timeout=240, process=process)
            except (TimeoutError, RuntimeError) as exc:
                text = (tmp / "server.log").read_text(errors="replace")[-4000:]
                raise AssertionError(f"{exc}\n--- server log ---\n{text}") from None
            yield f"http://127.0.0.1:{port}", url
        finally:
            stop_group(process, timeout=20)
            log.close()


def _row(url: str, key: str) -> dict[str, Any]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            row = conn.execute(
                sa.text(
                    "SELECT expires_at, ttl_minutes, deleted_at FROM mnemon_insights "
                    "WHERE store_key = :k ORDER BY seq DESC LIMIT 1"
                ),
                {"k": key},
            ).one()
        return dict(row._mapping)
    finally:
        engine.dispose()


def _expire_at(url: str, key: str, when: float) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "UPDATE mnemon_insights SET expires_at = :t "
                    "WHERE store_key = :k AND deleted_at IS NULL"
                ),
                {"t": when, "k": key},
            )
    finally:
        engine.dispose()


def test_store_ttl_in_langgraph_json_governs_the_served_store(served: tuple[str, str]) -> None:
    server, url = served
    client = get_sync_client(url=server)
    thread = client.threads.create()
    client.runs.wait(thread["thread_id"], "ttl_writer", input={"key": "g", "text": "graph put"})
    assert _row(url, "g")["ttl_minutes"] == 10  # default_ttl: the graph's put named none

    client.store.put_item(["served"], "api", {"text": "api put"}, ttl=5)
    assert _row(url, "api")["ttl_minutes"] == 5

    soon = time.time() + 60
    _expire_at(url, "api", soon)
    assert client.store.get_item(["served"], "api")["value"] == {"text": "api put"}
    assert _row(url, "api")["expires_at"] == pytest.approx(soon)  # refresh_on_read: false
    client.store.get_item(["served"], "api", refresh_ttl=True)
    assert _row(url, "api")["expires_at"] > time.time() + 200

    _expire_at(url, "g", time.time() - 1)
    assert client.store.get_item(["served"], "g") is None  # gone at once
    listed = client.store.search_items(["served"])["items"]
    assert [i["key"] for i in listed] == ["api"]
    deadline = time.monotonic() + 180  # the server's sweeper runs every minute
    while _row(url, "g")["deleted_at"] is None and time.monotonic() < deadline:
        time.sleep(0.3)
    assert _row(url, "g")["deleted_at"] is not None
    assert _row(url, "api")["deleted_at"] is None
