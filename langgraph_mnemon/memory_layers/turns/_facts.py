"""Source facts: what each memory Source looks like when a TurnView is composed.

The composer reads revisions, the Runtime snapshot and counts from the layer services (through
the small protocols below), then re-reads the revisions to check that nothing moved while it
composed. A Source whose read fails with a :class:`~langgraph_mnemon.errors.MnemonError` is
left out with an ``unavailable`` diagnostic.

Example:
    >>> facts = collect_source_facts(runtime=mem.runtime, documents=mem.documents)
    >>> facts.revisions().documents == mem.documents.revision
    True
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Literal, NamedTuple, Protocol, TypeVar, runtime_checkable

from langgraph_mnemon.contracts import FrozenModel
from langgraph_mnemon.errors import MnemonError
from langgraph_mnemon.memory_layers.runtime import RuntimeSnapshot

__all__ = [
    "DocumentsFacts",
    "DocumentsSource",
    "PinnedRevisions",
    "RuntimeFacts",
    "RuntimeSource",
    "ScopeSources",
    "SourceFacts",
    "SourceName",
    "SpacesFacts",
    "SpacesSource",
    "ViewDiagnostic",
    "collect_source_facts",
    "current_revisions",
]

SourceName = Literal["runtime", "documents", "memory-spaces"]
"""The view's Source names (the kernel layer of each: ``_offers.SOURCE_LAYERS``)."""

_T = TypeVar("_T")


class ViewDiagnostic(FrozenModel):
    """Something the model should know about a Source's availability in this view."""

    source: SourceName
    status: Literal["unavailable", "truncated"]
    detail: str


class RuntimeFacts(FrozenModel):
    """Runtime Memory as read for this composition: its revision and rendered snapshot
    (``None`` when Runtime Memory is not projected: the snapshot is then never read)."""

    revision: str
    snapshot: RuntimeSnapshot | None = None


class DocumentsFacts(FrozenModel):
    """Documents as read for this composition."""

    revision: str
    active: int


class SpacesFacts(FrozenModel):
    """The Memory Spaces catalog as read for this composition.

    ``revision`` is a digest of the catalog (ids, active flags, record revisions); ``readable``
    are the active spaces whose provider is registered, in catalog order; ``capabilities`` is
    the union of their provider capabilities.
    """

    revision: str
    total: int
    active: int
    readable: tuple[str, ...]
    capabilities: tuple[str, ...]


class PinnedRevisions(FrozenModel):
    """Source revisions a view was composed from (``None`` for a Source not read)."""

    runtime: str | None = None
    documents: str | None = None
    spaces: str | None = None


class SourceFacts(FrozenModel):
    """What each enabled Source looks like right now (``None``: disabled or unreadable)."""

    runtime: RuntimeFacts | None = None
    documents: DocumentsFacts | None = None
    spaces: SpacesFacts | None = None
    diagnostics: tuple[ViewDiagnostic, ...] = ()

    def revisions(self) -> PinnedRevisions:
        return PinnedRevisions(
            runtime=self.runtime.revision if self.runtime else None,
            documents=self.documents.revision if self.documents else None,
            spaces=self.spaces.revision if self.spaces else None,
        )


class RuntimeSource(Protocol):
    """What a composition reads of Runtime Memory (``RuntimeMemory`` satisfies it)."""

    @property
    def revision(self) -> str: ...

    def snapshot(
        self, branch: str | None = None, *, now: datetime | None = None
    ) -> RuntimeSnapshot: ...


class DocumentsSource(Protocol):
    """What a composition reads of Documents (``Documents`` satisfies it)."""

    @property
    def revision(self) -> str: ...

    def list(self, status: Any = "active") -> list[Any]: ...


@runtime_checkable
class SpacesSource(Protocol):
    """What a composition reads of Memory Spaces (``MemorySpaces`` satisfies it)."""

    def list_spaces(self, *, active: bool | None = None) -> list[Any]: ...


class ScopeSources(NamedTuple):
    """The three Sources of one scope (``None``: that Source is left out)."""

    runtime: RuntimeSource | None
    documents: DocumentsSource | None
    spaces: SpacesSource | None


