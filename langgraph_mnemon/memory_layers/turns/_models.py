"""The TurnView and what it is made of: the view spec a strategy asks for, the projected
fragments, the host-only grants, the turn's scope, and the Wake and cue messages.

Example:
    >>> view = mem.turns.pinned(turn_id)
    >>> view.offers("documents/search").max_calls
    1
    >>> view.wake().metadata["source"]["form"]
    'recall'
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from langgraph_mnemon.contracts import FrozenModel, Scope
from langgraph_mnemon.errors import NotFoundError
from langgraph_mnemon.memory_layers.turns._facts import (
    PinnedRevisions,
    SourceName,
    ViewDiagnostic,
)
from langgraph_mnemon.memory_layers.turns._offers import ActionOffer, RouteOffer

__all__ = [
    "PLUGIN_NAME",
    "Cue",
    "SourceSpec",
    "TurnScope",
    "TurnView",
    "ViewFragment",
    "ViewGrants",
    "ViewSpec",
    "Wake",
    "plugin_metadata",
]

PLUGIN_NAME = "langgraph-mnemon"
"""``source.plugin`` of every message this package adds to a conversation."""


def plugin_metadata(form: str, **extra: Any) -> dict[str, Any]:
    """The ``source`` metadata of a message this plugin adds (``form``: recall, instructions,
    resume, warning)."""
    return {"source": {"kind": "plugin", "plugin": PLUGIN_NAME, "form": form, **extra}}


class SourceSpec(FrozenModel):
    """How one Source is projected: ``eager`` (its content) or ``cover`` (a one-line summary)."""

    source: SourceName
    role: Literal["eager", "cover"]
    allowance: int = Field(ge=0)


class ViewSpec(FrozenModel):
    """What a strategy asks for, before validation and projection."""

    strategy: Literal["layered", "general"]
    sources: tuple[SourceSpec, ...]
    routes: tuple[RouteOffer, ...]
    actions: tuple[ActionOffer, ...]
    recall_envelope: bool
    capacity_maintenance: bool
    idle_review: bool


class ViewFragment(FrozenModel):
    """The projected text of one Source, at most its allowance long."""

    source: SourceName
    role: Literal["eager", "cover"]
    text: str
    truncated: bool = False


class ViewGrants(FrozenModel):
    """Host-only authority of a view; never rendered for the model."""

    space_ids: tuple[str, ...] = ()
    documents: bool = False


class TurnScope(FrozenModel):
    """Who a turn belongs to. One turn id is pinned for exactly one scope.

    ``memory_scope`` is the user and project whose memory the turn sees (the local scope by
    default); the pinned :class:`TurnView` keeps it, and every tool call of the turn runs in it.

    Example:
        >>> TurnScope(thread_id="t1", agent_id="child", root=False)
        >>> TurnScope(thread_id="t2", memory_scope=Scope(user="alice")).memory_scope.user
        'alice'
    """

    thread_id: str = Field(min_length=1, max_length=512)
    agent_id: str = Field("main", min_length=1, max_length=512)
    workspace: str | None = None
    root: bool = Field(True, description="False for a child agent's turn (no root-only actions).")
    memory_scope: Scope = Field(default_factory=Scope)


class Wake(FrozenModel):
    """The Wake message: complete state, sent only when its digest changed in the thread."""

    text: str
    digest: str
    metadata: dict[str, Any]


class Cue(FrozenModel):
    """A short recall / writeback reminder, at most one per thread."""

    text: str
    metadata: dict[str, Any]


class TurnView(FrozenModel):
    """One immutable view of memory, pinned by a turn (and retained by its child agents).

    ``digest`` covers everything the view shows or grants; ``wake_digest`` only the Wake text.
    ``grants`` are host-only: tools check reads against them, the model never sees them.
    """

    id: str
    digest: str
    strategy: Literal["layered", "general"]
    created_at: str
    revisions: PinnedRevisions
    grants: ViewGrants
    fragments: tuple[ViewFragment, ...]
    routes: tuple[RouteOffer, ...]
    actions: tuple[ActionOffer, ...]
    tool_names: tuple[str, ...]
    diagnostics: tuple[ViewDiagnostic, ...]
    runtime_projected: bool
    recall_envelope: bool
    capacity_maintenance: bool
    idle_review: bool
    max_evidence_results: int
    max_evidence_characters: int
    wake_text: str
    wake_digest: str
    scope: Scope = Field(default_factory=Scope)
    """The user and project whose memory this view shows (pinned with the view)."""

    @property
    def projection(self) -> str:
        """The projected Source text (fragments joined by a blank line)."""
        return "\n\n".join(f.text for f in self.fragments)

    def wake(self) -> Wake:
        """The Wake message of this view with its plugin metadata (its digest, and the
        Runtime revision its snapshot shows when Runtime Memory is projected)."""
        revision = self.revisions.runtime if self.runtime_projected else None
        extra = {"runtime_revision": revision} if revision else {}
        return Wake(
            text=self.wake_text,
            digest=self.wake_digest,
            metadata=plugin_metadata("recall", digest=self.wake_digest, **extra),
        )

    def offers(self, offer_id: str) -> RouteOffer | ActionOffer:
        """The route or action offered under ``offer_id``.

        Raises:
            NotFoundError: the view offers nothing under that id.
        """
        for found in (*self.routes, *self.actions):
            if found.id == offer_id:
                return found
        known = ", ".join(o.id for o in (*self.routes, *self.actions)) or "none"
        raise NotFoundError(
            f"view {self.id} offers no route or action {offer_id!r} (offered: {known})"
        )
