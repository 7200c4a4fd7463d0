"""Differentiation entry points: jvp, linearize, vjp, grad, value_and_grad, the Jacobians,
linear_transpose, custom_gradient and closure_convert.

Each flattens pytree arguments, checks them (structure, shapes, dtypes) with errors that say
what to do, and calls the trace machinery in `transforms/ad.py`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from morphax._src import events
from morphax._src.api.pullback import VJP, check_cotangents
from morphax._src.core import dtypes as _dtypes
from morphax._src.core import pytree
from morphax._src.core import trace as _trace
from morphax._src.core.ad_util import Zero, instantiate, is_zero, tangent_aval, tangent_dtype, zeros_like_aval
from morphax._src.core.avals import ShapedArray, get_aval, is_valid_value
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, eval_jaxpr
from morphax._src.core.values import make_array
from morphax._src.transforms import ad
from morphax._src.transforms.custom import custom_vjp
from morphax._src.transforms.staging import fun_name, trace_to_jaxpr
from morphax._src.wrapping import wraps


def _flat_fun(fun, in_tree, has_aux, store):
    """`fun` of pytree args -> function of leaves; output (and aux) trees are recorded in store."""

    def flat(*leaves):
        args = pytree.tree_unflatten(in_tree, leaves)
        out = fun(*args)
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(
                    f"{fun_name(fun)}: with has_aux=True the function must return a pair "
                    f"(output, auxiliary_data), but it returned {type(out).__name__}."
                )
            out, aux = out
            out_leaves, out_tree = pytree.tree_flatten(out)
            aux_leaves, aux_tree = pytree.tree_flatten(aux)
            store["out_tree"], store["aux_tree"], store["n_out"] = out_tree, aux_tree, len(out_leaves)
            # Aux leaves that are not arrays (strings, objects) come back as they are, as in JAX;
            # only the array ones travel through the transformation.
            store["aux_static"] = [None if is_valid_value(x) else x for x in aux_leaves]
            store["aux_is_array"] = [is_valid_value(x) for x in aux_leaves]
            return list(out_leaves) + [x for x in aux_leaves if is_valid_value(x)]
        out_leaves, out_tree = pytree.tree_flatten(out)
        store["out_tree"], store["n_out"] = out_tree, len(out_leaves)
        return out_leaves

    return flat


def _aux_out(store, array_leaves):
    """The aux output: its array leaves (as transformed) and its other leaves (as returned)."""
    it = iter(array_leaves)
    leaves = [next(it) if a else x for a, x in zip(store["aux_is_array"], store["aux_static"])]
    return pytree.tree_unflatten(store["aux_tree"], leaves)


def _check_outputs_are_arrays(fun, leaves):
    for x in leaves:
        try:
            get_aval(x)
        except TypeError:
            raise TypeError(
                f"{fun_name(fun)} returned a value of type {type(x).__name__}, which is not a valid "
                "morphax type: differentiated functions must return arrays (or pytrees of them)."
            ) from None


# --------------------------------------------------------------------------------------------- jvp


def _tangent_matches(p, t, where):
    pa, ta = get_aval(p), get_aval(t)
    if pa.shape != ta.shape:
        raise ValueError(
            f"jvp called with different primal and tangent shapes at {where}: primal shape {pa.shape}, "
            f"tangent shape {ta.shape}."
        )
    want = tangent_dtype(pa.dtype)
    if ta.dtype != want:
        raise TypeError(
            f"primal and tangent arguments to jvp do not match at {where}: dtypes must be equal, or for "
            f"an int/bool primal the tangent dtype must be float0. Got primal dtype {pa.dtype.name}, so "
            f"the expected tangent dtype is {want.name}, but got {ta.dtype.name}."
        )


def _is_key_array(x) -> bool:
    return isinstance(getattr(x, "dtype", None), _dtypes.ExtendedDType)


def jvp(fun, primals, tangents, has_aux=False):
    """Push `tangents` forward through `fun` at `primals`: returns (primals_out, tangents_out)."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(
            "primal and tangent arguments to jvp must be tuples or lists; found "
            f"{type(primals).__name__} and {type(tangents).__name__}."
        )
    # Typed PRNG keys are one leaf each here (their tangent is one float0 array, as in JAX).
    p_paths, user_tree = pytree.tree_flatten_with_path(tuple(primals), is_leaf=_is_key_array)
    t_leaves, t_tree = pytree.tree_flatten(tuple(tangents), is_leaf=_is_key_array)
    if user_tree != t_tree:
        raise TypeError(
            "primal and tangent arguments to jvp must have the same tree structure; primals have "
            f"structure {user_tree} whereas tangents have structure {t_tree}."
        )
    p_tree = pytree.tree_structure(tuple(primals))
    if p_tree != user_tree:  # key arrays: each stands for the one leaf it flattens to
        p_paths = [(path, pytree.tree_leaves(p)[0] if _is_key_array(p) else p) for path, p in p_paths]
    p_leaves = [leaf for _, leaf in p_paths]
    ts = []
    for (path, p), t in zip(p_paths, t_leaves):
        _tangent_matches(p, t, f"primals{pytree.keystr(path)}")
        ts.append(
            Zero(tangent_aval(get_aval(p))) if get_aval(t).dtype == _dtypes.float0 else _like_primal(t, p)
        )
    store: dict = {}
    out_p, out_t = ad.jvp_flat(_flat_fun(fun, p_tree, has_aux, store), p_leaves, ts)
    n = store["n_out"]
    _check_outputs_are_arrays(fun, out_p[:n])
    primals_out = pytree.tree_unflatten(store["out_tree"], out_p[:n])
    t_out = [_array_like_primal(instantiate(t), p) for t, p in zip(out_t[:n], out_p[:n])]
    tangents_out = pytree.tree_unflatten(store["out_tree"], t_out)
    if has_aux:
        return primals_out, tangents_out, _aux_out(store, out_p[n:])
    return primals_out, tangents_out


