"""SciPy: rules for ``scipy.linalg``'s triangular solves and Cholesky factors of one matrix
(no batches): ``solve_triangular`` (``trans``, ``lower``, ``unit_diagonal``), ``cholesky``,
``cho_factor`` and ``cho_solve``.

Which entries a matrix function reads decides its gradient.  LAPACK reads one triangle:
``cholesky(a)`` and ``cho_factor(a)`` the upper one (the lower one with ``lower=True``),
``solve_triangular`` the triangle it is told (not the diagonal with ``unit_diagonal=True``),
``cho_solve((c, lower), b)`` the factor's triangle of ``c``.  The other entries get a zero
gradient, and the entries of the triangle read get the gradient of the Hermitian matrix that
triangle stands for: an off-diagonal entry stands for two.  ``cho_factor``'s ``c`` holds
``a``'s other triangle unchanged up to SciPy 1.17 (the cotangent of that part goes back to
those entries of ``a``); SciPy 1.18 zeroes it (nothing flows back from there).  Which one is
probed once, when the rules are registered.  Complex matrices follow the project's convention
(the gradient of a real loss is dL/dx + i dL/dy); the diagonal of a Hermitian matrix is read
as real.

Each function has a type rule and is pure without ``overwrite_*=True``.  Each has a forward
rule for real operands next to its reverse rule, reading the same entries; those of
``solve_triangular``, ``cholesky`` and ``cho_factor`` are written into the forward program
(``gibbous.rules.matrix_formulas``), ``cho_solve``'s is called (its ``lower`` is a value).
"""

from __future__ import annotations

import typing as t

import numpy as np
import scipy.linalg as sla

from gibbous.ir import types as T
from gibbous.ir.purity import register_pure_array_function
from gibbous.rules.matrix_formulas import (
    Operands,
    Options,
    TangentFormula,
    call,
    register_formula,
)
from gibbous.library.common import (
    ARRAY,
    CD,
    NT,
    Array,
    RuleResult,
    add_into,
    bind,
    conj,
    cotangent,
    needs,
    new_fdata,
    nothing,
    send,
    zero_for,
)
from gibbous.library.linalg.decompositions import (
    dagger,
    lower_factor_tangent,
    symmetric_of_triangle,
)
from gibbous.library.scipy.common import run_primal
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual
from gibbous.infer.typerules.table import register_type_rule
from gibbous.infer.typerules.numpy import DataArgs, sampled_numpy

# --------------------------------------------------------------------------------------------
# scipy.linalg: triangular solves and Cholesky factors of one matrix


def _h(x: Array) -> Array:
    """The conjugate transpose of a matrix (no copy for a real one)."""
    return t.cast(Array, conj(x.T))


def _triangle(x: Array, lower: bool, k: int = 0) -> Array:
    return np.tril(x, k) if lower else np.triu(x, k)


def _matrix(x: object, what: str) -> Array:
    if not isinstance(x, np.ndarray) or x.ndim != 2:
        raise NotImplementedError(
            f"{what} of a batch of matrices (or a non-array): no rule; loop over the matrices"
        )
    return x


def _right_hand_side(b: object, what: str) -> None:
    if not isinstance(b, np.ndarray) or b.ndim not in (1, 2):
        raise NotImplementedError(f"{what} with a right-hand side of other than 1 or 2 axes")


def _solve_triangular(a: Array, b: Array, lower: bool, trans: int, unit: bool = False) -> Array:
    """``op(a)^-1 b`` by LAPACK's ``trtrs`` itself: ``scipy.linalg.solve_triangular``'s checks
    and batching cost more than the solve for small matrices."""
    (trtrs,) = sla.get_lapack_funcs(("trtrs",), (a, b))
    x, info = trtrs(a, b, lower=lower, trans=trans, unitdiag=unit)
    if info != 0:
        raise np.linalg.LinAlgError(f"singular triangular matrix (LAPACK trtrs info {info})")
    return t.cast(Array, x)


