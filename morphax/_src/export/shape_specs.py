"""Symbolic shapes as users write them (`jax.export`'s API): `SymbolicScope` with its
constraints, the parser of shape specifications ("b, 4", "(2*b + 1, mod(b, 3), ...)"),
`symbolic_shape`, `symbolic_args_specs`, and the argument-spec struct that holds symbolic shapes.
"""

from __future__ import annotations

import functools
import io
import math
import os
import tokenize
import traceback

import numpy as np

from morphax._src.api.tracing import ShapeDtypeStruct
from morphax._src.core import pytree
from morphax._src.core.avals import get_aval
from morphax._src.export.dim_expr import _DimExpr, is_symbolic_dim, max_dim, min_dim

_SCOPES_DOC = "See https://docs.jax.dev/en/latest/export/shape_poly.html#user-specified-symbolic-constraints."
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class SymbolicScope:
    """Identifies a scope for symbolic expressions.

    All symbolic expressions that interact (appear in the argument shapes of one exported
    function, or meet in arithmetic) must come from the same scope, which holds the constraints
    on them: strings of the form `e1 >= e2`, `e1 <= e2` or `e1 == e2`."""

    def __init__(self, constraints_str=()):
        if isinstance(constraints_str, str):
            raise ValueError(
                f"The symbolic constraints should be a sequence of strings. Got {constraints_str!r}"
            )
        self._location = _user_location()
        self._constraints: list = []  # (text as given, is an equality, e1 - e2)
        for c_str in constraints_str:
            self._add_constraint(c_str)

    def __str__(self):
        lines = [" with constraints:"] + [f"  {c}" for c, _, _ in self._constraints]
        return f"{id(self)} created at {self._location}" + ("\n".join(lines) if self._constraints else "")

    __repr__ = __str__

    @property
    def constraints(self) -> tuple:
        """The constraints as given (strings), in order."""
        return tuple(c for c, _, _ in self._constraints)

    def _add_constraint(self, c_str):
        if not isinstance(c_str, str):
            raise ValueError(f"SymbolicScope constraint must be a string: got {c_str!r}")
        found = [(c_str.find(op), op) for op in ("==", ">=", "<=") if c_str.find(op) >= 0]
        if not found:
            raise ValueError("Constraint parsing error: must contain one of '==' or '>=' or '<='")
        pos, op = found[0]
        eq, swap = op == "==", op == "<="
        e1, e2 = parse_expr(c_str[:pos], self), parse_expr(c_str[pos + 2 :], self)
        if swap:
            e1, e2 = e2, e1
        diff = e1 - e2
        if not is_symbolic_dim(diff):
            if (eq and diff != 0) or (not eq and diff < 0):
                raise ValueError(f"Unsatisfiable explicit constraint: {c_str}")
            return
        self._constraints.append((c_str, eq, diff))

    def _geq_diffs(self):
        """Each constraint as expressions `d` known to be `>= 0` (an equality gives two)."""
        for _, eq, diff in self._constraints:
            yield diff
            if eq:
                yield -diff

    def _var_bounds(self, name: str):
        lb, ub = 1, math.inf
        for diff in self._geq_diffs():
            single = _single_var(diff)
            if single is not None and single[0] == name:
                _, k, c = single  # k * var + c >= 0
                if k > 0:
                    lb = max(lb, math.ceil(-c / k))
                else:
                    ub = min(ub, math.floor(c / -k))
        return lb, ub

    def _check_same_scope(self, other, when: str = "", self_descr: str = " ", other_descr: str = "unknown"):
        if self is not other.scope:
            raise ValueError(
                f"Invalid mixing of symbolic scopes {when}.\n"
                f"Expected {self_descr}scope {self}\n"
                f"and found for '{other}' ({other_descr}) scope {other.scope}\n"
                f"{_SCOPES_DOC}"
            )

    def _satisfied_at(self, env: dict) -> bool:
        return all(
            (d._evaluate(env) == 0) if eq else (d._evaluate(env) >= 0) for _, eq, d in self._constraints
        )


