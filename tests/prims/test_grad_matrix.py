"""Generated derivative matrix: every differentiable primitive, on float cases from its test
spec (moved to float64 with x64 on), through `check_grads` at its declared order in forward and
reverse mode; third order on a sample. Oracle: float64 central finite differences."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import morphax
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.primitive import registry
from morphax.test_util import check_grads

MAX_CASES_PER_PRIM = 4
THIRD_ORDER_SAMPLE = ("sin", "tanh", "mul", "div", "exp", "dot_general", "logistic", "integer_pow")


def _is_float(a):
    dt = np.asarray(a).dtype
    return dt in (np.float32, np.complex64)


def _promote64(a):
    a = np.asarray(a)
    if a.dtype == np.float32:
        return a.astype(np.float64)
    if a.dtype == np.complex64:
        return a.astype(np.complex128)
    return a


def _grad_cases():
    out = []
    for name in sorted(registry):
        prim = registry[name]
        spec = prim.test_spec
        if spec is None or not getattr(spec, "differentiable", True) or prim.jvp is None:
            continue
        if getattr(prim, "differentiable", True) is False:
            continue
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        chosen = []
        for case in spec.cases(rng):
            if "special" in case.name or "edges" in case.name:
                continue
            if not any(_is_float(a) for a in case.args):
                continue
            if any(np.asarray(a).size == 0 for a in case.args):
                continue
            if any(
                np.asarray(a).dtype not in (np.float32, np.complex64)
                and _dtypes.is_inexact(np.asarray(a).dtype)
                for a in case.args
            ):
                continue  # float16/bfloat16 cases are too coarse for finite differences
            chosen.append(case)
            if len(chosen) == MAX_CASES_PER_PRIM:
                break
        order = getattr(spec, "grad_order", 2)
        for case in chosen:
            out.append(pytest.param(prim, case, order, id=f"{name}-{case.name}"))
    return out


CASES = _grad_cases()


def _run(prim, case, order):
    with morphax.enable_x64():
        args = [_promote64(a) for a in case.args]
        params = dict(case.params)
        for k, v in list(params.items()):
            if isinstance(v, np.dtype) and v in (np.dtype(np.float32), np.dtype(np.complex64)):
                params[k] = np.dtype(np.float64) if v == np.float32 else np.dtype(np.complex128)
        diff_idx = [i for i, a in enumerate(args) if _dtypes.is_inexact(np.asarray(a).dtype)]
        fixed = {i: morphax.numpy.asarray(a) for i, a in enumerate(args) if i not in diff_idx}

        def f(*diff_args):
            it = iter(diff_args)
            full = [fixed[i] if i in fixed else next(it) for i in range(len(args))]
            out = prim.bind(*full, **params)
            return tuple(out) if prim.multiple_results else out

        diff_args = [morphax.numpy.asarray(args[i]) for i in diff_idx]
        check_grads(f, diff_args, order=order, modes=("fwd", "rev"), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("prim,case,order", CASES)
def test_check_grads(prim, case, order):
    if order == 0:
        pytest.skip("declared non-differentiable at this point")
    _run(prim, case, min(order, 2))


@pytest.mark.parametrize("name", THIRD_ORDER_SAMPLE)
def test_third_order_sample(name):
    prim = registry[name]
    params = [p for p in CASES if p.values[0] is prim]
    assert params, f"no gradient cases for {name}"
    prim, case, _ = params[0].values
    _run(prim, case, 3)


def test_every_differentiable_primitive_is_covered():
    covered = {p.values[0].name for p in CASES}
    missing = []
    for name, prim in registry.items():
        spec = prim.test_spec
        if spec is None or prim.higher_order:
            continue
        if (
            getattr(spec, "differentiable", True)
            and getattr(prim, "differentiable", True)
            and name not in covered
        ):
            missing.append(name)
    assert not missing, f"differentiable primitives without gradient cases (or without a jvp rule): {missing}"
