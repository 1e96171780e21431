"""SciPy: rules for the primary matrix functions ``scipy.linalg.expm``, ``logm``, ``sqrtm``
(batched over leading axes, real or complex) and ``signm``, the first three by the
block-triangular identity ``f([[A, E], [0, A]]) = [[f(A), L_f(A, E)], [0, f(A)]]``: the
Fréchet derivative ``L_f(A, E)``
is the upper-right block of ``f`` of a matrix twice the size (Higham, *Functions of
Matrices*, 3.2).

Forward mode: ``dZ = L_f(A, dA)``.  Reverse mode: the adjoint of ``L_f(A, .)`` under the
real inner product ``Re tr(X^H Y)`` is ``L_h(A^H, .)`` for ``h(z) = conj(f(conj z))``, which is
``conj(L_f(A^T, conj G))``: ``A`` gets that (its real part for a real ``A``).  (``h = f`` where
``f`` has real Taylor coefficients, but not on the branch cut: the negative eigenvalues of a
real matrix, whose ``logm`` and ``sqrtm`` are complex.)  ``expm``'s forward rule is written into the forward program (a
Hessian-vector product differentiates it again); ``logm``'s and ``sqrtm``'s are called, because
the result of a real matrix is complex where it has negative eigenvalues (known only at run
time, and refused then: forward mode takes real tangents of real operands).

``signm`` has a rule of its own (a Sylvester equation: the block matrix has repeated
eigenvalues, which SciPy's Schur-Parlett ``signm`` does not take).  The functions SciPy writes
with ``expm`` (``cosm``, ``sinm``, ``tanm``, ``coshm``, ``sinhm``,
``tanhm``) are derived from SciPy's Python through this rule.  ``logm``'s and ``sqrtm``'s
deprecated ``disp``/``blocksize`` have no rule (``logm``'s: SciPy's Python is derived then,
and refused; ``sqrtm``'s twin refuses them).  ``sqrtm`` is a twin calling ``principal_sqrt``,
the primitive (SciPy's result copied into memory NumPy counts).
"""

from __future__ import annotations

import types
import typing as t

import numpy as np
import scipy.linalg as sla
from scipy.linalg import _matfuncs

from gibbous.ir import types as T
from gibbous.ir.purity import register_pure_array_function
from gibbous.infer.typerules.table import register_type_rule
from gibbous.library.common import (
    ARRAY,
    CD,
    NT,
    RuleResult,
    cotangent,
    needs,
    new_fdata,
    send,
    zero_for,
)
from gibbous.ir.exceptions import UnsupportedArgumentError
from gibbous.rules.emit import ForwardModeError
from gibbous.rules.matrix_formulas import (
    Operands,
    Options,
    TangentFormula,
    call,
    register_formula,
)
from gibbous.infer.implementations import register_twin
from gibbous.rules.registry import primitive, zero_derivative
from gibbous.tangents.model import CoDual, zero_fdata


def block(a: t.Any, e: t.Any) -> t.Any:
    """``[[a, e], [0, a]]`` (of the last two axes)."""
    zero = np.zeros_like(e)
    top = np.concatenate((a, e), axis=-1)
    return np.concatenate((top, np.concatenate((zero, a), axis=-1)), axis=-2)


def upper_right(m: t.Any, a: t.Any) -> t.Any:
    """The upper-right block of ``m`` (of its last two axes, twice those of ``a``), as
    ``[I, 0] m [0; I]``: a written formula knows no shapes to slice with (the identity is
    made from ``a``: the intersection of the triangles of ones)."""
    eye = np.tril(np.triu(np.ones_like(a)))
    zero = np.zeros_like(a)
    return np.concatenate((eye, zero), axis=-1) @ m @ np.concatenate((zero, eye), axis=-2)


def frechet(fn: t.Callable[[t.Any], t.Any], a: t.Any, e: t.Any) -> t.Any:
    """``L_f(a, e)``, the Fréchet derivative of the matrix function ``fn`` at ``a`` along ``e``."""
    return upper_right(call(fn, block(a, e)), a)


def _fdata(z: t.Any) -> t.Any:
    """The result's fdata: a strided view (the real part of a complex buffer, which SciPy
    returns for a real matrix's result) gets the same view of zeros, the tangent model's."""
    strided = isinstance(z, np.ndarray) and not (z.flags.c_contiguous or z.flags.f_contiguous)
    return zero_fdata(z) if strided else new_fdata(z)


def _square(a: object, what: str) -> None:
    if not isinstance(a, np.ndarray) or a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{what} expects a square matrix (or a stack of them)")


