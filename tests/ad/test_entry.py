"""Entry points: any callable, bound the way Python binds a call (gibbous.entry).

Every gradient here is checked against central finite differences of the call as Python makes
it; the structure of the gradients (``(df, *dargs)``, the callable's tangent) is checked
exactly.
"""

from __future__ import annotations

import functools
import operator
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.api import LibraryRule, build_rrule, value_and_gradient, value_and_pullback
from gibbous.rules.registry import Context, MissingRuleError
from gibbous.tangents.model import NO_TANGENT, MutableTangent, Tangent
from tests.rules.fd import check_gradient

RNG = np.random.default_rng(7)


def fd(f: t.Callable[..., float], xs: t.Sequence[object], grads: t.Sequence[t.Any]) -> None:
    check_gradient(f, xs, grads, np.random.default_rng(3))


# --------------------------------------------------------------------------------------------
# Python's binding rules


def first_summed(*args: np.ndarray) -> float:
    return float(np.sum(args[0]))


def test_varargs_take_each_argument_not_the_first_whole() -> None:
    # Regression: the array itself was bound to ``args`` (1.0, gradient [1, 0, 0]).
    x = np.array([1.0, 2.0, 3.0])
    rule = build_rrule(first_summed, x)
    y, (df, dx) = value_and_gradient(rule, first_summed, x)
    assert y == 6.0 and df is NO_TANGENT
    np.testing.assert_array_equal(dx, np.ones(3))
    z = np.array([4.0, 5.0])
    rule = build_rrule(first_summed, x, z)
    y, (_, dx, dz) = value_and_gradient(rule, first_summed, x, z)
    assert y == 6.0
    np.testing.assert_array_equal(dx, np.ones(3))
    np.testing.assert_array_equal(dz, np.zeros(2))


def everything(
    a: float, /, b: np.ndarray, *rest: float, scale: float = 2.0, **named: float
) -> float:
    return float(a * np.sum(b) * scale + sum(rest) * a + sum(v * v for v in named.values()))


def test_every_kind_of_parameter() -> None:
    b = np.array([0.5, -1.5])
    args = (1.25, b, 3.0, -2.0)
    kwargs = {"scale": 0.75, "p": 1.5, "q": -0.5}
    rule = build_rrule(everything, *args, **kwargs)
    y, grads = value_and_gradient(rule, everything, *args, **kwargs)
    assert y == pytest.approx(everything(*args, **kwargs))
    assert len(grads) == 1 + len(args)  # keyword arguments get no gradient of their own
    fd(lambda *xs: everything(*xs, **kwargs), args, grads[1:])
    # The same rule serves other values of the same types; other keywords need another.
    args2 = (0.5, b * 2.0, 1.0, 4.0)
    y2, grads2 = value_and_gradient(rule, everything, *args2, **kwargs)
    assert y2 == pytest.approx(everything(*args2, **kwargs))
    fd(lambda *xs: everything(*xs, **kwargs), args2, grads2[1:])
    # ``named`` may hold other keys: its type is a dict of floats either way.
    y3, _ = value_and_gradient(rule, everything, *args2, scale=0.75, r=1.5)
    assert y3 == pytest.approx(everything(*args2, scale=0.75, r=1.5))
    with pytest.raises(TypeError, match="built for arguments"):
        value_and_gradient(rule, everything, 1.25, b.astype(np.float32), 3.0, -2.0, **kwargs)


def test_keywords_through_grad_and_binding_errors() -> None:
    b = np.array([0.5, -1.5])
    g = gibbous.grad(everything, argnums=(0, 1))
    da, db = g(1.25, b, scale=3.0)
    fd(lambda a, bb: everything(a, bb, scale=3.0), (1.25, b), (da, db))
    assert len(g.rules) == 1  # type: ignore[attr-defined]
    g(1.25, b, scale=1.0)
    assert len(g.rules) == 1  # type: ignore[attr-defined]
    g(1.25, b, 2.0, scale=1.0)
    assert len(g.rules) == 2  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match=r"everything\(a, /, b, \*rest, scale=2.0, \*\*named\)"):
        build_rrule(everything, a=1.0, b=b)  # ``a`` is positional-only