def _single_var(e):
    """(var, k, c) when `e` is k * var + c, else None."""
    var, k, c = None, 0, 0
    for t, coeff in e._terms:
        if not t.factors:
            c = coeff
        elif var is None and len(t.factors) == 1 and t.factors[0][1] == 1 and t.factors[0][0].var is not None:
            var, k = t.factors[0][0].var, coeff
        else:
            return None
    return (var, k, c) if var is not None else None


def _user_location() -> str:
    """Where the user created a scope: "file:line:col (function)", outside morphax's package."""
    for fs in reversed(traceback.extract_stack()):
        if not os.path.abspath(fs.filename).startswith(_PACKAGE_DIR + os.sep):
            col = f":{fs.colno}" if getattr(fs, "colno", None) is not None else ""
            return f"{fs.filename}:{fs.lineno}{col} ({fs.name})"
    return "unknown"


# ---------------------------------------------------------------------------------- parser
class _Parser:
    """JAX's recursive-descent parser of shape specifications, over Python's tokenizer."""

    FOLLOW_SHAPE = (tokenize.ENDMARKER, tokenize.RPAR)
    FOLLOW_EXPR = FOLLOW_SHAPE + (tokenize.COMMA,)
    FOLLOW_TERM = FOLLOW_EXPR + (tokenize.PLUS, tokenize.MINUS)

    def __init__(self, spec: str, like, spec_repr: str, scope):
        self.spec, self.spec_repr, self.like, self.scope = spec, spec_repr, like, scope
        self.dimensions: list = []

    def parse(self):
        self.toks = tokenize.tokenize(io.BytesIO(self.spec.encode("utf-8")).readline)
        tok = self.consume(self.next_tok(), tokenize.ENCODING)
        shape, tok = self.shape(tok)
        self.expect(tok, [tokenize.ENDMARKER])
        return shape

    def add_dim(self, expr, tok):
        if expr is None:
            raise self.error(tok, f"unexpected placeholder for unknown dimension; like={self.like}")
        if not is_symbolic_dim(expr) and self.like is not None:
            like_dim = self.like[len(self.dimensions)]
            if expr != like_dim:
                raise self.error(tok, f"different size {expr} for known dimension; like={self.like}")
        self.dimensions.append(expr)

    def error(self, tok, detail: str) -> Exception:
        msg = (
            f"syntax error in symbolic shape {self.spec_repr} in dimension {len(self.dimensions)}: {detail}. "
        )
        if tok is not None:
            msg += f"Parsed '{tok.line[: tok.start[1]]}', remaining '{tok.line[tok.start[1] :]}'."
        return ValueError(msg)

    def next_tok(self):
        while True:
            try:
                t = next(self.toks)
            except StopIteration:
                raise self.error(None, "unexpected end of string") from None
            except tokenize.TokenError as e:
                raise self.error(None, str(e)) from None
            if t.exact_type not in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT):
                return t

    def expect(self, tok, expected):
        if tok.exact_type not in expected:
            names = ", ".join(tokenize.tok_name[t] for t in expected)
            raise self.error(
                tok, f"expecting one of {{{names}}} but found {tokenize.tok_name[tok.exact_type]}"
            )

    def consume(self, tok, expected):
        self.expect(tok, [expected])
        return self.next_tok()

    def integer(self, tok):
        self.expect(tok, [tokenize.NUMBER])
        try:
            val = int(tok.string)
        except ValueError:
            raise self.error(tok, f"expecting integer, found {tok.string}") from None
        return val, self.next_tok()

    def shape(self, tok):
        if tok.exact_type == tokenize.LPAR:
            res, tok = self.shape(self.next_tok())
            return res, self.consume(tok, tokenize.RPAR)
        while tok.exact_type not in self.FOLLOW_SHAPE:
            placeholder = tok.exact_type == tokenize.ELLIPSIS or (
                tok.exact_type == tokenize.NAME and tok.string == "_"
            )
            if placeholder:
                if self.like is None:
                    raise self.error(tok, "spec contains ... but no 'like' shape was given")
                need = len(self.dimensions) + (0 if tok.exact_type == tokenize.ELLIPSIS else 1)
                if len(self.like) < need:
                    raise self.error(
                        tok,
                        f"cannot resolve placeholder '{tok.string}' because we parsed "
                        f"{len(self.dimensions)} already and 'like' shape has only {len(self.like)} dimensions",
                    )
            if tok.exact_type == tokenize.ELLIPSIS:
                for d in self.like[len(self.dimensions) :]:
                    self.add_dim(d, tok)
                tok = self.next_tok()
                break
            if placeholder:
                e, tok = self.like[len(self.dimensions)], self.next_tok()
            else:
                e, tok = self.expr(tok)
            self.add_dim(e, tok)
            if tok.exact_type in self.FOLLOW_SHAPE:
                break
            tok = self.consume(tok, tokenize.COMMA)
        return tuple(self.dimensions), tok

    def expr(self, tok):
        negated = tok.exact_type == tokenize.MINUS
        if tok.exact_type in (tokenize.MINUS, tokenize.PLUS):
            tok = self.next_tok()
        acc = None
        while True:
            t, tok = self.term(tok)
            t = -t if negated else t
            acc = t if acc is None else acc + t
            if tok.exact_type in self.FOLLOW_EXPR:
                return acc, tok
            negated = tok.exact_type == tokenize.MINUS
            self.expect(tok, [tokenize.PLUS, tokenize.MINUS])
            tok = self.next_tok()

    def term(self, tok):
        acc = None
        while True:
            f, tok = self.factor(tok)
            if tok.exact_type == tokenize.CIRCUMFLEX:
                power, tok = self.integer(self.next_tok())
                f = f**power
            acc = f if acc is None else acc * f
            if tok.exact_type in self.FOLLOW_TERM:
                return acc, tok
            tok = self.consume(tok, tokenize.STAR)

    def factor(self, tok):
        if tok.exact_type == tokenize.NAME:
            if tok.string in ("mod", "floordiv", "max", "min"):
                return self.binary_op(tok.string, self.next_tok())
            return _DimExpr._from_var(tok.string, self.scope), self.next_tok()
        sign = 1
        if tok.exact_type == tokenize.MINUS:
            sign, tok = -1, self.next_tok()
            self.expect(tok, [tokenize.NUMBER])
        if tok.exact_type == tokenize.NUMBER:
            v, tok = self.integer(tok)
            return v * sign, tok
        self.expect(tok, [tokenize.NAME, tokenize.MINUS, tokenize.NUMBER])

    def binary_op(self, op: str, tok):
        tok = self.consume(tok, tokenize.LPAR)
        e1, tok = self.expr(tok)
        tok = self.consume(tok, tokenize.COMMA)
        e2, tok = self.expr(tok)
        tok = self.consume(tok, tokenize.RPAR)
        if op == "max":
            return max_dim(e1, e2), tok
        if op == "min":
            return min_dim(e1, e2), tok
        return _DimExpr._from_operation(op, e1, e2, scope=self.scope), tok


