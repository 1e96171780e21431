"""SciPy: ``scipy.interpolate``'s compiled kernels as the NumPy they compute, so that SciPy's
own Python around them (``CubicSpline``, ``PchipInterpolator``, ``Akima1DInterpolator``,
``interp1d``, ``make_interp_spline``, ...) is derived in both modes.

* ``_ppoly.evaluate(c, x, xp, nu, extrapolate, out)``, the evaluation of a piecewise
  polynomial in the power basis (every ``PPoly``, the cubic splines among them): a twin, a
  sum over the powers of ``c[i] * (xp - x[i])`` with ``i`` the interval of each point
  (``searchsorted``, no derivative), written into ``out`` as the kernel writes.  Linear in
  ``c``; its derivative in ``xp`` (and ``x``) follows from the powers.
* ``_ppoly.integrate(c, x, a, b, extrapolate, out)`` (``PPoly.integrate``): a twin, each
  interval's antiderivative between the bounds clipped into it.
* LAPACK's tridiagonal solve ``?gtsv`` (``scipy.linalg.solve_banded`` with ``(1, 1)``, which
  ``CubicSpline`` calls): a rule in each mode (``interpolate_gtsv``), its derivatives two more
  tridiagonal solves and a tridiagonal product.
"""

from __future__ import annotations

import itertools
import math
import types
import typing as t

import numpy as np
from scipy.interpolate import _dierckx, _interpnd, _ppoly, _rgi_cython
from scipy.interpolate import _rbfinterp_np as _rbf_np
from scipy.interpolate import _rbfinterp_pythran as _rbf_pythran
from scipy.interpolate import _rbfinterp_xp as _rbf_xp

import scipy.linalg as sla
import scipy.linalg.lapack as lapack

from gibbous.infer.implementations import register_twin, twin_helper
from gibbous.rules.no_derivative import NoDerivativeError
from gibbous.library.common import (
    ANY,
    ARRAY,
    CD,
    NT,
    Array,
    RuleResult,
    bind,
    cotangent,
    needs,
    new_fdata,
    nothing,
    send,
    zero_for,
)
from gibbous.library.scipy.common import rdata_item
from gibbous.library.arrays.views_copies import shape_rule
from gibbous.rules import frules
from gibbous.rules.matrix_formulas import Operands, Options, TangentFormula, register_formula
from gibbous.rules.registry import primitive, zero_derivative
from gibbous.tangents.model import CoDual


@twin_helper
def _intervals(x: t.Any, xp: t.Any, m: int) -> t.Any:
    """The interval of each point, as ``_ppoly``'s ``find_interval``: ``x[i] <= xp < x[i+1]``
    (``>``, ``<=`` for a decreasing ``x``), the first or last one outside, the last at the
    end point."""
    if x[-1] >= x[0]:
        i = np.searchsorted(x, xp, side="right") - 1
    else:
        i = np.searchsorted(-x, -xp, side="right") - 1
    return np.clip(i, 0, m - 1)


@twin_helper
def _inside(x: t.Any, xp: t.Any) -> t.Any:
    lo = np.minimum(x[0], x[-1])
    hi = np.maximum(x[0], x[-1])
    return (xp >= lo) & (xp <= hi)


def evaluate(c: t.Any, x: t.Any, xp: t.Any, dx: t.Any, extrapolate: t.Any, out: t.Any) -> None:
    """``scipy.interpolate._ppoly.evaluate``: ``out[j] = sum_p c[k-1-p, i] d^dx/ds^dx s^p`` at
    ``s = xp[j] - x[i]``, ``i`` the interval of ``xp[j]`` (NaN outside without
    ``extrapolate``)."""
    if dx < 0:
        raise ValueError("Order of derivative cannot be negative")
    k = c.shape[0]
    i = _intervals(x, xp, c.shape[1])
    s = xp - x[i]
    result = np.zeros((xp.shape[0], c.shape[2]), dtype=np.result_type(c.dtype, s.dtype))
    for p in range(k):
        power = p - dx
        if power < 0:
            continue
        factor = math.factorial(p) / math.factorial(power)
        result = result + c[k - 1 - p][i] * (factor * s**power)[:, None]
    valid = _inside(x, xp) if not extrapolate else ~np.isnan(xp)
    out[...] = np.where(valid[:, None], result, np.nan)


