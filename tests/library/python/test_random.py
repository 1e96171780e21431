"""Python's random module (gibbous.library.python.random): draws differentiated along the path,
``choice`` and ``shuffle`` moving tangents with the items, against central differences.  Each
program seeds its generator first, so every run of it (the finite differences') draws the same
numbers."""

from __future__ import annotations

import operator
import random
import typing as t

import numpy as np
import pytest

from gibbous.audit import covered_by
from gibbous.audit.cases.elementwise.scalars import _python_random
from gibbous.audit.runner import run_case
from gibbous.ir import types as T
from gibbous.rules.registry import DefaultContext, build_primitive_rrule
from gibbous.tangents.model import NoTangent, zero_coduals
from tests.library.harness import check, gradient

NT = NoTangent()
DRAWS = [
    ("gauss", (0.5, 2.0)),
    ("normalvariate", (-0.5, 1.5)),
    ("lognormvariate", (0.25, 0.5)),
    ("uniform", (-1.0, 2.5)),
    ("expovariate", (1.5,)),
]


def seeded(bound: bool, name: str, extra: t.Sequence[t.Any] = ()) -> t.Any:
    """The program ``draw(*inputs, *extra)`` of a generator seeded with 7 in the program."""

    def program(tape: t.Any, *xs: t.Any) -> t.Any:
        if bound:
            tape.call(random.seed, tape.const(7))
            return tape.call(getattr(random, name), *xs, *map(tape.const, extra))
        fn = getattr(random.Random, name)
        return tape.call(fn, tape.const(random.Random(7)), *xs, *map(tape.const, extra))

    return program


@pytest.mark.parametrize("bound", [True, False], ids=["random", "Random"])
@pytest.mark.parametrize("name, args", DRAWS, ids=[d[0] for d in DRAWS])
def test_draws_along_the_path(
    bound: bool, name: str, args: tuple[float, ...], rng: np.random.Generator
) -> None:
    check(seeded(bound, name), *args, rng=rng)


def test_the_reparameterised_gradients() -> None:
    z = random.Random(7).gauss(0.0, 1.0)
    assert gradient(seeded(False, "gauss"), 0.5, 2.0) == pytest.approx([1.0, z])
    u = random.Random(7).random()
    assert gradient(seeded(False, "uniform"), -1.0, 3.0) == pytest.approx([1.0 - u, u])
    y = random.Random(7).expovariate(2.0)
    assert gradient(seeded(False, "expovariate"), 2.0) == pytest.approx([-y / 2.0])


@pytest.mark.parametrize("name", ["random", "randint", "randrange", "getrandbits"])
def test_draws_without_a_derivative(name: str) -> None:
    args = {"randint": (0, 5), "randrange": (3,), "getrandbits": (8,)}.get(name, ())
    assert all(g is NT for g in gradient(seeded(False, name), *args))


@pytest.mark.parametrize("bound", [True, False], ids=["random", "Random"])
def test_choice_sends_the_cotangent_to_the_item_drawn(
    bound: bool, rng: np.random.Generator
) -> None:
    def program(tape: t.Any, items: t.Any, x: t.Any) -> t.Any:
        picked = seeded(bound, "choice")(tape, items)
        row = seeded(bound, "choice")(tape, x)
        return tape.call(operator.mul, picked, tape.call(np.sum, row))

    floats = [0.5, 1.5, 2.5, 3.5, 4.5]
    check(program, floats, rng.standard_normal((4, 3)), rng=rng)
    check(program, tuple(floats), rng.standard_normal(6), rng=rng)
    i = random.Random(7).choice(range(5))
    tangent, _ = gradient(program, floats, np.ones((2, 3)))
    assert tangent == [3.0 if k == i else 0.0 for k in range(5)]


@pytest.mark.parametrize("bound", [True, False], ids=["random", "Random"])
def test_shuffle_moves_the_tangents_and_is_undone(
    bound: bool, rng: np.random.Generator
) -> None:
    def program(tape: t.Any, items: t.Any) -> t.Any:
        seeded(bound, "shuffle")(tape, items)
        first = tape.call(np.sum, tape.call(operator.getitem, items, tape.const(0)))
        last = tape.call(operator.getitem, items, tape.const(-1))
        weighted = tape.call(np.sum, tape.call(operator.mul, last, tape.const(3.0)))
        return tape.call(operator.add, first, weighted)

    values = [0.5, np.array([1.5, -0.5]), 2.5, -1.0, np.array([0.25, 4.0])]
    check(program, values, rng=rng)  # which also checks that the list is restored
    order = list(range(5))
    random.Random(7).shuffle(order)
    (tangent,) = gradient(program, values)
    weights = {order[0]: 1.0, order[-1]: 3.0}
    for k, v in enumerate(tangent):
        np.testing.assert_array_equal(v, weights.get(k, 0.0) * np.ones(np.shape(values[k])))


def test_a_shuffle_draws_what_the_primal_draws() -> None:
    types = [T.Object(random.Random), T.typeof([1.0])]
    rule = build_primitive_rrule(DefaultContext, random.Random.shuffle, types)
    ours, reference = random.Random(3), random.Random(3)
    items = [float(k) for k in range(10)]
    expected = list(items)
    reference.shuffle(expected)
    f, r, x = zero_coduals(random.Random.shuffle, ours, items)
    _, pullback = rule(f, r, x)
    assert items == expected and ours.getstate() == reference.getstate()
    pullback(None)
    assert items == [float(k) for k in range(10)]  # put back; the generator is not rewound
    assert ours.getstate() == reference.getstate()


@pytest.mark.parametrize("case", _python_random(), ids=lambda c: c.id)
def test_cases_with_allocations(case: t.Any) -> None:
    result = run_case(case, "", covered_by(case))  # as the audit runs it: with its deviation
    assert result.passed, result.message
