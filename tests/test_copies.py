"""Copies of a rule are independent rules; a pickled rule is built again on load (docs/ad.md,
"Copies and pickling")."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.api import LibraryRule, build_rrule, value_and_gradient, value_and_pullback
from gibbous.ir import types as T
from gibbous.rules.registry import Context, DefaultContext, primitive
from gibbous.tangents.model import NO_TANGENT, CoDual, zero_fdatas


def loss(W: np.ndarray, x: np.ndarray) -> float:
    return float(np.sum(np.tanh(W @ x) ** 2))


def matmul_into(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> float:
    np.matmul(A, B, out=C)
    return float(np.sum(C * C))


@dataclasses.dataclass
class Point:
    x: float
    y: float


def norm2(p: Point, scale: float) -> float:
    return scale * (p.x * p.x + p.y * p.y)


def twice(x: float) -> float:
    return 2.0 * x


CTX = Context("tests.test_copies", parent=DefaultContext)


@primitive(twice, T.FLOAT, ctx=CTX)
def twice_rrule(f: CoDual[t.Any, t.Any], x: CoDual[t.Any, t.Any]) -> t.Any:
    # Deliberately wrong (3 instead of 2): shows that the rule of CTX, not a derived one, ran.
    return CoDual(2.0 * x.primal, NO_TANGENT), lambda dy: (NO_TANGENT, 3.0 * dy)


def uses_twice(x: float) -> float:
    return twice(x) + x


def closure_of(A: np.ndarray) -> t.Callable[[np.ndarray], float]:
    def inner(x: np.ndarray) -> float:
        return float(np.sum(A * x * x))

    return inner


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(11)


def _forward(rule: t.Any, f: t.Any, *args: t.Any) -> tuple[t.Any, tuple[t.Any, ...]]:
    fdatas = zero_fdatas(f, *args)
    _, pullback = rule(CoDual(f, fdatas[0]), *map(CoDual, args, fdatas[1:]))
    return pullback, fdatas


def _gradient(f: t.Any, *args: t.Any) -> tuple[t.Any, ...]:
    copies = tuple(np.copy(a) for a in args)
    return value_and_gradient(build_rrule(f, *copies), f, *copies)[1]


@pytest.mark.parametrize("make", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
@pytest.mark.parametrize("f", [loss, matmul_into], ids=["loss", "matmul_into"])
def test_a_copy_is_independent_when_calls_interleave(
    make: t.Callable[[t.Any], t.Any], f: t.Any, rng: np.random.Generator
) -> None:
    # Regression: copy.copy shared the tape, so interleaved calls swapped their gradients.
    shapes = {loss: [(3, 4), (4,)], matmul_into: [(3, 4), (4, 2), (3, 2)]}[f]
    first = tuple(rng.standard_normal(s) for s in shapes)
    second = tuple(rng.standard_normal(s) for s in shapes)
    want = [_gradient(f, *first), _gradient(f, *second)]
    rule = build_rrule(f, *first)
    other = make(rule)
    assert type(other) is type(rule) and other.tape is not rule.tape
    pb1, fd1 = _forward(rule, f, *first)
    pb2, fd2 = _forward(other, f, *second)
    pb1(1.0)  # the original's call first: its own tape, whatever the copy did since
    pb2(1.0)
    for fd, expected in [(fd1, want[0]), (fd2, want[1])]:
        assert all(np.allclose(a, b) for a, b in zip(fd[1:], expected[1:]))


def test_a_copy_of_a_library_rule_has_its_own_state(rng: np.random.Generator) -> None:
    A, B, C = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), np.zeros((3, 2))
    rule = build_rrule(np.matmul, A, B, out=C)
    for other in (copy.copy(rule), copy.deepcopy(rule)):
        assert isinstance(other, LibraryRule) and other.rule is not rule.rule
        ybar = rng.standard_normal((3, 2))
        got = value_and_pullback(other, ybar, np.matmul, A, B, out=C)[1]
        assert np.allclose(got[1], ybar @ B.T) and np.allclose(got[2], A.T @ ybar)


def test_a_copy_is_not_rebuilt(rng: np.random.Generator) -> None:
    rule = build_rrule(loss, rng.standard_normal((2, 2)), rng.standard_normal(2))
    assert copy.copy(rule).program is rule.program
    assert copy.deepcopy(rule).program is rule.program


def _round_trip(rule: t.Any, dumps: t.Callable[[t.Any], bytes] = pickle.dumps) -> t.Any:
    again = pickle.loads(dumps(rule))
    assert type(again) is type(rule)
    return again


def test_pickled_derived_rules_give_the_original_gradients(rng: np.random.Generator) -> None:
    W, x = rng.standard_normal((3, 4)), rng.standard_normal(4)
    rule = build_rrule(loss, W, x)
    again = _round_trip(rule)
    assert again.program is not rule.program  # built again
    assert again.fn is loss and again.arg_types == rule.arg_types
    assert all(
        np.array_equal(a, b)
        for a, b in zip(
            value_and_gradient(rule, loss, W, x)[1][1:],
            value_and_gradient(again, loss, W, x)[1][1:],
        )
    )
    A, B, C = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), np.zeros((3, 2))
    stateful = _round_trip(build_rrule(matmul_into, A, B, C))
    got = value_and_gradient(stateful, matmul_into, A, B, C)[1]
    assert all(np.allclose(a, b) for a, b in zip(got[1:3], _gradient(matmul_into, A, B, C)[1:3]))


def test_pickled_rules_keep_object_argument_types() -> None:
    rule = _round_trip(build_rrule(norm2, Point(1.0, 2.0), 3.0))
    _, (_, dp, ds) = value_and_gradient(rule, norm2, Point(3.0, 4.0), 0.5)
    assert (dp.fields["x"], dp.fields["y"], ds) == (3.0, 4.0, 25.0)


def test_pickled_library_rules(rng: np.random.Generator) -> None:
    A, B, C = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), np.zeros((3, 2))
    rule = _round_trip(build_rrule(np.matmul, A, B, out=C))
    assert rule.fn is np.matmul and rule.kwnames == ("out",)
    ybar = rng.standard_normal((3, 2))
    got = value_and_pullback(rule, ybar, np.matmul, A, B, out=C)[1]
    assert np.allclose(got[1], ybar @ B.T) and np.allclose(got[2], A.T @ ybar)
    sine = _round_trip(build_rrule(np.sin, 0.5))
    assert value_and_gradient(sine, np.sin, 0.5)[1][1] == pytest.approx(np.cos(0.5))


def test_pickled_rules_keep_their_build_options() -> None:
    rule = build_rrule(uses_twice, 1.0, ctx=CTX, debug=True, passes=("dce",))
    again = _round_trip(rule)
    assert again.options == rule.options
    assert again.options.ctx is CTX and again.options.debug and again.options.passes == ("dce",)
    assert value_and_gradient(again, uses_twice, 1.0)[1][1] == 4.0  # CTX's rule, not 3.0


def test_a_context_without_a_module_level_name_is_refused() -> None:
    local = Context("local", parent=DefaultContext)
    rule = build_rrule(loss, np.ones((2, 2)), np.ones(2), ctx=local)
    with pytest.raises(pickle.PicklingError, match="module-level name"):
        pickle.dumps(rule)


@pytest.mark.parametrize(
    "f, name",
    [
        (closure_of(np.arange(3.0)), "closure_of.<locals>.inner"),
        (lambda x: float(np.sum(x * x)), "<lambda>"),
    ],
    ids=["closure", "lambda"],
)
def test_functions_without_a_module_level_name_need_cloudpickle(f: t.Any, name: str) -> None:
    x = np.array([1.0, 2.0, 3.0])
    rule = build_rrule(f, x)
    with pytest.raises(pickle.PicklingError, match="cloudpickle") as info:
        pickle.dumps(rule)
    assert name in str(info.value) and "module level" in str(info.value)
    cloudpickle = pytest.importorskip("cloudpickle")
    again = _round_trip(rule, cloudpickle.dumps)
    g = again.fn  # the function, stored by value with what it closes over
    assert g is not f
    want = value_and_gradient(rule, f, x)
    got = value_and_gradient(again, g, x)
    assert got[0] == want[0] and np.array_equal(got[1][1], want[1][1])


def test_a_rule_from_grad_pickles(rng: np.random.Generator) -> None:
    g = gibbous.grad(loss, argnums=1)
    W, x = rng.standard_normal((2, 3)), rng.standard_normal(3)
    dx = g(W, x)
    (rule,) = g.rules.values()  # type: ignore[attr-defined]
    again = _round_trip(rule)
    assert np.array_equal(value_and_gradient(again, loss, W, x)[1][2], dx)
