"""Type rules, checked against what Python and NumPy actually return.

For each case (a callable and argument types), ``result_type`` predicts a type; the callable is
then run on random values of the argument types (every class a type admits: Python and NumPy
scalars, bools where the lattice puts them under ``Int``, arrays of random broadcastable
shapes, empty containers) and every result must conform to the prediction.  A call that raises
proves nothing and is skipped.
"""

from __future__ import annotations

import builtins
import cmath
import collections.abc
import inspect
import itertools
import math
import operator
import random
import typing as t
import warnings

import numpy as np
import pytest

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.infer.typerules.table import (
    BoundMethod,
    ExactInt,
    Iter,
    core_type,
    lookup_type_rule,
    register_type_rule,
    result_type,
)
from gibbous.infer.typerules.base import format_rule_type, is_subtype, join, widen

C = T.Const
EXACT = ExactInt()

# --------------------------------------------------------------------------------------------
# Random values of a type, and whether a value conforms to a type


Shape = tuple[int, ...]


def _random_int(rng: random.Random) -> int:
    return rng.choice([0, 1, 2, 3, -1, -2, 5, 7, 12, 40, -8])


def _random_float(rng: random.Random) -> float:
    return rng.choice([0.0, 1.5, -2.0, 0.5, -0.25, 3.0, 7.75, -9.5, 1e-3])


def _numpy_scalar(dtype: str, rng: random.Random) -> object:
    kind = np.dtype(dtype).kind
    if kind == "b":
        return np.bool_(rng.random() < 0.5)
    if kind == "u":
        return np.dtype(dtype).type(rng.choice([0, 1, 2, 3, 7, 200]) % 2 ** (8 * np.dtype(dtype).itemsize))
    if kind == "i":
        return np.dtype(dtype).type(_random_int(rng))
    if kind == "f":
        return np.dtype(dtype).type(_random_float(rng))
    return np.dtype(dtype).type(complex(_random_float(rng), _random_float(rng)))


_ANY_DTYPES = ["float64", "float32", "int64", "int8", "uint8", "bool", "complex128", "object"]


def _random_array(dtype: str | None, shape: Shape, rng: random.Random) -> np.ndarray:  # type: ignore[type-arg]
    dt = np.dtype(dtype if dtype is not None else rng.choice(_ANY_DTYPES))
    size = int(np.prod(shape))
    if dt.kind == "O":
        return np.array([_random_int(rng) for _ in range(size)], dtype=object).reshape(shape)
    flat = [_numpy_scalar(dt.name, rng) for _ in range(size)]
    return np.array(flat, dtype=dt).reshape(shape)


def _shape(ndim: int, base: Shape, rng: random.Random) -> Shape:
    dims = list(base[len(base) - ndim :]) if ndim <= len(base) else [2] * ndim
    return tuple(1 if rng.random() < 0.2 else d for d in dims)


def value_of(ty: T.Type, rng: random.Random, base: Shape = (2, 3, 2)) -> object:
    """A random value of ``ty``: any class it admits, any value."""
    match ty:
        case T.Const(value=value):
            return value
        case T.Bool():
            return rng.choice([True, False, np.True_, np.False_])
        case ExactInt(dtype=d) | T.Int(dtype=d):
            choices: list[object] = [_numpy_scalar(d, rng)]
            if d == "int64":
                choices.append(_random_int(rng))
            if isinstance(ty, T.Int) and d == "int64":  # Bool <= Int("int64") only
                choices += [rng.choice([True, False]), np.bool_(rng.random() < 0.5)]
            return rng.choice(choices)
        case T.Float(dtype=d):
            return rng.choice([_numpy_scalar(d, rng)] + ([_random_float(rng)] if d == "float64" else []))
        case T.Complex(dtype=d):
            py = complex(_random_float(rng), _random_float(rng))
            return rng.choice([_numpy_scalar(d, rng)] + ([py] if d == "complex128" else []))
        case T.Str():
            return rng.choice(["", "a", "ab", "xyz"])
        case T.NoneType():
            return None
        case T.Array(dtype=dtype, ndim=ndim):
            nd = ndim if ndim is not None else rng.choice([0, 1, 2, 3])
            return _random_array(dtype, _shape(nd, base, rng), rng)
        case T.Tuple(items=items):
            return tuple(value_of(i, rng, base) for i in items)
        case T.List(item=item):
            if isinstance(item, T.Bottom):
                return []
            return [value_of(item, rng, base) for _ in range(rng.choice([0, 1, 2, 3]))]
        case T.Set(item=item):
            return set() if isinstance(item, T.Bottom) else {value_of(item, rng, base) for _ in range(rng.choice([0, 1, 2]))}
        case T.Dict(key=key, value=value):
            if isinstance(key, T.Bottom):
                return {}
            return {value_of(key, rng, base): value_of(value, rng, base) for _ in range(rng.choice([0, 1, 2]))}
        case T.Object(cls=cls) if cls is range:
            return range(rng.choice([0, 1, 3]), rng.choice([2, 5]))
        case T.Object(cls=cls) if cls is slice:
            return slice(rng.choice([None, 0, 1, -1]), rng.choice([None, 2, -1]))
    raise NotImplementedError(f"no values for {ty}")


def _unbound(method: object) -> object:
    func = getattr(method, "__func__", None)
    if func is not None:
        return func
    owner = getattr(method, "__self__", None)
    return inspect.getattr_static(type(owner), getattr(method, "__name__", ""), None)


def conforms(value: object, ty: T.Type) -> bool:
    """Whether ``value`` is one of the values of ``ty`` (rule-level types included)."""
    match ty:
        case T.Any():
            return True
        case T.Bottom():
            return False
        case T.Const():
            try:
                return T.Const(value) == ty
            except TypeError:
                return False
        case ExactInt(dtype=d):
            if type(value) is int:
                return d == "int64"
            return isinstance(value, np.integer) and value.dtype.name == d
        case Iter(item=item, cls=cls):
            return isinstance(value, cls) and all(
                conforms(x, item) for x in itertools.islice(t.cast(t.Iterable[object], value), 5)
            )
        case BoundMethod(self_type=receiver, function=fn):
            return conforms(getattr(value, "__self__", None), receiver) and _unbound(value) is fn
        case T.Tuple(items=items, cls=cls):
            return (
                isinstance(value, cls)
                and len(value) == len(items)
                and all(conforms(v, i) for v, i in zip(value, items))
            )
        case T.List(item=item):
            return type(value) is list and all(conforms(v, item) for v in value)
        case T.Set(item=item):
            return type(value) is set and all(conforms(v, item) for v in value)
        case T.Dict(key=key, value=val):
            return type(value) is dict and all(
                conforms(k, key) and conforms(v, val) for k, v in value.items()
            )
    return T.is_subtype(T.typeof(value), ty)


