"""NumPy's linear algebra whose own Python ends in a gufunc without a rule, as twins
(``gibbous.infer.implementations``) of functions with rules, so that both modes and
Hessian-vector products follow:

* ``numpy.linalg.lstsq``: the minimum-norm least-squares solution by the pseudo-inverse with
  LAPACK's cutoff (the value agrees with ``gelsd``'s to rounding); ``scipy.linalg.lstsq``
  shares it (``gibbous.library.scipy.linalg_twins``);
* ``numpy.linalg.cond``: its definition, by the singular values (``p`` None, 2, -2) or the
  norms of the matrix and its inverse (NumPy 2.5 reaches ``_umath_linalg.svd`` directly).
"""

from __future__ import annotations

import types
import typing as t

import numpy as np

from gibbous.infer.implementations import register_twin, twin_helper


@twin_helper
def least_squares(
    a: t.Any, b: t.Any, cond: t.Any, number: bool = False
) -> tuple[t.Any, t.Any, t.Any, t.Any]:
    """``(x, residues, rank, s)``: the minimum-norm least-squares solution by the
    pseudo-inverse with LAPACK's cutoff (singular values below ``cond`` times the largest are
    zero), the squared residual norms where ``a`` has full column rank and more rows (for a
    1-d ``b``, one in an array, or with ``number`` the number: SciPy's)."""
    m, n = a.shape[-2], a.shape[-1]
    s = np.linalg.svd(a, compute_uv=False)
    if cond is None or cond < 0:
        cond = np.finfo(s.dtype).eps * max(m, n)
    x = np.linalg.pinv(a, rcond=cond) @ b
    rank = int(np.sum(s > cond * s[0])) if s.size else 0
    if rank == n and m > n:
        residues = np.sum(np.abs(b - a @ x) ** 2, axis=0)
        if b.ndim == 1 and not number:
            residues = np.reshape(np.asarray(residues), (1,))  # (NumPy's: one sum, in an array)
    else:
        residues = np.empty((0,), dtype=s.dtype)
    return x, residues, rank, s


def numpy_lstsq(a: t.Any, b: t.Any, rcond: t.Any = None) -> tuple[t.Any, t.Any, t.Any, t.Any]:
    """``numpy.linalg.lstsq``: residuals a 1-element array for a 1-d ``b``."""
    return least_squares(np.asarray(a), np.asarray(b), rcond)



register_twin(np.linalg.lstsq, t.cast(types.FunctionType, numpy_lstsq))


def cond(x: t.Any, p: t.Any = None) -> t.Any:
    """``numpy.linalg.cond``: ``s_max / s_min`` for ``p`` None or 2, its inverse for -2;
    ``norm(x, p) * norm(inv(x), p)`` for the other norms."""
    x = np.asarray(x)
    if p is None or p == 2 or p == -2:
        s = np.linalg.svd(x, compute_uv=False)
        if p == -2:
            return s[..., -1] / s[..., 0]
        return s[..., 0] / s[..., -1]
    return np.linalg.norm(x, p, axis=(-2, -1)) * np.linalg.norm(np.linalg.inv(x), p, axis=(-2, -1))


register_twin(np.linalg.cond, t.cast(types.FunctionType, cond))
