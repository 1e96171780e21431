"""Tuples, lists and dicts: literals, unpacking, items, mutation and restoration."""

from __future__ import annotations

import builtins
import operator
import typing as t

import numpy as np
import pytest

from gibbous import testing
from gibbous.ir import runtime

from gibbous.tangents.model import NoTangent
from tests.library.harness import Tape, Var, call, check, check_call, gradient

NT = NoTangent()


def test_make_tuple_and_getitem(rng: np.random.Generator) -> None:
    def program(tape: t.Any, a: t.Any, x: t.Any) -> t.Any:
        tup = tape.call(runtime.make_tuple, a, x, tape.const(3))
        first = tape.call(operator.getitem, tup, tape.const(0))
        second = tape.call(operator.getitem, tup, tape.const(-2))
        return tape.call(operator.mul, first, second)

    check(program, 1.5, rng.standard_normal(3), rng=rng)


def test_tuple_getitem_rdata_and_fdata(rng: np.random.Generator) -> None:
    x = rng.standard_normal(2)
    out = check(call(operator.getitem, 0), (1.5, x, 2), rng=rng)
    tape = Tape()
    (tup,) = tape.inputs((1.5, x, 2))
    item = tape.call(operator.getitem, tup, tape.const(1))
    assert item.fdata is tup.fdata[1]
    item = tape.call(operator.getitem, tup, tape.const(0))
    item.rdata = 2.0
    tape.backward()
    assert tup.rdata == (2.0, NT, NT)
    check(call(operator.getitem, slice(0, 2)), (1.5, x, 2), rng=rng)
    assert out.rdata[0][1] is NT


def test_make_list_append_extend_pop_insert(rng: np.random.Generator) -> None:
    def program(tape: t.Any, a: t.Any, b: t.Any, x: t.Any) -> t.Any:
        lst = tape.call(runtime.make_list, a)
        tape.call(list.append, lst, b)
        tape.call(list.extend, lst, tape.call(runtime.make_tuple, a, x))
        tape.call(list.insert, lst, tape.const(1), tape.call(operator.mul, a, b))
        last = tape.call(list.pop, lst)  # x
        first = tape.call(list.pop, lst, tape.const(0))  # a
        total = tape.call(builtins.sum, lst)  # a*b + b + a
        scale = tape.call(operator.add, total, first)
        return tape.call(operator.mul, scale, tape.call(np.sum, last))

    check(program, 1.5, -0.5, rng.standard_normal(3), rng=rng)


def test_list_arguments_are_restored_after_mutation(rng: np.random.Generator) -> None:
    def program(tape: t.Any, lst: t.Any, v: t.Any) -> t.Any:
        tape.call(list.append, lst, v)
        tape.call(operator.setitem, lst, tape.const(0), tape.call(operator.mul, v, v))
        tape.call(operator.delitem, lst, tape.const(1))
        tape.call(list.sort, lst)
        tape.call(list.reverse, lst)
        tape.call(operator.setitem, lst, tape.const(slice(0, 2)), tape.call(runtime.make_list, v))
        return tape.call(builtins.sum, lst)

    check(program, [3.0, 1.0, 2.0, -1.0], 0.5, rng=rng)  # the harness checks restoration


def test_list_of_arrays_shares_their_fdata(rng: np.random.Generator) -> None:
    x, y = rng.standard_normal(3), rng.standard_normal(3)

    def program(tape: t.Any, x: t.Any, y: t.Any) -> t.Any:
        lst = tape.call(runtime.make_list, x, y)
        first = tape.call(operator.getitem, lst, tape.const(0))
        assert not isinstance(tape, Tape) or first.fdata is x.fdata
        return tape.call(np.dot, first, tape.call(operator.getitem, lst, tape.const(-1)))

    check(program, x, y, rng=rng)


def test_list_getitem_slices_setitem_slices_delitem(rng: np.random.Generator) -> None:
    check(call(operator.getitem, slice(1, None)), [1.5, 2.5, -0.5], rng=rng)
    check(call(operator.getitem, 1), [1.5, 2.5, -0.5], rng=rng)
    def assign(index: slice) -> t.Callable[..., t.Any]:
        return lambda tape, lst, v: tape.call(operator.setitem, lst, index, v)

    check(assign(slice(0, 2)), [1.5, 2.5, -0.5], [4.0], rng=rng)
    check(assign(slice(0, 3, 2)), [1.5, 2.5, -0.5], (4.0, 5.0), rng=rng)
    check(call(operator.delitem, slice(0, 3, 2)), [1.5, 2.5, -0.5, 3.0], rng=rng)


