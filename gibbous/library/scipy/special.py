"""SciPy: rules for functions of ``scipy.special`` (registered by ``gibbous.optional``
once SciPy is imported, as ``scipy_linalg`` and ``scipy_stats``).

* the ufuncs ``expit logit gammaln digamma (psi) erf erfc`` and those ``scipy.stats`` reaches
  (``ndtr log_ndtr ndtri erfcx erfinv erfcinv gamma loggamma beta betaln stdtr``),
  ``xlogy xlog1py`` and ``polygamma(n, x)``, on arrays and scalars with broadcasting;
* ``logsumexp`` (``axis``, ``keepdims``, weights ``b``, ``return_sign``), ``softmax`` and
  ``log_softmax`` (``axis``);
* by area, in modules of their own (imported at the end): Bessel functions and their kin
  (``gibbous.library.scipy.bessel``), gamma and zeta functions and exponential integrals
  (``gammas``), losses, divergences, Box-Cox transforms and elementary functions
  (``elementary``).

Each function has a type rule (``gibbous.inspect.code_ir(f, *args, stage="typed")`` types its
calls) and is pure (``gibbous.ir.purity``).  The ufuncs' rules of both modes are made from the
formulas of ``gibbous.rules.formulas`` by ``gibbous.library.scipy.ufuncs``.
"""

from __future__ import annotations

import math
import typing as t

import numpy as np
import scipy.special as sps

from gibbous.ir import types as T
from gibbous.ir.purity import register_pure_array_function
from gibbous.rules import frules
from gibbous.library.elementwise import tables
from gibbous.library.common import (
    CD,
    NT,
    NUMERIC,
    RuleResult,
    bind,
    cotangent,
    needs,
    new_fdata,
    nothing,
    send,
    zero_for,
)
from gibbous.library.reductions.reductions import expand, normalize_axes
from gibbous.library.scipy import ufuncs
from gibbous.library.scipy.common import is_complex, position, rdata_item, run_primal
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual
from gibbous.infer.typerules.table import register_type_rule
from gibbous.infer.typerules.numpy import DataArgs, sampled_numpy

# --------------------------------------------------------------------------------------------
# scipy.special: ufuncs, their gradients the formulas of ``gibbous.rules.formulas`` rendered
# with SciPy's functions (g is the cotangent, as in ``elementwise``)

_HALF_LOG_2PI = math.log(2 * math.pi) / 2


def choose(cond: t.Any, then: t.Any, otherwise: t.Any) -> t.Any:
    """``np.where(cond, then, otherwise)``, keeping scalars scalars."""
    if isinstance(cond, np.ndarray):
        return np.where(cond, then, otherwise)
    return then if cond else otherwise


def t_logpdf(u: t.Any, df: t.Any) -> t.Any:
    """The log-density of Student's t with ``df`` degrees of freedom at ``u`` (the normal's for
    ``df = inf``)."""
    v = _as_float(df)
    with np.errstate(invalid="ignore"):
        finite = (
            sps.gammaln((v + 1) / 2)
            - sps.gammaln(v / 2)
            - np.log(v * math.pi) / 2
            - (v + 1) / 2 * np.log1p(u * u / v)
        )
    return choose(np.isinf(v), -u * u / 2 - _HALF_LOG_2PI, finite)


def stdtr_ddf(df: t.Any, x: t.Any) -> t.Any:
    """``d stdtr(df, x) / d df``, numerically: the derivative of the incomplete beta function
    in its parameter has no closed form SciPy evaluates.  Central differences with steps
    ``df / 100, df / 200, df / 400``, Richardson-extrapolated twice (error of order ``h^6``),
    taken in the lower tail (``stdtr(df, x) = 1 - stdtr(df, -x)``) where stdtr has full
    relative precision; against mpmath the error stays below 1e-14 absolute and 1e-9
    relative (for df up to 1e4).  0 for ``df = inf`` (the normal limit)."""
    v = _as_float(df)
    lower = -np.abs(x)

    def central(h: t.Any) -> t.Any:
        return (sps.stdtr(v + h, lower) - sps.stdtr(v - h, lower)) / (2 * h)

    with np.errstate(invalid="ignore"):
        h = v / 100
        d1, d2, d3 = central(h), central(h / 2), central(h / 4)
        found = (16 * (4 * d3 - d2) - (4 * d2 - d1)) / 45 * choose(x > 0, -1.0, 1.0)
    return choose(np.isinf(v), 0.0, found)


