"""Gradients of whole programs, each checked against central finite differences."""

from __future__ import annotations

import dataclasses
import typing as t

import numpy as np
import pytest

from gibbous.api import build_rrule, value_and_gradient, value_and_pullback
from gibbous.tangents.model import MutableTangent, NoTangent
from tests.ad.conftest import check

# --------------------------------------------------------------------------------------------
# Straight-line code


def poly(x: float, y: float) -> float:
    a = x * y + 3.0 * x
    b = a / (y + 2.0) - x**3
    return -b * a + 1.5


def test_straight_line_scalars(rng: np.random.Generator) -> None:
    _, y, grads = check(poly, 0.7, -1.3, rng=rng)
    assert isinstance(grads[1], float) and isinstance(grads[2], float)
    assert grads[0] == NoTangent()


def arrays(a: np.ndarray, b: np.ndarray) -> float:
    c = np.sin(a) * b + a / (1.0 + b * b)
    d = np.exp(-c) - a
    return float(np.sum(d * c))


def test_straight_line_arrays(rng: np.random.Generator) -> None:
    a, b = rng.standard_normal(5), rng.standard_normal(5)
    _, _, grads = check(arrays, a, b, rng=rng)
    assert isinstance(grads[1], np.ndarray) and grads[1].shape == a.shape


def loss(W: np.ndarray, x: np.ndarray) -> float:
    h = np.tanh(W @ x)
    return float(np.sum(h * h))


def test_design_example(rng: np.random.Generator) -> None:
    W, x = rng.standard_normal((8, 4)), rng.standard_normal(4)
    _, _, (dloss, dW, dx) = check(loss, W, x, rng=rng)
    assert dloss == NoTangent() and dW.shape == W.shape and dx.shape == x.shape
    h = np.tanh(W @ x)
    g = 2 * h * (1 - h * h)
    assert np.allclose(dW, np.outer(g, x)) and np.allclose(dx, W.T @ g)


def rosenbrock(x: np.ndarray) -> float:
    return float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


def test_rosenbrock(rng: np.random.Generator) -> None:
    check(rosenbrock, rng.standard_normal(6), rng=rng)


# --------------------------------------------------------------------------------------------
# Control flow


def branches(x: float, y: float) -> float:
    if x > y:
        z = x * y
    elif x > 0:
        z = x + y * y
    else:
        z = -x
    return z * 2.0


@pytest.mark.parametrize("x, y", [(2.0, 1.0), (1.0, 2.0), (-1.0, 2.0)])
def test_branches(x: float, y: float, rng: np.random.Generator) -> None:
    check(branches, x, y, rng=rng)


def power_sum(x: float, n: int) -> float:
    acc = 0.0
    for i in range(n):
        acc = acc + x**i  # a float accumulated around the loop: a block argument
    return acc


def test_for_loop_accumulating_a_float(rng: np.random.Generator) -> None:
    rule, _, grads = check(power_sum, 1.3, 5, rng=rng)
    assert grads[2] == NoTangent()
    check(power_sum, 0.4, 9, rule=rule, rng=rng)  # another trip count, same rule
    check(power_sum, 0.4, 0, rule=rule, rng=rng)  # no iteration at all


def newton_sqrt(a: float) -> float:
    y = 1.0
    while abs(y * y - a) > 1e-12 * a:
        y = 0.5 * (y + a / y)
    return y


def test_while_with_a_tolerance(rng: np.random.Generator) -> None:
    _, y, grads = check(newton_sqrt, 2.0, rng=rng)
    assert np.isclose(grads[1], 0.5 / np.sqrt(2.0))


def nested(x: float, n: int) -> float:
    acc = 0.0
    for i in range(n):
        for j in range(i):
            if (i + j) % 2:
                acc = acc + x * j
            else:
                acc = acc * 0.5 + x * x
    return acc


def test_nested_loops_with_branches(rng: np.random.Generator) -> None:
    check(nested, 1.5, 5, rng=rng)


def array_loop(x: np.ndarray, steps: int) -> float:
    y = x
    for _ in range(steps):
        y = np.tanh(y) * 1.5 + x
    return float(np.sum(y * y))


def test_loop_over_arrays(rng: np.random.Generator) -> None:
    check(array_loop, rng.standard_normal(4), 3, rng=rng)


def early_return(x: float, n: int) -> float:
    s = 1.0
    for i in range(n):
        s = s * x
        if s > 10.0:
            return s - i
    return s


@pytest.mark.parametrize("x", [1.2, 3.0])
def test_several_returns(x: float, rng: np.random.Generator) -> None:
    check(early_return, x, 6, rng=rng)


# --------------------------------------------------------------------------------------------
# Calls of user functions


