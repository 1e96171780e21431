"""Audit cases for the rules of tuples, lists, dicts, iterators, objects and the frontend's
runtime helpers (``gibbous.library.python.containers``, ``container_methods``, ``iteration``,
``objects``, ``runtime``).

Containers hold floats, float32 and complex scalars, arrays (float64, float32, complex128, 0-d
to 2-d, and views of one base), nested containers and ints; objects are a mutable dataclass, a
frozen dataclass, mutable and frozen attrs classes, a plain class, a class with ``__slots__``
and a NamedTuple.  Mutating rules (``setitem``, ``append``, ``pop``, ``update``...) are checked
by ``test_rule``'s mutation check: after the pullback every argument holds its old items, in
their old order, the same objects at the same addresses.

What these cases cannot reach: ``test_rule`` follows the tangent model, which gives CPython's
iterators and cells no tangent.  So an iterator that carries an ``IterTangent`` never appears
here: iterators come over values without tangents (and ``next``'s default with its gradient).
``make_cell`` and ``closure_cell`` declare the interface check they fail (see "Cells" below),
and ``name_error``, which always raises, declares that.  The tangents of iterators and cells
are tested by ``tests/library/python/test_iteration.py`` and ``test_objects.py`` and by derived
rules of loops and closures.
"""

from __future__ import annotations

import builtins
import dataclasses
import operator
import sys
import types
import typing as t

import attrs
import numpy as np

from gibbous.ir import runtime
from gibbous.rules import emit, frules, inplace_forward
from gibbous.library.python import closures, container_methods, iteration, objects
from gibbous.forward.dynamic import DynamicCalls, program_of, star_program_of
from gibbous.forward.programs import ProgramBuilder
from gibbous.rules.registry import DefaultContext
from gibbous.session import Session
from gibbous.testing import case
from gibbous.testing.cases import RuleCase

rng = np.random.default_rng(11)


def _arr(*shape: int, dtype: type = np.float64) -> np.ndarray:
    # values in [0.5, 1.5]: away from zero and from one another
    return rng.uniform(0.5, 1.5, shape).astype(dtype)


A, B = _arr(3), _arr(3)
M = _arr(2, 3)
F = _arr(4, dtype=np.float32)
Z = _arr(2) + 1j * _arr(2)
S0 = np.array(1.25)
BASE = _arr(6)


def _views() -> tuple[np.ndarray, np.ndarray]:
    """Two overlapping views of one base: their fdata must overlap the same way."""
    base = BASE.copy()
    return base[:4], base[2:]


# --------------------------------------------------------------------------------------------
# Objects


@dataclasses.dataclass
class Point:
    x: t.Any
    y: t.Any

    def norm2(self) -> t.Any:
        return self.x * self.x + self.y * self.y


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: float
    w: np.ndarray
    n: int = 3


@attrs.frozen
class FrozenAttrs:
    a: float
    w: np.ndarray


@attrs.define
class MutableAttrs:
    a: float
    w: np.ndarray


class Plain:
    scale = 2.0  # class attributes: constants
    table = np.linspace(0.5, 1.5, 3)

    def __init__(self, v: float, w: np.ndarray) -> None:
        self.v = v
        self.w = w


class Slotted:
    __slots__ = ("v", "u")

    def __init__(self, v: float) -> None:
        self.v = v


class Pair(t.NamedTuple):
    a: float
    b: np.ndarray



def _reversible_calls() -> DynamicCalls:
    """The run-time callee finder of a build for a Hessian-vector product."""
    return ProgramBuilder(Session(DefaultContext, False, None), reversible=True).dynamic_calls()


CASES: list[RuleCase] = []

# --------------------------------------------------------------------------------------------
# Literals and unpacking