def check_case(
    fn: object,
    args: t.Sequence[T.Type],
    kwargs: t.Mapping[str, T.Type] | None = None,
    draws: int = 12,
    seed: int = 0,
    sweep: Sweep | None = None,
) -> int:
    """Run ``fn`` on random arguments of the types; assert each result conforms to the rule's
    prediction.  Returns how many calls succeeded; fails when none did (the check compared
    nothing), unless it is part of a ``sweep``, which counts instead."""
    kwargs = dict(kwargs or {})
    predicted = result_type(C(fn), args, kwargs)
    # A string seed: hash() of a string changes between processes, and so would the draws.
    rng = random.Random(f"{seed}|{args!r}|{sorted(kwargs.items())!r}")
    ok = 0
    for i in range(draws):
        base = rng.choice([(2, 3, 2), (2, 2, 2), (3, 1, 2), (1, 1, 1), (0, 2, 2)])
        values = [value_of(a, rng, base) for a in args]
        kw = {k: value_of(v, rng, base) for k, v in kwargs.items()}
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = t.cast(t.Callable[..., object], fn)(*values, **kw)
        except Exception:
            continue
        ok += 1
        assert conforms(out, predicted), (
            f"{_name(fn)}({', '.join(map(repr, values))}, {kw}) returned {out!r} "
            f"({type(out).__name__}), not of the predicted "
            f"{format_rule_type(predicted)} for arguments "
            f"{[format_rule_type(a) for a in args]} {({k: format_rule_type(v) for k, v in kwargs.items()})}"
        )
    if sweep is not None:
        sweep.count(ok)
    else:
        assert ok, (
            f"no draw of {_name(fn)}{tuple(format_rule_type(a) for a in args)} ran: the check "
            "compared nothing"
        )
    return ok


class Sweep:
    """``check_case`` over every combination of a pool of types, where many combinations
    always raise (``str - int``): counts the combinations that ran, and fails unless at least
    ``floor`` of them did, so that a sweep whose draws all fail cannot pass."""

    def __init__(self, floor: float) -> None:
        self.floor, self.combinations, self.ran = floor, 0, 0

    def count(self, ok: int) -> None:
        self.combinations += 1
        self.ran += ok > 0

    def __enter__(self) -> Sweep:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            assert self.ran >= max(1, self.floor * self.combinations), (
                f"only {self.ran} of {self.combinations} combinations ran a draw "
                f"(at least {self.floor:.0%} should)"
            )


def _name(fn: object) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _id(x: object) -> str:
    if isinstance(x, T.Type):
        return format_rule_type(x)
    return _name(x) if callable(x) else repr(x)


# --------------------------------------------------------------------------------------------
# Type pools

SCALARS: list[T.Type] = [
    T.BOOL,
    T.INT,
    EXACT,
    T.Int("int32"),
    T.Int("uint8"),
    T.FLOAT,
    T.Float("float32"),
    T.COMPLEX,
    T.Complex("complex64"),
    C(3),
    C(-2),
    C(0),
    C(2.5),
    C(-1.5),
    C(True),
    C(np.float32(1.5)),
    C(2j),
]
ARRAYS: list[T.Type] = [
    T.Array("float64", 0),
    T.Array("float64", 1),
    T.Array("float64", 2),
    T.Array("float32", 2),
    T.Array("int64", 1),
    T.Array("int32", 2),
    T.Array("bool", 1),
    T.Array("complex128", 1),
    T.Array(None, 1),
    T.Array("float64", None),
]
SEQUENCES: list[T.Type] = [
    T.STR,
    C("ab"),
    T.Tuple((T.INT, T.FLOAT)),
    T.Tuple((EXACT,)),
    C((1, 2.5)),
    T.Tuple(()),
    T.List(T.FLOAT),
    T.List(EXACT),
    T.List(T.BOTTOM),
    T.NONE,
]

BINARY = [
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.floordiv,
    operator.mod,
    operator.pow,
    operator.matmul,
    operator.lshift,
    operator.rshift,
    operator.and_,
    operator.or_,
    operator.xor,
]
INPLACE = [
    operator.iadd,
    operator.isub,
    operator.imul,
    operator.itruediv,
    operator.ifloordiv,
    operator.imod,
    operator.ipow,
    operator.imatmul,
    operator.iand,
    operator.ior,
    operator.ixor,
]
COMPARISONS = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]
UNARY = [operator.neg, operator.pos, operator.invert, operator.abs, operator.not_, operator.truth, abs]


# --------------------------------------------------------------------------------------------
# Operators


@pytest.mark.parametrize("op", BINARY + COMPARISONS, ids=_name)
def test_binary_operators_on_numbers_and_arrays(op: object) -> None:
    with Sweep(0.05) as sweep:
        pool = SCALARS + ARRAYS
        for a in pool:
            for b in pool:
                check_case(op, (a, b), draws=6, sweep=sweep)


@pytest.mark.parametrize("op", INPLACE, ids=_name)
def test_inplace_operators(op: object) -> None:
    with Sweep(0.02) as sweep:
        pool = SCALARS + ARRAYS
        for a in pool:
            for b in pool:
                check_case(op, (a, b), draws=6, sweep=sweep)


SEQUENCE_OPERATORS = [operator.add, operator.mul, operator.contains, operator.iadd, operator.imul]


@pytest.mark.parametrize("op", SEQUENCE_OPERATORS + COMPARISONS, ids=_name)
def test_operators_on_sequences(op: object) -> None:
    with Sweep(0.1) as sweep:
        pool = SEQUENCES + [T.INT, C(2), C(-1), T.FLOAT]
        for a in pool:
            for b in pool:
                check_case(op, (a, b), sweep=sweep)


@pytest.mark.parametrize("op", UNARY, ids=_name)
def test_unary_operators(op: object) -> None:
    with Sweep(0.2) as sweep:
        for a in SCALARS + ARRAYS + SEQUENCES:
            check_case(op, (a,), sweep=sweep)


