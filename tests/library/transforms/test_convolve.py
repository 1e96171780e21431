"""``np.convolve`` and ``np.correlate``: every mode, either operand longer, real and complex
operands, in reverse mode, forward mode and Hessian-vector products against central
differences; the windows against NumPy's own full results."""

from __future__ import annotations

import numpy as np
import pytest

import gibbous
from gibbous.library.transforms.convolve import window
from tests.library.programs import check_program
from tests.library.transforms.typed import operand, program

MODES = ["", ", 'full'", ", mode='same'", ", 'valid'"]
SIZES = [(5, 3), (3, 5), (4, 4), (2, 5), (6, 1), (1, 1)]
# (both real and both complex at every size; one of each at a longer and a shorter ``a``;
# NumPy's number for a mode)
CASES = [
    *((n, m, c, c, mode) for n, m in SIZES for c in (False, True) for mode in MODES),
    *((n, m, ca, not ca, mode) for n, m in SIZES[:2] for ca in (False, True) for mode in MODES),
    (4, 2, True, False, ", 1"),
]


@pytest.mark.parametrize("fn", ["convolve", "correlate"])
@pytest.mark.parametrize("n, m, complex_a, complex_v, mode", CASES)
def test_both_operands_in_every_mode(
    fn: str, mode: str, n: int, m: int, complex_a: bool, complex_v: bool,
    rng: np.random.Generator,
) -> None:  # fmt: skip
    a, start = operand("a", 0, (n,), complex_a)
    v, size = operand("v", start, (m,), complex_v)
    f = program(f"{a}\n{v}\nreturn loss(np.{fn}(a, v{mode}))")
    check_program(f, rng.standard_normal(size))


@pytest.mark.parametrize("fn", [np.convolve, np.correlate])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_windows_are_numpys(fn: object, mode: str, rng: np.random.Generator) -> None:
    for n in range(1, 8):
        for m in range(1, 8):
            a = rng.standard_normal(n) + 1j * rng.standard_normal(n)
            v = rng.standard_normal(m) + 1j * rng.standard_normal(m)
            full = fn(a, v, "full")  # type: ignore[operator]
            start, length = window(fn, n, m, mode)
            np.testing.assert_allclose(fn(a, v, mode), full[start : start + length])  # type: ignore[operator]


def test_one_operand_constant(rng: np.random.Generator) -> None:
    """A filter of constant taps over a signal, as programs use it."""
    taps = rng.standard_normal(4)
    f = program("return np.sum(np.tanh(np.convolve(x, taps, 'same')) ** 2)", taps=taps)
    check_program(f, rng.standard_normal(12))
    g = program("return np.sum(np.correlate(np.sin(x), taps) ** 3)", taps=taps)
    check_program(g, rng.standard_normal(9))


def test_a_zero_dimensional_operand_is_a_vector_of_one() -> None:
    v = np.array([1.0, -2.0, 0.5])
    g = gibbous.grad(lambda s: np.sum(np.convolve(s, v) ** 2))(np.array(1.5))
    assert g.shape == () and g == pytest.approx(2 * 1.5 * np.sum(v**2))
