"""Names a module exports but loads on first access (PEP 562), for imports that must stay light.

A package ``__init__`` (or a module) that re-exports names from heavy modules binds its
``__getattr__`` here instead of importing them: importing the package then costs nothing of
theirs, and the first access imports the defining module once and keeps the value in the
exporting module, so later lookups never come back here.

Example:
    >>> __getattr__ = lazy_attributes(__name__, {"Mnemos": "._service"})  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(module: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``module`` that loads ``names`` on first access.

    Args:
        module: The exporting module's ``__name__``.
        names: Exported name -> the module defining it; a leading ``.`` is relative to
            ``module``'s package (``module`` itself when it is a package).

    Returns:
        The function to assign to the exporting module's ``__getattr__``. Any other name raises
        ``AttributeError`` as a missing attribute would.
    """

    def __getattr__(name: str) -> Any:
        source = names.get(name)
        if source is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        exporter = sys.modules[module]
        package = module if hasattr(exporter, "__path__") else module.rpartition(".")[0]
        value = getattr(importlib.import_module(source, package), name)
        setattr(exporter, name, value)  # later lookups find it without calling this
        return value

    return __getattr__
