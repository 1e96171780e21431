"""Type rules for operators and numeric functions: ``operator``, ``math``, ``cmath``, builtins.

Operators on numbers and arrays are typed by abstract sampling (see ``base``), which
applies Python's and NumPy's own promotion (``i64 / i64 -> f64``, ``f32[:] * 0.5 -> f32[:]``).
What sampling cannot see is written out here: the value-dependent result of Python's ``**``,
in-place operators on arrays (which return their left operand), sequence operators on tuples
(whose items we track one by one), identity tests and truth values.
"""

from __future__ import annotations

import builtins
import cmath
import math
import operator
import random
import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.infer.typerules.base import (
    EXACT_INT,
    ExactInt,
    Iter,
    RuleList,
    classes_of,
    is_data_value,
    is_inert,
    join,
    join_all,
    may_share_values,
    truthiness,
    tuple_method,
)
from gibbous.infer.typerules.sampling import evaluate_on_samples, sampled, samples

RULES = RuleList()

Binary = t.Callable[[T.Type, T.Type], T.Type | None]

# --------------------------------------------------------------------------------------------
# Elementwise: numbers and arrays


def elementwise(
    fn: t.Callable[..., object], args: t.Sequence[T.Type], kwargs: t.Mapping[str, T.Type]
) -> T.Type:
    """Type a call that maps scalars and broadcast arrays elementwise (an operator, a ufunc).

    Sampling decides when every dtype and rank is known; otherwise an array of rank at least
    one in the arguments means an array result of the broadcast rank, with the dtype sampling
    finds when every array is made one-dimensional.
    """
    found = evaluate_on_samples(fn, args, kwargs)
    if found is not None:
        return found
    if not _broadcasts(fn):
        return T.ANY
    if not all(map(_numeric_operand, args)) or not all(map(_numeric_operand, kwargs.values())):
        return T.ANY
    ranks = [a.ndim for a in args if isinstance(a, T.Array)]
    if max((r for r in ranks if r is not None), default=0) == 0:
        return T.ANY  # every array might be 0-d: the result might be a NumPy scalar
    rank = None if None in ranks else max(t.cast(list[int], ranks))
    flat = [T.Array(a.dtype, 1) if isinstance(a, T.Array) else a for a in args]
    probe = evaluate_on_samples(fn, flat, kwargs)
    outputs = fn.nout if isinstance(fn, np.ufunc) else 1
    if probe is None and outputs > 1:
        return T.Tuple((T.Array(None, rank),) * outputs)
    return _with_rank(probe, rank)


def _broadcasts(fn: object) -> bool:
    """Whether ``fn`` maps elements to elements (unlike ``@`` or a generalized ufunc)."""
    if isinstance(fn, np.ufunc):
        return fn.signature is None
    return fn is not operator.matmul and fn is not operator.imatmul


def _with_rank(probe: T.Type | None, rank: int | None) -> T.Type:
    match probe:
        case T.Array(dtype=dtype):
            return T.Array(dtype, rank)
        case T.Tuple(items=items):
            return T.Tuple(tuple(_with_rank(i, rank) for i in items))
    return T.Array(None, rank)


def _numeric_operand(ty: T.Type) -> bool:
    match ty:
        case T.Bool() | T.Int() | ExactInt() | T.Float() | T.Complex() | T.Array():
            return True
        case T.Const(value=value):
            return isinstance(value, (builtins.bool, builtins.int, float, complex)) or (
                is_data_value(value) and not isinstance(value, (str, bytes, tuple, slice))
            )
    return False


# --------------------------------------------------------------------------------------------
# Sequences: tuples item by item, lists, strings


def _tuple_items(ty: T.Type) -> tuple[T.Type, ...] | None:
    """The item types of a tuple whose ``+`` and ``*`` are tuple's own."""
    match ty:
        case T.Tuple(items=items, cls=cls) if tuple_method(cls, "__add__"):
            return items
        case T.Const(value=value) if type(value) is tuple:
            return tuple(T.Const(v) for v in value)
    return None


