"""Inverses and factorizations of matrices (``np.linalg``): ``inv``, ``solve``, ``det``,
``slogdet``, ``pinv``, ``cholesky``, ``eigh``, ``svd`` and ``qr``, batched over leading axes.

Notation: ``X^H`` is the conjugate transpose (``_h``), ``G`` a result's cotangent.  Complex
matrices follow tangents.md (``dL = Re(sum(conj(G) dX))``) for ``inv``, ``solve``, ``det``,
``slogdet``, ``pinv``, ``cholesky`` and ``eigh`` (for losses that do not depend on the phases
of the eigenvectors); ``svd`` and ``qr`` are real only (their complex factors are fixed only up
to phases LAPACK chooses, and the rules do not derive the gauge terms).

Where these functions are not differentiable the rules say so or assume it away: ``eigh``
needs distinct eigenvalues and ``svd`` distinct non-zero singular values (the gradient divides
by their differences); ``pinv`` keeps the rank; ``qr`` needs at least as many rows as columns
and full rank.  ``cholesky`` and ``eigh`` read only the lower triangle of the matrix (as
LAPACK does, ``UPLO="L"``): the strictly upper triangle gets no gradient, and the lower one
gets that of the Hermitian matrix it stands for.
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.rules.prims.common import (
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
from gibbous.rules.tangents import CoDual

StatefulResult = tuple[CD, Pullback, Scratch]


def _h(x: Array) -> Array:
    """The conjugate transpose of (a stack of) matrices."""
    return t.cast(Array, conj(np.swapaxes(x, -1, -2)))


def _t(x: Array) -> Array:
    return np.swapaxes(x, -1, -2)


def _call(f: CD, x: CD, args: t.Sequence[CD], kwargs: t.Mapping[str, CD]) -> t.Any:
    return f.primal(x.primal, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})


def _parts(zf: t.Any, dz: t.Any, n: int) -> list[t.Any]:
    """The cotangents of the ``n`` parts of a tuple result (None for a zero one): arrays from
    its fdata, numbers from its rdata."""
    parts: list[t.Any] = []
    for i in range(n):
        f = zf[i] if isinstance(zf, tuple) else NT
        d = dz[i] if isinstance(dz, tuple) else NT
        parts.append(cotangent(f, d))
    return parts


def _from_lower(grad: Array) -> Array:
    """The gradient of a function of the Hermitian matrix that the lower triangle of ``A``
    stands for, given ``grad``, its gradient as a function of a Hermitian matrix: the diagonal
    and, twice, the Hermitian part below it (the strictly upper triangle is never read)."""
    herm = (grad + _h(grad)) / 2
    return t.cast(Array, np.tril(2 * herm) - herm * np.eye(herm.shape[-1]))


# --------------------------------------------------------------------------------------------
# inv, solve, det, slogdet, pinv


def inv_rrule(f: CD, a: CD) -> RuleResult:
    """``Z = inv(A)``: ``dZ = -Z dA Z``, so ``A`` gets ``-Z^H G Z^H``."""
    z = f.primal(a.primal)
    zf = new_fdata(z)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if not needs(a):
            return NT, NT
        zh = _h(z)
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
        gb = np.linalg.solve(_h(ap), g)
        ga = -(gb @ _h(x[:, None] if vector else x)) if needs(a) else None
        return NT, send(a, ga), send(b, gb[:, 0] if vector else gb)

    return CoDual(x, xf), pullback


# ``inv`` into a buffer: the gufunc behind ``np.linalg.inv`` takes ``out=``; NumPy's own module
# for it is private, so without it the rules fall back to ``np.linalg.inv`` (which allocates).
_INV_GUFUNC: t.Any = getattr(getattr(np.linalg, "_umath_linalg", None), "inv", None)


def _add_scaled_inverse_h(dx: Array, a: Array, scale: t.Any, buf: Array | None) -> None:
    """``dx += scale * inv(a)^H`` for one matrix, through ``buf`` (no allocation) if given."""
    if buf is None or _INV_GUFUNC is None:
        add_into(dx, scale * _h(np.linalg.inv(a)))
        return
    _INV_GUFUNC(a, out=buf)
    if buf.dtype.kind == "c":
        np.conjugate(buf, out=buf)
    np.multiply(buf, scale, out=buf)
    np.add(dx, buf.T if dx.dtype.kind == "c" else buf.T.real, out=dx)


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
        if buf is not None:
            _add_scaled_inverse_h(a.fdata, ap, g * np.conj(z), buf)
            return _NOTHING_2
        scale = np.asarray(g * np.conj(z))[..., None, None]
        return NT, send(a, scale * _h(np.linalg.inv(ap)))

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
        g_sign, g_log = _parts(zf, dz, 2)
        if not needs(a) or (g_sign is None and g_log is None):
            return NT, zero_for(a)
        weight: t.Any = 0.0 if g_log is None else g_log
        if g_sign is not None and complex_:
            weight = weight + 1j * np.real(1j * np.conj(g_sign) * z.sign)
        if buf is not None:
            _add_scaled_inverse_h(a.fdata, ap, weight, buf)
            return _NOTHING_2
        weight = np.broadcast_to(weight, np.shape(z.logabsdet))
        return NT, send(a, np.asarray(weight)[..., None, None] * _h(np.linalg.inv(ap)))

    return CoDual(z, zf), pullback, state


PINV_PARAMETERS = ("rcond", "hermitian", "rtol")


def pinv_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``Z = pinv(A)`` at constant rank: ``dZ = -Z dA Z + Z Z^H dA^H (I - A Z) + (I - Z A)
    dA^H Z^H Z``, so ``A`` gets ``-Z^H G Z^H + (I - A Z) G^H Z Z^H + Z^H Z G^H (I - Z A)``."""
    bound = bind(PINV_PARAMETERS, args, kwargs, {}, "pinv")
    if bound.get("hermitian"):
        raise NotImplementedError("np.linalg.pinv with hermitian=True: no rule")
    ap = a.primal
    z = _call(f, a, args, kwargs)
    zf = new_fdata(z)
    rest = tuple(zero_for(x) for x in (*args, *kwargs.values()))  # rcond may be a float

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if not needs(a):
            return (NT, NT, *rest)
        g, zh = zf, _h(z)
        gh = _h(g)
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

