/* morphax C backend: vectorizable math library.
 *
 * Every function is `static inline` C99 (GNU extensions: __builtin_fma/__builtin_sqrt, hex float
 * literals) with no libm call, no lookup table indexed by data and no data-dependent branch:
 * every path is computed and the answer selected, so gcc vectorizes loops that call these inside
 * `#pragma omp simd` at -O3 -march=native.  Bit manipulation is memcpy-based (no aliasing UB).
 * Doubles become integers through the 1.5*2^52 "shifter" rather than (int64_t) casts, so only
 * integer add/sub/and/shift appear (all available to AVX2 on 64-bit lanes).
 *
 * Build with -fno-math-errno and -fno-trapping-math (without AVX-512 masks gcc will not compute a
 * path's floating-point operations unconditionally unless told they cannot trap); NEVER -ffast-math (loading such a library flips the whole process
 * to flush-to-zero, and these functions rely on IEEE semantics: subnormals, nan, -0.0, inf).
 * -ffp-contract=fast (gcc's default) is fine for every function here, including the bit-exact
 * mx_xla_* forms (see there).  The large-argument reduction of sin/cos/tan uses a fused
 * multiply-add when the target has one (__FP_FAST_FMA, e.g. -march=native on x86-64-v3);
 * without it a Cody-Waite split is used whose range is smaller (stated at mx_sin).
 *
 * Vectorization (gcc 12, -O3 -march=native -fopenmp-simd, checked by tests/compiler/
 * test_cmath.py and benchmarks/cmath_ulp.py): every mx_<f> and mx_<f>f below vectorizes in a
 * `#pragma omp simd` loop. Two rules keep it so: selects with a constant arm go through mx__sel
 * (a bit-mask blend; a plain ?: there lets gcc thread jumps and leave control flow behind), and
 * fixed-count inner loops carry `#pragma GCC unroll`.
 *
 * Naming: mx_<name> (double), mx_<name>f (float).  The hot float functions (exp, exp2, expm1,
 * log, log1p, log2, rsqrt, sin, cos, atan, tanh, logistic, erf) are float32 code: float32
 * polynomials (near-minimax fits, fused multiply-adds through MX_FMAF), int32 bit manipulation
 * for exponents, so a `#pragma omp simd` loop runs 8 lanes per AVX2 register; their measured
 * bounds (<= 1.65 ulp) are stated at each.  Two use one double step: sin/cos reduce the argument
 * in double (accurate for |x| < 2^50), pow evaluates short double kernels sized for a float
 * result (0.5 ulp).  The remaining float functions evaluate the double kernels on the widened
 * argument and round once: accurate to ~0.5 ulp, float subnormals handled exactly.
 *
 * Accuracy (max error |y - exact| / ulp(exact), so 0.5 = correctly rounded, measured by
 * benchmarks/cmath_ulp.py: float32 on 2e6 points per function against float64 NumPy/SciPy,
 * float64 on 6e3 points against mpmath at 40 digits; log-uniform samples over the whole exponent
 * range clipped to the domain, uniform samples in a core interval, and the special values) is
 * stated next to each function as "f32 / f64".  Special values follow C99 Annex F and NumPy; where morphax's NumPy reference
 * (morphax/_src/prims/) differs from C99 (digamma poles), the reference wins.
 *
 * Helpers at the end: float16/bfloat16 <-> float32/float64 with round-to-nearest-even (as NumPy
 * and ml_dtypes), integer division/remainder/shifts with JAX semantics and no UB, and
 * float -> integer conversions that saturate and map nan to 0 (morphax convert_element_type).
 */
#ifndef MORPHAX_MATHLIB_H
#define MORPHAX_MATHLIB_H

#include <stdint.h>
#include <string.h>

#if defined(__GNUC__)
#define MX_INLINE static inline __attribute__((always_inline, unused))
#else
#define MX_INLINE static inline
#endif

#if defined(__FP_FAST_FMA)
#define MX_HAVE_FMA 1
#define MX_FMA(a, b, c) __builtin_fma((a), (b), (c))
#else
#define MX_HAVE_FMA 0
#define MX_FMA(a, b, c) ((a) * (b) + (c))
#endif

/* ------------------------------------------------------------------------------------------- */
/* Bits. */