def _repeat_count(ty: T.Type) -> int | None:
    if isinstance(ty, T.Const) and type(ty.value) in (builtins.int, builtins.bool):
        return int(t.cast(int, ty.value))
    return None


_MAX_TUPLE = 64


def _tuple_add(a: T.Type, b: T.Type) -> T.Type | None:
    ia, ib = _tuple_items(a), _tuple_items(b)
    if ia is None or ib is None:
        return None
    return T.Tuple(ia + ib)


def _tuple_mul(a: T.Type, b: T.Type) -> T.Type | None:
    for seq, count in ((a, b), (b, a)):
        items = _tuple_items(seq)
        if items is None or not _integral(count):
            continue
        n = _repeat_count(count)
        if n is None or len(items) * n > _MAX_TUPLE:
            return T.Object(tuple)
        return T.Tuple(items * max(n, 0))
    return None


def _list_add(a: T.Type, b: T.Type) -> T.Type | None:
    if isinstance(a, T.List) and isinstance(b, T.List):
        return T.List(join(a.item, b.item))
    return None


def _list_mul(a: T.Type, b: T.Type) -> T.Type | None:
    for seq, count in ((a, b), (b, a)):
        if isinstance(seq, T.List) and _integral(count):
            return seq
    return None


def _string_format(a: T.Type, b: T.Type) -> T.Type | None:
    # "%s" % x: always a str (or an error), whatever x is.
    if isinstance(a, T.Str) or (isinstance(a, T.Const) and type(a.value) is str):
        return T.STR
    return None


def sequence_item(ty: T.Type) -> T.Type | None:
    """The type of the elements of a builtin collection (what iterating over it gives)."""
    match ty:
        case T.Tuple(items=items, cls=cls) if tuple_method(cls, "__iter__"):
            return join_all(items)
        case T.Const(value=value) if type(value) is tuple:
            return join_all(T.Const(v) for v in value)
        case T.Const(value=value) if type(value) is str:
            return T.STR
        case T.List(item=item) | T.Set(item=item) | T.Dict(key=item) | Iter(item=item):
            return item
        case T.Str():
            return T.STR
    return None


def _integral(ty: T.Type) -> bool:
    return isinstance(ty, (T.Int, ExactInt, T.Bool)) or (
        isinstance(ty, T.Const) and type(ty.value) in (builtins.int, builtins.bool)
    )


# Tried in order before sampling; the first answer that is not None wins.
SEQUENCE_RULES: dict[object, tuple[Binary, ...]] = {
    operator.add: (_tuple_add, _list_add),
    operator.concat: (_tuple_add, _list_add),
    operator.mul: (_tuple_mul, _list_mul),
    operator.mod: (_string_format,),
}


# --------------------------------------------------------------------------------------------
# Python's value-dependent power


def _may_be_negative(ty: T.Type, value: object) -> bool:
    if isinstance(ty, T.Const):
        return bool(t.cast(float, ty.value) < 0)
    return type(value) is not builtins.bool  # a bool sample stands for bools only: 0 and 1


def _may_be_fractional(ty: T.Type) -> bool:
    if isinstance(ty, T.Const) and type(ty.value) is float:
        return not ty.value.is_integer()
    return True


_PY_INTEGRAL = (builtins.bool, builtins.int)
_PY_REAL = (builtins.bool, builtins.int, float)


def _python_power_extras(base: T.Type, exp: T.Type) -> T.Type:
    """Types ``base ** exp`` can have beyond what samples show (they are all positive).

    Between Python numbers, ``int ** negative int`` is a float and ``negative ** fractional``
    is a complex; NumPy scalars raise or give nan instead, whatever the values.
    """
    bs, es = samples(base), samples(exp)
    if bs is None or es is None:
        return T.BOTTOM
    extra: T.Type = T.BOTTOM
    for b in bs:
        for e in es:
            tb, te = type(b.value), type(e.value)
            if tb in _PY_INTEGRAL and te in _PY_INTEGRAL and _may_be_negative(exp, e.value):
                extra = join(extra, T.FLOAT)
            if (
                tb in _PY_REAL
                and te is float
                and _may_be_negative(base, b.value)
                and _may_be_fractional(exp)
            ):
                extra = join(extra, T.COMPLEX)
    return extra


