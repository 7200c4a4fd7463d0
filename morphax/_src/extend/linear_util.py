"""`WrappedFun` and its transformations: what `jax.extend.linear_util` gives libraries.

A `WrappedFun` is a function plus a stack of transformations, each a generator that sees the
arguments on the way in and the results on the way out (JAX's `linear_util` protocol), and may
store auxiliary data (an output tree) that the caller reads after the call. Both of JAX's
transformation styles are supported: generator-based (`transformation`,
`transformation_with_aux`) and plain-function (`transformation2`, `transformation_with_aux2`).
`flatten_fun` / `flatten_fun_nokwargs` are the pytree-flattening transformations `jax.api_util`
offers.
"""

from __future__ import annotations

import functools


class StoreException(Exception):
    pass


class EmptyStoreValue:
    pass


_EMPTY = EmptyStoreValue()


class Store:
    """A write-once box for auxiliary output of a transformation, read after the call."""

    __slots__ = ("_val",)

    def __init__(self):
        self._val = _EMPTY

    def store(self, val):
        if self._val is not _EMPTY:
            raise StoreException("Store occupied: the wrapped function was called twice")
        self._val = val

    def reset(self):
        self._val = _EMPTY

    @property
    def val(self):
        if self._val is _EMPTY:
            raise StoreException("Store empty: the wrapped function has not been called yet")
        return self._val

    def __bool__(self):
        return self._val is not _EMPTY


class WrappedFun:
    """`f` with transformations applied in order (innermost first), called by `call_wrapped`."""

    def __init__(self, f, transforms=(), stores=(), params=(), debug_info=None):
        self.f = f
        self.transforms = tuple(transforms)
        self.stores = tuple(stores)
        self.params = tuple(params)
        self.debug_info = debug_info

    @property
    def __name__(self):
        return getattr(self.f, "__name__", type(self.f).__name__)

    def wrap(self, gen, gen_static_args, out_store) -> WrappedFun:
        return WrappedFun(
            self.f,
            ((gen, gen_static_args),) + self.transforms,
            (out_store,) + self.stores,
            self.params,
            self.debug_info,
        )

    def populate_stores(self, stores):
        for self_store, other in zip(self.stores, stores):
            if self_store is not None:
                self_store.store(other.val)

    def call_wrapped(self, *args, **kwargs):
        """Run the transformations' way in, then `f`, then their way out (last applied outermost)."""
        return self._call(0, args, kwargs)

    def _call(self, i, args, kwargs):
        if i == len(self.transforms):
            return self.f(*args, **dict(self.params), **kwargs)
        (gen, static), store = self.transforms[i], self.stores[i]
        if getattr(gen, "_style2", False):
            inner = functools.partial(self._call_from, i + 1)
            if store is None:
                return gen(inner, *static, *args, **kwargs)
            return gen(inner, store, *static, *args, **kwargs)
        coroutine = gen(*(static + args), **kwargs)
        args, kwargs = next(coroutine)
        ans = self._call(i + 1, tuple(args), dict(kwargs))
        if store is None:
            return coroutine.send(ans)
        ans, aux = coroutine.send(ans)
        store.store(aux)
        return ans

    def _call_from(self, i, *args, **kwargs):
        return self._call(i, args, kwargs)

    __call__ = call_wrapped

    def __repr__(self):
        names = ", ".join(getattr(g, "__name__", repr(g)) for g, _ in self.transforms)
        return f"Wrapped function {self.__name__} with transforms [{names}]"

    def __eq__(self, other):
        return (
            type(other) is WrappedFun
            and self.f == other.f
            and self.transforms == other.transforms
            and self.params == other.params
        )

    def __hash__(self):
        return hash((self.f, self.transforms, self.params))


def wrap_init(f, params=None, *, debug_info=None) -> WrappedFun:
    """A `WrappedFun` of `f` with no transformations (`params` are passed as keywords)."""
    params = () if params is None else tuple(sorted(params.items()))
    return WrappedFun(f, (), (), params, debug_info)


