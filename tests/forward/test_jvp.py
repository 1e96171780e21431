"""Forward mode (issue 15, first step): jvp against central finite differences, and the
refusals of what it does not take yet."""

from __future__ import annotations

import gc
import math
import typing as t
from pathlib import Path

import numpy as np
import pytest

import gibbous
from gibbous.forward import ForwardModeError, build_frule, jvp

RNG = np.random.default_rng(15)


def _fd(f: t.Callable[..., t.Any], args: tuple[t.Any, ...], tangents: tuple[t.Any, ...]) -> t.Any:
    h = 1e-6

    def at(s: float) -> t.Any:
        moved = [
            a if d is None else (a + s * d if isinstance(a, np.ndarray) else a + s * float(d))
            for a, d in zip(args, tangents)
        ]
        return np.asarray(f(*moved), dtype=float)

    return (at(h) - at(-h)) / (2 * h)


def check(f: t.Callable[..., t.Any], *args: t.Any) -> None:
    rule = build_frule(f, *args)
    tangents = tuple(
        RNG.standard_normal(a.shape) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
        else float(RNG.standard_normal()) if isinstance(a, float)
        else None
        for a in args
    )  # fmt: skip
    for _ in range(2):  # a rule is called again and again
        y, dy = jvp(rule, f, args, tangents)
        expected = f(*args)
        np.testing.assert_array_equal(y, expected)  # the primal's value, bit for bit
        assert np.shape(dy) == np.shape(expected)
        np.testing.assert_allclose(dy, _fd(f, args, tangents), rtol=1e-5, atol=1e-7)


# --- the corpus -----------------------------------------------------------------------------


def scalar_math(x: float, y: float) -> float:
    return math.sin(x) * y + math.exp(x / y) - x**3 + math.sqrt(abs(y)) + y**2


def helper(a: t.Any, b: t.Any) -> t.Any:
    return a * np.sin(b)


def loop_branch(x: float, y: float) -> t.Any:
    s = 0.0
    for i in range(4):
        if x > 0:
            s = s + helper(x, y) * i
        else:
            s = s - x
    return s + math.exp(y)


def rosenbrock(x: np.ndarray) -> t.Any:
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def mlp(W1: np.ndarray, b1: np.ndarray, W2: np.ndarray, x: np.ndarray) -> t.Any:
    return np.tanh(x @ W1 + b1) @ W2


def scalar_loop(x: np.ndarray) -> float:
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sin(x[i]) * x[i]
    return s


def rnn(W: np.ndarray, h: np.ndarray, X: np.ndarray) -> t.Any:
    for t_ in range(X.shape[0]):
        h = np.tanh(W @ h + X[t_])
    return np.sum(h**2)


def fact_like(x: float, n: int) -> float:  # recursion
    if n <= 1:
        return x
    return x * fact_like(x * 0.5, n - 1)


def _halves(x: t.Any, n: int, depth: int = 0) -> t.Any:
    if depth < n:  # (depth: a constant at the first call, one more each level: np.block's way)
        return _halves(x * 0.5, n, depth + 1) + np.sin(x)
    return x


def counter_recursion(x: np.ndarray, n: int) -> t.Any:
    return np.sum(_halves(x, n) * x)


def with_floor(x: np.ndarray) -> t.Any:  # np.floor has no derivative: its result is a constant
    return np.sum(np.floor(x) * x + np.maximum(x, 0.1) / (1 + x**2))


def reshapes(x: np.ndarray) -> t.Any:
    return np.mean(x.reshape(3, 4).T @ np.ones(3) + np.cumsum(x)[::3].sum())


def int_argument(x: np.ndarray, k: int) -> t.Any:
    return x[k] * np.exp(x).sum() + k


def returns_array(x: np.ndarray, y: float) -> t.Any:
    return np.where(x > 0, x, 0.0) * y + np.log1p(x**2)


def reductions(x: np.ndarray) -> t.Any:
    return np.max(x, axis=1).sum() + np.linalg.norm(x) + np.einsum("ij,ij->", x, x) * np.min(x)


def constant_terms(x: np.ndarray) -> t.Any:
    """Linear functions with a constant term of their own, whose tangent is 0 there."""
    return (
        np.sum(np.diff(x, prepend=5.0) ** 2)
        + np.sum(np.diff(x, 1, 0, 2.0, 3.0) ** 2)
        + np.sum(x**2, initial=3.0)
        + sum(x * x, 7.0)
    )


def lorenz_like(xyz: np.ndarray) -> t.Any:  # unpacked, and np.array([...]) of floats
    for _ in range(5):
        x, y, z = xyz
        xyz = xyz + np.array([10 * (y - x), x * (28 - z) - y, x * y - 8 / 3 * z]) * 0.01
    return np.sum(xyz)


