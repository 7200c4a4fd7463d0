"""The text picture of a sharding (`morphax.debug.visualize_sharding`,
`visualize_array_sharding`): a grid of boxes, one per distinct piece of a 1-D or 2-D array, sized
in proportion to the piece and labelled with the devices holding it, drawn with the same
geometry as JAX's (which draws through `rich`). NB: plain box characters, never colours; morphax
does not depend on rich, so `use_color` and `color_map` are accepted and ignored."""

from __future__ import annotations

import sys


def _chunk_index(size, slc) -> int:
    if slc.start is None and slc.stop is None:
        return 0
    return slc.start // (slc.stop - slc.start)


def _cells(shape, sharding, scale, min_width, max_width):
    """{(row, col): (label, (top, right, bottom, left) padding)} and the grid's size."""
    base_height = int(10 * scale)
    aspect = (shape[1] if len(shape) == 2 else 1) / shape[0]
    base_width = int(base_height * aspect)
    kind = next(iter(sharding.device_set)).platform.upper()
    devices, sizes = {}, {}
    for device, index in sharding.devices_indices_map(tuple(shape)).items():
        index = tuple(slice(i, i + 1) if isinstance(i, int) else i for i in index)
        chunk = tuple(_chunk_index(n, s) for n, s in zip(shape, index))
        extents = [(s.stop - s.start if s.stop is not None else n) / n for n, s in zip(shape, index)]
        if len(shape) == 2:
            sizes[chunk] = (extents[0], extents[1])
        else:
            chunk = (0, *chunk)
            sizes[chunk] = (None, extents[0])
        devices.setdefault(chunk, set()).add(device.id)
    rows = max(k[0] for k in devices) + 1
    cols = max(k[1] for k in devices) + 1
    cells = {}
    for key, ids in devices.items():
        label = f"{kind} " + ",".join(str(i) for i in sorted(ids))
        h, w = sizes[key]
        width = min(max(int(w * base_width * 2.5), min_width), max_width)
        height = 1 if h is None else int(h * base_height)
        left, extra = divmod(width - len(label) - 2, 2)
        top, extra_v = divmod(height - 2, 2)
        pads = (max(top, 0), max(left + extra, 0), max(top + extra_v, 0), max(left, 0))
        cells[key] = (label, pads)
    return cells, rows, cols


def render_sharding(shape, sharding, *, scale=1.0, min_width=9, max_width=80) -> str:
    """The picture of `sharding` over an array of `shape` (1-D or 2-D), as a string."""
    shape = tuple(int(d) for d in shape)
    if len(shape) not in (1, 2):
        raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
    cells, rows, cols = _cells(shape, sharding, scale, min_width, max_width)
    widths = [max(c[1][3] + len(c[0]) + c[1][1] for k, c in cells.items() if k[1] == j) for j in range(cols)]
    labels = [max(len(c[0]) for k, c in cells.items() if k[1] == j) for j in range(cols)]
    # NB: a picture wider than max_width loses padding (widest column first) down to the labels;
    # rich would squeeze the columns instead and may drop the labels.
    while sum(widths) + cols + 1 > max_width and any(w > n for w, n in zip(widths, labels)):
        j = max(range(cols), key=lambda k: widths[k] - labels[k])
        widths[j] -= 1
    lines = ["┌" + "┬".join("─" * w for w in widths) + "┐"]
    for i in range(rows):
        blocks = []
        for j in range(cols):
            label, (top, right, bottom, left) = cells[(i, j)]
            inner = widths[j] - left - right
            if inner < len(label):  # squeezed: center the label in the whole cell
                left = max((widths[j] - len(label)) // 2, 0)
                inner, right = len(label), max(widths[j] - len(label) - left, 0)
            before = (inner - len(label)) // 2
            text = " " * left + " " * before + label + " " * (inner - len(label) - before) + " " * right
            blank = " " * widths[j]
            blocks.append([blank] * top + [text[: widths[j]]] + [blank] * bottom)
        height = max(len(b) for b in blocks)
        for b, w in zip(blocks, widths):
            b.extend([" " * w] * (height - len(b)))
        lines.extend("│" + "│".join(b[k] for b in blocks) + "│" for k in range(height))
        lines.append(("├" + "┼".join("─" * w for w in widths) + "┤") if i < rows - 1 else None)
    lines[-1] = "└" + "┴".join("─" * w for w in widths) + "┘"
    return "\n".join(lines) + "\n"


def visualize_sharding(
    shape, sharding, *, use_color=True, scale=1.0, min_width=9, max_width=80, color_map=None
):
    """Print the picture of `sharding` over an array of `shape` (1-D or 2-D)."""
    sys.stdout.write(render_sharding(shape, sharding, scale=scale, min_width=min_width, max_width=max_width))


def visualize_array_sharding(arr, **kwargs):
    """Print the picture of how `arr` (1-D or 2-D) is laid out over devices."""
    return visualize_sharding(arr.shape, arr.sharding, **kwargs)
