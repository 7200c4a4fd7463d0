"""Elementwise StableHLO written as Python arithmetic, for rules that port a numerical algorithm
(special functions, emulated fma): `Expr` wraps a Value and its context; operators and the
functions here write one operation each, Python numbers becoming constants of the other side's
dtype and shape. `while_loop` writes a `stablehlo.while` over Exprs.
"""

from __future__ import annotations

import numpy as np

from morphax._src.prims._stablehlo import broadcast_operand, compare_type, i64_array

_BOOL = np.dtype(bool)


class Expr:
    """A Value with operators that write elementwise StableHLO operations."""

    __slots__ = ("ctx", "value")

    def __init__(self, ctx, value):
        self.ctx, self.value = ctx, value

    @property
    def dtype(self):
        return self.value.dtype

    @property
    def shape(self):
        return self.value.shape

    def like(self, other) -> Expr:
        """`other` (an Expr or a Python number) as an Expr of this one's shape and dtype."""
        if isinstance(other, Expr):
            return other
        return Expr(self.ctx, self.ctx.constant(np.asarray(other, self.dtype), self.dtype, self.shape))

    def op(self, name, *others, dtype=None) -> Expr:
        operands = [self.value, *(self.like(o).value for o in others)]
        out = (self.shape, self.dtype if dtype is None else dtype)
        return Expr(self.ctx, self.ctx.op1(f"stablehlo.{name}", operands, out))

    def __add__(self, o):
        return self.op("add", o)

    def __radd__(self, o):
        return self.like(o).op("add", self)

    def __sub__(self, o):
        return self.op("subtract", o)

    def __rsub__(self, o):
        return self.like(o).op("subtract", self)

    def __mul__(self, o):
        return self.op("multiply", o)

    def __rmul__(self, o):
        return self.like(o).op("multiply", self)

    def __truediv__(self, o):
        return self.op("divide", o)

    def __rtruediv__(self, o):
        return self.like(o).op("divide", self)

    def __neg__(self):
        return self.op("negate")

    def __and__(self, o):
        return self.op("and", o)

    def __or__(self, o):
        return self.op("or", o)

    def __invert__(self):
        return self.op("not")

    def compare(self, direction, o, ctype=None) -> Expr:
        o = self.like(o)
        attrs = {
            "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
            "compare_type": f"#stablehlo<comparison_type {ctype or compare_type(self.dtype)}>",
        }
        out = self.ctx.op1("stablehlo.compare", [self.value, o.value], (self.shape, _BOOL), attrs)
        return Expr(self.ctx, out)

    def __lt__(self, o):
        return self.compare("LT", o)

    def __le__(self, o):
        return self.compare("LE", o)

    def __gt__(self, o):
        return self.compare("GT", o)

    def __ge__(self, o):
        return self.compare("GE", o)

    def eq(self, o):
        return self.compare("EQ", o)

    def ne(self, o):
        return self.compare("NE", o)

    def astype(self, dtype) -> Expr:
        return Expr(self.ctx, self.ctx.convert(self.value, dtype))

    def bitcast(self, dtype) -> Expr:
        return Expr(self.ctx, self.ctx.op1("stablehlo.bitcast_convert", [self.value], (self.shape, dtype)))


def wrap(ctx, *values, shape=None):
    """Exprs of `values`, broadcast to `shape` (lax's rule) when it is given."""
    if shape is not None:
        values = [broadcast_operand(ctx, v, tuple(shape)) for v in values]
    return [Expr(ctx, v) for v in values]


def where(pred: Expr, x, y) -> Expr:
    """`x` where `pred` holds, else `y` (either may be a Python number)."""
    base = x if isinstance(x, Expr) else y
    x, y = base.like(x), base.like(y)
    return Expr(base.ctx, base.ctx.op1("stablehlo.select", [pred.value, x.value, y.value], x.value))


def unary(name: str):
    """A one-operand function: `stablehlo.<name>`, or `chlo.<name>` for `chlo.` names."""
    full = name if "." in name else f"stablehlo.{name}"

    def fn(x: Expr) -> Expr:
        return Expr(x.ctx, x.ctx.op1(full, [x.value], x.value))

    return fn


exp = unary("exponential")
log = unary("log")
log1p = unary("log_plus_one")
sqrt = unary("sqrt")
abs_ = unary("abs")
lgamma = unary("chlo.lgamma")
digamma = unary("chlo.digamma")


def isnan(x: Expr) -> Expr:
    return x.ne(x)


def any_true(pred: Expr) -> Expr:
    """Whether any element of the bool `pred` is true, as a scalar Expr."""
    if not pred.shape:
        return pred
    ctx = pred.ctx
    body = ctx.scalar_region(_BOOL, "stablehlo.or")
    init = ctx.constant(False, _BOOL)
    attrs = {"dimensions": i64_array(range(len(pred.shape)))}
    return Expr(ctx, ctx.op1("stablehlo.reduce", [pred.value, init], ((), _BOOL), attrs, [body]))


def while_loop(cond, body, init: list[Expr]) -> list[Expr]:
    """`stablehlo.while` carrying `init`: `cond(*exprs) -> scalar bool Expr`,
    `body(*exprs) -> exprs` of the same types."""
    ctx = init[0].ctx
    carried = [(v.shape, v.dtype) for v in init]

    def test(*values):
        return [cond(*wrap(ctx, *values)).value]

    def step(*values):
        return [v.value for v in body(*wrap(ctx, *values))]

    regions = [ctx.region(carried, test), ctx.region(carried, step)]
    return wrap(ctx, *ctx.op("stablehlo.while", [v.value for v in init], carried, None, regions))
