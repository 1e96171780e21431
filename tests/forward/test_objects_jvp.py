"""Forward mode through objects (``gibbous.rules.forward_objects``): instances of Python classes
made, written and called in the differentiated code, objects passed in with their attributes'
tangents, NamedTuples' fields by name; against central finite differences."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

from gibbous.forward import ForwardModeError, build_frule, jvp

RNG = np.random.default_rng(43)


def central(f: t.Callable[..., t.Any], args: tuple[t.Any, ...], d: tuple[t.Any, ...]) -> t.Any:
    h = 1e-6

    def at(s: float) -> t.Any:
        return f(*(a if v is None else a + s * v for a, v in zip(args, d)))

    return (np.asarray(at(h)) - np.asarray(at(-h))) / (2 * h)


def check(f: t.Callable[..., t.Any], *args: t.Any) -> None:
    d = tuple(
        float(RNG.standard_normal()) if isinstance(a, float)
        else RNG.standard_normal(a.shape) if isinstance(a, np.ndarray) else None
        for a in args
    )  # fmt: skip
    rule = build_frule(f, *args)
    for _ in range(2):
        y, dy = jvp(rule, f, args, d)
        np.testing.assert_allclose(y, f(*args), rtol=1e-13)
        np.testing.assert_allclose(dy, central(f, args, d), rtol=1e-6, atol=1e-8)


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


@pytest.mark.parametrize(
    ("f", "args"),
    [
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
