"""Operators, math functions and numeric builtins on scalars."""

from __future__ import annotations

import builtins
import math
import operator
import typing as t

import numpy as np
import pytest

from gibbous import testing
from gibbous.ir import types as T
from gibbous.library.elementwise import tables
from gibbous.rules.registry import DefaultContext, is_primitive
from gibbous.tangents.model import CoDual, NoTangent
from tests.library.harness import (
    Tape,
    call,
    check,
    check_call,
    check_like_float64,
    gradient,
    run,
)

NT = NoTangent()

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.mod, operator.pow]
IN_PLACE = [operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ipow]


@pytest.mark.parametrize("op", BINARY + IN_PLACE, ids=lambda f: f.__name__)
@pytest.mark.parametrize("a, b", [(1.7, 0.6), (2.5, -1.3), (0.8, 3.0)])
def test_binary_operators_on_floats(
    op: t.Any, a: float, b: float, rng: np.random.Generator
) -> None:
    if op in (operator.pow, operator.ipow) and a < 0:
        pytest.skip("complex result")
    out = check_call(op, a, b, rng=rng)
    assert all(type(r) is float for r in out.rdata)


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
def test_float_and_int_operands(op: t.Any, rng: np.random.Generator) -> None:
    out = check(call(op, 3), 1.25, rng=rng)  # x op 3: 3 is a constant int
    assert type(out.rdata[0]) is float
    out = check(lambda tape, x: tape.call(op, tape.const(2), x), 1.25, rng=rng)
    out = check_call(op, 5, 1.5, rng=rng)
    assert out.rdata[0] is NT and type(out.rdata[1]) is float


@pytest.mark.parametrize(
    "op", [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]
)
def test_complex_operands(op: t.Any, rng: np.random.Generator) -> None:
    out = check_call(op, 1.2 + 0.7j, 0.4 - 1.1j, rng=rng)
    assert all(type(r) is complex for r in out.rdata)
    out = check_call(op, 1.5, 0.4 - 1.1j, rng=rng)  # a real operand of a complex result
    assert type(out.rdata[0]) is float and type(out.rdata[1]) is complex


@pytest.mark.parametrize("op", [operator.add, operator.mul, operator.truediv, operator.pow])
def test_numpy_scalars_keep_their_class(op: t.Any, rng: np.random.Generator) -> None:
    out = check_call(op, np.float64(1.5), np.float64(0.75), rng=rng)
    assert all(type(r) is np.float64 for r in out.rdata)
    check_like_float64(call(op), np.float32(1.5), np.float32(0.75))


def test_ints_and_bools_have_no_gradient(rng: np.random.Generator) -> None:
    for op in BINARY:
        out, _, _ = run(call(op), [7, 3], rng)
        assert out.rdata == [NT, NT]
    out, _, _ = run(call(operator.add), [True, 2.5], rng)
    assert out.rdata[0] is NT and type(out.rdata[1]) is float


def test_power_of_a_negative_base_with_an_integer_exponent(rng: np.random.Generator) -> None:
    # Real-valued only at integer exponents: a finite gradient there, for the base and (as
    # d/dy of the real part) the exponent.
    check(call(operator.pow, 3), -1.5, rng=rng)
    assert gradient(call(operator.pow, 3), -1.5) == [pytest.approx(3 * 1.5**2)]
    dx, dy = gradient(call(operator.pow), -1.5, 2.0)
    assert dx == pytest.approx(-3.0) and dy == pytest.approx(1.5**2 * math.log(1.5))


def test_power_at_zero(rng: np.random.Generator) -> None:
    for exponent, expect in [(2.0, 0.0), (1.0, 1.0), (0.0, 0.0), (3, 0.0)]:
        tape = Tape()
        x, y = tape.inputs(0.0, exponent)
        z = tape.call(operator.pow, x, y)
        z.rdata = 1.0
        tape.backward()
        assert x.rdata == expect and (y.rdata == 0.0 or y.rdata is NT)
        assert not math.isnan(x.rdata)


