"""The state primitives of mutable array references (`new_ref`, `empty_ref`, `get`, `swap`,
`addupdate`, `freeze`, `free_ref`) and the public functions that bind them.

Each primitive declares its abstract eval, its eager reference (on a `core.state_types.Ref`),
JVP and batching rules where JAX has them, the JAX-style printing of its equation, and
`discharge`: its functional meaning on the ref's current value, ``discharge(value, *operands,
**params) -> (new value, outputs)``, which `higher_order/state_discharge.py` uses to turn a
program with refs into one without. Imports the core and the lax wrappers of prims/ only.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core import state_types
from morphax._src.core.ad_util import Zero, instantiate, is_zero, tangent_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import moveaxis
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.state_types import (
    AbstractRef,
    Ref,
    encode_index,
    format_index,
    full_index,
    indexed_shape,
    is_ref_aval,
)
from morphax._src.core.trace import Tracer
from morphax._src.core.values import is_concrete_array, make_array
from morphax._src.prims.ref_indexing import (
    eager_add,
    eager_read,
    eager_write,
    index_add,
    index_read,
    index_write,
)
from morphax._src.prims.shape import broadcast_in_dim

__all__ = [
    "addupdate_p",
    "empty_ref",
    "empty_ref_p",
    "free_ref",
    "free_ref_p",
    "freeze",
    "freeze_p",
    "get_p",
    "new_ref",
    "new_ref_p",
    "swap_p",
]


def _declare(name, *, multiple_results=False):
    p = Primitive(name, multiple_results=multiple_results)
    # State operations read or write memory: never fused, reordered, merged or dropped.
    p.kind = Kind.EFFECT
    p.has_side_effects = True
    # NB: flagged higher-order so the eager trace hands the impl the Ref object itself (not a
    # NumPy copy of it); these primitives carry no jaxprs.
    p.higher_order = True
    p.test_spec = None  # tests/state covers them
    state_types.STATE_PRIMS.add(p)
    return p


new_ref_p = _declare("new_ref")
empty_ref_p = _declare("empty_ref")
get_p = _declare("get")
swap_p = _declare("swap")
addupdate_p = _declare("addupdate", multiple_results=True)
freeze_p = _declare("freeze")
free_ref_p = _declare("free_ref", multiple_results=True)
state_types.REF_CREATORS.update((new_ref_p, empty_ref_p))


# ---------------------------------------------------------------------------- abstract eval


def _ref_operand(name, aval) -> AbstractRef:
    if not is_ref_aval(aval):
        raise ValueError(f"`{name}` must be called on `Ref` types: {aval}.")
    return aval


def _check_indices(name, idx_avals, tree):
    dyn = [e for e in tree if e[0] in ("dyn", "arr")]
    if len(idx_avals) != len(dyn):
        raise TypeError(f"`{name}`: the index has {len(dyn)} dynamic entries but {len(idx_avals)} were given")
    for a, e in zip(idx_avals, dyn):
        want = () if e[0] == "dyn" else e[1]
        if tuple(a.shape) != want or a.dtype.kind not in "iu":
            raise TypeError(
                f"`{name}`: a dynamic ref index must be an integer array of shape {want}, got {a.str_short()}"
            )


def _new_ref_abstract_eval(x, *, memory_space, kind):
    if is_ref_aval(x):
        raise TypeError(f"new_ref: the initial value is already a Ref ({x}); refs cannot hold refs.")
    return AbstractRef(x)


def _empty_ref_abstract_eval(*, ty, memory_space):
    return AbstractRef(ty)


def _get_abstract_eval(ref, *idx, tree):
    ref = _ref_operand("get", ref)
    _check_indices("get", idx, tree)
    a = ref.inner_aval
    return ShapedArray(indexed_shape(a.shape, tree), a.dtype, a.weak_type)


def _check_value(name, ref, val, tree):
    expected = indexed_shape(ref.shape, tree)
    if tuple(val.shape) != expected:
        raise ValueError(
            f"Invalid shape for `{name}`. Ref shape: {tuple(ref.shape)}. Expected shape: {expected}. "
            f"Value shape: {tuple(val.shape)}. Broadcast the value first (jnp.broadcast_to)."
        )
    if val.dtype != ref.dtype:
        raise ValueError(
            f"Invalid dtype for `{name}`. Ref dtype: {ref.dtype.name}. Value dtype: {val.dtype.name}. "
            f"Convert the value first (value.astype({ref.dtype.name}))."
        )


def _swap_abstract_eval(ref, val, *idx, tree):
    ref = _ref_operand("swap", ref)
    _check_indices("swap", idx, tree)
    _check_value("swap", ref, val, tree)
    a = ref.inner_aval
    return ShapedArray(indexed_shape(a.shape, tree), a.dtype, a.weak_type)


def _addupdate_abstract_eval(ref, val, *idx, tree):
    ref = _ref_operand("addupdate", ref)
    _check_indices("addupdate", idx, tree)
    _check_value("addupdate", ref, val, tree)
    return []


def _freeze_abstract_eval(ref):
    return _ref_operand("freeze", ref).inner_aval


def _free_ref_abstract_eval(ref):
    _ref_operand("free_ref", ref)
    return []


new_ref_p.abstract_eval = _new_ref_abstract_eval
empty_ref_p.abstract_eval = _empty_ref_abstract_eval
get_p.abstract_eval = _get_abstract_eval
swap_p.abstract_eval = _swap_abstract_eval
addupdate_p.abstract_eval = _addupdate_abstract_eval
freeze_p.abstract_eval = _freeze_abstract_eval
free_ref_p.abstract_eval = _free_ref_abstract_eval


# ------------------------------------------------------------------- eager reference (impl)


def _concrete_ref(name, ref) -> Ref:
    if type(ref) is not Ref:
        _ref_operand(name, get_aval(ref))  # raises for a non-ref
        raise TypeError(f"`{name}`: expected a concrete Ref, got {ref!r}")
    ref.check_valid(name)
    return ref


def _host_value(x, dtype) -> np.ndarray:
    return np.asarray(x._value if is_concrete_array(x) else x, dtype=dtype)


def _new_ref_impl(x, *, memory_space, kind):
    aval = _new_ref_abstract_eval(get_aval(x), memory_space=memory_space, kind=kind)
    # A copy: the ref must not share a buffer the caller may donate or delete later.
    x = make_array(np.array(_host_value(x, aval.dtype)), dtype=aval.dtype, weak_type=aval.weak_type)
    return Ref(x, aval)


def _empty_ref_impl(*, ty, memory_space):
    # NB: JAX refuses empty_ref outside jit; eagerly (as under jit) the new ref holds zeros.
    return Ref(
        make_array(np.zeros(ty.shape, ty.dtype), dtype=ty.dtype, weak_type=ty.weak_type), AbstractRef(ty)
    )


def _get_impl(ref, *idx, tree):
    ref = _concrete_ref("get", ref)
    _get_abstract_eval(ref.aval, *[get_aval(i) for i in idx], tree=tree)
    # Reads copy (as JAX's do): the caller may donate or delete what it gets.
    buf = ref._np if ref._np is not None else ref._array._value
    return make_array(eager_read(buf, tree, idx), dtype=ref.dtype, weak_type=ref.weak_type)


def _swap_impl(ref, val, *idx, tree):
    ref = _concrete_ref("swap", ref)
    _swap_abstract_eval(ref.aval, get_aval(val), *[get_aval(i) for i in idx], tree=tree)
    buf = ref.host_buffer()
    old = eager_read(buf, tree, idx)
    eager_write(buf, tree, idx, _host_value(val, ref.dtype))
    return make_array(old, dtype=ref.dtype, weak_type=ref.weak_type)


def _addupdate_impl(ref, val, *idx, tree):
    ref = _concrete_ref("addupdate", ref)
    _addupdate_abstract_eval(ref.aval, get_aval(val), *[get_aval(i) for i in idx], tree=tree)
    eager_add(ref.host_buffer(), tree, idx, _host_value(val, ref.dtype))
    return []


def _freeze_impl(ref):
    ref = _concrete_ref("freeze", ref)
    value = ref.current_array()
    ref.invalidate("freeze")
    return value


def _free_ref_impl(ref):
    ref = _concrete_ref("free_ref", ref)
    ref.invalidate("free_ref")
    return []


new_ref_p.impl = _new_ref_impl
empty_ref_p.impl = _empty_ref_impl
get_p.impl = _get_impl
swap_p.impl = _swap_impl
addupdate_p.impl = _addupdate_impl
freeze_p.impl = _freeze_impl
free_ref_p.impl = _free_ref_impl


# ---------------------------------------------------------------------------------- printing


def _pp_index(names, eqn, ref_var, dyn_vars):
    return names.name(ref_var) + format_index(
        ref_var.aval.shape, eqn.params["tree"], [names.name(v) for v in dyn_vars]
    )


def _get_pp(eqn, names):
    ref, *dyn = eqn.invars
    return f"{names.binder(eqn.outvars[0])} <- {_pp_index(names, eqn, ref, dyn)}"


def _swap_pp(eqn, names):
    ref, val, *dyn = eqn.invars
    target = _pp_index(names, eqn, ref, dyn)
    out = eqn.outvars[0]
    # A swap whose old value nobody reads is a plain store (``_`` is how the printer names an
    # unread result at the top level; DropVar elsewhere).
    if type(out).__name__ == "DropVar" or names.names.get(id(out)) == "_":
        return f"{target} <- {names.name(val)}"
    return f"{names.binder(out)}, {target} <- {target}, {names.name(val)}"


def _addupdate_pp(eqn, names):
    ref, val, *dyn = eqn.invars
    return f"{_pp_index(names, eqn, ref, dyn)} += {names.name(val)}"


# The jaxpr printer (core/jaxpr.py) uses `pp_rule(eqn, names) -> str` where a primitive has one.
get_p.pp_rule = _get_pp
swap_p.pp_rule = _swap_pp
addupdate_p.pp_rule = _addupdate_pp


# --------------------------------------------------------------------------- discharge rules
#
# The functional meaning of each operation on the ref's current value `x` (ref_indexing.py).


def _get_discharge(x, *idx, tree):
    return x, index_read(x, tree, idx)


def _swap_discharge(x, val, *idx, tree):
    return index_write(x, tree, idx, val), index_read(x, tree, idx)


def _addupdate_discharge(x, val, *idx, tree):
    return index_add(x, tree, idx, val), []


def _freeze_discharge(x):
    return x, x


def _free_ref_discharge(x):
    return x, []


get_p.discharge = _get_discharge
swap_p.discharge = _swap_discharge
addupdate_p.discharge = _addupdate_discharge
freeze_p.discharge = _freeze_discharge
free_ref_p.discharge = _free_ref_discharge


# ------------------------------------------------------------------------------------- JVP
#
# The tangent of a ref made inside the differentiated function is a `TangentRef`: a box holding
# the tangent of the ref's current value, updated functionally (the discharge rules above) as
# the primal ref is written, in program order. Its tangent computations are therefore ordinary
# linear operations, so linearization and transposition (grad) work as for arrays. A ref whose
# tangent is a symbolic zero (made outside the differentiated function) may be read, and written
# with values that carry no derivative, as in JAX.

_GRAD_HINT = (
    "Move the array reference to be an argument of the differentiated function, create it from "
    "a differentiated value (new_ref(x)), or wrap the function in morphax.jit, which turns its "
    "refs into functional code."
)


class TangentRef:
    """The tangent of a differentiated ref: the tangent of its current value."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"TangentRef({self.value!r})"