def test_dicts(rng: np.random.Generator) -> None:
    def program(tape: t.Any, d: t.Any, v: t.Any) -> t.Any:
        tape.call(operator.setitem, d, tape.const("b"), tape.call(operator.mul, v, v))
        tape.call(operator.setitem, d, tape.const("a"), v)
        tape.call(operator.delitem, d, tape.const("c"))
        got = tape.call(dict.get, d, tape.const("b"), tape.const(0.0))
        missing = tape.call(dict.get, d, tape.const("z"), v)
        a = tape.call(operator.getitem, d, "a")
        return tape.call(operator.add, tape.call(operator.mul, got, missing), a)

    check(program, {"a": 1.5, "c": 2.0, "d": 0.5}, 0.75, rng=rng)


def test_make_dict_with_a_repeated_key(rng: np.random.Generator) -> None:
    def program(tape: t.Any, a: t.Any, b: t.Any) -> t.Any:
        d = tape.call(runtime.make_dict, tape.const("k"), a, tape.const("k"), b)
        return tape.call(operator.getitem, d, tape.const("k"))

    assert gradient(program, 1.0, 2.0) == [0.0, 1.0]
    check(program, 1.0, 2.0, rng=rng)


def test_make_locals_leaves_the_unbound_out() -> None:
    x = np.array([0.5, 1.5])
    for args in (
        ("a", 1.5, "b", runtime.UNBOUND, "x", x),
        ("b", runtime.UNBOUND, "a", 2.5, "c", 0.5),
        ("a", 1.5),
        ("a", runtime.UNBOUND),
    ):
        testing.test_rule(runtime.make_locals, *args, perf="allocs")
    testing.test_rule(runtime.make_dict, "k", 1.5, "m", x, "k", 2.5)  # the last k wins


def test_unpack(rng: np.random.Generator) -> None:
    def program(tape: t.Any, seq: t.Any) -> t.Any:
        parts = tape.call(runtime.unpack, seq, tape.const(2))
        a = tape.call(operator.getitem, parts, tape.const(0))
        b = tape.call(operator.getitem, parts, tape.const(1))
        return tape.call(np.sum, tape.call(operator.mul, a, b))

    check(program, (1.5, -0.5), rng=rng)
    check(program, [1.5, -0.5], rng=rng)
    check(program, rng.standard_normal((2, 3)), rng=rng)  # rows: views
    check(program, rng.standard_normal(2), rng=rng)  # scalars of a 1-D array


def test_unpack_ex(rng: np.random.Generator) -> None:
    def program(tape: t.Any, seq: t.Any) -> t.Any:
        parts = tape.call(runtime.unpack_ex, seq, tape.const(1), tape.const(1))
        a = tape.call(operator.getitem, parts, tape.const(0))
        middle = tape.call(operator.getitem, parts, tape.const(1))
        c = tape.call(operator.getitem, parts, tape.const(2))
        ends = tape.call(operator.mul, a, c)
        return tape.call(operator.mul, ends, tape.call(builtins.sum, middle))

    check(program, [1.5, -0.5, 2.0, 0.25], rng=rng)
    check(program, (1.5, -0.5, 2.0), rng=rng)


def test_concatenations(rng: np.random.Generator) -> None:
    check_call(operator.add, (1.5, 2.0), (0.5,), rng=rng)
    check_call(operator.add, [1.5, 2.0], [0.5], rng=rng)
    check_call(operator.iadd, [1.5, 2.0], [0.5, 0.25], rng=rng)


def test_list_and_tuple_constructors_and_sorted(rng: np.random.Generator) -> None:
    for fn in (list, tuple, sorted):
        check_call(fn, [2.5, -1.0, 0.5], rng=rng)
        check_call(fn, (2.5, -1.0, 0.5), rng=rng)
        check_call(fn, rng.standard_normal(3), rng=rng)
        if fn is not sorted:  # rows do not compare
            check_call(fn, rng.standard_normal((3, 2)), rng=rng)
    check(call(sorted, key=abs, reverse=True), [2.5, -1.0, 0.5], rng=rng)
    check_call(list.copy, [2.5, -1.0], rng=rng)


def test_dict_views(rng: np.random.Generator) -> None:
    def program(tape: t.Any, d: t.Any) -> t.Any:
        values = tape.call(list, tape.call(dict.values, d))
        items = tape.call(list, tape.call(dict.items, d))
        pair = tape.call(operator.getitem, items, tape.const(1))
        second = tape.call(operator.getitem, pair, tape.const(1))
        return tape.call(operator.mul, tape.call(builtins.sum, values), second)

    check(program, {"a": 1.5, "b": -0.5}, rng=rng)