CASES += [
    case(runtime.make_tuple, 1.5, A, 3),
    case(runtime.make_tuple, np.float32(0.5), F, Z, 1.0 + 2.0j),
    case(runtime.make_tuple),
    case(runtime.make_tuple, *_views()),
    case(runtime.make_list, 1.5, A, 2),
    case(runtime.make_list, [1.5, M], (2.5, S0)),
    case(runtime.make_list, A, A),  # one array twice: one fdata
    case(runtime.make_dict, "a", 1.5, "b", M, "a", 2.5),  # a repeated key keeps the last
    case(runtime.make_dict, 1, [1.5, A], 2, (Z, 3)),
    case(runtime.make_locals, "x", 1.5, "w", M, "unset", runtime.UNBOUND),  # locals()
    case(runtime.make_set, 1, 2, "a"),
    case(runtime.unpack, (1.5, A), 2),
    case(runtime.unpack, [1.5, np.float32(2.5), Z], 3),
    case(runtime.unpack, M, 2),  # rows: views
    case(runtime.unpack, A, 3),  # scalars of a 1-D array
    case(runtime.unpack, "ab", 2),
    case(runtime.unpack_ex, [1.5, 2.5, 3.5, 4.5], 1, 1),
    case(runtime.unpack_ex, (1.5, A, 2.5), 0, 2),
    case(runtime.unpack_ex, M, 1, 0),
]

# --------------------------------------------------------------------------------------------
# Reading items

TUP = (1.5, A, 3, (2.5, M))
LST = [1.5, A, 3, [2.5, M]]
DCT = {"a": 1.5, "b": A, "c": [2.5, Z], 1: 4}
CASES += [
    case(operator.getitem, TUP, 0),
    case(operator.getitem, TUP, 1),
    case(operator.getitem, TUP, -1),
    case(operator.getitem, TUP, slice(1, None)),
    case(operator.getitem, TUP, slice(None, None, -2)),
    case(operator.getitem, Pair(1.5, A), 1),
    case(operator.getitem, (np.float32(0.5), 1.0 + 1.0j), 1),
    case(operator.getitem, LST, 0),
    case(operator.getitem, LST, 1),
    case(operator.getitem, LST, -1),
    case(operator.getitem, LST, slice(0, 3)),
    case(operator.getitem, LST, slice(None, None, -1)),
    case(operator.getitem, [A, A, 1.5], 1),
    case(operator.getitem, [1.5, A], np.int64(1)),  # a NumPy integer index
    case(operator.getitem, (1.5, A), np.int64(-2)),
    case(operator.getitem, {(1, "a"): 1.5, 2: A}, (1, "a")),  # a tuple key
    case(operator.getitem, DCT, "a"),
    case(operator.getitem, DCT, "b"),
    case(operator.getitem, DCT, "c"),
    case(operator.getitem, DCT, 1),
    case(operator.getitem, "abc", 1),
    case(operator.getitem, range(2, 9, 3), 1),
    case(operator.contains, "abc", "b"),
    case(operator.add, "ab", "c"),
    case(operator.mul, "ab", 2),
    case(operator.mod, "%d-%s", (3, "x")),
]

# --------------------------------------------------------------------------------------------
# Writing items

CASES += [
    case(operator.setitem, [1.5, 2.5], 0, 3.5),
    case(operator.setitem, [1.5, A], -1, B),
    case(operator.setitem, [1.5, A], 0, A),  # the list then holds A twice
    case(operator.setitem, [1.5, 2.5, 3.5], slice(0, 2), [4.5]),  # shrinks
    case(operator.setitem, [1.5, 2.5], slice(1, 1), (A, 4.5)),  # grows
    case(operator.setitem, [1.5, 2.5, 3.5, 0.5], slice(0, 4, 2), (4.5, M)),
    case(operator.setitem, [np.float32(1.5)], 0, Z),
    case(operator.setitem, {"a": 1.5, "b": 2.5}, "a", 3.5),
    case(operator.setitem, {"a": 1.5}, "b", A),  # a new key
    case(operator.setitem, {"a": [1.5, A]}, "a", (2.5, M)),
    case(operator.delitem, [1.5, A, 2.5], 1),
    case(operator.delitem, [1.5, A, 2.5, 3.5], slice(0, 4, 2)),
    case(operator.delitem, [1.5, A, 2.5], -1),
    case(operator.delitem, {"a": 1.5, "b": A, "c": 2.5}, "b"),  # the order comes back
]

# --------------------------------------------------------------------------------------------
# Concatenation and repetition

