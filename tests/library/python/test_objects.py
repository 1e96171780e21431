"""Attributes of objects, closure cells, nested functions, typing.cast."""

from __future__ import annotations

import builtins
import dataclasses
import operator
import types
import typing as t

import numpy as np
import pytest

from gibbous.ir import runtime
from gibbous.tangents.model import MutableTangent, NoTangent, Tangent
from tests.library.harness import Tape, check, gradient

NT = NoTangent()


@dataclasses.dataclass
class Point:
    x: float
    y: float

    def norm2(self) -> float:
        return self.x * self.x + self.y * self.y

    @property
    def total(self) -> float:
        return self.x + self.y


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: float
    w: np.ndarray
    n: int = 3


class Pair(t.NamedTuple):
    a: float
    b: float


class Slotted:
    __slots__ = ("v",)

    def __init__(self, v: float) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Slotted) and self.v == other.v


def get(tape: t.Any, obj: t.Any, name: str) -> t.Any:
    return tape.call(builtins.getattr, obj, tape.const(name))


def test_getattr_setattr_on_a_mutable_object(rng: np.random.Generator) -> None:
    def program(tape: t.Any, p: t.Any, v: t.Any) -> t.Any:
        scaled = tape.call(operator.mul, get(tape, p, "y"), v)
        tape.call(builtins.setattr, p, tape.const("x"), scaled)
        tape.call(builtins.setattr, p, tape.const("extra"), v)  # a new attribute
        return tape.call(operator.mul, get(tape, p, "x"), get(tape, p, "extra"))

    out = check(program, Point(1.5, -0.5), 0.75, rng=rng)  # checks restoration too
    assert isinstance(out.grads[0], MutableTangent)


def test_slots_and_deleting_attributes(rng: np.random.Generator) -> None:
    def program(tape: t.Any, s: t.Any, v: t.Any) -> t.Any:
        old = get(tape, s, "v")
        tape.call(builtins.setattr, s, tape.const("v"), tape.call(operator.mul, old, v))
        return get(tape, s, "v")

    check(program, Slotted(1.5), 0.75, rng=rng)

    def deleting(tape: t.Any, p: t.Any) -> t.Any:
        y = get(tape, p, "y")
        tape.call(builtins.delattr, p, tape.const("y"))
        return tape.call(operator.mul, y, get(tape, p, "x"))

    check(deleting, Point(1.5, -0.5), rng=rng)


FROZEN = Frozen(2.5, np.ones(3))  # no attribute "x": the default


@pytest.mark.parametrize("attribute", ["x", "missing"])
def test_getattr_with_a_default(attribute: str, rng: np.random.Generator) -> None:
    def program(tape: t.Any, p: t.Any, v: t.Any, w: t.Any) -> t.Any:
        got = tape.call(builtins.getattr, p, tape.const(attribute), v)
        square = tape.call(operator.mul, v, v)
        frozen = tape.call(builtins.getattr, tape.const(FROZEN), tape.const(attribute), square)
        on_array = "real" if attribute == "x" else attribute
        array = tape.call(builtins.getattr, w, tape.const(on_array), w)
        total = tape.call(np.sum, tape.call(operator.mul, array, got))
        return tape.call(operator.add, total, frozen)

    check(program, Point(1.5, -0.5), 0.75, rng.standard_normal(3), rng=rng)


def test_getattr_default_gets_the_cotangent_only_when_missing() -> None:
    def program(name: str) -> t.Any:
        def run(tape: t.Any, p: t.Any, v: t.Any) -> t.Any:
            return tape.call(builtins.getattr, p, tape.const(name), v)

        return run

    point, default = gradient(program("x"), Point(1.5, -0.5), 0.75, seed=2.0)
    assert default == 0.0 and point.fields["x"] == 2.0
    point, default = gradient(program("missing"), Point(1.5, -0.5), 0.75, seed=2.0)
    assert default == 2.0 and point.fields["x"] == 0.0
    _, default = gradient(program("imag"), 1.5, 0.75, seed=2.0)  # a float's imag: 0.0
    assert default == 0.0


def test_an_array_field_shares_its_fdata(rng: np.random.Generator) -> None:
    def program(tape: t.Any, p: t.Any, w: t.Any) -> t.Any:
        tape.call(builtins.setattr, p, tape.const("x"), w)
        got = get(tape, p, "x")
        assert not isinstance(tape, Tape) or got.fdata is w.fdata
        return tape.call(np.sum, tape.call(operator.mul, got, got))

    check(program, Point(1.5, -0.5), rng.standard_normal(3), rng=rng)


def test_frozen_dataclass_and_namedtuple_fields(rng: np.random.Generator) -> None:
    def program(tape: t.Any, f: t.Any) -> t.Any:
        return tape.call(operator.mul, get(tape, f, "a"), tape.call(np.sum, get(tape, f, "w")))

    out = check(program, Frozen(1.5, rng.standard_normal(3)), rng=rng)
    assert isinstance(out.rdata[0], Tangent) and out.rdata[0].fields["w"] is NT

    def pair(tape: t.Any, p: t.Any) -> t.Any:
        second = tape.call(operator.getitem, p, tape.const(1))
        return tape.call(operator.mul, get(tape, p, "a"), second)

    out = check(pair, Pair(1.5, -0.5), rng=rng)
    assert isinstance(out.rdata[0], tuple)


