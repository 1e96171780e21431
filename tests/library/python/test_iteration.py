"""Loops as the frontend emits them: iter, next_or_stop, is_stop, zip, enumerate, reversed."""

from __future__ import annotations

import builtins
import operator
import typing as t

import numpy as np
import pytest

from gibbous.ir import runtime
from gibbous.library.python.iteration import IterTangent
from gibbous.tangents.model import NoTangent
from tests.library.harness import Tape, check, gradient


Body = t.Callable[[t.Any, t.Any], t.Any]


def loop(tape: t.Any, iterator: t.Any, body: Body, acc: t.Any) -> t.Any:
    """``for item in iterator: acc = body(acc, item)``, through next_or_stop/is_stop."""
    while True:
        item = tape.call(runtime.next_or_stop, iterator)
        done = tape.call(runtime.is_stop, item)
        if (done.primal if isinstance(tape, Tape) else done):
            return acc
        acc = body(acc, item)


def add_square(tape: t.Any) -> Body:
    return lambda acc, x: tape.call(operator.add, acc, tape.call(operator.mul, x, x))


def test_for_row_in_a_matrix_gives_row_views(rng: np.random.Generator) -> None:
    m = rng.standard_normal((3, 4))

    def program(tape: t.Any, m: t.Any) -> t.Any:
        it = tape.call(builtins.iter, m)
        if isinstance(tape, Tape):
            assert isinstance(it.fdata, IterTangent)
            row = tape.call(runtime.next_or_stop, it)
            assert np.shares_memory(row.fdata, m.fdata) and row.fdata.shape == (4,)
            first: t.Any = row
        else:
            first = runtime.next_or_stop(it)
        return loop(tape, it, lambda s, r: tape.call(operator.add, s, tape.call(np.sin, r)), first)

    check(program, m, rng=rng)


def test_for_x_in_a_vector_list_tuple(rng: np.random.Generator) -> None:
    def program(tape: t.Any, xs: t.Any) -> t.Any:
        it = tape.call(builtins.iter, xs)
        return loop(tape, it, add_square(tape), tape.const(0.0))

    check(program, rng.standard_normal(4), rng=rng)
    check(program, [1.5, -0.5, 2.0], rng=rng)
    check(program, (1.5, -0.5, 2.0), rng=rng)
    check(program, [rng.standard_normal(2), rng.standard_normal(2)], rng=rng)


def test_tuple_rdata_flows_back_through_iter() -> None:
    def program(tape: t.Any, xs: t.Any) -> t.Any:
        it = tape.call(builtins.iter, xs)
        return loop(tape, it, add_square(tape), tape.const(0.0))

    assert gradient(program, (1.5, 2, -0.5)) == [(3.0, NoTangent(), -1.0)]


def test_zip_enumerate_reversed(rng: np.random.Generator) -> None:
    def dot_zip(tape: t.Any, xs: t.Any, ys: t.Any) -> t.Any:
        it = tape.call(builtins.iter, tape.call(builtins.zip, xs, ys))

        def body(acc: t.Any, pair: t.Any) -> t.Any:
            parts = tape.call(runtime.unpack, pair, tape.const(2))
            x = tape.call(operator.getitem, parts, tape.const(0))
            y = tape.call(operator.getitem, parts, tape.const(1))
            return tape.call(operator.add, acc, tape.call(operator.mul, x, y))

        return loop(tape, it, body, tape.const(0.0))

    check(dot_zip, [1.5, -0.5, 2.0], (0.5, 0.25, -1.0), rng=rng)
    check(dot_zip, rng.standard_normal((3, 2)), [1.5, -0.5, 2.0], rng=rng)

    def weighted(tape: t.Any, xs: t.Any) -> t.Any:
        it = tape.call(builtins.iter, tape.call(builtins.enumerate, xs, tape.const(1)))

        def body(acc: t.Any, pair: t.Any) -> t.Any:
            i = tape.call(operator.getitem, pair, tape.const(0))
            x = tape.call(operator.getitem, pair, tape.const(1))
            return tape.call(operator.add, acc, tape.call(operator.mul, i, x))

        return loop(tape, it, body, tape.const(0.0))

    check(weighted, [5.0, 6.0, 7.0], rng=rng)
    check(weighted, rng.standard_normal(3), rng=rng)

    def alternating(tape: t.Any, xs: t.Any) -> t.Any:
        it = tape.call(builtins.reversed, xs)
        return loop(tape, it, lambda acc, x: tape.call(operator.sub, x, acc), tape.const(0.0))

    check(alternating, [1.5, -0.5, 2.0], rng=rng)
    check(alternating, (1.5, -0.5, 2.0), rng=rng)
    check(alternating, rng.standard_normal(3), rng=rng)


