"""Provider secrets of Memory Spaces: kept apart at the door, stored sealed beside the catalog.

Provider credentials (API keys, tokens) never enter the catalog's configuration or any read
API. :func:`split_config` keeps them apart at the door: a configuration key that looks like a
credential is refused (it belongs in ``secrets=``), and the provider's own ``check_config``
sees both. :func:`merge_secrets` applies an update (a value sets its key, ``""`` removes it).

Storage (:class:`SecretStore`): one row per space in ``mnemon_space_secrets``, in the same
database as the catalog, so every replica on that database can use a space another one
created. A row holds the secret *names* (shown as ``secrets_configured``; never a value) and
the values as one sealed JSON object: encrypted with AES-256-GCM when ``secret_key``
(``MNEMON_SECRET_KEY``) is set (:mod:`langgraph_mnemon.storage.secret_box`), plain text
otherwise, which leaves the database's own access control as their only protection. The
catalog writes a space's row and its secrets in one transaction. No read API returns a value;
only a provider call receives them.

Rotation: with the new key in ``secret_key`` and the old one in ``secret_key_previous``, every
row still opens; :meth:`SecretStore.rotate` re-seals every row that is not under the current
key, in one transaction (``mnemon secrets rotate``). After it, the old key opens nothing.

Before this table, secrets lived in ``<root>/state/space-secrets.json``. That file is adopted
on open: its entries are copied into the table (a row already there wins) and the file is then
deleted, so no plain-text copy stays on one replica's disk. A host with writes switched off
copies nothing: it reads the file until a writable host has adopted it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict

from langgraph_mnemon.contracts import check_text
from langgraph_mnemon.errors import InvalidInputError, MnemonError, SecretKeyError, StorageError
from langgraph_mnemon.memory_layers.spaces._models import MemoryProvider
from langgraph_mnemon.storage.db import (
    Database,
    Migration,
    advisory_lock,
    create_tables,
    insert_ignore,
    upsert,
)
from langgraph_mnemon.storage.files import locked, refuse_symlink
from langgraph_mnemon.storage.secret_box import PLAIN, Sealed, SecretBox

__all__ = [
    "LEGACY_SECRETS_FILE",
    "MAX_SECRET_CHARS",
    "PROVIDER_CONFIG_CODE",
    "SECRETS",
    "SECRET_MIGRATIONS",
    "SecretStore",
    "SecretsReport",
    "merge_secrets",
    "split_config",
]


MAX_SECRET_CHARS = 16_384
"""The longest secret value a space takes (API keys and tokens are far shorter)."""
MAX_SECRET_NAME_CHARS = 64
_SECRET_HINT = re.compile(r"(api[_-]?key|token|secret|password|authorization|credential)", re.I)


def _check_secrets(provider: MemoryProvider, secrets: Mapping[Any, Any]) -> None:
    secret_fields = set(provider.descriptor.secret_fields)
    for key, value in secrets.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidInputError("secrets must map string names to string values")
        check_text(key, "a secret name")
        check_text(value, f"secret {key!r}")
        if len(key) > MAX_SECRET_NAME_CHARS or len(value) > MAX_SECRET_CHARS:
            raise InvalidInputError(
                f"secret names have at most {MAX_SECRET_NAME_CHARS} characters and values at "
                f"most {MAX_SECRET_CHARS}"
            )
        if secret_fields and key not in secret_fields:
            raise InvalidInputError(
                f"provider {provider.descriptor.id!r} takes the secrets "
                f"{', '.join(sorted(secret_fields))} (got {key!r})"
            )
        if not secret_fields:
            raise InvalidInputError(
                f"provider {provider.descriptor.id!r} takes no secrets (got {key!r})"
            )


PROVIDER_CONFIG_CODE = "invalid-provider-config"
"""The error code of every configuration refusal (the control plane states it in OpenAPI)."""


def split_config(
    provider: MemoryProvider,
    config: Mapping[str, Any] | None,
    secrets: Mapping[str, str] | None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """``(checked config, secrets)`` for ``provider``: credentials only in ``secrets``.

    Raises:
        InvalidInputError: code ``invalid-provider-config``: a mapping of the wrong type, a
            config key that looks like a credential, a secret the provider does not take, or
            a config the provider's ``check_config`` refuses (no I/O happens here).
    """
    try:
        return _split(provider, config, secrets)
    except InvalidInputError as exc:
        # One stable code whatever the provider raised: the message says what to fix, and
        # never echoes a secret value back (a provider's own message might quote one).
        message = exc.message
        if isinstance(secrets, Mapping):
            for value in sorted((v for v in secrets.values() if isinstance(v, str)), key=len)[::-1]:
                if len(value) >= 3:
                    message = message.replace(value, "***")
        raise InvalidInputError(message, code=PROVIDER_CONFIG_CODE) from None


def _split(
    provider: MemoryProvider,
    config: Mapping[str, Any] | None,
    secrets: Mapping[str, str] | None,
) -> tuple[dict[str, Any], dict[str, str]]:
    if config is not None and not isinstance(config, Mapping):
        raise InvalidInputError("config must be a mapping of provider settings")
    if secrets is not None and not isinstance(secrets, Mapping):
        raise InvalidInputError("secrets must be a mapping of credential names to strings")
    config = dict(config or {})
    secrets = dict(secrets or {})
    secret_fields = set(provider.descriptor.secret_fields)
    for key in list(config):
        if key in secret_fields or _SECRET_HINT.search(str(key)):
            raise InvalidInputError(
                f"config key {key!r} looks like a credential; pass it in secrets= so it is "
                "stored host-side only"
            )
    _check_secrets(provider, secrets)
    try:
        checked = provider.check_config(config, secrets)
    except MnemonError:
        raise
    except Exception as exc:
        raise InvalidInputError(
            f"invalid configuration for provider {provider.descriptor.id!r}: {exc}"
        ) from None
    return dict(checked), secrets


def merge_secrets(stored: Mapping[str, str], changes: Mapping[str, str] | None) -> dict[str, str]:
    """``stored`` with ``changes`` applied: a value sets its key, ``""`` removes it, keys not
    named stay as they are (secrets are write-only: callers never read them back).

    Raises:
        InvalidInputError: ``changes`` is not a mapping of string names to string values.

    Example:
        >>> merge_secrets({"api_key": "a", "org": "b"}, {"api_key": "c", "org": ""})
        {'api_key': 'c'}
    """
    merged = dict(stored)
    if changes is None:
        return merged
    if not isinstance(changes, Mapping):
        raise InvalidInputError(
            "secrets must be a mapping of credential names to strings ('' removes one)",
            code=PROVIDER_CONFIG_CODE,
        )
    for key, value in changes.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidInputError(
                "secrets must map string names to string values ('' removes one)",
                code=PROVIDER_CONFIG_CODE,
            )
        if value == "":
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


logger = logging.getLogger(__name__)

_METADATA = sa.MetaData()
SECRETS = sa.Table(
    "mnemon_space_secrets",
    _METADATA,
    sa.Column("space_id", sa.Text, primary_key=True),
    sa.Column("names", sa.JSON, nullable=False),  # the secret keys, sorted: never a value
    sa.Column("scheme", sa.String(32), nullable=False),  # plain | aes-256-gcm
    sa.Column("key_id", sa.String(64), nullable=True),  # the sealing key's id, never the key
    sa.Column("payload", sa.Text, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
)
"""Provider secrets of Memory Spaces, one sealed JSON object per space."""

SECRET_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "space_secrets",
        1,
        "Memory Space provider secrets (encrypted when secret_key is set)",
        lambda conn: create_tables(conn, [SECRETS]),
    ),
)
LEGACY_SECRETS_FILE = Path("state") / "space-secrets.json"
"""Where secrets lived before the table, relative to the storage root (adopted on open)."""


class SecretsReport(BaseModel):
    """How the stored secrets are kept: counts only, never a name or a value.

    ``encrypted_current`` rows are sealed with ``secret_key``, ``encrypted_other`` with another
    key (the previous one, or one this host does not know), ``plain`` rows are plain text.
    ``rotated`` counts the rows a rotation re-sealed (0 for a report).
    """

    model_config = ConfigDict(frozen=True)

    rows: int
    encrypted_current: int
    encrypted_other: int
    plain: int
    key_configured: bool
    rotated: int = 0


def _context(space_id: str) -> str:
    return f"mnemon_space_secrets:{space_id}"


class SecretStore:
    """Sealed provider secrets per space, in the catalog's database.

    Args:
        database: The catalog's database.
        box: The configured keys (:class:`SecretBox`; without a key values are plain text).
        root: The storage root (its ``state/space-secrets.json`` is adopted on open).
        lock_timeout: Seconds to wait for the old file's lock while adopting it.
        clock: Seconds since the epoch.
    """

    def __init__(
        self,
        database: Database,
        box: SecretBox,
        root: Path,
        lock_timeout: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = database
        self.box = box
        self.legacy_file = root / LEGACY_SECRETS_FILE
        self.lock_timeout = lock_timeout
        self._clock = clock
        self._adopted = False

    # ------------------------------------------------------------------ reads

    def ready(self) -> bool:
        """Whether the table exists (a read creates nothing; an old schema may lack it)."""
        return self.db.ready_for_read(SECRET_MIGRATIONS)

    def get(self, space_id: str) -> dict[str, str]:
        """The secrets of one space (empty when it has none).

        Raises:
            SecretKeyError: they are encrypted and the configured keys do not open them.
            StorageError: the database (or the old file a read-only host reads) failed.
        """
        if not self.ready():
            return dict(self._read_file().get(space_id, {}))
        query = sa.select(SECRETS.c.scheme, SECRETS.c.key_id, SECRETS.c.payload).where(
            SECRETS.c.space_id == space_id
        )
        row = self.db.run_single(lambda conn: conn.execute(query).first())
        if row is None:
            return {}
        return self._open(space_id, Sealed(row.scheme, row.key_id, row.payload))

    def names(self) -> dict[str, list[str]]:
        """Which secret keys each space has (never the values)."""
        if not self.ready():
            return {k: sorted(v) for k, v in self._read_file().items()}
        query = sa.select(SECRETS.c.space_id, SECRETS.c.names)
        rows = self.db.run_single(lambda conn: conn.execute(query).all())
        return {space_id: list(names or []) for space_id, names in rows}

    def _open(self, space_id: str, sealed: Sealed) -> dict[str, str]:
        what = f"the provider secrets of Memory Space {space_id!r}"
        data = json.loads(self.box.open(sealed, _context(space_id), what=what))
        return {str(k): str(v) for k, v in data.items()}

    # ------------------------------------------------------------------ writes

    def write(self, conn: sa.Connection, space_id: str, secrets: Mapping[str, str] | None) -> None:
        """Replace the secrets of one space inside the caller's transaction (``None`` or
        empty removes them)."""
        if not secrets:
            conn.execute(SECRETS.delete().where(SECRETS.c.space_id == space_id))
            return
        conn.execute(
            upsert(
                conn.dialect.name,
                SECRETS,
                ["space_id"],
                ["names", "scheme", "key_id", "payload", "updated_at"],
            ),
            self._row(space_id, secrets),
        )

    def _row(self, space_id: str, secrets: Mapping[str, str]) -> dict[str, Any]:
        data = json.dumps(dict(secrets), sort_keys=True).encode("utf-8")
        sealed = self.box.seal(data, _context(space_id))
        return {
            "space_id": space_id,
            "names": sorted(secrets),
            "scheme": sealed.scheme,
            "key_id": sealed.key_id,
            "payload": sealed.payload,
            "updated_at": self._clock(),
        }

    # ------------------------------------------------------------------ the old file

    def _read_file(self) -> dict[str, dict[str, str]]:
        """``{space_id: {key: value}}`` of the old secrets file (empty when there is none)."""
        refuse_symlink(self.legacy_file.parent, "Memory Space state folder")
        refuse_symlink(self.legacy_file, "Memory Space secrets file")
        try:
            data = json.loads(self.legacy_file.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise StorageError.from_os_error(
                exc, "read the Memory Space secrets", self.legacy_file
            ) from None
        except ValueError as exc:
            raise StorageError(
                f"cannot read the old Memory Space secrets file {self.legacy_file}: {exc}; "
                "restore it, or remove it and configure the secrets again",
                code="storage-damaged",
            ) from None
        if not isinstance(data, dict):
            raise StorageError(f"the Memory Space secrets file {self.legacy_file} is not an object")
        return {
            str(k): {str(n): str(s) for n, s in v.items()}
            for k, v in data.items()
            if isinstance(v, dict)
        }

    def adopt_file(self, setup: Callable[[], object]) -> int:
        """Copy the old ``state/space-secrets.json`` into the table, then delete the file
        (once per process; a row already in the table wins). A read-only host adopts nothing.

        Args:
            setup: Creates the catalog's tables (called only when there is a file to adopt).

        Returns:
            How many spaces' secrets were copied.

        Raises:
            StorageError: the file is a symbolic link (``symlink-refused``), unreadable, or
                the database refused the rows (the file is then kept).
        """
        if self._adopted or self.db.read_only:
            return 0
        refuse_symlink(self.legacy_file.parent, "Memory Space state folder")
        if not os.path.lexists(self.legacy_file):  # nothing to adopt: nothing is written
            self._adopted = True
            return 0
        lock = self.legacy_file.with_name(".space-secrets.lock")
        with locked(lock, timeout=self.lock_timeout, what="Memory Space secrets"):
            data = self._read_file()
            rows = [self._row(k, v) for k, v in data.items() if v]
            if rows:
                setup()
                with self.db.write() as conn:
                    conn.execute(insert_ignore(conn.dialect.name, SECRETS, ["space_id"]), rows)
            _remove(self.legacy_file)
        _remove(lock)
        self._adopted = True
        if data:
            logger.info(
                "moved the secrets of %d Memory Space(s) from %s into the database",
                len(data),
                self.legacy_file,
            )
        return len(data)

    # ------------------------------------------------------------------ rotation

    def report(self) -> SecretsReport:
        """How the rows are kept now (counts only)."""
        rows = self._sealed() if self.ready() else []
        return self._report(rows, 0)

    def _sealed(self) -> list[tuple[str, Sealed]]:
        return self.db.run_read(_sealed_rows)

    def _report(self, rows: list[tuple[str, Sealed]], rotated: int) -> SecretsReport:
        current = sum(1 for _, s in rows if s.scheme != PLAIN and s.key_id == self.box.key_id)
        plain = sum(1 for _, s in rows if s.scheme == PLAIN)
        return SecretsReport(
            rows=len(rows),
            encrypted_current=current,
            encrypted_other=len(rows) - current - plain,
            plain=plain,
            key_configured=self.box.encrypts,
            rotated=rotated,
        )

    def rotate(self) -> SecretsReport:
        """Re-seal every row that is not under the current key, in one transaction.

        Every row is opened first (with the current or the previous key); if one does not
        open, nothing is changed.

        Raises:
            SecretKeyError: no current key is configured, or a row opens with neither key.
        """
        if not self.box.encrypts:
            raise SecretKeyError(
                "no secret key to rotate to: set MNEMON_SECRET_KEY (secret_key) to the new key "
                "and MNEMON_SECRET_KEY_PREVIOUS to the old one, then run `mnemon secrets rotate`"
            )
        if not self.ready():
            return self._report([], 0)
        with self.db.write() as conn:
            advisory_lock(conn, "mnemon-secrets", "rotate")
            rows = _sealed_rows(conn)
            stale = [(k, self._open(k, s)) for k, s in rows if not self.box.is_current(s)]
            for space_id, secrets in stale:
                conn.execute(
                    SECRETS.update()
                    .where(SECRETS.c.space_id == space_id)
                    .values(**self._row(space_id, secrets))
                )
        n = len(rows)
        return SecretsReport(
            rows=n,
            encrypted_current=n,
            encrypted_other=0,
            plain=0,
            key_configured=True,
            rotated=len(stale),
        )


def _sealed_rows(conn: sa.Connection) -> list[tuple[str, Sealed]]:
    query = sa.select(SECRETS.c.space_id, SECRETS.c.scheme, SECRETS.c.key_id, SECRETS.c.payload)
    return [(r.space_id, Sealed(r.scheme, r.key_id, r.payload)) for r in conn.execute(query)]


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StorageError.from_os_error(exc, "remove the adopted secrets file", path) from None
