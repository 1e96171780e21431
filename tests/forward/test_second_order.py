"""Hessian-vector products (reverse mode over the forward program), Hessians and Jacobians,
against central finite differences of gradients and of values."""

from __future__ import annotations

import functools
import math
import re
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.forward import ForwardModeError

from tests.forward.test_jvp import (
    counter_recursion, fact_like, loop_branch, mlp, rnn, rosenbrock, scalar_loop, with_floor,
)  # fmt: skip

RNG = np.random.default_rng(16)


def _gradient(f: t.Callable[..., t.Any], x: t.Any, *args: t.Any) -> t.Any:
    rule = gibbous.build_rrule(f, x, *args)
    return gibbous.value_and_gradient(rule, f, x, *args)[1][1]


def _fd_hvp(f: t.Callable[..., t.Any], x: t.Any, v: t.Any, *args: t.Any) -> t.Any:
    h = 1e-5
    return (_gradient(f, x + h * v, *args) - _gradient(f, x - h * v, *args)) / (2 * h)


def mlp_loss(W1: np.ndarray, b1: np.ndarray, W2: np.ndarray, x: np.ndarray) -> t.Any:
    return np.sum(mlp(W1, b1, W2, x) ** 2)


def scalar_math(x: float, y: float) -> float:
    return math.sin(x) * y**2 + math.exp(x * y) / (1 + x * x)


def sines(w: np.ndarray) -> float:
    return float(np.sum(np.sin(w)))


def calls_a_summing_function(w: np.ndarray) -> float:
    return sines(w) * sines(2 * w)  # the callee's forward program sums as reverse mode can read


def _kaiser_like(a: float) -> float:
    if a > 21:
        return 0.5842 * (a - 21) ** 0.4 + 0.07886 * (a - 21)
    beta = 0.0  # (a float constant on this branch: its tangent is 0.0, not None)
    return beta


def constant_branch(a: float) -> float:
    return _kaiser_like(a) * 2.0 + a**3


CASES: list[tuple[t.Callable[..., t.Any], tuple[t.Any, ...]]] = [
    (calls_a_summing_function, (RNG.standard_normal((2, 3)),)),
    (rosenbrock, (RNG.standard_normal(10),)),
    (scalar_loop, (RNG.standard_normal(8),)),
    (with_floor, (RNG.standard_normal(7) * 3,)),
    (mlp_loss, (RNG.standard_normal((5, 6)), RNG.standard_normal(6), RNG.standard_normal((6, 3)),
                RNG.standard_normal((4, 5)))),
    (rnn, (RNG.standard_normal((5, 5)) / 3, RNG.standard_normal(5), RNG.standard_normal((4, 5)))),
    (loop_branch, (0.6, 1.2)),
    (scalar_math, (0.4, 1.1)),
    # recursion to a depth known at run time: the forward program calls itself
    (fact_like, (1.3, 5)),
    (counter_recursion, (RNG.standard_normal(3), 20)),
    (constant_branch, (0.5,)),
    (constant_branch, (30.0,)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("f", "args"), CASES, ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(CASES)]
)
def test_hvp_matches_finite_differences_of_gradients(
    f: t.Callable[..., t.Any], args: tuple[t.Any, ...]
) -> None:
    x, rest = args[0], args[1:]
    v = float(RNG.standard_normal()) if isinstance(x, float) else RNG.standard_normal(x.shape)
    product = gibbous.build_hvp(f, x, *rest)
    for _ in range(2):  # built once, called again
        got = product(x, v, *rest)
        np.testing.assert_allclose(got, _fd_hvp(f, x, v, *rest), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gibbous.hvp(f, x, v, *rest), got)