def test_power_of_a_negative_base_with_a_fractional_exponent_is_complex() -> None:
    # Python gives a complex result; the gradient is that of the complex power.
    tape = Tape()
    x, y = tape.inputs(-2.0, 0.5)
    z = tape.call(operator.pow, x, y)
    assert isinstance(z.primal, complex)
    z.rdata = 1.0 + 0j
    tape.backward()
    assert type(x.rdata) is float and math.isfinite(x.rdata)


def test_mod_gradient(rng: np.random.Generator) -> None:
    check_call(operator.mod, 7.3, 2.1, rng=rng)
    assert gradient(call(operator.mod), 7.3, 2.1) == [1.0, -math.floor(7.3 / 2.1)]


def test_floordiv_has_no_derivative(rng: np.random.Generator) -> None:
    assert gradient(call(operator.floordiv), 7.5, 2.0) == [0.0, 0.0]


@pytest.mark.parametrize("op", [operator.neg, operator.pos, operator.abs, abs])
@pytest.mark.parametrize("x", [1.3, -0.7, 1.5 - 2j])
def test_unary_operators(op: t.Any, x: t.Any, rng: np.random.Generator) -> None:
    out = check_call(op, x, rng=rng)
    assert type(out.rdata[0]) is type(x)


MATH_CASES = [
    (math.sin, 0.7), (math.cos, 0.7), (math.tan, 0.7), (math.exp, 0.7), (math.log, 1.7),
    (math.log1p, 0.7), (math.expm1, 0.7), (math.sqrt, 1.7), (math.tanh, 0.7), (math.sinh, 0.7),
    (math.cosh, 0.7), (math.atan, 0.7), (math.asin, 0.3), (math.acos, 0.3), (math.fabs, -0.7),
    (math.erf, 0.7), (math.erfc, 0.7), (math.log2, 1.7), (math.log10, 1.7), (math.exp2, 0.7),
    (math.cbrt, 1.7), (math.asinh, 0.7), (math.acosh, 1.7), (math.atanh, 0.3),
    (math.degrees, 0.7), (math.radians, 0.7),
]  # fmt: skip


@pytest.mark.parametrize("fn, x", MATH_CASES, ids=[f.__name__ for f, _ in MATH_CASES])
def test_math_unary(fn: t.Any, x: float, rng: np.random.Generator) -> None:
    out = check_call(fn, x, rng=rng)
    assert type(out.rdata[0]) is float
    out = check_call(fn, np.float64(x), rng=rng)
    assert type(out.rdata[0]) is np.float64


@pytest.mark.parametrize(
    "fn, a, b",
    [(math.atan2, 0.7, -1.3), (math.hypot, 0.7, -1.3), (math.pow, 1.7, 0.6), (math.log, 5.0, 2.5),
     (math.fmod, 7.3, 2.1)],
)  # fmt: skip
def test_math_binary(fn: t.Any, a: float, b: float, rng: np.random.Generator) -> None:
    check_call(fn, a, b, rng=rng)


def test_math_hypot_of_many_and_at_the_origin(rng: np.random.Generator) -> None:
    check_call(math.hypot, 0.7, -1.3, 2.0, rng=rng)
    out, _, _ = run(call(math.hypot), [0.0, 0.0], rng)
    assert out.rdata == [0.0, 0.0]


def test_math_at_singular_points_gives_inf_not_an_error(rng: np.random.Generator) -> None:
    out, _, _ = run(call(math.sqrt), [0.0], rng)
    assert math.isinf(out.rdata[0])


@pytest.mark.parametrize("fn", [math.floor, math.ceil, math.trunc])
def test_math_rounding_has_no_derivative(fn: t.Any, rng: np.random.Generator) -> None:
    assert gradient(call(fn), 2.7) == [0.0]


