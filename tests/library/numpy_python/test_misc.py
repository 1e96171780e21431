"""NumPy's odds and ends (issue 31): elementwise odds (copysign, ldexp, frexp, modf,
nextafter, spacing), comparisons, predicates and bit operations with their ``out=``,
reorderings (sort, partition, unique), copies, products and polynomials, each against central
differences in the modes listed (r reverse, f forward, h hvp).  A mode not listed is refused
with a gibbous exception, never a wrong number.

Comparisons, predicates and bit operations have no derivative: a loss using them gets a zero
(``zero_derivative``), never a refusal.  ``via`` calls a function through a value computed at
run time (a closure's cell), as ``gibbous.audit.scan`` does: forward mode finds its rule then.
"""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

from gibbous.ir.exceptions import UnsupportedArgumentError
from tests.library.programs import check_mode

X = np.linspace(0.1, 0.9, 6) + np.sin(np.arange(6)) * 0.05
W = np.cos(np.arange(6) + 0.5)
A = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.0]])

F = t.Callable[[np.ndarray], t.Any]
P = np.polynomial.polynomial


def via(fn: t.Callable[..., t.Any], *after: t.Any) -> F:
    """``fn(x, *after)`` weighted, with ``fn`` read from a cell (found at run time)."""
    w = np.cos(np.arange(np.size(fn(X, *after))) + 0.5).reshape(np.shape(fn(X, *after)))
    return lambda x: np.sum(np.real(fn(x, *after)) * w)


def via_out(fn: t.Callable[..., t.Any], *before: t.Any) -> F:
    """``fn(*before, z)``, ``z`` made of x, with ``fn`` found at run time: its output is z."""
    return lambda x: np.sum(fn(*before, x * 1.0) * W) + np.sum(x**2)


