"""Building Document records: new, updated, archived, rebuilt from a file; capacity and archive
plans; the cold reference text.

Pure functions over the committed :class:`~._state.State`: they decide what a mutation would
write, never write it. ``now`` arguments are called only when a timestamp is needed, so an
injected clock advances exactly as often as before.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Literal

from langgraph_mnemon.contracts import Usage
from langgraph_mnemon.errors import CapacityError, ConflictError, InvalidInputError, ReadOnlyError
from langgraph_mnemon.memory_layers.documents._models import (
    ARCHIVE_WORKER_BODY_CHARS,
    MAX_SESSION_IDS,
    MAX_SPACE_IDS,
    ArchivePlan,
    CapacityCandidate,
    CapacityPlan,
    ColdReference,
    DocumentMutation,
    DocumentReceipt,
    DocumentRecord,
    DocumentStatus,
)
from langgraph_mnemon.memory_layers.documents._state import State, lru_key
from langgraph_mnemon.memory_layers.documents._text import sha256, sized, slugify
from langgraph_mnemon.memory_layers.documents._validation import (
    validate_description,
    validate_title,
)

__all__ = [
    "archive_candidate",
    "archive_plan",
    "archived_record",
    "archived_relative_path",
    "capacity_plan",
    "check_capacity",
    "cold_reference_for",
    "committed_receipt",
    "new_record",
    "record_from_header",
    "require_active",
    "require_archivable",
    "require_revision",
    "same_document",
    "updated_record",
]

Action = Literal["create", "update"]


def require_active(record: DocumentRecord) -> None:
    """:class:`ReadOnlyError` for an archived document (archived copies never change)."""
    if record.status != "active":
        raise ReadOnlyError(
            "archived documents are immutable; create a new active revision instead"
        )


def require_revision(record: DocumentRecord, expected: int | None) -> None:
    """:class:`ConflictError` when an update's ``expected_revision`` is not the stored one."""
    if expected is not None and record.revision != expected:
        raise ConflictError(
            f"document {record.id} is at revision {record.revision}, not "
            f"{expected}; read it again and reapply your change"
        )


def require_archivable(record: DocumentRecord, expected: int | None = None) -> None:
    """An archive needs an active document, still at the revision its plan saw."""
    if record.status != "active":
        raise ReadOnlyError("only active documents can be archived")
    if expected is not None and record.revision != expected:
        raise ConflictError(
            "document changed while archival was running; the active copy was preserved "
            f"(revision {record.revision}, plan had {expected}). Plan the archive again."
        )


def same_document(a: DocumentRecord, b: DocumentRecord) -> bool:
    """Whether ``b`` changes nothing a reader of ``a`` sees (timestamps aside)."""
    return (
        a.title,
        a.description,
        a.filename,
        a.source_paths,
        a.session_ids,
        a.content_hash,
    ) == (b.title, b.description, b.filename, b.source_paths, b.session_ids, b.content_hash)


def _fresh_id(state: State) -> str:
    """A new UUID whose first 8 characters (the file-name suffix) no record uses yet."""
    taken = {r.id[:8] for r in state.records}
    while True:
        doc_id = str(uuid.uuid4())
        if doc_id[:8] not in taken:
            return doc_id


def new_record(state: State, mutation: DocumentMutation, stamp: str) -> tuple[DocumentRecord, str]:
    """The record a checked create would commit, and its body."""
    assert mutation.title is not None
    assert mutation.content is not None
    slug = slugify(mutation.title)
    doc_id = _fresh_id(state)
    filename = f"{slug}-{doc_id[:8]}.md"
    record = DocumentRecord(
        id=doc_id,
        title=mutation.title,
        description=mutation.description or "",
        status="active",
        filename=filename,
        relative_path=f"documents/active/{filename}",
        source_paths=mutation.source_paths or (),
        session_ids=mutation.session_ids or (),
        created_at=stamp,
        updated_at=stamp,
        last_accessed_at=stamp,
        revision=1,
        content_hash=sha256(mutation.content),
        size_bytes=0,
        space_ids=(),
    )
    return sized(record, mutation.content), mutation.content


