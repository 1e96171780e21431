"""The tangent model (gibbous.tangents.model): every row of the table, aliasing, increment,
and the type-level functions (gibbous.tangents.types)."""

from __future__ import annotations

import copy
import dataclasses
import math
import pickle
import typing as t

import attrs
import numpy as np
import pytest

from gibbous.ir import types as T
from gibbous.tangents.types import NO_TANGENT_TYPE, fdata_type, rdata_type, tangent_type
from gibbous.tangents.model import (
    CoDual,
    MutableTangent,
    NoTangent,
    Tangent,
    TangentMemo,
    fdata_of,
    increment,
    is_differentiable,
    randn_tangent,
    rdata_of,
    tangent_from,
    zero_coduals,
    zero_fdata,
    zero_fdatas,
    zero_rdata,
    zero_tangent,
)
from tests.rules import fd

NT = NoTangent()


class Point(t.NamedTuple):
    x: float
    n: int


@dataclasses.dataclass(frozen=True)
class FrozenDC:
    w: np.ndarray
    b: float
    name: str = "layer"


@attrs.frozen
class FrozenAttrs:
    scale: float
    count: int


@attrs.frozen
class Labels:
    a: int
    b: str


@dataclasses.dataclass
class MutableDC:
    w: np.ndarray
    b: float


@attrs.define
class MutableAttrs:
    scale: float


class Plain:
    def __init__(self, v: float, k: int) -> None:
        self.v = v
        self.k = k


class Slotted:
    __slots__ = ("v", "unset")

    def __init__(self, v: float) -> None:
        self.v = v


class Base:
    def __init__(self) -> None:
        self.mutable = 1.0


@attrs.frozen
class FrozenOnMutableBase(Base):  # its base's attributes stay re-bindable
    c: float = 0.0


def module_level(x: float) -> float:
    return x


# --------------------------------------------------------------------------------------------
# The table, row by row


@pytest.mark.parametrize(
    "x, zero",
    [
        (1.5, 0.0),
        (np.float64(1.5), np.float64(0.0)),
        (np.float32(1.5), np.float32(0.0)),
        (np.float16(1.5), np.float16(0.0)),
        (1 + 2j, 0j),
        (np.complex64(1 + 2j), np.complex64(0)),
    ],
)
def test_scalars_have_rdata_of_their_own_type(x: object, zero: object) -> None:
    for tangent in (zero_tangent(x), zero_rdata(x)):
        assert type(tangent) is type(zero) and tangent == zero
    assert zero_fdata(x) is NT
    assert fdata_of(zero_tangent(x)) is NT and type(rdata_of(zero_tangent(x))) is type(zero)
    assert is_differentiable(x)
    r = randn_tangent(x, np.random.default_rng(0))
    assert type(r) is type(zero) and r != 0


def test_complex_random_tangents_have_both_parts() -> None:
    r = randn_tangent(1j, np.random.default_rng(1))
    assert r.real != 0 and r.imag != 0
    a = randn_tangent(np.zeros(4, complex), np.random.default_rng(1))
    assert np.all(a.real != 0) and np.all(a.imag != 0)


@pytest.mark.parametrize(
    "x",
    [
        3,
        True,
        np.int32(3),
        np.bool_(True),
        "s",
        b"b",
        None,
        np.arange(3),
        np.array([True, False]),
        np.array([1, "a"], dtype=object),
        np,
        module_level,
        len,
        np.sin,
        np.sum,
        float,
        Point,
        {1.0, 2.0},
        frozenset({1.0}),
        range(3),
        slice(1, 2),
        np.dtype("float64"),
        np.random.default_rng(0),
        (1, "a", None),
    ],
)
def test_values_without_a_tangent(x: object) -> None:
    assert zero_tangent(x) is NT
    assert zero_fdata(x) is NT and zero_rdata(x) is NT
    assert randn_tangent(x, np.random.default_rng(0)) is NT
    assert tangent_from(x, NT, NT) is NT
    assert not is_differentiable(x)


