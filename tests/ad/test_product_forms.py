"""Array forms of ``A @ B``, ``A @ v`` and ``v @ A`` (``matmul_f64``, ``matvec_f64``,
``vecmat_f64``, also of ``np.dot`` and ``ndarray.dot``) and the inline forms of ``np.max`` /
``np.min`` of a whole float64 array: written into the forward and reverse programs, checked
against the same registrations called (bit for bit) and against finite differences."""

from __future__ import annotations

import operator
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.inspect import rule_table
from gibbous.ir import types as T
from gibbous.library.common import Scratch
from gibbous.library.linalg.products import dot_rrule, matmul_rrule
from gibbous.rules.registry import (
    Context,
    DefaultContext,
    lookup_rule,
    primitive,
    stateful_primitive,
)

Array = np.ndarray[t.Any, t.Any]

rng = np.random.default_rng(11)
MATRIX, VECTOR, WHOLE = T.Array("float64", 2), T.Array("float64", 1), T.Array("float64", None)
DATA = rng.standard_normal((5, 3))  # a global: an inactive operand
STEPS = rng.standard_normal((6, 3))


def register_without_form(ctx: Context, fn: object, registration: t.Any) -> None:
    """``registration`` of ``fn`` again in ``ctx``, the same rule without its inline form."""
    args = registration.pattern.args
    if registration.kind == "stateful":
        assert registration.state_type is not None
        stateful_primitive(fn, *args, state_type=registration.state_type, ctx=ctx)(
            registration.rule
        )
    else:
        primitive(fn, *args, ctx=ctx)(registration.rule)


def called(*sites: tuple[object, t.Sequence[T.Type]]) -> Context:
    """A context in which each site's variant is registered again without its form."""
    ctx = Context("called", parent=DefaultContext)
    for fn, types in sites:
        registration = lookup_rule(DefaultContext, fn, types)
        assert registration.inline is not None
        register_without_form(ctx, fn, registration)
    return ctx


PRODUCT_FNS = (operator.matmul, np.matmul, np.dot, np.ndarray.dot)
RANKS = ([MATRIX, MATRIX], [MATRIX, VECTOR], [VECTOR, MATRIX])
PRODUCTS = called(*((fn, ranks) for fn in PRODUCT_FNS for ranks in RANKS))
EXTREMES = called(*((fn, [WHOLE]) for fn in (np.max, np.amax, np.ndarray.max, np.min,
                                             np.amin, np.ndarray.min)))  # fmt: skip


def both(f: t.Callable[..., float], args: list[t.Any], ctx: Context) -> tuple[t.Any, t.Any]:
    """The gradients through the forms and through the rules called, warm (pool) and equal."""
    form_rule = gibbous.build_rrule(f, *args)
    called_rule = gibbous.build_rrule(f, *args, ctx=ctx)
    for _ in range(2):
        y1, g1 = gibbous.value_and_gradient(form_rule, f, *args)
        y2, g2 = gibbous.value_and_gradient(called_rule, f, *args)
    assert y1 == y2
    # A loop's outer products into a parameter's fdata are added as one matrix product at the
    # end (gibbous.rules.outer_sums): the same sum in another order, equal to rounding.
    deferred = "outer_sums" in form_rule.program.description.source
    for a, b in zip(g1[1:], g2[1:]):
        if isinstance(a, np.ndarray) and deferred:
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
        elif isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)  # the same products, the same bits
    return g1, g2


def central(f: t.Callable[..., float], args: list[t.Any], k: int, h: float = 1e-6) -> Array:
    x = args[k]
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        out[i] = (f(*args[:k], up, *args[k + 1 :]) - f(*args[:k], down, *args[k + 1 :])) / (2 * h)
    return out


def check(f: t.Callable[..., float], args: list[t.Any], ctx: Context, fd: bool = True) -> None:
    g, _ = both(f, args, ctx)
    if fd:
        for k, arg in enumerate(args):
            if isinstance(arg, np.ndarray):
                np.testing.assert_allclose(g[1 + k], central(f, args, k), rtol=1e-6, atol=1e-7)


def kinds(f: t.Callable[..., float], args: list[t.Any], callee: str) -> set[str]:
    return {r.kind for r in rule_table(f, *args) if r.callee == callee}


# --------------------------------------------------------------------------------------------
# matmul


def mat_mat(a: Array, b: Array) -> float:
    return float(np.sum(np.sin(a @ b)))


