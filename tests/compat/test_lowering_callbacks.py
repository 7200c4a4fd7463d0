"""A user primitive's Python lowering that emits a host callback (`mlir.emit_python_callback`,
as equinox's `noinline` lowers itself) runs the callback when the program runs, as JAX 0.10.2
does (issue 33: equinox's test_noinline::test_num_traces, test_complicated).

The lowering is traced once per compilation (equal equations of one program share it) and the
callback is called once per equation per execution. Expected counts and values are JAX 0.10.2's
for the same program.
"""

import numpy as np

import morphax as jax
import morphax.numpy as jnp
from morphax.extend.core import Primitive
from morphax.interpreters import mlir

count = {"lowerings": 0, "calls": 0}


def _callback(x):
    count["calls"] += 1
    return (np.asarray(x) * 3,)


def _lowering(ctx, x):
    count["lowerings"] += 1
    results, _, keepalive = mlir.emit_python_callback(
        ctx, _callback, None, [x], ctx.avals_in, ctx.avals_out, has_side_effect=False, sharding=None
    )
    ctx.module_context.add_keepalive(keepalive)
    return results


hostcall_p = Primitive("test_hostcall_lowering")
hostcall_p.multiple_results = True
hostcall_p.def_impl(lambda x: [x * 2])  # the implementation differs, so the tests see which ran
hostcall_p.def_abstract_eval(lambda x: [x])
mlir.register_lowering(hostcall_p, _lowering)


def test_the_callback_runs_at_execution_and_the_lowering_once():
    count.update(lowerings=0, calls=0)
    f = jax.jit(lambda x: hostcall_p.bind(x)[0] + hostcall_p.bind(x * 2)[0])
    # JAX 0.10.2: 9.0 {'lowerings': 1, 'calls': 2}; then 18.0 {'lowerings': 1, 'calls': 4}.
    assert float(f(1.0)) == 9.0
    assert count == {"lowerings": 1, "calls": 2}
    assert float(f(2.0)) == 18.0
    assert count == {"lowerings": 1, "calls": 4}
    # Another signature is another compilation: [3. 3. 3.] {'lowerings': 2, 'calls': 5}.
    np.testing.assert_array_equal(
        np.asarray(jax.jit(lambda x: hostcall_p.bind(x)[0])(jnp.ones(3))), [3.0] * 3
    )
    assert count == {"lowerings": 2, "calls": 5}
