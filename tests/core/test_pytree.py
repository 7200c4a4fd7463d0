"""Tests for the pytree library (``morphax.tree_util`` / ``morphax.tree``).

Owns checks of JAX-compatible pytree behaviour against explicitly written expected values;
imports only the public pytree modules (plus the internal ``broadcast_prefix`` helper).
"""

import collections
import dataclasses
import functools
import operator
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from morphax import tree as jtree
from morphax import tree_util as tu
from morphax._src.core.pytree import broadcast_prefix, prefix_broadcast
from morphax.tree_util import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    Partial,
    SequenceKey,
    keystr,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)

# ---------------------------------------------------------------------------------------------
# Test types (registered once, at import)
# ---------------------------------------------------------------------------------------------
ATuple = collections.namedtuple("ATuple", ["foo", "bar"])
Empty = collections.namedtuple("Empty", [])


@tu.register_pytree_node_class
class Point:
    def __init__(self, x, y, z):
        self.x = x
        self.y = y
        self.z = z

    def __repr__(self):
        return f"Point({self.x}, {self.y}, {self.z})"

    def tree_flatten(self):
        return ((self.x, self.y, self.z), None)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children)


@tu.register_dataclass
@dataclasses.dataclass
class Inferred:
    w: object
    b: object
    name: str = dataclasses.field(default="lin", metadata=dict(static=True))


@functools.partial(tu.register_dataclass, data_fields=["x"], meta_fields=["op"], drop_fields=["cache"])
@dataclasses.dataclass
class Explicit:
    x: object
    op: str
    cache: object = None


@tu.register_static
class StaticTag:
    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, StaticTag) and other.name == self.name

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f"StaticTag({self.name!r})"


@tu.register_pytree_with_keys_class
class Keyed:
    def __init__(self, a, b):
        self.a = a
        self.b = b

    def tree_flatten_with_keys(self):
        return (((GetAttrKey("a"), self.a), (GetAttrKey("b"), self.b)), "meta")

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    def __eq__(self, other):
        return type(other) is Keyed and (self.a, self.b) == (other.a, other.b)


class Pair:
    def __init__(self, first, second):
        self.first = first
        self.second = second

    def __eq__(self, other):
        return type(other) is Pair and (self.first, self.second) == (other.first, other.second)


tu.register_pytree_with_keys(
    Pair,
    lambda p: ([(GetAttrKey("first"), p.first), (GetAttrKey("second"), p.second)], None),
    lambda aux, children: Pair(*children),
)


# ---------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------
TREE_UTIL_NAMES = """DictKey FlattenedIndexKey GetAttrKey KeyEntry KeyPath Partial PyTreeDef SequenceKey
all_leaves default_registry flatten_one_level flatten_one_level_with_keys is_tree_node keystr
register_dataclass register_pytree_node register_pytree_node_class register_pytree_with_keys
register_pytree_with_keys_class register_static tree_all tree_broadcast tree_flatten
tree_flatten_with_path tree_leaves tree_leaves_with_path tree_map tree_map_with_path tree_reduce
tree_reduce_associative tree_structure tree_transpose tree_unflatten treedef_children treedef_is_leaf
treedef_tuple""".split()

TREE_NAMES = """all broadcast flatten flatten_with_path leaves leaves_with_path map map_with_path reduce
reduce_associative static structure transpose unflatten""".split()


@pytest.mark.parametrize("name", TREE_UTIL_NAMES)
def test_tree_util_name_exists(name):
    assert hasattr(tu, name)


@pytest.mark.parametrize("name", TREE_NAMES)
def test_tree_name_exists(name):
    assert hasattr(jtree, name)


def test_tree_aliases():
    assert jtree.map is tu.tree_map
    assert jtree.leaves is tu.tree_leaves
    assert jtree.structure is tu.tree_structure
    assert jtree.flatten is tu.tree_flatten
    assert jtree.unflatten is tu.tree_unflatten
    assert jtree.reduce is tu.tree_reduce
    assert jtree.all is tu.tree_all
    assert jtree.transpose is tu.tree_transpose
    assert jtree.broadcast is tu.tree_broadcast
    assert jtree.flatten_with_path is tu.tree_flatten_with_path
    assert jtree.leaves_with_path is tu.tree_leaves_with_path
    assert jtree.map_with_path is tu.tree_map_with_path
    assert jtree.reduce_associative is tu.tree_reduce_associative
    assert jtree.static is tu.register_static
    assert prefix_broadcast is broadcast_prefix