def mat_vec(a: Array, v: Array) -> float:
    return float(np.sum(np.sin(a @ v)))


def np_matmul(a: Array, b: Array) -> float:
    return float(np.sum(np.matmul(a, b) ** 2))


def data_left(w: Array, v: Array) -> float:
    return float(np.sum(np.tanh(DATA @ w) @ v))  # DATA inactive; then matrix @ vector


def same_both_sides(a: Array, v: Array) -> float:
    return float(np.sum((a @ a) @ v))


def used_twice(a: Array, b: Array) -> float:
    z = a @ b
    return float(np.sum(z * z) + np.sum(np.exp(z)))


def rnn(w: Array, u: Array) -> float:
    h = np.zeros(3)
    for s in range(STEPS.shape[0]):
        h = np.tanh(w @ h + u @ STEPS[s] + 0.1)
    return float(np.sum(h**2))


def gram(a: Array) -> float:
    return float(np.sum(np.sin(a @ a.T)))  # one array on both sides, one of them a view


@pytest.mark.parametrize(
    "f, shapes",
    [
        (mat_mat, [(4, 3), (3, 2)]),
        (mat_vec, [(4, 3), (3,)]),
        (np_matmul, [(2, 3), (3, 4)]),
        (data_left, [(3, 4), (4,)]),
        (same_both_sides, [(3, 3), (3,)]),
        (used_twice, [(2, 3), (3, 3)]),
        (rnn, [(3, 3), (3, 3)]),
        (gram, [(3, 4)]),
    ],
    ids=lambda p: getattr(p, "__name__", ""),
)
def test_matmul_forms_agree_with_the_called_rules(
    f: t.Callable[..., float], shapes: list[tuple[int, ...]]
) -> None:
    args = [rng.uniform(-1, 1, s) for s in shapes]
    name = "numpy.matmul" if f is np_matmul else "operator.matmul"
    assert kinds(f, args, name) == {"inline"}
    check(f, args, PRODUCTS)


def test_large_products_go_through_the_pool() -> None:
    """Products of at least ``pool.LARGE_BYTES`` are added through a borrowed buffer."""
    a, b = rng.standard_normal((130, 70)), rng.standard_normal((70, 130))
    check(mat_mat, [a, b], PRODUCTS, fd=False)
    check(mat_mat, [b, a], PRODUCTS, fd=False)
    check(mat_vec, [rng.standard_normal((200, 100)), rng.standard_normal(100)], PRODUCTS, fd=False)


def test_an_inactive_operand_gets_nothing() -> None:
    """Only the active operand takes a gradient; data costs no product."""
    w = rng.uniform(-1, 1, (3, 2))

    def f(w: Array) -> float:
        return float(np.sum(np.cos(DATA @ w)))

    assert kinds(f, [w], "operator.matmul") == {"inline"}
    check(f, [w], PRODUCTS)


def test_a_mismatched_product_raises_as_the_primal() -> None:
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((4, 2))
    rule = gibbous.build_rrule(mat_mat, a, b)
    with pytest.raises(ValueError, match="matmul"):
        gibbous.value_and_gradient(rule, mat_mat, a, b)


# --------------------------------------------------------------------------------------------
# v @ A, and np.dot / ndarray.dot of the same ranks

ROW = rng.standard_normal(5)  # a global: an inactive vector


def vec_mat(v: Array, a: Array) -> float:
    return float(np.sum(np.sin(v @ a)))


def by_value(v: Array, a: Array) -> float:
    return float(np.sum(np.tanh(v @ a) * 2))  # the product's cotangent passed as a value


def np_vecmat(v: Array, a: Array) -> float:
    return float(np.sum(np.matmul(v, a) ** 2))


def also_elsewhere(x: Array, a: Array) -> float:
    return float(np.sum(np.sin(x @ a)) + np.sum(x * x))


def row_of_itself(v: Array) -> float:
    return float(np.sum(np.sin(v[:3] @ v.reshape(3, 3))))  # two views of one array


def data_row(w: Array) -> float:
    return float(np.sum(np.cos(ROW @ w)))  # ROW inactive


def data_matrix(v: Array) -> float:
    return float(np.sum(np.cos(v @ DATA)))  # DATA inactive


def chained(v: Array, a: Array, b: Array) -> float:
    return float(np.sum(np.sin((v @ a) @ b)))