def _outer(u: Array, v: Array) -> Array:
    """``u v^H`` for columns (1-D) or matrices of columns (2-D)."""
    if u.ndim == 1:
        return t.cast(Array, np.multiply.outer(u, conj(v)))
    return u @ _h(v)


def _refuse_overwrite(bound: t.Mapping[str, object], name: str, what: str) -> None:
    if bound.get(name):
        raise NotImplementedError(f"{what} with {name}=True: no rule (it may destroy its input)")


def hermitian_triangle_grad(s: Array, lower: bool) -> Array:
    """The gradient with respect to a matrix of which only one triangle is read, as the
    Hermitian matrix it stands for, given ``s``, a gradient with respect to that Hermitian
    matrix: an off-diagonal entry stands for two, and a diagonal one for its real part."""
    h = (s + _h(s)) / 2
    out = _triangle(2 * h, lower, -1 if lower else 1)
    diagonal = np.real(np.diagonal(h)) if np.iscomplexobj(h) else np.diagonal(h)
    out[np.diag_indices_from(out)] = diagonal
    return out


TRANS: dict[object, int] = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}
SOLVE_TRIANGULAR_PARAMETERS = (
    "trans", "lower", "unit_diagonal", "overwrite_b", "check_finite",
)  # fmt: skip


def solve_triangular_rrule(f: CD, a: CD, b: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``x = solve_triangular(a, b, trans, lower, unit_diagonal)`` solves ``op(a) x = b`` with
    ``op(a)`` one of ``a``, ``a.T``, ``a.conj().T``; for ``M = op(a)``: ``b`` gets
    ``M^-H g`` and ``M`` gets ``-(M^-H g) x^H``, which goes back to ``a``'s triangle."""
    what = "scipy.linalg.solve_triangular"
    bound = bind(SOLVE_TRIANGULAR_PARAMETERS, args, kwargs, {}, what)
    _refuse_overwrite(bound, "overwrite_b", what)
    ap = _matrix(a.primal, what)
    _right_hand_side(b.primal, what)
    lower = bool(bound.get("lower", False))
    unit = bool(bound.get("unit_diagonal", False))
    x = run_primal(f.primal, (ap, b.primal), args, kwargs)
    trans = TRANS[bound.get("trans", 0)]  # a valid value: the primal accepted it
    xf = new_fdata(x)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dx: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(xf, dx)
        if g is None or not (needs(a) or needs(b)):
            return (NT, zero_for(a), zero_for(b), *rest)

        def solve(rhs: Array, tr: int) -> Array:
            return _solve_triangular(ap, rhs, lower, tr, unit)

        # M^-H g: a^-H g, conj(a^-1 conj(g)), a^-1 g for trans 0, 1, 2.
        if trans == 0:
            gb = solve(g, 2)
        elif trans == 1:
            gb = conj(solve(conj(g), 0))
        else:
            gb = solve(g, 0)
        ga = None
        if needs(a):
            gm = -_outer(gb, x)
            gm = gm if trans == 0 else gm.T if trans == 1 else _h(gm)
            ga = _triangle(gm, lower)
            if unit:
                ga[np.diag_indices_from(ga)] = 0
        return (NT, send(a, ga), send(b, gb) if needs(b) else zero_for(b), *rest)

    return CoDual(x, xf), pullback


primitive(sla.solve_triangular, ARRAY, ARRAY, ...)(solve_triangular_rrule)


def _refuse(name: str) -> t.Callable[[Options], str | None]:
    def refuse(options: Options) -> str | None:
        return f"with {name}=True (it may destroy its input)" if options.get(name) else None

    return refuse


def _solve_triangular_tangent(x: t.Any, ab: Operands, dab: Operands, options: Options) -> t.Any:
    """``dx = M^-1 (db - dM x)`` for ``M = op(a)``, ``dM`` the same ``op`` of the triangle
    of ``da`` that is read."""
    (a, _), (da, db) = ab, dab
    lower, unit = bool(options["lower"]), bool(options["unit_diagonal"])
    trans = TRANS[options["trans"]]
    if da is not None:
        read = _triangle(da, lower, (-1 if lower else 1) if unit else 0)
        change = (read if trans == 0 else dagger(read)) @ x
        db = -change if db is None else db - change
    if db is None:
        return None
    return call(sla.solve_triangular, a, db, trans=trans, lower=lower, unit_diagonal=unit)


register_formula(
    TangentFormula(
        sla.solve_triangular, "scipy.linalg.solve_triangular", _solve_triangular_tangent,
        operands=2, parameters=SOLVE_TRIANGULAR_PARAMETERS,
        defaults={"trans": 0, "lower": False, "unit_diagonal": False},
        refuse=_refuse("overwrite_b"),
    )  # fmt: skip
)

CHOLESKY_PARAMETERS = ("lower", "overwrite_a", "check_finite")


def _cholesky_grad(factor: Array, gfactor: Array, lower: bool) -> Array:
    """The gradient with respect to ``a`` (as ``cholesky`` reads it: one triangle) of the
    factor ``L`` of ``a = L L^H`` (or ``U`` of ``a = U^H U``), given the factor's cotangent.

    For the lower factor, ``dL = L Phi(L^-1 dA L^-H)`` with ``Phi`` the lower triangle with
    half the diagonal, so the gradient of the Hermitian ``A`` is ``L^-H Phi(L^H gL) L^-1``.
    """
    L, gL = (factor, gfactor) if lower else (_h(factor), _h(gfactor))
    L = np.tril(L)  # cho_factor's factor holds other data in its other triangle
    p = np.tril(_h(L) @ np.tril(gL))
    p[np.diag_indices_from(p)] /= 2
    # L^-H p L^-1: y = p L^-1 (from L^H y^H = p^H), then L^-H y.
    y = _h(_solve_triangular(L, _h(p), True, 2))
    return hermitian_triangle_grad(_solve_triangular(L, y, True, 2), lower)


def cholesky_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``cholesky(a, lower)``: ``U`` with ``a = U^H U`` (``L`` with ``a = L L^H``), from the
    upper (lower) triangle of ``a``."""
    what = "scipy.linalg.cholesky"
    bound = bind(CHOLESKY_PARAMETERS, args, kwargs, {}, what)
    _refuse_overwrite(bound, "overwrite_a", what)
    lower = bool(bound.get("lower", False))
    ap = _matrix(a.primal, what)
    c = run_primal(f.primal, (ap,), args, kwargs)
    cf = new_fdata(c)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dc: t.Any) -> tuple[t.Any, ...]:
        if not needs(a) or not isinstance(cf, np.ndarray):
            return (NT, zero_for(a), *rest)
        return (NT, send(a, _cholesky_grad(c, cf, lower)), *rest)

    return CoDual(c, cf), pullback


primitive(sla.cholesky, ARRAY, ...)(cholesky_rrule)


def _factor_tangent(factor: t.Any, da: t.Any, lower: bool) -> t.Any:
    """The tangent of the Cholesky factor ``factor`` (``L``, or ``U = L^T`` for
    ``lower=False``) of the matrix that triangle of ``a`` stands for, ``da`` its tangent."""
    low = factor if lower else dagger(factor)
    dlow = lower_factor_tangent(low, symmetric_of_triangle(da, lower))
    return dlow if lower else dagger(dlow)


def _cholesky_tangent(c: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    return None if da[0] is None else _factor_tangent(c, da[0], bool(options["lower"]))


register_formula(
    TangentFormula(
        sla.cholesky, "scipy.linalg.cholesky", _cholesky_tangent, parameters=CHOLESKY_PARAMETERS,
        defaults={"lower": False}, refuse=_refuse("overwrite_a"),
    )  # fmt: skip
)


def _cho_factor_copies() -> bool:
    """Whether ``cho_factor`` leaves ``a``'s other triangle in ``c`` (SciPy up to 1.17, as
    LAPACK does) or zeroes it (SciPy 1.18): the gradient of that triangle depends on it."""
    c, _ = sla.cho_factor(np.array([[2.0, 1.0], [1.0, 2.0]]))
    return bool(c[1, 0] != 0)


_CHO_FACTOR_COPIES = _cho_factor_copies()


def cho_factor_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``(c, lower) = cho_factor(a, lower)``: ``c`` holds the factor in one triangle (as
    ``cholesky``) and, with SciPy up to 1.17, ``a``'s other triangle, unchanged, in the other
    (newer SciPy zeroes it: then nothing flows back from there)."""
    what = "scipy.linalg.cho_factor"
    bound = bind(CHOLESKY_PARAMETERS, args, kwargs, {}, what)
    _refuse_overwrite(bound, "overwrite_a", what)
    ap = _matrix(a.primal, what)
    result = run_primal(f.primal, (ap,), args, kwargs)
    c, lower = result
    cf = new_fdata(c)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dresult: t.Any) -> tuple[t.Any, ...]:
        if not needs(a) or not isinstance(cf, np.ndarray):
            return (NT, zero_for(a), *rest)
        grad = _cholesky_grad(c, cf, lower)
        if _CHO_FACTOR_COPIES:  # a's other triangle, as it was
            grad = grad + (np.triu(cf, 1) if lower else np.tril(cf, -1))
        return (NT, send(a, grad), *rest)

    return CoDual(result, (cf, NT)), pullback


