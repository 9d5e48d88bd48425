"""LangGraph-server entry points: graphs, store facade, checkpointer and HTTP control plane.

``langgraph.json`` at the repository root names the objects in this package. Each of them uses
the process-wide :func:`shared_host`, opened from ``MNEMON_*`` settings.
"""

from typing import TYPE_CHECKING

from langgraph_mnemon.storage.lazy import lazy_attributes

if TYPE_CHECKING:
    from langgraph_mnemon.server._host import set_shared_host, shared_host

__all__ = ["set_shared_host", "shared_host"]


# Loaded on first access: ``mnemon serve`` imports ``server.launch`` to check the settings and
# the port, and must not load the host (``_host`` imports it) before it refuses.
__getattr__ = lazy_attributes(__name__, {"set_shared_host": "._host", "shared_host": "._host"})