@pytest.mark.parametrize("fn", [min, max])
def test_min_max_of_iterables(fn: t.Any, rng: np.random.Generator) -> None:
    check_call(fn, [1.5, -0.5, 3.0], rng=rng)
    check_call(fn, (1.5, -0.5, 3.0), rng=rng)
    check_call(fn, rng.standard_normal(4), rng=rng)
    check(call(fn, key=abs), [1.5, -0.5, -3.0], rng=rng)
    assert gradient(call(fn), [2.0, 2.0, 1.0 if fn is max else 3.0]) == [[1.0, 0.0, 0.0]]
    out = gradient(lambda tape: tape.call(fn, tape.const([]), default=tape.const(1.0)))
    assert out == []


def test_sum_of_lists_tuples_arrays_and_start(rng: np.random.Generator) -> None:
    check_call(sum, [1.5, -0.5, 3.0], rng=rng)
    check_call(sum, (1.5, rng.standard_normal(3)), rng=rng)
    check_call(sum, [rng.standard_normal((2, 3)), rng.standard_normal(3)], rng=rng)  # broadcast
    check_call(sum, rng.standard_normal((3, 2)), rng=rng)  # rows
    check_call(sum, [1.5, -0.5], 2.0, rng=rng)
    check(lambda tape, s: tape.call(sum, tape.const([]), s), 2.0, rng=rng)


def test_zero_derivative_queries() -> None:
    cases: list[tuple[t.Any, tuple[t.Any, ...]]] = [
        (len, ([1.0, 2.0],)), (operator.contains, ([1.0], 1.0)), (operator.is_, (1.0, None)),
        (isinstance, (1.0, float)), (operator.not_, (1.0,)), (operator.truth, (0.0,)),
    ]  # fmt: skip
    for fn, args in cases:
        grads = gradient(call(fn, *args[1:]), args[0])
        assert all(g == 0 or g is NT or g == [0.0] * len(g) for g in grads), (fn, grads)


def test_repetition_and_dict_pop(rng: np.random.Generator) -> None:
    check(call(operator.mul, 3), [1.5, -0.5], rng=rng)
    check(call(operator.mul, 2), (1.5, rng.standard_normal(2)), rng=rng)
    check(lambda tape, lst: tape.call(operator.mul, tape.const(2), lst), [1.5], rng=rng)

    def popping(tape: t.Any, d: t.Any) -> t.Any:
        a = tape.call(dict.pop, d, tape.const("a"))
        b = tape.call(dict.pop, d, tape.const("zz"), tape.const(2.0))
        c = tape.call(operator.getitem, d, "c")
        return tape.call(operator.mul, tape.call(operator.mul, a, b), c)

    check(popping, {"a": 1.5, "b": 0.5, "c": -2.0}, rng=rng)


def test_math_fsum_prod_and_predicates(rng: np.random.Generator) -> None:
    import math

    check_call(math.fsum, [1.5, -0.5, 2.0], rng=rng)
    check_call(math.prod, [1.5, -0.5, 2.0], rng=rng)
    check_call(math.prod, (1.5, 0.0, 2.0), rng=rng)
    check(lambda tape, xs, s: tape.call(math.prod, xs, start=s), [1.5, -0.5], 2.0, rng=rng)
    assert gradient(call(any), [1.5, 0.0]) == [[0.0, 0.0]]


def test_dict_of_zip(rng: np.random.Generator) -> None:
    def program(tape: t.Any, keys: t.Any, values: t.Any) -> t.Any:
        d = tape.call(dict, tape.call(builtins.zip, keys, values))
        return tape.call(operator.mul, tape.call(operator.getitem, d, tape.const("a")),
                         tape.call(operator.getitem, d, tape.const("b")))  # fmt: skip

    check(program, ["a", "b"], [1.5, -0.5], rng=rng)
    check(program, ("a", "b"), rng.standard_normal(2), rng=rng)


def test_inactive_containers_have_no_fdata_and_still_work() -> None:
    """The AD pass gives inactive values ``NoTangent()`` fdata: rules run (and restore) the
    same way, and what would reach such a container is dropped."""
    from gibbous.ir import types as T
    from gibbous.rules.registry import DefaultContext, build_primitive_rrule
    from gibbous.tangents.model import CoDual

    def run(fn: t.Any, *values: t.Any) -> tuple[t.Any, ...]:
        rule = build_primitive_rrule(DefaultContext, fn, [T.typeof(v) for v in values])
        y, pullback = rule(CoDual(fn, NT), *(CoDual(v, NT) for v in values))
        return y, pullback(zero_rdata_like(y.primal))

    def zero_rdata_like(y: t.Any) -> t.Any:
        return 1.0 if isinstance(y, float) else NT

    lst, d = [1.5, 2.5], {"a": 1.5}
    assert run(operator.getitem, lst, 0)[0].primal == 1.5
    assert run(operator.getitem, d, "a")[0].primal == 1.5
    run(operator.setitem, lst, 0, 4.0)
    run(list.append, lst, 4.0)
    run(operator.setitem, d, "b", 4.0)
    run(operator.delitem, d, "a")
    assert lst == [1.5, 2.5] and d == {"a": 1.5}
    assert run(builtins.sum, lst)[1] == (NT, NT)
    tape = Tape()
    inactive = Var(CoDual(lst, NT), T.typeof(lst))
    it = tape.call(builtins.iter, inactive)
    item = tape.call(runtime.next_or_stop, it)
    assert item.primal == 1.5
    item.rdata = 1.0
    tape.backward()


