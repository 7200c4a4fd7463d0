"""Host utilities that NumPy does for us: printing (array_repr, array_str, print options), save,
savez and load, and the from* constructors (frombuffer, fromfile, fromiter, fromstring,
from_dlpack), which read host data into an Array."""

from __future__ import annotations

import numpy as np

from morphax._src.numpy import (
    creation,
)

__all__ = [
    "array_repr",
    "array_str",
    "save",
    "savez",
    "load",
    "frombuffer",
    "fromfile",
    "fromiter",
    "fromstring",
    "from_dlpack",
    "get_printoptions",
    "set_printoptions",
    "printoptions",
    "ComplexWarning",
]


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """The string ``repr`` of an array, spelled ``Array(...)``."""
    s = np.array_repr(np.asarray(creation.asarray(arr)), max_line_width, precision, suppress_small)
    return "Array" + s[len("array") :] if s.startswith("array") else s


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """The string form of an array's values."""
    return np.array_str(np.asarray(creation.asarray(a)), max_line_width, precision, suppress_small)


get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
printoptions = np.printoptions


def _to_host(x):
    return np.asarray(x) if hasattr(x, "__array__") and not isinstance(x, np.ndarray) else x


def save(file, arr, allow_pickle: bool = True):
    """Save an array to a ``.npy`` file (via NumPy)."""
    return np.save(file, np.asarray(arr), allow_pickle=allow_pickle)


def savez(file, *args, **kwds):
    """Save several arrays into an uncompressed ``.npz`` file (via NumPy)."""
    return np.savez(file, *[_to_host(a) for a in args], **{k: _to_host(v) for k, v in kwds.items()})


def load(file, *args, **kwargs):
    """Load arrays from ``.npy``/``.npz`` files (via NumPy); a single array comes back as an Array,
    as in JAX. NumPy writes bfloat16 data as two-byte void ("V2", it has no bfloat16), so those are
    read back as bfloat16 (equinox's tree_deserialise_leaves relies on it); a dtype no Array can
    hold (strings, objects) stays a NumPy array, and .npz archives are NumPy's."""
    out = np.load(file, *args, **kwargs)
    if type(out) is np.ndarray:
        if out.dtype == np.dtype("V2"):
            from morphax._src.core import dtypes as _dtypes

            out = out.view(_dtypes.bfloat16)
        elif out.dtype.kind not in "biufc":
            return out
        return creation.asarray(out)
    return out


def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0):
    """An array from a bytes-like buffer (via NumPy)."""
    return creation.asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromfile(*args, **kwargs):
    """An array from a file's data (via NumPy)."""
    return creation.asarray(np.fromfile(*args, **kwargs))


def fromiter(*args, **kwargs):
    """An array from an iterable (via NumPy)."""
    return creation.asarray(np.fromiter(*args, **kwargs))


def fromstring(string, dtype=float, count: int = -1, *, sep: str):
    """An array from text data (via NumPy)."""
    return creation.asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def from_dlpack(x, /, *, device=None, copy=None):
    """An array from an object exporting the DLPack protocol (`__dlpack__` and
    `__dlpack_device__`: a NumPy array, a torch tensor, a morphax Array), read through NumPy.
    The dtype is canonicalized as `asarray` does (float64 becomes float32 unless x64 is on).
    NB: the data is always copied into a morphax buffer (JAX shares the exporter's memory
    where it can), so ``copy`` only decides what the exporter is asked for; strided exports
    are accepted (JAX rejects them)."""
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        raise TypeError(
            f"from_dlpack: the array passed to from_dlpack must have __dlpack__ and __dlpack_device__ "
            f"methods; got {type(x).__name__}. Use jnp.asarray for other array-likes."
        )
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"from_dlpack: copy must be None, True or False, got {copy!r}")
    try:
        host = np.from_dlpack(x, copy=copy)
    except BufferError as err:
        raise BufferError(f"from_dlpack: NumPy cannot import this {type(x).__name__} ({err}).") from err
    return creation.asarray(host, device=device)


ComplexWarning = np.exceptions.ComplexWarning