def test_an_object_array_holding_a_float_is_refused_not_given_no_tangent() -> None:
    """It would lose the float's derivative silently (tests/ad/test_misuse.py)."""
    with pytest.raises(TypeError, match="array of dtype object would hold 1.0"):
        zero_fdata(np.array([1.0, "a"], dtype=object))


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
@pytest.mark.parametrize(
    "make",
    [
        lambda dt: np.ones((3, 4), dt),
        lambda dt: np.ones((3, 4), dt, order="F"),
        lambda dt: np.ones((5, 6), dt)[1:4, ::2],
        lambda dt: np.ones((4, 5), dt)[::-1, ::-2],
        lambda dt: np.ones((), dt),
        lambda dt: np.ones((0, 3), dt),
    ],
)
def test_float_arrays_have_fdata_like_themselves(make: t.Any, dtype: str) -> None:
    x = make(dtype)
    d = zero_tangent(x)
    assert type(d) is np.ndarray and d.shape == x.shape and d.dtype == x.dtype
    assert d.size == 0 or d.strides == x.strides
    assert d.flags.writeable and d.flags.aligned and not np.any(d)
    assert fdata_of(d) is d and rdata_of(d) is NT and zero_rdata(x) is NT
    assert tangent_from(x, d, NT) is d
    assert not np.shares_memory(d, x)
    assert is_differentiable(x)


def test_read_only_arrays_get_writable_fdata() -> None:
    x = np.broadcast_to(np.arange(3.0), (2, 3))
    d = zero_fdata(x)
    assert d.strides == x.strides and d.flags.writeable


def test_array_subclasses_get_plain_array_fdata() -> None:
    x = np.ma.masked_array(np.ones(3))
    d = zero_fdata(x)
    assert type(d) is np.ndarray and d.shape == (3,)


def test_tuples_split_item_by_item() -> None:
    a = np.ones(2)
    x = (1.5, a, 3, "s")
    tangent = zero_tangent(x)
    assert isinstance(tangent, tuple) and tangent[0] == 0.0 and tangent[2:] == (NT, NT)
    assert tangent[1].shape == (2,)
    f, r = fdata_of(tangent), rdata_of(tangent)
    assert f[0] is NT and f[1] is tangent[1] and r == (0.0, NT, NT, NT)
    assert zero_rdata(x) == (0.0, NT, NT, NT)
    assert tangent_from(x, f, r)[1] is tangent[1]
    assert fdata_of((1.0, NT)) is NT  # all NoTangent collapses
    assert rdata_of((np.ones(1), NT)) is NT
    assert zero_tangent(()) is NT


def test_named_tuples_have_plain_tuple_tangents() -> None:
    tangent = zero_tangent(Point(1.0, 2))
    assert type(tangent) is tuple and tangent == (0.0, NT)
    assert zero_fdata(Point(1.0, 2)) is NT and zero_rdata(Point(1.0, 2)) == (0.0, NT)


def test_frozen_dataclasses_and_attrs_have_tangents_of_their_fields() -> None:
    x = FrozenDC(np.ones(3), 2.0)
    tangent = zero_tangent(x)
    assert isinstance(tangent, Tangent) and set(tangent.fields) == {"w", "b", "name"}
    assert tangent.fields["b"] == 0.0 and tangent.fields["name"] is NT
    f, r = fdata_of(tangent), rdata_of(tangent)
    assert f == Tangent({"w": tangent.fields["w"], "b": NT, "name": NT})
    assert r == Tangent({"w": NT, "b": 0.0, "name": NT}) == zero_rdata(x)
    back = tangent_from(x, f, r)
    assert back.fields["w"] is tangent.fields["w"] and back.fields["b"] == 0.0

    assert zero_tangent(FrozenAttrs(1.0, 2)) == Tangent({"scale": 0.0, "count": NT})
    assert zero_fdata(FrozenAttrs(1.0, 2)) is NT
    assert zero_tangent(Labels(1, "a")) is NT and not is_differentiable(Labels(1, "a"))
    with pytest.raises(TypeError):
        hash(Tangent({"a": 1.0}))


