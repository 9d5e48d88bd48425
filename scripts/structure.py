"""Print the package's structure figures: module sizes, long functions, import circles.

Run from the repository root::

    python scripts/structure.py            # table for langgraph_mnemon
    python scripts/structure.py --list     # also list every long function

The figures are the ones the restructure issue measures: largest module, modules over
900 lines, functions over 60 lines (and over 100), import circles between modules and
between the layers of DESIGN.md, and public names per package.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "langgraph_mnemon"
MODULE_LIMIT = 900
EXPLAINED = f"over {MODULE_LIMIT} lines because"
"""A module over the limit passes when it is one concept and its docstring says why with this
phrase (DESIGN.md: cut a module when it holds two concepts, never only because it is long)."""
FUNCTION_LIMIT = 60


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node)
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != module and target.startswith(PACKAGE):
                found.add(target)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return result


def _surface(module: str) -> str:
    """The layer a module belongs to: the first component under the package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<root>"


@dataclass
class Figures:
    """What :func:`measure` finds in the package."""

    sizes: dict[str, int]
    long_functions: list[tuple[int, str]]
    module_cycles: list[list[str]]
    layer_cycles: list[list[str]]
    public: dict[str, int]
    explained: frozenset[str] = frozenset()

    @property
    def over_limit(self) -> list[tuple[str, int]]:
        """Modules over the limit whose docstring does not say why they are one concept."""
        return sorted(
            ((n, v) for n, v in self.sizes.items() if v > MODULE_LIMIT and n not in self.explained),
            key=lambda x: -x[1],
        )


def measure(root: Path) -> Figures:
    """Parse every module of the package under ``root`` and measure it."""
    trees = {}
    sizes = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        name = _module_name(path, root)
        text = path.read_text(encoding="utf-8")
        trees[name] = (ast.parse(text), path.name == "__init__.py")
        sizes[name] = len(text.splitlines())
    explained = frozenset(
        n for n, (t, _) in trees.items() if EXPLAINED in (ast.get_docstring(t) or "")
    )
    known = set(trees)
    graph = {name: _imports(tree, name, is_pkg, known) for name, (tree, is_pkg) in trees.items()}
    long_functions: list[tuple[int, str]] = []
    public: dict[str, int] = defaultdict(int)
    for name, (tree, is_pkg) in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > FUNCTION_LIMIT:
                    long_functions.append((length, f"{name}:{node.lineno} {node.name}"))
        package = name if is_pkg else name.rpartition(".")[0]
        if any(part.startswith("_") for part in name.split(".")):
            continue  # a private module's names are not part of any public face
        public[package] += len(_exported(tree))
    long_functions.sort(reverse=True)
    layer_graph: dict[str, set[str]] = defaultdict(set)
    for src, targets in graph.items():
        for dst in targets:
            if _surface(src) != _surface(dst):
                layer_graph[_surface(src)].add(_surface(dst))
    return Figures(
        sizes, long_functions, _cycles(graph), _cycles(layer_graph), dict(public), explained
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=".", help="repository root")
    parser.add_argument("--list", action="store_true", help="list every long function")
    args = parser.parse_args()
    figures = measure(Path(args.root).resolve())
    sizes, long_functions = figures.sizes, figures.long_functions
    largest = max(sizes.items(), key=lambda item: item[1])
    longest = f"{long_functions[0][1]} ({long_functions[0][0]})" if long_functions else "-"
    rows = [
        ("modules", str(len(sizes))),
        ("largest module", f"{largest[0]} ({largest[1]} lines)"),
        (f"modules over {MODULE_LIMIT} lines", str(len(figures.over_limit))),
        (f"functions over {FUNCTION_LIMIT} lines", str(len(long_functions))),
        ("functions over 100 lines", str(sum(n > 100 for n, _ in long_functions))),
        ("longest function", longest),
        ("module import circles", str(len(figures.module_cycles))),
        ("modules inside a circle", str(sum(len(c) for c in figures.module_cycles))),
        ("circles between top-level parts", str(len(figures.layer_cycles))),
        ("public names (public modules)", str(sum(figures.public.values()))),
    ]
    width = max(len(label) for label, _ in rows)
    print(f"| {'figure'.ljust(width)} | value |")
    print(f"|{'-' * (width + 2)}|-------|")
    for label, value in rows:
        print(f"| {label.ljust(width)} | {value} |")
    print()
    for name, size in figures.over_limit:
        print(f"over {MODULE_LIMIT}: {name} {size}")
    for name in sorted(n for n in figures.explained if sizes[n] > MODULE_LIMIT):
        print(f"over {MODULE_LIMIT}, one concept (its docstring says why): {name} {sizes[name]}")
    for cycle in figures.layer_cycles:
        print("circle between parts:", " <-> ".join(cycle))
    for cycle in figures.module_cycles:
        print("module circle:", ", ".join(cycle))
    print("public names per package:")
    for package, count in sorted(figures.public.items()):
        print(f"  {package}: {count}")
    if args.list:
        for length, where in long_functions:
            print(f"{length:5d} {where}")
    return 0


def _exported(tree: ast.AST) -> list[str]:
    """Names in ``__all__`` if the module declares one, else its public top-level names."""
    for node in tree.body:
        named_all = isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        )
        if named_all and isinstance(node.value, (ast.List, ast.Tuple)):
            return [getattr(e, "value", "") for e in node.value.elts]
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return [n for n in names if not n.startswith("_")]


if __name__ == "__main__":
    raise SystemExit(main())