def test_hessian_is_symmetric_and_matches_hvps() -> None:
    x = RNG.standard_normal(6)
    H = gibbous.hessian(rosenbrock, x)
    assert H.shape == (6, 6)
    np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-9)
    v = RNG.standard_normal(6)
    np.testing.assert_allclose(H @ v, gibbous.hvp(rosenbrock, x, v), rtol=1e-12, atol=1e-9)
    assert gibbous.hessian(scalar_math, 0.4, 1.1) == pytest.approx(
        (_gradient(scalar_math, 0.4 + 1e-5, 1.1) - _gradient(scalar_math, 0.4 - 1e-5, 1.1)) / 2e-5,
        rel=1e-6,
    )


def outer_sum(x: np.ndarray) -> t.Any:
    return np.tanh(np.outer(x, x[:3]) @ np.ones(3))


@pytest.mark.parametrize("mode", ["auto", "forward", "reverse"])
def test_jacobian_matches_finite_differences(mode: str) -> None:
    x = RNG.standard_normal(5)
    J = gibbous.jacobian(outer_sum, x, mode=mode)
    assert J.shape == (5, 5)
    h = 1e-6
    for i in range(5):
        e = np.zeros(5)
        e[i] = h
        np.testing.assert_allclose(
            J[:, i], (outer_sum(x + e) - outer_sum(x - e)) / (2 * h), rtol=1e-5, atol=1e-8
        )
    np.testing.assert_allclose(gibbous.jacobian(np.sin, x, mode=mode), np.diag(np.cos(x)))
    np.testing.assert_allclose(gibbous.jacobian(rosenbrock, x, mode=mode), _gradient(rosenbrock, x))


def test_refusals() -> None:
    with pytest.raises(ForwardModeError, match="not a Python function"):
        gibbous.build_hvp(print, 1.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'scale'"):
        gibbous.build_hvp(rosenbrock, np.ones(3), scale=2.0)
    with pytest.raises(TypeError, match="built for other arguments"):
        gibbous.build_hvp(np.sin, 1.0)(1.0, 1.0, where=True)
    with pytest.raises(TypeError, match="float or a float64 array"):
        gibbous.build_hvp(rosenbrock, np.arange(3))
    with pytest.raises(TypeError, match="shape"):
        gibbous.build_hvp(rosenbrock, np.ones(3))(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="mode"):
        gibbous.jacobian(np.sin, np.ones(2), mode="sideways")


def test_a_library_function_whose_forward_rule_is_a_tangent_function() -> None:
    """``det``'s forward rule is a function called at run time: the product's reverse pass
    derives it again, as it derives the user's code."""
    a = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])
    v = np.arange(9.0).reshape(3, 3) / 10
    got = gibbous.hvp(np.linalg.det, a, v)
    np.testing.assert_allclose(got, _fd_hvp(np.linalg.det, a, v), rtol=1e-6, atol=1e-8)


def cubes(x: np.ndarray) -> t.Any:
    return np.sum(x**3)


_cubes_gradient = gibbous.grad(cubes)


def through_grad(x: np.ndarray) -> t.Any:
    return np.sum(_cubes_gradient(x) * x)


def through_hvp(x: np.ndarray) -> t.Any:
    return np.sum(gibbous.hvp(cubes, x, x))


def through_value_and_gradient(x: np.ndarray) -> t.Any:
    rule = gibbous.build_rrule(cubes, x)
    return gibbous.value_and_gradient(rule, cubes, x)[0]


@pytest.mark.parametrize(
    ("f", "name"),
    [
        (through_grad, "gibbous.grad(tests.forward.test_second_order.cubes)"),
        (through_hvp, "gibbous.hvp"),
        (through_value_and_gradient, "gibbous.build_rrule"),
    ],
)
def test_derivatives_inside_differentiated_code_are_refused_by_name(
    f: t.Callable[..., t.Any], name: str
) -> None:
    x = np.linspace(0.5, 1.5, 4)
    with pytest.raises(gibbous.UnsupportedConstructError, match="call gibbous.hvp") as info:
        gibbous.build_rrule(f, x)
    message = str(info.value)
    assert f"a call of {name}" in message and f"in {f.__name__}" in message
    with pytest.raises(ForwardModeError, match=f"a call of {re.escape(name)}"):
        gibbous.build_frule(f, x)


