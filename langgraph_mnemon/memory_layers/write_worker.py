"""Deterministic parts of the long-term write worker.

The worker decides where a durable memory goes; the host owns every write and reports only what
receipts prove. With no model, the heuristic writes to the space whose name and description share
the most words with the memory (the first space on a tie), skips an exact duplicate, and creates
the default space only when none exists.

The worker gets only what its request needs: ``mnemon_forget`` only when the request asks to
forget or supersede (:func:`asks_to_forget`), at most :data:`MAX_WRITES_PER_RUN` writes per
run, and its receipt lists every write it made (:attr:`WriteReceipt.writes`).

Example:
    >>> space = choose_space(mem.spaces.list_spaces(active=True), "Deploys need two approvals")
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from langgraph_mnemon.contracts import Receipt
from langgraph_mnemon.memory_layers.spaces import MemoryReceipt, MemorySpaces, SpaceRecord

__all__ = [
    "MAX_WRITES_PER_RUN",
    "WriteCandidate",
    "WriteReceipt",
    "WriteRecord",
    "WriteResult",
    "asks_to_forget",
    "choose_space",
    "exact_duplicate",
    "summarize_receipts",
]

_WORD = re.compile(r"[^\W_]{2,}", re.UNICODE)
MAX_WRITES_PER_RUN = 4
"""Writes (remember, link, forget, create a space) one worker run may make; further write calls
get a structured refusal."""
# A request that asks to retire something: only then is the worker handed mnemon_forget.
_FORGET_REQUEST = re.compile(
    r"\b(?:forget|delete|erase|remove|supersed\w*|replaces|replaced\s+by|no\s+longer|"
    r"not\s+any\s?more|obsolete|outdated|instead\s+of)\b",
    re.IGNORECASE,
)


class WriteCandidate(BaseModel):
    """A durable memory the root agent wants kept."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, serialize_by_alias=True
    )

    content: str = Field(min_length=1, max_length=20_000)
    category: Literal["preference", "decision", "fact", "insight", "context", "general"] = "general"
    importance: int = Field(3, ge=1, le=5)
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    # ``memory_body_id`` is the seed's wire name (served graph input, JSON): accepted and
    # dumped under it, ``space_id`` in Python.
    space_id: str | None = Field(
        default=None,
        description="A Memory Space the caller insists on.",
        validation_alias=AliasChoices("space_id", "memory_body_id"),
        serialization_alias="memory_body_id",
    )
    intent: Literal["remember", "supersede", "forget"] | None = Field(
        default=None,
        description=(
            "What the request asks: store it, store it and retire what it supersedes, or "
            "retire a memory. None: decided from the text (asks_to_forget)."
        ),
    )


class WriteResult(BaseModel):
    """What the worker says it did (its result tool's schema)."""

    model_config = ConfigDict(extra="forbid")

    summary: str = ""
    action: Literal["stored", "skipped", "failed"]
    memory_body_ids: list[str] = Field(default_factory=list)


class WriteRecord(BaseModel):
    """One write a worker run made, as the host observed it (``status`` from its receipt)."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["remember", "link", "forget", "create-space"]
    space_id: str
    id: str | None = None
    status: str


class WriteReceipt(Receipt):
    """The host's account of a write run: only receipts it observed count. ``writes`` lists
    every write the run made (kind, space, id, status), the space it created included."""

    action: Literal["remember"] = "remember"
    space_ids: tuple[str, ...] = ()
    memory_ids: tuple[str, ...] = ()
    receipts: tuple[MemoryReceipt, ...] = ()
    summary: str = ""
    writes: tuple[WriteRecord, ...] = ()


def asks_to_forget(candidate: WriteCandidate) -> bool:
    """Whether the request asks to forget or supersede: ``intent`` when given, else a
    deterministic test of its text (forget, delete, remove, supersede, no longer, instead of,
    outdated ...). Only then does the worker get ``mnemon_forget``.

    Example:
        >>> asks_to_forget(WriteCandidate(content="Deploys no longer need two approvals."))
        True
    """
    if candidate.intent is not None:
        return candidate.intent in ("supersede", "forget")
    return _FORGET_REQUEST.search(candidate.content) is not None


def _words(text: str) -> set[str]:
    return set(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


def choose_space(spaces: Sequence[SpaceRecord], content: str) -> SpaceRecord | None:
    """The space whose name and description share the most words with ``content``."""
    if not spaces:
        return None
    words = _words(content)
    best = max(
        range(len(spaces)),
        key=lambda i: (len(words & _words(f"{spaces[i].name} {spaces[i].description}")), -i),
    )
    return spaces[best]


def exact_duplicate(spaces: MemorySpaces, space_id: str, content: str) -> str | None:
    """The id of a row in ``space_id`` whose text is exactly ``content``, if any.

    The check is a search, so it runs only while the kernel admits Memory Spaces recall for
    the current trigger; otherwise there is no duplicate check (``None``).
    """
    if not spaces.kernel.admits("memory_spaces", "recall"):
        return None
    found = spaces.search(content[:2000], mode="keyword", space_ids=[space_id], limit=10)
    return next((row.id for row in found.results if row.content == content.strip()), None)


def summarize_receipts(
    receipts: Sequence[MemoryReceipt],
    summary: str,
    *,
    skipped_duplicate: str | None = None,
    writes: Sequence[WriteRecord] = (),
) -> WriteReceipt:
    """One receipt for the run: committed only when a write was committed."""
    committed = [r for r in receipts if r.status == "committed"]
    revision = committed[-1].revision if committed else ""
    if committed:
        status, message = "committed", f"{len(committed)} memory write(s) committed."
    elif skipped_duplicate is not None:
        status, message = "skipped", "An identical memory is already stored; nothing written."
    elif any(r.completion == "pending" for r in receipts):
        status, message = "skipped", "The provider accepted the write for later; not stored yet."
    elif receipts:
        status, message = "failed", f"No write was committed ({receipts[-1].message})."
    else:
        status, message = "skipped", "The worker wrote nothing."
    ids = [r.id for r in committed if r.id]
    if skipped_duplicate:
        ids.append(skipped_duplicate)
    return WriteReceipt(
        status=status,  # type: ignore[arg-type]
        message=message,
        changed=bool(committed),
        revision=revision,
        space_ids=tuple(dict.fromkeys(r.space_id for r in receipts)),
        memory_ids=tuple(ids),
        receipts=tuple(receipts),
        summary=summary,
        writes=tuple(writes),
    )
