"""SciPy rules (gibbous.library.scipy.special, scipy_linalg, scipy_stats) in user functions:
gradients of whole programs against central finite differences, the types inference gives the
calls, the conventions at the edges (xlogy at x == 0, the triangles LAPACK reads) and the calls refused.  Each rule's own
cases are gibbous/audit/cases/scipy.py, run by tests/test_audit.py."""

from __future__ import annotations

import subprocess
import sys
import typing as t

import numpy as np
import pytest

pytest.importorskip("scipy")

import scipy.linalg  # noqa: E402
import scipy.special  # noqa: E402
import scipy.stats  # noqa: E402
from scipy.linalg import cho_factor, cho_solve, cholesky, solve_triangular  # noqa: E402
from scipy.special import expit, logsumexp, xlog1py, xlogy  # noqa: E402
from scipy.stats import multivariate_normal, norm  # noqa: E402

import gibbous  # noqa: E402
from gibbous import testing  # noqa: E402
from gibbous.inspect import code_ir  # noqa: E402
from gibbous.ir.types import typeof  # noqa: E402
from gibbous.rules.registry import DefaultContext, build_primitive_rrule  # noqa: E402
from gibbous.tangents.model import zero_coduals  # noqa: E402

RNG = np.random.default_rng(11)


def central_differences(f: t.Callable[..., float], args: list[t.Any], i: int) -> t.Any:
    """d f / d args[i] by central differences, entry by entry (a float for a float)."""
    h = 1e-6
    x = args[i]
    if isinstance(x, float):
        up = f(*args[:i], x + h, *args[i + 1 :])
        down = f(*args[:i], x - h, *args[i + 1 :])
        return (up - down) / (2 * h)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[index] += h
        minus[index] -= h
        up = f(*args[:i], plus, *args[i + 1 :])
        down = f(*args[:i], minus, *args[i + 1 :])
        grad[index] = (up - down) / (2 * h)
    return grad


def check_gradient(f: t.Callable[..., float], *args: t.Any) -> None:
    """value_and_gradient of the derived rule agrees with central differences, twice (the
    second call reuses the rule)."""
    rule = gibbous.build_rrule(f, *args)
    for _ in range(2):
        y, (_, *grads) = gibbous.value_and_gradient(rule, f, *args)
        assert y == pytest.approx(f(*args), rel=1e-12)
        for i, g in enumerate(grads):
            expected = central_differences(f, list(args), i)
            np.testing.assert_allclose(g, expected, rtol=1e-5, atol=1e-7)


# --------------------------------------------------------------------------------------------
# Whole programs


def logistic_triangular(W: t.Any, T: t.Any, b: t.Any) -> float:
    h = expit(W @ b)
    s = solve_triangular(T, h, lower=True)
    return float(logsumexp(s) + np.sum(s * s))


def test_logsumexp_expit_solve_triangular_program() -> None:
    W = RNG.standard_normal((4, 3))
    T = np.tril(RNG.standard_normal((4, 4))) + 3 * np.eye(4)
    b = RNG.standard_normal(3)
    check_gradient(logistic_triangular, W, T, b)
    testing.test_rule(logistic_triangular, W, T, b, is_primitive=False)


def normal_nll(x: t.Any, mu: float, sigma: float) -> float:
    return -float(np.sum(norm.logpdf(x, mu, sigma)))


def normal_nll_keywords(x: t.Any, mu: t.Any, sigma: float) -> float:
    return -float(np.sum(scipy.stats.norm.logpdf(x, loc=mu, scale=sigma)))


def test_norm_logpdf_program() -> None:
    x = RNG.standard_normal(5)
    check_gradient(normal_nll, x, 0.3, 1.4)
    check_gradient(normal_nll_keywords, x, RNG.standard_normal(5), 0.8)
    testing.test_rule(normal_nll, x, 0.3, 1.4, is_primitive=False)


def gaussian_fit(X: t.Any, mean: t.Any, cov: t.Any) -> float:
    return float(np.sum(multivariate_normal.logpdf(X, mean, cov)))


def test_multivariate_normal_logpdf_program() -> None:
    X = RNG.standard_normal((6, 3))
    M = RNG.standard_normal((3, 3))
    cov = M @ M.T + 2 * np.eye(3)
    cov[0, 2] += 0.4  # not symmetric: SciPy reads the lower triangle, so does the gradient
    check_gradient(gaussian_fit, X, RNG.standard_normal(3), cov)
    testing.test_rule(gaussian_fit, X, RNG.standard_normal(3), cov, is_primitive=False)


