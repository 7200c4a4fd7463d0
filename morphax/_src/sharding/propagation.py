"""Sharding propagation: the shardings of a program's outputs from those of its inputs, equation
by equation, as JAX's rules give them for Explicit mesh axes (the default of `make_mesh`):
elementwise operations keep their operands' splits, reductions drop the reduced dimensions,
`dot_general` keeps batch and free dimensions, broadcasts/transposes/reshapes move the splits
with their dimensions, and `with_sharding_constraint` imposes its own. Rules are chosen by the
shape of an equation's parameters (`axes`, `dimension_numbers`, ...), never by primitive name;
an equation no rule fits gives replicated outputs.

A layout here is a tuple with, per dimension, the tuple of mesh axes splitting it."""

from __future__ import annotations

from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from morphax._src.core.memo import memoized
from morphax._src.core.primitive import Kind
from morphax._src.sharding.mesh import AxisType, Mesh
from morphax._src.sharding.partition_spec import PartitionSpec, layout_key
from morphax._src.sharding.shardings import NamedSharding, Sharding


def layout_of(sharding, ndim) -> tuple:
    if isinstance(sharding, NamedSharding):
        return tuple(sharding.spec._axes_of(d) for d in range(ndim))
    return ((),) * ndim


def _merge(layouts, ndim) -> tuple:
    out = []
    for d in range(ndim):
        axes = ()
        for lay in layouts:
            if lay[d]:
                axes = lay[d]
                break
        out.append(axes)
    return _dedupe(out)


def _dedupe(dims) -> tuple:
    """Drop a mesh axis from every dimension after the first that uses it."""
    seen = set()
    out = []
    for axes in dims:
        keep = tuple(a for a in axes if a not in seen)
        seen.update(keep)
        out.append(keep if len(keep) == len(axes) else ())
    return tuple(out)


def _reshape(lay, in_shape, out_shape, sizes) -> tuple:
    """Splits through a reshape: each group of input dims whose product equals a group of output
    dims passes the split of its first (major) input dim to its first output dim, when the other
    input dims of the group are whole and the split divides that output dim."""
    out = [()] * len(out_shape)
    i = j = 0
    while i < len(in_shape) and j < len(out_shape):
        gi, gj = [i], [j]
        pi, pj = in_shape[i], out_shape[j]
        while pi != pj:
            if pi < pj:
                i += 1
                if i >= len(in_shape):
                    return tuple(out)
                gi.append(i)
                pi *= in_shape[i]
            else:
                j += 1
                if j >= len(out_shape):
                    return tuple(out)
                gj.append(j)
                pj *= out_shape[j]
        first = lay[gi[0]]
        if first and all(not lay[k] for k in gi[1:]):
            n = 1
            for a in first:
                n *= sizes.get(a, 1)
            if out_shape[gj[0]] % n == 0:
                out[gj[0]] = first
        i, j = gi[-1] + 1, gj[-1] + 1
    return tuple(out)


def _dot_general(lays, avals, dimension_numbers, explicit):
    # Contracting dimensions split on both sides give whole output dimensions (the partial sums
    # are all-reduced). NB: on Explicit axes JAX raises ShardingTypeError there unless the
    # dot_general names an out_sharding, which its transpose rule does for gradients from the
    # primal's sharding type; morphax's types carry no sharding, so it cannot tell a gradient's
    # dot_general (dW = x.T @ g of data-parallel training) from an ambiguous user one.
    (lc, rc), (lb, rb) = dimension_numbers
    la, ra = lays
    lfree = [d for d in range(len(la)) if d not in lc and d not in lb]
    rfree = [d for d in range(len(ra)) if d not in rc and d not in rb]
    batch = [la[a] or ra[b] for a, b in zip(lb, rb)]
    return _dedupe(batch + [la[d] for d in lfree] + [ra[d] for d in rfree])


