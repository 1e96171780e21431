"""Reductions: sum, mean, prod, max/min (amax/amin), cumsum, as functions and methods."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

from tests.library.harness import Tape, call, check, check_like_float64, gradient

FUNCTIONS = [np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin]
METHODS = [np.ndarray.sum, np.ndarray.mean, np.ndarray.prod, np.ndarray.max, np.ndarray.min]
AXES: list[t.Any] = [None, 0, 1, -1, (0, 2), (2, 0, 1), ()]


def name(fn: t.Any) -> str:
    return getattr(fn, "__qualname__", str(fn))


@pytest.mark.parametrize("fn", FUNCTIONS + METHODS, ids=name)
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_axis_keyword(fn: t.Any, axis: t.Any, keepdims: bool, rng: np.random.Generator) -> None:
    x = rng.uniform(0.5, 1.5, (2, 3, 4))  # distinct values: no ties
    check(call(fn, axis=axis, keepdims=keepdims), x, rng=rng)


@pytest.mark.parametrize("fn", FUNCTIONS + METHODS, ids=name)
def test_axis_by_position(fn: t.Any, rng: np.random.Generator) -> None:
    x = rng.uniform(0.5, 1.5, (3, 4))
    check(call(fn, 1), x, rng=rng)
    check(call(fn), x, rng=rng)


@pytest.mark.parametrize("fn", [np.sum, np.mean, np.prod, np.ndarray.sum], ids=name)
def test_complex_and_dtype(fn: t.Any, rng: np.random.Generator) -> None:
    z = rng.uniform(0.5, 1.5, (3, 4)) + 1j * rng.uniform(0.5, 1.5, (3, 4))
    check(call(fn, axis=0), z, rng=rng)
    check_like_float64(call(fn, axis=1), rng.uniform(0.5, 1.5, (3, 4)).astype(np.float32))


def test_keepdims_by_position(rng: np.random.Generator) -> None:
    x = rng.uniform(0.5, 1.5, (3, 4))
    check(call(np.sum, 0, None, None, True), x, rng=rng)
    check(call(np.max, 1, None, True), x, rng=rng)


def test_prod_with_zeros_is_exact() -> None:
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.5, 2.0, 4.0]])
    (g,) = gradient(call(np.prod, axis=1), x)
    np.testing.assert_array_equal(g, [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [8.0, 6.0, 3.0]])
    (g,) = gradient(call(np.prod), np.array([0.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g, [6.0, 0.0, 0.0])
    assert np.all(np.isfinite(g))


def test_prod_with_zeros_against_finite_differences(rng: np.random.Generator) -> None:
    x = rng.uniform(0.5, 1.5, (3, 4))
    x[1, 2] = 0.0
    x[0, :2] = 0.0
    check(call(np.prod, axis=1), x, rng=rng)
    check(call(np.prod), x, rng=rng)


@pytest.mark.parametrize("fn", [np.max, np.ndarray.max, np.amax])
def test_max_splits_ties_evenly(fn: t.Any) -> None:
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]])
    (g,) = gradient(call(fn, axis=1), x, seed=np.array([1.0, 10.0]))
    np.testing.assert_array_equal(g, [[0.0, 0.5, 0.5], [5.0, 0.0, 5.0]])
    (g,) = gradient(call(fn), x)
    np.testing.assert_array_equal(g, [[0.0, 0.5, 0.5], [0.0, 0.0, 0.0]])


def test_max_with_a_tie_of_two_matches_central_differences(rng: np.random.Generator) -> None:
    x = np.array([1.0, 3.0, 3.0, 2.0])
    check(call(np.max), x, rng=rng)


def _extremes(x: np.ndarray, is_max: bool) -> list[int]:
    """The flat indices (C order) of the elements NumPy's ``max`` / ``min`` could have picked:
    the NaN if there are any, else those equal to the extremum."""
    flat = np.array(x).reshape(-1)  # (a copy, in C order, whatever x's strides)
    if np.isnan(flat).any():
        return [int(k) for k in np.flatnonzero(np.isnan(flat))]
    z = flat.max() if is_max else flat.min()
    return [int(k) for k in np.flatnonzero(flat == z)]


@pytest.mark.parametrize("is_max", [True, False])
def test_only_extreme_finds_the_lone_extremum_or_says_there_are_ties(is_max: bool) -> None:
    from gibbous.library.reductions.reductions import only_extreme

    rng = np.random.default_rng(3)
    for _ in range(3000):  # few distinct values: many ties; transposed and reversed views
        x = rng.integers(-2, 3, size=tuple(rng.integers(1, 5, size=rng.integers(1, 4))))
        x = x.astype(float)
        for _ in range(int(rng.integers(0, 3))):
            x.flat[rng.integers(0, x.size)] = np.nan
        x = [x, x.T, x[..., ::-1]][int(rng.integers(0, 3))]
        picks = _extremes(x, is_max)
        assert only_extreme(x, is_max) == (picks[0] if len(picks) == 1 else None), x


def test_reduction_to_a_scalar_takes_rdata() -> None:
    x = np.arange(1.0, 5.0)
    tape = Tape()
    (v,) = tape.inputs(x)
    y = tape.call(np.sum, v)
    assert isinstance(y.primal, np.float64) and y.fdata.__class__.__name__ == "NoTangent"


def test_unsupported_options_raise() -> None:
    x = np.arange(3.0)
    with pytest.raises(NotImplementedError):
        gradient(call(np.sum, initial=1.0), x)
    with pytest.raises(NotImplementedError):
        gradient(call(np.max, where=np.array([True, False, True]), initial=0.0), x)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_cumsum(axis: t.Any, rng: np.random.Generator) -> None:
    x = rng.standard_normal((3, 4))
    check(call(np.cumsum, axis=axis), x, rng=rng)
    check(call(np.ndarray.cumsum, axis), x, rng=rng)


def test_cumprod_with_zeros_is_exact(rng: np.random.Generator) -> None:
    x = np.array([2.0, 0.0, 3.0, 0.5])
    (g,) = gradient(call(np.cumprod), x)
    # d/dx_j of sum_i prod_{k<=i} x_k, with the products of the others written out
    np.testing.assert_array_equal(g, [1.0, 2.0 + 6.0 + 3.0, 0.0, 0.0])
    y = rng.uniform(0.5, 1.5, (3, 4))
    y[1, 1] = y[2, 3] = 0.0
    check(call(np.cumprod, axis=1), y, rng=rng)
    check(call(np.ndarray.cumprod, 0), y, rng=rng)


def test_nan_reductions_give_nans_no_gradient() -> None:
    x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 2.0]])
    (g,) = gradient(call(np.nansum, axis=1), x, seed=np.array([1.0, 10.0]))
    np.testing.assert_array_equal(g, [[1.0, 0.0, 1.0], [0.0, 0.0, 10.0]])
    (g,) = gradient(call(np.nanmean, axis=1), x, seed=np.array([1.0, 10.0]))
    np.testing.assert_array_equal(g, [[0.5, 0.0, 0.5], [0.0, 0.0, 10.0]])
    (g,) = gradient(call(np.nanmean), x)
    np.testing.assert_array_equal(g, np.where(np.isnan(x), 0.0, 1 / 3))


@pytest.mark.parametrize("fn", [np.var, np.std, np.ndarray.var, np.ndarray.std], ids=name)
def test_var_and_std(fn: t.Any, rng: np.random.Generator) -> None:
    x = rng.standard_normal((3, 4))
    check(call(fn, axis=0, ddof=1), x, rng=rng)
    if fn in (np.var, np.std):  # the methods have no ``correction``
        check(call(fn, correction=1.0), x, rng=rng)
    check(call(fn, axis=(0, 1), keepdims=True), x + 1j * rng.standard_normal((3, 4)), rng=rng)
    (g,) = gradient(call(fn), np.full(3, 2.0))  # std at 0 takes the subgradient 0
    assert np.all(np.isfinite(g))


def test_average_weights_by_position_and_keyword(rng: np.random.Generator) -> None:
    x, w = rng.standard_normal((3, 4)), rng.uniform(0.5, 1.5, 4)
    check(call(np.average, 1, w), x, rng=rng)

    def program(tape: t.Any, x: t.Any, w: t.Any) -> t.Any:
        return tape.call(np.average, x, axis=1, weights=w)

    check(program, x, w, rng=rng)


def test_ptp_and_extrema_to_a_scalar() -> None:
    x = np.array([[1.0, 4.0], [-2.0, 3.0]])
    (g,) = gradient(call(np.ptp), x)
    np.testing.assert_array_equal(g, [[0.0, 1.0], [-1.0, 0.0]])
    (g,) = gradient(call(np.ptp, axis=0), x, seed=np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, [[1.0, 2.0], [-1.0, -2.0]])
    (g,) = gradient(call(np.max), np.array([3.0, 1.0, 3.0]))  # a tie: split
    np.testing.assert_array_equal(g, [0.5, 0.0, 0.5])
    (g,) = gradient(call(np.min, axis=0), np.array([2.0, 1.0, 3.0]))
    np.testing.assert_array_equal(g, [0.0, 1.0, 0.0])