def integrate(c: t.Any, x: t.Any, a: t.Any, b: t.Any, extrapolate: t.Any, out: t.Any) -> None:
    """``scipy.interpolate._ppoly.integrate``: ``F(b) - F(a)``, ``F(z)`` the integral from
    ``x[0]`` to ``z``: the whole intervals before ``z``'s and the antiderivative of ``z``'s
    own polynomial (the first or last one outside, with ``extrapolate``; NaN for a bound
    outside without it).  One interval holds each bound, a node too: the derivative in a
    bound is the polynomial's value there, once."""
    if b < a:
        raise ValueError("Integral bounds not in order")
    total = _integral_to(c, x, b) - _integral_to(c, x, a)
    if not extrapolate and not (_inside(x, a) and _inside(x, b)):
        total = total * np.nan
    out[...] = total


@twin_helper
def _antiderivative(c: t.Any, i: t.Any, s: t.Any) -> t.Any:
    """``sum_p c[k-1-p, i] s^(p+1) / (p+1)``: the integral of interval ``i``'s polynomial
    from its breakpoint to ``s`` past it (``i``, ``s`` arrays of one shape)."""
    k = c.shape[0]
    total = np.zeros(np.shape(s) + (c.shape[2],), dtype=c.dtype)
    for p in range(k):
        total = total + c[k - 1 - p][i] * (s ** (p + 1) / (p + 1))[..., None]
    return total


@twin_helper
def _integral_to(c: t.Any, x: t.Any, z: t.Any) -> t.Any:
    """The integral of the piecewise polynomial from ``x[0]`` to ``z``."""
    m = c.shape[1]
    whole = _antiderivative(c, np.arange(m), x[1:] - x[:-1])  # (each interval's, (m, n))
    before = np.concatenate((np.zeros((1, c.shape[2]), dtype=whole.dtype), np.cumsum(whole, axis=0)))
    i = _intervals(x, np.array([z]), m)
    return before[i[0]] + _antiderivative(c, i, np.array([z]) - x[i])[0]


def interp(x: t.Any, xp: t.Any, fp: t.Any, left: t.Any = None, right: t.Any = None) -> t.Any:
    """NumPy's compiled ``interp`` (``np.interp`` after its checks, ``interp1d``'s linear
    kind): the line through the two points about each ``x`` (``fp[j]`` at ``xp[j]``),
    ``left`` / ``right`` outside (``fp``'s first / last by default)."""
    x, xp, fp = np.asarray(x, dtype=float), np.asarray(xp, dtype=float), np.asarray(fp)
    number = x.ndim == 0
    x = np.reshape(x, (-1,)) if number else x
    n = xp.shape[0]
    if n == 0:
        raise ValueError("array of sample points is empty")
    if n > 1 and np.any(xp[1:] < xp[:-1]):
        raise NoDerivativeError(
            "numpy.interp with sample points xp not increasing: NumPy's result is not defined "
            "there (its search assumes them sorted); sort xp and fp together"
        )
    below = fp[0] if left is None else left
    above = fp[-1] if right is None else right
    if n == 1:
        inner = np.zeros_like(x) + fp[0]
    else:
        j = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, n - 2)
        slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j])
        inner = np.where(x == xp[-1], fp[-1], fp[j] + slope * (x - xp[j]))
    found = np.where(x < xp[0], below, np.where(x > xp[-1], above, inner))
    return found[0] if number else found


@twin_helper
def _knot_intervals(t: t.Any, k: int, xp: t.Any) -> t.Any:
    """The knot interval ``l`` of each point, as ``_dierckx``'s ``find_interval``:
    ``t[l] <= xp < t[l+1]`` with ``k <= l < n`` (``n = len(t) - k - 1``), the last one at
    ``t[n]`` and the first or last one outside."""
    n = t.shape[0] - k - 1
    return np.clip(np.searchsorted(t, xp, side="right") - 1, k, n - 1)


