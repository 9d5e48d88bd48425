"""LangGraph-server entry points: graphs, store facade, checkpointer and HTTP control plane.

``langgraph.json`` at the repository root names the objects in this package. Each of them uses
the process-wide :func:`shared_host`, opened from ``MNEMON_*`` settings.
"""

from langgraph_mnemon.server._host import set_shared_host, shared_host

__all__ = ["set_shared_host", "shared_host"]
