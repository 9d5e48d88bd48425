"""What a learning pass reads, proposes and records: messages, candidates, proposals, receipts.

A pass turns the messages of one thread that are new since its last pass into candidate
memories (a fact, preference, decision, plan or event, with who said it and when), proposes
one action per candidate (``add``, ``update``, ``supersede`` or ``skip``), and records a
:class:`LearnReceipt` for every change or refusal. The whole pass is a :class:`LearnPass`
row, so ``mnemon status``, the control plane and an undo read it back on any replica.

Example:
    >>> Candidate(kind="preference", content="I prefer tea.", who="user").category
    'preference'
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from langgraph_mnemon.contracts import FrozenModel, Receipt

__all__ = [
    "CANDIDATE_KINDS",
    "MAX_LEARNED_CHARS",
    "Candidate",
    "CandidateKind",
    "LearnAction",
    "LearnMessage",
    "LearnPass",
    "LearnReceipt",
    "Proposal",
    "category_of",
]

CandidateKind = Literal["fact", "preference", "decision", "plan", "event"]
CANDIDATE_KINDS: tuple[str, ...] = ("fact", "preference", "decision", "plan", "event")
LearnAction = Literal["add", "update", "supersede", "skip", "undo"]
MAX_LEARNED_CHARS = 1_000
"""The longest learned memory: one statement, not a transcript (longer proposals are refused)."""

# Memory Space categories for each candidate kind (spaces know no "plan" or "event").
_CATEGORY = {
    "fact": "fact",
    "preference": "preference",
    "decision": "decision",
    "plan": "context",
    "event": "fact",
}


def category_of(kind: str) -> str:
    """The Memory Space category a candidate kind is stored under."""
    return _CATEGORY.get(kind, "general")


class LearnMessage(FrozenModel):
    """One message of the thread as the pass reads it: role, text, position, fingerprint."""

    role: Literal["user", "assistant"]
    text: str
    index: int = Field(ge=0)
    fingerprint: str = Field(min_length=1, max_length=64)
    who: str = "user"
    when: str | None = None


class Candidate(FrozenModel):
    """A statement worth keeping, as an extractor found it (not yet validated)."""

    kind: CandidateKind
    content: str = Field(min_length=1)
    who: str = "user"
    when: str | None = None
    corrects: bool = False
    message_index: int | None = None

    @property
    def category(self) -> str:
        """The Memory Space category the candidate is stored under."""
        return category_of(self.kind)


class Proposal(FrozenModel):
    """One proposed action for one candidate. ``target_id`` names the memory an ``update`` or
    ``supersede`` replaces; ``space_id`` a space the proposer insists on (validated)."""

    action: LearnAction
    kind: CandidateKind = "fact"
    content: str = ""
    who: str = "user"
    when: str | None = None
    target_id: str | None = None
    space_id: str | None = None
    reason: str = ""


class LearnReceipt(Receipt):
    """What one proposal did: ``committed`` (stored), ``skipped`` (nothing to do, e.g. a
    duplicate or a ``skip``) or ``rejected`` (refused by the host; ``message`` says why).

    ``memory_id`` is the memory written, ``replaced_id`` the one it superseded.
    """

    action: LearnAction
    kind: CandidateKind | None = None
    content: str = ""
    memory_id: str | None = None
    replaced_id: str | None = None
    space_id: str | None = None
    quoted: bool = False


class LearnPass(FrozenModel):
    """One learning pass over a thread, as recorded.

    ``status``: ``committed`` (at least one memory written), ``skipped`` (nothing new or
    nothing worth keeping), ``refused`` (the kernel refused Memory Spaces writes; ``reason``
    names the setting), ``failed`` (the model or a provider failed; nothing was written after
    the failure), ``undone`` (an undo reverted its changes).
    """

    pass_id: str
    thread_id: str
    user: str
    project: str
    extractor: str
    status: Literal["running", "committed", "skipped", "refused", "failed", "undone"]
    reason: str = ""
    started_at: float
    finished_at: float
    messages: int = 0
    receipts: tuple[LearnReceipt, ...] = ()
    undone_at: float | None = None

    @property
    def learned(self) -> list[LearnReceipt]:
        """The committed changes of the pass (an undo's receipts are not learning)."""
        return [
            r
            for r in self.receipts
            if r.status == "committed" and r.memory_id and r.action != "undo"
        ]