def test_hvp_through_callees_known_only_at_run_time() -> None:
    """A function passed in, or read from a closure's cell: its forward program is found at
    run time, and reverse mode derives its rule from that program's IR when it meets it."""

    def make(h: t.Callable[..., t.Any]) -> t.Callable[..., t.Any]:
        def f(x: np.ndarray) -> t.Any:
            return np.sum(h(x) * x)

        return f

    def cubic(z: np.ndarray) -> t.Any:
        return z**3 - z

    x, v = np.linspace(0.1, 1.0, 4), np.array([1.0, -2.0, 0.5, 0.25])
    for h in (np.sin, cubic):
        f = make(h)
        np.testing.assert_allclose(gibbous.hvp(f, x, v), _fd_hvp(f, x, v), rtol=1e-6, atol=1e-8)
    f = make(np.cumprod)  # (its tangent: a function called at run time, derived again)
    np.testing.assert_allclose(gibbous.hvp(f, x, v), _fd_hvp(f, x, v), rtol=1e-6, atol=1e-8)


def _weighted(
    x: np.ndarray, w: np.ndarray, *more: float, power: int = 2, scale: float = 1.0
) -> t.Any:
    total = scale * np.sum(w * x**power)
    for m in more:
        total = total + m * np.sum(x)
    return total


def _apply(f: t.Callable[..., t.Any], x: np.ndarray, *args: t.Any, **kwargs: t.Any) -> t.Any:
    return f(x, *args, **kwargs)  # (``f(*args, **kwargs)``, ``f`` a value)


def calls_through_star_and_bindings(x: np.ndarray, w: np.ndarray) -> t.Any:
    first = _apply(_weighted, x, w, 0.5, power=3)  # *more, a keyword, a default left out
    second = _apply(np.sin, x * w)  # a library function: its written-out forward rule
    pair = (x, w * x)
    third = _weighted(*pair, scale=2.0)  # ``f(*pair)`` of a known callee
    h = _weighted
    fourth = h(x, w)  # a value binding defaults
    return first + np.sum(second * x) + third + fourth


def test_hvp_through_star_calls_and_bindings_of_values() -> None:
    """``f(*args, **kwargs)`` and calls of values that bind defaults, ``*args`` or keywords:
    an IR binder (``gibbous.forward.binders``) between the call and the callee's program,
    which reverse mode derives from its IR."""
    x, w = np.linspace(0.2, 1.2, 4), np.array([1.0, -0.5, 2.0, 0.3])
    v = np.array([0.3, -1.0, 0.5, 2.0])

    def f(z: np.ndarray) -> t.Any:
        return calls_through_star_and_bindings(z, w)

    for _ in range(2):  # (the binders are kept: the second call finds them)
        np.testing.assert_allclose(gibbous.hvp(f, x, v), _fd_hvp(f, x, v), rtol=1e-6, atol=1e-8)
    H = gibbous.hessian(calls_through_star_and_bindings, x, w)
    np.testing.assert_allclose(H @ v, gibbous.hvp(f, x, v), rtol=1e-9, atol=1e-9)

    def g(z: np.ndarray) -> t.Any:
        return np.sum(_apply(np.cumprod, z))  # (its tangent: a function called at run time)

    np.testing.assert_allclose(gibbous.hvp(g, x, v), _fd_hvp(g, x, v), rtol=1e-6, atol=1e-8)


def generator_expressions(x: np.ndarray, w: float) -> t.Any:
    """Generator expressions consumed at once (``sum``, ``tuple``): run eagerly, their
    cells' tangents real cells, their programs reached through an IR binder."""
    a, b = x[0], x[1]
    total = sum((c - a + a * b**k) ** 2 for c, k in [(1.5, 1), (2.25, 2)])
    top = sum(np.sin(v * w) for v in x)
    pair = tuple(v * a for v in x[1:])
    return total + top * b + pair[0] * pair[-1]