def _array_like_primal(t, p):
    """A Python-scalar tangent an operation passed through unchanged (the tangent of x + 1 is
    x's): an array when its primal output is one, as JAX's tangents come out of its rules; a
    primal returned untouched keeps its scalar tangent, as in JAX."""
    if _dtypes.is_python_scalar(t) and not _dtypes.is_python_scalar(p):
        aval = tangent_aval(get_aval(p))
        return make_array(t, dtype=aval.dtype, weak_type=aval.weak_type)
    return t


def _like_primal(t, p):
    """Tangent `t` with the weak type of its primal `p`'s tangent aval. JAX traces its jnp
    functions (each a jitted function) with that aval, so a strong tangent of a Python float
    comes out weak, as the gradient does. NB: JAX returns a tangent that no function touched
    (an identity) unchanged; here it has the primal's weak type."""
    want = tangent_aval(get_aval(p))
    have = get_aval(t)
    if have.weak_type == want.weak_type or have.dtype != want.dtype:
        return t
    from morphax._src.prims import conversion

    return conversion._convert_element_type(t, want.dtype, want.weak_type)


def linearize(fun, *primals, has_aux=False):
    """Returns (primals_out, f_jvp) where f_jvp evaluates the linearized function (no retracing)."""
    p_leaves, p_tree = pytree.tree_flatten(primals)
    store: dict = {}
    out_p, lin = ad.linearize_flat(_flat_fun(fun, p_tree, has_aux, store), p_leaves)
    n = store["n_out"]
    if has_aux and any(a is None for a in lin.out_zero_avals[n:]):
        lin = _drop_outputs(lin, n)
    out_tree = store["out_tree"]
    structure = _LinearStructure(lin.jaxpr.jaxpr, lin.out_zero_avals, lin.in_avals, p_tree, out_tree, n)
    f_jvp = Linearized(lin.jaxpr.consts, structure)
    primals_out = pytree.tree_unflatten(out_tree, out_p[:n])
    if has_aux:
        return primals_out, f_jvp, _aux_out(store, out_p[n:])
    return primals_out, f_jvp


@dataclasses.dataclass(eq=False)  # compared by identity: one per linearization
class _LinearStructure:
    jaxpr: object  # the linear Jaxpr; its constants are the residual arrays
    out_zero_avals: list
    in_avals: list  # the tangents' avals (the primals' tangent avals)
    in_tree: object
    out_tree: object
    n_out: int


