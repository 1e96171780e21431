"""NumPy ufuncs and operators on arrays, with broadcasting and scalar mixes; clip, where, real,
imag, conj."""

from __future__ import annotations

import operator
import typing as t

import numpy as np
import pytest

from gibbous.library.elementwise.ufuncs import BINARY, UNARY
from tests.library.harness import (
    Tape,
    call,
    check,
    check_call,
    check_like_float64,
    gradient,
)

# Where each unary ufunc is smooth: inputs are drawn in (lo, hi).
DOMAIN: dict[np.ufunc, tuple[float, float]] = {
    np.log: (0.5, 2.0), np.log2: (0.5, 2.0), np.log10: (0.5, 2.0), np.log1p: (-0.5, 1.0),
    np.sqrt: (0.5, 2.0), np.cbrt: (0.5, 2.0), np.reciprocal: (0.5, 2.0),
    np.arcsin: (-0.8, 0.8), np.arccos: (-0.8, 0.8), np.arctanh: (-0.8, 0.8),
    np.arccosh: (1.2, 2.0), np.tan: (-1.0, 1.0),
}  # fmt: skip
COMPLEX_OK = {
    np.negative, np.positive, np.exp, np.expm1, np.log, np.sqrt, np.square, np.reciprocal,
    np.sin, np.cos, np.tan, np.sinh, np.cosh, np.tanh, np.arctan, np.arcsinh, np.absolute,
    np.conjugate, np.log10, np.log2, np.log1p, np.arcsin, np.arccos, np.arccosh, np.arctanh,
}  # fmt: skip
SHAPES = [(), (3,), (2, 3)]