def row_rnn(w: Array, u: Array) -> float:
    h = np.zeros(3)
    for s in range(STEPS.shape[0]):
        h = np.tanh(h @ w + STEPS[s] @ u + 0.1)
    return float(np.sum(h**2))


def dot_mm(a: Array, b: Array) -> float:
    return float(np.sum(np.sin(np.dot(a, b))))


def dot_mv(a: Array, v: Array) -> float:
    return float(np.sum(np.sin(np.dot(a, v))))


def dot_vm(v: Array, a: Array) -> float:
    return float(np.sum(np.tanh(np.dot(v, a)) * 2))


def method_mm(a: Array, b: Array) -> float:
    return float(np.sum(np.sin(a.dot(b))))


def method_mv(a: Array, v: Array) -> float:
    return float(np.sum(np.sin(a.dot(v))))


def method_vm(v: Array, a: Array) -> float:
    return float(np.sum(np.sin(v.dot(a))))


def dot_loop(w: Array, v: Array) -> float:
    for _ in range(3):
        v = np.tanh(np.dot(v, w)) + v.dot(w)
    return float(np.sum(v))


VECTOR_CASES = [
    (vec_mat, [(3,), (3, 4)], "operator.matmul"),
    (by_value, [(3,), (3, 4)], "operator.matmul"),
    (np_vecmat, [(4,), (4, 2)], "numpy.matmul"),
    (also_elsewhere, [(3,), (3, 3)], "operator.matmul"),
    (row_of_itself, [(9,)], "operator.matmul"),
    (data_row, [(5, 2)], "operator.matmul"),
    (data_matrix, [(5,)], "operator.matmul"),
    (chained, [(2,), (2, 3), (3, 4)], "operator.matmul"),
    (row_rnn, [(3, 3), (3, 3)], "operator.matmul"),
    (dot_mm, [(4, 3), (3, 2)], "numpy.dot"),
    (dot_mv, [(4, 3), (3,)], "numpy.dot"),
    (dot_vm, [(4,), (4, 3)], "numpy.dot"),
    (method_mm, [(2, 3), (3, 4)], "numpy.ndarray.dot"),
    (method_mv, [(2, 3), (3,)], "numpy.ndarray.dot"),
    (method_vm, [(2,), (2, 3)], "numpy.ndarray.dot"),
    (dot_loop, [(3, 3), (3,)], "numpy.dot"),
]


def general() -> Context:
    """A context in which every site of the variants has the general rule again (``matmul``'s
    or ``dot``'s): the variants' gradients are to be the general rules', bit for bit."""
    ctx = Context("general", parent=DefaultContext)
    for fn in PRODUCT_FNS:
        rule = matmul_rrule if fn in (operator.matmul, np.matmul) else dot_rrule
        for ranks in RANKS:
            stateful_primitive(fn, *ranks, state_type=Scratch, ctx=ctx)(rule)
    return ctx


GENERAL = general()


def _name(p: object) -> str:
    return getattr(p, "__name__", "")


@pytest.mark.parametrize("f, shapes, callee", VECTOR_CASES, ids=_name)
def test_vector_and_dot_forms_agree_with_the_called_rules(
    f: t.Callable[..., float], shapes: list[tuple[int, ...]], callee: str
) -> None:
    args = [rng.uniform(-1, 1, s) for s in shapes]
    assert kinds(f, args, callee) == {"inline"}
    check(f, args, PRODUCTS)


@pytest.mark.parametrize("f, shapes, callee", VECTOR_CASES, ids=_name)
def test_the_variants_agree_with_the_general_rules(
    f: t.Callable[..., float], shapes: list[tuple[int, ...]], callee: str
) -> None:
    args = [rng.uniform(-1, 1, s) for s in shapes]
    both(f, args, GENERAL)


def test_large_vector_products_go_through_the_pool() -> None:
    v, a = rng.standard_normal(150), rng.standard_normal((150, 120))
    check(vec_mat, [v, a], PRODUCTS, fd=False)
    check(dot_vm, [v, a], PRODUCTS, fd=False)
    check(vec_mat, [v, a], GENERAL, fd=False)


