"""Idle-review scheduling: leased rows of the host's database, woken up in process or by
LangGraph-server runs, polled by every replica.

Both schedulers satisfy :class:`ReviewScheduler`; the host picks one (``mem.reviews``,
``mem.set_reviews``) and the turn hooks call it. A review runs in a fresh context, never
inside the agent's run. The
:class:`~langgraph_mnemon.memory_layers.activity.ReviewGate` decides when a thread is due;
the review pass itself is :func:`langgraph_mnemon.graphs.build_review_graph`.

Example:
    >>> from langgraph_mnemon.reviews import ServerReviews
    >>> mem.set_reviews(ServerReviews(mem.review_gate, "http://127.0.0.1:2024", host=mem))
"""

from langgraph_mnemon.reviews._background import BackgroundReviews, host_review_gate
from langgraph_mnemon.reviews._protocol import ReviewHost, ReviewScheduler
from langgraph_mnemon.reviews._queued import QueuedReviews
from langgraph_mnemon.reviews._server import REVIEW_GRAPH, ServerReviews, review_thread_id
from langgraph_mnemon.reviews._timers import IdleReviewScheduler

__all__ = [
    "REVIEW_GRAPH",
    "BackgroundReviews",
    "IdleReviewScheduler",
    "QueuedReviews",
    "ReviewHost",
    "ReviewScheduler",
    "ServerReviews",
    "host_review_gate",
    "review_thread_id",
]