@twin_helper
def _basis(t: t.Any, k: int, xp: t.Any, left: t.Any) -> t.Any:
    """The ``k + 1`` B-splines of degree ``k`` not zero on the interval ``left`` of each point
    (those of index ``left - k`` to ``left``), by de Boor's recursion (``evaluate_all_bspl``):
    a list of arrays shaped as ``xp``."""
    h = [np.ones_like(xp)]
    for j in range(1, k + 1):
        previous = h
        h = [np.zeros_like(xp) for _ in range(j + 1)]
        for n in range(1, j + 1):
            xb = t[left + n]
            xa = t[left + n - j]
            same = xb == xa
            w = np.where(same, 0.0, previous[n - 1] / np.where(same, 1.0, xb - xa))
            h[n - 1] = h[n - 1] + w * (xb - xp)
            h[n] = w * (xp - xa)
    return h


def evaluate_spline(t: t.Any, c: t.Any, k: t.Any, xp: t.Any, nu: t.Any, extrapolate: t.Any) -> t.Any:
    """``scipy.interpolate._dierckx.evaluate_spline``: ``sum_i c[i] B_i^(nu)(xp)`` over the
    ``k + 1`` B-splines not zero about each point; the derivative through the coefficients
    (``p (c_i - c_{i-1}) / (t_{i+p} - t_i)`` for degree ``p``, ``nu`` times) and the
    B-splines of degree ``k - nu``.  NaN outside ``[t[k], t[n]]`` without ``extrapolate``."""
    if nu < 0:
        raise NotImplementedError("Cannot do derivative order %s." % nu)
    n = t.shape[0] - k - 1
    left = _knot_intervals(t, k, xp)
    coefficients = [c[left - k + a] for a in range(k + 1)]
    for p in range(k, k - nu, -1):
        if p == 0:
            coefficients = [np.zeros_like(coefficients[0])]
            break
        nxt = []
        for b in range(p):
            i = left - p + b + 1
            span = t[i + p] - t[i]
            zero = (span == 0)[:, None]
            step = (coefficients[b + 1] - coefficients[b]) / np.where(zero, 1.0, span[:, None])
            nxt.append(np.where(zero, 0.0, p * step))
        coefficients = nxt
    degree = max(k - nu, 0)
    h = _basis(t, degree, xp, left)
    result = coefficients[0] * h[0][:, None]
    for a in range(1, degree + 1):
        result = result + coefficients[a] * h[a][:, None]
    if extrapolate:
        valid = ~np.isnan(xp)
    else:
        valid = (xp >= t[k]) & (xp <= t[n])
    return np.where(valid[:, None], result, np.nan)


def coloc(x: t.Any, t: t.Any, k: t.Any, ab: t.Any, offset: t.Any = 0) -> None:
    """``scipy.interpolate._dierckx._coloc``: the collocation matrix ``A[offset + j, l] =
    B_l(x[j])`` written into ``ab`` (the C-ordered transpose of LAPACK's band storage with
    ``k`` lower and upper diagonals: ``ab[l, 2k + i - l] = A[i, l]``)."""
    left = _knot_intervals(t, k, x)
    h = _basis(t, k, x, left)
    rows = np.arange(x.shape[0]) + offset
    for a in range(k + 1):
        column = left - k + a
        ab[column, 2 * k + rows - column] = h[a]


def ndim_coords_from_arrays(points: t.Any, ndim: t.Any = None) -> t.Any:
    """``scipy.interpolate._interpnd._ndim_coords_from_arrays``: a tuple of coordinate arrays
    (broadcast together) as one ``(..., ndim)`` array; an array as it is, a 1-d one as
    rows of ``ndim`` coordinates."""
    if isinstance(points, tuple) and len(points) == 1:
        points = points[0]
    if isinstance(points, tuple):
        parts = np.broadcast_arrays(*points)
        for part in parts[1:]:
            if part.shape != parts[0].shape:
                raise ValueError("coordinate arrays do not have the same shape")
        return np.stack([np.asarray(part, dtype=float) for part in parts], axis=-1)
    points = np.asanyarray(points)
    if points.ndim == 1:
        points = points.reshape(-1, 1) if ndim is None else points.reshape(-1, ndim)
    return points


def find_indices(grid: t.Any, xi: t.Any) -> tuple[t.Any, t.Any]:
    """``scipy.interpolate._rgi_cython.find_indices``: for each axis, the cell of each
    point's coordinate (``grid[i] <= x < grid[i+1]``, the first or last cell outside) and the
    distance into it, as a fraction of the cell (NaN for a NaN coordinate)."""
    indices = []
    distances = []
    for axis in range(len(grid)):
        g = grid[axis]
        x = xi[axis]
        i = np.clip(np.searchsorted(g, x, side="right") - 1, 0, g.shape[0] - 2)
        distances.append((x - g[i]) / (g[i + 1] - g[i]))
        indices.append(np.where(np.isnan(x), -1, i))
    return np.stack(indices).astype(np.intp), np.stack(distances)