def cholesky_program(A: t.Any, b: t.Any) -> float:
    c, low = cho_factor(A)
    x = cho_solve((c, low), b)
    L = cholesky(A, lower=True)
    return float(x @ x + np.sum(np.log(np.diagonal(L))))


def cho_solve_of_cho_factor(A: t.Any, b: t.Any) -> float:
    return float(np.sum(cho_solve(cho_factor(A, lower=True), b)))


def test_cholesky_programs() -> None:
    M = RNG.standard_normal((4, 4))
    A = M @ M.T + 4 * np.eye(4)
    A[0, 3] += 0.5  # the two triangles differ: each function reads its own
    b = RNG.standard_normal(4)
    check_gradient(cholesky_program, A, b)
    check_gradient(cho_solve_of_cho_factor, A, b)
    testing.test_rule(cholesky_program, A, b, is_primitive=False)


def special_program(x: t.Any, y: t.Any) -> float:
    s = scipy.special.log_softmax(x, axis=1) + xlogy(y, x * x) + scipy.special.gammaln(y)
    return float(np.sum(s * scipy.special.softmax(x)) + np.sum(scipy.special.erf(x)))


def test_special_program() -> None:
    x = RNG.standard_normal((2, 3))
    y = RNG.uniform(0.5, 2.0, 3)
    check_gradient(special_program, x, y)


# --------------------------------------------------------------------------------------------
# Types


def special_calls(x: t.Any, y: t.Any) -> t.Any:
    return logsumexp(x, axis=0), expit(x), xlogy(x, y), scipy.special.softmax(x, axis=1)


def linalg_calls(T: t.Any, b: t.Any) -> t.Any:
    c, low = cho_factor(T)
    return solve_triangular(T, b, lower=True), cho_solve((c, low), b), cholesky(T)


def stats_calls(x: t.Any) -> t.Any:
    return scipy.stats.norm.logpdf(x, 0.5, 2.0)


def _call_types(ir: str) -> dict[str, str]:
    """The result type of each call in printed IR, by the callee's last name."""
    found = {}
    for line in ir.splitlines():
        if " = call " in line and " : " in line:
            callee = line.split(" = call ")[1].split("(")[0].rsplit(".", 1)[-1]
            # A registered path's last part is the hint it was first registered under.
            for prefix in ("scipy_special_", "scipy_linalg_"):
                callee = callee.removeprefix(prefix)
            found[callee] = line.rsplit(" : ", 1)[1].split(" loc(")[0]
    return found


def test_types_of_special_and_linalg_calls() -> None:
    x = np.ones((2, 3))
    types = _call_types(str(code_ir(special_calls, x, np.ones(3), stage="typed")))
    assert types["logsumexp"] == "f64[:]"
    assert types["expit"] == "f64[:,:]"
    assert types["xlogy"] == "f64[:,:]"
    assert types["softmax"] == "f64[:,:]"
    single = code_ir(special_calls, x.astype(np.float32), np.ones(3), stage="typed")
    assert _call_types(str(single))["expit"] == "f32[:,:]"
    types = _call_types(str(code_ir(linalg_calls, np.eye(3), np.ones(3), stage="typed")))
    assert types["solve_triangular"] == "f64[:]"
    # SciPy 1.18 returns ``lower`` as a 0-d bool array, earlier ones as a bool.
    assert types["cho_factor"] in ("tuple[f64[:,:], bool]", "tuple[f64[:,:], bool[]]")
    assert types["cho_solve"] == "f64[:]"
    assert types["cholesky"] == "f64[:,:]"


def test_type_of_norm_logpdf_with_the_instance_first() -> None:
    # How type inference types ``norm.logpdf(x)`` once it knows the receiver's class: the
    # function with the instance first.
    from gibbous.ir import types as T
    from gibbous.library.scipy.stats import NORM_GEN, NORM_LOGPDF
    from gibbous.infer.typerules.table import result_type

    receiver = T.Object(NORM_GEN)
    assert result_type(T.Const(NORM_LOGPDF), (receiver, T.Array("float64", 2)), {}) == T.Array(
        "float64", 2
    )
    assert result_type(T.Const(NORM_LOGPDF), (receiver, T.FLOAT, T.FLOAT), {}) == T.FLOAT
    gamma = T.Object(type(scipy.stats.gamma))  # another distribution: not typed by this rule
    assert result_type(T.Const(NORM_LOGPDF), (gamma, T.FLOAT, T.FLOAT), {}) == T.ANY