def test_builtins_float_int_round_complex(rng: np.random.Generator) -> None:
    (g,) = gradient(call(float), np.float32(1.5))
    assert type(g) is np.float32 and g == 1
    check_call(float, np.array(2.5), rng=rng)  # a 0-d array
    assert gradient(call(int), 2.5) == [0.0]
    assert gradient(call(round, 2), 2.567) == [0.0]
    out = check_call(complex, 1.5, -0.5, rng=rng)
    assert type(out.rdata[0]) is float and type(out.rdata[1]) is float
    check_call(complex, 1.5, rng=rng)
    check_call(builtins.pow, 1.5, 2.5, rng=rng)


@pytest.mark.parametrize("fn", [min, max])
def test_min_max_of_scalars(fn: t.Any, rng: np.random.Generator) -> None:
    check_call(fn, 1.5, -0.5, rng=rng)
    check_call(fn, 1.5, -0.5, 3.0, 0.25, rng=rng)
    check_call(fn, 2, 0.5, rng=rng)


@pytest.mark.parametrize("fn", [min, max])
def test_min_max_ties_go_to_the_first(fn: t.Any, rng: np.random.Generator) -> None:
    tape = Tape()
    a, b, c = tape.inputs(1.5, 1.5, 1.5)
    y = tape.call(fn, a, b, c)
    y.rdata = 1.0
    tape.backward()
    assert (a.rdata, b.rdata, c.rdata) == (1.0, 0.0, 0.0)


def test_scalar_in_place_operators_are_the_plain_operators(rng: np.random.Generator) -> None:
    for op in IN_PLACE:
        assert is_primitive(DefaultContext, op, [T.FLOAT, T.FLOAT])
    tape = Tape()
    (x,) = tape.inputs(2.0)
    y = tape.call(operator.iadd, x, tape.const(1.0))
    assert y.primal == 3.0 and x.primal == 2.0


def test_a_pullback_given_no_cotangent_returns_zeros() -> None:
    from gibbous.rules.registry import build_primitive_rrule

    rule = build_primitive_rrule(DefaultContext, operator.mul, [T.FLOAT, T.FLOAT])
    _, pullback = rule(CoDual(operator.mul, NT), CoDual(2.0, NT), CoDual(3.0, NT))
    assert pullback(NT) == (NT, 0.0, 0.0)


EULER_GAMMA = 0.5772156649015329


@pytest.mark.parametrize(
    "x, psi",
    [
        (1.0, -EULER_GAMMA),
        (0.5, -EULER_GAMMA - 2 * math.log(2)),
        (4.0, 1 + 1 / 2 + 1 / 3 - EULER_GAMMA),  # H_3 - gamma
        (0.25, -EULER_GAMMA - math.pi / 2 - 3 * math.log(2)),
        (-0.5, 2 - EULER_GAMMA - 2 * math.log(2)),  # reflection: psi(1/2) + 2
        (1e6, math.log(1e6) - 0.5e-6 - 1 / 12e12),
    ],
)
def test_digamma(x: float, psi: float) -> None:
    assert tables.digamma(x) == pytest.approx(psi, rel=1e-14, abs=1e-14)


def test_digamma_at_a_pole() -> None:
    with pytest.raises(ValueError):
        tables.digamma(-2.0)


@pytest.mark.parametrize(
    "fn, args",
    [(math.gamma, (2.3,)), (math.gamma, (-1.6,)), (math.lgamma, (0.3,)), (math.lgamma, (-2.6,)),
     (math.copysign, (1.3, -0.5)), (math.copysign, (-1.3, 0.5)), (math.remainder, (7.9, 2.1)),
     (math.remainder, (-7.9, 2.1)), (math.ldexp, (1.3, 3)), (math.ldexp, (1.3, -2))],
)  # fmt: skip
def test_math_gamma_copysign_remainder_ldexp(
    fn: t.Any, args: tuple[t.Any, ...], rng: np.random.Generator
) -> None:
    out = check_call(fn, *args, rng=rng)
    assert type(out.rdata[0]) is float
    out = check_call(fn, *(np.float64(a) if type(a) is float else a for a in args), rng=rng)
    assert type(out.rdata[0]) is np.float64


