"""Calling user classes inside differentiated code: plain classes, dataclasses, attrs classes,
NamedTuples, frozen classes, and the library functions that copy them (``dataclasses.replace``,
``attrs.evolve``, ``NamedTuple._replace``).  Every gradient is checked by ``test_rule``
against finite differences."""

from __future__ import annotations

import dataclasses
import typing as t

import attrs
import numpy as np
import pytest

import gibbous
from gibbous.reverse.construction import constructible
from gibbous.testing import test_rule


class Plain:
    def __init__(self, x: float, scale: float = 2.0) -> None:
        self.x = x * scale
        self.history: list[float] = [x]


@dataclasses.dataclass
class Particle:
    pos: np.ndarray
    mass: float

    def energy(self) -> float:
        return 0.5 * self.mass * float(np.sum(self.pos * self.pos))


@attrs.define
class Spring:
    k: float
    rest: float = 1.0


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a: float, b: float) -> None:
        self.a, self.b = a, b


class Pair(t.NamedTuple):
    a: float
    b: float


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: np.ndarray
    s: float
    label: str = "f"


@attrs.frozen
class FrozenAttrs:
    a: float
    b: float = 3.0


@dataclasses.dataclass(frozen=True)
class Derived:
    x: float
    twice: float = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "twice", 2 * self.x)


class Shifted:
    """A class with a ``__new__`` of its own, written in Python."""

    value: float

    def __new__(cls, x: float, by: float) -> Shifted:
        obj = object.__new__(cls)
        obj.value = x + by
        return obj


def plain(x: float) -> float:
    p = Plain(x)
    q = Plain(x, scale=x)
    return p.x * q.x + p.history[0]


def particle(pos: np.ndarray, m: float) -> float:
    p = Particle(pos * 2.0, m)
    p.mass = p.mass * m
    return p.energy()


def spring(k: float, x: float) -> float:
    s = Spring(k)
    t2 = Spring(rest=x, k=2.0)
    return s.k * (x - s.rest) ** 2 + t2.rest


def slotted(a: float, b: float) -> float:
    s = Slotted(a, b)
    s.a = s.a * s.b
    return s.a + s.b


def named(a: float, b: float) -> float:
    p = Pair(a, b)
    q = Pair(b=a * b, a=1.0)
    r = p._replace(b=3.0 * b)
    return p.a * q.b + r.b + r[0]


def frozen(w: np.ndarray, s: float) -> float:
    f = Frozen(w, s)
    g = FrozenAttrs(s)
    h = FrozenAttrs(b=s, a=2.0)
    return f.s * float(np.sum(f.w)) + g.a * g.b + h.b


def copies(m: float, k: float) -> float:
    p = Particle(np.array([1.0, 2.0]), m)
    q = dataclasses.replace(p, mass=k)
    s = attrs.evolve(Spring(k), rest=m)
    return q.energy() + p.mass * s.rest * s.k


@pytest.mark.parametrize(
    "f, args",
    [
        (plain, (1.5,)),
        (particle, (np.array([0.5, -1.0, 2.0]), 1.5)),
        (spring, (2.0, 0.3)),
        (slotted, (1.5, -0.5)),
        (named, (1.5, 2.0)),
        (frozen, (np.array([1.0, 2.0]), 0.7)),
        (copies, (1.5, 0.5)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_gradients_through_user_classes(f: t.Callable[..., float], args: tuple[t.Any, ...]) -> None:
    test_rule(f, *args, is_primitive=False)


def test_a_frozen_field_computed_in_init_is_a_clear_error() -> None:
    def uses(x: float) -> float:
        return Derived(x).twice

    rule = gibbous.build_rrule(uses, 1.0)
    with pytest.raises(NotImplementedError, match="field 'twice' of Derived is computed"):
        gibbous.value_and_gradient(rule, uses, 1.0)


def test_a_python_new_is_derived() -> None:
    def shifted(x: float, by: float) -> float:
        return Shifted(x, by).value * x

    _, (_, dx, dby) = gibbous.value_and_gradient(gibbous.build_rrule(shifted, 2.0, 0.5), shifted, 2.0, 0.5)
    assert np.isclose(dx, 2 * 2.0 + 0.5) and np.isclose(dby, 2.0)


def test_which_classes_are_constructed_through_their_methods() -> None:
    import enum

    class Color(enum.Enum):
        RED = 1

    assert constructible(Plain) and constructible(Particle) and constructible(Pair)
    assert not constructible(Color)  # its metaclass decides what a call does
    assert not constructible(float) and not constructible(np.ndarray) and not constructible(len)


def defaults(x: float, y: float) -> float:
    def g(a: float, b: float = x, *, c: float = x * y) -> float:
        return a * b + c

    return g(1.0) + g(2.0, b=y) + g(y) + (lambda v, w=y * y: v * w)(x)


def test_gradients_flow_through_default_values() -> None:
    test_rule(defaults, 1.5, -0.5, is_primitive=False)


def test_defaults_are_read_when_called() -> None:
    rule = gibbous.build_rrule(defaults, 1.0, 2.0)
    for x, y in [(1.0, 2.0), (3.0, 0.5), (-2.0, 1.5)]:
        value, (_, dx, dy) = gibbous.value_and_gradient(rule, defaults, x, y)
        # g(1) = x + xy, g(2, b=y) = 2y + xy, g(y) = yx + xy, the lambda: x y^2
        assert np.isclose(value, x + x * y + 2 * y + x * y + 2 * x * y + x * y * y)
        assert np.isclose(dx, 1 + y + y + 2 * y + y * y)
        assert np.isclose(dy, x + 2 + x + 2 * x + 2 * x * y)


class Model:
    def __init__(self, W: np.ndarray, scale: float) -> None:
        self.W, self.scale = W, scale

    def loss(self, x: np.ndarray) -> float:
        return self.scale * float(np.sum(np.tanh(self.W @ x) ** 2))


def test_rules_of_bound_methods() -> None:
    from gibbous.tangents.model import MutableTangent, Tangent

    rng = np.random.default_rng(0)
    m, x = Model(rng.standard_normal((3, 2)), 1.5), rng.standard_normal(2)
    rule = gibbous.build_rrule(m.loss, x)
    value, (dmethod, dx) = gibbous.value_and_gradient(rule, m.loss, x)
    assert np.isclose(value, m.loss(x))
    h = np.tanh(m.W @ x)
    g = m.scale * 2 * h * (1 - h * h)
    assert np.allclose(dx, m.W.T @ g)
    assert isinstance(dmethod, Tangent) and isinstance(dmethod.fields["__self__"], MutableTangent)
    dself = dmethod.fields["__self__"].fields
    assert np.allclose(dself["W"], np.outer(g, x)) and np.isclose(dself["scale"], value / m.scale)
    assert np.allclose(gibbous.grad(m.loss)(x), dx)
    # And against central differences, for the argument and the object's field.
    for array, gradient in ((x, dx), (m.W, dself["W"])):
        for index in np.ndindex(array.shape):
            old = array[index]
            array[index] = old + 1e-6
            up = m.loss(x)
            array[index] = old - 1e-6
            down = m.loss(x)
            array[index] = old
            assert np.isclose(gradient[index], (up - down) / 2e-6, rtol=1e-6, atol=1e-8)