def test_bound_methods_carry_their_receivers_tangent() -> None:
    xs = [1.0]
    tangent = zero_tangent(xs.append)
    assert isinstance(tangent, Tangent) and tangent.fields["__self__"] == [0.0]
    assert fdata_of(tangent).fields["__self__"] == [0.0]
    assert rdata_of(tangent) is NT
    a = np.ones(2)
    memo = TangentMemo()
    da, dsum = zero_tangent(a, memo=memo), zero_tangent(a.sum, memo=memo)
    assert dsum.fields["__self__"] is da
    bound = getattr(Plain(1.0, 2), "__init__")
    assert zero_tangent(bound).fields["__self__"].fields["v"] == 0.0


@pytest.mark.parametrize(
    "x, fields",
    [
        (MutableDC(np.ones(2), 1.0), {"w", "b"}),
        (MutableAttrs(1.0), {"scale"}),
        (Plain(1.0, 2), {"v", "k"}),
        (Slotted(1.0), {"v"}),
        (FrozenOnMutableBase(), {"c"}),
    ],
)
def test_mutable_objects_have_a_mutable_tangent(x: object, fields: set[str]) -> None:
    tangent = zero_tangent(x)
    assert isinstance(tangent, MutableTangent) and set(tangent.fields) == fields
    assert fdata_of(tangent) is tangent and rdata_of(tangent) is NT
    assert zero_rdata(x) is NT and tangent_from(x, tangent, NT) is tangent
    assert is_differentiable(x)


def test_lists_and_dicts_have_container_tangents() -> None:
    a = np.ones(2)
    xs = [1.0, 2, a]
    tangent = zero_tangent(xs)
    assert type(tangent) is list and tangent[:2] == [0.0, NT] and tangent[2].shape == (2,)
    assert fdata_of(tangent) is tangent and rdata_of(tangent) is NT and zero_rdata(xs) is NT
    d = {"a": 1.0, "n": 3}
    assert zero_tangent(d) == {"a": 0.0, "n": NT}
    # Even with nothing differentiable in them yet: a float may be stored later.
    assert zero_tangent([1, 2]) == [NT, NT] and is_differentiable([1, 2])
    assert zero_tangent({}) == {} and is_differentiable([])


def test_closures_carry_their_cells() -> None:
    w = np.ones(3)
    scale = 2.0

    def f(x: float) -> t.Any:
        return w * x * scale

    tangent = zero_tangent(f)
    assert isinstance(tangent, MutableTangent)
    assert set(tangent.fields) == {"w", "scale"} and tangent.fields["scale"] == 0.0
    assert fdata_of(tangent) is tangent and is_differentiable(f)
    assert not is_differentiable(module_level)


def test_no_tangent_is_one_object() -> None:
    assert NoTangent() is NoTangent() and NoTangent() == NoTangent()
    assert copy.deepcopy(NT) is NT and pickle.loads(pickle.dumps(NT)) is NT
    assert repr(NT) == "NoTangent()"
    assert len({NoTangent(), NoTangent()}) == 1


def test_codual_holds_primal_and_fdata() -> None:
    x = np.ones(2)
    (c,) = zero_coduals(x)
    assert isinstance(c, CoDual) and c.primal is x and c.fdata.shape == (2,)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        c.primal = x  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# Aliasing


def test_a_views_fdata_is_the_same_view_of_its_bases_fdata() -> None:
    base = np.zeros((4, 6))
    view = base[1:, ::2]
    transposed = base.T
    d_base, d_view, d_t = zero_fdatas(base, view, transposed)
    assert d_view.strides == view.strides and d_t.strides == transposed.strides
    offset = view.ctypes.data - base.ctypes.data
    assert d_view.ctypes.data - d_base.ctypes.data == offset
    d_view[...] = 1.0
    np.testing.assert_array_equal(d_base[1:, ::2], 1.0)
    assert d_base.sum() == d_view.size and d_t.sum() == d_view.size