# (name, f, modes that differentiate it)
CASES: list[tuple[str, F, str]] = [
    # Elementwise odds
    ("copysign", lambda x: np.sum(np.copysign(x, W) * W), "rfh"),
    ("copysign of x in both", lambda x: np.sum(np.copysign(x, x - 0.5) ** 2), "rfh"),
    ("copysign scalar sign", lambda x: np.sum(np.copysign(x, -1.0)), "rfh"),
    ("ldexp", lambda x: np.sum(np.ldexp(x, 3) * W), "rfh"),
    ("ldexp int array", lambda x: np.sum(np.ldexp(x, np.arange(6)) * W), "rfh"),
    ("frexp mantissa", lambda x: np.sum(np.frexp(4 * x)[0] * W), "rfh"),
    ("frexp exponent", lambda x: np.sum(np.frexp(4 * x)[1] * x), "rfh"),
    ("modf fractional", lambda x: np.sum(np.modf(3 * x)[0] ** 2 * W), "rfh"),
    ("modf integral", lambda x: np.sum(np.modf(3 * x)[1] * x), "rfh"),
    ("nextafter", lambda x: np.sum(np.nextafter(x, W) * W), "rfh"),
    ("spacing", lambda x: np.sum(np.spacing(x) * 1e10 + x), "rfh"),
    ("signbit", lambda x: np.sum(np.signbit(x - 0.5) * x), "rfh"),
    ("invert of ints", lambda x: np.sum(np.invert(np.arange(6)) * x), "rfh"),
    ("bitwise_count", lambda x: np.sum(np.bitwise_count(np.arange(6)) * x), "rfh"),
    ("isposinf", lambda x: np.sum(np.isposinf(x) * x) + np.sum(x**2), "rfh"),
    ("isneginf", lambda x: np.sum(np.isneginf(x) * x) + np.sum(x**2), "rfh"),
    ("round", lambda x: np.sum(np.round(x, 1) * x), "rfh"),
    ("around", lambda x: np.sum(np.around(x * 3) * x), "rfh"),
    ("fix", lambda x: np.sum(np.fix(x * 3) * x), "rfh"),
    ("x.round", lambda x: np.sum(x.round(1) * x), "rfh"),
    # out= of comparisons, predicates, bit operations, unary ufuncs of a scalar
    # (z := x * 1.0: an array made of x, overwritten, then used)
    ("less out", lambda x: np.sum(np.less(x, W, z := x * 1.0) * x) + np.sum(z * W), "rfh"),
    ("greater_equal out=", lambda x: np.sum(np.greater_equal(x, 0.5, out=(z := x * 1.0)) * x) + np.sum(z * W), "rfh"),
    ("logical_and out", lambda x: np.sum(np.logical_and(x > 0.3, x < 0.7, z := x * 1.0) * x) + np.sum(z), "rfh"),
    ("isnan out=", lambda x: np.sum(np.isnan(x, out=(z := x * 1.0)) * x) + np.sum(z * W), "rfh"),
    ("signbit out", lambda x: np.sum(np.signbit(x - 0.5, z := x * 1.0) * x) + np.sum(z * W), "rfh"),
    ("invert out", lambda x: np.sum(np.invert(2, z := x * 1.0) * x) + np.sum(z * W), "rfh"),
    ("arccosh of a number out", lambda x: np.sum(np.arccosh(1.5, z := x * 1.0) * x) + np.sum(z * W), "rfh"),
    ("arccosh out=", lambda x: np.sum(np.arccosh(1 + x, out=(z := x * 1.0)) * x) + np.sum(z * W), "rfh"),
    ("copysign out", lambda x: np.sum(np.copysign(x, -1.0, z := x * 1.0) * x) + np.sum(z * W), "rfh"),
    ("nextafter out=", lambda x: np.sum(np.nextafter(x, W, out=(z := x * 2.0)) * x) + np.sum(z * W), "rfh"),
    # Reorderings and copies
    ("sort", lambda x: np.sum(np.sort(x[::-1] * 1.0) * W), "rfh"),
    ("sort axis=0", lambda x: np.sum(np.sort(np.outer(x, x[:3]), axis=0)[:, 0] * W), "rfh"),
    ("sort axis=None", lambda x: np.sum(np.sort(x.reshape(2, 3), axis=None) * W), "rfh"),
    ("sort kind", lambda x: np.sum(np.sort(x[::-1], kind="stable") * W), "rfh"),
    ("x.sort", lambda x: np.sum(_sorted_copy(x) * W), "r"),
    ("partition", lambda x: np.sum(np.partition(x[::-1] * 1.0, 2) * W), "rfh"),
    ("partition axis", lambda x: np.sum(np.ravel(np.partition(x.reshape(2, 3), 1, axis=1)) * W), "rfh"),
    ("unique", lambda x: np.sum(np.unique(np.concatenate([x, x[:2]])) * W), "rfh"),
    ("sort_complex", lambda x: np.sum(np.real(np.sort_complex(x[::-1])) * W), "r"),
    ("tile", lambda x: np.sum(np.tile(x, 2)[3:9] * W), "rfh"),
    ("repeat", lambda x: np.sum(np.repeat(x, 2)[:6] * W), "rfh"),
    ("repeat axis", lambda x: np.sum(np.ravel(np.repeat(x.reshape(2, 3), [1, 2], axis=0)[1:]) * W), "rfh"),
    ("x.repeat", lambda x: np.sum(x.repeat(2)[3:9] * W), "rfh"),
    ("atleast_3d", lambda x: np.sum(np.atleast_3d(x)[0, :, 0] * W), "rfh"),
    ("take_along_axis", lambda x: np.sum(np.take_along_axis(x, np.argsort(-x), 0) * W), "rfh"),
    ("i0", lambda x: np.sum(np.i0(x) * W), "rfh"),
    ("resize", lambda x: np.sum(np.resize(x, 8)[:6] * W), "rfh"),
    ("diag_indices", lambda x: np.sum(np.outer(x, x)[np.diag_indices(6)] * W), "rfh"),
    # Picks and places (twins)
    ("choose", lambda x: np.sum(np.choose([0, 1, 0, 1, 1, 0], [x, x**2]) * W), "rfh"),
    ("choose wrap", lambda x: np.sum(np.choose([0, 3, 2, 1, -1, 0], [x, x**2, np.sin(x)], mode="wrap") * W), "rfh"),
    ("choose clip", lambda x: np.sum(np.choose([0, 3, 2, 1, -1, 0], [x, x**2, np.sin(x)], mode="clip") * W), "rfh"),
    ("x.choose", lambda x: np.sum(np.array([1, 0, 1, 0, 0, 1]).choose([x, x**2]) * W), "rf"),
    ("compress", lambda x: np.sum(np.compress([True, False, True], x.reshape(2, 3), axis=1).ravel() * W[:4]), "rfh"),
    ("compress flat", lambda x: np.sum(np.compress(x > 0.5, x) ** 2), "rfh"),
    ("x.compress", lambda x: np.sum(x.compress([1, 0, 1, 1]) ** 2), "rfh"),
    ("select", lambda x: np.sum(np.select([x < 0.4, x > 0.7], [x**2, np.sin(x)], 0.5) * W), "rfh"),
    ("put", lambda x: _put(x), "rfh"),
    ("put wrap", lambda x: _put(x, [7, -1], "wrap"), "rfh"),
    ("place", lambda x: _place(x), "rfh"),
    ("putmask", lambda x: _putmask(x), "rfh"),
    ("put_along_axis", lambda x: _put_along_axis(x), "rfh"),
    ("fill_diagonal", lambda x: _fill_diagonal(x), "rf"),
    ("fill_diagonal wrap", lambda x: _fill_diagonal(x, True), "rf"),
    ("ediff1d", lambda x: np.sum(np.ediff1d(x, to_begin=x[0], to_end=[1.0, 2.0]) * np.arange(8.0)), "rfh"),
    ("take of a number", lambda x: np.take(x[0] * 2, 0) ** 2, "rfh"),
    ("take of a list", lambda x: np.sum(np.take([x[0], x[1] ** 2], [1, 0, 1]) * W[:3]), "rfh"),
    ("asfortranarray", lambda x: np.sum(np.asfortranarray(x.reshape(2, 3)).ravel() * W), "rfh"),
    ("interp in fp", lambda x: np.sum(np.interp(np.linspace(0, 1, 5), [0.0, 0.2, 0.4, 0.6, 0.8, 1.0], x**2)), "rfh"),
    ("interp in xp", lambda x: np.sum(np.interp(np.linspace(0, 1, 5), np.cumsum(x), W)), "rfh"),
    ("interp in x", lambda x: np.sum(np.interp(x, [0.0, 0.5, 1.0], [1.0, 3.0, 2.0]) * W), "rf"),
    ("interp left right", lambda x: np.sum(np.interp(x * 3 - 1, np.array([0.0, 0.5, 1.0]), x[:3], left=x[4], right=2.0) * W), "rfh"),
    ("interp one point", lambda x: np.sum(np.interp(x[:1] * 2, np.array([0.0, 0.5, 1.0]), np.array([1.0, 3.0, 2.0]))), "rfh"),
    ("block", lambda x: np.sum(np.block([[x[:3]], [x[3:]]]).ravel() * W), "r"),
    # of several operands: a tuple (the view rule of one array lost the gradient: silently 0)
    ("atleast_1d of two", lambda x: np.sum(np.atleast_1d(x, 2.0)[0] ** 2 * np.atleast_1d(x[0], x)[1]), "rfh"),
    ("atleast_2d of two", lambda x: np.sum(np.atleast_2d(x, x[0])[1] ** 2 + np.atleast_2d(x, 1.0)[0] ** 3), "rfh"),
    ("unique_values", lambda x: np.sum(np.unique_values(x[::-1]) * W), "rfh"),
    ("unique_counts", lambda x: np.sum(np.unique_counts(np.concatenate([x, x[:2]])).values * W), "rf"),
    ("unique_all", lambda x: np.sum(np.unique_all(x[::-1]).values * W), "rf"),
    ("unique_inverse", lambda x: np.sum(np.unique_inverse(x).values[np.unique_inverse(x).inverse_indices] * W), "rf"),
    ("unique return_counts", lambda x: np.sum(np.unique(x, return_counts=True)[0] * W), "rfh"),
    # Products
    ("einsum sublist", lambda x: np.sum(np.einsum(x.reshape(2, 3), [0, 1], A, [1, 2], [0, 2]) * W.reshape(2, 3)), "rfh"),
    ("einsum sublist implicit", lambda x: np.einsum(x, [0], x, [0]), "rfh"),
    ("einsum sublist ellipsis", lambda x: np.sum(np.einsum(x.reshape(2, 3), [Ellipsis, 1], A, [1, 2], [Ellipsis, 2]) * W.reshape(2, 3)), "rfh"),
    ("vecdot", lambda x: np.sum(np.vecdot(x.reshape(2, 3), A[:2]) * W[:2]), "rfh"),
    ("vecdot axis", lambda x: np.sum(np.vecdot(x.reshape(2, 3), x.reshape(2, 3) ** 2, axis=0) * W[:3]), "rfh"),
    ("matvec", lambda x: np.sum(np.matvec(A, x.reshape(2, 3)) * W.reshape(2, 3)), "rfh"),
    ("vecmat", lambda x: np.sum(np.vecmat(x.reshape(2, 3), A + x[0]) * W.reshape(2, 3)), "rfh"),
    ("linalg.vecdot", lambda x: np.sum(np.linalg.vecdot(x, W)), "rfh"),
    ("linalg.outer", lambda x: np.sum(np.linalg.outer(x, W) * np.outer(W, x)), "rfh"),
    ("linalg.tensorsolve", lambda x: np.sum(np.linalg.tensorsolve(np.eye(6) * 2 + np.outer(x, x), W) * W), "rfh"),
    ("tensorsolve axes", lambda x: np.sum(np.linalg.tensorsolve((np.eye(6) * 2 + np.outer(x, W)).reshape(2, 3, 6), W, axes=(0, 1)) * W.reshape(2, 3)), "rfh"),
    ("linalg.cross", lambda x: np.sum(np.linalg.cross(x.reshape(2, 3), W.reshape(2, 3)) * x.reshape(2, 3)), "rfh"),
    ("linalg.cross axis", lambda x: np.sum(np.linalg.cross(x.reshape(3, 2), W.reshape(3, 2), axis=0) * x.reshape(3, 2)), "rfh"),
    ("cross axisa axisb", lambda x: np.sum(np.cross(x.reshape(3, 2), W.reshape(2, 3), axisa=0, axisb=1) * W.reshape(2, 3)), "rfh"),
    ("cross axisc", lambda x: np.sum(np.cross(x.reshape(2, 3), W.reshape(2, 3), axisc=0) * W.reshape(3, 2)), "rfh"),
    ("cross axis broadcast", lambda x: np.sum(np.cross(x.reshape(3, 2), W[:3], axisa=0) * W.reshape(2, 3)), "rfh"),
    # Polynomials
    ("polyint", lambda x: np.sum(np.polyint(x) * np.arange(7.0)), "rfh"),
    ("polyint m k", lambda x: np.sum(np.polyint(x, 2, [x[0], 1.0]) * np.arange(8.0)), "rfh"),
    ("polymul", lambda x: np.sum(np.polymul(x, W[:3]) * np.arange(8.0)), "rfh"),
    ("polymul leading zeros", lambda x: np.sum(np.polymul(np.concatenate([[0.0], x]), x[:2]) * np.arange(7.0)), "r"),
    ("poly", lambda x: np.sum(np.poly(x[:4]) * W[:5]), "rfh"),
    ("polydiv", lambda x: np.sum(np.polydiv(x, W[:3] + 2.0)[0] * W[:4]), "rf"),
    ("P.polymul", lambda x: np.sum(P.polymul(x, W[:3]) * np.arange(8.0)), "rfh"),
    ("P.polypow", lambda x: np.sum(P.polypow(x[:3], 2) * W[:5]), "rfh"),
    ("P.polyder", lambda x: np.sum(P.polyder(x) * W[:5]), "rfh"),
    ("P.polyint", lambda x: np.sum(P.polyint(x) * np.arange(7.0)), "rfh"),
    ("P.polymulx", lambda x: np.sum(P.polymulx(x) * np.arange(7.0)), "rfh"),
    ("P.polytrim", lambda x: np.sum(P.polytrim(x) * W), "rfh"),
    ("P.polyval2d", lambda x: np.sum(P.polyval2d(x[:3], x[3:], x.reshape(2, 3)) * W[:3]), "rf"),
    # Through a value computed at run time
    ("via sort", via(np.sort), "rfh"),
    ("via unique", via(np.unique), "rfh"),
    ("via partition", via(np.partition, 2), "rfh"),
    ("via repeat", via(np.repeat, 2), "rfh"),
    ("via tile", via(np.tile, 2), "rfh"),
    ("via atleast_3d", via(np.atleast_3d), "rfh"),
    ("via round", via(np.round), "rfh"),
    ("via copysign", via(np.copysign, W), "rfh"),
    ("via nextafter", via(np.nextafter, W), "rfh"),
    ("via less out", via_out(np.less, W, 0.5), "rf"),
    ("via isnan out", via_out(np.isnan, W), "rf"),
    ("via invert out", via_out(np.invert, 2), "rf"),
    ("via arccosh out", via_out(np.arccosh, 1.5), "rf"),
]  # fmt: skip


