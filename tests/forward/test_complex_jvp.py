"""Forward mode through complex numbers and arrays: a complex value's tangent is complex (the
real-linear map of the derivative, what a central difference along a complex direction
measures), checked against central differences; real functions with complex intermediates
(``exp(1j * x)``, ``abs(z) ** 2``) also through Hessian-vector products, against finite
differences of gradients."""

from __future__ import annotations

import math
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.forward import ForwardModeError

RNG = np.random.default_rng(41)


def _cplx(*shape: int) -> t.Any:
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _direction(a: t.Any) -> t.Any:
    if isinstance(a, np.ndarray):
        return _cplx(*a.shape) if a.dtype.kind == "c" else RNG.standard_normal(a.shape)
    if isinstance(a, complex):
        return complex(RNG.standard_normal(), RNG.standard_normal())
    return float(RNG.standard_normal())


def _central(f: t.Callable[..., t.Any], args: tuple[t.Any, ...], ds: list[t.Any]) -> t.Any:
    h = 1e-6
    up = f(*(a if d is None else a + h * d for a, d in zip(args, ds)))
    down = f(*(a if d is None else a - h * d for a, d in zip(args, ds)))
    return (np.asarray(up) - np.asarray(down)) / (2 * h)


def holomorphic(z: np.ndarray) -> t.Any:
    return np.sin(z) * z + np.exp(z / 3) - np.sqrt(z + 4) / (1 + z * z)


def logs_and_powers(z: np.ndarray) -> t.Any:
    return np.log(z) + z**3 + np.tanh(z) * np.cosh(z) + np.reciprocal(z) + np.square(z)


def inverse_trig(z: np.ndarray) -> t.Any:
    return np.arcsin(z / 4) + np.arctan(z) * np.arcsinh(z) + np.arccosh(z + 3) + np.log1p(z)


def not_holomorphic(z: np.ndarray) -> t.Any:
    # |z|, conj, real and imaginary parts: real-linear maps a formula's conj cannot give
    return (
        np.abs(z) * z + np.conj(z) ** 2 + z.real * 1j - np.imag(z) + z.conj() * np.real(z)
        + np.sign(z) * 2.0  # (z / |z|: it moves along the circle, NumPy 2)
    )


def mixes_real_and_complex(x: np.ndarray, z: np.ndarray) -> t.Any:
    w = x * z + np.exp(1j * x) / z - x ** (1 + 0.5j)
    return np.sum(w * np.conj(w)).real + np.abs(np.sum(w))


def phases(x: np.ndarray) -> float:
    """A real function of real ``x`` through complex intermediates."""
    e = np.exp(1j * x) * (1 + 2j)
    s = np.sum(e[:-1] * np.conj(e[1:]))
    return float(np.abs(s) ** 2 + np.sum(np.abs(e) ** 2 * x))


def matrix_products(A: np.ndarray, v: np.ndarray) -> t.Any:
    w = A @ v
    M = np.outer(w, np.conj(v)).T
    return np.sum(M[1:, :2] ** 2) + np.vdot(w, v) + np.trace(A @ A.conj().T)


def python_scalars(a: complex, x: float) -> complex:
    b = a * x + 1j
    c = b * np.conj(b) + abs(b) * a
    return c + a / (b + 2) - b**2


def loop(z: np.ndarray, n: int) -> t.Any:
    acc = z
    for k in range(n):
        acc = acc * acc / (1 + np.abs(acc)) + z * k
    return acc.sum()


def writes_in_place(z: np.ndarray) -> t.Any:
    # (a complex write's tangent reads the operands before the write: ``w *= z`` reads ``w``)
    w = z.copy()
    w += z * (2 + 1j)
    w *= z
    np.multiply(w, z, out=w)
    w /= z + 3
    np.exp(w * 0.1, out=w)
    w[0] = z[1] * z[0]
    return w


def into_a_real_array(z: np.ndarray, x: np.ndarray) -> t.Any:
    r = np.empty(z.shape)
    np.abs(z, out=r)  # (a real result of complex operands, written: its real part)
    w = z * 1.0
    np.multiply(x, z, out=w)  # (a real operand into a complex array)
    w *= x
    return r * x + w


def angles(z: np.ndarray, x: np.ndarray) -> t.Any:
    return np.angle(z * x) + np.angle(z, deg=True) + np.angle(x) * x


def linear_algebra(A: np.ndarray, b: np.ndarray) -> t.Any:
    # (holomorphic matrix functions: their real formulas hold for complex operands)
    x = np.linalg.solve(A, b)
    return np.linalg.det(A) * np.sum(np.linalg.inv(A) @ x) + np.abs(x) @ np.abs(x)


CASES: list[tuple[t.Callable[..., t.Any], tuple[t.Any, ...]]] = [
    (linear_algebra, (_cplx(3, 3) + 3 * np.eye(3), _cplx(3))),
    (writes_in_place, (_cplx(2, 2),)),
    (angles, (_cplx(3), RNG.standard_normal(3))),
    (into_a_real_array, (_cplx(3), RNG.standard_normal(3))),
    (holomorphic, (_cplx(4),)),
    (logs_and_powers, (_cplx(3) + 2,)),
    (inverse_trig, (_cplx(2, 3) * 0.5,)),
    (not_holomorphic, (_cplx(5),)),
    (mixes_real_and_complex, (RNG.uniform(0.5, 2, 4), _cplx(4) + 3)),
    (phases, (RNG.standard_normal(6),)),
    (matrix_products, (_cplx(3, 3), _cplx(3))),
    (python_scalars, (complex(0.3, -0.7), 1.3)),
    (loop, (_cplx(3) * 0.3, 3)),
]


