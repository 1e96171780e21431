"""NumPy's linear algebra whose own Python ends in a gufunc without a rule, as twins
(``gibbous.infer.implementations``) of functions with rules, so that both modes and
Hessian-vector products follow:

* ``numpy.linalg.lstsq``: the minimum-norm least-squares solution by the pseudo-inverse with
  LAPACK's cutoff (the value agrees with ``gelsd``'s to rounding); ``scipy.linalg.lstsq``
  shares it (``gibbous.library.scipy.linalg_twins``);
* ``numpy.linalg.cond``: its definition, by the singular values (``p`` None, 2, -2) or the
  norms of the matrix and its inverse (NumPy 2.5 reaches ``_umath_linalg.svd`` directly);
* ``numpy.linalg.multi_dot`` (its ``dot(..., out=None)`` calls) and ``tensorsolve`` (its
  ``__array_wrap__``): the same products and solve;
* NumPy 2's vector products (``vecdot``, ``matvec``, ``vecmat``, ``linalg.outer``: gufuncs)
  by products with rules, and ``np.einsum``'s sublist form.
"""

from __future__ import annotations

import types
import typing as t

import numpy as np

from gibbous.infer.implementations import register_twin, twin_helper
from gibbous.ir.exceptions import UnsupportedArgumentError


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


def multi_dot(arrays: t.Any, *, out: t.Any = None) -> t.Any:
    """``numpy.linalg.multi_dot``: the products left to right (NumPy chooses the cheapest
    order; the value is the same to rounding); a 1-d first (last) array is a row (column)."""
    if out is not None:
        raise UnsupportedArgumentError("numpy.linalg.multi_dot with out=: no rule")
    arrays = [np.asarray(a) for a in arrays]
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    result = arrays[0]
    for a in arrays[1:]:
        result = np.dot(result, a)
    return result



register_twin(np.linalg.multi_dot, t.cast(types.FunctionType, multi_dot))


# --------------------------------------------------------------------------------------------
# The vector products of NumPy 2 (gufuncs without rules) by products with rules: the values
# agree with the gufuncs' to rounding.


def vecdot(x1: t.Any, x2: t.Any, /, *, axis: int = -1) -> t.Any:
    """``np.vecdot``: ``sum(conj(x1) * x2)`` along ``axis``, broadcast."""
    return np.sum(np.conj(x1) * x2, axis=axis)


def matvec(x1: t.Any, x2: t.Any, /) -> t.Any:
    """``np.matvec``: ``x1 @ x2`` of stacks of matrices and vectors, broadcast."""
    return np.matmul(x1, np.expand_dims(x2, -1))[..., 0]


def vecmat(x1: t.Any, x2: t.Any, /) -> t.Any:
    """``np.vecmat``: ``conj(x1) @ x2`` of stacks of vectors and matrices, broadcast."""
    return np.matmul(np.expand_dims(np.conj(x1), -2), x2)[..., 0, :]


def linalg_outer(x1: t.Any, x2: t.Any, /) -> t.Any:
    """``numpy.linalg.outer``: ``np.outer`` of two vectors (1-d only)."""
    x1, x2 = np.asanyarray(x1), np.asanyarray(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(
            "Input arrays must be one-dimensional, but they are "
            f"{x1.ndim=} and {x2.ndim=}."
        )
    return np.outer(x1, x2)


def tensorsolve(a: t.Any, b: t.Any, axes: t.Any = None) -> t.Any:
    """``numpy.linalg.tensorsolve``: x with ``tensordot(a, x, x.ndim) = b``, by ``solve`` of
    ``a`` reshaped to a square matrix (after moving ``axes`` last), as NumPy's."""
    a, b = np.asarray(a), np.asarray(b)
    an = a.ndim
    if axes is not None:
        order = list(range(an))
        for k in axes:
            order.remove(k)
            order.insert(an, k)
        a = np.transpose(a, order)
    shape = a.shape[-(an - b.ndim):]
    n = 1
    for k in shape:
        n *= k
    if a.size != n * n:
        raise np.linalg.LinAlgError(
            "Input arrays must satisfy the requirement prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])"
        )
    x = np.linalg.solve(np.reshape(a, (n, n)), np.reshape(b, (n,)))
    return np.reshape(x, shape)


for _fn, _twin in (
    (getattr(np, "vecdot", None), vecdot),
    (getattr(np, "matvec", None), matvec),
    (getattr(np, "vecmat", None), vecmat),
    (getattr(np.linalg, "outer", None), linalg_outer),
    (np.linalg.tensorsolve, tensorsolve),
):
    if _fn is not None:
        register_twin(_fn, t.cast(types.FunctionType, _twin))


# --------------------------------------------------------------------------------------------
# np.einsum in its sublist form, ``einsum(a, [0, 1], b, [1, 2], [0, 2])``: the same call with
# its subscripts written as a string (the rules take that form).

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@twin_helper
def _subscripts(sublist: t.Any) -> str:
    return "".join("..." if s is Ellipsis else _LETTERS[int(s)] for s in sublist)


def einsum(*operands: t.Any, **kwargs: t.Any) -> t.Any:
    """``np.einsum`` of ``(operand, sublist)`` pairs and an optional output sublist."""
    if operands and isinstance(operands[0], str):
        return np.einsum(*operands, **kwargs)
    arrays = [operands[k] for k in range(0, len(operands) - 1, 2)]
    inputs = [_subscripts(operands[k]) for k in range(1, len(operands), 2)]
    spec = ",".join(inputs)
    if len(operands) % 2 == 1:
        spec = spec + "->" + _subscripts(operands[-1])
    return np.einsum(spec, *arrays, **kwargs)


register_twin(np.einsum, t.cast(types.FunctionType, einsum))