def _put(x: np.ndarray, ind: t.Any = (0, 2), mode: str = "raise") -> t.Any:
    z = x * 2.0
    np.put(z, list(ind), x[:2] ** 2, mode=mode)
    return np.sum(z * W)


def _place(x: np.ndarray) -> t.Any:
    z = x * 2.0
    np.place(z, z > 1.0, x[:2] ** 2)
    return np.sum(z * W)


def _putmask(x: np.ndarray) -> t.Any:
    z = x * 2.0
    np.putmask(z, z > 1.0, x[:4] ** 2)
    return np.sum(z * W)


def _put_along_axis(x: np.ndarray) -> t.Any:
    z = x.reshape(2, 3) * 2.0
    np.put_along_axis(z, np.array([[0], [2]]), x[:2, None] ** 2, axis=1)
    return np.sum(z.ravel() * W)


def _fill_diagonal(x: np.ndarray, wrap: bool = False) -> t.Any:
    z = np.outer(np.concatenate([x, x[:1]]), x[3:])
    np.fill_diagonal(z, x[:2] ** 2, wrap=wrap)
    return np.sum(z * np.cos(np.arange(21.0)).reshape(7, 3))


def _sorted_copy(x: np.ndarray) -> np.ndarray:
    y = x[::-1] * 2.0
    y.sort()
    return y