def test_argnums_negative_tuple_and_out_of_range() -> None:
    def f(x: float, y: np.ndarray, z: float) -> float:
        return float(x * np.sum(y) * z)

    y = np.array([1.0, 2.0])
    assert gibbous.grad(f, argnums=-1)(2.0, y, 0.5) == pytest.approx(6.0)
    dz, dx = gibbous.grad(f, argnums=(-1, 0))(2.0, y, 0.5)
    assert (dz, dx) == (pytest.approx(6.0), pytest.approx(1.5))
    with pytest.raises(ValueError, match="argnums 3 is out of range for 3 positional"):
        gibbous.grad(f, argnums=3)(2.0, y, 0.5)
    with pytest.raises(ValueError, match="argnums -4 is out of range"):
        gibbous.grad(f, argnums=-4)(2.0, y, 0.5)
    with pytest.raises(TypeError, match="argnums must be an int"):
        gibbous.grad(f, argnums=True)(2.0, y, 0.5)


# --------------------------------------------------------------------------------------------
# Library functions as entry points: their registered rules


def test_numpy_functions_with_rules_are_entry_points() -> None:
    x = RNG.standard_normal(4)
    assert gibbous.grad(np.sum)(x) == pytest.approx(np.ones(4))
    rule = build_rrule(np.sin, x)
    assert isinstance(rule, LibraryRule)
    ybar = RNG.standard_normal(4)
    y, (df, dx) = value_and_pullback(rule, ybar, np.sin, x)
    np.testing.assert_allclose(y, np.sin(x))
    np.testing.assert_allclose(dx, ybar * np.cos(x))
    assert df is NO_TANGENT
    A, B = RNG.standard_normal((3, 2)), RNG.standard_normal((2, 4))
    rule = build_rrule(np.einsum, "ij,jk->ik", A, B)
    cotangent = RNG.standard_normal((3, 4))
    y, (_, dspec, dA, dB) = value_and_pullback(rule, cotangent, np.einsum, "ij,jk->ik", A, B)
    np.testing.assert_allclose(y, A @ B)
    assert dspec is NO_TANGENT
    fd(lambda a, b: float(np.sum(cotangent * (a @ b))), (A, B), (dA, dB))


def test_operators_and_keywords_of_primitives() -> None:
    assert gibbous.grad(operator.mul, argnums=(0, 1))(1.5, -2.0) == (-2.0, 1.5)
    M = RNG.standard_normal((3, 2))
    rule = build_rrule(np.sum, M, axis=0)
    ybar = RNG.standard_normal(2)
    y, (_, dM) = value_and_pullback(rule, ybar, np.sum, M, axis=0)
    np.testing.assert_allclose(y, M.sum(axis=0))
    np.testing.assert_allclose(dM, np.broadcast_to(ybar, (3, 2)))
    with pytest.raises(TypeError, match="built for keywords"):
        value_and_pullback(rule, ybar, np.sum, M, keepdims=False)
    with pytest.raises(TypeError, match="this rule was built for numpy.sum, not numpy.prod"):
        value_and_pullback(rule, ybar, np.prod, M, axis=0)


def test_scipy_function_with_a_rule_whose_body_gibbous_cannot_read() -> None:
    special = pytest.importorskip("scipy.special")
    x = RNG.standard_normal(5)
    y, (_, dx) = value_and_gradient(build_rrule(special.logsumexp, x), special.logsumexp, x)
    assert y == pytest.approx(np.log(np.sum(np.exp(x))))
    np.testing.assert_allclose(dx, np.exp(x) / np.sum(np.exp(x)))


def test_a_callable_without_rule_names_itself() -> None:
    with pytest.raises(MissingRuleError, match=r"numpy\.sin\(f64\[:\]\)"):
        build_rrule(np.sin, np.ones(2), ctx=Context("Empty", parent=None))


# --------------------------------------------------------------------------------------------
# Wrapped callables: partials, callable instances, staticmethods, bound builtin methods


def weighted(x: np.ndarray, w: np.ndarray, scale: float = 1.0) -> float:
    return float(np.sum(np.tanh(x) * w)) * scale


def test_partial_gradients_reach_its_bound_arguments() -> None:
    x, w = RNG.standard_normal(3), RNG.standard_normal(3)
    p = functools.partial(weighted, w=w, scale=1.5)
    y, (dp, dx) = value_and_gradient(build_rrule(p, x), p, x)
    assert y == pytest.approx(weighted(x, w, 1.5))
    assert isinstance(dp, Tangent)
    keywords = dp.fields["keywords"]
    assert isinstance(keywords, Tangent)
    dw, dscale = keywords.fields["w"], keywords.fields["scale"]
    fd(lambda a, b, s: weighted(a, b, s), (x, w, 1.5), (dx, dw, dscale))
    q = functools.partial(weighted, x)  # a bound positional argument
    y, (dq, dw) = value_and_gradient(build_rrule(q, w), q, w)
    fd(lambda a, b: weighted(a, b), (x, w), (dq.fields["args"][0], dw))


