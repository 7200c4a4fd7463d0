"""Symbolic dimension expressions, as `jax.export` defines them: integer polynomials over
dimension variables and the factors floordiv/mod/max/min, normalized and printed as JAX prints
them, compared with a bounds decision (every variable >= 1, plus a scope's explicit constraints).
"""

from __future__ import annotations

import functools
import math
import operator

from morphax._src.errors import InconclusiveDimensionOperation as _CoreInconclusive

_HELP = """
This error arises for comparison operations with shapes that
are non-constant, and the result of the operation cannot be represented as
a boolean value for all values of the symbolic dimensions involved.

Please see https://docs.jax.dev/en/latest/export/shape_poly.html#comparison-of-symbolic-dimensions-is-partially-supported
for more details.
"""


class InconclusiveDimensionOperation(_CoreInconclusive):
    """Raised when we cannot conclusively compute with symbolic dimensions."""

    def __init__(self, message: str):
        super().__init__(f"{message}{_HELP}")


def _cmp(a, b) -> int:
    return -1 if a < b else (1 if a > b else 0)


def _cmp_seq(s1, s2, elem_cmp) -> int:
    for e1, e2 in zip(s1, s2):
        if c := elem_cmp(e1, e2):
            return c
    return _cmp(len(s1), len(s2))


class _Factor:
    """A variable, or floordiv/mod/max/min of expressions."""

    __slots__ = ("var", "operation", "operands", "size")

    def __init__(self, *operands, var=None, operation=None):
        self.var, self.operation, self.operands = var, operation, operands
        self.size = 1 if var is not None else 1 + sum(o.size for o in operands)

    def cmp(self, other: _Factor) -> int:
        if c := _cmp(self.size, other.size):
            return c
        if self.var is not None or other.var is not None:
            return _cmp(self.var or "", other.var or "")
        if c := _cmp(self.operation, other.operation):
            return c
        return _cmp_seq(self.operands, other.operands, lambda a, b: a.cmp(b))

    def __eq__(self, other):
        return isinstance(other, _Factor) and self.cmp(other) == 0

    def __hash__(self):
        return hash((self.var, self.operation, self.operands))

    def __str__(self):
        if self.var is not None:
            return self.var
        return f"{self.operation}({', '.join(str(o) for o in self.operands)})"

    def vars(self) -> set:
        return {self.var} if self.var is not None else set().union(*(o.vars() for o in self.operands))

    def evaluate(self, env):
        if self.var is not None:
            if self.var not in env:
                raise KeyError(self.var)
            return env[self.var]
        a, b = (o._evaluate(env) for o in self.operands)
        return {"floordiv": operator.floordiv, "mod": operator.mod, "max": max, "min": min}[self.operation](
            a, b
        )


class _Term:
    """A product of factors with positive exponents; the empty product is the constant 1."""

    __slots__ = ("factors", "size")

    def __init__(self, factors):
        self.factors = tuple(factors)  # sorted (factor, exponent) pairs
        self.size = sum(1 + e * f.size for f, e in self.factors)

    def cmp(self, other: _Term) -> int:
        if c := _cmp(self.size, other.size):
            return c
        return _cmp_seq(self.factors, other.factors, lambda a, b: a[0].cmp(b[0]) or _cmp(a[1], b[1]))

    def __eq__(self, other):
        return isinstance(other, _Term) and self.cmp(other) == 0

    def __hash__(self):
        return hash(self.factors)

    def __str__(self):
        return "*".join(f"{f}^{e}" if e != 1 else str(f) for f, e in self.factors)

    def mul(self, other: _Term) -> _Term:
        return _Term(_combine(self.factors, other.factors, 1))

    def divide(self, other: _Term) -> _Term:
        pairs = _combine(self.factors, other.factors, -1)
        if any(e < 0 for _, e in pairs):
            raise InconclusiveDimensionOperation(f"Cannot divide {self} by {other}.")
        return _Term(pairs)

    def evaluate(self, env):
        return math.prod(f.evaluate(env) ** e for f, e in self.factors)


def _combine(pairs1, pairs2, k2):
    """pairs1 + k2 * pairs2, for sorted (key, count) pairs (terms or factors), sorted again."""
    acc = dict(pairs1)
    for key, count in pairs2:
        acc[key] = acc.get(key, 0) + k2 * count
    items = [(k, c) for k, c in acc.items() if c != 0]
    return sorted(items, key=functools.cmp_to_key(lambda a, b: a[0].cmp(b[0])))


