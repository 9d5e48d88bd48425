"""What ``MnemosSaver`` and ``AsyncMnemosSaver`` share: addressing, encoding, decoding.

Neither I/O nor SQL happens here; :mod:`._ops` holds the transaction bodies and :mod:`._sql`
the statements.
"""

from __future__ import annotations

import random
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph_mnemon.checkpointers._encoding import (
    ChannelCodec,
    ItemCache,
    checkpoint_skeleton,
    metadata_json,
    new_digest_key,
    uses_delta_channels,
)
from langgraph_mnemon.checkpointers._ops import ListQuery, PutRequest, RawTuple, json_equal
from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.contracts import check_text, shown
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.mnemos import store, summary_from_state
from langgraph_mnemon.storage.db import sqlite_write_gate

__all__ = ["LIST_PAGE_SIZE", "MnemosSaverBase", "sqlite_write_lock"]

LIST_PAGE_SIZE = 64
SINGLE_STATEMENT_WRITES = 1000
"""Most writes a PostgreSQL put_writes sends as one autocommit statement (bind limit)."""
_MAX_ID_CHARS = 1024
_WRITE_LOCKS: weakref.WeakKeyDictionary[Any, threading.Lock] = weakref.WeakKeyDictionary()
_WRITE_LOCKS_GUARD = threading.Lock()


def sqlite_write_lock(engine: Any) -> AbstractContextManager[Any]:
    """The in-process lock the savers of one SQLite engine take around a write transaction.

    LangGraph saves a step's writes and its checkpoint from background threads at the same
    time; two ``BEGIN IMMEDIATE`` on one file make the loser sleep in SQLite's busy handler
    (1 ms, 2 ms, 5 ms...), while a Python lock hands over at once. For a SQLite file this is
    the file's write gate (:func:`langgraph_mnemon.storage.db.sqlite_write_gate`), which every
    writer of the process on that file passes (re-entrant, so ``Database.write`` inside it
    passes too); a memory database gets a lock of its engine. Other processes still queue on
    SQLite's lock.
    """
    gate = sqlite_write_gate(engine)
    if gate is not None:
        return gate
    with _WRITE_LOCKS_GUARD:
        lock = _WRITE_LOCKS.get(engine)
        if lock is None:
            lock = _WRITE_LOCKS[engine] = threading.Lock()
        return lock


def _text(value: Any, field: str) -> str:
    if isinstance(value, float) or (
        isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**_MAX_ID_CHARS
    ):
        value = str(value)
    if not isinstance(value, str) or not value or len(value) > _MAX_ID_CHARS:
        raise InvalidInputError(
            f"{field} must be a non-empty string of at most {_MAX_ID_CHARS} characters "
            f"(got {shown(value)})"
        )
    # Ids are stored as text: NUL and lone surrogates are refused on SQLite and PostgreSQL alike.
    return check_text(value, field)


