"""morphax.compat: `import jax` answered by morphax (module mapping, the version JAX programs see,
refusal next to a real JAX) and `python -m morphax run` (scripts and modules, sys.argv)."""

import importlib
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import compat


def _jax_names():
    return {n for n in sys.modules if n.partition(".")[0] in ("jax", "jaxlib")}


@pytest.fixture
def hook():
    """compat installed afresh for one test; afterwards the process is as before (the hook
    reinstalled if another module's tests had it in place)."""
    was_installed = compat.is_installed()
    compat.uninstall()
    if _jax_names():
        pytest.skip("a real jax module is imported in this process")
    compat.install()
    try:
        yield compat
    finally:
        compat.uninstall()
        for name in _jax_names():  # a fake one a test left behind
            del sys.modules[name]
        if was_installed:
            compat.install()


def test_jax_modules_are_morphax_modules(hook):
    import jax
    import jax.numpy as jnp_alias
    import jax.scipy.special
    import jax.tree_util
    from jax import flatten_util, lax

    assert jnp_alias is morphax.numpy
    assert jax.numpy is morphax.numpy and jax.lax is morphax.lax and lax is morphax.lax
    assert flatten_util is importlib.import_module("morphax.flatten_util")
    assert jax.tree_util is morphax.tree_util
    assert jax.scipy.special is importlib.import_module("morphax.scipy.special")
    assert sys.modules["jax.numpy"] is morphax.numpy
    # Names of the top level are morphax's own objects (so isinstance and identity checks agree).
    assert jax.Array is morphax.Array and jax.jit is morphax.jit and jax.grad is morphax.grad
    # A program written against jax computes with morphax.
    np.testing.assert_allclose(
        jax.grad(lambda x: jax.numpy.sin(x) * x)(1.0), np.cos(1) + np.sin(1), rtol=1e-6
    )


def test_submodules_reachable_after_import_jax_alone(hook):
    # In JAX `import jax` makes jax.typing, jax.scipy, jax.errors, ... reachable as attributes.
    import jax

    assert jax.typing.ArrayLike is importlib.import_module("morphax.typing").ArrayLike
    assert jax.errors.ConcretizationTypeError is morphax.errors.ConcretizationTypeError
    assert jax.scipy.special.logsumexp is importlib.import_module("morphax.scipy.special").logsumexp
    with pytest.raises(AttributeError, match="does not provide jax.no_such_name"):
        jax.no_such_name  # noqa: B018


def test_version_alias(hook):
    import jax
    import jax.version
    import jaxlib

    assert jax.__version__ == "0.10.2" and jax.__version_info__ == (0, 10, 2)
    assert jax.version.__version__ == "0.10.2" and jax.version.__version_info__ == (0, 10, 2)
    assert jaxlib.__version__ == "0.10.2" and jaxlib.version.__version__ == "0.10.2"
    # morphax keeps its own version; only the jax name reports JAX's.
    from morphax._src.version import JAX_API_VERSION, __version__

    assert morphax.__version__ == __version__ != JAX_API_VERSION


def test_missing_jax_module_names_itself(hook):
    with pytest.raises(ModuleNotFoundError, match=r"'jax\.no_such_module'.*morphax does not provide") as err:
        importlib.import_module("jax.no_such_module")
    assert err.value.name == "jax.no_such_module"
    with pytest.raises(ModuleNotFoundError, match=r"jaxlib\.xla_client.*morphax does not provide"):
        importlib.import_module("jaxlib.xla_client")


def test_install_twice_is_one_hook_and_uninstall_removes_everything(hook):
    compat.install()
    assert sum(type(h).__name__ == "_JaxAliasFinder" for h in sys.meta_path) == 1
    assert compat.is_installed()
    import jax.numpy  # noqa: F401

    compat.uninstall()
    assert not compat.is_installed()
    assert not _jax_names()
    # morphax itself is untouched by the alias.
    assert morphax.numpy is jnp and morphax.__version__ != "0.10.2"


