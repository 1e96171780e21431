"""SciPy's decompositions as the NumPy ones they compute: twins (``gibbous.infer.
implementations``) of ``scipy.linalg``'s ``eig``, ``eigvals``, ``eigh``, ``eigvalsh``,
``svd``, ``svdvals``, ``qr``, ``qr_multiply``, ``rq``, ``norm`` and ``lu_solve``.

SciPy's Python reaches LAPACK wrappers without rules (``geev``, ``syevr``, ``gesdd``,
``geqrf``, ``nrm2``, ``getrs``): each twin computes the same value with ``np.linalg``'s
functions, whose rules give both modes.  What the twins take beyond NumPy's:

* ``eigh``/``eigvalsh``: the triangle read (``lower``), the generalized problems of the three
  ``type``s (by the Cholesky factor of ``b``, as LAPACK's ``sygvd`` reduces them),
  ``subset_by_index``, ``subset_by_value`` (which eigenvalues are kept is piecewise constant)
  and ``eigvals_only``; ``driver`` chooses only how SciPy computes the same values.
* ``eig``/``eigvals``: complex eigenvalues always, as SciPy returns them,
  ``homogeneous_eigvals``; not ``b`` (the generalized problem) nor ``left`` eigenvectors.
* ``svd``: ``full_matrices``, ``compute_uv``, both ``lapack_driver``s.
* ``qr``: modes ``"full"`` (of square and wide matrices: the extra columns of a tall one's
  ``Q`` are not unique), ``"economic"`` and ``"r"`` (a 1-tuple, as SciPy returns it); a wide
  matrix's ``R`` continues with ``Q^H`` times its columns past the square; not ``pivoting``
  nor ``"raw"``.

Eigenvectors and singular vectors are fixed only up to a sign (a phase) each, which SciPy's
drivers choose differently from NumPy's (``syevr`` against ``syevd``): the twins take SciPy's
choice, ``signs``, a piecewise-constant factor per vector computed from SciPy's own result (no
derivative), so the values are SciPy's and so are the derivatives of every loss.
"""

from __future__ import annotations

import types
import typing as t

import numpy as np
import scipy.linalg as sla

from gibbous.infer.implementations import register_twin, twin_helper
from gibbous.ir.exceptions import UnsupportedArgumentError
from gibbous.library.scipy.linalg_twins import finite
from gibbous.rules.registry import zero_derivative
from gibbous.infer.typerules.table import register_type_rule
from gibbous.ir import types as T


def signs(ours: t.Any, theirs: t.Any) -> t.Any:
    """The unit factor of each column of ``ours`` that makes it the column of ``theirs`` (the
    same vector up to a sign or a phase): ``theirs ~ ours * signs(ours, theirs)``."""
    inner = np.sum(np.conj(ours) * theirs, axis=-2)
    size = np.abs(inner)
    return np.where(size > 0, inner / np.where(size > 0, size, 1), 1)


def eigh_signs(v: t.Any, *args: t.Any, **kwargs: t.Any) -> t.Any:
    """``signs`` of ``v`` against the eigenvectors SciPy's ``eigh(*args, **kwargs)`` gives."""
    return signs(v, sla.eigh(*args, **kwargs)[1])


def svd_signs(u: t.Any, a: t.Any, full_matrices: bool, lapack_driver: str) -> t.Any:
    """``signs`` of ``u`` against ``U`` of SciPy's ``svd``."""
    return signs(u, sla.svd(a, full_matrices=full_matrices, lapack_driver=lapack_driver)[0])


for _fn in (signs, eigh_signs, svd_signs):  # (piecewise constant: no derivative)
    zero_derivative(_fn, ...)


@twin_helper
def _refuse(what: str, why: str) -> None:
    raise UnsupportedArgumentError(f"scipy.linalg.{what} {why}: no rule")


