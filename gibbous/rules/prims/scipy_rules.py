"""SciPy: rules for a few functions of ``scipy.special``, ``scipy.linalg`` and ``scipy.stats``
(the optional extra ``gibbous[scipy]``; ``gibbous.rules.prims`` imports this module only when
SciPy is importable).

* ``scipy.special``: the ufuncs ``expit logit gammaln digamma (psi) erf erfc xlogy xlog1py``
  and ``polygamma(n, x)``, on arrays and scalars with broadcasting; ``logsumexp`` (``axis``,
  ``keepdims``, weights ``b``, ``return_sign``), ``softmax`` and ``log_softmax`` (``axis``).
* ``scipy.linalg``: ``solve_triangular`` (``trans``, ``lower``, ``unit_diagonal``),
  ``cholesky``, ``cho_factor`` and ``cho_solve``, for one matrix (no batches).
* ``scipy.stats``: ``norm.logpdf(x, loc, scale)`` and ``multivariate_normal.logpdf(x, mean,
  cov)``, the methods of the module's distribution objects (not frozen distributions).

Which entries a matrix function reads decides its gradient.  LAPACK reads one triangle:
``cholesky(a)`` and ``cho_factor(a)`` the upper one (the lower one with ``lower=True``),
``solve_triangular`` the triangle it is told (not the diagonal with ``unit_diagonal=True``),
``cho_solve((c, lower), b)`` the factor's triangle of ``c``, and
``multivariate_normal.logpdf`` the lower triangle of ``cov`` (it calls ``eigh``).  The other
entries get a zero gradient, and the entries of the triangle read get the gradient of the
Hermitian matrix that triangle stands for: an off-diagonal entry stands for two.
``cho_factor``'s ``c`` holds ``a``'s other triangle unchanged up to SciPy 1.17 (the cotangent
of that part goes back to those entries of ``a``); SciPy 1.18 zeroes it (nothing flows back
from there).  Which one is probed once, when the rules are registered.  Complex matrices follow the project's convention (the gradient
of a real loss is dL/dx + i dL/dy); the diagonal of a Hermitian matrix is read as real.

Each function has a type rule (``gibbous.inspect.code_ir(f, *args, stage="typed")`` types its
calls), and the functions without side effects are pure (``gibbous.rules.purity``).
"""

from __future__ import annotations

import math
import typing as t

import numpy as np
import scipy.linalg as sla
import scipy.special as sps
import scipy.stats as sst

