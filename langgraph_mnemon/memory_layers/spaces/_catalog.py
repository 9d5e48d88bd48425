"""The Memory Space catalog: space records in the ``mnemon_spaces`` table, who owns each, and
which ones a scope sees; secrets beside them.

Catalog rules: the first space the local user creates in an empty catalog gets the native
default id ``default``; later ids (and every id of a user's or a project's space) are
generated. A new space is inactive until its first committed write activates it (inactive
spaces are not searched unless named explicitly). Reads never create the tables: before the
first write every read answers empty. Secrets live beside the rows in the same database
(:class:`~._secrets.SecretStore`), written in the same transaction as the row they belong to;
a record names only which secret keys are configured (read in the same statement as the rows).

Owners: each row has an ``owner`` (the ``space_owners`` migration adds the column to
``mnemon_spaces``): ``NULL`` for a space of the local user (every space created before scopes,
and every space the local scope creates), a user key (``user:alice``) for a user's own space, a
project key (``project:billing``) for a space the project's users share. :class:`Owners` is the
filter one scope's catalog reads through: its user's and its project's spaces, plus the
``NULL`` ones when the scope's user is the local user; a space it cannot see does not exist for
it (the same :class:`NotFoundError` as an unknown id). :data:`EVERY_OWNER` sees every space
(the host operator's view, which the store facade's local scope reads through).

Every method here is blocking I/O (SQL), called by the synchronous service (an async caller
reaches it through ``asyncio.to_thread``, once, at the service's edge).

Example:
    >>> owners = owners_of(Scope(user="alice", project="billing"))
    >>> owners.sees("project:billing"), owners.sees("user:bob"), owners.sees(None)
    (True, False, False)
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from langgraph_mnemon.contracts import LOCAL, Scope
from langgraph_mnemon.errors import InvalidInputError, NotFoundError, ProviderError
from langgraph_mnemon.memory_layers.spaces._locations import StorageRules, check_storage
from langgraph_mnemon.memory_layers.spaces._models import (
    DiscoveredSpace,
    MemoryProvider,
    SpaceBinding,
)
from langgraph_mnemon.memory_layers.spaces._records import SpaceReceipt, SpaceRecord
from langgraph_mnemon.memory_layers.spaces._registry import ProviderRegistry
from langgraph_mnemon.memory_layers.spaces._secrets import (
    PROVIDER_CONFIG_CODE,
    SECRET_MIGRATIONS,
    SECRETS,
    SecretStore,
    merge_secrets,
    split_config,
)
from langgraph_mnemon.memory_layers.spaces._validation import (
    DEFAULT_SPACE_ID,
    MAX_DESCRIPTION_CHARS,
    MAX_NAME_CHARS,
    NATIVE_PROVIDER_ID,
    SPACE_ID_PATTERN,
    check_space_id,
    check_text_arg,
)
from langgraph_mnemon.memory_layers.spaces.schema import MIGRATIONS, SPACES
from langgraph_mnemon.storage.db import Database, Migration, column_names, insert_ignore

__all__ = [
    "CATALOG",
    "CATALOG_MIGRATIONS",
    "EVERY_OWNER",
    "LOCAL_OWNERS",
    "OWNER_MIGRATIONS",
    "NewSpace",
    "Owners",
    "SpaceCatalog",
    "is_learned_space",
    "learned_space_id",
    "owners_of",
]


_OWNER_INDEX = "ix_mnemon_spaces_owner"

# The catalog table as this package reads it: the shared definition plus the owner column.
CATALOG = SPACES.to_metadata(sa.MetaData())
CATALOG.append_column(sa.Column("owner", sa.Text, nullable=True))


def _add_owner(conn: sa.Connection) -> None:
    # The provider's own migration may have created the table (without owners) just before.
    columns = column_names(conn, SPACES.name)
    if "owner" not in columns:
        conn.exec_driver_sql(f"ALTER TABLE {SPACES.name} ADD COLUMN owner TEXT")
    conn.exec_driver_sql(f"CREATE INDEX IF NOT EXISTS {_OWNER_INDEX} ON {SPACES.name} (owner)")


OWNER_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "space_owners",
        1,
        "Memory Space owners: NULL (the local user), a user key or a project key",
        _add_owner,
    ),
)
"""Schema steps of the ``space_owners`` component (after ``spaces`` 1)."""

CATALOG_MIGRATIONS: tuple[Migration, ...] = (*MIGRATIONS, *OWNER_MIGRATIONS)
"""Everything the catalog needs, in order: the Memory Space tables, then the owner column."""


@dataclass(frozen=True, slots=True)
class Owners:
    """The spaces one scope sees and who owns the spaces it creates.

    Attributes:
        keys: The owner keys it sees (``None``: every owner).
        legacy: Whether it sees ``NULL``-owner spaces (the local user's).
        user: The owner of a space it creates (``None`` writes ``NULL``, the local user).
        project: The owner of a space it creates with ``shared=True``.
        local: Whether this is the single local scope (the service itself).
    """

    keys: frozenset[str] | None
    legacy: bool
    user: str | None
    project: str
    local: bool = False

    @property
    def every(self) -> bool:
        """Whether every owner's spaces are visible (the operator's view)."""
        return self.keys is None

    def sees(self, owner: str | None) -> bool:
        """Whether a space owned by ``owner`` is visible."""
        if self.keys is None:
            return True
        return self.legacy if owner is None else owner in self.keys

    def clause(self) -> sa.ColumnElement[bool]:
        """The SQL condition on ``mnemon_spaces`` that keeps the visible rows only."""
        if self.keys is None:
            return sa.true()
        owned = CATALOG.c.owner.in_(sorted(self.keys))
        return sa.or_(owned, CATALOG.c.owner.is_(None)) if self.legacy else owned

    def owner_of_new(self, shared: bool) -> str | None:
        """The owner a new space gets: the scope's project when ``shared``, else its user."""
        return self.project if shared else self.user