def evaluate_linear_2d(values: t.Any, indices: t.Any, distances: t.Any, grid: t.Any, out: t.Any) -> t.Any:
    """``scipy.interpolate._rgi_cython.evaluate_linear_2d``: the bilinear interpolation of
    ``values`` in each point's cell, into ``out`` (NaN where a coordinate is NaN, index -1)."""
    i, j = np.maximum(indices[0], 0), np.maximum(indices[1], 0)
    y, z = distances[0], distances[1]
    found = (
        values[i, j] * (1 - y) * (1 - z) + values[i, j + 1] * (1 - y) * z
        + values[i + 1, j] * y * (1 - z) + values[i + 1, j + 1] * y * z
    )  # fmt: skip
    out[...] = np.where((indices[0] < 0) | (indices[1] < 0), np.nan, found)
    return out


def product(*iterables: t.Any, repeat: int = 1) -> t.Any:
    """``itertools.product``: the tuples of one item of each iterable, the last varying
    fastest (SciPy's ``RegularGridInterpolator`` walks the corners of a cell so)."""
    pools = [tuple(p) for p in iterables] * repeat
    found: list[tuple[t.Any, ...]] = [()]
    for pool in pools:
        found = [head + (item,) for head in found for item in pool]
    return iter(found)


def build_and_solve_system(
    y: t.Any, d: t.Any, smoothing: t.Any, kernel: t.Any, epsilon: t.Any, powers: t.Any, xp: t.Any
) -> tuple[t.Any, t.Any, t.Any]:
    """``scipy.interpolate._rbfinterp_np._build_and_solve_system``: SciPy's system (as its
    array-API backend builds it), solved by ``np.linalg.solve`` in place of LAPACK's ``gesv``
    (``LinAlgError`` for a singular one, without SciPy's note on the monomials' rank)."""
    lhs, rhs, shift, scale = _rbf_xp._build_system(y, d, smoothing, kernel, epsilon, powers, np)
    return shift, scale, np.linalg.solve(lhs, rhs)


def rbf_build_system(
    y: t.Any, d: t.Any, smoothing: t.Any, kernel: t.Any, epsilon: t.Any, powers: t.Any
) -> t.Any:
    """``_rbfinterp_pythran._build_system``: the array-API backend's, in NumPy."""
    return _rbf_xp._build_system(y, d, smoothing, kernel, epsilon, powers, np)


def rbf_evaluation_coefficients(
    x: t.Any, y: t.Any, kernel: t.Any, epsilon: t.Any, powers: t.Any, shift: t.Any, scale: t.Any
) -> t.Any:
    """``_rbfinterp_pythran._build_evaluation_coefficients``: the array-API backend's."""
    return _rbf_xp._build_evaluation_coefficients(x, y, kernel, epsilon, powers, shift, scale, np)


def rbf_polynomial_matrix(x: t.Any, powers: t.Any) -> t.Any:
    """``_rbfinterp_pythran._polynomial_matrix``: the array-API backend's."""
    return _rbf_xp.polynomial_matrix(x, powers, np)


_COMPILED_INTERP = getattr(np, "_core")._multiarray_umath.interp
for _fn, _twin in [
    (_ppoly.evaluate, evaluate),
    (_ppoly.integrate, integrate),
    (_COMPILED_INTERP, interp),
    (_dierckx.evaluate_spline, evaluate_spline),
    (_dierckx._coloc, coloc),
    (_interpnd._ndim_coords_from_arrays, ndim_coords_from_arrays),
    (_rgi_cython.find_indices, find_indices),
    (_rgi_cython.evaluate_linear_2d, evaluate_linear_2d),
    (itertools.product, product),
    (_rbf_np._build_and_solve_system, build_and_solve_system),
    (_rbf_pythran._build_system, rbf_build_system),
    (_rbf_pythran._build_evaluation_coefficients, rbf_evaluation_coefficients),
    (_rbf_pythran._polynomial_matrix, rbf_polynomial_matrix),  # (not np.interp itself: its Python is read)
]:
    register_twin(_fn, t.cast(types.FunctionType, _twin))


