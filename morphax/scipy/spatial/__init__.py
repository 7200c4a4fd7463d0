"""`morphax.scipy.spatial`: SciPy's spatial algorithms on morphax arrays, mirroring
``jax.scipy.spatial`` (its one module, `transform`: rotations and their interpolation)."""

from morphax.scipy.spatial import transform  # noqa: F401
