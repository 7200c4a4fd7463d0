"""Python functions mapped over arrays: `vectorize` (a function over scalars, or over core
dimensions with a gufunc `signature`, mapped over broadcast inputs with vmap), apply_along_axis,
apply_over_axes and fromfunction."""

from __future__ import annotations

import operator
import re

import numpy as np

from morphax._src.core import pytree
from morphax._src.numpy import (
    creation,
    manipulation,
    util,
)
from morphax._src.numpy.index_tricks import indices
from morphax._src.transforms.batching import AxisData, batch_flat_fun
from morphax._src.wrapping import wraps

__all__ = ["vectorize", "fromfunction", "apply_over_axes", "apply_along_axis"]


_DIM = r"\w+"
_CORE = rf"(?:{_DIM}(?:,{_DIM})*)?"
_ARG = rf"\({_CORE}\)"
_ARGLIST = rf"{_ARG}(?:,{_ARG})*"
_SIGNATURE = rf"^{_ARGLIST}->{_ARGLIST}$"


def _parse_signature(signature):
    sig = signature.replace(" ", "")
    if not re.match(_SIGNATURE, sig):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = sig.split("->")

    def parse(s):
        return [tuple(re.findall(_DIM, a)) for a in re.findall(_ARG, s)]

    return parse(ins), parse(outs)


def vectorize(pyfunc, *, excluded=frozenset(), signature: str | None = None):
    """Define a vectorized function (NumPy-style broadcasting) built on ``vmap``."""
    excluded = frozenset(excluded)
    for e in excluded:
        if not isinstance(e, (int, str)):
            raise TypeError(f"jax.numpy.vectorize can only exclude integer or string arguments, got {e!r}")
        if isinstance(e, int) and e < 0:
            raise ValueError(f"excluded={excluded!r} contains negative numbers")
    parsed = _parse_signature(signature) if signature is not None else None

    @wraps(pyfunc)
    def wrapped(*args, **kwargs):
        static_pos = {i: a for i, a in enumerate(args) if i in excluded or a is None}
        dyn_pos = [i for i in range(len(args)) if i not in static_pos]
        static_kw = {k: v for k, v in kwargs.items() if k in excluded}
        dyn_kw = [k for k in kwargs if k not in excluded]
        dyn_vals = [creation.asarray(args[i]) for i in dyn_pos] + [
            creation.asarray(kwargs[k]) for k in dyn_kw
        ]
        if parsed is None:
            in_core = [()] * len(dyn_vals)
        else:
            in_core_sig = parsed[0]
            if len(in_core_sig) != len(dyn_pos):
                raise TypeError(
                    f"wrong number of positional arguments: expected {len(in_core_sig)}, got {len(dyn_pos)}"
                )
            in_core = list(in_core_sig) + [()] * len(dyn_kw)
        sizes: dict = {}
        batch_shapes = []
        for v, core in zip(dyn_vals, in_core):
            sh = np.shape(v)
            if len(sh) < len(core):
                raise ValueError(
                    f"input with shape {sh} does not have enough dimensions for all core dimensions {core}"
                )
            core_sh = sh[len(sh) - len(core) :]
            for d, s in zip(core, core_sh):
                if sizes.setdefault(d, s) != s:
                    raise ValueError(f"inconsistent size for core dimension {d!r}: {s} vs {sizes[d]}")
            batch_shapes.append(sh[: len(sh) - len(core)])
        bshape = manipulation.broadcast_shapes(*batch_shapes) if batch_shapes else ()
        dyn_vals = [
            manipulation.broadcast_to(v, tuple(bshape) + np.shape(v)[len(b) :])
            for v, b in zip(dyn_vals, batch_shapes)
        ]

        def core_fn(*vals):
            pos = dict(static_pos)
            pos.update(zip(dyn_pos, vals[: len(dyn_pos)]))
            kw = dict(static_kw)
            kw.update(zip(dyn_kw, vals[len(dyn_pos) :]))
            out = pyfunc(*[pos[i] for i in range(len(args))], **kw)
            if parsed is not None:
                out_core = parsed[1]
                outs = out if isinstance(out, tuple) else (out,)
                if len(out_core) != 1 and (not isinstance(out, tuple) or len(outs) != len(out_core)):
                    raise ValueError(f"wrong number of output arguments: expected {len(out_core)}")
                for o, core in zip(outs, out_core):
                    if len(np.shape(o)) != len(core):
                        raise ValueError(
                            f"output shape {np.shape(o)} does not match core dimensions {core} "
                            f"on vectorized function with excluded={excluded!r} and signature={signature!r}"
                        )
                    for d, s in zip(core, np.shape(o)):
                        if d in sizes and sizes[d] != s:
                            raise ValueError(f"inconsistent size for core dimension {d!r}: {s} vs {sizes[d]}")
            return out

        f = core_fn
        for _ in range(len(bshape)):
            f = _mapped(f)
        return f(*dyn_vals)

    return wrapped


def _mapped(fn, in_axis: int = 0, out_axis: int = 0):
    """`fn` mapped over axis `in_axis` of each of its (array) arguments, every result stacked at
    `out_axis`: the batching transformation itself, as vmap runs it (the public vmap sits above
    this layer)."""

    def mapped(*args):
        store = {}

        def flat(*vals):
            leaves, store["tree"] = pytree.tree_flatten(fn(*vals))
            return leaves

        dims = [in_axis % len(np.shape(a)) for a in args]
        size = np.shape(args[0])[dims[0]]
        outs = batch_flat_fun(flat, AxisData(size), dims, out_dim=0)(*args)
        outs = [manipulation.moveaxis(o, 0, out_axis) if out_axis != 0 else o for o in outs]
        return pytree.tree_unflatten(store["tree"], outs)

    return mapped


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """`function` called on the grid of indices of `shape` (cast to `dtype`)."""
    shape = tuple(operator.index(d) for d in shape)
    grids = indices(shape, dtype=dtype, sparse=False)
    return function(*(grids[i] for i in range(len(shape))), **kwargs)


def apply_over_axes(func, a, axes):
    """Apply `func(a, axis)` repeatedly over `axes`, keeping the number of dimensions."""
    a = util.checked_array("apply_over_axes", a)
    for axis in np.atleast_1d(axes):
        axis = int(axis)
        b = func(a, axis)
        if b.ndim == a.ndim:
            a = b
        elif b.ndim == a.ndim - 1:
            a = manipulation.expand_dims(b, axis)
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return a


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """`func1d` applied to the 1-D slices of `arr` along `axis` (via vmap)."""
    arr = util.checked_array("apply_along_axis", arr)
    nd = len(arr.shape)
    axis = util.canonicalize_axis(axis, nd, "apply_along_axis")

    def fn(x):
        return func1d(x, *args, **kwargs)

    for i in range(1, nd - axis):
        fn = _mapped(fn, in_axis=i, out_axis=-1)
    for _ in range(axis):
        fn = _mapped(fn)
    return fn(arr)