def _tangent_ref(name, t):
    if type(t) is not TangentRef:
        raise NotImplementedError(
            f"Differentiating `{name}` on a mutable array reference passed into a loop or branch body "
            "(or a custom-rule call) is not supported: wrap the differentiated function in "
            "morphax.jit, which turns its refs into functional code, or pass ref[...] values instead."
        )
    return t


def _tangent_of_new(x_aval, t):
    if not _dtypes.is_inexact(x_aval.dtype):
        return Zero(tangent_aval(x_aval))  # integer refs carry no derivative
    return TangentRef(instantiate(t) if is_zero(t) else t)


def _new_ref_jvp(primals, tangents, *, memory_space, kind):
    (x,), (t,) = primals, tangents
    out = new_ref_p.bind(x, memory_space=memory_space, kind=kind)
    return out, _tangent_of_new(get_aval(x), t)


def _empty_ref_jvp(primals, tangents, *, ty, memory_space):
    out = empty_ref_p.bind(ty=ty, memory_space=memory_space)
    return out, _tangent_of_new(ty, Zero(tangent_aval(ty)))


def _get_jvp(primals, tangents, *, tree):
    ref, *idx = primals
    out = get_p.bind(ref, *idx, tree=tree)
    if is_zero(tangents[0]):
        return out, Zero(tangent_aval(get_aval(out)))
    return out, index_read(_tangent_ref("get", tangents[0]).value, tree, idx)