@twin_helper
def _reduced(a: t.Any, b: t.Any, lower: bool, type: int) -> tuple[t.Any, t.Any]:
    """The symmetric matrix of the standard problem the generalized one of ``type`` reduces
    to, with ``b = L L^H``, and the map of its eigenvectors to the generalized ones: ``C =
    L^-1 A L^-H`` and ``v = L^-H y`` (type 1), ``C = L^H A L`` and ``v = L^-H y`` (2) or
    ``v = L y`` (3)."""
    sa = _hermitian(a, lower)
    low = np.linalg.cholesky(_hermitian(b, lower))
    lh = np.conj(np.swapaxes(low, -1, -2))
    if type == 1:
        left = sla.solve_triangular(low, sa, lower=True)
        c = np.conj(np.swapaxes(sla.solve_triangular(low, np.conj(left.T), lower=True), -1, -2))
        return c, sla.solve_triangular(lh, np.eye(low.shape[-1]), lower=False)
    if type in (2, 3):
        c = lh @ sa @ low
        return c, sla.solve_triangular(lh, np.eye(low.shape[-1]), lower=False) if type == 2 else low
    raise ValueError(f"unknown type {type!r}: it must be 1, 2 or 3")


@twin_helper
def _hermitian(a: t.Any, lower: bool) -> t.Any:
    """The Hermitian matrix one triangle of ``a`` stands for (its diagonal read as real)."""
    part = np.tril(a, -1) if lower else np.triu(a, 1)
    d = np.real(np.diagonal(a)) if np.iscomplexobj(a) else np.diagonal(a)
    return part + np.conj(np.swapaxes(part, -1, -2)) + d * np.eye(a.shape[-1])


@twin_helper
def _kept(w: t.Any, subset_by_index: t.Any, subset_by_value: t.Any) -> tuple[int, int]:
    """The range of ascending eigenvalues kept: ``subset_by_index``'s ``[lo, hi]``, or those
    in ``subset_by_value``'s ``(lo, hi]``."""
    n = w.shape[-1]
    if subset_by_index is not None:
        lo, hi = subset_by_index
        return int(lo), int(hi) + 1
    if subset_by_value is not None:
        lo, hi = subset_by_value
        return int(np.sum(w <= lo)), int(np.sum(w <= hi))
    return 0, n


def eigh(
    a: t.Any,
    b: t.Any = None,
    *,
    lower: bool = True,
    eigvals_only: bool = False,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    type: int = 1,
    check_finite: bool = True,
    subset_by_index: t.Any = None,
    subset_by_value: t.Any = None,
    driver: t.Any = None,
) -> t.Any:
    """``scipy.linalg.eigh``."""
    a = np.asarray(a)
    if check_finite:
        finite(a)
    if a.ndim != 2:
        _refuse("eigh", "of other than one matrix")
    if b is None:
        w, v = np.linalg.eigh(a, "L" if lower else "U")
    else:
        b = np.asarray(b)
        if check_finite:
            finite(b)
        c, back = _reduced(a, b, lower, type)
        w, y = np.linalg.eigh(c)
        v = back @ y
    lo, hi = _kept(w, subset_by_index, subset_by_value)
    w = w[lo:hi]
    if eigvals_only:
        return w
    v = v[:, lo:hi]
    return w, v * eigh_signs(
        v, a, b, lower=lower, type=type, subset_by_index=subset_by_index,
        subset_by_value=subset_by_value, driver=driver, check_finite=False,
    )  # fmt: skip


def eigvalsh(
    a: t.Any,
    b: t.Any = None,
    *,
    lower: bool = True,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    type: int = 1,
    check_finite: bool = True,
    subset_by_index: t.Any = None,
    subset_by_value: t.Any = None,
    driver: t.Any = None,
) -> t.Any:
    """``scipy.linalg.eigvalsh``."""
    return eigh(
        a, b, lower=lower, eigvals_only=True, type=type, check_finite=check_finite,
        subset_by_index=subset_by_index, subset_by_value=subset_by_value, driver=driver,
    )  # fmt: skip


def eig(
    a: t.Any,
    b: t.Any = None,
    left: bool = False,
    right: bool = True,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
    homogeneous_eigvals: bool = False,
) -> t.Any:
    """``scipy.linalg.eig``: the eigenvalues complex, the eigenvectors ``geev``'s (NumPy's)."""
    a = np.asarray(a)
    if check_finite:
        finite(a)
    if b is not None:
        _refuse("eig", "of a generalized problem (b)")
    if left:
        _refuse("eig", "with left=True")
    if a.ndim != 2:
        _refuse("eig", "of other than one matrix")
    if right:
        w, v = np.linalg.eig(a)
    else:
        w = np.linalg.eigvals(a)
    w = w + 0j
    if homogeneous_eigvals:
        w = np.stack((w, np.ones_like(w)))
    return (w, v) if right else w


