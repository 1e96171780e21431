"""``np.pad``: every mode and option in reverse mode, forward mode and Hessian-vector products
against central differences (wide pads that reflect or wrap more than once, corners padded by
two axes, complex arrays, differentiable fill values); the coefficients' structure; refusals."""

from __future__ import annotations

import numpy as np
import pytest

import gibbous
from gibbous.library.transforms.pad import Padding, coefficients
from tests.library.programs import check_program
from tests.library.transforms.typed import operand, program

# (the call, of ``z``; z's shape; whether z is complex)
CASES: list[tuple[str, tuple[int, ...], bool]] = [
    ("pad(z, 2)", (5,), False),
    ("pad(z, ((1, 2), (0, 3)), constant_values=0.5)", (3, 4), False),
    ("pad(z, (2, 1), 'constant', constant_values=((1.0, 2.0), (3.0, 4.0)))", (3, 2), True),
    ("pad(z, 2, mode='edge')", (3, 4), False),
    ("pad(z, {1: (2, 1)}, mode='edge')", (3, 4), False),
    ("pad(z, (3, 1), 'reflect')", (4, 3), True),
    ("pad(z, 7, mode='reflect')", (3,), False),  # wider than the axis: reflected again
    ("pad(z, (2, 5), mode='reflect', reflect_type='odd')", (4,), False),
    ("pad(z, 3, mode='reflect')", (1, 3), False),  # a single entry: NumPy repeats it
    ("pad(z, ((2, 3), (1, 1)), mode='symmetric')", (3, 4), False),
    ("pad(z, 9, mode='symmetric', reflect_type='odd')", (3, 2), False),
    ("pad(z, (4, 9), mode='wrap')", (3,), True),
    ("pad(z, 2, 'wrap')", (2, 3), False),
    ("pad(z, 3, mode='linear_ramp')", (3, 4), False),
    ("pad(z, (2, 3), mode='linear_ramp', end_values=((1.0, -2.0), (0.5, 3.0)))", (3, 4), True),
    ("pad(z, 2, mode='mean')", (3, 4), False),
    ("pad(z, (2, 3), mode='mean', stat_length=2)", (5, 4), True),
    ("pad(z, 2, mode='maximum')", (3, 4), False),
    ("pad(z, (1, 2), mode='minimum', stat_length=((2, 3), (1, 2)))", (4, 5), False),
    ("pad(z, 2, mode='median')", (3, 4), False),  # an odd window: its middle entry
    ("pad(z, (3, 2), mode='median', stat_length=(2, 3))", (5, 6), False),  # even and odd
    ("pad(z, 1, mode='maximum', stat_length=7)", (2, 3, 4), False),  # longer than the axes
    ("pad(z, (2, 3), mode='maximum')", (5,), False),
    ("pad(z, (1, 2), mode='median', stat_length=(4, 3))", (6,), False),
]


@pytest.mark.parametrize("call, shape, complex_", CASES, ids=[c[0] for c in CASES])
def test_mode_in_every_mode(
    call: str, shape: tuple[int, ...], complex_: bool, rng: np.random.Generator
) -> None:
    source, size = operand("z", 0, shape, complex_)
    check_program(program(f"{source}\nreturn loss(np.{call})"), rng.standard_normal(size))


def test_empty_has_no_derivative_outside_the_array(rng: np.random.Generator) -> None:
    """"empty" leaves the pad areas undefined: a loss of the interior is differentiated."""
    check_program(program("return loss(np.pad(x, 2, mode='empty')[2:-2] * 1.0)"), rng.standard_normal(5))
    g = gibbous.grad(lambda x: np.sum(np.nan_to_num(np.pad(x, 2, mode="empty"))[2:-2]))(np.ones(3))
    np.testing.assert_array_equal(g, np.ones(3))


