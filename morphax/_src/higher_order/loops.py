"""`lax.scan` (traces the body once, checks the carry types leaf by leaf, binds `scan_p`) and the
loops built on it: `lax.map` (with `batch_size`, vmapped chunks), `lax.fori_loop` (a scan when its
bounds are concrete, so reverse-differentiable as in JAX; a while_loop otherwise) and
`lax.associative_scan` (a parallel prefix written with slicing, no primitive of its own).
"""

from __future__ import annotations

import inspect
import weakref

import numpy as np

from morphax._src import errors
from morphax._src.config import config
from morphax._src.core import pytree
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import AxisData
from morphax._src.core.dtypes import is_python_scalar
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr
from morphax._src.core.promotion import result_type
from morphax._src.core.trace import Tracer
from morphax._src.core.values import is_concrete_array, make_array
from morphax._src.higher_order.scan import scan_p
from morphax._src.higher_order.trace_cache import cached_trace
from morphax._src.higher_order.while_loop import while_loop
from morphax._src.prims import lax_api as lax
from morphax._src.transforms.batching import batch_flat_fun
from morphax._src.transforms.staging import trace_to_jaxpr

__all__ = ["associative_scan", "fori_loop", "map", "scan", "scan_p"]


# ------------------------------------------------------------------------------------------- scan


def _long_str(a: ShapedArray) -> str:
    # Error messages spell dtypes out, as JAX's do (float32[3], not f32[3]).
    return f"{a.dtype.name}[{','.join(str(d) for d in a.shape)}]"


def _as_operand(x):
    if isinstance(x, Tracer) or is_concrete_array(x):
        return x
    aval = get_aval(x)  # raises a clear TypeError for non-array leaves
    if is_python_scalar(x) or isinstance(x, (np.ndarray, np.generic)):
        return make_array(x, dtype=aval.dtype, weak_type=aval.weak_type)
    return x


def _carry_component(fun):
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    if params:
        name = params[0]
        return lambda p: (
            f"the input carry component {name}{pytree.keystr(p)}" if p else f"the input carry {name}"
        )
    return lambda p: f"the input carry at path {pytree.keystr(p)}" if p else "the input carry"


def _structure_diffs(path, a, b):
    """(path, what a is, what b is, why) for each place two pytrees' structures differ."""
    ta, tb = pytree.tree_structure(a), pytree.tree_structure(b)
    if pytree.treedef_is_strict_leaf(ta) and pytree.treedef_is_strict_leaf(tb):
        return []
    if type(a) is not type(b):
        return [(path, str(type(a)), str(type(b)), "their Python types differ")]
    if isinstance(a, (list, tuple)) and len(a) != len(b):
        n = type(a).__name__
        return [(path, f"{n} of length {len(a)}", f"{n} of length {len(b)}", "the lengths do not match")]
    ka, meta_a = pytree.flatten_one_level_with_keys(a)
    kb, meta_b = pytree.flatten_one_level_with_keys(b)
    if len(ka) != len(kb):
        return [
            (
                path,
                f"{type(a)} with {len(ka)} children",
                f"{type(b)} with {len(kb)} children",
                "the numbers of children do not match",
            )
        ]
    if meta_a != meta_b:
        return [
            (
                path,
                f"{type(a)} with pytree metadata {meta_a}",
                f"{type(b)} with pytree metadata {meta_b}",
                "the pytree node metadata does not match",
            )
        ]
    out = []
    for (k, ca), (_, cb) in zip(ka, kb):
        out += _structure_diffs((*path, k), ca, cb)
    return out


def _bullets(diffs) -> str:
    if len(diffs) == 1:
        return diffs[0][0].upper() + diffs[0][1:] + ".\n"
    return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