def _as_float(df: t.Any) -> t.Any:
    """``df`` in float64: steps of a float32 ``df`` would leave the differences few digits."""
    return df.astype(float) if isinstance(df, np.ndarray) else float(df)


def _t_pdf(u: t.Any, df: t.Any) -> t.Any:
    return np.exp(t_logpdf(u, df))


HELPERS: dict[str, t.Callable[..., t.Any]] = {"stdtr_ddf": stdtr_ddf, "t_pdf": _t_pdf}


def _grad(name: str, arity: int = 1) -> t.Any:
    return ufuncs.grad(name, arity, HELPERS)


g_expit, g_logit, g_gammaln, g_digamma = map(_grad, ("expit", "logit", "lgamma", "digamma"))
g_erf, g_erfc, g_ndtr, g_log_ndtr = map(_grad, ("erf", "erfc", "ndtr", "log_ndtr"))
g_ndtri, g_erfcx, g_erfinv, g_erfcinv = map(_grad, ("ndtri", "erfcx", "erfinv", "erfcinv"))
g_gamma, g_loggamma = _grad("gamma"), _grad("lgamma")


def normal_pdf(x: t.Any) -> t.Any:
    """The standard normal density ``phi(x)``: ndtr's derivative."""
    return g_ndtr(1.0, x, None)


def normal_hazard(x: t.Any, log_cdf: t.Any) -> t.Any:
    """``phi(x) / Phi(x)``, given ``log Phi(x)``: the derivative of ``log_ndtr`` at ``x``."""
    return g_log_ndtr(1.0, x, log_cdf)


# Complex arguments are refused by the rule where SciPy computes the function but the gradient
# function could not (zeta and polygamma take real arguments only).
UNARY: dict[object, ufuncs.Operand] = {
    sps.expit: g_expit,
    sps.logit: g_logit,
    sps.gammaln: g_gammaln,
    sps.digamma: g_digamma,  # also scipy.special.psi
    sps.erf: g_erf,
    sps.erfc: g_erfc,
    sps.ndtr: g_ndtr,
    sps.log_ndtr: g_log_ndtr,
    sps.ndtri: g_ndtri,
    sps.erfcx: g_erfcx,
    sps.erfinv: g_erfinv,
    sps.erfcinv: g_erfcinv,
    sps.gamma: g_gamma,
    sps.loggamma: g_loggamma,
}
COMPLEX = (sps.erf, sps.erfc, sps.ndtr, sps.log_ndtr, sps.erfcx, sps.gamma, sps.loggamma)
BINARY: dict[object, tuple[ufuncs.Operand, ufuncs.Operand]] = {
    sps.xlogy: ("xlogy_x", "xlogy_y"),
    sps.xlog1py: ("xlog1py_x", "xlog1py_y"),
    sps.beta: ("beta_x", "beta_y"),
    sps.betaln: ("betaln_x", "betaln_y"),
    sps.stdtr: (_grad("stdtr_x", 2), _grad("stdtr_y", 2)),
    # polygamma(n, x): an integer order n (a Python function, not a ufunc: real only)
    sps.polygamma: (ufuncs.Refuse("n", ufuncs.INTEGER), "polygamma_y"),
}