def _write_jvp(prim, primals, tangents, tree):
    ref, val, *idx = primals
    ref_t, val_t = tangents[0], tangents[1]
    out = prim.bind(ref, val, *idx, tree=tree)
    if is_zero(ref_t):
        if not is_zero(val_t):
            raise ValueError(
                f"performing a {prim.name} operation with a differentiated value on a non-differentiated "
                f"array reference of type {get_aval(ref)}. {_GRAD_HINT}"
            )
        return out, ([] if prim.multiple_results else Zero(tangent_aval(get_aval(out))))
    cell = _tangent_ref(prim.name, ref_t)
    new_t, out_t = prim.discharge(cell.value, instantiate(val_t), *idx, tree=tree)
    cell.value = new_t
    return out, out_t


def _swap_jvp(primals, tangents, *, tree):
    return _write_jvp(swap_p, primals, tangents, tree)


def _addupdate_jvp(primals, tangents, *, tree):
    return _write_jvp(addupdate_p, primals, tangents, tree)


def _freeze_jvp(primals, tangents):
    out = freeze_p.bind(primals[0])
    if is_zero(tangents[0]):
        return out, Zero(tangent_aval(get_aval(out)))
    return out, _tangent_ref("freeze", tangents[0]).value


def _free_ref_jvp(primals, tangents):
    return free_ref_p.bind(primals[0]), []