CASES: list[tuple[t.Callable[..., t.Any], tuple[t.Any, ...]]] = [
    (scalar_math, (0.7, 1.9)),
    (loop_branch, (0.8, 1.3)),
    (loop_branch, (-0.8, 1.3)),
    (rosenbrock, (RNG.standard_normal(20),)),
    (mlp, (RNG.standard_normal((5, 7)), RNG.standard_normal(7), RNG.standard_normal((7, 3)),
           RNG.standard_normal((4, 5)))),
    (scalar_loop, (RNG.standard_normal(12),)),
    (rnn, (RNG.standard_normal((6, 6)) / 3, RNG.standard_normal(6), RNG.standard_normal((5, 6)))),
    (fact_like, (1.3, 5)),
    (counter_recursion, (np.linspace(0.1, 0.9, 3), 4)),
    (with_floor, (RNG.standard_normal(9) * 3,)),
    (reshapes, (RNG.standard_normal(12),)),
    (int_argument, (RNG.standard_normal(5), 2)),
    (returns_array, (RNG.standard_normal(6), 0.4)),
    (lorenz_like, (np.array([1.0, 1.5, 20.0]),)),
    (reductions, (RNG.standard_normal((3, 4)),)),
    (constant_terms, (RNG.standard_normal(6),)),
    (np.sin, (RNG.standard_normal(4),)),
    (np.matmul, (RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2)))),
]  # fmt: skip


@pytest.mark.parametrize(
    ("f", "args"), CASES, ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(CASES)]
)
def test_jvp_matches_finite_differences(f: t.Callable[..., t.Any], args: tuple[t.Any, ...]) -> None:
    check(f, *args)


def test_public_names() -> None:
    assert gibbous.build_frule is build_frule and gibbous.jvp is jvp


# --- what it refuses, and how ---------------------------------------------------------------


GLOBAL_BUFFER = np.zeros(3)


def writes_a_global(x: np.ndarray) -> t.Any:
    GLOBAL_BUFFER[0] = x[0]  # (no tangent memory beside a global: refused)
    return np.sum(GLOBAL_BUFFER)


def takes_into(x: np.ndarray) -> t.Any:
    out = np.zeros(2)
    np.take(x, np.array([0, 2]), None, out)  # (out, by position: a write)
    return np.sum(out * x[:2])


def uses_try(x: float) -> float:
    try:
        return math.log(x)
    except ValueError:
        return 0.0


def risky(x: float) -> float:
    if x > 1.0:
        raise ValueError("too large")
    return x * x


def catches_from_a_callee(x: float) -> float:
    try:
        y = risky(x) * 3.0  # raises in the callee's forward program: the handler runs
    except ValueError:
        y = math.sin(x)
    return y


def with_a_context(x: np.ndarray) -> t.Any:
    with np.errstate(divide="ignore"):
        y = np.log(x) * x
    return y


def writes_then_fails(x: np.ndarray) -> t.Any:
    z = np.zeros(3)
    try:
        z[0] = x[0] * 2.0
        z[5] = x[1]  # IndexError: neither the value nor its tangent is written
    except IndexError:
        z[1] = x[2] ** 2
    finally:
        z[2] = x[0]
    return z


@pytest.mark.parametrize(
    ("f", "arg"),
    [
        (uses_try, 2.0),
        (uses_try, -1.0),  # the handler's value: a constant
        (catches_from_a_callee, 0.5),
        (catches_from_a_callee, 2.0),
        (with_a_context, np.array([0.5, 1.5, 2.5])),
        (writes_then_fails, np.array([0.5, 1.5, 2.5])),
    ],
)
def test_try_and_with(f: t.Callable[..., t.Any], arg: t.Any) -> None:
    check(f, arg)


def builds_dict(x: float) -> t.Any:
    return {"x": x}["x"] * x


def test_a_dict_made_and_read() -> None:
    check(builds_dict, 2.0)


def builds_set(x: float) -> t.Any:
    return min({x, 3.0})


@pytest.mark.parametrize(
    ("f", "arg", "words"),
    [
        (writes_a_global, np.ones(3), "write into an array the function reads from outside"),
        (builds_set, 2.0, "depends on a float"),
        (takes_into, np.ones(3), "no forward rule"),
    ],
)
def test_refusals_name_the_construct_and_line(
    f: t.Callable[..., t.Any], arg: t.Any, words: str
) -> None:
    with pytest.raises(ForwardModeError, match=words) as info:
        build_frule(f, arg)
    assert __file__.rsplit("/", 1)[-1] in str(info.value)


