"""Inverses and factorizations of matrices (``np.linalg``): ``inv``, ``solve``, ``det``,
``slogdet``, ``pinv``, ``cholesky``, ``svd`` and ``qr``, batched over leading axes, real or
complex; the eigen-decompositions are in ``eigen``, on the shared pieces here (``dagger``,
``from_triangle``, ``factor_rrule``).

Notation: ``X^H`` is the conjugate transpose (``dagger``), ``G`` a result's cotangent.  Complex
matrices follow tangents.md (``dL = Re(sum(conj(G) dX))``).  ``qr``'s factors are unique
(LAPACK gives ``R`` a real diagonal); ``svd``'s complex singular vectors are fixed only up to a
phase ``u_i`` and ``v_i`` share, and the rule is exact for losses blind to it (``svd_rrule``).

Where these functions are not differentiable the rules say so or assume it away: ``svd`` needs
distinct non-zero singular values (the gradient divides by their differences: ``inf`` or
``nan`` where two are equal); ``pinv`` keeps the rank; ``qr`` needs at least as many rows as
columns and full rank.  ``cholesky`` reads only the lower triangle of the matrix (as LAPACK
does): the strictly upper triangle gets no gradient, and the lower one gets that of the
Hermitian matrix it stands for.

Each group of reverse rules is followed by the forward rules of its functions for real
operands (complex ones are refused), under the same conditions and with the same conventions
and refusals, written once as NumPy code (``gibbous.rules.matrix_formulas``).  Those of
``inv``, ``solve``, ``slogdet``, ``pinv`` and ``cholesky`` are written into the forward program,
which reverse mode differentiates again (Hessian-vector products); ``det`` (its singular
matrices, through the adjugate), ``svd`` and ``qr`` (their shapes) are called.
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.rules.matrix_formulas import Operands, Options, TangentFormula, register_formula
from gibbous.rules.emit import ForwardModeError
from gibbous.library.common import (
    ARRAY,
    CD,
    NO_SCRATCH,
    NT,
    Array,
    RuleResult,
    Scratch,
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
from gibbous.rules.registry import Pullback, primitive, stateful_primitive
from gibbous.tangents.model import CoDual, zero_fdata

StatefulResult = tuple[CD, Pullback, Scratch]


def dagger(x: Array) -> Array:
    """The conjugate transpose of (a stack of) matrices."""
    return t.cast(Array, conj(np.swapaxes(x, -1, -2)))


def _t(x: Array) -> Array:
    return np.swapaxes(x, -1, -2)


def call_primal(f: CD, x: CD, args: t.Sequence[CD], kwargs: t.Mapping[str, CD]) -> t.Any:
    return f.primal(x.primal, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})


def result_parts(zf: t.Any, dz: t.Any, n: int) -> list[t.Any]:
    """The cotangents of the ``n`` parts of a tuple result (None for a zero one): arrays from
    its fdata, numbers from its rdata.  An array of zeros is None too: the factors' terms
    divide by gaps between eigenvalues (singular values), and a loss of the eigenvalues alone
    must not get ``0 * inf`` from the eigenvectors' zero cotangent at a repeated one."""
    parts: list[t.Any] = []
    for i in range(n):
        f = zf[i] if isinstance(zf, tuple) else NT
        d = dz[i] if isinstance(dz, tuple) else NT
        parts.append(_nonzero(cotangent(f, d)))
    return parts


def _nonzero(g: t.Any) -> t.Any:
    """A cotangent, or None for a zero array."""
    return None if isinstance(g, np.ndarray) and not g.any() else g


def from_triangle(grad: Array, lower: bool = True) -> Array:
    """The gradient of a function of the Hermitian matrix that one triangle of ``A`` stands for
    (the lower one, or the upper one for ``lower=False``), given ``grad``, its gradient as a
    function of a Hermitian matrix: the real diagonal and, twice, the Hermitian part off it in
    the triangle read (the other triangle is never read, and gets nothing)."""
    herm = (grad + dagger(grad)) / 2
    doubled = np.tril(2 * herm) if lower else np.triu(2 * herm)
    return t.cast(Array, doubled - herm * np.eye(herm.shape[-1]))


