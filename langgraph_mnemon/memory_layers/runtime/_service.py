"""Runtime Memory (tier 1): USER.md and MEMORY.md, the hot memory the model sees every turn.

``runtime/memories.json`` is the only authority; ``USER.md`` and ``MEMORY.md`` are projections of
it (entries of one target joined by ``"\\n§\\n"`` plus a trailing newline) that are rewritten from
the authority whenever they differ (:mod:`._file_store`). Given a ``database``, the entries live
in the ``runtime`` tables instead, one owner per target (:mod:`._sql_store`), with the same
revisions, limits and receipts; the Markdown text is then rendered on demand
(:meth:`RuntimeMemory.projection`). Capacity is counted in UTF-8 bytes of
the projection body, delimiters included. A mutation that would overflow raises
:class:`CapacityError` carrying a :class:`MaintenancePlan` and changes nothing on disk.

Every operation asks the kernel before any I/O: add / replace / remove / apply ask ``runtime``
``write``; the maintenance primitives (``plan_maintenance``, ``compact_and_mutate``,
``compact_target``) ask ``runtime`` ``maintenance`` (and ``write`` for the pending mutation);
:meth:`RuntimeMemory.search` (current and ``runtime/archived/`` entries) asks ``runtime``
``recall``. Entries, usage, revision, the archive listing and the snapshot are management reads.

This module only sequences: the rules live in :mod:`._entries` (validation), :mod:`._mutations`
(add / replace / remove, plans), :mod:`._maintenance` (budget, packing, archive lines),
:mod:`._snapshot` and :mod:`._search`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from langgraph_mnemon.contracts import Importance, Usage, check_text, iso_utc
from langgraph_mnemon.errors import CapacityError, ConflictError, InvalidInputError
from langgraph_mnemon.memory_layers.kernel import Kernel
from langgraph_mnemon.memory_layers.runtime._entries import (
    MAX_BRANCH_CHARS,
    TARGETS,
    check_compaction_args,
    check_request,
    checked_candidates,
    joined_bytes,
    make_request,
    reject_bad_candidates,
    render_projection,
    validate_target,
)
from langgraph_mnemon.memory_layers.runtime._file_store import (
    FileState,
    Row,
    RuntimeFile,
    change_entry,
    replace_target,
    revision_of,
)
from langgraph_mnemon.memory_layers.runtime._maintenance import (
    COMPACT_MESSAGES,
    compaction_budget,
    compaction_of,
)
from langgraph_mnemon.memory_layers.runtime._models import (
    CompactedEntry,
    MaintenancePlan,
    RuntimeEntry,
    RuntimeMatch,
    RuntimeMutation,
    RuntimeReceipt,
    RuntimeSnapshot,
    RuntimeTarget,
)
from langgraph_mnemon.memory_layers.runtime._mutations import (
    Applied,
    apply_mutation,
    overflows,
    plan_for,
    projected_bytes,
)
from langgraph_mnemon.memory_layers.runtime._search import check_query, search_entries
from langgraph_mnemon.memory_layers.runtime._snapshot import current_git_branch, render_snapshot
from langgraph_mnemon.memory_layers.runtime._sql_store import (
    RuntimeStore,
    RuntimeTable,
    check_owner,
    commit_replaced_target,
    composite_rows,
)
from langgraph_mnemon.storage.db import Database
from langgraph_mnemon.storage.files import checked_path

__all__ = ["RuntimeMemory"]

_MAX_LIMIT = 1_048_576


def _checked_limit(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_LIMIT:
        raise InvalidInputError(f"{name} must be an integer in 1..1048576 (got {value!r})")
    return value


class RuntimeMemory:
    """Runtime Memory service over ``<root>/runtime/``, or over the ``runtime`` database tables.

    Args:
        root: storage root; files live in ``<root>/runtime/`` (unused with ``database``).
        user_root: with ``runtime_user_scope=global``, the root whose ``runtime/memories.json``
            holds USER entries (MEMORY stays under ``root``). ``None`` keeps both under ``root``.
            Ignored with ``database`` (``user_key`` says whose USER entries these are).
        user_limit_bytes / memory_limit_bytes: capacity of USER.md / MEMORY.md bodies.
        workspace: folder whose git branch scopes MEMORY entries in snapshots.
        lock_timeout: seconds to wait for the cross-process lock.
        clock: returns the current time (injectable for tests).
        write_enabled: ``False`` rejects every mutation with :class:`ReadOnlyError` and writes
            nothing at all (not even projection repairs). Ignored when ``kernel`` is given.
        kernel: the host's :class:`Kernel`; every write (``runtime`` ``write``), maintenance
            commit (``runtime`` ``maintenance``) and :meth:`search` (``runtime`` ``recall``)
            asks it before any I/O. Reads of entries, usage and the archive never ask.
        database: keep the entries in this database's ``runtime`` tables instead of files
            (server replicas share them); nothing under ``root`` is touched. With writes off no
            table is created and a database without them reads as empty.
        user_key / memory_key: with ``database``, the owners of the USER and of the MEMORY
            entries (``Scope.user_key`` / ``Scope.project_key()``); equal keys share one set of
            rows, as one ``memories.json`` does.
        create_below: the storage root when ``root`` / ``user_root`` are a scope's folders
            below it: opening (and every read) then creates nothing, a missing folder reads as
            empty, and the first write creates it one folder at a time below this root, never
            through a link. ``None`` (the local scope) creates the folders on open.

    Raises:
        InvalidInputError: a limit outside 1..1048576, a bad path, owner key or database.
        StorageError: the authority is corrupt (``storage-damaged``; left untouched) or a
            managed path is a symbolic link (``symlink-refused``).

    Opening repairs projections that differ from the authority and removes temp files left by
    writers that died. On a full or read-only disk a needed repair is logged and skipped and
    reads answer from the authority. The roots themselves are the caller's to name. Every I/O
    failure raises :class:`StorageError` and leaves every file byte-identical. Importance is
    ``critical | normal | low`` (:data:`langgraph_mnemon.contracts.Importance`; on the Memory
    Space 1-5 scale via :data:`langgraph_mnemon.contracts.IMPORTANCE_LEVELS`).

    Example:
        >>> rm = RuntimeMemory("./.mnemon")
        >>> rm.add("user", "Prefers answers in British English.").message
        'Entry added.'
        >>> rm.replace("user", "British English", "Prefers answers in Australian English.").message
        'Entry replaced.'
        >>> shared = RuntimeMemory("./.mnemon", database=db, user_key="user:alice",
        ...                        memory_key="project:billing")
    """

    def __init__(
        self,
        root: Path | str,
        *,
        user_root: Path | str | None = None,
        user_limit_bytes: int = 4096,
        memory_limit_bytes: int = 10240,
        workspace: Path | str | None = None,
        lock_timeout: float = 10.0,
        clock: Callable[[], datetime] | None = None,
        write_enabled: bool = True,
        kernel: Kernel | None = None,
        database: Database | None = None,
        user_key: str = "user:local",
        memory_key: str = "project:local",
        create_below: Path | str | None = None,
    ) -> None:
        self._limits = {
            "user": _checked_limit("user_limit_bytes", user_limit_bytes),
            "memory": _checked_limit("memory_limit_bytes", memory_limit_bytes),
        }
        self.root = checked_path(root, "root")
        self.workspace = checked_path(workspace, "workspace") if workspace else None
        self._clock = clock or (lambda: datetime.now(UTC))
        # Every operation asks the kernel; a layer built alone gets one of its own.
        self.kernel = kernel or Kernel.standalone(write_enabled=bool(write_enabled))
        self.database = database
        self._create_below = checked_path(create_below, "create_below") if create_below else None
        if database is None:
            self._files = self._open_files(user_root, lock_timeout)
        else:
            self._files = self._open_tables(database, user_key, memory_key, lock_timeout)
        for file in self._distinct_files():
            file.check_paths()
        self._repair()

    def _open_files(
        self, user_root: Path | str | None, lock_timeout: float
    ) -> dict[str, RuntimeStore]:
        below = self._create_below
        memory_file = RuntimeFile(self.root / "runtime", lock_timeout, below)
        user_file = memory_file
        if user_root is not None:
            user_dir = checked_path(user_root, "user_root") / "runtime"
            if user_dir != memory_file.directory:
                user_file = RuntimeFile(user_dir, lock_timeout, below)
        return {"user": user_file, "memory": memory_file}

    def _open_tables(
        self, database: Database, user_key: str, memory_key: str, lock_timeout: float
    ) -> dict[str, RuntimeStore]:
        if not isinstance(database, Database):
            raise InvalidInputError(
                f"database must be a langgraph_mnemon.storage.db.Database "
                f"(got {type(database).__name__})"
            )
        memory = RuntimeTable(database, check_owner(memory_key, "memory_key"), lock_timeout)
        user = memory
        if check_owner(user_key, "user_key") != memory_key:
            user = RuntimeTable(database, user_key, lock_timeout)
        # No I/O at open: the first commit creates the tables (a read of a missing schema is
        # empty), so a host opens while its database is down and reports it when used.
        return {"user": user, "memory": memory}

    def _distinct_files(self) -> list[RuntimeStore]:
        return list({id(f): f for f in self._files.values()}.values())

    def _repair(self) -> None:
        for file in self._distinct_files():
            if self.write_enabled:
                file.repair()
            else:
                file.read()  # still report a corrupt authority

    @property
    def write_enabled(self) -> bool:
        """Whether writes are on (the kernel's ``write_enabled``)."""
        return self.kernel.write_enabled

    @property
    def storage(self) -> Literal["files", "database"]:
        """Where the entries live: ``"files"`` (``<root>/runtime/``) or ``"database"``."""
        return "files" if self.database is None else "database"

    # -- reads -------------------------------------------------------------------------------

    def limit(self, target: RuntimeTarget) -> int:
        """The byte limit of ``target``'s file."""
        return self._limits[validate_target(target)]

    def entries(self, target: RuntimeTarget | None = None) -> list[RuntimeEntry]:
        """Committed entries (all targets, or one), in insertion order.

        A management read: it never asks the kernel and never writes.

        Args:
            target: ``"user"`` (USER.md), ``"memory"`` (MEMORY.md), or ``None`` for both (USER
                entries first).

        Returns:
            The :class:`RuntimeEntry` rows of ``memories.json``, oldest first.

        Raises:
            InvalidInputError: ``target`` is not ``user``, ``memory`` or ``None``.
            StorageError: ``memories.json`` cannot be read or is corrupt (``storage-damaged``).

        Example:
            >>> [e.content for e in rm.entries("user")]
            ['Prefers answers in British English.']
        """
        if target is None:
            return [r.entry for r in self._composite_rows()]
        target = validate_target(target)
        return self._files[target].read().of(target)

    @property
    def revision(self) -> str:
        """SHA-256 of the committed state; changes iff the state changes.

        Pass it to :meth:`compact_target` (or take it from a :class:`MaintenancePlan`) so a
        compaction fails with :class:`ConflictError` when another writer got there first.

        Returns:
            64 lowercase hex characters over the entries of both targets.

        Raises:
            StorageError: ``memories.json`` cannot be read or is corrupt (``storage-damaged``).

        Example:
            >>> before = rm.revision
            >>> rm.add("memory", "Deploys go through CI.").revision != before
            True
        """
        return revision_of(self._composite_rows())

    def projection(self, target: RuntimeTarget) -> str:
        """The text of USER.md / MEMORY.md for ``target``, rendered from the committed entries.

        A management read on both backends (the file backend keeps the same text on disk).

        Args:
            target: ``"user"`` (USER.md) or ``"memory"`` (MEMORY.md).

        Returns:
            The entries joined by ``"\\n§\\n"`` plus a trailing newline; ``""`` when empty.

        Raises:
            InvalidInputError: a bad ``target``.
            StorageError: the stored entries cannot be read or are damaged.

        Example:
            >>> rm.projection("user")
            'Prefers answers in British English.\\n'
        """
        return render_projection([e.content for e in self.entries(target)])

    def usage(self, target: RuntimeTarget) -> Usage:
        """Bytes used by ``target``'s entries (delimiters included) against its limit."""
        target = validate_target(target)
        return Usage(
            used=joined_bytes(e.content for e in self.entries(target)),
            limit=self._limits[target],
        )

    def archived(self, target: RuntimeTarget) -> list[dict[str, Any]]:
        """Entries moved to ``runtime/archived/`` by compaction with no other destination."""
        target = validate_target(target)
        data = self._files[target].read_archived(target)
        records = []
        for line in (data or b"").splitlines():
            try:
                records.append(json.loads(line))
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue  # a torn line from a writer killed mid-append
        return records

    def search(
        self, query: str, *, target: RuntimeTarget | None = None, limit: int = 10
    ) -> list[RuntimeMatch]:
        """Find entries of USER.md / MEMORY.md and of ``runtime/archived/`` by shared words.

        Local only (never a Memory Space). Deterministic: the score is the share of the
        query's words (case, width and accents folded) an entry contains.

        Args:
            query: words to look for. target: ``"user"``, ``"memory"`` or None (both).
            limit: at most this many matches (1..50), best first.

        Returns:
            :class:`RuntimeMatch` rows; ``archived=True`` for entries no longer in hot memory.

        Raises:
            ParticipationError: the ``runtime`` ``recall`` channel refuses (nothing was read).
            InvalidInputError: a bad query, target or limit.
            StorageError: ``memories.json`` or an archive file cannot be read.

        Example:
            >>> [m.content for m in rm.search("lisbon", target="user")]
            ['I work from Lisbon.']
        """
        targets = TARGETS if target is None else (validate_target(target),)
        words, limit = check_query(query, limit)
        self.kernel.admit("runtime", "recall")
        current = [e for t in targets for e in self.entries(t)]
        archived = {t: self.archived(t) for t in targets}
        return search_entries(words, current, archived, limit)

    def snapshot(
        self, branch: str | None = None, *, now: datetime | None = None
    ) -> RuntimeSnapshot:
        """Render the model-facing snapshot (repairs stale projections first).

        Args:
            branch: defaults to the workspace's current git branch; MEMORY entries scoped to
                other branches are hidden.
            now: the capture time for the age annotations (a naive datetime counts as UTC).

        Returns:
            A :class:`RuntimeSnapshot`: the ``text`` the Wake shows, the ``revision`` and
            ``branch`` it was rendered for, and ``hidden``, the count of MEMORY entries scoped
            to other branches.

        Raises:
            InvalidInputError: a wrong type, or a branch longer than 128 characters.
            StorageError: ``memories.json`` cannot be read or is corrupt (``storage-damaged``).

        Example:
            >>> rm.snapshot(branch="main").text.splitlines()[0]
            'MNEMON RUNTIME MEMORY SNAPSHOT'
        """
        if branch is not None and len(check_text(branch, "branch")) > MAX_BRANCH_CHARS:
            raise InvalidInputError(f"branch is longer than {MAX_BRANCH_CHARS} characters")
        if now is not None and not isinstance(now, datetime):
            raise InvalidInputError(f"now must be a datetime (got {type(now).__name__})")
        self._repair()
        moment = now or self._clock()
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        if branch is None:
            branch = current_git_branch(self.workspace)
        rows = self._composite_rows()
        return render_snapshot(
            [r.entry for r in rows],
            revision_of(rows),
            branch=branch,
            moment=moment,
            limits=self._limits,
        )

    # -- mutations ---------------------------------------------------------------------------

    def add(
        self,
        target: RuntimeTarget,
        content: str,
        *,
        importance: Importance = "normal",
        branches: Sequence[str] | None = None,
    ) -> RuntimeReceipt:
        """Append an entry; an identical entry already present is a committed no-op.

        Args:
            target: ``"user"`` (USER.md) or ``"memory"`` (MEMORY.md).
            content: the entry text; whitespace runs are collapsed. NUL characters and lone
                surrogates are refused, never stored or stripped silently.
            importance: ``"critical"``, ``"normal"`` or ``"low"``.
            branches: MEMORY only: git branches the entry is shown on.

        Returns:
            The committed :class:`RuntimeReceipt` (``changed`` false for a duplicate).

        Raises:
            InvalidInputError: a wrong type or a value that cannot be stored; nothing changed.
            CapacityError: the entry does not fit (``plan`` says what maintenance needs).
            StorageError: the disk refused the write (``storage-full``, ``storage-read-only``,
                ...) or a managed path is a link (``symlink-refused``); every file unchanged.
            ReadOnlyError / ParticipationError: ``runtime`` ``write`` is refused (before I/O).

        Example:
            >>> rm.add("memory", "Deploys go through CI.", branches=["main"]).committed
            True
        """
        request = make_request(
            "add", target, content=content, importance=importance, branches=branches
        )
        return self._mutate(request)

    def replace(
        self,
        target: RuntimeTarget,
        old_text: str,
        content: str,
        *,
        importance: Importance | None = None,
        branches: Sequence[str] | None = None,
    ) -> RuntimeReceipt:
        """Replace the entry matching ``old_text`` (exact full match first, then unique substring).

        ``importance`` defaults to the old entry's; ``branches``: ``None`` keeps, ``[]`` clears.

        Args:
            target: ``"user"`` (USER.md) or ``"memory"`` (MEMORY.md).
            old_text: the whole entry, or a part of it that only one entry of ``target``
                contains (whitespace collapsed as for ``content``).
            content: the new entry text, checked as for :meth:`add`.
            importance: ``"critical"``, ``"normal"``, ``"low"``, or ``None`` to keep the old one.
            branches: MEMORY only: ``None`` keeps the old branches, ``[]`` clears them.

        Returns:
            The committed :class:`RuntimeReceipt` (``replaced`` holds the old and the new text;
            ``changed`` false when the entry already read so).

        Raises:
            NoMatchError / AmbiguousMatchError: ``old_text`` names no entry, or several.
            InvalidInputError: as :meth:`add`, or another entry already has ``content``.
            CapacityError / StorageError: as :meth:`add`.
            ReadOnlyError / ParticipationError: ``runtime`` ``write`` is refused (before I/O).

        Example:
            >>> receipt = rm.replace("user", "British", "Prefers answers in Australian English.")
            >>> receipt.replaced["from"]
            'Prefers answers in British English.'
        """
        request = make_request(
            "replace",
            target,
            content=content,
            old_text=old_text,
            importance=importance,
            branches=branches,
        )
        return self._mutate(request)

    def remove(self, target: RuntimeTarget, old_text: str) -> RuntimeReceipt:
        """Remove the entry matching ``old_text`` (exact match first, then unique substring).

        Args:
            target: ``"user"`` (USER.md) or ``"memory"`` (MEMORY.md).
            old_text: the whole entry, or a part of it that only one entry of ``target`` contains.

        Returns:
            The committed :class:`RuntimeReceipt`; ``removed`` is the removed entry's text.

        Raises:
            NoMatchError / AmbiguousMatchError: ``old_text`` names no entry, or several; nothing
                was removed.
            InvalidInputError: a bad ``target`` or ``old_text``.
            ReadOnlyError / ParticipationError: ``runtime`` ``write`` is refused (before I/O).
            StorageError: the disk refused the write; every file unchanged.

        Example:
            >>> rm.remove("user", "English").removed
            'Prefers answers in Australian English.'
        """
        return self._mutate(make_request("remove", target, old_text=old_text))

    def apply(self, request: RuntimeMutation) -> RuntimeReceipt:
        """Run a :class:`RuntimeMutation` (the form graphs and tools pass around).

        The request is checked field by field again (it may come from ``model_construct``), then
        runs exactly as :meth:`add`, :meth:`replace` or :meth:`remove` would.

        Args:
            request: the mutation; ``action`` is ``add``, ``replace`` or ``remove``.

        Returns:
            The committed :class:`RuntimeReceipt`.

        Raises:
            InvalidInputError: ``request`` is not a :class:`RuntimeMutation` or a field is bad.
            NoMatchError / AmbiguousMatchError / CapacityError / StorageError: as the method of
                its action.
            ReadOnlyError / ParticipationError: ``runtime`` ``write`` is refused (before I/O).

        Example:
            >>> rm.apply(RuntimeMutation(action="remove", target="user", old_text="tea")).message
            'Entry removed.'
        """
        return self._mutate(check_request(request))

    # -- maintenance primitives (host-only) ---------------------------------------------------

    def plan_maintenance(self, request: RuntimeMutation) -> MaintenancePlan:
        """Plan capacity maintenance for ``request`` against the committed state (no writes).

        The first step of a maintenance run: it asks ``runtime`` ``maintenance`` and ``write``
        so that a refused run stops before any Memory Space write.

        Args:
            request: the add / replace / remove that needs room.

        Returns:
            A :class:`MaintenancePlan`: the ``revision`` to hand to :meth:`compact_and_mutate`,
            the compactable ``entries``, the ``pending`` write, the byte ``budget`` and
            ``requires_maintenance`` (false when the request fits as it is).

        Raises:
            ReadOnlyError / ParticipationError: ``runtime`` ``maintenance`` or ``write`` is
                refused (``strategy-refused`` under the General strategy).
            InvalidInputError: a bad request, or a replace that duplicates another entry.
            NoMatchError / AmbiguousMatchError: the request's ``old_text`` names no entry, or
                several.
            StorageError: ``memories.json`` cannot be read or is corrupt.

        Example:
            >>> request = RuntimeMutation(action="add", target="memory", content="CI runs nightly.")
            >>> rm.plan_maintenance(request).requires_maintenance
            False
        """
        request = check_request(request)
        self._admit_maintenance(with_write=True)
        entries = self._files[request.target].read().of(request.target)
        return self._plan(request, entries, revision_of(self._composite_rows()))

    def compact_and_mutate(
        self,
        revision: str,
        request: RuntimeMutation,
        compacted: Sequence[CompactedEntry],
        max_bytes: int | None = None,
        *,
        archive_left_out: bool = True,
        stored_elsewhere: Collection[str] = (),
    ) -> RuntimeReceipt:
        """Replace the target's entries by ``compacted`` and apply ``request``, in one commit.

        Fails with :class:`ConflictError` if the revision moved. Candidates are packed
        deterministically (importance first, then their order) into ``max_bytes`` (default: the
        plan budget). Original entries not kept verbatim are appended to ``runtime/archived/``
        under the same lock unless ``archive_left_out`` is false or their text is in
        ``stored_elsewhere`` (the caller already stored them durably in a Memory Space), so
        nothing is silently dropped.

        Args:
            revision: the ``revision`` of the :class:`MaintenancePlan` the compaction came from.
            request: the pending add / replace / remove given to :meth:`plan_maintenance`.
            compacted: the compactor's entries (:class:`CompactedEntry` or dicts of its fields).
            max_bytes: byte budget for the kept entries; ``None`` uses the plan's ``budget``.
            archive_left_out: append left-out originals to ``runtime/archived/<target>.jsonl``.
            stored_elsewhere: texts of originals a Memory Space already holds (not archived).

        Returns:
            The committed :class:`RuntimeReceipt` of the request's action; ``left_out`` lists the
            originals no longer in hot memory, ``archived_locally`` how many were archived.

        Raises:
            ParticipationError / ReadOnlyError: ``runtime`` ``maintenance`` or ``write``
                refuses (before any I/O).
            ConflictError: the committed revision is no longer ``revision``; nothing applied.
            InvalidInputError: a bad argument, duplicate candidates, or a candidate that repeats
                the pending content or the entry being replaced or removed.
            NoMatchError / AmbiguousMatchError: the request's ``old_text`` no longer names one
                entry.
            CapacityError: the packed entries plus the request still exceed the limit.
            StorageError: the disk refused the write; every file unchanged.

        Example:
            >>> plan = rm.plan_maintenance(request)
            >>> kept = [CompactedEntry(content="CI: nightly.")]
            >>> rm.compact_and_mutate(plan.revision, request, kept).action
            'add'
        """
        request = check_request(request)
        self._admit_maintenance(with_write=True)
        return self._compact(
            revision,
            request.target,
            request,
            compacted,
            max_bytes,
            archive_left_out=archive_left_out,
            stored=stored_elsewhere,
        )

    def compact_target(
        self,
        revision: str,
        target: RuntimeTarget,
        compacted: Sequence[CompactedEntry],
        max_bytes: int | None = None,
        *,
        archive_left_out: bool = True,
    ) -> RuntimeReceipt:
        """Same packing as :meth:`compact_and_mutate` without a pending mutation.

        Asks ``runtime`` ``maintenance`` before any I/O.

        Args:
            revision: the :attr:`revision` the compaction was made from.
            target: ``"user"`` or ``"memory"``: the file whose entries are replaced.
            compacted: the compactor's entries (:class:`CompactedEntry` or dicts of its fields).
            max_bytes: byte budget for the kept entries; ``None``: the target's compaction budget.
            archive_left_out: append left-out originals to ``runtime/archived/<target>.jsonl``.

        Returns:
            The committed :class:`RuntimeReceipt` with ``action="compact"``; ``left_out`` and
            ``archived_locally`` as for :meth:`compact_and_mutate`.

        Raises:
            ParticipationError / ReadOnlyError: ``runtime`` ``maintenance`` is refused.
            ConflictError: the committed revision is no longer ``revision``; nothing applied.
            InvalidInputError: a bad argument or duplicate candidates.
            CapacityError: the packed entries exceed the target's limit.
            StorageError: the disk refused the write; every file unchanged.

        Example:
            >>> kept = [CompactedEntry(content="CI: nightly.")]
            >>> rm.compact_target(rm.revision, "memory", kept).action
            'compact'
        """
        target = validate_target(target)
        self._admit_maintenance(with_write=False)
        return self._compact(
            revision, target, None, compacted, max_bytes, archive_left_out=archive_left_out
        )

    # -- internals ---------------------------------------------------------------------------

    def _stamp(self) -> str:
        return iso_utc(self._clock(), precision="milliseconds")

    def _composite_rows(self) -> list[Row]:
        return composite_rows(self._files["user"], self._files["memory"])

    def _plan(
        self, request: RuntimeMutation, entries: list[RuntimeEntry], revision: str
    ) -> MaintenancePlan:
        limit = self._limits[request.target]
        return plan_for(request, entries, revision, limit, self._stamp())

    def _admit_maintenance(self, *, with_write: bool) -> None:
        # Capacity maintenance, and the pending mutation it applies, under the same trigger.
        self.kernel.admit("runtime", "maintenance")
        if with_write:
            self.kernel.admit("runtime", "write")

    def _mutate(self, request: RuntimeMutation) -> RuntimeReceipt:
        self.kernel.admit("runtime", "write")
        file = self._files[request.target]
        if request.action != "add" and isinstance(file, RuntimeFile) and file.absent:
            # Nothing to replace or remove in a scope no write created yet: NoMatchError, and
            # its folder (and lock file) is not created for a write that changes nothing.
            apply_mutation(request, [], self._stamp())
        with file.lock():
            state = file.read()
            entries = state.of(request.target)
            applied = apply_mutation(request, entries, self._stamp())
            if applied.changed:
                self._check_fits(request, state, entries, applied)
                file.commit(
                    change_entry(state, applied.excluded, applied.new_entry), [request.target]
                )
            return self._receipt(
                request.action,
                request.target,
                applied.message,
                applied.changed,
                **applied.receipt_fields,
            )

    def _check_fits(
        self,
        request: RuntimeMutation,
        state: FileState,
        entries: list[RuntimeEntry],
        applied: Applied,
    ) -> None:
        """Raise :class:`CapacityError` (with a plan when maintenance can help) if it overflows."""
        target, limit = request.target, self._limits[request.target]
        used = state.target_bytes(target)
        projected = projected_bytes(used, len(entries), applied)
        alone = len((request.content or "").encode())
        if alone > limit:  # no compaction can ever make room
            raise CapacityError(
                f"The new {target} entry alone is {alone} bytes, more than the whole "
                f"limit ({limit} bytes), so compacting other entries cannot make room. "
                "Shorten it, split it into smaller entries, or store it as a Document.",
                code="runtime-entry-too-large",
            )
        if overflows(used, projected, limit):
            plan = self._plan(request, entries, revision_of(self._composite_rows()))
            raise CapacityError(
                f"Would exceed {target} runtime memory capacity: {projected} bytes "
                f"(current {used}, limit {limit}). Archive and compact runtime memory before "
                "retrying.",
                plan=plan,
                code="runtime-capacity",
            )

    def _compact(
        self,
        revision: str,
        target: RuntimeTarget,
        request: RuntimeMutation | None,
        compacted: Sequence[CompactedEntry],
        max_bytes: int | None,
        *,
        archive_left_out: bool,
        stored: Collection[str] = (),
    ) -> RuntimeReceipt:
        check_compaction_args(revision, max_bytes)
        candidates = checked_candidates(compacted, target)
        file = self._files[target]
        with file.lock():
            state = file.read()
            if revision_of(self._composite_rows()) != revision:
                raise ConflictError(
                    "runtime memory changed while archival was running; no compacted data was "
                    "applied. Plan again from the current revision.",
                )
            entries = state.of(target)
            limit = self._limits[target]
            plan = self._plan(request, entries, revision) if request is not None else None
            reject_bad_candidates(candidates, plan)
            if max_bytes is None:
                max_bytes = plan.budget if plan is not None else compaction_budget(limit)
            result = compaction_of(
                entries,
                candidates,
                plan,
                target=target,
                max_bytes=max_bytes,
                stamp=self._stamp(),
                revision=revision,
                archive_left_out=archive_left_out,
                stored=stored,
            )
            self._check_compacted_fit(target, state, result.entries, plan)
            changed = [e.to_json() for e in result.entries] != [e.to_json() for e in entries]
            if changed:
                new_state = replace_target(state, target, result.entries)
                commit_replaced_target(file, new_state, target, result.archive)
            return self._compact_receipt(
                target, plan, changed, result.left_out, len(result.archive)
            )

    def _check_compacted_fit(
        self,
        target: RuntimeTarget,
        state: FileState,
        entries: list[RuntimeEntry],
        plan: MaintenancePlan | None,
    ) -> None:
        limit = self._limits[target]
        projected = joined_bytes(e.content for e in entries)
        if projected > limit:
            raise CapacityError(
                f"Would exceed {target} runtime memory capacity: {projected} bytes "
                f"(current {state.target_bytes(target)}, limit {limit}). The compacted "
                "entries do not leave room; compact further before retrying.",
                plan=plan,
                code="runtime-capacity",
            )

    def _compact_receipt(
        self,
        target: RuntimeTarget,
        plan: MaintenancePlan | None,
        changed: bool,
        left_out: list[RuntimeEntry],
        archived: int,
    ) -> RuntimeReceipt:
        action = plan.action if plan is not None else "compact"
        pending = plan.pending if plan is not None else None
        fields = {"added": pending.content} if pending is not None and action == "add" else {}
        return self._receipt(
            action,
            target,
            COMPACT_MESSAGES[action],
            changed,
            left_out=tuple(e.content for e in left_out),
            archived_locally=archived,
            **fields,
        )

    def _receipt(
        self,
        action: str,
        target: RuntimeTarget,
        message: str,
        changed: bool,
        **fields: Any,
    ) -> RuntimeReceipt:
        state = self._files[target].read()
        return RuntimeReceipt(
            status="committed",
            message=message,
            changed=changed,
            revision=revision_of(self._composite_rows()),
            action=action,  # type: ignore[arg-type]
            target=target,
            entry_count=len(state.of(target)),
            usage=Usage(used=state.target_bytes(target), limit=self._limits[target]),
            **fields,
        )
