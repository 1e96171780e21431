"""SciPy's functions of a matrix's subspaces and spectrum as twins (``gibbous.infer.
implementations``): ``orth``, ``subspace_angles``, ``orthogonal_procrustes`` and ``pinvh``,
SciPy's steps with NumPy's decompositions (SciPy's Python takes ``np.amax(s, initial=0.)``
and the array-API namespace, which forward mode cannot follow).  The rank each keeps (the
singular values or eigenvalues above a cutoff) is piecewise constant: no derivative."""

from __future__ import annotations

import types
import typing as t

import numpy as np
import scipy.linalg as sla

from gibbous.infer.implementations import register_twin, twin_helper
from gibbous.library.scipy.linalg_twins import finite


@twin_helper
def _largest(s: t.Any) -> t.Any:
    """``np.amax(s, initial=0.)`` of ``s >= 0``."""
    return np.max(np.concatenate((np.zeros(1), np.ravel(s))))


def orth(A: t.Any, rcond: t.Any = None) -> t.Any:
    """``scipy.linalg.orth``: the left singular vectors of the singular values above
    ``rcond * max(s)``."""
    A = np.asarray(A)
    finite(A)
    u, s, vh = np.linalg.svd(A, full_matrices=False)
    if rcond is None:
        rcond = np.finfo(s.dtype).eps * max(u.shape[0], vh.shape[1])
    num = int(np.sum(s > _largest(s) * rcond))
    return u[:, :num]


def subspace_angles(A: t.Any, B: t.Any) -> t.Any:
    """``scipy.linalg.subspace_angles``: SciPy's steps (Knyazev and Argentati's), by ``orth``
    and the singular values."""
    A = np.asarray(A)
    finite(A)
    if A.ndim != 2:
        raise ValueError(f"expected 2D array, got shape {A.shape}")
    qa = orth(A)
    B = np.asarray(B)
    finite(B)
    if B.ndim != 2:
        raise ValueError(f"expected 2D array, got shape {B.shape}")
    if B.shape[0] != qa.shape[0]:
        raise ValueError(
            f"A and B must have the same number of rows, got {qa.shape[0]} and {B.shape[0]}"
        )
    qb = orth(B)
    product = np.conj(qa.T) @ qb
    sigma = np.linalg.svd(product, compute_uv=False)
    if qa.shape[1] >= qb.shape[1]:
        rest = qb - qa @ product
    else:
        rest = qa - qb @ np.conj(product.T)
    mask = sigma**2 >= 0.5
    mu: t.Any
    if np.any(mask):
        mu = np.arcsin(np.clip(np.linalg.svd(rest, compute_uv=False), -1.0, 1.0))
    else:
        mu = 0.0
    # (the arccos of the cosines kept only: that of the others, at 1, has no derivative)
    cosines = np.where(mask, 0.0, sigma[::-1])
    return np.where(mask, mu, np.arccos(np.clip(cosines, -1.0, 1.0)))


def orthogonal_procrustes(A: t.Any, B: t.Any, check_finite: bool = True) -> tuple[t.Any, t.Any]:
    """``scipy.linalg.orthogonal_procrustes``: ``R = U V^H`` of ``svd(A^H B)``, and the sum of
    its singular values."""
    A, B = np.asarray(A), np.asarray(B)
    if check_finite:
        finite(A, B)
    if A.ndim != 2:
        raise ValueError(f"expected ndim to be 2, but observed {A.ndim}")
    if A.shape != B.shape:
        raise ValueError(f"the shapes of A and B differ ({A.shape} vs {B.shape})")
    u, w, vt = np.linalg.svd((B.T @ np.conj(A)).T)
    return u @ vt, np.sum(w)


def pinvh(
    a: t.Any,
    atol: t.Any = None,
    rtol: t.Any = None,
    lower: bool = True,
    return_rank: bool = False,
    check_finite: bool = True,
) -> t.Any:
    """``scipy.linalg.pinvh``: by the eigenvalues above ``atol + rtol * max|s|`` of the
    Hermitian matrix the triangle read stands for."""
    a = np.asarray(a)
    if check_finite:
        finite(a)
    s, u = np.linalg.eigh(a, "L" if lower else "U")
    largest = _largest(np.abs(s))
    atol = 0.0 if atol is None else atol
    rtol = max(a.shape) * np.finfo(s.dtype).eps if rtol is None else rtol
    if atol < 0.0 or rtol < 0.0:
        raise ValueError("atol and rtol values must be positive.")
    above = np.abs(s) > atol + largest * rtol
    # (the eigenvalues dropped weigh nothing: the columns kept, without indexing by a mask)
    inverse = np.where(above, 1.0 / np.where(above, s, 1.0), 0.0)
    b = (u * inverse) @ np.conj(u.T)
    return (b, int(np.sum(above))) if return_rank else b


for _fn, _twin in [
    (sla.orth, orth),
    (sla.subspace_angles, subspace_angles),
    (sla.orthogonal_procrustes, orthogonal_procrustes),
    (sla.pinvh, pinvh),
]:
    register_twin(_fn, t.cast(types.FunctionType, _twin))
