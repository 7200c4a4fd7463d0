"""Shape-generic libraries: one compiled library for every shape of a program's structure.

A program traced again for a new batch size lowers, fuses and renders to the same C as before
except for numbers: extents, strides, trip counts, scratch offsets, a mean's 1/n. A *generic*
library reads some of those numbers at run time from a parameter array, so one compile serves
every shape whose C has the same skeleton (and the same numbers everywhere else): a new shape
costs a trace and a render, no C compile.

Which numbers become parameters:
- A new structure's first library is generic in the numbers its functions read once per call
  (`per_call_positions`): the integers of at least 16 at the top level of each function body
  (outer loop bounds, scratch offsets, malloc sizes, BLAS extents) and the integral float
  constants (a mean's n). Inner loops keep their constant trip counts and strides, so the code is
  as fast as a specialized build (measured on the CNN and transformer steps), and a batch size is
  usually one of those top-level numbers.
- A later shape that differs somewhere else (an inner extent) is compared token by token with
  the rendering the library was built from; when only numbers differ, one more generic library
  is compiled whose parameters are every number that differed, and later shapes reuse it.

The parameters travel as one more pointer after a top-level segment's scratch arena; the segment
stores it in a thread-local, and every function reads the values it uses into locals when it
starts (so OpenMP worker threads, which have their own thread-locals, see plain locals). Numbers
C needs at compile time -- in preprocessor lines, static initializers, case labels, or with a type
suffix -- must match exactly; a program where one differs gets its own library, as does a
program whose generic version fails to compile (a C constant expression, say): it is then built
specialized.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
import struct
import threading

import numpy as np

# Comments are consumed whole; a number must not continue an identifier (b_x3, int64_t), so the
# numbers found are C numeric literals.
_TOKEN = re.compile(
    r"/\*.*?\*/|//[^\n]*"
    r"|(?<![\w.])(?P<num>0[xX][0-9a-fA-F]*\.?[0-9a-fA-F]*(?:[pP][+-]?\d+)?[fFlLuU]*"
    r"|\d+\.?\d*(?:[eE][+-]?\d+)?[fFlLuU]*|\.\d+(?:[eE][+-]?\d+)?[fFlLuU]*)",
    re.S,
)
_INT = re.compile(r"\d+")
_FLOAT = re.compile(
    r"(0[xX][0-9a-fA-F]*\.?[0-9a-fA-F]*[pP][+-]?\d+|\d*\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)[fF]?"
)
# Lines where C needs its numbers at compile time.
_COMPILE_TIME = re.compile(r"^\s*#|\bstatic\b|\bcase\b")
# Numbers below this stay constants in a first generic library: a loop that short is best
# unrolled, and run-time trip counts that small made the C compiler 50% slower on the test
# suite's small-shape programs (vectorized loops with epilogues for a handful of elements).
SMALLEST_PARAMETER = 16
# A function's pointer arguments (io[k], buf[k]): their indices are the program's, not a shape's.
_POINTER_ARRAYS = ("io[", "buf[")
MAX_FAMILIES = 256
PRELUDE = """
static _Thread_local const int64_t *mx_dims;  /* this call's shape parameters (generic.py) */
static inline double mx_dim_double(int64_t bits) { double d; memcpy(&d, &bits, 8); return d; }
"""


@dataclasses.dataclass
class Template:
    """The rendered functions of one program with the places of their numeric literals."""

    texts: list  # the functions' C
    spans: list  # per function: (start, end) of each numeric literal
    numbers: list  # per function: the literal tokens, in order
    key: str  # hash of the skeleton: comments dropped, every number replaced by '#'

    def pieces(self, f: int) -> list:
        """Function f's text around its numbers (one more piece than numbers)."""
        text, spans = self.texts[f], self.spans[f]
        starts = [0] + [end for _, end in spans]
        ends = [start for start, _ in spans] + [len(text)]
        return [text[a:b] for a, b in zip(starts, ends)]

    def fixed(self, f: int, n: int) -> bool:
        """Whether number n of function f is one C needs at compile time (a preprocessor line,
        a static initializer, a case label) or one with a type suffix."""
        token, (start, _) = self.numbers[f][n], self.spans[f][n]
        text = self.texts[f]
        line = text[text.rfind("\n", 0, start) + 1 : start]
        numeric = _INT.fullmatch(token) or _FLOAT.fullmatch(token)
        return not numeric or _COMPILE_TIME.search(line) is not None