# (a repetition holds one array at several positions.  Run after the other cases of this
# module, the forward check's seeding raises "inconsistent aliasing" for them; run alone, it
# passes: found, not understood (issue 31's notes).  Declared, so that a change shows.)
_REPEATED = ("forward", "the forward check's seeding of a repeated array, after other cases")
CASES += [
    case(operator.add, (1.5, A), (2.5, 3)),
    case(operator.add, (), (Z,)),
    case(operator.add, [1.5, A], [A, 2.5]),
    case(operator.add, [], [np.float32(0.5)]),
    case(operator.mul, [1.5, A], 2, deviation=_REPEATED),
    case(operator.mul, [1.5], 0),
    case(operator.mul, [1.5, A], np.int64(2), deviation=_REPEATED),
    case(operator.mul, 3, [2.5, 1]),
    case(operator.mul, (1.5, A), 2, deviation=_REPEATED),
    case(operator.mul, 2, (M, 0.5), deviation=_REPEATED),
]

# --------------------------------------------------------------------------------------------
# List methods

CASES += [
    case(list.append, [1.5], 2.5),
    case(list.append, [A], B),
    case(list.append, [1.5], A),
    case(list.append, [], (1.5, M)),
    case(list.extend, [1.5], (2.5, A)),
    case(list.extend, [1.5, A], [B, 3.5]),
    case(list.extend, [1.5], M),  # rows of a matrix
    case(list.extend, [1.5], range(2)),
    case(list.insert, [1.5, 2.5], 1, 3.5),
    case(list.insert, [1.5, 2.5], -1, A),
    case(list.insert, [1.5], 10, np.float32(2.5)),
    case(list.pop, [1.5, A, 2.5]),
    case(list.pop, [1.5, A, 2.5], 1),
    case(list.pop, [1.5, A, 2.5], -3),
    case(list.sort, [2.5, 1.5, 3.5, 0.5]),
    case(list.sort, [2.5, -1.5, 0.5], kwargs={"key": abs, "reverse": True}),
    case(list.reverse, [1.5, A, 2.5]),
    case(list.copy, [1.5, A, [2.5]]),
    case(operator.iadd, [1.5], [2.5, A]),
    case(operator.iadd, [1.5], (M,)),
]

# --------------------------------------------------------------------------------------------
# Constructors

CASES += [
    case(builtins.list, (1.5, A, 3)),
    case(builtins.list, [1.5, A]),
    case(builtins.list, M),
    case(builtins.list, F),
    case(builtins.list, "ab"),
    case(builtins.list, range(3)),
    case(builtins.sorted, "cab"),
    case(builtins.tuple, [1.5, A, 3]),
    case(builtins.tuple, (1.5, A)),  # a tuple is returned as it is
    case(builtins.tuple, Pair(1.5, A)),
    case(builtins.tuple, Z),
    case(builtins.sorted, [2.5, 1.5, 3.5]),
    case(builtins.sorted, (2.5, -1.5, 0.5), kwargs={"key": abs, "reverse": True}),
    case(builtins.sorted, A, other_args=(_arr(5),)),  # distinct values: no ties
    case(builtins.dict, {"a": 1.5, "b": A}),
    case(builtins.dict, [("a", 1.5), ("b", A)]),
    case(builtins.dict, (("a", 1.5), ("a", 2.5))),  # a repeated key keeps the last
    case(builtins.dict, kwargs={"a": 1.5, "b": M}),
    case(builtins.dict, {"a": 1.5}, kwargs={"a": 2.5, "c": A}),
    case(builtins.dict),
]

# --------------------------------------------------------------------------------------------
# Dict methods

CASES += [
    case(dict.get, {"a": 1.5, "b": A}, "a"),
    case(dict.get, {"a": 1.5, "b": A}, "b", 2.5),
    case(dict.get, {"a": 1.5}, "z", 2.5),
    case(dict.get, {"a": 1.5}, "z"),
    case(dict.pop, {"a": 1.5, "b": A, "c": 2.5}, "a"),
    case(dict.pop, {"a": 1.5, "b": A}, "b", 2.5),
    case(dict.pop, {"a": 1.5}, "z", 2.5),
    case(dict.update, {"a": 1.5, "z": 3.5}, {"a": 2.5, "b": A}),
    case(dict.update, {"a": 1.5}, [("b", 2.5), ("a", M)]),
    case(dict.update, {"a": 1.5}, kwargs={"c": 2.5, "a": A}),
    case(dict.keys, {"a": 1.5, "b": A}),
    case(dict.values, {"a": 1.5, "b": A}),
    case(dict.items, {"a": 1.5, "b": A}),
]