_ONE = _Term(())


class _DimExpr:
    """Symbolic expressions using dimension variables: a sum of terms with integer coefficients
    (largest term first), in the SymbolicScope it was made in. Operations that cannot be decided
    for every value of the variables raise InconclusiveDimensionOperation."""

    __slots__ = ("_terms", "_scope", "size")
    __array_priority__ = 1000

    def __init__(self, terms, scope):
        self._terms = tuple(terms) or ((_ONE, 0),)
        self._scope = scope
        self.size = sum(1 + abs(k) * t.size for t, k in self._terms)

    @property
    def scope(self):
        return self._scope

    # ---------------------------------------------------------------------- construction
    @staticmethod
    def _normalize(coeffs: dict, scope):
        items = [(t, k) for t, k in coeffs.items() if k != 0]
        items.sort(key=functools.cmp_to_key(lambda a, b: b[0].cmp(a[0])))
        if not items:
            return 0
        if items[0][0] is _ONE or items[0][0] == _ONE:
            return items[0][1]
        return _DimExpr(items, scope)

    @staticmethod
    def _from_var(name: str, scope):
        return _DimExpr(((_Term(((_Factor(var=name), 1),)), 1),), scope)

    @staticmethod
    def _from_operation(operation: str, *operands, scope):
        ops = tuple(_ensure_poly(o, operation, scope) for o in operands)
        return _DimExpr(((_Term(((_Factor(*ops, operation=operation), 1),)), 1),), scope)

    def _coeffs(self) -> dict:
        return {t: k for t, k in self._terms if k != 0}

    def _is_constant(self):
        return len(self._terms) == 1 and self._terms[0][0] == _ONE

    def _get_vars(self) -> set:
        return set().union(*(f.vars() for t, _ in self._terms for f, _ in t.factors))

    get_vars = _get_vars

    def _to_var(self):
        if len(self._terms) == 1:
            ((t, k),) = self._terms
            if k == 1 and len(t.factors) == 1 and t.factors[0][1] == 1:
                return t.factors[0][0].var
        return None

    def cmp(self, other: _DimExpr) -> int:
        if c := _cmp(self.size, other.size):
            return c
        return _cmp_seq(self._terms, other._terms, lambda a, b: a[0].cmp(b[0]) or _cmp(a[1], b[1]))

    # ------------------------------------------------------------------------ arithmetic
    def _linear(self, k1: int, other, k2: int):
        if isinstance(other, _DimExpr):
            self._scope._check_same_scope(other, when="for linear combination")
            other_pairs = other._terms
        else:
            other_pairs = ((_ONE, operator.index(other)),)
        coeffs = {t: k * k1 for t, k in self._terms}
        for t, k in other_pairs:
            coeffs[t] = coeffs.get(t, 0) + k * k2
        return _DimExpr._normalize(coeffs, self._scope)

    def __add__(self, other):
        return self._linear(1, other, 1) if _convertible(other) else NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        return self._linear(1, other, -1) if _convertible(other) else NotImplemented

    def __rsub__(self, other):
        return self._linear(-1, other, 1) if _convertible(other) else NotImplemented

    def __neg__(self):
        return self._linear(-1, 0, 0)

    def __mul__(self, other):
        if not _convertible(other):
            return NotImplemented
        other = _ensure_poly(other, "mul", self._scope)
        coeffs: dict = {}
        for t1, k1 in self._terms:
            for t2, k2 in other._terms:
                t = t1.mul(t2)
                coeffs[t] = coeffs.get(t, 0) + k1 * k2
        return _DimExpr._normalize(coeffs, self._scope)

    __rmul__ = __mul__

    def __pow__(self, power, modulo=None):
        if modulo is not None:
            raise NotImplementedError("__pow__ modulo not implemented")
        if is_symbolic_dim(power) or power != int(power):
            raise ValueError(
                f"Symbolic dimension cannot be raised to non-integer powers: '{self}' ** '{power}'"
            )
        if power < 0:
            raise ValueError(f"Symbolic dimension cannot be raised to negative powers: '{self}' ** '{power}'")
        return functools.reduce(operator.mul, [self] * int(power), 1)

    def __floordiv__(self, divisor):
        return self._divmod(divisor)[0] if _convertible(divisor) else NotImplemented

    def __rfloordiv__(self, other):
        return self._rdivmod(other, "floordiv")[0] if _convertible(other) else NotImplemented

    def __mod__(self, divisor):
        return self._divmod(divisor)[1] if _convertible(divisor) else NotImplemented

    def __rmod__(self, other):
        return self._rdivmod(other, "mod")[1] if _convertible(other) else NotImplemented

    def __divmod__(self, divisor):
        return self._divmod(divisor) if _convertible(divisor) else NotImplemented

    def __rdivmod__(self, other):
        return self._rdivmod(other, "divmod") if _convertible(other) else NotImplemented

    def _rdivmod(self, other, name):
        return _ensure_poly(other, name, self._scope)._divmod(self)

    def __truediv__(self, other):
        raise NotImplementedError(_AS_VALUE)

    __rtruediv__ = __truediv__

    def _divmod(self, divisor):
        """Polynomial division with an integer remainder (JAX's `_divmod`); a floordiv/mod factor
        where the division is not exact."""
        try:
            dividend, quotient = self, 0
            while is_symbolic_dim(dividend) and not dividend._is_constant():
                term, count = dividend._terms[0]
                if isinstance(divisor, _DimExpr):
                    dterm, dcount = divisor._terms[0]
                    qterm = term.divide(dterm)
                else:
                    qterm, dcount = term, int(divisor)
                qcount, rcount = divmod(count, dcount)
                if rcount != 0:
                    raise InconclusiveDimensionOperation("")
                q = _DimExpr._normalize({qterm: qcount}, self._scope)
                quotient += q
                dividend -= q * divisor
            dividend = int(dividend)
            if isinstance(divisor, _DimExpr):
                if dividend != 0:
                    raise InconclusiveDimensionOperation("")
                return quotient, 0
            q, r = divmod(dividend, int(divisor))
            return quotient + q, r
        except InconclusiveDimensionOperation:
            return (
                _DimExpr._from_operation("floordiv", self, divisor, scope=self._scope),
                _DimExpr._from_operation("mod", self, divisor, scope=self._scope),
            )

    def __int__(self):
        if self._is_constant():
            return self._terms[0][1]
        raise InconclusiveDimensionOperation(
            f"Symbolic dimension '{self}' used in a context that requires a constant"
        )

    # ------------------------------------------------------------------------ comparison
    def __eq__(self, other):
        if isinstance(other, _DimExpr):
            if self._scope is not other._scope:
                return False
        elif not _convertible(other):
            return False
        diff = self - other
        return not is_symbolic_dim(diff) and diff == 0  # a symbolic difference: unequal, as JAX says

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash((self._terms, id(self._scope)))

    def __ge__(self, other):
        return _geq_decision(self, other, lambda: f"'{self}' >= '{other}'")

    def __le__(self, other):
        return _geq_decision(other, self, lambda: f"'{self}' <= '{other}'")

    def __gt__(self, other):
        return not _geq_decision(other, self, lambda: f"'{self}' > '{other}'")

    def __lt__(self, other):
        return not _geq_decision(self, other, lambda: f"'{self}' < '{other}'")

    def max(self, other):
        lb, ub = _bounds(self - other)
        if lb >= 0:
            return self
        if ub <= 0:
            return other
        return _DimExpr._from_operation("max", self, other, scope=self._scope)

    def min(self, other):
        lb, ub = _bounds(self - other)
        if lb >= 0:
            return other
        if ub <= 0:
            return self
        return _DimExpr._from_operation("min", self, other, scope=self._scope)

    rmax, rmin = max, min

    # ------------------------------------------------------------------------ evaluation
    def _evaluate(self, env: dict) -> int:
        """The value at `env` (variable name -> int); KeyError names a missing variable."""
        return sum(k * t.evaluate(env) for t, k in self._terms)

    def __str__(self):
        parts = []
        for t, k in self._terms:
            sign = "+" if k > 0 else "-"
            if t == _ONE:
                parts.append(f"{sign} {abs(k)}" if k != 0 else "0")
            else:
                parts.append(f"{sign} {t}" if abs(k) == 1 else f"{sign} {abs(k)}*{t}")
        text = " ".join(parts)
        return text[2:] if text.startswith("+ ") else text

    __repr__ = __str__