from gibbous.ir import types as T
from gibbous.rules.prims import elementwise as E
from gibbous.rules.prims.common import (
    ARRAY,
    CD,
    NT,
    NUMERIC,
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
from gibbous.rules.prims.numpy_reductions import expand, normalize_axes
from gibbous.rules.purity import register_pure_array_function
from gibbous.rules.registry import primitive
from gibbous.rules.tangents import CoDual
from gibbous.rules.typerules import register_type_rule
from gibbous.rules.typerules_base import evaluate_on_samples
from gibbous.rules.typerules_numbers import elementwise
from gibbous.rules.typerules_numpy import DataArgs, sampled_numpy

TypeArgs = tuple[T.Type, ...]
TypeKwargs = dict[str, T.Type]


def _is_complex(x: object) -> bool:
    if isinstance(x, np.ndarray):
        return bool(x.dtype.kind == "c")
    return isinstance(x, (complex, np.complexfloating))


def _run(
    fn: t.Callable[..., t.Any],
    first: tuple[object, ...],
    args: t.Sequence[CD],
    kwargs: t.Mapping[str, CD],
) -> t.Any:
    """The primal call ``fn(*first, *args, **kwargs)`` on the operands' primals."""
    return fn(*first, *(c.primal for c in args), **{k: c.primal for k, c in kwargs.items()})


def _zero_where(cond: t.Any, value: t.Any) -> t.Any:
    """``value`` with zeros where ``cond`` holds; for scalars without making an array."""
    if isinstance(value, np.ndarray) or isinstance(cond, np.ndarray):
        return np.where(cond, 0, value)
    return type(value)(0) if cond else value


# --------------------------------------------------------------------------------------------
# scipy.special: ufuncs (gradient functions as in ``elementwise``: g is the cotangent)

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def g_expit(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * (z * (1 - z))


def g_logit(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g / (x * (1 - x))


def g_gammaln(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * sps.digamma(x)


def g_digamma(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    # polygamma(1, x) is zeta(2, x); the ufunc keeps scalars scalars (polygamma makes arrays).
    return g * sps.zeta(2.0, x)


def g_erf(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * conj(_TWO_OVER_SQRT_PI * np.exp(-x * x))


def g_erfc(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return -g * conj(_TWO_OVER_SQRT_PI * np.exp(-x * x))


# xlogy(x, y) = x log(y) and xlog1py(x, y) = x log1p(y) are 0 wherever x == 0, whatever y: so
# y gets no gradient there.  At x == 0 with log(y) = -inf (y == 0, or y == -1 for xlog1py) the
# function is not differentiable in x (0 at x == 0, -inf elsewhere); x gets 0 there.


def g_xlogy_x(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g * conj(_zero_where((x == 0) & (y == 0), np.log(y)))


def g_xlogy_y(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g * conj(_zero_where(x == 0, x / y))


def g_xlog1py_x(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g * conj(_zero_where((x == 0) & (y == -1), np.log1p(y)))


def g_xlog1py_y(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g * conj(_zero_where(x == 0, x / (1 + y)))


def g_polygamma_x(g: t.Any, n: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * sps.polygamma(np.add(n, 1), x)


# Complex arguments are refused by the rule where SciPy computes the function but the gradient
# function could not (zeta and polygamma take real arguments only).
UNARY: dict[np.ufunc, tuple[E.UnaryGrad, bool]] = {
    sps.expit: (g_expit, False),
    sps.logit: (g_logit, False),
    sps.gammaln: (g_gammaln, False),
    sps.digamma: (g_digamma, False),  # also scipy.special.psi
    sps.erf: (g_erf, True),
    sps.erfc: (g_erfc, True),
}
BINARY: dict[np.ufunc, tuple[E.BinaryGrad, E.BinaryGrad]] = {
    sps.xlogy: (g_xlogy_x, g_xlogy_y),
    sps.xlog1py: (g_xlog1py_x, g_xlog1py_y),
}


def _real_only(name: str, rule: t.Callable[..., RuleResult]) -> t.Callable[..., RuleResult]:
    def rrule(f: CD, *args: CD) -> RuleResult:
        if any(_is_complex(a.primal) for a in args):
            raise NotImplementedError(f"{name} of complex numbers: no rule")
        return rule(f, *args)

    rrule.__qualname__ = f"real_only({name})"
    return rrule


def _register_ufuncs() -> None:
    # ``primitive`` called here, not through ``elementwise.register_all``: a registration's
    # origin is the module that calls it (the audit groups rules by it).
    for ufunc, (grad, complex_ok) in UNARY.items():
        rule = E.unary_rule(grad)
        if not complex_ok:
            rule = _real_only(f"scipy.special.{ufunc.__name__}", rule)
        for pattern in E.UNARY_PATTERNS:
            primitive(ufunc, *pattern)(rule)
    binary: list[tuple[object, t.Callable[..., RuleResult]]] = [
        *((ufunc, E.binary_rule(gx, gy)) for ufunc, (gx, gy) in BINARY.items()),
        (sps.polygamma, _real_only("scipy.special.polygamma", E.binary_rule(None, g_polygamma_x))),
    ]
    for fn, binary_rule in binary:
        for pair in E.BINARY_PATTERNS:
            primitive(fn, *pair)(binary_rule)


_register_ufuncs()

# --------------------------------------------------------------------------------------------
# scipy.special: logsumexp, softmax, log_softmax

LOGSUMEXP_PARAMETERS = ("axis", "b", "keepdims", "return_sign")


def logsumexp_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``logsumexp(a, axis, b, keepdims, return_sign)``: ``log |sum(b exp(a))|`` over the axes.

    With ``s = sum(b exp(a))`` the gradients are ``b exp(a) / s`` for ``a`` and ``exp(a) / s``
    for ``b``, written ``exp(a - lse) * sign(s)`` (``sign(s)`` is 1 without ``return_sign``:
    a negative sum is nan there).  The sign of ``return_sign`` has no derivative.
    """
    operands = (a, *args, *kwargs.values())
    if any(_is_complex(c.primal) for c in operands):
        raise NotImplementedError("scipy.special.logsumexp of complex numbers: no rule")
    bound = bind(LOGSUMEXP_PARAMETERS, args, kwargs, {"axis": None, "b": None}, "logsumexp")
    ib = _position(LOGSUMEXP_PARAMETERS, "b", args, kwargs)
    keepdims = bool(bound.get("keepdims", False))
    with_sign = bool(bound.get("return_sign", False))
    ap, bp = a.primal, bound["b"]
    z = _run(f.primal, (ap,), args, kwargs)
    zf = new_fdata(z)
    ndim = np.ndim(ap) if bp is None else max(np.ndim(ap), np.ndim(t.cast(t.Any, bp)))
    axes = normalize_axes(bound["axis"], ndim)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if with_sign:
            lse, sign = z
            g = cotangent(zf[0] if isinstance(zf, tuple) else NT, _item(dz, 0))
        else:
            lse, sign, g = z, None, cotangent(zf, dz)
        out = [zero_for(c) for c in operands]
        want_b = ib is not None and needs(operands[ib])
        if g is None or not (needs(a) or want_b):
            return (NT, *out)
        with np.errstate(over="ignore", invalid="ignore"):
            w = np.exp(ap - expand(lse, axes, keepdims))
            if with_sign:
                w = w * expand(sign, axes, keepdims)
            gw = expand(g, axes, keepdims) * w
        if needs(a):
            out[0] = send(a, gw if bp is None else gw * bp)
        if ib is not None and want_b:
            out[ib] = send(operands[ib], gw)
        return (NT, *out)

    return CoDual(z, zf), pullback


def _position(
    names: tuple[str, ...], name: str, args: t.Sequence[CD], kwargs: t.Mapping[str, CD]
) -> int | None:
    """Where the value of parameter ``name`` is among the operands ``(first, *args,
    *kwargs.values())``: ``args`` are the parameters ``names`` by position.  By position, not
    by identity: one CoDual may be passed twice (``logsumexp(x, b=x)``)."""
    i = names.index(name)
    if i < len(args):
        return 1 + i
    return 1 + len(args) + list(kwargs).index(name) if name in kwargs else None


def _item(dz: t.Any, i: int) -> t.Any:
    """Item ``i`` of a tuple's rdata (``NoTangent()`` when the whole rdata is)."""
    return dz[i] if isinstance(dz, tuple) else NT


def _softmax_rule(log: bool) -> t.Callable[..., RuleResult]:
    """``softmax(x, axis)``: ``s (g - sum(g s))``; ``log_softmax(x, axis)``:
    ``g - exp(z) sum(g)``, the sums over the axes (all of them for ``axis=None``)."""
    what = "log_softmax" if log else "softmax"

    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        bound = bind(("axis",), args, kwargs, {"axis": None}, what)
        xp = x.primal
        if _is_complex(xp):
            raise NotImplementedError(f"scipy.special.{what} of complex numbers: no rule")
        z = _run(f.primal, (xp,), args, kwargs)
        zf = new_fdata(z)
        axes = normalize_axes(bound["axis"], np.ndim(xp))
        rest = nothing(len(args) + len(kwargs))

        def pullback(dz: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(zf, dz)
            if g is None or not needs(x):
                return (NT, zero_for(x), *rest)
            if log:
                gx = g - np.exp(z) * np.sum(g, axis=axes, keepdims=True)
            else:
                gx = z * (g - np.sum(g * z, axis=axes, keepdims=True))
            return (NT, send(x, gx), *rest)

        return CoDual(z, zf), pullback

    rrule.__qualname__ = f"{what}_rrule"
    return rrule


for _kind in NUMERIC:
    primitive(sps.logsumexp, _kind, ...)(logsumexp_rrule)
    primitive(sps.softmax, _kind, ...)(_softmax_rule(False))
    primitive(sps.log_softmax, _kind, ...)(_softmax_rule(True))

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


def _hermitian_triangle_grad(s: Array, lower: bool) -> Array:
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
    x = _run(f.primal, (ap, b.primal), args, kwargs)
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
    return _hermitian_triangle_grad(_solve_triangular(L, y, True, 2), lower)


def cholesky_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``cholesky(a, lower)``: ``U`` with ``a = U^H U`` (``L`` with ``a = L L^H``), from the
    upper (lower) triangle of ``a``."""
    what = "scipy.linalg.cholesky"
    bound = bind(CHOLESKY_PARAMETERS, args, kwargs, {}, what)
    _refuse_overwrite(bound, "overwrite_a", what)
    lower = bool(bound.get("lower", False))
    ap = _matrix(a.primal, what)
    c = _run(f.primal, (ap,), args, kwargs)
    cf = new_fdata(c)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dc: t.Any) -> tuple[t.Any, ...]:
        if not needs(a) or not isinstance(cf, np.ndarray):
            return (NT, zero_for(a), *rest)
        return (NT, send(a, _cholesky_grad(c, cf, lower)), *rest)

    return CoDual(c, cf), pullback


primitive(sla.cholesky, ARRAY, ...)(cholesky_rrule)


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
    result = _run(f.primal, (ap,), args, kwargs)
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
    x = _run(f.primal, (pair, b.primal), args, kwargs)
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

# --------------------------------------------------------------------------------------------
# scipy.stats: norm.logpdf and multivariate_normal.logpdf
#
# ``norm.logpdf(x)`` is a bound method of the instance ``norm``.  Type inference turns the call
# into one of the function ``type(norm).logpdf`` (``rv_continuous.logpdf``, shared by every
# continuous distribution) with the instance first, and so does a call site typed at run time
# (``DynamicRule`` unbinds bound methods): the rules are registered for those functions with a
# ``norm_gen`` (``multivariate_normal_gen``) first, which other distributions do not match.
# ``multivariate_normal.logpdf`` has a rule as a bound method too (a callee read from a global
# such as ``logpdf = multivariate_normal.logpdf``).  ``norm.logpdf`` has none: the instance
# holds infinite floats (its support), which no finite-difference test of a call that takes it
# as an operand can pair, so such a rule could not be checked.

NORM_GEN = type(sst.norm)
MVN_GEN = type(sst.multivariate_normal)
NORM_LOGPDF = NORM_GEN.logpdf  # rv_continuous.logpdf
MVN_LOGPDF = MVN_GEN.logpdf
NORM_PARAMETERS = ("loc", "scale")
MVN_PARAMETERS = ("mean", "cov", "allow_singular")

def _norm_logpdf(
    dist: t.Any, x: CD, args: t.Sequence[CD], kwargs: t.Mapping[str, CD]
) -> tuple[CD, t.Callable[[t.Any], tuple[t.Any, ...]]]:
    """``-((x - loc) / scale)^2 / 2 - log(scale) - log(2 pi) / 2``: with ``u = (x - loc) /
    scale``, x gets ``-u / scale``, loc ``u / scale`` and scale ``(u^2 - 1) / scale``.  An
    instance with a finite support ``(a, b)`` (of ``u``) is ``-inf`` outside it: no gradient
    there."""
    what = "scipy.stats.norm.logpdf"
    if any(_is_complex(c.primal) for c in (x, *args, *kwargs.values())):
        raise NotImplementedError(f"{what} of complex numbers: no rule")
    bound = bind(NORM_PARAMETERS, args, kwargs, {"loc": 0.0, "scale": 1.0}, what)
    iloc = _position(NORM_PARAMETERS, "loc", args, kwargs)
    iscale = _position(NORM_PARAMETERS, "scale", args, kwargs)
    z = _run(dist.logpdf, (x.primal,), args, kwargs)
    zf = new_fdata(z)
    operands = (x, *args, *kwargs.values())
    lo, hi = float(dist.a), float(dist.b)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        out = [zero_for(c) for c in operands]
        if g is None or not any(map(needs, operands)):
            return tuple(out)
        g = E.numpy_scalar(g)
        s = t.cast(t.Any, bound["scale"])
        u = (x.primal - bound["loc"]) / s
        if lo > -math.inf or hi < math.inf:
            g = _zero_where((u <= lo) | (u >= hi), g)
        gu = g * u / s
        for i, grad in ((0, -gu), (iloc, gu), (iscale, g * (u * u - 1) / s)):
            if i is not None and needs(operands[i]):
                out[i] = send(operands[i], grad)
        return tuple(out)

    return CoDual(z, zf), pullback


def _mvn_logpdf(
    dist: t.Any, x: CD, args: t.Sequence[CD], kwargs: t.Mapping[str, CD]
) -> tuple[CD, t.Callable[[t.Any], tuple[t.Any, ...]]]:
    """``-(r^T S^-1 r + log det S + d log(2 pi)) / 2`` for each point, ``r = x - mean``: x gets
    ``-S^-1 r``, mean ``S^-1 r`` and the covariance ``S`` gets ``(S^-1 r r^T S^-1 - S^-1) / 2``
    (times each point's cotangent).  A 2-D ``cov`` is read through its lower triangle (SciPy
    calls ``eigh``); a 1-D one is the diagonal, a scalar one ``cov * I``, as SciPy reads them.
    """
    what = "scipy.stats.multivariate_normal.logpdf"
    if any(_is_complex(c.primal) for c in (x, *args, *kwargs.values())):
        raise NotImplementedError(f"{what} of complex numbers: no rule")
    bound = bind(MVN_PARAMETERS, args, kwargs, {"mean": None, "cov": 1.0}, what)
    imean = _position(MVN_PARAMETERS, "mean", args, kwargs)
    icov = _position(MVN_PARAMETERS, "cov", args, kwargs)
    z = _run(dist.logpdf, (x.primal,), args, kwargs)
    zf = new_fdata(z)
    operands = (x, *args, *kwargs.values())

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None or not any(map(needs, operands)):
            return tuple(zero_for(c) for c in operands)
        m = None if bound["mean"] is None else np.asarray(bound["mean"], dtype=float)
        cv = np.asarray(bound["cov"], dtype=float)
        dim = m.size if m is not None else (cv.shape[0] if cv.ndim >= 2 else 1)
        m = np.zeros(dim) if m is None else m.reshape(dim)
        try:
            inverse = np.linalg.inv(_full_covariance(cv, dim))
        except np.linalg.LinAlgError as e:
            raise NotImplementedError(f"{what} with a singular cov: no rule") from e
        xs = np.asarray(x.primal, dtype=float)
        if xs.ndim == 0:
            xs = xs[np.newaxis]
        elif xs.ndim == 1:
            xs = xs[:, np.newaxis] if dim == 1 else xs[np.newaxis, :]
        weights = np.reshape(np.asarray(g, dtype=float), xs.shape[:-1])
        q = (xs - m).reshape(-1, dim) @ inverse  # S^-1 r for each point (S is symmetric)
        w = weights.reshape(-1)
        out = [zero_for(c) for c in operands]
        if needs(x):
            out[0] = send(x, (-w[:, None] * q).reshape(np.shape(x.primal)))
        if imean is not None and needs(operands[imean]):
            out[imean] = send(operands[imean], (w @ q).reshape(np.shape(operands[imean].primal)))
        if icov is not None and needs(operands[icov]):
            gs = ((q.T * w) @ q - w.sum() * inverse) / 2
            if dim == 1:
                gcov = gs.reshape(cv.shape)
            elif cv.ndim == 0:
                gcov = np.trace(gs)
            elif cv.ndim == 1:
                gcov = np.diagonal(gs).copy()
            else:
                gcov = _hermitian_triangle_grad(gs, True)
            out[icov] = send(operands[icov], gcov)
        return tuple(out)

    return CoDual(z, zf), pullback


def _full_covariance(c: Array, dim: int) -> Array:
    """The covariance matrix as SciPy makes it of ``cov`` and reads it (its lower triangle)."""
    if dim == 1:
        return c.reshape(1, 1)
    if c.ndim == 0:
        return t.cast(Array, c * np.eye(dim))
    if c.ndim == 1:
        return np.diag(c)
    return np.tril(c) + np.tril(c, -1).T


def _bound_rule(body: t.Callable[..., t.Any]) -> t.Callable[..., RuleResult]:
    """The rule of ``dist.logpdf(x, ...)``, the bound method."""

    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        y, back = body(f.primal.__self__, x, args, kwargs)
        return y, lambda dy: (NT, *back(dy))

    rrule.__qualname__ = f"bound_rule({body.__name__})"
    return rrule


def _unbound_rule(body: t.Callable[..., t.Any]) -> t.Callable[..., RuleResult]:
    """The rule of ``type(dist).logpdf(dist, x, ...)``, the function with the instance first."""

    def rrule(f: CD, dist: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        y, back = body(dist.primal, x, args, kwargs)
        return y, lambda dy: (NT, NT, *back(dy))

    rrule.__qualname__ = f"unbound_rule({body.__name__})"
    return rrule


for _kind in NUMERIC:
    primitive(NORM_LOGPDF, T.Object(NORM_GEN), _kind, ...)(_unbound_rule(_norm_logpdf))
    primitive(sst.multivariate_normal.logpdf, _kind, ...)(_bound_rule(_mvn_logpdf))
    primitive(MVN_LOGPDF, T.Object(MVN_GEN), _kind, ...)(_unbound_rule(_mvn_logpdf))

# --------------------------------------------------------------------------------------------
# Type rules and purity


def _ufunc_type(ufunc: object) -> t.Callable[[TypeArgs, TypeKwargs], T.Type]:
    def rule(args: TypeArgs, kwargs: TypeKwargs) -> T.Type:
        return elementwise(t.cast(t.Callable[..., object], ufunc), args, kwargs)

    return rule


def _call_norm_logpdf(*args: object, **kwargs: object) -> object:
    return sst.norm.logpdf(*args, **kwargs)


def _norm_logpdf_type(args: TypeArgs, kwargs: TypeKwargs) -> T.Type:
    """``rv_continuous.logpdf`` with the instance first, typed for ``norm_gen`` instances only:
    the type of the broadcast operands (a float for scalars)."""
    if not args or not T.is_subtype(args[0], T.Object(NORM_GEN)):
        return T.ANY
    found = evaluate_on_samples(_call_norm_logpdf, args[1:], kwargs)
    return T.ANY if found is None else found


def _mvn_logpdf_type(args: TypeArgs, kwargs: TypeKwargs) -> T.Type:
    """A float or an array whose rank depends on sizes (SciPy squeezes the result): unknown.
    The rule exists so that type inference does not look into SciPy's code."""
    return T.ANY


def _register_types() -> None:
    for ufunc in (*UNARY, *BINARY):
        register_type_rule(ufunc, fold=True)(_ufunc_type(ufunc))
    register_type_rule(sps.polygamma)(sampled_numpy(sps.polygamma, DataArgs(2)))
    register_type_rule(sps.logsumexp)(
        sampled_numpy(sps.logsumexp, DataArgs(1, keywords=frozenset({"b"})))
    )
    for fn in (sps.softmax, sps.log_softmax, sla.cholesky, sla.cho_factor):
        register_type_rule(fn)(sampled_numpy(fn))
    for fn in (sla.solve_triangular, sla.cho_solve):
        register_type_rule(fn)(sampled_numpy(fn, DataArgs(2)))
    register_type_rule(NORM_LOGPDF)(_norm_logpdf_type)
    register_type_rule(sst.multivariate_normal.logpdf, MVN_LOGPDF)(_mvn_logpdf_type)
    # Pure without out= or overwrite_*=True.  Not the distributions' methods: their receiver
    # is a mutable object.
    for fn in (
        *UNARY, *BINARY, sps.polygamma, sps.logsumexp, sps.softmax, sps.log_softmax,
        sla.solve_triangular, sla.cholesky, sla.cho_factor, sla.cho_solve,
    ):  # fmt: skip
        register_pure_array_function(fn)


_register_types()