def catalog_revision(records: Sequence[Any]) -> str:
    lines = "\n".join(
        f"{r.id} {int(bool(r.active))} {r.revision} {int(bool(r.provider_registered))}"
        for r in records
    )
    return hashlib.sha256(lines.encode()).hexdigest()


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def _read(
    source: SourceName, read: Callable[[], _T], diagnostics: list[ViewDiagnostic]
) -> _T | None:
    """``read()``, or ``None`` with an ``unavailable`` diagnostic when it fails."""
    try:
        return read()
    except MnemonError as exc:
        diagnostics.append(
            ViewDiagnostic(source=source, status="unavailable", detail=_one_line(exc))
        )
        return None


def _runtime_facts(
    runtime: RuntimeSource, branch: str | None, now: datetime | None, project: bool
) -> RuntimeFacts:
    if not project:
        return RuntimeFacts(revision=runtime.revision)
    snap = runtime.snapshot(branch, now=now)
    return RuntimeFacts(revision=snap.revision, snapshot=snap)


def _documents_facts(documents: DocumentsSource) -> DocumentsFacts:
    revision = documents.revision
    return DocumentsFacts(revision=revision, active=len(documents.list("active")))


def _spaces_facts(spaces: SpacesSource) -> SpacesFacts:
    records = spaces.list_spaces()
    active = [r for r in records if r.active]
    readable = [r for r in active if r.provider_registered]
    capabilities = sorted({c for r in readable for c in r.capabilities})
    return SpacesFacts(
        revision=catalog_revision(records),
        total=len(records),
        active=len(active),
        readable=tuple(r.id for r in readable),
        capabilities=tuple(capabilities),
    )


def _unregistered(facts: SpacesFacts) -> list[ViewDiagnostic]:
    missing = facts.active - len(facts.readable)
    if not missing:
        return []
    detail = f"{missing} active Memory Space(s) have no registered provider"
    return [ViewDiagnostic(source="memory-spaces", status="unavailable", detail=detail)]


def collect_source_facts(
    *,
    runtime: RuntimeSource | None = None,
    documents: DocumentsSource | None = None,
    spaces: SpacesSource | None = None,
    branch: str | None = None,
    now: datetime | None = None,
    project_runtime: bool = True,
) -> SourceFacts:
    """Read revisions, the Runtime snapshot and counts from the services given.

    Args:
        runtime, documents, spaces: the layer services; ``None`` is a disabled Source.
        branch: the git branch whose Runtime Memory entries are shown.
        now: the moment of the snapshot (default: the service's clock).
        project_runtime: ``False`` reads only the Runtime revision (the snapshot is the
            projection channel's read).

    Returns:
        The facts; a Source whose read failed with a :class:`MnemonError` is ``None`` with an
        ``unavailable`` diagnostic, and composition goes on with the others.

    Example:
        >>> collect_source_facts(runtime=mem.runtime).runtime.snapshot.text
    """
    notes: list[ViewDiagnostic] = []
    runtime_facts = documents_facts = spaces_facts = None
    if runtime is not None:
        runtime_facts = _read(
            "runtime", lambda: _runtime_facts(runtime, branch, now, project_runtime), notes
        )
    if documents is not None:
        documents_facts = _read("documents", lambda: _documents_facts(documents), notes)
    if spaces is not None:
        spaces_facts = _read("memory-spaces", lambda: _spaces_facts(spaces), notes)
        if spaces_facts is not None:
            notes.extend(_unregistered(spaces_facts))
    return SourceFacts(
        runtime=runtime_facts,
        documents=documents_facts,
        spaces=spaces_facts,
        diagnostics=tuple(notes),
    )


def current_revisions(
    runtime: RuntimeSource | None,
    documents: DocumentsSource | None,
    spaces: SpacesSource | None,
    pinned: PinnedRevisions,
) -> PinnedRevisions:
    """Re-read the revisions of the Sources that ``pinned`` has (others stay ``None``)."""
    return PinnedRevisions(
        runtime=runtime.revision if runtime is not None and pinned.runtime else None,
        documents=documents.revision if documents is not None and pinned.documents else None,
        spaces=(
            catalog_revision(spaces.list_spaces()) if spaces is not None and pinned.spaces else None
        ),
    )
