"""`morphax.test_util`: derivative checks against finite differences (re-exports)."""

from morphax._src.test_util import check_grads, check_jvp, check_vjp, numerical_jvp  # noqa: F401
