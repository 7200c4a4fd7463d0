"""Writing StableHLO as MLIR text: types, attributes, SSA values and operations in the generic
op form (`%0 = "stablehlo.add"(%a, %b) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>`),
which every PJRT plugin's parser reads whatever its StableHLO version; the pretty form is tied
to one version. Knows nothing of jaxprs or primitives (lowering.py walks those).
"""

from __future__ import annotations

import numpy as np

_ELEMENT_TYPES = {
    "bool": "i1",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "ui8",
    "uint16": "ui16",
    "uint32": "ui32",
    "uint64": "ui64",
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
    "complex64": "complex<f32>",
    "complex128": "complex<f64>",
    "float8_e4m3fn": "f8E4M3FN",
    "float8_e5m2": "f8E5M2",
    "int4": "i4",
    "uint4": "ui4",
}


class LoweringError(NotImplementedError):
    """A program holds something this lowering cannot express in StableHLO."""


def element_type(dtype) -> str:
    name = np.dtype(dtype).name
    try:
        return _ELEMENT_TYPES[name]
    except KeyError:
        raise LoweringError(f"StableHLO has no element type for dtype {name}") from None


def tensor_type(shape, dtype) -> str:
    dims = "".join(f"{int(d)}x" for d in shape)
    return f"tensor<{dims}{element_type(dtype)}>"


class Value:
    """An SSA value: its name as the text refers to it, its shape and dtype."""

    __slots__ = ("name", "shape", "dtype")

    def __init__(self, name: str, shape, dtype):
        self.name = name
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)

    @property
    def type(self) -> str:
        return tensor_type(self.shape, self.dtype)

    def __repr__(self):
        return f"{self.name}: {self.type}"


# ----------------------------------------------------------------------------- attributes


def i64_array(values) -> str:
    values = [int(v) for v in values]
    return "array<i64: " + ", ".join(map(str, values)) + ">" if values else "array<i64>"


def bool_array(values) -> str:
    values = ["true" if v else "false" for v in values]
    return "array<i1: " + ", ".join(values) + ">" if values else "array<i1>"


def dense_i64(values, shape=None) -> str:
    values = np.asarray(values, np.int64)
    shape = values.shape if shape is None else shape
    return dense(values.reshape(shape))


def _nested_bools(array: np.ndarray) -> str:
    if array.ndim == 0:
        return "true" if array else "false"
    return "[" + ", ".join(_nested_bools(row) for row in array) + "]"


def dense(array: np.ndarray) -> str:
    """A DenseElementsAttr holding `array` exactly: hexadecimal bytes (every bit kept: NaN
    payloads, -0.0, bfloat16), a splat where all elements are equal."""
    array = np.asarray(array)
    kind = tensor_type(array.shape, array.dtype)
    if array.dtype == np.bool_:
        flat = array.reshape(-1)
        if flat.size and (flat == flat[0]).all():
            return f"dense<{'true' if flat[0] else 'false'}> : {kind}"
        # Nested like the shape: a flat list for a tensor of rank >= 2 is refused by the TPU's
        # parser ("inferred shape of elements literal ([n]) does not match type").
        return f"dense<{_nested_bools(array)}> : {kind}"
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.size == 0:
        return (
            f"dense<> : {kind}"
            if array.ndim <= 1
            else f"dense<{'[' * array.ndim}{']' * array.ndim}> : {kind}"
        )
    raw = flat.view(np.uint8).reshape(flat.size, flat.dtype.itemsize)
    if (raw == raw[0]).all():  # one value repeated: its bytes once
        return f'dense<"0x{raw[0].tobytes().hex().upper()}"> : {kind}'
    little = flat.astype(flat.dtype.newbyteorder("<"), copy=False)
    return f'dense<"0x{little.tobytes().hex().upper()}"> : {kind}'


def enum_attr(dialect_enum: str, value: str) -> str:
    """`#stablehlo<comparison_direction LT>`."""
    return f"#stablehlo<{dialect_enum} {value}>"


# ----------------------------------------------------------------------------- the writer


class Builder:
    """Writes operations into the current block; values are named %0, %1, ... per function."""

    def __init__(self):
        self._counter = 0
        self._blocks: list[list[str]] = []
        self._indent = 2

    def fresh(self, prefix: str = "") -> str:
        self._counter += 1
        return f"%{prefix}{self._counter - 1}"

    # A block is a list of lines; functions and regions push one while their body is written.
    def push_block(self) -> list[str]:
        block: list[str] = []
        self._blocks.append(block)
        self._indent += 2
        return block

    def pop_block(self) -> list[str]:
        self._indent -= 2
        return self._blocks.pop()

    def emit(self, line: str) -> None:
        self._blocks[-1].append(" " * self._indent + line)

    def op(self, name: str, operands, results, attributes=None, regions=()) -> list[Value]:
        """Write one operation; `results` are (shape, dtype) pairs; returns their Values."""
        outs = []
        if results:
            base = self.fresh()
            if len(results) == 1:
                outs = [Value(base, *results[0])]
                lhs = f"{base} = "
            else:
                outs = [Value(f"{base}#{k}", *r) for k, r in enumerate(results)]
                lhs = f"{base}:{len(results)} = "
        else:
            lhs = ""
        text = f'{lhs}"{name}"(' + ", ".join(v.name for v in operands) + ")"
        if regions:
            text += " (" + ", ".join(regions) + ")"
        if attributes:
            text += " {" + ", ".join(f"{k} = {v}" for k, v in attributes.items()) + "}"
        ins = ", ".join(v.type for v in operands)
        outs_text = ", ".join(v.type for v in outs)
        if len(outs) != 1:
            outs_text = f"({outs_text})"
        self.emit(f"{text} : ({ins}) -> {outs_text}")
        return outs

    def region(self, arg_types, body) -> str:
        """A region with one block whose arguments have `arg_types` ((shape, dtype) pairs):
        `body(*args) -> [Values]` writes it and returns what the block yields."""
        args = [Value(self.fresh("r"), *t) for t in arg_types]  # never %argN: main's own
        self.push_block()
        results = body(*args)
        self.op("stablehlo.return", results, [])
        lines = self.pop_block()
        head = ""
        if args:  # a block without arguments needs no label
            head = (
                " " * (self._indent + 2) + "^bb0(" + ", ".join(f"{a.name}: {a.type}" for a in args) + "):\n"
            )
        return "{\n" + head + "\n".join(lines) + "\n" + " " * self._indent + "}"