primitive(sla.cho_factor, ARRAY, ...)(cho_factor_rrule)


def _cho_factor_tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    """``c``'s tangent: the factor's in its triangle and, where ``cho_factor`` copies it,
    ``da``'s other triangle in the other; ``lower`` has none."""
    if da[0] is None:
        return None
    lower = bool(options["lower"])
    dc = _factor_tangent(_triangle(z[0], lower), da[0], lower)
    if _CHO_FACTOR_COPIES:
        dc = dc + (np.triu(da[0], 1) if lower else np.tril(da[0], -1))
    return dc, None


register_formula(
    TangentFormula(
        sla.cho_factor, "scipy.linalg.cho_factor", _cho_factor_tangent,
        parameters=CHOLESKY_PARAMETERS, defaults={"lower": False}, refuse=_refuse("overwrite_a"),
    )  # fmt: skip
)

CHO_SOLVE_PARAMETERS = ("overwrite_b", "check_finite")


def cho_solve_rrule(f: CD, factored: CD, b: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``x = cho_solve((c, lower), b)`` solves ``A x = b`` for ``A = U^H U`` with ``U`` the
    upper triangle of ``c`` (``A = L L^H``, ``L`` the lower triangle, for ``lower``).

    ``b`` gets ``A^-1 g``; ``A`` gets ``-(A^-1 g) x^H =: G``, so ``U`` gets ``U (G + G^H)``
    (``L`` gets ``(G + G^H) L``), added into the fdata of ``c`` in the tuple's fdata: only the
    factor's triangle, the rest of ``c`` is not read.
    """
    what = "scipy.linalg.cho_solve"
    bound = bind(CHO_SOLVE_PARAMETERS, args, kwargs, {}, what)
    _refuse_overwrite(bound, "overwrite_b", what)
    pair = factored.primal
    if not (isinstance(pair, tuple) and len(pair) == 2):
        raise TypeError(f"{what}: the first argument is the pair (c, lower) of cho_factor")
    cp, lower = _matrix(pair[0], what), bool(pair[1])  # SciPy 1.18 gives a 0-d array
    _right_hand_side(b.primal, what)
    x = run_primal(f.primal, (pair, b.primal), args, kwargs)
    xf = new_fdata(x)
    rest = nothing(len(args) + len(kwargs))
    pair_fdata = factored.fdata
    dc = pair_fdata[0] if isinstance(pair_fdata, tuple) else None  # c's fdata, if c has one

    def pullback(dx: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(xf, dx)
        if g is None or not (isinstance(dc, np.ndarray) or needs(b)):
            return (NT, NT, zero_for(b), *rest)
        (potrs,) = sla.get_lapack_funcs(("potrs",), (cp, g))
        gb, info = potrs(cp, g, lower=lower)
        if info != 0:
            raise ValueError(f"{what}: LAPACK potrs failed (info {info})")
        if isinstance(dc, np.ndarray):
            ga = -_outer(gb, x)
            sym = ga + _h(ga)
            factor = _triangle(cp, lower)
            add_into(dc, _triangle(sym @ factor if lower else factor @ sym, lower))
        return (NT, NT, send(b, gb) if needs(b) else zero_for(b), *rest)

    return CoDual(x, xf), pullback


primitive(sla.cho_solve, T.Object(tuple), ARRAY, ...)(cho_solve_rrule)


def _cho_solve_tangent(x: t.Any, pb: Operands, dpb: Operands, options: Options) -> t.Any:
    """``dx = A^-1 (db - dA x)``, ``dA = dF^T F + F^T dF`` for the upper factor ``F`` of ``c``
    (``dF F^T + F dF^T`` for the lower one), ``dF`` the same triangle of ``c``'s tangent."""
    (pair, _), (dpair, db) = pb, dpb
    lower = bool(pair[1])  # (known at run time, a 0-d array from SciPy 1.18: so called)
    dc = None if dpair is None else dpair[0]
    if dc is not None:
        f, df = _triangle(pair[0], lower), _triangle(dc, lower)
        da = df @ dagger(f) + f @ dagger(df) if lower else dagger(df) @ f + dagger(f) @ df
        db = -(da @ x) if db is None else db - da @ x
    return None if db is None else sla.cho_solve(pair, db)


register_formula(
    TangentFormula(
        sla.cho_solve, "scipy.linalg.cho_solve", _cho_solve_tangent, operands=2,
        parameters=CHO_SOLVE_PARAMETERS, refuse=_refuse("overwrite_b"), written=False,
    )  # fmt: skip
)


# --------------------------------------------------------------------------------------------
# Type rules and purity


def _register_types() -> None:
    for fn in (sla.cholesky, sla.cho_factor):
        register_type_rule(fn)(sampled_numpy(fn))
    for fn in (sla.solve_triangular, sla.cho_solve):
        register_type_rule(fn)(sampled_numpy(fn, DataArgs(2)))
    for fn in (sla.solve_triangular, sla.cholesky, sla.cho_factor, sla.cho_solve):
        register_pure_array_function(fn)


_register_types()

from gibbous.library.scipy import linalg_twins as linalg_twins  # (registers: solve, inv, det, ...)
from gibbous.library.scipy import decomp_twins as decomp_twins  # (registers: eigh, svd, qr, ...)
from gibbous.library.scipy import matfuncs as matfuncs  # (registers: expm, logm, sqrtm)
from gibbous.library.scipy import lu as lu  # (registers: lu, lu_factor)
from gibbous.library.scipy import banded as banded  # (registers: solve_banded, solveh_banded)
from gibbous.library.scipy import schur as schur  # (registers: schur)
from gibbous.library.scipy import sylvester as sylvester  # (registers: solve_sylvester, ...)
from gibbous.library.scipy import hessenberg as hessenberg  # (registers: hessenberg)
from gibbous.library.scipy import structured_twins as structured_twins  # (toeplitz, banded, ...)
from gibbous.library.scipy import subspace_twins as subspace_twins  # (registers: orth, pinvh, ...)
from gibbous.library.scipy import array_api as array_api  # (registers: array_namespace, is_numpy ...)
from gibbous.library.scipy import batched as batched  # (last: the decorated functions left)
