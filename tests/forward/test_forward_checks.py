"""``gibbous.testing.forward.check_forward``: what the audit runs on every case."""

from __future__ import annotations

import math
import operator
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.ir import types as T
from gibbous.rules import frules
from gibbous.rules.registry import Context, DefaultContext
from gibbous.testing.forward import check_forward

X = np.random.default_rng(3).standard_normal((3, 4))


@pytest.mark.parametrize(
    ("f", "args", "kwargs", "status"),
    [
        (np.sin, (X,), {}, "checked"),
        (np.sum, (X,), {"axis": 0}, "checked"),
        (operator.mul, (X, 2.5), {}, "checked"),
        (np.matmul, (X, X.T), {}, "checked"),  # (aliasing arguments: checked on copies)
        (math.log, (2.0,), {}, "checked"),
        (np.where, (X > 0, X, 0.0), {}, "checked"),
        (np.floor, (X,), {}, "zero"),
        (np.exp, (X + 0j,), {}, "checked"),  # (complex: the formula's complex form)
        (np.abs, (X + 1j * X.T[:1].T,), {}, "checked"),  # (a real result of a complex one)
        (operator.imul, (X + 0j, X * 1j), {}, "checked"),  # (complex tangent kernels)
        (np.linalg.inv, (np.eye(3) + 0.1j,), {}, "checked"),  # (holomorphic: its formula)
        (np.linalg.cholesky, (np.eye(3) + 0j,), {}, "reverse-only"),
        (np.matmul, (X, X.T), {"out": np.empty((3, 3))}, "checked"),  # (the stateful rule)
        (operator.imul, (X.copy(), X), {}, "checked"),  # (a write, through ``X * X``)
        (np.add, (X, X, np.empty((3, 4))), {}, "checked"),  # (out by position)
        (np.linalg.norm, (X,), {}, "checked"),
        (np.linalg.norm, (X,), {"ord": 1}, "checked"),  # (the reverse rule's weights, transposed)
        (np.gradient, (X,), {}, "checked"),  # (linear in f)
        (np.max, (X,), {"axis": 1}, "checked"),
        (np.einsum, ("ij,kj->ik", X, X), {}, "checked"),
        (operator.setitem, (X.copy(), 0, 1.0), {}, "checked"),
        (np.copyto, (X.copy(), 2.0 * X), {}, "checked"),
        (operator.add, (2, 3), {}, "none"),
    ],
)
def test_statuses(
    f: t.Callable[..., t.Any], args: tuple[t.Any, ...], kwargs: dict[str, t.Any], status: str
) -> None:
    assert check_forward(f, *args, kwargs=kwargs).status == status


def cube(x: np.ndarray) -> np.ndarray:
    return x**3


def _cube_rrule(f: t.Any, x: t.Any) -> t.Any:
    z = cube(x.primal)
    y = gibbous.CoDual(z, np.zeros_like(z))

    def pullback(dy: t.Any) -> t.Any:
        x.fdata[...] += 3 * x.primal**2 * y.fdata  # (the right derivative)
        return gibbous.NoTangent(), gibbous.NoTangent()

    return y, pullback


def test_a_forward_rule_that_disagrees_with_the_reverse_rule_fails() -> None:
    ctx = Context("cube", DefaultContext)
    gibbous.primitive(cube, "f64[:]", ctx=ctx)(_cube_rrule)

    x = np.linspace(0.5, 2.0, 5)
    gibbous.testing.test_rule(cube, x, ctx=ctx)  # the reverse rule is right

    def wrong(types: tuple[T.Type, ...], kwnames: tuple[str, ...], v: tuple[bool, ...]) -> t.Any:
        return lambda z, x, dx: 2 * x**2 * dx  # (should be 3 x^2 dx)

    frules.register(cube, wrong)
    try:
        found = check_forward(cube, x, ctx=ctx)
    finally:
        del frules._RULES[cube]
    assert found.status == "failed" and "transpose identity" in found.message
    assert found.fd_error is not None and found.fd_error > 0.1


def softplus(x: np.ndarray) -> np.ndarray:  # a user's kernel, with both rules written by hand
    return np.logaddexp(0.0, x)


@gibbous.primitive(softplus, "f64[:]")
def softplus_rrule(f: t.Any, x: t.Any) -> t.Any:
    y = softplus(x.primal)
    y_fdata = np.zeros_like(y)

    def pullback(dy: t.Any) -> t.Any:
        x.fdata[...] += y_fdata / (1 + np.exp(-x.primal))
        return gibbous.NoTangent(), gibbous.NoTangent()

    return gibbous.CoDual(y, y_fdata), pullback


@gibbous.frule(softplus)
def softplus_tangent(z: np.ndarray, x: np.ndarray, dx: np.ndarray | None) -> t.Any:
    return None if dx is None else dx / (1 + np.exp(-x))


def test_a_users_forward_rule() -> None:
    x = np.linspace(-2.0, 2.0, 7)
    assert check_forward(softplus, x).status == "checked"

    def loss(x: np.ndarray) -> t.Any:
        return np.sum(softplus(x) * x)

    rule = gibbous.build_frule(loss, x)
    v = np.ones(7)
    _, dy = gibbous.jvp(rule, loss, (x,), (v,))
    h = 1e-6
    assert dy == pytest.approx((loss(x + h * v) - loss(x - h * v)) / (2 * h), rel=1e-6)


def test_test_rule_checks_the_forward_rule_when_asked() -> None:
    report = gibbous.testing.test_rule(np.tanh, X, forward=True)
    assert report.results["forward"] == "checked"
    ctx = Context("cube_reverse_only", DefaultContext)  # (a reverse rule, no forward one)
    gibbous.primitive(cube, "f64[:]", ctx=ctx)(_cube_rrule)
    report = gibbous.testing.test_rule(cube, np.linspace(0.5, 2.0, 5), ctx=ctx, forward=True)
    assert report.results["forward"] == "reverse-only: no forward rule yet"
    assert check_forward(cube, np.linspace(0.5, 2.0, 5), ctx=ctx).status == "reverse-only"
    frules.register(cube, lambda types, kwnames, v: (lambda z, x, dx: 2 * x**2 * dx))
    ctx = Context("cube2", DefaultContext)
    gibbous.primitive(cube, "f64[:]", ctx=ctx)(_cube_rrule)
    try:
        with pytest.raises(gibbous.testing.RuleTestError, match=r"\(g\) forward check failed"):
            gibbous.testing.test_rule(cube, np.linspace(0.5, 2.0, 5), ctx=ctx, forward=True)
    finally:
        del frules._RULES[cube]