def gap_inverses(w: Array) -> Array:
    """``F[..., i, j] = 1 / (w[j] - w[i])`` off the diagonal, 0 on it (``inf`` at a tie): the
    eigenvectors' (singular vectors', of ``w = s**2``) sensitivity to the eigenvalues' gaps."""
    gaps = w[..., None, :] - w[..., :, None]
    off = ~np.eye(w.shape[-1], dtype=bool)
    # (no ``out=`` / ``where=``: a Hessian-vector product differentiates it again)
    return t.cast(Array, np.where(off, 1.0 / np.where(off, gaps, 1.0), 0.0))


def gap_weighted(w: Array, m: Array) -> Array:
    """``gap_inverses(w) * m``, zero wherever ``m`` is: a term ``1 / (w[j] - w[i])`` of a
    repeated eigenvalue multiplied by an exact zero (a loss of the eigenvalues, or of
    eigenvectors it does not weigh there) contributes nothing, not ``inf * 0 = nan``."""
    with np.errstate(divide="ignore", invalid="ignore"):  # (the infs are the result's)
        return t.cast(Array, np.where(m == 0, 0, gap_inverses(w) * m))


# --------------------------------------------------------------------------------------------
# inv, solve, det, slogdet, pinv


def inv_rrule(f: CD, a: CD) -> RuleResult:
    """``Z = inv(A)``: ``dZ = -Z dA Z``, so ``A`` gets ``-Z^H G Z^H``."""
    z = f.primal(a.primal)
    zf = new_fdata(z)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if not needs(a):
            return NT, NT
        zh = dagger(z)
        return NT, send(a, -(zh @ zf @ zh))

    return CoDual(z, zf), pullback


def solve_rrule(f: CD, a: CD, b: CD) -> RuleResult:
    """``x = solve(A, b)`` (``b`` a vector if 1-D, else a stack of matrices): ``b`` gets
    ``gb = solve(A^H, G)`` and ``A`` gets ``-gb x^H``."""
    ap, bp = a.primal, b.primal
    x = f.primal(ap, bp)
    xf = new_fdata(x)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if not (needs(a) or needs(b)):
            return NT, zero_for(a), zero_for(b)
        vector = np.ndim(bp) == 1
        g = xf[:, None] if vector else xf
        gb = np.linalg.solve(dagger(ap), g)
        ga = -(gb @ dagger(x[:, None] if vector else x)) if needs(a) else None
        return NT, send(a, ga), send(b, gb[:, 0] if vector else gb)

    return CoDual(x, xf), pullback


# ``inv`` into a buffer: the gufunc behind ``np.linalg.inv`` takes ``out=``; NumPy's own module
# for it is private, so without it the rules fall back to ``np.linalg.inv`` (which allocates).
_INV_GUFUNC: t.Any = getattr(getattr(np.linalg, "_umath_linalg", None), "inv", None)


def _add_scaled_inverse_h(dx: Array, a: Array, scale: t.Any, buf: Array | None) -> None:
    """``dx += scale * inv(a)^H`` for one matrix, through ``buf`` (no allocation) if given."""
    if buf is None or _INV_GUFUNC is None:
        add_into(dx, scale * dagger(np.linalg.inv(a)))
        return
    _INV_GUFUNC(a, out=buf)
    if buf.dtype.kind == "c":
        np.conjugate(buf, out=buf)
    np.multiply(buf, scale, out=buf)
    np.add(dx, buf.T if dx.dtype.kind == "c" else buf.T.real, out=dx)


def adjugate(a: Array) -> Array:
    """``adj(A)`` of (a stack of) square matrices, singular ones included: ``det(A) inv(A)``
    where ``A`` is invertible, from the SVD ``A = U S V^H`` as ``det(U) det(V^H) V
    diag(prod of the other singular values) U^H`` (no division, so defined at ``det = 0``)."""
    u, s, vh = np.linalg.svd(a)
    others = _products_of_others(s)
    phase = np.linalg.det(u) * np.linalg.det(vh)
    adj = (dagger(vh) * others[..., None, :]) @ dagger(u)
    return t.cast(Array, adj * np.asarray(phase)[..., None, None])


def _products_of_others(s: Array) -> Array:
    """For each entry of the last axis, the product of the others (exact with zeros)."""
    n = s.shape[-1]
    out = np.ones_like(s)
    for i in range(n):  # (n is a matrix's order: small)
        for j in range(n):
            if j != i:
                out[..., i] = out[..., i] * s[..., j]
    return out