# --------------------------------------------------------------------------------------------
# Conventions


def xlogy_sum(x: t.Any, y: t.Any) -> float:
    return float(np.sum(xlogy(x, y)))


def xlog1py_sum(x: t.Any, y: t.Any) -> float:
    return float(np.sum(xlog1py(x, y)))


def test_xlogy_at_zero() -> None:
    x = np.array([0.0, 0.0, 2.0])
    y = np.array([0.0, 3.0, 0.5])
    rule = gibbous.build_rrule(xlogy_sum, x, y)
    _, (_, dx, dy) = gibbous.value_and_gradient(rule, xlogy_sum, x, y)
    # y gets nothing where x == 0 (xlogy(0, y) = 0 for every y); x gets log(y), except at the
    # point x == y == 0, where the function is not differentiable in x: 0 there.
    np.testing.assert_allclose(dx, [0.0, np.log(3.0), np.log(0.5)])
    np.testing.assert_allclose(dy, [0.0, 0.0, 4.0])
    rule = gibbous.build_rrule(xlog1py_sum, x, y - 1)
    _, (_, dx, dy) = gibbous.value_and_gradient(rule, xlog1py_sum, x, y - 1)
    np.testing.assert_allclose(dx, [0.0, np.log(3.0), np.log(0.5)])
    np.testing.assert_allclose(dy, [0.0, 0.0, 4.0])


def lower_factor_sum(A: t.Any) -> float:
    return float(np.sum(cholesky(A, lower=True)))


def test_cholesky_gradient_lives_in_the_triangle_read() -> None:
    M = RNG.standard_normal((3, 3))
    A = M @ M.T + 3 * np.eye(3)
    rule = gibbous.build_rrule(lower_factor_sum, A)
    _, (_, dA) = gibbous.value_and_gradient(rule, lower_factor_sum, A)
    assert np.all(np.triu(dA, 1) == 0)
    # The gradient with respect to the symmetric matrix, folded onto the lower triangle.
    def of_symmetric(S: t.Any) -> float:
        return lower_factor_sum(np.tril(S) + np.tril(S, -1).T)

    expected = central_differences(of_symmetric, [A], 0)
    np.testing.assert_allclose(dA, expected, rtol=1e-5, atol=1e-7)


def run_rule(fn: t.Any, *args: t.Any, **kwargs: t.Any) -> t.Any:
    """The forward call of the primitive rule for ``fn(*args, **kwargs)``."""
    operands = (*args, *kwargs.values())
    rule = build_primitive_rrule(DefaultContext, fn, [typeof(a) for a in operands], tuple(kwargs))
    f, *coduals = zero_coduals(fn, *operands)
    return rule(f, *coduals[: len(args)], **dict(zip(kwargs, coduals[len(args) :])))


def test_refused_calls() -> None:
    T = np.tril(np.ones((3, 3))) + np.eye(3)
    b = np.ones(3)
    with pytest.raises(NotImplementedError, match="overwrite_b"):
        run_rule(solve_triangular, T, b, overwrite_b=True)
    with pytest.raises(NotImplementedError, match="complex"):
        run_rule(logsumexp, np.array([1.0 + 1j, 2.0]))
    with pytest.raises(NotImplementedError, match="complex"):
        run_rule(scipy.special.digamma, np.array([1.0 + 1j, 2.0]))
    with pytest.raises(NotImplementedError, match="batch"):
        run_rule(cholesky, np.stack([np.eye(2), 2 * np.eye(2)]))


def test_without_scipy_nothing_is_registered() -> None:
    # SciPy hidden: gibbous imports, registers no SciPy rule, and the audit has no SciPy case.
    code = """
import sys
sys.modules["scipy"] = None
import gibbous, gibbous.library as prims
from gibbous.audit.cases.scipy import CASES
from gibbous.audit.cases.scipy_special import CASES as SPECIAL_CASES
assert CASES == [] and SPECIAL_CASES == [], (CASES, SPECIAL_CASES)
areas = ("special", "linalg", "stats", "signal")
assert not any(hasattr(prims, "scipy_" + area) for area in areas)
assert not [m for m in sys.modules if m.startswith("gibbous.library.scipy")], sys.modules
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