def template(functions) -> Template:
    texts, spans, numbers, skeleton = [], [], [], hashlib.sha256()
    for text in functions:
        where, nums = [], []
        skeleton.update(_TOKEN.sub(functools.partial(_mark, where, nums), text).encode() + b"\0")
        texts.append(text)
        spans.append(where)
        numbers.append(nums)
    return Template(texts, spans, numbers, skeleton.hexdigest())


def _mark(where: list, nums: list, m) -> str:
    """A token of the skeleton: a number is recorded and becomes '#', a comment goes."""
    token = m.group("num")
    if token is None:
        return " "
    where.append(m.span())
    nums.append(token)
    return "#"


def differing(new: Template, old: Template) -> list | None:
    """The (function, number) positions where `new` and `old` (same skeleton) differ, or None
    when one of them is a number C needs at compile time."""
    positions = []
    for f, (a, b) in enumerate(zip(new.numbers, old.numbers)):
        for n, (x, y) in enumerate(zip(a, b)):
            if x != y:
                if new.fixed(f, n):
                    return None
                positions.append((f, n))
    return positions


def per_call_positions(tmpl: Template) -> list:
    """The numbers a first generic library takes as parameters: integers of at least
    SMALLEST_PARAMETER at the top level of a function body (brace depth 1: read once per call)
    and integral float constants of at least 2 (the n of a mean), wherever they are. Smaller
    integers stay constants, as do the indices of the pointer arguments and the numbers C needs
    at compile time."""
    positions = []
    for f, tokens in enumerate(tmpl.numbers):
        text = tmpl.texts[f]
        depth, scanned = 0, 0
        for n, token in enumerate(tokens):
            start = tmpl.spans[f][n][0]
            depth += text.count("{", scanned, start) - text.count("}", scanned, start)
            scanned = start
            if tmpl.fixed(f, n):
                continue
            if _INT.fullmatch(token):
                pointer_slot = text.endswith(_POINTER_ARRAYS, 0, start)
                chosen = depth <= 1 and int(token) >= SMALLEST_PARAMETER and not pointer_slot
            else:
                value = _double(value_bits(token))
                chosen = value >= 2 and value.is_integer()
            if chosen:
                positions.append((f, n))
    return positions


def generic_key(tmpl: Template, positions: list) -> str:
    """What determines a generic library's code besides the code generator: the skeleton, which
    numbers are parameters, and every other number."""
    params = set(positions)
    kept = [
        token
        for f, tokens in enumerate(tmpl.numbers)
        for n, token in enumerate(tokens)
        if (f, n) not in params
    ]
    return "\n".join(["generic", tmpl.key, repr(sorted(params)), " ".join(kept)])


