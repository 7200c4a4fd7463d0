"""Maximum ulp error of the C backend's math library (morphax/_src/compiler/backends/c/mathlib.h).

float32 functions are compared with float64 NumPy/SciPy on the same inputs; float64 functions with
mpmath at 40 digits when it is installed (`pip install mpmath`), else with long double NumPy where
it has the function (SciPy's float64 otherwise, whose own error then adds in). Inputs: log-uniform
magnitudes over the whole exponent range (both signs) clipped to each domain, uniform points in a
core interval, and the special values. Also prints which loops gcc vectorizes.

    python benchmarks/cmath_ulp.py [--n32 2000000] [--n64 200000] [--nmp 20000]
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests/compiler"))
import test_cmath as T  # noqa: E402

try:
    import mpmath as mp
except ImportError:  # pragma: no cover
    mp = None


def _LOGGAMMA(x):
    return mp.loggamma(x)


def _mp_funcs():
    m = mp
    return {
        "exp": m.exp, "exp2": lambda x: m.power(2, x), "expm1": m.expm1, "log": m.log,
        "log1p": m.log1p, "log2": lambda x: m.log(x, 2), "rsqrt": lambda x: 1 / m.sqrt(x),
        "cbrt": lambda x: m.sign(x) * m.cbrt(abs(x)), "sin": m.sin, "cos": m.cos, "tan": m.tan,
        "asin": m.asin, "acos": m.acos, "atan": m.atan, "sinh": m.sinh, "cosh": m.cosh,
        "tanh": m.tanh, "logistic": lambda x: 1 / (1 + m.exp(-x)), "asinh": m.asinh,
        "acosh": m.acosh, "atanh": m.atanh, "erf": m.erf, "erfc": m.erfc,
        "lgamma": _LOGGAMMA, "sqrt": m.sqrt, "digamma": m.digamma, "erf_inv": m.erfinv,
        "pow": lambda x, y: m.power(x, y), "atan2": m.atan2,
    }  # fmt: skip


def mp_ulp_error(y, x, fn, *more):
    out = np.zeros(len(y))
    for i in range(len(y)):
        try:
            args = [mp.mpf(float(a[i])) for a in (x, *more)]
            exact = fn(*args)
            if isinstance(exact, mp.mpc):  # outside the real domain (lgamma takes log|Gamma|)
                exact = exact.real if fn is _LOGGAMMA else mp.nan
            if mp.isnan(exact):
                out[i] = 0.0 if np.isnan(y[i]) else np.inf
                continue
        except (ValueError, ZeroDivisionError, OverflowError):
            continue
        ex = float(exact) if abs(exact) < mp.mpf(2) ** 1024 else float("inf") * float(mp.sign(exact))
        if not np.isfinite(ex) or not np.isfinite(y[i]):
            out[i] = 0.0 if (ex == y[i] or (np.isnan(ex) and np.isnan(y[i]))) else np.inf
            continue
        spc = max(float(np.spacing(abs(ex))), 5e-324)
        out[i] = float(abs(mp.mpf(float(y[i])) - exact) / spc)
    return out


def vector_report():
    names = T.UNARY + ["erf_inv"]
    src = ['#include "mathlib.h"']
    lines = {}
    for f in names + ["pow", "atan2"]:
        for t, sfx in (("double", ""), ("float", "f")):
            nm = f"v_{f}{sfx}"
            src.append(f"void {nm}(const {t}* restrict x, const {t}* restrict z, {t}* restrict y, long n) {{")
            src.append("#pragma omp simd")
            call = f"mx_{f}{sfx}(x[i], z[i])" if f in ("pow", "atan2") else f"mx_{f}{sfx}(x[i])"
            src.append(f"  for (long i = 0; i < n; i++) y[i] = {call};")
            lines[nm] = len(src)
            src.append("}")
    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d) / "v.c"
        p.write_text("\n".join(src) + "\n")
        r = subprocess.run(
            [T.find_cc(), "-O3", "-march=native", "-fno-math-errno", "-fno-trapping-math", "-fopenmp-simd",
             "-fopt-info-vec-optimized", f"-I{T.HEADER_DIR}", "-c", str(p), "-o", str(p) + ".o"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
    ok = {nm for nm, ln in lines.items() if f"v.c:{ln}:" in r.stderr}
    return ok, set(lines) - ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n32", type=int, default=2_000_000)
    ap.add_argument("--n64", type=int, default=200_000)
    ap.add_argument("--nmp", type=int, default=20_000)
    args = ap.parse_args()
    lib, _ = T.build()
    shim = T.Shim(lib)
    rng = np.random.default_rng(2024)
    mpf = _mp_funcs() if mp else {}
    if mp:
        mp.mp.dps = 40
    print(f"{'function':10s} {'f32 max ulp':>12s} {'f64 max ulp':>12s}  f64 oracle")
    with np.errstate(all="ignore"):
        for name in T.UNARY + ["erf_inv", "pow", "atan2"]:
            res = []
            for dtype, sfx in (("float32", "f32"), ("float64", "f64")):
                n = args.n32 if dtype == "float32" else (args.nmp if mp else args.n64)
                if name in ("pow", "atan2"):
                    if name == "pow":
                        x = np.exp(rng.uniform(-40, 40, n)) * np.where(rng.random(n) < 0.2, -1, 1)
                        y = np.where(rng.random(n) < 0.3, rng.integers(-30, 30, n), rng.uniform(-30, 30, n))
                        keep = np.abs(y * np.log(np.abs(x))) < (700 if dtype == "float64" else 85)
                        x, y = x[keep], y[keep]
                    else:
                        x = T.sample(dtype, n, (-np.inf, np.inf), (-5, 5), rng)
                        y = T.sample(dtype, n, (-np.inf, np.inf), (-5, 5), rng)
                        m = min(x.size, y.size)
                        x, y = x[:m], y[:m]
                    x, y = x.astype(dtype), y.astype(dtype)
                    out = shim(f"{name}_{sfx}", x, y)
                    more = (y,)
                else:
                    dom, core = T.DOMAIN.get(name, ((0, np.inf), (0, 4)))
                    x = T.sample(dtype, n, dom, core, rng)
                    x = np.concatenate([x, T._specials(dtype)])
                    if dtype == "float32" and name in ("sin", "cos", "tan"):
                        x = np.concatenate([x, T.sample(dtype, n, (-(2.0**50), 2.0**50), (-1e5, 1e5), rng)])
                    if name in ("lgamma", "digamma"):  # relative error only for x > 0 (see header)
                        x = x[(x > 0) & np.isfinite(x)]
                    if name in ("sin", "cos", "tan"):  # MX_TRIG_MAX: not reduced accurately beyond
                        x = x[~(np.abs(x.astype(np.float64)) >= 2.0**50)]
                    out = shim(f"{name}_{sfx}", x)
                    more = ()
                if dtype == "float64" and mp:
                    err = mp_ulp_error(out, x, mpf[name], *more)
                    oracle = "mpmath"
                else:
                    ref = T.reference(name, x, dtype, *more)
                    err = T.ulp_error(out, ref, dtype)
                    oracle = "longdouble" if name in T.LD_OK else "scipy"
                res.append(float(np.max(err)) if err.size else 0.0)
            print(f"{name:10s} {res[0]:12.2f} {res[1]:12.2f}  {oracle}", flush=True)
    ok, missed = vector_report()
    print("vectorized:", " ".join(sorted(ok)))
    print("not vectorized:", " ".join(sorted(missed)) or "(none)")


if __name__ == "__main__":
    main()
