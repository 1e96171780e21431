"""SciPy: the rule of the Hessenberg form ``H, Q = scipy.linalg.hessenberg(A, calc_q=True)``
(``H`` alone without ``calc_q``), ``A = Q H Q^T`` with ``H`` zero below its first
subdiagonal; real matrices, unreduced (no zero on ``H``'s subdiagonal), and not permuted by
LAPACK's balancing (``Q``'s first column is ``e_1``: SciPy's ``gebal`` permutes a matrix
with isolated eigenvalues, refused).

Householder reduction keeps ``Q e_1 = e_1``, which with the implicit-Q theorem fixes ``Q`` and
``H`` (the signs by continuity).  With ``C = Q^T dA Q`` and ``Omega = Q^T dQ`` (antisymmetric,
first column 0): ``dH = C + H Omega - Omega H`` must vanish below the subdiagonal, which
gives ``Omega``'s strictly lower triangle column by column:
``omega_{i, j+1} = (c_ij + sum_{k >= i-1} h_ik omega_kj - sum_{k <= j} omega_ik h_kj)
/ h_{j+1, j}`` for ``i >= j + 2``.  Reverse mode solves the adjoint recurrence, from the
last column.  ``O(n^3)`` in ``n^2`` small steps: meant for small matrices.
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
from gibbous.library.linalg.decompositions import factor_rrule
from gibbous.rules.matrix_formulas import Operands, Options, TangentFormula, register_formula
from gibbous.rules.registry import primitive

PARAMETERS = ("calc_q", "overwrite_a", "check_finite")
WHAT = "scipy.linalg.hessenberg"


def _check(a: object, h: Array, q: Array, options: t.Mapping[str, object]) -> None:
    if options.get("overwrite_a"):
        raise UnsupportedArgumentError(f"{WHAT} with overwrite_a=True: no rule (it may destroy its input)")
    if not isinstance(a, np.ndarray) or a.ndim != 2 or np.iscomplexobj(a):
        raise UnsupportedArgumentError(f"{WHAT} of other than one real matrix: no rule")
    n = q.shape[0]
    if n and (q[0, 0] != 1 or np.any(q[1:, 0] != 0)):
        raise UnsupportedArgumentError(
            f"{WHAT} of a matrix LAPACK's balancing permutes (isolated eigenvalues): no rule"
        )


def rotation(h: Array, c: Array) -> Array:
    """``Omega``'s strictly lower triangle for ``C`` (module docstring)."""
    n = h.shape[0]
    low = np.zeros_like(c)
    for j in range(n - 2):
        for i in range(j + 2, n):
            s = c[i, j] + h[i, i - 1 :] @ low[i - 1 :, j] - low[i, : j + 1] @ h[: j + 1, j]
            low[i, j + 1] = s / h[j + 1, j]
    return low


def adjoint_rotation(h: Array, r: Array) -> Array:
    """``Y`` (zero but below the subdiagonal) with ``P(H^T Y - Y H^T) = R`` on ``Omega``'s
    entries: ``C`` gets ``-Y`` from ``rotation``'s cotangent ``R``."""
    n = h.shape[0]
    y = np.zeros_like(r)
    for q in reversed(range(1, n - 1)):
        for p in range(q + 1, n):
            s = h[q + 2 : p + 2, p] @ y[q + 2 : p + 2, q] - y[p, q : p - 1] @ h[q, q : p - 1]
            y[p, q - 1] = (s - r[p, q]) / h[q, q - 1]
    return y


def hessenberg_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    bound = bind(PARAMETERS, args, kwargs, {}, WHAT)
    with_q = bool(bound.get("calc_q", False))

    def grad(z: t.Any, gs: list[t.Any]) -> Array:
        if with_q:
            (h, q), (g_h, g_q) = z, gs
        else:
            (h, q), (g_h, g_q) = sla.hessenberg(a.primal, calc_q=True), (gs[0], None)
        _check(a.primal, h, q, bound)
        g_h = np.zeros_like(h) if g_h is None else np.triu(g_h, -1)
        m = h.T @ g_h - g_h @ h.T
        if g_q is not None:
            m = m + q.T @ g_q
        r = np.tril(m - m.T, -1)
        r[:, 0] = 0
        return t.cast(Array, q @ (g_h - adjoint_rotation(h, r)) @ q.T)

    return factor_rrule(f, a, args, kwargs, 2 if with_q else 0, grad)


primitive(sla.hessenberg, ARRAY, ...)(hessenberg_rrule)


def _hessenberg_tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    h, q = z if options["calc_q"] else sla.hessenberg(a[0], calc_q=True)
    _check(a[0], h, q, options)
    if da[0] is None:
        return None
    c = q.T @ da[0] @ q
    low = rotation(h, c)
    omega = low - low.T
    dh = np.triu(c + h @ omega - omega @ h, -1)
    return (dh, q @ omega) if options["calc_q"] else dh


register_formula(
    TangentFormula(
        sla.hessenberg, WHAT, _hessenberg_tangent, parameters=PARAMETERS,
        defaults={"calc_q": False}, written=False,
    )  # fmt: skip
)
register_type_rule(sla.hessenberg)(sampled_numpy(sla.hessenberg))
register_pure_array_function(sla.hessenberg)
