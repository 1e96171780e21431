"""The scipy.special functions scipy.stats reaches, and the methods of scipy.stats.norm and
scipy.stats.t, called in user functions: gradients against closed forms and central finite
differences (in x, loc, scale and t's degrees of freedom), through ``gibbous.grad`` and
``value_and_gradient`` of a built rule.  Each rule's own cases are gibbous/audit/cases/scipy.py."""

from __future__ import annotations

import math
import typing as t

import numpy as np
import pytest

pytest.importorskip("scipy")

import scipy.special as sps  # noqa: E402
import scipy.stats  # noqa: E402

import gibbous  # noqa: E402
from tests.library.scipy.test_scipy import central_differences, check_gradient  # noqa: E402

RNG = np.random.default_rng(23)
X = np.array([-2.1, -0.4, 0.3, 1.7])


def phi(u: t.Any) -> t.Any:
    return np.exp(-u * u / 2) / math.sqrt(2 * math.pi)


# --------------------------------------------------------------------------------------------
# scipy.special


def special_program(x: t.Any, p: t.Any, a: t.Any, v: float) -> float:
    s = sps.ndtr(x) + sps.log_ndtr(x) + sps.erfcx(x) + sps.stdtr(v, x)
    s = s + sps.ndtri(p) + sps.erfinv(2 * p - 1) + sps.erfcinv(2 * p)
    s = s + sps.gamma(a) + sps.loggamma(a) + sps.beta(a, v) + sps.betaln(a, a[::-1])
    return float(np.sum(s * s))


def test_special_program() -> None:
    check_gradient(
        special_program, X, np.array([0.1, 0.35, 0.6, 0.9]), np.array([0.7, 1.5, 2.2, 3.9]), 3.5
    )


def ndtr_sum(x: t.Any) -> float:
    return float(np.sum(sps.ndtr(x)))


def log_ndtr_sum(x: t.Any) -> float:
    return float(np.sum(sps.log_ndtr(x)))


def stdtr_sum(v: t.Any, x: t.Any) -> float:
    return float(np.sum(sps.stdtr(v, x)))


def test_special_closed_forms() -> None:
    np.testing.assert_allclose(gibbous.grad(ndtr_sum)(X), phi(X), rtol=1e-14)
    # The inverse Mills ratio far in the lower tail, where phi and Phi both underflow.
    tail = np.array([-40.0, -400.0])
    np.testing.assert_allclose(gibbous.grad(log_ndtr_sum)(tail), [40.02497, 400.0025], rtol=1e-6)
    dv, dx = gibbous.grad(stdtr_sum, argnums=(0, 1))(3.5, X)
    np.testing.assert_allclose(dx, scipy.stats.t.pdf(X, 3.5), rtol=1e-12)
    assert dv == pytest.approx(central_differences(stdtr_sum, [3.5, X], 0), rel=1e-6)
    # df = inf is the normal: x gets the normal density, df nothing.
    dv, dx = gibbous.grad(stdtr_sum, argnums=(0, 1))(math.inf, X)
    np.testing.assert_allclose(dx, phi(X), rtol=1e-14)
    assert dv == 0.0


def test_stdtr_in_the_degrees_of_freedom_against_mpmath() -> None:
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30

    def cdf(v: t.Any, x: float) -> t.Any:
        lower = mp.betainc(v / 2, mp.mpf(1) / 2, 0, v / (v + mp.mpf(x) ** 2), regularized=True)
        return lower / 2 if x < 0 else 1 - lower / 2

    for v in (0.6, 3.0, 40.0):
        for x in (-6.0, -0.3, 0.8, 5.0):
            exact = float(mp.diff(lambda w: cdf(w, x), v))
            got = gibbous.grad(stdtr_sum)(v, np.array([x]))
            assert got == pytest.approx(exact, rel=1e-9, abs=1e-15)


# --------------------------------------------------------------------------------------------
# scipy.stats.norm and scipy.stats.t, through SciPy's distribution objects


def norm_logpdf(x: t.Any, mu: t.Any, s: float) -> float:
    return float(np.sum(scipy.stats.norm.logpdf(x, mu, s)))