MX_INLINE uint64_t mx__u64(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
MX_INLINE double mx__f64(uint64_t u) { double x; memcpy(&x, &u, 8); return x; }
MX_INLINE uint32_t mx__u32(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
MX_INLINE float mx__f32(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

#define MX__SHIFTER 0x1.8p52
#define MX__NAN (mx__f64(0x7ff8000000000000ULL))
#define MX__INF (mx__f64(0x7ff0000000000000ULL))
#define MX__NANF (mx__f32(0x7fc00000U))
#define MX__INFF (mx__f32(0x7f800000U))

MX_INLINE double mx__fabs(double x) { return __builtin_fabs(x); }
MX_INLINE double mx__copysign(double x, double s) { return __builtin_copysign(x, s); }
/* Round to nearest integer (ties to even) for |x| < 2^51. */
MX_INLINE double mx__rint(double x) { return (x + MX__SHIFTER) - MX__SHIFTER; }
/* Low bits of the result hold rint(x) in two's complement (|x| < 2^51). */
MX_INLINE uint64_t mx__rint_bits(double x) { return mx__u64(x + MX__SHIFTER); }
/* 2^k for an integer-valued double k in [-1022, 1023]. */
MX_INLINE double mx__pow2(double k) { return mx__f64((mx__rint_bits(k) + 1023u) << 52); }
/* exponent field of a finite non-negative double, as a double (no int->double conversion) */
MX_INLINE double mx__expfield(uint64_t u) {
  return mx__f64(0x4330000000000000ULL | (u >> 52)) - 0x1p52;
}

/* a*b = hi + *lo exactly. */
MX_INLINE double mx__two_prod(double a, double b, double *lo) {
  double p = a * b;
#if MX_HAVE_FMA
  *lo = __builtin_fma(a, b, -p);
#else
  double ca = 134217729.0 * a, cb = 134217729.0 * b;
  double ah = ca - (ca - a), al = a - ah, bh = cb - (cb - b), bl = b - bh;
  *lo = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
#endif
  return p;
}

/* ------------------------------------------------------------------------------------------- */
/* Constants (binary digits of the named numbers; *_HI has trailing zeros where noted). */

#define MX__LOG2E 0x1.71547652b82fep+0
#define MX__LN2 0x1.62e42fefa39efp-1
#define MX__LN2_HI 0x1.62e42feep-1 /* 32 bits: k * LN2_HI exact for |k| < 2^21 */
#define MX__LN2_LO 0x1.a39ef35793c76p-33
#define MX__PI_HI 0x1.921fb54442d18p+1
#define MX__PI_LO 0x1.1a62633145c07p-53
#define MX__PIO2_HI 0x1.921fb54442d18p+0
#define MX__PIO2_LO 0x1.1a62633145c07p-54
#define MX__PIO4_HI 0x1.921fb54442d18p-1
#define MX__PIO4_LO 0x1.1a62633145c07p-55
#define MX__2_PI 0x1.45f306dc9c883p-1

/* ------------------------------------------------------------------------------------------- */
/* Exponentials. */

/* e^r - 1 for |r| <= 0.35: Taylor series to degree 14 (truncation < 2^-57 relative). */
MX_INLINE double mx__expm1_poly(double r) {
  double p = 0x1.93974a8c07c9dp-37; /* 1/14! */
  p = p * r + 0x1.6124613a86d09p-33;
  p = p * r + 0x1.1eed8eff8d898p-29;
  p = p * r + 0x1.ae64567f544e4p-26;
  p = p * r + 0x1.27e4fb7789f5cp-22;
  p = p * r + 0x1.71de3a556c734p-19;
  p = p * r + 0x1.a01a01a01a01ap-16;
  p = p * r + 0x1.a01a01a01a01ap-13;
  p = p * r + 0x1.6c16c16c16c17p-10;
  p = p * r + 0x1.1111111111111p-7;
  p = p * r + 0x1.5555555555555p-5;
  p = p * r + 0x1.5555555555555p-3;
  p = p * r + 0.5; /* 1/2! */
  return r + (r * r) * p;
}

/* e^(x + xlo) * 2^kbias for x already clamped to [-760, 720] (|kbias| <= 2). The power of two
 * is applied in two steps so that results near overflow and in the subnormal range are
 * formed with a single rounding. */
MX_INLINE double mx__exp_k(double x, double xlo, double kbias) {
  double kd = mx__rint(x * MX__LOG2E);
  double r = (x - kd * MX__LN2_HI) - kd * MX__LN2_LO + xlo;
  double p = 1.0 + mx__expm1_poly(r);
  kd += kbias;
  double k1 = mx__rint(kd * 0.5), k2 = kd - k1;
  return (p * mx__pow2(k1)) * mx__pow2(k2);
}

/* Branch-free select through a bit mask. Plain ?: with a constant arm lets gcc thread jumps
 * (fold everything after the select into separate constant paths), which then blocks
 * if-conversion and vectorization when the argument's range is known (float -> double). */
MX_INLINE double mx__sel(int c, double a, double b) {
  uint64_t m = (uint64_t)0 - (uint64_t)(c != 0);
  return mx__f64((mx__u64(a) & m) | (mx__u64(b) & ~m));
}

MX_INLINE float mx__self(int c, float a, float b) {
  uint32_t m = (uint32_t)0 - (uint32_t)(c != 0);
  return mx__f32((mx__u32(a) & m) | (mx__u32(b) & ~m));
}

/* float32 helpers.  MX_FMAF is fused where the target has a fast fmaf (__FP_FAST_FMAF, e.g.
 * -march=native on x86-64-v3), else a plain multiply-add: the float kernels below are written
 * so that their bounds hold either way except where noted (the fused form is what is measured). */
#if defined(__FP_FAST_FMAF)
#define MX_FMAF(a, b, c) __builtin_fmaf((a), (b), (c))
#else
#define MX_FMAF(a, b, c) ((a) * (b) + (c))
#endif
#define MX__SHIFTERF 0x1.8p23f
/* Round to nearest integer (ties to even) for |x| < 2^22. */
MX_INLINE float mx__rintf(float x) { return (x + MX__SHIFTERF) - MX__SHIFTERF; }
/* 2^k for an integer-valued float k in [-126, 127] (integer add and shift on the bits). */
MX_INLINE float mx__pow2f(float k) { return mx__f32((mx__u32(k + MX__SHIFTERF) + 127u) << 23); }
/* a*b = hi + *lo exactly (Dekker's split without a fused multiply-add). */
MX_INLINE float mx__two_prodf(float a, float b, float *lo) {
  float p = a * b;
#if defined(__FP_FAST_FMAF)
  *lo = __builtin_fmaf(a, b, -p);
#else
  float ca = 4097.0f * a, cb = 4097.0f * b;
  float ah = ca - (ca - a), al = a - ah, bh = cb - (cb - b), bl = b - bh;
  *lo = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
#endif
  return p;
}
#define MX__LN2F_HI 0x1.62e4p-1f /* 16 bits: k * LN2F_HI exact for |k| < 2^8 */
#define MX__LN2F_LO 0x1.7f7d1cp-20f
#define MX__LOG2EF 0x1.715476p+0f
#define MX__LOG2EF_LO 0x1.4ae0c0p-26f

/* e^r for |r| <= 0.35 (float): 1 + r Q(r), Q a near-minimax degree-5 fit (relative error of
 * e^r 2^-28 before rounding); the last step is one fused multiply-add. */
MX_INLINE float mx__expf_poly(float r) {
  float p = 0x1.6a4b98p-10f;
  p = MX_FMAF(p, r, 0x1.123e5cp-7f);
  p = MX_FMAF(p, r, 0x1.5558bap-5f);
  p = MX_FMAF(p, r, 0x1.55548cp-3f);
  p = MX_FMAF(p, r, 0x1.fffffcp-2f);
  p = MX_FMAF(p, r, 1.0f);
  return MX_FMAF(p, r, 1.0f);
}

/* e^x (float) for x in [-104, 89] or nan: x = k ln2 + r with a 2-constant Cody-Waite split (the
 * first step is exact), e^r by mx__expf_poly, and 2^k applied in two steps (both factors normal)
 * so that subnormal results and results next to overflow are rounded once. */
MX_INLINE float mx__expf_k(float x) {
  float kf = mx__rintf(x * MX__LOG2EF);
  float r = x - kf * MX__LN2F_HI; /* exact */
  r = MX_FMAF(-kf, MX__LN2F_LO, r);
  float p = mx__expf_poly(r);
  float k1 = mx__rintf(kf * 0.5f), k2 = kf - k1;
  return (p * mx__pow2f(k1)) * mx__pow2f(k2);
}

MX_INLINE double mx__clamp_exp_arg(double x) {
  double xc = mx__sel(x < -760.0, -760.0, x); /* nan stays nan */
  return mx__sel(xc > 720.0, 720.0, xc);
}

/* e^x.  max error 0.87 / 0.96 ulp (f32 / f64) */
MX_INLINE double mx_exp(double x) { return mx__exp_k(mx__clamp_exp_arg(x), 0.0, 0.0); }
/* float32 e^x in float32 arithmetic.  max error 0.87 ulp; 0 below -103.97, inf above 88.72 */
MX_INLINE float mx_expf(float x) {
  float xc = mx__self(x < -104.0f, -104.0f, x); /* nan stays nan */
  xc = mx__self(xc > 89.0f, 89.0f, xc);
  return mx__expf_k(xc);
}

/* e^(hi + lo) for a double-double argument (|lo| <= ulp(hi)). */
MX_INLINE double mx__exp_dd(double hi, double lo) {
  double hc = mx__clamp_exp_arg(hi);
  lo = mx__sel(hc == hi, lo, 0.0); /* clamped (or inf): lo is meaningless */
  return mx__exp_k(hc, lo, 0.0);
}

/* 2^x.  max error 0.77 / 0.96 ulp; exact at integers */
MX_INLINE double mx_exp2(double x) {
  double xc = mx__sel(x < -1100.0, -1100.0, x);
  xc = mx__sel(xc > 1100.0, 1100.0, xc);
  double kd = mx__rint(xc);
  double f = xc - kd; /* exact, |f| <= 1/2 */
  double lo;
  double r = mx__two_prod(f, MX__LN2, &lo);
  lo += f * 0x1.abc9e3b39803fp-56; /* ln2 - LN2 */
  /* |r| <= 0.347: reuse the e^r kernel */
  double p = 1.0 + (mx__expm1_poly(r) + lo * (1.0 + r));
  double k1 = mx__rint(kd * 0.5), k2 = kd - k1;
  return (p * mx__pow2(k1)) * mx__pow2(k2);
}
/* float32 2^x: x = k + f, |f| <= 1/2, 2^f = 1 + f P(f) (near-minimax degree 6, relative error
 * 2^-28) with a final fused multiply-add.  max error 0.77 ulp; exact at integers */
MX_INLINE float mx_exp2f(float x) {
  float xc = mx__self(x < -152.0f, -152.0f, x);
  xc = mx__self(xc > 129.0f, 129.0f, xc);
  float kf = mx__rintf(xc);
  float f = xc - kf; /* exact */
  float p = 0x1.417834p-13f;
  p = MX_FMAF(p, f, 0x1.5f0f76p-10f);
  p = MX_FMAF(p, f, 0x1.3b2ddcp-7f);
  p = MX_FMAF(p, f, 0x1.c6af72p-5f);
  p = MX_FMAF(p, f, 0x1.ebfbdcp-3f);
  p = MX_FMAF(p, f, 0x1.62e430p-1f);
  p = MX_FMAF(p, f, 1.0f);
  float k1 = mx__rintf(kf * 0.5f), k2 = kf - k1;
  return (p * mx__pow2f(k1)) * mx__pow2f(k2);
}

/* e^x - 1.  max error 1.44 / 1.67 ulp; expm1(-0) = -0 */
MX_INLINE double mx_expm1(double x) {
  double xc = mx__sel(x < -60.0, -60.0, x);
  xc = mx__sel(xc > 720.0, 720.0, xc);
  double kd = mx__rint(xc * MX__LOG2E);
  double r = (xc - kd * MX__LN2_HI) - kd * MX__LN2_LO;
  double em = mx__expm1_poly(r);
  /* k < 60: 2^k em + (2^k - 1), where 2^k - 1 is exact for k >= -53.  Otherwise
   * (1 + em) 2^k (the -1 is below half an ulp), split to stay finite up to overflow. */
  double ks = mx__sel(kd < 60.0, kd, 0.0);
  double s = mx__pow2(ks);
  double small = em * s + (s - 1.0);
  double kb = mx__sel(kd > 1000.0, 20.0, 0.0);
  double big = ((1.0 + em) * mx__pow2(kd - kb)) * mx__pow2(kb);
  double res = mx__sel(kd < 60.0, small, big);
  return mx__sel(x == 0.0, x, res);
}
/* float32 e^x - 1: x = k ln2 + r, e^r - 1 = r + r^2 P(r) (near-minimax degree 7, relative error
 * 2^-31), then 2^k em + (2^k - 1) = 2 (s em + (s - 1/2)) with s = 2^(k-1) (normal for every k
 * used; s - 1/2 exact for k <= 24, negligible beyond).  max error 1.44 ulp; expm1(-0) = -0 */
MX_INLINE float mx_expm1f(float x) {
  float xc = mx__self(x < -30.0f, -30.0f, x);
  xc = mx__self(xc > 89.0f, 89.0f, xc);
  float kf = mx__rintf(xc * MX__LOG2EF);
  float r = xc - kf * MX__LN2F_HI; /* exact */
  r = MX_FMAF(-kf, MX__LN2F_LO, r);
  float p = 0x1.9e8f4ep-13f;
  p = MX_FMAF(p, r, 0x1.6d4050p-10f);
  p = MX_FMAF(p, r, 0x1.1112cep-7f);
  p = MX_FMAF(p, r, 0x1.5554f4p-5f);
  p = MX_FMAF(p, r, 0x1.555554p-3f);
  p = MX_FMAF(p, r, 0.5f);
  float em = MX_FMAF(r * r, p, r);
  float s = mx__pow2f(kf - 1.0f);
  float res = 2.0f * MX_FMAF(em, s, s - 0.5f);
  return mx__self(__builtin_fabsf(x) < 0x1p-25f, x, res); /* e^x - 1 rounds to x there; -0 */
}

/* ------------------------------------------------------------------------------------------- */
/* Logarithms. */

/* Split a positive normal finite x as 2^e (1 + f), 1 + f in [sqrt(1/2), sqrt(2)). */
MX_INLINE double mx__log_split(double x, double *f) {
  uint64_t t = mx__u64(x) + (0x3ff0000000000000ULL - 0x3fe6a09e667f3bcdULL);
  *f = mx__f64((t & 0x000fffffffffffffULL) + 0x3fe6a09e667f3bcdULL) - 1.0;
  return mx__expfield(t) - 1023.0;
}

/* 2 atanh(s) - 2 s = 2 s^3/3 + 2 s^5/5 + ... as z * (2/3 + z (2/5 + ...)), z = s^2 <= 0.0295;
 * truncated after 2 z^10/21 (remainder < 2^-60 relative). */
MX_INLINE double mx__log_series(double z) {
  double p = 0x1.8618618618618p-4; /* 2/21 */
  p = p * z + 0x1.af286bca1af28p-4;  /* 2/19 */
  p = p * z + 0x1.e1e1e1e1e1e1ep-4;  /* 2/17 */
  p = p * z + 0x1.1111111111111p-3;  /* 2/15 */
  p = p * z + 0x1.3b13b13b13b14p-3;  /* 2/13 */
  p = p * z + 0x1.745d1745d1746p-3;  /* 2/11 */
  p = p * z + 0x1.c71c71c71c71cp-3;  /* 2/9 */
  p = p * z + 0x1.2492492492492p-2;  /* 2/7 */
  p = p * z + 0x1.999999999999ap-2;  /* 2/5 */
  p = p * z + 0x1.5555555555555p-1;  /* 2/3 */
  return p * z;
}

/* log of a positive normal finite x (no special values). */
MX_INLINE double mx__log_pos(double x) {
  double f;
  double e = mx__log_split(x, &f);
  double s = f / (2.0 + f);
  double u = mx__log_series(s * s);
  /* log(1 + f) = 2 atanh(s) = f - s (f - u) since 2 s = f - s f */
  return e * MX__LN2_HI + (f - (s * (f - u) - e * MX__LN2_LO));
}

/* log x.  max error 0.82 / 0.76 ulp */
MX_INLINE double mx_log(double x) {
  int sub = x < 0x1p-1022;
  double xs = mx__sel(sub, x * 0x1p54, x);
  double r = mx__log_pos(xs) - mx__sel(sub, 54.0 * MX__LN2_HI, 0.0) - mx__sel(sub, 54.0 * MX__LN2_LO, 0.0);
  r = mx__sel(x == 0.0, -MX__INF, r);
  r = mx__sel(x < 0.0, MX__NAN, r);
  return mx__sel(x == MX__INF | x != x, x + x, r);
}
/* float32 log kernel: for a positive finite x (subnormals included), x = 2^e (1 + f) with
 * 1 + f in [sqrt(1/2), sqrt(2)); returns e and sets *f and *lo with log(1 + f) = f + *lo:
 * s = f / (2 + f), log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)), R a near-minimax degree-4 fit of
 * 2 atanh(s)/s - 2 (error 2^-35 relative). */
MX_INLINE float mx__logf_split(float x, float *f) {
  int sub = x < 0x1p-126f;
  float xs = mx__self(sub, x * 0x1p23f, x);
  uint32_t t = mx__u32(xs) + (0x3f800000u - 0x3f3504f3u);
  *f = mx__f32((t & 0x007fffffu) + 0x3f3504f3u) - 1.0f; /* exact */
  return (float)((int32_t)(t >> 23) - 127) - mx__self(sub, 23.0f, 0.0f);
}
MX_INLINE float mx__logf_lo(float ff) {
  float s = ff / (2.0f + ff);
  float z = s * s;
  float R = 0x1.f10662p-3f;
  R = MX_FMAF(R, z, 0x1.23d4d4p-2f);
  R = MX_FMAF(R, z, 0x1.999c24p-2f);
  R = MX_FMAF(R, z, 0x1.555554p-1f);
  R = R * z;
  float hfsq = 0.5f * ff * ff;
  return MX_FMAF(s, hfsq + R, -hfsq);
}
MX_INLINE float mx__logf_k(float x, float *f, float *lo) {
  float e = mx__logf_split(x, f);
  *lo = mx__logf_lo(*f);
  return e;
}

/* float32 log x.  max error 0.82 ulp */
MX_INLINE float mx_logf(float x) {
  float f, lo;
  float e = mx__logf_k(x, &f, &lo);
  float r = MX_FMAF(e, MX__LN2F_HI, f + MX_FMAF(e, MX__LN2F_LO, lo)); /* e LN2F_HI exact */
  r = mx__self(x == 0.0f, -MX__INFF, r);
  r = mx__self(x < 0.0f, MX__NANF, r);
  return mx__self((x == MX__INFF) | (x != x), x + x, r);
}

/* log x = hi + *lo to about 2^-64 relative, for positive finite x (subnormals included). */
MX_INLINE double mx__log_dd(double x, double *lo) {
  int sub = x < 0x1p-1022;
  double xs = sub ? x * 0x1p54 : x;
  double f;
  double e = mx__log_split(xs, &f) - (sub ? 54.0 : 0.0);
  double d = 2.0 + f, dl = (2.0 - d) + f; /* 2 + f = d + dl exactly */
  double s = f / d;
  double pl;
  double p = mx__two_prod(s, d, &pl);
  double sl = (((f - p) - pl) - s * dl) / d; /* s + sl = f / (2 + f) to ~2^-105 */
  double t = s * mx__log_series(s * s);      /* 2 atanh(s) - 2 s */
  double a = e * MX__LN2_HI, b = 2.0 * s;    /* a exact */
  double hi = a + b;
  double bb = hi - a;
  double err = (a - (hi - bb)) + (b - bb); /* two-sum */
  double l = err + (2.0 * sl + t + e * MX__LN2_LO);
  double h = hi + l;
  *lo = l - (h - hi);
  return h;
}

/* log(1 + x).  max error 0.90 / 1.26 ulp */
MX_INLINE double mx_log1p(double x) {
  double u = 1.0 + x;
  double c = x - (u - 1.0); /* the rounding error of 1 + x (exact) */
  double uu = mx__sel(u > 0x1p-1022 & u < MX__INF, u, 1.0);
  double r = mx__log_pos(uu) + c / u;
  r = mx__sel(x == -1.0, -MX__INF, r);
  r = mx__sel(x < -1.0, MX__NAN, r);
  r = mx__sel(x == MX__INF, x, r);
  r = mx__sel(x != x, x + x, r);
  return mx__sel(x == 0.0, x, r);
}
/* float32 log(1 + x): u = 1 + x rounded, c = 1 + x - u exactly; log1p x = log u + c/u by the
 * log kernel, which takes f = x itself (exact) when u is in [sqrt(1/2), sqrt(2)).
 * max error 0.90 ulp */
MX_INLINE float mx_log1pf(float x) {
  float u = 1.0f + x;
  float c = x - (u - 1.0f); /* the rounding error of 1 + x (exact for |x| < 2^24) */
  float uu = mx__self((u > 0.0f) & (u < MX__INFF), u, 1.0f);
  float f;
  float e = mx__logf_split(uu, &f);
  int e0 = e == 0.0f;
  float fx = mx__self(e0, x, f); /* f + c = x exactly when e = 0 */
  float lx = mx__logf_lo(fx) + mx__self(e0, 0.0f, c / uu);
  float r = MX_FMAF(e, MX__LN2F_HI, fx + MX_FMAF(e, MX__LN2F_LO, lx));
  r = mx__self(x == -1.0f, -MX__INFF, r);
  r = mx__self(x < -1.0f, MX__NANF, r);
  r = mx__self(x == MX__INFF, x, r);
  r = mx__self(x != x, x + x, r);
  return mx__self(x == 0.0f, x, r);
}

/* log2 x.  max error 1.18 / 0.87 ulp; exact at powers of two */
MX_INLINE double mx_log2(double x) {
  int sub = x < 0x1p-1022;
  double xs = sub ? x * 0x1p54 : x;
  double f;
  double e = mx__log_split(xs, &f) - (sub ? 54.0 : 0.0);
  double s = f / (2.0 + f);
  double u = mx__log_series(s * s);
  double h = s * (f - u);           /* log(1+f) = f - h */
  double lnm_hi = f - h, lnm_lo = (f - lnm_hi) - h;
  double ph, pl;
  ph = mx__two_prod(lnm_hi, MX__LOG2E, &pl);
  pl += lnm_lo * MX__LOG2E + lnm_hi * 0x1.777d0ffda0d24p-56;
  double r = e + (ph + pl);
  r = x == 0.0 ? -MX__INF : r;
  r = x < 0.0 ? MX__NAN : r;
  return (x == MX__INF || x != x) ? x + x : r;
}
/* float32 log2 x = e + (f + lo) log2(e), f log2(e) as an exact product plus corrections.
 * max error 1.18 ulp; exact at powers of two */
MX_INLINE float mx_log2f(float x) {
  float f, lo;
  float e = mx__logf_k(x, &f, &lo);
  float pl, ph = mx__two_prodf(f, MX__LOG2EF, &pl);
  pl += MX_FMAF(f, MX__LOG2EF_LO, lo * MX__LOG2EF);
  float r = e + (ph + pl);
  r = mx__self(x == 0.0f, -MX__INFF, r);
  r = mx__self(x < 0.0f, MX__NANF, r);
  return mx__self((x == MX__INFF) | (x != x), x + x, r);
}

/* ------------------------------------------------------------------------------------------- */
/* Power. */

/* C99 Annex F special cases of pow around r = exp(y log|x|). */
MX_INLINE double mx__pow_fix(double x, double y, double r) {
  double ax = mx__fabs(x), ay = mx__fabs(y);
  /* integer / odd tests without conversions: ay + 2^52 rounds ay to an integer for ay < 2^52 */
  double t = ay + 0x1p52;
  int yint = (ay >= 0x1p52) | ((t - 0x1p52) == ay);
  uint64_t oddbit = mx__u64(mx__sel(ay < 0x1p52, t, ay));
  int yodd = yint & (ay < 0x1p53) & (int)(oddbit & 1u);
  double res = mx__sel(yodd & (mx__u64(x) >> 63 != 0), -r, r);
  res = mx__sel((x < 0.0) & (x > -MX__INF) & !yint, MX__NAN, res);
  res = mx__sel(ax == 1.0 & ay == MX__INF, 1.0, res);
  res = mx__sel(x == 1.0 | y == 0.0, 1.0, res);
  return res;
}

/* x^y.  max error 0.50 / 1.01 ulp (f64 measured with |y log x| up to 745); C99 special cases:
 * pow(x, +-0) = 1 even for nan x, pow(1, y) = 1, pow(-1, +-inf) = 1, pow(x<0, non-integer) =
 * nan, odd integer powers keep the sign of x (also for -0 and -inf). */
MX_INLINE double mx_pow(double x, double y) {
  double ax = mx__fabs(x);
  double axs = mx__sel(ax > 0.0 & ax < MX__INF, ax, 1.0);
  double lo;
  double hi = mx__log_dd(axs, &lo);
  hi = mx__sel(ax == 0.0, -MX__INF, hi);
  hi = mx__sel(ax == MX__INF, MX__INF, hi);
  hi = mx__sel(ax != ax, ax, hi);
  double pl;
  double ph = mx__two_prod(y, hi, &pl);
  pl += y * lo;
  return mx__pow_fix(x, y, mx__exp_dd(ph, pl));
}
/* float32 x^y in double arithmetic with short kernels sized for a float result:
 * log2|x| = e + log2(1 + f) (x split on its float bits, exact; s = f/(2 + f) and a degree-5
 * near-minimax series in s^2, relative error 2^-44), t = y log2|x| clamped to [-160, 140], and
 * 2^t = 2^k 2^g, |g| <= 1/2, by a degree-7 near-minimax polynomial (relative error 2^-34); the
 * double result rounds once to float (subnormal results included).  max error 0.50 ulp;
 * C99 special cases as mx_pow. */
MX_INLINE float mx_powf(float x, float y) {
  float ax = __builtin_fabsf(x);
  int sub = ax < 0x1p-126f;
  float axs = mx__self(sub, ax * 0x1p23f, ax);
  uint32_t t32 = mx__u32(axs) + (0x3f800000u - 0x3f3504f3u);
  float ef = (float)((int32_t)(t32 >> 23) - 127) - mx__self(sub, 23.0f, 0.0f);
  double f = (double)(mx__f32((t32 & 0x007fffffu) + 0x3f3504f3u) - 1.0f); /* exact */
  double sd = f / (2.0 + f);
  double z = sd * sd;
  double R = 0x1.915ee986ecdf7p-3;
  R = R * z + 0x1.c62657280bf7bp-3;
  R = R * z + 0x1.24941f43c06c5p-2;
  R = R * z + 0x1.9999968c3beefp-2;
  R = R * z + 0x1.5555555627e0bp-1;
  double l2 = (double)ef + (sd * (2.0 + R * z)) * 0x1.71547652b82fep+0; /* log2|x| */
  double td = (double)y * l2;
  td = mx__sel(td < -160.0, -160.0, td); /* nan stays nan */
  td = mx__sel(td > 140.0, 140.0, td);
  double kd = mx__rint(td);
  double g = td - kd;
  double p = 0x1.fde218fc8a8d2p-17;
  p = p * g + 0x1.445f3a3533103p-13;
  p = p * g + 0x1.5d8a9069166c0p-10;
  p = p * g + 0x1.3b29f07c511f0p-7;
  p = p * g + 0x1.c6b08aafc338fp-5;
  p = p * g + 0x1.ebfbe07a98186p-3;
  p = p * g + 0x1.62e42ff0ebe0cp-1;
  p = p * g + 1.0;
  double r = p * mx__pow2(kd);
  /* x = 0, inf, nan: log2|x| = -inf, inf, nan */
  r = mx__sel(ax == 0.0f, mx__sel(y < 0.0f, MX__INF, 0.0), r);
  r = mx__sel(ax == MX__INFF, mx__sel(y < 0.0f, 0.0, MX__INF), r);
  /* |x| != 1 with y = +-inf: exp of +-inf */
  r = mx__sel((y == MX__INFF) | (y == -MX__INFF), mx__sel((ax > 1.0f) == (y > 0.0f), MX__INF, 0.0), r);
  r = mx__sel((x != x) | (y != y), MX__NAN, r);
  return (float)mx__pow_fix((double)x, (double)y, r);
}

/* ------------------------------------------------------------------------------------------- */
/* Roots. */

MX_INLINE double mx_sqrt(double x) { return __builtin_sqrt(x); }
MX_INLINE float mx_sqrtf(float x) { return __builtin_sqrtf(x); }

/* 1/sqrt(x).  max error 1.49 / 1.42 ulp; rsqrt(-0) = -inf as the reference 1/sqrt(x) */
MX_INLINE double mx_rsqrt(double x) { return 1.0 / __builtin_sqrt(x); }
/* float32: sqrt and divide in float32, two roundings (max error 1.49 ulp) */
MX_INLINE float mx_rsqrtf(float x) { return 1.0f / __builtin_sqrtf(x); }

/* Real cube root.  max error 0.50 / 0.50 ulp */
MX_INLINE double mx_cbrt(double x) {
  double a = mx__fabs(x);
  int sub = a < 0x1p-1022;
  double as = sub ? a * 0x1p54 : a;
  uint64_t u = mx__u64(as);
  double e = mx__expfield(u) - 1023.0 - (sub ? 54.0 : 0.0);
  double m = mx__f64((u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL); /* [1, 2) */
  double q = mx__rint((e - 1.0) * (1.0 / 3.0)); /* e = 3 q + rem, rem in {0, 1, 2} */
  double rem = e - 3.0 * q;
  double mm = m * (rem == 0.0 ? 1.0 : (rem == 1.0 ? 2.0 : 4.0)); /* [1, 8) */
  /* cbrt on [1, 8]: quadratic start (rel. error < 4.7e-2), two Halley steps, a Newton touch-up */
  double y = 0x1.a443fd3ba74d3p-1 + mm * (0x1.e63ee82635f80p-3 + mm * -0x1.7be45638709edp-7);
  double y3 = y * y * y;
  y = y * (y3 + 2.0 * mm) / (2.0 * y3 + mm);
  y3 = y * y * y;
  y = y * (y3 + 2.0 * mm) / (2.0 * y3 + mm);
  double y2l, y2 = mx__two_prod(y, y, &y2l);
  double y3l, y3h = mx__two_prod(y2, y, &y3l);
  double resid = ((mm - y3h) - y3l) - y2l * y;
  y = y + resid / (3.0 * y2);
  double r = mx__copysign(y * mx__pow2(q), x);
  return (a == 0.0 || a == MX__INF || x != x) ? x + x : r;
}
MX_INLINE float mx_cbrtf(float x) { return (float)mx_cbrt((double)x); }

/* ------------------------------------------------------------------------------------------- */
/* Trigonometric functions. */

/* sin r for |r| <= pi/4 (+ a little): Taylor to degree 17 (truncation < 2^-60 relative). */
MX_INLINE double mx__sin_poly(double r) {
  double z = r * r;
  double p = 0x1.952c77030ad4ap-49; /* 1/17! */
  p = p * z - 0x1.ae7f3e733b81fp-41;
  p = p * z + 0x1.6124613a86d09p-33;
  p = p * z - 0x1.ae64567f544e4p-26;
  p = p * z + 0x1.71de3a556c734p-19;
  p = p * z - 0x1.a01a01a01a01ap-13;
  p = p * z + 0x1.1111111111111p-7;
  p = p * z - 0x1.5555555555555p-3; /* -1/3! */
  return r + (r * z) * p;
}

/* cos r for |r| <= pi/4 (+ a little): Taylor to degree 18. */
MX_INLINE double mx__cos_poly(double r) {
  double z = r * r;
  double p = -0x1.6827863b97d97p-53; /* -1/18! */
  p = p * z + 0x1.ae7f3e733b81fp-45;
  p = p * z - 0x1.93974a8c07c9dp-37;
  p = p * z + 0x1.1eed8eff8d898p-29;
  p = p * z - 0x1.27e4fb7789f5cp-22;
  p = p * z + 0x1.a01a01a01a01ap-16;
  p = p * z - 0x1.6c16c16c16c17p-10;
  p = p * z + 0x1.5555555555555p-5; /* 1/4! */
  double hz = 0.5 * z, w = 1.0 - hz;
  return w + (((1.0 - w) - hz) + (z * z) * p);
}

/* x = k pi/2 + r, |r| <= pi/4 (+ rounding); *q = k mod 4.  With an FMA the three-part split
 * of pi/2 is exact in its first step and r keeps ~2^-53 relative accuracy for |x| < 2^50
 * (the closest a double comes to a multiple of pi/2 there is far above 2^-70); without FMA the
 * 33-bit Cody-Waite split is exact for |x| < 2^20 * pi/2 and degrades beyond. */
MX_INLINE double mx__trig_reduce(double x, uint64_t *q) {
  double kd = mx__rint(x * MX__2_PI);
  *q = mx__rint_bits(kd) & 3u;
#if MX_HAVE_FMA
  double r = __builtin_fma(-kd, 0x1.921fb54442d18p+0, x);
  r = __builtin_fma(-kd, 0x1.1a62633145c07p-54, r);
  r = __builtin_fma(-kd, -0x1.f1976b7ed8fbcp-110, r);
#else
  double r = x - kd * 0x1.921fb544p+0;
  r = r - kd * 0x1.0b4611a6p-34;
  r = r - kd * 0x1.3198a2ep-69;
  r = r - kd * 0x1.b839a252049c1p-104;
#endif
  return r;
}

/* Arguments beyond this are not reduced accurately (results stay in [-1, 1]). */
#define MX_TRIG_MAX 0x1p50

MX_INLINE double mx__clamp1(double v) {
  v = mx__sel(v > 1.0, 1.0, v);
  v = mx__sel(v < -1.0, -1.0, v);
  return mx__sel(v == v, v, 0.0);
}

/* sin x.  max error 1.62 / 1.23 ulp for |x| < 2^50 (~1.1e15) with FMA (|x| < 1.6e6 without);
 * beyond: no accuracy (result in [-1, 1]); nan for +-inf; sin(-0) = -0 */
MX_INLINE double mx_sin(double x) {
  uint64_t q;
  double r = mx__trig_reduce(x, &q);
  double s = mx__sin_poly(r), c = mx__cos_poly(r);
  double v = (q & 1u) ? c : s;
  v = (q & 2u) ? -v : v;
  double d = x - x; /* nan for inf and nan, else 0 */
  v = mx__sel(x == 0.0, x, mx__clamp1(v)); /* sin(-0) = -0 */
  return mx__sel(d == d, v, d);
}
/* float32 sin / cos reduction, in double on the widened argument (one wide step; a float32
 * Cody-Waite split would need a second, wide path for large |x| anyway): x = (k + h) pi + r with
 * h = 0 (sin) or 1/2 (cos), |r| <= pi/2, by a three-part fused split of pi that is exact in its
 * first step; sin(x) = (-1)^k sin(r) and cos(x) = (-1)^(k+1) sin(r), so the sign is folded into r
 * and r rounded to float (the only float32 rounding before the polynomial).  Arguments with
 * |x| >= MX_TRIG_MAX reduce to 0 (no accuracy there, as for float64). */
MX_INLINE float mx__trigf_reduce(float x, double h) {
  float xc = mx__self(__builtin_fabsf(x) < (float)MX_TRIG_MAX, x, 0.0f);
  double xd = (double)xc;
  double kd = mx__rint(xd * 0x1.45f306dc9c883p-2 - h) + h; /* x / pi */
#if MX_HAVE_FMA
  double r = __builtin_fma(-kd, 0x1.921fb54442d18p+1, xd);
  r = __builtin_fma(-kd, 0x1.1a62633145c07p-53, r);
  r = __builtin_fma(-kd, -0x1.f1976b7ed8fbcp-109, r);
#else
  double r = xd - kd * 0x1.921fb544p+1;
  r = r - kd * 0x1.0b4611a6p-33;
  r = r - kd * 0x1.3198a2ep-68;
  r = r - kd * 0x1.b839a252049c1p-103;
#endif
  double kh = kd - h;                         /* the integer k */
  int odd = (kh - 2.0 * mx__rint(kh * 0.5)) != 0.0;
  return (float)mx__sel(odd != (h != 0.0), -r, r);
}

/* sin r for |r| <= pi/2 (float): r + r z P(z), P a near-minimax degree-4 fit (relative error
 * 2^-31). */
MX_INLINE float mx__sinf_poly(float r) {
  float z = r * r;
  float p = -0x1.b6219ap-26f;
  p = MX_FMAF(p, z, 0x1.72cdd2p-19f);
  p = MX_FMAF(p, z, -0x1.a023ccp-13f);
  p = MX_FMAF(p, z, 0x1.111136p-7f);
  p = MX_FMAF(p, z, -0x1.555556p-3f);
  return MX_FMAF(r * z, p, r);
}

/* float32 sin x.  max error 1.62 ulp for |x| < 2^50 (measured up to there), same range and
 * special values as mx_sin */
MX_INLINE float mx_sinf(float x) {
  float v = mx__sinf_poly(mx__trigf_reduce(x, 0.0));
  float d = x - x; /* nan for inf and nan, else 0 */
  v = mx__self(x == 0.0f, x, v); /* sin(-0) = -0 */
  return mx__self(d == d, v, d);
}

/* cos x.  max error 1.65 / 1.34 ulp, same range as mx_sin */
MX_INLINE double mx_cos(double x) {
  uint64_t q;
  double r = mx__trig_reduce(x, &q);
  double s = mx__sin_poly(r), c = mx__cos_poly(r);
  double v = (q & 1u) ? s : c;
  v = ((q + 1u) & 2u) ? -v : v;
  double d = x - x;
  return mx__sel(d == d, mx__clamp1(v), d);
}
/* float32 cos x.  max error 1.65 ulp, same range as mx_sinf */
MX_INLINE float mx_cosf(float x) {
  float v = mx__sinf_poly(mx__trigf_reduce(x, 0.5));
  float d = x - x;
  return mx__self(d == d, v, d);
}

/* tan x.  max error 0.50 / 2.37 ulp, same range as mx_sin */
MX_INLINE double mx_tan(double x) {
  uint64_t q;
  double r = mx__trig_reduce(x, &q);
  double s = mx__sin_poly(r), c = mx__cos_poly(r);
  double v = (q & 1u) ? -c / s : s / c;
  double d = x - x;
  v = mx__sel(x == 0.0, x, v); /* tan(-0) = -0 */
  return mx__sel(d == d, v, d);
}
MX_INLINE float mx_tanf(float x) { return (float)mx_tan((double)x); }

/* sin(pi x) and cos(pi x), exact argument reduction (used by lgamma and digamma). */
MX_INLINE double mx__sincospi(double x, double *cosv) {
  double ax = mx__fabs(x);
  double xr = x - 4.0 * mx__rint(x * 0.25); /* exact, in [-2, 2] */
  xr = ax >= 0x1p52 ? 0.0 : xr;             /* even integers there */
  double nd = mx__rint(2.0 * xr);
  uint64_t q = mx__rint_bits(nd) & 3u;
  double r = xr - 0.5 * nd; /* exact, |r| <= 1/4 */
  double pl;
  double ph = mx__two_prod(r, MX__PI_HI, &pl);
  double pr = ph + (pl + r * MX__PI_LO);
  double s = mx__sin_poly(pr), c = mx__cos_poly(pr);
  double sv = (q & 1u) ? c : s;
  sv = (q & 2u) ? -sv : sv;
  double cv = (q & 1u) ? s : c;
  cv = ((q + 1u) & 2u) ? -cv : cv;
  *cosv = cv;
  return sv;
}

/* ------------------------------------------------------------------------------------------- */
/* Inverse trigonometric functions. */

/* atan(a / b) for a, b >= 0 (not both 0, not both inf, b finite when a is), in [0, pi/2].
 * t = a/b is moved next to a breakpoint c: atan t = atan c + atan u, u = (t - c)/(1 + t c),
 * |u| <= 0.19, where a Taylor series to u^21 is accurate to 2^-57. */
MX_INLINE double mx__atan_ratio(double a, double b) {
  int inf = !(a <= 10.0 * b);
  double c = 5.0, bh = 0x1.5f97315254857p+0, bl = -0x1.31151a43b51cap-55;
  c = a <= 3.125 * b ? 2.25 : c;
  bh = a <= 3.125 * b ? 0x1.270ef55a53a25p+0 : bh;
  bl = a <= 3.125 * b ? -0x1.a66b1af5f84fbp-54 : bl;
  c = a <= 1.625 * b ? 1.25 : c;
  bh = a <= 1.625 * b ? 0x1.cac7c57846f9ep-1 : bh;
  bl = a <= 1.625 * b ? 0x1.0dae13ad18a6bp-55 : bl;
  c = a <= 0.96875 * b ? 0.75 : c;
  bh = a <= 0.96875 * b ? 0x1.4978fa3269ee1p-1 : bh;
  bl = a <= 0.96875 * b ? 0x1.2419a87f2a458p-56 : bl;
  c = a <= 0.5625 * b ? 0.375 : c;
  bh = a <= 0.5625 * b ? 0x1.6f61941e4def1p-2 : bh;
  bl = a <= 0.5625 * b ? -0x1.c63aae6f6e918p-56 : bl;
  c = a <= 0.1875 * b ? 0.0 : c;
  bh = a <= 0.1875 * b ? 0.0 : bh;
  bl = a <= 0.1875 * b ? 0.0 : bl;
  bh = inf ? MX__PIO2_HI : bh;
  bl = inf ? MX__PIO2_LO : bl;
  double num = inf ? -b : MX_FMA(-c, b, a);
  double den = inf ? a : MX_FMA(c, a, b);
  double u = num / den;
  double z = u * u;
  double p = 0x1.8618618618618p-5; /* 1/21 */
  p = p * z - 0x1.af286bca1af28p-5;
  p = p * z + 0x1.e1e1e1e1e1e1ep-5;
  p = p * z - 0x1.1111111111111p-4;
  p = p * z + 0x1.3b13b13b13b14p-4;
  p = p * z - 0x1.745d1745d1746p-4;
  p = p * z + 0x1.c71c71c71c71cp-4;
  p = p * z - 0x1.2492492492492p-3;
  p = p * z + 0x1.999999999999ap-3;
  p = p * z - 0x1.5555555555555p-2; /* -1/3 */
  return bh + (u + ((u * z) * p + bl));
}

/* atan x.  max error 1.34 / 0.87 ulp */
MX_INLINE double mx_atan(double x) {
  return mx__copysign(mx__atan_ratio(mx__fabs(x), 1.0), x);
}
/* float32 atan x: a = |x| reduced to |u| <= 1/2 by atan a = pi/2 + atan(-1/a) (a > 2.414),
 * pi/4 + atan((a - 1)/(a + 1)) (a >= 1/2, a - 1 exact), then u + u z P(z), P a near-minimax
 * degree-4 fit (relative error 2^-27.5).  max error 1.34 ulp */
MX_INLINE float mx_atanf(float x) {
  float a = __builtin_fabsf(x);
  int big = a > 0x1.3504f4p+1f, mid = a >= 0.5f;
  float num = mx__self(big, -1.0f, mx__self(mid, a - 1.0f, a));
  float den = mx__self(big, a, mx__self(mid, a + 1.0f, 1.0f));
  float yh = mx__self(big, 0x1.921fb6p+0f, mx__self(mid, 0x1.921fb6p-1f, 0.0f));
  float yl = mx__self(big, -0x1.777a5cp-25f, mx__self(mid, -0x1.777a5cp-26f, 0.0f));
  float u = num / den;
  float z = u * u;
  float p = -0x1.a4234ap-5f;
  p = MX_FMAF(p, z, 0x1.a00d8cp-4f);
  p = MX_FMAF(p, z, -0x1.224b10p-3f);
  p = MX_FMAF(p, z, 0x1.997b16p-3f);
  p = MX_FMAF(p, z, -0x1.555512p-2f);
  float r = yh + (u + MX_FMAF(u * z, p, yl));
  return __builtin_copysignf(r, x);
}

/* atan2(y, x) (NumPy's arctan2 argument order).  max error 0.50 / 1.22 ulp; C99 special cases */
MX_INLINE double mx_atan2(double y, double x) {
  double a = mx__fabs(y), b = mx__fabs(x);
  double m = a > b ? a : b;
  double sc = m > 0x1p1000 ? 0x1p-8 : (m < 0x1p-900 ? 0x1p600 : 1.0);
  double as = a * sc, bs = b * sc;
  int both0 = (a == 0.0) & (b == 0.0);
  int bothinf = (a == MX__INF) & (b == MX__INF);
  as = (both0 | bothinf) ? 1.0 : as;
  bs = (both0 | bothinf) ? 1.0 : bs;
  bs = (b == MX__INF) ? 1.0 : bs;
  as = (b == MX__INF && a < MX__INF) ? 0.0 : as;
  double t = mx__atan_ratio(as, bs); /* pi/4 for both inf */
  t = both0 ? 0.0 : t;
  double neg = (MX__PI_HI - t) + MX__PI_LO;
  t = (mx__u64(x) >> 63) ? neg : t;
  t = mx__copysign(t, y);
  return (x != x || y != y) ? x + y : t;
}
MX_INLINE float mx_atan2f(float y, float x) { return (float)mx_atan2((double)y, (double)x); }

/* asin x.  max error 0.50 / 1.95 ulp; nan outside [-1, 1] */
MX_INLINE double mx_asin(double x) {
  double a = mx__fabs(x);
  double b = __builtin_sqrt((1.0 - a) * (1.0 + a));
  double t = mx__atan_ratio(a, b);
  t = a > 1.0 ? MX__NAN : t;
  return (x != x) ? x + x : mx__copysign(t, x);
}
MX_INLINE float mx_asinf(float x) { return (float)mx_asin((double)x); }

/* acos x.  max error 0.50 / 1.94 ulp; nan outside [-1, 1] */
MX_INLINE double mx_acos(double x) {
  double a = __builtin_sqrt(1.0 - x), b = __builtin_sqrt(1.0 + x);
  double t = 2.0 * mx__atan_ratio(a, b);
  t = mx__fabs(x) > 1.0 ? MX__NAN : t;
  return (x != x) ? x + x : t;
}
MX_INLINE float mx_acosf(float x) { return (float)mx_acos((double)x); }

/* ------------------------------------------------------------------------------------------- */
/* Hyperbolic functions. */

/* sinh x.  max error 0.50 / 1.83 ulp */
MX_INLINE double mx_sinh(double x) {
  double a = mx__fabs(x);
  double e = mx_expm1(mx__sel(a < 22.0, a, 22.0));
  double small = 0.5 * (e + e / (e + 1.0));
  double big = mx__exp_k(mx__sel(a < 720.0, a, 720.0), 0.0, -1.0);
  double r = mx__sel(a < 22.0, small, big);
  return mx__sel(x != x, x + x, mx__copysign(r, x));
}
MX_INLINE float mx_sinhf(float x) { return (float)mx_sinh((double)x); }

/* cosh x.  max error 0.50 / 1.28 ulp */
MX_INLINE double mx_cosh(double x) {
  double a = mx__fabs(x);
  double e = mx_exp(mx__sel(a < 22.0, a, 22.0));
  double small = 0.5 * e + 0.5 / e;
  double big = mx__exp_k(mx__sel(a < 720.0, a, 720.0), 0.0, -1.0);
  double r = mx__sel(a < 22.0, small, big);
  return mx__sel(x != x, x + x, r);
}
MX_INLINE float mx_coshf(float x) { return (float)mx_cosh((double)x); }

/* tanh x.  max error 1.35 / 2.34 ulp */
MX_INLINE double mx_tanh(double x) {
  double a = mx__fabs(x);
  double t = mx_expm1(-2.0 * mx__sel(a < 20.0, a, 20.0));
  double r = -t / (2.0 + t);
  return mx__sel(x != x, x + x, mx__copysign(r, x));
}
/* float32 tanh: a + a z P(z) (near-minimax degree 13, relative error 2^-32) for a = |x| < 0.625,
 * else 1 - 2 / (e^(2a) + 1) with the float exp kernel (a clamped to 10, where tanh rounds to 1).
 * max error 1.35 ulp */
MX_INLINE float mx_tanhf(float x) {
  float a = __builtin_fabsf(x);
  float z = a * a;
  float p = 0x1.1a2e3ep-9f;
  p = MX_FMAF(p, z, -0x1.0c6020p-7f);
  p = MX_FMAF(p, z, 0x1.63a57ep-6f);
  p = MX_FMAF(p, z, -0x1.b9f18ap-5f);
  p = MX_FMAF(p, z, 0x1.11107ap-3f);
  p = MX_FMAF(p, z, -0x1.555554p-2f);
  float small = MX_FMAF(a * z, p, a);
  float ac = mx__self(a > 10.0f, 10.0f, a); /* nan stays nan */
  float big = 1.0f - 2.0f / (mx__expf_k(2.0f * ac) + 1.0f);
  return __builtin_copysignf(mx__self(a < 0.625f, small, big), x);
}

/* logistic x = 1 / (1 + e^-x), computed as e^x / (1 + e^x) for x < 0: no overflow, and tiny
 * (subnormal) results for very negative x.  max error 0.82 / 1.81 ulp */
MX_INLINE double mx_logistic(double x) {
  double e = mx_exp(-mx__fabs(x));
  return mx__sel(x >= 0.0, 1.0, e) / (1.0 + e);
}
/* e^x = hi + *lo (float) for x in [-104, 89]: as mx__expf_k with the reduced argument kept as
 * rh + rl and 1 + (e^rh - 1) split exactly; hi + lo is within 0.3 ulp of e^x. */
MX_INLINE float mx__expf_kk(float x, float *lo) {
  float kf = mx__rintf(x * MX__LOG2EF);
  float r1 = x - kf * MX__LN2F_HI; /* exact */
  float t = -kf * MX__LN2F_LO;
  float rh = r1 + t, rl = (r1 - rh) + t;
  float p = 0x1.6a4b98p-10f;
  p = MX_FMAF(p, rh, 0x1.123e5cp-7f);
  p = MX_FMAF(p, rh, 0x1.5558bap-5f);
  p = MX_FMAF(p, rh, 0x1.55548cp-3f);
  p = MX_FMAF(p, rh, 0x1.fffffcp-2f);
  float em = MX_FMAF(rh * rh, p, rh);
  float ph = 1.0f + em, pl = ((1.0f - ph) + em);
  pl = MX_FMAF(ph, rl, pl);
  float k1 = mx__rintf(kf * 0.5f), k2 = kf - k1;
  float s1 = mx__pow2f(k1), s2 = mx__pow2f(k2);
  *lo = (pl * s1) * s2;
  return (ph * s1) * s2;
}

/* float32 logistic, as mx_logistic: e = e^-|x| as hi + lo, then num / (1 + e) with the
 * quotient corrected once (exact residual by a fused multiply-add).  max error 0.94 ulp
 * (0.82 over most of the range; 0.93 just above the subnormal outputs, near x = -86.35) */
MX_INLINE float mx_logisticf(float x) {
  float m = -__builtin_fabsf(x);
  float el, eh = mx__expf_kk(mx__self(m < -104.0f, -104.0f, m), &el);
  float d = 1.0f + eh, dl = ((1.0f - d) + eh) + el;
  int pos = x >= 0.0f;
  float num = mx__self(pos, 1.0f, eh), numl = mx__self(pos, 0.0f, el);
  float q = num / d;
  float res = MX_FMAF(-q, d, num); /* exact */
  return q + (res + MX_FMAF(-q, dl, numl)) / d;
}

/* asinh x.  max error 0.50 / 1.54 ulp */
MX_INLINE double mx_asinh(double x) {
  double a = mx__fabs(x);
  int big = a > 0x1p28;
  double as = mx__sel(big, 1.0, a);
  double arg = as + as * as / (1.0 + __builtin_sqrt(1.0 + as * as));
  arg = mx__sel(big, a - 1.0, arg); /* log1p(a - 1) = log a exactly for a < 2^53 */
  double r = mx_log1p(arg) + mx__sel(big, MX__LN2, 0.0);
  return mx__sel(x != x, x + x, mx__copysign(r, x));
}
MX_INLINE float mx_asinhf(float x) { return (float)mx_asinh((double)x); }

/* acosh x.  max error 0.50 / 1.64 ulp; nan below 1 */
MX_INLINE double mx_acosh(double x) {
  int big = x > 0x1p28;
  double t = mx__sel((big | !(x >= 1.0)), 0.0, x - 1.0); /* exact */
  double arg = t + __builtin_sqrt(t * (2.0 + t));
  arg = mx__sel(big, x - 1.0, arg);
  double r = mx_log1p(arg) + mx__sel(big, MX__LN2, 0.0);
  r = mx__sel(x < 1.0, MX__NAN, r);
  return mx__sel(x != x, x + x, r);
}
MX_INLINE float mx_acoshf(float x) { return (float)mx_acosh((double)x); }

/* atanh x.  max error 0.50 / 1.48 ulp; +-inf at +-1, nan outside [-1, 1] */
MX_INLINE double mx_atanh(double x) {
  double a = mx__fabs(x);
  double as = mx__sel(a < 1.0, a, 0.5);
  double y = mx__sel(as < 0.5, 2.0 * as + 2.0 * as * as / (1.0 - as), 2.0 * as / (1.0 - as));
  double r = 0.5 * mx_log1p(y);
  r = mx__sel(a == 1.0, MX__INF, r);
  r = mx__sel(a > 1.0, MX__NAN, r);
  return mx__sel(x != x, x + x, mx__copysign(r, x));
}
MX_INLINE float mx_atanhf(float x) { return (float)mx_atanh((double)x); }

/* ------------------------------------------------------------------------------------------- */
/* Error functions. */

/* erf x for |x| <= 3/4: Taylor series to x^33 (truncation < 2^-60 relative). */
MX_INLINE double mx__erf_small(double x) {
  double z = x * x;
  double p = 0x1.d70b3537f4765p-50;
  p = p * z - 0x1.f56f071a885cfp-46;
  p = p * z + 0x1.f683ae4a97007p-42;
  p = p * z - 0x1.d8453cb0c46eap-38;
  p = p * z + 0x1.9e6ad5e55a730p-34;
  p = p * z - 0x1.51d7181c5d36dp-30;
  p = p * z + 0x1.fcc5720624c1cp-27;
  p = p * z - 0x1.5f742ec43e71ap-23;
  p = p * z + 0x1.b9e6c9dc651a3p-20;
  p = p * z - 0x1.f4d25c3e0c2ebp-17;
  p = p * z + 0x1.f9a326f9b89b7p-14;
  p = p * z - 0x1.c02db40040b86p-11;
  p = p * z + 0x1.565bcd0e6a53fp-8;
  p = p * z - 0x1.b82ce31288b51p-6;
  p = p * z + 0x1.ce2f21a042be2p-4;
  p = p * z - 0x1.812746b0379e7p-2;
  double c0 = 0x1.20dd750429b6dp+0; /* 2/sqrt(pi) */
  double r = x * c0 + (x * z) * p;
  return mx__sel(x == 0.0, x, r);
}

/* erfc a for a >= 1/2 (used from 3/4 on): e^(-a^2) H / a with H(x) = x e^(x^2) erfc(x) a degree-24 Chebyshev
 * fit (mpmath) in t = (a - 4)/(a + 4) (mapped to [-1, 1]) over a in [0.5, 28] (abs. error 1e-20); e^(-a^2) uses
 * the exact square a^2 = hi + lo. Underflows to 0 past a = 27.3. */
MX_INLINE double mx__erfc_big(double a) {
  double ac = mx__sel(a < 28.0, a, 28.0);
  ac = mx__sel(ac > 0.5, ac, 0.5);
  double t = (ac - 4.0) / (ac + 4.0);
  double u = t * 0x1.4f2094f2094f2p+0 + 0x1.29e4129e412a1p-6; /* [-1, 1] */
  double h = -0x1.0635fb2e98e05p-42;
  h = h * u + 0x1.e96f07353ec05p-40;
  h = h * u + 0x1.01990597d58cfp-38;
  h = h * u - 0x1.0c10c6f7c9281p-35;
  h = h * u - 0x1.1c3fe226751e1p-35;
  h = h * u + 0x1.ad7b96fc08010p-32;
  h = h * u + 0x1.504c81c70d2cfp-34;
  h = h * u - 0x1.486bd7368e4bcp-28;
  h = h * u + 0x1.6eb286959184fp-28;
  h = h * u + 0x1.c2ef63aa78efep-25;
  h = h * u - 0x1.7d8b9840d28e7p-23;
  h = h * u - 0x1.3da2acdfed2ecp-22;
  h = h * u + 0x1.d4e49f1e77e79p-19;
  h = h * u - 0x1.0a8f3f5e9f4a0p-17;
  h = h * u - 0x1.885353322289ep-16;
  h = h * u + 0x1.135e9721f278bp-12;
  h = h * u - 0x1.3f0735fed3bfep-10;
  /* last steps compensated (two-prod + two-sum): near u = -1 the alternating sum cancels */
  double hl = 0.0;
  { double pe, pp = mx__two_prod(h, u, &pe); double ss = pp + (0x1.0420fc84f2dacp-8); double bb = ss - pp;
    double se = (pp - (ss - bb)) + ((0x1.0420fc84f2dacp-8) - bb); hl = hl * u + (pe + se); h = ss; }
  { double pe, pp = mx__two_prod(h, u, &pe); double ss = pp + (-0x1.4e0260fb2a725p-7); double bb = ss - pp;
    double se = (pp - (ss - bb)) + ((-0x1.4e0260fb2a725p-7) - bb); hl = hl * u + (pe + se); h = ss; }
  { double pe, pp = mx__two_prod(h, u, &pe); double ss = pp + (0x1.5ff7f400da7f3p-6); double bb = ss - pp;
    double se = (pp - (ss - bb)) + ((0x1.5ff7f400da7f3p-6) - bb); hl = hl * u + (pe + se); h = ss; }
  { double pe, pp = mx__two_prod(h, u, &pe); double ss = pp + (-0x1.347b39b45547ep-5); double bb = ss - pp;
    double se = (pp - (ss - bb)) + ((-0x1.347b39b45547ep-5) - bb); hl = hl * u + (pe + se); h = ss; }
  { double pe, pp = mx__two_prod(h, u, &pe); double ss = pp + (0x1.be1814aadc1f1p-5); double bb = ss - pp;
    double se = (pp - (ss - bb)) + ((0x1.be1814aadc1f1p-5) - bb); hl = hl * u + (pe + se); h = ss; }
  { double pe, pp = mx__two_prod(h, u, &pe); double ss = pp + (-0x1.fdbd1eb0fd330p-5); double bb = ss - pp;
    double se = (pp - (ss - bb)) + ((-0x1.fdbd1eb0fd330p-5) - bb); hl = hl * u + (pe + se); h = ss; }
  { double pe, pp = mx__two_prod(h, u, &pe); double ss = pp + (0x1.87d648b0621d2p-5); double bb = ss - pp;
    double se = (pp - (ss - bb)) + ((0x1.87d648b0621d2p-5) - bb); hl = hl * u + (pe + se); h = ss; }
  { double pe, pp = mx__two_prod(h, u, &pe); double ss = pp + (0x1.1823d621c6949p-1); double bb = ss - pp;
    double se = (pp - (ss - bb)) + ((0x1.1823d621c6949p-1) - bb); hl = hl * u + (pe + se); h = ss; }
  h = h + hl;
  double am = mx__sel(a < 40.0, a, 40.0);
  double sl, sh = mx__two_prod(am, am, &sl);
  double e = mx__exp_dd(-sh, -sl);
  return e * (h / ac);
}

/* erf x.  max error 1.26 / 1.03 ulp */
MX_INLINE double mx_erf(double x) {
  double a = mx__fabs(x);
  double small = mx__erf_small(mx__sel(a < 0.75, x, 0.0));
  double big = mx__copysign(1.0 - mx__erfc_big(a), x);
  return mx__sel(a < 0.75, small, mx__sel(x != x, x + x, big));
}
/* float32 erf: for a = |x| < 1, a (c1 + z P(z)) (c1 = 2/sqrt(pi) as float + a correction in P,
 * near-minimax degree 13, relative error 2^-29.6); for 1 <= a < 4, 1 - e^(-a^2) H(a - 5/2) with
 * H a near-minimax degree-12 fit of erfcx (relative error 2^-25) and e^(-a^2) from the exact
 * square a^2 = s + sl as e^-s (1 - sl); erf rounds to +-1 from a = 3.92 on.  max error 1.26 ulp */
MX_INLINE float mx_erff(float x) {
  float a = __builtin_fabsf(x);
  float z = a * a;
  float p = 0x1.4969a0p-14f;
  p = MX_FMAF(p, z, -0x1.a3f864p-11f);
  p = MX_FMAF(p, z, 0x1.54062ep-8f);
  p = MX_FMAF(p, z, -0x1.b7f92ap-6f);
  p = MX_FMAF(p, z, 0x1.ce2cfap-4f);
  p = MX_FMAF(p, z, -0x1.81273ep-2f);
  p = MX_FMAF(p, z, -0x1.01b11ap-24f);
  float small = MX_FMAF(a, 0x1.20dd76p+0f, a * p);
  float ab = mx__self(a < 1.0f, 1.0f, mx__self(a > 4.0f, 4.0f, a)); /* nan -> 4 */
  float t = ab - 2.5f;
  float h = 0x1.25639ep-23f;
  h = MX_FMAF(h, t, -0x1.a622d6p-22f);
  h = MX_FMAF(h, t, 0x1.83c86cp-21f);
  h = MX_FMAF(h, t, -0x1.0933dap-18f);
  h = MX_FMAF(h, t, 0x1.1abc56p-16f);
  h = MX_FMAF(h, t, -0x1.ef963cp-15f);
  h = MX_FMAF(h, t, 0x1.b833ecp-13f);
  h = MX_FMAF(h, t, -0x1.80984cp-11f);
  h = MX_FMAF(h, t, 0x1.437288p-9f);
  h = MX_FMAF(h, t, -0x1.0631eep-7f);
  h = MX_FMAF(h, t, 0x1.9894e6p-6f);
  h = MX_FMAF(h, t, -0x1.3086d8p-4f);
  h = MX_FMAF(h, t, 0x1.afbb40p-3f);
  float sl, sq = mx__two_prodf(ab, ab, &sl);
  float ec = mx__expf_k(-sq) * MX_FMAF(-sl, h, h);
  float big = 1.0f - ec;
  float r = mx__self(a < 1.0f, small, big);
  r = mx__self(x != x, x + x, r);
  return __builtin_copysignf(r, x);
}

/* erfc x.  max error 0.50 / 3.36 ulp; subnormal results from x = 26.5 on */
MX_INLINE double mx_erfc(double x) {
  double a = mx__fabs(x);
  double small = 1.0 - mx__erf_small(mx__sel(a < 0.75, x, 0.0));
  double ec = mx__erfc_big(a);
  double big = mx__sel(x < 0.0, 2.0 - ec, ec);
  return mx__sel(a < 0.75, small, mx__sel(x != x, x + x, big));
}
MX_INLINE float mx_erfcf(float x) { return (float)mx_erfc((double)x); }

/* erf_inv x (float64).  max error 1.98 ulp; +-inf at +-1, nan outside [-1, 1].
 * Start: Giles' single-precision approximation (or an asymptotic one far in the tail); then
 * Halley steps on erf(y) = x (on erfc(y) = 1 - x when x > 1/2, which is exact there). */
MX_INLINE double mx_erf_inv(double x) {
  double a = mx__fabs(x);
  double as = mx__sel(a < 1.0, a, 0.5);
  double w = -mx_log((1.0 - as) * (1.0 + as));
  int small = w < 5.0;
  double ws = mx__sel(small, w - 2.5, __builtin_sqrt(w) - 3.0);
  double p = mx__sel(small, 0x1.e2cb100000000p-26, -0x1.a3e1360000000p-13);
  p = p * ws + (small ? 0x1.70966c0000000p-22 : 0x1.a76ad60000000p-14);
  p = p * ws + (small ? -0x1.d8e6ae0000000p-19 : 0x1.61b8e40000000p-10);
  p = p * ws + (small ? -0x1.26b5820000000p-18 : -0x1.e17bce0000000p-9);
  p = p * ws + (small ? 0x1.ca65b60000000p-13 : 0x1.7824f60000000p-8);
  p = p * ws + (small ? -0x1.48a8100000000p-10 : -0x1.f38bae0000000p-8);
  p = p * ws + (small ? -0x1.11c9de0000000p-8 : 0x1.354afc0000000p-7);
  p = p * ws + (small ? 0x1.f91ec60000000p-3 : 0x1.006db60000000p+0);
  p = p * ws + (small ? 0x1.805c5e0000000p+0 : 0x1.6a9efc0000000p+1);
  double y = p * as;
  /* far tail (w > 16): erfc(y) ~ e^-y^2 / (y sqrt(pi)) = (1 - a)(1 + a) e^0 / 2... */
  double yt = __builtin_sqrt(w - 0.5 * mx_log(0x1.921fb54442d18p+1 * (w - 1.0)) + MX__LN2 - 0.0);
  y = mx__sel(w > 16.0, yt, y);
  int tail = as > 0.5;
  double om = 1.0 - as; /* exact for as >= 1/2 */
#pragma GCC unroll 32
  for (int it = 0; it < 2; it++) {
    double f = mx__sel(tail, om - mx_erfc(y), mx_erf(y) - as);
    /* f / f' with f' = +-2/sqrt(pi) e^(-y^2) */
    double sl, sh = mx__two_prod(y, y, &sl);
    double inv = mx__exp_dd(sh, sl) * 0x1.c5bf891b4ef6bp-1; /* sqrt(pi)/2 e^(y^2) */
    double d = f * inv;
    y = y - d / (1.0 + y * d);
  }
  y = mx__sel(as < 0x1p-26, as * 0x1.c5bf891b4ef6bp-1, y);
  double r = mx__copysign(y, x);
  r = mx__sel(a == 1.0, mx__copysign(MX__INF, x), r);
  r = mx__sel(a > 1.0, MX__NAN, r);
  r = mx__sel(x == 0.0, 0.0, r); /* SciPy's erfinv(-0) = +0: the reference */
  return mx__sel(x != x, x + x, r);
}

/* ------------------------------------------------------------------------------------------- */
/* Gamma family. */

/* lgamma(2 + z), |z| <= 1/2: (1 - gamma) z + sum_k (-1)^k (zeta(k) - 1) z^k / k, to k = 28. */
MX_INLINE double mx__lgamma_series2(double z) {
  static const double c[28] = {
      0x1.b0ee6072093cep-2,  0x1.4a34cc4a60fa6p-2,  -0x1.13e001a557607p-4, 0x1.51322ac7d8483p-6,
      -0x1.e404fc218f5f2p-8, 0x1.7add6eadb6c30p-9,  -0x1.38ac5c2bf8e08p-10, 0x1.0b36af86396e9p-11,
      -0x1.d3fd4c76d2fc8p-13, 0x1.a127b0f17d65ap-14, -0x1.78de5bd7c81efp-15, 0x1.580dcee66eb02p-16,
      -0x1.3cbc963ce2243p-17, 0x1.2597a39f34aacp-18, -0x1.11b2eb7679541p-19, 0x1.0064cdeb22f0fp-20,
      -0x1.e2600d93cfd2fp-22, 0x1.c76bbb3f07a4dp-23, -0x1.af5a6cbbf8a97p-24, 0x1.99b93c2070b0fp-25,
      -0x1.862c734df3eacp-26, 0x1.7469daccfadcdp-27, -0x1.6434a8447aeadp-28, 0x1.555a877ffd2c3p-29,
      -0x1.47b1679258d0ep-30, 0x1.3b15d2b2fc10cp-31, -0x1.2f69a9fabe3e0p-32, 0x1.24932a337434cp-33};
  double p = c[27];
#pragma GCC unroll 32
  for (int i = 26; i >= 1; i--) p = p * z + c[i];
  return z * c[0] + (z * z) * p;
}

/* lgamma x for x > 0 (inf included). */
MX_INLINE double mx__lgamma_pos(double x) {
  /* Stirling for x >= 7.5, with log x in double-double */
  double xs = mx__sel(x < 7.5, 7.5, x);
  double ll;
  double lh = mx__log_dd(xs, &ll);
  double xm = xs - 0.5;
  double tl;
  double th = mx__two_prod(xm, lh, &tl);
  tl += xm * ll;
  double iv = 1.0 / xs, iv2 = iv * iv;
  double s = -0x1.6476701181f3ap+0; /* B_20 / (20 * 19) */
  s = s * iv2 + 0x1.6fe96381e0680p-3;
  s = s * iv2 - 0x1.e4286cb0f5398p-6;
  s = s * iv2 + 0x1.a41a41a41a41ap-8;
  s = s * iv2 - 0x1.f6ab0d9993c7dp-10;
  s = s * iv2 + 0x1.b951e2b18ff23p-11;
  s = s * iv2 - 0x1.3813813813814p-11;
  s = s * iv2 + 0x1.a01a01a01a01ap-11;
  s = s * iv2 - 0x1.6c16c16c16c17p-9;
  s = s * iv2 + 0x1.5555555555555p-4; /* B_2 / 2 */
  double st = (th - xs) + (tl + (0x1.d67f1c864beb5p-1 + (s * iv - 0x1.65b5a1b7ff5dfp-55)));
  /* x < 7.5: move to y = 2 + z in [1.5, 2.5) and take the log of the product of the steps */
  double xr = mx__sel(x < 7.5, x, 2.0);
  double y = xr, pr = 1.0;
#pragma GCC unroll 32
  for (int i = 0; i < 5; i++) {
    int c = y >= 2.5;
    pr = mx__sel(c, pr * (y - 1.0), pr);
    y = mx__sel(c, y - 1.0, y);
  }
  double z = y - 2.0;
  z = mx__sel(xr < 1.5, xr - 1.0, z);
  z = mx__sel(xr < 0.5, xr, z);
  double fac = mx__sel(xr < 1.5, xr, pr);
  fac = mx__sel(xr < 0.5, xr * (1.0 + xr), fac);
  double lf = mx_log(fac);
  double sm = mx__lgamma_series2(z) + mx__sel(xr < 1.5, -lf, lf);
  st = mx__sel(th == MX__INF, MX__INF, st);
  double r = mx__sel(x < 7.5, sm, st);
  return mx__sel(x == MX__INF, x, r);
}

/* log|Gamma(x)|.  max error f32 0.50 ulp; f64 4.4 ulp for x > 0 (goal 4: not met); for x < 0 the reflection
 * log(pi / |sin(pi x)|) - lgamma(1 - x) has an absolute error of about 2^-52 * |lgamma(x)|, which
 * is large in ulps only next to the zeros of lgamma at x < -2 (as in SciPy's gammaln).
 * +inf at 0 and at the negative integers, -inf at -inf (SciPy's gammaln, the reference). */
MX_INLINE double mx_lgamma(double x) {
  int neg = x < 0.0;
  double y = mx__sel(neg, 1.0 - x, x);
  double p = mx__lgamma_pos(y);
  double cv;
  double s = mx__fabs(mx__sincospi(mx__sel(neg, x, 0.5), &cv));
  double refl = mx_log(MX__PI_HI / s) - p;
  double r = mx__sel(neg, refl, p);
  r = mx__sel(mx__fabs(x) < 0x1p-60, -mx_log(mx__fabs(x)), r);
  r = mx__sel(x <= -0x1p52, MX__INF, r);
  r = mx__sel(x == -MX__INF, x, r); /* SciPy's gammaln(-inf) = -inf: the reference */
  return mx__sel(x != x, x + x, r);
}
MX_INLINE float mx_lgammaf(float x) { return (float)mx_lgamma((double)x); }

/* digamma x for x >= 0. */
MX_INLINE double mx__digamma_pos(double x) {
  /* asymptotic series for x >= 6 */
  double xa = mx__sel(x < 6.0, 6.0, x);
  double iv = 1.0 / xa, iv2 = iv * iv;
  double s = 0x1.7892edfdf5555p+33; /* B_34 / 34 */
  s = s * iv2 - 0x1.c280563b8bcbdp+28;
  s = s * iv2 + 0x1.31fad7cbf3c00p+24;
  s = s * iv2 - 0x1.dc0b1a5cfbe16p+19;
  s = s * iv2 + 0x1.ac572aaaaaaabp+15;
  s = s * iv2 - 0x1.c2f0566566566p+11;
  s = s * iv2 + 0x1.1975cc0ed7304p+8;
  s = s * iv2 - 0x1.a74ca514ca515p+4;
  s = s * iv2 + 0x1.86e7f9b9fe6e8p+1;
  s = s * iv2 - 0x1.c5e5e5e5e5e5ep-2;
  s = s * iv2 + 0x1.5555555555555p-4;
  s = s * iv2 - 0x1.5995995995996p-6;
  s = s * iv2 + 0x1.f07c1f07c1f08p-8;
  s = s * iv2 - 0x1.1111111111111p-8;
  s = s * iv2 + 0x1.0410410410410p-8;
  s = s * iv2 - 0x1.1111111111111p-7;
  s = s * iv2 + 0x1.5555555555555p-4; /* B_2 / 2 */
  double asy = mx_log(xa) - (0.5 * iv + s * iv2);
  /* x < 6: move to y in [1, 2) (psi(x) = psi(x + 1) - 1/x, psi(x) = psi(x - 1) + 1/(x - 1)),
   * then psi(y) = (y - x0) g(y), x0 the positive zero (double-double), g a degree-23
   * Chebyshev fit (mpmath) in 2y - 3 (abs. error 6e-19). */
  double xr = mx__sel(x < 6.0, x, 1.5);
  double y = mx__sel(xr < 1.0, xr + 1.0, xr);
  double acc = mx__sel(xr < 1.0, -1.0 / xr, 0.0);
#pragma GCC unroll 32
  for (int i = 0; i < 4; i++) {
    int c = y >= 2.0;
    acc += c ? 1.0 / (y - 1.0) : 0.0;
    y = mx__sel(c, y - 1.0, y);
  }
  double u = 2.0 * y - 3.0;
  static const double g[24] = {
      -0x1.5600aebc07538p-37, 0x1.0080971c5617fp-35, -0x1.0081238b97022p-35, 0x1.80c273fb322c5p-34,
      -0x1.c8e71b670fd14p-32, 0x1.56ae8897d5d3dp-30, -0x1.e24e3f4fdc1dcp-29, 0x1.69be71d89ad40p-27,
      -0x1.1138fd323dc0cp-25, 0x1.99e14548a2d9bp-24, -0x1.335166d938f39p-22, 0x1.cd1f2dbc0dbedp-21,
      -0x1.5a07ffdcf1525p-19, 0x1.03c0b29031197p-17, -0x1.8635595c28480p-16, 0x1.256471573c163p-14,
      -0x1.b9f8b14eb372ep-13, 0x1.4de9aa17fed5cp-11, -0x1.fb4420299c39ep-10, 0x1.8512e59037f3fp-8,
      -0x1.2feeeb98a7e14p-6,  0x1.eca189b8e6f7bp-5, -0x1.b1cb63005ee96p-3, 0x1.e6f0cbb873616p-1};
  double gp = g[0];
#pragma GCC unroll 32
  for (int i = 1; i < 24; i++) gp = gp * u + g[i];
  double core = ((y - 0x1.762d86356be3fp+0) - 0x1.b86a722197829p-54) * gp;
  double sm = core + acc;
  return mx__sel(x < 6.0, sm, asy);
}

/* digamma x.  max error f32 0.50 ulp; f64 2.2 ulp for x > 0 (relative also at the zero
 * x0 = 1.4616...); for x < 0 the reflection psi(1 - x) - pi cot(pi x) is accurate in absolute
 * terms only next to its zeros.  nan at 0, -0, the negative integers and -inf (morphax's
 * reference, which follows XLA; SciPy gives -inf at 0); +inf at +inf. */
MX_INLINE double mx_digamma(double x) {
  int neg = x < 0.0;
  double y = mx__sel(neg, 1.0 - x, x);
  double p = mx__digamma_pos(y);
  double cv;
  double sv = mx__sincospi(mx__sel(neg, x, 0.5), &cv);
  double refl = p - MX__PI_HI * cv / sv;
  double r = mx__sel(neg, refl, p);
  int pole = (x <= 0.0) & ((neg ? sv : x) == 0.0);
  r = mx__sel(pole | x == -MX__INF, MX__NAN, r);
  return mx__sel(x != x, x + x, r);
}
MX_INLINE float mx_digammaf(float x) { return (float)mx_digamma((double)x); }

/* ------------------------------------------------------------------------------------------- */
/* XLA's float32 forms, bit-identical to morphax/_src/prims/xla_float32_log.py (which matches JAX's CPU
 * results). XLA's CPU code fuses each multiply-add of these polynomials (one rounding): with FMA
 * hardware (__FMA__, AVX2 hosts) mx__xfma is fmaf, eight float lanes per AVX2 register; without
 * it, the float32 product is formed exactly in double and the sum rounds to double and then to
 * float (as the NumPy reference does). The two forms differ only on exact float64 ties: over all
 * 2^32 float32 inputs log, log1p and erf_inv give the same bits either way (checked when the
 * fmaf form was introduced; tests/compiler/test_cmath.py compares with the reference). Every
 * other step is a single float operation (a sum, product or quotient of two floats rounds the
 * same through double, p >= 2q + 2, so the float form is exact); no plain product feeds a
 * plain sum whose fusion (-ffp-contract=fast) could change a result. Denormal inputs count as
 * zero, as in XLA. */

#if defined(__FMA__)
MX_INLINE float mx__xfma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
#else
MX_INLINE float mx__xfma(float a, float b, float c) {
  return (float)((double)a * (double)b + (double)c);
}
#endif

/* log of a positive normal float (Cephes polynomial in three interleaved Horner chains). */
MX_INLINE float mx__xla_log_kernel(float x) {
  uint32_t u = mx__u32(x);
  float e = (float)((int32_t)(u >> 23) - 126); /* frexp: x = m 2^e, m in [1/2, 1) */
  float m = mx__f32((u & 0x007fffffu) | 0x3f000000u);
  int low = m <= 0x1.6a09e6p-1f; /* m < sqrt(1/2): this is the largest float below it */
  float f = m - 1.0f;              /* exact (Sterbenz) */
  f += mx__self(low, m, 0.0f);     /* 2m - 1: exact */
  e -= mx__self(low, 1.0f, 0.0f);
  float f2 = f * f;
  float f3 = f2 * f;
  float c0 = mx__xfma(mx__xfma(0x1.2043760000000p-4f, f, -0x1.d7a3700000000p-4f), f, 0x1.de4a340000000p-4f);
  float c1 = mx__xfma(mx__xfma(-0x1.fcba9e0000000p-4f, f, 0x1.23d37e0000000p-3f), f, -0x1.555ca00000000p-3f);
  float c2 = mx__xfma(mx__xfma(0x1.999d580000000p-3f, f, -0x1.fffff80000000p-3f), f, 0x1.5555540000000p-2f);
  float y = mx__xfma(mx__xfma(c0, f3, c1), f3, c2);
  y = mx__xfma(y, f3, e * -0x1.bd01060000000p-13f);
  float out = mx__xfma(f2, -0.5f, f);
  out = out + y;
  return e * 0x1.63p-1f + out; /* e * 0x1.63p-1 is exact in float */
}

/* XLA float32 log: bit-identical to xla_float32_log.log_f32 (including nan/inf/0/subnormal/negative). */
MX_INLINE float mx_xla_logf(float x) {
  float r = mx__xla_log_kernel(x);
  int normal = (x >= 0x1p-126f) & (x < MX__INFF);
  float out = mx__self((x != x) | (x == MX__INFF), x, MX__NANF);
  out = mx__self(__builtin_fabsf(x) < 0x1p-126f, -MX__INFF, out);
  return mx__self(normal, r, out);
}

MX_INLINE float mx__xla_log1p_small(float x) {
  float num = 0x1.7bc0960000000p-15f, den = 1.0f;
  num = mx__xfma(num, x, 0x1.fe818a0000000p-2f);
  den = mx__xfma(den, x, 0x1.e2035a0000000p+3f);
  num = mx__xfma(num, x, 0x1.a509f40000000p+2f);
  den = mx__xfma(den, x, 0x1.4c30b60000000p+6f);
  num = mx__xfma(num, x, 0x1.de97380000000p+4f);
  den = mx__xfma(den, x, 0x1.bb865a0000000p+7f);
  num = mx__xfma(num, x, 0x1.e798ec0000000p+5f);
  den = mx__xfma(den, x, 0x1.3519460000000p+8f);
  num = mx__xfma(num, x, 0x1.c8e75a0000000p+5f);
  den = mx__xfma(den, x, 0x1.b0db140000000p+7f);
  num = mx__xfma(num, x, 0x1.40a2020000000p+4f);
  den = mx__xfma(den, x, 0x1.e0f3040000000p+5f);
  float ratio = num / den;
  float x2 = x * x;
  float cubic = (x * x2) * ratio;
  /* x2 * -0.5 is exact, so this fma is the float sum; as an fma, cubic's product cannot be
   * contracted into it by a compiler that fuses float expressions (-ffp-contract=fast). */
  return x + mx__xfma(x2, -0.5f, cubic);
}

/* XLA float32 log1p: bit-identical to xla_float32_log.log1p_f32. */
MX_INLINE float mx_xla_log1pf(float x) {
  x = mx__self(__builtin_fabsf(x) < 0x1p-126f, __builtin_copysignf(0.0f, x), x);
  float s = mx__xla_log1p_small(x);
  float l = mx_xla_logf(x + 1.0f);
  return mx__self(__builtin_fabsf(x) < 0x1.a8279ap-2f, s, l);
}

/* XLA float32 erf_inv (Giles' single-precision polynomials in w = -log1p(-x^2)): bit-identical
 * to morphax's float32 erf_inv reference, which makes random.normal equal JAX's draws. */
MX_INLINE float mx_xla_erf_invf(float x) {
  float w = -mx_xla_log1pf(-x * x);
  int small = w < 5.0f;
  float ws = mx__self(small, w - 2.5f, __builtin_sqrtf(w) - 3.0f);
  float p = mx__self(small, 0x1.e2cb10p-26f, -0x1.a3e136p-13f);
#define MX__GILES(S, L) p = mx__xfma(p, ws, mx__self(small, (S), (L)))
  MX__GILES(0x1.70966cp-22f, 0x1.a76ad6p-14f);
  MX__GILES(-0x1.d8e6aep-19f, 0x1.61b8e4p-10f);
  MX__GILES(-0x1.26b582p-18f, -0x1.e17bcep-9f);
  MX__GILES(0x1.ca65b6p-13f, 0x1.7824f6p-8f);
  MX__GILES(-0x1.48a810p-10f, -0x1.f38baep-8f);
  MX__GILES(-0x1.11c9dep-8f, 0x1.354afcp-7f);
  MX__GILES(0x1.f91ec6p-3f, 0x1.006db6p+0f);
  MX__GILES(0x1.805c5ep+0f, 0x1.6a9efcp+1f);
#undef MX__GILES
  float out = p * x;
  return mx__self(__builtin_fabsf(x) == 1.0f, x * MX__INFF, out);
}

/* float32 erf_inv: morphax's float32 reference *is* XLA's form, so the C path uses it too
 * (error vs. the true erfinv: 64 ulp near |x| = 1, XLA's own; the reference is the oracle). */
MX_INLINE float mx_erf_invf(float x) { return mx_xla_erf_invf(x); }

/* ------------------------------------------------------------------------------------------- */
/* float16 / bfloat16 conversions (round to nearest even; nan keeps its sign). */

/* float16 bits -> float (exact; nan payload kept). */
MX_INLINE float mx_f16_to_f32(uint16_t h) {
  uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
  uint32_t e = ((uint32_t)h >> 10) & 0x1fu, m = (uint32_t)h & 0x3ffu;
  uint32_t normal = ((e + 112u) << 23) | (m << 13);
  uint32_t sub = mx__u32((float)(int32_t)m * 0x1p-24f);
  uint32_t infnan = 0x7f800000u | (m << 13);
  uint32_t r = e == 31u ? infnan : (e == 0u ? sub : normal);
  return mx__f32(r | sign);
}

/* float -> float16 bits, round to nearest even, overflow to inf, nan -> quiet nan (as NumPy). */
MX_INLINE uint16_t mx_f32_to_f16(float f) {
  uint32_t u = mx__u32(f);
  uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  uint32_t normal = (a - 0x38000000u + 0x0fffu + ((a >> 13) & 1u)) >> 13;
  uint32_t sub = mx__u32(mx__f32(a) + 0.5f) - 0x3f000000u;
  uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
  uint32_t r = a >= 0x38800000u ? normal : sub;
  r = a >= 0x477ff000u ? 0x7c00u : r;
  r = a > 0x7f800000u ? nan : r;
  return (uint16_t)(r | sign);
}

/* double -> float16 bits, rounded once (as NumPy's float64 -> float16). */
MX_INLINE uint16_t mx_f64_to_f16(double d) {
  uint64_t u = mx__u64(d);
  uint64_t sign = (u >> 48) & 0x8000u, a = u & 0x7fffffffffffffffULL;
  uint64_t normal = (a - 0x3f00000000000000ULL + 0x1ffffffffffULL + ((a >> 42) & 1u)) >> 42;
  uint64_t sub = mx__u64(mx__f64(a) + 0x1p28) - 0x41b0000000000000ULL;
  uint64_t nan = 0x7e00u | ((a >> 42) & 0x3ffu);
  uint64_t r = a >= 0x3f10000000000000ULL ? normal : sub;
  r = a >= 0x40effe0000000000ULL ? 0x7c00u : r;
  r = a > 0x7ff0000000000000ULL ? nan : r;
  return (uint16_t)(r | sign);
}

/* bfloat16 bits -> float (exact). */
MX_INLINE float mx_bf16_to_f32(uint16_t h) { return mx__f32((uint32_t)h << 16); }

/* float -> bfloat16 bits, round to nearest even; nan -> 0x7fc0 with the sign (ml_dtypes). */
MX_INLINE uint16_t mx_f32_to_bf16(float f) {
  uint32_t u = mx__u32(f);
  uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  uint32_t nan = ((u >> 16) & 0x8000u) | 0x7fc0u;
  return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : r);
}

/* double -> bfloat16 bits, rounded once (ml_dtypes rounds float64 directly). */
MX_INLINE uint16_t mx_f64_to_bf16(double d) {
  uint64_t u = mx__u64(d);
  uint64_t sign = (u >> 48) & 0x8000u, a = u & 0x7fffffffffffffffULL;
  uint64_t normal = (a - 0x3800000000000000ULL + 0xfffffffffffULL + ((a >> 45) & 1u)) >> 45;
  uint64_t sub = mx__u64(mx__f64(a) + 0x1p-81) - 0x3ae0000000000000ULL;
  uint64_t r = a >= 0x3810000000000000ULL ? normal : sub;
  r = a >= 0x47eff00000000000ULL ? 0x7f80u : r; /* >= (2 - 2^-8) 2^127 rounds to inf */
  r = a > 0x7ff0000000000000ULL ? 0x7fc0u : r;
  return (uint16_t)(r | sign);
}

/* ------------------------------------------------------------------------------------------- */
/* Integers with JAX semantics and no undefined behaviour.
 *   mx_div_<t>(x, y): truncating division; x / 0 = -1 (signed) or all ones (unsigned);
 *                     INT_MIN / -1 = INT_MIN.
 *   mx_rem_<t>(x, y): remainder with the sign of x; x % 0 = x; INT_MIN % -1 = 0.
 *   mx_shl_<t>(x, y), mx_shr_logical_<t>(x, y): 0 when y, read as unsigned, is >= the width.
 *   mx_shr_arith_<t>(x, y): sign fill (0 or -1) when y, read as unsigned, is >= the width; on
 *                     unsigned types it acts on the bit pattern as signed.
 *   mx_f32_to_<t>(x), mx_f64_to_<t>(x): truncate toward zero, nan -> 0, saturate out of range. */

#define MX__INT_SIGNED(T, UT, N, BITS, TMIN)                                                     \
  MX_INLINE T mx_div_##N(T x, T y) {                                                             \
    int bad = (y == 0) | ((x == TMIN) & (y == -1));                                              \
    T ys = bad ? (T)1 : y;                                                                       \
    T q = (T)(x / ys);                                                                           \
    return y == 0 ? (T)-1 : q;                                                                   \
  }                                                                                              \
  MX_INLINE T mx_rem_##N(T x, T y) {                                                             \
    int bad = (y == 0) | ((x == TMIN) & (y == -1));                                              \
    T ys = bad ? (T)1 : y;                                                                       \
    T r = (T)(x % ys);                                                                           \
    return y == 0 ? x : r;                                                                       \
  }                                                                                              \
  MX_INLINE T mx_shl_##N(T x, T y) {                                                             \
    UT n = (UT)y;                                                                                \
    int over = n >= (UT)BITS;                                                                    \
    UT r = (UT)((UT)x << (over ? 0 : n));                                                        \
    return over ? (T)0 : (T)r;                                                                   \
  }                                                                                              \
  MX_INLINE T mx_shr_logical_##N(T x, T y) {                                                     \
    UT n = (UT)y;                                                                                \
    int over = n >= (UT)BITS;                                                                    \
    UT r = (UT)((UT)x >> (over ? 0 : n));                                                        \
    return over ? (T)0 : (T)r;                                                                   \
  }                                                                                              \
  MX_INLINE T mx_shr_arith_##N(T x, T y) {                                                       \
    UT n = (UT)y;                                                                                \
    int over = n >= (UT)BITS;                                                                    \
    UT s = over ? (UT)0 : n;                                                                     \
    T r = x < 0 ? (T)~(T)((T)~x >> s) : (T)(x >> s);                                             \
    return over ? (x < 0 ? (T)-1 : (T)0) : r;                                                    \
  }

