"""One translation of database failures into typed errors (used by :mod:`.db` only).

Every SQL statement of every layer runs inside a ``Database`` / ``AsyncDatabase`` transaction
helper, and those helpers pass whatever escapes through :func:`translate`. So a damaged SQLite
file, a full disk, a read-only file or role, a PostgreSQL server that went away and a value the
driver cannot bind all surface as :class:`StorageError` (with a code) or
:class:`InvalidInputError`, never as a driver exception or a ``UnicodeError``.

A unique key that a concurrent writer took first (PostgreSQL ``23505``, SQLite's UNIQUE /
PRIMARY KEY constraint) is a :class:`ConflictError` with code ``duplicate-key``: the caller can
read the row the other writer stored and go on.

StorageError codes set here: ``storage-damaged`` (not a database, malformed pages, undecodable
text), ``storage-full``, ``storage-read-only`` (read-only file, file system or transaction),
``storage-permission``, ``database-locked`` (the busy timeout ran out), ``database-unavailable``
(the server refused or dropped the connection, or no pooled connection was free),
``storage-schema`` (a table or column this release needs is missing or is not ours: another
application's table of the same name, or a schema that does not exist) and the generic
``storage-error``.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import sys
from pathlib import Path

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL

from langgraph_mnemon.contracts import safe_text
from langgraph_mnemon.errors import ConflictError, InvalidInputError, MnemonError, StorageError
from langgraph_mnemon.storage._urls import redact_url

__all__ = ["DamagedValue", "database_errors", "translate"]


class DamagedValue(ValueError):
    """A stored value our own column types cannot decode (raised by ``JsonText``); the
    transaction helpers turn it into ``storage-damaged`` naming the database."""


_BASE_ERRORS: tuple[type[BaseException], ...] = (
    sa_exc.StatementError,  # DBAPIError and bind/result processing errors
    sa_exc.TimeoutError,  # no pooled connection within the pool timeout
    # Raised unwrapped by connect-time hooks and by raw DBAPI cursors (the checkpointer's).
    sqlite3.Error,
    UnicodeError,  # undecodable text in a damaged file; unencodable text in a bind value
    DamagedValue,
    OverflowError,  # an int too large for the column
)


def database_errors() -> tuple[type[BaseException], ...]:
    """What the transaction helpers hand to :func:`translate`: the errors below, plus
    ``psycopg.Error`` once psycopg is loaded.

    psycopg is not imported here (it costs start-up time and only PostgreSQL needs it): no
    psycopg error can be raised before something else imported psycopg, so it is looked up in
    ``sys.modules`` when an error is being matched (``except database_errors() as exc``).
    """
    psycopg = sys.modules.get("psycopg")
    error = getattr(psycopg, "Error", None)
    if isinstance(error, type) and issubclass(error, BaseException):
        return (*_BASE_ERRORS, error)
    return _BASE_ERRORS


# SQLite primary result codes (sqlite3 exposes them as ``sqlite_errorcode`` since 3.11).
_SQLITE_CODES: dict[int, str] = {
    3: "storage-permission",  # SQLITE_PERM
    5: "database-locked",  # SQLITE_BUSY
    6: "database-locked",  # SQLITE_LOCKED
    8: "storage-read-only",  # SQLITE_READONLY
    11: "storage-damaged",  # SQLITE_CORRUPT
    13: "storage-full",  # SQLITE_FULL
    23: "storage-permission",  # SQLITE_AUTH
    26: "storage-damaged",  # SQLITE_NOTADB
}
# The same by message, for drivers that carry no code (aiosqlite's adapted errors).
_SQLITE_MESSAGES: tuple[tuple[str, str], ...] = (
    ("file is not a database", "storage-damaged"),
    ("malformed", "storage-damaged"),
    ("could not decode to utf-8", "storage-damaged"),
    ("database or disk is full", "storage-full"),
    ("readonly database", "storage-read-only"),
    ("read-only", "storage-read-only"),
    ("database is locked", "database-locked"),
    ("database table is locked", "database-locked"),
    ("no such table", "storage-schema"),
    ("no such column", "storage-schema"),
    ("has no column named", "storage-schema"),
)
_ADVICE: dict[str, str] = {
    "storage-damaged": (
        "the file is damaged or is not a SQLite database; restore it from a backup, or move it "
        "away and langgraph-mnemon starts an empty one"
    ),
    "storage-full": "free disk space, then retry",
    "storage-read-only": (
        "the database is read-only; make it writable or set write_enabled=false to only read"
    ),
    "storage-permission": "check the owner and mode of the database and its folder",
    # This process's own writers take turns on the file's write gate before SQLite's lock
    # (storage._write_gate), so a SQLite busy error means a writer outside them.
    "database-locked": (
        "another process (or a connection this process opened outside langgraph-mnemon) held "
        "the database lock past the busy timeout (mnemos.sqlite_busy_timeout_ms); retry"
    ),
    "database-unavailable": "check that the database server is running and reachable, then retry",
    "storage-schema": (
        "the database file holds tables this langgraph-mnemon did not make, or made by another "
        "version; point database_url at a file of its own"
    ),
    "storage-error": "check that the database is reachable and writable",
}
# PostgreSQL SQLSTATE prefixes -> code, checked in order (single states before classes).
_PG_STATES: tuple[tuple[str, str], ...] = (
    ("53100", "storage-full"),  # disk_full
    ("25006", "storage-read-only"),  # read_only_sql_transaction
    ("42501", "storage-permission"),  # insufficient_privilege
    ("57P01", "database-unavailable"),  # admin_shutdown
    ("57P02", "database-unavailable"),  # crash_shutdown
    ("57P03", "database-unavailable"),  # cannot_connect_now
    ("08", "database-unavailable"),  # connection exceptions
    ("3F000", "storage-schema"),  # invalid_schema_name: no schema to create tables in
    ("42P01", "storage-schema"),  # undefined_table
    ("42703", "storage-schema"),  # undefined_column
    ("55P03", "database-locked"),  # lock_not_available
    ("40P01", "database-locked"),  # deadlock_detected
)


def translate(exc: BaseException, url: URL) -> MnemonError:
    """The typed error for ``exc``, raised by a statement on the database at ``url``."""
    original = _unwrap(exc)
    if isinstance(original, MnemonError):  # raised by our own bind/result processing
        return original
    if isinstance(original, UnicodeEncodeError):
        return InvalidInputError(
            "a text value contains a lone surrogate (half of a character pair, e.g. a cut "
            "emoji) and cannot be stored; send complete characters. Nothing was changed."
        )
    if isinstance(original, UnicodeDecodeError):
        return _storage("storage-damaged", "stored text is not valid UTF-8", url)
    if isinstance(original, DamagedValue):
        return _storage("storage-damaged", str(original), url)
    invalid = _invalid_value(original)
    if invalid is not None:
        return InvalidInputError(f"{invalid}. Nothing was changed.")
    if _duplicate_key(original):
        return ConflictError(
            f"{_where(url)} refused a row whose key another writer stored first "
            f"({_detail(original)}); read it again and retry; nothing was changed.",
            code="duplicate-key",
        )
    if url.get_backend_name() == "sqlite":
        code = _sqlite_code(original, url)
    else:
        code = _postgres_code(exc, original)
    return _storage(code, _detail(original), url)


def _unwrap(exc: BaseException) -> BaseException:
    if isinstance(exc, sa_exc.StatementError) and exc.orig is not None:
        return exc.orig
    return exc


def _detail(exc: BaseException) -> str:
    text = safe_text(str(exc)).strip()
    # "Could not decode to UTF-8 column 'x' with text '<garbage>'": keep the stored text out.
    text = text.split(" with text ", 1)[0] if "could not decode" in text.lower() else text
    return (text.splitlines() or [type(exc).__name__])[0][:300]


def _invalid_value(exc: BaseException) -> str | None:
    """Why a bind value was refused by the driver, when that is the caller's input."""
    message = str(exc)
    if "NUL (0x00)" in message:
        return "a text value contains a NUL character (\\x00), which cannot be stored; remove it"
    if isinstance(exc, OverflowError):
        return f"a number is too large to be stored ({_detail(exc)})"
    if isinstance(exc, (TypeError, ValueError)):  # a bind processor refused the value
        return f"a value of the wrong type reached the database ({_detail(exc)})"
    if isinstance(exc, (sqlite3.InterfaceError, sqlite3.ProgrammingError)) and (
        "binding" in message.lower() or "unsupported type" in message.lower()
    ):
        return f"a value of an unsupported type reached the database ({_detail(exc)})"
    sqlstate = getattr(exc, "sqlstate", None) or ""
    if sqlstate.startswith("22"):  # PostgreSQL data exception: out of range, bad text, ...
        return f"the database refused a value ({_detail(exc)})"
    return None