def draw(
    rng: np.random.Generator, shape: tuple[int, ...], lo: float, hi: float, dtype: t.Any = float
) -> t.Any:
    x = rng.uniform(lo, hi, shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.uniform(0.1, 0.4, shape)
    return np.asarray(x, dtype=dtype)


@pytest.mark.parametrize("ufunc", list(UNARY), ids=lambda u: u.__name__)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_unary_float64(ufunc: np.ufunc, shape: tuple[int, ...], rng: np.random.Generator) -> None:
    lo, hi = DOMAIN.get(ufunc, (-1.5, 1.5))
    x = draw(rng, shape, lo, hi)
    if ufunc in (np.absolute, np.fabs):
        x = np.where(np.abs(x) < 0.1, 0.5, x)
    check_call(ufunc, x, rng=rng)
    check_call(ufunc, float(np.ravel(x)[0]) if shape else float(x), rng=rng)  # a Python float


@pytest.mark.parametrize("ufunc", sorted(COMPLEX_OK, key=str), ids=str)
def test_unary_complex128(ufunc: np.ufunc, rng: np.random.Generator) -> None:
    lo, hi = DOMAIN.get(ufunc, (-1.0, 1.0))
    if ufunc is np.arccosh:
        lo, hi = 1.2, 2.0
    x = draw(rng, (2, 3), lo, hi, np.complex128)
    check_call(ufunc, x, rng=rng)
    check_call(ufunc, complex(x[0, 0]), rng=rng)


@pytest.mark.parametrize("ufunc", list(UNARY), ids=lambda u: u.__name__)
def test_unary_float32_is_float64_rounded(ufunc: np.ufunc, rng: np.random.Generator) -> None:
    lo, hi = DOMAIN.get(ufunc, (-1.5, 1.5))
    x = draw(rng, (4,), max(lo, 0.2) if lo >= 0 else lo, hi, np.float32)
    check_like_float64(call(ufunc), x)


# Shape pairs that broadcast, and scalar mixes (None: a Python float).
PAIRS = [((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((2, 3), None), (None, (2, 3)), ((), (3,)),
         ((4, 1, 3), (2, 1))]  # fmt: skip
POSITIVE_BASE = {np.power, np.float_power, np.divide, np.remainder, np.fmod}


def operands(
    ufunc: t.Any, rng: np.random.Generator, sa: t.Any, sb: t.Any, dtype: t.Any = np.float64
) -> tuple[t.Any, t.Any]:
    lo = 0.5 if ufunc in POSITIVE_BASE else -1.5
    a = draw(rng, sa or (), lo, 1.8, dtype)
    b = draw(rng, sb or (), lo, 1.8, dtype)
    if ufunc in (np.remainder, np.fmod):
        b = b * 0.3
    a = float(a) if sa is None else a
    b = float(b) if sb is None else b
    return a, b


@pytest.mark.parametrize("ufunc", list(BINARY), ids=lambda u: u.__name__)
@pytest.mark.parametrize("sa, sb", PAIRS, ids=str)
def test_binary_float64(ufunc: np.ufunc, sa: t.Any, sb: t.Any, rng: np.random.Generator) -> None:
    a, b = operands(ufunc, rng, sa, sb)
    check_call(ufunc, a, b, rng=rng)


@pytest.mark.parametrize("ufunc", [np.add, np.subtract, np.multiply, np.divide, np.power], ids=str)
@pytest.mark.parametrize("sa, sb", [((3,), (3,)), ((2, 3), (3,)), ((2, 3), None)], ids=str)
def test_binary_complex128(ufunc: np.ufunc, sa: t.Any, sb: t.Any, rng: np.random.Generator) -> None:
    a = draw(rng, sa, 0.5, 1.5, np.complex128)
    b = draw(rng, sb or (), 0.5, 1.5, np.complex128)
    check_call(ufunc, a, complex(b) if sb is None else b, rng=rng)
    check_call(ufunc, a, float(np.real(b).ravel()[0]), rng=rng)  # a real operand
    check_call(ufunc, np.real(a).copy(), b if sb else complex(b), rng=rng)


@pytest.mark.parametrize("ufunc", list(BINARY), ids=lambda u: u.__name__)
def test_binary_float32(ufunc: np.ufunc, rng: np.random.Generator) -> None:
    a, b = operands(ufunc, rng, (2, 3), (3,), np.float32)
    check_like_float64(call(ufunc), a, b)


def test_int_arrays_get_no_gradient(rng: np.random.Generator) -> None:
    i = np.arange(1, 4)
    out = check_call(np.multiply, i, np.linspace(0.5, 1.5, 3), rng=rng)
    assert out.grads[0].__class__.__name__ == "NoTangent"


OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.mod]


@pytest.mark.parametrize("op", OPERATORS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "sa, sb", [((3,), (3,)), ((2, 3), (3,)), ((2, 3), None), (None, (2, 3))], ids=str
)
def test_operators_on_arrays(op: t.Any, sa: t.Any, sb: t.Any, rng: np.random.Generator) -> None:
    ufunc = {operator.pow: np.power, operator.mod: np.remainder}.get(op, np.divide)
    a, b = operands(ufunc, rng, sa, sb)
    check_call(op, a, b, rng=rng)


@pytest.mark.parametrize("op", [operator.neg, operator.pos, operator.abs, abs], ids=str)
def test_unary_operators_on_arrays(op: t.Any, rng: np.random.Generator) -> None:
    check_call(op, rng.uniform(0.3, 1.0, (2, 3)) * np.array([1, -1, 1]), rng=rng)


@pytest.mark.parametrize("op", [operator.iadd, operator.isub, operator.imul, operator.itruediv])
def test_in_place_operator_with_a_scalar_target_rebinds(
    op: t.Any, rng: np.random.Generator
) -> None:
    x = rng.uniform(0.5, 1.5, 3)
    out = check_call(op, 1.5, x, rng=rng)
    assert type(out.rdata[0]) is float


def test_square_via_pow_and_the_same_array_twice(rng: np.random.Generator) -> None:
    x = rng.standard_normal((2, 3))
    (g,) = gradient(call(operator.pow, 2), x, seed=1.0)
    np.testing.assert_allclose(g, 2 * x)
    (g,) = gradient(lambda tape, x: tape.call(operator.mul, x, x), x)
    np.testing.assert_allclose(g, 2 * x)


def test_power_of_negative_bases_with_integer_exponents() -> None:
    x = np.array([-2.0, -0.5, 0.0, 1.5])
    (g,) = gradient(call(np.power, 3), x)
    np.testing.assert_allclose(g, 3 * x**2)
    dx, dy = gradient(call(np.power), x, np.full(4, 2.0))
    assert np.all(np.isfinite(dx)) and np.all(np.isfinite(dy))
    log_abs = np.log(np.abs(np.where(x == 0, 1, x)))
    np.testing.assert_allclose(dy, np.where(x == 0, 0, x**2 * log_abs))
    dx, dy = gradient(call(np.power), x, np.zeros(4))  # x**0 = 1: no gradient, no nan at 0
    np.testing.assert_array_equal(dx, 0)


def test_maximum_minimum_split_ties_evenly() -> None:
    a, b = np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 4.0])
    ga, gb = gradient(call(np.maximum), a, b)
    np.testing.assert_array_equal(ga, [0.5, 1.0, 0.0])
    np.testing.assert_array_equal(gb, [0.5, 0.0, 1.0])
    ga, gb = gradient(call(np.minimum), a, b)
    np.testing.assert_array_equal(ga, [0.5, 0.0, 1.0])


@pytest.mark.parametrize("ufunc", [np.sign, np.floor, np.ceil, np.floor_divide, np.greater])
def test_zero_derivative_ufuncs(ufunc: np.ufunc, rng: np.random.Generator) -> None:
    x = rng.standard_normal(3)
    args = (x,) if ufunc.nin == 1 else (x, np.full(3, 0.7))
    grads = gradient(call(ufunc), *args)
    assert all(not np.any(g) for g in grads)