def _rule(prim, params, in_avals, in_lays, out_avals, mesh, explicit) -> list:
    """The output layouts of one equation."""
    nout = len(out_avals)
    whole = [((),) * len(a.shape) for a in out_avals]
    report = params.get("sharding_callback")
    if report is not None and hasattr(report, "fire"):  # inspect_array_sharding
        report.fire(NamedSharding(mesh, spec_of(in_lays[0], mesh, (), explicit)), again=True)
        return whole
    if nout == 0:  # a callback, an effect: nothing to lay out
        return []
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    if not any(any(lay) for lay in in_lays) and not isinstance(
        params.get("sharding", params.get("out_sharding")), (Sharding, PartitionSpec)
    ):
        return whole
    given = params.get("sharding", params.get("out_sharding"))
    if nout == 1 and isinstance(given, (NamedSharding, PartitionSpec)):
        # A constraint, or an operation's own out_sharding (a spec: over the current mesh).
        spec = given.spec if isinstance(given, NamedSharding) else given
        return [tuple(spec._axes_of(d) for d in range(len(out_avals[0].shape)))]
    call = getattr(prim, "call_jaxpr_param", None)
    inner = params.get(call) if call else None
    if isinstance(inner, ClosedJaxpr) and len(inner.in_avals) == len(in_lays):
        return propagate(inner, in_lays, mesh, explicit)
    control = _control_flow(params, in_lays, out_avals, mesh, explicit)
    if control is not None:
        return control
    if nout == 1:
        out = out_avals[0]
        dn = params.get("dimension_numbers")
        if len(in_lays) == 2 and _is_dot_dims(dn):
            return [_dot_general(in_lays, in_avals, dn, explicit)]
        axes = params.get("axes")
        if (
            len(in_lays) == 1
            and isinstance(axes, tuple)
            and len(out.shape) == len(in_avals[0].shape) - len(axes)
        ):
            return [tuple(a for d, a in enumerate(in_lays[0]) if d not in axes)]
        bdims = params.get("broadcast_dimensions")
        if len(in_lays) == 1 and isinstance(bdims, tuple) and "shape" in params:
            lay = [()] * len(out.shape)
            for i, d in enumerate(bdims):
                if in_avals[0].shape[i] == out.shape[d]:
                    lay[d] = in_lays[0][i]
            return [tuple(lay)]
        perm = params.get("permutation")
        if len(in_lays) == 1 and isinstance(perm, tuple) and len(perm) == len(out.shape):
            return [tuple(in_lays[0][p] for p in perm)]
        if len(in_lays) == 1 and "new_sizes" in params and params.get("dimensions") is None:
            return [_reshape(in_lays[0], in_avals[0].shape, out.shape, sizes)]
        shaped = _shape_rule(params, in_avals, in_lays, out, sizes)
        if shaped is not None:
            return [shaped]
    if getattr(prim, "kind", None) is Kind.OPAQUE and is_core_op(prim, params, in_avals, out_avals):
        return core_rule(params, in_avals, in_lays, out_avals)[2]
    # Elementwise (NumPy broadcasting, as eager binary ops allow): each operand dimension of the
    # output's size keeps its split.
    shape = tuple(out_avals[0].shape)
    aligned = []
    for lay, a in zip(in_lays, in_avals):
        ashape = tuple(a.shape)
        if len(ashape) > len(shape):
            return whole
        pad = len(shape) - len(ashape)
        if any(n not in (1, m) for n, m in zip(ashape, shape[pad:])):
            return whole
        aligned.append(
            ((),) * pad + tuple(lay[d] if ashape[d] == shape[pad + d] else () for d in range(len(ashape)))
        )
    lay = _merge(aligned, len(shape))
    return [lay if tuple(o.shape) == shape else w for o, w in zip(out_avals, whole)]


def next_carry(carry, outs, joined) -> list:
    """One step towards loop carries' layouts: a carry keeps its layout when a trip of the body
    gives it back; a whole carry the body splits takes that split (once: `joined`, a set of
    positions, records carries given up on); any other change makes it whole."""
    new = []
    for k, (c, o) in enumerate(zip(carry, outs)):
        c, o = tuple(c), tuple(o)
        if o == c:
            new.append(c)
        elif not any(c) and k not in joined:
            joined.add(k)
            new.append(o)
        else:
            joined.add(k)
            new.append(((),) * len(c))
    return new


def _fixed_carry(body, lead, carry, rest, n_out, mesh, explicit):
    """Loop carries' layouts, iterated to a fixed point (`next_carry`) of one trip of `body`
    (inputs lead + carry + rest). Returns (carry layouts, the body's outputs on them)."""
    carry = [tuple(c) for c in carry]
    joined: set = set()
    while True:
        outs = propagate(body, list(lead) + carry + list(rest), mesh, explicit)
        new = next_carry(carry, outs[:n_out], joined)
        if new == carry:
            return carry, outs
        carry = new