def test_python_power_is_value_dependent() -> None:
    # int ** int is a float for a negative exponent; a negative float to a fractional power
    # is complex: only a constant exponent or base decides.
    assert result_type(C(operator.pow), (EXACT, EXACT), {}) == T.ANY
    assert result_type(C(operator.pow), (EXACT, C(2)), {}) == EXACT
    assert result_type(C(operator.pow), (T.FLOAT, C(0.5)), {}) == T.ANY
    assert result_type(C(operator.pow), (T.FLOAT, C(2)), {}) == T.FLOAT
    assert result_type(C(operator.pow), (T.FLOAT, EXACT), {}) == T.FLOAT
    assert result_type(C(operator.pow), (C(2.0), T.FLOAT), {}) == T.FLOAT
    assert result_type(C(operator.pow), (T.Array("int64", 1), C(2)), {}) == T.Array("int64", 1)


def test_numpy_promotion_with_weak_python_scalars() -> None:
    f32 = T.Array("float32", 2)
    assert result_type(C(operator.mul), (f32, C(0.5)), {}) == f32  # NEP 50: 0.5 is weak
    assert result_type(C(operator.mul), (T.Float("float32"), C(0.5)), {}) == T.Float("float32")
    # A Float argument may be an np.float64, which is strong: the dtype is not known.
    assert result_type(C(operator.mul), (f32, T.FLOAT), {}) == T.Array(None, 2)
    assert result_type(C(operator.truediv), (EXACT, EXACT), {}) == T.FLOAT
    assert result_type(C(operator.add), (T.INT, T.FLOAT), {}) == T.FLOAT
    assert result_type(C(operator.lt), (T.Array("float64", 2), T.FLOAT), {}) == T.Array("bool", 2)
    # All operands 0-d: NumPy returns a scalar, not an array.
    assert result_type(C(operator.add), (T.Array("float64", 0), C(1.0)), {}) == T.FLOAT


def test_tuple_operators_keep_items() -> None:
    pair = T.Tuple((T.INT, T.FLOAT))
    assert result_type(C(operator.add), (pair, T.Tuple((T.STR,))), {}) == T.Tuple(
        (T.INT, T.FLOAT, T.STR)
    )
    assert result_type(C(operator.mul), (pair, C(2)), {}) == T.Tuple((T.INT, T.FLOAT) * 2)
    assert result_type(C(operator.getitem), (pair, C(1)), {}) == T.FLOAT
    assert result_type(C(operator.getitem), (pair, C(-2)), {}) == T.INT
    assert result_type(C(operator.getitem), (pair, C(slice(1, None))), {}) == T.Tuple((T.FLOAT,))
    assert result_type(C(operator.getitem), (pair, EXACT), {}) == T.ANY  # int | float


def test_constant_folding() -> None:
    assert result_type(C(operator.add), (C(1), C(2)), {}) == C(3)
    assert result_type(C(operator.truediv), (C(1), C(0)), {}) == T.ANY  # raises at run time
    assert result_type(C(operator.getitem), (C((1, "a")), C(1)), {}) == C("a")
    assert result_type(C(math.sqrt), (C(4.0),), {}) == C(2.0)
    assert result_type(C(len), (C("abc"),), {}) == C(3)
    assert result_type(C(np.exp), (C(0.0),), {}) == C(np.float64(1.0))
    # Huge results are typed without being computed.
    assert result_type(C(operator.pow), (C(10), C(10**9)), {}) == EXACT
    assert result_type(C(operator.mul), (C("ab"), C(10**9)), {}) == T.STR


@pytest.mark.parametrize(
    "fn, args",
    [
        (operator.add, (C(1), C(2))),
        (operator.pow, (C(2), C(-1))),
        (operator.pow, (C(-8.0), C(1 / 3))),
        (operator.floordiv, (C(7), C(-2))),
        (operator.getitem, (C((1, 2.5)), C(-1))),
        (operator.mod, (C("%s!"), C(3))),
        (math.floor, (C(2.5),)),
        (abs, (C(-3),)),
        (round, (C(2.567), C(2))),
        (divmod, (C(7.5), C(2))),
        (operator.not_, (C(0),)),
        (len, (C((1, 2, 3)),)),
    ],
)
def test_folded_constants_are_the_values(fn: object, args: tuple[T.Type, ...]) -> None:
    predicted = result_type(C(fn), args, {})
    assert isinstance(predicted, T.Const)
    check_case(fn, args, draws=1)


# --------------------------------------------------------------------------------------------
# Identity, truth, isinstance


def test_identity_and_truth() -> None:
    assert result_type(C(operator.is_), (T.NONE, T.NONE), {}) == C(True)
    assert result_type(C(operator.is_), (T.Array("float64", 1), T.NONE), {}) == C(False)
    assert result_type(C(operator.is_not), (T.FLOAT, T.NONE), {}) == C(True)
    assert result_type(C(operator.is_), (T.ANY, T.NONE), {}) == T.BOOL
    assert result_type(C(operator.is_), (C(1), C(1)), {}) == T.BOOL  # ints may be distinct objects
    assert result_type(C(operator.not_), (T.NONE,), {}) == C(True)
    assert result_type(C(operator.truth), (T.Tuple((T.ANY,)),), {}) == C(True)
    assert result_type(C(operator.not_), (T.ANY,), {}) == T.BOOL
    assert result_type(C(operator.contains), (T.ANY, T.ANY), {}) == T.BOOL


@pytest.mark.parametrize(
    "ty, cls, expected",
    [
        (T.FLOAT, float, C(True)),  # np.float64 is a float
        (T.FLOAT, np.float64, T.BOOL),
        (T.INT, int, T.BOOL),  # np.int64 is not an int
        (EXACT, np.integer, T.BOOL),
        (T.Array("float64", 1), np.ndarray, C(True)),
        (T.Array("float64", 1), (list, tuple), C(False)),
        (T.STR, str, C(True)),
        (T.Object(ValueError), Exception, C(True)),
        (T.Object(Exception), ValueError, T.BOOL),
        (T.ANY, int, T.BOOL),
        (T.List(T.INT), list, C(True)),
    ],
)
def test_isinstance(ty: T.Type, cls: object, expected: T.Type) -> None:
    assert result_type(C(isinstance), (ty, C(cls)), {}) == expected
    if not isinstance(ty, (T.Any, T.Object)):
        check_case(isinstance, (ty, C(cls)))


# --------------------------------------------------------------------------------------------
# math and numeric builtins