def test_dict_update(rng: np.random.Generator) -> None:
    def program(tape: t.Any, d: t.Any, other: t.Any, v: t.Any) -> t.Any:
        tape.call(dict.update, d, other, c=v)
        a = tape.call(operator.getitem, d, "a")
        b = tape.call(operator.getitem, d, "b")
        c = tape.call(operator.getitem, d, "c")
        return tape.call(operator.mul, tape.call(operator.mul, a, b), c)

    check(program, {"a": 1.5, "z": 3.0}, {"a": -0.5, "b": 2.0}, 0.75, rng=rng)


def test_clear_remove_and_repeat_in_place(rng: np.random.Generator) -> None:
    def program(tape: t.Any, lst: t.Any, v: t.Any) -> t.Any:
        tape.call(list.append, lst, v)
        tape.call(operator.imul, lst, tape.const(2))  # l *= 2
        tape.call(list.remove, lst, tape.const(2))  # the first 2 goes
        total = tape.call(builtins.sum, lst)
        tape.call(list.clear, lst)
        tape.call(list.append, lst, total)
        return tape.call(operator.mul, tape.call(operator.getitem, lst, tape.const(0)), v)

    check(program, [1.5, 2, -0.5], 0.75, rng=rng)  # the harness checks restoration
    check(call(operator.imul, 0), [1.5, -0.5], rng=rng)
    check(call(operator.iadd, (2.5,)), (1.5, rng.standard_normal(2)), rng=rng)
    check(call(operator.imul, 2), (1.5, rng.standard_normal(2)), rng=rng)


def test_dict_copy_clear_setdefault_popitem(rng: np.random.Generator) -> None:
    def program(tape: t.Any, d: t.Any, v: t.Any) -> t.Any:
        c = tape.call(dict.copy, d)
        tape.call(dict.clear, d)
        got = tape.call(dict.setdefault, c, tape.const("a"), v)  # present: c["a"]
        new = tape.call(dict.setdefault, c, tape.const("z"), v)  # stored and returned
        tape.call(operator.setitem, d, tape.const("k"), tape.call(operator.mul, new, got))
        pair = tape.call(dict.popitem, c)  # ("z", v)
        last = tape.call(operator.getitem, pair, tape.const(1))
        kept = tape.call(operator.getitem, d, tape.const("k"))
        return tape.call(operator.add, tape.call(operator.mul, kept, last), got)

    check(program, {"a": 1.5, "b": -0.5}, 0.75, rng=rng)
    assert gradient(lambda tape, d, v: tape.call(dict.setdefault, d, "z", v), {}, 2.0)[1] == 1.0


def test_dict_union_operators(rng: np.random.Generator) -> None:
    def program(tape: t.Any, a: t.Any, b: t.Any) -> t.Any:
        u = tape.call(operator.or_, a, b)
        tape.call(operator.ior, a, b)
        x = tape.call(operator.getitem, u, tape.const("x"))  # b's
        y = tape.call(operator.getitem, a, tape.const("y"))  # a's own
        return tape.call(operator.mul, x, y)

    check(program, {"x": 1.5, "y": -0.5}, {"x": 2.0, "w": 0.25}, rng=rng)


def test_dict_views_have_the_dicts_tangent() -> None:
    """The tangent model gives ``d.values()`` and ``d.items()`` the tangent of ``d`` (the same
    object), and ``d.keys()`` none; the rules' fdata is that tangent."""
    from gibbous.ir import types as T
    from gibbous.rules.registry import DefaultContext, build_primitive_rrule
    from gibbous.tangents.model import Tangent, zero_coduals, zero_fdatas

    d = {"a": 1.5, "b": np.ones(2)}
    d_fdata, values_fdata, keys_fdata = zero_fdatas(d, d.values(), d.keys())
    assert isinstance(values_fdata, Tangent) and values_fdata.fields["mapping"] is d_fdata
    assert keys_fdata is NT
    f, cd = zero_coduals(dict.items, d)
    y, _ = build_primitive_rrule(DefaultContext, dict.items, [T.typeof(d)])(f, cd)
    assert isinstance(y.fdata, Tangent) and y.fdata.fields["mapping"] is cd.fdata
