"""Idle-review scheduling: in-process timers and LangGraph-server runs.

Both schedulers satisfy :class:`ReviewScheduler`; the host picks one (``mem.reviews``,
``mem.set_reviews``) and the turn hooks call it. The
:class:`~langgraph_mnemon.memory_layers.activity.ReviewGate` decides when a thread is due;
the review pass itself is :func:`langgraph_mnemon.graphs.build_review_graph`.

Example:
    >>> from langgraph_mnemon.reviews import ServerReviews
    >>> mem.set_reviews(ServerReviews(mem.review_gate, "http://127.0.0.1:2024"))
"""

from langgraph_mnemon.reviews._background import BackgroundReviews
from langgraph_mnemon.reviews._protocol import ReviewHost, ReviewScheduler
from langgraph_mnemon.reviews._server import REVIEW_GRAPH, ServerReviews, review_thread_id
from langgraph_mnemon.reviews._timers import IdleReviewScheduler

__all__ = [
    "REVIEW_GRAPH",
    "BackgroundReviews",
    "IdleReviewScheduler",
    "ReviewHost",
    "ReviewScheduler",
    "ServerReviews",
    "review_thread_id",
]
