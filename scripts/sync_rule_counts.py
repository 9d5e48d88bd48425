"""Structure counts for issue 32: the size of the Memory Spaces wing and how it is wired.

Run from the repository root: ``python scripts/sync_rule_counts.py``. Prints Markdown tables:

- lines and modules of ``memory_layers/spaces``, ``adapters/providers`` (recursive), ``store``
  and ``memory_layers/turns``;
- the number of ``sync_twin(...)`` calls in the package's code;
- private cross-package imports: an ``import`` / ``from`` of ``langgraph_mnemon.X._private``
  (a path component after ``langgraph_mnemon`` starts with ``_`` and is not a dunder such as
  ``__init__``) from a
  module whose package (its directory) is not the one holding that private component;
- public names (``len(__all__)``) per package.

Only the standard library is used (``ast``), so nothing of the package is imported.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "langgraph_mnemon"

SIZED = ["memory_layers/spaces", "adapters/providers", "store", "memory_layers/turns"]
PUBLIC = [
    "memory_layers/spaces",
    "memory_layers/turns",
    "nodes",
    "graphs",
    "adapters/providers",
    "tools",
    "store",
]


def _modules(folder: Path) -> list[Path]:
    """Every ``.py`` file under ``folder`` (recursive), sorted."""
    return sorted(folder.rglob("*.py")) if folder.is_dir() else []


def _lines(path: Path) -> int:
    """The number of lines of ``path``."""
    return len(path.read_text(encoding="utf-8").splitlines())


def _sync_twin_uses() -> int:
    """How many calls of ``sync_twin(...)`` the package's code makes (docstrings not counted)."""
    count = 0
    for path in _modules(PACKAGE):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                count += name == "sync_twin"
    return count


def _module_name(path: Path) -> list[str]:
    """The dotted parts of the module at ``path`` (``__init__`` dropped)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imported(node: ast.AST, path: Path) -> list[str]:
    """The absolute module names an import statement names (relative ones resolved)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = list(path.relative_to(ROOT).parts[:-1])  # the module's package
        prefix = ".".join(base[: len(base) - (node.level - 1)])
        module = f"{prefix}.{node.module}" if node.module else prefix
    else:
        module = node.module or ""
    # ``from pkg import _private`` imports the private module ``pkg._private`` too.
    private = [a.name for a in node.names if a.name.startswith("_") and not a.name.endswith("__")]
    return [module] + [f"{module}.{name}" for name in private]


def _private_owner(module: str) -> str | None:
    """The package (dotted) holding the first private component of ``module``, if any."""
    parts = module.split(".")
    if parts[0] != "langgraph_mnemon":
        return None
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.endswith("__"):
            return ".".join(parts[:i])
    return None


def _cross_imports() -> list[tuple[str, str]]:
    """``(importing module, imported module)`` for each private cross-package import."""
    found: list[tuple[str, str]] = []
    for path in _modules(PACKAGE):
        package = ".".join(path.relative_to(ROOT).parts[:-1])
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            for module in _imported(node, path):
                owner = _private_owner(module)
                if owner is not None and owner != package:
                    found.append((".".join(_module_name(path)), module))
    return sorted(set(found))


def _all_length(init: Path) -> int | None:
    """``len(__all__)`` of ``init`` read with ``ast`` (list/tuple literals, ``+=`` included)."""
    if not init.is_file():
        return None
    total: int | None = None
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets, value, augment = node.targets, node.value, False
        elif isinstance(node, ast.AugAssign):
            targets, value, augment = [node.target], node.value, True
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value, augment = [node.target], node.value, False
        if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        size = len(value.elts) if isinstance(value, ast.List | ast.Tuple) else 0
        total = (total or 0) + size if augment else size
    return total


def _table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)


def main() -> int:
    """Print the tables; return the exit status."""
    sizes = []
    for folder in SIZED:
        files = _modules(PACKAGE / folder)
        sizes.append([folder, str(sum(_lines(p) for p in files)), str(len(files))])
    print("### Lines and modules\n")
    print(_table(["folder", "lines", "modules"], sizes))
    cross = _cross_imports()
    print("\n### Wiring\n")
    print(
        _table(
            ["measure", "count"],
            [
                ["`sync_twin(...)` calls", str(_sync_twin_uses())],
                ["private cross-package imports", str(len(cross))],
            ],
        )
    )
    print("\n### Public names (`__all__`)\n")
    rows = []
    for folder in PUBLIC:
        size = _all_length(PACKAGE / folder / "__init__.py")
        rows.append([folder, "-" if size is None else str(size)])
    print(_table(["package", "public names"], rows))
    print("\n### Private cross-package imports\n")
    print(_table(["importing module", "imports"], [[a, b] for a, b in cross]) if cross else "none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