def _control_flow(params, in_lays, out_avals, mesh, explicit):
    """Layouts through scan, while and cond (by their parameters), or None."""
    if isinstance(params.get("branches"), tuple) and len(in_lays) >= 1:  # cond: index, operands
        per_branch = [propagate(b, list(in_lays[1:]), mesh, explicit) for b in params["branches"]]
        return [
            lays[0] if all(lay == lays[0] for lay in lays) else ((),) * len(a.shape)
            for lays, a in zip(zip(*per_branch), out_avals)
        ]
    body = params.get("body_jaxpr")
    if isinstance(body, ClosedJaxpr) and "cond_nconsts" in params:  # while: cond consts, body consts, carry
        nc, nb = params["cond_nconsts"], params["body_nconsts"]
        carry, _ = _fixed_carry(
            body, in_lays[nc : nc + nb], in_lays[nc + nb :], (), len(out_avals), mesh, explicit
        )
        return carry
    body = params.get("jaxpr")
    if isinstance(body, ClosedJaxpr) and "num_carry" in params and "length" in params:  # scan
        nc, nk = params["num_consts"], params["num_carry"]
        xs = [lay[1:] for lay in in_lays[nc + nk :]]  # each trip sees one slice of the scanned dim
        carry, outs = _fixed_carry(body, in_lays[:nc], in_lays[nc : nc + nk], xs, nk, mesh, explicit)
        return carry + [((),) + tuple(lay) for lay in outs[nk:]]
    return None


def _dividing(lay, shape, sizes) -> tuple:
    """`lay` without the splits that do not divide their dimension."""
    out = []
    for axes, n in zip(lay, shape):
        parts = 1
        for a in axes:
            parts *= sizes.get(a, 1)
        out.append(axes if n % parts == 0 else ())
    return tuple(out)


def _shape_rule(params, in_avals, in_lays, out, sizes):
    """Squeeze, slices, padding, concatenation, gathers and scatters (by their parameters), or None. As JAX
    gives them: a slice keeps its operand's splits (also on a sliced dimension, when they divide
    it), padding joins the padded dimensions, a concatenation keeps its operands' splits, a
    gather passes on the splits of operand dimensions it takes whole, and a scatter keeps its
    operand's."""
    rank = len(out.shape)
    first = in_avals[0].shape if in_avals else None
    dims = params.get("dimensions")
    if len(in_lays) == 1 and isinstance(dims, tuple) and rank == len(first) - len(dims):  # squeeze
        return tuple(a for d, a in enumerate(in_lays[0]) if d not in dims)
    if len(in_lays) == 1 and "start_indices" in params and "limit_indices" in params:  # slice
        return _dividing(in_lays[0], out.shape, sizes)
    cfg = params.get("padding_config")
    if isinstance(cfg, tuple) and len(cfg) == rank and in_lays:  # pad
        return tuple(() if any(p) else a for a, p in zip(in_lays[0], cfg))
    dim = params.get("dimension")
    if (
        isinstance(dim, int)
        and in_lays
        and "num_keys" not in params
        and all(len(a.shape) == rank for a in in_avals)
        and all(a.shape[k] == out.shape[k] for a in in_avals for k in range(rank) if k != dim)
    ):  # concatenate
        return _dividing(_merge(in_lays, rank), out.shape, sizes)
    dn = params.get("dimension_numbers")
    if hasattr(dn, "update_window_dims") and in_lays and tuple(first) == tuple(out.shape):  # scatter
        return _dividing(in_lays[0], out.shape, sizes)
    if len(in_lays) == 2 and hasattr(dn, "offset_dims") and "slice_sizes" in params:  # gather
        lay = [()] * rank
        # Batch dimensions of the result: those of the indices (all but the index vector).
        batch_out = [d for d in range(rank) if d not in dn.offset_dims]
        for o, k in zip(batch_out, range(len(in_avals[1].shape) - 1)):
            lay[o] = in_lays[1][k]
        for d, o in zip(gather_offset_operand_dims(dn, len(first)), dn.offset_dims):
            if params["slice_sizes"][d] == first[d]:
                lay[o] = in_lays[0][d]
        return _dedupe(lay)
    return None


def gather_offset_operand_dims(dn, ndim) -> list:
    """The operand dimensions a gather's offset (window) dimensions come from, in order."""
    skip = set(dn.collapsed_slice_dims) | set(getattr(dn, "operand_batching_dims", ()) or ())
    return [d for d in range(ndim) if d not in skip]


