"""SciPy's linear algebra as the NumPy functions it computes: twins (``gibbous.infer.
implementations``) of ``scipy.linalg``'s ``solve``, ``inv``, ``det``, ``lstsq``, ``pinv``,
``block_diag``, ``toeplitz``, ``circulant``, ``hankel`` and ``fiedler``.

SciPy's own Python reaches compiled kernels without rules (``find_det_from_lu``, the batched
``_solve``): each twin computes the same value with functions that have rules, reading the
entries SciPy's LAPACK call reads (``assume_a="sym"`` reads one triangle: the gradient goes
to that triangle), so both modes and Hessian-vector products follow from those rules.  The
``overwrite_*`` flags are allowed, never required: the twins overwrite nothing.
``check_finite`` raises what SciPy raises.  Values agree with SciPy's to rounding (a solve by
another factorisation: ``lstsq`` by the pseudo-inverse, whose cutoff is LAPACK's).
"""

from __future__ import annotations

import types
import typing as t

import numpy as np
import scipy.linalg as sla

from gibbous.infer.implementations import register_twin, twin_helper
from gibbous.ir.exceptions import GibbousError
from gibbous.library.linalg.twins import least_squares
from gibbous.infer.typerules.table import register_type_rule
from gibbous.ir import types as T
from gibbous.rules.registry import zero_derivative


def finite(*arrays: t.Any) -> None:
    """``check_finite=True``: SciPy's error for an array with an inf or a NaN (a check, run
    as it is: no derivative)."""
    for a in arrays:
        if not np.all(np.isfinite(a)):
            raise ValueError("array must not contain infs or NaNs")


zero_derivative(finite, ...)
register_type_rule(finite)(lambda args, kwargs: T.NONE)


@twin_helper
def read_matrix(a: t.Any, assume_a: t.Any, lower: bool) -> t.Any:
    """The matrix LAPACK's solver for ``assume_a`` reads from ``a``: all of it, one triangle
    standing for a symmetric (Hermitian) matrix, the diagonal, or a triangle itself."""
    if assume_a is None or assume_a in ("gen", "general", "banded", "tridiagonal"):
        return a
    if assume_a in ("sym", "symmetric", "her", "hermitian", "pos", "positive definite"):
        part = np.tril(a) if lower else np.triu(a)
        other = part if assume_a in ("sym", "symmetric") else np.conj(part)
        diagonal = np.diagonal(part, axis1=-2, axis2=-1)
        if assume_a not in ("sym", "symmetric"):
            diagonal = np.real(diagonal)  # (LAPACK reads a Hermitian diagonal as real)
        strict = part - np.tril(np.triu(part))  # (the triangle without its diagonal)
        return strict + np.swapaxes(other, -1, -2) - np.tril(np.triu(other)) + _diag(diagonal)
    if assume_a in ("diagonal",):
        return _diag(np.diagonal(a, axis1=-2, axis2=-1))
    if assume_a in ("upper triangular",):
        return np.triu(a)
    if assume_a in ("lower triangular",):
        return np.tril(a)
    raise ValueError(f"{assume_a!r} is not a recognized matrix structure")


@twin_helper
def _diag(d: t.Any) -> t.Any:
    """Matrices with the diagonals ``d`` (the last axis), of any batch shape."""
    return d[..., :, None] * np.eye(d.shape[-1], dtype=d.dtype)


def solve(
    a: t.Any,
    b: t.Any,
    lower: bool = False,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
    assume_a: t.Any = None,
    transposed: bool = False,
) -> t.Any:
    """``scipy.linalg.solve``."""
    a, b = np.asarray(a), np.asarray(b)
    if check_finite:
        finite(a, b)
    m = read_matrix(a, assume_a, lower)
    if transposed:
        m = np.swapaxes(m, -1, -2)
    if b.ndim == a.ndim - 1:
        return np.linalg.solve(m, b[..., None])[..., 0]
    return np.linalg.solve(m, b)


def inv(
    a: t.Any,
    overwrite_a: bool = False,
    check_finite: bool = True,
    *,
    assume_a: t.Any = None,
    lower: bool = False,
) -> t.Any:
    """``scipy.linalg.inv``."""
    a = np.asarray(a)
    if check_finite:
        finite(a)
    return np.linalg.inv(read_matrix(a, assume_a, lower))


def det(a: t.Any, overwrite_a: bool = False, check_finite: bool = True) -> t.Any:
    """``scipy.linalg.det``."""
    a = np.asarray(a)
    if check_finite:
        finite(a)
    return np.linalg.det(a)


