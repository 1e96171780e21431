"""SciPy: the rule of the Schur decomposition ``T, Z = scipy.linalg.schur(A)``, ``A = Z T Z^H``
with ``T`` upper triangular: ``output="complex"``, and ``output="real"`` where ``T`` is (a
real matrix with real eigenvalues: a complex pair's 2x2 block has no rule; pass
``output="complex"``).  Distinct eigenvalues; no ``sort``.

With ``C = Z^H dA Z`` and ``Omega = Z^H dZ`` (skew-Hermitian): ``dT = C + T Omega - Omega T``
must be upper triangular, which fixes ``Omega``'s strictly lower triangle ``L`` by the
triangular system ``P(T L - L T) = -P(C)`` (``P``: the strictly lower triangle), solved entry
by entry from the bottom-left: ``(t_ii - t_jj) l_ij = -c_ij - sum_{k>i} t_ik l_kj
+ sum_{k<j} l_ik t_kj``.  ``Omega``'s diagonal is 0: exact for a real ``Z``; for a complex one
the eigenvectors' phases are LAPACK's to choose, and the rule is exact for losses blind to
them.  Reverse mode solves the adjoint system (``T^H`` for ``T``, from the top-right).
Both are ``O(n^3)`` with ``n^2`` small steps: meant for small matrices.
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
from gibbous.rules.matrix_formulas import Operands, Options, TangentFormula, register_formula
from gibbous.rules.registry import primitive

SCHUR_PARAMETERS = ("output", "lwork", "overwrite_a", "sort", "check_finite")
WHAT = "scipy.linalg.schur"


def _options(options: t.Mapping[str, object], a: object) -> None:
    if options.get("sort") is not None:
        raise UnsupportedArgumentError(f"{WHAT} with sort=: no rule")
    if options.get("overwrite_a"):
        raise UnsupportedArgumentError(f"{WHAT} with overwrite_a=True: no rule (it may destroy its input)")
    if not isinstance(a, np.ndarray) or a.ndim != 2:
        raise UnsupportedArgumentError(f"{WHAT} of other than one matrix: no rule")


def _triangular(tri: Array) -> None:
    if np.any(np.diagonal(tri, -1) != 0):
        raise UnsupportedArgumentError(
            f"{WHAT} with output='real' of a matrix with complex eigenvalues (2x2 blocks in T): "
            "no rule; pass output='complex'"
        )


def rotation(tri: Array, c: Array) -> Array:
    """``L``, the strictly lower triangle of ``Omega`` for ``C`` (module docstring)."""
    n = tri.shape[0]
    low = np.zeros(np.broadcast_shapes(tri.shape, c.shape), np.result_type(tri, c))
    for i in reversed(range(n)):
        for j in range(i):
            s = -c[i, j] - tri[i, i + 1 :] @ low[i + 1 :, j] + low[i, :j] @ tri[:j, j]
            low[i, j] = s / (tri[i, i] - tri[j, j])
    return low


def adjoint_rotation(tri: Array, r: Array) -> Array:
    """``Y`` with ``P(T^H Y - Y T^H) = R``, ``Y`` strictly lower: the adjoint of ``rotation``
    (which is ``C -> -Y``)."""
    n = tri.shape[0]
    th = np.conj(tri)
    y = np.zeros(r.shape, np.result_type(tri, r))
    for i in range(n):
        for j in reversed(range(i)):
            s = r[i, j] - th[j + 1 : i, i] @ y[j + 1 : i, j] + y[i, j + 1 : i] @ th[j, j + 1 : i]
            y[i, j] = s / (th[i, i] - th[j, j])
    return y


def schur_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    bound = bind(SCHUR_PARAMETERS, args, kwargs, {}, WHAT)
    _options(bound, a.primal)
    real = bound.get("output", "real") in ("real", "r")

    def grad(z: t.Any, gs: list[t.Any]) -> Array:
        (tri, q), (g_t, g_q) = z, gs
        if real:
            _triangular(tri)
        g_t = np.zeros_like(tri) if g_t is None else np.triu(g_t)
        m = tri.T.conj() @ g_t - g_t @ tri.T.conj()
        if g_q is not None:
            m = m + dagger(q) @ g_q
        y = adjoint_rotation(tri, np.tril(m - dagger(m), -1))
        return t.cast(Array, q @ (g_t - y) @ dagger(q))

    return factor_rrule(f, a, args, kwargs, 2, grad)


primitive(sla.schur, ARRAY, ...)(schur_rrule)


def _schur_tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    _options(options, a[0])
    tri, q = z
    _triangular(tri)  # (forward mode: real matrices; complex output's values are complex)
    if da[0] is None:
        return None
    c = dagger(q) @ da[0] @ q
    low = rotation(tri, c)
    omega = low - dagger(low)
    return np.triu(c + tri @ omega - omega @ tri), q @ omega


def _refuse_complex_output(options: Options) -> str | None:
    if options.get("output", "real") not in ("real", "r"):
        return "with output='complex' (complex tangents: reverse mode takes it)"
    return None


register_formula(
    TangentFormula(
        sla.schur, WHAT, _schur_tangent, parameters=SCHUR_PARAMETERS,
        defaults={"output": "real"}, refuse=_refuse_complex_output, written=False,
    )  # fmt: skip
)
register_type_rule(sla.schur)(sampled_numpy(sla.schur))
register_pure_array_function(sla.schur)
