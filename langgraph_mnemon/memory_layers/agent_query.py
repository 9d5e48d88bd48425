"""Agent query: answer a question from direct-search evidence only, with honest citations.

A worker with no tools answers from the rows a direct search returned; the host keeps only the
citations that name a real (space id, memory id) pair of that evidence. With no model, the
answer is the evidence itself, best first.

Example:
    >>> answer = filter_citations(proposed, evidence_rows)
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from langgraph_mnemon.memory_layers.spaces import MemoryRecord

__all__ = ["Citation", "QueryAnswer", "evidence_answer", "filter_citations"]


class Citation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # The worker's answer tool: the model fills the seed's wire name, Python reads space_id.
    memory_body_id: str = Field(description="The Memory Space id of the cited row.")
    id: str = Field(description="The memory id of the cited row.")

    @property
    def space_id(self) -> str:
        """The Memory Space of the cited row."""
        return self.memory_body_id


class QueryAnswer(BaseModel):
    """The worker's answer and the evidence rows it cites."""

    model_config = ConfigDict(extra="forbid")

    answer: str
    citations: list[Citation] = Field(default_factory=list)


def filter_citations(answer: QueryAnswer, evidence: Sequence[MemoryRecord]) -> QueryAnswer:
    """Keep only citations of rows that were in the evidence, once each, in order."""
    real = {(row.space_id, row.id) for row in evidence}
    kept: list[Citation] = []
    for citation in answer.citations:
        key = (citation.space_id, citation.id)
        if key in real and citation not in kept:
            kept.append(citation)
    return QueryAnswer(answer=answer.answer, citations=kept)


def evidence_answer(evidence: Sequence[MemoryRecord], max_rows: int = 5) -> QueryAnswer:
    """The no-model answer: the best rows verbatim, each cited."""
    rows = list(evidence)[:max_rows]
    if not rows:
        return QueryAnswer(answer="No stored memory matches this question.")
    return QueryAnswer(
        answer="\n".join(f"- {row.content}" for row in rows),
        citations=[Citation(memory_body_id=row.space_id or "", id=row.id) for row in rows],
    )
