"""`wraps(fun)`: `functools.wraps` for the functions transformations return, tolerant as JAX's
own `wraps` is: a callable whose `__name__` or `__doc__` is not a string (an equinox Module
rebuilt inside a loop has the sentinel `Missing` there), or whose attributes cannot be read,
still gets wrapped; what cannot be copied is left out. Imports nothing: the lowest layer
(traceback_util) uses it too."""

from __future__ import annotations

_COPIED = ("__module__", "__name__", "__qualname__", "__doc__")


def _name(fun) -> str:
    name = getattr(fun, "__name__", None)
    if isinstance(name, str):
        return name
    inner = getattr(fun, "func", None)  # functools.partial
    return _name(inner) if inner is not None and inner is not fun else type(fun).__name__


def wraps(wrapped, docstr: str | None = None, **doc_fields):
    """With `docstr`, the wrapper's docstring is `docstr` formatted with `fun` (the wrapped
    function's name), `doc` (its docstring) and `doc_fields`, as JAX documents the functions its
    transformations return ("Gradient of f with respect to positional argument(s) 0. ...")."""

    def decorate(wrapper):
        for name in _COPIED:
            try:
                value = getattr(wrapped, name)
            except Exception:  # noqa: BLE001 - a user object's attribute may raise anything
                continue
            if name == "__doc__" or isinstance(value, str):
                try:
                    setattr(wrapper, name, value)
                except (TypeError, AttributeError):
                    pass
        try:
            wrapper.__dict__.update(getattr(wrapped, "__dict__", {}))
        except Exception:  # noqa: BLE001 - a non-dict __dict__, a mapping that raises
            pass
        if docstr is not None:
            doc = getattr(wrapped, "__doc__", None)
            fields = dict(fun=_name(wrapped), doc=doc if isinstance(doc, str) else "", **doc_fields)
            wrapper.__doc__ = docstr.format(**fields)
        wrapper.__wrapped__ = wrapped
        return wrapper

    return decorate
