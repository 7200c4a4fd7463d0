"""Imports flow one way: config/errors -> core -> prims -> transforms/passes -> compiler -> runtime
-> numpy -> the transformation APIs -> nn/random/scipy -> test_util -> public modules. This test parses every module and enforces that order, and
checks that the package never imports jax."""

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


def _imports(path: pathlib.Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                yield f"{node.module}.{alias.name}"


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
