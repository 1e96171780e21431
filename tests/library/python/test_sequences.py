"""Reductions and norms of lists and tuples (gibbous.library.python.sequences), against central
differences: the gradient reaches the floats of a list through its tangent, those of a tuple
through its rdata, and arrays in either through their fdata."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

from gibbous.audit.cases.reductions import SEQUENCE_CASES
from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.rules.registry import DefaultContext, build_primitive_rrule
from gibbous.tangents.model import zero_coduals
from gibbous.library.python.sequences import FUNCTIONS, layout
from tests.library.harness import call, check, gradient


def name(fn: t.Any) -> str:
    return getattr(fn, "__qualname__", str(fn))


def distinct(rng: np.random.Generator, *shape: int) -> np.ndarray:
    # values in [0.5, 1.5], far enough apart that max and min have no ties
    n = int(np.prod(shape))
    return (0.5 + (rng.permutation(n) + rng.uniform(0.2, 0.8, n)) / n).reshape(shape)


@pytest.mark.parametrize("fn", FUNCTIONS, ids=name)
def test_lists_tuples_and_nested_lists(fn: t.Any, rng: np.random.Generator) -> None:
    floats = [float(v) for v in distinct(rng, 5)]
    check(call(fn), floats, rng=rng)
    check(call(fn), tuple(floats), rng=rng)
    nested = [[float(v) for v in row] for row in distinct(rng, 3, 4)]
    check(call(fn, axis=1), nested, rng=rng)
    rows = (distinct(rng, 4), distinct(rng, 4), distinct(rng, 4))
    check(call(fn, axis=0), rows, rng=rng)
    check(call(fn, axis=0), list(rows), rng=rng)


@pytest.mark.parametrize("fn", [np.sum, np.mean, np.max, np.var, np.linalg.norm], ids=name)
def test_a_list_made_in_the_program(fn: t.Any, rng: np.random.Generator) -> None:
    """``np.sum([a * a, b])``: the list's tangent takes the cotangents, make_list's pullback
    gives them to the floats."""

    def program(tape: t.Any, a: t.Any, b: t.Any, x: t.Any) -> t.Any:
        items = tape.call(runtime.make_list, tape.call(np.multiply, a, a), b)
        first = tape.call(fn, items)
        rows = tape.call(runtime.make_tuple, x, tape.call(np.multiply, x, b))
        return tape.call(np.add, first, tape.call(np.sum, tape.call(fn, rows, axis=0)))

    check(program, 0.7, 1.3, distinct(rng, 3), rng=rng)


def test_where_the_gradient_goes() -> None:
    tangent, = gradient(call(np.sum), [1.0, 2.0, 3.0])
    assert tangent == [1.0, 1.0, 1.0]  # the list's own tangent, mutated in place
    rdata, = gradient(call(np.mean), (1.0, np.float32(2.0)))
    assert rdata == (0.5, 0.5) and type(rdata[1]) is np.float32  # the tuple's rdata
    x = np.array([1.0, 2.0])
    tangent, = gradient(call(np.max, axis=0), [x, 3.0 * x], seed=np.array([1.0, 10.0]))
    np.testing.assert_array_equal(tangent[1], [1.0, 10.0])  # the fdata of the larger row
    np.testing.assert_array_equal(tangent[0], [0.0, 0.0])
    rdata, = gradient(call(np.linalg.norm), ((3.0, 4.0), (0.0, 0.0)))
    np.testing.assert_allclose(np.array(rdata), [[0.6, 0.8], [0.0, 0.0]])


def test_ints_have_no_derivative() -> None:
    (g,) = gradient(call(np.sum), [1, 2, 3])
    assert all(type(v).__name__ == "NoTangent" for v in g)


def test_options_and_refusals_are_the_array_rules() -> None:
    with pytest.raises(NotImplementedError):
        gradient(call(np.sum, initial=1.0), [1.0, 2.0])
    with pytest.raises(ValueError):  # ragged: NumPy refuses, and so does the rule
        gradient(call(np.sum), [np.ones(2), np.ones(3)])


def test_the_converted_array_is_kept_for_the_same_layout() -> None:
    assert layout([1.0, (2.0, 3)]) == layout([4.0, (5.0, 6)])
    assert layout([1.0, 2.0]) != layout([1.0, 2])  # a float array, an int one
    assert layout([np.ones(2)]) != layout([np.ones(3)])
    assert layout([2**70]) is None and layout([object()]) is None
    rule = build_primitive_rrule(DefaultContext, np.sum, [T.typeof([1.0, 2.0])])
    arrays = []
    for values in ([1.0, 2.0], [3.0, 5.0], [1.0, 2.0, 4.0]):
        f, x = zero_coduals(np.sum, values)
        y, pullback = rule(f, x)
        assert y.primal == sum(values)
        pullback(2.0)
        assert x.fdata == [2.0] * len(values)
        arrays.append(rule.states[0].array)
    assert arrays[0] is arrays[1] and arrays[2] is not arrays[1]  # another length: another


@pytest.mark.parametrize("case", SEQUENCE_CASES, ids=lambda c: c.id)
def test_cases_with_allocations(case: t.Any) -> None:
    case.run(perf="allocs")


def test_average_weights_in_a_list(rng: np.random.Generator) -> None:
    x = distinct(rng, 3, 2)

    def program(tape: t.Any, x: t.Any, u: t.Any, v: t.Any) -> t.Any:
        weights = tape.call(runtime.make_list, u, tape.call(np.multiply, v, v))
        return tape.call(np.average, x, axis=1, weights=weights)

    check(program, x, 0.4, 1.3, rng=rng)

    def by_position(tape: t.Any, x: t.Any, w: t.Any) -> t.Any:
        return tape.call(np.average, x, tape.const(0), w)

    _, wt = gradient(by_position, x, (0.25, 0.5, 0.25))  # a tuple's rdata, sum(w) = 1
    np.testing.assert_allclose(wt, np.sum(x - np.average(x, 0, (0.25, 0.5, 0.25)), axis=1))