def test_two_views_of_one_base_share_without_the_base() -> None:
    base = np.zeros(10)
    left, right = base[:6], base[4:]
    d_left, d_right = zero_fdatas(left, right)
    d_left[...] = 1.0
    np.testing.assert_array_equal(d_right[:2], 1.0)
    np.testing.assert_array_equal(d_right[2:], 0.0)


def test_views_of_a_reshaped_and_reinterpreted_array_share() -> None:
    base = np.zeros(12)
    square = base.reshape(3, 4)
    real = np.zeros(3, complex).real
    d_base, d_square = zero_fdatas(base, square)
    d_square[1, 1] = 1.0
    assert d_base[5] == 1.0
    z = np.zeros(3, complex)
    d_z, d_real = zero_fdatas(z, z.real)
    d_real[...] = 2.0
    np.testing.assert_array_equal(d_z, 2.0 + 0j)
    assert zero_fdata(real).dtype == np.float64


def test_the_same_array_twice_gets_the_same_fdata() -> None:
    a = np.ones(3)
    da, db = zero_fdatas(a, a)
    assert da is db
    c1, c2 = zero_coduals(a, a)
    assert c1.fdata is c2.fdata


def test_a_list_containing_an_argument_shares_its_fdata() -> None:
    a = np.ones(3)
    xs = [a, 2.0]
    da, dxs = zero_fdatas(a, xs)
    assert dxs[0] is da
    obj = Plain(1.0, 2)
    obj.v = a  # type: ignore[assignment]
    da2, dobj = zero_fdatas(a, obj)
    assert dobj.fields["v"] is da2
    frozen = FrozenDC(a, 1.0)
    da3, dfrozen = zero_fdatas(a, frozen)
    assert dfrozen.fields["w"] is da3


def test_memo_shares_across_calls() -> None:
    a = np.ones(3)
    memo = TangentMemo()
    assert zero_tangent(a, memo=memo) is zero_tangent([a], memo=memo)[0]
    assert zero_tangent(a) is not zero_tangent(a)


def test_cycles_end() -> None:
    xs: list[t.Any] = [1.0]
    xs.append(xs)
    tangent = zero_tangent(xs)
    assert tangent[0] == 0.0 and tangent[1] is tangent
    d: dict[str, t.Any] = {"x": 1.0}
    d["self"] = d
    dt = zero_tangent(d)
    assert dt["self"] is dt
    obj = Plain(1.0, 2)
    obj.me = obj  # type: ignore[attr-defined]
    ot = zero_tangent(obj)
    assert ot.fields["me"] is ot
    r = randn_tangent(xs, np.random.default_rng(0))
    assert r[1] is r and r[0] != 0
    assert is_differentiable(xs)
    assert increment(tangent, tangent) is tangent and tangent[0] == 0.0


def test_random_tangents_keep_aliasing() -> None:
    base = np.zeros(6)
    rng = np.random.default_rng(0)
    memo = TangentMemo()
    d_base = randn_tangent(base, rng, memo=memo)
    d_view = randn_tangent(base[::2], rng, memo=memo)
    assert np.shares_memory(d_base, d_view)
    np.testing.assert_array_equal(d_base[::2], d_view)
    assert np.all(d_base != 0)
    pair = randn_tangent((base, base), rng)
    assert pair[0] is pair[1]


# --------------------------------------------------------------------------------------------
# increment


def test_increment_returns_new_rdata_and_updates_fdata_in_place() -> None:
    assert increment(1.0, 2.0) == 3.0
    s = increment(np.float32(1.0), 2.0)
    assert type(s) is np.float32 and s == 3.0
    a = np.ones(3)
    assert increment(a, np.full(3, 2.0)) is a
    np.testing.assert_array_equal(a, 3.0)
    assert increment(a, NT) is a
    mixed = (1.0, a, NT)
    out = increment(mixed, (0.5, np.ones(3), NT))
    assert out[0] == 1.5 and out[1] is a and mixed[0] == 1.0
    np.testing.assert_array_equal(a, 4.0)
    assert increment(NT, NT) is NT and increment(NT, (NT, NT)) is NT
    assert increment(2.0, NT) == 2.0