# --------------------------------------------------------------------------------------------
# Iteration (over values without tangents: see the module docstring)

CASES += [
    case(builtins.iter, range(3)),
    case(builtins.iter, (1, "a")),
    case(builtins.iter, zip((1, 2), "ab")),  # an iterator is its own iterator
    case(builtins.reversed, (1, 2)),
    case(builtins.reversed, range(3)),
    case(builtins.enumerate, (5, 6), 1),
    case(builtins.zip, (1, 2), "ab"),
    case(builtins.zip, (1, 2), range(3), kwargs={"strict": False}),
    case(runtime.next_or_stop, zip((1, 2), "ab")),
    case(runtime.next_or_stop, zip((), ())),  # exhausted: STOP
    case(runtime.is_stop, 3),
    case(runtime.is_stop, runtime.STOP),
    case(emit.like, [1.5, np.ones(2), 3], None),  # (a forward program's zeros)
    case(emit.item_zeros, (1.5, np.ones(2), 3)),
    # (a forward program's run-time checks: a Hessian-vector product differentiates them)
    case(emit.real_operands, False, 1.5, np.ones(2)),
    case(emit.real_operands, True, [1.5, (np.ones(2), 3)]),
    case(emit.number_operands, True, [1.5, (np.ones(2) + 1j, 3)]),
    # (a tangent aliased as its array is: itself, or a copy broadcast to the array's shape)
    case(inplace_forward.fresh, np.ones(3), np.array([0.5, -1.0, 2.0])),
    case(inplace_forward.fresh, np.ones((2, 3)), np.array([0.5, -1.0, 2.0])),
    case(inplace_forward.fresh, np.ones(3), 0.5),
    case(inplace_forward.fresh, 1.5, 0.5),  # (a number: the tangent itself, a new value)
    case(inplace_forward.written_tangent, 1.5, 0.5, -2.0),
    case(inplace_forward.written_array, np.ones(3)),  # (a check: raises or returns None)
    case(inplace_forward.array_of, np.array([0.5, -1.0, 2.0])),
    case(
        inplace_forward.written_tangent, np.ones(3), np.zeros(3), np.array([0.5, -1.0, 2.0]),
        deviation=("allocations", "np.copyto's rule: the values written over are saved"),
    ),
    case(frules.not_an_array, 1.5, "operator.iadd"),
    # (a Hessian-vector product's program finds a callee's forward program at run time)
    case(program_of, _reversible_calls(), np.sin, None, False, (), (True,), 0.5),
    case(star_program_of, _reversible_calls(), np.add, None, False, (0.5, A), (1.0, None), None),
    case(builtins.next, enumerate(range(2, 9))),  # warm calls take items too
    case(builtins.next, zip(range(8), "abcdefgh"), 1.5),  # the default is not used
    case(builtins.next, zip((), ()), 1.5),  # exhausted: the default, with its gradient
    case(builtins.next, zip((), ()), A),
]

# --------------------------------------------------------------------------------------------
# Attributes of objects

