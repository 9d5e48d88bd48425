"""StateGraph builders for the memory lifecycle flows; each takes its dependencies.

A builder only wires nodes (:mod:`langgraph_mnemon.nodes`) to the services it is given and
compiles; it never reads globals or the environment. The idle-review *schedulers* live in
:mod:`langgraph_mnemon.reviews`.
"""

from langgraph_mnemon.graphs.agent_query import build_agent_query_graph
from langgraph_mnemon.graphs.document_archive import build_document_archive_graph
from langgraph_mnemon.graphs.learning import LearningState, build_learning_graph
from langgraph_mnemon.graphs.memory_archival import build_memory_archival_graph
from langgraph_mnemon.graphs.recall import build_recall_graph
from langgraph_mnemon.graphs.review import (
    ReviewOutcome,
    ReviewServices,
    ReviewState,
    build_review_graph,
)
from langgraph_mnemon.graphs.turn import MnemonTurnState, build_model_call_graph, build_turn_graph
from langgraph_mnemon.graphs.user_compaction import (
    CompactionState,
    build_user_compaction_graph,
)
from langgraph_mnemon.graphs.write_worker import build_write_worker_graph

__all__ = [
    "CompactionState",
    "LearningState",
    "MnemonTurnState",
    "ReviewOutcome",
    "ReviewServices",
    "ReviewState",
    "build_agent_query_graph",
    "build_document_archive_graph",
    "build_learning_graph",
    "build_memory_archival_graph",
    "build_model_call_graph",
    "build_recall_graph",
    "build_review_graph",
    "build_turn_graph",
    "build_user_compaction_graph",
    "build_write_worker_graph",
]
