"""Deterministic parts of Document cold archiving ("index first, move second").

Before the least-recently-used Document leaves the active set, a concise cold reference
(title, summary, exact archived path, SHA-256) is written to a Memory Space and its receipt
verified; only then is the file moved, under a revision check. With no Memory Space able to
take the reference, the document moves without one. A failure or conflict keeps it active.

The reference is a side write of maintenance: it is checked as an *automatic* Memory Spaces
write whatever asked for the archive (a person's explicit archive included). When the kernel
does not admit that (Memory Spaces write off or manual, the layer disabled, read-only),
:func:`~langgraph_mnemon.memory_layers.runtime.eligible_destinations` is empty and the seed's
local path runs: the document moves without an index.

Example:
    >>> plan = mem.documents.plan_archive()
    >>> summary = extractive_summary(plan)
"""

from __future__ import annotations

import re

from langgraph_mnemon.errors import MnemonError, ProviderError
from langgraph_mnemon.memory_layers.documents._models import ArchivePlan, ColdReference
from langgraph_mnemon.memory_layers.kernel import acting
from langgraph_mnemon.memory_layers.spaces import MemorySpaces, durable_copy

__all__ = ["SUMMARY_CHARS", "extractive_summary", "write_reference"]

SUMMARY_CHARS = 300
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
_MARKUP = re.compile(r"[#>*_`\[\]]+")


def extractive_summary(plan: ArchivePlan, max_chars: int = SUMMARY_CHARS) -> str:
    """A summary with no model: the description, else the first sentences of the body.

    Args:
        plan: the archive plan (its description and body are read).
        max_chars: the longest summary.

    Returns:
        Whole sentences up to ``max_chars`` (the title for an empty document, a cut with
        ``…`` when the first sentence alone is too long).

    Example:
        >>> extractive_summary(plan, 80)
        'How releases are tagged and published.'
    """
    source = plan.description.strip() or _MARKUP.sub(" ", plan.content)
    text = " ".join(source.split())
    if not text:
        return plan.title
    out = ""
    for sentence in _SENTENCE_END.split(text):
        candidate = f"{out} {sentence}".strip()
        if len(candidate) > max_chars:
            break
        out = candidate
    return out or text[: max_chars - 1] + "…"


def write_reference(spaces: MemorySpaces, reference: ColdReference, space_id: str) -> str:
    """Store the reference in ``space_id``; return the memory id of a committed copy.

    A provider that skipped the write as a duplicate counts only when an exact keyword recall
    finds the same text. The write runs as an automatic one (see the module docstring).

    Args:
        spaces: the Memory Spaces service.
        reference: what :meth:`Documents.cold_reference` built.
        space_id: the Memory Space to hold it.

    Returns:
        The memory id of the committed copy.

    Raises:
        ProviderError: the write failed or nothing was committed (the document stays active).

    Example:
        >>> memory_id = write_reference(mem.spaces, docs.cold_reference(plan, summary), space)
    """
    try:
        with acting("automatic"):
            receipt = spaces.remember(
                reference.text,
                space_id=space_id,
                category="context",
                tags=["document", "cold-archive"],
                metadata={
                    "document_id": reference.document_id,
                    "sha256": reference.sha256,
                    "archived_path": reference.archived_path,
                },
            )
    except MnemonError as exc:
        raise ProviderError(f"writing the cold reference to {space_id} failed: {exc}") from None
    copy = durable_copy(spaces, space_id, reference.text, receipt)
    if copy is None:
        raise ProviderError(
            f"the cold reference was not committed in {space_id} ({receipt.status}: "
            f"{receipt.message}); the document stays active"
        )
    return copy