def extremes(x: np.ndarray) -> t.Any:
    a = max(x[0] * x[1], x[2] ** 2)  # (floats)
    b = min(float(np.sum(x)), 3.0)
    c = max([x[0], x[1] * 2]) + min((x[2], x[0] * x[0])) + max(x * x)  # (list, tuple, array)
    return a * b + c * a


def test_hvp_through_max_and_min() -> None:
    """``max``/``min`` written out: the tangent at the index of the item returned
    (``operator.indexOf``), as the reverse rule chooses it."""
    x, v = np.array([0.5, 1.5, 0.3]), np.array([1.0, -0.5, 2.0])
    np.testing.assert_allclose(gibbous.hvp(extremes, x, v), _fd_hvp(extremes, x, v), rtol=1e-6)


def norms(x: np.ndarray) -> t.Any:
    return np.linalg.norm(x) ** 3 + np.linalg.norm(x.reshape(2, 2) * 2.0) * x[0]


def test_hvp_through_a_whole_array_norm() -> None:
    """``np.linalg.norm(x)``: its tangent written out (``sum(x dx) / z``), read again by
    reverse mode; at 0 the reverse rule's subgradient, 0."""
    x, v = np.array([0.3, -1.2, 0.5, 0.8]), np.array([1.0, 0.5, -2.0, 0.25])
    np.testing.assert_allclose(gibbous.hvp(norms, x, v), _fd_hvp(norms, x, v), rtol=1e-6)
    rule = gibbous.build_frule(norms, x)
    assert gibbous.jvp(rule, norms, (np.zeros(4),), (v,))[1] == 0.0


def test_hvp_through_generator_expressions_consumed_at_once() -> None:
    x, v = np.array([1.5, 0.25, -0.7]), np.array([0.5, -1.0, 2.0])

    def f(z: np.ndarray) -> t.Any:
        return generator_expressions(z, 0.8)

    np.testing.assert_allclose(gibbous.hvp(f, x, v), _fd_hvp(f, x, v), rtol=1e-6, atol=1e-8)


def closure_over_a_scaled_value(x: np.ndarray, k: float) -> t.Any:
    scale = k * np.sum(x)
    total = 0.0

    def step(y: np.ndarray) -> t.Any:
        nonlocal total
        total = total + np.sum(np.tanh(y) * scale)
        return total

    for i in range(3):
        step(x * (i + 1))
    return total * x[0]


def test_hvp_of_closures_cells_and_nonlocal_writes() -> None:
    x, v = np.linspace(0.1, 1.0, 4), np.array([1.0, -2.0, 0.5, 0.25])
    got = gibbous.hvp(closure_over_a_scaled_value, x, v, 0.7)
    expected = _fd_hvp(closure_over_a_scaled_value, x, v, 0.7)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


SCALE = 2.0


def scaled(x: np.ndarray) -> t.Any:
    return np.sum(SCALE * x**3)


def test_a_rebound_global_is_never_used_stale() -> None:
    """The forward programs freeze the globals they read, as reverse rules do: after a
    rebinding, a held rule or product raises, and ``hvp`` builds again and is right."""
    global SCALE
    x, v = np.linspace(0.5, 1.5, 4), np.linspace(-1.0, 1.0, 4)
    frule = gibbous.build_frule(scaled, x)
    product = gibbous.build_hvp(scaled, x)
    np.testing.assert_allclose(gibbous.hvp(scaled, x, v), _fd_hvp(scaled, x, v), rtol=1e-6)
    try:
        SCALE = 5.0
        with pytest.raises(gibbous.StaleRuleError, match="SCALE"):
            gibbous.jvp(frule, scaled, (x,), (v,))
        with pytest.raises(gibbous.StaleRuleError, match="SCALE"):
            product(x, v)
        got = gibbous.hvp(scaled, x, v)  # (built again)
        np.testing.assert_allclose(got, 6 * SCALE * x * v, rtol=1e-12)
        np.testing.assert_allclose(got, _fd_hvp(scaled, x, v), rtol=1e-6)
    finally:
        SCALE = 2.0


