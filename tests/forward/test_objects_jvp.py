"""Forward mode through objects (``gibbous.library.python.objects``): instances of Python classes
made, written and called in the differentiated code, objects passed in with their attributes'
tangents, NamedTuples' fields by name; against central finite differences."""

from __future__ import annotations

import contextlib
import typing as t

import numpy as np
import pytest

from gibbous.forward import ForwardModeError, build_frule, jvp

from tests.forward.test_closures_jvp import check

RNG = np.random.default_rng(43)

class Point:
    def __init__(self, a: float, b: float) -> None:
        self.a = a
        self.b = b

    def total(self, k: float) -> float:
        return self.a * k + self.b


def attributes(x: float) -> float:
    p = Point(x, 2.0)
    p.b = p.b * x  # written through the object
    return p.total(3.0) + p.a


class Model:
    def __init__(self, w: np.ndarray, scale: float = 2.0) -> None:
        self.w = w
        self.scale = scale
        self.calls = 0

    def __call__(self, x: np.ndarray) -> np.ndarray:
        self.calls += 1  # an int attribute: no tangent
        return np.tanh(self.w @ x) * self.scale

    def loss(self, x: np.ndarray) -> float:
        return float(np.sum(self(x) ** 2))


def model(w: np.ndarray, x: np.ndarray) -> float:
    m = Model(w)  # a default in __init__
    m.scale = m.scale * float(np.sum(x))
    return m.loss(x) + m.loss(2 * x)


class Buffer:
    def __init__(self, n: int) -> None:
        self.data = np.zeros(n)

    def put(self, i: int, v: float) -> None:
        self.data[i] = v  # into an array attribute made from a constant


def buffered(x: np.ndarray) -> float:
    buf = Buffer(3)
    for i in range(3):
        buf.put(i, float(x[i] ** 2))
    return float(np.sum(buf.data * x))


class Pair(t.NamedTuple):
    a: float
    b: np.ndarray


def named_fields(x: float, v: np.ndarray) -> float:
    p = Pair(x * 2.0, v)
    return p.a * float(np.sum(p.b)) + p[0]


def deleted_attribute(x: float) -> float:
    p = Point(x, x * x)
    total = p.total(2.0)
    del p.b  # its tangent goes with it: a new one starts at the new value
    p.b = 3.0
    return total + p.total(x)


@contextlib.contextmanager
def _shifted(v: np.ndarray, by: float) -> t.Iterator[np.ndarray]:
    moved = v + by
    try:
        yield moved * moved
    finally:
        del moved  # (runs at the end of the block)


def through_a_contextmanager(v: np.ndarray, by: float) -> float:
    """``@contextmanager``: its object (the standard library's) followed like the user's."""
    with _shifted(v, by) as w:
        s = float(np.sum(w * v))
    with _shifted(w, 1.0) as u:
        s += float(np.sum(u))
    return s


class Body:
    def __init__(self, pos: np.ndarray, vel: np.ndarray) -> None:
        self.pos = pos
        self.vel = vel


def augmented_attributes(x: np.ndarray, dt: float) -> float:
    """``b.vel += ...``: an attribute's type is unknown when the rule is built; the write is
    into the array, which another name (``alias``) sees, with its tangent."""
    b = Body(x.copy(), x * 0.5)
    alias = b.vel
    for _ in range(3):
        b.vel += np.sin(b.pos) * dt
        b.pos = b.pos + b.vel * dt
        b.vel *= 0.9
    return float(np.sum(alias * b.pos))


