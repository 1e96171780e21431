"""Forward rules of matrix functions written once, as NumPy code.

A ``TangentFormula``'s ``tangent(z, operands, tangents, options)`` gives a call's tangent from
its result, its operands, their tangents (None: none) and its options (the other parameters,
by name, defaults filled in), in NumPy functions and Python operators.  Called on arrays it is
the rule's tangent function.  Called on ``Written`` stand-ins of IR values, each NumPy function
it calls (NumPy hands them to ``__array_function__`` and ``__array_ufunc__``) and each operator
becomes a call written into the forward program: the rule's ``Emit``, which reverse mode can
differentiate again (a Hessian-vector product).  A formula that branches on values or needs
shapes has no written form (``written=False``), and the maker tries the written form once, on
a scratch function, before choosing it (``Inexpressible``: the tangent function).

Refusals: options a formula does not take (``refuse``) make the maker return None when they
are known when the rule is built (constants), and raise ``ForwardModeError`` at run time
otherwise; so do complex values and, in the formulas, results forward mode cannot follow.
"""

from __future__ import annotations

import operator
import typing as t

import attrs
import numpy as np

from gibbous.infer.implementations import twin_helper
from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Function, Value
from gibbous.rules.frules import register
from gibbous.rules.registry import registers_for_caller
from gibbous.rules.emit import (
    Emit,
    Keywords,
    Tangent,
    Tangents,
    Values,
    checked,
    like,
    scratch,
    ForwardModeError,
    Inexpressible,
    item_tangent,
    number_type,
    real_type,
    static_types,
    zero,
)
from gibbous.infer.typerules.table import result_type

Options = t.Mapping[str, t.Any]
Operands = t.Sequence[t.Any]  # (a call's operands, or their tangents: None for none)
#: ``tangent(z, operands, tangents, options) -> dz``: None for no tangent, a tuple (of item
#: tangents, None for none) for a tuple result.
FormulaTangent = t.Callable[[t.Any, Operands, Operands, Options], t.Any]

registers_for_caller(__name__)  # (``TangentFormula.register``: its caller registers)


def _refuses_nothing(options: Options) -> str | None:
    return None


@attrs.frozen
class TangentFormula:
    """The forward rule of ``fn(*operands, *options)``: ``operands`` leading positional
    operands that may have tangents (the others' tangents are ignored: options are
    piecewise constant, ``pinv``'s ``rcond``), then ``parameters`` by position or keyword."""

    fn: object
    what: str  # the callable's name in messages: "numpy.linalg.svd"
    tangent: FormulaTangent
    operands: int = 1
    parameters: tuple[str, ...] = ()
    defaults: Options = attrs.field(factory=dict)
    #: why these options are refused (``"with hermitian=True"``), or None
    refuse: t.Callable[[Options], str | None] = _refuses_nothing
    written: bool = True  # whether ``tangent`` runs on ``Written`` stand-ins
    #: whether ``tangent`` holds for complex operands too (a holomorphic function's: ``inv``,
    #: ``solve``, ``det``); the others refuse them, by name
    holomorphic: bool = False

    def refusal(self, why: str) -> ForwardModeError:
        return ForwardModeError(f"forward mode: {self.what} {why}: no forward rule")


def register_formula(rule: TangentFormula) -> None:
    """Registers ``rule`` as the forward rule of ``rule.fn``."""

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> Tangent | Emit | None:
        n = len(types) - len(kwnames)
        k = rule.operands
        if not k <= n <= k + len(rule.parameters) or not set(kwnames) <= set(
            rule.parameters[n - k :]
        ):
            return None
        operand = _number_operand if rule.holomorphic else _real_operand
        if not all(map(operand, types[:k])):
            return None
        known = _known_options(rule, types[k:n], dict(zip(kwnames, types[n:])))
        if known is not None and rule.refuse(known) is not None:
            return None
        if rule.written and known is not None and static_types(types):
            emit = _emit(rule, known)
            if _expressible(rule.fn, emit, types, kwnames, varied):
                return emit
        return checked(_tangent_function(rule, n), types[:k])  # (options: any value)

    register(rule.fn, make, numeric=True)
    for helper in (rule.tangent, rule.refuse):  # (the tangent function calls them)
        twin_helper(helper)


def _number_operand(ty: T.Type) -> bool:
    if isinstance(ty, T.Tuple):
        return all(map(number_type, ty.items))
    return number_type(ty)


def _real_operand(ty: T.Type) -> bool:
    """A real number or array, or a tuple of them (``cho_solve``'s ``(c, lower)``)."""
    if isinstance(ty, T.Tuple):
        return all(map(real_type, ty.items))
    return real_type(ty)