# --------------------------------------------------------------------------------------------
# LAPACK's tridiagonal solve ?gtsv (scipy.linalg.solve_banded with (l, u) = (1, 1))

GTSV_PARAMETERS = ("overwrite_dl", "overwrite_d", "overwrite_du", "overwrite_b")


def _gtsv_solve(gtsv: t.Any, dl: Array, d: Array, du: Array, b: Array) -> Array:
    """``A^-1 b`` for ``A`` with sub-, main and super-diagonals ``dl``, ``d``, ``du``, on
    copies (LAPACK overwrites the diagonals with its factors)."""
    x, info = gtsv(dl.copy(), d.copy(), du.copy(), b.copy())[3:]
    if info != 0:
        raise np.linalg.LinAlgError(f"singular matrix (LAPACK gtsv info {info})")
    return t.cast(Array, x)


def _tridiagonal_product(dl: Array, d: Array, du: Array, x: Array) -> Array:
    """``A x`` for the tridiagonal ``A`` (``x`` of 1 or 2 axes)."""
    shape = (-1,) + (1,) * (x.ndim - 1)
    y = d.reshape(shape) * x
    y[:-1] += du.reshape(shape) * x[1:]
    y[1:] += dl.reshape(shape) * x[:-1]
    return y


def _refuse_factors(dz: t.Any, n: int, what: str) -> None:
    """A cotangent reaching the LU factors LAPACK returns (the first ``n`` results): refused,
    they have no derivative here."""
    for i in range(n):
        item = rdata_item(dz, i)
        if isinstance(item, np.ndarray) and np.any(item):
            raise NoDerivativeError(f"{what}: its LU factors have no derivative in gibbous")


def _by_row(p: Array) -> Array:
    """Sums over the right-hand sides (the columns of a 2-d ``p``)."""
    return t.cast(Array, np.sum(p, axis=1)) if p.ndim == 2 else p