_AS_VALUE = (
    "Evaluation rule for 'dim_as_value' is not implemented. It seems that you are using shape "
    "polymorphism outside jax.export."
)


def _convertible(p) -> bool:
    if isinstance(p, _DimExpr):
        return True
    if isinstance(p, bool):
        return False
    try:
        operator.index(p)
        return True
    except TypeError:
        return False


def _ensure_poly(p, operation: str, scope) -> _DimExpr:
    if isinstance(p, _DimExpr):
        scope._check_same_scope(p, when=f"for operation {operation}")
        return p
    if _convertible(p):
        return _DimExpr(((_ONE, operator.index(p)),), scope)
    raise TypeError(f"Symbolic dimension {operation} not supported for {p}.")


def is_symbolic_dim(p) -> bool:
    """Checks if a dimension is symbolic."""
    return isinstance(p, _DimExpr)


def max_dim(d1, d2):
    if is_symbolic_dim(d1):
        return d1.max(d2)
    if is_symbolic_dim(d2):
        return d2.rmax(d1)
    return max(d1, d2)


def min_dim(d1, d2):
    if is_symbolic_dim(d1):
        return d1.min(d2)
    if is_symbolic_dim(d2):
        return d2.rmin(d1)
    return min(d1, d2)


# ---------------------------------------------------------------------------------- bounds
def _mul_bounds(a, b):
    def mul(x, y):
        return 0 if x == 0 or y == 0 else x * y

    products = [mul(x, y) for x in a for y in b]
    return min(products), max(products)