def _known_options(
    rule: TangentFormula, positional: t.Sequence[T.Type], named: t.Mapping[str, T.Type]
) -> dict[str, t.Any] | None:
    """The options, if the types tell them all (constants); else None."""
    given = {**dict(zip(rule.parameters, positional)), **named}
    if not all(isinstance(ty, T.Const) for ty in given.values()):
        return None
    return {**rule.defaults, **{k: t.cast(T.Const, ty).value for k, ty in given.items()}}


def _tangent_function(rule: TangentFormula, n: int) -> Tangent:
    k = rule.operands

    def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        options = {**rule.defaults, **dict(zip(rule.parameters, a[k:n])), **kwargs}
        why = rule.refuse(options)
        if why is not None:
            raise rule.refusal(why)
        operands = a[:k]
        if not rule.holomorphic and any(map(_holds_complex, operands)):
            raise rule.refusal("of complex values (forward rules take real ones)")
        return _shaped(z, rule.tangent(z, operands, a[n : n + k], options))

    return tangent


@twin_helper  # (a tangent function calls it: derived again in a Hessian-vector product)
def _holds_complex(v: object) -> bool:
    if isinstance(v, tuple):
        return any(map(_holds_complex, v))
    return isinstance(v, (complex, np.complexfloating)) or (
        isinstance(v, np.ndarray) and v.dtype.kind == "c"
    )


@twin_helper  # (a tangent function calls it: derived again in a Hessian-vector product)
def _shaped(z: t.Any, dz: t.Any) -> t.Any:
    """``dz`` as the tangent of ``z``: zeros for None; for a tuple result (a NamedTuple
    too), the plain tuple of its items' tangents."""
    if isinstance(z, tuple):
        items = (None,) * len(z) if dz is None else dz
        return tuple(like(zi, di) for zi, di in zip(z, items))
    return like(z, dz)


# --------------------------------------------------------------------------------------------
# The written form: NumPy code run on stand-ins of IR values


class Written:
    """An IR value standing in for an array or number in a formula: NumPy functions and
    operators applied to it write their calls with the builder."""

    __slots__ = ("writer", "value")

    def __init__(self, writer: Writer, value: Value) -> None:
        self.writer, self.value = writer, value

    @property
    def ndim(self) -> int:
        ty = self.value.type
        if isinstance(ty, T.Array) and ty.ndim is not None:
            return ty.ndim
        if isinstance(ty, (T.Float, T.Const)):
            return 0
        raise Inexpressible(f"the dimensions of {ty}")

    def __bool__(self) -> bool:
        raise Inexpressible("a branch on a value")  # (the tangent function takes it)

    def __eq__(self, other: object) -> bool:  # (not identity: a comparison of values)
        raise Inexpressible("a comparison")

    def __ne__(self, other: object) -> bool:
        raise Inexpressible("a comparison")

    __hash__ = None  # type: ignore[assignment]

    def __iter__(self) -> t.Iterator[Written]:
        ty = self.value.type
        if not isinstance(ty, T.Tuple):  # (not ``__getitem__`` until it fails)
            raise Inexpressible(f"iterating over {ty}")
        return iter([self[i] for i in range(len(ty.items))])

    def __array_function__(
        self, func: t.Any, types: t.Any, args: t.Any, kwargs: t.Any
    ) -> Written:
        return self.writer.call(func, *args, **kwargs)

    def __array_ufunc__(self, ufunc: t.Any, method: str, *inputs: t.Any, **kwargs: t.Any) -> t.Any:
        if method != "__call__" or "out" in kwargs:
            return NotImplemented
        return self.writer.call(ufunc, *inputs, **kwargs)

    def __getitem__(self, index: t.Any) -> Written:
        return self.writer.call(operator.getitem, self, index)

    def __neg__(self) -> Written:
        return self.writer.call(operator.neg, self)

    def __matmul__(self, other: t.Any) -> Written:
        return self.writer.call(operator.matmul, self, other)

    def __rmatmul__(self, other: t.Any) -> Written:
        return self.writer.call(operator.matmul, other, self)

    def __add__(self, other: t.Any) -> Written:
        return self.writer.call(operator.add, self, other)

    def __radd__(self, other: t.Any) -> Written:
        return self.writer.call(operator.add, other, self)

    def __sub__(self, other: t.Any) -> Written:
        return self.writer.call(operator.sub, self, other)

    def __rsub__(self, other: t.Any) -> Written:
        return self.writer.call(operator.sub, other, self)

    def __mul__(self, other: t.Any) -> Written:
        return self.writer.call(operator.mul, self, other)

    def __rmul__(self, other: t.Any) -> Written:
        return self.writer.call(operator.mul, other, self)

    def __truediv__(self, other: t.Any) -> Written:
        return self.writer.call(operator.truediv, self, other)