@pytest.mark.parametrize(
    "body",
    [
        "np.pad(x[:6].reshape(2, 3), ((1, 2), (2, 1)), constant_values=x[6])",
        "np.pad(x[:6].reshape(2, 3), 2, constant_values=(x[6], x[7]))",
        "np.pad(x[:6].reshape(2, 3), 2, constant_values=x[6:10].reshape(2, 2))",
        "np.pad(x[:6].reshape(2, 3), (2, 3), mode='linear_ramp', end_values=x[6:10].reshape(2, 2))",
        "np.pad(x[:6].reshape(2, 3), (2, 3), mode='linear_ramp', end_values=x[7])",
        "np.pad(np.ones((2, 3)), 1, constant_values=x[0])",  # the fill value alone varies
    ],
)
def test_fill_values_are_differentiable(body: str, rng: np.random.Generator) -> None:
    """Where corners are padded by two axes, the value of the later axis fills them."""
    check_program(program(f"return loss({body})"), rng.standard_normal(10))


def test_a_filter_over_a_padded_signal(rng: np.random.Generator) -> None:
    """Reflect-pad, then a valid convolution: the usual way to keep a signal's length."""
    taps = rng.standard_normal(5)
    f = program("return np.sum(np.tanh(np.convolve(np.pad(x, 2, mode='reflect'), taps, 'valid')) ** 2)", taps=taps)
    check_program(f, rng.standard_normal(20))


def test_coefficients_are_gathers_where_entries_are_copied() -> None:
    reflect = coefficients(10, 3, 2, "reflect", None)
    assert reflect.gather is not None
    np.testing.assert_array_equal(reflect.gather[2], [1, 2, 3, 7, 8])  # the sources, once each
    assert coefficients(10, 3, 2, "reflect", "odd").gather is None  # 2 x[0] - x[k]: products
    ramp = coefficients(10, 3, 2, "linear_ramp", None)
    np.testing.assert_array_equal(ramp.support, [0, 9])  # only the ends reach the ramps
    np.testing.assert_allclose(ramp.fill_left, [1, 2 / 3, 1 / 3])
    assert coefficients(10, 3, 2, "constant", None).support.size == 0
    with pytest.raises(ValueError):
        coefficients(10, 3, 2, "edge", None).left[...] = 0  # (shared between calls)


def test_the_result_cotangent_is_left_as_it_is(rng: np.random.Generator) -> None:
    x = rng.standard_normal((3, 4))
    g = rng.standard_normal((7, 8))
    before = g.copy()
    Padding.of(x, {"pad_width": 2, "mode": "reflect"}).back(g)
    np.testing.assert_array_equal(g, before)


def test_single_precision_keeps_its_dtype() -> None:
    x = np.linspace(0.1, 1.0, 6, dtype=np.float32)
    for mode in ("reflect", "maximum", "linear_ramp"):
        g = gibbous.grad(lambda x: np.sum(np.pad(x, 2, mode=mode) ** 2))(x)
        assert g.dtype == np.float32


def test_a_function_as_mode_is_refused_by_name() -> None:
    def fill(vector: np.ndarray, width: tuple[int, int], axis: int, kwargs: dict[str, object]) -> None:
        vector[: width[0]] = 0.0

    with pytest.raises(NotImplementedError, match="np.pad with a function as mode"):
        gibbous.grad(lambda x: np.sum(np.pad(x, 1, mode=fill)))(np.ones(3))


def test_tied_extremes_share_the_derivative() -> None:
    """A maximum taken by two entries: each gets half, which is what central differences
    measure (the mean of the one-sided derivatives), as for ``np.max``.  (No hvp: the tie
    breaks either way under a perturbation, and the gradient jumps.)"""
    x = np.array([1.0, 3.0, 3.0, 2.0, -1.0, 0.5])
    check_program(program("return loss(np.pad(x, (2, 1), mode='maximum') * 1.0)"), x, modes="rf")
    g = gibbous.grad(lambda x: np.sum(np.pad(x, (2, 1), mode="maximum")))(x)
    np.testing.assert_allclose(g, [1, 2.5, 2.5, 1, 1, 1])  # (three pad entries)


def test_results_are_typed() -> None:
    """NumPy's ``pad`` is Python inference cannot read (a ``match``): a rule types it."""
    from gibbous.inspect import code_ir

    text = str(code_ir(lambda x: np.pad(x, 2, mode="reflect"), np.ones((3, 4), np.float32), stage="typed"))
    assert 'numpy.pad(%x, 2, mode="reflect") : f32[:,:]' in text
