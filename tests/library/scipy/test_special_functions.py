"""scipy.special's elementwise functions registered from tables (gibbous.library.scipy.bessel,
gammas, elementary; issue 31, point 4) in user functions, in both modes: reverse gradients,
forward tangents and Hessian-vector products against central finite differences; the
conventions at the edges of the domains; the operands refused by name (orders, shapes,
degrees), in each mode, and the constant ones that are not.  Each rule's own cases are
gibbous/audit/cases/scipy_special.py, run by tests/test_audit.py."""

from __future__ import annotations

import typing as t
import warnings

import numpy as np
import pytest

sps = pytest.importorskip("scipy.special")

import gibbous  # noqa: E402
from gibbous.inspect import code_ir  # noqa: E402
from gibbous.ir.exceptions import GibbousError  # noqa: E402
from gibbous.rules.emit import ForwardModeError  # noqa: E402
from gibbous.rules.no_derivative import NoDerivativeError  # noqa: E402

RNG = np.random.default_rng(31)
Array = np.ndarray[t.Any, t.Any]


def program(fn: t.Any, n: int, first: int = 0) -> t.Callable[..., float]:
    """``total(a_first, *others) = sum(fn(a0, a1, ...))``, a function of its own whose callee
    is a global (a constant to the build, as a module-level ``sps.jv`` is)."""
    names = [f"a{i}" for i in range(n)]
    order = [names[first], *(m for i, m in enumerate(names) if i != first)]
    scope = {"np": np, "fn": fn}
    exec(f"def total({', '.join(order)}):\n    return float(np.sum(fn({', '.join(names)})))", scope)
    return t.cast(t.Callable[..., float], scope["total"])


def expression(text: str, n: int) -> t.Callable[..., float]:
    """``total(a0, ...) = sum(text)``: literals in ``text`` are constants of the program."""
    scope = {"np": np, "sps": sps}
    names = ", ".join(f"a{i}" for i in range(n))
    exec(f"def total({names}):\n    return float(np.sum({text}))", scope)
    return t.cast(t.Callable[..., float], scope["total"])


def differentiable(a: object) -> bool:
    return isinstance(a, float) or (isinstance(a, np.ndarray) and a.dtype.kind == "f")


def central(f: t.Callable[[float], t.Any], h: float = 1e-3) -> t.Any:
    """f'(0) by central differences at h and h/2, Richardson-extrapolated (error O(h**4))."""

    def d(step: float) -> t.Any:
        return (np.asarray(f(step)) - np.asarray(f(-step))) / (2 * step)

    return (4 * d(h / 2) - d(h)) / 3


def moved(args: t.Sequence[t.Any], i: int, by: t.Any) -> list[t.Any]:
    out = list(args)
    out[i] = args[i] + by
    return out


