"""The table of type rules: for each callable, the type of its result given its argument types.

    @register_type_rule(my_module.clip01)
    def _clip01(args: tuple[Type, ...], kwargs: dict[str, Type]) -> Type:
        return args[0] if isinstance(args[0], Array) else ANY

    result_type(Const(operator.add), (INT, FLOAT), {})      # f64
    result_type(Const(np.sum), (Array("float32", 2),), {"axis": Const(0)})   # f32[:]

One table keyed by callable serves every call instruction (operators, attribute access and
iteration are calls too).  The rules themselves live in ``numbers`` (operators, math),
``numpy``, ``containers`` (containers, iteration, attributes, builtins) and
``runtime`` (the frontend's runtime helpers), each a list this module merges;
``base`` has what they share.

Rules must be sound: the type they give contains every value the call can produce.  A rule
that cannot decide returns ``Any``.  Calls with no rule are ``Any``, except calls of classes,
which make instances (``Object(cls)``) unless a metaclass or a Python ``__new__`` could make
something else.
"""

from __future__ import annotations

import builtins
import math
import operator
import typing as t
import warnings

import numpy as np

from gibbous.ir.names import CallableTable
from gibbous.ir import types as T
from gibbous import optional
from gibbous.infer.typerules import (
    containers,
    runtime,
    numbers,
    numpy,
    transforms,
)
from gibbous.infer.typerules.base import (
    BoundMethod,
    ExactInt,
    Iter,
    RuleSpec,
    TypeRule,
    const_type,
    core_type,
    is_data_value,
    is_inert,
    is_subtype,
    join,
    widen,
)
from gibbous.infer.typerules.containers import iter_item, literal_rule

__all__ = [
    "BoundMethod",
    "ExactInt",
    "Iter",
    "RuleSpec",
    "TypeRule",
    "core_type",
    "is_inert",
    "is_subtype",
    "iter_item",
    "join",
    "literal_rule",
    "lookup_type_rule",
    "register_type_rule",
    "result_type",
    "widen",
]

_TABLE: CallableTable[object, RuleSpec] = CallableTable()




def _install(spec: RuleSpec) -> None:
    for fn in spec.callables:
        _TABLE[fn] = RuleSpec((fn,), spec.rule, spec.fold, spec.stores)


for _module in (numbers, numpy, transforms, containers, runtime):
    for _spec in _module.RULES.specs:
        _install(_spec)


def register_type_rule(
    *callables: object, fold: bool = False, stores: bool = False
) -> t.Callable[[TypeRule], TypeRule]:
    """Decorator: ``rule`` gives the result type of calls of each of ``callables``.

    ``fold=True`` declares the callables pure on immutable data: a call whose arguments are all
    constants is evaluated and typed ``Const(result)``.  ``stores=True`` declares that they may
    store an argument into a container argument (as ``list.append`` does), which type
    inference must model.  A later registration replaces an earlier one.
    """

    def register(rule: TypeRule) -> TypeRule:
        _install(RuleSpec(callables, rule, fold, stores))
        return rule

    return register


def lookup_type_rule(fn: object) -> RuleSpec | None:
    optional.load()
    return _TABLE.get(fn)


def result_type(
    callee: T.Type, args: t.Sequence[T.Type], kwargs: t.Mapping[str, T.Type]
) -> T.Type:
    """The type of ``callee(*args, **kwargs)``'s result, from the types of all three."""
    args, kwargs = tuple(args), dict(kwargs)
    if any(isinstance(a, T.Bottom) for a in (callee, *args, *kwargs.values())):
        return T.BOTTOM  # one of them is never computed, so neither is the call
    match callee:
        case BoundMethod(self_type=self_type, function=fn):
            args = (self_type, *args)
        case T.Const(value=fn):
            pass
        case _:
            return T.ANY
    spec = lookup_type_rule(fn)
    if spec is None:
        return instance_type(fn) if isinstance(fn, type) else T.ANY
    if spec.fold:
        folded = _fold(fn, args, kwargs)
        if folded is not None:
            return folded
    return spec.rule(args, kwargs)


def instance_type(cls: type) -> T.Type:
    """What calling the class ``cls`` makes, when its metaclass and ``__new__`` are standard."""
    if type(cls).__call__ is not type.__call__:
        return T.ANY  # a metaclass (an Enum's, say) decides what a call returns
    for klass in cls.__mro__:
        if "__new__" in vars(klass):
            # A __new__ written in Python may return anything; C ones make instances.
            return T.ANY if isinstance(vars(klass)["__new__"], staticmethod) else T.Object(cls)
    return T.Object(cls)


# --------------------------------------------------------------------------------------------
# Constant folding


def _fold(fn: object, args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type | None:
    """``Const(fn(*values))`` when every argument is a constant of plain data, else ``None``."""
    operands = [*args, *kwargs.values()]
    if not all(isinstance(a, T.Const) and is_data_value(a.value) for a in operands):
        return None
    values = [t.cast(T.Const, a).value for a in args]
    kw = {k: t.cast(T.Const, v).value for k, v in kwargs.items()}
    guard = _FOLD_GUARDS.get(fn)
    if guard is not None and not guard(values):
        return None  # the result would be huge: type it without computing it
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = t.cast(t.Callable[..., object], fn)(*values, **kw)
    except Exception:
        return T.ANY  # the call raises; the instruction stays and raises at run time
    return const_type(value)


_MAX_FOLDED_BITS = 100_000
_MAX_FOLDED_LENGTH = 10_000


def _is_int(v: object) -> bool:
    return isinstance(v, (builtins.int, np.integer)) and not isinstance(v, builtins.bool)


def _small_power(values: list[object]) -> bool:
    if len(values) == 2 and _is_int(values[0]) and _is_int(values[1]):
        base, exp = t.cast(int, values[0]), t.cast(int, values[1])
        return exp <= 0 or abs(base) <= 1 or int(base).bit_length() * exp <= _MAX_FOLDED_BITS
    return True


def _small_shift(values: list[object]) -> bool:
    return not (len(values) == 2 and _is_int(values[1]) and t.cast(int, values[1]) > _MAX_FOLDED_BITS)


def _small_repeat(values: list[object]) -> bool:
    if len(values) != 2:
        return True
    for seq, n in (values, values[::-1]):
        if isinstance(seq, (str, bytes, tuple)) and _is_int(n):
            return len(seq) * max(t.cast(int, n), 0) <= _MAX_FOLDED_LENGTH
    return True


def _small_argument(values: list[object]) -> bool:
    return all(not _is_int(v) or abs(t.cast(int, v)) <= 1000 for v in values)


_FOLD_GUARDS: CallableTable[object, t.Callable[[list[object]], bool]] = CallableTable({
    operator.pow: _small_power,
    operator.ipow: _small_power,
    builtins.pow: _small_power,
    operator.lshift: _small_shift,
    operator.ilshift: _small_shift,
    operator.mul: _small_repeat,
    operator.imul: _small_repeat,
    math.factorial: _small_argument,
    math.comb: _small_argument,
    math.perm: _small_argument,
}.items())