class Linearized:
    """The `f_jvp` of `linearize`: the linear function of the tangents. As JAX's (a `Partial`),
    a pytree whose leaves are the residual arrays, so it can be passed to and returned from
    jitted functions."""

    def __init__(self, residuals, structure: _LinearStructure):
        self.residuals = list(residuals)
        self.structure = structure

    @property
    def jaxpr(self) -> ClosedJaxpr:
        return ClosedJaxpr(self.structure.jaxpr, self.residuals)

    def __call__(self, *tangents):
        s = self.structure
        t_leaves, t_tree = pytree.tree_flatten(tangents)
        if t_tree != s.in_tree:
            raise TypeError(
                f"linearized function called with tangents of structure {t_tree}, expected {s.in_tree} "
                "(the structure of the primals)."
            )
        for a, t in zip(s.in_avals, t_leaves):
            if get_aval(t).shape != a.shape:
                raise ValueError(
                    f"linearized function: tangent shape {get_aval(t).shape} != primal shape {a.shape}"
                )
        lin = ad.LinearFunction(self.jaxpr, s.out_zero_avals, s.in_avals)
        outs = lin(*t_leaves)[: s.n_out]
        return pytree.tree_unflatten(s.out_tree, [instantiate(t) for t in outs])


pytree.register_pytree_node(
    Linearized, lambda f: (f.residuals, f.structure), lambda s, residuals: Linearized(residuals, s)
)


def _drop_outputs(lin, n):
    # Aux outputs are not differentiated: keep only the first n outputs of the linear function.
    live_before = sum(1 for a in lin.out_zero_avals[:n] if a is None)
    closed = lin.jaxpr
    jaxpr = closed.jaxpr
    trimmed = Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars[:live_before], jaxpr.eqns)
    return ad.LinearFunction(ClosedJaxpr(trimmed, closed.consts), lin.out_zero_avals[:n], lin.in_avals)


# --------------------------------------------------------------------------------------------- vjp


def vjp(fun, *primals, has_aux=False):
    """Returns (primals_out, vjp_fun) where vjp_fun maps output cotangents to input cotangents.

    `vjp_fun` is a `VJP` (api/pullback.py): a pytree over the residuals, so it can be passed to
    a jitted function, and ``vjp_fun.with_refs(...)`` skips or accumulates chosen cotangents."""
    p_leaves, p_tree = pytree.tree_flatten(primals)
    store: dict = {}
    name = fun_name(fun)
    with events.span(f"jvp({name})", "autodiff"):
        out_p, lin = ad.linearize_flat(_flat_fun(fun, p_tree, has_aux, store), p_leaves)
    n = store["n_out"]
    _check_outputs_are_arrays(fun, out_p[:n])
    if has_aux:
        lin = _drop_outputs(lin, n)
    vjp_fun = VJP.of(lin, p_tree, store["out_tree"], [get_aval(o) for o in out_p[:n]], name)
    primals_out = pytree.tree_unflatten(store["out_tree"], out_p[:n])
    if has_aux:
        return primals_out, vjp_fun, _aux_out(store, out_p[n:])
    return primals_out, vjp_fun


# ------------------------------------------------------------------------------------ fwd_and_bwd


def fwd_and_bwd(fun, argnums, has_aux=False, jitted=True):
    """``fwd, bwd = fwd_and_bwd(f, argnums)``: ``fwd(*args)`` is ``(f(*args), residuals)`` (plus
    aux with `has_aux`) and ``bwd(residuals, cotangent)`` the cotangents of the arguments
    `argnums` selects (a tuple for a tuple of argnums), as ``jax.fwd_and_bwd``. The residuals
    are the pullback (a `VJP` pytree). Jitted by default: one trace of `fwd` serves every call,
    and its pullback's structure with it, so `bwd` compiles once too."""

    def fwd(*args):
        single, nums = _normalize_argnums(argnums, len(args), "fwd_and_bwd")
        f_partial, dyn = _partial_with(fun, args, {}, nums)
        out = vjp(f_partial, *dyn, has_aux=has_aux)
        out[1].single = single
        return out

    def bwd(residuals, cotangents):
        if not isinstance(residuals, VJP):
            raise TypeError(
                f"fwd_and_bwd: bwd takes the residuals fwd returned, got {type(residuals).__name__}"
            )
        out = residuals(cotangents)
        return out[0] if residuals.single else out

    fwd.__name__, bwd.__name__ = f"fwd_of_{fun_name(fun)}", f"bwd_of_{fun_name(fun)}"
    if jitted:
        from morphax._src.api.jit import jit

        return jit(fwd), jit(bwd)
    return fwd, bwd


# -------------------------------------------------------------------------------------------- grad