# --------------------------------------------------------------------------------------------
# cholesky, eigh, svd, qr (real)


def _real_only(x: Array, what: str) -> None:
    if np.iscomplexobj(x):
        raise NotImplementedError(f"{what} of complex matrices: no rule (phases of the factors)")


def cholesky_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``L = cholesky(A)``, ``A = L L^H``: ``dL = L Phi(L^-1 dA L^-H)`` (``Phi``: the lower
    triangle, the diagonal halved), so the Hermitian matrix gets ``L^-H Phi*(L^H G) L^-1``
    (``Phi*``: the strictly lower triangle and half the real diagonal), made Hermitian."""
    if bind(("upper",), args, kwargs, {}, "cholesky").get("upper"):
        raise NotImplementedError("np.linalg.cholesky with upper=True: no rule")
    low = _call(f, a, args, kwargs)
    lf = new_fdata(low)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if not needs(a):
            return (NT, NT, *rest)
        p = _h(low) @ lf
        eye = np.eye(p.shape[-1])
        q = np.tril(p, -1) + eye * (np.real(p) * eye).sum(-1, keepdims=True) / 2
        inner = np.linalg.solve(_h(low), q)  # L^-H Q
        grad = _h(np.linalg.solve(_h(low), _h(inner)))  # (L^-H (L^-H Q)^H)^H = L^-H Q L^-1
        return (NT, send(a, _from_lower(grad)), *rest)

    return CoDual(low, lf), pullback


def eigh_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``w, V = eigh(A)`` (Hermitian, distinct eigenvalues): ``A`` gets
    ``V (diag(g_w) + F o (V^H G_V)) V^H`` with ``F[i, j] = 1 / (w[j] - w[i])`` off the
    diagonal, then folded onto the lower triangle.  For complex matrices each eigenvector is
    fixed only up to a phase, which LAPACK chooses: the gradient is that of losses that do not
    depend on the phases (``|V|``, ``V V^H``, the eigenvalues), which are all a program can
    rely on."""
    if bind(("UPLO",), args, kwargs, {"UPLO": "L"}, "eigh")["UPLO"] != "L":
        raise NotImplementedError("np.linalg.eigh with UPLO='U': no rule")
    ap = a.primal
    z = _call(f, a, args, kwargs)
    zf = new_fdata(z)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g_w, g_v = _parts(zf, dz, 2)
        if not needs(a) or (g_w is None and g_v is None):
            return (NT, zero_for(a), *rest)
        w, v = z
        middle = np.zeros(ap.shape, np.result_type(ap))
        if g_w is not None:
            middle = middle + g_w[..., None] * np.eye(w.shape[-1])
        if g_v is not None:
            gaps = w[..., None, :] - w[..., :, None]
            off = ~np.eye(w.shape[-1], dtype=bool)
            inverse = np.divide(1.0, gaps, out=np.zeros_like(gaps), where=off)
            middle = middle + inverse * (_h(v) @ g_v)
        return (NT, send(a, _from_lower(v @ middle @ _h(v))), *rest)

    return CoDual(z, zf), pullback


SVD_PARAMETERS = ("full_matrices", "compute_uv", "hermitian")


