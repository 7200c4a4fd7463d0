"""`morphax.numpy.fft`: discrete Fourier transforms (JAX's `jax.numpy.fft`), differentiable and
batchable; a thin re-export of `morphax._src.numpy.fft`."""

from morphax._src.numpy.fft import *  # noqa: F401,F403
