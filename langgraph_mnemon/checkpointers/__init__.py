"""LangGraph checkpointers on the Mnemos SQL store: :class:`MnemosSaver` (sync engine) and
:class:`AsyncMnemosSaver` (async engine).

Both implement every capability of ``langgraph-checkpoint`` 4.3: ``get_tuple``, ``list``,
``put``, ``put_writes``, ``delete_thread``, ``delete_for_runs``, ``copy_thread`` and ``prune``,
with sync and async twins.
"""

from langgraph_mnemon.checkpointers._ops import DeltaPruneError
from langgraph_mnemon.checkpointers.aio import AsyncMnemosSaver
from langgraph_mnemon.checkpointers.sync import MnemosSaver

__all__ = ["AsyncMnemosSaver", "DeltaPruneError", "MnemosSaver"]
