"""The purity table (gibbous.ir.purity), as the passes rely on it."""

from __future__ import annotations

import builtins
import collections
import fractions
import math
import operator
import typing as t

import numpy as np
import pytest

from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Function
from gibbous.ir.names import CallableTable
from gibbous.ir import purity
from gibbous.ir.purity import (
    is_immutable_type,
    is_plain_type,
    is_pure,
    is_pure_call,
    is_registered_pure,
    pure,
    register_pure,
    unregister_pure,
)

F64 = T.FLOAT
A = T.Array("float64", 1)


class Point(t.NamedTuple):
    x: float
    y: float

    def norm(self) -> float:  # an ordinary method changes no tuple operation
        return math.hypot(self.x, self.y)


class LoudPoint(t.NamedTuple):
    x: float

    def __add__(self, other: object) -> t.Any:
        print("adding")
        return NotImplemented


PlainPair = collections.namedtuple("PlainPair", "a b")


@pytest.fixture
def scratch_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(purity, "_TABLE", CallableTable(purity._TABLE.items()))


def test_operators_are_pure_on_plain_arguments_only() -> None:
    assert is_pure(operator.add, (F64, F64))
    assert is_pure(operator.add, (A, T.Const(1.0)))
    assert is_pure(operator.getitem, (T.List(F64), T.INT))
    assert not is_pure(operator.add, (T.ANY, F64))  # a user __add__ may print
    assert not is_pure(operator.eq, (T.Object(fractions.Fraction), F64))
    assert not is_pure(operator.getitem, (T.List(T.ANY), T.INT))


@pytest.mark.parametrize(
    "fn", [operator.iadd, operator.imul, operator.setitem, operator.delitem, builtins.print]
)
def test_mutating_and_effectful_callables_are_not_registered(fn: object) -> None:
    assert not is_registered_pure(fn)
    assert not is_pure(fn, (F64, F64))


def test_identity_tests_and_type_are_pure_on_anything() -> None:
    assert is_pure(operator.is_, (T.ANY, T.ANY))
    assert is_pure(builtins.type, (T.ANY,))
    assert not is_pure(builtins.type, (T.STR, T.Tuple(()), T.Dict(T.STR, T.ANY)))


def test_every_math_function_is_registered() -> None:
    for name, fn in vars(math).items():
        if callable(fn) and not name.startswith("_"):
            assert is_pure(fn, (F64,)), name


def test_a_callee_value_must_be_a_constant() -> None:
    f = Function("f", [("g", T.ANY), ("x", F64)])
    b = Builder(f)
    g, x = f.args
    dynamic = b.call(g, x, type=F64)
    static = b.call(operator.neg, x, type=F64)
    assert not is_pure(g, (F64,))
    assert is_pure(Constant(operator.neg), (F64,))
    assert not is_pure_call(dynamic.op)
    assert is_pure_call(static.op)


def test_numpy_is_pure_without_output_arrays() -> None:
    assert is_pure(np.add, (A, A))
    assert is_pure(np.sum, (A,), {"axis": T.Const(0), "dtype": T.Const(np.float32)})
    assert not is_pure(np.add, (A, A), {"out": A})
    assert not is_pure(np.add, (A, A, A))  # the third positional argument of a ufunc is out
    assert not is_pure(np.sum, (A, T.NONE, T.NONE, A))  # out is sum's fourth parameter
    assert is_pure(np.add, (A, A), {"out": T.Const(None)})
    assert is_pure(np.sum, (A, T.NONE, T.NONE, T.NONE, T.Const(True)))


def test_numpy_where_is_refused_where_it_leaves_garbage() -> None:
    assert not is_pure(np.add, (A, A), {"where": A})  # unselected elements uninitialised
    assert is_pure(np.add, (A, A), {"where": T.Const(True)})
    assert is_pure(np.sum, (A,), {"where": A})  # a masked reduction is deterministic


def test_numpy_nondeterministic_and_overwriting_functions_are_not_pure() -> None:
    assert not is_pure(np.empty, (T.INT,))  # uninitialised contents
    assert not is_pure(np.random.rand, (T.INT,))
    assert not is_pure(np.median, (A,))  # overwrite_input=True would scribble on the input


def test_numpy_arrays_of_unknown_or_object_dtype_are_not_plain() -> None:
    assert not is_pure(np.sum, (T.Array(None, 1),))
    assert not is_pure(np.sum, (T.Array("object", 1),))


