"""Ordering tokens: `create_token` and `after_all`. Computations run in program order, so a token
is a pytree with no leaves (a psend's token carries the sent value to its precv, see
collectives_composed.py)."""

from __future__ import annotations

from morphax._src.core.pytree_registry import register_pytree_node

__all__ = ["after_all", "create_token"]


class Token:
    """An ordering token. `payload` (with its `channel`) is set only on the token of a psend."""

    __slots__ = ("payload", "channel")

    def __init__(self, payload=None, channel=None):
        self.payload = payload
        self.channel = channel

    def block_until_ready(self):
        return self

    def __repr__(self):
        return "Token()" if self.channel is None else f"Token(psend over {self.channel[0]!r})"


def _flatten_token(t):
    return (() if t.channel is None else (t.payload,)), t.channel


def _unflatten_token(channel, children):
    children = list(children)
    return Token(children[0] if children else None, channel)


register_pytree_node(Token, _flatten_token, _unflatten_token)


def create_token(_=None):
    """A new token with no preconditions (the argument is ignored, as in JAX)."""
    return Token()


def after_all(*operands):
    """A token ordered after all the given tokens."""
    if not all(isinstance(t, Token) for t in operands):
        raise TypeError("Arguments to after_all must be tokens")
    return Token()