def norm_pdf(x: t.Any, mu: t.Any, s: float) -> float:
    return float(np.sum(scipy.stats.norm.pdf(x, mu, s)))


def norm_cdf(x: t.Any, mu: t.Any, s: float) -> float:
    return float(np.sum(scipy.stats.norm.cdf(x, mu, s)))


def norm_logcdf(x: t.Any, mu: t.Any, s: float) -> float:
    return float(np.sum(scipy.stats.norm.logcdf(x, mu, s)))


def norm_sf(x: t.Any, mu: t.Any, s: float) -> float:
    return float(np.sum(scipy.stats.norm.sf(x, loc=mu, scale=s)))


def norm_logsf(x: t.Any, mu: t.Any, s: float) -> float:
    return float(np.sum(scipy.stats.norm.logsf(x, loc=mu, scale=s)))


def norm_ppf(q: t.Any, mu: t.Any, s: float) -> float:
    return float(np.sum(scipy.stats.norm.ppf(q, mu, s)))


# d/du of each method's value at u = (x - mu) / s, and its derivative in s at fixed u.
def _closed_forms(u: t.Any, s: float) -> dict[t.Any, tuple[t.Any, t.Any]]:
    cdf, sf = scipy.stats.norm.cdf(u), scipy.stats.norm.sf(u)
    return {
        norm_logpdf: (-u, -1 / s),
        norm_pdf: (-u * phi(u) / s, -phi(u) / s**2),
        norm_cdf: (phi(u), 0.0),
        norm_logcdf: (phi(u) / cdf, 0.0),
        norm_sf: (-phi(u), 0.0),
        norm_logsf: (-phi(u) / sf, 0.0),
    }


MU = np.array([0.2, -0.5, 0.1, 0.6])


@pytest.mark.parametrize(
    "f", [norm_logpdf, norm_pdf, norm_cdf, norm_logcdf, norm_sf, norm_logsf], ids=lambda f: f.__name__
)
def test_norm_methods(f: t.Callable[..., float]) -> None:
    s = 1.3
    check_gradient(f, X, MU, s)
    dx, dmu, ds = gibbous.grad(f, argnums=(0, 1, 2))(X, MU, s)
    u = (X - MU) / s
    du, ds_fixed_u = _closed_forms(u, s)[f]
    np.testing.assert_allclose(dx, du / s, rtol=1e-12)
    np.testing.assert_allclose(dmu, -du / s, rtol=1e-12)
    assert ds == pytest.approx(np.sum(-du * u / s + ds_fixed_u), rel=1e-12)


def test_norm_ppf() -> None:
    q = np.array([0.05, 0.3, 0.5, 0.97])
    check_gradient(norm_ppf, q, MU, 1.3)
    dq, dmu, ds = gibbous.grad(norm_ppf, argnums=(0, 1, 2))(q, MU, 1.3)
    w = sps.ndtri(q)
    np.testing.assert_allclose(dq, 1.3 / phi(w), rtol=1e-12)
    np.testing.assert_allclose(dmu, 1.0)
    assert ds == pytest.approx(np.sum(w), rel=1e-12)


def test_the_call_of_the_issue() -> None:
    # Before: no rule to differentiate builtins.map(...) inside rv_continuous.cdf.
    x = RNG.standard_normal(5)
    np.testing.assert_allclose(
        gibbous.grad(lambda x: np.sum(scipy.stats.norm.cdf(x)))(x), phi(x), rtol=1e-14
    )


def t_logpdf(x: t.Any, v: float, mu: float, s: float) -> float:
    return float(np.sum(scipy.stats.t.logpdf(x, v, mu, s)))


def t_logpdf_keywords(x: t.Any, v: t.Any, s: float) -> float:
    return float(np.sum(scipy.stats.t.logpdf(x, df=v, scale=s)))


