"""Array forms (issue 14, point 1): float64 array variants of the elementwise rules written into
the forward and reverse programs, checked against the same rules called, operand mix by
operand mix, and against finite differences."""

from __future__ import annotations

import operator
import re
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.inspect import rule_table
from gibbous.ir import types as T
from gibbous.rules.registry import Context, DefaultContext, lookup_rule, primitive

Array = np.ndarray[t.Any, t.Any]

UNARY = [np.sin, np.exp, np.tanh, np.log, np.sqrt, np.negative, np.abs, np.arctan, np.square]
BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, np.maximum,
          np.arctan2, np.hypot, np.logaddexp, np.multiply]  # fmt: skip

rng = np.random.default_rng(7)
OPERANDS: dict[str, t.Any] = {
    "matrix": rng.uniform(0.5, 1.5, (3, 4)),
    "row": rng.uniform(0.5, 1.5, 4),
    "column": rng.uniform(0.5, 1.5, (3, 1)),
    "float": 1.3,
    "int": 2,
}
MIXES = [("matrix", "matrix"), ("matrix", "row"), ("column", "row"), ("matrix", "float"),
         ("float", "matrix"), ("matrix", "int"), ("int", "matrix")]  # fmt: skip
WEIGHTS = rng.standard_normal((3, 4))


def make(fn: object, arity: int) -> t.Callable[..., float]:
    """``sum(fn(x[, y]) * W)`` with ``fn`` a global, as a callee the build sees as a constant
    (a closure's cell would make the call site dynamic)."""
    params = "x, y" if arity == 2 else "x"
    namespace = {"np": np, "fn": fn, "W": WEIGHTS}
    exec(f"def f({params}):\n    return float(np.sum(fn({params}) * W))", namespace)
    return t.cast(t.Callable[..., float], namespace["f"])


def kind_of(f: t.Callable[..., float], *args: t.Any) -> str:
    (row,) = [r for r in rule_table(f, *args) if r.callee.startswith(("numpy.", "operator."))
              and r.callee not in ("numpy.sum", "operator.mul")]  # fmt: skip
    return row.kind


def called(fn: object, types: t.Sequence[T.Type]) -> Context:
    """A context in which the call's variant is registered again without its array form."""
    registration = lookup_rule(DefaultContext, fn, types)
    assert registration.inline is not None and registration.inline.array
    ctx = Context("called", parent=DefaultContext)
    primitive(fn, *registration.pattern.args, ctx=ctx)(registration.rule)
    return ctx


def both(f: t.Callable[..., float], args: list[t.Any], ctx: Context) -> tuple[t.Any, t.Any]:
    inline_rule = gibbous.build_rrule(f, *args)
    called_rule = gibbous.build_rrule(f, *args, ctx=ctx)
    for _ in range(2):  # warm: the fdata of array results come from the pool the second time
        y1, g1 = gibbous.value_and_gradient(inline_rule, f, *args)
        y2, g2 = gibbous.value_and_gradient(called_rule, f, *args)
    assert y1 == y2
    return g1, g2


def central(f: t.Callable[..., float], args: list[t.Any], k: int, h: float = 1e-6) -> t.Any:
    x = args[k]
    if not isinstance(x, np.ndarray):
        return (f(*args[:k], x + h, *args[k + 1 :]) - f(*args[:k], x - h, *args[k + 1 :])) / (2 * h)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        plus = f(*args[:k], up, *args[k + 1 :])
        out[i] = (plus - f(*args[:k], down, *args[k + 1 :])) / (2 * h)
    return out