def transformation(gen, fun: WrappedFun, *gen_static_args) -> WrappedFun:
    """Apply a generator transformation without auxiliary output."""
    return fun.wrap(gen, gen_static_args, None)


def transformation_with_aux(gen, fun: WrappedFun, *gen_static_args):
    """Apply a generator transformation that yields ``(ans, aux)``; returns the new function and
    a thunk giving `aux` after a call."""
    store = Store()
    return fun.wrap(gen, gen_static_args, store), lambda: store.val


def transformation2(gen, fun: WrappedFun, *gen_static_args) -> WrappedFun:
    """Apply ``gen(f, *static, *args, **kw)``, a function calling the inner `f` itself."""
    gen = _style2(gen)
    return fun.wrap(gen, gen_static_args, None)


def transformation_with_aux2(gen, fun: WrappedFun, *gen_static_args):
    """As `transformation2` with a store: ``gen(f, store, *static, *args, **kw)`` calls
    ``store.store(aux)``; returns the new function and a thunk giving `aux`."""
    store = Store()
    return fun.wrap(_style2(gen), gen_static_args, store), lambda: store.val


def _style2(gen):
    if getattr(gen, "_style2", False):
        return gen

    @functools.wraps(gen)
    def wrapped(*args, **kwargs):
        return gen(*args, **kwargs)

    wrapped._style2 = True
    return wrapped


def merge_linear_aux(aux1, aux2):
    """The one of two aux thunks that was filled (exactly one must be)."""
    try:
        out1 = aux1()
    except StoreException:
        try:
            out2 = aux2()
        except StoreException:
            raise StoreException("neither store occupied") from None
        return False, out2
    try:
        aux2()
    except StoreException:
        return True, out1
    raise StoreException("both stores occupied")


def cache(call, *, explain=None):
    """Memoize ``call(fun, *args)`` on the wrapped function and the arguments."""
    memo: dict = {}

    def cached(fun: WrappedFun, *args):
        key = (fun.f, fun.transforms, fun.params, args)
        try:
            hit = memo.get(key)
        except TypeError:  # unhashable arguments: no caching
            return call(fun, *args)
        if hit is not None:
            ans, stores = hit
            fun.populate_stores(stores)
            return ans
        ans = call(fun, *args)
        memo[key] = (ans, fun.stores)
        return ans

    cached.cache_clear = memo.clear
    return cached


# ------------------------------------------------------- flattening (what jax.api_util builds)


def _flatten_fun(in_tree, *args_flat):
    from morphax._src.core import pytree  # noqa: PLC0415

    py_args, py_kwargs = pytree.tree_unflatten(in_tree, args_flat)
    ans = yield py_args, py_kwargs
    yield pytree.tree_flatten(ans)


def flatten_fun(fun: WrappedFun, in_tree):
    """`fun` on flat inputs: they are unflattened by `in_tree` (a treedef of ``(args, kwargs)``),
    and the outputs flattened; returns the new function and a thunk giving the output treedef."""
    return transformation_with_aux(_flatten_fun, fun, in_tree)


def _flatten_fun_nokwargs(in_tree, *args_flat):
    from morphax._src.core import pytree  # noqa: PLC0415

    py_args = pytree.tree_unflatten(in_tree, args_flat)
    ans = yield py_args, {}
    yield pytree.tree_flatten(ans)


def flatten_fun_nokwargs(fun: WrappedFun, in_tree):
    """As `flatten_fun` for a treedef of the positional arguments alone."""
    return transformation_with_aux(_flatten_fun_nokwargs, fun, in_tree)


__all__ = [
    "Store",
    "StoreException",
    "WrappedFun",
    "cache",
    "flatten_fun",
    "flatten_fun_nokwargs",
    "merge_linear_aux",
    "transformation",
    "transformation2",
    "transformation_with_aux",
    "transformation_with_aux2",
    "wrap_init",
]
