"""The JAX private and semi-private names that docs/compat.md ("Survey") lists as answered by
morphax: through `morphax.compat`, each module imports under its jax name, is morphax's own
module, and has every name the surveyed libraries (diffrax, lineax, optimistix, equinox, flax,
chex, numpyro, blackjax, distrax) take from it. One fresh interpreter checks them all, so the
doc's "yes" entries fail here when a module or name goes away. Runs without the libraries."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

# jax module -> the names the surveyed libraries take from it (only those morphax answers; the
# ones it lacks are in the doc's list of missing names).
ANSWERED: dict[str, tuple[str, ...]] = {
    "jax._src.ad_util": ("stop_gradient_p",),
    "jax._src.checkify": ("Error", "JaxException", "checkify", "user_checks"),
    "jax._src.compiler": (),
    "jax._src.core": ("ShapedArray",),
    "jax._src.dispatch": ("wait_for_tokens",),
    "jax._src.dtypes": ("DType", "ExtendedDType", "TypePromotionError", "extended", "finfo", "supports_inf"),
    "jax._src.flatten_util": ("ravel_pytree",),
    "jax._src.interpreters.ad": (),
    "jax._src.state.types": ("AbstractRef",),
    "jax._src.traceback_util": ("_exclude_paths", "api_boundary", "include_frame", "register_exclusion"),
    "jax._src.tree_util": ("_registry",),
    "jax._src.xla_bridge": ("_backends",),
    "jax.api_util": ("debug_info", "flatten_fun", "flatten_fun_nokwargs", "safe_map", "shaped_abstractify"),
    "jax.core": (
        "AbstractValue",
        "Atom",
        "ShapedArray",
        "Tracer",
        "eval_jaxpr",
        "find_top_trace",
        "get_aval",
        "get_opaque_trace_state",
        "mapped_aval",
        "raise_to_shaped",
        "unmapped_aval",
        "valid_jaxtype",
    ),
    "jax.experimental": ("io_callback",),
    "jax.experimental.checkify": (
        "Error",
        "ErrorCategory",
        "all_checks",
        "automatic_checks",
        "check",
        "check_error",
        "checkify",
        "div_checks",
        "float_checks",
        "index_checks",
        "nan_checks",
        "user_checks",
    ),
    "jax.experimental.hijax": (
        "AbstractValue",
        "AvalMutableQDD",
        "AvalQDD",
        "HiPrimitive",
        "MutableHiType",
        "Zero",
        "aval_method",
        "aval_property",
        "control_flow_allowed_effects",
        "instantiate_zeros",
        "is_undefined_primal",
        "register_hitype",
    ),
    "jax.experimental.layout": ("Format", "Layout"),
    "jax.experimental.multihost_utils": ("process_allgather", "sync_global_devices"),
    "jax.extend": ("core", "linear_util", "source_info_util"),
    "jax.extend.core": (
        "ClosedJaxpr",
        "Effect",
        "Jaxpr",
        "Literal",
        "Primitive",
        "Var",
        "find_top_trace",
        "get_opaque_trace_state",
        "jaxpr_as_fun",
        "mapped_aval",
        "unmapped_aval",
    ),
    "jax.extend.core.primitives": ("jit_p",),
    "jax.extend.linear_util": ("wrap_init",),
    "jax.extend.source_info_util": ("register_exclusion",),
    "jax.interpreters.ad": (
        "JVPTracer",
        "UndefinedPrimal",
        "Zero",
        "instantiate_zeros",
        "is_undefined_primal",
        "primitive_jvps",
        "primitive_transposes",
    ),
    "jax.interpreters.batching": ("axis_primitive_batchers", "primitive_batchers"),
    "jax.interpreters.mlir": ("emit_python_callback", "lower_fun", "register_lowering"),
    "jax.interpreters.partial_eval": ("PartialVal", "trace_to_jaxpr_dynamic", "trace_to_jaxpr_nounits"),
    "jax.lib": ("__version__",),
}

# Attribute paths libraries follow from a parent module without importing the module that holds
# the name (chex reads `jax._src.xla_bridge` after `import jax`; flax, diffrax, optimistix and
# distrax reach `jax.extend.core` from `import jax.extend`). Each is (imports, path); they are
# checked first, in this order, so no earlier import makes the module reachable.
CHAINS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("jax",), "jax._src.xla_bridge._backends"),
    (("jax", "jax.extend"), "jax.extend.core.get_opaque_trace_state"),
    (("jax", "jax.extend"), "jax.extend.core.Jaxpr"),
    (("jax", "jax.extend"), "jax.extend.core.ClosedJaxpr"),
    (("jax", "jax.extend"), "jax.extend.core.Var"),
    (("jax", "jax.extend"), "jax.extend.core.Literal"),
    (("jax", "jax.extend"), "jax.extend.core.primitives.jit_p"),
)

_PROBE = """
import importlib, json, sys

import morphax.compat

morphax.compat.install()
answered, chains = json.loads(sys.argv[1])
report = {"chains": {}, "modules": {}}
for imports, path in chains:
    for name in imports:
        importlib.import_module(name)
    obj = sys.modules["jax"]
    for part in path.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            break
    report["chains"][path] = obj is not None
for module, names in answered.items():
    try:
        mod = importlib.import_module(module)
    except Exception as err:
        report["modules"][module] = {"error": f"{type(err).__name__}: {err}"}
        continue
    report["modules"][module] = {
        "morphax": getattr(mod, "__name__", "").startswith("morphax"),
        "missing": [name for name in names if not hasattr(mod, name)],
    }
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def probe():
    repo = str(pathlib.Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_PROBE), json.dumps([ANSWERED, CHAINS])],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=repo,
    )
    assert res.returncode == 0, f"exit status {res.returncode}\n{res.stderr}"
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", sorted(ANSWERED))
def test_module_answers_the_names_libraries_use(probe, module):
    result = probe["modules"][module]
    assert "error" not in result, f"import {module} under morphax.compat: {result.get('error')}"
    assert result["morphax"], f"{module} is not a morphax module under morphax.compat"
    assert result["missing"] == [], f"{module} lacks {result['missing']}"


@pytest.mark.parametrize("path", [path for _, path in CHAINS])
def test_attribute_path_resolves_from_the_parent_import(probe, path):
    assert probe["chains"][path], f"{path} does not resolve by attribute access"
