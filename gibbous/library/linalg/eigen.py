"""Eigen-decompositions (``np.linalg``): ``eig``, ``eigvals``, ``eigh`` and ``eigvalsh``,
batched over leading axes, real or complex.

Notation as in ``decompositions``: ``X^H`` is the conjugate transpose, ``G`` a result's
cotangent, ``w`` the eigenvalues, ``V`` the eigenvectors (columns).

Eigenvectors are fixed only up to a factor each, which the function chooses:

* ``eig`` (LAPACK's ``geev``) documents its choice: unit 2-norm, and the entry of largest
  magnitude real (and positive, for complex input).  The rule differentiates that choice: the
  standard derivative of ``A V = V diag(w)``, plus a multiple of ``v_i`` that keeps its norm 1
  and its largest entry real.  So every loss gets the gradient of NumPy's result (losses blind
  to the phases and scales of the eigenvectors get one that does not depend on the choice),
  except where two entries of an eigenvector tie for the largest magnitude, and except the sign
  of the eigenvectors of a complex pair of a *real* matrix: NumPy's result flips it under
  perturbations of rounding size, and the rule holds it fixed (exact for losses blind to it).
* ``eigh`` (``syevd``/``heevd``) documents no phase for complex eigenvectors: the rule is exact
  for losses that do not depend on them (``|V|``, ``V V^H``, the eigenvalues); for others it
  holds ``Im(v_i^H dv_i) = 0``.

Where the derivative does not exist the rules return what the formulas give rather than a
number that looks right: the eigenvectors' gradient at a repeated eigenvalue has ``inf`` or
``nan`` entries (it divides by differences of eigenvalues; a term whose factor is an exact
zero is zero, ``gap_weighted``: losses of the eigenvalues alone, or of eigenvectors weighed
nowhere at the tie, stay finite), and ``eig`` and
``eigvals`` at a matrix that is not diagonalizable raise ``LinAlgError`` (``V`` is singular) or,
near one, give the huge gradient that is the truth there.  The eigenvalues alone at a repeated
eigenvalue of a diagonalizable matrix give the gradient for the eigenbasis LAPACK returned,
which is right for any symmetric function of the repeated ones (their sum, their product).

``eigh`` and ``eigvalsh`` read one triangle of ``A`` (``UPLO="L"``, the default, or ``"U"``),
as LAPACK does: the other triangle gets no gradient, and the one read gets that of the
Hermitian matrix it stands for (``decompositions.from_triangle``).

Forward rules, for real matrices, follow the reverse ones (called, not written into the forward
program: the gaps' inverses are built for the shape).  ``eig`` and ``eigvals`` of a real matrix
take those whose eigenvalues are real: a complex pair's tangents are complex, and the rule
raises ``ForwardModeError`` when one appears (whether one does is known only at run time).
For the same reason their results' dtype is unknown to type inference, and the forward
transform of a Python function calling them refuses the call for now; ``build_frule`` of
``np.linalg.eig`` itself takes it.
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.rules.matrix_formulas import Operands, Options, TangentFormula, register_formula
from gibbous.rules.emit import ForwardModeError
from gibbous.library.common import ARRAY, CD, Array, RuleResult, bind
from gibbous.library.linalg.decompositions import (
    dagger,
    factor_rrule,
    from_triangle,
    gap_weighted,
    symmetric_of_triangle,
)
from gibbous.rules.registry import primitive


def _diagonal_matrix(d: Array) -> Array:
    return t.cast(Array, d[..., None] * np.eye(d.shape[-1]))


# --------------------------------------------------------------------------------------------
# eig, eigvals


def _largest_entries(v: Array) -> Array:
    """The row of each eigenvector's largest entry, the one ``geev`` made real: among the real
    entries, so that a near-tie in magnitude cannot pick another one."""
    magnitude = np.where(np.imag(v) == 0, np.abs(v), -1.0)
    return t.cast(Array, np.argmax(magnitude, axis=-2))


def _eigenvector_cotangent(v: Array, g_v: Array) -> Array:
    """``V^H G~``, where ``G~`` is the cotangent of the unnormalised derivative
    ``dV = V (F o V^-1 dA V)`` that accounts for the normalisation: ``d v_i`` also gets
    ``(a_i + i b_i) v_i``, with ``a_i = -Re(v_i^H dv_i)`` (norm 1) and
    ``b_i = -Im(dv_i[k]) / v_i[k]`` (the largest entry ``k`` stays real).  Its adjoint:
    ``G~ = G - V diag(Re d) - i E diag(Im d / v[k])``, ``d = diag(V^H G)``, ``E`` the columns
    ``e_k``."""
    vh = dagger(v)
    vhg = vh @ g_v
    d = np.diagonal(vhg, 0, -2, -1)
    k = _largest_entries(v)
    pivots = np.real(np.take_along_axis(v, k[..., None, :], axis=-2))  # v_i[k_i], real
    rows = np.take_along_axis(v, k[..., :, None], axis=-2)  # row i: row k_i of V
    scale_e = -1j * np.imag(d)[..., None, :] / pivots
    vh_e = dagger(rows)  # V^H E
    return t.cast(Array, vhg - (vh @ v) * np.real(d)[..., None, :] + vh_e * scale_e)


def eig_rrule(f: CD, a: CD) -> RuleResult:
    """``w, V = eig(A)``, ``A V = V diag(w)``: ``A`` gets
    ``V^-H (diag(g_w) + conj(F) o (V^H G~)) V^H`` with ``F[i, j] = 1 / (w[j] - w[i])`` off the
    diagonal and ``G~`` the eigenvectors' cotangent with the normalisation's terms
    (``_eigenvector_cotangent``).  A real ``A`` takes the real part."""

    def grad(z: t.Any, gs: list[t.Any]) -> Array:
        (w, v), (g_w, g_v) = z, gs
        middle = np.zeros(v.shape, np.result_type(v, w, 1j))
        if g_w is not None:
            middle = middle + _diagonal_matrix(g_w)
        if g_v is not None:
            middle = middle + gap_weighted(np.conj(w), _eigenvector_cotangent(v, g_v))
        vh = dagger(_diagonalizing(v))
        return np.linalg.solve(vh, middle @ vh)  # V^-H middle V^H

    return factor_rrule(f, a, (), {}, 2, grad)


def _matched_eigenvectors(a: Array, w: Array) -> Array:
    """The eigenvectors of ``a`` in the order of its eigenvalues ``w`` (from ``eigvals``, which
    runs LAPACK without vectors: the order agrees in practice, but nothing promises it): each
    eigenvalue takes the nearest of ``eig``'s not yet taken (a repeated one takes as many
    eigenvectors as it is repeated, not one of them each time)."""
    found, v = np.linalg.eig(a)
    distance = np.abs(w[..., :, None] - found[..., None, :])
    order = np.zeros(w.shape, dtype=np.intp)
    for index in np.ndindex(w.shape[:-1]):
        d = distance[index].copy()
        for i in np.argsort(d.min(axis=-1), kind="stable"):  # (the clearest first)
            j = int(np.argmin(d[i]))
            order[index + (i,)] = j
            d[:, j] = np.inf
    return _diagonalizing(t.cast(Array, np.take_along_axis(v, order[..., None, :], axis=-1)))


def _diagonalizing(v: Array) -> Array:
    """``v``, if its columns are independent to working precision: else ``a`` is not
    diagonalizable (a defective repeated eigenvalue), and formulas by ``V^-1`` give numbers
    without meaning (``LinAlgError``)."""
    if v.size and np.any(np.linalg.cond(v) > 1e15):
        raise np.linalg.LinAlgError(
            "eigenvalues' gradient: the matrix is not diagonalizable (its eigenvectors are "
            "dependent to working precision)"
        )
    return v


def eigvals_rrule(f: CD, a: CD) -> RuleResult:
    """``w = eigvals(A)``: ``dw_i = (V^-1 dA V)_ii``, so ``A`` gets ``V^-H diag(g) V^H``
    (eigenvectors of any normalisation: it cancels)."""

    def grad(w: Array, gs: list[t.Any]) -> Array:
        vh = dagger(_matched_eigenvectors(a.primal, w))
        return np.linalg.solve(vh, gs[0][..., :, None] * vh)

    return factor_rrule(f, a, (), {}, 0, grad)


primitive(np.linalg.eig, ARRAY)(eig_rrule)
primitive(np.linalg.eigvals, ARRAY)(eigvals_rrule)


# Forward rules (real matrices with real eigenvalues: a complex pair has complex tangents,
# which forward mode does not take yet, so it is refused when it appears).


def _real_spectrum(w: Array, what: str) -> None:
    # (NumPy 2.5 returns complex eigenvalues whatever they are: real ones have imaginary
    # parts of exactly 0, and the formulas, on those, give tangents of the result's type)
    if np.iscomplexobj(w) and np.any(w.imag != 0):
        raise ForwardModeError(
            f"forward mode: {what} of a real matrix with complex eigenvalues: their tangents "
            "are complex, which forward mode does not take yet (reverse mode does)"
        )


def _eig_tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    """With ``P = V^-1 dA V``: ``dw = diag(P)`` and ``dV = V (F o P)``
    (``F = gap_inverses(w)``), less each column's component that would change its unit norm
    (the largest entry of a real eigenvector stays real: no term)."""
    w, v = z
    _real_spectrum(w, "numpy.linalg.eig")
    if da[0] is None:
        return None
    p = np.linalg.solve(v, da[0] @ v)
    dv = v @ gap_weighted(w, p)
    dv = dv - v * np.sum(v * dv, axis=-2, keepdims=True)
    return np.diagonal(p, 0, -2, -1), dv


def _eigvals_tangent(w: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    """``dw = diag(V^-1 dA V)``."""
    _real_spectrum(w, "numpy.linalg.eigvals")
    if da[0] is None:
        return None
    v = _matched_eigenvectors(a[0], w)
    return np.diagonal(np.linalg.solve(v, da[0] @ v), 0, -2, -1)


register_formula(TangentFormula(np.linalg.eig, "numpy.linalg.eig", _eig_tangent, written=False))
register_formula(
    TangentFormula(np.linalg.eigvals, "numpy.linalg.eigvals", _eigvals_tangent, written=False)
)


# --------------------------------------------------------------------------------------------
# eigh, eigvalsh


def _lower(args: t.Sequence[CD], kwargs: t.Mapping[str, CD], what: str) -> bool:
    """Whether ``UPLO`` says the lower triangle (NumPy accepts either case)."""
    return _says_lower(bind(("UPLO",), args, kwargs, {"UPLO": "L"}, what)["UPLO"], what)


def _says_lower(uplo: object, what: str) -> bool:
    if not isinstance(uplo, str) or uplo.upper() not in ("L", "U"):
        raise ValueError(f"np.linalg.{what}: UPLO must be 'L' or 'U', not {uplo!r}")
    return uplo.upper() == "L"


def eigh_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``w, V = eigh(A, UPLO)`` (Hermitian, distinct eigenvalues): ``A`` gets
    ``V (diag(g_w) + F o (V^H G_V)) V^H`` with ``F[i, j] = 1 / (w[j] - w[i])`` off the
    diagonal, then folded onto the triangle read.  For complex matrices the gradient is that
    of losses that do not depend on the eigenvectors' phases (module docstring)."""
    lower = _lower(args, kwargs, "eigh")

    def grad(z: t.Any, gs: list[t.Any]) -> Array:
        (w, v), (g_w, g_v) = z, gs
        middle = np.zeros(v.shape, np.result_type(a.primal))
        if g_w is not None:
            middle = middle + _diagonal_matrix(g_w)
        if g_v is not None:
            middle = middle + gap_weighted(w, dagger(v) @ g_v)
        return from_triangle(v @ middle @ dagger(v), lower)

    return factor_rrule(f, a, args, kwargs, 2, grad)