def check_both_modes(total: t.Callable[..., float], args: t.Sequence[t.Any], hvp: bool) -> None:
    """The reverse gradient of each float operand and the forward tangent along random
    directions against central differences; with ``hvp``, ``gibbous.hvp`` in each array
    operand against central differences of the (checked) gradient."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (SciPy's domain warnings, at steps outside it)
        rule = gibbous.build_rrule(total, *args)
        value, (_, *grads) = gibbous.value_and_gradient(rule, total, *args)
        assert value == total(*args)
        for i, a in enumerate(args):
            if not differentiable(a):
                continue
            if isinstance(a, float):
                expected = central(lambda e: total(*moved(args, i, e)))
            else:
                expected = np.zeros_like(a)
                for index in np.ndindex(a.shape):
                    unit = np.zeros_like(a)
                    unit[index] = 1.0
                    expected[index] = central(lambda e: total(*moved(args, i, e * unit)))
            np.testing.assert_allclose(grads[i], expected, rtol=1e-6, atol=1e-8)
        rng = np.random.default_rng(31)  # (its own: the same tangents whatever ran before)
        tangents = tuple(
            rng.standard_normal(np.shape(a)) if isinstance(a, np.ndarray) and differentiable(a)
            else float(rng.standard_normal()) if isinstance(a, float) else None
            for a in args
        )  # fmt: skip
        _, dy = gibbous.jvp(gibbous.build_frule(total, *args), total, tuple(args), tangents)
        expected = central(
            lambda e: total(*[a if d is None else a + e * d for a, d in zip(args, tangents)])
        )
        np.testing.assert_allclose(dy, expected, rtol=1e-6, atol=1e-8)
        if hvp:
            for i, a in enumerate(args):
                if isinstance(a, np.ndarray) and differentiable(a):
                    check_hvp(total, args, i)


def check_hvp(total: t.Callable[..., float], args: t.Sequence[t.Any], i: int) -> None:
    code = total.__code__
    n = code.co_argcount
    names = code.co_varnames[:n]
    first = program_first(total, n, i, names)
    rest = [b for j, b in enumerate(args) if j != i]
    v = RNG.standard_normal(np.shape(args[i]))
    hv = gibbous.hvp(first, args[i], v, *rest)
    grad = gibbous.grad(first)
    expected = central(lambda e: grad(args[i] + e * v, *rest))
    np.testing.assert_allclose(hv, expected, rtol=1e-5, atol=1e-7)


def program_first(
    total: t.Callable[..., float], n: int, i: int, names: tuple[str, ...]
) -> t.Callable[..., float]:
    """``total`` with its operand ``i`` first (``hvp`` differentiates in the first)."""
    order = [names[i], *(m for j, m in enumerate(names) if j != i)]
    scope = {"total": total}
    exec(f"def first({', '.join(order)}):\n    return total({', '.join(names)})", scope)
    return t.cast(t.Callable[..., float], scope["first"])


# --------------------------------------------------------------------------------------------
# Every function, both modes and hvp: orders and other refused operands as ints

X = np.array([0.3, 1.1, 2.7, 5.5])
N = np.array([0, 1, 2, 3])
LAMBDA = np.array([0.5, 1e-3, 0.0, -0.7])
DELTA = np.array([1.0, 0.5, 2.0, 3.0])
LAMBDA_NEAR_0 = np.array([0.0, 1e-9, -3e-3, 0.011])  # (where Box-Cox's slope is a series)

# (function, operands, hvp): hvp False where the formula calls a function without rules of
# its own (eval_chebyt's eval_chebyu), so forward mode has no written form to differentiate.
CALLS: list[tuple[t.Any, tuple[t.Any, ...], bool]] = [
    *((fn, (X,), True)
      for fn in (sps.j0, sps.j1, sps.y0, sps.y1, sps.k0, sps.k0e, sps.k1, sps.k1e)),
    *((fn, (X - 2,), True) for fn in (sps.i0, sps.i0e, sps.i1, sps.i1e)),
    *((fn, (N, X), True) for fn in (sps.jv, sps.jve, sps.yv, sps.yve, sps.kv, sps.kve, sps.yn,
                                   sps.kn, sps.struve, sps.modstruve)),
    (sps.iv, (N, X - 2), True),
    (sps.ive, (N, X - 2), True),
    (sps.hyp0f1, (N + 1, X - 2), True),
    (sps.eval_hermite, (N, X - 2), True),
    (sps.eval_hermitenorm, (N, X - 2), True),
    (sps.eval_chebyt, (N, X / 6), False),
    (sps.rgamma, (np.array([-3.0, -2.5, -1.0, -0.2, 0.0, 0.3, 0.7, 12.0, 200.0]),), True),
    (sps.exp1, (X,), True),
    (sps.expi, (X - 1.5,), True),
    (sps.spence, (np.array([0.3, 0.999, 1.001, 2.7]),), True),
    (sps.gammainc, (N + 1, X), True),
    (sps.gammaincc, (N + 1, X), True),
    (sps.gammaincinv, (N + 1, X / 6), True),
    (sps.gammainccinv, (N + 1, X / 6), True),
    (sps.poch, (X, X[::-1] - 2), True),
    (sps.binom, (X + 3, X), True),
    (sps.expn, (N, X), True),
    (sps.zeta, (N + 2, X), True),
    *((fn, (X,), True) for fn in (sps.log1p, sps.expm1, sps.exp2, sps.cbrt, sps.cosm1, sps.entr)),
    (sps.exp10, (X / 3,), True),
    (sps.exprel, (np.array([-0.011, -1e-5, 0.0, 1e-12, 3e-3, 0.02, 1.5]),), True),
    *((fn, (X * 30,), True) for fn in (sps.sindg, sps.cosdg)),
    *((fn, (X * 10,), True) for fn in (sps.tandg, sps.cotdg)),
    *((fn, (X - 2,), True) for fn in (sps.dawsn, sps.wrightomega, sps.log_expit)),
    (sps.erfi, (X / 3 - 0.5,), True),
    (sps.ndtri_exp, (-X,), True),
    (sps.huber, (DELTA, X - 2), True),
    (sps.pseudo_huber, (DELTA, X - 2), True),
    (sps.kl_div, (X, X[::-1].copy()), True),
    (sps.rel_entr, (X, X[::-1].copy()), True),
    (sps.boxcox, (X, LAMBDA), True),
    (sps.boxcox1p, (X, LAMBDA), True),
    (sps.inv_boxcox, (X, np.array([0.5, 1e-3, 0.0, -0.1])), True),
    (sps.inv_boxcox1p, (X, np.array([0.5, 1e-3, 0.0, -0.1])), True),
    (sps.owens_t, (X - 2, X / 2), True),
    (sps.powm1, (X, X - 2), True),
]


@pytest.mark.parametrize(
    ("fn", "args", "hvp"), CALLS, ids=[f"{fn.__name__}-{i}" for i, (fn, _, _) in enumerate(CALLS)]
)
def test_both_modes(fn: t.Any, args: tuple[t.Any, ...], hvp: bool) -> None:
    check_both_modes(program(fn, len(args)), args, hvp)


# Real orders, shapes and parameters as literals (constants: not refused), scalar operands,
# float32 arrays, and mixes of functions in one program.
EXPRESSIONS: list[tuple[str, tuple[t.Any, ...], bool]] = [
    ("sps.jv(0.5, a0) + sps.jv(-1.3, a0) + sps.jve(1.5, a0)", (X,), True),
    ("sps.yv(2.5, a0) + sps.yve(0.2, a0)", (X,), True),
    ("sps.iv(1.7, a0) + sps.ive(0.4, a0) + sps.ive(2, a0 - 3)", (X,), True),
    ("sps.kv(2.3, a0) + sps.kve(0.5, a0)", (X,), True),
    ("sps.struve(0.5, a0) + sps.struve(-0.5, a0) + sps.modstruve(1.5, a0)", (X,), True),
    ("sps.hyp0f1(1.5, a0)", (X - 2,), True),
    ("sps.gammainc(2.5, a0) + sps.gammaincc(0.4, a0)", (X,), True),
    ("sps.gammaincinv(3.5, a0) + sps.gammainccinv(0.7, a0)", (X / 6,), True),
    ("sps.eval_chebyt(2.5, a0) + sps.eval_chebyt(3.0, a0 - 0.5)", (X / 6,), False),
    ("sps.zeta(2.5, a0) + sps.expn(3, a0) + sps.expn(0, a0)", (X,), True),
    ("sps.multigammaln(a0, 3)", (X + 1.5,), False),
    ("sps.multigammaln(a0, 1)", (2.5,), False),
    ("sps.boxcox(2.5, a0) + sps.boxcox1p(0.5, a0)", (LAMBDA_NEAR_0,), True),
    ("sps.inv_boxcox(1.5, a0) + sps.inv_boxcox1p(0.5, a0)", (LAMBDA_NEAR_0 * 2,), True),
    ("sps.jv(0.5, a0) + sps.kv(1, a0) + sps.gammainc(2.5, a0) + sps.huber(1.5, a0)", (1.3,), False),
    ("sps.boxcox(a0, a1) + sps.poch(a0, a1) * sps.kl_div(a0, a1)", (1.3, 0.4), False),
    ("sps.owens_t(a0, a1) * sps.pseudo_huber(a1, a0)", (1.3, 0.4), False),
    ("sps.boxcox(a0, a1) + sps.inv_boxcox(a1, a0)", (X, 0.4), True),
    ("sps.i0e(a0) * sps.k1e(a0 + 4) + sps.exprel(a0) * sps.rgamma(a0)", (X,), True),
    ("sps.digamma(a0) + sps.gammaln(a0) * sps.erf(a0)", (X,), True),  # (the formulas before)
]


@pytest.mark.parametrize(("text", "args", "hvp"), EXPRESSIONS, ids=[e[0][:40] for e in EXPRESSIONS])
def test_both_modes_with_constant_orders(text: str, args: tuple[t.Any, ...], hvp: bool) -> None:
    check_both_modes(expression(text, len(args)), args, hvp)


def test_single_precision() -> None:
    x = np.array([0.4, 1.3, 2.2], dtype=np.float32)

    def f(x: Array) -> float:
        return float(np.sum(sps.jv(1, x) + sps.gammainc(2, x) + sps.huber(np.float32(1.0), x)))

    rule = gibbous.build_rrule(f, x)
    _, (_, dx) = gibbous.value_and_gradient(rule, f, x)
    assert dx.dtype == np.float32
    x64 = x.astype(float)
    expected = (sps.jv(0, x64) - sps.jv(2, x64)) / 2 + x64 * np.exp(-x64) + np.clip(x64, -1, 1)
    np.testing.assert_allclose(dx, expected, rtol=1e-5)


def with_constant(fn: t.Any, constant: Array) -> t.Callable[[Array], float]:
    """``total(x) = sum(fn(C, x))`` for a global ``C``: a constant of the program."""
    scope = {"np": np, "fn": fn, "C": constant}
    exec("def total(x):\n    return float(np.sum(fn(C, x)))", scope)
    return t.cast(t.Callable[[Array], float], scope["total"])


def test_the_recurrences_are_scipys_derivatives() -> None:
    """The formulas of the Bessel functions in x are what scipy.special.jvp, yvp, ivp and kvp
    compute (n = 1), for real orders (a global array of them: a constant)."""
    v = np.array([-1.5, 0.0, 0.5, 1.0, 2.7])[:, None]
    x = np.array([0.2, 1.0, 3.5, 12.0])
    helpers = ((sps.jv, sps.jvp), (sps.yv, sps.yvp), (sps.iv, sps.ivp), (sps.kv, sps.kvp))
    for fn, derivative in helpers:
        dx = gibbous.grad(with_constant(fn, v))(x)
        np.testing.assert_allclose(dx, np.sum(derivative(v, x), axis=0), rtol=1e-12)


def test_hvp_through_tangent_functions() -> None:
    """Where a formula calls a function without a written form, forward mode's tangent is a
    function called at run time, which a Hessian-vector product differentiates again; where
    that function has no rules of its own (eval_chebyt's eval_chebyu), a gibbous error naming
    the user's call (never a wrong number)."""
    from tests.forward.test_second_order import _fd_hvp

    for text in ("sps.multigammaln(a0, 2)", "sps.polygamma(1, a0)"):
        f = expression(text, 1)
        np.testing.assert_allclose(gibbous.hvp(f, X + 1.0, X), _fd_hvp(f, X + 1.0, X), rtol=1e-6)
    with pytest.raises(ForwardModeError, match="Hessian-vector product") as info:
        gibbous.hvp(expression("sps.eval_chebyt(2, a0)", 1), X + 1.0, X)
    assert "scipy.special.eval_chebyt's tangent" in str(info.value)


# --------------------------------------------------------------------------------------------
# Conventions at the edges


def gradients(text: str, *args: t.Any) -> list[t.Any]:
    f = expression(text, len(args))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, (_, *grads) = gibbous.value_and_gradient(gibbous.build_rrule(f, *args), f, *args)
    return grads


def test_conventions_at_the_edges() -> None:
    # i0e = exp(-|x|) i0 has a kink at 0: the mean of its one-sided slopes -1 and 1.
    np.testing.assert_allclose(gradients("sps.i0e(a0) + 2 * sps.i1e(a0)", np.zeros(1)), [[1.0]])
    # huber's derivatives are continuous where |r| = delta: r there, and 0 in delta.
    d, r = gradients("sps.huber(a0, a1)", np.array([1.5, 1.5]), np.array([1.5, -1.5]))
    np.testing.assert_allclose(d, [0.0, 0.0])
    np.testing.assert_allclose(r, [1.5, -1.5])
    # pseudo_huber is 0 at delta = 0 for every r and inf below: its slope from the right, |r|.
    d, r = gradients("sps.pseudo_huber(a0, a1)", np.zeros(2), np.array([2.0, -0.5]))
    np.testing.assert_allclose(d, [2.0, 0.5])
    np.testing.assert_allclose(r, [0.0, 0.0])
    # kl_div(0, y) = y and rel_entr(0, y) = 0: x's one-sided slope is -inf (nan at y = 0, where
    # the function is inf for every x > 0), y's 1 and 0 (y = 0 too).
    both = "sps.kl_div(a0, a1) + 2 * sps.rel_entr(a0, a1)"
    x, y = gradients(both, np.zeros(3), np.array([0.5, 2.0, 0.0]))
    np.testing.assert_array_equal(x, [-np.inf, -np.inf, np.nan])
    np.testing.assert_allclose(y, [1.0, 1.0, 1.0])
    # spence at 1, Box-Cox at lambda = 0, exprel at 0: the limits.
    assert gradients("sps.spence(a0)", 1.0) == [-1.0]
    x, lam = gradients("sps.boxcox(a0, a1)", np.array([2.0, 0.5]), np.zeros(2))
    np.testing.assert_allclose(x, [0.5, 2.0])
    np.testing.assert_allclose(lam, np.log([2.0, 0.5]) ** 2 / 2, rtol=1e-15)
    y, lam = gradients("sps.inv_boxcox(a0, a1)", np.array([0.7, -1.2]), np.zeros(2))
    np.testing.assert_allclose(y, np.exp([0.7, -1.2]))
    np.testing.assert_allclose(lam, -np.exp([0.7, -1.2]) * np.array([0.7, -1.2]) ** 2 / 2)
    assert gradients("sps.exprel(a0)", 0.0) == [0.5]
    # 1 / gamma at gamma's poles -n: (-1)**n n!; expn(0, x) = exp(-x) / x.
    np.testing.assert_allclose(gradients("sps.rgamma(a0)", -np.arange(4.0)), [[1, -1, 2, -6]])
    np.testing.assert_allclose(gradients("sps.expn(0, a0)", 2.0), [-np.exp(-2.0) * 0.75])
    # The sign of gamma and round are locally constant.
    np.testing.assert_array_equal(gradients("sps.gammasgn(a0) + sps.round(a0)", X), [np.zeros(4)])


def test_types_of_the_calls() -> None:
    def calls(x: Array) -> t.Any:
        return sps.jv(2, x), sps.multigammaln(x, 3), sps.zeta(2.5, x), sps.huber(1.0, x)

    ir = str(code_ir(calls, X + 2, stage="typed"))
    for name in ("jv", "multigammaln", "zeta", "huber"):
        line = next(line for line in ir.splitlines() if f"{name}(" in line and " = call " in line)
        assert line.split(" : ")[-1].startswith("f64[:]"), line


# --------------------------------------------------------------------------------------------
# Refused by name: the operands without a derivative gibbous computes, where they carry one

# (call, the refused operand's name): a0 is the refused operand, a1 the other
REFUSED: list[tuple[str, str]] = [
    *((f"sps.{n}(a0, a1)", "v") for n in "jv jve yv yve iv ive kv kve struve modstruve".split()),
    ("sps.hyp0f1(a0, a1)", "v"),
    *((f"sps.{n}(a0, a1)", "n") for n in "yn kn eval_hermite eval_hermitenorm expn".split()),
    *((f"sps.{n}(a0, a1)", "n") for n in ("eval_chebyt", "polygamma")),
    *((f"sps.{n}(a0, a1)", "a") for n in "gammainc gammaincc gammaincinv gammainccinv".split()),
    ("sps.zeta(a0, a1)", "x"),
    ("sps.zeta(a0) * a1", "x"),
    ("sps.zetac(a0) * a1", "x"),
    ("sps.multigammaln(a1 + 3, a0)", "d"),
]
_ARG = np.array([0.3, 0.6])


def _refusal(info: pytest.ExceptionInfo[NoDerivativeError], call: str, name: str) -> None:
    message = str(info.value)
    function = call.split("(")[0][4:]
    assert isinstance(info.value, GibbousError)
    assert f"scipy.special.{function}" in message, message
    assert f"its argument {name} carries a derivative" in message, message


@pytest.mark.parametrize(("call", "name"), REFUSED, ids=[c for c, _ in REFUSED])
def test_refused_operands(call: str, name: str) -> None:
    f = expression(call, 2)
    # reverse mode: an argument (a float, a float array), whatever argnums picks
    for order in (2.0, np.array([2.0, 3.0])):
        with pytest.raises(NoDerivativeError) as info:
            gibbous.grad(f, argnums=1)(order, _ARG)
        _refusal(info, call, name)
    # reverse mode at a call resolved at run time: a float a closure captured
    scope = {"np": np, "sps": sps}
    body = f"    def g(a1):\n        return float(np.sum({call}))\n    return g"
    exec(f"def make(a0):\n{body}", scope)
    with pytest.raises(NoDerivativeError) as info:
        gibbous.grad(scope["make"](2.0))(_ARG)
    _refusal(info, call, name)
    # forward mode, and so hvp: the operand has a tangent
    with pytest.raises(NoDerivativeError) as info:
        gibbous.jvp(gibbous.build_frule(f, 2.0, _ARG), f, (2.0, _ARG), (1.0, None))
    _refusal(info, call, name)
    with pytest.raises(NoDerivativeError) as info:
        gibbous.hvp(f, 2.0, 1.0, _ARG)
    _refusal(info, call, name)


ORDERS = np.array([0.5, 1.5])  # (a global: a constant)


def in_a_loop(x: Array) -> float:
    s = 0.0
    for v in (0.5, 1.5):
        s += float(np.sum(sps.jv(v, x)))
    return s


def from_an_int(n: int, x: Array) -> float:
    return float(np.sum(sps.kv(float(n) + 0.5, x) + sps.gammainc(n, x)))


def from_a_global(x: Array) -> float:
    return float(np.sum(sps.iv(ORDERS, x)))


def literal(x: Array) -> float:
    return float(np.sum(sps.yv(1.5, x)))


def test_constant_orders_are_not_refused() -> None:
    x = np.array([0.7, 2.5])
    expected = sum((sps.jv(v - 1, x) - sps.jv(v + 1, x)) / 2 for v in (0.5, 1.5))
    np.testing.assert_allclose(gibbous.grad(in_a_loop)(x), expected)
    dx = gibbous.grad(from_an_int, argnums=1)(2, x)
    np.testing.assert_allclose(dx, sps.kvp(2.5, x) + x * np.exp(-x))
    np.testing.assert_allclose(gibbous.grad(from_a_global)(x), sps.ivp(ORDERS, x))
    # forward mode: a literal (a keyword argument has a tangent there, of zeros)
    _, dy = gibbous.jvp(gibbous.build_frule(literal, x), literal, (x,), (np.ones(2),))
    np.testing.assert_allclose(dy, np.sum(sps.yvp(1.5, x)))


def test_complex_operands_are_refused() -> None:
    def f(x: Array) -> float:
        return float(np.sum(np.abs(sps.jv(1, x))))

    with pytest.raises(NotImplementedError, match="scipy.special.jv of complex numbers"):
        gibbous.grad(f)(np.array([1.0 + 0.5j, 2.0]))