@pytest.mark.parametrize(
    ("f", "args"),
    [
        (augmented_attributes, (RNG.standard_normal(3), 0.3)),
        (deleted_attribute, (0.8,)),
        (through_a_contextmanager, (RNG.standard_normal(3), 0.4)),
        (attributes, (1.3,)),
        (model, (RNG.standard_normal((2, 3)) / 2, RNG.standard_normal(3))),
        (buffered, (RNG.standard_normal(3),)),
        (named_fields, (0.7, RNG.standard_normal(4))),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_objects(f: t.Callable[..., t.Any], args: tuple[t.Any, ...]) -> None:
    check(f, *args)


def scaled_sum(p: Point, x: float) -> float:
    return p.a * x + p.b


def test_an_object_argument_takes_its_attributes_tangents() -> None:
    p = Point(1.5, 2.0)
    rule = build_frule(scaled_sum, p, 3.0)
    assert jvp(rule, scaled_sum, (p, 3.0), ({"a": 1.0}, 0.0))[1] == pytest.approx(3.0)
    assert jvp(rule, scaled_sum, (p, 3.0), (None, 1.0))[1] == pytest.approx(1.5)
    with pytest.raises(TypeError, match="dict of its attributes' tangents"):
        jvp(rule, scaled_sum, (p, 3.0), (1.0, 1.0))


def test_a_namedtuple_argument() -> None:
    def f(p: Pair) -> float:
        return p.a * float(np.sum(p.b))

    p = Pair(1.5, np.arange(3.0))
    rule = build_frule(f, p)
    _, dy = jvp(rule, f, (p,), (Pair(1.0, np.ones(3)),))
    assert dy == pytest.approx(3.0 + 1.5 * 3)


class Made:
    def __new__(cls, x: float) -> Made:
        return super().__new__(cls)

    def __init__(self, x: float) -> None:
        self.x = x


def custom_new(x: float) -> float:
    return Made(x).x * 2.0


def test_a_class_with_a_new_of_its_own_is_refused() -> None:
    with pytest.raises(ForwardModeError, match="__new__ of its own"):
        build_frule(custom_new, 1.0)


class Square:
    scale = 3.0  # a class attribute: a constant

    def __init__(self, a: float) -> None:
        self.a = a

    @property
    def squared(self) -> float:  # computed from another attribute
        return self.a**2

    @squared.setter
    def squared(self, v: float) -> None:
        self.a = v**0.5


def reads_a_class_constant(x: float) -> float:
    return Square(x).a * Square.scale + Square(x).scale * x


def reads_a_property(x: float) -> float:
    return Square(x).squared


def sets_a_property(x: float) -> float:
    s = Square(1.0)
    s.squared = x
    return s.a


class Lazy:
    def __init__(self, a: float) -> None:
        self.a = a

    def __getattr__(self, name: str) -> float:
        return self.a * 2.0


def reads_getattr(x: float) -> float:
    return Lazy(x).doubled


def test_a_class_constant_has_no_tangent() -> None:
    check(reads_a_class_constant, 1.7)


@pytest.mark.parametrize("f", [reads_a_property, sets_a_property, reads_getattr])
def test_attributes_code_computes_are_refused(f: t.Callable[[float], float]) -> None:
    """A property's or __getattr__'s value comes from other attributes: a tangent read from
    the object's own would be zero, silently wrong.  Refused by name."""
    rule = build_frule(f, 2.0)
    with pytest.raises(ForwardModeError, match="Square.squared|Lazy.doubled"):
        jvp(rule, f, (2.0,), (1.0,))


class Holder:
    def __init__(self, data: np.ndarray) -> None:
        self.data = data


def scales_in_place(h: Holder, x: float) -> float:
    h.data[:] = h.data * x  # writes into the argument's array
    return float(np.sum(h.data))


def test_an_object_argument_written_keeps_the_callers_tangent() -> None:
    data = np.array([1.0, 2.0, 3.0])
    rule = build_frule(scales_in_place, Holder(data.copy()), 2.0)
    tangent = {"data": np.array([1.0, 0.0, -1.0])}
    h = Holder(data.copy())
    _, dy = jvp(rule, scales_in_place, (h, 2.0), (tangent, 0.5))
    np.testing.assert_array_equal(h.data, data * 2.0)  # the primal's write, as asked
    np.testing.assert_array_equal(tangent["data"], [1.0, 0.0, -1.0])  # the caller's, unchanged
    step = 1e-6

    def at(s: float) -> float:
        return scales_in_place(Holder(data + s * np.array([1.0, 0.0, -1.0])), 2.0 + s * 0.5)

    assert dy == pytest.approx((at(step) - at(-step)) / (2 * step), rel=1e-7)


_FIXED = Body(np.zeros(2), np.ones(2))


def into_a_fixed_object(x: np.ndarray) -> float:
    b = _FIXED  # (a global: its arrays have no tangent of their own)
    b.vel += x
    return float(np.sum(b.vel))


def test_a_write_into_an_array_without_a_tangent_is_refused() -> None:
    x = RNG.standard_normal(2)
    before = _FIXED.vel.copy()
    with pytest.raises(ForwardModeError, match="a write into an array the function reads"):
        rule = build_frule(into_a_fixed_object, x)
        jvp(rule, into_a_fixed_object, (x,), (np.ones(2),))
    assert np.array_equal(_FIXED.vel, before)  # (refused before the write)
