"""A pytest plugin for running a library's own test suite with one case per test function (the
README's diffrax figures): of the items that share (module, class, function name), the first
collected is kept and the others are reported as deselected. Use it with
`PYTHONPATH=<this folder> python -m morphax run -m pytest -p onecase ...` (and the same without
`-m morphax run` under JAX)."""


def _function_of(item):
    module = getattr(item, "module", None)
    cls = getattr(item, "cls", None)
    name = getattr(item, "originalname", None) or item.name.split("[", 1)[0]
    return (getattr(module, "__name__", str(item.fspath)), getattr(cls, "__qualname__", None), name)


def pytest_collection_modifyitems(session, config, items):
    seen, keep, drop = set(), [], []
    for item in items:
        key = _function_of(item)
        (drop if key in seen else keep).append(item)
        seen.add(key)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