def _math_cases() -> list[tuple[object, int]]:
    cases = []
    for module in (math, cmath):
        for name in dir(module):
            fn = getattr(module, name)
            if not callable(fn) or name.startswith("_"):
                continue
            try:
                sig = inspect.signature(fn)
                n = len([p for p in sig.parameters.values() if p.default is inspect.Parameter.empty and p.kind != p.VAR_POSITIONAL])
            except (TypeError, ValueError):
                n = 1
            cases.append((fn, max(n, 1)))
    return cases


@pytest.mark.parametrize("fn, arity", _math_cases(), ids=_id)
def test_math_functions(fn: object, arity: int) -> None:
    with Sweep(0.005) as sweep:
        pool = SCALARS + [T.List(T.FLOAT), T.Tuple((T.FLOAT, T.FLOAT))]
        # (three-argument functions such as math.fma on 3.13: a smaller pool)
        for args in itertools.product(pool if arity <= 2 else SCALARS[:8], repeat=arity):
            check_case(fn, args, draws=6, sweep=sweep)


@pytest.mark.parametrize(
    "fn", [abs, round, divmod, pow, int, float, bool, complex, str, hash, min, max], ids=_name
)
def test_numeric_builtins(fn: object) -> None:
    with Sweep(0.1) as sweep:
        pool = SCALARS + [T.STR, T.Array("float64", 0), T.Array("float64", 1)]
        for a in pool:
            check_case(fn, (a,), sweep=sweep)
            for b in [T.INT, C(2), T.FLOAT, C(-1), T.Float("float32"), EXACT]:
                check_case(fn, (a, b), draws=6, sweep=sweep)


def test_math_result_types() -> None:
    assert result_type(C(math.sqrt), (T.INT,), {}) == T.FLOAT
    assert result_type(C(math.floor), (T.FLOAT,), {}) == EXACT
    assert result_type(C(math.gcd), (EXACT, EXACT), {}) == EXACT
    assert result_type(C(math.factorial), (EXACT,), {}) == EXACT
    assert result_type(C(math.factorial), (C(5),), {}) == C(120)
    assert result_type(C(round), (T.FLOAT,), {}) == EXACT
    assert result_type(C(round), (T.FLOAT, C(2)), {}) == T.FLOAT
    assert result_type(C(abs), (T.COMPLEX,), {}) == T.FLOAT
    assert result_type(C(float), (T.ANY,), {}) == T.FLOAT
    assert result_type(C(int), (T.ANY,), {}) == EXACT


# --------------------------------------------------------------------------------------------
# Containers, iteration, builtins


CONTAINERS: list[T.Type] = [
    T.Tuple((T.INT, T.FLOAT, T.STR)),
    T.Tuple(()),
    C((1, 2)),
    T.List(T.FLOAT),
    T.List(T.List(EXACT)),
    T.List(T.BOTTOM),
    T.Set(EXACT),
    T.Dict(T.STR, T.FLOAT),
    T.Dict(T.BOTTOM, T.BOTTOM),
    T.STR,
    T.Array("float64", 1),
    T.Array("int32", 2),
    T.Object(range),
    T.List(T.Tuple((T.STR, T.FLOAT))),
]


@pytest.mark.parametrize(
    "fn", [len, iter, tuple, list, set, sorted, reversed, enumerate, zip, min, max, sum, any, all, dict, frozenset], ids=_name
)
def test_container_builtins(fn: object) -> None:
    with Sweep(0.2) as sweep:
        for c in CONTAINERS:
            check_case(fn, (c,), sweep=sweep)
        check_case(fn, (), sweep=sweep)


def test_iteration() -> None:
    for c in CONTAINERS:
        it = result_type(C(iter), (c,), {})
        check_case(iter, (c,))
        if isinstance(it, Iter):
            # next() on a fresh iterator of a value of the container type
            item = result_type(C(next), (it,), {})
            rng = random.Random(1)
            for _ in range(10):
                value = value_of(c, rng)
                for x in t.cast(t.Iterable[object], value):
                    assert conforms(x, item), (c, x, item)
    assert result_type(C(next), (Iter(T.FLOAT), C(None)), {}) == T.ANY  # f64 | None
    assert result_type(C(next), (Iter(EXACT), C(0)), {}) == EXACT
    array_items = result_type(C(next), (result_type(C(iter), (T.Array("float32", 2),), {}),), {})
    assert array_items == T.Array("float32", 1)
    assert result_type(C(next), (result_type(C(iter), (T.Array("float32", 1),), {}),), {}) == T.Float("float32")
    assert result_type(C(iter), (T.Object(range),), {}) == Iter(EXACT)


def test_zip_enumerate_reversed_range() -> None:
    check_case(zip, (T.List(T.FLOAT), T.Tuple((EXACT, EXACT))))
    check_case(zip, (T.STR, T.Array("float64", 2), T.Object(range)))
    check_case(enumerate, (T.List(T.STR),), {"start": C(1)})
    check_case(enumerate, (T.List(T.STR), T.INT))
    assert result_type(C(enumerate), (T.List(T.STR),), {}) == Iter(T.Tuple((EXACT, T.STR)), enumerate)
    for args in [(EXACT,), (C(3),), (EXACT, C(10), C(2))]:
        check_case(range, args)
        assert result_type(C(range), args, {}) == T.Object(range)


@pytest.mark.parametrize("fn", [operator.getitem], ids=_name)
def test_getitem_on_containers(fn: object) -> None:
    with Sweep(0.3) as sweep:
        indices: list[T.Type] = [EXACT, T.INT, T.BOOL, C(0), C(-1), C(5), C(slice(1, None)), T.Object(slice), T.STR, C(True)]
        for c in CONTAINERS:
            for i in indices:
                check_case(fn, (c, i), draws=10, sweep=sweep)


def test_constructors() -> None:
    assert result_type(C(tuple), (), {}) == C(())
    assert result_type(C(tuple), (T.Tuple((T.INT, T.STR)),), {}) == T.Tuple((T.INT, T.STR))
    assert result_type(C(tuple), (T.List(T.INT),), {}) == T.Object(tuple)
    assert result_type(C(list), (T.Tuple((EXACT, T.FLOAT)),), {}) == T.List(T.ANY)
    assert result_type(C(list), (T.Tuple((EXACT, EXACT)),), {}) == T.List(EXACT)
    assert result_type(C(list), (), {}) == T.List(T.BOTTOM)
    assert result_type(C(dict), (), {"a": T.FLOAT}) == T.Dict(T.STR, T.FLOAT)
    assert result_type(C(dict), (T.List(T.Tuple((T.STR, EXACT))),), {}) == T.Dict(T.STR, EXACT)
    assert result_type(C(set), (T.STR,), {}) == T.Set(T.STR)
    check_case(dict, (T.List(T.Tuple((T.STR, EXACT))),), {"b": T.FLOAT})