def helper(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a * np.sin(b)


def calls_helper(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.sum(helper(x, y) + helper(y, x)))


def test_calls_of_user_functions(rng: np.random.Generator) -> None:
    check(calls_helper, rng.standard_normal(3), rng.standard_normal(3), rng=rng)


def scaled(x: float, scale: float = 2.0, *, shift: float = 0.5) -> float:
    return x * scale + shift


def keywords_and_defaults(x: float, y: float) -> float:
    return scaled(x) * scaled(y, shift=x) + scaled(scale=y, x=x)


def test_keywords_and_defaults(rng: np.random.Generator) -> None:
    check(keywords_and_defaults, 0.3, -1.2, rng=rng)


def power(x: float, n: int) -> float:
    if n == 0:
        return 1.0
    return x * power(x, n - 1)


def test_recursion(rng: np.random.Generator) -> None:
    rule, _, grads = check(power, 1.3, 5, rng=rng)
    assert np.isclose(grads[1], 5 * 1.3**4)
    check(power, 0.7, 8, rule=rule, rng=rng)  # deeper than before: new levels are built
    check(power, 0.7, 2, rule=rule, rng=rng)


def tree_sum(tree: t.Any) -> float:
    if isinstance(tree, tuple):
        return tree_sum(tree[0]) + tree_sum(tree[1])
    return tree * tree


def test_recursion_on_nested_tuples(rng: np.random.Generator) -> None:
    tree = ((1.0, 2.0), (3.0, (4.0, 5.0)))
    _, _, grads = check(tree_sum, tree, rng=rng)
    assert grads[1] == ((2.0, 4.0), (6.0, (8.0, 10.0)))


def make_model(A: np.ndarray) -> t.Callable[[np.ndarray], float]:
    def model(x: np.ndarray) -> float:
        return float(np.sum(np.tanh(A @ x)))

    return model


def test_closure_gradient_lands_in_df(rng: np.random.Generator) -> None:
    A, x = rng.standard_normal((3, 2)), rng.standard_normal(2)
    model = make_model(A)
    rule = build_rrule(model, x)
    _, (df, dx) = value_and_gradient(rule, model, x)
    assert isinstance(df, MutableTangent)
    g = 1 - np.tanh(A @ x) ** 2
    assert np.allclose(df.fields["A"], np.outer(g, x)) and np.allclose(dx, A.T @ g)


# --------------------------------------------------------------------------------------------
# Mutation


def in_place(a: np.ndarray, b: np.ndarray) -> float:
    a += b
    a *= b
    return float(np.sum(a * a))


def test_in_place_operators_restore_arguments(rng: np.random.Generator) -> None:
    check(in_place, rng.standard_normal(4), rng.standard_normal(4), rng=rng)


def into_outputs(A: np.ndarray, B: np.ndarray, C: np.ndarray, D: np.ndarray) -> float:
    np.matmul(A, B, out=C)
    C += D
    return float(np.sum(C * C))


def test_outputs_written_by_out_restore_arguments(rng: np.random.Generator) -> None:
    args = (rng.standard_normal((3, 4)), rng.standard_normal((4, 2)))
    check(into_outputs, *args, rng.standard_normal((3, 2)), rng.standard_normal((3, 2)), rng=rng)


def set_items(x: np.ndarray, v: float) -> float:
    z = np.zeros(3)
    z[0] = v
    z[1] = v * v
    x[1] = v * 3.0
    return float(np.sum(z * x))


def test_setitem_on_arrays(rng: np.random.Generator) -> None:
    check(set_items, rng.standard_normal(3), 0.7, rng=rng)


# --------------------------------------------------------------------------------------------
# Containers and objects


def tuple_and_list(t_: tuple[float, np.ndarray], xs: list[float]) -> float:
    a, b = t_
    return a * float(np.sum(b)) + xs[0] * xs[1]


def test_tuple_and_list_arguments(rng: np.random.Generator) -> None:
    _, _, grads = check(tuple_and_list, (1.5, rng.standard_normal(3)), [0.5, -2.0], rng=rng)
    assert isinstance(grads[1], tuple) and isinstance(grads[2], list)


def append_in_loop(x: float, n: int) -> float:
    out = []
    for i in range(n):
        out.append(x * i)
    total = 0.0
    for v in out:
        total = total + v * v
    return total


def test_list_append_in_a_loop(rng: np.random.Generator) -> None:
    check(append_in_loop, 0.9, 4, rng=rng)


@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: float


def predict(p: Params, x: np.ndarray) -> float:
    return float(np.sum(np.tanh(p.w * x + p.b)))


def test_dataclass_argument(rng: np.random.Generator) -> None:
    p, x = Params(rng.standard_normal(3), 0.3), rng.standard_normal(3)
    rule = build_rrule(predict, p, x)
    _, (_, dp, dx) = value_and_gradient(rule, predict, p, x)
    g = 1 - np.tanh(p.w * x + p.b) ** 2
    assert isinstance(dp, MutableTangent)
    assert np.allclose(dp.fields["w"], g * x) and np.isclose(dp.fields["b"], np.sum(g))
    assert np.allclose(dx, g * p.w)


def complex_loss(z: complex, w: np.ndarray) -> float:
    u = z * w + np.conj(w) * 2j
    return float(np.sum(np.real(u * np.conj(u))))


def test_complex_inputs(rng: np.random.Generator) -> None:
    w = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    _, _, grads = check(complex_loss, 0.5 - 0.25j, w, rng=rng)
    assert isinstance(grads[1], complex) and grads[2].dtype == np.complex128


# --------------------------------------------------------------------------------------------
# Pullbacks of non-scalar results


def elementwise(x: np.ndarray, s: float) -> np.ndarray:
    return np.sin(x) * s


def test_value_and_pullback_of_an_array(rng: np.random.Generator) -> None:
    x, ybar = rng.standard_normal(4), rng.standard_normal(4)
    rule = build_rrule(elementwise, x, 2.0)
    y, (_, dx, ds) = value_and_pullback(rule, ybar, elementwise, x, 2.0)
    assert np.allclose(y, np.sin(x) * 2.0)
    assert np.allclose(dx, ybar * np.cos(x) * 2.0) and np.isclose(ds, ybar @ np.sin(x))


def pair(x: float, y: float) -> tuple[float, float]:
    return x * y, x + y


def test_value_and_pullback_of_a_tuple() -> None:
    rule = build_rrule(pair, 2.0, 3.0)
    y, (_, dx, dy) = value_and_pullback(rule, (1.0, 10.0), pair, 2.0, 3.0)
    assert y == (6.0, 5.0) and (dx, dy) == (3.0 + 10.0, 2.0 + 10.0)


# --------------------------------------------------------------------------------------------
# Functions made while the program runs


def generator_expression(xs: list[float], y: float) -> float:
    return sum(x * y for x in xs)


def lambdas(x: float, y: float) -> float:
    f = lambda t: t * y  # noqa: E731
    return f(x) + f(y) * x


def nested_function_in_a_loop(x: float, n: int) -> float:
    acc = 1.0
    for i in range(n):

        def step(a: float) -> float:
            return a * x + i

        acc = step(acc)
    return acc


@pytest.mark.parametrize(
    "f, args",
    [
        (generator_expression, ([1.0, 2.0, 3.0], 0.5)),
        (lambdas, (1.0, 2.0)),
        (nested_function_in_a_loop, (1.1, 4)),
    ],
)
def test_functions_made_at_run_time(
    f: t.Callable[..., float], args: tuple[t.Any, ...], rng: np.random.Generator
) -> None:
    rule = check(f, *args, rng=rng)[0]
    check(f, *args, rule=rule, rng=rng)
    # Functions made anew on every call share one rule per code object.
    dynamic = [c for c in rule.children if type(c).__name__ == "DynamicRule"]
    assert all(len(c._rules) <= 1 for c in dynamic)  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------
# Aliased arguments


def product(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sum(a * b * b))


def test_an_array_passed_twice_has_one_gradient(rng: np.random.Generator) -> None:
    x = rng.standard_normal(4)
    _, _, (_, da, db) = check(product, x, x, rng=rng)
    assert da is db and np.allclose(da, 3 * x * x)


def shift_in_place(a: np.ndarray, b: np.ndarray) -> float:
    a *= 2.0  # writes through a view of b's memory
    return float(np.sum(b * b))


def test_views_of_one_array_share_fdata(rng: np.random.Generator) -> None:
    base = rng.standard_normal(5)
    view = base[1:3]
    rule = build_rrule(shift_in_place, view, base)
    before = base.copy()
    _, (_, dview, dbase) = value_and_gradient(rule, shift_in_place, view, base)
    assert np.array_equal(base, before)
    expected = 2 * base
    expected[1:3] *= 4.0  # sum(b'^2) where b'[1:3] = 2 b[1:3]: 2 * (2 b) * 2
    assert np.allclose(dbase, expected)
    assert np.shares_memory(dview, dbase)


def prints(x: np.ndarray) -> float:
    y = np.sin(x)
    print("y is", y, f"{float(y[0]):.3f}")
    return float(np.sum(y))


def test_printing_needs_no_rule(rng: np.random.Generator, capsys: pytest.CaptureFixture[str]) -> None:
    check(prints, rng.standard_normal(3), rng=rng)
    assert "y is" in capsys.readouterr().out


def spread(scale: float, *xs: float, **named: float) -> float:
    total = 0.0
    for x in xs:
        total = total + x * scale
    for k in named:
        total = total + named[k] * named[k]
    return total


def calls_with_star_arguments(a: float, b: float, c: float) -> float:
    return spread(a, b, c) + spread(c, b, u=a, v=b) + spread(b)


def test_calls_through_star_args_and_star_star_kwargs(rng: np.random.Generator) -> None:
    check(calls_with_star_arguments, 0.5, -1.5, 2.0, rng=rng)


def calls_with_unpacking(a: float, b: float) -> float:
    xs = [a, b]
    opts = {"u": b}
    return spread(*xs) + spread(a, *(b, a), **opts) + spread(b, **{"v": a * b})


def test_calls_with_unpacked_arguments(rng: np.random.Generator) -> None:
    check(calls_with_unpacking, 0.5, -1.5, rng=rng)
