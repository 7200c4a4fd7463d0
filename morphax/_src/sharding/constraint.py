"""`lax.with_sharding_constraint` and its primitive `sharding_constraint`: the identity on values,
whose output carries the sharding it names (jit's sharding propagation reads the `sharding`
parameter; the compiler forwards the operand, so it costs nothing at run time)."""

from __future__ import annotations

from morphax._src.core import pytree
from morphax._src.core.ad_util import is_zero
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.values import is_concrete_array
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims._shape_util import as_lax_array, fresh
from morphax._src.prims._spec import Case, TestSpec, random_array
from morphax._src.runtime import array as _array
from morphax._src.sharding.mesh import AxisType, resolving_mesh
from morphax._src.sharding.partition_spec import PartitionSpec, flat_axes
from morphax._src.sharding.shardings import NamedSharding, Sharding, SingleDeviceSharding

sharding_constraint_p = Primitive("sharding_constraint")
sharding_constraint_p.kind = Kind.OPAQUE
sharding_constraint_p.param_defaults = {}
sharding_constraint_p.abstract_eval = lambda x, *, sharding: x
sharding_constraint_p.impl = lambda x, *, sharding: fresh(x)
sharding_constraint_p.is_identity = lambda aval, *, sharding: True
sharding_constraint_p.stablehlo = hlo.same_as_operand  # one device: the operand itself


def _jvp(primals, tangents, *, sharding):
    (x,), (t,) = primals, tangents
    out = sharding_constraint_p.bind(x, sharding=sharding)
    return out, (t if is_zero(t) else sharding_constraint_p.bind(t, sharding=sharding))


def _transpose(ct, x, *, sharding):
    return [ct if is_zero(ct) else sharding_constraint_p.bind(ct, sharding=sharding)]


def _batch(vals, dims, *, axis_data, sharding):
    # The batch dimension is whole: the spec gets a None there (as JAX's rule).
    (x,), (d,) = vals, dims
    if isinstance(sharding, NamedSharding) and d is not None:
        entries = list(sharding.spec) + [None] * max(0, d - len(sharding.spec))
        entries.insert(d, None)
        sharding = NamedSharding(sharding.mesh, PartitionSpec(*entries))
    return sharding_constraint_p.bind(x, sharding=sharding), d


sharding_constraint_p.jvp = _jvp
sharding_constraint_p.transpose = _transpose
sharding_constraint_p.batch = _batch


def _cases(rng):
    from morphax._src.runtime.devices import devices

    s = SingleDeviceSharding(devices()[0])
    return [
        Case((random_array(rng, shape, dt),), {"sharding": s}, f"{dt}{list(shape)}")
        for dt in ("float32", "int32", "bool")
        for shape in ((), (3,), (2, 3))
    ]


sharding_constraint_p.test_spec = TestSpec(cases=_cases)


def canonical_sharding(s, who: str):
    """A Sharding from what users pass (a Sharding, or a PartitionSpec resolved against the
    current mesh); None stays None (unconstrained)."""
    if s is None or isinstance(s, Sharding):
        return s
    if isinstance(s, PartitionSpec):
        mesh = resolving_mesh()
        if mesh is None:
            raise ValueError(
                "Using PartitionSpec when you are not under a mesh context is not allowed. Please "
                f"pass a NamedSharding instance or enter into a mesh context via `morphax.set_mesh`. "
                f"Got {s!r} (in {who})"
            )
        return NamedSharding(mesh, s)
    raise TypeError(
        f"{who}: expected a Sharding (NamedSharding, SingleDeviceSharding) or a PartitionSpec, got "
        f"{s!r} of type {type(s).__name__}"
    )


def with_sharding_constraint(x, shardings):
    """`x` (a pytree) unchanged, with each leaf's result laid out per `shardings` (a Sharding or
    PartitionSpec, or a pytree of them matching `x`; None leaves no constraint). The spec may
    name only Auto mesh axes (use `reshard` for Explicit ones), as in JAX."""
    leaves, tree = pytree.tree_flatten(x)
    specs = pytree.broadcast_prefix(
        shardings, x, is_leaf=lambda s: s is None or isinstance(s, (Sharding, PartitionSpec))
    )
    out = []
    for leaf, s in zip(leaves, specs):
        s = canonical_sharding(s, "with_sharding_constraint")
        leaf = as_lax_array(leaf)
        if s is None:
            out.append(leaf)
            continue
        if isinstance(s, NamedSharding):
            explicit = [a for a in flat_axes(s.spec) if s.mesh.axis_type_of(a) is not AxisType.Auto]
            if explicit:
                raise ValueError(
                    "The spec of NamedSharding passed to with_sharding_constraint can only refer to "
                    f"Auto axes of the mesh. Got spec={s.spec!r} and mesh={s.mesh.abstract_mesh!r}. "
                    "You probably meant to use `reshard` API?"
                )
            s.check_shape(leaf.shape, "with_sharding_constraint")
        if is_concrete_array(leaf):  # eagerly: the value placed at once
            from morphax._src.runtime.placement import put

            out.append(put(leaf, s, "with_sharding_constraint"))
            continue
        _array.mark_placed()  # results of the program get placed (runtime/placement.py)
        out.append(sharding_constraint_p.bind(leaf, sharding=s))
    return pytree.tree_unflatten(tree, out)