def owners_of(scope: Scope, per_user: bool = False) -> Owners:
    """What ``scope`` sees: its user's spaces, its project's, and (local user) the ``NULL`` ones.

    Args:
        scope: The scope.
        per_user: ``project_memory = user_project``: the project's spaces are held per user
            (owner ``project:<p>/user:<u>``), like its MEMORY.md and Documents.

    Returns:
        The :class:`Owners` filter of that scope.

    Example:
        >>> owners_of(Scope(user="alice")).owner_of_new(shared=False)
        'user:alice'
    """
    project = scope.project_key(scope.held_per_user(per_user))
    local_user = scope.user == LOCAL
    return Owners(
        keys=frozenset({scope.user_key, project}),
        legacy=local_user,
        user=None if local_user else scope.user_key,
        project=project,
        local=scope.is_local,
    )


LOCAL_OWNERS = owners_of(Scope())
"""The single local scope: the ``NULL``-owner spaces, plus ``user:local`` and ``project:local``."""

EVERY_OWNER = Owners(keys=None, legacy=True, user=None, project=Scope().project_key(), local=True)
"""Every space of every owner; new spaces are the local user's (``NULL``)."""


# The columns of a catalog from before scopes (no owner column yet).
_BEFORE_OWNERS = [c for c in CATALOG.c if c.name != "owner"]
# Everything the catalog needs: the space tables, the owner column, the secrets table.
_STEPS = (*CATALOG_MIGRATIONS, *SECRET_MIGRATIONS)
# The secret names of each row, read in the catalog's own statement (never a value).
_NAMES = SECRETS.c.names.label("secret_names")
_JOINED = CATALOG.outerjoin(SECRETS, SECRETS.c.space_id == CATALOG.c.id)


@dataclass(frozen=True, slots=True)
class NewSpace:
    """The checked arguments of a new space (see :meth:`SpaceCatalog.create_space`)."""

    name: str
    description: str
    provider_id: str
    provider: MemoryProvider
    space_id: str | None
    active: bool | None
    config: dict[str, Any]
    secrets: dict[str, str]


