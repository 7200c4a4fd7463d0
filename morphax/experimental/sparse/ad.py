"""Sparse-aware `grad`, `value_and_grad`, `jacfwd`, `jacrev` and `jacobian`: the derivative with
respect to a sparse argument is taken in the subspace of its sparsity pattern, i.e. with respect
to its data buffer, and returned as a sparse array of the same indices."""

from __future__ import annotations

import functools

import morphax
import morphax.numpy as jnp
from morphax._src.tree_util import tree_flatten, tree_map, tree_unflatten
from morphax.experimental.sparse._base import JAXSparse


def _is_sparse(x):
    return isinstance(x, JAXSparse)


def _argnums_tuple(argnums):
    return (int(argnums),) if isinstance(argnums, int) else tuple(int(a) for a in argnums)


def _rebuild(template, data):
    """`template` (a sparse array) with data buffer `data`; leading dimensions `data` has beyond
    the template's data (a Jacobian's output dimensions) become batch dimensions."""
    bufs, tree = tree_flatten(template)
    extra = jnp.ndim(data) - bufs[0].ndim
    if extra == 0:
        return tree_unflatten(tree, [data, *bufs[1:]])
    lead = tuple(data.shape[:extra])
    rest = [jnp.broadcast_to(b, lead + b.shape) for b in bufs[1:]]
    obj = tree_unflatten(tree, [data, *rest])
    obj.shape = lead + tuple(template.shape)
    return obj


def _sparse_derivative(transform, fun, argnums, has_aux, kwargs, returns_value=False):
    nums = _argnums_tuple(argnums)

    @functools.wraps(fun)
    def wrapped(*args, **fkwargs):
        diff = [tree_map(lambda x: x.data if _is_sparse(x) else x, args[i], is_leaf=_is_sparse) for i in nums]

        def flat(*d):
            new = list(args)
            for i, di in zip(nums, d):
                new[i] = tree_map(
                    lambda t, v: _rebuild(t, v) if _is_sparse(t) else v, args[i], di, is_leaf=_is_sparse
                )
            return fun(*new, **fkwargs)

        out = transform(flat, argnums=tuple(range(len(nums))), has_aux=has_aux, **kwargs)(*diff)
        if returns_value:
            value, grads = out
        else:
            value, grads = None, out
        aux = None
        if has_aux and not returns_value:
            grads, aux = grads
        post = tuple(
            tree_map(lambda t, g: _rebuild(t, g) if _is_sparse(t) else g, args[i], g, is_leaf=_is_sparse)
            for i, g in zip(nums, grads)
        )
        post = post[0] if len(post) == 1 else post
        if returns_value:
            return value, post
        return (post, aux) if has_aux else post

    return wrapped


def value_and_grad(fun, argnums=0, has_aux=False, **kwargs):
    return _sparse_derivative(morphax.value_and_grad, fun, argnums, has_aux, kwargs, returns_value=True)


def grad(fun, argnums=0, has_aux=False, **kwargs):
    return _sparse_derivative(morphax.grad, fun, argnums, has_aux, kwargs)


def jacfwd(fun, argnums=0, has_aux=False, **kwargs):
    return _sparse_derivative(morphax.jacfwd, fun, argnums, has_aux, kwargs)


def jacrev(fun, argnums=0, has_aux=False, **kwargs):
    return _sparse_derivative(morphax.jacrev, fun, argnums, has_aux, kwargs)


jacobian = jacrev
