"""The ``mnemon`` command line: inspect and edit a storage root, ingest, serve.

One module per command group (``runtime``, ``docs``, ``spaces``, ``mnemos``, ``ingest``,
``workers``, ``serve``, ``status``, ``learn``, ``settings`` with ``secrets``); the shared options,
vocabulary and error handling are in ``_common``. Every command is an explicit request:
``manual`` channels admit it, ``off`` and disabled ones refuse it. Library errors print one
line on stderr and exit 1 (a kernel refusal names the setting and environment variable that
would allow it); usage errors print one line and exit 2.

Example:
    >>> from langgraph_mnemon.cli import main
    >>> main(["--root", "./.mnemon", "status", "--json"])  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from langgraph_mnemon.cli._common import app, error_line, main, use_host_class
from langgraph_mnemon.storage.lazy import lazy_attributes

if TYPE_CHECKING:
    from langgraph_mnemon.host import Mnemon  # the host class commands open (replaceable here)

__all__ = ["Mnemon", "app", "error_line", "main"]


# ``Mnemon`` is loaded on first access, not at import: ``mnemon --help`` and a refusal of
# ``mnemon serve`` never pay for the host (its layers, SQLAlchemy, pydantic models).
__getattr__ = lazy_attributes(__name__, {"Mnemon": "langgraph_mnemon.host"})


def _host_class() -> type[Mnemon]:
    # Read at call time: a subclass assigned to ``langgraph_mnemon.cli.Mnemon`` is honoured.
    return globals().get("Mnemon") or __getattr__("Mnemon")


use_host_class(_host_class)

# Commands register on ``app`` when their module is imported, in --help's order.
for _group in (
    "status",
    "ingest",
    "workers",
    "serve",
    "runtime",
    "docs",
    "mnemos",
    "spaces",
    "learn",
    "transfer",
    "settings",
):
    importlib.import_module(f"{__name__}.{_group}")