def check_carry_structure(name, fun, init, carry_out):
    """Raise JAX's TypeError when the body's carry output is not structured like its input."""
    if pytree.tree_structure(init) == pytree.tree_structure(carry_out):
        return
    component = _carry_component(fun)
    diffs = [
        f"{component(p)} is a {x} but the corresponding component of the carry output is a {y}, so {why}"
        for p, x, y, why in _structure_diffs((), init, carry_out)
    ]
    if diffs:
        differences = _bullets(diffs)
    else:
        differences = (
            f"the input tree structure is:\n{pytree.tree_structure(init)}\n"
            f"the output tree structure is:\n{pytree.tree_structure(carry_out)}\n"
        )
    raise TypeError(
        f"{name} function carry input and carry output must have the same pytree structure, but they "
        f"differ:\n\n{differences}\nRevise the function so that the carry output has the same pytree "
        "structure as the carry input."
    )


def check_carry_types(name, fun, init_tree, in_avals, out_avals):
    """Raise JAX's TypeError listing, leaf by leaf with paths, carry types the body changed
    (shape or dtype; weak types are reconciled before this, as in JAX)."""
    bad = [(p, a, b) for (p, _), a, b in zip(pytree.tree_flatten_with_path(pytree.tree_unflatten(init_tree, in_avals))[0], in_avals, out_avals)
           if a.shape != b.shape or a.dtype != b.dtype]  # fmt: skip
    if not bad:
        return
    component = _carry_component(fun)
    diffs = []
    for p, a, b in bad:
        why = [
            w
            for w, differs in (
                ("the dtypes do not match", a.dtype != b.dtype),
                ("the shapes do not match", a.shape != b.shape),
            )
            if differs
        ]
        diffs.append(
            f"{component(p)} has type {_long_str(a)} but the corresponding output carry component has type "
            f"{_long_str(b)}, so {' and '.join(why)}"
        )
    raise TypeError(
        f"{name} function carry input and carry output must have equal types, but they differ:\n\n"
        f"{_bullets(diffs)}\nRevise the function so that all output types match the corresponding input types."
    )


def _infer_length(xs_flat, length):
    for x in xs_flat:
        if not get_aval(x).shape:
            raise ValueError(f"scan got value with no leading axis to scan over: {_long_str(get_aval(x))}.")
    lengths = [get_aval(x).shape[0] for x in xs_flat]
    if length is not None:
        if isinstance(length, Tracer):
            raise errors.ConcretizationTypeError(
                length,
                "The `length` argument to `scan` expects a concrete `int` value. For scan-like iteration "
                "with a dynamic length, use `while_loop` or `fori_loop`.",
            )
        length = int(length)
        if not all(length == n for n in lengths):
            raise ValueError(
                f"scan got `length` argument of {length} which disagrees with leading axis sizes {lengths}."
            )
        return length
    if len(set(lengths)) > 1:
        raise ValueError(
            f"scan got values with different leading axis sizes: {', '.join(str(n) for n in lengths)}."
        )
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    return lengths[0]


def _describe(out) -> str:
    def leaf(x):
        try:
            return _long_str(get_aval(x))
        except TypeError:
            return repr(x)

    return str(pytree.tree_map(leaf, out))


def _trace_body(f, init_tree, xs_tree, carry_avals, x_avals):
    nk = len(carry_avals)
    box = {}

    def flat_body(*args):
        carry = pytree.tree_unflatten(init_tree, list(args[:nk]))
        # The body may mutate the containers it is given (flax.nnx's scan pops its deques): the
        # output is checked against a copy of the carry as it came in.
        carry_in = pytree.tree_unflatten(init_tree, list(args[:nk]))
        x = pytree.tree_unflatten(xs_tree, list(args[nk:]))
        out = f(carry, x)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(f"scan body output must be a pair, got {_describe(out)}.")
        check_carry_structure("scan body", f, carry_in, out[0])
        carry_out = pytree.tree_leaves(out[0])
        ys, box["ys_tree"] = pytree.tree_flatten(out[1])
        return [*carry_out, *ys]

    closed = trace_to_jaxpr(flat_body, [*carry_avals, *x_avals])
    return closed, box["ys_tree"]


