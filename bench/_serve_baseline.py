"""The memory-free baseline agent bench/serve.py serves beside ours.

The same scripted model and the same one tool call per turn, but no memory: no middleware, and
the tool answers a receipt-shaped JSON without storing anything. What the server itself costs
per run (queue, checkpoints in our saver) is in both; the difference is the memory.
"""

from __future__ import annotations

import json

from langchain.agents import create_agent
from langchain_core.tools import tool

from langgraph_mnemon.server.demo import scripted_demo_model


@tool
def mnemon_runtime_memory(action: str, target: str, content: str = "") -> str:
    """Pretend to store a Runtime Memory entry (baseline: nothing is stored)."""
    return json.dumps({"status": "committed", "message": "Entry added.", "changed": True})


agent = create_agent(scripted_demo_model(), tools=[mnemon_runtime_memory], name="bare_agent")