def lstsq(
    a: t.Any,
    b: t.Any,
    cond: t.Any = None,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
    lapack_driver: t.Any = None,
) -> tuple[t.Any, t.Any, t.Any, t.Any]:
    """``scipy.linalg.lstsq``: residues a number for a 1-d ``b``."""
    a, b = np.asarray(a), np.asarray(b)
    if check_finite:
        finite(a, b)
    return least_squares(a, b, cond, number=True)


def pinv(
    a: t.Any,
    *,
    atol: t.Any = None,
    rtol: t.Any = None,
    return_rank: bool = False,
    check_finite: bool = True,
) -> t.Any:
    """``scipy.linalg.pinv``: the cutoff ``atol + rtol * max(s)`` (``atol`` 0, ``rtol``
    ``max(M, N) * eps`` by default)."""
    a = np.asarray(a)
    if check_finite:
        finite(a)
    if atol is not None and atol != 0:
        raise GibbousError(
            "scipy.linalg.pinv with atol: gibbous differentiates the relative cutoff (rtol) "
            "only; scale rtol instead"
        )
    if rtol is None:
        rtol = max(a.shape[-2], a.shape[-1]) * np.finfo(np.result_type(a.dtype, 1.0)).eps
    p = np.linalg.pinv(a, rcond=rtol)
    if not return_rank:
        return p
    s = np.linalg.svd(a, compute_uv=False)
    return p, int(np.sum(s > rtol * s[0])) if s.size else 0


def block_diag(*arrs: t.Any) -> t.Any:
    """``scipy.linalg.block_diag``: the arrays (as 2-d) along the diagonal."""
    if not arrs:
        return np.zeros((1, 0))
    blocks = [np.atleast_2d(a) for a in arrs]
    for k in blocks:
        if k.ndim > 2:
            raise ValueError("arguments in the following positions have dimension greater than 2")
    rows = sum(k.shape[0] for k in blocks)
    cols = sum(k.shape[1] for k in blocks)
    out = np.zeros((rows, cols), dtype=np.result_type(*blocks))
    r = 0
    c = 0
    for k in blocks:
        out[r : r + k.shape[0], c : c + k.shape[1]] = k
        r += k.shape[0]
        c += k.shape[1]
    return out


def toeplitz(c: t.Any, r: t.Any = None) -> t.Any:
    """``scipy.linalg.toeplitz``: first column ``c``, first row ``r`` (``conj(c)`` if not
    given; ``r[0]`` ignored)."""
    c = np.ravel(np.asarray(c))
    r = np.conj(c) if r is None else np.ravel(np.asarray(r))
    values = np.concatenate((r[:0:-1], c))  # (the diagonals, from the top right corner down)
    rows = np.arange(c.shape[0])[:, None]
    cols = np.arange(r.shape[0])[None, :]
    return values[r.shape[0] - 1 + rows - cols]


def circulant(c: t.Any) -> t.Any:
    """``scipy.linalg.circulant``: each column ``c`` shifted down by its index."""
    c = np.ravel(np.asarray(c))
    n = c.shape[0]
    return c[(np.arange(n)[:, None] - np.arange(n)[None, :]) % n]


def hankel(c: t.Any, r: t.Any = None) -> t.Any:
    """``scipy.linalg.hankel``: first column ``c``, last row ``r`` (zeros if not given;
    ``r[0]`` ignored), by indexing (SciPy strides a view, which forward mode cannot follow)."""
    c = np.asarray(c)
    r = np.zeros_like(c) if r is None else np.asarray(r)
    c, r = np.ravel(c), np.ravel(r)  # (SciPy warns of multidimensional input, and ravels it)
    values = np.concatenate((c, r[1:]))
    return values[np.arange(c.shape[0])[:, None] + np.arange(r.shape[0])[None, :]]


def fiedler(a: t.Any) -> t.Any:
    """``scipy.linalg.fiedler``: ``|a[i] - a[j]|`` (over the last axis of a batch)."""
    a = np.atleast_1d(np.asarray(a))
    if a.size == 0:
        return np.asarray([], dtype=np.float64)
    if a.size == 1:
        return np.asarray([[0.0]])
    return np.abs(a[..., :, None] - a[..., None, :])


for _fn, _twin in [
    (sla.solve, solve),
    (sla.inv, inv),
    (sla.det, det),
    (sla.lstsq, lstsq),
    (sla.pinv, pinv),
    (sla.block_diag, block_diag),
    (sla.toeplitz, toeplitz),
    (sla.circulant, circulant),
    (sla.hankel, hankel),
    (sla.fiedler, fiedler),
]:
    register_twin(_fn, t.cast(types.FunctionType, _twin))
