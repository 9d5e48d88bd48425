"""Memory Space secrets in the database: one row per space in ``mnemon_space_secrets``.

Provider credentials (API keys, tokens) live beside the catalog, in the same database, so every
replica on that database can use a space another one created. A row holds the secret *names*
(shown as ``secrets_configured``; never a value) and the values as one sealed JSON object:
encrypted with AES-256-GCM when ``secret_key`` (``MNEMON_SECRET_KEY``) is set
(:mod:`langgraph_mnemon.storage.secret_box`), plain text otherwise, which leaves the database's
own access control as their only protection. The catalog writes a space's row and its secrets
in one transaction. No read API returns a value; only a provider call receives them.

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
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict

from langgraph_mnemon.errors import SecretKeyError, StorageError
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
    "SECRETS",
    "SECRET_MIGRATIONS",
    "SecretStore",
    "SecretsReport",
]

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
