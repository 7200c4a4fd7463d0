"""`morphax.lib` (`jax.lib`): in JAX, the package of the compiled runtime (jaxlib), whose only
public name is its version. morphax has no separate runtime package; `__version__` is the version
of JAX's API morphax implements, which is what `jax.lib.__version__` reports under
`morphax.compat` (programs compare it to pick code paths)."""

from morphax._src.version import JAX_API_VERSION as __version__  # noqa: F401