def eigvals(
    a: t.Any,
    b: t.Any = None,
    overwrite_a: bool = False,
    check_finite: bool = True,
    homogeneous_eigvals: bool = False,
) -> t.Any:
    """``scipy.linalg.eigvals``."""
    return eig(a, b, right=False, check_finite=check_finite, homogeneous_eigvals=homogeneous_eigvals)


def svd(
    a: t.Any,
    full_matrices: bool = True,
    compute_uv: bool = True,
    overwrite_a: bool = False,
    check_finite: bool = True,
    lapack_driver: str = "gesdd",
) -> t.Any:
    """``scipy.linalg.svd`` (``gesdd`` is NumPy's driver; ``gesvd``'s vectors may differ from
    its by signs, which are taken from SciPy's result)."""
    a = np.asarray(a)
    if check_finite:
        finite(a)
    if a.ndim != 2:
        _refuse("svd", "of other than one matrix")
    if not compute_uv:
        return np.linalg.svd(a, compute_uv=False)
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    if lapack_driver == "gesdd":
        return u, s, vh
    if full_matrices and a.shape[0] != a.shape[1]:
        _refuse("svd", "with lapack_driver='gesvd' and full_matrices=True of a non-square matrix")
    d = svd_signs(u, a, full_matrices, lapack_driver)
    return u * d, s, np.conj(d)[:, None] * vh


def svdvals(a: t.Any, overwrite_a: bool = False, check_finite: bool = True) -> t.Any:
    """``scipy.linalg.svdvals``."""
    return svd(a, compute_uv=False, check_finite=check_finite)


QR_MODES = ("full", "economic", "r")


def qr(
    a: t.Any,
    overwrite_a: bool = False,
    lwork: t.Any = None,
    mode: str = "full",
    pivoting: bool = False,
    check_finite: bool = True,
) -> t.Any:
    """``scipy.linalg.qr``: ``"r"`` gives ``(R,)``."""
    a = np.asarray(a)
    if check_finite:
        finite(a)
    if pivoting:
        _refuse("qr", "with pivoting=True")
    if mode not in QR_MODES:
        _refuse("qr", f"with mode={mode!r}")
    if a.ndim != 2:
        _refuse("qr", "of other than one matrix")
    m, n = a.shape
    if m < n:  # (Householder QR of a wide matrix: that of its leading square block)
        q, r = np.linalg.qr(a[:, :m])
        r = np.concatenate((r, np.conj(q.T) @ a[:, m:]), axis=1)
    elif mode == "full" and m > n:
        _refuse("qr", "with mode='full' of a matrix with more rows than columns (the extra "
                "columns of Q are not unique); pass mode='economic'")
    else:
        q, r = np.linalg.qr(a)
    if mode == "r" and m > n:  # (SciPy's "r" is the full R, with its rows of zeros)
        r = np.concatenate((r, np.zeros((m - n, n), r.dtype)), axis=0)
    return (r,) if mode == "r" else (q, r)


def qr_multiply(
    a: t.Any,
    c: t.Any,
    mode: str = "right",
    pivoting: bool = False,
    conjugate: bool = False,
    overwrite_a: bool = False,
    overwrite_c: bool = False,
) -> t.Any:
    """``scipy.linalg.qr_multiply``: ``Q c`` (``"left"``) or ``c Q`` (``"right"``) with the
    economic ``Q`` (conjugated with ``conjugate``), and ``R``."""
    if pivoting:
        _refuse("qr_multiply", "with pivoting=True")
    if mode not in ("left", "right"):
        raise ValueError(f"Mode argument can only be 'left' or 'right' but not '{mode}'")
    a, c = np.asarray(a), np.asarray(c)
    finite(a, c)
    q, r = qr(a, mode="economic", check_finite=False)
    if conjugate:
        q = np.conj(q)
    if mode == "left":
        return (q @ c, r)
    return (c @ q, r)


def rq_signs(q: t.Any, a: t.Any) -> t.Any:
    """``signs`` of the rows of ``q`` against those of ``Q`` of SciPy's ``rq`` (no
    derivative)."""
    return signs(q.T, sla.rq(a, mode="economic")[1].T)