def test_bound_methods_carry_their_receiver() -> None:
    tape = Tape()
    (p,) = tape.inputs(Point(1.5, -0.5))
    m = get(tape, p, "norm2")
    assert isinstance(m.fdata, Tangent) and m.fdata.fields["__self__"] is p.fdata
    (f,) = tape.inputs(Frozen(1.5, np.ones(2)))
    m = get(tape, f, "__repr__")
    m.rdata = Tangent({"__self__": Tangent({"a": 2.0, "w": NT, "n": NT}), "__func__": NT})
    tape.backward()
    assert f.rdata.fields["a"] == 2.0


def test_computed_attributes_are_refused() -> None:
    with pytest.raises(NotImplementedError, match="computed"):
        gradient(lambda tape, p: get(tape, p, "total"), Point(1.5, -0.5))


def test_class_attributes_and_module_attributes_are_constants() -> None:
    import math

    assert gradient(lambda tape, m: get(tape, m, "pi"), math) == [NT]


# --------------------------------------------------------------------------------------------
# Cells and nested functions


def test_cells(rng: np.random.Generator) -> None:
    def program(tape: t.Any, a: t.Any, b: t.Any) -> t.Any:
        cell = tape.call(runtime.make_cell, a)
        first = tape.call(runtime.cell_get, cell, tape.const("x"))
        tape.call(runtime.cell_set, cell, tape.call(operator.mul, first, b))
        second = tape.call(runtime.cell_get, cell, tape.const("x"))
        return tape.call(operator.add, second, first)

    check(program, 1.5, -0.5, rng=rng)
    check(program, rng.standard_normal(3), rng.standard_normal(3), rng=rng)


def make_closure(w: t.Any) -> types.FunctionType:
    def model(v: t.Any) -> t.Any:
        return w * v

    return t.cast(types.FunctionType, model)


def test_closure_cell_of_an_argument_closure_lands_in_its_tangent() -> None:
    fn = make_closure(2.5)
    tape = Tape()
    (f,) = tape.inputs(fn)
    assert isinstance(f.fdata, MutableTangent)
    cell = tape.call(runtime.closure_cell, f, tape.const(0))
    w = tape.call(runtime.cell_get, cell, tape.const("w"), tape.const(True))
    y = tape.call(operator.mul, w, tape.const(3.0))
    y.rdata = 1.0
    tape.backward()
    assert f.fdata.fields["w"] == 3.0


def test_make_function_links_the_cells_it_closes_over() -> None:
    outer = make_closure(0.0)
    tape = Tape()
    (a,) = tape.inputs(1.5)
    cell = tape.call(runtime.make_cell, a)
    cells = tape.call(runtime.make_tuple, cell)
    fn = tape.call(runtime.make_function, outer.__code__, make_closure, None, None, cells)
    assert isinstance(fn.fdata, MutableTangent)
    inner_cell = tape.call(runtime.closure_cell, fn, tape.const(0))
    assert inner_cell.fdata is cell.fdata
    w = tape.call(runtime.cell_get, inner_cell, tape.const("w"), tape.const(True))
    y = tape.call(operator.mul, w, w)
    y.rdata = 1.0
    tape.backward()
    assert a.rdata == 3.0


def test_make_function_keeps_differentiable_defaults_in_its_tangent() -> None:
    """``def g(a, b=x)``: the function's tangent holds its defaults' tangent (a call using the
    default adds its gradient there), and the pullback hands it to the defaults operand."""
    from gibbous.ir.types import typeof
    from gibbous.rules.registry import DefaultContext, build_primitive_rrule
    from gibbous.tangents.model import CoDual

    def g(a: float, b: float = 0.0) -> float:
        return a * b

    operands = (g.__code__, make_closure, (1.5,), None, None)
    types_ = [typeof(v) for v in operands]
    rule = build_primitive_rrule(DefaultContext, runtime.make_function, types_)
    made, pullback = rule(
        CoDual(runtime.make_function, NoTangent()), *(CoDual(v, NoTangent()) for v in operands)
    )
    assert made.primal.__defaults__ == (1.5,)
    assert isinstance(made.fdata, MutableTangent) and made.fdata.fields["__defaults__"] == (0.0,)
    made.fdata.fields["__defaults__"] = (2.5,)  # what a call that used the default added
    assert pullback(NoTangent())[3] == (2.5,)


def test_cast_and_check_bound_are_identities(rng: np.random.Generator) -> None:
    check(lambda tape, x: tape.call(t.cast, tape.const(object), x), 1.5, rng=rng)
    check(lambda tape, x: tape.call(t.cast, tape.const(object), x), rng.standard_normal(2), rng=rng)
    check(lambda tape, x: tape.call(runtime.check_bound, x, tape.const("x")), 1.5, rng=rng)


class WithTable:
    table = np.linspace(0.5, 1.5, 3)  # a class attribute: a constant


def test_constants_get_a_throwaway_fdata_kept_in_the_rules_state() -> None:
    """A constant array (a class attribute, what an inactive cell holds) gets zero fdata of the
    tangent model's kind, kept in the rule's state and zeroed on each call: a warm call
    allocates no array, as the primal allocates none."""
    from gibbous import testing

    testing.test_rule(builtins.getattr, WithTable(), "table", perf="allocs")
    testing.test_rule(runtime.cell_get, types.CellType(np.ones((2, 3))), "x", perf="allocs")
    inner = make_closure(0.0).__code__
    cells = (types.CellType(np.ones(3)),)
    testing.test_rule(runtime.make_function, inner, make_closure, None, None, cells, perf="allocs")