def test_increment_of_containers_is_in_place() -> None:
    xs = [1.0, np.ones(2), NT]
    assert increment(xs, [1.0, np.ones(2), NT]) is xs
    assert xs[0] == 2.0
    np.testing.assert_array_equal(xs[1], 2.0)
    d = {"a": 1.0}
    assert increment(d, {"a": 2.0}) is d and d == {"a": 3.0}
    m = MutableTangent({"v": 1.0, "k": NT})
    assert increment(m, MutableTangent({"v": 1.0, "k": NT})) is m and m.fields["v"] == 2.0
    tan = Tangent({"a": 1.0, "w": np.ones(1)})
    new = increment(tan, Tangent({"a": 1.0, "w": np.ones(1)}))
    assert new == Tangent({"a": 2.0, "w": tan.fields["w"]}) and tan.fields["a"] == 1.0
    assert new.fields["w"] is tan.fields["w"]


def test_increment_by_itself_doubles() -> None:
    a = np.ones(2)
    assert increment(a, a) is a
    np.testing.assert_array_equal(a, 2.0)
    xs = [1.0, a]
    increment(xs, xs)
    assert xs[0] == 2.0
    np.testing.assert_array_equal(a, 4.0)


def test_increment_adds_once_into_aliased_fdata() -> None:
    a = np.zeros(2)
    g = np.ones(2)
    increment([a, a], [g, g])  # one memory, one cotangent
    np.testing.assert_array_equal(a, 1.0)
    with pytest.raises(ValueError, match="inconsistent aliasing"):
        increment([a, a], [g, np.ones(2)])


def test_increment_refuses_a_derivative_for_what_has_none() -> None:
    with pytest.raises(TypeError, match="no derivative"):
        increment(NT, 1.0)
    with pytest.raises(TypeError):
        increment(1.0, 1j)  # a real tangent cannot hold an imaginary part
    with pytest.raises(TypeError, match="not a tangent"):
        increment(3, 1)
    with pytest.raises(TypeError, match="not a tangent"):
        fdata_of("s")


def test_complex_convention() -> None:
    # L(z) = Re(conj(c) z) = c.re x + c.im y has gradient dL/dx + i dL/dy = c.
    c, z = 0.3 - 1.7j, 1.1 + 0.4j
    rng = np.random.default_rng(0)

    def loss(z: complex) -> float:
        return (c.conjugate() * z).real

    fd.check_gradient(loss, [z], [c], rng)
    with pytest.raises(AssertionError):
        fd.check_gradient(loss, [z], [c.conjugate()], rng)
    # |z|^2 has gradient 2z; increments add the parts componentwise.
    fd.check_gradient(lambda z: abs(z) ** 2, [z], [2 * z], rng)
    assert increment(1 + 2j, 3 - 1j) == 4 + 1j
    za = np.array([z, 2 * z])
    fd.check_gradient(lambda a: float(np.sum(np.abs(a) ** 2)), [za], [2 * za], rng)


# --------------------------------------------------------------------------------------------
# Type-level functions

F64, F32, C128 = T.FLOAT, T.Float("float32"), T.COMPLEX
A2 = T.Array("float64", 2)
NO = NO_TANGENT_TYPE


