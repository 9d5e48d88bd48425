"""StateGraph builders for the memory lifecycle flows; each takes its dependencies."""

from langgraph_mnemon.graphs.user_compaction import (
    CompactionState,
    build_user_compaction_graph,
)

__all__ = ["CompactionState", "build_user_compaction_graph"]
