"""The generated vmap matrix: every primitive with a batching rule, on a sample of its test spec's
cases, under every in_axes combination of its operands (each batched at axis 0, at its last axis,
or not batched; at least one batched), batch sizes 1 and 3, out_axes 0 and -1. Oracle: a Python
loop binding the primitive on each example, stacked along out_axes (values, dtypes, weak types).

Per-example operands are fresh draws of the same case from the spec's own generator (other
seeds), so integer index operands stay valid and flags such as indices_are_sorted stay true;
operands the generator makes deterministic (special values, integer edges) are shifted by the
example index when inexact, rotated along their first axis otherwise (rank-0 ones repeat).
"""

from __future__ import annotations

import functools
import itertools
import warnings
import zlib

import numpy as np
import pytest

import morphax
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.primitive import registry

MAX_CASES_PER_PRIM = 4
MAX_COMBOS_PER_CASE = 12
BATCH_SIZES = (1, 3)
OUT_AXES = (0, -1)


def _seed(name: str, k: int = 0) -> int:
    return zlib.crc32(name.encode()) + 7919 * k


@functools.cache
def _draw(name: str, k: int = 0):
    """The spec's cases from seed `k` (generators may cast specials with overflow: quiet)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return registry[name].test_spec.cases(np.random.default_rng(_seed(name, k)))


def _has_cases(prim) -> bool:
    return prim.test_spec is not None and not prim.higher_order


def _nonempty(case) -> bool:
    return bool(case.args) and all(np.asarray(a).size > 0 for a in case.args)


def _sample(cases):
    """Up to MAX_CASES_PER_PRIM cases spread over the list (dtypes and shapes vary along it), one of
    them with the most operands."""
    idx = [i for i, c in enumerate(cases) if _nonempty(c)]
    if not idx:
        return []
    picks = sorted(
        {idx[round(j * (len(idx) - 1) / (MAX_CASES_PER_PRIM - 2))] for j in range(MAX_CASES_PER_PRIM - 1)}
    )
    widest = max(idx, key=lambda i: len(cases[i].args))
    if len(cases[widest].args) > max(len(cases[i].args) for i in picks):
        picks.append(widest)
    return picks[:MAX_CASES_PER_PRIM]


def _same_params(p, q) -> bool:
    if p.keys() != q.keys():
        return False
    for k in p:
        a, b = p[k], q[k]
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            if not (np.shape(a) == np.shape(b) and np.array_equal(a, b, equal_nan=True)):
                return False
            continue
        try:
            if a != b and repr(a) != repr(b):
                return False
        except Exception:  # noqa: BLE001 - params with odd __eq__
            if repr(a) != repr(b):
                return False
    return True


def _variants(prim, name, index, case, n):
    """n per-example versions of each operand of `case` (the case itself first)."""
    out = [[np.asarray(a)] for a in case.args]
    for k in range(1, n):
        other = _draw(name, k)[index]
        usable = (
            other.name == case.name
            and len(other.args) == len(case.args)
            and _same_params(other.params, case.params)
            and all(
                np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype
                for a, b in zip(other.args, case.args)
            )
        )
        for i, a in enumerate(case.args):
            a = np.asarray(a)
            v = np.asarray(other.args[i]) if usable else a
            if np.array_equal(v, a, equal_nan=True):
                if _dtypes.is_inexact(a.dtype):
                    wide = np.complex128 if _dtypes.is_complex(a.dtype) else np.float64
                    with np.errstate(all="ignore"):
                        v = (a.astype(wide) + k).astype(a.dtype)
                elif a.ndim:
                    # Integer edge values: rotate whole rows, which keeps index vectors intact.
                    v = np.roll(a, k, axis=0)
            out[i].append(v)
    return out


def _axis_combos(name, index, case):
    opts = [(0, None) if np.ndim(a) == 0 else (0, -1, None) for a in case.args]
    combos = [c for c in itertools.product(*opts) if any(d is not None for d in c)]
    if len(combos) <= MAX_COMBOS_PER_CASE:
        return combos
    n = len(case.args)
    keep = {(0,) * n, tuple(o[1] if len(o) == 3 else 0 for o in opts)}
    for i in range(n):  # each operand batched alone
        keep.add(tuple(0 if j == i else None for j in range(n)))
    rest = [c for c in combos if c not in keep]
    rng = np.random.default_rng(_seed(name, 100 + index))
    extra = rng.choice(len(rest), size=max(0, MAX_COMBOS_PER_CASE - len(keep)), replace=False)
    return sorted(keep, key=str) + [rest[i] for i in sorted(extra)]


def _matrix_params():
    out = []
    for name in sorted(registry):
        prim = registry[name]
        if not _has_cases(prim) or prim.batch is None:
            continue
        cases = _draw(name)
        for i in _sample(cases):
            out.append(pytest.param(name, i, cases[i], id=f"{name}-{cases[i].name}"))
    return out


PARAMS = _matrix_params()


def _tol(prim, dtype):
    spec_tol = (prim.test_spec.tol or {}).get(np.dtype(dtype).name, 0)
    dt = np.dtype(dtype)
    if dt in (np.float16, _dtypes.bfloat16):
        base = 1e-2
    elif dt in (np.float32, np.complex64):
        base = 1e-5
    elif dt in (np.float64, np.complex128):
        base = 1e-12
    else:
        return 0
    return max(base, spec_tol)


def _as_host(x):
    a = np.asarray(x)
    if a.dtype.type.__module__.startswith("ml_dtypes"):
        return a.astype(np.float32)
    return a


def _compare(prim, got, want, what):
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.dtype == want_a.dtype, f"{what}: dtype {got_a.dtype} != loop {want_a.dtype}"
    assert got_a.shape == want_a.shape, f"{what}: shape {got_a.shape} != loop {want_a.shape}"
    tol = _tol(prim, want_a.dtype)
    g, w = _as_host(got_a), _as_host(want_a)
    if tol:
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(g, w, err_msg=what)


def _run_one(prim, case, variants, axes, size, out_axes):
    params = case.params
    batched = []
    for vs, d in zip(variants, axes):
        batched.append(vs[0] if d is None else np.stack(vs[:size], axis=d))

    def f(*args):
        return prim.bind(*args, **params)

    got = morphax.vmap(f, in_axes=axes, out_axes=out_axes)(*batched)
    per_example = []
    for k in range(size):
        ex = [vs[0] if d is None else np.take(b, k, axis=d) for vs, b, d in zip(variants, batched, axes)]
        r = prim.bind(*ex, **params)
        per_example.append(list(r) if prim.multiple_results else [r])
    got = list(got) if prim.multiple_results else [got]
    assert len(got) == len(per_example[0])
    what = f"{prim.name} {case.name} in_axes={axes} size={size} out_axes={out_axes}"
    for j, g in enumerate(got):
        outs = [ex[j] for ex in per_example]
        want = np.stack([np.asarray(o) for o in outs], axis=out_axes)
        _compare(prim, g, want, f"{what} output {j}")
        assert g.weak_type == outs[0].weak_type, f"{what} output {j}: weak_type {g.weak_type} != loop"


@pytest.mark.parametrize("name,index,case", PARAMS)
def test_vmap_matches_loop(name, index, case):
    prim = registry[name]
    variants = _variants(prim, name, index, case, max(BATCH_SIZES))
    for axes in _axis_combos(name, index, case):
        for size in BATCH_SIZES:
            for out_axes in OUT_AXES:
                _run_one(prim, case, variants, axes, size, out_axes)


def _needs_batch_rule(prim) -> bool:
    # Primitives without operands (iota) are never batched: vmap forwards them unchanged. Collectives
    # have none either (axis_index) but act on the vmap axis, so they need their rule.
    if prim.named_axes_param is not None:
        return True
    if not _has_cases(prim):
        return False
    cases = _draw(prim.name)
    return any(len(c.args) > 0 for c in cases)


def test_every_primitive_has_a_batch_rule():
    missing = sorted(name for name, p in registry.items() if _needs_batch_rule(p) and p.batch is None)
    assert not missing, f"primitives without a batching rule: {missing}"


def test_every_batchable_primitive_is_in_the_matrix():
    covered = {p.values[0] for p in PARAMS}
    uncovered = sorted(
        name
        for name, p in registry.items()
        if p.batch is not None
        and _has_cases(p)
        and name not in covered
        and any(_nonempty(c) for c in _draw(name))
    )
    assert not uncovered, f"primitives with a batching rule but no vmap matrix case: {uncovered}"
