"""The xla backend's C launcher (compiler/backends/xla/launch.py): one PJRT execution from NumPy
inputs to NumPy outputs without Python in between. Checked against the ctypes path and NumPy:
results, outputs that view the CPU plugin's memory (and free it with the array), inputs it
declines, a plugin error as a PjrtError, no leak over 10,000 calls, threads, and the backend
without the extension. Skipped without a plugin or a C compiler."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import morphax
from morphax._src.compiler.backends import get_backend
from morphax._src.compiler.backends.xla import launch
from morphax._src.core.avals import ShapedArray
from morphax._src.pjrt import PjrtError

pytestmark = [
    pytest.mark.skipif(not get_backend("xla").available(), reason="no PJRT plugin"),
    pytest.mark.skipif(not get_backend("c").available(), reason="no C compiler to build the launcher"),
]


@pytest.fixture(scope="module")
def mod():
    m = launch.module()
    if m is None:
        pytest.skip("no Python or NumPy headers to build the launcher extension")
    return m


def _direct(f, *args):
    compiled = morphax.jit(f, backend="xla").lower(*args).compile()
    direct = compiled._executable.direct
    assert direct is not None and type(direct).__name__ == "Launcher"
    return direct


def test_results_of_every_dtype_match_numpy(mod):
    import ml_dtypes

    def f(a, b, c, d, e):
        return a * 2 + 1, b ^ 5, ~c, d + d, e * (1 + 1j), a.sum()

    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.arange(6, dtype=np.uint8)
    c = np.array([True, False, True])
    d = np.linspace(-2, 2, 5).astype(ml_dtypes.bfloat16)
    e = np.array(2.5 - 1j, np.complex64)  # 0-d
    direct = _direct(f, a, b, c, d, e)
    outs = direct(a, b, c, d, e)
    want = [
        a * 2 + 1,
        b ^ 5,
        ~c,
        (d.astype(np.float32) * 2).astype(ml_dtypes.bfloat16),
        e * (1 + 1j),
        a.sum(),
    ]
    assert len(outs) == len(want)
    for got, w in zip(outs, want):
        assert type(got) is np.ndarray and got.dtype == w.dtype and got.shape == np.shape(w)
        np.testing.assert_array_equal(got, w)


def test_outputs_view_the_cpu_plugins_memory_and_free_it_with_the_array(mod):
    x = np.arange(1000, dtype=np.float32)
    direct = _direct(lambda x: (x + 1, x * 2), x)
    gc.collect()
    before = mod.live_held_buffers()
    a, b = direct(x)
    assert type(a.base).__name__ == "HeldBuffer" and a.flags.c_contiguous and a.flags.aligned
    assert mod.live_held_buffers() == before + 2
    np.testing.assert_array_equal(a, x + 1)
    np.testing.assert_array_equal(b, x * 2)
    del a
    assert mod.live_held_buffers() == before + 1
    view = b[10:20]  # a view of the output keeps its buffer
    del b
    assert mod.live_held_buffers() == before + 1
    np.testing.assert_array_equal(view, x[10:20] * 2)
    del view
    assert mod.live_held_buffers() == before


def test_zero_size_outputs_and_inputs(mod):
    x = np.zeros((0, 3), np.float32)
    (out,) = _direct(lambda x: x * 2, x)(x)
    assert out.shape == (0, 3) and out.dtype == np.float32


def test_inputs_it_cannot_pass_are_declined_and_the_jitted_call_still_runs(mod):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    direct = _direct(lambda a: a * 2.0, a)
    assert direct(np.asfortranarray(a)) is None  # not C-contiguous
    assert direct(a.astype(np.float64)) is None  # another dtype
    assert direct(a.reshape(4, 3)) is None  # another shape
    assert direct(a.astype(a.dtype.newbyteorder(">"))) is None  # not native byte order
    assert direct(list(a)) is None  # not an array
    assert direct() is None  # too few
    jitted = morphax.jit(lambda a: a * 2.0, backend="xla")
    np.testing.assert_array_equal(np.asarray(jitted(np.asfortranarray(a))), a * 2)


def test_a_plugin_error_is_a_pjrt_error_never_a_crash(mod):
    backend = get_backend("xla")
    client = backend.client()
    x = np.arange(4, dtype=np.float32)
    lowered = morphax.jit(lambda x: x + 1, backend="xla").lower(x)
    compiled = client.compile(lowered.as_text())
    # A launcher told the program takes 5 floats: the plugin refuses the wrong-size buffer.
    wrong = ShapedArray((5,), np.float32)
    bad = launch.launcher(client, compiled, client.addressable_devices[0], [wrong], [wrong])
    with pytest.raises(PjrtError) as info:
        bad(np.arange(5, dtype=np.float32))
    assert info.value.code == "INVALID_ARGUMENT" and info.value.where == "PJRT_LoadedExecutable_Execute"
    # The executable is still usable afterwards.
    right = ShapedArray((4,), np.float32)
    good = launch.launcher(client, compiled, client.addressable_devices[0], [right], [right])
    np.testing.assert_array_equal(good(x)[0], x + 1)


def test_no_leaks_over_ten_thousand_calls(mod, rss_bytes):
    from morphax._src import pjrt

    x = np.arange(1024, dtype=np.float32)
    direct = _direct(lambda a, b: (a + b, a * b), x, x)
    gc.collect()
    live, held = pjrt.live_objects(), mod.live_held_buffers()
    for _ in range(500):  # warm up allocators and caches
        direct(x, x)
    rss = rss_bytes()
    for _ in range(10_000):  # 4 buffers of 4 KiB a call: any leaked would be 160 MiB
        outs = direct(x, x)
    grown = rss_bytes() - rss
    assert grown < 8 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 10,000 calls"
    np.testing.assert_array_equal(outs[0], x + x)
    del outs
    gc.collect()
    assert mod.live_held_buffers() == held and pjrt.live_objects() == live


def test_eight_threads_call_one_launcher(mod):
    x = np.arange(64, dtype=np.float32)
    direct = _direct(lambda x, k: x * k, x, np.float32(1))
    errors = []

    def work(k):
        try:
            for _ in range(200):
                (out,) = direct(x, np.asarray(k, np.float32))
                np.testing.assert_array_equal(out, x * k)
        except BaseException as exc:  # reported below, on the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_without_the_extension_the_ctypes_path_runs_everything(monkeypatch):
    monkeypatch.setattr(launch, "_module", [None])
    f = morphax.jit(lambda x: (x * 3.25, x.sum()), backend="xla")
    x = np.arange(7, dtype=np.float32)
    compiled = f.lower(x).compile()
    assert compiled._executable.direct is None
    a, s = f(x)
    np.testing.assert_array_equal(np.asarray(a), x * np.float32(3.25))
    assert float(s) == 21.0


def test_large_inputs_lent_to_the_plugin_are_never_aliased_by_outputs(mod):
    """Inputs of ZERO_COPY_BYTES and more are lent to the CPU plugin, not copied: outputs that
    pass them through must still be the plugin's own memory, valid after the input changes."""
    x = np.arange(max(launch.ZERO_COPY_BYTES, 1 << 16), dtype=np.float32)
    kept = x.copy()
    direct = _direct(lambda x, y: (x, y[::2], x + y), x, x)
    a, b, c = direct(x, x)
    assert not np.shares_memory(a, x) and not np.shares_memory(b, x)
    x[:] = -1
    del x
    gc.collect()
    np.testing.assert_array_equal(a, kept)
    np.testing.assert_array_equal(b, kept[::2])
    np.testing.assert_array_equal(c, kept + kept)


def test_an_output_passed_back_goes_in_uncopied_and_views_do_not(mod):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    direct = _direct(lambda a: a * 2 + 1, x)
    (y,) = direct(x)
    before = mod.uncopied_inputs()
    (z,) = direct(y)  # y is an output of this client and device: passed as its PJRT buffer
    assert mod.uncopied_inputs() == before + 1
    np.testing.assert_array_equal(z, (x * 2 + 1) * 2 + 1)
    # Not the whole buffer, another shape or dtype of the same memory: copied.
    flat = _direct(lambda a: a - 1, y.reshape(-1))
    (w,) = flat(y.reshape(-1))
    np.testing.assert_array_equal(w, y.reshape(-1) - 1)
    (v,) = direct(y.view(np.int32).view(np.float32))
    np.testing.assert_array_equal(v, y * 2 + 1)
    assert mod.uncopied_inputs() == before + 2  # only the last: a view of the whole, same type
    sub = _direct(lambda a: a + 0.5, y[1:])
    np.testing.assert_array_equal(sub(y[1:])[0], y[1:] + 0.5)
    assert mod.uncopied_inputs() == before + 2
