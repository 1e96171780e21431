"""Hessian-vector products (reverse mode over the forward program), Hessians and Jacobians,
against central finite differences of gradients and of values."""

from __future__ import annotations

import math
import re
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.forward import ForwardModeError

from tests.forward.test_jvp import loop_branch, mlp, rnn, rosenbrock, scalar_loop, with_floor

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
        gibbous.build_hvp(np.sin, 1.0)
    with pytest.raises(TypeError, match="float or a float64 array"):
        gibbous.build_hvp(rosenbrock, np.arange(3))
    with pytest.raises(TypeError, match="shape"):
        gibbous.build_hvp(rosenbrock, np.ones(3))(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="mode"):
        gibbous.jacobian(np.sin, np.ones(2), mode="sideways")


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


def test_hvp_of_a_function_calling_a_callee_known_only_at_run_time_is_refused() -> None:
    def make(h: t.Callable[..., t.Any]) -> t.Callable[..., t.Any]:
        def f(x: np.ndarray) -> t.Any:
            return np.sum(h(x) * x)

        return f

    x = np.linspace(0.1, 1.0, 4)
    with pytest.raises(ForwardModeError, match="known only at run time at .*test_second_order"):
        gibbous.build_hvp(make(np.sin), x)


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
