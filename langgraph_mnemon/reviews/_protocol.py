"""What the idle-review schedulers share and what they need from the host."""

from __future__ import annotations

from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.contracts import Scope
from langgraph_mnemon.memory_layers.activity import ReviewGate, TurnActivity
from langgraph_mnemon.memory_layers.health import HealthRecord
from langgraph_mnemon.storage.db import Database

__all__ = ["ReviewHost", "ReviewScheduler"]


class ReviewScheduler(Protocol):
    """How idle reviews are scheduled: rows of the host's review queue woken up in process
    (:class:`BackgroundReviews`) or by delayed LangGraph-server runs (:class:`ServerReviews`).
    The turn hooks call it; the gate decides.

    Example:
        >>> mem.set_reviews(ServerReviews(mem.review_gate, url))
        >>> mem.reviews.turn_started("thread-1")
    """

    @property
    def gate(self) -> ReviewGate:
        """Per-thread activity and review timing (the host updates its live settings)."""
        ...

    def turn_started(self, thread_id: str) -> None:
        """A new turn: cancel the thread's pending review."""
        ...

    def turn_finished(
        self, thread_id: str, messages: list[BaseMessage], turn: TurnActivity
    ) -> float | None:
        """Record the finished turn; schedule a review when due. Returns the delay, if any."""
        ...

    def close(self) -> None:
        """Stop scheduling; pending reviews are handed over to other replicas (or dropped by
        a scheduler that keeps them in memory)."""
        ...


class ReviewHost(Protocol):
    """What the schedulers need from the host: its settings (``idle_review``), the database
    that holds the review queue, where failed passes are recorded, and the review graph (the
    host builds it; this package never imports the graphs).
    :class:`~langgraph_mnemon.Mnemon` satisfies it."""

    @property
    def config(self) -> MnemonConfig: ...

    @property
    def database(self) -> Database: ...

    @property
    def health(self) -> HealthRecord: ...

    def review_graph(self, model: BaseChatModel | None = None) -> Any:
        """The compiled idle-review graph (``{"messages": [...]}`` in, ``outcome`` out)."""
        ...

    def learn(self, thread_id: str, *, model: Any = None, messages: list[Any] | None = None) -> Any:
        """A learning pass over the thread's new messages (after its idle review)."""
        ...

    def scoped(self, scope: Scope) -> ReviewHost:
        """The host in ``scope`` (a review runs in the scope of the turn that scheduled it)."""
        ...