def test_t_logpdf() -> None:
    v, mu, s = 3.5, 0.4, 1.6
    check_gradient(t_logpdf, X, v, mu, s)
    check_gradient(t_logpdf_keywords, X, np.array([0.9, 2.0, 7.5, 30.0]), 0.7)
    dx, dv, dmu, ds = gibbous.grad(t_logpdf, argnums=(0, 1, 2, 3))(X, v, mu, s)
    u = (X - mu) / s
    du = -(v + 1) * u / (v + u * u)
    np.testing.assert_allclose(dx, du / s, rtol=1e-12)
    assert dmu == pytest.approx(np.sum(-du / s), rel=1e-12)
    assert ds == pytest.approx(np.sum(-du * u / s - 1 / s), rel=1e-12)
    expected_dv = np.sum(
        (sps.digamma((v + 1) / 2) - sps.digamma(v / 2) - 1 / v - np.log1p(u * u / v)) / 2
        + (v + 1) * u * u / (2 * v * (v + u * u))
    )
    assert dv == pytest.approx(expected_dv, rel=1e-12)
    # df = inf is the normal.
    dx, dv = gibbous.grad(t_logpdf, argnums=(0, 1))(X, math.inf, mu, s)
    np.testing.assert_allclose(dx, -u / s, rtol=1e-12)
    assert dv == 0.0


def test_gradients_outside_the_support_of_a_truncated_instance() -> None:
    # A norm_gen instance with a finite support is flat (-inf) outside it: no gradient there.
    from gibbous.library.scipy.stats import NORM_GEN

    bounded = NORM_GEN(a=-1.0, b=1.0, name="bounded")

    def f(x: t.Any) -> float:
        return float(np.sum(bounded.cdf(x)))

    dx = gibbous.grad(f)(np.array([-2.0, 0.5, 3.0]))
    np.testing.assert_allclose(dx, [0.0, phi(0.5), 0.0])


def weibull_terms(x: t.Any, c: float) -> float:
    # SciPy writes weibull_min with builtins.pow of arrays: pow(x, c)
    return float(np.sum(scipy.stats.weibull_min.logpdf(x, c) + scipy.stats.weibull_min.cdf(x, c)))


def test_weibull_min_through_builtins_pow_of_arrays() -> None:
    check_gradient(weibull_terms, np.abs(X) + 0.2, 1.5)
    x = np.abs(X) + 0.2
    dc = gibbous.grad(weibull_terms, argnums=1)(x, 1.5)
    assert dc == pytest.approx(central_differences(weibull_terms, [x, 1.5], 1), rel=1e-6)


# --------------------------------------------------------------------------------------------
# Forward mode: a distribution's method is rv_continuous's own Python, called with the
# distribution object first (``DynamicCalls`` unbinds it, as reverse mode does)

FORWARD_METHODS: list[tuple[str, t.Callable[[t.Any], float]]] = [
    ("gamma.logpdf", lambda x: float(np.sum(scipy.stats.gamma.logpdf(x, 1.5)))),
    ("alpha.logpdf", lambda x: float(np.sum(scipy.stats.alpha.logpdf(x, 1.5)))),
    ("t.cdf", lambda x: float(np.sum(scipy.stats.t.cdf(x, 3.0, 0.2, 1.4)))),
    ("expon.cdf", lambda x: float(np.sum(scipy.stats.expon.cdf(x, scale=2.0)))),
    ("norm.logpdf in loc", lambda m: float(np.sum(scipy.stats.norm.logpdf(np.abs(X), m, 1.5)))),
    ("weibull_min.cdf", lambda x: float(np.sum(scipy.stats.weibull_min.cdf(x, 1.7)))),
]


