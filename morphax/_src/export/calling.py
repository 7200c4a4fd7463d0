"""Calling an Exported: the arguments' structure, ranks, dtypes and constant dimensions checked
against the export (JAX's messages), the dimension variables solved from the actual shapes with
JAX's shape-assertion errors, then the jaxpr for those sizes run (eagerly or bound as a jit call).
"""

from __future__ import annotations

from morphax._src.api.tracing import _abstractify
from morphax._src.core import pytree
from morphax._src.core import trace as _trace
from morphax._src.export.dim_expr import is_symbolic_dim
from morphax._src.export.shape_specs import args_kwargs_path_to_str, dimension_descriptor
from morphax._src.higher_order.pjit import pjit_p
from morphax._src.runtime.eager import call_compiled

_ASSERTION_DOC = ". Please see https://docs.jax.dev/en/latest/export/shape_poly.html#shape-assertion-errors for more details."
_SOLVE_DOC = (
    ". Please see https://docs.jax.dev/en/latest/export/shape_poly.html#dimension-variables-must-be-solvable-"
    "from-the-input-shapes for more details."
)


# ---------------------------------------------------------------------------- tree structure
def _child_keys(tree):
    return [k for k, _ in pytree.flatten_one_level_with_keys(tree)[0]]


def _is_strict_leaf(x) -> bool:
    return pytree.tree_structure(x).node_data() is None


def equality_errors(path, t1, t2):
    """JAX's `tree_util.equality_errors`: (path, thing1, thing2, explanation) per difference."""
    if _is_strict_leaf(t1) and _is_strict_leaf(t2):
        return
    if type(t1) is not type(t2):
        yield path, str(type(t1)), str(type(t2)), "their Python types differ"
        return
    if isinstance(t1, (list, tuple)) and len(t1) != len(t2):
        yield (path, f"{type(t1).__name__} of length {len(t1)}", f"{type(t2).__name__} of length {len(t2)}",
               "the lengths do not match")  # fmt: skip
        return
    c1, meta1 = pytree.flatten_one_level(t1)
    c2, meta2 = pytree.flatten_one_level(t2)
    c1, c2 = tuple(c1), tuple(c2)
    k1, k2 = _child_keys(t1), _child_keys(t2)
    try:
        diff = " ".join(repr(k.key) for k in set(k1).symmetric_difference(set(k2)))
    except Exception:  # noqa: BLE001 - keys without .key: no detail
        diff = ""
    if len(c1) != len(c2):
        yield (
            path,
            f"{type(t1)} with {len(c1)} child{'ren' if len(c1) > 1 else ''}",
            f"{type(t2)} with {len(c2)} child{'ren' if len(c2) > 1 else ''}",
            "the numbers of children do not match"
            + (diff and f", with the symmetric difference of key sets: {{{diff}}}"),
        )
        return
    if meta1 != meta2:
        yield (path, f"{type(t1)} with pytree metadata {meta1}", f"{type(t2)} with pytree metadata {meta2}",
               "the pytree node metadata does not match")  # fmt: skip
        return
    for k, a, b in zip(k1, c1, c2):
        yield from equality_errors((*path, k), a, b)


def check_tree(exported, in_tree):
    if in_tree == exported.in_tree:
        return
    got = in_tree.unflatten([0] * in_tree.num_leaves)
    want = exported.in_tree.unflatten([0] * exported.in_tree.num_leaves)
    lines = (
        f"   - {args_kwargs_path_to_str(path)} is a {a} in the invocation and a {b} when exported, so {why}.\n"
        for path, a, b, why in equality_errors((), got, want)
    )
    raise ValueError(
        "The invocation args and kwargs must have the same pytree structure as when the function "
        f"'{exported.fun_name}' was exported, but they have the following structural differences:\n"
        + "\n".join(lines)
    )