def _normalize_argnums(argnums, nargs, fname):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums:
        raise ValueError(f"{fname}: argnums must not be empty")
    out = []
    for i in nums:
        if not isinstance(i, (int, np.integer)):
            raise TypeError(f"{fname}: argnums must be an int or a tuple of ints, got {argnums!r}")
        if not -nargs <= i < nargs:
            raise TypeError(
                f"{fname}: differentiating with respect to argnums={argnums} requires at least {i + 1 if i >= 0 else -i} "
                f"positional arguments to be passed by the caller, but got only {nargs} positional arguments."
            )
        out.append(int(i) % nargs)
    return single, tuple(out)


def _check_input_dtype(fname, holomorphic, allow_int, argnum, path, x):
    dt = get_aval(x).dtype
    where = f"argument {argnum}{pytree.keystr(path)}"
    if holomorphic and not _dtypes.is_complex(dt):
        raise TypeError(
            f"{fname} with holomorphic=True requires inputs with complex dtype, but {where} has dtype {dt.name}."
        )
    if not _dtypes.is_inexact(dt) and not allow_int:
        raise TypeError(
            f"{fname} requires real- or complex-valued inputs (input dtype that is a sub-dtype of np.inexact), "
            f"but {where} has dtype {dt.name}. If you want to use Boolean- or integer-valued inputs, use vjp "
            "or set allow_int to True."
        )


def _check_scalar_output(fname, x, holomorphic):
    try:
        aval = get_aval(x)
    except TypeError:
        raise TypeError(f"Gradient only defined for scalar-output functions. Output was {x!r}.") from None
    if aval.shape != ():
        raise TypeError(
            f"Gradient only defined for scalar-output functions. Output had shape: {aval.shape}. "
            "For non-scalar outputs use vjp (a vector-Jacobian product) or jacrev (the full Jacobian)."
        )
    dt = aval.dtype
    if holomorphic:
        if not _dtypes.is_complex(dt):
            raise TypeError(
                f"{fname} with holomorphic=True requires outputs with complex dtype, but got {dt.name}."
            )
    elif _dtypes.is_complex(dt):
        raise TypeError(
            f"{fname} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but got "
            f"{dt.name}. For holomorphic differentiation, pass holomorphic=True. For differentiation of "
            "non-holomorphic functions involving complex outputs, use vjp directly."
        )
    elif not _dtypes.is_floating(dt):
        raise TypeError(
            f"{fname} requires real- or complex-valued outputs (output dtype that is a sub-dtype of "
            f"np.inexact), but got {dt.name}. For differentiation of functions with integer outputs, use "
            "vjp directly."
        )


def _partial_with(fun, args, kwargs, argnums):
    dyn = tuple(args[i] for i in argnums)

    def f_partial(*dyn_args):
        full = list(args)
        for i, a in zip(argnums, dyn_args):
            full[i] = a
        return fun(*full, **kwargs)

    f_partial.__name__ = fun_name(fun)  # errors and profiler spans name the user's function
    return f_partial, dyn


def _vjp_of_argnums(name, fun, args, kwargs, argnums, holomorphic, allow_int, has_aux):
    """vjp of `fun` with respect to the positional arguments `argnums` selects, after checking
    their dtypes. Returns (single, those arguments, primal output, pullback, aux or None)."""
    single, nums = _normalize_argnums(argnums, len(args), name)
    f_partial, dyn = _partial_with(fun, args, kwargs, nums)
    for i, a in zip(nums, dyn):
        for path, leaf in pytree.tree_flatten_with_path(a)[0]:
            _check_input_dtype(name, holomorphic, allow_int, i, path, leaf)
    if has_aux:
        return (single, dyn, *vjp(f_partial, *dyn, has_aux=True))
    return (single, dyn, *vjp(f_partial, *dyn), None)