# ---------------------------------------------------------------------------------------------
# Flatten / unflatten round trips
# ---------------------------------------------------------------------------------------------
ROUND_TRIP_CASES = [
    (1, [1], "PyTreeDef(*)"),
    (None, [], "PyTreeDef(None)"),
    ((), [], "PyTreeDef(())"),
    ([], [], "PyTreeDef([])"),
    ({}, [], "PyTreeDef({})"),
    ((1,), [1], "PyTreeDef((*,))"),
    ((1, {"a": 2, "b": None}), [1, 2], "PyTreeDef((*, {'a': *, 'b': None}))"),
    (
        [1, [2, (3, None)], {"z": 4, "a": 5}],
        [1, 2, 3, 5, 4],
        "PyTreeDef([*, [*, (*, None)], {'a': *, 'z': *}])",
    ),
    (ATuple(foo=1, bar=(2, 3)), [1, 2, 3], "PyTreeDef(CustomNode(namedtuple[ATuple], [*, (*, *)]))"),
    (Empty(), [], "PyTreeDef(CustomNode(namedtuple[Empty], []))"),
    (
        collections.OrderedDict([("b", 1), ("a", 2)]),
        [1, 2],
        "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, *]))",
    ),
    (
        collections.defaultdict(list, {"b": 1, "a": 2}),
        [2, 1],
        "PyTreeDef(CustomNode(defaultdict[(<class 'list'>, ('a', 'b'))], [*, *]))",
    ),
    (Point(1, (2, 3), None), [1, 2, 3], "PyTreeDef(CustomNode(Point[None], [*, (*, *), None]))"),
    (Inferred(w=1, b=2), [1, 2], "PyTreeDef(CustomNode(Inferred[('lin',)], [*, *]))"),
    (Explicit(x=[1, 2], op="add"), [1, 2], "PyTreeDef(CustomNode(Explicit[('add',)], [[*, *]]))"),
    ((StaticTag("t"), 1), [1], "PyTreeDef((CustomNode(StaticTag[StaticTag('t')], []), *))"),
]


@pytest.mark.parametrize("tree,leaves,repr_", ROUND_TRIP_CASES, ids=[c[2] for c in ROUND_TRIP_CASES])
def test_flatten_round_trip(tree, leaves, repr_):
    got_leaves, treedef = tree_flatten(tree)
    assert got_leaves == leaves
    assert repr(treedef) == repr_
    rebuilt = tree_unflatten(treedef, got_leaves)
    assert tree_structure(rebuilt) == treedef
    assert tree_leaves(rebuilt) == leaves
    assert type(rebuilt) is type(tree)


def test_nested_containers_round_trip_exactly():
    tree = [
        (1, {"a": 2, "b": None}),
        ATuple(foo=3, bar=[4]),
        collections.OrderedDict(z=5, a=6),
        collections.defaultdict(int, {"q": 7}),
    ]
    leaves, treedef = tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, 5, 6, 7]
    out = tree_unflatten(treedef, [10, 20, 30, 40, 50, 60, 70])
    assert out == [
        (10, {"a": 20, "b": None}),
        ATuple(foo=30, bar=[40]),
        collections.OrderedDict(z=50, a=60),
        collections.defaultdict(int, {"q": 70}),
    ]
    assert type(out[2]) is collections.OrderedDict
    assert list(out[2]) == ["z", "a"]
    assert type(out[3]) is collections.defaultdict and out[3].default_factory is int


def test_point_class_round_trips():
    p = Point(1, 2, 3)
    leaves, treedef = tree_flatten(p)
    assert leaves == [1, 2, 3]
    out = tree_unflatten(treedef, [4, 5, 6])
    assert isinstance(out, Point) and (out.x, out.y, out.z) == (4, 5, 6)
    mapped = tree_map(lambda v: v * 10, p)
    assert repr(mapped) == "Point(10, 20, 30)"
    nested = tree_map(lambda a, b: a + b, [p, {"k": p}], [Point(1, 1, 1), {"k": Point(2, 2, 2)}])
    assert repr(nested) == "[Point(2, 3, 4), {'k': Point(3, 4, 5)}]"


def test_none_is_an_empty_node():
    assert tree_leaves(None) == []
    assert tree_leaves([None, 1, (None,)]) == [1]
    assert tree_map(lambda x: x + 1, [None, 1]) == [None, 2]
    leaves, treedef = tree_flatten([None, 1], is_leaf=lambda x: x is None)
    assert leaves == [None, 1]
    assert repr(treedef) == "PyTreeDef([*, *])"


def test_dict_sorted_order_and_unflatten_order():
    leaves, treedef = tree_flatten({"b": 1, "a": 2, "c": 3})
    assert leaves == [2, 1, 3]
    out = tree_unflatten(treedef, leaves)
    assert list(out) == ["a", "b", "c"]
    assert tree_structure({"b": 0, "a": 0}) == tree_structure({"a": 0, "b": 0})


