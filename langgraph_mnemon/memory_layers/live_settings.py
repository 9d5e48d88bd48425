"""Live settings: the run-time switches, kept in the database so that every host applies them.

The switches that change at run time (:data:`LIVE_KEYS`: ``recall_mode``, ``writeback_mode``,
``routing_guidance``, ``idle_review.enabled`` and each layer's ``enabled`` and participation
channels) are stored as one overlay in the ``mnemon_settings`` table, with a revision. A change
through any host (the control plane's ``PATCH /settings``, ``mem.live_settings.change``)
commits the merged overlay with the next revision and applies it at once; every other host on
that database (another replica, another process on the same SQLite file) applies it at its
next operation at most :data:`REFRESH_SECONDS` later, and so does a host opened later (the
overlay survives restarts).

Precedence: the start-up configuration (keyword arguments of ``Mnemon.open`` /
``MnemonConfig``, then ``MNEMON_*`` environment variables, then defaults) gives every key its
value; the stored overlay overrides it for the keys it names, on every host, from the moment it
is stored (or the host opens) until :meth:`LiveSettings.reset` drops the key and the start-up
value applies again. A direct assignment on ``mem.config`` changes one process only, until that
key is stored with another value. Every other setting (``write_enabled`` included) is start-up
only.

How a host notices a change: the kernel calls :meth:`LiveSettings.refresh` before it decides
anything; at most every :data:`REFRESH_SECONDS` that reads one row (revision and overlay) in
one statement, and applies the overlay when the revision moved. On an event loop's thread the
read runs on a short-lived worker thread (no blocking I/O on the loop); the operation at hand
then uses the values it had. A database that cannot be read leaves the values as they are
(logged): a run never fails because of it.

Example:
    >>> mem.live_settings.change({"layers.runtime.participation.write": "manual"})
    StoredSettings(revision=1, values={'layers.runtime.participation.write': 'manual'}, ...)
    >>> other.kernel.mode("runtime", "write")     # another host on the same database
    'manual'
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, ValidationError

from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.errors import InvalidInputError, ReadOnlyError
from langgraph_mnemon.storage.db import (
    Database,
    Migration,
    advisory_lock,
    create_tables,
    parse_database_url,
    sqlite_file,
    upsert,
)

__all__ = [
    "LIVE_KEYS",
    "LIVE_MIGRATIONS",
    "REFRESH_SECONDS",
    "SETTINGS",
    "LiveSettings",
    "StoredSettings",
]

logger = logging.getLogger(__name__)

_LAYERS = ("runtime", "documents", "memory_spaces")
_CHANNELS = ("recall", "write", "projection", "maintenance")
LIVE_KEYS: tuple[str, ...] = (
    "recall_mode",
    "writeback_mode",
    "routing_guidance",
    "idle_review.enabled",
    *(f"layers.{layer}.enabled" for layer in _LAYERS),
    *(f"layers.{layer}.participation.{channel}" for layer in _LAYERS for channel in _CHANNELS),
)
"""The settings that change at run time, as dotted configuration paths."""

REFRESH_SECONDS = 1.0
"""How often at most a host reads the stored revision (a change is in force everywhere within
about this long after the next operation starts)."""

_METADATA = sa.MetaData()
SETTINGS = sa.Table(
    "mnemon_settings",
    _METADATA,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("overlay", sa.JSON, nullable=False),  # {dotted key: value} of LIVE_KEYS
    sa.Column("revision", sa.Integer, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
)
"""Stored settings: one row per overlay (``live``: the run-time switches)."""

LIVE_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "live_settings",
        1,
        "Live settings: the run-time switches every host applies",
        lambda conn: create_tables(conn, [SETTINGS]),
    ),
)
_ROW = "live"
_UNSET = object()
_BACKOFF_SECONDS = 5.0  # after a failed read (a database that is down is not asked every second)
_SELECT = sa.select(SETTINGS.c.revision, SETTINGS.c.overlay, SETTINGS.c.updated_at).where(
    SETTINGS.c.name == _ROW
)


class StoredSettings(BaseModel):
    """The stored overlay: its ``revision`` (0 before the first change), the ``values`` it
    sets (dotted keys of :data:`LIVE_KEYS`) and when it last changed."""

    model_config = ConfigDict(frozen=True)

    revision: int
    values: dict[str, Any]
    updated_at: float | None = None


def _get(config: BaseModel, key: str) -> Any:
    value: Any = config
    for part in key.split("."):
        value = getattr(value, part)
    return value


def _assign(config: BaseModel, key: str, value: Any) -> None:
    """``config.<key> = value``, validated by the configuration model."""
    *path, last = key.split(".")
    target: Any = config
    for part in path:
        target = getattr(target, part)
    setattr(target, last, value)


def _on_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class LiveSettings:
    """The stored run-time switches of one host: reads, changes and applies them.

    Args:
        config: The host's live configuration (changed in place; the kernel reads it).
        database: Opens the host's database (called for a change, or for a read once the
            database exists: a read never creates a file).
        on_change: Called after new values were applied (the host updates its copies).
        interval: Seconds between two reads of the stored revision.
        clock: Seconds since the epoch (the ``updated_at`` of a change).
    """

    def __init__(
        self,
        config: MnemonConfig,
        database: Callable[[], Database],
        *,
        on_change: Callable[[], object] = lambda: None,
        interval: float = REFRESH_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.interval = float(interval)
        self._database = database
        self._on_change = on_change
        self._clock = clock
        self._base = {key: _get(config, key) for key in LIVE_KEYS}  # the start-up values
        self._overlay: dict[str, Any] = {}
        self._revision = 0
        self._updated_at: float | None = None
        self._next = 0.0
        self._lock = threading.Lock()
        self._busy = threading.Lock()
        self._last_error: str | None = None

    def __repr__(self) -> str:
        return f"LiveSettings(revision={self._revision}, values={sorted(self._overlay)})"

    @property
    def revision(self) -> int:
        """The revision this host applied last (0: no stored change seen)."""
        return self._revision

    # ------------------------------------------------------------------ reading

    def refresh(self, *, force: bool = False) -> bool:
        """Apply the stored overlay if its revision moved; at most every ``interval`` seconds
        unless ``force``. Never raises: a failed read keeps the current values (logged).

        Returns:
            Whether new values were applied by this call (always False on an event loop's
            thread: the read then runs on a worker thread).
        """
        now = time.monotonic()
        if not force and now < self._next:
            return False
        self._next = now + self.interval
        if _on_loop():
            if self._busy.acquire(blocking=False):
                threading.Thread(
                    target=self._check_in_background, name="mnemon-live-settings", daemon=True
                ).start()
            return False
        return self._check_quietly()

    def _check_in_background(self) -> None:
        try:
            self._check_quietly()
        finally:
            self._busy.release()

    def _check_quietly(self) -> bool:
        try:
            return self._check()
        except Exception as exc:  # memory never ends a run: keep the values, say why once
            self._next = time.monotonic() + _BACKOFF_SECONDS  # a database that is down
            message = f"{type(exc).__name__}: {exc}"
            if message != self._last_error:
                logger.warning("live settings not refreshed (values kept): %s", message)
            self._last_error = message
            return False

    def _present(self) -> Database | None:
        """The database when it exists (a missing SQLite file is not created by a read)."""
        path = sqlite_file(parse_database_url(self.config.resolved_database_url))
        if path is not None and not path.exists():
            return None
        return self._database()

    def _check(self) -> bool:
        db = self._present()
        if db is None or not db.ready_for_read(LIVE_MIGRATIONS):
            return False
        row = db.run_single(lambda conn: conn.execute(_SELECT).first())
        if row is None:
            return self._apply({}, 0, None) if self._overlay else False
        return self._apply(dict(row.overlay or {}), int(row.revision), float(row.updated_at))

    def stored(self) -> StoredSettings:
        """The stored overlay now (read at once, and applied if it moved)."""
        self.refresh(force=True)
        return StoredSettings(
            revision=self._revision, values=dict(self._overlay), updated_at=self._updated_at
        )

    # ------------------------------------------------------------------ changing

    def check(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` checked: keys of :data:`LIVE_KEYS`, values the configuration accepts.

        Raises:
            InvalidInputError: an unknown or start-up-only key, or a value out of its range.
        """
        if not isinstance(values, Mapping) or not values:
            raise InvalidInputError(
                "name at least one live setting, e.g. {'recall_mode': 'off'}; live settings: "
                + ", ".join(LIVE_KEYS)
            )
        probe = self.config.model_copy(deep=True)
        checked: dict[str, Any] = {}
        for key, value in values.items():
            if key not in LIVE_KEYS:
                raise InvalidInputError(
                    f"{key!r} is not a live setting (start-up settings come from MNEMON_* and a "
                    f"restart); live settings: {', '.join(LIVE_KEYS)}"
                )
            try:
                _assign(probe, key, value)
            except ValidationError as exc:
                reason = exc.errors()[0]["msg"]
                raise InvalidInputError(f"{key} = {value!r}: {reason}") from None
            checked[key] = _get(probe, key)
        return checked

    def change(self, values: Mapping[str, Any]) -> StoredSettings:
        """Store ``values`` (merged into the stored overlay, next revision) and apply them.

        Every host on the database applies them within :data:`REFRESH_SECONDS` of its next
        operation; they outlive restarts until :meth:`reset`.

        Args:
            values: Dotted keys of :data:`LIVE_KEYS` and their new values.

        Returns:
            The stored overlay after the change.

        Raises:
            InvalidInputError: an unknown key or a bad value (nothing is stored).
            ReadOnlyError: writes are switched off (``write_enabled=false``).
            StorageError: the database refused the change.
        """
        checked = self.check(values)
        return self._store(lambda old: {**old, **checked})

    def reset(self, keys: Iterable[str] | None = None) -> StoredSettings:
        """Drop stored keys (all of them by default): their start-up values apply again, on
        every host.

        Raises:
            InvalidInputError: a key that is not a live setting.
            ReadOnlyError: writes are switched off.
        """
        names = None if keys is None else list(keys)
        for key in names or ():
            if key not in LIVE_KEYS:
                raise InvalidInputError(
                    f"{key!r} is not a live setting; live settings: {', '.join(LIVE_KEYS)}"
                )
        if names is None:
            return self._store(lambda old: {})
        return self._store(lambda old: {k: v for k, v in old.items() if k not in names})

    def _store(self, merge: Callable[[dict[str, Any]], dict[str, Any]]) -> StoredSettings:
        if not self.config.write_enabled:
            raise ReadOnlyError.writes_disabled("the live settings")
        db = self._database()
        db.setup(LIVE_MIGRATIONS)
        now = self._clock()
        with db.write() as conn:
            advisory_lock(conn, "mnemon-settings", _ROW)
            row = conn.execute(_SELECT).first()
            overlay = merge(dict(row.overlay or {}) if row else {})
            revision = (int(row.revision) if row else 0) + 1
            columns = ["overlay", "revision", "updated_at"]
            values = {"name": _ROW, "overlay": overlay, "revision": revision, "updated_at": now}
            conn.execute(upsert(conn.dialect.name, SETTINGS, ["name"], columns), values)
        self._apply(overlay, revision, now)
        return StoredSettings(revision=revision, values=dict(overlay), updated_at=now)

    # ------------------------------------------------------------------ applying

    def _apply(self, overlay: dict[str, Any], revision: int, updated_at: float | None) -> bool:
        """Put ``overlay`` in force: the keys whose stored value changed get it, keys it no
        longer names get their start-up values back, the others are left as they are (a
        direct assignment on the config holds until its key is stored again). An older
        revision than the one applied is ignored (a slow read lost a race)."""
        with self._lock:
            if revision and revision <= self._revision:
                return False
            for key in self._overlay.keys() - overlay.keys():
                _assign(self.config, key, self._base[key])
            for key, value in overlay.items():
                if key not in LIVE_KEYS or self._overlay.get(key, _UNSET) == value:
                    continue  # unknown (a newer release wrote it), or unchanged
                try:
                    _assign(self.config, key, value)
                except ValidationError:
                    logger.warning("stored live setting %s = %r refused; kept", key, value)
            self._overlay, self._revision, self._updated_at = dict(overlay), revision, updated_at
        self._on_change()
        return True
