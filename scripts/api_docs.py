"""Which README API methods lack Args / Returns or Raises / an example in their docstring.

Run from the repository root: ``python scripts/api_docs.py``. Prints each method that lacks a
section, then ``documented / total``; exits 1 when any is missing.
"""

from __future__ import annotations

import inspect
import sys

from langgraph_mnemon.checkpointers import AsyncMnemosSaver, MnemosSaver
from langgraph_mnemon.host import Mnemon
from langgraph_mnemon.memory_layers.documents import Documents
from langgraph_mnemon.memory_layers.mnemos import Mnemos
from langgraph_mnemon.memory_layers.runtime import RuntimeMemory
from langgraph_mnemon.memory_layers.spaces import MemorySpaces

# The names DESIGN.md "Public API" and README use.
API: dict[type, str] = {
    RuntimeMemory: "add replace remove entries revision snapshot plan_maintenance "
    "compact_and_mutate compact_target apply search",
    Documents: "create update archive get read search capacity_plan apply",
    MemorySpaces: "create_space list_spaces set_active search remember related link forget "
    "browse asearch aremember arelated alink aforget abrowse",
    Mnemos: "add_node touch consolidate fatigue checkpoint resume",
    Mnemon: "open status checkpointer acheckpointer store tools middleware turn_graph "
    "system_prompt write_runtime write_document archive_document remember query close",
    MnemosSaver: "from_conn_string setup",
    AsyncMnemosSaver: "from_conn_string setup",
}


def _documented(cls: type, name: str) -> list[str]:
    """The sections ``cls.name`` lacks (empty when it has them all).

    An async form that is its sync method run in a worker thread (its docstring names
    ``:meth:`X```) counts as one with ``X``: the pair is documented once, on ``X``.
    """
    sync = name[1:]
    if name.startswith("a") and f":meth:`{sync}`" in (inspect.getdoc(getattr(cls, name)) or ""):
        return _documented(cls, sync)
    static = inspect.getattr_static(cls, name)
    target = getattr(cls, name)
    doc = (static.__doc__ if isinstance(static, property) else inspect.getdoc(target)) or ""
    takes_args = not isinstance(static, property) and len(inspect.signature(target).parameters) > (
        0 if isinstance(static, staticmethod) else 1
    )
    missing = []
    if takes_args and "Args:" not in doc:
        missing.append("Args")
    if "Returns:" not in doc and "Raises:" not in doc:
        missing.append("Returns/Raises")
    if ">>>" not in doc and "Example" not in doc:
        missing.append("example")
    return missing


def main() -> int:
    total = documented = 0
    for cls, names in API.items():
        for name in names.split():
            total += 1
            missing = _documented(cls, name)
            if missing:
                print(f"{cls.__name__}.{name}: no {', '.join(missing)}")
            else:
                documented += 1
    print(f"{documented} / {total} documented")
    return 0 if documented == total else 1


if __name__ == "__main__":
    sys.exit(main())