def test_dict_with_unsortable_keys_raises_as_in_jax():
    # JAX 0.10.2 refuses a dict whose keys cannot be sorted (more in
    # tests/compat/test_behaviour_tracing.py).
    with pytest.raises(ValueError, match="Comparator raised exception while sorting pytree dictionary keys"):
        tree_flatten({1: "one", "a": "A", 0.5: "half"})


def test_ordered_dict_order_is_part_of_structure():
    s1 = tree_structure(collections.OrderedDict([("a", 1), ("b", 2)]))
    s2 = tree_structure(collections.OrderedDict([("b", 1), ("a", 2)]))
    assert s1 != s2
    assert s1 != tree_structure({"a": 1, "b": 2})


def test_defaultdict_factory_is_part_of_structure():
    assert tree_structure(collections.defaultdict(list, a=1)) != tree_structure(
        collections.defaultdict(int, a=1)
    )
    assert tree_structure(collections.defaultdict(list, a=1)) == tree_structure(
        collections.defaultdict(list, a=9)
    )


def test_subclasses_of_builtins_and_arrays_are_leaves():
    class MyList(list):
        pass

    class MyTuple(tuple):
        pass

    arr = np.arange(3)
    leaves = tree_leaves([MyList([1, 2]), MyTuple((3,)), arr, "s", 1.5])
    assert len(leaves) == 5
    assert leaves[0] == [1, 2] and type(leaves[0]) is MyList
    assert leaves[2] is arr


def test_is_leaf():
    tree = [(1, 2), [3, (4, 5)]]
    assert tree_leaves(tree, is_leaf=lambda x: isinstance(x, tuple)) == [(1, 2), 3, (4, 5)]
    summed = tree_map(
        lambda t: sum(t) if isinstance(t, tuple) else -t, tree, is_leaf=lambda x: isinstance(x, tuple)
    )
    assert summed == [3, [-3, 9]]
    # is_leaf sees the root too
    assert tree_leaves(tree, is_leaf=lambda x: x is tree) == [tree]


def test_unflatten_wrong_leaf_count():
    treedef = tree_structure((1, [2, 3]))
    with pytest.raises(ValueError, match=r"Too few leaves for PyTreeDef; expected 3, got 2"):
        tree_unflatten(treedef, [1, 2])
    with pytest.raises(ValueError, match=r"Too many leaves for PyTreeDef; expected 3, got 4"):
        tree_unflatten(treedef, [1, 2, 3, 4])
    # Any iterable of leaves is accepted.
    assert tree_unflatten(treedef, iter([7, 8, 9])) == (7, [8, 9])


# ---------------------------------------------------------------------------------------------
# Dataclasses, static and keyed registrations
# ---------------------------------------------------------------------------------------------
def test_register_dataclass_inferred_fields():
    m = Inferred(w=np.float32(1.0), b=[2, 3], name="relu")
    leaves, treedef = tree_flatten(m)
    assert leaves == [np.float32(1.0), 2, 3]
    assert treedef.node_data() == (Inferred, ("relu",))
    out = tree_map(lambda v: v * 2, m)
    assert out == Inferred(w=np.float32(2.0), b=[4, 6], name="relu")
    assert tree_structure(Inferred(1, 2, "a")) != tree_structure(Inferred(1, 2, "b"))
    paths = [keystr(p) for p, _ in tu.tree_leaves_with_path(m)]
    assert paths == [".w", ".b[0]", ".b[1]"]


def test_register_dataclass_explicit_and_drop_fields():
    e = Explicit(x=(1, 2), op="mul", cache="ignored")
    leaves, treedef = tree_flatten(e)
    assert leaves == [1, 2]
    assert tree_unflatten(treedef, [3, 4]) == Explicit(x=(3, 4), op="mul", cache=None)


def test_register_dataclass_validates_fields():
    @dataclasses.dataclass
    class Bad:
        a: int
        b: int

    with pytest.raises(ValueError, match="Missing fields: {'b'}"):
        tu.register_dataclass(Bad, data_fields=["a"], meta_fields=[])
    with pytest.raises(ValueError, match="Unexpected fields: {'c'}"):
        tu.register_dataclass(Bad, data_fields=["a", "b", "c"], meta_fields=[])
    with pytest.raises(TypeError, match="must both be specified"):
        tu.register_dataclass(Bad, data_fields=["a", "b"])

    class NotADataclass:
        pass

    with pytest.raises(TypeError, match="required when nodetype is not a dataclass"):
        tu.register_dataclass(NotADataclass)