def test_missing_forward_rule_names_the_callable() -> None:
    # np.histogram is NumPy's Python, derived, around a call without a forward rule:
    # refused at the user's call, by its public name, saying what inside NumPy stopped it.
    # (When histogram gets a rule of its own, another such function goes here; np.convolve
    # was the first, before it had one, then np.resize.)
    def f(x: np.ndarray) -> t.Any:
        return np.histogram(x)[1]

    with pytest.raises(ForwardModeError, match=r"numpy\.histogram\(.*no forward rule") as info:
        build_frule(f, np.arange(3.0))
    assert f"{__file__}:" in str(info.value) and "NumPy's own Python" in str(info.value)


def test_tangents_are_checked() -> None:
    rule = build_frule(rosenbrock, np.ones(4))
    with pytest.raises(TypeError, match="shape"):
        jvp(rule, rosenbrock, (np.ones(4),), (np.ones(3),))
    with pytest.raises(TypeError, match="built for"):
        jvp(rule, rosenbrock, (np.ones((2, 2)),), (np.ones((2, 2)),))
    with pytest.raises(TypeError, match="not a rule of"):
        jvp(rule, mlp, (np.ones(4),), (np.ones(4),))
    rule = build_frule(int_argument, np.ones(4), 1)
    with pytest.raises(TypeError, match="has no tangent"):
        jvp(rule, int_argument, (np.ones(4), 1), (np.ones(4), 1.0))


def sums_into(x: np.ndarray) -> t.Any:
    out = np.zeros(3)
    np.cumsum(x, 0, None, out)
    return np.sum(out * x)


def float_in_place(x: float) -> float:
    s = x
    s += x * x  # a float: a new value, nothing written
    return s


def test_a_positional_out_is_refused() -> None:
    # (``np.cumsum(x, 0, None, out)``: no forward rule takes a positional ``out``; the writes
    # forward mode follows are tested in test_writes.py)
    with pytest.raises(ForwardModeError, match="may write into an operand|no forward rule"):
        build_frule(sums_into, np.arange(4.0)[:3])


def test_in_place_operator_on_floats() -> None:
    check(float_in_place, 0.7)


def test_tangents_are_written_out_where_types_are_known() -> None:
    """The forward program is plain arithmetic: no tangent function is called per operation
    (``x ** 2`` folds to ``2 * x``: no ``where``, no ``** 1``)."""
    source = build_frule(rosenbrock, np.ones(5)).run.__gibbous_source__
    head = source.splitlines()[0]
    assert head.startswith("def __make(")
    # (np.sum as the primal sums it; arithmetic into a dead temporary where it is large)
    helpers = set(head[11:-2].split(", "))
    assert helpers <= {"add_reduce", "forward_reuse", "forward_reuse_right", "multiply",
                       "subtract", "add"} and "add_reduce" in helpers  # fmt: skip
    assert "** 1" not in source and "where" not in source
    # numbers multiplied into a tangent one after another are one number: ``dx * (200 * x)``
    # for ``100 * (.)**2``, ``dx * (-2 * x)`` for ``(-dx) * (2 * x)``
    assert "200.0" in source and "(-2.0) *" in source and "= -_" not in source
    loop = build_frule(scalar_loop, np.ones(3)).run.__gibbous_source__
    assert "cos(_" in loop  # the tangent of np.sin(x[i]), on a float


def test_the_jvp_stage_is_inspectable() -> None:
    from gibbous.inspect import code_ir

    ir = code_ir(rosenbrock, np.ones(4), stage="jvp")
    assert [a.name for a in ir.args] == ["x", "dx"]
    assert "operator.sub" in str(ir) and "make_tuple" in str(ir)
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "gibbous", "ir", "tests.cli_examples:loss", "--args",
         "np.ones((3, 3)), np.ones(3)", "--stage", "jvp"],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "func @loss_jvp(%W: f64[:,:], %x: f64[:], %dW: f64[:,:], %dx: f64[:])" in done.stdout


def test_scipy_softmax_family() -> None:
    sps = pytest.importorskip("scipy.special")

    def f(x: np.ndarray) -> t.Any:
        return sps.logsumexp(x) + np.sum(sps.softmax(x, axis=0) * x) + sps.log_softmax(x)[1, 2]

    check(f, RNG.standard_normal((3, 4)))


def _closing_over(h: t.Callable[..., t.Any]) -> t.Callable[..., t.Any]:
    def f(x: np.ndarray) -> t.Any:
        return np.sum(h(x) * np.exp(x)) + np.sum(np.tanh(x))

    return f


@pytest.mark.parametrize("h", [np.sin, lambda x: x**2 + 1.0, np.floor])
def test_callees_known_only_at_run_time(h: t.Callable[..., t.Any]) -> None:
    """A callee read from a closure's cell: its forward rule (or program) is found when it
    is first called, then kept."""
    check(_closing_over(h), RNG.standard_normal(5))