zero_derivative(rq_signs, ...)


def rq(
    a: t.Any, overwrite_a: bool = False, lwork: t.Any = None, mode: str = "full", check_finite: bool = True
) -> t.Any:
    """``scipy.linalg.rq``, ``A = R Q``, of square matrices (every mode) and wide ones with
    ``mode="economic"`` (the full mode's extra rows of ``Q`` are not unique): with ``J`` the exchange matrix, the QR factors ``Q1 R1`` of ``J A^T J`` give ``R = J R1^T
    J`` and ``Q = J Q1^T J``, with SciPy's signs."""
    a = np.asarray(a)
    if check_finite:
        finite(a)
    if mode not in ("full", "economic", "r"):
        _refuse("rq", f"with mode={mode!r}")
    if a.ndim != 2 or a.shape[0] > a.shape[1] or (a.shape[0] < a.shape[1] and mode != "economic"):
        _refuse("rq", "of other than a square matrix, or a wide one with mode='economic'")
    q1, r1 = np.linalg.qr(a.T[::-1, ::-1])
    r = r1.T[::-1, ::-1]
    q = q1.T[::-1, ::-1]
    d = rq_signs(q, a)
    r, q = r * d, np.conj(d)[:, None] * q
    return r if mode == "r" else (r, q)  # (``R`` alone, unlike ``qr``'s 1-tuple)


def norm(
    a: t.Any, ord: t.Any = None, axis: t.Any = None, keepdims: bool = False, check_finite: bool = True
) -> t.Any:
    """``scipy.linalg.norm``: NumPy's ``norm`` (SciPy calls BLAS's ``nrm2`` for a vector's
    2-norm, the same value)."""
    a = np.asarray(a)
    if check_finite:
        finite(a)
    return np.linalg.norm(a, ord=ord, axis=axis, keepdims=keepdims)


def permutation_rows(piv: t.Any) -> t.Any:
    """The row order ``perm`` that LAPACK's row swaps ``piv`` (row ``i`` swapped with row
    ``piv[i]``, in turn) make of ``0..n-1``: ``P^T b = b[perm]``."""
    perm = np.arange(len(piv))
    for i in range(len(piv)):
        j = int(piv[i])
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def inverse_order(perm: t.Any) -> t.Any:
    """The inverse of the permutation ``perm``: ``x[perm][inverse_order(perm)] == x``."""
    out = np.empty_like(perm)
    out[perm] = np.arange(len(perm))
    return out


def _order_type(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.Array(np.dtype(np.intp).name, 1)


for _order in (permutation_rows, inverse_order):  # (indices: no derivative)
    zero_derivative(_order, ...)
    register_type_rule(_order)(_order_type)


def lu_solve(
    lu_and_piv: t.Any, b: t.Any, trans: int = 0, overwrite_b: bool = False, check_finite: bool = True
) -> t.Any:
    """``scipy.linalg.lu_solve``: ``A x = b`` (``trans`` 0), ``A^T x = b`` (1) or ``A^H x = b``
    (2) for ``A = P L U`` held in ``lu_factor``'s ``(lu, piv)``, by two triangular solves."""
    lu, piv = lu_and_piv
    b = np.asarray(b)
    if check_finite:
        finite(lu, b)
    perm = permutation_rows(piv)
    if trans == 0:
        y = sla.solve_triangular(lu, b[perm], lower=True, unit_diagonal=True)
        return sla.solve_triangular(lu, y, lower=False)
    if trans in (1, 2):
        y = sla.solve_triangular(lu, b, lower=False, trans=trans)
        x = sla.solve_triangular(lu, y, lower=True, unit_diagonal=True, trans=trans)
        return x[inverse_order(perm)]
    raise ValueError("Unknown value for 'trans'")


for _fn, _twin in [
    (sla.eigh, eigh),
    (sla.eigvalsh, eigvalsh),
    (sla.eig, eig),
    (sla.eigvals, eigvals),
    (sla.svd, svd),
    (sla.svdvals, svdvals),
    (sla.qr, qr),
    (sla.norm, norm),
    (sla.rq, rq),
    (sla.qr_multiply, qr_multiply),
    (sla.lu_solve, lu_solve),
]:
    register_twin(_fn, t.cast(types.FunctionType, _twin))
