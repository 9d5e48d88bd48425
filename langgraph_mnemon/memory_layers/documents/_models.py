"""Documents models and limits: the ``index.json`` record, mutations, plans, receipts, hits.

The bottom layer of the package: plain pydantic models and the numbers every other module
checks against. Nothing here reads a file.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import AliasChoices, ConfigDict, Field, model_validator

from langgraph_mnemon.contracts import FrozenModel, Outcome, Receipt, StepOutcome, Usage

__all__ = [
    "ARCHIVE_WORKER_BODY_CHARS",
    "DEFAULT_ACTIVE_LIMIT_BYTES",
    "DEFAULT_BODY_LIMIT_BYTES",
    "DEFAULT_SEARCH_LIMIT",
    "DOCUMENT_ID_PATTERN",
    "HEX64",
    "MAX_DESCRIPTION_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_SEARCH_LIMIT",
    "MAX_SESSION_IDS",
    "MAX_SESSION_ID_CHARS",
    "MAX_SOURCE_PATHS",
    "MAX_SOURCE_PATH_CHARS",
    "MAX_SPACE_IDS",
    "MAX_SPACE_ID_CHARS",
    "MAX_SUMMARY_CHARS",
    "MAX_TITLE_CHARS",
    "STATUSES",
    "ArchivePlan",
    "CapacityCandidate",
    "CapacityPlan",
    "ColdReference",
    "DocumentHit",
    "DocumentMutation",
    "DocumentReceipt",
    "DocumentRecord",
    "DocumentSearchResult",
    "DocumentStatus",
    "IndexFile",
    "RepairReport",
]

DocumentStatus = Literal["active", "archived"]
STATUSES: tuple[DocumentStatus, ...] = ("active", "archived")

DEFAULT_BODY_LIMIT_BYTES = 2 * 1024 * 1024
DEFAULT_ACTIVE_LIMIT_BYTES = 10 * 1024 * 1024
MAX_TITLE_CHARS = 160
MAX_DESCRIPTION_CHARS = 600
MAX_SOURCE_PATHS = 50
MAX_SOURCE_PATH_CHARS = 1024
MAX_SESSION_IDS = 20
MAX_SESSION_ID_CHARS = 200
MAX_SPACE_IDS = 20
MAX_SPACE_ID_CHARS = 1000
MAX_SUMMARY_CHARS = 1000
MAX_QUERY_CHARS = 2000
MAX_SEARCH_LIMIT = 50
DEFAULT_SEARCH_LIMIT = 20
ARCHIVE_WORKER_BODY_CHARS = 60_000
DOCUMENT_ID_PATTERN = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")


class DocumentRecord(FrozenModel):
    """One Document as ``index.json`` stores it.

    ``revision`` starts at 1 and grows by one per update and per archive. ``content_hash`` is the
    SHA-256 of the body; ``size_bytes`` the UTF-8 size of the rendered file, frontmatter included.
    ``space_ids`` are the Memory Spaces holding its cold reference; ``index.json``, the
    frontmatter and every JSON dump call the field ``memory_body_ids`` (the seed's wire name).
    """

    # strict: index.json is parsed as written, no coercion; the alias keeps the wire name.
    model_config = ConfigDict(strict=True, populate_by_name=True, serialize_by_alias=True)

    id: str = Field(pattern=DOCUMENT_ID_PATTERN.pattern)
    title: str = Field(min_length=1, max_length=MAX_TITLE_CHARS)
    description: str = Field("", max_length=MAX_DESCRIPTION_CHARS)
    status: DocumentStatus
    filename: str = Field(min_length=4, max_length=80)
    relative_path: str = Field(min_length=1, max_length=200)
    source_paths: tuple[str, ...] = Field((), max_length=MAX_SOURCE_PATHS)
    session_ids: tuple[str, ...] = Field((), max_length=MAX_SESSION_IDS)
    created_at: str
    updated_at: str
    last_accessed_at: str
    revision: int = Field(ge=1)
    content_hash: str = Field(pattern=HEX64.pattern)
    size_bytes: int = Field(ge=0)
    space_ids: tuple[str, ...] = Field(
        (),
        max_length=MAX_SPACE_IDS,
        validation_alias=AliasChoices("space_ids", "memory_body_ids"),
        serialization_alias="memory_body_ids",
    )
    archived_at: str | None = None
    archive_summary: str | None = Field(None, max_length=MAX_SUMMARY_CHARS)

    @property
    def memory_body_ids(self) -> tuple[str, ...]:
        """:attr:`space_ids` under its wire name (callers of the seed API read this)."""
        return self.space_ids

    @model_validator(mode="after")
    def _consistent(self) -> DocumentRecord:
        if "/" in self.filename or not self.filename.endswith(f"-{self.id[:8]}.md"):
            raise ValueError(f"filename must be '<slug>-{self.id[:8]}.md'")
        # Older builds stored ".mnemon/documents/..."; only the tail is significant.
        if not self.relative_path.endswith(f"documents/{self.status}/{self.filename}"):
            raise ValueError(f"relative_path must end with documents/{self.status}/<filename>")
        return self


class IndexFile(FrozenModel):
    """``documents/index.json``: a version and the records, in commit order."""

    model_config = ConfigDict(strict=True)

    version: Literal[1]
    documents: tuple[DocumentRecord, ...]


class DocumentMutation(FrozenModel):
    """A create or update as :meth:`Documents.capacity_plan` takes it.

    For ``update`` every ``None`` field keeps the stored value.

    Example:
        >>> DocumentMutation(action="create", title="ADR 7", content="We use SQLite.").action
        'create'
    """

    action: Literal["create", "update"]
    id: str | None = None
    title: str | None = None
    description: str | None = None
    content: str | None = None
    source_paths: tuple[str, ...] | None = None
    session_ids: tuple[str, ...] | None = None
    expected_revision: int | None = None


class CapacityCandidate(FrozenModel):
    """An active Document that could be archived to make room (least recently used first)."""

    id: str
    title: str
    revision: int
    size_bytes: int
    last_accessed_at: str
    updated_at: str
    relative_path: str


class CapacityPlan(FrozenModel):
    """Whether a create / update fits the active budget, and what could be archived if not.

    ``projected`` is the active total after the mutation; ``size_bytes`` the rendered size of
    the document it would write. ``candidates`` excludes the document being updated.
    """

    action: Literal["create", "update"]
    document_id: str | None
    size_bytes: int
    used: int
    projected: int
    limit: int
    fits: bool
    candidates: tuple[CapacityCandidate, ...]


class DocumentReceipt(Receipt):
    """Receipt of a Documents mutation.

    ``revision`` is the collection revision (:attr:`Documents.revision`); the document's own
    integer revision, used for ``expected_revision`` checks, is ``document.revision``.
    """

    action: Literal["create", "update", "archive"]
    document: DocumentRecord
    usage: Usage
    indexed: bool | None = Field(
        None, description="archive only: whether a Memory Space holds a cold reference."
    )
    # Set by the cold-archive run (index then move, maybe several documents, then the mutation).
    outcome: Outcome | None = None
    steps: tuple[StepOutcome, ...] = ()


class ArchivePlan(FrozenModel):
    """A snapshot of the Document to archive and the revision the archive will require.

    ``content`` is the body for an archive worker, cut at :data:`ARCHIVE_WORKER_BODY_CHARS`.
    ``archived_path`` is the exact path the archived copy will have (workspace-relative when the
    storage root is inside the workspace, otherwise absolute).
    """

    document_id: str
    revision: int
    title: str
    description: str
    content_hash: str
    size_bytes: int
    last_accessed_at: str
    updated_at: str
    source_paths: tuple[str, ...]
    active_relative_path: str
    archived_relative_path: str
    archived_path: str
    content: str
    content_truncated: bool


class ColdReference(FrozenModel):
    """What a Memory Space must hold before a Document is archived: enough to find it again."""

    document_id: str
    revision: int
    title: str
    summary: str
    archived_path: str
    archived_relative_path: str
    sha256: str
    text: str = Field(description="The reference as one text, ready to store.")


class DocumentHit(FrozenModel):
    """One search result (``kind="result"``) or no-match suggestion (``kind="suggestion"``)."""

    id: str
    title: str
    description: str
    status: DocumentStatus
    relative_path: str
    source_paths: tuple[str, ...]
    score: int
    content: str
    truncated: bool
    updated_at: str
    kind: Literal["result", "suggestion"] = "result"


class DocumentSearchResult(FrozenModel):
    """What :meth:`Documents.search` returns. ``total`` counts every match before ``limit``."""

    query: str
    include_archived: bool
    total: int
    results: tuple[DocumentHit, ...]
    hint: str
    suggestions: tuple[DocumentHit, ...] = ()
    suggestion_hint: str | None = None
    not_run: bool = False


class RepairReport(FrozenModel):
    """What :meth:`Documents.repair` changed on disk."""

    rewritten: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unrecoverable: tuple[str, ...] = ()
    rebuilt_index: bool = False

    @property
    def changed(self) -> bool:
        """True when the repair wrote or deleted anything."""
        return bool(self.rewritten or self.removed or self.rebuilt_index)