_SQLITE_DUPLICATE = (2067, 1555)  # SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY


def _duplicate_key(exc: BaseException) -> bool:
    """Whether ``exc`` is a unique-key violation (another writer's row holds the key)."""
    if getattr(exc, "sqlstate", None) == "23505":  # PostgreSQL unique_violation
        return True
    if isinstance(exc, sqlite3.IntegrityError):
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(code, int):
            return code in _SQLITE_DUPLICATE
        return str(exc).startswith(("UNIQUE constraint failed", "PRIMARY KEY must be unique"))
    return False


def _sqlite_code(exc: BaseException, url: URL) -> str:
    primary = getattr(exc, "sqlite_errorcode", None)
    code = _SQLITE_CODES.get(primary & 0xFF) if isinstance(primary, int) else None
    if code is None:
        message = str(exc).lower()
        code = next((c for text, c in _SQLITE_MESSAGES if text in message), "storage-error")
    if code == "storage-error":
        # A disk I/O error or a file that cannot be opened: say why when the folder tells.
        code = _folder_state(url) or code
    return code


def _folder_state(url: URL) -> str | None:
    database = url.database or ""
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    folder = Path(database).parent
    if not hasattr(os, "statvfs"):  # Windows: only the permission check below
        return "storage-permission" if not os.access(folder, os.W_OK) else None
    try:
        stats = os.statvfs(folder)
    except OSError as exc:
        return "storage-permission" if exc.errno in (errno.EACCES, errno.EPERM) else None
    if stats.f_flag & os.ST_RDONLY:
        return "storage-read-only"
    if stats.f_bavail == 0:
        return "storage-full"
    if not os.access(folder, os.W_OK):
        return "storage-permission"
    return None


