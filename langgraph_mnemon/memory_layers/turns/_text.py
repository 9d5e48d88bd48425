"""Text rules shared by the view and the per-turn budgets: clipping, digests, query identity.

Example:
    >>> clip_text("abcdef", 4)
    ('abc…', True)
    >>> query_terms("How do we DEPLOY?") == query_terms("how do we deploy")
    True
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "ELLIPSIS",
    "call_key",
    "clip_text",
    "content_digest",
    "query_digest",
    "query_terms",
    "text_digest",
]

ELLIPSIS = "…"
_TERM = re.compile(r"[^\W_]+")  # runs of Unicode letters and digits (\p{L}\p{N})
_SPACE = re.compile(r"\s+")


def text_digest(text: str) -> str:
    """SHA-256 hex of ``text``.

    "surrogatepass": a lone surrogate in older stored text must not fail every turn's begin.
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def clip_text(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` characters, ending in ``…`` when cut.

    The ellipsis counts inside the limit; a cut never separates a base character from its
    combining marks or the halves of a surrogate pair.

    Args:
        text: the text to bound.
        limit: the most characters the result may have.

    Returns:
        ``(text, was_cut)``.

    Example:
        >>> clip_text("abcdef", 4)
        ('abc…', True)
    """
    if limit <= 0:
        return ("", bool(text))
    if len(text) <= limit:
        return (text, False)
    end = limit - len(ELLIPSIS)
    while end > 0 and (unicodedata.combining(text[end]) or "\udc00" <= text[end] <= "\udfff"):
        end -= 1
    return (text[:end] + ELLIPSIS if end > 0 else ELLIPSIS[:limit], True)


def content_digest(text: str) -> str:
    """SHA-256 of the trimmed, whitespace-collapsed content (the duplicate key of a row)."""
    return text_digest(_SPACE.sub(" ", text.strip()))


def query_terms(query: str) -> str:
    """The lexical form of a query: its letter/digit runs, lowercased, joined by one space."""
    return " ".join(_TERM.findall(query)).lower()


def query_digest(source_key: str, query: str, space_ids: Iterable[str]) -> str:
    """SHA-256 identity of a recall request: source key, :func:`query_terms`, sorted space ids."""
    body = json.dumps(
        {"source": source_key, "query": query_terms(query), "spaces": sorted(set(space_ids))},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return text_digest(body)


def call_key(payload: Mapping[str, Any]) -> str:
    """A digest of a route's input for its per-turn call budget.

    A ``query`` counts by its :func:`query_terms` (case and punctuation do not make a new call,
    as in the recall envelope), lists by their sorted items; ``None`` values are left out.

    Args:
        payload: the route's validated input as JSON-like data.

    Returns:
        A SHA-256 hex digest; equal digests replay the first call's answer.

    Example:
        >>> call_key({"query": "Deploy!"}) == call_key({"query": "deploy"})
        True
    """

    def norm(key: str, value: Any) -> Any:
        if key == "query" and isinstance(value, str):
            return query_terms(value)
        if isinstance(value, list | tuple):
            return sorted(str(v) for v in value)
        return value

    body = {k: norm(k, v) for k, v in sorted(payload.items()) if v is not None}
    return text_digest(json.dumps(body, sort_keys=True, ensure_ascii=False, default=str))
