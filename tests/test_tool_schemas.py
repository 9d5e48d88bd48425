"""What the model sees of the memory tools stays fixed: names, descriptions, JSON schemas.

``tool_schemas.json`` holds every tool's name, description, ``args_schema`` schema and the
``tool_call_schema`` LangChain sends the model (Layered and General strategy). A change to
it is a change of what every model sees: make it on purpose, then regenerate the file with
``MNEMON_WRITE_TOOL_SCHEMAS=1 python -m pytest tests/test_tool_schemas.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from langgraph_mnemon import Mnemon
from langgraph_mnemon.memory_layers.turns import OFFER_CHANNELS
from langgraph_mnemon.tools._view import ACTIONS, ROUTES

GOLDEN = Path(__file__).with_name("tool_schemas.json")


def _seen(mem: Mnemon) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "description": t.description,
            "schema": t.args_schema.model_json_schema(),  # type: ignore[union-attr]
            "tool_call_schema": t.tool_call_schema.model_json_schema(),  # type: ignore[union-attr]
        }
        for t in mem.tools()
    ]


def _tools_of(root: Path, **settings: Any) -> list[dict[str, Any]]:
    mem = Mnemon.open(root / "root", workspace=root, **settings)
    try:
        # an active native space: mnemon_link / mnemon_forget are offered too
        mem.spaces.create_space("Ops", "Operations", active=True)
        return _seen(mem)
    finally:
        mem.close()


def test_tools_show_the_model_the_recorded_schemas(tmp_path: Path) -> None:
    seen = {
        "layered": _tools_of(tmp_path / "layered"),
        "general": _tools_of(tmp_path / "general", strategy="general"),
    }
    text = json.dumps(seen, indent=1, ensure_ascii=False) + "\n"
    if os.environ.get("MNEMON_WRITE_TOOL_SCHEMAS") == "1":
        GOLDEN.write_text(text, encoding="utf-8")  # regenerate, then check it like any run
    recorded = GOLDEN.read_text(encoding="utf-8")
    assert seen == json.loads(recorded)
    assert text == recorded  # the property order too: the model reads the schema as text


def test_every_view_offer_has_one_executor() -> None:
    assert not set(ROUTES) & set(ACTIONS)
    assert set(ROUTES) | set(ACTIONS) == set(OFFER_CHANNELS)
    # a route never writes and an action never only reads
    assert all(OFFER_CHANNELS[r] is None or OFFER_CHANNELS[r][1] == "recall" for r in ROUTES)
    assert all(OFFER_CHANNELS[a] is not None and OFFER_CHANNELS[a][1] != "recall" for a in ACTIONS)