@pytest.mark.parametrize(
    "ty, tangent, fdata, rdata",
    [
        (F64, F64, NO, F64),
        (F32, F32, NO, F32),
        (C128, C128, NO, C128),
        (T.INT, NO, NO, NO),
        (T.BOOL, NO, NO, NO),
        (T.STR, NO, NO, NO),
        (T.NONE, NO, NO, NO),
        (T.Array("int64", 1), NO, NO, NO),
        (A2, A2, A2, NO),
        (T.Array("complex64", None), T.Array("complex64", None), T.Array("complex64", None), NO),
        (T.Array(None, 1), T.ANY, T.ANY, NO),
        (T.Tuple((F64, A2, T.INT)), T.Tuple((F64, A2, NO)), T.Tuple((NO, A2, NO)),
         T.Tuple((F64, NO, NO))),
        (T.Tuple((F64, T.INT), Point), T.Tuple((F64, NO)), NO, T.Tuple((F64, NO))),
        (T.Tuple((T.INT, T.STR)), NO, NO, NO),
        (T.Tuple((T.ANY, T.INT)), T.ANY, T.ANY, T.ANY),
        (T.Tuple((T.ANY, F64)), T.Tuple((T.ANY, F64)), T.ANY, T.Tuple((T.ANY, F64))),
        (T.Tuple(()), NO, NO, NO),
        (T.List(F64), T.List(F64), T.List(F64), NO),
        (T.List(T.INT), T.List(NO), T.List(NO), NO),
        (T.Dict(T.STR, A2), T.Dict(T.STR, A2), T.Dict(T.STR, A2), NO),
        (T.Set(F64), NO, NO, NO),
        (T.Const(2.0), F64, NO, F64),
        (T.Const(3), NO, NO, NO),
        (T.Const(np.sin), NO, NO, NO),
        (T.Const((1.0, "a")), T.Tuple((F64, NO)), NO, T.Tuple((F64, NO))),
        (T.Object(type), NO, NO, NO),
        (T.Object(Plain), T.ANY, T.ANY, T.ANY),
        (T.ANY, T.ANY, T.ANY, T.ANY),
        (T.BOTTOM, T.BOTTOM, T.BOTTOM, T.BOTTOM),
    ],
)
def test_type_level(ty: T.Type, tangent: T.Type, fdata: T.Type, rdata: T.Type) -> None:
    assert (tangent_type(ty), fdata_type(ty), rdata_type(ty)) == (tangent, fdata, rdata)


SAMPLES: list[object] = [
    1.5,
    np.float32(2),
    1j,
    3,
    True,
    "s",
    None,
    np.ones((2, 3)),
    np.ones(3, np.float32)[::2],
    np.arange(3),
    (1.0, np.ones(2), 3),
    (1, 2),
    Point(1.0, 2),
    [1.0, 2.0],
    [1, 2],
    [],
    {"a": np.ones(2)},
    {1.0, 2.0},
    np,
    len,
    np.sin,
    FrozenDC(np.ones(1), 1.0),
    Labels(1, "a"),
    Plain(1.0, 2),
    MutableDC(np.ones(1), 1.0),
    module_level,
    [1.0].append,
]


@pytest.mark.parametrize("x", SAMPLES, ids=lambda x: type(x).__name__)
def test_type_level_functions_agree_with_values(x: object) -> None:
    tangent = zero_tangent(x)
    for ty in (T.typeof(x), T.typeof(x, const=True)):
        assert T.is_subtype(T.typeof(tangent), tangent_type(ty)), ty
        assert T.is_subtype(T.typeof(fdata_of(tangent)), fdata_type(ty)), ty
        assert T.is_subtype(T.typeof(rdata_of(tangent)), rdata_type(ty)), ty


@pytest.mark.parametrize("x", SAMPLES, ids=lambda x: type(x).__name__)
def test_split_and_recombine_round_trip(x: object) -> None:
    tangent = zero_tangent(x)
    back = tangent_from(x, fdata_of(tangent), rdata_of(tangent))
    assert type(back) is type(tangent)
    if isinstance(tangent, (np.ndarray, list, dict, MutableTangent)):
        assert back is tangent
    assert is_differentiable(x) == (tangent is not NT)
    assert type(zero_rdata(x)) is type(rdata_of(tangent))


def test_fd_helper_catches_a_wrong_gradient() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(4)
    fd.check_gradient(lambda v: float(np.sum(np.sin(v))), [x], [np.cos(x)], rng)
    with pytest.raises(AssertionError):
        fd.check_gradient(lambda v: float(np.sum(np.sin(v))), [x], [np.sin(x)], rng)
    assert math.isclose(fd.inner((1.0, np.ones(2)), (2.0, np.ones(2))), 4.0)
