"""Runtime Memory recall: deterministic word-overlap search over the entries of USER.md /
MEMORY.md and the entries compaction or archival moved to ``runtime/archived/``.

Local only: nothing here reaches a Memory Space (the user profile never leaves the root).
Words are folded (case, width, accents) and tokenised with the Documents tokenizer; an entry's
score is the share of the query's words it contains.

Example:
    >>> matches = search_entries(check_query("lisbon office"), current, archived, limit=5)
    >>> [(m.content, m.archived) for m in matches]
    [('I work from Lisbon.', True)]
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph_mnemon.contracts import check_text
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.runtime._models import RuntimeEntry, RuntimeMatch
from langgraph_mnemon.memory_layers.text import tokenize

__all__ = ["MAX_QUERY_CHARS", "MAX_SEARCH_LIMIT", "check_query", "search_entries"]

MAX_QUERY_CHARS = 2000
MAX_SEARCH_LIMIT = 50
_ENTRY_TOKENS = 4096  # an entry is at most 8 KiB: this never cuts one short in practice


def check_query(query: Any, limit: Any = 10) -> tuple[frozenset[str], int]:
    """The folded query words and the checked limit.

    Raises:
        InvalidInputError: ``query`` is not text, too long, or has no word of two or more
            letters or digits; ``limit`` is not an integer in 1..50.
    """
    text = check_text(query, "query").strip()
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidInputError(
            f"query is too long ({len(text)} characters; max {MAX_QUERY_CHARS}); shorten it"
        )
    words = _words(text)
    if not words:
        raise InvalidInputError("query needs at least one word of two or more letters or digits")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise InvalidInputError(
            f"limit must be an integer in 1..{MAX_SEARCH_LIMIT} (got {limit!r})"
        )
    return words, limit


def search_entries(
    words: frozenset[str],
    current: Sequence[RuntimeEntry],
    archived: Mapping[str, Sequence[Mapping[str, Any]]],
    limit: int,
) -> list[RuntimeMatch]:
    """Rank ``current`` entries and ``archived`` records (per target, file order) by overlap.

    Best score first; on a tie current entries before archived ones, then file order (newest
    archived first). An archived record whose text is still current, or was archived again
    later, is listed once.
    """
    scored: list[tuple[float, int, int, RuntimeMatch]] = []
    live = {(e.target, e.content) for e in current}
    for position, entry in enumerate(current):
        score = _score(words, entry.content)
        if score:
            match = RuntimeMatch(
                target=entry.target, content=entry.content, archived=False, score=score
            )
            scored.append((-score, 0, position, match))
    for target, records in archived.items():
        seen: set[str] = set()
        for position, record in enumerate(reversed(records)):  # newest first
            content, stamp = _archived_fields(record)
            if content is None or (target, content) in live or content in seen:
                continue
            seen.add(content)
            score = _score(words, content)
            if score:
                match = RuntimeMatch(
                    target=target,  # type: ignore[arg-type]
                    content=content,
                    archived=True,
                    score=score,
                    archived_at=stamp,
                )
                scored.append((-score, 1, position, match))
    scored.sort(key=lambda item: item[:3])
    return [item[3] for item in scored[:limit]]


def _words(text: str) -> frozenset[str]:
    # NFKD splits accented letters into base + combining mark; dropping the marks folds accents.
    folded = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return frozenset(tokenize(folded, max_tokens=_ENTRY_TOKENS))


def _score(words: frozenset[str], content: str) -> float:
    return round(len(words & _words(content)) / len(words), 4)


def _archived_fields(record: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The content and archive time of one ``runtime/archived/`` line (None when malformed)."""
    entry = record.get("entry") if isinstance(record, Mapping) else None
    content = entry.get("content") if isinstance(entry, Mapping) else None
    stamp = record.get("archived_at") if isinstance(record, Mapping) else None
    if not isinstance(content, str) or not content:
        return None, None
    return content, stamp if isinstance(stamp, str) else None