#define MX__INT_UNSIGNED(T, ST, N, BITS, TMAX)                                                   \
  MX_INLINE T mx_div_##N(T x, T y) {                                                             \
    T q = (T)(x / (y == 0 ? (T)1 : y));                                                          \
    return y == 0 ? (T)TMAX : q;                                                                 \
  }                                                                                              \
  MX_INLINE T mx_rem_##N(T x, T y) {                                                             \
    T r = (T)(x % (y == 0 ? (T)1 : y));                                                          \
    return y == 0 ? x : r;                                                                       \
  }                                                                                              \
  MX_INLINE T mx_shl_##N(T x, T y) {                                                             \
    int over = y >= (T)BITS;                                                                     \
    T r = (T)(x << (over ? 0 : y));                                                              \
    return over ? (T)0 : r;                                                                      \
  }                                                                                              \
  MX_INLINE T mx_shr_logical_##N(T x, T y) {                                                     \
    int over = y >= (T)BITS;                                                                     \
    T r = (T)(x >> (over ? 0 : y));                                                              \
    return over ? (T)0 : r;                                                                      \
  }                                                                                              \
  MX_INLINE T mx_shr_arith_##N(T x, T y) {                                                       \
    int over = y >= (T)BITS;                                                                     \
    T s = over ? (T)0 : y;                                                                       \
    int negv = (x >> (BITS - 1)) != 0;                                                           \
    T r = negv ? (T)~(T)((T)~x >> s) : (T)(x >> s);                                              \
    return over ? (negv ? (T)TMAX : (T)0) : r;                                                   \
  }