def gtsv_rrule(f: CD, dl: CD, d: CD, du: CD, b: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``(du2, d', du', x, info) = ?gtsv(dl, d, du, b)`` solves ``A x = b``, ``A``
    tridiagonal: ``b`` gets ``A^-T g`` (a solve with ``dl`` and ``du`` swapped) and the
    diagonals the matching diagonals of ``-(A^-T g) x^T``.  The factors LAPACK returns in
    place of the diagonals carry no derivative (a cotangent reaching them is refused).  The
    inputs are not overwritten, whatever the ``overwrite_*`` flags say (nothing reads them
    after SciPy's call)."""
    what = f"scipy.linalg.lapack.{getattr(f.primal, '__name__', 'gtsv')}"
    bind(GTSV_PARAMETERS, args, kwargs, {}, what)
    dlp, dp, dup, bp = (np.asarray(c.primal) for c in (dl, d, du, b))
    if np.iscomplexobj(dp) or np.iscomplexobj(bp):
        raise NoDerivativeError(f"{what} of complex operands: no rule")
    du2, d2, du1, x, info = f.primal(dlp.copy(), dp.copy(), dup.copy(), bp.copy())
    x = x.copy()  # (C-ordered: LAPACK's one column has strides a C-contiguous fdata does not)
    factors = (du2, d2, du1, x, info)
    xf = new_fdata(x)
    rest = nothing(len(args) + len(kwargs))
    zeros = (zero_for(dl), zero_for(d), zero_for(du), zero_for(b))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        _refuse_factors(dz, 3, what)
        g = cotangent(xf, rdata_item(dz, 3))
        if g is None or not any(map(needs, (dl, d, du, b))) or factors[4] != 0:
            return (NT, *zeros, *rest)
        gb = _gtsv_solve(f.primal, dup, dp, dlp, g)
        gd = -_by_row(gb * x)
        gdu = -_by_row(gb[:-1] * x[1:])
        gdl = -_by_row(gb[1:] * x[:-1])
        return (
            NT,
            send(dl, gdl) if needs(dl) else zeros[0],
            send(d, gd) if needs(d) else zeros[1],
            send(du, gdu) if needs(du) else zeros[2],
            send(b, gb) if needs(b) else zeros[3],
            *rest,
        )

    fdata = (new_fdata(factors[0]), new_fdata(factors[1]), new_fdata(factors[2]), xf, NT)
    return CoDual(factors, fdata), pullback


def _gtsv_tangent(z: t.Any, ops: Operands, dops: Operands, options: Options) -> t.Any:
    """``dx = A^-1 (db - dA x)``; the factors' tangents are NaN (no derivative: never a
    silently wrong number)."""
    dl, d, du, _ = (np.asarray(o) for o in ops)
    ddl, dd, ddu, db = dops
    x = z[3]
    rhs = np.zeros_like(x) if db is None else np.array(db, dtype=x.dtype)
    if not (ddl is None and dd is None and ddu is None):
        zero = np.zeros_like
        rhs = rhs - _tridiagonal_product(
            zero(dl) if ddl is None else ddl, zero(d) if dd is None else dd,
            zero(du) if ddu is None else ddu, x,
        )  # fmt: skip
    dx = _gtsv_solve(_GTSV[x.dtype.char], dl, d, du, rhs)
    nan = np.full_like
    return nan(z[0], np.nan), nan(z[1], np.nan), nan(z[2], np.nan), dx, None


_GTSV = {"d": lapack.dgtsv, "f": lapack.sgtsv}
for _gtsv in _GTSV.values():
    primitive(_gtsv, ANY, ANY, ANY, ANY, ...)(gtsv_rrule)
    register_formula(
        TangentFormula(
            _gtsv, f"scipy.linalg.lapack.{_gtsv.__name__}", _gtsv_tangent, operands=4,
            parameters=GTSV_PARAMETERS, written=False,
        )  # fmt: skip
    )


# --------------------------------------------------------------------------------------------
# LAPACK's banded solve ?gbsv (make_interp_spline calls it itself)

GBSV_PARAMETERS = ("overwrite_ab", "overwrite_b")


def _gbsv_solve(gbsv: t.Any, kl: int, ku: int, ab: Array, b: Array) -> Array:
    """``A^-1 b`` for ``A`` in ``gbsv``'s band storage ``ab`` (``A[i, j] = ab[kl + ku + i -
    j, j]``, the first ``kl`` rows not read), on copies."""
    x, info = gbsv(kl, ku, ab.copy(), b.copy())[2:]
    if info != 0:
        raise np.linalg.LinAlgError(f"singular matrix (LAPACK gbsv info {info})")
    return t.cast(Array, x)


def _band_diagonals(kl: int, ku: int, n: int) -> t.Iterator[tuple[int, int, slice, slice]]:
    """For each diagonal ``d = i - j`` of the band: its row of the storage, and the columns
    ``j`` and rows ``i = j + d`` of its entries."""
    for d in range(-ku, kl + 1):
        j = slice(max(0, -d), min(n, n - d))
        yield kl + ku + d, d, j, slice(j.start + d, j.stop + d)


def _band_transpose(kl: int, ku: int, ab: Array) -> Array:
    """The band storage of ``A^T`` (``ku`` lower and ``kl`` upper diagonals)."""
    out = np.zeros((2 * ku + kl + 1, ab.shape[1]), dtype=ab.dtype)
    for row, d, j, i in _band_diagonals(kl, ku, ab.shape[1]):
        out[kl + ku - d, i] = ab[row, j]  # (A^T[j, i] = A[i, j]: the diagonal -d of A^T)
    return out


def _band_product(kl: int, ku: int, ab: Array, x: Array) -> Array:
    """``A x`` for ``A`` in band storage (``x`` of 1 or 2 axes)."""
    y = np.zeros_like(x)
    shape = (-1,) + (1,) * (x.ndim - 1)
    for row, _, j, i in _band_diagonals(kl, ku, ab.shape[1]):
        y[i] += ab[row, j].reshape(shape) * x[j]
    return y


def gbsv_rrule(f: CD, kl: CD, ku: CD, ab: CD, b: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``(lu, piv, x, info) = ?gbsv(kl, ku, ab, b)`` solves ``A x = b``, ``A`` banded:
    ``b`` gets ``A^-T g`` and the band of ``ab`` the band of ``-(A^-T g) x^T``.  The factors
    carry no derivative (a cotangent reaching them is refused); the inputs are not
    overwritten, whatever ``overwrite_*`` says."""
    what = f"scipy.linalg.lapack.{getattr(f.primal, '__name__', 'gbsv')}"
    bind(GBSV_PARAMETERS, args, kwargs, {}, what)
    lower, upper = int(kl.primal), int(ku.primal)
    abp, bp = np.asarray(ab.primal), np.asarray(b.primal)
    if np.iscomplexobj(abp) or np.iscomplexobj(bp):
        raise NoDerivativeError(f"{what} of complex operands: no rule")
    lu, piv, x, info = f.primal(lower, upper, abp.copy(), bp.copy())
    x = x.copy()  # (C-ordered: LAPACK's one column has strides a C-contiguous fdata does not)
    result = (lu, piv, x, info)
    xf = new_fdata(x)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        _refuse_factors(dz, 1, what)
        g = cotangent(xf, rdata_item(dz, 2))
        if g is None or not (needs(ab) or needs(b)) or result[3] != 0:
            return (NT, NT, NT, zero_for(ab), zero_for(b), *rest)
        gb = _gbsv_solve(f.primal, upper, lower, _band_transpose(lower, upper, abp), g)
        gab = None
        if needs(ab):
            gab = np.zeros_like(abp)
            for row, _, j, i in _band_diagonals(lower, upper, abp.shape[1]):
                gab[row, j] = -_by_row(gb[i] * x[j])
        return (NT, NT, NT, send(ab, gab), send(b, gb) if needs(b) else zero_for(b), *rest)

    fdata = (new_fdata(result[0]), NT, xf, NT)
    return CoDual(result, fdata), pullback


def _gbsv_tangent(z: t.Any, ops: Operands, dops: Operands, options: Options) -> t.Any:
    """``dx = A^-1 (db - dA x)``; the factor's tangent NaN (no derivative)."""
    kl, ku, ab = int(ops[0]), int(ops[1]), np.asarray(ops[2])
    dab, db = dops[2], dops[3]
    x = z[2]
    rhs = np.zeros_like(x) if db is None else np.array(db, dtype=x.dtype)
    if dab is not None:
        rhs = rhs - _band_product(kl, ku, np.asarray(dab), x)
    dx = _gbsv_solve(_GBSV[x.dtype.char], kl, ku, ab, rhs)
    return np.full_like(z[0], np.nan), None, dx, None


_GBSV = {"d": lapack.dgbsv, "f": lapack.sgbsv}
for _gbsv in _GBSV.values():
    primitive(_gbsv, ANY, ANY, ANY, ANY, ...)(gbsv_rrule)
    register_formula(
        TangentFormula(
            _gbsv, f"scipy.linalg.lapack.{_gbsv.__name__}", _gbsv_tangent, operands=4,
            parameters=GBSV_PARAMETERS, written=False,
        )  # fmt: skip
    )

# Which LAPACK (BLAS) routine suits the arrays: their dtypes decide it, not their values.
for _fn in {sla.get_lapack_funcs, lapack.get_lapack_funcs, sla.get_blas_funcs}:
    zero_derivative(_fn, ...)


# --------------------------------------------------------------------------------------------
# ndarray.view(dtype) that keeps the dtype, or reads complex numbers as pairs of reals
# (RBFInterpolator's ``d.view(float)``): a view, its fdata the same view of the fdata.

_VIEW = shape_rule(None)


def view_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``x.view()``, ``x.view(dtype)`` for ``dtype`` ``x``'s own, or the real type of
    ``x``'s complex one (the gradient of the pairs is the complex gradient, read as pairs)."""
    if not _plain_view(x.primal, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()}):
        raise NoDerivativeError(
            "numpy.ndarray.view: gibbous differentiates a view as the same dtype or a complex "
            "array's real pairs only"
        )
    return _VIEW(f, x, *args, **kwargs)


def _plain_view(x: t.Any, dtype: t.Any = None, type: t.Any = None) -> bool:
    if type is not None or not isinstance(x, np.ndarray):
        return False
    if dtype is None:
        return True
    wanted = np.dtype(dtype)
    return bool(wanted == x.dtype or (x.dtype.kind == "c" and wanted == np.finfo(x.dtype).dtype))


primitive(np.ndarray.view, ARRAY, ...)(view_rrule)
frules.register_linear([np.ndarray.view], most=2)
