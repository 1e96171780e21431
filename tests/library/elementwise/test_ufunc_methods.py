"""The ufunc methods, twins folding the ufunc itself (gibbous.library.elementwise.
ufunc_methods): every option in both modes and under hvp, against central differences, and
the values NumPy's own methods give."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.ir.exceptions import GibbousError
from gibbous.library.elementwise import ufunc_methods as um
from tests.library.programs import check_program

RNG = np.random.default_rng(3)
X = RNG.uniform(0.5, 1.5, 6)
M = RNG.uniform(0.5, 1.5, (3, 4))
W6, W34 = np.arange(1.0, 7.0), np.arange(12.0).reshape(3, 4)


def _at(x: np.ndarray) -> t.Any:
    a = np.zeros(4) + x[:4]
    np.add.at(a, [0, 1, 1, 3], x[2:] ** 2)  # (index 1 twice: added twice)
    np.multiply.at(a, [2, 2], x[:2])
    np.negative.at(a, [3])
    return np.sum(a * np.arange(1.0, 5.0))


def _at_2d(m: np.ndarray) -> t.Any:
    a = np.copy(m)
    np.subtract.at(a, (np.array([0, 2, 0]), np.array([1, 3, 1])), m[1, :3] ** 2)
    return np.sum(a * W34)


def _reduce_out(x: np.ndarray) -> t.Any:
    out = np.zeros(3)
    np.multiply.reduce(x.reshape(3, 2), axis=1, out=out)
    return np.sum(out * np.arange(1.0, 4.0))


# (name, f, x, modes): modes a program takes (r, f, h)
CASES: list[tuple[str, t.Callable[[np.ndarray], t.Any], np.ndarray, str]] = [
    ("add.reduce", lambda x: np.add.reduce(x**2), X, "rfh"),
    ("add.reduce axis keepdims", lambda m: np.sum(np.add.reduce(m**2, axis=1, keepdims=True) * W34[:, :1]), M, "rfh"),
    ("add.reduce axis None", lambda m: np.add.reduce(np.sin(m), axis=None), M, "rfh"),
    ("multiply.reduce initial", lambda x: np.multiply.reduce(x, initial=2.0), X, "rfh"),
    ("add.reduce where", lambda x: np.add.reduce(x**2, where=x > 1.0), X, "rf"),
    ("maximum.reduce where initial", lambda x: np.maximum.reduce(x * W6, where=x < 1.2, initial=-1.0), X, "rf"),
    ("subtract.reduce", lambda x: np.subtract.reduce(x), X, "rfh"),
    ("divide.reduce axis 0", lambda m: np.sum(np.divide.reduce(m, axis=0) * W34[0]), M, "rfh"),
    ("power.reduce", lambda x: np.power.reduce(x[:2]), X, "rfh"),
    ("power.reduce axis 0", lambda m: np.sum(np.power.reduce(m, axis=0)), M, "rfh"),
    ("maximum.reduce", lambda x: np.maximum.reduce(x * W6), X, "rfh"),
    ("minimum.reduce axis -1", lambda m: np.sum(np.minimum.reduce(m * W34, axis=-1)), M, "rfh"),
    ("logaddexp.reduce", lambda x: np.logaddexp.reduce(x), X, "rfh"),
    ("hypot.reduce axis tuple", lambda m: np.hypot.reduce(m, axis=(0, 1)), M, "r"),
    ("multiply.reduce out", _reduce_out, X, "rf"),
    ("multiply.accumulate", lambda x: np.sum(np.multiply.accumulate(x) * W6), X, "rf"),
    ("add.accumulate axis 1", lambda m: np.sum(np.add.accumulate(m**2, axis=1) * W34), M, "rf"),
    ("maximum.accumulate", lambda x: np.sum(np.maximum.accumulate(np.sin(3 * x)) * W6), X, "rf"),
    ("subtract.accumulate axis 1", lambda m: np.sum(np.subtract.accumulate(m, axis=1) ** 2), M, "rf"),
    ("subtract.outer", lambda x: np.sum(np.subtract.outer(x, x[:3]) ** 2 * np.arange(18.0).reshape(6, 3)), X, "rfh"),
    ("multiply.outer of a list", lambda x: np.sum(np.sin(np.multiply.outer(x, [1.0, 2.0]))), X, "rfh"),
    ("add.at, multiply.at, negative.at", _at, X, "rfh"),
    ("subtract.at 2-d", _at_2d, M, "rfh"),
    ("add.reduceat", lambda x: np.sum(np.add.reduceat(x, [0, 2, 2, 5]) ** 2 * np.arange(4.0)), X, "rf"),
    ("maximum.reduceat", lambda x: np.sum(np.maximum.reduceat(np.sin(3 * x), [0, 3]) * np.arange(1.0, 3.0)), X, "rf"),
]  # fmt: skip


@pytest.mark.parametrize("name, f, x, modes", CASES, ids=[c[0] for c in CASES])
def test_derivatives(name: str, f: t.Callable[[np.ndarray], t.Any], x: np.ndarray, modes: str) -> None:
    check_program(f, x, modes=modes)


@pytest.mark.parametrize(
    "method, args, kwargs",
    [
        (um.ufunc_reduce, (np.subtract, M), {"axis": 1, "keepdims": True}),
        (um.ufunc_reduce, (np.add, M), {"axis": None, "where": M > 1.0}),
        (um.ufunc_reduce, (np.maximum, M), {"axis": (0, 1), "initial": 0.7}),
        (um.ufunc_reduce, (np.logaddexp, M), {"axis": 0}),
        (um.ufunc_reduce, (np.add, np.zeros((0, 2))), {"axis": 0}),
        (um.ufunc_accumulate, (np.maximum, M), {"axis": 1}),
        (um.ufunc_accumulate, (np.divide, M), {}),
        (um.ufunc_outer, (np.arctan2, M, X), {}),
        (um.ufunc_reduceat, (np.minimum, X, [0, 4, 1]), {}),
        (um.ufunc_reduceat, (np.add, M, [0, 2]), {"axis": 1}),
    ],
)
def test_twins_compute_what_numpy_computes(method: t.Any, args: tuple[t.Any, ...], kwargs: dict[str, t.Any]) -> None:
    ufunc, rest = args[0], args[1:]
    expected = getattr(ufunc, method.__name__.removeprefix("ufunc_"))(*rest, **kwargs)
    np.testing.assert_allclose(method(ufunc, *rest, **kwargs), expected, rtol=1e-12)


def test_at_repeats_an_index_as_numpy_does() -> None:
    a, b = np.arange(5.0), np.arange(5.0)
    np.add.at(a, [1, 1, 4], [2.0, 3.0, 4.0])
    um.ufunc_at(np.add, b, [1, 1, 4], [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: um.ufunc_reduce(np.subtract, M, axis=(0, 1)), "not reorderable"),
        (lambda: um.ufunc_reduce(np.maximum, np.zeros(0)), "zero-size array"),
        (lambda: um.ufunc_reduce(np.maximum, X, where=X > 1.0), "identity"),
    ],
)
def test_twins_refuse_what_numpy_refuses(call: t.Callable[[], t.Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_power_reduce_where_numpy_is_not_a_fold_is_refused() -> None:
    x = np.array([0.9, 1.3, 0.7])
    if um._POWER_ENDS:
        with pytest.raises(GibbousError, match="a\\[0\\] \\*\\* a\\[-1\\]"):
            gibbous.grad(lambda x: np.power.reduce(x))(x)
    else:
        check_program(lambda x: np.power.reduce(x), x)


def test_a_gradient_of_a_fold_is_the_ufuncs() -> None:
    # d/dx of x0 - x1 - x2 - ...: (1, -1, -1, ...), from np.subtract's own rule
    g = gibbous.grad(lambda x: np.subtract.reduce(x))(X)
    np.testing.assert_array_equal(g, [1.0] + [-1.0] * 5)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: np.add.reduce(x[0] * np.ones(()), initial=1.5) ** 2,
        lambda x: np.sum(np.multiply.reduce(x, axis=()) ** 2),
        lambda x: np.sum(np.add.reduce(x, axis=(), where=x > 0.5, initial=0.25) ** 3),
        lambda x: np.subtract.reduce(x[1] * np.ones(()), axis=-1, initial=2.0) ** 2,
        lambda x: x[0] * float(np.any(np.False_)) + x[1] * float(np.logical_or.reduce(np.True_)),
    ],
)
def test_reductions_over_no_axis(f: t.Any) -> None:
    """A 0-d array reduced (over axis None, 0 or -1: ``np.any(np.ma.nomask)`` in SciPy's
    ``_axis_nan_policy``) or any array over ``axis=()``: each element itself, with initial."""
    from tests.library.programs import check_program

    check_program(f, np.array([0.3, 0.7]), modes="r")