def _power(fn: t.Callable[..., object]) -> t.Callable[[T.Type, T.Type], T.Type]:
    def rule(base: T.Type, exp: T.Type) -> T.Type:
        found = join(elementwise(fn, (base, exp), {}), _python_power_extras(base, exp))
        if isinstance(exp, (T.Int, ExactInt)) and exp.dtype == "int64":
            # ndarray ** 2 is computed by np.square, whose dtype differs for bools (int8, where
            # np.power gives int64): a Python int exponent may be that 2.
            found = join(found, elementwise(fn, (base, T.Const(2)), {}))
        return found

    return rule


# --------------------------------------------------------------------------------------------
# Binary and in-place operators


def _binary_rule(fn: t.Callable[..., object], base_op: t.Callable[..., object]) -> t.Callable[
    [tuple[T.Type, ...], dict[str, T.Type]], T.Type
]:
    special = POWER_RULES.get(base_op)
    sequence_rules = SEQUENCE_RULES.get(base_op, ())

    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        if kwargs or len(args) != 2:
            return T.ANY
        a, b = args
        for seq_rule in sequence_rules:
            found = seq_rule(a, b)
            if found is not None:
                return found
        if special is not None:
            return special(a, b)
        return elementwise(fn, args, {})

    return rule


def _inplace_rule(fn: t.Callable[..., object], base_op: t.Callable[..., object]) -> t.Callable[
    [tuple[T.Type, ...], dict[str, T.Type]], T.Type
]:
    """``a op= b``: arrays and lists are updated and returned; immutable values as ``a op b``."""
    binary = _binary_rule(fn, base_op)

    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        if kwargs or len(args) != 2:
            return T.ANY
        a, b = args
        if isinstance(a, T.Array):
            # ndarray.__iadd__ writes into a and returns it (or raises); only an operand with
            # its own __radd__ could take over, and numbers and arrays have none.
            return a if _numeric_operand(b) or isinstance(b, (T.List, T.Tuple)) else T.ANY
        if isinstance(a, T.List):
            if base_op in (operator.add, operator.concat):
                items = sequence_item(b)
                return T.ANY if items is None else T.List(join(a.item, items))
            if base_op is operator.mul and _integral(b):
                return a
            return T.ANY
        if isinstance(a, (T.Dict, T.Set)) or classes_of(a) is None:
            return T.ANY  # |= on dicts and sets updates them; anything else: unknown
        return binary(args, kwargs)

    return rule


POWER_RULES: dict[object, t.Callable[[T.Type, T.Type], T.Type]] = {
    operator.pow: _power(operator.pow),
    builtins.pow: _power(builtins.pow),
}

BINARY_OPERATORS: dict[object, object] = {
    operator.add: operator.iadd,
    operator.sub: operator.isub,
    operator.mul: operator.imul,
    operator.truediv: operator.itruediv,
    operator.floordiv: operator.ifloordiv,
    operator.mod: operator.imod,
    operator.pow: operator.ipow,
    operator.matmul: operator.imatmul,
    operator.lshift: operator.ilshift,
    operator.rshift: operator.irshift,
    operator.and_: operator.iand,
    operator.or_: operator.ior,
    operator.xor: operator.ixor,
    operator.concat: operator.iconcat,
}

# The operator rules by callable, for rules built on them (sum adds up its terms).
OPERATOR_RULES: dict[object, t.Callable[[tuple[T.Type, ...], dict[str, T.Type]], T.Type]] = {}

for _op, _iop in BINARY_OPERATORS.items():
    _base = t.cast(t.Callable[..., object], _op)
    OPERATOR_RULES[_op] = _binary_rule(_base, _base)
    OPERATOR_RULES[_iop] = _inplace_rule(t.cast(t.Callable[..., object], _iop), _base)
    RULES.add([_op], OPERATOR_RULES[_op], fold=True)
    RULES.add([_iop], OPERATOR_RULES[_iop], fold=True)