def _no_transpose(name):
    def rule(*args, **params):
        raise NotImplementedError(
            f"Reverse-mode differentiation (grad, vjp) through the ref operation `{name}` staged in a "
            "linear program is not supported: wrap the differentiated function in morphax.jit (its "
            "refs are then discharged into functional code, which grad handles)."
        )

    return rule


new_ref_p.jvp = _new_ref_jvp
empty_ref_p.jvp = _empty_ref_jvp
get_p.jvp = _get_jvp
swap_p.jvp = _swap_jvp
addupdate_p.jvp = _addupdate_jvp
freeze_p.jvp = _freeze_jvp
free_ref_p.jvp = _free_ref_jvp
for _p in (new_ref_p, get_p, swap_p, addupdate_p, freeze_p, free_ref_p):
    _p.transpose = _no_transpose(_p.name)


# -------------------------------------------------------------------------------- batching
#
# A batched ref holds the whole batch, its batch axis at `d`; an index gets a full slice there.
# Values written into an unbatched ref must be unbatched (each element of the batch would write
# a different value into the one ref), as in JAX.

_VMAP_HINT = "Move the array reference to be an argument to the vmapped function, or create it inside it."


def _batched_tree(tree, d, size):
    return tree[:d] + (("slice", 0, size, 1),) + tree[d:]


def _out_axis(tree, d):
    """Where the batch axis lands in ``ref[idx]``: after the sliced axes before it."""
    return sum(1 for e in tree[:d] if e[0] == "slice")