_ALONG_PARAMS = ("axis", "axes", "dimension", "dimensions", "window_strides", "window_dimensions")


def is_core_op(prim, params, in_avals, out_avals) -> bool:
    """A library operation on the trailing core dimensions of its operands, batched over the
    leading ones (linear algebra, FFTs): one without a parameter naming the dimensions it works
    along, and not a pass-through of its operands (optimization_barrier)."""
    if not in_avals or any(k in params for k in _ALONG_PARAMS):
        return False
    if prim.multiple_results and len(in_avals) == len(out_avals):
        if all(tuple(a.shape) == tuple(o.shape) and a.dtype == o.dtype for a, o in zip(in_avals, out_avals)):
            return False
    return True


def core_rule(params, in_avals, in_lays, out_avals):
    """(number of batch dimensions, their splits, output layouts) of a core operation: the leading batch
    dimensions (all but the last two, or but the FFT's) keep the splits of the operands sharing
    them; the core dimensions are whole, as JAX gives them."""
    lengths = params.get("fft_lengths")
    core = len(lengths) if isinstance(lengths, tuple) else 2
    first = tuple(in_avals[0].shape)
    nb = max(len(first) - core, 0)
    batch = first[:nb]
    lead = [lay[:nb] for lay, a in zip(in_lays, in_avals) if tuple(a.shape[:nb]) == batch]
    merged = _merge(lead, nb) if lead else ((),) * nb
    outs = []
    for o in out_avals:
        rank = len(o.shape)
        if rank >= nb and tuple(o.shape[:nb]) == batch:
            outs.append(tuple(merged) + ((),) * (rank - nb))
        else:
            outs.append(((),) * rank)
    return nb, tuple(merged), outs


def _is_dot_dims(dn) -> bool:
    try:
        (lc, rc), (lb, rb) = dn
        return all(isinstance(t, tuple) for t in (lc, rc, lb, rb))
    except (TypeError, ValueError):
        return False


def propagate(closed: ClosedJaxpr, in_lays, mesh, explicit, touched=None, typed=None) -> list:
    """The output layouts of `closed` given its inputs' layouts. `touched` (a list, one flag per
    input, updated to one per output) says which values derive from an array on the mesh: the
    others are not laid out on it by type, and come out replicated (P()). `typed` (the same)
    says which derive from an array whose type carries its sharding (a committed array, or a
    sharding constraint's result), as opposed to only jit's in_shardings."""
    jaxpr: Jaxpr = closed.jaxpr
    env = {}
    on_mesh = set()
    with_type = set()
    for k, (v, lay) in enumerate(zip(jaxpr.invars, in_lays)):
        env[v] = lay
        if touched is not None and touched[k]:
            on_mesh.add(v)
        if typed is not None and typed[k]:
            with_type.add(v)
    for v in jaxpr.constvars:
        env[v] = ((),) * len(v.aval.shape)

    def read(x):
        if isinstance(x, Literal):
            return ((),) * len(x.aval.shape)
        return env.get(x, ((),) * len(x.aval.shape))

    for eqn in jaxpr.eqns:
        lays = [read(x) for x in eqn.invars]
        avals = [x.aval for x in eqn.invars]
        outs = _rule(eqn.primitive, eqn.params, avals, lays, [v.aval for v in eqn.outvars], mesh, explicit)
        constrained = isinstance(eqn.params.get("sharding"), NamedSharding)
        hit = constrained or any(x in on_mesh for x in eqn.invars)
        typed_hit = constrained or any(x in with_type for x in eqn.invars)
        for v, lay in zip(eqn.outvars, outs):
            env[v] = lay
            if hit:
                on_mesh.add(v)
            if typed_hit:
                with_type.add(v)
    if touched is not None:
        touched[:] = [x in on_mesh for x in jaxpr.outvars]
    if typed is not None:
        typed[:] = [x in with_type for x in jaxpr.outvars]
    return [read(x) for x in jaxpr.outvars]


