"""Programs compiled by a PJRT plugin kept on disk (compiler/backends/xla/executable_cache.py):
a later process loads them instead of compiling, and a damaged, foreign or unloadable entry is
discarded with one warning and compiled again, never loaded. Each case runs fresh processes over
a private cache; each child checks its results against NumPy and reports how many modules the
plugin compiled and the warnings the "morphax" logger received."""

import glob
import json
import os
import pathlib

import numpy as np
import pytest

from morphax._src.compiler.backends import get_backend
from morphax._src.compiler.backends.c import disk_cache
from morphax._src.compiler.backends.xla import executable_cache

pytestmark = pytest.mark.skipif(not get_backend("xla").available(), reason="no PJRT plugin")

_CHILD = """
    import json, logging
    log = []

    class _Keep(logging.Handler):
        def emit(self, record):
            if record.levelno >= logging.WARNING:
                log.append(record.getMessage())

    logging.getLogger("morphax").addHandler(_Keep())
    import numpy as np
    import morphax, morphax.numpy as jnp
    from morphax._src.pjrt import client as pjrt_client

    compiled = []
    original = pjrt_client.Client.compile

    def counting(self, *args, **kwargs):
        compiled.append(1)
        return original(self, *args, **kwargs)

    pjrt_client.Client.compile = counting
    x = np.linspace(0.5, 2, 48, dtype=np.float32).reshape(6, 8)
    w = np.linspace(0, 1, 24, dtype=np.float32).reshape(8, 3)
    f = morphax.jit(lambda x, w: (jnp.tanh(x @ w), jnp.sum(x * 2.5)), backend="xla")
    a, s = f(x, w)
    np.testing.assert_allclose(np.asarray(a), np.tanh(x @ w), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(float(s), float(np.sum(x * 2.5)), rtol=1e-6)
    print(json.dumps({"compiled": len(compiled), "log": log}))
"""


def _child(python_child, cache, env=None):
    env = {"MORPHAX_CACHE_DIR": str(cache), **(env or {})}
    res = python_child(_CHILD, env, drop=("MORPHAX_BACKEND",))
    return json.loads(res.stdout.strip().splitlines()[-1])


def _entry(cache):
    (path,) = glob.glob(os.path.join(str(cache), "c", "*", "*" + executable_cache.SUFFIX))
    return path


def _key(path):
    return os.path.basename(path)[: -len(executable_cache.SUFFIX)]


def test_a_later_process_loads_the_program_instead_of_compiling_it(tmp_path, python_child):
    cache = tmp_path / "cache"
    first = _child(python_child, cache)
    assert first == {"compiled": 1, "log": []}
    path = _entry(cache)
    assert disk_cache.check_file(path, executable_cache.KIND, _key(path)) == disk_cache.OK
    second = _child(python_child, cache)
    assert second == {"compiled": 0, "log": []}


@pytest.mark.parametrize("how", ["truncated", "random_bytes", "no_signature", "other_key", "signed_garbage"])
def test_a_damaged_entry_is_compiled_again_never_loaded(tmp_path, python_child, how):
    cache = tmp_path / "cache"
    _child(python_child, cache)
    path = _entry(cache)
    data = pathlib.Path(path).read_bytes()
    if how == "truncated":
        pathlib.Path(path).write_bytes(data[: len(data) // 2])
    elif how == "random_bytes":
        noise = np.random.default_rng(3).integers(0, 256, len(data) // 4, dtype=np.uint8).tobytes()
        pathlib.Path(path).write_bytes(data[: len(data) // 2] + noise + data[len(data) // 2 + len(noise) :])
    elif how == "no_signature":
        os.remove(path + disk_cache.SIGNATURE_SUFFIX)
    elif how == "other_key":
        pathlib.Path(path + disk_cache.SIGNATURE_SUFFIX).write_text(
            disk_cache.signature(executable_cache.KIND, "0" * 40, data)
        )
    else:  # correctly signed, but not an executable the plugin can load
        garbage = b"not a serialized executable " * 40
        pathlib.Path(path).write_bytes(garbage)
        pathlib.Path(path + disk_cache.SIGNATURE_SUFFIX).write_text(
            disk_cache.signature(executable_cache.KIND, _key(path), garbage)
        )
    second = _child(python_child, cache)
    assert second["compiled"] == 1
    assert len(second["log"]) == 1 and "discarded" in second["log"][0], second["log"]
    third = _child(python_child, cache)  # stored again, whole
    assert third == {"compiled": 0, "log": []}


def test_a_read_only_cache_is_used_and_never_written(tmp_path, python_child):
    cache = tmp_path / "cache"
    _child(python_child, cache)
    path = _entry(cache)
    os.remove(path)
    os.remove(path + disk_cache.SIGNATURE_SUFFIX)
    before = sorted(p.name for p in (cache / "c").rglob("*"))
    out = _child(python_child, cache, {"MORPHAX_CACHE_READ_ONLY": "1"})
    assert out["compiled"] == 1
    assert sorted(p.name for p in (cache / "c").rglob("*")) == before


def test_the_key_names_the_module_and_the_plugin_build():
    client = get_backend("xla").client()
    text = 'module @m { func.func public @main() -> () { "func.return"() : () -> () } }'
    assert executable_cache.key_of(client, text) == executable_cache.key_of(client, text)
    assert executable_cache.key_of(client, text) != executable_cache.key_of(client, text + " ")
    # A pmap's program: the replicas and their devices are part of the key.
    assert executable_cache.key_of(client, text, 2, [0, 1]) != executable_cache.key_of(client, text)
    assert executable_cache.key_of(client, text, 2, [0, 1]) != executable_cache.key_of(
        client, text, 2, [1, 0]
    )