def _rrule(what: str) -> t.Callable[..., RuleResult]:
    def rrule(f: CD, a: CD) -> RuleResult:
        ap = a.primal
        _square(ap, what)
        z = f.primal(ap)
        zf = _fdata(z)

        def pullback(dz: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(zf, dz)
            if g is None or not needs(a):
                return (NT, zero_for(a))
            dtype = np.result_type(ap, g)  # (a real matrix's complex logm: complex blocks)
            at = np.swapaxes(ap, -1, -2).astype(dtype, copy=False)
            return (NT, send(a, np.conj(frechet(f.primal, at, np.conj(np.asarray(g, dtype))))))

        return CoDual(z, zf), pullback

    return rrule


def _expm_tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    return None if da[0] is None else frechet(sla.expm, a[0], da[0])


def _real_result_tangent(
    fn: t.Callable[[t.Any], t.Any], what: str, formula: t.Callable[..., t.Any] | None = None
) -> t.Callable[..., t.Any]:
    def tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
        if np.iscomplexobj(z) and not np.iscomplexobj(a[0]):
            raise ForwardModeError(
                f"forward mode: {what} of a real matrix with a complex result (negative "
                "eigenvalues): its tangent is complex, which forward mode does not take (reverse "
                "mode does)"
            )
        if formula is not None:
            return formula(z, a, da, options)
        return None if da[0] is None else frechet(fn, a[0], da[0])

    return tangent


def _same_array(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    """``expm``'s result type: its operand's shape, a float or complex dtype."""
    if len(args) == 1 and not kwargs and isinstance(args[0], T.Array):
        dtype = args[0].dtype
        inexact = None if dtype is None else np.result_type(dtype, 1.0).name
        return T.Array(inexact, args[0].ndim)
    return T.ANY


def _real_or_complex(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    """``logm``'s and ``sqrtm``'s: real or complex depending on the eigenvalues (complex
    operands give complex results)."""
    found = _same_array(args, kwargs)
    if isinstance(found, T.Array) and found.dtype is not None and found.dtype[0] != "c":
        return T.Array(None, found.ndim)
    return found


def principal_sqrt(a: t.Any) -> t.Any:
    """``scipy.linalg.sqrtm(a)``, copied into memory NumPy allocates (SciPy's C allocates its
    result where NumPy's allocation tracking does not see it)."""
    return np.array(sla.sqrtm(a))


def sqrtm(A: t.Any, disp: t.Any = None, blocksize: t.Any = None) -> t.Any:
    """``scipy.linalg.sqrtm`` (without its deprecated ``disp``, ``blocksize``)."""
    if disp is not None or blocksize is not None:
        raise UnsupportedArgumentError("scipy.linalg.sqrtm with disp= or blocksize=: no rule")
    return principal_sqrt(np.asarray(A))


register_twin(sla.sqrtm, t.cast(types.FunctionType, sqrtm))

for _fn, _what, _rule in (
    (sla.expm, "scipy.linalg.expm", _same_array),
    (sla.logm, "scipy.linalg.logm", _real_or_complex),
    (principal_sqrt, "scipy.linalg.sqrtm", _real_or_complex),
):
    primitive(_fn, ARRAY)(_rrule(_what))
    register_type_rule(_fn)(_rule)
    register_pure_array_function(_fn)

register_formula(TangentFormula(sla.expm, "scipy.linalg.expm", _expm_tangent, holomorphic=True))
for _fn, _what in ((sla.logm, "scipy.linalg.logm"), (principal_sqrt, "scipy.linalg.sqrtm")):
    register_formula(
        TangentFormula(
            _fn, _what, _real_result_tangent(_fn, _what), holomorphic=True, written=False
        )
    )


# signm: sign(A) = S, S^2 = I, N = S A (eigenvalues of positive real part): the derivative
# L solves N L + L N = E - S E S (its blocks between the projectors (I +- S) / 2: the
# Sylvester equation of A restricted to them), which also holds for a complex S.


def _signm_tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    if da[0] is None:
        return None
    n = z @ a[0]
    return call(sla.solve_sylvester, n, n, da[0] - z @ da[0] @ z)


def signm_rrule(f: CD, a: CD) -> RuleResult:
    """``A`` gets ``Y - S^H Y S^H`` for ``Y`` solving ``N^H Y + Y N^H = G``."""
    ap = a.primal
    _square(ap, "scipy.linalg.signm")
    if ap.ndim != 2:
        raise UnsupportedArgumentError("scipy.linalg.signm of a stack of matrices: no rule")
    z = f.primal(ap)
    zf = _fdata(z)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None or not needs(a):
            return (NT, zero_for(a))
        sh = np.conj(z.T)
        nh = np.conj((z @ ap).T)
        y = sla.solve_sylvester(nh, nh, g)
        return (NT, send(a, y - sh @ y @ sh))

    return CoDual(z, zf), pullback


primitive(sla.signm, ARRAY)(signm_rrule)
register_type_rule(sla.signm)(_real_or_complex)
register_pure_array_function(sla.signm)
register_formula(
    TangentFormula(
        sla.signm, "scipy.linalg.signm",
        _real_result_tangent(sla.signm, "scipy.linalg.signm", _signm_tangent),
        holomorphic=True, written=False,
    )  # fmt: skip
)


# SciPy's ``_maybe_real`` (``coshm``, ``sinhm``, ``tanhm``, ``tanm``: a real matrix's result
# without the imaginary part rounding left), as a twin: the test, on values, has no derivative.


def imaginary_negligible(b: t.Any, tol: t.Any) -> bool:
    """Whether ``_maybe_real`` drops ``b``'s imaginary part (SciPy's test, run as it is)."""
    real = np.empty((1, 1))
    return bool(np.isrealobj(_matfuncs._maybe_real(real, b, tol)))


def maybe_real(A: t.Any, B: t.Any, tol: t.Any = None) -> t.Any:
    """``scipy.linalg._matfuncs._maybe_real``."""
    if np.isrealobj(A) and np.iscomplexobj(B) and imaginary_negligible(B, tol):
        return np.real(B)
    return B


zero_derivative(imaginary_negligible, ...)
register_type_rule(imaginary_negligible)(lambda args, kwargs: T.BOOL)
register_twin(_matfuncs._maybe_real, t.cast(types.FunctionType, maybe_real))