class MnemosSaverBase(BaseCheckpointSaver[str]):
    """Shared behaviour of the sync and async Mnemos checkpointers (not used directly)."""

    def __init__(
        self,
        *,
        serde: SerializerProtocol | None = None,
        config: MnemosConfig | None = None,
    ) -> None:
        super().__init__(serde=serde)
        if config is not None and not isinstance(config, MnemosConfig):
            raise InvalidInputError(f"config must be a MnemosConfig (got {type(config).__name__})")
        self.mnemos_config = config or MnemosConfig()
        self._digest_key = new_digest_key()
        self._codec_cache: ChannelCodec | None = None
        self._items = ItemCache()

    # ------------------------------------------------------------------ helpers

    @property
    def _codec(self) -> ChannelCodec:
        codec = self._codec_cache
        if codec is None or codec.serde is not self.serde:
            codec = ChannelCodec(self.serde, self._digest_key)
            self._codec_cache = codec
        return codec

    def get_next_version(self, current: str | None, channel: None) -> str:
        """String versions ``"<32-digit counter>.<16-digit random>"``, increasing."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    @staticmethod
    def _address(config: RunnableConfig | None) -> tuple[str, str, str | None]:
        if not isinstance(config, Mapping):
            raise InvalidInputError("config must be a RunnableConfig dict with 'configurable'")
        configurable = config.get("configurable") or {}
        if "thread_id" not in configurable:
            raise InvalidInputError(
                "config['configurable']['thread_id'] is required to address a checkpoint"
            )
        thread_id = _text(configurable["thread_id"], "thread_id")
        ns = configurable.get("checkpoint_ns") or ""
        if not isinstance(ns, str):
            raise InvalidInputError("checkpoint_ns must be a string")
        ns = check_text(ns, "checkpoint_ns")
        checkpoint_id = configurable.get("checkpoint_id")
        if checkpoint_id is not None:
            checkpoint_id = _text(checkpoint_id, "checkpoint_id")
        return thread_id, ns, checkpoint_id

    def _task_id(self, config: RunnableConfig, thread_id: str) -> str:
        value = (config.get("configurable") or {}).get(self.mnemos_config.task_id_key)
        if value is None or value == "":
            return thread_id
        return _text(value, self.mnemos_config.task_id_key)

    def _put_request(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> tuple[PutRequest, RunnableConfig]:
        thread_id, ns, parent_id = self._address(config)
        if not isinstance(checkpoint, Mapping) or "id" not in checkpoint:
            raise InvalidInputError("checkpoint must be a Checkpoint dict with an 'id'")
        checkpoint_id = _text(checkpoint["id"], "checkpoint['id']")
        values = checkpoint.get("channel_values") or {}
        versions = new_versions or {}
        if not isinstance(versions, Mapping):
            raise InvalidInputError("new_versions must be a mapping of channel -> version")
        stored_metadata = metadata_json(get_serializable_checkpoint_metadata(config, metadata))
        codec = self._codec
        blobs = [
            codec.encode(channel, version, values, codec.known(thread_id, ns, channel))
            for channel, version in versions.items()
        ]
        task_id = self._task_id(config, thread_id)
        moment = time.time()
        node = self._checkpoint_node(
            values, stored_metadata, task_id, (thread_id, ns, checkpoint_id), moment
        )
        run_id = stored_metadata.get("run_id")
        request = PutRequest(
            thread_id=thread_id,
            checkpoint_ns=ns,
            checkpoint_id=checkpoint_id,
            parent_id=parent_id,
            task_id=task_id,
            run_id=str(run_id) if run_id is not None else None,
            uses_delta=uses_delta_channels(stored_metadata, values.values()),
            skeleton=checkpoint_skeleton(checkpoint),
            metadata=stored_metadata,
            blobs=blobs,
            node=node,
            created_at=moment,
        )
        next_config: RunnableConfig = {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint_id,
            }
        }
        return request, next_config

    def _checkpoint_node(
        self,
        values: Mapping[str, Any],
        stored_metadata: Mapping[str, Any],
        task_id: str,
        address: tuple[str, str, str],
        moment: float,
    ) -> dict[str, Any]:
        """The CheckpointNode row of one put (its summary read from the Mnemos state key)."""
        thread_id, ns, checkpoint_id = address
        state_key = self.mnemos_config.state_key
        summary = (
            summary_from_state(values[state_key], state_key=state_key)
            if state_key in values
            else None
        )
        step = stored_metadata.get("step")
        return store.checkpoint_node_values(
            task_id=task_id,
            source="langgraph",
            created_at=moment,
            summary=summary,
            thread_id=thread_id,
            checkpoint_ns=ns,
            checkpoint_id=checkpoint_id,
            step=step if isinstance(step, int) and not isinstance(step, bool) else None,
        )

    def _stored(self, request: PutRequest) -> None:
        """After a committed put: remember its lists' digests for the next put."""
        codec = self._codec
        for blob in request.blobs:
            if blob.items:
                codec.remember(request.thread_id, request.checkpoint_ns, blob)
        self._items.add(request.inserted)

    def _write_rows(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> tuple[list[tuple[Any, ...]], bool]:
        thread_id, ns, checkpoint_id = self._address(config)
        if checkpoint_id is None:
            raise InvalidInputError(
                "put_writes needs config['configurable']['checkpoint_id'] (the checkpoint the "
                "writes belong to)"
            )
        task = _text(task_id, "task_id")
        if not isinstance(task_path, str):
            raise InvalidInputError("task_path must be a string")
        codec = self._codec
        rows = []
        for idx, write in enumerate(writes):
            if not isinstance(write, (tuple, list)) or len(write) != 2:
                raise InvalidInputError("writes must be (channel, value) pairs")
            channel, value = write
            typ, data = codec.dumps(value)
            rows.append(
                (
                    thread_id,
                    ns,
                    checkpoint_id,
                    task,
                    task_path,
                    WRITES_IDX_MAP.get(channel, idx),
                    _text(channel, "channel"),
                    typ,
                    data,
                )
            )
        replace = bool(rows) and all(w[0] in WRITES_IDX_MAP for w in writes)
        return rows, replace

    def _tuple(self, raw: RawTuple, *, keep: bool = False) -> CheckpointTuple:
        """Decode a stored checkpoint; ``keep`` (``get_tuple``) lets the codec remember its
        lists, since the graph's next put usually stores them again, mostly unchanged."""
        codec = self._codec
        skeleton = dict(raw.skeleton)
        values: dict[str, Any] = {}
        address = (raw.thread_id, raw.checkpoint_ns) if keep else None
        for channel in skeleton.get("channel_versions") or {}:
            stored = raw.blobs.get(channel)
            if stored is None or stored[0] == "empty":
                continue
            values[channel] = codec.decode(channel, stored[0], stored[1], raw.items, address)
        skeleton["channel_values"] = values
        writes = sorted(raw.writes, key=lambda w: writes_sort_key(w[1], w[0], w[2]))
        pending = [(w[0], w[3], codec.loads(w[4], w[5])) for w in writes]
        config: RunnableConfig = {
            "configurable": {
                "thread_id": raw.thread_id,
                "checkpoint_ns": raw.checkpoint_ns,
                "checkpoint_id": raw.checkpoint_id,
            }
        }
        parent: RunnableConfig | None = None
        if raw.parent_id:
            parent = {
                "configurable": {
                    "thread_id": raw.thread_id,
                    "checkpoint_ns": raw.checkpoint_ns,
                    "checkpoint_id": raw.parent_id,
                }
            }
        return CheckpointTuple(
            config=config,
            checkpoint=skeleton,  # type: ignore[arg-type]
            metadata=raw.metadata,  # type: ignore[arg-type]
            parent_config=parent,
            pending_writes=pending,
        )

    def _list_query(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> ListQuery:
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise InvalidInputError("limit must be a non-negative integer or None")
        if filter is not None and not isinstance(filter, Mapping):
            raise InvalidInputError("filter must be a dict of metadata key -> value")
        for key in filter or {}:
            if not isinstance(key, str) or not key:
                raise InvalidInputError("filter keys must be non-empty strings")
        thread_id = ns = checkpoint_id = None
        if config is not None:
            configurable = config.get("configurable") or {}
            if configurable.get("thread_id") is not None:
                thread_id = _text(configurable["thread_id"], "thread_id")
            raw_ns = configurable.get("checkpoint_ns")
            if raw_ns is not None:
                if not isinstance(raw_ns, str):
                    raise InvalidInputError("checkpoint_ns must be a string")
                ns = raw_ns
            checkpoint_id = get_checkpoint_id(config)
        before_id = get_checkpoint_id(before) if before is not None else None
        return ListQuery(
            thread_id=thread_id,
            checkpoint_ns=ns,
            checkpoint_id=checkpoint_id,
            metadata=dict(filter) if filter else None,
            before=before_id,
        )

    @staticmethod
    def _matches(raw: RawTuple, query: ListQuery) -> bool:
        if not query.metadata:
            return True
        return all(
            key in raw.metadata and json_equal(raw.metadata[key], value)
            for key, value in query.metadata.items()
        )

    @staticmethod
    def _thread(value: Any, field: str = "thread_id") -> str:
        return _text(value, field)

    @staticmethod
    def _prune_args(thread_ids: Sequence[str], strategy: str) -> tuple[list[str], str]:
        if isinstance(thread_ids, str) or not isinstance(thread_ids, Sequence):
            raise InvalidInputError("thread_ids must be a list of thread ids")
        if not isinstance(strategy, str):
            raise InvalidInputError("strategy must be 'keep_latest' or 'delete'")
        return [_text(t, "thread_id") for t in thread_ids], strategy

    @staticmethod
    def _run_ids(run_ids: Sequence[str]) -> list[str]:
        if isinstance(run_ids, str) or not isinstance(run_ids, Sequence):
            raise InvalidInputError("run_ids must be a list of run ids")
        return [_text(r, "run_id") for r in run_ids]