def _double(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<q", bits))[0]


def _c_type(token: str) -> str:
    if _INT.fullmatch(token):
        return "int64_t"
    return "float" if token[-1] in "fF" else "double"


def value_bits(token: str) -> int:
    """A number token as the int64 the generic code reads (floats as their double's bits)."""
    if _INT.fullmatch(token):
        return int(token)
    text = token.rstrip("fF")
    value = float.fromhex(text) if text[:2].lower() == "0x" else float(text)
    return struct.unpack("<q", struct.pack("<d", value))[0]


def generic_source(tmpl: Template, positions: list, entries: dict) -> str:
    """The functions of `tmpl` with the numbers at `positions` read from the parameters.
    `entries` maps the index of each top-level segment function to its io slot for them."""
    params = {pos: k for k, pos in enumerate(positions)}
    out = []
    for f, nums in enumerate(tmpl.numbers):
        parts = tmpl.pieces(f)
        text = [parts[0]]
        declared = []
        for n, token in enumerate(nums):
            k = params.get((f, n))
            if k is None:
                text.append(token)
            else:
                text.append(f"mxd{k}")
                declared.append((k, _c_type(token)))
            text.append(parts[n + 1])
        body = "".join(text)
        setup = []
        if f in entries:
            setup.append(f"  mx_dims = (const int64_t *)io[{entries[f]}];")
        for k, ctype in dict(declared).items():
            read = f"mx_dims[{k}]" if ctype == "int64_t" else f"({ctype})mx_dim_double(mx_dims[{k}])"
            setup.append(f"  const {ctype} mxd{k} = {read};")
        if setup:
            opening = re.search(r"^(?:static )?void \w+\(void \*const \*restrict \w+\) \{\n", body, re.M)
            assert opening is not None, "every rendered function starts with its definition line"
            body = body[: opening.end()] + "\n".join(setup) + "\n" + body[opening.end() :]
        out.append(body)
    header = (
        f"/* Generic over {len(positions)} numbers (mxd0, mxd1, ...: this call's extents, offsets and "
        "shape-derived constants, read from the parameters); the comments show the shapes of the "
        "program that built it. */"
    )
    return header + "\n\n" + "\n\n".join(out)


def values(tmpl: Template, positions: list) -> np.ndarray:
    return np.array([value_bits(tmpl.numbers[f][n]) for f, n in positions], dtype=np.int64)


@dataclasses.dataclass
class _Family:
    """What is known about one skeleton: the latest library built for it, with the rendering it
    was built from (`template`) and, when it is generic, its parameters (`positions`). Another
    shape may use a generic library only where its numbers equal that rendering's outside the
    parameters."""

    template: Template
    positions: list | None = None
    library: object = None
    library_key: str = ""  # its disk-cache key
    failed: bool = False


def structure_key(description: str) -> str:
    """A program's description (its printed jaxpr and segment layout) with every number
    blanked: programs that differ only in shapes share it. Cheap, unlike rendering."""
    return hashlib.sha256(re.sub(r"\d+", "#", description).encode()).hexdigest()


class Registry:
    """Structures and skeletons seen in this process, shared by every program (thread-safe)."""

    def __init__(self):
        self._families: dict[str, _Family] = {}
        self._structures: set = set()
        self._pending: dict = {}  # structure -> render(), for libraries loaded from a cache
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._families.clear()
            self._structures.clear()
            self._pending.clear()

    def seen(self, structure: str) -> bool:
        """Whether a program of this structure was compiled (or loaded) before."""
        with self._lock:
            pending = self._pending.pop(structure, None)
            known = structure in self._structures
        if pending is not None:
            render, generic = pending
            tmpl = template(render())
            self.remember(structure, tmpl)
            if generic is not None:
                self.built(tmpl, *generic)
        return known

    def remember_lazily(self, structure: str, render, generic=None) -> None:
        """A library for this structure came from a cache: its rendering (`render()`, the
        functions' C) is taken only if another shape of the structure shows up. `generic`:
        (positions, library, its cache key) when that library is generic."""
        with self._lock:
            if structure not in self._structures:
                self._structures.add(structure)
                self._pending[structure] = (render, generic)
                self._bound()

    def plan(self, tmpl: Template):
        """("reuse", library, its cache key, positions, params) when a generic library serves
        `tmpl`; ("build", positions) when one should be compiled for it; None when `tmpl` needs a
        specialized library."""
        with self._lock:
            family = self._families.get(tmpl.key)
        if family is None or family.failed:
            return None
        positions = differing(tmpl, family.template)
        if positions is None:
            return None
        if family.library is not None:
            known = set(family.positions)
            if known.issuperset(positions):
                params = values(tmpl, family.positions)
                return "reuse", family.library, family.library_key, family.positions, params
            positions = sorted(known.union(positions))
        return ("build", positions) if positions else None

    def knows(self, tmpl: Template) -> bool:
        """Whether a program with `tmpl`'s skeleton was built before."""
        with self._lock:
            return tmpl.key in self._families

    def remember(self, structure: str, tmpl: Template) -> None:
        """A program of `structure` rendering to `tmpl` was compiled: later shapes of its skeleton
        are compared with it, unless a generic library built for the skeleton is known."""
        with self._lock:
            self._structures.add(structure)
            self._families.setdefault(tmpl.key, _Family(tmpl))
            self._bound()

    def _bound(self) -> None:
        # A process that jits many different programs keeps the most recent structures only.
        for table in (self._families, self._pending):
            while len(table) > MAX_FAMILIES:
                table.pop(next(iter(table)))
        if len(self._structures) > 4 * MAX_FAMILIES:
            self._structures.clear()

    def built(self, tmpl: Template, positions: list, library, library_key: str) -> None:
        with self._lock:
            family = self._families.setdefault(tmpl.key, _Family(tmpl))
            family.template, family.positions = tmpl, positions
            family.library, family.library_key = library, library_key

    def failed(self, tmpl: Template) -> None:
        with self._lock:
            family = self._families.setdefault(tmpl.key, _Family(tmpl))
            family.failed = True


REGISTRY = Registry()
