"""SciPy: rules for methods of ``scipy.stats``'s distribution objects (not frozen
distributions): ``norm.logpdf(x, loc, scale)`` and ``multivariate_normal.logpdf(x, mean,
cov)``.  ``multivariate_normal.logpdf`` reads the lower triangle of ``cov`` (SciPy calls
``eigh``), with the gradient of the symmetric matrix that triangle stands for, as
``scipy_linalg``'s functions.

Each method has a type rule; none is pure (the receiver is a mutable object).
"""

from __future__ import annotations

import math
import typing as t

import numpy as np
import scipy.stats as sst

from gibbous.ir import types as T
from gibbous.rules.prims import elementwise as E
from gibbous.rules.prims.common import (
    CD,
    NT,
    NUMERIC,
    Array,
    RuleResult,
    bind,
    cotangent,
    needs,
    new_fdata,
    send,
    zero_for,
)
from gibbous.rules.prims.scipy_common import (
    TypeArgs,
    TypeKwargs,
    is_complex,
    position,
    run_primal,
    zero_where,
)
from gibbous.rules.prims.scipy_linalg import hermitian_triangle_grad
from gibbous.rules.registry import primitive
from gibbous.rules.tangents import CoDual
from gibbous.rules.typerules import register_type_rule
from gibbous.rules.typerules_base import evaluate_on_samples

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
    if any(is_complex(c.primal) for c in (x, *args, *kwargs.values())):
        raise NotImplementedError(f"{what} of complex numbers: no rule")
    bound = bind(NORM_PARAMETERS, args, kwargs, {"loc": 0.0, "scale": 1.0}, what)
    iloc = position(NORM_PARAMETERS, "loc", args, kwargs)
    iscale = position(NORM_PARAMETERS, "scale", args, kwargs)
    z = run_primal(dist.logpdf, (x.primal,), args, kwargs)
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
            g = zero_where((u <= lo) | (u >= hi), g)
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
    if any(is_complex(c.primal) for c in (x, *args, *kwargs.values())):
        raise NotImplementedError(f"{what} of complex numbers: no rule")
    bound = bind(MVN_PARAMETERS, args, kwargs, {"mean": None, "cov": 1.0}, what)
    imean = position(MVN_PARAMETERS, "mean", args, kwargs)
    icov = position(MVN_PARAMETERS, "cov", args, kwargs)
    z = run_primal(dist.logpdf, (x.primal,), args, kwargs)
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
                gcov = hermitian_triangle_grad(gs, True)
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
# Type rules


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


register_type_rule(NORM_LOGPDF)(_norm_logpdf_type)
register_type_rule(sst.multivariate_normal.logpdf, MVN_LOGPDF)(_mvn_logpdf_type)