def test_register_static():
    tag = StaticTag("x")
    leaves, treedef = tree_flatten({"t": tag, "v": 1})
    assert leaves == [1]
    assert tree_unflatten(treedef, [2]) == {"t": tag, "v": 2}
    assert tree_structure(StaticTag("x")) == tree_structure(StaticTag("x"))
    assert tree_structure(StaticTag("x")) != tree_structure(StaticTag("y"))
    assert tu.tree_leaves_with_path([tag, 1]) == [((SequenceKey(1),), 1)]


def test_jax_tree_static_decorator():
    @jtree.static
    class Mode(str):
        pass

    leaves, treedef = tree_flatten((Mode("train"), 3))
    assert leaves == [3]
    assert tree_unflatten(treedef, [4]) == ("train", 4)


def test_register_pytree_node_with_keys_func_and_duplicates():
    class Box:
        def __init__(self, v):
            self.v = v

    tu.register_pytree_node(
        Box,
        lambda b: ((b.v,), None),
        lambda aux, ch: Box(*ch),
        flatten_with_keys_func=lambda b: (((GetAttrKey("v"), b.v),), None),
    )
    assert tu.tree_leaves_with_path(Box([1])) == [((GetAttrKey("v"), SequenceKey(0)), 1)]
    with pytest.raises(ValueError, match="Duplicate"):
        tu.register_pytree_node(Box, lambda b: ((b.v,), None), lambda aux, ch: Box(*ch))
    with pytest.raises(ValueError, match="Duplicate"):
        tu.register_pytree_node(tuple, lambda t: (t, None), lambda aux, ch: tuple(ch))
    with pytest.raises(ValueError, match="Duplicate"):
        tu.register_pytree_node_class(Point)


def test_keyed_registrations():
    k = Keyed(1, [2])
    assert tu.tree_leaves_with_path(k) == [((GetAttrKey("a"),), 1), ((GetAttrKey("b"), SequenceKey(0)), 2)]
    leaves, treedef = tree_flatten(k)
    assert leaves == [1, 2]
    assert repr(treedef) == "PyTreeDef(CustomNode(Keyed[meta], [*, [*]]))"
    assert tree_unflatten(treedef, [3, 4]) == Keyed(3, [4])
    p = Pair(1, (2,))
    assert [keystr(path) for path, _ in tu.tree_leaves_with_path(p)] == [".first", ".second[0]"]
    assert tree_map(lambda x: -x, p) == Pair(-1, (-2,))