def test_sum_min_max() -> None:
    assert result_type(C(sum), (T.List(T.FLOAT),), {}) == T.ANY  # sum([]) is the int 0
    assert result_type(C(sum), (T.List(T.FLOAT), C(0.0)), {}) == T.FLOAT
    assert result_type(C(sum), (T.Tuple((T.FLOAT, T.FLOAT)),), {}) == T.FLOAT
    assert result_type(C(sum), (T.List(EXACT),), {}) == EXACT
    assert result_type(C(max), (EXACT, T.FLOAT), {}) == T.ANY  # returns one of them, unconverted
    assert result_type(C(max), (T.FLOAT, C(0.0)), {}) == T.FLOAT
    assert result_type(C(min), (T.List(T.STR),), {}) == T.STR
    for args in [(T.List(T.FLOAT), C(0.0)), (T.Array("float32", 1),), (T.List(T.Array("float64", 1)), T.Array("float64", 1))]:
        check_case(sum, args)


@pytest.mark.parametrize(
    "method, receiver, args",
    [
        (list.append, T.List(T.INT), (T.INT,)),
        (list.pop, T.List(T.FLOAT), ()),
        (list.copy, T.List(T.FLOAT), ()),
        (list.index, T.List(T.FLOAT), (T.FLOAT,)),
        (dict.get, T.Dict(T.STR, T.FLOAT), (T.STR,)),
        (dict.get, T.Dict(T.STR, T.FLOAT), (T.STR, EXACT)),
        (dict.pop, T.Dict(T.STR, T.FLOAT), (T.STR, C(None))),
        (dict.setdefault, T.Dict(T.STR, T.FLOAT), (T.STR, T.FLOAT)),
        (dict.keys, T.Dict(T.STR, T.FLOAT), ()),
        (dict.values, T.Dict(T.STR, T.FLOAT), ()),
        (dict.items, T.Dict(T.STR, T.FLOAT), ()),
        (dict.popitem, T.Dict(T.STR, T.FLOAT), ()),
        (set.union, T.Set(EXACT), (T.List(T.STR),)),
        (set.intersection, T.Set(EXACT), (T.Set(EXACT),)),
        (str.upper, T.STR, ()),
        (str.split, T.STR, ()),
        (str.join, T.STR, (T.List(T.STR),)),
        (str.find, T.STR, (T.STR,)),
        (str.startswith, T.STR, (T.STR,)),
    ],
    ids=_id,
)
def test_methods(method: object, receiver: T.Type, args: tuple[T.Type, ...]) -> None:
    check_case(method, (receiver, *args), draws=20)
    # the same through getattr: a bound method typed by the unbound one
    name = getattr(method, "__name__")
    bound = result_type(C(getattr), (receiver, C(name)), {})
    assert bound == BoundMethod(receiver, method)
    assert result_type(bound, args, {}) == result_type(C(method), (receiver, *args), {})


# --------------------------------------------------------------------------------------------
# Attributes and methods


def test_getattr_resolves_plain_methods_of_exact_classes() -> None:
    x = T.Array("float64", 2)
    bound = result_type(C(getattr), (x, C("sum")), {})
    assert bound == BoundMethod(x, np.ndarray.sum)
    assert result_type(bound, (), {"axis": C(0)}) == T.Array("float64", 1)
    check_case(getattr, (x, C("sum")))
    check_case(getattr, (T.List(T.INT), C("append")))
    # Properties are not methods; a Tuple may be a NamedTuple subclass; Object may be a subclass.
    assert not isinstance(result_type(C(getattr), (x, C("T")), {}), BoundMethod)
    assert result_type(C(getattr), (T.Tuple((T.INT,)), C("count")), {}) == T.ANY
    assert result_type(C(getattr), (T.Object(ValueError), C("with_traceback")), {}) == T.ANY
    # Scalars of several classes (float or np.float64) have no single method.
    assert not isinstance(result_type(C(getattr), (T.FLOAT, C("conjugate")), {}), BoundMethod)


@pytest.mark.parametrize("name", ["T", "mT", "shape", "ndim", "size", "dtype", "real", "imag", "itemsize", "nbytes", "strides", "flat"])
def test_array_attributes(name: str) -> None:
    with Sweep(0.3) as sweep:
        for x in ARRAYS:
            check_case(getattr, (x, C(name)), sweep=sweep)
        assert result_type(C(getattr), (T.Array("float64", 2), C("shape")), {}) == T.Tuple((EXACT, EXACT))
        assert result_type(C(getattr), (T.Array("float64", 2), C("ndim")), {}) == C(2)


def test_scalar_attributes() -> None:
    for x in SCALARS:
        for name in ["real", "imag"]:
            check_case(getattr, (x, C(name)))


class Settings:
    scale = 2.0

    def method(self) -> None:
        pass


def test_module_and_class_attributes_are_frozen() -> None:
    # Functions, classes and modules are frozen like globals; data may be rebound at run time.
    assert result_type(C(getattr), (C(np), C("sum")), {}) == C(np.sum)
    assert result_type(C(getattr), (C(np), C("float32")), {}) == C(np.float32)
    assert result_type(C(getattr), (C(np), C("linalg")), {}) == C(np.linalg)
    assert result_type(C(getattr), (C(np.ndarray), C("sum")), {}) == C(np.ndarray.sum)
    assert result_type(C(getattr), (C(Settings), C("method")), {}) == C(Settings.method)
    assert result_type(C(getattr), (C(math), C("pi")), {}) == T.ANY
    assert result_type(C(getattr), (C(Settings), C("scale")), {}) == T.ANY
    assert result_type(C(getattr), (C(np), C("no_such_thing")), {}) == T.ANY


# --------------------------------------------------------------------------------------------
# NumPy


def _ufuncs() -> list[np.ufunc]:
    # isnat takes datetimes only, which the pool has none of: its sweep would compare nothing.
    ufuncs = {u for u in vars(np).values() if isinstance(u, np.ufunc) and u is not np.isnat}
    return sorted(ufuncs, key=lambda u: u.__name__)


