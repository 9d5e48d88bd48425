"""The per-turn evidence budgets, written once: the recall envelope, Related, the Documents
search and the Runtime search read them, and the offers table publishes them as each read
route's ``max_results`` / ``max_chars``.

Example:
    >>> RECALL_EVIDENCE == (RESULT_LIMIT, TOTAL_CHARS)
    True
"""

from __future__ import annotations

from langgraph_mnemon.memory_layers.documents import MODEL_MAX_CHARACTERS, MODEL_MAX_RECORDS

__all__ = [
    "ATTEMPTS",
    "DOCUMENT_MAX_CHARS",
    "DOCUMENT_MAX_RECORDS",
    "DOCUMENT_SEARCH_EVIDENCE",
    "FIRST_ATTEMPT_CHARS",
    "FIRST_ATTEMPT_RESULTS",
    "ITEM_CHARS",
    "MAX_MEDIUM_PER_ATTEMPT",
    "MAX_QUERY_CHARS",
    "MAX_UNKNOWN_PER_ATTEMPT",
    "RECALL_EVIDENCE",
    "RELATED_CHARS",
    "RELATED_EVIDENCE",
    "RELATED_FETCH",
    "RELATED_MAX_MEDIUM",
    "RELATED_MAX_UNKNOWN",
    "RELATED_RESULTS",
    "RESULT_LIMIT",
    "RUNTIME_SEARCH_CHARS",
    "RUNTIME_SEARCH_EVIDENCE",
    "RUNTIME_SEARCH_RESULTS",
    "TOTAL_CHARS",
]

# Recall (memory-spaces/recall and memory-spaces/search): both attempts of a turn together.
RESULT_LIMIT = 6
TOTAL_CHARS = 4800
ATTEMPTS = 2
FIRST_ATTEMPT_RESULTS = 4
FIRST_ATTEMPT_CHARS = 3600
ITEM_CHARS = 1200
MAX_MEDIUM_PER_ATTEMPT = 1
MAX_UNKNOWN_PER_ATTEMPT = 1
MAX_QUERY_CHARS = 2000

# Related: one traversal per turn.
RELATED_RESULTS = 4
RELATED_CHARS = 4000
RELATED_MAX_MEDIUM = 4
RELATED_MAX_UNKNOWN = 4
RELATED_FETCH = 20
"""Rows asked of the provider before admission picks at most :data:`RELATED_RESULTS`."""

# Documents: one search per turn, bounded like every model-facing Documents result.
DOCUMENT_MAX_RECORDS = MODEL_MAX_RECORDS
DOCUMENT_MAX_CHARS = MODEL_MAX_CHARACTERS

# Runtime search (the General strategy's runtime/search route; local only).
RUNTIME_SEARCH_RESULTS = 4
RUNTIME_SEARCH_CHARS = 1200

# Evidence a read route may return in one turn: (results, characters).
RECALL_EVIDENCE = (RESULT_LIMIT, TOTAL_CHARS)
DOCUMENT_SEARCH_EVIDENCE = (DOCUMENT_MAX_RECORDS, DOCUMENT_MAX_CHARS)
RELATED_EVIDENCE = (RELATED_RESULTS, RELATED_CHARS)
RUNTIME_SEARCH_EVIDENCE = (RUNTIME_SEARCH_RESULTS, RUNTIME_SEARCH_CHARS)
