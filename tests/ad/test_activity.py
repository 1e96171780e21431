"""Activity analysis on typed IR text: which values carry a CoDual, which calls need a rule."""

from __future__ import annotations

from gibbous.ir import parse
from gibbous.ir.core import Function, Value
from gibbous.reverse.activity import Activity, analyse


def active_names(f: Function, act: Activity) -> set[str]:
    values: list[Value] = []
    for b in f.blocks:
        values += [*b.args, *(op.result for op in b.calls)]
    return {v.name for v in values if v.name is not None and act.is_active(v)}


def active_callees(act: Activity) -> list[str]:
    return sorted(str(op.callee.value.__name__) for op in act.calls)  # type: ignore[attr-defined]


RANGE_LOOP = """
func @f(%x: f64, %n: i64) {
^entry:
  %r = call builtins.range(%n) : object<builtins.range>
  %it = call builtins.iter(%r) : object<collections.abc.Iterator>
  jump ^loop(0.0)
^loop(%acc: f64):
  %i = call gibbous.ir.runtime.next_or_stop(%it) : any
  %stop = call gibbous.ir.runtime.is_stop(%i) : bool
  branch %stop, ^done, ^body(%i)
^body(%j: any):
  %k = call typing.cast(builtins.object, %j) : i64
  %t = call operator.mul(%x, %k) : f64
  %next = call operator.add(%acc, %t) : f64
  jump ^loop(%next)
^done:
  return %acc
}
"""


def test_a_range_loop_runs_as_primal_code() -> None:
    f = parse(RANGE_LOOP)
    act = analyse(f, object())
    # The iterator and what it yields come from an int and nothing writes into them.
    assert active_names(f, act) == {"x", "acc", "t", "next"}
    assert active_callees(act) == ["add", "mul"]


WRITTEN_ZEROS = """
func @f(%x: f64) {
^entry:
  %z = call numpy.zeros(3) : f64[:]
  %w = call numpy.zeros(3) : f64[:]
  %0 = call operator.setitem(%z, 0, %x) : none
  %s = call numpy.sum(%w) : f64
  %1 = call numpy.sum(%z) : f64
  %2 = call operator.mul(%1, %s) : f64
  return %2
}
"""


def test_arrays_written_by_active_calls_are_active_from_where_they_are_made() -> None:
    f = parse(WRITTEN_ZEROS)
    act = analyse(f, object())
    names = active_names(f, act)
    assert "z" in names  # setitem with an active value writes into it
    assert "w" not in names and "s" not in names  # read only: primal code
    assert active_callees(act) == ["mul", "setitem", "sum", "zeros"]


RETURNED = """
func @f(%n: i64, %x: f64) {
^entry:
  %z = call numpy.zeros(%n) : f64[:]
  %k = call builtins.len(%z) : i64
  %y = call operator.mul(%x, 2.0) : f64
  %p = call builtins.print(%y) : none
  return %z
}
"""


def test_returned_arrays_are_active_and_effects_on_floats_are_not() -> None:
    f = parse(RETURNED)
    act = analyse(f, object())
    assert active_names(f, act) == {"x", "z", "y"}  # n is an int; z leaves the function
    assert active_callees(act) == ["mul", "zeros"]  # print writes into no fdata


UNTYPED = """
func @f(%x: any, %y: any) {
^entry:
  %0 = call operator.lt(%x, %y) : any
  %1 = call operator.truth(%0) : bool
  return %1
}
"""


def test_any_is_always_active() -> None:
    f = parse(UNTYPED)
    act = analyse(f, object())
    assert active_names(f, act) == {"x", "y"}
    # The comparison: its result may be anything.  A truth test is taken to write nothing.
    assert active_callees(act) == ["lt"]