# The docstrings of the functions grad, value_and_grad, jacfwd and jacrev return (JAX's wording).
_GRAD_DOC = (
    "Gradient of {fun} with respect to positional argument(s) {argnums}. Takes the same arguments "
    "as {fun} but returns the gradient, which has the same shape as the arguments at positions "
    "{argnums}."
)
_VALUE_AND_GRAD_DOC = (
    "Value and gradient of {fun} with respect to positional argument(s) {argnums}. Takes the same "
    "arguments as {fun} but returns a two-element tuple where the first element is the value of "
    "{fun} and the second element is the gradient, which has the same shape as the arguments at "
    "positions {argnums}."
)
_JACOBIAN_DOC = (
    "Jacobian of {fun} with respect to positional argument(s) {argnums}. Takes the same arguments "
    "as {fun} but returns the jacobian of the output with respect to the arguments at positions "
    "{argnums}."
)


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """Returns a function computing both `fun` and its gradient with respect to `argnums`."""
    if not callable(fun):
        raise TypeError(f"value_and_grad: expected a callable, got {fun!r}")

    @wraps(fun, _VALUE_AND_GRAD_DOC, argnums=argnums)
    def value_and_grad_f(*args, **kwargs):
        single, _, ans, vjp_fun, aux = _vjp_of_argnums(
            "grad", fun, args, kwargs, argnums, holomorphic, allow_int, has_aux
        )
        _check_scalar_output("grad", ans, holomorphic)
        # The seed keeps the output's weak type, as JAX's (so grad of a Python float is weak).
        out_aval = get_aval(ans)
        ct = make_array(1, dtype=out_aval.dtype, weak_type=out_aval.weak_type)
        g = vjp_fun(ct)
        g = g[0] if single else g
        return ((ans, aux), g) if has_aux else (ans, g)

    return value_and_grad_f


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """The gradient of scalar-valued `fun` with respect to the arguments selected by `argnums`."""
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, reduce_axes)

    @wraps(fun, _GRAD_DOC, argnums=argnums)
    def grad_f(*args, **kwargs):
        if has_aux:
            (_, aux), g = vg(*args, **kwargs)
            return g, aux
        return vg(*args, **kwargs)[1]

    return grad_f


# --------------------------------------------------------------------------------------- Jacobians


def _basis_for(leaves):
    """Stacked one-hot directions over every element of `leaves`: leaf i gets shape (N,) + its shape."""
    avals = [get_aval(x) for x in leaves]
    sizes = [a.size for a in avals]
    total = int(sum(sizes))
    eye = np.eye(total)
    out, start = [], 0
    for a, n in zip(avals, sizes):
        block = eye[:, start : start + n].reshape((total,) + tuple(a.shape)).astype(tangent_dtype(a.dtype))
        out.append(
            make_array(block, dtype=block.dtype, weak_type=a.weak_type and _dtypes.is_inexact(a.dtype))
        )
        start += n
    return out, sizes, total


def _downcast_like(block, example_aval):
    """A Jacobian block in the dtype and weak type of `example_aval` (the output leaf's for
    jacfwd, the input leaf's for jacrev), as JAX's: the real part when the example is real, so
    the Jacobian of a function of a Python float is weakly typed like its gradient."""
    from morphax._src.prims import complex_parts, conversion

    aval = get_aval(block)
    if aval.dtype == _dtypes.float0:  # allow_int: zeros of the integer input's dtype, as JAX
        return zeros_like_aval(ShapedArray(aval.shape, example_aval.dtype, example_aval.weak_type))
    if _dtypes.is_complex(aval.dtype) and not _dtypes.is_complex(example_aval.dtype):
        block = complex_parts.real(block)
    return conversion._convert_element_type(block, example_aval.dtype, example_aval.weak_type)


def _split_jacobian(stacked, axis_sizes, out_shape, in_shapes):
    """Cut the trailing stacked-basis axis of `stacked` into one Jacobian block per input leaf."""
    from morphax._src.numpy import manipulation as _manip
    from morphax._src.prims import lax_api as L

    blocks, start = [], 0
    for n, in_shape in zip(axis_sizes, in_shapes):
        part = L.slice_in_dim(stacked, start, start + n, axis=len(out_shape))
        blocks.append(_manip.reshape(part, tuple(out_shape) + tuple(in_shape)))
        start += n
    return blocks


