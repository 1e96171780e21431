"""SciPy: rules for the LU factorisation of square matrices, ``scipy.linalg.lu`` (``P, L, U``;
``PL, U`` with ``permute_l``; the permutation as indices with ``p_indices``; batched) and
``lu_factor`` (``lu, piv``: ``L``'s strict lower triangle and ``U`` in one matrix, LAPACK's
row swaps); ``lu_solve`` is a twin (``decomp_twins``) through those factors.

With ``A' = P^T A = L U`` (rows swapped: the permutation is piecewise constant, no
derivative) and ``F = L^-1 dA' U^-1``: ``dL = L tril(F, -1)`` (``L``'s diagonal is ones) and
``dU = triu(F) U``.  Reverse: ``A'`` gets ``L^-H (tril(L^H G_L, -1) + triu(G_U U^H)) U^-H``,
and ``A`` the rows of that put back.  Rectangular matrices have no rule (their ``L`` or
``U`` is a trapezoid: another formula); a singular ``U`` gives ``inf``/``nan`` or
``LinAlgError``, where the factors' derivative does not exist.
"""

from __future__ import annotations

import typing as t

import numpy as np
import scipy.linalg as sla

from gibbous.infer.typerules.numpy import sampled_numpy
from gibbous.infer.typerules.table import register_type_rule
from gibbous.ir.exceptions import UnsupportedArgumentError
from gibbous.ir.purity import register_pure_array_function
from gibbous.library.common import ARRAY, CD, Array, RuleResult, bind
from gibbous.library.linalg.decompositions import dagger, factor_rrule
from gibbous.library.scipy.decomp_twins import inverse_order, permutation_rows
from gibbous.rules.matrix_formulas import (
    Operands,
    Options,
    TangentFormula,
    Written,
    call,
    register_formula,
)
from gibbous.rules.registry import primitive

LU_PARAMETERS = ("permute_l", "overwrite_a", "check_finite", "p_indices")
LU_FACTOR_PARAMETERS = ("overwrite_a", "check_finite")


def _square(a: object, what: str, batched: bool) -> None:
    if not isinstance(a, np.ndarray) or a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise UnsupportedArgumentError(f"{what} of a non-square matrix: no rule")
    if a.ndim > 2 and not batched:
        raise UnsupportedArgumentError(f"{what} of a stack of matrices: no rule")


def _factors_grad(low: Array, up: Array, g_l: t.Any, g_u: t.Any) -> Array:
    """The cotangent of ``A' = L U`` from those of ``L`` and ``U`` (None: zero)."""
    middle = np.zeros(np.broadcast_shapes(low.shape, up.shape), np.result_type(low, up))
    if g_l is not None:
        middle = middle + np.tril(dagger(low) @ g_l, -1)
    if g_u is not None:
        middle = middle + np.triu(g_u @ dagger(up))
    # L^-H M U^-H: Y = L^-H M, then X U^H = Y, i.e. U X^H = Y^H.
    return dagger(np.linalg.solve(up, dagger(np.linalg.solve(dagger(low), middle))))


def _factors_tangent(low: t.Any, up: t.Any, da: t.Any) -> tuple[t.Any, t.Any]:
    """``dL, dU`` of ``A' = L U`` from ``dA'``."""
    f = _transpose(np.linalg.solve(_transpose(up), _transpose(np.linalg.solve(low, da))))
    return low @ np.tril(f, -1), np.triu(f) @ up


def _refuse_overwrite_now(bound: t.Mapping[str, object], what: str) -> None:
    if bound.get("overwrite_a"):
        raise UnsupportedArgumentError(f"{what} with overwrite_a=True: no rule (it may destroy its input)")


def _transpose(x: t.Any) -> t.Any:
    return np.swapaxes(x, -1, -2)


def _order(p: Array) -> Array:
    """``p_indices``' rows (``A = L[p] U``) as the row order ``A' = A[order]``."""
    return np.argsort(p, axis=-1)


