"""Moving values between the host and devices: `device_put` (to a device or sharding, committing
them there; runtime/placement.py) and `device_get` (to NumPy)."""

from __future__ import annotations

import numpy as np

from morphax._src import events
from morphax._src.core import pytree
from morphax._src.core.trace import Tracer
from morphax._src.prims.random_keys import KEY_LEAF
from morphax._src.runtime import guards
from morphax._src.runtime.array import Array


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Place a pytree of values on `device`: a Device or Sharding commits them there
    (runtime/placement.py), None leaves Arrays where they are; NumPy values become Arrays."""
    from morphax._src.core import dtypes as _dtypes
    from morphax._src.core.values import make_array
    from morphax._src.runtime.placement import put as _place
    from morphax._src.runtime.placement import to_default_device

    def put(v):
        if isinstance(v, Tracer):  # inside a transformation
            return v if device is None else _constrain(v, device)
        if type(v) is KEY_LEAF[0]:  # concrete typed keys: their words are placed
            return type(v)(put(v._data))
        if type(v) is not Array:
            v = _to_array(v)
            if device is None:
                return to_default_device(v)
        return v if device is None else _place(v, device)

    def _to_array(v):
        if guards.active:
            guards.host_to_device(v, explicit=True, what="device_put")
        if isinstance(v, (bool, int, float, complex)):
            return make_array(v, _dtypes.python_scalar_dtype(v), weak_type=type(v) is not bool)
        arr = np.asarray(v)
        ml_dtype = arr.dtype.kind == "V" and arr.dtype.type.__module__.startswith("ml_dtypes")
        if arr.dtype.kind in "OSUVMm" and not ml_dtype:  # objects, strings, records, datetimes
            raise TypeError(
                f"device_put: argument {v!r} of type {type(v)} is not a valid JAX type: only "
                "numbers, NumPy arrays and arrays (or pytrees of them) can be put on a device. Keep "
                "other Python values on the host, e.g. as static arguments of jit (static_argnums)."
            )
        return make_array(arr, _dtypes.canonicalize_dtype(arr.dtype))

    return pytree.tree_map(put, x)


def _constrain(x, target):
    """device_put of a traced value: a NamedSharding lays the result out (as a sharding constraint;
    NB: JAX stages a device_put equation); a device leaves placement to the enclosing call."""
    from morphax._src.runtime import array as _array
    from morphax._src.sharding.constraint import sharding_constraint_p
    from morphax._src.sharding.shardings import NamedSharding

    if not isinstance(target, NamedSharding):
        return x
    target.check_shape(x.shape, "device_put")
    _array.mark_placed()
    return sharding_constraint_p.bind(x, sharding=target)


def device_get(tree):
    """Copy a pytree of arrays to the host as NumPy arrays (waiting for pending work)."""
    with events.span("device_get", "transfer"):
        return pytree.tree_map(lambda v: np.asarray(v) if type(v) is Array else v, tree)