def eigvalsh_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``w = eigvalsh(A, UPLO)``: ``A`` gets ``V diag(g) V^H`` folded onto the triangle read
    (``V`` from ``eigh``, whose eigenvalues come in the same ascending order)."""
    lower = _lower(args, kwargs, "eigvalsh")

    def grad(w: Array, gs: list[t.Any]) -> Array:
        _, v = np.linalg.eigh(a.primal, "L" if lower else "U")
        return from_triangle((v * gs[0][..., None, :]) @ dagger(v), lower)

    return factor_rrule(f, a, args, kwargs, 0, grad)


primitive(np.linalg.eigh, ARRAY, ...)(eigh_rrule)
primitive(np.linalg.eigvalsh, ARRAY, ...)(eigvalsh_rrule)


# Forward rules (real matrices): ``S``, the symmetric matrix the triangle read stands for.


def _eigh_tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    """With ``P = V^T S V``: ``dw = diag(P)`` and ``dV = V (F o P)``
    (``F = gap_inverses(w)``)."""
    lower = _says_lower(options["UPLO"], "eigh")
    if da[0] is None:
        return None
    w, v = z
    p = dagger(v) @ symmetric_of_triangle(da[0], lower) @ v
    return np.diagonal(p, 0, -2, -1), v @ gap_weighted(w, p)


def _eigvalsh_tangent(w: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    """``dw = diag(V^T S V)`` (``V`` from ``eigh``, as the reverse rule takes it)."""
    lower = _says_lower(options["UPLO"], "eigvalsh")
    if da[0] is None:
        return None
    _, v = np.linalg.eigh(a[0], "L" if lower else "U")
    return np.sum(v * (symmetric_of_triangle(da[0], lower) @ v), axis=-2)


for _fn, _tangent in ((np.linalg.eigh, _eigh_tangent), (np.linalg.eigvalsh, _eigvalsh_tangent)):
    register_formula(
        TangentFormula(
            _fn, f"numpy.linalg.{_fn.__name__}", _tangent, parameters=("UPLO",),
            defaults={"UPLO": "L"}, written=False,
        )  # fmt: skip
    )
