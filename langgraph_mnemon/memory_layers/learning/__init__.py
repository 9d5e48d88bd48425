"""Learning from conversations: a pass per idle thread, validated and receipted by the host.

See :mod:`._service` for the pass, :mod:`._heuristic` for the offline extractor and
:mod:`._statement` for why learned text is always data.
"""

from langgraph_mnemon.memory_layers.learning._heuristic import content_words, extract_candidates
from langgraph_mnemon.memory_layers.learning._models import (
    CANDIDATE_KINDS,
    MAX_LEARNED_CHARS,
    Candidate,
    CandidateKind,
    LearnAction,
    LearnMessage,
    LearnPass,
    LearnReceipt,
    Proposal,
    category_of,
)
from langgraph_mnemon.memory_layers.learning._service import (
    Learning,
    PassContext,
    check_thread,
    learned_space_id,
)
from langgraph_mnemon.memory_layers.learning._statement import (
    reads_as_instruction,
    render_statement,
)
from langgraph_mnemon.memory_layers.learning._store import MIGRATIONS, LearnPasses

__all__ = [
    "CANDIDATE_KINDS",
    "MAX_LEARNED_CHARS",
    "MIGRATIONS",
    "Candidate",
    "CandidateKind",
    "LearnAction",
    "LearnMessage",
    "LearnPass",
    "LearnPasses",
    "LearnReceipt",
    "Learning",
    "PassContext",
    "Proposal",
    "category_of",
    "check_thread",
    "content_words",
    "extract_candidates",
    "learned_space_id",
    "reads_as_instruction",
    "render_statement",
]