def _factor_bounds(f: _Factor, scope):
    if f.var is not None:
        return scope._var_bounds(f.var)
    ops = [_plain_bounds(o) if is_symbolic_dim(o) else (o, o) for o in f.operands]
    (lb1, ub1), (lb2, ub2) = ops
    if f.operation == "max":
        return max(lb1, lb2), max(ub1, ub2)
    if f.operation == "min":
        return min(lb1, lb2), min(ub1, ub2)
    if lb2 == ub2 and lb2 > 0 and math.isfinite(lb2):  # a constant positive divisor
        if f.operation == "mod":
            return 0, lb2 - 1
        return (math.floor(lb1 / lb2) if math.isfinite(lb1) else lb1), (
            math.floor(ub1 / lb2) if math.isfinite(ub1) else ub1
        )
    return -math.inf, math.inf


def _plain_bounds(e: _DimExpr):
    lb = ub = 0
    for t, k in e._terms:
        tb = (1, 1)
        for f, exp in t.factors:
            fb = _factor_bounds(f, e._scope)
            for _ in range(exp):
                tb = _mul_bounds(tb, fb)
        tl, tu = _mul_bounds(tb, (k, k))
        lb, ub = lb + tl, ub + tu
    return lb, ub


def _bounds(e):
    """Lower and upper bounds of `e`: interval arithmetic with every variable >= 1, refined by the
    scope's explicit constraints (`d >= 0` gives e >= lb(e - d) and e <= ub(e + d))."""
    if not is_symbolic_dim(e):
        return int(e), int(e)
    lb, ub = _plain_bounds(e)
    for diff in e._scope._geq_diffs():
        lb = max(lb, _plain_bounds_any(e - diff)[0])
        ub = min(ub, _plain_bounds_any(e + diff)[1])
    return lb, ub


def _plain_bounds_any(e):
    return _plain_bounds(e) if is_symbolic_dim(e) else (e, e)


def _geq_decision(e1, e2, describe) -> bool:
    if isinstance(e1, _DimExpr):
        scope = e1.scope
        if isinstance(e2, _DimExpr):
            scope._check_same_scope(e2, f"when comparing {describe()}")
    elif isinstance(e2, _DimExpr):
        scope = e2.scope
    else:
        return int(e1) >= int(e2)
    lb, ub = _bounds(e1 - e2)
    if lb >= 0:
        return True
    if ub < 0:
        return False
    extra = f"\nUsing symbolic scope {scope}" if scope._constraints else ""
    raise InconclusiveDimensionOperation(
        f"Symbolic dimension comparison {describe()} is inconclusive.{extra}"
    )