def _check_fwd_inputs(nums, dyn, holomorphic):
    for i, a in zip(nums, dyn):
        for path, leaf in pytree.tree_flatten_with_path(a)[0]:
            dt = get_aval(leaf).dtype
            if holomorphic and not _dtypes.is_complex(dt):
                raise TypeError(f"jacfwd with holomorphic=True requires complex inputs, got {dt.name}")
            if not holomorphic and not _dtypes.is_floating(dt):
                raise TypeError(
                    f"jacfwd requires real-valued inputs (input dtype that is a sub-dtype of np.floating), "
                    f"but argument {i}{pytree.keystr(path)} has dtype {dt.name}. For holomorphic "
                    "differentiation, pass holomorphic=True."
                )


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Jacobian by forward mode: one JVP per input element, vectorized with vmap."""
    from morphax._src.api.vmap import vmap

    # JAX's jacfwd wraps `fun` (its name, its __wrapped__: equinox follows that chain to warn
    # about a transformed Module stored as a field).
    @wraps(fun, _JACOBIAN_DOC, argnums=argnums)
    def jacfun(*args, **kwargs):
        single, nums = _normalize_argnums(argnums, len(args), "jacfwd")
        f_partial, dyn = _partial_with(fun, args, kwargs, nums)
        _check_fwd_inputs(nums, dyn, holomorphic)
        in_leaves, in_tree = pytree.tree_flatten(dyn)
        basis, sizes, total = _basis_for(in_leaves)

        def pushfwd(*t_leaves):
            return jvp(f_partial, dyn, pytree.tree_unflatten(in_tree, t_leaves), has_aux=has_aux)

        out_axes = (None, -1, None) if has_aux else (None, -1)
        if total == 0:
            res = pushfwd(*[instantiate(Zero(tangent_aval(get_aval(x)))) for x in in_leaves])
        else:
            res = vmap(pushfwd, out_axes=out_axes)(*basis)
        y, tangents = res[0], res[1]
        out_leaves, out_tree = pytree.tree_flatten(y)
        t_leaves = pytree.tree_leaves(tangents)
        per_out = []
        for o, t in zip(out_leaves, t_leaves):
            o_shape = get_aval(o).shape
            if total == 0:
                blocks = [
                    zeros_like_aval(get_aval(o).update(shape=tuple(o_shape) + get_aval(x).shape))
                    for x in in_leaves
                ]
            else:
                blocks = _split_jacobian(t, sizes, o_shape, [get_aval(x).shape for x in in_leaves])
                blocks = [_downcast_like(b, get_aval(o)) for b in blocks]
            tree = pytree.tree_unflatten(in_tree, blocks)
            per_out.append(tree[0] if single else tree)
        jac = pytree.tree_unflatten(out_tree, per_out)
        return (jac, res[2]) if has_aux else jac

    return jacfun


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """The Jacobian by reverse mode: one VJP per output element, vectorized with vmap."""
    from morphax._src.api.vmap import vmap

    @wraps(fun, _JACOBIAN_DOC, argnums=argnums)
    def jacfun(*args, **kwargs):
        single, dyn, y, pullback, aux = _vjp_of_argnums(
            "jacrev", fun, args, kwargs, argnums, holomorphic, allow_int, has_aux
        )
        out_leaves, out_tree = pytree.tree_flatten(y)
        in_leaves, in_tree = pytree.tree_flatten(dyn)
        basis, sizes, total = _basis_for(out_leaves)
        in_shapes = [get_aval(x).shape for x in in_leaves]
        if total:
            cts = vmap(lambda *b: pytree.tree_leaves(pullback(pytree.tree_unflatten(out_tree, b))))(*basis)
        per_out, start = [], 0
        for o, n in zip(out_leaves, sizes):
            o_shape = get_aval(o).shape
            blocks = []
            for li, x in enumerate(in_leaves):
                if n == 0:
                    blocks.append(
                        zeros_like_aval(get_aval(x).update(shape=tuple(o_shape) + tuple(in_shapes[li])))
                    )
                    continue
                from morphax._src.numpy import manipulation as _manip
                from morphax._src.prims import lax_api as L

                rows = L.slice_in_dim(cts[li], start, start + n, axis=0)
                block = _manip.reshape(rows, tuple(o_shape) + tuple(in_shapes[li]))
                blocks.append(_downcast_like(block, get_aval(x)))
            start += n
            tree = pytree.tree_unflatten(in_tree, blocks)
            per_out.append(tree[0] if single else tree)
        jac = pytree.tree_unflatten(out_tree, per_out)
        return (jac, aux) if has_aux else jac

    return jacfun


jacobian = jacrev


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Hessian: forward-over-reverse (jacfwd of jacrev)."""
    return jacfwd(
        jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic),
        argnums,
        has_aux=has_aux,
        holomorphic=holomorphic,
    )


# -------------------------------------------------------------------------------- linear_transpose