_UFUNC_POOL: list[T.Type] = [
    T.FLOAT,
    T.Float("float32"),
    T.INT,
    T.BOOL,
    T.COMPLEX,
    C(2),
    C(0.5),
    T.Array("float64", 1),
    T.Array("float32", 2),
    T.Array("int32", 2),
    T.Array("bool", 1),
    T.Array("complex64", 1),
    T.Array(None, 2),
    T.Array("float64", None),
]


@pytest.mark.parametrize("uf", _ufuncs(), ids=lambda u: u.__name__)
def test_ufuncs(uf: np.ufunc) -> None:
    with Sweep(0.05 if uf.signature is None else 0.0) as sweep:
        for args in itertools.product(_UFUNC_POOL, repeat=uf.nin):
            if uf.nin == 2 and args[0] not in _UFUNC_POOL[:9] and args[1] not in _UFUNC_POOL[:9]:
                continue  # enough pairs of arrays
            check_case(uf, args, draws=5, sweep=sweep)


def test_ufunc_out_returns_the_out_array() -> None:
    out = T.Array("float32", 1)
    assert result_type(C(np.add), (T.Array("float64", 1), T.FLOAT), {"out": out}) == out
    check_case(np.add, (T.Array("float32", 1), C(1.0)), {"out": out})


_REDUCTION_KWARGS: list[dict[str, T.Type]] = [
    {},
    {"axis": C(0)},
    {"axis": C(-1)},
    {"axis": C((0, 1))},
    {"keepdims": C(True)},
    {"axis": C(1), "keepdims": C(True)},
    {"axis": C(None)},
    {"dtype": C(np.float32)},
]


@pytest.mark.parametrize(
    "fn",
    [np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.std, np.var, np.any, np.all, np.argmax, np.cumsum, np.median, np.ptp if hasattr(np, "ptp") else np.sum],
    ids=_name,
)
def test_reductions(fn: object) -> None:
    with Sweep(0.3) as sweep:
        arrays = [a for a in ARRAYS if a != T.Array(None, 1)] + [T.Array("int32", 3), T.List(T.FLOAT)]
        for x in arrays:
            for kw in _REDUCTION_KWARGS:
                check_case(fn, (x,), kw, draws=6, sweep=sweep)


@pytest.mark.parametrize(
    "method", [np.ndarray.sum, np.ndarray.mean, np.ndarray.max, np.ndarray.std, np.ndarray.any, np.ndarray.cumsum, np.ndarray.argmin],
    ids=_name,
)
def test_array_reduction_methods(method: object) -> None:
    with Sweep(0.3) as sweep:
        for x in ARRAYS:
            for kw in _REDUCTION_KWARGS[:6]:
                check_case(method, (x,), kw, draws=6, sweep=sweep)
                bound = result_type(C(getattr), (x, C(getattr(method, "__name__"))), {})
                assert result_type(bound, (), kw) == result_type(C(method), (x,), kw)


def test_reduction_types() -> None:
    m = T.Array("float64", 2)
    assert result_type(C(np.sum), (m,), {}) == T.FLOAT
    assert result_type(C(np.sum), (m,), {"axis": C(0)}) == T.Array("float64", 1)
    assert result_type(C(np.sum), (m,), {"keepdims": C(True)}) == m
    assert result_type(C(np.mean), (T.Array("int32", 3),), {"axis": C((0, 1))}) == T.Array("float64", 1)
    assert result_type(C(np.sum), (T.Array("float32", None),), {}) == T.Float("float32")
    assert result_type(C(np.argmax), (m,), {}) == EXACT


_SHAPES: list[T.Type] = [C(3), C((2, 3)), C(()), EXACT, T.Tuple((EXACT, EXACT)), C((0, 2, 1))]


@pytest.mark.parametrize("fn", [np.zeros, np.ones, np.empty], ids=_name)
def test_filled_constructors(fn: object) -> None:
    for shape in _SHAPES:
        for kw in [{}, {"dtype": C(np.float32)}, {"dtype": C(np.int8)}, {"dtype": C(bool)}, {"dtype": C("complex64")}]:
            check_case(fn, (shape,), kw, draws=4)
    assert result_type(C(np.zeros), (C((2, 3)),), {}) == T.Array("float64", 2)
    assert result_type(C(np.zeros), (T.Tuple((EXACT, EXACT)),), {"dtype": C(np.float32)}) == T.Array("float32", 2)


def test_other_constructors() -> None:
    for shape in _SHAPES:
        for fill in [C(1.5), C(2), T.FLOAT, T.Float("float32"), C(True)]:
            check_case(np.full, (shape, fill), draws=12)
    for args in [(C(3),), (C(2), C(3)), (EXACT,)]:
        check_case(np.eye, args)
        check_case(np.identity, args[:1])
    for args in [(C(5),), (EXACT,), (C(0.0), C(1.0), C(0.25)), (T.FLOAT,), (C(1), C(7), C(2))]:
        check_case(np.arange, args)
    check_case(np.arange, (C(5),), {"dtype": C(np.float32)})
    for args in [(C(0.0), C(1.0)), (C(0), C(1), C(5)), (T.FLOAT, T.FLOAT, EXACT), (T.Array("float64", 1), C(1.0))]:
        check_case(np.linspace, args)
    check_case(np.linspace, (C(0.0), C(1.0)), {"retstep": C(True)})
    for x in [T.List(T.FLOAT), T.List(T.List(T.FLOAT)), T.Tuple((T.FLOAT, EXACT)), T.List(EXACT), T.FLOAT, T.Array("float32", 2), C((1, 2)), T.List(T.BOTTOM), T.List(T.Array("float64", 1))]:
        check_case(np.array, (x,))
        check_case(np.asarray, (x,))
        check_case(np.array, (x,), {"dtype": C(np.float32)})
    assert result_type(C(np.array), (T.Tuple((T.FLOAT, T.FLOAT)),), {}) == T.Array("float64", 1)
    assert result_type(C(np.array), (T.List(EXACT),), {}) == T.Array(None, 1)  # [] is float64