def parse_expr(text: str, scope):
    """One dimension expression parsed in `scope`."""
    (e,) = _Parser(text, None, repr(text), scope).parse()
    return e


def symbolic_shape(shape_spec, *, constraints=(), scope=None, like=None):
    """Constructs a symbolic shape from a string representation ("b, 4", "(2*b, mod(b, 3))";
    None stands for "..."). `constraints` make a new SymbolicScope; `scope` reuses one (not both);
    `like` fills the placeholders "_" and "...". Returns a tuple of ints and expressions."""
    spec_repr = repr(shape_spec)
    if shape_spec is None:
        shape_spec = "..."
    elif not isinstance(shape_spec, str):
        raise ValueError(f"polymorphic shape spec should be None or a string. Found {spec_repr}.")
    if scope is None:
        scope = SymbolicScope(constraints)
    elif constraints:
        raise ValueError("Cannot specify both a `scope` and `constraints`.")
    return _Parser(shape_spec, like, spec_repr, scope).parse()


class SymbolicShapeDtypeStruct(ShapeDtypeStruct):
    """A ShapeDtypeStruct whose shape may hold symbolic dimensions (what `symbolic_args_specs`
    returns; morphax's plain ShapeDtypeStruct keeps integer shapes only)."""

    __slots__ = ()

    def __init__(self, shape, dtype, *, weak_type=False, sharding=None):
        super().__init__([1] * len(shape), dtype, weak_type=weak_type, sharding=sharding)
        self.shape = tuple(d if is_symbolic_dim(d) else int(d) for d in shape)

    @property
    def aval(self):
        from morphax._src.core.avals import ShapedArray

        return ShapedArray(self.shape, self.dtype, self.weak_type)

    size = property(lambda self: math.prod(self.shape))

    def __repr__(self):
        shape = "(" + ", ".join(str(d) for d in self.shape) + ("," if len(self.shape) == 1 else "") + ")"
        return f"ShapeDtypeStruct(shape={shape}, dtype={self.dtype.name})"

    def __hash__(self):
        return hash((tuple(str(d) for d in self.shape), self.dtype, self.weak_type))


