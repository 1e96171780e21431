"""SciPy: rules for the banded solvers ``scipy.linalg.solve_banded`` and ``solveh_banded``
(one matrix in LAPACK's band storage, a right-hand side of 1 or 2 axes, real or complex),
each derivative by another banded solve: ``O(n (l + u))`` like the solve, no dense matrix.

Band storage: ``ab[u + i - j, j] = a[i, j]`` for the ``l`` diagonals below and ``u`` above
(``solveh_banded``: the upper ones, ``u = ab.shape[0] - 1``, or with ``lower=True`` the lower
ones, ``ab[i - j, j]``, of a Hermitian positive definite matrix).  The entries of ``ab`` that
stand for no entry of ``a`` (its corners) are never read: they get no gradient.

``x = A^-1 b``: ``b`` gets ``A^-H g``, and the entry of ``ab`` holding ``a[i, j]`` gets
``-(A^-H g) x^H`` at ``(i, j)``; for ``solveh_banded`` an entry off the diagonal stands for
``a[i, j]`` and ``conj(a[j, i])``, and gets both.  Forward: ``dx = A^-1 (db - dA x)``.
Reverse mode takes ``overwrite_ab=True``/``overwrite_b=True`` and solves without destroying
(the flags permit, never promise); forward mode refuses them (its primal call is SciPy's own).
"""

from __future__ import annotations

import typing as t

import numpy as np
import scipy.linalg as sla