def _merged_sessions(old: tuple[str, ...], new: tuple[str, ...] | None) -> tuple[str, ...]:
    """Stored session ids with ``new`` moved to the end, the 20 most recent kept."""
    sessions = list(old)
    for sid in new or ():
        if sid in sessions:
            sessions.remove(sid)
        sessions.append(sid)
    return tuple(sessions[-MAX_SESSION_IDS:])


def updated_record(
    old: DocumentRecord, mutation: DocumentMutation, old_body: str, now: Callable[[], str]
) -> tuple[DocumentRecord, str]:
    """The record a checked update would commit and its body (``old`` itself when unchanged)."""
    body = mutation.content if mutation.content is not None else old_body
    title = mutation.title if mutation.title is not None else old.title
    filename = f"{slugify(title)}-{old.id[:8]}.md"

    def kept(value: Any, stored: Any) -> Any:
        return value if value is not None else stored

    candidate = old.model_copy(
        update={
            "title": title,
            "description": kept(mutation.description, old.description),
            "source_paths": kept(mutation.source_paths, old.source_paths),
            "session_ids": _merged_sessions(old.session_ids, mutation.session_ids),
            "filename": filename,
            "relative_path": f"documents/active/{filename}",
            "content_hash": sha256(body),
        }
    )
    if same_document(old, candidate) and body == old_body:
        return old, old_body
    stamp = now()
    record = candidate.model_copy(
        update={"revision": old.revision + 1, "updated_at": stamp, "last_accessed_at": stamp}
    )
    return sized(record, body), body


def archived_record(
    old: DocumentRecord,
    body: str,
    space_ids: tuple[str, ...],
    summary: str | None,
    now: Callable[[], str],
) -> DocumentRecord:
    """``old`` as its archived copy: status, path, revision + 1, spaces merged, summary."""
    merged = list(old.space_ids)
    merged += [m for m in space_ids if m not in merged]
    if len(merged) > MAX_SPACE_IDS:
        raise InvalidInputError(f"a document can name at most {MAX_SPACE_IDS} Memory Spaces")
    stamp = now()
    record = old.model_copy(
        update={
            "status": "archived",
            "relative_path": f"documents/archived/{old.filename}",
            "revision": old.revision + 1,
            "archived_at": stamp,
            "last_accessed_at": stamp,
            "space_ids": tuple(merged),
            "archive_summary": summary,
        }
    )
    return sized(record, body)


def record_from_header(
    header: dict[str, Any], body: str, name: str, status: DocumentStatus, now: Callable[[], str]
) -> DocumentRecord | None:
    """A record rebuilt from a file's frontmatter (``None`` when the name does not match its id).

    Raises ``KeyError`` / ``TypeError`` / ``MnemonError`` / pydantic errors for a header that
    cannot make a record; the caller skips such files.
    """
    doc_id = header["id"]
    if not name.endswith(f"-{doc_id[:8]}.md"):
        return None
    stamp = header.get("updated_at") or now()
    record = DocumentRecord(
        id=doc_id,
        title=validate_title(header.get("title") or "Untitled document"),
        description=validate_description(header.get("description", "")),
        status=status,
        filename=name,
        relative_path=f"documents/{status}/{name}",
        source_paths=tuple(header.get("source_paths") or ()),
        session_ids=tuple(header.get("session_ids") or ()),
        created_at=header.get("created_at") or stamp,
        updated_at=stamp,
        last_accessed_at=stamp,
        revision=1,
        content_hash=sha256(body),
        size_bytes=0,
        space_ids=tuple(header.get("memory_body_ids") or ()),
        archived_at=stamp if status == "archived" else None,
    )
    return sized(record, body)


def committed_receipt(
    state: State, action: str, message: str, changed: bool, record: DocumentRecord, limit: int
) -> DocumentReceipt:
    """The committed receipt of a mutation, read back from ``state`` (the state after it)."""
    return DocumentReceipt(
        status="committed",
        message=message,
        changed=changed,
        revision=state.revision,
        action=action,  # type: ignore[arg-type]
        document=state.get(record.id) or record,
        usage=Usage(used=state.active_bytes(), limit=limit),
    )


# --- capacity ---------------------------------------------------------------------------------