CASES += [
    case(builtins.getattr, Point(1.5, 2.5), "x"),
    case(builtins.getattr, Point(1.5, A), "y"),
    case(builtins.getattr, Point(1.5, 2.5), "norm2"),  # a bound method: x's tangent
    case(builtins.getattr, Frozen(1.5, A), "a"),
    case(builtins.getattr, Frozen(1.5, A), "w"),
    case(builtins.getattr, Frozen(1.5, A), "n"),
    case(builtins.getattr, FrozenAttrs(1.5, M), "a"),
    case(builtins.getattr, FrozenAttrs(1.5, M), "w"),
    case(builtins.getattr, MutableAttrs(1.5, M), "a"),
    case(builtins.getattr, MutableAttrs(1.5, M), "w"),
    case(builtins.getattr, Plain(1.5, A), "v"),
    case(builtins.getattr, Plain(1.5, A), "w"),
    case(builtins.getattr, Plain(1.5, A), "scale"),  # a class attribute: constant
    case(builtins.getattr, Plain(1.5, A), "table"),  # its throwaway fdata is kept (stateful)
    case(builtins.getattr, sys.modules[__name__], "M"),  # a module's array: the same
    case(builtins.getattr, Slotted(1.5), "v"),
    case(builtins.getattr, Pair(1.5, A), "a"),
    case(builtins.getattr, Pair(1.5, A), "b"),
    case(builtins.getattr, np, "pi"),  # a module's constant
    case(builtins.setattr, Point(1.5, 2.5), "x", 3.5),
    case(builtins.setattr, Point(1.5, 2.5), "x", A),
    case(builtins.setattr, Point(1.5, 2.5), "extra", 3.5),  # a new attribute
    case(builtins.setattr, MutableAttrs(1.5, M), "w", B),
    case(builtins.setattr, Plain(1.5, A), "v", np.float32(2.5)),
    case(builtins.setattr, Slotted(1.5), "v", 2.5),
    case(builtins.setattr, Slotted(1.5), "u", Z),  # an unset slot
    case(builtins.delattr, Point(1.5, 2.5), "y"),
    case(builtins.delattr, Plain(1.5, A), "w"),
    case(builtins.delattr, Slotted(1.5), "v"),
]
# getattr with a default: the attribute when there is one (the default gets nothing), else
# the default itself, with its gradient
CASES += [
    case(builtins.getattr, Point(1.5, 2.5), "x", 0.5),
    case(builtins.getattr, Point(1.5, 2.5), "missing", 0.5),
    case(builtins.getattr, Point(1.5, A), "missing", B),
    case(builtins.getattr, Frozen(1.5, A), "w", B),
    case(builtins.getattr, Plain(1.5, A), "scale", [0.5, 1.5]),
    case(builtins.getattr, Pair(1.5, A), "c", (2.5, B)),
    case(builtins.getattr, np, "no_such_constant", 2.5),
    case(builtins.getattr, M, "T", None),
    case(builtins.getattr, M, "missing", 2.5),
    case(builtins.getattr, 1.5 + 2.0j, "imag", 0.5),
    case(builtins.getattr, 1.5, "missing", A),
]

# --------------------------------------------------------------------------------------------
# The frontend's runtime helpers


def _outer(w: float) -> t.Callable[[float], float]:
    def inner(v: float) -> float:
        return w * v

    return inner


_INNER = _outer(1.0).__code__  # a code object with one free variable


CASES += [
    case(t.cast, float, 1.5),
    case(t.cast, object, A),
    case(t.cast, list, [1.5, A]),
    case(runtime.bound_like, 1.5, 2.5),
    case(runtime.bound_like, runtime.UNBOUND, 0.0),
    case(emit.filled, 1.5, 2.5),
    case(emit.operand_tangent, np.array([1.5, 2.5]), np.array([0.5, -1.0])),
    case(emit.operand_tangent, np.array([True, False]), np.array([0.5, -1.0])),
    case(emit.without_derivative, np.array([1.5, 2.5])),
    case(emit.without_derivative, "x"),
    case(emit.no_float_items, {"a", "b"}, "builtins.set"),
    case(container_methods.pairs_only, [("a", 1.5)]),
    case(closures.immutable_contents, types.CellType(0), "f", 0),
    case(iteration.finite_iterables, ((1.5, A), [2.5])),  # (raises for an iterator, or None)
    case(objects._method_of, A.sum, A),
    case(objects._method_of, 1.5, A),
    case(emit.filled, np.array([1.5, 2.5]), np.array([0.5, -1.0])),
    case(runtime.check_bound, 1.5, "x"),
    case(runtime.check_bound, M, "m"),
    case(runtime.check_bound, Point(1.5, 2.5), "p"),
    # (a function without a closure is compared by identity, and each call makes a new one)
    case(runtime.make_function, _INNER, _outer, None, None, (types.CellType(1.5),)),
    case(runtime.make_function, _INNER, _outer, None, None, (types.CellType(M),)),
    case(runtime.dict_merge, {"a": 1.5}, {"b": 2.5, "c": A}),
    case(runtime.dict_merge, {}, {"b": M}),
    case(runtime.build_string, "a", "b"),
    case(runtime.exception_instance, ValueError),
    case(runtime.exception_with_cause, ValueError, KeyError("k")),
    case(runtime.cell_get, types.CellType(1.5), "x"),
    case(runtime.cell_get, types.CellType(M), "x", False),
    # test_rule cannot copy a cell: every round (and f) writes the one cell of the case, so the
    # value written is the value it holds
    case(runtime.cell_set, types.CellType(1.5), 1.5),
]