def weighted(x: np.ndarray, a: np.ndarray) -> t.Any:
    return np.sum(x**3 * a)


def test_arguments_sharing_memory_with_x_are_held_constant() -> None:
    """``v`` or a constant argument that is ``x`` itself: reverse mode would give them one
    cotangent with ``x``; the products treat them as the constants they are, and leave every
    argument as it was."""
    x = np.linspace(0.5, 1.5, 4)
    before = x.copy()
    np.testing.assert_allclose(gibbous.hvp(cubes, x, x), 6 * x * x, rtol=1e-12)
    np.testing.assert_allclose(gibbous.hvp(weighted, x, np.ones(4), x), 6 * x * x, rtol=1e-12)
    np.testing.assert_allclose(
        gibbous.hvp(weighted, x, x[::-1], x), _fd_hvp(weighted, x, x[::-1].copy(), x.copy()),
        rtol=1e-6,
    )
    for mode in ("forward", "reverse"):
        J = gibbous.jacobian(lambda y, a: y * a, x, x, mode=mode)
        np.testing.assert_allclose(J, np.diag(x), rtol=1e-12)
    np.testing.assert_array_equal(x, before)


# --------------------------------------------------------------------------------------------
# What build_rrule takes, hvp takes: library functions, methods, partials, callable objects,
# *args, keyword-only parameters, **kwargs and defaults (keywords are constants)


def _fd_hvp_of(call: t.Callable[[t.Any], t.Any], x: t.Any, v: t.Any) -> t.Any:
    """The central difference of ``call``'s reverse-mode gradient along ``v``."""

    def gradient(z: t.Any) -> t.Any:
        rule = gibbous.build_rrule(call, z)
        return gibbous.value_and_gradient(rule, call, z)[1][1]

    h = 1e-5
    return (gradient(x + h * v) - gradient(x - h * v)) / (2 * h)


class Weighted:
    def __init__(self, w: np.ndarray) -> None:
        self.w = w

    def loss(self, x: np.ndarray, *, power: float = 3.0) -> t.Any:
        return np.sum(self.w * np.abs(x) ** power)

    def __call__(self, x: np.ndarray) -> t.Any:
        return np.sum(self.w * np.sin(x) * x)


def packed(a: float, *xs: np.ndarray, scale: float = 1.0, **terms: float) -> t.Any:
    total = scale * a * np.sum(xs[0] ** 3 * xs[1])
    for name, c in terms.items():
        total = total + c * np.sum(np.cos(xs[0]) * len(name))
    return total


def with_default(x: np.ndarray, b: float = 2.0) -> t.Any:
    return b * np.sum(np.exp(x) * x)


def all_packed(*xs: np.ndarray, **kw: float) -> t.Any:
    return np.sum(xs[0] ** 2 * np.sin(xs[1])) * kw["c"]