def _one_matrix(state: Scratch | None, a: CD) -> tuple[Scratch, Array | None]:
    """The state and buffer of a determinant of one matrix (a scalar, which NumPy computes
    without allocating an array); no buffer for a stack."""
    ap = a.primal
    if ap.ndim != 2 or not needs(a):
        return NO_SCRATCH if state is None else state, None
    state = Scratch.fit(state, (ap.shape, np.result_type(ap, np.float32)))
    return state, state.arrays[0]


def det_rrule(state: Scratch | None, f: CD, a: CD) -> StatefulResult:
    """``det(A)``: ``d det = det tr(A^-1 dA)``, so ``A`` gets ``G conj(det) inv(A)^H``.  A
    stateful rule: for one matrix the inverse goes into the state's buffer."""
    ap = a.primal
    z = f.primal(ap)
    zf = new_fdata(z)
    state, buf = _one_matrix(state, a)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None or not needs(a):
            return NT, zero_for(a)
        # (a scalar det compared as a scalar: np.all would allocate a 0-d array)
        invertible = bool(np.all(z != 0)) if type(z) is np.ndarray else z != 0
        if invertible:  # ``det inv(A)``: the adjugate, of an invertible matrix
            if buf is not None:
                _add_scaled_inverse_h(a.fdata, ap, g * np.conj(z), buf)
                return _NOTHING_2
            scale = np.asarray(g * np.conj(z))[..., None, None]
            return NT, send(a, scale * dagger(np.linalg.inv(ap)))
        # A singular matrix (``det = 0``): ``inv`` is inf or nan there, the adjugate is not.
        return NT, send(a, np.asarray(g)[..., None, None] * dagger(adjugate(ap)))

    return CoDual(z, zf), pullback, state


_NOTHING_2 = (NT, NT)


def slogdet_rrule(state: Scratch | None, f: CD, a: CD) -> StatefulResult:
    """``sign, logabsdet = slogdet(A)``: ``d log|det| = Re tr(A^-1 dA)`` gives ``A`` the
    gradient ``g_log inv(A)^H``; a complex sign moves by ``i sign Im tr(A^-1 dA)``, which gives
    ``i Re(i conj(g_sign) sign) inv(A)^H``; a real sign is constant.  Stateful as ``det``."""
    ap = a.primal
    z = f.primal(ap)
    zf = new_fdata(z)
    state, buf = _one_matrix(state, a)
    complex_ = np.iscomplexobj(ap)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g_sign, g_log = result_parts(zf, dz, 2)
        if not needs(a) or (g_sign is None and g_log is None):
            return NT, zero_for(a)
        weight: t.Any = 0.0 if g_log is None else g_log
        if g_sign is not None and complex_:
            weight = weight + 1j * np.real(1j * np.conj(g_sign) * z.sign)
        if buf is not None:
            _add_scaled_inverse_h(a.fdata, ap, weight, buf)
            return _NOTHING_2
        weight = np.broadcast_to(weight, np.shape(z.logabsdet))
        return NT, send(a, np.asarray(weight)[..., None, None] * dagger(np.linalg.inv(ap)))

    return CoDual(z, zf), pullback, state


PINV_PARAMETERS = ("rcond", "hermitian", "rtol")


