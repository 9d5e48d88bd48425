"""Runtime Memory: USER.md and MEMORY.md, the hot memory the model sees every turn.

:class:`RuntimeMemory` is the service (``Mnemon.runtime``); the maintenance helpers
(compaction proposals and the heuristic, archival into Memory Spaces) are what the
compaction and archival graphs call around its primitives. Importance is
``critical | normal | low`` (:data:`langgraph_mnemon.contracts.Importance`), placed on the
Memory Space 1-5 scale by :data:`langgraph_mnemon.contracts.IMPORTANCE_LEVELS`.

Modules, bottom to top: ``_models`` (models), ``_entries`` (entry / branch / request
validation, sizes), ``_file_store`` (``memories.json`` + projections, lock, repair),
``_sql_store`` (the same on database tables, one owner each: :class:`RuntimeTable`),
``_maintenance`` (budget, packing, archive lines), ``_mutations`` (add / replace / remove,
plans), ``_fence`` (the snapshot's file blocks: render, parse, clip), ``_snapshot``,
``_search``, ``_service`` (:class:`RuntimeMemory`), then
``_compaction``, ``_archival`` and ``_transfer`` (:func:`export_runtime`, files <-> database).

Example:
    >>> rm = RuntimeMemory("./.mnemon")
    >>> rm.add("user", "Prefers answers in British English.").message
    'Entry added.'
"""

from langgraph_mnemon.memory_layers.runtime._archival import (
    ArchiveRoutes,
    eligible_destinations,
    fallback_routes,
    hot_candidates,
    maintenance_receipt,
    routing_batches,
    stored_contents,
    validate_routes,
    write_entries,
)
from langgraph_mnemon.memory_layers.runtime._compaction import (
    CompactionProposal,
    heuristic_budget,
    heuristic_compaction,
    validate_proposal,
)
from langgraph_mnemon.memory_layers.runtime._entries import DELIMITER, MAX_ENTRY_BYTES
from langgraph_mnemon.memory_layers.runtime._fence import (
    SnapshotEntry,
    SnapshotFile,
    clip_fenced,
    outside_fences,
    parse_snapshot_files,
)
from langgraph_mnemon.memory_layers.runtime._maintenance import compaction_budget
from langgraph_mnemon.memory_layers.runtime._models import (
    CompactedEntry,
    MaintenancePlan,
    RuntimeMatch,
    RuntimeMutation,
    RuntimeReceipt,
    RuntimeSnapshot,
    RuntimeTarget,
)
from langgraph_mnemon.memory_layers.runtime._protocol import RUNTIME_MEMORY_PROTOCOL
from langgraph_mnemon.memory_layers.runtime._service import RuntimeMemory
from langgraph_mnemon.memory_layers.runtime._snapshot import current_git_branch
from langgraph_mnemon.memory_layers.runtime._sql_store import MIGRATIONS as RUNTIME_MIGRATIONS
from langgraph_mnemon.memory_layers.runtime._sql_store import RuntimeTable
from langgraph_mnemon.memory_layers.runtime._transfer import export_runtime

__all__ = [
    "DELIMITER",
    "MAX_ENTRY_BYTES",
    "RUNTIME_MEMORY_PROTOCOL",
    "RUNTIME_MIGRATIONS",
    "ArchiveRoutes",
    "CompactedEntry",
    "CompactionProposal",
    "MaintenancePlan",
    "RuntimeMatch",
    "RuntimeMemory",
    "RuntimeMutation",
    "RuntimeReceipt",
    "RuntimeSnapshot",
    "RuntimeTable",
    "RuntimeTarget",
    "SnapshotEntry",
    "SnapshotFile",
    "clip_fenced",
    "compaction_budget",
    "current_git_branch",
    "eligible_destinations",
    "export_runtime",
    "fallback_routes",
    "heuristic_budget",
    "heuristic_compaction",
    "hot_candidates",
    "maintenance_receipt",
    "outside_fences",
    "parse_snapshot_files",
    "routing_batches",
    "stored_contents",
    "validate_proposal",
    "validate_routes",
    "write_entries",
]