MX__INT_SIGNED(int8_t, uint8_t, i8, 8, INT8_MIN)
MX__INT_SIGNED(int16_t, uint16_t, i16, 16, INT16_MIN)
MX__INT_SIGNED(int32_t, uint32_t, i32, 32, INT32_MIN)
MX__INT_SIGNED(int64_t, uint64_t, i64, 64, INT64_MIN)
MX__INT_UNSIGNED(uint8_t, int8_t, u8, 8, UINT8_MAX)
MX__INT_UNSIGNED(uint16_t, int16_t, u16, 16, UINT16_MAX)
MX__INT_UNSIGNED(uint32_t, int32_t, u32, 32, UINT32_MAX)
MX__INT_UNSIGNED(uint64_t, int64_t, u64, 64, UINT64_MAX)

/* LO = the type's minimum, HI = its maximum + 1, both exact in FT. */
#define MX__F2I(FT, FN, T, N, LO, HI, TMIN, TMAX)                                                \
  MX_INLINE T mx_##FN##_to_##N(FT x) {                                                           \
    int over = x >= (FT)(HI), under = x < (FT)(LO);                                              \
    FT xs = (over | under | (x != x)) ? (FT)0 : x;                                               \
    T r = (T)xs;                                                                                 \
    r = over ? (T)(TMAX) : r;                                                                    \
    return under ? (T)(TMIN) : r;                                                                \
  }
#define MX__F2I_ALL(FT, FN)                                                                      \
  MX__F2I(FT, FN, int8_t, i8, -0x1p7, 0x1p7, INT8_MIN, INT8_MAX)                                 \
  MX__F2I(FT, FN, int16_t, i16, -0x1p15, 0x1p15, INT16_MIN, INT16_MAX)                           \
  MX__F2I(FT, FN, int32_t, i32, -0x1p31, 0x1p31, INT32_MIN, INT32_MAX)                           \
  MX__F2I(FT, FN, int64_t, i64, -0x1p63, 0x1p63, INT64_MIN, INT64_MAX)                           \
  MX__F2I(FT, FN, uint8_t, u8, 0.0, 0x1p8, 0, UINT8_MAX)                                         \
  MX__F2I(FT, FN, uint16_t, u16, 0.0, 0x1p16, 0, UINT16_MAX)                                     \
  MX__F2I(FT, FN, uint32_t, u32, 0.0, 0x1p32, 0, UINT32_MAX)                                     \
  MX__F2I(FT, FN, uint64_t, u64, 0.0, 0x1p64, 0, UINT64_MAX)
MX__F2I_ALL(float, f32)
MX__F2I_ALL(double, f64)

#endif /* MORPHAX_MATHLIB_H */