def test_getattr() -> None:
    assert is_pure(getattr, (A, T.Const("shape")))
    assert is_pure(getattr, (T.Const(np), T.Const("sin")))
    assert not is_pure(getattr, (T.Const(np), T.Const("no_such_name")))  # module __getattr__
    assert not is_pure(getattr, (T.Object(fractions.Fraction), T.Const("numerator")))
    assert not is_pure(getattr, (A, T.STR))  # an unknown attribute name
    assert is_pure(getattr, (F64, T.Const("real"), T.ANY))  # the default is only returned


def test_plain_types() -> None:
    assert is_plain_type(T.Tuple((F64, T.INT)))
    assert is_plain_type(T.Tuple((F64, F64), Point))
    assert is_plain_type(T.Tuple((F64, F64), PlainPair))
    assert not is_plain_type(T.Tuple((F64,), LoudPoint))
    assert is_plain_type(T.Dict(T.STR, T.List(A)))
    assert is_plain_type(T.Const(np.float32(1.5)))
    assert is_plain_type(T.Const(np.float64))
    assert is_plain_type(T.Const((1, "a", None)))
    assert not is_plain_type(T.Const(Point))  # a user class: metaclass, __class_getitem__
    assert not is_plain_type(T.Const(math.sin))
    assert not is_plain_type(T.ANY)
    assert not is_plain_type(T.BOTTOM)


def test_immutable_types() -> None:
    assert is_immutable_type(T.Tuple((F64, T.STR, T.NONE, T.Const(3))))
    assert not is_immutable_type(A)
    assert not is_immutable_type(T.Tuple((A,)))
    assert not is_immutable_type(T.List(F64))
    assert not is_immutable_type(T.ANY)


@pytest.mark.usefixtures("scratch_table")
def test_register_pure_with_a_condition_and_unregister() -> None:
    def scale(x: float) -> float:
        return 2 * x

    assert not is_pure(scale, (F64,))
    assert register_pure(scale, lambda args, kwargs: args == (F64,)) is scale
    assert is_pure(scale, (F64,))
    assert not is_pure(scale, (T.ANY,))
    register_pure(scale)  # registering again replaces the entry
    assert is_pure(scale, (T.ANY,))
    unregister_pure(scale)
    assert not is_pure(scale, (F64,))


@pytest.mark.usefixtures("scratch_table")
def test_decorator_forms() -> None:
    @pure
    def always(x: float) -> float:
        return x

    @pure(when=lambda args, kwargs: not kwargs)
    def without_keywords(x: float, k: int = 0) -> float:
        return x

    assert always(1.0) == 1.0  # the decorator returns the function itself
    assert is_pure(always, (T.ANY,))
    assert is_pure(without_keywords, (F64,))
    assert not is_pure(without_keywords, (F64,), {"k": T.INT})


@pytest.mark.usefixtures("scratch_table")
def test_bound_builtin_methods_are_found_by_owner_and_name() -> None:
    # np.add.reduce is a new object on every access; the table still finds it.
    assert np.add.reduce is not np.add.reduce
    register_pure(np.add.reduce, purity.all_plain)
    assert is_pure(np.add.reduce, (A,))
    assert not is_pure(np.multiply.reduce, (A,))


def test_lookup_is_by_identity_not_equality() -> None:
    class EqualToEverything:
        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return hash(operator.add)

    assert not is_pure(EqualToEverything(), (F64, F64))


def test_fresh_results_are_new_arrays_of_arrays_and_numbers() -> None:
    from gibbous.ir.purity import returns_fresh

    M = T.Array("float64", 2)
    f = Function("f", [("x", M), ("y", M), ("xs", T.List(M)), ("o", T.Array("object", 1))])
    b = Builder(f)
    x, y, xs, o = f.args
    data = Constant(np.ones((2, 2)))

    def fresh(callee: object, *args: t.Any, **kwargs: t.Any) -> bool:
        return returns_fresh(b.call(callee, *args, type=T.ANY, kwargs=kwargs or None).op)

    assert fresh(operator.matmul, data, y) and fresh(np.tanh, x) and fresh(np.add, x, 1.0)
    assert fresh(np.sum, x) and fresh(operator.mul, x, y)
    # Results that may share memory with an operand, or hold its elements.
    assert not fresh(np.transpose, x) and not fresh(np.asarray, x) and not fresh(np.reshape, x, 4)
    assert not fresh(operator.add, xs, xs) and not fresh(np.positive, o)
    assert not fresh(np.add, x, y, out=x)  # writes into x: not even pure