# ---------------------------------------------------------------------------------------------
# Key paths
# ---------------------------------------------------------------------------------------------
def test_key_entry_strings_and_values():
    assert str(SequenceKey(0)) == "[0]"
    assert str(DictKey("a")) == "['a']"
    assert str(DictKey(1)) == "[1]"
    assert str(GetAttrKey("name")) == ".name"
    assert str(FlattenedIndexKey(0)) == "[<flat index 0>]"
    assert repr(SequenceKey(0)) == "SequenceKey(idx=0)"
    assert repr(DictKey("a")) == "DictKey(key='a')"
    assert repr(GetAttrKey("x")) == "GetAttrKey(name='x')"
    assert repr(FlattenedIndexKey(2)) == "FlattenedIndexKey(key=2)"
    assert SequenceKey(1) == SequenceKey(1) and SequenceKey(1) != SequenceKey(2)
    assert SequenceKey(1) != FlattenedIndexKey(1)
    assert len({DictKey("a"), DictKey("a"), GetAttrKey("a")}) == 2
    assert pickle.loads(pickle.dumps(DictKey("a"))) == DictKey("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        SequenceKey(0).idx = 1  # type: ignore[misc]
    match GetAttrKey("w"):
        case GetAttrKey(name=n):
            assert n == "w"


def test_keystr():
    path = (SequenceKey(0), DictKey("a"), GetAttrKey("x"))
    assert keystr(path) == "[0]['a'].x"
    assert keystr(path, simple=True, separator="/") == "0/a/x"
    assert keystr(path, simple=True) == "0ax"
    assert keystr((FlattenedIndexKey(3),), simple=True) == "3"
    assert keystr(()) == ""
    assert keystr((0, 1, "a")) == "01a"


def test_flatten_with_path_all_node_kinds():
    tree = {
        "t": (1, [2]),
        "n": ATuple(foo=3, bar=None),
        "p": Point(4, 5, 6),
        "o": collections.OrderedDict([("y", 7), ("x", 8)]),
    }
    path_leaves, treedef = tu.tree_flatten_with_path(tree)
    assert treedef == tree_structure(tree)
    assert [(keystr(p), v) for p, v in path_leaves] == [
        ("['n'].foo", 3),
        ("['o']['y']", 7),
        ("['o']['x']", 8),
        ("['p'][<flat index 0>]", 4),
        ("['p'][<flat index 1>]", 5),
        ("['p'][<flat index 2>]", 6),
        ("['t'][0]", 1),
        ("['t'][1][0]", 2),
    ]
    assert path_leaves[0][0] == (DictKey("n"), GetAttrKey("foo"))
    assert path_leaves[3][0] == (DictKey("p"), FlattenedIndexKey(0))


def test_tree_map_with_path():
    tree = {"a": [1, 2], "b": (3,)}
    out = tu.tree_map_with_path(lambda p, x, y: f"{keystr(p)}={x + y}", tree, {"a": [10, 20], "b": (30,)})
    assert out == {"a": ["['a'][0]=11", "['a'][1]=22"], "b": ("['b'][0]=33",)}
    out2 = tu.tree_map_with_path(lambda p, x: len(p), [1, (2, 3)], is_leaf=lambda x: isinstance(x, tuple))
    assert out2 == [1, 1]


# ---------------------------------------------------------------------------------------------
# tree_map with several trees, mismatch errors
# ---------------------------------------------------------------------------------------------
def test_tree_map_multiple_trees_and_prefix_leaves():
    assert tree_map(lambda a, b, c: a + b + c, (1, {"x": 2}), (10, {"x": 20}), (100, {"x": 200})) == (
        111,
        {"x": 222},
    )
    # A leaf of the first tree may correspond to a whole subtree of the others.
    assert tree_map(lambda a, b: (a, b), [1], [(2, 3)]) == [(1, (2, 3))]
    # Builtin dict nodes accept dict subclasses in the other trees, keys matched by name.
    assert tree_map(lambda a, b: a + b, {"a": 1, "b": 2}, collections.OrderedDict(b=20, a=10)) == {
        "a": 11,
        "b": 22,
    }


def _map_error(*trees):
    with pytest.raises(ValueError) as info:
        tree_map(lambda *xs: xs[0], *trees)
    return str(info.value)


def test_tree_map_mismatch_error_names_path_and_structures():
    msg = _map_error([(1, {"a": 2, "b": (1, 2, 3)})], [(1, {"a": 2, "b": (1, 2)})])
    assert "at key path [0][1]['b']" in msg
    assert "Tuple arity mismatch: 2 != 3" in msg
    assert "PyTreeDef([(*, {'a': *, 'b': (*, *, *)})])" in msg
    assert "PyTreeDef([(*, {'a': *, 'b': (*, *)})])" in msg

    msg = _map_error([{"b": (1, 2)}], [{"b": [1, 2]}])
    assert "at key path [0]['b']" in msg and "Expected tuple, got [1, 2]." in msg

    msg = _map_error({"a": 1, "b": 2}, {"a": 1, "c": 2})
    assert "key path '' (the root)" in msg and "Dict key mismatch" in msg

    msg = _map_error([None], [1])
    assert "at key path [0]" in msg and "Expected None, got 1." in msg

    msg = _map_error(Point(1, 2, 3), (1, 2, 3))
    assert "Custom node type mismatch; expected type: " in msg and "Point" in msg

    msg = _map_error({"n": ATuple(1, 2)}, {"n": (1, 2)})
    assert "at key path ['n']" in msg and "Named tuple type mismatch" in msg

    msg = _map_error([Inferred(1, [2, 3], "a")], [Inferred(1, [2, 3], "b")])
    assert "at key path [0]" in msg and "Mismatch custom node data: ('a',) != ('b',)" in msg

    msg = _map_error([Inferred(1, [2, 3])], [Inferred(1, [2])])
    assert "at key path [0].b" in msg and "List arity mismatch: 1 != 2" in msg

    msg = _map_error([Point(1, (2, 3), 3)], [Point(1, (2,), 3)])
    assert "at key path [0][<flat index 1>]" in msg

    msg = _map_error((1, 2), (1, 2), (1, 2, 3))
    assert "tree argument 2" in msg


def test_flatten_up_to():
    treedef = tree_structure((1, {"a": 2}))
    assert treedef.flatten_up_to(([1, 2], {"a": (3,)})) == [[1, 2], (3,)]
    with pytest.raises(ValueError, match=r"Expected dict, got 5\. \(at key path \[1\]; expected structure"):
        treedef.flatten_up_to((1, 5))


# ---------------------------------------------------------------------------------------------
# PyTreeDef API
# ---------------------------------------------------------------------------------------------
def test_treedef_properties():
    treedef = tree_structure([(1, 2), None, {"a": 3}])
    assert treedef.num_leaves == 3
    assert treedef.num_nodes == 7  # list, tuple, leaf, leaf, None, dict, leaf
    assert tu.treedef_children(treedef) == [
        tree_structure((0, 0)),
        tree_structure(None),
        tree_structure({"a": 0}),
    ]
    assert repr(treedef.children()[0]) == "PyTreeDef((*, *))"
    assert treedef.node_data() == (list, None)
    assert tree_structure({"b": 1, "a": 2}).node_data() == (dict, ["a", "b"])
    assert tree_structure(ATuple(1, 2)).node_data() == (ATuple, None)
    assert tree_structure(1).node_data() is None
    assert tree_structure(1).children() == []


def test_treedef_cannot_be_constructed_directly():
    with pytest.raises(TypeError, match="cannot be constructed directly"):
        tu.PyTreeDef()


def test_treedef_is_leaf_and_tuple():
    assert tu.treedef_is_leaf(tree_structure(1))
    assert tu.treedef_is_leaf(tree_structure(None))  # JAX: a single node
    assert not tu.treedef_is_leaf(tree_structure([1]))
    combined = tu.treedef_tuple([tree_structure([1, 2]), tree_structure({"a": 1})])
    assert combined == tree_structure(([1, 2], {"a": 1}))
    assert combined.num_leaves == 3
    assert tu.treedef_tuple([]) == tree_structure(())


def test_treedef_hash_eq_pickle():
    t1 = tree_structure({"a": [1, (2, 3)], "b": ATuple(1, None)})
    t2 = tree_structure({"b": ATuple(9, None), "a": [4, (5, 6)]})
    assert t1 == t2 and hash(t1) == hash(t2)
    assert t1 != tree_structure({"a": [1, (2, 3)], "b": ATuple(1, 2)})
    assert tree_structure((1, 2)) != tree_structure([1, 2])
    assert tree_structure(None) != tree_structure(1)
    assert len({t1, t2, tree_structure(1)}) == 2
    assert t1 != "not a treedef"
    restored = pickle.loads(pickle.dumps(t1))
    assert restored == t1 and restored.num_leaves == 4
    assert tree_unflatten(restored, [1, 2, 3, 4]) == {"a": [1, (2, 3)], "b": ATuple(4, None)}


def test_treedef_compose_and_make_from_node_data():
    outer = tree_structure([0, 0])
    inner = tree_structure((0, {"k": 0}))
    composed = outer.compose(inner)
    assert composed == tree_structure([(0, {"k": 0}), (0, {"k": 0})])
    assert composed.num_leaves == 4
    for tree in [[1, (2, 3)], {"a": 1, "b": [2]}, ATuple(1, 2), Point(1, 2, 3), None]:
        td = tree_structure(tree)
        rebuilt = tu.PyTreeDef.make_from_node_data_and_children(
            tu.default_registry, td.node_data(), td.children()
        )
        assert rebuilt == td


# ---------------------------------------------------------------------------------------------
# One-level helpers
# ---------------------------------------------------------------------------------------------
def test_flatten_one_level():
    children, meta = tu.flatten_one_level({"a": [1, 2], "b": {"c": 3}})
    assert children == ([1, 2], {"c": 3}) and meta == ("a", "b")
    children, meta = tu.flatten_one_level([1, (2,)])
    assert list(children) == [1, (2,)] and meta is None
    children, meta = tu.flatten_one_level(ATuple(foo=(), bar=[None]))
    assert list(children) == [(), [None]] and meta is ATuple
    children, meta = tu.flatten_one_level(None)
    assert list(children) == [] and meta is None
    children, meta = tu.flatten_one_level(Inferred(1, 2, "z"))
    assert list(children) == [1, 2] and meta == ("z",)
    with pytest.raises(ValueError, match="can't tree-flatten type"):
        tu.flatten_one_level(1)


def test_flatten_one_level_with_keys():
    keyed, meta = tu.flatten_one_level_with_keys({"b": 1, "a": 2})
    assert keyed == [(DictKey("a"), 2), (DictKey("b"), 1)] and meta == ("a", "b")
    keyed, meta = tu.flatten_one_level_with_keys(ATuple(1, 2))
    assert keyed == [(GetAttrKey("foo"), 1), (GetAttrKey("bar"), 2)] and meta is ATuple
    keyed, meta = tu.flatten_one_level_with_keys(Point(1, 2, 3))
    assert keyed == [(FlattenedIndexKey(0), 1), (FlattenedIndexKey(1), 2), (FlattenedIndexKey(2), 3)]
    with pytest.raises(ValueError, match="can't tree-flatten type"):
        tu.flatten_one_level_with_keys("leaf")


def test_all_leaves_and_is_tree_node():
    assert tu.all_leaves([1, "a", np.zeros(2)])
    assert not tu.all_leaves([1, [2]])
    assert not tu.all_leaves([None])
    assert tu.all_leaves([(1, 2), 3], is_leaf=lambda x: isinstance(x, tuple))
    assert tu.is_tree_node([1])
    assert tu.is_tree_node(None)
    assert tu.is_tree_node(ATuple(1, 2))
    assert tu.is_tree_node(Point(1, 2, 3))
    assert not tu.is_tree_node(1)
    assert not tu.is_tree_node(np.zeros(2))
    assert not tu.is_tree_node([1], is_leaf=lambda x: True)


def test_default_registry():
    leaves, treedef = tu.default_registry.flatten((1, [2]))
    assert leaves == [1, 2] and treedef == tree_structure((0, [0]))
    assert tu.default_registry.flatten_one_level(3) is None
    assert tu.default_registry.flatten_one_level([1, 2])[1] is None


# ---------------------------------------------------------------------------------------------
# Reductions, broadcasting, transpose
# ---------------------------------------------------------------------------------------------
def test_tree_reduce_and_all():
    tree = [1, (2, {"a": 3})]
    assert tu.tree_reduce(operator.add, tree) == 6
    assert tu.tree_reduce(operator.add, tree, 10) == 16
    assert tu.tree_reduce(lambda acc, x: acc + [x], tree, []) == [1, 2, 3]
    assert tu.tree_reduce(operator.add, [(1, 2), (3,)], is_leaf=lambda x: isinstance(x, tuple)) == (1, 2, 3)
    with pytest.raises(TypeError):
        tu.tree_reduce(operator.add, [])
    assert tu.tree_all([True, (True, {"x": 1})])
    assert not tu.tree_all([True, (0,)])
    assert tu.tree_all([])
    assert not tu.tree_all([[], [0]], is_leaf=lambda x: isinstance(x, list) and len(x) <= 1)
    assert tu.tree_all([[1], [0]], is_leaf=lambda x: isinstance(x, list) and len(x) <= 1)


def test_tree_reduce_associative():
    calls = []

    def op(a, b):
        calls.append((a, b))
        return a + b

    assert tu.tree_reduce_associative(op, [1, (2, 3), {"a": 4}]) == 10
    assert calls == [(1, 2), (3, 4), (3, 7)]  # balanced, not left fold
    assert tu.tree_reduce_associative(op, [5]) == 5
    assert tu.tree_reduce_associative(op, [], identity=0) == 0
    with pytest.raises(TypeError, match="Must specify identity"):
        tu.tree_reduce_associative(op, [])


def test_broadcast_prefix_and_tree_broadcast():
    full = {"x": (1, 2), "y": [3, [4, 5]]}
    assert broadcast_prefix({"x": 0, "y": 1}, full) == [0, 0, 1, 1, 1]
    assert broadcast_prefix(7, full) == [7] * 5
    assert broadcast_prefix({"x": 0, "y": [1, 2]}, full) == [0, 0, 1, 2, 2]
    assert tu.tree_broadcast({"x": 0, "y": [1, 2]}, full) == {"x": (0, 0), "y": [1, [2, 2]]}
    assert tu.tree_broadcast(1, {"a": (1, 2)}) == {"a": (1, 1)}
    # vmap-style in_axes: None is a value thanks to is_leaf.
    in_axes = (0, None)
    args = ((1, 2), {"k": 3})
    assert broadcast_prefix(in_axes, args, is_leaf=lambda x: x is None) == [0, 0, None]
    with pytest.raises(ValueError, match=r"at key path \[1\]: Expected None"):
        broadcast_prefix(in_axes, args)
    with pytest.raises(ValueError, match=r"at key path \['y'\]\[1\]: List arity mismatch"):
        broadcast_prefix({"x": 0, "y": [1, [2, 3, 4]]}, full)
    with pytest.raises(ValueError, match=r"prefix"):
        broadcast_prefix((0, 0, 0), (1, 2))


def test_tree_transpose():
    outer = tree_structure([0, 0, 0])
    inner = tree_structure({"a": 0, "b": (0, 0)})
    value = [{"a": i, "b": (10 * i, 100 * i)} for i in range(3)]
    out = tu.tree_transpose(outer, inner, value)
    assert out == {"a": [0, 1, 2], "b": ([0, 10, 20], [0, 100, 200])}
    # inner structure inferred when None
    assert tu.tree_transpose(outer, None, value) == out
    assert tu.tree_transpose(tree_structure((0, 0)), tree_structure([0]), ([1], [2])) == [(1, 2)]
    with pytest.raises(TypeError, match="Mismatch|mismatch"):
        tu.tree_transpose(outer, inner, [{"a": 0, "b": (0, 0)}] * 2)
    with pytest.raises(TypeError, match="mismatch"):
        tu.tree_transpose(tree_structure((0, 0)), tree_structure((0, 0)), ((1, 2), [3, 4]))


# ---------------------------------------------------------------------------------------------
# Partial
# ---------------------------------------------------------------------------------------------
def _add(x, y, scale=1):
    return (x + y) * scale


def test_partial_is_a_pytree():
    p = Partial(_add, 1, scale=3)
    assert p(2) == 9
    leaves, treedef = tree_flatten(p)
    assert leaves == [1, 3]
    assert repr(treedef).startswith("PyTreeDef(CustomNode(Partial[<function _add")
    q = tree_unflatten(treedef, [10, 2])
    assert isinstance(q, Partial) and q(5) == 30
    doubled = tree_map(lambda v: v * 2, p)
    assert doubled.args == (2,) and doubled.keywords == {"scale": 6}
    assert tree_structure(Partial(_add, 1)) == tree_structure(Partial(_add, 5))
    assert tree_structure(Partial(_add, 1)) != tree_structure(Partial(max, 5))
    assert hash(tree_structure(Partial(_add, 1))) == hash(tree_structure(Partial(_add, 2)))
    paths = [keystr(k) for k, _ in tu.tree_leaves_with_path(p)]
    assert paths == ["[<flat index 0>][0]", "[<flat index 1>]['scale']"]


def test_partial_of_partial_keeps_inner_args_static():
    inner = functools.partial(_add, 100)
    p = Partial(inner, 1)
    assert tree_leaves(p) == [1]
    assert p() == 101
    # functools.partial compares by identity, so another wrapper is another structure.
    assert tree_structure(Partial(functools.partial(_add, 100), 2)) != tree_structure(p)
    assert tree_structure(Partial(inner, 2)) == tree_structure(p)
    assert tree_unflatten(tree_structure(p), [2])() == 102


# ---------------------------------------------------------------------------------------------
# Property test: random nested trees round-trip
# ---------------------------------------------------------------------------------------------
_leaf = st.one_of(st.integers(-5, 5), st.text(max_size=3), st.floats(allow_nan=False))


def _extend(children):
    keys = st.text(alphabet="abcdef", min_size=1, max_size=3)
    return st.one_of(
        st.tuples(children, children),
        st.lists(children, max_size=4),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(keys, children, max_size=4),
        st.dictionaries(keys, children, max_size=3).map(lambda d: collections.OrderedDict(d)),
        st.dictionaries(keys, children, max_size=3).map(lambda d: collections.defaultdict(list, d)),
        st.builds(ATuple, children, children),
        st.builds(Point, children, children, children),
        st.builds(Inferred, children, children, st.sampled_from(["p", "q"])),
        st.just(None),
    )


trees = st.recursive(st.one_of(_leaf, st.none()), _extend, max_leaves=20)


def _same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, Point):
        return _same((a.x, a.y, a.z), (b.x, b.y, b.z))
    if isinstance(a, Inferred):
        return a.name == b.name and _same((a.w, a.b), (b.w, b.b))
    if isinstance(a, dict):
        if isinstance(a, collections.defaultdict) and a.default_factory is not b.default_factory:
            return False
        same_keys = list(a) == list(b) if isinstance(a, collections.OrderedDict) else set(a) == set(b)
        return same_keys and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@settings(max_examples=150, deadline=None)