def test_dot_into_out_keeps_its_rule() -> None:
    """``np.dot(A, B, out=C)`` is not the variant's call: the stateful rule of ``out=``."""

    def f(a: Array, b: Array) -> float:
        c = np.zeros((a.shape[0], b.shape[1]))
        np.dot(a, b, out=c)
        return float(np.sum(np.sin(c)))

    args = [rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (4, 2))]
    rows = [r for r in rule_table(f, *args) if r.callee == "numpy.dot"]
    assert [(r.kind, r.state_type) for r in rows] == [("stateful", "MatmulState")]
    _, g = gibbous.value_and_gradient(gibbous.build_rrule(f, *args), f, *args)
    for k in range(2):
        np.testing.assert_allclose(g[1 + k], central(f, args, k), rtol=1e-6, atol=1e-7)


def test_dot_of_other_ranks_keeps_the_general_rule() -> None:
    def f(v: Array, w: Array, t3: Array) -> float:
        return float(np.dot(v, w) + np.sum(np.dot(t3, w)))

    args = [rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3), rng.uniform(-1, 1, (2, 2, 3))]
    assert kinds(f, args, "numpy.dot") == {"stateful"}
    _, g = gibbous.value_and_gradient(gibbous.build_rrule(f, *args), f, *args)
    for k in range(3):
        np.testing.assert_allclose(g[1 + k], central(f, args, k), rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------------------------------
# max / min


def lse(x: Array) -> float:
    m = np.max(x)
    return float(m + np.log(np.sum(np.exp(x - m))))


def methods(x: Array) -> float:
    return float(x.max() * 2.0 - x.min() + np.amax(x) * np.amin(x))


def weighted(x: Array) -> float:
    return float(np.max(x * x) + np.min(np.sin(x)))


TIES = {
    "none": np.array([0.3, -1.2, 2.5, 0.7, -0.4]),
    "max": np.array([2.5, -1.2, 2.5, 0.7, 2.5]),
    "min": np.array([-1.2, 0.4, 2.0, -1.2, 0.7]),
    "all": np.full(4, 0.5),
    "matrix": np.array([[1.0, 3.0, -2.0], [3.0, -2.0, 0.5]]),
    "one": np.array([[0.25]]),
}


@pytest.mark.parametrize("f", [lse, methods, weighted], ids=lambda f: f.__name__)
@pytest.mark.parametrize("case", list(TIES))
def test_extreme_forms_agree_with_the_called_rules(f: t.Callable[..., float], case: str) -> None:
    x = TIES[case].copy()
    names = {"numpy.max", "numpy.min", "numpy.amax", "numpy.amin", "numpy.ndarray.max",
             "numpy.ndarray.min"}  # fmt: skip
    assert {r.kind for r in rule_table(f, x) if r.callee in names} == {"inline"}
    g, _ = both(f, [x], EXTREMES)
    if case == "none":  # (at a tie, a central difference sees one side only for some)
        np.testing.assert_allclose(g[1], central(f, [x], 0), rtol=1e-6, atol=1e-7)


def test_ties_split_the_cotangent() -> None:
    x = TIES["max"].copy()

    def f(x: Array) -> float:
        return float(np.max(x) * 3.0)

    _, g = gibbous.value_and_gradient(gibbous.build_rrule(f, x), f, x)
    np.testing.assert_array_equal(g[1], [1.0, 0.0, 1.0, 0.0, 1.0])
    two = np.array([1.0, 4.0, 4.0])
    _, g = gibbous.value_and_gradient(gibbous.build_rrule(f, two), f, two)
    np.testing.assert_array_equal(g[1], [0.0, 1.5, 1.5])  # the mean of the one-sided slopes


@pytest.mark.parametrize("fn", [np.max, np.min])
def test_an_empty_array_raises_as_the_primal(fn: t.Any) -> None:
    def f(x: Array) -> float:
        return float(fn(x))

    x = np.zeros(0)
    with pytest.raises(ValueError) as primal:
        f(x)
    rule = gibbous.build_rrule(f, np.ones(3))
    with pytest.raises(ValueError) as derived:
        gibbous.value_and_gradient(rule, f, x)
    assert str(derived.value) == str(primal.value)


def test_extremes_in_a_loop() -> None:
    """One site run many times: each iteration's record holds its own array and result."""

    def f(x: Array) -> float:
        total = 0.0
        y = x
        for _ in range(4):
            y = np.sin(y) + 0.5 * y
            total += np.max(y) - 0.5 * np.min(y)
        return total

    x = rng.uniform(-2, 2, 7)
    g, _ = both(f, [x], EXTREMES)
    np.testing.assert_allclose(g[1], central(f, [x], 0), rtol=1e-6, atol=1e-7)