def _projected(state: State, record: DocumentRecord, old: DocumentRecord | None) -> int:
    return state.active_bytes() - (old.size_bytes if old is not None else 0) + record.size_bytes


def capacity_plan(
    state: State,
    action: Action,
    record: DocumentRecord,
    old: DocumentRecord | None,
    limit: int,
) -> CapacityPlan:
    """Whether writing ``record`` (replacing ``old``) fits ``limit``; LRU candidates if not."""
    used = state.active_bytes()
    projected = _projected(state, record, old)
    fits = projected <= limit or not projected > used
    candidates = sorted(state.active(excluded=record.id), key=lru_key)
    return CapacityPlan(
        action=action,
        document_id=old.id if old is not None else None,
        size_bytes=record.size_bytes,
        used=used,
        projected=projected,
        limit=limit,
        fits=fits,
        candidates=tuple(
            CapacityCandidate(
                id=r.id,
                title=r.title,
                revision=r.revision,
                size_bytes=r.size_bytes,
                last_accessed_at=r.last_accessed_at,
                updated_at=r.updated_at,
                relative_path=r.relative_path,
            )
            for r in candidates
        ),
    )


def check_capacity(
    state: State,
    action: Action,
    record: DocumentRecord,
    old: DocumentRecord | None,
    limit: int,
) -> None:
    """Raise :class:`CapacityError` (with the plan) when ``record`` grows the set past ``limit``."""
    projected = _projected(state, record, old)
    if projected <= limit or projected <= state.active_bytes():
        return  # fits (the full plan with its candidates is only built when it does not)
    plan = capacity_plan(state, action, record, old, limit)
    message = (
        f"Would exceed active document capacity: {plan.projected} bytes "
        f"(limit {plan.limit}). Archive the least-recently-used active document before "
        "retrying."
    )
    if record.size_bytes > plan.limit:
        message += (
            f" This document alone renders to {record.size_bytes} bytes, more than the whole "
            "budget; shorten it or raise documents.active_limit_bytes."
        )
    raise CapacityError(message, plan=plan, code="document-capacity")


# --- archiving --------------------------------------------------------------------------------


def archive_candidate(
    state: State, document_id: str | None, excluded: str | None
) -> DocumentRecord | None:
    """The named active document, else the least recently used active one but ``excluded``."""
    if document_id is not None:
        record = state.record(document_id)
        require_archivable(record)
        return record
    active = state.active(excluded)
    return min(active, key=lru_key) if active else None


def archive_plan(record: DocumentRecord, body: str, archived_path: str) -> ArchivePlan:
    """The snapshot an archive worker gets; ``archived_path`` is where the copy will be shown."""
    return ArchivePlan(
        document_id=record.id,
        revision=record.revision,
        title=record.title,
        description=record.description,
        content_hash=record.content_hash,
        size_bytes=record.size_bytes,
        last_accessed_at=record.last_accessed_at,
        updated_at=record.updated_at,
        source_paths=record.source_paths,
        active_relative_path=record.relative_path,
        archived_relative_path=archived_relative_path(record),
        archived_path=archived_path,
        content=body[:ARCHIVE_WORKER_BODY_CHARS],
        content_truncated=len(body) > ARCHIVE_WORKER_BODY_CHARS,
    )


def archived_relative_path(record: DocumentRecord) -> str:
    """The root-relative path ``record``'s archived copy has."""
    return f"documents/archived/{record.filename}"


def cold_reference_for(plan: ArchivePlan, summary: str) -> ColdReference:
    """The reference text for ``plan`` with a checked ``summary``."""
    text = "\n".join(
        [
            f"Archived project Document: {plan.title}",
            f"Summary: {summary}",
            f"Cold copy: {plan.archived_path}",
            f"SHA-256: {plan.content_hash}",
            f"Document id: {plan.document_id} (revision {plan.revision} when archived)",
        ]
    )
    return ColdReference(
        document_id=plan.document_id,
        revision=plan.revision,
        title=plan.title,
        summary=summary,
        archived_path=plan.archived_path,
        archived_relative_path=plan.archived_relative_path,
        sha256=plan.content_hash,
        text=text,
    )