@pytest.mark.parametrize("fn", UNARY, ids=lambda f: f.__name__)
def test_unary_form_agrees_with_the_called_rule(fn: t.Any) -> None:
    f = make(fn, 1)
    x = OPERANDS["matrix"].copy()
    assert kind_of(f, x) == "inline"
    g1, g2 = both(f, [x], called(fn, [T.typeof(x)]))
    np.testing.assert_allclose(g1[1], g2[1], rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(g1[1], central(f, [x], 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn", BINARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mix", MIXES, ids="-".join)
def test_binary_form_agrees_with_the_called_rule(fn: t.Any, mix: tuple[str, str]) -> None:
    a, b = (OPERANDS[m] for m in mix)
    a = a.copy() if isinstance(a, np.ndarray) else a
    b = b.copy() if isinstance(b, np.ndarray) else b

    f = make(fn, 2)
    if fn is not operator.mul and fn is not np.multiply:  # (the weights' product is one too)
        assert kind_of(f, a, b) == "inline"
    g1, g2 = both(f, [a, b], called(fn, [T.typeof(a), T.typeof(b)]))
    for k, arg in enumerate((a, b)):
        if isinstance(arg, int):
            continue
        np.testing.assert_allclose(g1[1 + k], g2[1 + k], rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(g1[1 + k], central(f, [a, b], k), rtol=1e-6, atol=1e-7)


def test_one_operand_twice_and_a_chain() -> None:
    """``x * x`` (one value, two operands), results feeding results, a result used twice."""

    def f(x: Array, c: float) -> float:
        y = np.sin(x) * x
        z = y * y - c * y
        return float(np.sum(np.sqrt(z * z + 1.0)))

    x, c = OPERANDS["matrix"].copy(), 0.4
    rule = gibbous.build_rrule(f, x, c)
    _, g = gibbous.value_and_gradient(rule, f, x, c)
    np.testing.assert_allclose(g[1], central(f, [x, c], 0), rtol=1e-6, atol=1e-8)
    assert g[2] == pytest.approx(central(f, [x, c], 1), rel=1e-6)


def test_an_inactive_operand_and_a_returned_result() -> None:
    """A constant array operand gets nothing; a result returned (through a derived child) gets
    the caller's cotangent."""
    data = rng.uniform(0.5, 1.5, (3, 4))

    def inner(x: Array) -> Array:
        return np.tanh(x) * data

    def f(x: Array) -> float:
        return float(np.sum(inner(x) ** 2))

    x = OPERANDS["matrix"].copy()
    rule = gibbous.build_rrule(f, x)
    for _ in range(3):
        _, g = gibbous.value_and_gradient(rule, f, x)
    np.testing.assert_allclose(g[1], central(f, [x], 0), rtol=1e-6, atol=1e-8)


def test_a_mutated_result_keeps_its_fdata() -> None:
    """``z = np.exp(x); z *= 2.0``: the in-place rule works on the form's result and fdata."""

    def f(x: Array) -> float:
        z = np.exp(x)
        z *= 2.0
        z += x
        return float(np.sum(z * z))

    x = OPERANDS["matrix"].copy()
    rule = gibbous.build_rrule(f, x)
    _, g = gibbous.value_and_gradient(rule, f, x)
    np.testing.assert_allclose(g[1], central(f, [x], 0), rtol=1e-6, atol=1e-8)


def rosenbrock(x: Array) -> float:
    return float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


def strided(x: Array) -> float:
    head = x[::2]
    return float(np.sum(np.sin(head[1:]) * x[1::2][: head[1:].shape[0]]) + np.sum(x[3:3]))


def through_view(x: Array) -> float:
    y = np.exp(x)
    tail = y[2:]  # a view of a form's result: its fdata is a view of that result's fdata
    tail *= 3.0
    return float(np.sum(y * y))


@pytest.mark.parametrize("f", [rosenbrock, strided, through_view], ids=lambda f: f.__name__)
def test_slices_are_views_of_the_fdata(f: t.Callable[[Array], float]) -> None:
    x = rng.uniform(0.5, 1.5, 9)
    slicing = lookup_rule(DefaultContext, operator.getitem, [T.typeof(x), T.Object(slice)])
    assert slicing.variant == "real_array_slice" and slicing.inline is not None
    kinds = {r.kind for r in rule_table(f, x) if r.callee == "operator.getitem"}
    assert "inline" in kinds and "primitive" not in kinds  # (shape arithmetic: inactive)
    ctx = Context("called", parent=DefaultContext)
    primitive(operator.getitem, *slicing.pattern.args, ctx=ctx)(slicing.rule)
    g1, g2 = both(f, [x.copy()], ctx)
    np.testing.assert_allclose(g1[1], g2[1], rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(g1[1], central(f, [x.copy()], 0), rtol=1e-6, atol=1e-6)


def test_a_literal_square_takes_its_own_form() -> None:
    """``x ** 2`` with a literal 2 resolves to ``real_array_square``; other exponents do not."""

    def f(x: Array) -> float:
        return float(np.sum(x**2 * WEIGHTS[0] + np.power(x, 2) - x**3))

    x = rng.uniform(-1.5, 1.5, 4)
    variants = {re.search(r"\[(\w+)\]", r.detail).group(1)  # type: ignore[union-attr]
                for r in rule_table(f, x) if r.callee in ("operator.pow", "numpy.power")}  # fmt: skip
    assert variants == {"real_array_square", "real_array_binary"}
    _, g = gibbous.value_and_gradient(gibbous.build_rrule(f, x), f, x)
    np.testing.assert_allclose(g[1], central(f, [x], 0), rtol=1e-6, atol=1e-8)


def mutates_operand(x: Array) -> float:
    y = np.sin(x) * x  # array forms that saved x for the reverse
    x *= 2.0  # then x changes in place: the reverse must see it as the forms did
    x[1:] += y[:-1]  # and through a slice of it
    return float(np.sum(y * x))


def test_an_operand_changed_after_its_forms() -> None:
    x0 = rng.uniform(0.5, 1.5, 6)
    x = x0.copy()
    kinds = {r.callee: r.kind for r in rule_table(mutates_operand, x)}
    assert kinds["numpy.sin"] == "inline" and kinds["operator.mul"] == "inline"
    rule = gibbous.build_rrule(mutates_operand, x)
    for _ in range(2):
        x[...] = x0
        y, g = gibbous.value_and_gradient(rule, mutates_operand, x)
        assert y == pytest.approx(mutates_operand(x0.copy()))
        np.testing.assert_array_equal(x, x0)  # the pullback put the argument back
        np.testing.assert_allclose(
            g[1], central(lambda v: mutates_operand(v.copy()), [x0], 0), rtol=1e-6, atol=1e-8
        )