def test_hvp_takes_what_build_rrule_takes() -> None:
    x = np.linspace(0.3, 1.2, 4)
    v = np.array([1.0, -2.0, 0.5, 0.25])
    w = np.array([1.0, 2.0, 3.0, 0.5])
    m = Weighted(w)
    other = np.linspace(-1.0, 1.0, 4)
    cases: list[tuple[t.Callable[..., t.Any], tuple[t.Any, ...], dict[str, t.Any], t.Any]] = [
        (m.loss, (), {}, lambda z: m.loss(z)),
        (m.loss, (), {"power": 4.0}, lambda z: m.loss(z, power=4.0)),
        (m, (), {}, lambda z: m(z)),
        (functools.partial(packed, 2.0), (other,), {"scale": 3.0, "ab": 0.5},
         lambda z: packed(2.0, z, other, scale=3.0, ab=0.5)),
        (all_packed, (other,), {"c": 2.0}, lambda z: all_packed(z, other, c=2.0)),
        (with_default, (), {}, lambda z: with_default(z)),
        (with_default, (3.0,), {}, lambda z: with_default(z, 3.0)),
        (np.sum, (), {}, lambda z: np.sum(z * 1.0)),
        (np.prod, (), {}, lambda z: np.prod(z)),
    ]  # fmt: skip
    held = [a.copy() for a in (x, v, w, other)]
    for f, args, kwargs, plain in cases:
        product = gibbous.build_hvp(f, x, *args, **kwargs)
        expected = _fd_hvp_of(plain, x, v)
        for _ in range(2):  # (built once, called again)
            got = product(x, v, *args, **kwargs)
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7, err_msg=repr(product))
        np.testing.assert_allclose(gibbous.hvp(f, x, v, *args, **kwargs), got, rtol=1e-12)
        H = gibbous.hessian(f, x, *args, **kwargs)
        np.testing.assert_allclose(H @ v, got, rtol=1e-10, atol=1e-12)
    for a, b in zip((x, v, m.w, other), held):  # (no argument, nor the object, written)
        np.testing.assert_array_equal(a, b)
    assert "power=f64" in repr(gibbous.build_hvp(m.loss, x, power=4.0))
    # another object of the same class: the product (kept per function and types) reads it
    np.testing.assert_allclose(
        gibbous.hvp(Weighted(2 * w).loss, x, v), 2 * gibbous.hvp(m.loss, x, v), rtol=1e-12
    )


def test_hvp_of_a_library_function_with_a_written_out_forward_rule() -> None:
    np.testing.assert_allclose(gibbous.hvp(np.sin, 0.7, 2.0), -2.0 * math.sin(0.7))
    np.testing.assert_allclose(gibbous.hessian(math.exp, 0.3), math.exp(0.3))


def test_jacobian_takes_keywords_and_methods() -> None:
    x = np.linspace(0.3, 1.2, 4)
    m = Weighted(np.array([1.0, 2.0, 3.0, 0.5]))
    expected = m.w * 4.0 * np.sign(x) * np.abs(x) ** 3.0
    for mode in ("forward", "reverse"):
        J = gibbous.jacobian(m.loss, x, power=4.0, mode=mode)
        np.testing.assert_allclose(J, expected, rtol=1e-12)
        J = gibbous.jacobian(np.multiply, x, x[::-1].copy(), mode=mode)
        np.testing.assert_allclose(J, np.diag(x[::-1]), rtol=1e-12)


class RealPart(Weighted):
    def loss(self, x: np.ndarray, *, power: float = 3.0) -> t.Any:
        return np.sum(np.real(self.w * np.abs(x) ** power))


def test_operands_of_unknown_type_are_checked_at_run_time() -> None:
    """``self.w * x`` has an operand whose type the build cannot tell: the product writes
    its tangent out after checking that it is a number (real or complex: a product's tangent
    holds for both), so a complex ``w`` gives the right product, and a complex loss is
    refused by the gradient, never a wrong value."""
    x, v = np.linspace(0.3, 1.2, 4), np.ones(4)
    real = Weighted(np.arange(1.0, 5.0))
    np.testing.assert_allclose(gibbous.hvp(real.loss, x, v), real.w * 6 * x, rtol=1e-12)
    w = np.arange(1.0, 5.0) * (2.0 - 1j)
    np.testing.assert_allclose(gibbous.hvp(RealPart(w).loss, x, v), np.real(w) * 6 * x, rtol=1e-12)
    with pytest.raises(TypeError, match="a gradient needs a function returning a real scalar"):
        gibbous.hvp(Weighted(w).loss, x, v)
