"""`wraps(fun)`: `functools.wraps` for the functions transformations return, tolerant as JAX's
own `wraps` is: a callable whose `__name__` or `__doc__` is not a string (an equinox Module
rebuilt inside a loop has the sentinel `Missing` there), or whose attributes cannot be read,
still gets wrapped; what cannot be copied is left out. Imports nothing: the lowest layer
(traceback_util) uses it too."""

from __future__ import annotations

_COPIED = ("__module__", "__name__", "__qualname__", "__doc__")


def wraps(wrapped):
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
        wrapper.__wrapped__ = wrapped
        return wrapper

    return decorate
