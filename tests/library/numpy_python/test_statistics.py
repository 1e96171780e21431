"""NumPy's statistics and friends (issue 31), derived from NumPy's own Python where it can be
(median, percentile, quantile and their nan versions, cov, the nan family, unwrap, logspace,
geomspace, histogram_bin_edges, trapezoid), else by the rules they reach (ufuncs with
``out=...``, ``out=`` with ``where=`` and ``casting=``, ``np.copyto(where=)``, ``x.partition``
in place, ``np.broadcast``) or rules and twins of their own (linspace, average, gradient,
corrcoef, broadcast_arrays, meshgrid): each in the modes listed, against central
differences, with the options users pass; a mode not listed is refused by a gibbous
exception (``check_mode``: a refusal that starts working fails, to update the table)."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

from tests.library.programs import check_mode

X = np.linspace(0.1, 0.9, 6) + np.sin(np.arange(6)) * 0.05
W6 = np.arange(1.0, 7.0)
W3 = np.array([1.0, 2.0, 0.5])
M = np.array([[1.0, 2.0], [3.0, 4.0]])
Q = np.array([0.25, 0.6])
KEPT = np.array([True, False, True, False, True, True])
MASK = np.array([True, False, True, True, False, True])

F = t.Callable[[np.ndarray], t.Any]


def nanned(x: np.ndarray) -> np.ndarray:
    """x with NaNs at positions 1 and 3 (no derivative there)."""
    return np.where(KEPT, x, np.nan)


def _subtract_where(x: np.ndarray) -> t.Any:
    y = x * 2.0
    np.subtract(y, x[::-1], out=y, casting="unsafe", where=MASK)
    return np.sum(y * W6)


def _multiply_where(x: np.ndarray) -> t.Any:
    y = x + 1.0
    np.multiply(x, x, out=y, where=MASK)
    return np.sum(y * W6)


def _sin_where(x: np.ndarray) -> t.Any:
    y = x * 3.0
    np.sin(x, out=y, where=MASK)
    return np.sum(y * W6)


def _copyto_where(x: np.ndarray) -> t.Any:
    y = x * 3.0
    np.copyto(y, x**2, where=MASK)
    return np.sum(y * W6)


def _copyto_where_broadcast(x: np.ndarray) -> t.Any:
    y = x.reshape(2, 3) * 3.0
    np.copyto(y, x[:3] ** 2, where=MASK[:3])
    return np.sum(y * W6.reshape(2, 3))


def _partition(x: np.ndarray) -> t.Any:
    y = x * W6
    y.partition(2)
    return y[2] * 3.0 + y[0]


# (name, f, modes that differentiate it: r reverse, f forward, h hvp)
CASES: list[tuple[str, F, str]] = [
    # median, percentile, quantile and their nan versions
    ("median", lambda x: np.median(x), "rfh"),
    ("median axis", lambda x: np.sum(np.median(x.reshape(2, 3), axis=1) * W3[:2]), "rfh"),
    ("median axis tuple keepdims", lambda x: np.sum(np.median(x.reshape(1, 2, 3), axis=(0, 2), keepdims=True) * W3[:2].reshape(1, 2, 1)), "rfh"),
    ("median out", lambda x: np.sum(np.median(x.reshape(2, 3), axis=0, out=np.zeros(3)) * W3), "r"),
    ("percentile", lambda x: np.percentile(x, 30.0), "r"),
    ("percentile q array", lambda x: np.sum(np.percentile(x, [10.0, 55.0]) * W3[:2]), "r"),
    ("percentile axis keepdims", lambda x: np.sum(np.percentile(x.reshape(2, 3), 40.0, axis=1, keepdims=True) * W3[:2].reshape(2, 1)), "r"),
    ("percentile midpoint", lambda x: np.percentile(x, 30.0, method="midpoint"), "r"),
    ("percentile nearest", lambda x: np.percentile(x, 30.0, method="nearest"), "r"),
    ("percentile out", lambda x: np.sum(np.percentile(x.reshape(2, 3), 40.0, axis=0, out=np.zeros(3)) * W3), "r"),
    ("quantile", lambda x: np.quantile(x, 0.3), "r"),
    ("quantile q array axis", lambda x: np.sum(np.quantile(x.reshape(2, 3), Q, axis=1) * M), "r"),
    ("quantile weibull", lambda x: np.quantile(x, 0.3, method="weibull"), "r"),
    ("quantile hazen", lambda x: np.quantile(x, 0.7, method="hazen"), "r"),
    ("quantile median_unbiased", lambda x: np.sum(np.quantile(x, Q, method="median_unbiased") * W3[:2]), "r"),
    ("quantile lower", lambda x: np.quantile(x, 0.3, method="lower"), "r"),
    ("quantile q as x", lambda x: np.quantile(W6, x[0]), "r"),
    ("nanmedian", lambda x: np.nanmedian(nanned(x)), "r"),
    ("nanmedian axis", lambda x: np.sum(np.nanmedian(nanned(x).reshape(2, 3), axis=1) * W3[:2]), ""),
    ("nanpercentile", lambda x: np.nanpercentile(nanned(x), 30.0), "r"),
    ("nanpercentile q array", lambda x: np.sum(np.nanpercentile(nanned(x), [10.0, 55.0]) * W3[:2]), "r"),
    ("nanquantile", lambda x: np.nanquantile(nanned(x), 0.3), "r"),
    ("nanquantile axis", lambda x: np.sum(np.nanquantile(nanned(x).reshape(2, 3), 0.4, axis=0) * W3), ""),
    ("nanquantile midpoint", lambda x: np.nanquantile(nanned(x), 0.3, method="midpoint"), "r"),
    # cov, corrcoef, average
    ("cov", lambda x: np.sum(np.cov(x.reshape(2, 3)) * M), "rfh"),
    ("cov rowvar", lambda x: np.sum(np.cov(x.reshape(3, 2), rowvar=False) * M), "rfh"),
    ("cov ddof bias", lambda x: np.sum(np.cov(x.reshape(2, 3), ddof=0) + np.cov(x.reshape(2, 3), bias=True)), "rfh"),
    ("cov aweights", lambda x: np.sum(np.cov(x.reshape(2, 3), aweights=W3) * M), "rfh"),
    ("cov aweights as x", lambda x: np.sum(np.cov(W6.reshape(2, 3) ** 2, aweights=x[:3]) * M), "r"),
    ("cov fweights", lambda x: np.sum(np.cov(x.reshape(2, 3), fweights=np.array([1, 2, 1])) * M), "rfh"),
    ("cov y", lambda x: np.sum(np.cov(x[:3], x[3:]) * M), "rfh"),
    ("corrcoef", lambda x: np.sum(np.corrcoef(x.reshape(2, 3)) * M), "rfh"),
    ("corrcoef rowvar", lambda x: np.sum(np.corrcoef(x.reshape(3, 2), rowvar=False) * M), "rfh"),
    ("corrcoef y", lambda x: np.sum(np.corrcoef(x[:3], x[3:] ** 2) * M), "rfh"),
    ("average", lambda x: np.average(x), "rfh"),
    ("average weights axis", lambda x: np.sum(np.average(x.reshape(2, 3), axis=1, weights=W3) * W3[:2]), "rfh"),
    ("average weights as x", lambda x: np.average(W6, weights=x), "rfh"),
    ("average axis tuple keepdims", lambda x: np.sum(np.average(x.reshape(1, 2, 3), axis=(0, 2), keepdims=True) * W3[:2].reshape(1, 2, 1)), "rfh"),
    ("average returned", lambda x: np.sum(np.average(x.reshape(2, 3), axis=1, weights=W3, returned=True)[0] * W3[:2]), "rfh"),
    ("average returned sum", lambda x: np.sum(np.average(W6.reshape(2, 3), axis=1, weights=x[:3] ** 2, returned=True)[1] * W3[:2]), "rfh"),
    ("average returned no weights", lambda x: np.average(x, returned=True)[0] * np.average(x, returned=True)[1], "rfh"),
    # nan family
    ("nanmax", lambda x: np.nanmax(nanned(x) * W6), "rf"),
    ("nanmin axis", lambda x: np.sum(np.nanmin(nanned(x).reshape(2, 3) * W6.reshape(2, 3), axis=0) * W3), "rf"),
    ("nanstd", lambda x: np.nanstd(nanned(x)), "r"),
    ("nanstd ddof axis", lambda x: np.sum(np.nanstd(nanned(x).reshape(2, 3), axis=1, ddof=1) * W3[:2]), "r"),
    ("nanvar", lambda x: np.nanvar(nanned(x)), "r"),
    ("nanvar axis keepdims", lambda x: np.sum(np.nanvar(nanned(x).reshape(2, 3), axis=0, keepdims=True) * W3), "r"),
    ("nanprod", lambda x: np.nanprod(nanned(x)), "rfh"),
    ("nanprod axis", lambda x: np.sum(np.nanprod(nanned(x).reshape(2, 3), axis=1) * W3[:2]), "rfh"),
    ("nancumsum", lambda x: np.sum(np.nancumsum(nanned(x)) * W6), "rfh"),
    ("nancumsum axis", lambda x: np.sum(np.nancumsum(nanned(x).reshape(2, 3), axis=1) * W6.reshape(2, 3)), "rfh"),
    ("nancumprod", lambda x: np.sum(np.nancumprod(nanned(x)) * W6), "rfh"),
    ("nansum", lambda x: np.nansum(nanned(x) * W6), "rfh"),
    ("nanmean axis", lambda x: np.sum(np.nanmean(nanned(x).reshape(2, 3), axis=0) * W3), "rfh"),
    ("nanargmax", lambda x: x[np.nanargmax(nanned(x))] * 2.0, "rfh"),
    ("nanargmin", lambda x: x[np.nanargmin(nanned(x))] * 2.0, "rfh"),
    ("unwrap", lambda x: np.sum(np.unwrap(x * 9.0) * W6), "rfh"),
    ("unwrap period", lambda x: np.sum(np.unwrap(x * 3.0, period=2.0) * W6), "rfh"),
    # spaces and grids
    ("linspace", lambda x: np.sum(np.linspace(x[0], x[1], 5) * np.arange(5.0)), "rfh"),
    ("linspace arrays", lambda x: np.sum(np.linspace(x[:3], x[3:], 4) ** 2), "rfh"),
    ("linspace axis", lambda x: np.sum(np.linspace(x[:3], 2.0, 4, axis=1) ** 2), "rfh"),
    ("linspace no endpoint axis -1", lambda x: np.sum(np.linspace(x[:3], x[3:].reshape(3, 1), 4, endpoint=False, axis=-1) ** 2), "rfh"),
    ("linspace retstep", lambda x: np.sum(np.linspace(x[:3], x[3:], 4, retstep=True)[1] ** 2), "rfh"),
    ("linspace retstep scalar", lambda x: np.linspace(x[0], x[1], 4, retstep=True)[1] ** 2, "rfh"),
    ("logspace", lambda x: np.sum(np.logspace(x[:3], x[3:], 4)), "rfh"),
    ("logspace base", lambda x: np.sum(np.logspace(x[0], x[1], 4, base=3.0)), "rfh"),
    ("geomspace", lambda x: np.sum(np.geomspace(x[:3], x[3:], 4)), "rfh"),
    ("geomspace scalar", lambda x: np.sum(np.geomspace(x[0], x[1], 4)), "rfh"),
    ("meshgrid", lambda x: np.sum(np.meshgrid(x[:2], x[2:])[0] * np.meshgrid(x[:2], x[2:])[1]), "rfh"),
    ("meshgrid ij sparse", lambda x: np.sum(np.meshgrid(x[:2], x[2:], indexing="ij", sparse=True)[1] ** 2), "rfh"),
    ("broadcast_arrays", lambda x: np.sum(np.broadcast_arrays(x[:3], x[3:].reshape(3, 1))[1] ** 2), "rfh"),
    ("broadcast shape", lambda x: np.sum(x * np.broadcast(x, x[:1]).shape[0]), "rfh"),
    # histogram edges, gradient, trapezoid
    ("histogram_bin_edges", lambda x: np.sum(np.histogram_bin_edges(x, bins=4) * np.arange(5.0)), "rfh"),
    ("histogram_bin_edges range", lambda x: np.sum(np.histogram_bin_edges(x, bins=3, range=(x[0], 1.0))), "r"),
    ("gradient", lambda x: np.sum(np.gradient(x ** 2) * W6), "rfh"),
    ("gradient spacing edge_order", lambda x: np.sum(np.gradient(x ** 2, 0.5, edge_order=2) * W6), "rfh"),
    ("gradient coordinates", lambda x: np.sum(np.gradient(x ** 2, W6 ** 1.5) * W6), "rfh"),
    ("gradient 2-d axis", lambda x: np.sum(np.gradient(x.reshape(2, 3) ** 2, axis=1) * W6.reshape(2, 3)), "rfh"),
    ("trapezoid", lambda x: np.trapezoid(x ** 2), "rfh"),
    ("trapezoid x", lambda x: np.trapezoid(x ** 2, x), "rfh"),
    ("trapezoid dx axis", lambda x: np.sum(np.trapezoid(x.reshape(2, 3) ** 2, dx=0.3, axis=1) * W3[:2]), "rfh"),
    # ufuncs with NumPy's options, copyto with where=, partition in place
    ("divide out=...", lambda x: np.sum(np.true_divide(x, 100, out=...) * W6), "rfh"),
    ("divide out=... 0-d", lambda x: np.true_divide(x[0], 100.0, out=...) * 3.0, "rfh"),
    ("subtract out where casting", lambda x: _subtract_where(x), "rfh"),
    ("multiply out where", lambda x: _multiply_where(x), "rfh"),
    ("sin out where", lambda x: _sin_where(x), "rfh"),
    ("copyto where", lambda x: _copyto_where(x), "rfh"),
    ("copyto where broadcast", lambda x: _copyto_where_broadcast(x), "rfh"),
    ("partition in place", lambda x: _partition(x), "rf"),
]  # fmt: skip

MODES = [(name, f, m, m in modes) for name, f, modes in CASES for m in "rfh"]


@pytest.mark.parametrize(
    "name, f, mode, works", MODES, ids=[f"{n}-{m}" for n, _, m, _ in MODES]
)
def test_numpy_statistics(name: str, f: F, mode: str, works: bool) -> None:
    with np.errstate(invalid="ignore"):
        check_mode(name, f, X, mode, works)