@given(trees)
def test_property_round_trip(tree):
    leaves, treedef = tree_flatten(tree)
    assert treedef.num_leaves == len(leaves)
    rebuilt = tree_unflatten(treedef, leaves)
    assert _same(rebuilt, tree)
    assert tree_structure(rebuilt) == treedef
    assert hash(tree_structure(rebuilt)) == hash(treedef)
    assert tree_leaves(rebuilt) == leaves
    # Paths visit the same leaves in the same order, and agree on the structure.
    path_leaves, path_treedef = tu.tree_flatten_with_path(tree)
    assert path_treedef == treedef
    assert [x for _, x in path_leaves] == leaves
    # tree_map over two copies and flatten_up_to agree with flatten.
    marked = tree_unflatten(treedef, list(range(len(leaves))))
    assert _same(
        tree_map(lambda i, x: (i, x), marked, tree), tree_unflatten(treedef, list(enumerate(leaves)))
    )
    assert treedef.flatten_up_to(tree) == leaves
    assert pickle.loads(pickle.dumps(treedef)) == treedef
    assert repr(pickle.loads(pickle.dumps(treedef))) == repr(treedef)
    # Children recompose to the same structure.
    if treedef.node_data() is not None:
        rebuilt_def = tu.PyTreeDef.make_from_node_data_and_children(
            None, treedef.node_data(), treedef.children()
        )
        assert rebuilt_def == treedef
        assert sum(c.num_nodes for c in treedef.children()) + 1 == treedef.num_nodes