from gibbous.infer.typerules.numpy import DataArgs, sampled_numpy
from gibbous.infer.typerules.table import register_type_rule
from gibbous.ir import types as T
from gibbous.ir.exceptions import UnsupportedArgumentError
from gibbous.ir.purity import register_pure_array_function
from gibbous.library.common import (
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
from gibbous.rules.matrix_formulas import Operands, Options, TangentFormula, register_formula
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual

SOLVE_BANDED_PARAMETERS = ("overwrite_ab", "overwrite_b", "check_finite")
SOLVEH_BANDED_PARAMETERS = ("overwrite_ab", "overwrite_b", "lower", "check_finite")


def _columns(x: Array) -> Array:
    return x[:, None] if x.ndim == 1 else x


def band_matmul(ab: Array, lower: int, upper: int, x: Array) -> Array:
    """``a @ x`` for the matrix ``a`` that ``ab`` holds with ``lower``/``upper`` diagonals."""
    xs = _columns(x)
    n = ab.shape[1]
    out = np.zeros((n, xs.shape[1]), np.result_type(ab, xs))
    for d in range(-upper, lower + 1):  # (a[j + d, j] = ab[upper + d, j])
        j = np.arange(max(0, -d), min(n, n - d))
        out[j + d] += ab[upper + d, j][:, None] * xs[j]
    return out if x.ndim == 2 else out[:, 0]


def band_transpose(ab: Array, lower: int, upper: int) -> Array:
    """The band storage of ``a.T`` (``upper`` diagonals below, ``lower`` above)."""
    n = ab.shape[1]
    out = np.zeros_like(ab)
    for d in range(-upper, lower + 1):  # a[j + d, j] goes to a.T[j, j + d]: diagonal -d
        j = np.arange(max(0, -d), min(n, n - d))
        out[lower - d, j + d] = ab[upper + d, j]
    return out


def band_outer(p: Array, q: Array, lower: int, upper: int) -> Array:
    """The band of ``p q^H`` (columns of 1-d or 2-d ``p``, ``q``), in band storage: zeros
    where the storage holds no entry."""
    ps, qs = _columns(p), np.conj(_columns(q))
    n = ps.shape[0]
    out = np.zeros((lower + upper + 1, n), np.result_type(ps, qs))
    for d in range(-upper, lower + 1):
        j = np.arange(max(0, -d), min(n, n - d))
        out[upper + d, j] = np.sum(ps[j + d] * qs[j], axis=1)
    return out


def _solve_keeping_inputs(
    fn: t.Callable[..., t.Any], first: tuple[object, ...], bound: t.Mapping[str, object]
) -> t.Any:
    """The primal solve with ``overwrite_ab``/``overwrite_b`` off: they permit SciPy to destroy
    the inputs, never promise it (SciPy itself copies when it must), and the pullback reads
    ``ab`` again (SciPy's own CubicSpline passes ``overwrite_ab=True``)."""
    options = {k: v for k, v in bound.items() if k not in ("overwrite_ab", "overwrite_b")}
    return fn(*first, **options)


def _shapes(ab: object, b: object, what: str) -> None:
    if not isinstance(ab, np.ndarray) or ab.ndim != 2:
        raise UnsupportedArgumentError(f"{what} of a batch of matrices (or a non-array): no rule")
    if not isinstance(b, np.ndarray) or b.ndim not in (1, 2):
        raise UnsupportedArgumentError(f"{what} with a right-hand side of other than 1 or 2 axes")


def solve_banded_rrule(f: CD, lu: CD, ab: CD, b: CD, *args: CD, **kwargs: CD) -> RuleResult:
    what = "scipy.linalg.solve_banded"
    bound = bind(SOLVE_BANDED_PARAMETERS, args, kwargs, {}, what)
    _shapes(ab.primal, b.primal, what)
    (lower, upper), abp = lu.primal, ab.primal
    x = _solve_keeping_inputs(f.primal, (lu.primal, abp, b.primal), bound)
    xf = new_fdata(x)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dx: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(xf, dx)
        if g is None or not (needs(ab) or needs(b)):
            return (NT, NT, zero_for(ab), zero_for(b), *rest)
        adjoint = np.conj(band_transpose(abp, lower, upper))
        gb = sla.solve_banded((upper, lower), adjoint, g)
        gab = -band_outer(gb, x, lower, upper) if needs(ab) else None
        return (NT, NT, send(ab, gab), send(b, gb) if needs(b) else zero_for(b), *rest)

    return CoDual(x, xf), pullback


def _hermitian_band(ab: Array, lower: bool) -> tuple[Array, int, int]:
    """The general band storage (and its ``l``, ``u``) of the Hermitian matrix that
    ``solveh_banded``'s ``ab`` holds one triangle of."""
    k = ab.shape[0] - 1
    n = ab.shape[1]
    full = np.zeros((2 * k + 1, n), ab.dtype)
    for d in range(k + 1):  # (entry a[j + d, j] for lower, a[j - d, j] for upper)
        j = np.arange(0, n - d) if lower else np.arange(d, n)
        stored = ab[d, j] if lower else ab[k - d, j]
        if lower:
            full[k + d, j] = stored  # a[j + d, j]
            full[k - d, j + d] = np.conj(stored)  # a[j, j + d]
        else:
            full[k - d, j] = stored  # a[j - d, j]
            full[k + d, j - d] = np.conj(stored)  # a[j, j - d]
    return full, k, k


def _from_hermitian_band(grad: Array, k: int, lower: bool, complex_: bool) -> Array:
    """``solveh_banded``'s ``ab``'s gradient from that of the general band ``grad`` of the
    matrix: an entry off the diagonal gets its own and its mirror's (conjugated)."""
    n = grad.shape[1]
    out = np.zeros((k + 1, n), grad.dtype)
    for d in range(k + 1):
        j = np.arange(0, n - d) if lower else np.arange(d, n)
        if lower:
            here, mirror = grad[k + d, j], grad[k - d, j + d]
        else:
            here, mirror = grad[k - d, j], grad[k + d, j - d]
        value = here + np.conj(mirror) if d else (np.real(here) if complex_ else here)
        out[d if lower else k - d, j] = value
    return out


def solveh_banded_rrule(f: CD, ab: CD, b: CD, *args: CD, **kwargs: CD) -> RuleResult:
    what = "scipy.linalg.solveh_banded"
    bound = bind(SOLVEH_BANDED_PARAMETERS, args, kwargs, {}, what)
    _shapes(ab.primal, b.primal, what)
    lower = bool(bound.get("lower", False))
    abp = ab.primal
    x = _solve_keeping_inputs(f.primal, (abp, b.primal), bound)
    xf = new_fdata(x)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dx: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(xf, dx)
        if g is None or not (needs(ab) or needs(b)):
            return (NT, zero_for(ab), zero_for(b), *rest)
        gb = sla.solveh_banded(abp, g, lower=lower)
        gab = None
        if needs(ab):
            k = abp.shape[0] - 1
            general = -band_outer(gb, x, k, k)
            gab = _from_hermitian_band(general, k, lower, np.iscomplexobj(abp))
        return (NT, send(ab, gab), send(b, gb) if needs(b) else zero_for(b), *rest)

    return CoDual(x, xf), pullback


primitive(sla.solve_banded, T.Object(tuple), ARRAY, ARRAY, ...)(solve_banded_rrule)
primitive(sla.solve_banded, T.Object(list), ARRAY, ARRAY, ...)(solve_banded_rrule)
primitive(sla.solveh_banded, ARRAY, ARRAY, ...)(solveh_banded_rrule)


def _solve_banded_tangent(x: t.Any, ops: Operands, d: Operands, options: Options) -> t.Any:
    """``dx = A^-1 (db - dA x)``."""
    (lu, ab, b), (_, dab, db) = ops, d
    _shapes(ab, b, "scipy.linalg.solve_banded")
    lower, upper = lu
    if dab is not None:
        change = band_matmul(dab, lower, upper, x)
        db = -change if db is None else db - change
    return None if db is None else sla.solve_banded((lower, upper), ab, db)


def _solveh_banded_tangent(x: t.Any, ops: Operands, d: Operands, options: Options) -> t.Any:
    (ab, b), (dab, db) = ops, d
    _shapes(ab, b, "scipy.linalg.solveh_banded")
    lower = bool(options["lower"])
    if dab is not None:
        full, k, _ = _hermitian_band(dab, lower)
        change = band_matmul(full, k, k, x)
        db = -change if db is None else db - change
    return None if db is None else sla.solveh_banded(ab, db, lower=lower)


def _refuse(options: Options) -> str | None:
    for name in ("overwrite_ab", "overwrite_b"):
        if options.get(name):
            return f"with {name}=True (it may destroy its input)"
    return None


register_formula(
    TangentFormula(
        sla.solve_banded, "scipy.linalg.solve_banded", _solve_banded_tangent, operands=3,
        parameters=SOLVE_BANDED_PARAMETERS, refuse=_refuse, written=False,
    )  # fmt: skip
)
register_formula(
    TangentFormula(
        sla.solveh_banded, "scipy.linalg.solveh_banded", _solveh_banded_tangent, operands=2,
        parameters=SOLVEH_BANDED_PARAMETERS, defaults={"lower": False}, refuse=_refuse,
        written=False,
    )  # fmt: skip
)
register_type_rule(sla.solve_banded)(sampled_numpy(sla.solve_banded, DataArgs(3)))
register_type_rule(sla.solveh_banded)(sampled_numpy(sla.solveh_banded, DataArgs(2)))
for _fn in (sla.solve_banded, sla.solveh_banded):
    register_pure_array_function(_fn)
