"""Mnemos: task-scoped working memory for long-running agents.

A typed node graph per task (goal, constraint, context, working, result, skill, handoff), a
fatigue model fed by what a LangGraph run shows, micro-consolidation, CheckpointNodes with a
cooldown and a resume Markdown. It lives in the SQL database it shares with the ``MnemosSaver``
checkpointer (:mod:`.db` builds engines and runs migrations; :mod:`.schema` holds the tables).
No LangGraph or LangChain imports here.
"""

from langgraph_mnemon.memory_layers.mnemos.fatigue import actions_for, state_for
from langgraph_mnemon.memory_layers.mnemos.models import (
    CheckpointReceipt,
    CheckpointRecord,
    ConsolidationResult,
    FatigueReading,
    FatigueResponse,
    FatigueState,
    GitState,
    MnemoNode,
    NodeSummary,
    NodeType,
    RecentFile,
    TaskOverview,
    TaskSummary,
)
from langgraph_mnemon.memory_layers.mnemos.schema import MIGRATIONS
from langgraph_mnemon.memory_layers.mnemos.service import Mnemos, summary_from_state
from langgraph_mnemon.storage.db import (
    AsyncDatabase,
    Database,
    Migration,
    ThreadedAsyncDatabase,
    create_async_engine,
    create_engine,
)

__all__ = [
    "MIGRATIONS",
    "AsyncDatabase",
    "CheckpointReceipt",
    "CheckpointRecord",
    "ConsolidationResult",
    "Database",
    "FatigueReading",
    "FatigueResponse",
    "FatigueState",
    "GitState",
    "Migration",
    "MnemoNode",
    "Mnemos",
    "NodeSummary",
    "NodeType",
    "RecentFile",
    "TaskOverview",
    "TaskSummary",
    "ThreadedAsyncDatabase",
    "actions_for",
    "create_async_engine",
    "create_engine",
    "state_for",
    "summary_from_state",
]
