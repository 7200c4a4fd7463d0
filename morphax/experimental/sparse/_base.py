"""`JAXSparse`: what every sparse format shares (shape bookkeeping, operators, pytree flattening)."""

from __future__ import annotations

import math

import numpy as np

import morphax.numpy as jnp


class JAXSparse:
    """Base class of the sparse array formats. Subclasses hold their buffers and a static shape,
    implement `todense`, `tree_flatten` and `tree_unflatten`, and the products they support."""

    data: object
    shape: tuple
    # NumPy operators (ndarray @ sparse, ndarray * sparse) defer to ours instead of treating the
    # sparse array as an object scalar.
    __array_ufunc__ = None

    def __init__(self, args, *, shape):
        self.shape = tuple(int(d) for d in shape)

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def nse(self):
        return int(self.data.shape[self._nse_axis()])

    def _nse_axis(self):
        return 0

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        name = type(self).__name__
        try:
            nse, dtype = self.nse, np.dtype(self.dtype).name
        except Exception:  # noqa: BLE001 - a repr must not fail (tracers, odd buffers)
            return f"{name}(shape={self.shape})"
        extra = self._repr_extra()
        return f"{name}({dtype}{list(self.shape)}, nse={nse}{extra})"

    def _repr_extra(self):
        return ""

    def todense(self):
        raise NotImplementedError

    def tree_flatten(self):
        raise NotImplementedError

    def block_until_ready(self):
        for leaf in self.tree_flatten()[0]:
            leaf.block_until_ready()
        return self

    @property
    def T(self):
        return self.transpose()

    def transpose(self, axes=None):
        raise NotImplementedError

    def __neg__(self):
        raise NotImplementedError

    def __matmul__(self, other):
        raise NotImplementedError

    def __rmatmul__(self, other):
        raise NotImplementedError

    def __mul__(self, other):
        raise NotImplementedError

    def __rmul__(self, other):
        return self.__mul__(other)

    def __add__(self, other):
        raise NotImplementedError

    def __radd__(self, other):
        return self.__add__(other)

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return (-self) + other

    # Sparse arrays are not hashable buffers; comparing them elementwise would densify silently.
    __hash__ = None


def todense_value(x):
    """`x` dense: a sparse array's todense(), anything else as an array."""
    return x.todense() if isinstance(x, JAXSparse) else jnp.asarray(x)
