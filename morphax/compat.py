"""`morphax.compat`: run unmodified JAX programs and libraries (optax, chex, flax, equinox, ...) on
morphax, by answering their `import jax` with morphax.

`install()` puts an import hook at the front of `sys.meta_path` that maps `jax`, every `jax.<name>`
module and `jaxlib` onto morphax: `import jax.numpy as jnp` gives `morphax.numpy` itself,
`from jax import flatten_util` gives `morphax.flatten_util`, `jax._src.<name>` gives
`morphax._src.<name>`. The modules are registered in `sys.modules` under their jax names, so a
second import finds them there. A jax module morphax lacks raises `ModuleNotFoundError` naming it.

The top-level `jax` is a module of its own that forwards every attribute to `morphax`, so it can
report the version of JAX's API morphax implements (`jax.__version__ == "0.10.2"`, read by
libraries that choose code paths by version) while `morphax.__version__` stays morphax's own.

Under the hook morphax's log records go through the "jax" logger, so the handlers and levels a
JAX program sets there (for `jax.log_compiles()` output, say) see them.

`python -m morphax run script.py [args]` installs the hook and runs a script (see `__main__.py`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import logging
import sys
import types

from morphax._src.version import JAX_API_VERSION, JAX_API_VERSION_INFO

__all__ = ["install", "uninstall", "is_installed"]

_ROOTS = ("jax", "jaxlib")
# Marks the modules this hook made itself (the `jax` front and the version modules), so that
# `install` can tell them from a real JAX and `uninstall` can remove them.
_MARK = "__morphax_compat__"


def _is_alias_name(name: str) -> bool:
    return name.partition(".")[0] in _ROOTS


def _version_module(name: str) -> types.ModuleType:
    """`jax.version` / `jaxlib.version`: the version of JAX's API morphax implements."""
    module = types.ModuleType(name, f"The version of JAX's API morphax implements ({name}).")
    module._version = JAX_API_VERSION
    module.__version__ = JAX_API_VERSION
    module.__version_info__ = JAX_API_VERSION_INFO
    module._minimum_jaxlib_version = JAX_API_VERSION
    setattr(module, _MARK, True)
    return module


# The submodules `import jax` makes reachable as attributes (`jax.scipy.special`, `jax.typing`
# without importing them first); under the hook they are imported from morphax on first use.
_EAGER_SUBMODULES = frozenset(
    "api_util core custom_batching custom_derivatives debug distributed dlpack dtypes errors "
    "experimental export ffi image interpreters lax lib monitoring nn numpy ops profiler random "
    "ref scipy sharding stages tree tree_util typing".split()
)


class _JaxModule(types.ModuleType):
    """The module `import jax` gives under the hook: morphax's namespace with JAX's version."""

    def __getattr__(self, name):
        import morphax

        try:
            return getattr(morphax, name)
        except AttributeError:
            pass
        if name in _EAGER_SUBMODULES:
            try:
                module = importlib.import_module(f"morphax.{name}")
            except ModuleNotFoundError as err:
                if err.name != f"morphax.{name}":
                    raise
            else:
                setattr(self, name, module)
                return module
        raise AttributeError(
            f"module 'jax' has no attribute {name!r}: morphax (which `jax` names under "
            f"morphax.compat) does not provide jax.{name}"
        ) from None

    def __dir__(self):
        import morphax

        return sorted(set(dir(morphax)) | set(self.__dict__))


def _make_jax_module() -> _JaxModule:
    import morphax

    module = _JaxModule("jax", morphax.__doc__)
    module.__file__ = morphax.__file__
    module.__path__ = []  # a package: `import jax.numpy` asks the meta-path hooks for the rest
    module.__version__ = JAX_API_VERSION
    module.__version_info__ = JAX_API_VERSION_INFO
    module.version = _version_module("jax.version")
    setattr(module, _MARK, True)
    return module


def _make_jaxlib_module() -> types.ModuleType:
    module = types.ModuleType("jaxlib", "morphax standing in for jaxlib (JAX's compiled runtime).")
    module.__path__ = []
    module.__version__ = JAX_API_VERSION
    module.__version_info__ = JAX_API_VERSION_INFO
    module.version = _version_module("jaxlib.version")
    setattr(module, _MARK, True)
    return module


