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

import attrs
import numpy as np
import scipy.special as sps
import scipy.stats as sst

from gibbous.ir import types as T
from gibbous.library.elementwise import tables
from gibbous.library.common import (
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
from gibbous.library.scipy.common import (
    TypeArgs,
    TypeKwargs,
    is_complex,
    position,
    run_primal,
    zero_where,
)
from gibbous.library.scipy.linalg import hermitian_triangle_grad
from gibbous.library.scipy.special import choose, g_ndtri, normal_hazard, normal_pdf
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual
from gibbous.infer.typerules.table import register_type_rule
from gibbous.infer.typerules.sampling import evaluate_on_samples

# --------------------------------------------------------------------------------------------
# Location-scale methods: norm.logpdf pdf cdf logcdf sf logsf ppf, t.logpdf
#
# ``norm.cdf(x)`` is a bound method of the instance ``norm``.  Type inference turns the call
# into one of the function ``type(norm).cdf`` (``rv_continuous.cdf``, shared by every
# continuous distribution) with the instance first, and so does a call site typed at run time
# (``DynamicRule`` unbinds bound methods): the rules are registered for those functions with a
# ``norm_gen`` (``t_gen``, ``multivariate_normal_gen``) first, which other distributions do
# not match.  ``multivariate_normal.logpdf`` has a rule as a bound method too (a callee read
# from a global such as ``logpdf = multivariate_normal.logpdf``).  ``norm``'s and ``t``'s
# methods have none: the instances hold infinite floats (their support), which no
# finite-difference test of a call that takes them as an operand can pair, so such rules could
# not be checked.
#
# The value is SciPy's own (the method runs as it is); the gradient is that of ``V(u)`` with
# ``u = (x - loc) / scale``: x gets ``V'(u) / scale``, loc ``-V'(u) / scale`` and scale
# ``-V'(u) u / scale`` plus, for the densities, the derivative in the scale at fixed ``u``.

NORM_GEN = type(sst.norm)
T_GEN = type(sst.t)
MVN_GEN = type(sst.multivariate_normal)
RV_CONTINUOUS = sst.rv_continuous  # the class whose methods the distributions share
NORM_LOGPDF = NORM_GEN.logpdf  # rv_continuous.logpdf
MVN_LOGPDF = MVN_GEN.logpdf
MVN_PARAMETERS = ("mean", "cov", "allow_singular")

# V'(u), the derivative in the scale at fixed u (or None), and the gradient of the shape
# parameter (or None), from u, the value z, the scale s and the shape parameter.
Derivatives = t.Callable[[t.Any, t.Any, t.Any, t.Any], tuple[t.Any, t.Any, t.Any]]


def _d_logpdf(u: t.Any, z: t.Any, s: t.Any, shape: t.Any) -> tuple[t.Any, t.Any, t.Any]:
    return -u, -1 / s, None


def _d_pdf(u: t.Any, z: t.Any, s: t.Any, shape: t.Any) -> tuple[t.Any, t.Any, t.Any]:
    return -u * z, -z / s, None


def _d_cdf(u: t.Any, z: t.Any, s: t.Any, shape: t.Any) -> tuple[t.Any, t.Any, t.Any]:
    return normal_pdf(u), None, None


def _d_logcdf(u: t.Any, z: t.Any, s: t.Any, shape: t.Any) -> tuple[t.Any, t.Any, t.Any]:
    return normal_hazard(u, z), None, None


def _d_sf(u: t.Any, z: t.Any, s: t.Any, shape: t.Any) -> tuple[t.Any, t.Any, t.Any]:
    return -normal_pdf(u), None, None


def _d_logsf(u: t.Any, z: t.Any, s: t.Any, shape: t.Any) -> tuple[t.Any, t.Any, t.Any]:
    return -normal_hazard(-u, z), None, None


def _d_t_logpdf(u: t.Any, z: t.Any, s: t.Any, df: t.Any) -> tuple[t.Any, t.Any, t.Any]:
    """Student's t: ``log f = gammaln((v + 1) / 2) - gammaln(v / 2) - log(v pi) / 2 - (v + 1)
    / 2 log1p(u^2 / v)``; ``df = inf`` is the normal (its df gets 0)."""
    v = df.astype(float) if isinstance(df, np.ndarray) else float(df)
    with np.errstate(invalid="ignore", divide="ignore"):
        du = -(v + 1) * u / (v + u * u)
        dv = (
            (sps.digamma((v + 1) / 2) - sps.digamma(v / 2) - 1 / v - np.log1p(u * u / v)) / 2
            + (v + 1) * u * u / (2 * v * (v + u * u))
        )
    infinite = np.isinf(v)
    return choose(infinite, -u, du), -1 / s, choose(infinite, 0.0, dv)


# The gradients of a method's operands by parameter name ("x" for the first), from the
# instance, the cotangent g, x, the value z and the parameters' values.
Gradients = t.Callable[[t.Any, t.Any, t.Any, t.Any, t.Mapping[str, t.Any]], dict[str, t.Any]]


@attrs.frozen
class DistributionMethod:
    """The rule's body of one method ``dist.method(x, *parameters)`` of a distribution."""

    name: str  # for messages: "scipy.stats.norm.cdf"
    method: str
    parameters: tuple[str, ...]  # after x: the shape parameters, then loc and scale
    gradients: Gradients

    def __call__(
        self, dist: t.Any, x: CD, args: t.Sequence[CD], kwargs: t.Mapping[str, CD]
    ) -> tuple[CD, t.Callable[[t.Any], tuple[t.Any, ...]]]:
        operands = (x, *args, *kwargs.values())
        if any(is_complex(c.primal) for c in operands):
            raise NotImplementedError(f"{self.name} of complex numbers: no rule")
        z = run_primal(getattr(dist, self.method), (x.primal,), args, kwargs)
        zf = new_fdata(z)
        names = self.parameters
        bound = bind(names, args, kwargs, {"loc": 0.0, "scale": 1.0}, self.name)
        slots = ((0, "x"), *((position(names, n, args, kwargs), n) for n in names))

        def pullback(dz: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(zf, dz)
            out = [zero_for(c) for c in operands]
            if g is None or not any(map(needs, operands)):
                return tuple(out)
            grads = self.gradients(dist, tables.numpy_scalar(g), x.primal, z, bound)
            for i, name in slots:
                grad = grads.get(name)
                if i is not None and grad is not None and needs(operands[i]):
                    out[i] = send(operands[i], grad)
            return tuple(out)

        return CoDual(z, zf), pullback


def location_scale(derivatives: Derivatives) -> Gradients:
    """The gradients of a method whose value is ``V(u)`` (see above); an instance with a
    finite support ``(a, b)`` (of ``u``) is flat outside it: no gradient there."""

    def gradients(
        dist: t.Any, g: t.Any, x: t.Any, z: t.Any, bound: t.Mapping[str, t.Any]
    ) -> dict[str, t.Any]:
        s = bound["scale"]
        u = (x - bound["loc"]) / s
        lo, hi = float(dist.a), float(dist.b)
        if lo > -math.inf or hi < math.inf:
            g = zero_where((u <= lo) | (u >= hi), g)
        shape = bound.get("df")
        du, ds, dshape = derivatives(u, z, s, shape)
        gu = g * du / s
        grads = {"x": gu, "loc": -gu, "scale": -gu * u if ds is None else g * ds - gu * u}
        if dshape is not None:
            grads["df"] = g * dshape
        return grads

    return gradients


def _norm_ppf(
    dist: t.Any, g: t.Any, q: t.Any, z: t.Any, bound: t.Mapping[str, t.Any]
) -> dict[str, t.Any]:
    """``loc + scale ndtri(q)``: q gets ``scale sqrt(2 pi) exp(w^2 / 2)`` with ``w =
    ndtri(q)``, loc 1 and scale ``w``.  At ``q`` 0 or 1 (or outside) the value is the
    support's end (or nan), flat in ``q``: no gradient for ``q`` there."""
    w = sps.ndtri(q)
    outside = (q <= 0) | (q >= 1)
    with np.errstate(over="ignore", invalid="ignore"):
        gq = zero_where(outside, g * bound["scale"] * g_ndtri(1.0, q, w))
    return {"x": gq, "loc": g, "scale": zero_where(outside, g * w)}


_NORM = ("loc", "scale")
NORM_METHODS: dict[str, DistributionMethod] = {
    name: DistributionMethod(f"scipy.stats.norm.{name}", name, _NORM, gradients)
    for name, gradients in (
        ("logpdf", location_scale(_d_logpdf)), ("pdf", location_scale(_d_pdf)),
        ("cdf", location_scale(_d_cdf)), ("logcdf", location_scale(_d_logcdf)),
        ("sf", location_scale(_d_sf)), ("logsf", location_scale(_d_logsf)), ("ppf", _norm_ppf),
    )
}  # fmt: skip
T_LOGPDF = DistributionMethod(
    "scipy.stats.t.logpdf", "logpdf", ("df", *_NORM), location_scale(_d_t_logpdf)
)

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

    rrule.__qualname__ = f"bound_rule({_body_name(body)})"
    return rrule


def _unbound_rule(body: t.Callable[..., t.Any]) -> t.Callable[..., RuleResult]:
    """The rule of ``type(dist).logpdf(dist, x, ...)``, the function with the instance first."""

    def rrule(f: CD, dist: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        y, back = body(dist.primal, x, args, kwargs)
        return y, lambda dy: (NT, NT, *back(dy))

    rrule.__qualname__ = f"unbound_rule({_body_name(body)})"
    return rrule


def _body_name(body: object) -> str:
    return body.name if isinstance(body, DistributionMethod) else getattr(body, "__name__", "?")


for _kind in NUMERIC:
    for _name, _body in NORM_METHODS.items():
        primitive(getattr(RV_CONTINUOUS, _name), T.Object(NORM_GEN), _kind, ...)(
            _unbound_rule(_body)
        )
    primitive(NORM_LOGPDF, T.Object(T_GEN), _kind, ...)(_unbound_rule(T_LOGPDF))
    primitive(sst.multivariate_normal.logpdf, _kind, ...)(_bound_rule(_mvn_logpdf))
    primitive(MVN_LOGPDF, T.Object(MVN_GEN), _kind, ...)(_unbound_rule(_mvn_logpdf))


# --------------------------------------------------------------------------------------------
# Type rules


# The instances whose methods have rules, by class: a type rule of ``rv_continuous.cdf`` types
# the calls with one of them first (by sampling that instance's method), others not.
_INSTANCES: dict[type, object] = {NORM_GEN: sst.norm, T_GEN: sst.t}


def _method_type(name: str) -> t.Callable[[TypeArgs, TypeKwargs], T.Type]:
    def rule(args: TypeArgs, kwargs: TypeKwargs) -> T.Type:
        """The type of the broadcast operands (a float for scalars)."""
        for cls, instance in _INSTANCES.items():
            if args and T.is_subtype(args[0], T.Object(cls)):
                found = evaluate_on_samples(getattr(instance, name), args[1:], kwargs)
                return T.ANY if found is None else found
        return T.ANY

    return rule


def _mvn_logpdf_type(args: TypeArgs, kwargs: TypeKwargs) -> T.Type:
    """A float or an array whose rank depends on sizes (SciPy squeezes the result): unknown.
    The rule exists so that type inference does not look into SciPy's code."""
    return T.ANY


for _name in NORM_METHODS:
    register_type_rule(getattr(RV_CONTINUOUS, _name))(_method_type(_name))
register_type_rule(sst.multivariate_normal.logpdf, MVN_LOGPDF)(_mvn_logpdf_type)