def _python_scan(f, init, xs_flat, xs_tree, length, reverse):
    """Under `disable_jit`, scan is the Python loop it stands for (as in JAX)."""
    if length == 0:
        raise ValueError(
            "zero-length scan is not supported in disable_jit() mode because the output type is unknown."
        )
    carry, ys = init, []
    for i in range(length - 1, -1, -1) if reverse else range(length):
        x = pytree.tree_unflatten(xs_tree, [lax.index_in_dim(x, i, keepdims=False) for x in xs_flat])
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys.reverse()

    def stack(*leaves):
        return lax.concatenate([lax.expand_dims(_as_operand(y), (0,)) for y in leaves], 0)

    return carry, pytree.tree_map(stack, *ys)


def _typematch(a, b) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
    """Scan `f` over leading axes of `xs` while carrying state: ``f(carry, x) -> (carry, y)``;
    returns ``(final carry, stacked ys)``. `xs` may be None when `length` is given."""
    if not callable(f):
        raise TypeError("lax.scan: f argument should be a callable.")
    init_flat, init_tree = pytree.tree_flatten(init)
    xs_flat, xs_tree = pytree.tree_flatten(xs)
    init_flat = [_as_operand(x) for x in init_flat]
    xs_flat = [_as_operand(x) for x in xs_flat]
    length = _infer_length(xs_flat, length)
    if isinstance(unroll, Tracer):
        raise errors.ConcretizationTypeError(
            unroll, "The `unroll` argument to `scan` expects a concrete `int` or `bool` value."
        )
    if isinstance(unroll, (bool, np.bool_)):
        unroll = max(length, 1) if unroll else 1
    unroll = int(unroll)
    if unroll < 0:
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
    if config.disable_jit:
        return _python_scan(f, init, xs_flat, xs_tree, length, reverse)
    x_avals = [get_aval(x).update(shape=get_aval(x).shape[1:]) for x in xs_flat]
    nk = len(init_flat)

    def trace(carry_avals):
        closed, ys_tree = _trace_body(f, init_tree, xs_tree, carry_avals, x_avals)
        # Closed-over values (maybe tracers of enclosing transformations) become leading operands.
        j = closed.jaxpr
        body = ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns, j.debug_info), [])
        return body, list(closed.consts), ys_tree

    def cached(carry_avals):
        key = (init_tree, xs_tree, tuple(carry_avals), tuple(x_avals))
        return cached_trace((f,), key, lambda: trace(carry_avals), lambda r: r[1])

    carry_avals = [get_aval(x) for x in init_flat]
    body, consts, ys_tree = cached(carry_avals)
    out_avals = body.out_avals[:nk]
    # As in JAX, a weakly typed initial carry takes the type the body gives it.
    changed = False
    for i, (a, b) in enumerate(zip(carry_avals, out_avals)):
        if a.weak_type and not _typematch(a, b):
            init_flat[i] = lax.convert_element_type(init_flat[i], result_type(a, b))
            changed = True
    if changed:
        carry_avals = [get_aval(x) for x in init_flat]
        body, consts, ys_tree = cached(carry_avals)
        out_avals = body.out_avals[:nk]
    check_carry_types("scan body", f, init_tree, carry_avals, out_avals)
    consts = [_as_operand(c) for c in consts]
    outs = scan_p.bind(
        *consts, *init_flat, *xs_flat,
        jaxpr=body, length=length, reverse=bool(reverse), num_consts=len(consts), num_carry=nk, unroll=unroll,
    )  # fmt: skip
    carry = pytree.tree_unflatten(init_tree, outs[:nk])
    return carry, pytree.tree_unflatten(ys_tree, outs[nk:])


# ------------------------------------------------------------------------------------------- map