def spec_of(layout, mesh, in_shardings, explicit) -> PartitionSpec:
    """A layout as JAX writes the PartitionSpec of an output: one entry per dimension for Explicit
    meshes; for Auto meshes, an input's spec when its layout is the same (same rank), else
    trailing whole dimensions dropped."""
    entries = [None if not a else (a[0] if len(a) == 1 else a) for a in layout]
    if explicit:  # a sharded type names every dimension (P('x', None)), whatever the inputs' specs
        return PartitionSpec(*entries)
    key = layout_key(PartitionSpec(*entries))
    for s in in_shardings:
        if isinstance(s, NamedSharding) and s.mesh == mesh and len(s.spec) <= len(layout):
            if layout_key(s.spec, len(layout)) == key and (len(s.spec) == len(layout) or key):
                return s.spec
    while entries and entries[-1] is None:
        entries.pop()
    return PartitionSpec(*entries)


def out_shardings(closed: ClosedJaxpr, in_shardings, typed=None) -> list:
    """The shardings of `closed`'s outputs given its inputs' shardings (None: replicated), on the
    mesh of the first NamedSharding among them; None where no NamedSharding is involved.
    `typed`: per input, whether its sharding is in its type (a committed array) rather than only
    given by jit's in_shardings (default: every input's is)."""
    in_shardings = tuple(in_shardings)
    key = ("out_shardings", in_shardings) if typed is None else ("out_shardings", in_shardings, tuple(typed))
    return memoized(closed, key, lambda: _out_shardings(closed, in_shardings, typed))


def _constraint_mesh(jaxpr):
    """The mesh of the first sharding constraint (with_sharding_constraint, reshard) in `jaxpr`."""
    for eqn in jaxpr.eqns:
        s = eqn.params.get("sharding")
        if isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh):
            return s.mesh
        for p in eqn.params.values():
            inner = p.jaxpr if isinstance(p, ClosedJaxpr) else (p if isinstance(p, Jaxpr) else None)
            if inner is not None:
                found = _constraint_mesh(inner)
                if found is not None:
                    return found
    return None


def _out_shardings(closed, in_shardings, typed):
    mesh = next((s.mesh for s in in_shardings if isinstance(s, NamedSharding)), None)
    if mesh is None and not any(s is not None for s in in_shardings):
        mesh = _constraint_mesh(closed.jaxpr)
    if mesh is None:
        anchor = next((s for s in in_shardings if s is not None), None)
        if anchor is not None:
            _report_single(closed.jaxpr, anchor)
        return [None] * len(closed.out_avals)
    explicit = all(t is AxisType.Explicit for t in mesh.axis_types)
    in_lays = [
        layout_of(s if isinstance(s, NamedSharding) and s.mesh == mesh else None, len(a.shape))
        for s, a in zip(in_shardings, closed.in_avals)
    ]
    touched = [isinstance(s, NamedSharding) for s in in_shardings]
    with_type = touched[:] if typed is None else [bool(t) and hit for t, hit in zip(typed, touched)]
    lays = propagate(closed, in_lays, mesh, explicit, touched, with_type)
    # On Explicit axes a result whose type carries its sharding names every dimension
    # (P('x', None)); one laid out only by jit's in_shardings is written as on Auto axes (P('x')),
    # as JAX 0.10.2 writes them.
    return [
        NamedSharding(mesh, spec_of(lay, mesh, in_shardings, explicit and t) if hit else PartitionSpec())
        for lay, hit, t in zip(lays, touched, with_type)
    ]


def _report_single(jaxpr, sharding):
    """Answer the inspect_array_sharding equations of a program on one device with its sharding."""
    for eqn in jaxpr.eqns:
        report = eqn.params.get("sharding_callback")
        if report is not None and hasattr(report, "fire"):
            report.fire(sharding, again=True)
        for p in eqn.params.values():
            inner = p.jaxpr if isinstance(p, ClosedJaxpr) else (p if isinstance(p, Jaxpr) else None)
            if inner is not None:
                _report_single(inner, sharding)


def equation_out_shardings(prim, params, in_avals, out_avals, in_shardings) -> list:
    """`out_shardings` for one eagerly evaluated equation."""
    mesh = next((s.mesh for s in in_shardings if isinstance(s, NamedSharding)), None)
    if mesh is None:
        return [None] * len(out_avals)
    explicit = all(t is AxisType.Explicit for t in mesh.axis_types)
    in_lays = [
        layout_of(s if isinstance(s, NamedSharding) and s.mesh == mesh else None, len(a.shape))
        for s, a in zip(in_shardings, in_avals)
    ]
    lays = _rule(prim, params, in_avals, in_lays, out_avals, mesh, explicit)
    return [NamedSharding(mesh, spec_of(lay, mesh, in_shardings, explicit)) for lay in lays]
