"""Error-free transformations of floating-point arithmetic, written with operators only, so the
same code computes on NumPy arrays (fma's reference) and writes StableHLO (fma's lowering, on
prims/_stablehlo_expr.py's values). Imports nothing."""

from __future__ import annotations


def two_product(a, b):
    """(p, e) with p + e == a * b exactly, for float64 operands (Dekker's splitting)."""
    p = a * b
    split = 134217729.0  # 2**27 + 1
    ah = a * split - (a * split - a)
    bh = b * split - (b * split - b)
    al, bl = a - ah, b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e