# --------------------------------------------------------------------------------------------
# More list and dict operations

CASES += [
    case(list.clear, [1.5, A, 2.5]),
    case(list.clear, []),
    # (the value found by equality is an int: perturbed floats would stop comparing equal)
    case(list.remove, [1.5, 2, A, 2], 2),  # the first of two equal items
    case(operator.imul, [1.5, A], 3),
    case(operator.imul, [1.5, A], 1),
    case(operator.imul, [1.5, A], 0),
    case(operator.imul, [], 2),
    case(operator.iadd, (1.5, A), (2.5, M)),
    case(operator.imul, (1.5, A), 2),
    case(dict.copy, {"a": 1.5, "b": A, "c": [2.5]}),
    case(dict.clear, {"a": 1.5, "b": A}),
    case(dict.setdefault, {"a": 1.5, "b": A}, "a", 2.5),  # present: the default is unused
    case(dict.setdefault, {"a": 1.5}, "b", 2.5),  # stored and returned
    case(dict.setdefault, {"a": 1.5}, "b", M),
    case(dict.setdefault, {"a": 1.5}, "a"),
    case(dict.setdefault, {"a": 1.5}, "b"),  # stores None
    case(dict.popitem, {"a": 1.5, "b": 2.5}),
    case(dict.popitem, {"a": 1.5, "b": A}),
    case(operator.or_, {"a": 1.5, "b": A}, {"b": 2.5, "c": M}),
    case(operator.or_, {}, {"c": Z}),
    case(operator.ior, {"a": 1.5, "b": A}, {"b": 2.5, "c": M}),
    case(operator.ior, {"a": 1.5}, [("a", 2.5), ("d", A)]),
]

# --------------------------------------------------------------------------------------------
# Arguments that alias one another: the copies test_rule makes keep the sharing, and after the
# pullback it must be as it was


def _aliasing_cases() -> list[RuleCase]:
    lst, inner, d = [1.5, A], [1.5, A], {"a": 1.5, "b": A}
    base = _arr(5)
    return [
        case(list.extend, lst, lst),  # l.extend(l)
        case(list.append, [2.5, A], [2.5, A]),
        case(list.append, inner, inner),  # a list that then contains itself
        case(operator.setitem, [inner, 2.5], 1, inner),
        case(operator.iadd, lst, lst),
        case(dict.update, d, d),
        case(list.insert, [base[:3], base[2:]], 0, base),  # views of one base and the base
        case(builtins.setattr, Point(1.5, A), "x", A),  # the field then holds A twice
        case(builtins.getattr, Frozen(1.5, A), "__repr__"),  # a bound method of a frozen object
        case(builtins.delattr, MutableAttrs(1.5, M), "w"),  # attrs's slots
    ]


CASES += _aliasing_cases()

# --------------------------------------------------------------------------------------------
# Cells.  The tangent model gives CPython cells no tangent; the rules carry a ``CellTangent``, a
# reference to the entry of the closure's (or a fresh) fields dict that holds the contents'
# tangent, so that a closure and the cells it was made from share one tangent.  The interface
# check sees the difference, so these cases declare it.


def _closure_over(w: t.Any) -> t.Any:
    def inner(v: t.Any) -> t.Any:
        return w * v

    return inner


_CELLS_WHY = (
    "cells have no tangent in the tangent model; their rules carry a CellTangent into the "
    "closure's tangent"
)
CASES += [
    case(runtime.make_cell, 1.5, deviation=("interface", _CELLS_WHY)),
    case(runtime.make_cell, np.array([0.5, -1.5]), deviation=("interface", _CELLS_WHY)),
    case(runtime.closure_cell, _closure_over(2.5), 0, deviation=("interface", _CELLS_WHY)),
    case(runtime.cell_delete, types.CellType(1.5), "x"),
    case(runtime.cell_delete, types.CellType(np.array([0.5, 1.5])), "w"),
    case(
        runtime.name_error,
        "undefined",
        deviation=("error", "always raises NameError: its rule only lets the error through"),
    ),
]