class Model:
    def __init__(self, W: np.ndarray) -> None:
        self.W = W

    def __call__(self, x: np.ndarray) -> float:
        return float(np.sum(np.tanh(self.W @ x)))

    @staticmethod
    def norm2(x: np.ndarray) -> float:
        return float(x @ x)


def test_callable_instances_and_staticmethods() -> None:
    W, x = RNG.standard_normal((2, 3)), RNG.standard_normal(3)
    m = Model(W)
    y, (dm, dx) = value_and_gradient(build_rrule(m, x), m, x)
    assert y == pytest.approx(m(x))
    assert isinstance(dm, MutableTangent)
    fd(lambda W_, x_: Model(W_)(x_), (W, x), (dm.fields["W"], dx))
    static = Model.__dict__["norm2"]
    y, (_, dx) = value_and_gradient(build_rrule(static, x), static, x)
    np.testing.assert_allclose(dx, 2 * x)


def test_bound_builtin_method() -> None:
    x, z = RNG.standard_normal(3), RNG.standard_normal(3)
    y, (dmethod, dz) = value_and_gradient(build_rrule(x.dot, z), x.dot, z)
    assert y == pytest.approx(x @ z)
    assert dmethod == Tangent({"__self__": dmethod.fields["__self__"]})
    np.testing.assert_allclose(dmethod.fields["__self__"], z)
    np.testing.assert_allclose(dz, x)


# --------------------------------------------------------------------------------------------
# The same callables inside differentiated code


SCALE = functools.partial(weighted, scale=0.5)
MODEL = Model(np.array([[0.5, -1.0, 2.0]]))


def test_partials_and_callable_instances_inside_code() -> None:
    x, w = RNG.standard_normal(3), RNG.standard_normal(3)

    def made_inside(x: np.ndarray, w: np.ndarray, s: float) -> float:
        p = functools.partial(weighted, w=w, scale=s)
        q = functools.partial(weighted, x)
        return p(x) + q(w, 2.0)

    rule = build_rrule(made_inside, x, w, 1.5)
    for args in ((x, w, 1.5), (w, x, -0.5)):
        _, grads = value_and_gradient(rule, made_inside, *args)
        fd(made_inside, args, grads[1:])

    def globals_(x: np.ndarray, w: np.ndarray) -> float:
        return SCALE(x, w) + MODEL(x)

    _, grads = value_and_gradient(build_rrule(globals_, x, w), globals_, x, w)
    fd(globals_, (x, w), grads[1:])

    def passed(p: t.Callable[[np.ndarray], float], x: np.ndarray) -> float:
        return p(x) * 2.0

    p = functools.partial(weighted, w=w)
    y, (_, dp, dx) = value_and_gradient(build_rrule(passed, p, x), passed, p, x)
    assert y == pytest.approx(2 * weighted(x, w))
    fd(lambda a, b: 2 * weighted(a, b), (x, w), (dx, dp.fields["keywords"].fields["w"]))
    m = Model(RNG.standard_normal((2, 3)))
    y, (_, dm, dx) = value_and_gradient(build_rrule(passed, m, x), passed, m, x)
    fd(lambda W_, a: 2 * Model(W_)(a), (m.W, x), (dm.fields["W"], dx))


class Loss:
    scale = 2.0

    @classmethod
    def total(cls, x: np.ndarray) -> float:
        return float(np.sum(x * x)) * cls.scale

    @staticmethod
    def plain(x: np.ndarray) -> float:
        return float(np.sum(np.sin(x))) * 3.0

    def __call__(self, x: np.ndarray) -> float:
        return self.total(x) + self.plain(x)


def test_classmethods_and_staticmethods_through_the_class_and_inside_code() -> None:
    x = RNG.standard_normal(3)
    for f in (Loss.total, Loss.plain, Loss()):
        fd(f, (x,), (gibbous.grad(f)(x),))

    def uses(x: np.ndarray) -> float:
        return Loss.total(x) + Loss().plain(x) + Loss()(x)

    fd(uses, (x,), (gibbous.grad(uses)(x),))
