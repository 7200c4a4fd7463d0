"""Imports flow one way: config/errors -> core -> prims -> transforms/passes -> compiler -> runtime
-> numpy -> the transformation APIs -> nn/random/scipy -> test_util -> public modules. This test
parses every module (imports inside functions, relative imports and importlib.import_module
included), enforces that order, finds import cycles, and checks that the package never imports
jax."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "morphax"

LAYERS = {
    "config": 0,
    "errors": 0,
    "traceback_util": 0,
    "core": 1,
    "prims": 2,
    "transforms": 3,
    "passes": 3,
    "control_flow": 3,
    "compiler": 4,
    "runtime": 5,
    "numpy": 6,
    "api": 7,
    "nn": 8,
    "random": 8,
    "scipy": 8,
    "test_util": 9,
}
PUBLIC = 10


def _layer_of_module(parts: list[str]) -> int:
    # parts: dotted name after 'morphax'
    if not parts or parts[0] != "_src":
        return PUBLIC
    if len(parts) == 1:
        return PUBLIC
    return LAYERS.get(parts[1], 9)


def _package_of(path: pathlib.Path) -> str:
    """The package a module's relative imports start from (its directory, for __init__ too)."""
    return ".".join(path.relative_to(ROOT.parent).parent.parts)


def _imports(path: pathlib.Path):
    """Every module name `path` imports: import statements anywhere in the file (inside functions
    too), relative imports resolved, and `importlib.import_module("...")` with a constant name."""
    tree = ast.parse(path.read_text())
    package = _package_of(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([module] if module else []))
            for alias in node.names:
                yield f"{module}.{alias.name}"
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            yield node.args[0].value


def test_imports_point_downward():
    violations = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)[1:]
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
        own = _layer_of_module(parts)
        for name in _imports(path):
            if name.split(".")[0] == "jax":
                violations.append(f"{rel}: imports jax")
            if not name.startswith("morphax"):
                continue
            target = name.split(".")[1:]
            if (
                target
                and target[0] == "_src"
                and len(target) >= 2
                and target[1] not in LAYERS
                and own < PUBLIC
            ):
                continue  # a name imported from morphax._src itself (e.g. `from morphax._src import config`)
            if _layer_of_module(target) > own:
                violations.append(f"{rel} (layer {own}) imports {name} (layer {_layer_of_module(target)})")
    assert not violations, "\n".join(violations)


def _module_graph() -> dict:
    """module -> the package modules it imports (a submodule importing a sibling through its
    package does not count as importing the package's __init__)."""
    modules = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path

    def resolve(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for module, path in modules.items():
        edges = set()
        for name in _imports(path):
            if not name.startswith("morphax"):
                continue
            target = resolve(name)
            if target and target != module and not module.startswith(target + "."):
                edges.add(target)
        graph[module] = edges
    return graph


def _cycles(graph) -> list:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles_outside_the_primitive_catalogue():
    """No two modules import each other, directly or through others. The one cycle left is inside
    prims/: derivative and batching rules reach the lax functions through the lazy `_lax()`
    loaders of prims/_ad.py and prims/_batching.py (issue 15, item 1); it may not grow out of
    prims/."""
    import sys

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    bad = [
        sorted(c) for c in _cycles(_module_graph()) if not all(m.startswith("morphax._src.prims.") for m in c)
    ]
    assert not bad, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in bad)