def shape_and_dtype(a):
    if isinstance(a, ShapeDtypeStruct):
        return a.shape, a.dtype
    aval = get_aval(a)
    return aval.shape, aval.dtype


def symbolic_args_specs(args, shapes_specs, constraints=(), scope=None):
    """A pytree of ShapeDtypeStructs matching `args` (arrays or ShapeDtypeStructs), with shapes
    replaced by symbolic dimensions as `shapes_specs` says: None (static shapes), one string for
    every argument, or a pytree prefix of `args` holding strings."""
    leaves, treedef = pytree.tree_flatten(args)
    specs = shapes_specs
    if isinstance(args, tuple) and isinstance(specs, list):
        specs = tuple(specs)
    try:
        specs_flat = pytree.broadcast_prefix(specs, args, is_leaf=lambda x: x is None)
    except ValueError as e:
        raise ValueError(f"export.symbolic_args_specs shapes_specs: {e}") from None
    if scope is None:
        scope = SymbolicScope(constraints)
    elif constraints:
        raise ValueError("Cannot use both `scope` and `constraints`")
    out = []
    for leaf, spec in zip(leaves, specs_flat):
        shape, dtype = shape_and_dtype(leaf)
        out.append(SymbolicShapeDtypeStruct(symbolic_shape(spec, like=shape, scope=scope), np.dtype(dtype)))
    return treedef.unflatten(out)


def args_kwargs_path_to_str(path) -> str:
    """`args[0]['w']` / `kwargs['y']`: a key path in the tree of (args, kwargs)."""
    head = "args" if path[0] == pytree.SequenceKey(0) else "kwargs"
    return head + pytree.keystr(tuple(path[1:]))


@functools.lru_cache(128)
def _arg_names(in_tree) -> tuple:
    paths = pytree.tree_flatten_with_path(in_tree.unflatten([0] * in_tree.num_leaves))[0]
    return tuple(args_kwargs_path_to_str(path) for path, _ in paths)


def dimension_descriptor(in_tree, flat_idx: int, dim_idx) -> str:
    """JAX's `pretty_print_dimension_descriptor`: "args[0]" or "args[0].shape[1]"."""
    text = _arg_names(in_tree)[flat_idx]
    return text if dim_idx is None else f"{text}.shape[{dim_idx}]"