def _check_index_unbatched(name, dims, tree):
    if any(e[0] == "arr" for e in tree):
        raise NotImplementedError(
            f"vmap of a ref `{name}` with an integer-array index is not supported: read the whole value "
            "with ref[...] and index the array (or write it back with ref[...] = value.at[idx].set(v))."
        )
    if any(dd is not None for dd in dims):
        raise NotImplementedError(
            f"vmap of a ref `{name}` whose index is batched is not supported: read the whole value "
            "with ref[...] and index the array (or write it back with ref[...] = value.at[idx].set(v))."
        )


def _new_ref_batch(vals, dims, *, axis_data, memory_space, kind):
    x, d = vals[0], dims[0]
    if d is None:  # made inside vmap: one ref holding every element's value
        shape = tuple(get_aval(x).shape)
        x, d = broadcast_in_dim(x, (axis_data.size, *shape), tuple(range(1, len(shape) + 1))), 0
    return new_ref_p.bind(x, memory_space=memory_space, kind=kind), d


def _empty_ref_batch(vals, dims, *, axis_data, ty, memory_space):
    ty = ShapedArray((axis_data.size, *ty.shape), ty.dtype, ty.weak_type)
    return empty_ref_p.bind(ty=ty, memory_space=memory_space), 0


def _get_batch(vals, dims, *, axis_data, tree):
    ref, *idx = vals
    _check_index_unbatched("get", dims[1:], tree)
    d = dims[0]
    if d is None:
        raise NotImplementedError("vmap of a ref read with a batched index is not supported")
    return get_p.bind(ref, *idx, tree=_batched_tree(tree, d, axis_data.size)), _out_axis(tree, d)


def _write_batch(prim, vals, dims, axis_data, tree):
    ref, val, *idx = vals
    _check_index_unbatched(prim.name, dims[2:], tree)
    d, vd = dims[0], dims[1]
    if d is None:
        raise ValueError(
            f"performing a {prim.name} operation with a vmapped value on an unbatched array reference "
            f"of type {get_aval(ref)}. {_VMAP_HINT}"
        )
    p = _out_axis(tree, d)
    if vd is None:
        shape = get_aval(val).shape
        val = broadcast_in_dim(
            val,
            shape[:p] + (axis_data.size,) + shape[p:],
            tuple(i if i < p else i + 1 for i in range(len(shape))),
        )
    else:
        val = moveaxis(val, vd, p)
    out = prim.bind(ref, val, *idx, tree=_batched_tree(tree, d, axis_data.size))
    return (out, []) if prim.multiple_results else (out, p)


def _swap_batch(vals, dims, *, axis_data, tree):
    return _write_batch(swap_p, vals, dims, axis_data, tree)


def _addupdate_batch(vals, dims, *, axis_data, tree):
    return _write_batch(addupdate_p, vals, dims, axis_data, tree)


def _freeze_batch(vals, dims, *, axis_data):
    return freeze_p.bind(vals[0]), dims[0]


def _free_ref_batch(vals, dims, *, axis_data):
    return free_ref_p.bind(vals[0]), []


new_ref_p.batch = _new_ref_batch
empty_ref_p.batch = _empty_ref_batch
get_p.batch = _get_batch
swap_p.batch = _swap_batch
addupdate_p.batch = _addupdate_batch
freeze_p.batch = _freeze_batch
free_ref_p.batch = _free_ref_batch


# ------------------------------------------------------------------------- the Ref surface


def _int_array_shape(x):
    """The shape of an integer array or tracer used as an index, else None."""
    if isinstance(x, Tracer) or is_concrete_array(x) or isinstance(x, np.ndarray):
        aval = get_aval(x)
        if aval.dtype.kind in "iu":
            return tuple(aval.shape)
    return None


def _ref_getitem(ref, idx):
    tree, dyn = encode_index(get_aval(ref).shape, idx, "Ref.__getitem__", _int_array_shape)
    return get_p.bind(ref, *dyn, tree=tree)