def _vmap_leading(f, x):
    """`f` mapped over the leading axis of every leaf of `x` (a vmap with in_axes=0, out_axes=0)."""
    leaves, tree = pytree.tree_flatten(x)
    box = {}

    def flat(*xs):
        out, box["tree"] = pytree.tree_flatten(f(pytree.tree_unflatten(tree, list(xs))))
        return out

    size = get_aval(leaves[0]).shape[0]
    outs = batch_flat_fun(flat, AxisData(size), [0] * len(leaves))(*leaves)
    return pytree.tree_unflatten(box["tree"], outs)


def _chunks(xs, batch_size):
    """(leading `num_batches * batch_size` rows reshaped to (num_batches, batch_size, ...) or
    None, the remaining rows or None)."""
    leaves, tree = pytree.tree_flatten(xs)
    n = get_aval(leaves[0]).shape[0]
    num_batches, rem = divmod(n, batch_size) if batch_size else (0, n)
    used = num_batches * batch_size
    main = rest = None
    if num_batches:
        main = [
            lax.reshape(
                lax.slice_in_dim(x, 0, used, axis=0), (num_batches, batch_size, *get_aval(x).shape[1:])
            )
            for x in leaves
        ]
        main = pytree.tree_unflatten(tree, main)
    if rem:
        rest = pytree.tree_unflatten(tree, [lax.slice_in_dim(x, used, n, axis=0) for x in leaves])
    return main, rest


def map(f, xs, *, batch_size=None):
    """``[f(x) for x in xs]`` stacked, as a scan over the leading axis of `xs`. With `batch_size`,
    each scan step applies a vmapped `f` to `batch_size` rows; leftover rows get one vmapped call."""
    if batch_size is None:
        _, ys = scan(lambda _, x: ((), f(x)), (), xs)
        return ys
    batch_size = int(batch_size)
    if not pytree.tree_leaves(xs):
        _, ys = scan(lambda _, x: ((), f(x)), (), xs)
        return ys
    main, rest = _chunks(xs, batch_size)
    if main is None:
        return _vmap_leading(f, rest)
    _, ys = scan(lambda _, x: ((), _vmap_leading(f, x)), (), main)

    def merge(y):
        shape = get_aval(y).shape
        return lax.reshape(y, (shape[0] * shape[1], *shape[2:]))

    ys = pytree.tree_map(merge, ys)
    if rest is None:
        return ys
    return pytree.tree_map(lambda a, b: lax.concatenate([a, b], 0), ys, _vmap_leading(f, rest))


# ------------------------------------------------------------------------------------- fori_loop


def _concrete_int(x):
    """`x` as a Python int when its value is known while tracing, else None."""
    if isinstance(x, Tracer):
        x = x.to_concrete_value()
        if x is None:
            return None
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def _bounds_dtype(lower, upper):
    la, ua = get_aval(lower), get_aval(upper)
    if la.dtype == ua.dtype:
        return la.dtype
    signed = la.dtype.kind == "i" and ua.dtype.kind == "i"
    if signed and la.weak_type and not ua.weak_type:
        return ua.dtype
    if signed and ua.weak_type and not la.weak_type:
        return la.dtype
    raise TypeError(
        f"lower and upper arguments to fori_loop must have equal types, got {la.dtype.name} and {ua.dtype.name}"
    )


