"""A small Wadler-Lindig document printer: the layout engine behind the jaxpr printer.

A document is text, concatenations, breaks, groups and nesting. A group is printed on one line
(its breaks as their text, usually a space) when all of it fits in what is left of the line,
otherwise its breaks become newlines indented to the current nesting; what follows the group
on its line does not count. JAX's printer decides the same way, which is what makes
morphax's jaxprs lay out line for line as JAX's do.
"""

from __future__ import annotations

__all__ = ["Doc", "brk", "concat", "format_doc", "group", "join", "nest", "nil", "text"]

# Node kinds, kept as small tuples so that building a large jaxpr's document stays cheap.
_TEXT, _CONCAT, _BRK, _GROUP, _NEST = range(5)
_FLAT, _BREAK = 0, 1


class Doc:
    __slots__ = ("kind", "a", "b")

    def __init__(self, kind: int, a, b=None):
        self.kind = kind
        self.a = a
        self.b = b

    def __add__(self, other: Doc) -> Doc:
        return concat([self, other])

    def __str__(self):
        return format_doc(self)


def text(s: str) -> Doc:
    return Doc(_TEXT, s)


def nil() -> Doc:
    return Doc(_CONCAT, ())


def concat(docs) -> Doc:
    return Doc(_CONCAT, tuple(docs))


def brk(s: str = " ") -> Doc:
    """A break: `s` when its group is printed flat, a newline plus indentation otherwise."""
    return Doc(_BRK, s)


def group(doc: Doc) -> Doc:
    return Doc(_GROUP, doc)


def nest(n: int, doc: Doc) -> Doc:
    """Indent the lines that `doc`'s breaks start by `n` more columns."""
    return Doc(_NEST, doc, n)


def join(sep: Doc, docs) -> Doc:
    docs = list(docs)
    if not docs:
        return nil()
    parts = [docs[0]]
    for d in docs[1:]:
        parts.append(sep)
        parts.append(d)
    return concat(parts)


def _fits(doc: Doc, room: int) -> bool:
    # Whether `doc` printed flat fits in `room` columns (what follows it on the line does not
    # count, as in JAX's printer).
    stack = [doc]
    while stack and room >= 0:
        d = stack.pop()
        k = d.kind
        if k == _TEXT or k == _BRK:
            room -= len(d.a)
        elif k == _CONCAT:
            stack.extend(reversed(d.a))
        else:  # group or nest: flat either way
            stack.append(d.a)
    return room >= 0


def format_doc(doc: Doc, width: int = 80) -> str:
    out: list[str] = []
    col = 0
    agenda = [(0, _BREAK, doc)]
    while agenda:
        indent, mode, d = agenda.pop()
        k = d.kind
        if k == _TEXT:
            out.append(d.a)
            col += len(d.a)
        elif k == _CONCAT:
            agenda.extend((indent, mode, c) for c in reversed(d.a))
        elif k == _BRK:
            if mode == _FLAT:
                out.append(d.a)
                col += len(d.a)
            else:
                out.append("\n" + " " * indent)
                col = indent
        elif k == _NEST:
            agenda.append((indent + d.b, mode, d.a))
        else:
            flat = _fits(d.a, width - col)
            agenda.append((indent, _FLAT if flat else _BREAK, d.a))
    return "".join(out)