# ---------------------------------------------------------------------------- shapes and dtypes
def _shape_str(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def check_avals(exported, avals):
    """JAX's `_call_exported_abstract_eval` checks: rank, dtype, then each constant dimension."""
    for i, (want, got) in enumerate(zip(exported.in_avals, avals)):
        if len(want.shape) != len(got.shape):
            raise ValueError(
                f"Rank mismatch for {dimension_descriptor(exported.in_tree, i, None)}: expected "
                f"{_shape_str(want.shape)} and called with {_shape_str(got.shape)}"
            )
        if want.dtype != got.dtype:
            raise ValueError(
                f"Dtype mismatch for {dimension_descriptor(exported.in_tree, i, None)}: expected "
                f"{want.dtype} and called with {got.dtype}"
            )
        for d, want_d in enumerate(want.shape):
            if not is_symbolic_dim(want_d) and want_d != got.shape[d]:
                raise ValueError(
                    f"Shape mismatch for {dimension_descriptor(exported.in_tree, i, d)} (expected same "
                    f"constant): expected {_shape_str(want.shape)} and called with {_shape_str(got.shape)}"
                )


def solve_dim_vars(in_avals, in_tree, shapes):
    """The value of each dimension variable given the actual argument `shapes` (None for
    static-shape exports), checking every constraint in JAX's order with JAX's messages. With
    `shapes=None` it only checks that the variables can be solved (at export)."""
    equations, specs = [], []
    for i, aval in enumerate(in_avals):
        if not any(is_symbolic_dim(d) for d in aval.shape):
            continue
        specs.append((dimension_descriptor(in_tree, i, None), _shape_str(aval.shape)))
        for d, e in enumerate(aval.shape):
            if is_symbolic_dim(e):
                actual = None if shapes is None else shapes[i][d]
                equations.append((e, dimension_descriptor(in_tree, i, d), actual))
    if not equations:
        return {}
    scope = equations[0][0].scope
    specs_msg = (
        " Using the following polymorphic shapes specifications: "
        + ",".join(f"{name}.shape = {spec}" for name, spec in specs)
        + "."
    )
    env: dict = {}
    solution_msg = " Obtained dimension variables: "
    checks = []  # (ok, message) in JAX's order

    def process(eqn) -> bool:
        nonlocal solution_msg
        expr, dim_name, actual = eqn
        var, var_k, rest = None, None, 0
        for term, k in expr._terms:
            try:
                rest += k * term.evaluate(env)
            except KeyError:
                if (
                    var is None
                    and len(term.factors) == 1
                    and term.factors[0][1] == 1
                    and term.factors[0][0].var
                ):
                    var, var_k = term.factors[0][0].var, k
                    continue
                return False
        if var is None:
            checks.append((
                actual is None or actual == rest,
                "Input shapes do not match the polymorphic shapes specification. Found inconsistency between "
                f"dimension size {dim_name} (= {actual}) and the specification '{expr}' (= {rest})."
                + specs_msg + solution_msg + _ASSERTION_DOC,
            ))  # fmt: skip
            return True
        value, remainder = (0, 0) if actual is None else divmod(actual - rest, var_k)
        if var_k != 1:
            checks.append((
                remainder == 0,
                "Input shapes do not match the polymorphic shapes specification. Division had remainder "
                f"{remainder} when computing the value of '{var}'." + specs_msg + solution_msg + _ASSERTION_DOC,
            ))  # fmt: skip
        env[var] = value
        solution_msg += (
            f"'{var}' = {value} from specification '{expr}' for dimension {dim_name} (= {actual}), "
        )
        checks.append((
            actual is None or value >= 1,
            "Input shapes do not match the polymorphic shapes specification. Expected value >= 1 for "
            f"dimension variable '{var}'." + specs_msg + solution_msg + _ASSERTION_DOC,
        ))  # fmt: skip
        return True

    while equations:
        left = [eqn for eqn in equations if not process(eqn)]
        if len(left) == len(equations):
            unsolved = set().union(*(e._get_vars() for e, _, _ in left)) - set(env)
            raise ValueError(
                f"Cannot solve for values of dimension variables {unsolved}. We can only solve linear "
                "uni-variate constraints."
                + specs_msg
                + " Unprocessed specifications: "
                + ", ".join(f"'{e}' for dimension size {name}" for e, name, _ in left)
                + _SOLVE_DOC
            )
        equations = left
    if shapes is None:
        return env
    for c_str, eq, diff in scope._constraints:
        value = diff._evaluate(env)
        checks.append((
            value == 0 if eq else value >= 0,
            f"Input shapes do not match the symbolic shape constraint {c_str}. Expected '{diff}' to be "
            f"{'equal' if eq else 'greater or equal'} to 0, but found {value}. " + specs_msg + solution_msg
            + _ASSERTION_DOC,
        ))  # fmt: skip
    for ok, message in checks:
        if not ok:
            raise ValueError(message)
    return env


def call_exported(exported):
    """`exported.call`: a function of the exported function's (args, kwargs)."""

    def f_imported(*args, **kwargs):
        leaves, in_tree = pytree.tree_flatten((args, kwargs))
        check_tree(exported, in_tree)
        exported._check_platform()
        avals = [_abstractify(x) for x in leaves]
        check_avals(exported, avals)
        closed = exported._jaxpr_for_shapes([a.shape for a in avals])
        if _trace.ctx.trace is _trace.base_trace():
            outs = call_compiled(leaves, closed, exported.fun_name, exported._backend)
        else:
            outs = pjit_p.bind(*leaves, jaxpr=closed, name=exported.fun_name)
        return exported.out_tree.unflatten(outs)

    f_imported.__name__ = f"call_exported_{exported.fun_name}"
    return f_imported