def linear_transpose(fun, *primals, reduce_axes=()):
    """Transpose of a function promised to be linear, at the types of `primals` (arrays, or
    anything with a shape and dtype: only those are used, as in JAX)."""
    p_leaves, p_tree = pytree.tree_flatten(primals)
    in_avals = [_primal_aval(p) for p in p_leaves]
    for a in in_avals:
        if not _dtypes.is_inexact(a.dtype):
            raise TypeError(
                f"linear_transpose only supports float and complex inputs, but got {a.dtype.name}"
            )
    store: dict = {}
    flat = _flat_fun(fun, p_tree, False, store)
    with _trace.new_trace(ad.PartialEvalTrace()) as pe:
        args = [pe.new_arg(a.strip_weak_type()) for a in in_avals]
        outs = flat(*args)
        closed = pe.to_closed_jaxpr(outs)
    out_tree = store["out_tree"]
    out_avals = closed.out_avals

    def transposed(*cts):
        ct = cts[0] if len(cts) == 1 else cts
        ct_leaves = check_cotangents(out_tree, out_avals, ct)
        cts_in = ad.backward_pass(closed, ct_leaves)
        dense = [zeros_like_aval(a) if is_zero(c) else c for c, a in zip(cts_in, in_avals)]
        return pytree.tree_unflatten(p_tree, dense)

    return transposed


def _primal_aval(p) -> ShapedArray:
    """The type of a `linear_transpose` primal: an aval or ShapeDtypeStruct stands for itself."""
    if isinstance(p, ShapedArray):
        return p
    if (
        not hasattr(p, "aval")
        and hasattr(p, "shape")
        and hasattr(p, "dtype")
        and not isinstance(p, np.ndarray)
    ):
        return ShapedArray(
            tuple(p.shape), _dtypes.canonicalize_dtype(p.dtype), bool(getattr(p, "weak_type", False))
        )
    return get_aval(p)


# ------------------------------------------------------------------- custom_gradient, closure_convert


class _RuleResiduals:
    """The traced backward rule of `custom_gradient`: consts are the pytree children."""

    def __init__(self, closed, consts, in_tree, out_tree):
        self.closed, self.consts, self.in_tree, self.out_tree = closed, consts, in_tree, out_tree


pytree.register_pytree_node(
    _RuleResiduals,
    lambda r: (r.consts, (r.closed, r.in_tree, r.out_tree)),
    lambda aux, consts: _RuleResiduals(aux[0], list(consts), aux[1], aux[2]),
)


def custom_gradient(fun):
    """``fun(*args) -> (value, vjp_rule)``; the result differentiates with `vjp_rule`."""

    @custom_vjp
    def wrapped(*args):
        ans, _ = fun(*args)
        return ans

    def fwd(*args):
        ans, rule = fun(*args)
        ans_leaves, ans_tree = pytree.tree_flatten(ans)
        ct_avals = [tangent_aval(get_aval(a)) for a in ans_leaves]
        store: dict = {}
        flat_rule = _flat_fun(
            lambda *cts: rule(pytree.tree_unflatten(ans_tree, cts)),
            pytree.tree_structure(tuple(ct_avals)),
            False,
            store,
        )
        closed = trace_to_jaxpr(lambda *cts: flat_rule(*cts), ct_avals)
        return ans, _RuleResiduals(closed.jaxpr, closed.consts, ans_tree, store["out_tree"])

    def bwd(res, cts):
        ct_leaves = pytree.tree_leaves(cts)
        outs = eval_jaxpr(res.closed, res.consts, *ct_leaves)
        out = pytree.tree_unflatten(res.out_tree, outs)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)

    wrapped.defvjp(fwd, bwd)
    return wrapped


def closure_convert(fun, *example_args):
    """Trace `fun` and hoist its closed-over constants: returns (converted, consts) with
    ``converted(*args, *consts) == fun(*args)``; consts become explicit (differentiable) inputs."""
    leaves, in_tree = pytree.tree_flatten(example_args)
    store: dict = {}
    closed = trace_to_jaxpr(_flat_fun(fun, in_tree, False, store), [get_aval(x) for x in leaves])
    consts = list(closed.consts)
    n_args = len(leaves)
    out_tree = store["out_tree"]

    def converted(*args_and_consts):
        args, cs = args_and_consts[: len(example_args)], args_and_consts[len(example_args) :]
        a_leaves = pytree.tree_leaves(args)
        if len(a_leaves) != n_args:
            raise TypeError(f"closure_convert: expected {n_args} argument leaves, got {len(a_leaves)}")
        outs = eval_jaxpr(closed.jaxpr, list(cs), *a_leaves)
        return pytree.tree_unflatten(out_tree, outs)

    return converted, consts