def test_shapes() -> None:
    with Sweep(0.5) as sweep:
        for x in [T.Array("float64", 2), T.Array("int32", 1), T.Array("float32", None), T.List(T.FLOAT)]:
            for shape in [C(-1), C((2, -1)), C((-1, 1, 1)), T.Tuple((EXACT, EXACT)), EXACT]:
                check_case(np.reshape, (x, shape), sweep=sweep)
                if isinstance(x, T.Array):
                    check_case(np.ndarray.reshape, (x, shape), sweep=sweep)
            check_case(np.squeeze, (x,), sweep=sweep)
            check_case(np.squeeze, (x,), {"axis": C(0)}, sweep=sweep)
            check_case(np.transpose, (x,), sweep=sweep)
            check_case(np.ravel, (x,), sweep=sweep)
            check_case(np.broadcast_to, (x, C((2, 3, 2))), sweep=sweep)
            check_case(np.expand_dims, (x, C(0)), sweep=sweep)
        check_case(np.ndarray.reshape, (T.Array("float64", 2), C(3), C(-1)), sweep=sweep)
        for xs in [T.List(T.Array("float64", 1)), T.Tuple((T.Array("float64", 2), T.Array("float32", 2))), T.List(T.Array("int32", 2))]:
            for fn in [np.concatenate, np.stack, np.vstack, np.hstack]:
                check_case(fn, (xs,), sweep=sweep)
                check_case(fn, (xs,), {"axis": C(0)}, sweep=sweep)
        assert result_type(C(np.reshape), (T.Array("float64", 2), C((2, -1, 1))), {}) == T.Array("float64", 3)


def test_linear_algebra() -> None:
    with Sweep(0.5) as sweep:
        mats = [T.Array("float64", 1), T.Array("float64", 2), T.Array("float32", 2), T.Array("int64", 2), T.Array("complex128", 2), T.Array("float64", 3), T.FLOAT]
        for fn in [np.dot, np.matmul, operator.matmul, np.outer, np.inner, np.vdot, np.kron, np.tensordot]:
            for a in mats:
                for b in mats:
                    check_case(fn, (a, b), draws=6, sweep=sweep)
        for fn in [np.linalg.norm, np.linalg.inv, np.linalg.det, np.linalg.eigh, np.linalg.svd, np.linalg.eigvals, np.linalg.qr, np.trace]:
            for a in mats:
                check_case(fn, (a,), draws=8, sweep=sweep)
        assert result_type(C(np.dot), (T.Array("float64", 2), T.Array("float64", 1)), {}) == T.Array("float64", 1)
        assert result_type(C(operator.matmul), (T.Array("float64", 1), T.Array("float64", 1)), {}) == T.FLOAT


@pytest.mark.parametrize(
    "fn, args, kwargs",
    [
        (np.unique, (T.Array("float64", 1), T.BOOL), {}),  # return_index: a tuple if true
        (np.unique, (T.Array("float64", 1),), {"return_counts": T.BOOL}),
        (np.linspace, (C(0.0), C(1.0)), {"retstep": T.BOOL}),
        (np.tile, (T.Array("float64", 1), T.Array("int64", 1)), {}),  # reps' length: the rank
        (np.linalg.matrix_power, (T.Array("bool", 2), EXACT), {}),  # negative: float
        (np.linalg.norm, (T.Array("float64", 1), T.Array("float64", 1)), {}),
        (np.median, (T.Array("float64", 2), T.Array("int64", 1)), {}),
        (np.diff, (T.List(T.FLOAT), EXACT), {}),  # n=0 returns the list itself
    ],
    ids=_id,
)
def test_parameters_must_be_constants(
    fn: object, args: tuple[T.Type, ...], kwargs: dict[str, T.Type]
) -> None:
    # A flag, size or exponent changes the result type by its value: sampling cannot stand
    # for it, so only a constant will do.
    assert result_type(C(fn), args, kwargs) == T.ANY
    check_case(fn, args, kwargs, draws=20)


def test_constant_parameters_are_sampled_exactly() -> None:
    bools = T.Array("bool", 2)
    assert result_type(C(np.linalg.matrix_power), (bools, C(-2)), {}) == T.Array("float64", 2)
    assert result_type(C(np.linalg.matrix_power), (bools, C(-10)), {}) == T.Array("float64", 2)
    assert result_type(C(np.linalg.matrix_power), (bools, C(2)), {}) == bools
    assert result_type(C(np.unique), (T.Array("float64", 1), C(True)), {}) == T.Tuple(
        (T.Array("float64", 1), T.Array("int64", 1))
    )
    assert result_type(C(np.tile), (T.Array("float64", 1), C((2, 3))), {}) == T.Array("float64", 2)
    for args in [(bools, C(-2)), (bools, C(-10)), (bools, C(2))]:
        check_case(np.linalg.matrix_power, args)


def test_eigenvalues_are_real_or_complex() -> None:
    # A matrix of ones has real eigenvalues; a rotation does not: sampling would be unsound.
    assert result_type(C(np.linalg.eigvals), (T.Array("float64", 2),), {}) == T.Array(None, 1)
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    assert conforms(np.linalg.eigvals(rotation), T.Array(None, 1))


_INDICES: list[T.Type] = [
    EXACT,
    T.INT,
    T.BOOL,
    C(0),
    C(-1),
    C(True),
    C(slice(None)),
    C(slice(1, None)),
    T.Object(slice),
    T.NONE,
    C(Ellipsis),
    T.Tuple((EXACT, EXACT)),
    T.Tuple((C(slice(None)), EXACT)),
    T.Tuple((T.NONE, C(Ellipsis), EXACT)),
    T.Tuple((EXACT, T.NONE)),
    C((0, slice(None), None)),
    C(()),
    T.Array("int64", 1),
    T.Array("int32", 2),
    T.Array("int64", 0),
    T.Array("bool", 1),
    T.Array("bool", 2),
    T.List(EXACT),
    T.List(T.BOOL),
    T.List(T.INT),
    T.List(T.BOTTOM),
    T.Tuple((T.Array("int64", 1), T.Array("int64", 1))),
    T.Tuple((T.Array("bool", 1), C(slice(None)))),
    T.FLOAT,
    T.ANY,
]


@pytest.mark.parametrize("x", [a for a in ARRAYS if a != T.Array(None, 1)] + [T.Array("int32", 3)], ids=format_rule_type)
def test_array_indexing(x: T.Type) -> None:
    with Sweep(0.2) as sweep:
        for index in _INDICES:
            if isinstance(index, T.Any):
                assert result_type(C(operator.getitem), (x, index), {}) == T.ANY
                continue
            check_case(operator.getitem, (x, index), draws=20, sweep=sweep)