def _postgres_code(exc: BaseException, original: BaseException) -> str:
    sqlstate = getattr(original, "sqlstate", None) or ""
    for prefix, code in _PG_STATES:
        if sqlstate.startswith(prefix):
            return code
    if isinstance(exc, sa_exc.TimeoutError):
        return "database-unavailable"
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return "database-unavailable"
    if type(original).__name__ == "OperationalError" and not sqlstate:
        return "database-unavailable"  # psycopg: connection failed / server closed it
    return "storage-error"


_SERVER_ADVICE: dict[str, str] = {
    "storage-schema": (
        "a table of this name is not langgraph-mnemon's (another application's?) or is of "
        "another version, or the schema does not exist; give langgraph-mnemon a PostgreSQL "
        "schema of its own with database_schema (MNEMON_DATABASE_SCHEMA)"
    ),
    "database-locked": (
        "another transaction held a lock this one needed past the lock timeout, or the "
        "server broke a deadlock; retry"
    ),
    "storage-damaged": "a stored value is damaged; restore the database from a backup",
    "storage-permission": (
        "the database role lacks the privilege; grant it, or set write_enabled=false for a "
        "role that may only read"
    ),
    "storage-read-only": (
        "the database accepts no writes (a read-only role, transaction or standby); set "
        "write_enabled=false or point database_url at the primary"
    ),
}


def _where(url: URL) -> str:
    if url.get_backend_name() == "sqlite":
        return f"the SQLite database {url.database or ':memory:'}"
    return f"the database {redact_url(url)}"


def _storage(code: str, detail: str, url: URL) -> StorageError:
    advice = _ADVICE[code]
    if url.get_backend_name() != "sqlite":
        advice = _SERVER_ADVICE.get(code, advice)
    return StorageError(
        f"{_where(url)} failed: {detail}; {advice}; nothing was changed.", code=code
    )