def pinv_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``Z = pinv(A)`` at constant rank: ``dZ = -Z dA Z + Z Z^H dA^H (I - A Z) + (I - Z A)
    dA^H Z^H Z``, so ``A`` gets ``-Z^H G Z^H + (I - A Z) G^H Z Z^H + Z^H Z G^H (I - Z A)``."""
    bound = bind(PINV_PARAMETERS, args, kwargs, {}, "pinv")
    if bound.get("hermitian"):
        raise NotImplementedError("np.linalg.pinv with hermitian=True: no rule")
    ap = a.primal
    z = call_primal(f, a, args, kwargs)
    zf = new_fdata(z)
    rest = tuple(zero_for(x) for x in (*args, *kwargs.values()))  # rcond may be a float

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if not needs(a):
            return (NT, NT, *rest)
        g, zh = zf, dagger(z)
        gh = dagger(g)
        left = np.eye(ap.shape[-2]) - ap @ z  # I - A Z
        right = np.eye(ap.shape[-1]) - z @ ap  # I - Z A
        grad = -(zh @ g @ zh) + left @ gh @ (z @ zh) + (zh @ z) @ gh @ right
        return (NT, send(a, grad), *rest)

    return CoDual(z, zf), pullback


primitive(np.linalg.inv, ARRAY)(inv_rrule)
primitive(np.linalg.solve, ARRAY, ARRAY)(solve_rrule)
stateful_primitive(np.linalg.det, ARRAY, state_type=Scratch)(det_rrule)
stateful_primitive(np.linalg.slogdet, ARRAY, state_type=Scratch)(slogdet_rrule)
primitive(np.linalg.pinv, ARRAY, ...)(pinv_rrule)


# Forward rules (real operands): each the transpose of the pullback above, written once as
# NumPy code (``gibbous.rules.matrix_formulas``); ``det`` branches on singular matrices, so it is called.


def _inv_tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    """``dZ = -Z dA Z``."""
    return None if da[0] is None else -(z @ da[0] @ z)


def _solve_tangent(x: t.Any, ab: Operands, dab: Operands, options: Options) -> t.Any:
    """``dx = A^-1 (db - dA x)``; a 1-D ``b`` is a vector, against each matrix of a stack."""
    (a, b), (da, db) = ab, dab
    if da is None:
        return None if db is None else np.linalg.solve(a, db)
    vectors = b.ndim == 1 and a.ndim > 2  # (x: a vector per matrix, which ``@`` would not see)
    change = np.einsum("...ij,...j->...i", da, x) if vectors else da @ x
    rhs = -change if db is None else db - change
    if vectors:  # (a stack of them is a matrix to ``solve``)
        return np.squeeze(np.linalg.solve(a, np.expand_dims(rhs, -1)), -1)
    return np.linalg.solve(a, rhs)


def _log_det_tangent(a: t.Any, da: t.Any) -> t.Any:
    """``d log|det A| = tr(A^-1 dA)``."""
    return np.trace(np.linalg.solve(a, da), axis1=-2, axis2=-1)


def _det_tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    """``d det = det tr(A^-1 dA)``, or ``tr(adj(A) dA)`` where a matrix is singular (the
    reverse rule's test and its adjugate)."""
    if da[0] is None:
        return None
    if bool(np.all(z != 0)):
        return z * _log_det_tangent(a[0], da[0])
    return np.trace(adjugate(a[0]) @ da[0], axis1=-2, axis2=-1)


def _slogdet_tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    """The sign of a real determinant is constant; ``log|det|`` moves by ``tr(A^-1 dA)``."""
    return None if da[0] is None else (None, _log_det_tangent(a[0], da[0]))


def _pinv_tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    """``dZ = -Z dA Z + Z Z^T dA^T (I - A Z) + (I - Z A) dA^T Z^T Z`` (constant rank)."""
    if da[0] is None:
        return None
    dat, zt = _t(da[0]), _t(z)
    keep_left = dat - dat @ (a[0] @ z)  # dA^T (I - A Z)
    keep_right = dat - (z @ a[0]) @ dat  # (I - Z A) dA^T
    return -(z @ da[0] @ z) + (z @ zt) @ keep_left + keep_right @ (zt @ z)


def _refuse_hermitian(options: Options) -> str | None:
    return "with hermitian=True" if options.get("hermitian") else None


for _rule in (
    TangentFormula(np.linalg.inv, "numpy.linalg.inv", _inv_tangent, holomorphic=True),
    TangentFormula(
        np.linalg.solve, "numpy.linalg.solve", _solve_tangent, operands=2, holomorphic=True
    ),
    TangentFormula(
        np.linalg.det, "numpy.linalg.det", _det_tangent, written=False, holomorphic=True
    ),
    TangentFormula(np.linalg.slogdet, "numpy.linalg.slogdet", _slogdet_tangent),
    TangentFormula(
        np.linalg.pinv, "numpy.linalg.pinv", _pinv_tangent, parameters=PINV_PARAMETERS,
        refuse=_refuse_hermitian,
    ),
):  # fmt: skip
    register_formula(_rule)


# --------------------------------------------------------------------------------------------
# The rule of a factorization: cholesky, svd, qr here, the eigen-decompositions in ``eigen``

Gradient = t.Callable[[t.Any, list[t.Any]], t.Any]


def factor_rrule(
    f: CD, a: CD, args: t.Sequence[CD], kwargs: t.Mapping[str, CD], parts: int, grad: Gradient
) -> RuleResult:
    """The rule of ``f(a, *args, **kwargs)``, a function of one matrix (or stack) whose other
    arguments are options: ``a`` gets ``grad(z, cotangents)`` of the result ``z`` and its
    cotangents (one per part of a tuple of ``parts``, or one for ``parts == 0``), each None
    when zero; nothing when all are."""
    z = call_primal(f, a, args, kwargs)
    # A result that is a strided view (``eigvals`` returns the real part of a complex buffer)
    # gets the same view of zeros, the tangent model's layout, which ``new_fdata`` compacts.
    strided = isinstance(z, np.ndarray) and not (z.flags.c_contiguous or z.flags.f_contiguous)
    zf = zero_fdata(z) if strided else new_fdata(z)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        gs = result_parts(zf, dz, parts) if parts else [_nonzero(cotangent(zf, dz))]
        if not needs(a) or all(g is None for g in gs):
            return (NT, zero_for(a), *rest)
        return (NT, send(a, grad(z, gs)), *rest)

    return CoDual(z, zf), pullback


def cholesky_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``L = cholesky(A)``, ``A = L L^H``: ``dL = L Phi(L^-1 dA L^-H)`` (``Phi``: the lower
    triangle, the diagonal halved), so the Hermitian matrix gets ``L^-H Phi*(L^H G) L^-1``
    (``Phi*``: the strictly lower triangle and half the real diagonal), made Hermitian.
    ``upper=True``: ``U = L^H`` of the matrix the upper triangle stands for."""
    upper = bool(bind(("upper",), args, kwargs, {}, "cholesky").get("upper"))

    def grad(low: Array, gs: list[t.Any]) -> Array:
        # (upper=True: U = L^H of the matrix the upper triangle stands for)
        low, g = (dagger(low), dagger(gs[0])) if upper else (low, gs[0])
        p = dagger(low) @ g
        eye = np.eye(p.shape[-1])
        q = np.tril(p, -1) + eye * (np.real(p) * eye).sum(-1, keepdims=True) / 2
        inner = np.linalg.solve(dagger(low), q)  # L^-H Q
        # (L^-H (L^-H Q)^H)^H = L^-H Q L^-1
        return from_triangle(dagger(np.linalg.solve(dagger(low), dagger(inner))), not upper)

    return factor_rrule(f, a, args, kwargs, 0, grad)


SVD_PARAMETERS = ("full_matrices", "compute_uv", "hermitian")


def svd_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``U, s, Vh = svd(A, full_matrices=False)`` (distinct non-zero singular values;
    ``full_matrices=True`` only for square matrices, where it is the same), and
    ``svd(A, compute_uv=False)``; real or complex.  With ``V = Vh^H``, ``J = U^H G_U``,
    ``K = V^H G_V`` and ``F[i, j] = 1 / (s[j]^2 - s[i]^2)``, ``A`` gets
    ``U (diag(g_s) + (F o (J - J^H)) S + S (F o (K - K^H)) + i diag(Im(J - K) / 2s)) V^H
    + (I - U U^H) G_U S^-1 V^H + U S^-1 G_V^H (I - V V^H)``.

    Complex singular vectors are fixed only up to a phase that ``u_i`` and ``v_i`` share, which
    LAPACK chooses without a documented rule.  A loss that does not depend on those phases
    (``s``, ``U diag(s) Vh``, ``|U|``, ``u_i v_i^H``) gets its exact gradient; for one that
    does, the ``i diag(...)`` term is the gradient with a phase change of ``u_i v_i^H`` split
    evenly between ``u_i`` and ``v_i`` (docs/decisions.md)."""
    bound = bind(SVD_PARAMETERS, args, kwargs, {"full_matrices": True, "compute_uv": True}, "svd")
    ap = a.primal
    if bound.get("hermitian"):
        raise NotImplementedError("np.linalg.svd with hermitian=True: no rule")
    m, n = ap.shape[-2:]
    vectors = bool(bound["compute_uv"])
    if vectors and bound["full_matrices"] and m != n:
        raise NotImplementedError(
            "np.linalg.svd with full_matrices=True of a non-square matrix: its extra singular "
            "vectors are not unique; pass full_matrices=False"
        )

    def grad(z: t.Any, gs: list[t.Any]) -> Array:
        if vectors:
            (u, s, vh), (g_u, g_s, g_vh) = z, gs
        else:
            (u, s, vh), (g_u, g_s, g_vh) = np.linalg.svd(ap, full_matrices=False), (None, *gs, None)
        k = s.shape[-1]
        eye = np.eye(k)
        middle = np.zeros(ap.shape[:-2] + (k, k), ap.dtype)
        if g_s is not None:
            middle = middle + g_s[..., None] * eye
        outside = np.zeros_like(ap)  # the terms outside U (...) V^H
        phase = np.zeros(s.shape)  # Im(J_ii - K_ii)
        if g_u is not None:
            j = dagger(u) @ g_u
            middle = middle + gap_weighted(s * s, j - dagger(j)) * s[..., None, :]
            outside = outside + (g_u - u @ j) / s[..., None, :] @ vh
            phase = phase + np.imag(np.diagonal(j, 0, -2, -1))
        if g_vh is not None:
            v, g_v = dagger(vh), dagger(g_vh)
            kv = dagger(v) @ g_v
            middle = middle + s[..., :, None] * gap_weighted(s * s, kv - dagger(kv))
            outside = outside + u @ (dagger(g_v - v @ kv) / s[..., :, None])
            phase = phase - np.imag(np.diagonal(kv, 0, -2, -1))
        if np.iscomplexobj(ap):
            middle = middle + (1j * phase / (2 * s))[..., None] * eye
        return t.cast(Array, outside + u @ middle @ vh)

    return factor_rrule(f, a, args, kwargs, 3 if vectors else 0, grad)


def qr_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``Q, R = qr(A)`` (``mode="reduced"``; rows >= columns, full rank; real or complex): with
    ``M = R G_R^H - G_Q^H Q`` and ``herm(M)`` its strictly lower triangle mirrored
    (conjugated) onto the upper and the real part of its diagonal, ``A`` gets
    ``(G_Q + Q herm(M)) R^-H``.  LAPACK's Householder QR gives ``R`` a real diagonal, complex
    ``A`` included, which fixes ``Q`` and ``R`` (no phase is free): the gradient is that of
    NumPy's factors for every loss."""
    mode = bind(("mode",), args, kwargs, {"mode": "reduced"}, "qr")["mode"]
    _qr_refusal(mode, a.primal.shape, NotImplementedError)
    only_r = mode == "r"

    def grad(z: t.Any, gs: list[t.Any]) -> Array:
        if only_r:  # (R alone: Q's cotangent is zero)
            (q, r), (g_q, g_r) = np.linalg.qr(a.primal), (None, *gs)
        else:
            (q, r), (g_q, g_r) = z, gs
        g_q = np.zeros_like(q) if g_q is None else g_q
        g_r = np.zeros_like(r) if g_r is None else g_r
        m = r @ dagger(g_r) - dagger(g_q) @ q
        below = np.tril(m, -1)
        herm = below + dagger(below) + np.real(m) * np.eye(m.shape[-1])
        # (G_Q + Q herm) R^-H, as the solution X of X R^H = B: R X^H = B^H
        return dagger(np.linalg.solve(r, dagger(g_q + q @ herm)))

    return factor_rrule(f, a, args, kwargs, 0 if only_r else 2, grad)


def _qr_refusal(
    mode: object, shape: tuple[int, ...], error: type[Exception], what: str = "np.linalg.qr"
) -> None:
    """``qr``'s rules take ``mode="reduced"`` and ``"r"`` of matrices with at least as many
    rows as columns, and ``"complete"`` of square ones (the same factors as ``"reduced"``:
    a taller matrix's extra columns of ``Q`` are not unique)."""
    m, n = shape[-2:]
    if mode not in ("reduced", "r", "complete") or (mode == "complete" and m != n):
        shape_ = " of a non-square matrix" if mode == "complete" else ""
        raise error(f"{what} with mode={mode!r}{shape_}: no rule")
    if m < n:
        raise error(f"{what} of a matrix with fewer rows than columns: no rule")


primitive(np.linalg.cholesky, ARRAY, ...)(cholesky_rrule)
primitive(np.linalg.svd, ARRAY, ...)(svd_rrule)
primitive(np.linalg.qr, ARRAY, ...)(qr_rrule)


# Forward rules (real operands).  ``svd`` and ``qr`` check shapes, so they are called.


def symmetric_of_triangle(d: t.Any, lower: bool = True) -> t.Any:
    """The symmetric matrix one triangle of ``d`` stands for (the lower one, or the upper one
    for ``lower=False``): the tangent of what ``cholesky`` and ``eigh`` read, the map whose
    transpose ``from_triangle`` is."""
    if lower:
        return np.tril(d) + _t(np.tril(d, -1))
    return np.triu(d) + _t(np.triu(d, 1))


def lower_factor_tangent(low: t.Any, s: t.Any) -> t.Any:
    """``dL = L Phi(L^-1 S L^-T)`` of the lower Cholesky factor ``L`` of ``A``, for a symmetric
    tangent ``S`` of ``A`` (``Phi``: the lower triangle, the diagonal halved)."""
    x = np.linalg.solve(low, _t(np.linalg.solve(low, s)))  # L^-1 (L^-1 S)^T = L^-1 S L^-T
    return low @ ((np.tril(x) + np.tril(x, -1)) / 2)


def _cholesky_tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    """``L``'s tangent (``U = L^T``'s with ``upper=True``, of the upper triangle's matrix)."""
    if da[0] is None:
        return None
    if options["upper"]:
        return _t(lower_factor_tangent(_t(z), symmetric_of_triangle(da[0], lower=False)))
    return lower_factor_tangent(z, symmetric_of_triangle(da[0]))


def _svd_tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    """With ``P = U^T dA V`` and ``F = gap_inverses(s**2)``: ``ds = diag(P)``,
    ``dU = U (F o (P S + S P^T)) + (I - U U^T) dA V S^-1`` and
    ``dV = V (F o (S P + P^T S)) + (I - V V^T) dA^T U S^-1`` (distinct non-zero singular
    values, as for the reverse rule: ``inf`` or ``nan`` where two are equal)."""
    (x,), (dx,) = a, da
    vectors = bool(options["compute_uv"])
    m, n = x.shape[-2:]
    if vectors and options["full_matrices"] and m != n:
        raise ForwardModeError(
            "forward mode: numpy.linalg.svd with full_matrices=True of a non-square matrix: its "
            "extra singular vectors are not unique; pass full_matrices=False"
        )
    if dx is None:
        return None
    u, s, vh = z if vectors else np.linalg.svd(x, full_matrices=False)
    v = _t(vh)
    p = _t(u) @ dx @ v
    ds = np.diagonal(p, 0, -2, -1)
    if not vectors:
        return ds
    ps, sp = p * s[..., None, :], s[..., :, None] * p
    du = u @ gap_weighted(s * s, ps + _t(ps)) + (dx @ v - u @ p) / s[..., None, :]
    dv = v @ gap_weighted(s * s, sp + _t(sp)) + (_t(dx) @ u - v @ _t(p)) / s[..., None, :]
    return du, ds, _t(dv)


def _qr_tangent(z: t.Any, a: Operands, da: Operands, options: Options) -> t.Any:
    """With ``C = Q^T dA R^-1`` and ``W`` its strictly lower triangle minus that one's
    transpose (``Q^T dQ``, antisymmetric): ``dR = (C - W) R`` and
    ``dQ = (dA - Q dR) R^-1``."""
    (x,), (dx,) = a, da
    _qr_refusal(options["mode"], x.shape, ForwardModeError, "forward mode: numpy.linalg.qr")
    if dx is None:
        return None
    q, r = np.linalg.qr(x) if options["mode"] == "r" else z
    c = _right_divide(_t(q) @ dx, r)
    below = np.tril(c, -1)
    dr = (c - below + _t(below)) @ r
    return dr if options["mode"] == "r" else (_right_divide(dx - q @ dr, r), dr)


def _right_divide(y: Array, r: Array) -> Array:
    """``Y R^-1``, as the solution ``X`` of ``R^T X^T = Y^T``."""
    return _t(np.linalg.solve(_t(r), _t(y)))


def _refuse_mode(options: Options) -> str | None:
    mode = options["mode"]
    return None if mode in ("reduced", "r", "complete") else f"with mode={mode!r}"


for _rule in (
    TangentFormula(
        np.linalg.cholesky, "numpy.linalg.cholesky", _cholesky_tangent, parameters=("upper",),
        defaults={"upper": False},
    ),
    TangentFormula(
        np.linalg.svd, "numpy.linalg.svd", _svd_tangent, parameters=SVD_PARAMETERS,
        defaults={"full_matrices": True, "compute_uv": True}, refuse=_refuse_hermitian,
        written=False,
    ),
    TangentFormula(
        np.linalg.qr, "numpy.linalg.qr", _qr_tangent, parameters=("mode",),
        defaults={"mode": "reduced"}, refuse=_refuse_mode, written=False,
    ),
):  # fmt: skip
    register_formula(_rule)