ufuncs.register_unary(UNARY, complex_ok=COMPLEX)
ufuncs.register_binary(BINARY, complex_ok=(sps.xlogy, sps.xlog1py))

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
    if any(is_complex(c.primal) for c in operands):
        raise NotImplementedError("scipy.special.logsumexp of complex numbers: no rule")
    bound = bind(LOGSUMEXP_PARAMETERS, args, kwargs, {"axis": None, "b": None}, "logsumexp")
    ib = position(LOGSUMEXP_PARAMETERS, "b", args, kwargs)
    keepdims = bool(bound.get("keepdims", False))
    with_sign = bool(bound.get("return_sign", False))
    ap, bp = a.primal, bound["b"]
    z = run_primal(f.primal, (ap,), args, kwargs)
    zf = new_fdata(z)
    ndim = np.ndim(ap) if bp is None else max(np.ndim(ap), np.ndim(t.cast(t.Any, bp)))
    axes = normalize_axes(bound["axis"], ndim)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if with_sign:
            lse, sign = z
            g = cotangent(zf[0] if isinstance(zf, tuple) else NT, rdata_item(dz, 0))
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


def _softmax_rule(log: bool) -> t.Callable[..., RuleResult]:
    """``softmax(x, axis)``: ``s (g - sum(g s))``; ``log_softmax(x, axis)``:
    ``g - exp(z) sum(g)``, the sums over the axes (all of them for ``axis=None``)."""
    what = "log_softmax" if log else "softmax"

    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        bound = bind(("axis",), args, kwargs, {"axis": None}, what)
        xp = x.primal
        if is_complex(xp):
            raise NotImplementedError(f"scipy.special.{what} of complex numbers: no rule")
        z = run_primal(f.primal, (xp,), args, kwargs)
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


def _softmax_tangent(which: str) -> frules.Maker:
    """Forward rules, the transposes of the pullbacks above, with ``axis`` (and ``keepdims``
    for ``logsumexp``) at most: with ``s = softmax(x)``, ``logsumexp``'s tangent is
    ``sum(s dx)``, ``log_softmax``'s ``dx - sum(s dx)``, ``softmax``'s ``s (dx - sum(s dx))``."""
    allowed = {"axis", "keepdims"} if which == "logsumexp" else {"axis"}

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> frules.Tangent | None:
        n = len(types) - len(kwnames)
        if n > 2 or not set(kwnames) <= allowed or any(varied[1:]):
            return None

        def tangent(z: t.Any, x: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
            dx = a[n - 1]
            if dx is None:
                return frules.like(z, None)
            axis = a[0] if n == 2 else kwargs.get("axis")
            soft = sps.softmax(x, axis=axis)
            mean = np.sum(soft * dx, axis=axis, keepdims=True)
            if which == "logsumexp":
                keep = bool(kwargs.get("keepdims", False))
                return frules.like(z, mean if keep else np.squeeze(mean, axis=axis))
            return frules.like(z, dx - mean if which == "log_softmax" else soft * (dx - mean))

        return frules.checked(tangent, types)

    return make


for _fn, _which in ((sps.logsumexp, "logsumexp"), (sps.softmax, "softmax"),
                    (sps.log_softmax, "log_softmax")):  # fmt: skip
    frules.register(_fn, _softmax_tangent(_which))


# --------------------------------------------------------------------------------------------
# Type rules and purity


def _register_types() -> None:
    ufuncs.register_types(fn for fn in (*UNARY, *BINARY) if fn is not sps.polygamma)
    register_type_rule(sps.polygamma)(sampled_numpy(sps.polygamma, DataArgs(2)))
    register_type_rule(sps.logsumexp)(
        sampled_numpy(sps.logsumexp, DataArgs(1, keywords=frozenset({"b"})))
    )
    for fn in (sps.softmax, sps.log_softmax):
        register_type_rule(fn)(sampled_numpy(fn))
    for fn in (sps.polygamma, sps.logsumexp, sps.softmax, sps.log_softmax):
        register_pure_array_function(fn)


_register_types()

# The other areas' modules: each registers its functions' rules as it is imported.
from gibbous.library.scipy import bessel, elementary, gammas  # noqa: E402,F401