def _not_provided(name: str, looked_for: str | None) -> ModuleNotFoundError:
    where = f" (there is no {looked_for})" if looked_for else ""
    return ModuleNotFoundError(
        f"No module named {name!r}: morphax.compat maps jax imports onto morphax, and morphax does "
        f"not provide {name}{where}. Use the public JAX API morphax implements, or run this "
        "program with real JAX instead of morphax.compat.",
        name=name,
    )


class _JaxAliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `jax`, `jax.*`, `jaxlib` and `jaxlib.*` and loads them as morphax's modules."""

    def __init__(self):
        self._own = {}  # jax-side name -> the module this hook made for it (front and versions)

    def _resolve(self, fullname: str):
        if fullname in self._own:
            return self._own[fullname]
        if fullname == "jax":
            module = self._own["jax"] = _make_jax_module()
            self._own["jax.version"] = module.version
            return module
        if fullname == "jaxlib":
            module = self._own["jaxlib"] = _make_jaxlib_module()
            self._own["jaxlib.version"] = module.version
            return module
        root, _, rest = fullname.partition(".")
        if root == "jaxlib":
            raise _not_provided(fullname, None)
        target = "morphax." + rest
        try:
            return importlib.import_module(target)
        except ModuleNotFoundError as err:
            # Only a missing module along `target` itself means "morphax lacks it"; a module that
            # morphax's own code fails to find (an optional dependency) is reported as it is.
            missing = err.name or ""
            if missing == target or target.startswith(missing + ".") and missing != "morphax":
                raise _not_provided(fullname, target) from None
            raise

    def find_spec(self, fullname, path=None, target=None):
        if not _is_alias_name(fullname):
            return None
        module = self._resolve(fullname)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=hasattr(module, "__path__"))

    def create_module(self, spec):
        # The module already exists (morphax's own, or made by this hook): importing it under the
        # jax name registers that same object, so `jax.numpy is morphax.numpy`.
        return self._resolve(spec.name)

    def exec_module(self, module):
        pass  # already executed when morphax imported it


def _finder() -> _JaxAliasFinder | None:
    for hook in sys.meta_path:
        if isinstance(hook, _JaxAliasFinder):
            return hook
    return None


def is_installed() -> bool:
    """Whether `install()` is in effect (jax imports resolve to morphax)."""
    return _finder() is not None


def _foreign_jax_modules() -> list[str]:
    """Modules named jax/jaxlib in `sys.modules` that this hook did not provide (a real JAX)."""
    foreign = []
    for name, module in list(sys.modules.items()):
        if not _is_alias_name(name) or module is None:
            continue
        if getattr(module, _MARK, False) or getattr(module, "__name__", "").startswith("morphax"):
            continue
        foreign.append(name)
    return sorted(foreign)


def install() -> None:
    """Map `import jax` (and `jax.*`, `jaxlib`) onto morphax for the rest of the process.

    Call it before the program or library imports jax; calling it again does nothing. Raises
    RuntimeError when a real JAX is already imported in this process, since its arrays and
    transformations cannot mix with morphax's.
    """
    foreign = _foreign_jax_modules()
    if foreign:
        shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise RuntimeError(
            f"morphax.compat.install(): a real JAX is already imported in this process ({shown}), "
            "so jax imports cannot be mapped onto morphax. Call morphax.compat.install() before "
            "anything imports jax, or start the program with `python -m morphax run script.py`."
        )
    if _finder() is None:
        sys.meta_path.insert(0, _JaxAliasFinder())
        # morphax's log records (compiles under `jax.log_compiles()`, cache misses) reach the
        # handlers and levels a JAX program set on the "jax" logger, then the root as before.
        logging.getLogger("morphax").parent = logging.getLogger("jax")


def uninstall() -> None:
    """Undo `install()`: remove the hook and the jax/jaxlib names it registered in `sys.modules`.

    Modules that already imported jax keep the morphax objects they hold.
    """
    sys.meta_path[:] = [hook for hook in sys.meta_path if not isinstance(hook, _JaxAliasFinder)]
    logging.getLogger("morphax").parent = logging.getLogger()
    for name, module in list(sys.modules.items()):
        if not _is_alias_name(name):
            continue
        if getattr(module, _MARK, False) or getattr(module, "__name__", "").startswith("morphax"):
            del sys.modules[name]
