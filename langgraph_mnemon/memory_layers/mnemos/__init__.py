"""Mnemos: task-scoped working memory for long-running agents.

A typed node graph per task (goal, constraint, context, working, result, skill, handoff), a
fatigue model fed by what a LangGraph run shows, micro-consolidation, CheckpointNodes with a
cooldown and a resume Markdown. It lives in the SQL database it shares with the ``MnemosSaver``
checkpointer (:mod:`langgraph_mnemon.storage.db` builds engines and runs migrations;
:mod:`.schema` holds the tables, :mod:`.store` the SQL operations the checkpointer shares).
No LangGraph or LangChain imports here.

Modules, bottom to top: ``_models``; ``fatigue`` (the pure fatigue model), ``_scope``,
``_git``, ``_resume`` (rendering); ``schema`` and ``store`` (SQL); ``_checks`` (input);
``_nodes`` (node graph), ``_signals`` (observation), ``_summary`` (the task summary),
``_maintenance`` (fatigue readings and actions), ``_consolidation``, ``_checkpoints``,
``_overview`` (resume, handoff, status); ``_service`` (the :class:`Mnemos` facade).

Example:
    >>> mnemos = Mnemos(Database(create_engine("sqlite:///./.mnemon/mnemon.db")))
    >>> mnemos.add_node("task-1", "goal", "Ship the password reset flow").type
    'goal'
"""

from langgraph_mnemon.memory_layers.mnemos._checks import (
    MAX_CONTENT_CHARS,
    MAX_TASK_ID_CHARS,
    validate_task_id,
)
from langgraph_mnemon.memory_layers.mnemos._models import (
    CheckpointReceipt,
    CheckpointRecord,
    ConsolidationResult,
    CurationReceipt,
    DerivationResult,
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
from langgraph_mnemon.memory_layers.mnemos._service import Mnemos
from langgraph_mnemon.memory_layers.mnemos._signals import is_read_only_tool
from langgraph_mnemon.memory_layers.mnemos._summary import summary_from_state
from langgraph_mnemon.memory_layers.mnemos.fatigue import actions_for, state_for
from langgraph_mnemon.memory_layers.mnemos.schema import MIGRATIONS
from langgraph_mnemon.storage.db import (
    AsyncDatabase,
    Database,
    Migration,
    ThreadedAsyncDatabase,
    create_async_engine,
    create_engine,
)

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_TASK_ID_CHARS",
    "MIGRATIONS",
    "AsyncDatabase",
    "CheckpointReceipt",
    "CheckpointRecord",
    "ConsolidationResult",
    "CurationReceipt",
    "Database",
    "DerivationResult",
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
    "is_read_only_tool",
    "state_for",
    "summary_from_state",
    "validate_task_id",
]
