"""The Documents service: the public operations, each a short composition of the package's parts.

Every operation asks the kernel before any I/O, validates its arguments (:mod:`._validation`),
reads the committed state (:mod:`._store`), decides what to write (:mod:`._records`) and commits
it under the lock; search ranks over the in-memory index (:mod:`._search`).

Opening repairs what a crashed writer left behind (see :meth:`Documents.repair`); a corrupt
``index.json`` raises :class:`StorageError` and is left untouched. On a full or read-only disk a
needed repair is logged and skipped, and reads answer from ``index.json``. A managed folder or
file (``documents/``, ``index.json``, ``active/``, ``archived/``, ``.recovery/``,
``access.jsonl``, the lock file) that is a symbolic link is refused at open (code
``symlink-refused``). A document file inside ``active/`` or ``archived/`` that is a link is
treated as foreign: never read through, replaced or deleted, and reading that document raises
``symlink-refused``. Every I/O failure raises :class:`StorageError` and leaves every file
byte-identical. Each operation asks the kernel before any I/O: create / update / archive =
Documents write (an overflow's LRU plan and move = maintenance), search = recall; list / get /
read are management reads and never ask.

With ``database`` the Documents of one owner live in database tables instead
(:mod:`._sql_store`): the same records, revisions, limits and answers, no file touched, nothing
to repair.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from langgraph_mnemon.contracts import Usage
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.documents._index import SearchIndex
from langgraph_mnemon.memory_layers.documents._models import (
    DEFAULT_ACTIVE_LIMIT_BYTES,
    DEFAULT_BODY_LIMIT_BYTES,
    DEFAULT_SEARCH_LIMIT,
    STATUSES,
    ArchivePlan,
    CapacityPlan,
    ColdReference,
    DocumentMutation,
    DocumentReceipt,
    DocumentRecord,
    DocumentSearchResult,
    DocumentStatus,
    RepairReport,
)
from langgraph_mnemon.memory_layers.documents._records import (
    archive_candidate,
    archive_plan,
    archived_record,
    archived_relative_path,
    capacity_plan,
    check_capacity,
    cold_reference_for,
    committed_receipt,
    new_record,
    require_active,
    require_archivable,
    require_revision,
    same_document,
    updated_record,
)
from langgraph_mnemon.memory_layers.documents._repair import (
    body_for_write,
    load_for_write,
    record_access,
    repair,
)
from langgraph_mnemon.memory_layers.documents._search import (
    matched,
    no_documents,
    rank,
    result_hits,
    suggested,
    sync_scope,
    unreadable_notes,
)
from langgraph_mnemon.memory_layers.documents._sql_store import (
    body_reader,
    make_store,
    validate_owner_key,
)
from langgraph_mnemon.memory_layers.documents._state import State
from langgraph_mnemon.memory_layers.documents._validation import (
    as_tuple,
    checked_bool,
    checked_mutation,
    optional_tuple,
    validate_document_id,
    validate_id_prefix,
    validate_limits,
    validate_query,
    validate_revision,
    validate_search_limit,
    validate_space_ids,
    validate_summary,
)
from langgraph_mnemon.memory_layers.kernel import Kernel
from langgraph_mnemon.storage.db import Database
from langgraph_mnemon.storage.files import (
    checked_path,
    tolerate_unwritable,
)

__all__ = ["Documents"]


class Documents:
    """Documents service over ``<root>/documents/`` (or, with ``database``, over tables).

    Args:
        root: storage root; files live in ``<root>/documents/``. With ``database`` nothing is
            written there; paths shown to users are still the ones under this root.
        workspace: project folder that source paths are relative to (default: current folder).
        body_limit_bytes: largest body, in UTF-8 bytes after NUL characters are removed.
        active_limit_bytes: budget for all active rendered files together.
        lock_timeout: seconds to wait for the cross-process lock.
        clock: returns the current time (injectable for tests).
        write_enabled: with no ``kernel``, whether the layer's own kernel allows writes.
        kernel: the kernel every operation asks (a standalone one by default).
        database: keep the Documents in this database's tables instead of files (shared by
            every process on it; the first write creates the tables).
        owner_key: whose Documents these are in ``database`` (``Scope.project_key()``:
            ``"project:local"``, ``"project:billing"``, ``"project:billing/user:alice"``).
        create_below: the storage root when ``root`` is a scope's folder below it: opening
            (and every read) then creates nothing, a missing ``documents/`` reads as empty,
            and the first write creates it one folder at a time below this root, never through
            a link. ``None`` (the local scope) creates the folders on open.

    Raises:
        InvalidInputError: a limit, the lock timeout, ``database`` or ``owner_key`` is bad.
        StorageError: ``index.json`` is corrupt, or a managed path is a symbolic link
            (code ``symlink-refused``); see the module docstring for the file rules.

    Example:
        >>> docs = Documents("./.mnemon")
        >>> doc = docs.create("ADR 7: use SQLite", "We use SQLite because ...").document
        >>> docs.update(doc.id, description="Storage", expected_revision=1).document.revision
        2
        >>> docs.search("sqlite").results[0].id == doc.id
        True
        >>> shared = Documents("./.mnemon", database=db, owner_key="project:billing")
    """

    def __init__(
        self,
        root: Path | str,
        *,
        workspace: Path | str | None = None,
        body_limit_bytes: int = DEFAULT_BODY_LIMIT_BYTES,
        active_limit_bytes: int = DEFAULT_ACTIVE_LIMIT_BYTES,
        lock_timeout: float = 10.0,
        clock: Callable[[], datetime] | None = None,
        write_enabled: bool = True,
        kernel: Kernel | None = None,
        database: Database | None = None,
        owner_key: str = "project:local",
        create_below: Path | str | None = None,
    ) -> None:
        validate_limits(body_limit_bytes, active_limit_bytes, lock_timeout)
        self.owner_key = validate_owner_key(owner_key)
        self.database = database
        self.root = checked_path(root, "root")
        self.workspace = checked_path(workspace, "workspace") if workspace else Path.cwd()
        self.body_limit_bytes = body_limit_bytes
        self.active_limit_bytes = active_limit_bytes
        # Every operation asks the kernel; a layer built alone gets one of its own.
        self.kernel = kernel or Kernel.standalone(write_enabled=bool(write_enabled))
        self.lock_timeout = float(lock_timeout)
        store = make_store(
            self.root,
            database,
            self.owner_key,
            lock_timeout=self.lock_timeout,
            clock=clock or (lambda: datetime.now(UTC)),
            create_below=checked_path(create_below, "create_below") if create_below else None,
        )
        self._store = store
        self.directory = store.directory
        self.index_path = store.index_path
        self.lock_path = store.lock_path
        self.access_path = store.access_path
        self.recovery_dir = store.recovery_dir
        self._search = SearchIndex()
        store.check_paths()
        if self.write_enabled:  # read-only mode writes nothing, repairs included
            with tolerate_unwritable(f"repair of {self.directory} on open"):
                self.repair()

    @property
    def write_enabled(self) -> bool:
        """Whether writes are on (the kernel's ``write_enabled``)."""
        return self.kernel.write_enabled

    # -- paths -------------------------------------------------------------------------------

    @property
    def backend(self) -> Literal["files", "database"]:
        """Where the Documents live: ``files`` under the root, or ``database`` tables.

        Example:
            >>> Documents("./.mnemon", database=db).backend
            'database'
        """
        return "files" if self.database is None else "database"

    def folder(self, status: DocumentStatus) -> Path:
        """``documents/active`` or ``documents/archived`` (on the database: the folder the
        files would have; nothing is written there)."""
        return self._store.folder(status)

    def path_of(self, record: DocumentRecord) -> Path:
        """Absolute path of the file ``record`` names (on the database: where that file would
        be; its body is read with :meth:`read`)."""
        return self._store.path_of(record)

    def display_path(self, relative_path: str) -> str:
        """A root-relative path as the user finds it: workspace-relative, else absolute."""
        full = self.root / relative_path
        try:
            return full.relative_to(self.workspace).as_posix()
        except ValueError:
            return str(full)

    # -- reads -------------------------------------------------------------------------------

    @property
    def revision(self) -> str:
        """SHA-256 over every document's id, status, revision and hash (access times excluded)."""
        return self._load().revision

    def usage(self) -> Usage:
        """Active rendered bytes against ``active_limit_bytes``."""
        return Usage(used=self._load().active_bytes(), limit=self.active_limit_bytes)

    def list(self, status: DocumentStatus | Literal["all"] = "active") -> list[DocumentRecord]:
        """Records with ``status`` (or all), most recently updated first.

        Raises:
            InvalidInputError: ``status`` is not active, archived or all.

        Example:
            >>> [r.title for r in docs.list("all")]
            ['Release runbook', 'ADR 7: use SQLite']
        """
        if status not in (*STATUSES, "all"):
            raise InvalidInputError("status must be active, archived or all")
        return self._load().listed(status)

    def get(self, document_id: str) -> DocumentRecord:
        """The record of ``document_id``; :class:`NotFoundError` if there is none.

        A management read of ``index.json``: it never asks the kernel and never opens the file.

        Args:
            document_id: the document's UUID (any case; surrounding whitespace is ignored).

        Returns:
            The :class:`DocumentRecord` (title, status, revision, path, hash, ...).

        Raises:
            InvalidInputError: ``document_id`` is not a UUID (see :meth:`find_id` for prefixes).
            NotFoundError: no document has this id.
            StorageError: ``index.json`` cannot be read or is corrupt.

        Example:
            >>> docs.get(doc.id).title
            'ADR 7: use SQLite'
        """
        return self._load().record(validate_document_id(document_id))

    def read(self, document_id: str) -> str:
        """The body of ``document_id`` (trimmed, as stored), verified against its SHA-256.

        A management read: it never asks the kernel. A body that does not match triggers one
        repair first (when writes are on), then is read again.

        Args:
            document_id: the document's UUID, active or archived.

        Returns:
            The Markdown body without the frontmatter.

        Raises:
            InvalidInputError: ``document_id`` is not a UUID.
            NotFoundError: no such document.
            StorageError: the file is missing or damaged (code ``storage-damaged``), or a link.

        Example:
            >>> docs.read(doc.id)
            'We use SQLite because ...'
        """
        doc_id = validate_document_id(document_id)
        record = self._load().record(doc_id)
        body = self._store.body_or_none(record)
        if body is None and self.write_enabled:
            with tolerate_unwritable(f"repair of {self.directory} before a read"):
                self.repair()
            record = self._load().record(doc_id)
            body = self._store.body_or_none(record)
        if body is None:
            raise self._store.damaged(
                record, "Restore the file from a backup; mnemon will not overwrite it."
            )
        return body

    def find_id(self, prefix: str) -> str:
        """The full id of the one document whose id starts with ``prefix`` (≥4 hex chars).

        Raises:
            NotFoundError: ``prefix`` is not hexadecimal, or no id starts with it.
            InvalidInputError: fewer than 4 characters, or not text.
            AmbiguousMatchError: several ids start with it.

        Example:
            >>> docs.find_id(doc.id[:8]) == doc.id
            True
        """
        return self._load().id_with_prefix(validate_id_prefix(prefix))

    # -- capacity ----------------------------------------------------------------------------

    def capacity_plan(self, mutation: DocumentMutation | dict[str, Any]) -> CapacityPlan:
        """Render the would-be file of ``mutation`` and check it against the active budget.

        No writes. Candidates are the other active documents, least recently accessed first
        (then least recently updated).

        Args:
            mutation: a :class:`DocumentMutation` or its dict form (``action`` ``create`` or
                ``update``), checked exactly as :meth:`create` / :meth:`update` check it.

        Returns:
            A :class:`CapacityPlan`: ``fits``, the ``used`` / ``projected`` bytes against
            ``limit``, and the LRU ``candidates`` an archive could free.

        Raises:
            InvalidInputError: a bad mutation (unknown field, wrong action, bad value).
            NotFoundError: an update names no document.
            ReadOnlyError: an update names an archived document.
            StorageError: ``index.json`` or the updated document's file cannot be read.

        Example:
            >>> docs.capacity_plan({"action": "create", "title": "T", "content": "x"}).fits
            True
        """
        mutation = self._checked(mutation)
        state = self._load()
        old = None
        if mutation.action == "create":
            record, _ = new_record(state, mutation, self._store.now())
        else:
            assert mutation.id is not None
            old = state.record(mutation.id)
            require_active(old)
            body = self._store.body_for(old)
            record, _ = updated_record(old, mutation, body, self._store.now)
        return capacity_plan(state, mutation.action, record, old, self.active_limit_bytes)

    # -- mutations ---------------------------------------------------------------------------

    def create(
        self,
        title: str,
        content: str,
        *,
        description: str | None = None,
        source_paths: Sequence[str] = (),
        session_ids: Sequence[str] = (),
    ) -> DocumentReceipt:
        """Create an active Document.

        Args:
            title: at most 160 characters, whitespace collapsed.
            content: the Markdown body (NUL removed, trimmed, ≤ ``body_limit_bytes``).
            description: at most 600 characters.
            source_paths: workspace-relative files the Document describes (never opened).
            session_ids: the agent threads it came from.

        Returns:
            A committed :class:`DocumentReceipt`; ``document.revision`` is 1.

        Raises:
            InvalidInputError: a bad argument (code ``document-too-large`` for the body).
            CapacityError: it would not fit the active budget (the error carries the plan).
            StorageError: an I/O failure (nothing is left changed).
            ReadOnlyError / ParticipationError: the kernel refuses ``documents`` ``write``
                (before any I/O).

        Example:
            >>> docs.create("Release runbook", "1. Tag.\\n2. Publish.").document.status
            'active'
        """
        self.kernel.admit("documents", "write")
        mutation = self._checked(
            {
                "action": "create",
                "title": title,
                "description": description,
                "content": content,
                "source_paths": as_tuple(source_paths, "source_paths"),
                "session_ids": as_tuple(session_ids, "session_ids"),
            }
        )
        with self._store.exclusive():
            state = load_for_write(self._store)
            record, body = new_record(state, mutation, self._store.now())
            check_capacity(state, "create", record, None, self.active_limit_bytes)
            self._store.commit(
                state, (*state.records, record), writes=[self._store.write_of(record, body, False)]
            )
            return self._receipt("create", "Document created.", True, record)

    def update(
        self,
        document_id: str,
        *,
        title: str | None = None,
        description: str | None = None,
        content: str | None = None,
        source_paths: Sequence[str] | None = None,
        session_ids: Sequence[str] | None = None,
        expected_revision: int | None = None,
    ) -> DocumentReceipt:
        """Change an active Document; ``None`` keeps a field. Revision + 1 when anything changed.

        Args:
            document_id: an active document. expected_revision: the ``document.revision`` read
                (``None``: no check). The other fields are as for :meth:`create`, except that
                ``session_ids`` are added to the stored ones (the 20 most recent are kept).

        Returns:
            The committed :class:`DocumentReceipt` (``changed`` false when nothing changed).

        Raises:
            ConflictError: not at ``expected_revision``. ReadOnlyError: archived. Others: as create.

        Example:
            >>> docs.update(doc.id, content="New body", expected_revision=1).document.revision
            2
        """
        self.kernel.admit("documents", "write")
        mutation = self._checked(
            {
                "action": "update",
                "id": document_id,
                "title": title,
                "description": description,
                "content": content,
                "source_paths": optional_tuple(source_paths, "source_paths"),
                "session_ids": optional_tuple(session_ids, "session_ids"),
                "expected_revision": expected_revision,
            }
        )
        assert mutation.id is not None
        with self._store.exclusive():
            state = load_for_write(self._store)
            old = state.record(mutation.id)
            require_active(old)
            require_revision(old, mutation.expected_revision)
            state, old, old_body = body_for_write(self._store, state, old)
            record, body = updated_record(old, mutation, old_body, self._store.now)
            if same_document(old, record) and body == old_body:
                return self._receipt("update", "Document unchanged.", False, old)
            check_capacity(state, "update", record, old, self.active_limit_bytes)
            in_place = self.path_of(record) == self.path_of(old)
            self._store.commit(
                state,
                state.replaced(record),
                writes=[self._store.write_of(record, body, in_place)],
                removals=[] if in_place else [self.path_of(old)],
            )
            return self._receipt("update", "Document updated.", True, record)

    def apply(self, mutation: DocumentMutation | dict[str, Any]) -> DocumentReceipt:
        """Run a :class:`DocumentMutation` (the form graphs and tools pass around).

        Args:
            mutation: a :class:`DocumentMutation` or its dict form; ``create`` runs
                :meth:`create`, ``update`` runs :meth:`update` with the same fields.

        Returns:
            The committed :class:`DocumentReceipt` of that call.

        Raises:
            InvalidInputError: not a mutation, an unknown field, an action other than create or
                update, or a bad value.
            ConflictError / NotFoundError / CapacityError / ReadOnlyError / ParticipationError /
                StorageError: as :meth:`create` or :meth:`update`.

        Example:
            >>> docs.apply(DocumentMutation(action="create", title="T", content="x")).action
            'create'
        """
        m = self._checked(mutation)
        if m.action == "create":
            assert m.title is not None
            assert m.content is not None
            return self.create(
                m.title,
                m.content,
                description=m.description,
                source_paths=m.source_paths or (),
                session_ids=m.session_ids or (),
            )
        assert m.id is not None
        return self.update(
            m.id,
            title=m.title,
            description=m.description,
            content=m.content,
            source_paths=m.source_paths,
            session_ids=m.session_ids,
            expected_revision=m.expected_revision,
        )

    def archive(
        self,
        document_id: str,
        expected_revision: int,
        summary: str | None = None,
        space_ids: Sequence[str] = (),
        *,
        for_capacity: bool = False,
    ) -> DocumentReceipt:
        """Move an active Document to ``archived/`` after its cold reference was stored.

        Args:
            document_id: the document; ``expected_revision``: the revision its plan saw.
            summary: the archive summary (≤1,000 characters).
            space_ids: the Memory Spaces holding the reference (``memory_body_ids`` on the
                wire); at least one, else use :meth:`archive_without_index`.
            for_capacity: the LRU move of an overflow (Documents maintenance, not write).

        Returns:
            The receipt; the archived copy (revision + 1, ``archived_at``) never changes again.

        Raises:
            ConflictError: the document changed since the plan ("document changed while
                archival was running; the active copy was preserved"); nothing moved.
            ReadOnlyError: the document is already archived, or writes are off.
            InvalidInputError: no ``space_ids``, or a bad id, revision or summary.
            NotFoundError: no such document.
            ParticipationError: the kernel refuses ``documents`` ``write`` (``maintenance``
                with ``for_capacity``), before any I/O.
            StorageError: the document file cannot be read, or the disk refused the move.

        Example:
            >>> docs.archive(plan.document_id, plan.revision, "Summary.", ["space-1"]).indexed
            True
        """
        ids = validate_space_ids(space_ids)
        if not ids:
            raise InvalidInputError(
                "memory_body_ids must name the Memory Space(s) holding the cold reference; "
                "use archive_without_index() when no Memory Space can take it"
            )
        return self._archive(document_id, expected_revision, summary, ids, True, for_capacity)

    def archive_without_index(
        self,
        document_id: str,
        expected_revision: int,
        summary: str | None = None,
        *,
        for_capacity: bool = False,
    ) -> DocumentReceipt:
        """Archive when no Memory Space can take a cold reference (no worker, no index).

        Same revision-checked move as :meth:`archive`; the record keeps its file path and hash
        so the archived copy stays reachable through Documents search with ``include_archived``.

        Example:
            >>> docs.archive_without_index(doc.id, 2).message
            'Document archived without a Memory Space index.'
        """
        return self._archive(document_id, expected_revision, summary, (), False, for_capacity)

    # -- cold-archive primitives --------------------------------------------------------------

    def plan_archive(
        self,
        document_id: str | None = None,
        *,
        mutation: DocumentMutation | dict[str, Any] | None = None,
    ) -> ArchivePlan | None:
        """Snapshot the Document to archive next (``None`` if there is no candidate).

        With ``document_id``: that document (manual archiving). Otherwise the least recently used
        active document, excluding the one ``mutation`` updates. The plan's ``revision`` is what
        :meth:`archive` will require.

        Example:
            >>> docs.plan_archive(doc.id).revision
            1
        """
        if document_id is not None and mutation is not None:
            raise InvalidInputError("give document_id or mutation, not both")
        self.kernel.admit("documents", "write" if document_id is not None else "maintenance")
        state = self._load()
        doc_id = None if document_id is None else validate_document_id(document_id)
        excluded = None
        if mutation is not None:
            checked = self._checked(mutation)
            excluded = checked.id if checked.action == "update" else None
        record = archive_candidate(state, doc_id, excluded)
        if record is None:
            return None
        body = self._store.body_for(record)
        return archive_plan(record, body, self.display_path(archived_relative_path(record)))

    def cold_reference(self, plan: ArchivePlan, summary: str) -> ColdReference:
        """The reference a Memory Space must hold before ``plan``'s document is archived.

        It names the document, carries ``summary`` (≤1,000 chars), the exact archived path and
        the content SHA-256, so the cold copy can be found and verified later.

        Example:
            >>> docs.cold_reference(plan, "How releases are published.").text.splitlines()[0]
            'Archived project Document: Release runbook'
        """
        if not isinstance(plan, ArchivePlan):
            raise InvalidInputError("plan must be an ArchivePlan from plan_archive()")
        text_summary = validate_summary(summary, required=True)
        assert text_summary is not None
        return cold_reference_for(plan, text_summary)

    # -- search ------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        include_archived: bool = False,
        limit: int = DEFAULT_SEARCH_LIMIT,
    ) -> DocumentSearchResult:
        """Rank Documents for ``query``; an empty query lists the most recently updated.

        Scoring is described in :mod:`._search` (whole query +12 / +7 / +4 in title /
        description / body, per token +4 / +2 / +1, ties to the more recent). Returned documents
        count as accessed (for LRU archiving). With no match, up to 3 recent documents come back
        as ``suggestions`` (score 0; not matches, not marked accessed).

        Args:
            query: at most 2,000 characters.
            include_archived: search archived documents too.
            limit: 1..50 results.

        Returns:
            A :class:`DocumentSearchResult`: ``results`` best first, ``total`` (every match
            before ``limit``), a ``hint`` for the model, and ``suggestions`` when nothing matched.

        Raises:
            InvalidInputError: a bad argument.
            ParticipationError: the kernel refuses ``documents`` ``recall`` (nothing was read).
            StorageError: ``index.json`` cannot be read or is corrupt.

        Example:
            >>> [hit.title for hit in docs.search("release publish").results]
            ['Release runbook']
        """
        self.kernel.admit("documents", "recall")
        query = validate_query(query)
        checked_bool(include_archived, "include_archived")
        limit = validate_search_limit(limit)
        state = self._load()
        with self._store.mutex:
            read_body = body_reader(self._store, self._search, state, include_archived)
            scope, unreadable = sync_scope(self._search, state, include_archived, read_body)
            ranked, total = rank(self._search, scope, query, limit)
        notes = unreadable_notes(unreadable)
        if ranked:
            hits = result_hits(ranked, query, read_body)
            if not self._touch([r.id for r, _ in ranked]):
                notes.append("Access times could not be recorded.")
            return matched(query, include_archived, total, hits, notes)
        if not scope.numbers:
            return no_documents(query, include_archived)
        return suggested(query, include_archived, scope, read_body, notes)

    # -- repair ------------------------------------------------------------------------------

    def repair(self) -> RepairReport:
        """Make the files agree with ``index.json`` after a crash; returns what changed.

        Stale files are re-rendered from any copy whose SHA-256 matches, files no record owns
        and dead writers' temp files are removed, a missing ``index.json`` is rebuilt from the
        frontmatter; a body found nowhere is reported in ``unrecoverable`` (see :mod:`._repair`).

        Example:
            >>> docs.repair().changed
            False
        """
        return repair(self._store)

    # -- internals ---------------------------------------------------------------------------

    def _load(self) -> State:
        return self._store.load()

    def _checked(self, mutation: Any) -> DocumentMutation:
        return checked_mutation(
            mutation, body_limit=self.body_limit_bytes, workspace=self.workspace, root=self.root
        )

    def _archive(
        self,
        document_id: Any,
        expected_revision: Any,
        summary: Any,
        space_ids: tuple[str, ...],
        indexed: bool,
        for_capacity: bool,
    ) -> DocumentReceipt:
        checked_bool(for_capacity, "for_capacity")
        self.kernel.admit("documents", "maintenance" if for_capacity else "write")
        doc_id = validate_document_id(document_id)
        expected = validate_revision(expected_revision)
        text = validate_summary(summary, required=False)
        if text is None and not indexed:
            text = "Archived without a Memory Space index."
        with self._store.exclusive():
            state = load_for_write(self._store)
            old = state.record(doc_id)
            require_archivable(old, expected)
            state, old, body = body_for_write(self._store, state, old)
            record = archived_record(old, body, space_ids, text, self._store.now)
            self._store.commit(
                state,
                state.replaced(record),
                writes=[self._store.write_of(record, body, False)],
                removals=[self.path_of(old)],
            )
            message = (
                "Document archived."
                if indexed
                else "Document archived without a Memory Space index."
            )
            receipt = self._receipt("archive", message, True, record)
            return receipt.model_copy(update={"indexed": indexed})

    def _receipt(
        self, action: str, message: str, changed: bool, record: DocumentRecord
    ) -> DocumentReceipt:
        return committed_receipt(
            self._load(), action, message, changed, record, self.active_limit_bytes
        )

    def _touch(self, ids: Sequence[str]) -> bool:
        """Record an access of ``ids`` (for LRU archiving); False when it was not recorded."""
        return self.write_enabled and record_access(self._store, ids)