@pytest.mark.parametrize(
    "bounds",
    [(-0.5, 0.5), (None, 0.3), (-0.3, None)],
    ids=str,
)
def test_clip(bounds: tuple[t.Any, t.Any], rng: np.random.Generator) -> None:
    x = rng.uniform(-1, 1, (2, 5))
    x = np.where(np.abs(np.abs(x) - 0.4) < 0.06, 0.0, x)  # away from the bounds
    lo, hi = bounds
    check(call(np.clip, lo, hi), x, rng=rng)
    if lo is not None and hi is not None:
        check_call(np.clip, x, lo, hi, rng=rng)  # bounds with gradients
        check_call(np.clip, x, np.full(5, lo), hi, rng=rng)  # an array bound
        check(lambda tape, x: tape.call(np.ndarray.clip, x, lo, max=hi), x, rng=rng)


def test_clip_of_a_scalar(rng: np.random.Generator) -> None:
    check_call(np.clip, 0.3, -0.5, 0.5, rng=rng)


def test_where(rng: np.random.Generator) -> None:
    cond = np.array([[True, False, True]])
    check(lambda tape, x, y: tape.call(np.where, tape.const(cond), x, y),
          rng.standard_normal((2, 3)), rng.standard_normal(3), rng=rng)  # fmt: skip
    check(lambda tape, x: tape.call(np.where, tape.const(cond), x, tape.const(0.0)),
          rng.standard_normal((2, 3)), rng=rng)  # fmt: skip
    check(lambda tape, x: tape.call(np.where, tape.const(cond), tape.const(1.0), x), 0.5, rng=rng)


def test_real_imag_of_complex_arrays_are_views(rng: np.random.Generator) -> None:
    z = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    for fn in (np.real, np.imag):
        tape = Tape()
        (x,) = tape.inputs(z)
        y = tape.call(fn, x)
        assert np.shares_memory(y.fdata, x.fdata)
        check_call(fn, z, rng=rng)


def test_real_imag_conj_of_real_arrays_and_scalars(rng: np.random.Generator) -> None:
    x = rng.standard_normal(3)
    tape = Tape()
    (v,) = tape.inputs(x)
    assert tape.call(np.real, v).codual is v.codual  # the array itself
    assert not np.any(gradient(call(np.imag), x)[0])
    for fn in (np.real, np.imag, np.conj):
        check_call(fn, 1.5 - 0.5j, rng=rng)
        check_call(fn, 1.5, rng=rng)
    check_call(np.conj, rng.standard_normal(3) + 1j, rng=rng)
    check_call(np.ndarray.conj, rng.standard_normal(3) + 1j, rng=rng)
    check_call(complex.conjugate, 1.5 - 0.5j, rng=rng)


def test_conj_of_a_real_array_is_the_array_itself(rng: np.random.Generator) -> None:
    x = rng.standard_normal(3)
    tape = Tape()
    (v,) = tape.inputs(x)
    for method in (np.ndarray.conj, np.ndarray.conjugate):
        assert tape.call(method, v).codual is v.codual
        check_call(method, x, rng=rng)


def test_clip_of_a_0d_array(rng: np.random.Generator) -> None:
    for value in (0.3, 0.8, -0.9):
        check_call(np.clip, np.array(value), -0.5, 0.5, rng=rng)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=str)
def test_sinc(dtype: t.Any, rng: np.random.Generator) -> None:
    x = draw(rng, (2, 3), -1.5, 1.5, dtype)
    check_call(np.sinc, x, rng=rng)
    check_call(np.sinc, 0.7, rng=rng)
    # Near 0, where (cos(pi x) - sinc(x)) / x cancels: the series, and 0 at 0.
    small = np.array([0.0, 1e-9, -3e-5, 2e-4, 0.3])
    (g,) = gradient(call(np.sinc), small, seed=1.0)
    far = small[3:]
    np.testing.assert_allclose(g[3:], (np.cos(np.pi * far) - np.sinc(far)) / far, rtol=1e-9)
    np.testing.assert_allclose(g[:3], -(np.pi**2) * small[:3] / 3, rtol=1e-6, atol=1e-300)
    check_like_float64(call(np.sinc), np.array([1e-3, -3e-2, 0.3], np.float32))  # no cancellation


def test_angle(rng: np.random.Generator) -> None:
    z = draw(rng, (2, 3), -1.0, 1.0, np.complex128)
    check_call(np.angle, z, rng=rng)
    check(lambda tape, z: tape.call(np.angle, z, deg=tape.const(True)), z, rng=rng)
    check_call(np.angle, -0.5 + 1.5j, rng=rng)
    # Of reals: 0 or pi, a constant.
    (g,) = gradient(call(np.angle), np.array([-1.0, 2.0]), seed=1.0)
    np.testing.assert_array_equal(g, 0)
    # d angle / dz = i / conj(z): for z = 1 + 1j, the gradient is (-1 + 1j) / 2.
    (g,) = gradient(call(np.angle), np.array([1.0 + 1.0j]), seed=1.0)
    np.testing.assert_allclose(g, [(-1 + 1j) / 2])


def test_arccosh_of_complex_numbers_on_numpys_branch(rng: np.random.Generator) -> None:
    # With a negative real part, 1 / sqrt(z^2 - 1) has the wrong sign.
    check_call(np.arccosh, np.array([-1.5 + 0.2j, -0.3 - 0.5j, 0.4 + 0.6j]), rng=rng)