# --------------------------------------------------------------------------------------------
# Comparisons


def _builtin_container(ty: T.Type) -> bool:
    match ty:
        case T.Tuple(cls=cls):
            return tuple_method(cls, "__eq__") and tuple_method(cls, "__lt__")
        case T.List() | T.Dict() | T.Set() | T.Str() | T.NoneType():
            return True
        case T.Const(value=value):
            return type(value) in (str, tuple)
    return False


def _plain_items(ty: T.Type) -> bool:
    """Whether comparing items of ``ty`` gives bools: numbers, strings, None, all the way down."""
    match ty:
        case T.Bool() | T.Int() | ExactInt() | T.Float() | T.Complex() | T.Str() | T.NoneType():
            return True
        case T.Bottom():
            return True
        case T.Const(value=value):
            return is_data_value(value)
        case T.Tuple(items=items):
            return all(map(_plain_items, items))
        case T.List(item=item) | T.Set(item=item):
            return _plain_items(item)
    return False


def _comparison_rule(fn: t.Callable[..., object], equality: bool) -> t.Callable[
    [tuple[T.Type, ...], dict[str, T.Type]], T.Type
]:
    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        if kwargs or len(args) != 2:
            return T.ANY
        found = elementwise(fn, args, {})
        if not isinstance(found, T.Any):
            return found
        a, b = args
        if _builtin_container(a) and _builtin_container(b):
            # == and != on builtin containers always reduce to a bool; < returns the result of
            # comparing the first differing items, a bool only if those give bools.
            if equality or (_plain_items(a) and _plain_items(b)):
                return T.BOOL
        return found

    return rule


for _cmp, _equality in (
    (operator.lt, False),
    (operator.le, False),
    (operator.gt, False),
    (operator.ge, False),
    (operator.eq, True),
    (operator.ne, True),
):
    RULES.add([_cmp], _comparison_rule(t.cast(t.Callable[..., object], _cmp), _equality), fold=True)


