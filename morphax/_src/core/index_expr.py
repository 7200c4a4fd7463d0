"""Symbolic integer index expressions: the language of LAYOUT primitives' index maps.

An `IndexExpr` is an integer expression over named loop variables (``+ - *``, ``//`` and ``%`` by
a positive int), kept in a canonical affine form so the obvious cases simplify as they are built.
It evaluates with NumPy (tests, the reference renderer) and renders to C. Imports nothing from
morphax, so primitives and the compiler may both use it.
"""

from __future__ import annotations

import math
import operator

__all__ = ["IndexExpr", "const", "var"]

_INF = math.inf


class _Atom:
    """A non-affine part of an expression: a variable, or ``e // k``, ``e % k``, ``e1 * e2``."""

    __slots__ = ("_key",)

    def __eq__(self, other):
        return type(other) is type(self) and other._key == self._key

    def __hash__(self):
        return hash((type(self).__name__, self._key))

    def __lt__(self, other):  # a deterministic order of the terms of a sum
        return _sort_key(self) < _sort_key(other)


class _Var(_Atom):
    __slots__ = ("name", "extent")

    def __init__(self, name: str, extent: int | None):
        self.name, self.extent = name, extent
        self._key = (name, extent)

    def range(self):
        return 0, (_INF if self.extent is None else max(self.extent - 1, 0))

    def evaluate(self, env):
        return env[self.name]

    def to_c(self, names):
        return names[self.name]

    def __repr__(self):
        return self.name


class _ByConstant(_Atom):
    """`expr // k` or `expr % k` for a positive constant k; the C operator agrees with Python's
    only on non-negative operands, which `to_c` checks."""

    __slots__ = ("expr", "k")
    op = ""

    def __init__(self, expr: IndexExpr, k: int):
        self.expr, self.k = expr, k
        self._key = (expr, k)

    def evaluate(self, env):
        value = self.expr.evaluate(env)
        return value // self.k if self.op == "//" else value % self.k

    def to_c(self, names):
        _check_non_negative(self.expr, self.op, self.k)
        c_op = "/" if self.op == "//" else "%"
        return f"{self.expr._to_c(names, paren=True)} {c_op} {self.k}"

    def __repr__(self):
        return f"{self.expr._repr(paren=True)} {self.op} {self.k}"


class _FloorDiv(_ByConstant):
    __slots__ = ()
    op = "//"

    def range(self):
        lo, hi = self.expr.range()
        return _floordiv_bound(lo, self.k), _floordiv_bound(hi, self.k)


class _Mod(_ByConstant):
    __slots__ = ()
    op = "%"

    def range(self):
        lo, hi = self.expr.range()
        return 0, (min(self.k - 1, hi) if lo >= 0 else self.k - 1)


class _Mul(_Atom):
    __slots__ = ("a", "b")

    def __init__(self, a: IndexExpr, b: IndexExpr):
        a, b = sorted((a, b), key=repr)
        self.a, self.b = a, b
        self._key = (a, b)

    def range(self):
        (alo, ahi), (blo, bhi) = self.a.range(), self.b.range()
        products = [_mul_bound(x, y) for x in (alo, ahi) for y in (blo, bhi)]
        return min(products), max(products)

    def evaluate(self, env):
        return self.a.evaluate(env) * self.b.evaluate(env)

    def to_c(self, names):
        return f"{self.a._to_c(names, paren=True)} * {self.b._to_c(names, paren=True)}"

    def __repr__(self):
        return f"{self.a._repr(paren=True)} * {self.b._repr(paren=True)}"


def _check_non_negative(expr, op, k):
    # C's `/` and `%` truncate where Python's `//` and `%` floor: equal only for dividends >= 0.
    if expr.range()[0] < 0:
        raise ValueError(
            f"index expression ({expr!r}) {op} {k}: the dividend may be negative, where C's truncating "
            "division differs from floor division; give the loop variables their extents."
        )


def _sort_key(atom):
    return (type(atom).__name__, repr(atom))


def _floordiv_bound(x, k):
    return x if x in (_INF, -_INF) else x // k


def _mul_bound(x, y):
    return 0 if x == 0 or y == 0 else x * y


def _as_int(x) -> int:
    if isinstance(x, bool):
        raise TypeError(f"index expressions take integers, not bool ({x!r})")
    return operator.index(x)