def test_array_indexing_types() -> None:
    m = T.Array("float64", 2)
    v = T.Array("float64", 1)
    assert result_type(C(operator.getitem), (m, EXACT), {}) == v
    assert result_type(C(operator.getitem), (v, EXACT), {}) == T.FLOAT
    assert result_type(C(operator.getitem), (m, T.Tuple((EXACT, EXACT))), {}) == T.FLOAT
    assert result_type(C(operator.getitem), (m, T.Tuple((C(slice(None)), EXACT))), {}) == v
    assert result_type(C(operator.getitem), (v, C(True)), {}) == m  # a scalar mask adds an axis
    assert result_type(C(operator.getitem), (v, T.INT), {}) == T.ANY  # an Int may be a bool
    assert result_type(C(operator.getitem), (m, T.INT), {}) == T.Array("float64", None)
    assert result_type(C(operator.getitem), (m, T.Array("bool", 2)), {}) == v
    assert result_type(C(operator.getitem), (m, T.Array("int64", 2)), {}) == T.Array("float64", 3)
    assert result_type(C(operator.getitem), (T.Array("float64", 0), C(Ellipsis)), {}) == T.Array("float64", 0)
    assert result_type(C(operator.getitem), (T.Array("float64", 0), C(())), {}) == T.FLOAT


# --------------------------------------------------------------------------------------------
# The frontend's helpers


def test_frontend_helpers() -> None:
    check_case(runtime.make_tuple, (T.INT, T.FLOAT))
    check_case(runtime.make_list, (T.INT, T.FLOAT))
    check_case(runtime.make_list, ())
    check_case(runtime.make_set, (EXACT, EXACT))
    check_case(runtime.make_dict, (T.STR, T.FLOAT, T.STR, EXACT))
    check_case(runtime.unpack, (T.Tuple((T.INT, T.STR)), C(2)))
    check_case(runtime.unpack, (T.List(T.FLOAT), C(2)))
    check_case(runtime.unpack_ex, (T.List(T.FLOAT), C(1), C(1)))
    check_case(runtime.build_string, (T.STR, T.STR))
    assert result_type(C(runtime.make_tuple), (T.INT, T.FLOAT), {}) == T.Tuple((T.INT, T.FLOAT))
    assert result_type(C(runtime.is_stop), (T.FLOAT,), {}) == C(False)
    assert result_type(C(runtime.is_stop), (C(runtime.STOP),), {}) == C(True)
    assert result_type(C(runtime.is_stop), (T.ANY,), {}) == T.BOOL
    it = Iter(T.FLOAT)
    assert is_subtype(T.FLOAT, result_type(C(runtime.next_or_stop), (it,), {}))
    for c in CONTAINERS:
        check_case(lambda x: runtime.next_or_stop(iter(x)), (c,))  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# The table


def test_calls_of_classes_make_instances() -> None:
    class Plain:
        pass

    class Custom:
        def __new__(cls) -> object:
            return 3

    assert result_type(C(Plain), (), {}) == T.Object(Plain)
    assert result_type(C(Custom), (), {}) == T.ANY  # a Python __new__ may return anything
    assert result_type(C(collections.OrderedDict), (), {}) == T.Object(collections.OrderedDict)
    assert result_type(C(ValueError), (T.STR,), {}) == T.Object(ValueError)


def test_unknown_callees_and_bottom() -> None:
    assert result_type(T.ANY, (T.INT,), {}) == T.ANY
    assert result_type(C(print), (T.BOTTOM,), {}) == T.BOTTOM
    assert result_type(C(lambda: 1), (), {}) == T.ANY


def test_register_type_rule_extends_the_table() -> None:
    def clip01(x: object) -> object:
        return x

    @register_type_rule(clip01)
    def _clip01(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        return args[0] if isinstance(args[0], T.Array) else T.ANY

    assert result_type(C(clip01), (T.Array("float32", 2),), {}) == T.Array("float32", 2)
    assert lookup_type_rule(clip01) is not None


def test_lookup_is_by_identity() -> None:
    class Impostor:
        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return hash(np.sum)

    assert lookup_type_rule(Impostor()) is None
    assert lookup_type_rule(np.add.reduce) is not None  # bound builtin methods: owner and name


def test_rule_level_lattice() -> None:
    assert join(C(1), C(2)) == EXACT
    assert join(EXACT, T.BOOL) == T.INT
    assert join(EXACT, C(True)) == T.INT
    assert join(Iter(EXACT), Iter(C(3))) == Iter(EXACT)
    assert is_subtype(C(3), EXACT) and not is_subtype(C(True), EXACT)
    assert is_subtype(EXACT, T.INT) and not is_subtype(T.INT, EXACT)
    assert is_subtype(T.Tuple((EXACT,)), T.Tuple((T.INT,)))
    assert widen(C(3)) == EXACT
    assert widen(T.Tuple((C(1), C("a")))) == T.Tuple((EXACT, T.STR))
    assert core_type(T.Tuple((EXACT, Iter(T.FLOAT)))) == T.Tuple(
        (T.INT, T.Object(collections.abc.Iterator))
    )
    assert core_type(BoundMethod(T.Array("float64", 1), np.ndarray.sum)) == T.ANY


def test_typeof_gives_subclasses_their_own_class() -> None:
    # A subclass may redefine every operation: np.matrix's * is a matrix product.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        assert T.typeof(np.matrix([[1.0]])) == T.Object(np.matrix)

    class MyList(list):  # type: ignore[type-arg]
        pass

    assert T.typeof(MyList()) == T.Object(MyList)
    assert T.typeof(True) == T.BOOL
    assert T.typeof(builtins.int(3)) == T.INT


def test_python_random() -> None:
    rng = T.Object(random.Random)
    assert result_type(C(random.gauss), (T.FLOAT, C(2.0)), {}) == T.FLOAT
    assert result_type(C(random.Random.uniform), (rng, C(1), T.FLOAT), {}) == T.FLOAT
    assert result_type(C(random.random), (), {}) == T.FLOAT
    assert result_type(C(random.gauss), (T.Array("float64", 1), C(2.0)), {}) == T.ANY
    assert result_type(C(random.Random.randint), (rng, C(1), C(3)), {}) == T.INT
    assert result_type(C(random.choice), (T.List(T.FLOAT),), {}) == T.FLOAT
    assert result_type(C(random.Random.choice), (rng, T.Tuple((T.INT, T.FLOAT))), {}) == join(
        T.INT, T.FLOAT
    )
    assert result_type(C(random.choice), (T.Array("float64", 1),), {}) == T.ANY
    assert result_type(C(random.shuffle), (T.List(T.FLOAT),), {}) == T.NONE