@pytest.mark.parametrize("f", [f for _, f in FORWARD_METHODS], ids=[n for n, _ in FORWARD_METHODS])
def test_distribution_methods_in_forward_mode(f: t.Callable[[t.Any], float]) -> None:
    x = np.abs(X) + 0.2
    v = np.cos(np.arange(x.size) * 1.7 + 0.3)
    y, dy = gibbous.jvp(gibbous.build_frule(f, x), f, (x,), (v,))
    assert y == pytest.approx(f(x), rel=1e-12)
    expected = float(np.dot(central_differences(f, [x], 0), v))
    assert dy == pytest.approx(expected, rel=1e-6, abs=1e-9)
    assert dy == pytest.approx(float(np.dot(gibbous.grad(f)(x), v)), rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("f", [f for _, f in FORWARD_METHODS], ids=[n for n, _ in FORWARD_METHODS])
def test_distribution_methods_under_hvp(f: t.Callable[[t.Any], float]) -> None:
    """hvp differentiates the forward program again: the methods of the arrays SciPy's code
    makes (``np.atleast_1d``'s ``result.reshape(1)``, ``cond.any()`` of a mask) are called
    there as their types' methods, the receiver's tangent first."""
    x = np.abs(X) + 0.2
    v = np.cos(np.arange(x.size) * 1.7 + 0.3)
    hv = gibbous.hvp(f, x, v)
    grad = gibbous.grad(f)
    h = 1e-5
    expected = (np.asarray(grad(x + h * v)) - np.asarray(grad(x - h * v))) / (2 * h)
    np.testing.assert_allclose(hv, expected, rtol=1e-5, atol=1e-8)
    again = gibbous.hvp(f, 1.1 * x, v)  # (the programs found at run time, kept: right again)
    expected = (np.asarray(grad(1.1 * x + h * v)) - np.asarray(grad(1.1 * x - h * v))) / (2 * h)
    np.testing.assert_allclose(again, expected, rtol=1e-5, atol=1e-8)


def test_a_distribution_method_called_again_at_another_point() -> None:
    """A bound method is made anew on each attribute read; the program found for the first
    is the one of the next calls (kept by the method's class and function): right again."""
    f = FORWARD_METHODS[0][1]
    x = np.abs(X) + 0.2
    rule = gibbous.build_frule(f, x)
    for scale in (1.0, 1.1, 1.3):
        dy = gibbous.jvp(rule, f, (x * scale,), (np.ones(4),))[1]
        assert dy == pytest.approx(float(np.sum(central_differences(f, [x * scale], 0))), rel=1e-6)


#: ``c`` of genpareto, zero in places: there ``apply_where`` gives its fill value, ``-x``.
C = np.array([0.3, 0.0, 0.5, 0.0])

#: Methods whose SciPy source goes through ``array_api_extra``'s ``apply_where`` (``f1``
#: where the condition holds, ``f2`` or a fill value elsewhere; a twin of its NumPy path).
APPLY_WHERE: list[tuple[str, t.Callable[[t.Any], float]]] = [
    ("t.logpdf", lambda x: float(np.sum(scipy.stats.t.logpdf(x, 2.5)))),
    ("t.logpdf in df", lambda d: float(np.sum(scipy.stats.t.logpdf(X, d)))),
    ("genpareto.logpdf, a fill value in x", lambda x: float(np.sum(scipy.stats.genpareto.logpdf(x, C)))),
    ("genpareto.logsf", lambda x: float(np.sum(scipy.stats.genpareto.logsf(x, 0.4)))),
]


@pytest.mark.parametrize("f", [f for _, f in APPLY_WHERE], ids=[n for n, _ in APPLY_WHERE])
def test_apply_where_in_three_modes(f: t.Callable[[t.Any], float]) -> None:
    """Reverse and forward mode against central differences, hvp against the gradient's;
    each branch's function sees only its own elements (no NaN from the other's)."""
    x = np.abs(X) + 0.7
    v = np.cos(np.arange(x.size) * 1.7 + 0.3)
    fd = central_differences(f, [x], 0)
    np.testing.assert_allclose(gibbous.grad(f)(x), fd, rtol=1e-6, atol=1e-9)
    y, dy = gibbous.jvp(gibbous.build_frule(f, x), f, (x,), (v,))
    assert y == pytest.approx(f(x), rel=1e-12)
    assert dy == pytest.approx(float(np.dot(fd, v)), rel=1e-6, abs=1e-9)
    grad = gibbous.grad(f)
    h = 1e-5
    expected = (np.asarray(grad(x + h * v)) - np.asarray(grad(x - h * v))) / (2 * h)
    np.testing.assert_allclose(gibbous.hvp(f, x, v), expected, rtol=1e-5, atol=1e-8)


def test_apply_where_refuses_another_namespace() -> None:
    """The twin is NumPy's path: another array namespace is refused by name, not followed."""
    from gibbous.ir.exceptions import GibbousError
    from gibbous.library.scipy import array_api

    if array_api.HELPERS is None:
        pytest.skip("this SciPy has no array_api_compat")
    with pytest.raises(GibbousError, match="apply_where over arrays of 'math'"):
        array_api.numpy_namespace(math)