@pytest.mark.parametrize("f, args", CASES, ids=[f.__name__ for f, _ in CASES])
def test_jvp_of_complex_values_matches_central_differences(
    f: t.Callable[..., t.Any], args: tuple[t.Any, ...]
) -> None:
    rule = gibbous.build_frule(f, *args)
    varied = [not isinstance(a, int) for a in args]
    before = [np.copy(a) for a in args]
    for _ in range(2):
        ds = [_direction(a) if v else None for a, v in zip(args, varied)]
        kept = [None if d is None else np.copy(d) for d in ds]
        y, dy = gibbous.jvp(rule, f, args, tuple(ds))
        assert all(np.array_equal(a, b) for a, b in zip(args, before))  # (arguments unchanged)
        assert all(d is None or np.array_equal(d, k) for d, k in zip(ds, kept))
        assert np.allclose(y, f(*args), rtol=1e-12, atol=1e-12)
        expected = _central(f, args, ds)
        assert np.allclose(dy, expected, rtol=1e-6, atol=1e-7), (dy, expected)


def test_a_real_argument_of_a_complex_function_takes_a_real_tangent() -> None:
    x = RNG.uniform(0.5, 2, 4)
    z = _cplx(4) + 3
    rule = gibbous.build_frule(mixes_real_and_complex, x, z)
    with pytest.raises(TypeError, match="must be a real array"):
        gibbous.jvp(rule, mixes_real_and_complex, (x, z), (_cplx(4), None))
    # a complex argument takes a real tangent (its imaginary part 0)
    dz = RNG.standard_normal(4)
    _, d = gibbous.jvp(rule, mixes_real_and_complex, (x, z), (None, dz))
    expected = _central(lambda zz: mixes_real_and_complex(x, zz), (z,), [dz])
    assert np.allclose(d, expected, rtol=1e-6)


REAL_THROUGH_COMPLEX: list[tuple[t.Callable[..., t.Any], tuple[t.Any, ...]]] = [
    (phases, (RNG.standard_normal(6),)),
]


def _fd_hvp(f: t.Callable[..., t.Any], x: np.ndarray, v: np.ndarray) -> t.Any:
    def gradient(p: np.ndarray) -> t.Any:
        rule = gibbous.build_rrule(f, p)
        return gibbous.value_and_gradient(rule, f, p)[1][1]

    h = 1e-5
    return (gradient(x + h * v) - gradient(x - h * v)) / (2 * h)


def signs(x: np.ndarray) -> float:
    z = x[:-1] + 1j * x[1:] * x[0]
    return float(np.sum(np.real(np.sign(z) * (1 + 2j))) + np.imag(np.sign(z[0] * 1.5)))


@pytest.mark.skipif(np.sign(1j) != 1j, reason="NumPy 1: the sign of the real part")
def test_the_sign_of_complex_values_in_both_modes() -> None:
    """``np.sign(z) = z / |z|``: its gradient (reverse) and tangent (forward, and the two
    composed) against central differences; never the zero of a real sign."""
    x = RNG.standard_normal(5)
    rule = gibbous.build_rrule(signs, x)
    g = gibbous.value_and_gradient(rule, signs, x)[1][1]
    h = 1e-6
    fd = np.array([(signs(x + h * e) - signs(x - h * e)) / (2 * h) for e in np.eye(5)])
    assert np.allclose(g, fd, rtol=1e-6, atol=1e-8) and np.abs(g).max() > 0.1
    v = RNG.standard_normal(5)
    assert np.allclose(gibbous.hvp(signs, x, v), _fd_hvp(signs, x, v), rtol=1e-5, atol=1e-6)


def spectrum_energy(x: np.ndarray) -> float:
    z = x[:-1] + 1j * x[1:]
    w = z * np.exp(-0.5j * x[:-1]) + np.conj(z) ** 2
    return float(np.sum(np.abs(w) ** 2) + np.real(np.sum(w)) * math.pi)


@pytest.mark.parametrize("f", [phases, spectrum_energy], ids=["phases", "spectrum_energy"])
def test_hvp_of_a_real_function_through_complex_intermediates(f: t.Callable[..., t.Any]) -> None:
    x = RNG.standard_normal(6)
    v = RNG.standard_normal(6)
    hv = gibbous.hvp(f, x, v)
    assert np.allclose(hv, _fd_hvp(f, x, v), rtol=1e-5, atol=1e-6)
    H = gibbous.hessian(f, x)
    assert np.allclose(H @ v, hv, rtol=1e-8, atol=1e-8)


def test_complex_values_of_unknown_type_are_refused_at_run_time() -> None:
    def through_a_list(x: np.ndarray) -> t.Any:
        items = [x * 1j, x]  # (a list of arrays of two dtypes: its items' type is unknown)
        return np.sum(np.sin(items[0]) * items[1]).real

    x = RNG.standard_normal(3)
    try:
        rule = gibbous.build_frule(through_a_list, x)
        _, d = gibbous.jvp(rule, through_a_list, (x,), (np.ones(3),))
    except ForwardModeError as e:
        assert "complex" in str(e)
    else:  # (followed: then it is right)
        expected = _central(through_a_list, (x,), [np.ones(3)])
        assert np.allclose(d, expected, rtol=1e-6)
