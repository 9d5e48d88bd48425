"""The human-in-the-loop agent of ``tests/support/hitl.py`` as a served graph over the server's
host (``MNEMON_SERVE_GRAPHS=hitl_agent=tests/support/hitl_served.py:graph``); LangGraph server
supplies the checkpointer (ours, on ``MNEMON_DATABASE_URL``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # loaded by file path: find hitl.py

from hitl import build

from langgraph_mnemon.server import shared_host

graph = build(shared_host())