def test_run_time_callees_are_kept_boundedly() -> None:
    """A new closure per call (a new callee each time) is resolved each time, right, and the
    forward rule keeps no more than a bounded number of them."""
    from gibbous.forward import dynamic

    def outer(x: np.ndarray, n: int) -> t.Any:
        return _closing_over(lambda y: y * n + y**2)(x)

    x = RNG.standard_normal(3)
    rule = build_frule(outer, x, 2)
    for n in range(300):
        _, dy = jvp(rule, outer, (x, n), (np.ones(3), None))
        if n % 100 == 7:
            h = 1e-6
            fd = (outer(x + h, n) - outer(x - h, n)) / (2 * h)
            assert dy == pytest.approx(fd, rel=1e-6)
    held = [c for c in gc.get_objects() if isinstance(c, dynamic.DynamicCalls)]
    assert held and all(len(c.known) <= dynamic._KNOWN for c in held)


# --- tuples and iteration --------------------------------------------------------------------


def returns_a_tuple(x: np.ndarray) -> t.Any:
    a, b = np.sin(x), x * 2.0
    pair = (a, b, 3)  # (an int item: no tangent)
    u, v, k = pair
    return u * v + k, pair[1]


def iterates_rows(m: np.ndarray) -> t.Any:
    total = np.zeros(m.shape[1])
    for row in m:
        total = total + row * row
    return total


def unpacks_an_array(xyz: np.ndarray) -> t.Any:
    for _ in range(3):
        x, y, z = xyz
        xyz = xyz + np.array([y - x, x * z, x * y - z]) * 0.01
    return xyz


def iterates_a_tuple(x: float) -> float:
    s = 0.0
    for c in (x, 2.0 * x, math.sin(x)):
        s = s * x + c
    return s


@pytest.mark.parametrize(
    ("f", "arg"),
    [
        (iterates_rows, RNG.standard_normal((3, 4))),
        (unpacks_an_array, np.array([1.0, 2.0, 3.0])),
        (iterates_a_tuple, 0.7),
    ],
)
def test_iteration(f: t.Callable[..., t.Any], arg: t.Any) -> None:
    check(f, arg)


def test_tuples_in_and_out() -> None:
    x, dx = RNG.standard_normal(4), RNG.standard_normal(4)
    rule = build_frule(returns_a_tuple, x)
    (y0, y1), (d0, d1) = jvp(rule, returns_a_tuple, (x,), (dx,))
    fd = _fd(lambda x: returns_a_tuple(x)[0], (x,), (dx,))
    np.testing.assert_allclose(d0, fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(d1, 2.0 * dx)

    def takes_a_tuple(p: tuple[float, float], x: np.ndarray) -> t.Any:
        a, b = p
        return a * np.sin(x) + b

    rule = build_frule(takes_a_tuple, (1.0, 2.0), x)
    _, dy = jvp(rule, takes_a_tuple, ((1.0, 2.0), x), ((1.0, 0.5), np.zeros(4)))
    np.testing.assert_allclose(dy, np.sin(x) + 0.5)
    with pytest.raises(TypeError, match="tuple of 2 items"):
        jvp(rule, takes_a_tuple, ((1.0, 2.0), x), (1.0, np.zeros(4)))


def chain(x: np.ndarray, y: np.ndarray) -> t.Any:
    a = (x * y + 1.0) ** 2 - np.sin(x) * (y - x) / (1.0 + y * y)
    return a * x - (a + y) * (x - 2.0 * y)


@pytest.mark.parametrize("n", [10, 20000])  # (below and above emit.REUSE_SIZE)
def test_large_temporaries_are_written_into(n: int) -> None:
    """Arithmetic writes into a temporary no one reads afterwards when the arrays are large:
    the value stays the primal's bit for bit, and the tangent agrees with differences."""
    x, y = RNG.uniform(0.5, 1.5, n), RNG.uniform(0.5, 1.5, n)
    rule = build_frule(chain, x, y)
    assert "forward_reuse" in rule.run.__gibbous_source__
    dx, dy_ = RNG.standard_normal(n), RNG.standard_normal(n)
    value, tangent = jvp(rule, chain, (x, y), (dx, dy_))
    assert np.array_equal(value, chain(x, y))
    np.testing.assert_allclose(tangent, _fd(chain, (x, y), (dx, dy_)), rtol=1e-6, atol=1e-8)
    assert np.array_equal(rosenbrock(x), jvp(build_frule(rosenbrock, x), rosenbrock, (x,), (dx,))[0])
