"""The type lattice: typeof, subtyping, join."""

from __future__ import annotations

import collections
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gibbous.ir import types as T

Point = collections.namedtuple("Point", "x y")


class Base:
    pass


class Derived(Base):
    pass


@pytest.mark.parametrize(
    "value, expected",
    [
        (1.5, T.FLOAT),
        (np.float64(1.5), T.FLOAT),
        (np.float32(1.5), T.Float("float32")),
        (3, T.INT),
        (np.int32(3), T.Int("int32")),
        (True, T.BOOL),
        (np.bool_(True), T.BOOL),
        (1j, T.COMPLEX),
        ("s", T.STR),
        (None, T.NONE),
        (np.zeros((2, 3)), T.Array("float64", 2)),
        (np.zeros(3, dtype=np.int8), T.Array("int8", 1)),
        ((1, 2.0), T.Tuple((T.INT, T.FLOAT))),
        (Point(1.0, 2.0), T.Tuple((T.FLOAT, T.FLOAT), Point)),
        ([1, 2], T.List(T.INT)),
        ([1, 2.0], T.List(T.ANY)),
        ([True, 1], T.List(T.INT)),
        ([], T.List(T.BOTTOM)),
        ({"a": np.ones(2)}, T.Dict(T.STR, T.Array("float64", 1))),
        ({1, 2}, T.Set(T.INT)),
        (Derived(), T.Object(Derived)),
    ],
)
def test_typeof(value: object, expected: T.Type) -> None:
    assert T.typeof(value) == expected


def test_typeof_const() -> None:
    assert T.typeof(3, const=True) == T.Const(3)
    assert T.typeof(np.sin, const=True) == T.Const(np.sin)
    assert T.typeof(None, const=True) == T.NONE
    # Mutable values are never constants: their identity is observable.
    assert T.typeof(np.ones(2), const=True) == T.Array("float64", 1)
    assert T.typeof([1], const=True) == T.List(T.INT)


def test_const_equality_distinguishes_types() -> None:
    assert T.Const(1) != T.Const(1.0)
    assert T.Const(1) != T.Const(True)
    assert T.Const(float("nan")) == T.Const(float("nan"))
    assert T.Const((1, 2)) == T.Const((1, 2))
    assert hash(T.Const((1, 2))) == hash(T.Const((1, 2)))
    assert T.Const(-0.0) != T.Const(0.0)
    assert T.Const(np.float64(1.0)) != T.Const(1.0)
    # A NumPy complex with and without a nan: compared, not broadcast (hypothesis found
    # ``((False, False), 0j)`` against ``((False, False), nanj)`` raising)
    nanj = np.complex128(complex(0.0, float("nan")))
    assert T.Const(((False,), np.complex128(0j))) != T.Const(((False,), nanj))
    assert T.Const(nanj) == T.Const(np.complex128(complex(0.0, float("nan"))))


@pytest.mark.parametrize(
    "a, b",
    [
        (T.BOTTOM, T.INT),
        (T.INT, T.ANY),
        (T.Const(1), T.INT),
        (T.Const(True), T.BOOL),
        (T.BOOL, T.INT),
        (T.Array("float64", 2), T.Array(None, 2)),
        (T.Array("float64", 2), T.Array("float64", None)),
        (T.Tuple((T.BOOL,)), T.Tuple((T.INT,))),
        (T.Tuple((T.FLOAT, T.FLOAT), Point), T.Tuple((T.FLOAT, T.FLOAT))),
        (T.Object(Derived), T.Object(Base)),
        (T.List(T.INT), T.Object(list)),
        (T.Dict(T.STR, T.BOOL), T.Dict(T.STR, T.INT)),
        (T.STR, T.Object(object)),
    ],
)
def test_subtype(a: T.Type, b: T.Type) -> None:
    assert T.is_subtype(a, b)
    assert not T.is_subtype(b, a)


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (T.Const(1), T.Const(2), T.INT),
        (T.Const(1), T.Const(1), T.Const(1)),
        (T.INT, T.FLOAT, T.ANY),
        (T.BOOL, T.INT, T.INT),
        (T.Array("float64", 2), T.Array("float32", 2), T.Array(None, 2)),
        (T.Array("float64", 2), T.Array("float64", 1), T.Array("float64", None)),
        (T.Tuple((T.INT,)), T.Tuple((T.FLOAT,)), T.Tuple((T.ANY,))),
        (T.Tuple((T.INT,)), T.Tuple((T.INT, T.INT)), T.Object(tuple)),
        (T.List(T.INT), T.List(T.BOOL), T.List(T.INT)),
        (T.Object(Derived), T.Object(Base), T.Object(Base)),
        (T.List(T.INT), T.Dict(T.INT, T.INT), T.ANY),
        (T.BOTTOM, T.STR, T.STR),
    ],
)
def test_join(a: T.Type, b: T.Type, expected: T.Type) -> None:
    assert T.join(a, b) == expected
    assert T.join(b, a) == expected


def _leaf_types() -> st.SearchStrategy[T.Type]:
    return st.sampled_from(
        [
            T.ANY,
            T.BOTTOM,
            T.BOOL,
            T.INT,
            T.Int("int32"),
            T.FLOAT,
            T.Float("float32"),
            T.COMPLEX,
            T.STR,
            T.NONE,
            T.Const(1),
            T.Const(2.5),
            T.Const("a"),
            T.Array("float64", 1),
            T.Array("float64", 2),
            T.Array(None, 1),
            T.Array("float32", None),
            T.Object(Base),
            T.Object(Derived),
        ]
    )


lattice_types = st.recursive(
    _leaf_types(),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda xs: T.Tuple(tuple(xs))),
        inner.map(T.List),
        st.tuples(inner, inner).map(lambda kv: T.Dict(*kv)),
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(lattice_types, lattice_types, lattice_types)
def test_join_is_an_upper_bound_and_commutative(a: T.Type, b: T.Type, c: T.Type) -> None:
    j = T.join(a, b)
    assert T.is_subtype(a, j) and T.is_subtype(b, j)
    assert T.join(b, a) == j
    assert T.join(a, a) == a
    # Least: any common upper bound among the three is above the join when it is precise.
    if T.is_subtype(a, c) and T.is_subtype(b, c):
        assert T.is_subtype(j, c)


@settings(max_examples=200, deadline=None)
@given(lattice_types, lattice_types, lattice_types)
def test_subtype_is_transitive(a: T.Type, b: T.Type, c: T.Type) -> None:
    if T.is_subtype(a, b) and T.is_subtype(b, c):
        assert T.is_subtype(a, c)


def test_join_all() -> None:
    assert T.join_all([]) == T.BOTTOM
    assert T.join_all([T.Const(i) for i in range(3)]) == T.INT


def test_widen() -> None:
    assert T.widen(T.Tuple((T.Const(1), T.Const("a")))) == T.Tuple((T.INT, T.STR))


@pytest.mark.parametrize(
    "value, immutable",
    [(1, True), ((1, (2.0, "a")), True), ((1, [2]), False), (np.ones(2), False), (np.sin, True)],
)
def test_is_immutable_value(value: object, immutable: bool) -> None:
    assert T.is_immutable_value(value) is immutable


def test_all_pairs_of_leaves_join_consistently() -> None:
    leaves: list[T.Type] = [T.ANY, T.BOTTOM, T.BOOL, T.INT, T.FLOAT, T.STR, T.Const(1)]
    for a, b in itertools.product(leaves, repeat=2):
        j = T.join(a, b)
        assert T.is_subtype(a, j) and T.is_subtype(b, j), (a, b, j)
