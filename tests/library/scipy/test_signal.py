"""``scipy.signal``'s convolutions and ``lfilter`` in reverse mode, forward mode and
Hessian-vector products against central differences: every mode, method, boundary and axes,
either operand larger, real and complex operands; the refusals."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

pytest.importorskip("scipy")

import scipy.signal  # noqa: E402

import gibbous  # noqa: E402
from tests.library.programs import check_program  # noqa: E402
from tests.library.transforms.typed import operand, program  # noqa: E402

Shapes = tuple[tuple[int, ...], tuple[int, ...]]


def _check(call: str, shapes: Shapes, complex_: tuple[bool, bool], rng: np.random.Generator) -> None:
    a, start = operand("a", 0, shapes[0], complex_[0])
    v, size = operand("v", start, shapes[1], complex_[1])
    f = program(f"{a}\n{v}\nreturn loss(scipy.signal.{call})", scipy=scipy)
    check_program(f, rng.standard_normal(size))


ND_SHAPES: list[Shapes] = [((6,), (3,)), ((3,), (5,)), ((4, 5), (2, 3)), ((2, 3), (3, 4))]
ND_CASES = [
    (f"{fn}(a, v{mode}{method})", shapes)
    for fn in ("convolve", "correlate")
    for mode in ("", ", 'same'", ", mode='valid'")
    for method in ("", ", method='direct'", ", method='fft'")
    for shapes in ND_SHAPES
]


@pytest.mark.parametrize("call, shapes", ND_CASES)
def test_convolve_and_correlate(call: str, shapes: Shapes, rng: np.random.Generator) -> None:
    _check(call, shapes, (False, False), rng)


@pytest.mark.parametrize(
    "call, shapes, complex_",
    [
        ("convolve(a, v, 'same')", ((4, 3), (2, 2)), (True, False)),
        ("correlate(a, v)", ((5,), (3,)), (True, True)),
        ("correlate(a, v, 'valid', method='fft')", ((3, 4), (2, 2)), (False, True)),
        ("fftconvolve(a, v)", ((7,), (3,)), (False, False)),
        ("fftconvolve(a, v, 'same', axes=1)", ((3, 6), (1, 2)), (False, False)),  # broadcast
        ("fftconvolve(a, v, mode='valid', axes=(0,))", ((5, 3), (2, 3)), (False, True)),
        ("fftconvolve(a, v, 'same')", ((3, 5), (4, 2)), (True, True)),
        ("oaconvolve(a, v)", ((9,), (3,)), (False, False)),
        ("oaconvolve(a, v, 'valid', axes=1)", ((2, 8), (2, 3)), (False, False)),
        ("oaconvolve(a, v, mode='same')", ((4, 6), (3, 2)), (True, False)),
    ],
)
def test_complex_operands_fft_methods_and_axes(
    call: str, shapes: Shapes, complex_: tuple[bool, bool], rng: np.random.Generator
) -> None:
    _check(call, shapes, complex_, rng)


CASES_2D = [
    (f"{fn}(a, v{mode}{boundary})", shapes)
    for fn in ("convolve2d", "correlate2d")
    for mode in ("", ", 'same'", ", 'valid'")
    for boundary in ("", ", boundary='wrap'", ", boundary='symm'", ", 'fill', 0.7" if mode else ", fillvalue=0.7")
    for shapes in (((5, 4), (3, 2)), ((2, 3), (4, 5)))  # (a kernel larger than the input too)
    if not (fn == "correlate2d" and "valid" in mode and shapes[0] == (2, 3))
]


@pytest.mark.parametrize("call, shapes", CASES_2D)
def test_two_dimensional_with_every_boundary(call: str, shapes: Shapes, rng: np.random.Generator) -> None:
    _check(call, shapes, (False, False), rng)


@pytest.mark.parametrize("fn", ["convolve2d", "correlate2d"])
def test_two_dimensional_complex_and_a_differentiable_fill_value(fn: str, rng: np.random.Generator) -> None:
    _check(f"{fn}(a, v, 'same')", ((4, 4), (2, 3)), (True, True), rng)
    f = program(f"return loss(scipy.signal.{fn}(x[:12].reshape(3, 4), K, 'same', fillvalue=x[12]))", scipy=scipy, K=rng.standard_normal((3, 3)))
    check_program(f, rng.standard_normal(13), modes="r")  # (a varied fill value: reverse only)


def test_correlate2d_valid_with_the_larger_second_is_refused() -> None:
    with pytest.raises(NotImplementedError, match="swap the operands"):
        gibbous.grad(lambda a: np.sum(scipy.signal.correlate2d(a, np.ones((3, 4)), "valid")))(np.ones((2, 3)))


B, A = np.array([0.5, -0.2, 0.1]), np.array([1.2, -0.4, 0.3])


@pytest.mark.parametrize(
    "body, size",
    [
        ("scipy.signal.lfilter(B, A, x)", 12),  # the signal
        ("scipy.signal.lfilter(x[:3], A, X)", 3),  # the numerator
        ("scipy.signal.lfilter(B, np.array([1.0, -0.5 * x[0], 0.2 * x[1]]), X)", 2),  # the poles
        ("scipy.signal.lfilter(x[:2], x[2:5] * 0.3 + np.array([1.5, 0.0, 0.0]), x[5:])", 15),  # a[0] too
        ("scipy.signal.lfilter(B, A, x.reshape(3, 4), axis=0)", 12),
        ("scipy.signal.lfilter(B, A, x.reshape(3, 4), 0)", 12),
        ("scipy.signal.lfilter(B, [2.0], x)", 10),  # a FIR filter, coefficients as a list
        ("scipy.signal.lfilter([0.5, 0.25], [1.0, -0.8], x[:6] + 1j * x[6:])", 12),
        ("scipy.signal.lfilter(x[:2] + 1j * x[2:4], A, X)", 4),  # complex coefficients
        ("scipy.signal.lfilter(B, A, X[:, None] * x, axis=0)", 3),
    ],
)
def test_lfilter(body: str, size: int, rng: np.random.Generator) -> None:
    f = program(f"return loss({body})", scipy=scipy, B=B, A=A, X=rng.standard_normal(10))
    check_program(f, rng.standard_normal(size))


@pytest.mark.parametrize(
    "nb, na, shape, axis",
    [(2, 3, (6,), -1), (3, 2, (6,), -1), (4, 2, (2,), -1), (1, 1, (5,), -1), (2, 3, (2, 5), -1),
     (2, 3, (4, 3), 0)],
)  # fmt: skip
def test_lfilter_with_initial_conditions(
    nb: int, na: int, shape: tuple[int, ...], axis: int, rng: np.random.Generator
) -> None:
    """``lfilter(b, a, x, axis, zi)``: the output and the final state, in b, a (a[0] not 1),
    x and zi; fewer samples than delays; no delay at all.  Forward mode refuses ``zi``."""
    from gibbous.ir.exceptions import GibbousError

    k = max(nb, na) - 1
    x = rng.standard_normal(shape)
    zshape = list(shape)
    zshape[axis] = k
    zi = rng.standard_normal(zshape)
    w = rng.standard_normal(shape)
    wz = rng.standard_normal(zshape)
    cut = np.cumsum([nb, na, x.size])

    def f(p: np.ndarray) -> t.Any:
        b, a, xs, z = np.split(p, cut)
        y, zf = scipy.signal.lfilter(b, a, xs.reshape(shape), axis=axis, zi=z.reshape(zshape))
        return np.sum(y * w) + np.sum(zf * wz)

    p = np.concatenate([rng.uniform(0.2, 1.0, nb), [1.5], rng.uniform(-0.3, 0.3, na - 1), x.ravel(), zi.ravel()])
    check_program(f, p, modes="r")
    with pytest.raises(GibbousError):
        check_program(f, p, modes="f")