def svd_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``U, s, Vh = svd(A, full_matrices=False)`` (real, distinct non-zero singular values;
    ``full_matrices=True`` only for square matrices, where it is the same), and
    ``svd(A, compute_uv=False)``.  With ``V = Vh^T``, ``F[i, j] = 1 / (s[j]^2 - s[i]^2)``:
    ``A`` gets ``U (diag(g_s) + (F o (U^T G_U - G_U^T U)) S + S (F o (V^T G_V - G_V^T V))) V^T
    + (I - U U^T) G_U S^-1 V^T + U S^-1 G_V^T (I - V V^T)``."""
    bound = bind(SVD_PARAMETERS, args, kwargs, {"full_matrices": True, "compute_uv": True}, "svd")
    ap = a.primal
    _real_only(ap, "np.linalg.svd")
    if bound.get("hermitian"):
        raise NotImplementedError("np.linalg.svd with hermitian=True: no rule")
    m, n = ap.shape[-2:]
    if bound["compute_uv"] and bound["full_matrices"] and m != n:
        raise NotImplementedError(
            "np.linalg.svd with full_matrices=True of a non-square matrix: its extra singular "
            "vectors are not unique; pass full_matrices=False"
        )
    z = _call(f, a, args, kwargs)
    zf = new_fdata(z)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if not needs(a):
            return (NT, NT, *rest)
        if not bound["compute_uv"]:
            g_s = cotangent(zf, dz)
            u, s, vh = np.linalg.svd(ap, full_matrices=False)
            g_u = g_vh = None
        else:
            g_u, g_s, g_vh = _parts(zf, dz, 3)
            u, s, vh = z
        v = _t(vh)
        k = s.shape[-1]
        eye = np.eye(k)
        middle = np.zeros(ap.shape[:-2] + (k, k), ap.dtype)
        if g_s is not None:
            middle = middle + g_s[..., None] * eye
        squares = s * s
        gaps = squares[..., None, :] - squares[..., :, None]
        inverse = np.divide(1.0, gaps, out=np.zeros_like(gaps), where=~eye.astype(bool))
        grad = np.zeros_like(ap)
        if g_u is not None:
            ut_gu = _t(u) @ g_u
            middle = middle + (inverse * (ut_gu - _t(ut_gu))) * s[..., None, :]
            grad = grad + (g_u - u @ ut_gu) / s[..., None, :] @ vh
        if g_vh is not None:
            g_v = _t(g_vh)
            vt_gv = _t(v) @ g_v
            middle = middle + s[..., :, None] * (inverse * (vt_gv - _t(vt_gv)))
            grad = grad + u @ (_t(g_v - v @ vt_gv) / s[..., :, None])
        return (NT, send(a, grad + u @ middle @ vh), *rest)

    return CoDual(z, zf), pullback


def qr_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``Q, R = qr(A)`` (``mode="reduced"``; real, rows >= columns, full rank): with
    ``M = R G_R^T - G_Q^T Q`` and ``sym(M)`` its lower triangle mirrored onto the upper,
    ``A`` gets ``(G_Q + Q sym(M)) R^-T``."""
    mode = bind(("mode",), args, kwargs, {"mode": "reduced"}, "qr")["mode"]
    if mode != "reduced":
        raise NotImplementedError(f"np.linalg.qr with mode={mode!r}: no rule")
    ap = a.primal
    _real_only(ap, "np.linalg.qr")
    if ap.shape[-2] < ap.shape[-1]:
        raise NotImplementedError("np.linalg.qr of a matrix with fewer rows than columns: no rule")
    z = _call(f, a, args, kwargs)
    zf = new_fdata(z)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g_q, g_r = _parts(zf, dz, 2)
        if not needs(a) or (g_q is None and g_r is None):
            return (NT, zero_for(a), *rest)
        q, r = z
        g_q = np.zeros_like(q) if g_q is None else g_q
        g_r = np.zeros_like(r) if g_r is None else g_r
        m = r @ _t(g_r) - _t(g_q) @ q
        sym = np.tril(m) + _t(np.tril(m, -1))
        # (G_Q + Q sym) R^-T, as the solution X of X R^T = B: R X^T = B^T
        rhs = g_q + q @ sym
        grad = _t(np.linalg.solve(r, _t(rhs)))
        return (NT, send(a, grad), *rest)

    return CoDual(z, zf), pullback


primitive(np.linalg.cholesky, ARRAY, ...)(cholesky_rrule)
primitive(np.linalg.eigh, ARRAY, ...)(eigh_rrule)
primitive(np.linalg.svd, ARRAY, ...)(svd_rrule)
primitive(np.linalg.qr, ARRAY, ...)(qr_rrule)
