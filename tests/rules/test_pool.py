"""The pool of large zero fdata (gibbous.tangents.pool): what it recycles, and that recycling
never reaches memory anyone still holds (gradients handed out, results pending a pullback)."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

from gibbous.api import build_rrule, value_and_gradient, value_and_pullback
from gibbous.tangents import pool
from tests.ad.conftest import check

LARGE = (64, 512)  # 256 KiB of float64
F64 = np.dtype(np.float64)


@pytest.fixture(autouse=True)
def empty_pool() -> t.Iterator[None]:
    pool.clear()
    yield
    pool.clear()


def test_released_arrays_come_back_zeroed() -> None:
    a = pool.zeros(LARGE, F64, 8 * 64 * 512)
    assert not a.any() and a.flags.c_contiguous
    a += 1.0
    pool.release(a)
    assert pool.held() == a.nbytes
    b = pool.zeros(LARGE, F64, a.nbytes)
    assert b is a and not b.any() and pool.held() == 0
    assert pool.zeros(LARGE, F64, a.nbytes) is not a  # handed out: never given twice


def test_scratch_buffers_come_back_unfilled() -> None:
    a = pool.empty(LARGE, F64, 8 * 64 * 512)
    assert a.shape == LARGE and a.flags.c_contiguous
    a[...] = 2.0
    pool.release(a)
    b = pool.empty(LARGE, F64, a.nbytes)
    assert b is a and pool.held() == 0  # (its contents are whatever was left)
    assert pool.empty((3,), F64, 24).shape == (3,)  # small: new, never held


def test_small_arrays_views_and_overflow_are_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    pool.release(np.zeros(100))
    pool.release(np.zeros((128, 512))[::2])  # a view: its memory is someone else's
    assert pool.held() == 0
    monkeypatch.setattr(pool, "LIMIT_BYTES", 300_000)
    pool.release(np.zeros(LARGE))
    pool.release(np.zeros(LARGE))  # over the limit: dropped
    assert pool.held() == 8 * 64 * 512


def passed(a: np.ndarray) -> np.ndarray:
    return a


def layers(x: np.ndarray, w: np.ndarray) -> float:
    # ``h`` and ``r``, used twice, have fdata; the values used once pass their cotangents as
    # values (no fdata to recycle).  ``h`` escapes into a call, so its site keeps no buffer
    # (gibbous.rules.buffers): its fdata comes from the pool and is recycled after its
    # adjoint.  ``r``'s is a buffer of its site.
    h = passed(np.tanh(x * w + 0.5))
    r = h * h - x / (1.0 + w * w)
    return float(np.sum(r * r))


def test_gradients_handed_out_are_never_recycled() -> None:
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal(LARGE), rng.standard_normal(LARGE[1])
    rule, _, first = check(layers, x, w)
    kept = [g.copy() for g in first[1:]]
    assert pool.held() > 0  # the intermediates' fdata came back
    for _ in range(3):  # the next calls take the recycled buffers, zeroed, and agree
        y, grads = value_and_gradient(rule, layers, x, w)
        for g, k in zip(grads[1:], kept):
            np.testing.assert_array_equal(g, k)
    for g, k in zip(first[1:], kept):  # the first call's gradients are untouched
        np.testing.assert_array_equal(g, k)


def inner(x: np.ndarray) -> np.ndarray:
    return np.sin(x) * 2.0


def nested_and_pending(x: np.ndarray) -> list[np.ndarray]:
    # Two results of one call site alive at once (fwd, fwd, pb, pb), one of them returned.
    a = inner(x)
    b = inner(a)
    return [b, a + b]


def test_results_pending_a_pullback_keep_their_fdata() -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal(LARGE)
    rule = build_rrule(nested_and_pending, x)
    ybar = [rng.standard_normal(LARGE), rng.standard_normal(LARGE)]
    want = None
    for _ in range(3):
        y, (_, dx) = value_and_pullback(rule, ybar, nested_and_pending, x)
        a = np.sin(x) * 2.0
        da = 2.0 * np.cos(a) * (ybar[0] + ybar[1]) + ybar[1]
        expected = 2.0 * np.cos(x) * da
        np.testing.assert_allclose(dx, expected, rtol=1e-12, atol=1e-12)
        if want is not None:
            np.testing.assert_array_equal(dx, want)
        want = dx.copy()