def lu_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``scipy.linalg.lu``: ``P`` (or its indices) gets nothing, ``L`` (or ``PL``) and ``U``
    their factors' terms."""
    what = "scipy.linalg.lu"
    bound = bind(LU_PARAMETERS, args, kwargs, {}, what)
    _refuse_overwrite_now(bound, what)
    _square(a.primal, what, batched=True)
    permute_l, indices = bool(bound.get("permute_l")), bool(bound.get("p_indices"))

    def grad(z: t.Any, gs: list[t.Any]) -> Array:
        if permute_l:
            (pl, up), (g_pl, g_u) = z, gs
            p, low, _ = sla.lu(a.primal)
            g_l = None if g_pl is None else _transpose(p) @ g_pl
        else:
            (p, low, up), (_, g_l, g_u) = z, gs
        g = _factors_grad(low, up, g_l, g_u)
        if indices and not permute_l:  # A = L[p] U: A' = A[order], A[order] gets g
            return t.cast(Array, np.take_along_axis(g, p[..., :, None], axis=-2))
        return t.cast(Array, p @ g)

    return factor_rrule(f, a, args, kwargs, 2 if permute_l else 3, grad)


def lu_factor_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``scipy.linalg.lu_factor``: ``lu`` holds ``L``'s strict lower triangle and ``U``."""
    what = "scipy.linalg.lu_factor"
    _refuse_overwrite_now(bind(LU_FACTOR_PARAMETERS, args, kwargs, {}, what), what)
    _square(a.primal, what, batched=False)

    def grad(z: t.Any, gs: list[t.Any]) -> Array:
        (lu, piv), (g, _) = z, gs
        low = np.tril(lu, -1) + np.eye(lu.shape[-1])
        g_a = _factors_grad(low, np.triu(lu), np.tril(g, -1), np.triu(g))
        return t.cast(Array, g_a[inverse_order(permutation_rows(piv))])  # (A[perm] got g_a)

    return factor_rrule(f, a, args, kwargs, 2, grad)


primitive(sla.lu, ARRAY, ...)(lu_rrule)
primitive(sla.lu_factor, ARRAY, ...)(lu_factor_rrule)


def _lu_tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    if not isinstance(a[0], Written):
        _square(a[0], "scipy.linalg.lu", batched=True)
    if da[0] is None:
        return None
    if options["permute_l"]:
        pl, up = z
        p, low, _ = call(sla.lu, a[0])
        dl, du = _factors_tangent(low, up, _transpose(p) @ da[0])
        return p @ dl, du
    p, low, up = z
    if options["p_indices"]:
        rows = np.take_along_axis(da[0], _order(p)[..., :, None], axis=-2)
    else:
        rows = _transpose(p) @ da[0]
    dl, du = _factors_tangent(low, up, rows)
    return None, dl, du


def _lu_factor_tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    _square(a[0], "scipy.linalg.lu_factor", batched=False)
    if da[0] is None:
        return None
    lu, piv = z
    low = np.tril(lu, -1) + np.eye(lu.shape[-1])
    dl, du = _factors_tangent(low, np.triu(lu), da[0][permutation_rows(piv)])
    return dl + du, None


def _refuse_overwrite(options: Options) -> str | None:
    return "with overwrite_a=True (it may destroy its input)" if options.get("overwrite_a") else None


for _rule in (
    TangentFormula(
        sla.lu, "scipy.linalg.lu", _lu_tangent, parameters=LU_PARAMETERS,
        defaults={"permute_l": False, "p_indices": False}, refuse=_refuse_overwrite,
    ),
    TangentFormula(
        sla.lu_factor, "scipy.linalg.lu_factor", _lu_factor_tangent,
        parameters=LU_FACTOR_PARAMETERS, refuse=_refuse_overwrite, written=False,
    ),
):  # fmt: skip
    register_formula(_rule)

for _fn in (sla.lu, sla.lu_factor):
    register_type_rule(_fn)(sampled_numpy(_fn))
    register_pure_array_function(_fn)