class IndexExpr:
    """``const + sum(coeff * atom)``: an integer expression in canonical affine form.

    Variables stand for loop indices, so they are never negative; give them their `extent` and
    simplifications that need a value range (``(4*i + j) // 4`` is ``i`` when ``0 <= j < 4``) apply.
    Instances are immutable and hashable; ``==`` compares structure (after simplification) and
    returns a bool.
    """

    __slots__ = ("const", "terms", "_hash")

    def __init__(self, const: int = 0, terms=()):
        # `terms`: (atom, coeff) pairs, non-zero coefficients, atoms unique and sorted.
        self.const = const
        self.terms = tuple(terms)
        self._hash = None

    # ----------------------------------------------------------------------------- construction

    @staticmethod
    def var(name: str, extent: int | None = None) -> IndexExpr:
        """The loop variable `name`, with values in ``range(extent)`` (unbounded if None)."""
        return IndexExpr(0, ((_Var(name, None if extent is None else _as_int(extent)), 1),))

    @staticmethod
    def lift(x) -> IndexExpr:
        return x if isinstance(x, IndexExpr) else IndexExpr(_as_int(x))

    @staticmethod
    def _sum(const, pairs) -> IndexExpr:
        acc: dict = {}
        for atom, coeff in pairs:
            acc[atom] = acc.get(atom, 0) + coeff
        terms = sorted(((a, c) for a, c in acc.items() if c != 0), key=lambda t: _sort_key(t[0]))
        return IndexExpr(const, terms)

    # ------------------------------------------------------------------------------ inspection

    @property
    def is_const(self) -> bool:
        return not self.terms

    @property
    def value(self) -> int:
        """The constant's value (a TypeError if the expression has variables)."""
        if self.terms:
            raise TypeError(f"index expression {self!r} is not a constant")
        return self.const

    def variables(self) -> set[str]:
        """Names of the loop variables the expression reads."""
        out: set[str] = set()
        for atom, _ in self.terms:
            if isinstance(atom, _Var):
                out.add(atom.name)
            elif isinstance(atom, (_FloorDiv, _Mod)):
                out |= atom.expr.variables()
            else:
                out |= atom.a.variables() | atom.b.variables()
        return out

    def range(self) -> tuple:
        """Inclusive (lo, hi) bounds of the value, from the variables' extents (may be +-inf)."""
        lo = hi = self.const
        for atom, c in self.terms:
            alo, ahi = atom.range()
            a, b = _mul_bound(alo, c), _mul_bound(ahi, c)
            lo, hi = lo + min(a, b), hi + max(a, b)
        return lo, hi

    # ------------------------------------------------------------------------------- arithmetic

    def __add__(self, other):
        try:
            other = IndexExpr.lift(other)
        except TypeError:
            return NotImplemented
        return IndexExpr._sum(self.const + other.const, self.terms + other.terms)

    __radd__ = __add__

    def __neg__(self):
        return IndexExpr(-self.const, [(a, -c) for a, c in self.terms])

    def __sub__(self, other):
        try:
            other = IndexExpr.lift(other)
        except TypeError:
            return NotImplemented
        return self + (-other)

    def __rsub__(self, other):
        try:
            other = IndexExpr.lift(other)
        except TypeError:
            return NotImplemented
        return other + (-self)

    def _scale(self, k: int) -> IndexExpr:
        if k == 0:
            return IndexExpr(0)
        return IndexExpr(self.const * k, [(a, c * k) for a, c in self.terms])

    def __mul__(self, other):
        try:
            other = IndexExpr.lift(other)
        except TypeError:
            return NotImplemented
        if other.is_const:
            return self._scale(other.const)
        if self.is_const:
            return other._scale(self.const)
        return IndexExpr(0, ((_Mul(self, other), 1),))

    __rmul__ = __mul__

    def _single_atom(self):
        """The atom when the expression is exactly one atom (coefficient 1, no constant)."""
        if self.const == 0 and len(self.terms) == 1 and self.terms[0][1] == 1:
            return self.terms[0][0]
        return None

    def _split(self, k: int):
        """``self == k * q + r``: the terms whose coefficient `k` divides go to `q`, those with a
        coefficient in (0, k) to `r`, the constant to both (its remainder in [0, k)). None when
        a term would have to be split in two (``(6*i + j) // 4`` stays as it is)."""
        q_const, r_const = divmod(self.const, k)
        q_terms, r_terms = [], []
        for atom, c in self.terms:
            if c % k == 0:
                q_terms.append((atom, c // k))
            elif 0 < c < k:
                r_terms.append((atom, c))
            else:
                return None
        return IndexExpr(q_const, q_terms), IndexExpr(r_const, r_terms)

    def __floordiv__(self, k):
        k = _positive(k, "//")
        if k == 1:
            return self
        if self.is_const:
            return IndexExpr(self.const // k)
        lo, hi = self.range()
        if lo >= 0 and hi < k:
            return IndexExpr(0)
        inner = self._single_atom()
        if isinstance(inner, _FloorDiv):  # (e // a) // k == e // (a * k)
            return inner.expr // (inner.k * k)
        # (k*q + r) // k == q + r // k for integers; split only when r stays non-negative, so
        # the C rendering (truncating division) never sees a negative operand it did not before.
        split = self._split(k)
        if split is None:
            return IndexExpr(0, ((_FloorDiv(self, k), 1),))
        q, r = split
        if r.range()[1] < k:  # r >= 0 by construction
            return q
        return q + IndexExpr(0, ((_FloorDiv(r, k), 1),))

    def __mod__(self, k):
        k = _positive(k, "%")
        if k == 1:
            return IndexExpr(0)
        if self.is_const:
            return IndexExpr(self.const % k)
        lo, hi = self.range()
        if lo >= 0 and hi < k:
            return self
        inner = self._single_atom()
        if isinstance(inner, _Mod) and inner.k % k == 0:  # (e % (m*k)) % k == e % k
            return inner.expr % k
        split = self._split(k)  # (k*q + r) % k == r % k
        if split is None:
            return IndexExpr(0, ((_Mod(self, k), 1),))
        r = split[1]
        if r.range()[1] < k:  # r >= 0 by construction
            return r
        return IndexExpr(0, ((_Mod(r, k), 1),))

    def __rfloordiv__(self, other):
        raise TypeError("index expressions divide only by a positive Python int")

    __rmod__ = __rfloordiv__

    # ------------------------------------------------------------------------------- evaluation

    def evaluate(self, env: dict):
        """The value with each variable read from `env` (name -> int or integer ndarray; arrays
        broadcast, NumPy semantics). Values that are IndexExprs substitute symbolically."""
        out = self.const
        for atom, c in self.terms:
            v = atom.evaluate(env)
            out = out + (v if c == 1 else v * c)
        return out

    def to_c(self, names: dict) -> str:
        """A C expression; `names` maps each variable to a C expression of type int64_t, so all
        arithmetic is int64 (constants are plain literals, promoted by the variables).

        C's ``/`` and ``%`` truncate toward zero where Python's floor; they agree here because the
        operands of every ``//`` and ``%`` are non-negative: variables are loop indices (>= 0),
        the maps built from them keep the dividends non-negative, and simplification only
        rewrites a division when the part left inside stays non-negative. A dividend whose range
        may reach below zero (a variable without extent under a negative coefficient) raises."""
        return self._to_c(names, paren=False)

    def _to_c(self, names, paren):
        return self._render(lambda a: a.to_c(names), paren)

    def _repr(self, paren):
        return self._render(repr, paren)

    def _render(self, atom_str, paren):
        items = []  # (positive?, text) in order
        for atom, c in self.terms:
            s = atom_str(atom)
            if not isinstance(atom, _Var) and c != 1:  # "2 * (i // 3)", "-(i % 4)"
                s = f"({s})"
            items.append((c > 0, s if abs(c) == 1 else f"{abs(c)} * {s}"))
        if self.const or not items:
            item = (self.const >= 0, str(abs(self.const)))
            if items and not items[0][0] and self.const > 0:
                items.insert(0, item)  # "5 - i" rather than "-i + 5"
            else:
                items.append(item)
        first_pos, first = items[0]
        parts = [first if first_pos else f"-{first}"]
        parts += [f"{'+' if pos else '-'} {t}" for pos, t in items[1:]]
        text = " ".join(parts)
        if not self.terms:
            simple = self.const >= 0
        else:
            simple = len(parts) == 1 and self.terms[0][1] == 1 and isinstance(self.terms[0][0], _Var)
        return f"({text})" if paren and not simple else text

    # ------------------------------------------------------------------------------- protocol

    def __eq__(self, other):
        if isinstance(other, int) and not isinstance(other, bool):
            return not self.terms and self.const == other
        if not isinstance(other, IndexExpr):
            return NotImplemented
        return self.const == other.const and self.terms == other.terms

    def __hash__(self):
        if self._hash is None:
            self._hash = hash((self.const, self.terms)) if self.terms else hash(self.const)
        return self._hash

    def __repr__(self):
        return self._repr(paren=False)

    def __bool__(self):
        raise TypeError(f"the truth value of an index expression ({self!r}) is not defined")


def _positive(k, op) -> int:
    if isinstance(k, IndexExpr):
        if not k.is_const:
            raise TypeError(f"index expressions support {op} only by a positive int, got {k!r}")
        k = k.const
    k = _as_int(k)
    if k <= 0:
        raise ValueError(f"index expressions support {op} only by a positive int, got {k}")
    return k


def var(name: str, extent: int | None = None) -> IndexExpr:
    """The loop variable `name` (values in ``range(extent)`` when given)."""
    return IndexExpr.var(name, extent)


def const(value: int) -> IndexExpr:
    """The integer constant `value`."""
    return IndexExpr(_as_int(value))


def row_major_offset(index, shape) -> IndexExpr:
    """The offset of `index` (IndexExprs or ints, one per axis) into a row-major array of `shape`."""
    total, stride = IndexExpr(0), 1
    strides = []
    for n in reversed(shape):
        strides.append(stride)
        stride *= _as_int(n)
    for i, st in zip(index, reversed(strides)):
        total = total + IndexExpr.lift(i) * st
    return total