def call(fn: t.Callable[..., t.Any], *args: t.Any, **kwargs: t.Any) -> t.Any:
    """``fn(*args, **kwargs)`` in a formula, for a function NumPy does not dispatch to
    ``Written`` (SciPy's): written if an argument is a stand-in."""
    for a in (*args, *kwargs.values()):
        if isinstance(a, Written):
            return a.writer.call(fn, *args, **kwargs)
    return fn(*args, **kwargs)


class Writer:
    """Writes the calls of a formula run on ``Written`` stand-ins, each typed by its type
    rule (a call whose type is not known has no written form: reverse mode needs the types)."""

    def __init__(self, b: Builder) -> None:
        self.b = b

    def stand_in(self, v: Value) -> Written:
        return Written(self, v)

    def call(self, fn: object, *args: t.Any, **kwargs: t.Any) -> Written:
        values = [self._value(a) for a in args]
        named = {k: self._value(v) for k, v in kwargs.items()}
        named_types = {k: v.type for k, v in named.items()}
        ty = result_type(T.Const(fn), [v.type for v in values], named_types)
        if isinstance(ty, T.Any):
            raise Inexpressible(f"the type of a call of {fn!r}")
        return Written(self, self.b.call(fn, *values, kwargs=named, type=ty))

    def _value(self, a: t.Any) -> Value:
        if isinstance(a, Written):
            return a.value
        if isinstance(a, tuple) and any(isinstance(x, Written) for x in a):
            items = [self._value(x) for x in a]  # (``np.concatenate((x, y))``: a tuple made)
            ty = T.Tuple(tuple(i.type for i in items))
            return self.b.call(runtime.make_tuple, *items, type=ty)
        if isinstance(a, np.ndarray):
            raise Inexpressible("an array constant")
        return Constant(a)

    def tangent_of(self, z: Value, dz: t.Any) -> Value:
        """The formula's tangent as ``z``'s: zeros for None, a tuple of the items'."""
        if dz is None:
            return zero(self.b, z)
        if isinstance(dz, tuple):
            if not isinstance(z.type, T.Tuple):
                raise Inexpressible("a tuple tangent of a value not known to be a tuple")
            items = [self._item_tangent(z, i, d) for i, d in enumerate(dz)]
            ty = T.Tuple(tuple(i.type for i in items))
            return self.b.call(runtime.make_tuple, *items, type=ty)
        return t.cast(Written, dz).value

    def _item_tangent(self, z: Value, i: int, d: Written | None) -> Value:
        if d is not None:
            return d.value
        ty = t.cast(T.Tuple, z.type).items[i]
        if isinstance(ty, (T.Float, T.Int, T.Bool)):
            return Constant(0.0)  # (``item_tangent``'s zero of a number: the item unread)
        item = self.b.call(operator.getitem, z, i, type=ty)
        return item_tangent(self.b, item, None)


def _emit(rule: TangentFormula, options: Options) -> Emit:
    k = rule.operands

    def emit(
        b: Builder, z: Value, args: Values, tangents: Tangents, kwargs: Keywords
    ) -> Value:
        w = Writer(b)
        operands = [w.stand_in(a) for a in args[:k]]
        given = [None if d is None else w.stand_in(d) for d in tangents[:k]]
        return w.tangent_of(z, rule.tangent(w.stand_in(z), operands, given, options))

    return Emit(emit)


def _expressible(
    fn: object,
    emit: Emit,
    types: tuple[T.Type, ...],
    kwnames: tuple[str, ...],
    varied: tuple[bool, ...],
) -> bool:
    """Whether ``emit`` can be written for these types: written once, into a scratch
    function, to learn it."""
    n = len(types) - len(kwnames)
    named_types = dict(zip(kwnames, types[n:]))
    z_type = result_type(T.Const(fn), types[:n], named_types)
    if isinstance(z_type, T.Any):
        return False
    b, args, tangents = scratch(types, varied)
    kwargs = dict(zip(kwnames, args[n:]))
    z = b.call(fn, *args[:n], kwargs=kwargs, type=z_type)
    try:
        emit.fn(b, z, args[:n], tangents[:n], kwargs)
    except Inexpressible:
        return False
    return True