def test_copysign_sends_nothing_to_the_sign() -> None:
    assert gradient(call(math.copysign), -1.3, 0.5) == [-1.0, 0.0]
    assert gradient(call(math.copysign), 1.3, -0.0) == [-1.0, 0.0]  # the sign of -0.0


def test_isclose_has_no_derivative() -> None:
    assert gradient(call(math.isclose), 0.7, 0.70000001) == [0.0, 0.0]


@pytest.mark.parametrize(
    "op, args",
    [(operator.abs, (0.6 - 0.3j,)), (operator.pow, (1.3 + 0.4j, 0.6 - 0.2j)),
     (operator.pow, (1.5, 0.4 - 1.1j)), (operator.pow, (np.float32(1.7), np.float32(0.6))),
     (math.hypot, (np.float32(0.3), np.float32(0.4))), (float, (np.array(0.7),))],
)  # fmt: skip
def test_scalar_rules_allocate_no_numpy_memory(op: t.Any, args: tuple[t.Any, ...]) -> None:
    # These went through NumPy helpers (iscomplexobj, where) that make arrays of scalars.
    report = testing.test_rule(op, *args, perf="allocs")
    assert report.allocations["primal"].allocated == 0
    assert report.allocations["rule"].allocated == 0


@pytest.mark.parametrize("fn", [math.frexp, math.modf])
@pytest.mark.parametrize("x", [0.7, -5.3, np.float64(12.25)])
def test_math_frexp_modf(fn: t.Any, x: float) -> None:
    testing.test_rule(fn, x)
    m, _ = fn(x)
    slope = m / x if fn is math.frexp else 1.0
    (g,) = gradient(lambda tape, v: tape.call(operator.getitem, tape.call(fn, v), 0), x)
    assert g == pytest.approx(slope)


def test_math_nextafter_moves_with_x_only() -> None:
    assert gradient(call(math.nextafter), 0.7, 2.0) == [1.0, 0.0]


@pytest.mark.parametrize(
    "method, args, during",
    [
        (set.add, (3,), {1.0, 2, 3}),
        (set.add, (2,), {1.0, 2}),
        (set.discard, (1,), {2}),
        (set.discard, (5,), {1.0, 2}),
        (set.remove, (1,), {2}),
        (set.update, ([2, 3], (4,)), {1.0, 2, 3, 4}),
    ],
)
def test_set_methods_undo_their_change_in_the_pullback(
    method: t.Any, args: tuple[t.Any, ...], during: set[t.Any]
) -> None:
    from gibbous.rules.registry import build_primitive_rrule

    s = {1.0, 2}
    types = [T.typeof(v) for v in (s, *args)]
    rule = build_primitive_rrule(DefaultContext, method, types)
    _, pullback = rule(CoDual(method, NT), CoDual(s, NT), *(CoDual(a, NT) for a in args))
    assert s == during
    pullback(NT)
    assert s == {1.0, 2} and any(type(v) is float for v in s)  # 1.0 itself, not 1


def test_numpy_scalar_astype_and_empty_index() -> None:
    """``x.astype(dtype)`` and ``x[()]`` of a NumPy scalar (SciPy's array API on a float64
    result: ``xp.astype(res, dtype)``, ``res[()] if res.ndim == 0``)."""
    from tests.library.programs import check_program

    def f(x: np.ndarray) -> t.Any:
        s = np.sum(x * x)
        return s.astype(np.float64, copy=True) * np.sum(x) + np.sum(x)[()] ** 2

    check_program(f, np.array([0.3, 0.7]), modes="r")