def _ref_setitem(ref, idx, value):
    tree, dyn = encode_index(get_aval(ref).shape, idx, "Ref.__setitem__", _int_array_shape)
    swap_p.bind(ref, value, *dyn, tree=tree)


def _ref_addupdate(ref, idx, value):
    tree, dyn = encode_index(get_aval(ref).shape, idx, "Ref.addupdate", _int_array_shape)
    addupdate_p.bind(ref, value, *dyn, tree=tree)


AbstractRef._getitem = staticmethod(_ref_getitem)
AbstractRef._setitem = staticmethod(_ref_setitem)
AbstractRef._addupdate = staticmethod(_ref_addupdate)


def read_whole(ref):
    """``ref[...]`` (used by jit around the calls it discharges)."""
    return get_p.bind(ref, tree=full_index(get_aval(ref).shape))


def write_whole(ref, value) -> None:
    """``ref[...] = value``."""
    swap_p.bind(ref, value, tree=full_index(get_aval(ref).shape))


# ----------------------------------------------------------------------------- public functions


def _is_ref(x) -> bool:
    return type(x) is Ref or (isinstance(x, Tracer) and is_ref_aval(x.aval))


def new_ref(init_val, *, memory_space=None, kind=None):
    """A new mutable array reference holding a copy of `init_val` (JAX's ``jax.new_ref``)."""
    if _is_ref(init_val):
        raise TypeError(
            f"new_ref: init_val is already a Ref ({get_aval(init_val)}); refs cannot hold refs. Read its "
            "value with ref[...] to make a second ref from it."
        )
    if memory_space is not None:
        raise NotImplementedError(
            f"new_ref: memory_space={memory_space!r} is not supported; morphax has one memory space "
            "per device: leave memory_space=None."
        )
    try:
        aval = get_aval(init_val)
    except TypeError:
        raise TypeError(
            f"new_ref: Error interpreting argument to new_ref as a JAX value. The problematic value is of "
            f"type {type(init_val)}: pass an array or a scalar (jnp.asarray(init_val))."
        ) from None
    if _dtypes.is_python_scalar(init_val) or isinstance(init_val, (np.ndarray, np.generic)):
        init_val = make_array(init_val, dtype=aval.dtype, weak_type=aval.weak_type)
    state_types.state_used[0] = True
    return new_ref_p.bind(init_val, memory_space=memory_space, kind=kind)


def empty_ref(ty, memory_space=None):
    """A new ref of type `ty` (a ShapeDtypeStruct, or the aval `morphax.typeof(x)` returns),
    its value unspecified until written (zeros here)."""
    if memory_space is not None:
        raise NotImplementedError(
            f"empty_ref: memory_space={memory_space!r} is not supported: leave memory_space=None."
        )
    shape, dtype = getattr(ty, "shape", None), getattr(ty, "dtype", None)
    if shape is None or dtype is None or is_ref_aval(ty):
        raise TypeError(
            f"empty_ref: ty must describe an array type (a ShapeDtypeStruct or morphax.typeof(x)), got {ty!r}"
        )
    aval = ShapedArray(tuple(shape), _dtypes.canonicalize_dtype(dtype), bool(getattr(ty, "weak_type", False)))
    state_types.state_used[0] = True
    return empty_ref_p.bind(ty=aval, memory_space=None)


def _ref_argument(name, ref):
    if not _is_ref(ref):
        # NB: JAX passes a non-ref through these silently; a clear error catches the mistake.
        raise TypeError(f"{name}: expected a Ref (from morphax.new_ref), got {type(ref).__name__} {ref!r}")


def freeze(ref):
    """The current value of `ref`, which is invalidated: later reads and writes raise."""
    _ref_argument("freeze", ref)
    return freeze_p.bind(ref)


def free_ref(ref):
    """Invalidate `ref`, releasing its buffer: later reads and writes raise."""
    _ref_argument("free_ref", ref)
    free_ref_p.bind(ref)
    return ()
