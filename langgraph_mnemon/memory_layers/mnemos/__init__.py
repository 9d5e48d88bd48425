"""Mnemos: task-scoped working memory for long-running agents.

A typed node graph per task (goal, constraint, context, working, result, skill, handoff), a
fatigue model fed by what a LangGraph run shows, micro-consolidation, CheckpointNodes with a
cooldown and a resume Markdown. It lives in the SQL database it shares with the ``MnemosSaver``
checkpointer (:mod:`langgraph_mnemon.storage.db` builds engines and runs migrations;
:mod:`.schema` holds the tables, :mod:`.store` the SQL operations the checkpointer shares).
No LangGraph or LangChain imports here.

Modules, bottom to top: ``_models``; ``fatigue`` (the pure fatigue model), ``_scope``,
``_git``, ``_resume`` (rendering the fenced resume block; :func:`parse_resume` reads it);
``schema`` and ``store`` (SQL); ``_checks`` (input);
``_nodes`` (node graph), ``_signals`` (observation), ``_summary`` (the task summary),
``_maintenance`` (fatigue readings and actions), ``_consolidation``, ``_checkpoints``,
``_overview`` (resume, handoff, status); ``_service`` (the :class:`Mnemos` facade).

Example:
    >>> mnemos = Mnemos(Database(create_engine("sqlite:///./.mnemon/mnemon.db")))
    >>> mnemos.add_node("task-1", "goal", "Ship the password reset flow").type
    'goal'
"""

from typing import TYPE_CHECKING

from langgraph_mnemon.storage.lazy import lazy_attributes

if TYPE_CHECKING:
    from langgraph_mnemon.memory_layers.mnemos._checks import (
        MAX_CONTENT_CHARS,
        MAX_TASK_ID_CHARS,
        check_window,
        validate_task_id,
    )
    from langgraph_mnemon.memory_layers.mnemos._maintenance import choose_window
    from langgraph_mnemon.memory_layers.mnemos._models import (
        CheckpointReceipt,
        CheckpointRecord,
        ConsolidationResult,
        ContextWindow,
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
        SeenMessages,
        TaskOverview,
        TaskSummary,
        WindowSource,
    )
    from langgraph_mnemon.memory_layers.mnemos._resume import (
        ResumeBlock,
        ResumeSection,
        parse_resume,
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
    "ContextWindow",
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
    "ResumeBlock",
    "ResumeSection",
    "SeenMessages",
    "TaskOverview",
    "TaskSummary",
    "ThreadedAsyncDatabase",
    "WindowSource",
    "actions_for",
    "check_window",
    "choose_window",
    "create_async_engine",
    "create_engine",
    "is_read_only_tool",
    "parse_resume",
    "state_for",
    "summary_from_state",
    "validate_task_id",
]

# Every name loads with its module on first access (PEP 562): the table modules (``schema``,
# ``store``) are imported by Memory Spaces, the checkpointer and the host at start-up, and
# importing them must not load the Mnemos service and its models with them.
_LAZY = {
    "MAX_CONTENT_CHARS": "langgraph_mnemon.memory_layers.mnemos._checks",
    "MAX_TASK_ID_CHARS": "langgraph_mnemon.memory_layers.mnemos._checks",
    "validate_task_id": "langgraph_mnemon.memory_layers.mnemos._checks",
    "check_window": "langgraph_mnemon.memory_layers.mnemos._checks",
    "CheckpointReceipt": "langgraph_mnemon.memory_layers.mnemos._models",
    "CheckpointRecord": "langgraph_mnemon.memory_layers.mnemos._models",
    "ConsolidationResult": "langgraph_mnemon.memory_layers.mnemos._models",
    "ContextWindow": "langgraph_mnemon.memory_layers.mnemos._models",
    "CurationReceipt": "langgraph_mnemon.memory_layers.mnemos._models",
    "DerivationResult": "langgraph_mnemon.memory_layers.mnemos._models",
    "FatigueReading": "langgraph_mnemon.memory_layers.mnemos._models",
    "FatigueResponse": "langgraph_mnemon.memory_layers.mnemos._models",
    "FatigueState": "langgraph_mnemon.memory_layers.mnemos._models",
    "GitState": "langgraph_mnemon.memory_layers.mnemos._models",
    "MnemoNode": "langgraph_mnemon.memory_layers.mnemos._models",
    "NodeSummary": "langgraph_mnemon.memory_layers.mnemos._models",
    "NodeType": "langgraph_mnemon.memory_layers.mnemos._models",
    "RecentFile": "langgraph_mnemon.memory_layers.mnemos._models",
    "SeenMessages": "langgraph_mnemon.memory_layers.mnemos._models",
    "TaskOverview": "langgraph_mnemon.memory_layers.mnemos._models",
    "TaskSummary": "langgraph_mnemon.memory_layers.mnemos._models",
    "WindowSource": "langgraph_mnemon.memory_layers.mnemos._models",
    "choose_window": "langgraph_mnemon.memory_layers.mnemos._maintenance",
    "ResumeBlock": "langgraph_mnemon.memory_layers.mnemos._resume",
    "ResumeSection": "langgraph_mnemon.memory_layers.mnemos._resume",
    "parse_resume": "langgraph_mnemon.memory_layers.mnemos._resume",
    "Mnemos": "langgraph_mnemon.memory_layers.mnemos._service",
    "is_read_only_tool": "langgraph_mnemon.memory_layers.mnemos._signals",
    "summary_from_state": "langgraph_mnemon.memory_layers.mnemos._summary",
    "actions_for": "langgraph_mnemon.memory_layers.mnemos.fatigue",
    "state_for": "langgraph_mnemon.memory_layers.mnemos.fatigue",
    "MIGRATIONS": "langgraph_mnemon.memory_layers.mnemos.schema",
    "AsyncDatabase": "langgraph_mnemon.storage.db",
    "Database": "langgraph_mnemon.storage.db",
    "Migration": "langgraph_mnemon.storage.db",
    "ThreadedAsyncDatabase": "langgraph_mnemon.storage.db",
    "create_async_engine": "langgraph_mnemon.storage.db",
    "create_engine": "langgraph_mnemon.storage.db",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