MODES = [(name, f, m, m in modes) for name, f, modes in CASES for m in "rfh"]


@pytest.mark.parametrize("name, f, mode, works", MODES, ids=[f"{n}-{m}" for n, _, m, _ in MODES])
def test_numpy_misc(name: str, f: F, mode: str, works: bool) -> None:
    check_mode(name, f, X, mode, works)


def test_modf_and_frexp_are_numpys() -> None:
    from gibbous.library.elementwise.odds import frexp_twin, modf_twin

    x = np.array([-3.0, -2.5, -0.0, 0.0, 2.5, 1e300, np.inf, -np.inf, np.nan])
    for twin, fn in ((modf_twin, np.modf), (frexp_twin, np.frexp)):
        for got, want in zip(twin(x), fn(x)):
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_interp_of_a_decreasing_xp_is_refused_by_name() -> None:
    import gibbous

    def f(x: np.ndarray) -> t.Any:
        return np.sum(np.interp(x, x[::-1] * 1.0, W))

    with pytest.raises(UnsupportedArgumentError, match="xp not increasing"):
        gibbous.grad(f)(X)


def test_cross_of_2_vectors_is_refused_by_name() -> None:
    import gibbous

    with pytest.raises(UnsupportedArgumentError, match="2-vectors"):
        gibbous.grad(lambda x: np.sum(np.cross(x[:2], W[:2])))(X)