def test_dict_items_and_values(rng: np.random.Generator) -> None:
    def program(tape: t.Any, d: t.Any) -> t.Any:
        it = tape.call(builtins.iter, tape.call(dict.items, d))

        def body(acc: t.Any, kv: t.Any) -> t.Any:
            v = tape.call(operator.getitem, kv, tape.const(1))
            return tape.call(operator.add, acc, tape.call(operator.mul, v, v))

        acc = loop(tape, it, body, tape.const(0.0))
        it2 = tape.call(builtins.iter, tape.call(dict.values, d))
        return loop(tape, it2, lambda a, v: tape.call(operator.mul, a, v), acc)

    check(program, {"a": 1.5, "b": -0.5}, rng=rng)


def test_range_and_nested_loops(rng: np.random.Generator) -> None:
    def program(tape: t.Any, m: t.Any) -> t.Any:
        rows = tape.call(builtins.iter, m)

        def outer(acc: t.Any, row: t.Any) -> t.Any:
            idx = tape.call(builtins.iter, tape.call(builtins.range, tape.call(builtins.len, row)))

            def inner(a: t.Any, i: t.Any) -> t.Any:
                item = tape.call(operator.getitem, row, i)
                return tape.call(operator.add, a, tape.call(operator.mul, i, item))

            return loop(tape, idx, inner, acc)

        return loop(tape, rows, outer, tape.const(0.0))

    check(program, rng.standard_normal((2, 3)), rng=rng)
    check(program, [[1.5, -0.5], [2.0, 0.25, 3.0]], rng=rng)


def test_consumers_of_iterators(rng: np.random.Generator) -> None:
    # sum(x * y for x, y in zip(xs, ys)) runs the generator eagerly into a list; list(it)
    # and sum(it) consume iterators directly.
    def program(tape: t.Any, xs: t.Any) -> t.Any:
        it = tape.call(builtins.iter, xs)
        first = tape.call(builtins.next, it)
        rest = tape.call(list, it)
        return tape.call(operator.mul, first, tape.call(builtins.sum, rest))

    check(program, [1.5, -0.5, 2.0], rng=rng)
    check(program, (1.5, -0.5, 2.0), rng=rng)
    rows = rng.standard_normal((3, 2))
    check(lambda tape, xs: tape.call(builtins.sum, tape.call(builtins.iter, xs)), rows, rng=rng)


def test_an_iterator_made_outside_cannot_carry_tangents() -> None:
    it = iter([1.5, 2.5])
    with pytest.raises(TypeError, match="iterator made outside"):
        gradient(lambda tape, it: tape.call(runtime.next_or_stop, it), it)
    ints = iter([1, 2])
    assert gradient(lambda tape, it: tape.call(runtime.next_or_stop, it), ints)


def test_iterators_over_values_without_tangents_have_none() -> None:
    """An iterator whose items can carry no tangent gets the tangent model's ``NoTangent()``;
    one over floats gets an ``IterTangent``."""
    from gibbous.ir import types as T
    from gibbous.rules.registry import DefaultContext, build_primitive_rrule
    from gibbous.tangents.model import CoDual, zero_fdata

    def fdata_of_call(fn: t.Any, *values: t.Any) -> t.Any:
        rule = build_primitive_rrule(DefaultContext, fn, [T.typeof(v) for v in values])
        y, _ = rule(CoDual(fn, NoTangent()), *(CoDual(v, zero_fdata(v)) for v in values))
        return y.fdata

    for fn, args in [
        (builtins.iter, (range(3),)), (builtins.iter, ((1, "a"),)), (builtins.reversed, ("ab",)),
        (builtins.zip, ((1, 2), range(2))), (builtins.enumerate, ((3, 4),)),
    ]:  # fmt: skip
        assert fdata_of_call(fn, *args) is NoTangent(), fn
    assert isinstance(fdata_of_call(builtins.iter, (1.5, 2)), IterTangent)
    assert isinstance(fdata_of_call(builtins.zip, (1, 2), [1.5, 2.5]), IterTangent)
    assert isinstance(fdata_of_call(builtins.enumerate, [1, 2]), IterTangent)  # a list may change