@RULES(operator.contains, fold=True)
def _contains(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.BOOL  # `in` makes a bool of whatever __contains__ returns


@RULES(operator.truth, builtins.bool, fold=True)
def _truth(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if kwargs or len(args) > 1:
        return T.ANY
    if not args:
        return T.Const(False)  # bool()
    known = truthiness(args[0])
    if known is None:
        return T.BOOL  # bool(x) calls __bool__, which must return a bool
    return T.Const(known)


def _negate(ty: T.Type) -> T.Type:
    return T.Const(not ty.value) if isinstance(ty, T.Const) else ty


@RULES(operator.not_, fold=True)
def _not(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return _negate(_truth(args, kwargs))


# (and NumPy's "not given" sentinel, ``x is np._NoValue`` all over NumPy's own Python)
_IDENTITY_VALUES: tuple[type, ...] = (
    type(None), builtins.bool, type(Ellipsis), type(NotImplemented),
    type(getattr(np, "_NoValue", None)),
)  # fmt: skip


def _identical(a: T.Type, b: T.Type) -> T.Type:
    if isinstance(a, T.NoneType) and isinstance(b, T.NoneType):
        return T.Const(True)  # None is a singleton
    if isinstance(a, T.Const) and isinstance(b, T.Const):
        # Only objects with a guaranteed identity: small ints or equal strings may or may not be
        # the same object.
        if isinstance(a.value, _IDENTITY_VALUES) or callable(a.value):
            return T.Const(a.value is b.value)
    if not may_share_values(a, b):
        return T.Const(False)
    return T.BOOL


@RULES(operator.is_, fold=False)
def _is(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if kwargs or len(args) != 2:
        return T.ANY
    return _identical(*args)


@RULES(operator.is_not, fold=False)
def _is_not(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return _negate(_is(args, kwargs))


# --------------------------------------------------------------------------------------------
# Unary operators


def _unary_rule(fn: t.Callable[..., object]) -> t.Callable[
    [tuple[T.Type, ...], dict[str, T.Type]], T.Type
]:
    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        if kwargs or len(args) != 1:
            return T.ANY
        return elementwise(fn, args, {})

    return rule


for _un in (operator.neg, operator.pos, operator.invert, operator.inv, operator.abs, builtins.abs):
    RULES.add([_un], _unary_rule(t.cast(t.Callable[..., object], _un)), fold=True)


@RULES(operator.index, fold=True)
def _index(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    found = evaluate_on_samples(operator.index, args, kwargs)
    # (an int whatever it is given, or it raises: ``__index__`` must return one)
    return T.INT if found is None and not kwargs and len(args) == 1 else found or T.ANY


# --------------------------------------------------------------------------------------------
# math, cmath and numeric builtins


def _math_functions() -> list[object]:
    found: list[object] = []
    for module in (math, cmath):
        for name in dir(module):
            obj = getattr(module, name)
            if callable(obj) and not name.startswith("_"):
                found.append(obj)
    return found


for _fn in _math_functions():
    RULES.add([_fn], sampled(t.cast(t.Callable[..., object], _fn)), fold=True)

for _fn in (builtins.divmod, builtins.round):
    RULES.add([_fn], sampled(_fn), fold=True)


@RULES(builtins.pow, fold=True)
def _pow(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if len(args) == 2 and not kwargs:
        return POWER_RULES[builtins.pow](*args)
    return sampled(builtins.pow)(args, kwargs)  # pow(a, b, mod): integers only


@RULES(builtins.int, fold=True)
def _int(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    # int() converts whatever __int__/__index__ return into an exact int.
    return EXACT_INT


@RULES(builtins.float, fold=True)
def _float(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.FLOAT


@RULES(builtins.complex, fold=True)
def _complex(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.COMPLEX


@RULES(builtins.str, fold=True)
def _str(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    # A user __str__ may return an instance of a str subclass, which str() passes through.
    return T.STR if all(map(is_inert, args)) and all(map(is_inert, kwargs.values())) else T.Object(str)


@RULES(builtins.hash, builtins.id)
def _hash(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return EXACT_INT



# --------------------------------------------------------------------------------------------
# Python's random module: its functions (methods bound to the module's Random instance) and
# the methods of random.Random with the instance first.  Not folded: a draw advances its
# generator.  A float draw of Python numbers is a float (``mu + sigma z``); of anything else
# (an array sigma, a user number) unknown.

_FLOAT_DRAWS = ("random", "gauss", "normalvariate", "lognormvariate", "uniform", "expovariate")
_INT_DRAWS = ("randint", "randrange", "getrandbits")


Rule = t.Callable[[tuple[T.Type, ...], dict[str, T.Type]], T.Type]


def _draw_rule(result: T.Type, skip: int) -> Rule:
    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        params = (*args[skip:], *kwargs.values())
        numbers = all(T.is_subtype(a, T.FLOAT) or T.is_subtype(a, T.INT) for a in params)
        return result if numbers else T.ANY

    return rule


def _choice_rule(skip: int) -> Rule:
    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        seq = args[skip] if len(args) == skip + 1 and not kwargs else None
        if isinstance(seq, T.List):
            return seq.item
        if isinstance(seq, T.Tuple) and seq.items:
            return join_all(seq.items)
        return T.ANY

    return rule


for _skip, _owner in ((0, random), (1, random.Random)):
    for _name in _FLOAT_DRAWS:
        RULES.add([getattr(_owner, _name)], _draw_rule(T.FLOAT, _skip))
    for _name in _INT_DRAWS:
        RULES.add([getattr(_owner, _name)], _draw_rule(T.INT, _skip))
    RULES.add([getattr(_owner, "choice")], _choice_rule(_skip))
    RULES.add([getattr(_owner, "shuffle"), getattr(_owner, "seed")], lambda args, kwargs: T.NONE)