_FORI_WRAPPERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _fori_wrappers(body_fun):
    """The scan body and while_loop functions fori_loop runs, one set per `body_fun`, so that
    eager calls find their traced bodies in the trace cache."""
    try:
        hit = _FORI_WRAPPERS.get(body_fun)
    except TypeError:
        hit = None
    if hit is not None:
        return hit

    def scanned_fun(loop_carry, _):
        i, x = loop_carry
        return (i + 1, body_fun(i, x)), None

    def cond_fun(loop_carry):
        i, stop, _ = loop_carry
        return lax.lt(i, stop)

    def while_body(loop_carry):
        i, stop, x = loop_carry
        return i + 1, stop, body_fun(i, x)

    wrappers = (scanned_fun, cond_fun, while_body)
    try:
        _FORI_WRAPPERS[body_fun] = wrappers
    except TypeError:
        pass
    return wrappers


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """``for i in range(lower, upper): val = body_fun(i, val)``. Concrete bounds make it a scan
    (reverse-differentiable); traced bounds make it a while_loop (forward-differentiable only)."""
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    dtype = _bounds_dtype(lower, upper)
    lo, hi = _concrete_int(lower), _concrete_int(upper)
    scanned_fun, cond_fun, while_body = _fori_wrappers(body_fun)
    if lo is not None and hi is not None:
        length = max(hi - lo, 0)
        if config.disable_jit and length == 0:
            return init_val
        (_, result), _ = scan(
            scanned_fun, (lo, init_val), None, length=length, unroll=False if unroll is None else unroll
        )
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are statically known.")

    if get_aval(lower).dtype != dtype:
        lower = lax.convert_element_type(lower, dtype)
    if get_aval(upper).dtype != dtype:
        upper = lax.convert_element_type(upper, dtype)
    _, _, result = while_loop(cond_fun, while_body, (lower, upper, init_val))
    return result


# ------------------------------------------------------------------------------ associative_scan


def _interleave(evens, odds, axis):
    """Merge two arrays along `axis` as e0, o0, e1, o1, ... (`evens` may be one longer)."""
    m = get_aval(odds).shape[axis]
    head = lax.slice_in_dim(evens, 0, m, axis=axis)
    pairs = lax.concatenate(
        [lax.expand_dims(head, (axis + 1,)), lax.expand_dims(odds, (axis + 1,))], axis + 1
    )
    shape = list(get_aval(odds).shape)
    shape[axis] = 2 * m
    merged = lax.reshape(pairs, tuple(shape))
    if get_aval(evens).shape[axis] > m:
        merged = lax.concatenate([merged, lax.slice_in_dim(evens, m, m + 1, axis=axis)], axis)
    return merged


def associative_scan(fn, elems, reverse=False, axis=0):
    """Inclusive prefix scan of `elems` (a pytree of arrays) along `axis` with the associative
    `fn(a, b)`: result[i] = elems[0] op ... op elems[i]. O(log n) rounds of vectorized `fn` calls."""
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    flat, tree = pytree.tree_flatten(elems)
    if not flat:
        return elems
    ndim = get_aval(flat[0]).ndim
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    axis = axis % ndim
    num = get_aval(flat[0]).shape[axis]
    if not all(get_aval(e).shape[axis] == num for e in flat[1:]):
        raise ValueError(
            "Array inputs to associative_scan must have the same first dimension. "
            f"(saw: {[get_aval(e).shape for e in flat]})"
        )

    def combine(a, b):
        out = fn(pytree.tree_unflatten(tree, a), pytree.tree_unflatten(tree, b))
        return pytree.tree_leaves(out)

    def sl(xs, start, stop, stride=1):
        return [lax.slice_in_dim(x, start, stop, stride, axis=axis) for x in xs]

    def prefix(xs):
        n = get_aval(xs[0]).shape[axis]
        if n < 2:
            return xs
        # Scan the pairwise combinations (they are the results at odd positions), then fix up
        # each even position from the odd result before it.
        odds = prefix(combine(sl(xs, 0, n - 1, 2), sl(xs, 1, n, 2)))
        if n > 2:
            prev = odds if n % 2 else sl(odds, 0, n // 2 - 1)
            evens = [
                lax.concatenate([f, e], axis) for f, e in zip(sl(xs, 0, 1), combine(prev, sl(xs, 2, n, 2)))
            ]
        else:
            evens = sl(xs, 0, 1)
        return [_interleave(e, o, axis) for e, o in zip(evens, odds)]

    if reverse:
        flat = [lax.rev(x, (axis,)) for x in flat]
    out = prefix(flat)
    if reverse:
        out = [lax.rev(x, (axis,)) for x in out]
    return pytree.tree_unflatten(tree, out)
