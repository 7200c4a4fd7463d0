"""The native CPU backend: fused kernels rendered to C (render.py), compiled by the system C
compiler into one shared library per program (build.py, cached in memory and on disk) and called
through ctypes, which releases the GIL for the duration of each kernel.

A kernel that fails to build falls back to the NumPy rendering (with a warning quoting the
compiler), never a crash; with no working compiler the default backend is "numpy".
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import sys
import threading
import warnings

import numpy as np

from morphax._src.compiler.backends.c import background, blas, build, disk_cache, ffi, generic, render
from morphax._src.compiler.backends.c import program as native_program
from morphax._src.compiler.backends.numpy import segment_callable
from morphax._src.config import config
from morphax._src.core.jaxpr import _NameContext, _print_jaxpr
from morphax._src.core.primitive import Kind

logger = logging.getLogger("morphax")


class CompilerFallbackWarning(UserWarning):
    """A program ran on the NumPy backend because the C compiler failed on it. (Not a
    RuntimeWarning: morphax silences those from its own modules, NumPy's float edge cases.)"""


class _Caps:
    @staticmethod
    def fuses_view(eqn) -> bool:
        """LAYOUT equations become index maps of the loads that read them (no copy)."""
        return all(np.dtype(v.aval.dtype) in render.DTYPES for v in (*eqn.invars, *eqn.outvars))

    @staticmethod
    def supports_op(op: str, eqn) -> bool:
        """Whether `eqn`, computed as the elementwise `op`, renders to C."""
        in_dtypes = [v.aval.dtype for v in eqn.invars]
        out_dtypes = [v.aval.dtype for v in eqn.outvars]
        return render.supports(op, in_dtypes, out_dtypes, {})

    @staticmethod
    def supports(eqn) -> bool:
        prim = eqn.primitive
        op = prim.kernel_op
        if op is None:
            return False
        in_dtypes = [v.aval.dtype for v in eqn.invars]
        out_dtypes = [v.aval.dtype for v in eqn.outvars]
        if prim.kind is Kind.REDUCE:
            return render.reduce_supported(op, in_dtypes[0], out_dtypes[0])
        return render.supports(op, in_dtypes, out_dtypes, eqn.params)

    @staticmethod
    def native_scratch(eqn) -> int | None:
        """Opaque equations native segments run in C (compiler/segments.py): BLAS matmuls and
        convolutions, with the bytes of working memory they need (None: a Python step)."""
        return native_program.native_scratch(eqn)


def _set_thread_policy() -> None:
    # OpenMP threads that spin while idle make BLAS (and NumPy) next to them far slower: wait
    # passively unless the user chose otherwise. Read by the OpenMP runtime when it starts.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from morphax._src.config import config

    if config.morphax_num_threads and "OMP_NUM_THREADS" not in os.environ:
        os.environ["OMP_NUM_THREADS"] = str(config.morphax_num_threads)


# Before any generated library starts the OpenMP runtime: `jit(backend="c")` builds kernels
# without ever asking `available()`, and spinning OpenMP workers next to BLAS's threads made a
# transformer step 3.5x slower on two cores.
_set_thread_policy()


def _on_flag(name, value) -> None:
    # The cache directory is one per process: the process-wide value counts, not a thread's
    # override of it.
    if name == "jax_compilation_cache_dir":
        from morphax._src.config import _global_values

        disk_cache.set_base(_global_values["compilation_cache_dir"])


config.add_listener(_on_flag)
if config.compilation_cache_dir is not None:  # set before the compiler was first imported
    disk_cache.set_base(config.compilation_cache_dir)


class CBackend:
    name = "c"
    caps = _Caps()

    @staticmethod
    def available() -> bool:
        return build.probe()[0]

    @staticmethod
    def unavailable_reason() -> str:
        return build.probe()[1]

    def opaque(self, eqn):
        """Gather and the scatter family as C loops (gather_scatter_add.py); None: the reference runs."""
        from morphax._src.compiler.backends.c import indexing

        return indexing.opaque(eqn)

    def build(self, program, on_ready=None):
        """Render every kernel and native segment of `program` into one C file, build it, and
        wrap each top-level step (kernel or segment) in a launcher.

        With `on_ready` given and the library in no cache yet, the compiler runs in the
        background and the kernel callables returned are None (the program runs on the NumPy
        backend meanwhile); `on_ready(kernel_fns)` is called with the native ones once the
        library is built (never, if the compiler fails: NumPy stays, with a warning)."""
        kernels = program.kernels
        segments = [s for top_segment in program.segments for s in top_segment.nested()]  # bodies first
        # compile.py groups every kernel into a native segment (compiler/segments.py): segments are
        # the only steps this backend launches.
        top = program.segments
        if not top:
            return {}, []
        with_blas = native_program.uses_blas(segments)
        with_ffi = native_program.uses_ffi(segments)
        ffi_targets = ffi.targets(segments) if with_ffi else None
        rendered: list = []
        # The open jaxpr only: the executable is memoized on the closed jaxpr, and holding that
        # (with its constants) from here would make a cycle only the cyclic GC frees.
        jaxpr = program.closed.jaxpr

        render_lock = threading.Lock()  # as_text() and a background build may both render
        front: list = []  # how many functions (kernels, row groups) precede the segments'

        def render_all() -> list:
            with render_lock:
                if not rendered:
                    names = _NameContext()
                    _print_jaxpr(jaxpr, names, 0)  # names as the printed jaxpr shows them
                    # Kernels of a row group (compiler/row_fusion.py) render into one function.
                    groups = [
                        (native_program.row_group_name(s, first), s.steps[first : last + 1])
                        for s in segments
                        for first, last in s.row_groups
                    ]
                    grouped = {id(k) for _, members in groups for k in members}
                    rendered.extend(render.render_kernel(k, names) for k in kernels if id(k) not in grouped)
                    rendered.extend(render.render_row_group(m, names, n) for n, m in groups)
                    front.append(len(rendered))  # the segments' functions follow
                    launched = {id(s) for s in top}
                    rendered.extend(
                        native_program.render_segment(s, names, id(s) in launched, ffi_targets)
                        for s in segments
                    )
            return rendered

        prelude = render.PRELUDE + (blas.SOURCE if with_blas else "") + (ffi.SOURCE if with_ffi else "")

        def source() -> str:
            return prelude + "\n\n" + "\n\n".join(render_all()) + "\n"

        # Keyed by what determines the source (the optimized jaxpr, the kernel names, the code
        # generator and math library), so a cache hit skips rendering.
        # The literals' bits too: the printed jaxpr shows them in their shortest repr.
        literal_bits = "".join(
            np.asarray(n.params["value"], n.dtype).tobytes().hex()
            for k in kernels
            for n in k.nodes
            if n.op == "const"
        )
        # Kernels that overwrite a donated input render without `restrict` on the pair.
        aliases = repr([sorted(k.aliases.items()) for k in kernels])
        # Which steps share a segment follows from the program and the code generator, except
        # for BLAS's availability (without SciPy, matmuls stay Python steps).
        layout = repr([(s.name, len(s.steps), s.scratch_bytes, s.row_groups) for s in segments])
        printed = str(program.closed)
        key_text = "\n".join(
            [
                printed,
                literal_bits,
                aliases,
                layout,
                top[0].name,
                render.CODEGEN_VERSION,
                _codegen_hash(),
            ]
        )

        def launchers(lib, params=None) -> dict:
            # build.function: the library is unloaded as soon as the last launcher goes.
            if with_blas:
                set_blas = build.function(lib, "mx_set_blas")
                set_blas.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
                set_blas(*blas.gemm_pointers())
            if with_ffi:  # the user's targets, as registered now; their failures raise
                ffi.bind(lib, ffi_targets)
                return {
                    id(s): ffi.checked(native_program.launcher(build.function(lib, s.name), s, params), lib)
                    for s in top
                }
            return {id(s): native_program.launcher(build.function(lib, s.name), s, params) for s in top}

        # Programs that differ only in shapes share a structure (generic.py).
        structure = generic.structure_key("\n".join([printed, aliases, layout, top[0].name]))
        lib = build.cached(key_text)
        if lib is not None:
            generic.REGISTRY.remember_lazily(structure, render_all)
            return launchers(lib), _LazySources(render_all)
        hit = build.cached_alias(key_text)  # this very program ran a generic library before
        if hit is not None:
            lib, library_key, positions, values = hit
            generic.REGISTRY.remember_lazily(structure, render_all, (positions, lib, library_key))
            return launchers(lib, np.array(values, np.int64)), _LazySources(render_all)
        shapes = plan = None
        if generic.REGISTRY.seen(structure):  # another shape of this structure was built before
            shapes = generic.template(render_all())
            plan = generic.REGISTRY.plan(shapes)
            if plan is not None and plan[0] == "reuse":
                _, lib, library_key, positions, values = plan
                build.stats["generic_hits"] += 1
                build.save_alias(key_text, library_key, positions, values)
                return launchers(lib, values), _LazySources(render_all)
        new_structure = shapes is None

        def compile_now():
            """(library, parameters or None): generic unless the structure's numbers rule it out."""
            tmpl = generic.template(render_all()) if new_structure else shapes
            positions = None
            if plan is not None:
                positions = plan[1]
            elif config.morphax_shape_generic and (new_structure or not generic.REGISTRY.knows(tmpl)):
                positions = generic.per_call_positions(tmpl) or None
            if positions is not None:
                render_all()
                position = {id(s): front[0] + k for k, s in enumerate(segments)}
                entries = {position[id(s)]: len(s.inputs) + len(s.outputs) + 1 for s in top}
                text = generic.generic_source(tmpl, positions, entries)
                generic_text = prelude + generic.PRELUDE + "\n" + text + "\n"
                library_text = "\n".join(
                    [generic.generic_key(tmpl, positions), repr(entries), repr(with_blas), _codegen_hash()]
                )
                try:
                    lib = build.load(generic_text, top[0].name, library_text)
                except build.CompileError:
                    generic.REGISTRY.failed(tmpl)  # a number C needs as a constant: specialize
                else:
                    library_key = build.cache_key(library_text)
                    generic.REGISTRY.remember(structure, tmpl)
                    generic.REGISTRY.built(tmpl, positions, lib, library_key)
                    values = generic.values(tmpl, positions)
                    build.save_alias(key_text, library_key, positions, values)
                    return lib, values
            lib = build.load(source, top[0].name, key_text)
            generic.REGISTRY.remember(structure, tmpl)
            return lib, None

        if on_ready is not None:

            def finish():
                try:
                    lib, params = compile_now()
                except build.CompileError as e:
                    _warn_fallback(e, stacklevel=1)
                    return
                on_ready(launchers(lib, params))

            background.submit(finish)
            return None, _LazySources(render_all)
        try:
            lib, params = compile_now()
        except build.CompileError as e:
            _warn_fallback(e, stacklevel=3)
            fns = {id(s): segment_callable(s) for s in top}
            return fns, render_all()
        return launchers(lib, params), _LazySources(render_all)


def _warn_fallback(error, stacklevel: int) -> None:
    warnings.warn(
        f"morphax: the C compiler failed on a generated program; running it with NumPy instead.\n{error}",
        CompilerFallbackWarning,
        stacklevel=stacklevel,
    )


_CODEGEN_HASH: list = []


def _codegen_hash() -> str:
    """A hash of everything that turns a jaxpr into C: lowering and fusion, the kernel IR, the
    renderer with its prelude and math library, the generic rewrite, and this module. The disk
    cache is keyed by a description of the program, so a change to any of them must change the
    key."""
    if not _CODEGEN_HASH:
        from morphax._src.compiler import fusion, kernel_ir, row_fusion, segments, sibling_merge
        from morphax._src.compiler.backends.c import convolution

        h = hashlib.sha256(render.RENDERER_HASH.encode())
        modules = (
            fusion,
            kernel_ir,
            row_fusion,
            segments,
            sibling_merge,
            blas,
            convolution,
            generic,
            native_program,
            sys.modules[__name__],
        )
        for module in modules:
            with open(module.__file__, "rb") as fh:
                h.update(fh.read())
        _CODEGEN_HASH.append(h.hexdigest())
    return _CODEGEN_HASH[0]


class _LazySources:
    """The kernels' C source, rendered only when someone asks (as_text): a disk-cache hit does
    not render at all."""

    def __init__(self, render_all):
        self._render_all = render_all

    def __iter__(self):
        return iter(self._render_all())

    def __len__(self):
        return len(self._render_all())


BACKEND = CBackend()