_LEARNED = re.compile(r"learned(?:-[0-9a-f]{16})?")


def learned_space_id(scope: Scope) -> str:
    """The id of a user's learned space (where learning passes write): ``learned`` for the
    local user, else one derived from the user id (the same on every replica, never another
    user's).

    Example:
        >>> learned_space_id(Scope())
        'learned'
    """
    if scope.user == LOCAL:
        return "learned"
    return "learned-" + hashlib.sha256(scope.user.encode()).hexdigest()[:16]


def is_learned_space(space_id: str) -> bool:
    """True for the id of a user's learned space (see :func:`learned_space_id`)."""
    return bool(_LEARNED.fullmatch(space_id))


class SpaceCatalog:
    """Space records over one :class:`Database`, with secrets in a :class:`SecretStore`.

    Args:
        database: The shared SQL database (the ``mnemon_spaces`` table).
        registry: The registered providers (a record lists its provider's capabilities).
        secrets: Where provider credentials are kept host-side.
        default_provider_id: The provider of a new space when none is named.
        local_only: Refuse providers whose data leaves this machine.
        clock: Seconds since the epoch (injectable for tests).
        owners: Which spaces this catalog sees and who owns the ones it creates (default: the
            single local scope).
        admin: Whether its caller may name storage locations (:mod:`._locations`).
        storage: The storage rules, read at every check (``None``: no location checks).
    """

    def __init__(
        self,
        database: Database,
        registry: ProviderRegistry,
        secrets: SecretStore,
        *,
        default_provider_id: str = NATIVE_PROVIDER_ID,
        local_only: bool = False,
        clock: Callable[[], float] = time.time,
        owners: Owners = LOCAL_OWNERS,
        admin: bool = True,
        storage: Callable[[], StorageRules] | None = None,
    ) -> None:
        self.db = database
        self.registry = registry
        self.secrets = secrets
        self.default_provider_id = default_provider_id
        self.local_only = local_only
        self.owners = owners
        self.admin = bool(admin)
        self._storage = storage
        self._clock = clock
        self._statements: dict[tuple[bool, bool, bool | None, bool], sa.Select[Any]] = {}
        self._visible: sa.ColumnElement[bool] | None = None

    def owned_by(self, owners: Owners, *, admin: bool | None = None) -> SpaceCatalog:
        """The same catalog (database, providers, secrets) seen through ``owners``, for an
        admin or not (default: only the local scope's and the operator's views are)."""
        return SpaceCatalog(
            self.db,
            self.registry,
            self.secrets,
            default_provider_id=self.default_provider_id,
            local_only=self.local_only,
            clock=self._clock,
            owners=owners,
            admin=owners.local if admin is None else admin,
            storage=self._storage,
        )

    def check_location(
        self,
        provider: MemoryProvider,
        space_id: str,
        owner: str | None,
        config: Mapping[str, Any],
        *,
        in_use: bool = False,
    ) -> None:
        """Refuse a storage location this catalog's caller may not use (:mod:`._locations`).

        Raises:
            AuthorityError: code ``storage-location``.
        """
        if self._storage is not None:
            rules = self._storage()
            check_storage(
                provider, space_id, owner, config, admin=self.admin, rules=rules, in_use=in_use
            )

    # ------------------------------------------------------------------ tables and reads

    def setup(self) -> None:
        """Create or migrate the tables (idempotent), and adopt an old secrets file."""
        self.db.setup(_STEPS)
        self.secrets.adopt_file(self._setup_once)

    def ready(self) -> None:
        """Create the tables before the first write (and adopt an old secrets file)."""
        self._setup_once()
        self.secrets.adopt_file(self._setup_once)

    def _setup_once(self) -> None:
        if not self.db.is_setup(_STEPS):
            self.db.setup(_STEPS)

    def _readable(self) -> tuple[Any, sa.ColumnElement[bool]] | None:
        """The columns to select and the owner condition, or None when no row is visible.

        Nothing is visible before the first write (a read creates no tables). A catalog from
        before scopes gets its owner column (and one from before the secrets table that
        table) on first read, unless the host is read-only: then every row is the local
        user's, as it was, and secret names come from the old secrets file. An old secrets
        file is adopted into the table here (:meth:`SecretStore.adopt_file`).
        """
        if not self.db.ready_for_read(MIGRATIONS):
            return None
        if not self.db.read_only:
            if not (self.db.ready_for_read(OWNER_MIGRATIONS) and self.secrets.ready()):
                self.db.setup(_STEPS)
            self.secrets.adopt_file(self._setup_once)
        elif not self.db.ready_for_read(OWNER_MIGRATIONS):
            return (_BEFORE_OWNERS, sa.true()) if self.owners.legacy else None
        if self._visible is None:
            self._visible = self.owners.clause()
        return CATALOG.c, self._visible

    def _columns(self, columns: Any) -> tuple[list[Any], Any]:
        """The columns and FROM of a catalog read: with the secret names when the secrets
        table is there (one statement), else the rows alone."""
        if self.secrets.ready():
            return [*columns, _NAMES], _JOINED
        return list(columns), CATALOG

    def _record(self, row: Mapping[str, Any], fallback: Mapping[str, list[str]]) -> SpaceRecord:
        provider_id = row["provider_id"]
        if "secret_names" in row:
            names = list(row["secret_names"] or [])
        else:
            names = list(fallback.get(row["id"], []))
        return SpaceRecord(
            id=row["id"],
            name=row["name"],
            description=row["description"],
            provider_id=provider_id,
            active=bool(row["active"]),
            config=dict(row["config"] or {}),
            secrets_configured=names,
            external_id=row["external_id"],
            created_at=float(row["created_at"]),
            updated_at=float(row["updated_at"]),
            revision=int(row["revision"]),
            capabilities=self.registry.capabilities(provider_id),
            provider_registered=self.registry.get(provider_id) is not None,
            owner=row.get("owner"),
        )

    def list_spaces(
        self, active: bool | None = None, *, ids: Sequence[str] | None = None
    ) -> list[SpaceRecord]:
        """All visible spaces (or only active / inactive ones, or only ``ids``), oldest
        first."""
        readable = self._readable()
        if readable is None:
            return []  # nothing was ever written: a read creates no tables
        stmt = self._list_statement(readable, active, named=ids is not None)
        params = {"ids": list(ids)} if ids is not None else {}
        # One statement is one snapshot: on PostgreSQL it runs in autocommit (no BEGIN and
        # COMMIT round trips on every search's catalog read).
        rows = self.db.run_single(lambda conn: conn.execute(stmt, params).mappings().all())
        keys = self.secrets.names() if rows and "secret_names" not in rows[0] else {}
        return [self._record(r, keys) for r in rows]

    def _list_statement(
        self, readable: tuple[Any, sa.ColumnElement[bool]], active: bool | None, named: bool
    ) -> sa.Select[Any]:
        """The listing SELECT, built once per column set and filter (building it and its
        owner condition cost more than running it on a small catalog); ``named`` reads only
        the ids bound as ``ids``."""
        columns, _ = readable
        selected, source = self._columns(columns)
        key = (columns is _BEFORE_OWNERS, source is _JOINED, active, named)
        stmt = self._statements.get(key)
        if stmt is None:
            stmt = sa.select(*selected).select_from(source).where(readable[1])
            stmt = stmt.order_by(CATALOG.c.created_at, CATALOG.c.id)
            if active is not None:
                stmt = stmt.where(CATALOG.c.active == active)
            if named:
                stmt = stmt.where(CATALOG.c.id.in_(sa.bindparam("ids", expanding=True)))
            self._statements[key] = stmt
        return stmt

    def get_space(self, space_id: Any) -> SpaceRecord:
        """One visible space by id; :class:`NotFoundError` when there is none.

        A space of another owner is not found, with the very message of an unknown id.
        """
        space_id = check_space_id(space_id)
        row = None
        readable = self._readable()
        if readable is not None:
            columns, visible = readable
            selected, source = self._columns(columns)
            query = sa.select(*selected).select_from(source)
            query = query.where(CATALOG.c.id == space_id, visible)
            row = self.db.run_single(lambda conn: conn.execute(query).mappings().first())
        if row is None:
            raise NotFoundError(
                f"no Memory Space {space_id!r}; list them with spaces.list_spaces() "
                "(CLI: mnemon spaces list)"
            )
        keys = {} if "secret_names" in row else self.secrets.names()
        return self._record(row, keys)

    def binding(self, record: SpaceRecord) -> SpaceBinding:
        """What the provider of ``record`` receives about it (secrets included, never shown).

        Raises:
            AuthorityError: code ``storage-location``: the stored settings keep the data of a
                user's or project's space somewhere not its own (nothing is read there).
        """
        self.check_use(record)
        secrets = self.secrets.get(record.id) if record.secrets_configured else {}
        return SpaceBinding(
            id=record.id,
            name=record.name,
            description=record.description,
            config=record.config,
            secrets=secrets,
        )

    def check_use(self, record: SpaceRecord) -> None:
        """Refuse using ``record`` when its stored location is not one it may use (no I/O).

        Raises:
            AuthorityError: code ``storage-location``.
        """
        provider = self.registry.get(record.provider_id)
        if provider is not None and record.owner is not None:
            self.check_location(provider, record.id, record.owner, record.config, in_use=True)

    def target(self, space_id: Any, operation: str) -> SpaceRecord:
        """The space an operation on one space uses: the named one, else the only active one.

        An empty catalog gets the native ``default`` space for ``remember``; several active
        spaces (or none of several) need an explicit ``space_id``.
        """
        if space_id is not None:
            return self.get_space(space_id)
        spaces = self.list_spaces()
        active = [s for s in spaces if s.active]
        if len(active) > 1:  # a learning pass's space is never the implicit target of a write
            active = [s for s in active if not is_learned_space(s.id)] or active
        if len(active) == 1:
            return active[0]
        if len(active) > 1:
            raise InvalidInputError(
                f"{operation} requires an explicit Memory Space: {len(active)} are active "
                f"({', '.join(s.id for s in active[:8])}); pass space_id="
            )
        if len(spaces) == 1:
            return spaces[0]
        if not spaces and operation == "remember":
            return self._default_space()
        raise InvalidInputError(
            f"{operation} requires an explicit Memory Space (no single active space); "
            "pass space_id="
        )

    def _default_space(self) -> SpaceRecord:
        if self.registry.get(NATIVE_PROVIDER_ID) is None:
            raise InvalidInputError(
                "remember needs a Memory Space: create one with spaces.create_space()"
            )
        receipt = self.create_space("Default", "Default Memory Space.", NATIVE_PROVIDER_ID)
        return receipt.space  # type: ignore[return-value]

    def readable(self, space_ids: Sequence[str] | None) -> list[SpaceRecord]:
        """The spaces a search asks: the named ones, else every active one with a provider."""
        if space_ids is None:
            return [s for s in self.list_spaces(active=True) if s.provider_registered]
        if isinstance(space_ids, str) or not isinstance(space_ids, Sequence):
            raise InvalidInputError("space_ids must be a list of Memory Space ids")
        wanted = list(dict.fromkeys(check_space_id(s) for s in space_ids))
        if not wanted:
            raise InvalidInputError("space_ids must name at least one space (or be None for all)")
        spaces = {s.id: s for s in self.list_spaces(ids=wanted)}  # only the named rows
        missing = [s for s in wanted if s not in spaces]
        if missing:
            raise NotFoundError(
                f"no Memory Space {missing[0]!r}; list them with spaces.list_spaces()"
            )
        return [spaces[s] for s in wanted]

    # ------------------------------------------------------------------ writes

    def check_new(
        self,
        name: Any,
        description: Any,
        provider_id: Any,
        config: Mapping[str, Any] | None,
        secrets: Mapping[str, str] | None,
        space_id: Any,
        active: Any,
    ) -> NewSpace:
        """The arguments of :meth:`create_space`, checked (no I/O)."""
        name = check_text_arg(name, "name", limit=MAX_NAME_CHARS)
        description = check_text_arg(
            description, "description", limit=MAX_DESCRIPTION_CHARS, required=False
        )
        if provider_id is None:
            provider_id = self.default_provider_id
        if not isinstance(provider_id, str):
            raise InvalidInputError("provider_id must be a string such as 'mnemos'")
        provider = self.registry.require(provider_id)
        if self.local_only and not provider.descriptor.local:
            raise InvalidInputError(
                f"provider {provider_id!r} keeps data outside this machine and the persistence "
                "strategy is local-only (persistence_strategy.rules.data_boundary); choose a "
                "local provider or allow remote data",
                code="data-boundary",
            )
        if space_id is not None:
            space_id = check_space_id(space_id)
        if active is not None and not isinstance(active, bool):
            raise InvalidInputError("active must be true, false or None")
        checked, secret_values = split_config(provider, config, secrets)
        return NewSpace(
            name, description, provider_id, provider, space_id, active, checked, secret_values
        )

    def create_space(
        self,
        name: Any,
        description: Any,
        provider_id: Any = None,
        config: Mapping[str, Any] | None = None,
        secrets: Mapping[str, str] | None = None,
        space_id: Any = None,
        active: Any = None,
        external_id: str | None = None,
        shared: bool = False,
    ) -> SpaceReceipt:
        """Create a space (checked first); the row and its secrets commit together.

        The new space is owned by the catalog's user, or by its project with ``shared``.
        """
        if not isinstance(shared, bool):
            raise InvalidInputError("shared must be true or false")
        new = self.check_new(name, description, provider_id, config, secrets, space_id, active)
        self.ready()
        created = self._insert(new, external_id, self.owners.owner_of_new(shared))
        record = self.get_space(created)
        return SpaceReceipt(
            status="committed",
            message=f"Memory Space {record.name!r} created (id {created!r}).",
            changed=True,
            revision=str(record.revision),
            space=record,
        )

    def _first_gets_default(self, conn: sa.Connection) -> bool:
        """Whether a new space without an id gets ``default``: the first space the local user
        sees, while no one holds that id."""
        if not self.owners.legacy:
            return False  # a user's or a project's spaces get generated ids
        visible = sa.select(sa.func.count()).select_from(CATALOG).where(self.owners.clause())
        if conn.execute(visible).scalar():
            return False
        taken = sa.select(CATALOG.c.id).where(CATALOG.c.id == DEFAULT_SPACE_ID)
        return conn.execute(taken).first() is None

    def _insert(self, new: NewSpace, external_id: str | None, owner: str | None) -> str:
        now = self._clock()
        with self.db.write() as conn:
            space_id = new.space_id
            if space_id is None:
                space_id = DEFAULT_SPACE_ID if self._first_gets_default(conn) else _generated_id()
            if conn.execute(sa.select(CATALOG.c.id).where(CATALOG.c.id == space_id)).first():
                raise _exists(space_id)
            placed = new.provider.place(space_id, new.config)
            self.check_location(new.provider, space_id, owner, placed)  # before any write
            # ON CONFLICT DO NOTHING: a writer that inserted the same id since the check above
            # (PostgreSQL, READ COMMITTED) makes this a no-op, answered like the check.
            inserted = conn.execute(
                insert_ignore(conn.dialect.name, CATALOG, ["id"]).values(
                    id=space_id,
                    name=new.name,
                    description=new.description,
                    provider_id=new.provider_id,
                    active=bool(new.active),
                    config=placed,
                    external_id=external_id,
                    created_at=now,
                    updated_at=now,
                    revision=1,
                    owner=owner,
                )
            )
            if inserted.rowcount == 0:
                raise _exists(space_id)
            if new.secrets:
                self.secrets.write(conn, space_id, new.secrets)
        return space_id

    def update_space(
        self,
        space_id: Any,
        name: Any = None,
        description: Any = None,
        active: Any = None,
        config: Mapping[str, Any] | None = None,
        secrets: Mapping[str, str] | None = None,
    ) -> SpaceReceipt:
        """Change a space's name, description, active flag, configuration or secrets (a no-op
        change is committed with ``changed=False``).

        ``config`` is merged into the stored one (a key given as ``None`` is removed) and the
        result re-checked by the provider's ``check_config``; ``secrets`` are write-only (a
        value sets its key, ``""`` removes it, keys not named stay). The row and the secrets
        commit together.
        """
        record = self.get_space(space_id)
        changes = {
            k: v
            for k, v in _changed_values(name, description, active).items()
            if getattr(record, k) != v
        }
        new_secrets: dict[str, str] | None = None
        if config is not None or secrets is not None:
            placed, merged, stored = self._reconfigured(record, config, secrets)
            if placed != record.config:
                changes["config"] = placed
            if merged != stored:
                new_secrets = merged
        if not changes and new_secrets is None:
            return SpaceReceipt(
                status="committed",
                message="Nothing to change.",
                changed=False,
                revision=str(record.revision),
                space=record,
            )
        self._write_update(record, changes, new_secrets)
        updated = self.get_space(record.id)
        return SpaceReceipt(
            status="committed",
            message=f"Memory Space {updated.name!r} updated (id {record.id!r}).",
            changed=True,
            revision=str(updated.revision),
            space=updated,
        )

    def _reconfigured(
        self,
        record: SpaceRecord,
        config: Mapping[str, Any] | None,
        secrets: Mapping[str, str] | None,
    ) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
        """``(placed config, merged secrets, stored secrets)`` of a reconfiguration, checked
        by the provider (no write)."""
        provider = self.registry.get(record.provider_id)
        if provider is None:
            raise ProviderError(
                f"Memory Space {record.id!r} uses provider {record.provider_id!r}, which is not "
                "registered in this process; configure the provider before changing the "
                "space's settings",
                code="provider-disabled",
            )
        if config is not None and not isinstance(config, Mapping):
            raise InvalidInputError(
                "config must be a mapping of provider settings (a key set to null removes it)",
                code=PROVIDER_CONFIG_CODE,
            )
        merged_config = dict(record.config)
        for key, value in (config or {}).items():
            if value is None:
                merged_config.pop(key, None)
            else:
                merged_config[key] = value
        stored = self.secrets.get(record.id) if record.secrets_configured else {}
        merged = merge_secrets(stored, secrets)
        checked, merged = split_config(provider, merged_config, merged)
        placed = provider.place(record.id, checked)
        self.check_location(provider, record.id, record.owner, placed)
        return placed, merged, stored

    def _write_update(
        self, record: SpaceRecord, changes: dict[str, Any], new_secrets: dict[str, str] | None
    ) -> None:
        self.ready()
        with self.db.write() as conn:
            result = conn.execute(
                CATALOG.update()
                .where(CATALOG.c.id == record.id, self.owners.clause())
                .values(**changes, updated_at=self._clock(), revision=CATALOG.c.revision + 1)
            )
            if new_secrets is not None and result.rowcount:
                self.secrets.write(conn, record.id, new_secrets)

    def delete_entry(self, record: SpaceRecord) -> None:
        """Drop the catalog row of ``record`` and its secrets, in one transaction; provider
        data is not touched.

        Raises:
            NotFoundError: the row is gone already (in this catalog's view).
            StorageError: the database refused the change.
        """
        self.ready()
        with self.db.write() as conn:
            result = conn.execute(
                CATALOG.delete().where(CATALOG.c.id == record.id, self.owners.clause())
            )
            if result.rowcount:
                self.secrets.write(conn, record.id, None)
        if not result.rowcount:
            raise NotFoundError(f"no Memory Space {record.id!r} (it was removed meanwhile)")

    def activate(self, space_id: str) -> bool:
        """Mark an inactive space active; whether it changed."""
        with self.db.write() as conn:
            result = conn.execute(
                CATALOG.update()
                .where(CATALOG.c.id == space_id, CATALOG.c.active.is_(False))
                .values(active=True, updated_at=self._clock(), revision=CATALOG.c.revision + 1)
            )
        return bool(result.rowcount)

    # ------------------------------------------------------------------ discovery

    def map_discovered(
        self,
        provider_id: str,
        found: list[DiscoveredSpace],
        config: dict[str, Any],
        secrets: dict[str, str],
    ) -> SpaceReceipt:
        """Make the catalog match what ``provider_id`` holds: map new namespaces to (inactive)
        spaces, drop the entries whose namespace vanished (provider data is never deleted).

        Discovery is the local user's: mapped spaces have no owner, and only such entries are
        ever unmapped (a namespace another owner's space already maps is left alone).
        """
        self.ready()
        now = self._clock()
        created: list[str] = []
        with self.db.write() as conn:
            rows = conn.execute(
                sa.select(CATALOG.c.id, CATALOG.c.external_id, CATALOG.c.owner).where(
                    CATALOG.c.provider_id == provider_id
                )
            ).all()
            mapped = {ext: space_id for space_id, ext, _ in rows if ext is not None}
            local = [(space_id, ext) for space_id, ext, owner in rows if owner is None]
            removed = _unmap_vanished(conn, local, {d.external_id for d in found})
            for item in found:
                if item.external_id not in mapped:
                    created.append(self._insert_discovered(conn, provider_id, item, config, now))
            for space_id in created:
                self.secrets.write(conn, space_id, secrets)
            for space_id in removed:
                self.secrets.write(conn, space_id, None)
        spaces = [s for s in self.list_spaces() if s.provider_id == provider_id]
        return SpaceReceipt(
            status="committed",
            message=f"Discovered {len(found)}: {len(created)} mapped, {len(removed)} unmapped.",
            changed=bool(created or removed),
            revision=str(len(spaces)),
            spaces=spaces,
        )

    def _insert_discovered(
        self,
        conn: sa.Connection,
        provider_id: str,
        item: DiscoveredSpace,
        config: dict[str, Any],
        now: float,
    ) -> str:
        if provider_id == NATIVE_PROVIDER_ID and SPACE_ID_PATTERN.match(item.external_id):
            space_id = item.external_id
        elif self._first_gets_default(conn):
            space_id = DEFAULT_SPACE_ID
        else:
            space_id = _generated_id()
        conn.execute(
            CATALOG.insert().values(
                id=space_id,
                name=item.name[:MAX_NAME_CHARS] or space_id,
                description=item.description[:MAX_DESCRIPTION_CHARS],
                provider_id=provider_id,
                active=False,
                config={**config, **item.config},
                external_id=item.external_id,
                created_at=now,
                updated_at=now,
                revision=1,
            )
        )
        return space_id


def _generated_id() -> str:
    return f"space-{uuid.uuid4().hex[:12]}"


def _changed_values(name: Any, description: Any, active: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if name is not None:
        values["name"] = check_text_arg(name, "name", limit=MAX_NAME_CHARS)
    if description is not None:
        values["description"] = check_text_arg(
            description, "description", limit=MAX_DESCRIPTION_CHARS, required=False
        )
    if active is not None:
        if not isinstance(active, bool):
            raise InvalidInputError("active must be true or false")
        values["active"] = active
    return values


def _unmap_vanished(conn: sa.Connection, rows: Sequence[Any], wanted: set[str]) -> list[str]:
    removed = []
    for space_id, ext in rows:
        if ext is not None and ext not in wanted:
            conn.execute(CATALOG.delete().where(CATALOG.c.id == space_id))
            removed.append(space_id)
    return removed


def _exists(space_id: str) -> InvalidInputError:
    """The error for an id that is taken."""
    return InvalidInputError(
        f"a Memory Space with id {space_id!r} already exists; choose another id"
    )