def test_morphax_log_records_reach_the_jax_logger(hook):
    # A JAX program listens on the "jax" logger (optax's tests count compile messages there).
    import logging

    seen = []
    handler = logging.Handler()
    handler.emit = seen.append
    logging.getLogger("jax").addHandler(handler)
    try:
        logging.getLogger("morphax").warning("from morphax")
        compat.uninstall()
        logging.getLogger("morphax").warning("after uninstall")
    finally:
        logging.getLogger("jax").removeHandler(handler)
    assert [r.getMessage() for r in seen] == ["from morphax"]


def test_refuses_when_a_real_jax_is_imported(hook):
    compat.uninstall()
    sys.modules["jax"] = types.ModuleType("jax")  # stands in for a real JAX
    with pytest.raises(RuntimeError, match=r"real JAX is already imported.*before anything imports jax"):
        compat.install()
    assert not compat.is_installed()


def test_typing_and_errors_surface():
    from morphax.typing import ArrayLike, DTypeLike  # noqa: F401

    assert isinstance(jnp.ones(2), ArrayLike) and isinstance(np.float32(1), ArrayLike)
    assert isinstance(np.ones(2), ArrayLike) and isinstance(3, ArrayLike)
    assert not isinstance([1, 2], ArrayLike) and not isinstance("1", ArrayLike)
    seen = []
    morphax.jit(lambda x: seen.append(isinstance(x, ArrayLike)) or x)(1.0)
    assert seen == [True]
    # JAX's hierarchy: the tracer conversion errors are JAXTypeError, boolean indexing JAXIndexError.
    errors = morphax.errors
    for name in ("ConcretizationTypeError", "TracerIntegerConversionError", "TracerArrayConversionError"):
        assert issubclass(getattr(errors, name), errors.JAXTypeError)
    assert issubclass(errors.NonConcreteBooleanIndexError, errors.JAXIndexError)
    assert issubclass(errors.JaxprTypeError, TypeError)


def _run(args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "morphax", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_python_m_morphax_run_script_and_module(tmp_path):
    script = textwrap.dedent(
        """
        import sys
        import jax, jax.numpy as jnp
        import morphax
        assert jnp is morphax.numpy
        print(__name__, jax.__version__, sys.argv[1:], float(jax.grad(lambda x: x * x)(3.0)))
        """
    )
    (tmp_path / "prog.py").write_text(script)
    done = _run(["run", "prog.py", "a", "--flag"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["__main__", "0.10.2", "['a',", "'--flag']", "6.0"]

    (tmp_path / "progmod.py").write_text(script)
    done = _run(["run", "-m", "progmod", "b"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["__main__", "0.10.2", "['b']", "6.0"]

    (tmp_path / "fails.py").write_text("raise SystemExit(3)\n")
    assert _run(["run", "fails.py"], tmp_path).returncode == 3


def test_python_m_morphax_help_and_usage_errors(tmp_path):
    done = _run(["--help"], tmp_path)
    assert done.returncode == 0 and "python -m morphax run script.py" in done.stdout
    for args, message in [
        ([], "missing command"),
        (["train"], "unknown command 'train'"),
        (["run"], "needs a script path"),
        (["run", "-m"], "needs a module name"),
        (["run", "missing.py"], "no such file"),
    ]:
        done = _run(args, tmp_path)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)


def test_private_modules_libraries_import(hook):
    """lineax imports `jax._src.ad_util.stop_gradient_p` at import, diffrax's tests
    `jax._src.interpreters.ad`: both are morphax's own objects under JAX's names, the same as the
    public `jax.interpreters` ones, and work as JAX's do."""
    import jax
    from jax._src.ad_util import Zero, stop_gradient_p
    from jax._src.interpreters import ad, batching, partial_eval
    from jax.interpreters import ad as public_ad

    assert ad is importlib.import_module("morphax._src.interpreters.ad")
    assert ad.Zero is public_ad.Zero is Zero and ad.primitive_jvps is public_ad.primitive_jvps
    assert batching.not_mapped is None and partial_eval.PartialVal is not None
    # stop_gradient_p bound directly: the value passes, the derivative does not.
    x = np.float32(3.0)
    assert float(stop_gradient_p.bind(x)) == 3.0
    assert float(jax.grad(lambda v: stop_gradient_p.bind(v) * v)(x)) == 3.0
