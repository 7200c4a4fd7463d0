"""Imports flow one way: config/errors -> core (and pjrt, beside it) -> prims -> transforms/passes -> higher_order ->
compiler -> runtime -> numpy -> the transformation APIs -> nn/random/scipy -> test_util -> public
modules, and `transforms` and `passes` import nothing of `prims` (nor each other): they see
primitives only through the slots of `core.primitive.Primitive`. This test parses every module
(imports inside functions, relative imports and importlib.import_module included), enforces that
order, finds import cycles anywhere in the package, and checks that the package never imports
jax."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "morphax"

LAYERS = {
    "config": 0,
    "jax_only_flags": 0,
    "errors": 0,
    "events": 0,
    "traceback_util": 0,
    "version": 0,
    "wrapping": 0,  # wraps(): functools.wraps that tolerates odd callables
    "core": 1,
    "pjrt": 1,  # the PJRT C API binding: imports nothing else of morphax (tests/pjrt checks)
    "prims": 2,
    "transforms": 3,
    "passes": 3,
    "higher_order": 4,
    "compiler": 5,
    "runtime": 6,
    "sharding": 6,
    "distributed": 6,
    "numpy": 7,
    "api": 8,
    "interpreters": 8,  # JAX's rule tables by their jax._src names (morphax.compat)
    "ad_util": 8,
    "profiler": 8,
    "checkify": 8,
    "nn": 9,
    "random": 9,
    "ops": 9,
    "flatten_util": 9,
    "image": 9,
    "scipy": 9,
    "export": 9,
    "test_util": 10,
}
PUBLIC = 11
# Packages that must not import a lower (or same-layer) package the order alone would allow.
FORBIDDEN = {"transforms": {"prims", "passes"}, "passes": {"prims", "transforms"}}


def _layer_of_module(parts: list[str]) -> int:
    # parts: dotted name after 'morphax'
    if not parts or parts[0] != "_src":
        return PUBLIC
    if len(parts) == 1:
        return PUBLIC
    return LAYERS.get(parts[1], 10)


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
            if len(parts) > 1 and len(target) > 1 and target[1] in FORBIDDEN.get(parts[1], ()):
                violations.append(
                    f"{rel} imports {name}: {parts[1]}/ may import only core/ (and config, errors)"
                )
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


def test_no_import_cycles():
    """No two modules of the package import each other, directly or through others (the primitive
    catalogue included: rules import the lax functions they use from their families, and the
    structural primitives every rule helper binds are declared in core/structural.py)."""
    import sys

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    cycles = [sorted(c) for c in _cycles(_module_graph())]
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_only_the_runtime_reads_an_arrays_buffer():
    """`Array._buf` (a NumPy array or a pending buffer) is the runtime's own business: other layers
    use the Array's public properties or the runtime's helpers (`type_key`, `computed_pair_dtype`),
    and recognise one with `core.values.is_concrete_array`."""
    offenders = []
    for path in ROOT.rglob("*.py"):
        if "runtime" in path.relative_to(ROOT).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            reads = isinstance(node, ast.Attribute) and node.attr == "_buf"
            probes = isinstance(node, ast.Constant) and node.value == "_buf"  # hasattr(x, "_buf")
            if reads or probes:
                offenders.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}")
    assert not offenders, "reads Array._buf outside runtime/:\n" + "\n".join(offenders)
