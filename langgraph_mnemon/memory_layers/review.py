"""Deterministic parts of idle review: the one-layer guard and the no-model heuristic.

A review pass may create at most one Document or change working memory (MEMORY.md), not both:
the first such call the guard admits claims the pass, and the other layer is refused even if
that first call then fails. USER.md changes stay independent. Memory Spaces are never written.

A pass runs in a worker thread that nothing can interrupt, so it checks :func:`review_aborted`
between its steps: the scheduler that runs it sets the pass's event (:func:`abortable`) when a
new turn begins or another replica took the review over, and the pass writes nothing more.

Example:
    >>> guard = ReviewGuard()
    >>> guard.admit("documents")  # None: admitted
    >>> guard.admit("memory")     # a refusal message
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal

from langgraph_mnemon.memory_layers.activity import is_explicit_save, is_no_memory

__all__ = ["ReviewGuard", "ReviewLayer", "abortable", "explicit_assertions", "review_aborted"]

ReviewLayer = Literal["documents", "memory", "user"]

_TRIGGER = re.compile(
    r"(?:please\s+)?remember(?:\s+that)?[:,]?\s+|记住[：:，,]?\s*|记下来[：:，,]?\s*",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"^(?:i|i'm|i am|my|me)\b|^我", re.IGNORECASE)
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]?")
_ABORT: ContextVar[threading.Event | None] = ContextVar("mnemon_review_abort", default=None)


@contextmanager
def abortable(event: threading.Event) -> Iterator[None]:
    """Run a review pass that stops at its next step once ``event`` is set.

    The event travels in a context variable, so the pass's worker threads (LangGraph copies
    the context into them) see it.

    Example:
        >>> stop = threading.Event()
        >>> with abortable(stop):
        ...     out = await graph.ainvoke({"messages": transcript})
    """
    token = _ABORT.set(event)
    try:
        yield
    finally:
        _ABORT.reset(token)


def review_aborted() -> bool:
    """True when the running review pass was aborted (see :func:`abortable`)."""
    event = _ABORT.get()
    return event is not None and event.is_set()


class ReviewGuard:
    """Holds one review pass to one layer (Documents or MEMORY.md); USER is independent."""

    def __init__(self) -> None:
        self.claimed: ReviewLayer | None = None

    def admit(self, layer: ReviewLayer) -> str | None:
        """``None`` when the call may proceed, else why it is refused."""
        if layer == "user":
            return None
        if self.claimed is None:
            self.claimed = layer
            return None
        if self.claimed == layer:
            return None
        done = "created a Document" if self.claimed == "documents" else "changed MEMORY.md"
        return f"this review pass already {done}; one layer per pass, so this call is refused"


def explicit_assertions(user_texts: Sequence[str]) -> list[tuple[Literal["user", "memory"], str]]:
    """What the user explicitly asked to remember, as (target, text) pairs.

    Only sentences that carry an explicit save request are used, never turns that opted out.
    First-person statements go to USER.md, everything else to MEMORY.md.
    """
    found: list[tuple[Literal["user", "memory"], str]] = []
    for text in user_texts:
        if is_no_memory(text):
            continue
        for sentence in _SENTENCE.findall(text):
            if not is_explicit_save(sentence):
                continue
            match = _TRIGGER.search(sentence)
            fact = sentence[match.end() :] if match else ""
            fact = fact.strip(" ：:，,").strip()
            if len(fact) < 3:
                continue
            fact = fact[0].upper() + fact[1:] if fact[0].isascii() else fact
            target: Literal["user", "memory"] = "user" if _FIRST_PERSON.match(fact) else "memory"
            if (target, fact) not in found:
                found.append((target, fact))
    return found
