"""Audit cases for the rules on scalars: operators, ``math`` and numeric builtins
(``gibbous.library.elementwise.scalars``, registered through ``elementwise.register_all``, so most of
them have the origin ``gibbous.library.elementwise.tables``), ``divmod``, ``sum``/``min``/``max``
and friends (``builtins``), the calls without derivative (``queries``) and the one primitive
of ``gibbous.rules.call_adapters`` (``make_genexpr``).

The cases are generated from the tables the rules are registered from (``scalars.MATH_UNARY``,
``OPERATOR_BINARY``, ...), so a function added to a table gets cases.  Each function runs on
every kind of operand its pattern ``object<numbers.Number>`` accepts and it accepts itself:
Python floats, ints, bools and complex numbers, NumPy float64, float32 and complex128 scalars,
and mixes (a float and an int, a float and a complex); a combination the function rejects
(``math.sin(1j)``, ``complex % complex``) is left out by calling it once.

How the domains were chosen.  The arguments come from the function's *gradient function*
(``E.g_log``, ``E.g_pow_y``...), not from the function: ``math.log``, ``operator.truediv`` and
the in-place forms share the gradient, hence the domain, of their NumPy twins, and a new
function whose gradient is already listed gets a domain for free (an unlisted one gets the
default, 0.7; if that is outside its domain, the function raises or returns nan there, gets no
case, and the audit lists its rule as uncovered).  Every domain keeps the arguments in the open
set where the function is smooth, far enough from its edges that the finite differences (steps
of 1e-3 to 1e-2, up to 0.1 in float32) never cross one: logarithms, square roots and ``pow``'s
base are positive (1.7, 0.3); ``asin``, ``acos`` and ``atanh`` see 0.45; ``acosh`` 1.7;
divisors, ``abs``, ``cbrt`` and ``copysign`` stay off zero (with both signs); ``mod``,
``fmod`` and ``divmod`` have quotients x / y at least 0.15 from an integer, where they jump,
and ``remainder`` at least 0.1 from a half-integer, where its rounding jumps; ``atan2`` and
``hypot`` get non-zero operands, ``max``/``min`` distinct ones; ``tan`` stays within 1 of
zero; ``gamma`` and ``lgamma`` see a negative non-integer too.  Complex operands have an
imaginary part of 0.2 to 0.4, off the branch cuts of ``log``, ``sqrt`` and ``pow`` (on the real
axis).  Ints are picked inside the same domains: an int never gets a gradient, and the case
checks that it gets ``NoTangent()`` while a float operand gets a float of its own class.
"""

from __future__ import annotations

import builtins
import inspect
import math
import operator
import random
import types
import typing as t
import warnings

import attrs
import numpy as np

from gibbous.ir import runtime
from gibbous.library.elementwise import tables
from gibbous.library.elementwise import scalars
from gibbous.testing import case
from gibbous.testing.cases import RuleCase

# --------------------------------------------------------------------------------------------
# Domains, by gradient function


@attrs.frozen
class Unary:
    """Arguments of a unary function: a float, an int (or None) and a complex number, all in
    the function's smooth domain."""

    real: float
    integer: int
    cplx: complex


@attrs.frozen
class Binary:
    """Arguments of a binary function, as (x, y) pairs of floats, ints and complex numbers
    (None: the functions of this domain are not defined on complex numbers)."""

    real: tuple[float, float]
    integer: tuple[int, int]
    cplx: tuple[complex, complex] | None


Pairs = tuple[tuple[float, float], ...]


REAL = Unary(0.7, 2, 0.6 - 0.3j)
SIGNED = Unary(-0.7, -2, -0.6 + 0.3j)  # a negative argument for the functions with a kink at 0
POSITIVE = Unary(1.7, 2, 1.3 + 0.4j)
UNIT = Unary(0.45, 0, 0.3 + 0.2j)
ABOVE_ONE = Unary(1.7, 2, 1.7 + 0.4j)
TAN = Unary(0.7, 1, 0.4 + 0.2j)

UNARY_DOMAINS: dict[tables.UnaryGrad, Unary] = {
    tables.g_log: POSITIVE,
    tables.g_log2: POSITIVE,
    tables.g_log10: POSITIVE,
    tables.g_log1p: POSITIVE,
    tables.g_sqrt: POSITIVE,
    tables.g_cbrt: SIGNED,  # cbrt is smooth at negative numbers too (not at 0)
    tables.g_arcsin: UNIT,
    tables.g_arccos: UNIT,
    tables.g_arctanh: UNIT,
    tables.g_arccosh: ABOVE_ONE,
    tables.g_tan: TAN,
    tables.g_abs: SIGNED,
    tables.g_gamma: POSITIVE,
    tables.g_lgamma: POSITIVE,
}
# Further arguments for some functions: the other side of a kink, a negative non-integer.
MORE_REALS: dict[tables.UnaryGrad, tuple[float, ...]] = {
    tables.g_abs: (1.3,),
    tables.g_gamma: (-1.6, 0.3),
    tables.g_lgamma: (-2.6, 0.3),
    tables.g_cbrt: (1.9,),
    tables.g_sqrt: (0.3,),
}

ANY_PAIR = Binary((0.7, -1.3), (3, -2), (0.6 - 0.3j, -1.1 + 0.4j))
DIVISION = Binary((1.7, -0.6), (3, 2), (0.6 - 0.3j, -1.1 + 0.4j))
POWER = Binary((1.7, 0.6), (2, 3), (1.3 + 0.4j, 0.6 - 0.2j))
MODULO = Binary((7.3, 2.1), (7, 2), None)  # 7.3 / 2.1 = 3.48
REMAINDER = Binary((7.9, 2.6), (7, 2), None)  # 7.9 / 2.6 = 3.04: 0.46 from 3.5
LOG_BASE = Binary((5.0, 2.5), (5, 3), None)

BINARY_DOMAINS: dict[tables.BinaryGrad, Binary] = {
    tables.g_over_y: DIVISION,
    tables.g_quotient_y: DIVISION,
    tables.g_pow_x: POWER,
    tables.g_pow_y: POWER,
    tables.g_mod_y: MODULO,
    tables.g_fmod_y: MODULO,
    tables.g_remainder_y: REMAINDER,
    tables.g_log_base_x: LOG_BASE,
    tables.g_log_base_y: LOG_BASE,
}
# Further (x, y) pairs: other signs of the operands (fmod and mod differ there).
MORE_PAIRS: dict[tables.BinaryGrad, Pairs] = {
    tables.g_mod_y: ((-7.3, 2.1), (7.3, -2.1)),
    tables.g_fmod_y: ((-7.3, 2.1), (7.3, -2.1)),
    tables.g_remainder_y: ((-7.9, 2.6),),
    tables.g_copysign_x: ((1.3, -0.5), (-1.3, 0.5)),
    tables.g_atan2_y: ((-0.7, -1.3),),  # the third quadrant
}


def unary_domain(grad: tables.UnaryGrad) -> Unary:
    return UNARY_DOMAINS.get(grad, REAL)


def binary_domain(*grads: tables.BinaryGrad | None) -> Binary:
    for g in grads:
        if g is not None and g in BINARY_DOMAINS:
            return BINARY_DOMAINS[g]
    return ANY_PAIR


def more_pairs(*grads: tables.BinaryGrad | None) -> Pairs:
    return tuple(p for g in grads if g is not None for p in MORE_PAIRS.get(g, ()))


def binary_operands_for(*grads: tables.BinaryGrad | None) -> list[tuple[t.Any, ...]]:
    return binary_operands(binary_domain(*grads), more_pairs(*grads))


# --------------------------------------------------------------------------------------------
# Operand kinds

f32, f64, c128 = np.float32, np.float64, np.complex128


def _works(f: t.Callable[..., t.Any], *args: t.Any) -> bool:
    """Whether ``f`` takes these operands (a combination it rejects gets no case) and gives a
    finite result (the domain is right).  A warning counts as a refusal: ``math.sin`` of a
    NumPy complex number drops its imaginary part with a ComplexWarning."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = f(*args)
    except (TypeError, ValueError, ZeroDivisionError, OverflowError, Warning):
        return False
    return not isinstance(y, (float, complex, np.inexact)) or bool(np.isfinite(y))


def _cases(f: t.Callable[..., t.Any], operands: t.Iterable[tuple[t.Any, ...]]) -> list[RuleCase]:
    return [case(f, *args) for args in operands if _works(f, *args)]


def unary_operands(d: Unary, more: tuple[float, ...] = ()) -> list[tuple[t.Any, ...]]:
    """A float, NumPy float64, float32 and complex128 scalars, an int, a complex."""
    x = d.real
    out: list[tuple[t.Any, ...]] = [(x,), (f64(x),), (f32(x),), (d.cplx,), (c128(d.cplx),)]
    out += [(v,) for v in more]
    out.append((d.integer,))
    return out


def binary_operands(d: Binary, more: Pairs = ()) -> list[tuple[t.Any, ...]]:
    """Floats, a float and an int (both ways), ints, a bool and a float, NumPy float64 and
    float32 pairs, a float64 with a float and with an int; complex numbers, a float and a
    complex, a complex128 pair."""
    (x, y), (i, j) = d.real, d.integer
    out: list[tuple[t.Any, ...]] = [
        (x, y),
        (x, j),
        (i, y),
        (i, j),
        (True, y),
        (f64(x), f64(y)),
        (f32(x), f32(y)),
        (f64(x), y),
        (f64(x), j),
        *more,
    ]
    if d.cplx is not None:
        zx, zy = d.cplx
        out += [(zx, zy), (x, zy), (c128(zx), c128(zy))]
    return out


def few_binary_operands(d: Binary) -> list[tuple[t.Any, ...]]:
    """For the in-place forms, which share the rule of the plain operator."""
    (x, y), (i, j) = d.real, d.integer
    pairs = [(x, y), (x, j), (i, y), (f64(x), f64(y)), (f32(x), f32(y))]
    return [*pairs, *([d.cplx] if d.cplx is not None else [])]


# --------------------------------------------------------------------------------------------
# Operators and math functions


def _operator_cases() -> list[RuleCase]:
    cases: list[RuleCase] = []
    for op, (gx, gy) in scalars.OPERATOR_BINARY.items():
        cases += _cases(op, binary_operands_for(gx, gy))
    for iop, op in scalars.IN_PLACE.items():
        gx, gy = scalars.OPERATOR_BINARY[op]
        cases += _cases(iop, few_binary_operands(binary_domain(gx, gy)))
    cases += _cases(builtins.pow, binary_operands(POWER))
    for op, g in scalars.OPERATOR_UNARY.items():
        cases += _cases(op, [*unary_operands(unary_domain(g), MORE_REALS.get(g, ())), (True,)])
    return cases


def _math_cases() -> list[RuleCase]:
    cases: list[RuleCase] = []
    for fn, g in scalars.MATH_UNARY.items():  # (math refuses complex numbers)
        cases += _cases(fn, unary_operands(unary_domain(g), MORE_REALS.get(g, ())))
    for fn, (gx, gy) in scalars.MATH_BINARY.items():
        cases += _cases(fn, binary_operands_for(gx, gy))
    for fn, gx in scalars.MATH_BINARY_FIRST.items():
        cases += _cases(fn, binary_operands_for(gx))
    cases += _cases(math.log, binary_operands(LOG_BASE, ((0.4, 0.5),)))  # log(x, base)
    for fn in (math.frexp, math.modf):  # pairs of which the first part has a derivative
        cases += _cases(fn, [(0.7,), (-5.3,), (f64(0.7),), (f32(5.3),), (3,)])
    cases += [
        case(math.hypot, 0.7),
        case(math.hypot, 0.7, -1.3),
        case(math.hypot, 0.3, f64(-0.4), 1.2, 2),
        case(math.hypot, f32(0.3), f32(0.4)),
    ]
    return cases


# --------------------------------------------------------------------------------------------
# Numeric builtins


def _builtin_cases() -> list[RuleCase]:
    cases: list[RuleCase] = []
    to_float: tuple[t.Any, ...] = (builtins.float, f64, f32)
    for fn in to_float:
        cases += _cases(fn, [(0.7,), (f64(0.7),), (f32(0.7),), (2,), (True,)])
    to_complex: tuple[t.Any, ...] = (builtins.complex, c128)
    for fn in to_complex:
        cases += _cases(fn, [(0.7,), (0.6 - 0.3j,), (c128(0.6 - 0.3j),), (f32(0.7),), (2,)])
    cases += [
        case(builtins.float, np.array(0.7)),
        case(builtins.float, np.array(0.7, dtype=f32)),
        case(builtins.complex, np.array(0.7)),
        case(builtins.complex, np.array(0.6 - 0.3j)),
        case(builtins.complex, 0.7, -1.3),
        case(builtins.complex, f64(0.7), 2),
        case(builtins.complex, 3, f32(-1.3)),
        case(builtins.float, "1.5"),
        case(builtins.complex, "1+2j"),
        case(builtins.int, "12"),
    ]
    # divmod: only the remainder has a derivative (x % y); every array/scalar mix.
    x, y = MODULO.real
    X = np.array([7.3, -2.7, 5.1, 3.7])
    Y = np.array([2.1, 1.7, -1.9, 2.6])  # quotients 3.48, -1.59, -2.68, 1.42
    divmods: tuple[t.Any, ...] = (builtins.divmod, np.divmod)
    for fn in divmods:
        cases += [
            case(fn, x, y),
            case(fn, -x, 2),
            case(fn, f64(x), f64(y)),
            case(fn, X, Y),
            case(fn, X.reshape(2, 2), Y[:2]),
            case(fn, X, y),
            case(fn, x, Y),
        ]
    return cases


# --------------------------------------------------------------------------------------------
# Zero derivatives of scalars (``scalars``): floor division, floor/ceil/trunc, tests, rounding,
# conversions to ints.

_ZERO_OF_ARRAYS: tuple[t.Any, ...] = (builtins.int, builtins.bool, np.int64, np.int32)
if hasattr(np.ndarray, "__round__"):  # NumPy 1: round() of a 0-d array
    _ZERO_OF_ARRAYS += (builtins.round,)

ZERO_SCALAR_INT: list[RuleCase] = [
    case(operator.floordiv, 7, 2),
    case(operator.ifloordiv, 7, 2),
    *(case(fn, 7) for fn in scalars.MATH_ZERO),
    case(math.isclose, 7, 7),
    *(case(fn, 7) for fn in (builtins.int, builtins.bool, builtins.round, np.int64, np.int32)),
    case(builtins.round, 7, -1),
    *(case(fn, X) for fn in _ZERO_OF_ARRAYS for X in (np.array(2.7), np.array(2.7, dtype=f32))),
]
ZERO_SCALAR_FLOAT: list[RuleCase] = [
    *(case(fn, 7.3, 2.1) for fn in (operator.floordiv, operator.ifloordiv)),
    case(operator.floordiv, f64(7.3), 2),
    *(case(fn, 2.7) for fn in scalars.MATH_ZERO),
    *(c for fn in scalars.MATH_ZERO for c in _cases(fn, [(f32(-2.7),)])),  # no f32.__trunc__
    case(math.isclose, 0.7, 0.70000001),
    case(math.isclose, 0.7, 0.8, kwargs={"rel_tol": 0.2}),
    *(case(fn, 2.7) for fn in (builtins.int, builtins.bool, builtins.round, np.int64, np.int32)),
    case(builtins.round, 2.71, 1),
    case(builtins.round, f64(2.71), 1),
]


# --------------------------------------------------------------------------------------------
# sum, min, max, math.fsum, math.prod, any, all, set, frozenset (``builtins``)

_L = [0.7, -1.3, 0.4, 1.9]
_SET_WHY = "a number with a derivative is refused on its way into a set, which keeps none"
_A = np.array([[0.7, -1.3], [0.4, 1.9]])

PYBUILTINS: list[RuleCase] = [
    case(builtins.sum, _L),
    case(builtins.sum, tuple(_L)),
    case(builtins.sum, _L, 0.5),
    case(builtins.sum, _L, kwargs={"start": 0.5}),
    case(builtins.sum, [0.7 + 0.2j, -1.3]),
    case(builtins.sum, [f32(0.7), f32(-1.3)]),
    case(builtins.sum, [0.7, 2, True]),
    case(builtins.sum, _A),  # over the rows
    case(builtins.sum, _A[0].copy()),
    case(builtins.sum, _A[0].astype(f32), 0.5),
    case(builtins.sum, [_A[0].copy(), _A[1].copy()]),
    case(builtins.sum, [], 0.5),
    case(builtins.max, _L),
    case(builtins.min, tuple(_L)),
    case(builtins.max, 0.7, -1.3, 0.4),
    case(builtins.min, 0.7, 2),
    case(builtins.max, [f64(0.7), f64(-1.3)]),
    case(builtins.max, _L, kwargs={"key": abs}),
    case(builtins.min, [], kwargs={"default": 0.5}),
    case(builtins.max, [3, 1, 2]),
    case(builtins.min, _A[0].copy()),
    case(math.fsum, _L),
    case(math.fsum, (0.7, 2, f64(0.4))),
    case(math.fsum, _A[0].copy()),
    case(math.prod, _L),
    case(math.prod, (0.7, 2, -1.3)),
    case(math.prod, [0.7, 0.0, 1.9]),  # a zero factor: the others still get a gradient
    case(math.prod, _L, kwargs={"start": 1.5}),
    case(math.prod, [0.7 + 0.2j, -1.3]),
    case(math.prod, _A[0].copy()),
    case(builtins.any, _L),
    case(builtins.all, _L),
    case(inspect.signature, unary_domain),
    case(inspect.getfullargspec, unary_domain),
    case(operator.getitem, np.float64(0.7), ()),  # (``x[()]`` of a NumPy scalar: itself)
    case(builtins.set, ["a", "b", "a"]),
    case(builtins.frozenset, (1, 2, 2)),
    # A number with a derivative is refused on its way into a set (it would lose it).
    case(builtins.set, _L, deviation=("interface", _SET_WHY)),
    case(builtins.frozenset, _L, deviation=("interface", _SET_WHY)),
    case(builtins.set),
]


# --------------------------------------------------------------------------------------------
# Calls without derivative (``queries``).  Comparisons and bitwise operators have a rule of
# their own (a result with a tangent is refused); the others are zero_derivative rules.

_V = np.array([0.7, -1.3, 0.4])
_W = np.array([0.5, -1.3, 1.1])

COMPARISONS = (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge)
BITWISE = (
    operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
    operator.iand, operator.ixor, operator.ilshift, operator.irshift,
)  # fmt: skip

QUERIES: list[RuleCase] = [
    *(case(op, 0.7, -1.3) for op in COMPARISONS),
    *(case(op, f64(0.7), 2) for op in COMPARISONS),
    *(case(op, 0.6 - 0.3j, 0.6 - 0.3j) for op in (operator.eq, operator.ne)),
    *(case(op, _V, _W) for op in COMPARISONS),
    *(case(op, _V, 0.4) for op in COMPARISONS),
    *(case(op, 6, 3) for op in BITWISE),
    *(case(op, True, False) for op in (operator.and_, operator.or_, operator.xor)),
    *(case(op, _V > 0, _W > 0) for op in (operator.and_, operator.or_, operator.xor)),
    case(operator.iand, {1, 2}, {2, 3}),
    case(operator.invert, 6),
    case(operator.invert, _V > 0),
    case(operator.inv, 5),  # (~ on a bool is deprecated from Python 3.12)
    case(builtins.len, _L),
    case(builtins.len, _V),
    case(operator.contains, _L, 2),
    case(operator.contains, {"a": 0.7}, "a"),
    case(operator.countOf, _L, 2),
    case(operator.indexOf, [0.7, 2], 2),
    case(operator.length_hint, _L),
    case(operator.is_, _V, _V),
    case(operator.is_not, _V, None),
    case(operator.not_, _L),
    case(operator.truth, _V[:1]),
    case(builtins.isinstance, _V, np.ndarray),
    case(builtins.print, kwargs={"end": ""}),
    case(builtins.range, 3),
    case(builtins.range, 1, 7, 2),
    case(builtins.slice, 1, 3),
    case(list.index, [0.7, 2, 1.3], 2),
    case(list.count, [0.7, 2, 2], 2),
    case(builtins.repr, _L),  # not an array: its repr is slow under the allocation tracer
    case(builtins.str, _L),
    case(builtins.ascii, _L),
    case(builtins.format, 7, "03d"),
    case(builtins.hash, "ab"),
    case(builtins.issubclass, bool, int),
    case(builtins.callable, _V),
    case(builtins.hasattr, _V, "shape"),
    case(builtins.type, _V),
    case(builtins.id, None),  # an int that differs between copies of an array
    case(set.add, {1, 2}, 3),
    case(set.update, {1, 2}, [3, 4]),
    case(set.discard, {1, 2}, 2),
    case(set.discard, {1, 2}, 3),
    case(set.remove, {1, 2}, 2),
    case(set.remove, {1.0, "a"}, 1),  # the pullback puts back 1.0, not 1
    case(set.update, {1, 2}, [2, 3], (4,)),
    case(set.add, {0.7}, 1.3, deviation=("interface", _SET_WHY)),
    case(set.add, {1, 2}, 2),
    case(np.ndindex, 2, 3),
    case(np.argmax, _V),
    case(np.argmin, _A, kwargs={"axis": 0}),
    case(np.argsort, _V),
    case(np.ndarray.argmax, _V),
    case(np.ndarray.argmin, _A, 1),
    case(np.ndarray.argsort, _V),
    case(np.shape, _A),
    case(np.ndim, _A),
    case(np.size, _A),
    case(np.size, _A, 0),
    case(str.capitalize, "ab"),
    case(str.casefold, "Ab"),
    case(str.center, "ab", 6),
    case(str.count, "abca", "a"),
    case(str.endswith, "abc", "c"),
    case(str.find, "abc", "c"),
    case(str.format, "{}-{}", 1, "b"),
    case(str.index, "abc", "b"),
    case(str.isalpha, "ab"),
    case(str.isdigit, "12"),
    case(str.isspace, " "),
    case(str.join, ",", ["a", "b"]),
    case(str.ljust, "ab", 4),
    case(str.lower, "Ab"),
    case(str.lstrip, " ab"),
    case(str.replace, "abc", "b", "x"),
    case(str.rjust, "ab", 4),
    case(str.rsplit, "a b"),
    case(str.rstrip, "ab "),
    case(str.split, "a,b", ","),
    case(str.startswith, "abc", "a"),
    case(str.strip, " ab "),
    case(str.title, "ab cd"),
    case(str.upper, "ab"),
    case(str.zfill, "7", 3),
]
QUERIES_FLOAT: list[RuleCase] = [
    case(operator.contains, _L, 0.7),
    case(builtins.isinstance, 0.7, float),
    case(builtins.hash, 0.7),
    case(builtins.type, 0.7),
    case(builtins.repr, 0.7),
    case(builtins.format, 0.7, ".2f"),
    case(list.index, [0.7, 2, 1.3], 2),  # a float's position moves with it: no FD there
    case(str.format, "{:.2f}", 0.7),
    case(operator.not_, 0.7),
    case(operator.truth, 0.7),
]


# --------------------------------------------------------------------------------------------
# ``gibbous.rules.call_adapters``: make_genexpr, the frontend's generator expressions


def _genexpr_parts() -> tuple[types.CodeType, types.FunctionType, tuple[types.CellType, ...]]:
    def owner(a: float) -> t.Any:
        return (v * a for v in (1.0, 2.0))

    code = next(c for c in owner.__code__.co_consts if isinstance(c, types.CodeType))
    return code, t.cast(types.FunctionType, owner), (types.CellType(1.5),)


DERIVED: list[RuleCase] = [case(runtime.make_genexpr, *_genexpr_parts())]

# --------------------------------------------------------------------------------------------
# Python's random module (gibbous.library.python.random).  The module's functions are methods
# bound to its hidden Random instance, which the harness copies for each call (as NumPy's
# generators), so the rule and the primal draw the same numbers; the methods take a Random of
# their own.  Fresh instances: gauss caches its second draw in the instance.


_NOT_REWOUND = (
    "mutation",
    "gauss caches its second draw in the generator (gauss_next), and seed clears it: the "
    "pullback leaves the generator's state as the primal leaves it, never rewound",
)


def _draw(bound: bool, name: str, *args: object) -> RuleCase:
    deviation = _NOT_REWOUND if name == "gauss" else None
    if bound:
        return case(getattr(random, name), *args, deviation=deviation)
    return case(getattr(random.Random, name), random.Random(7), *args, deviation=deviation)


def _cached_draw() -> random.Random:
    rng = random.Random(7)
    rng.gauss()  # the second draw waits in gauss_next
    return rng


def _python_random() -> list[RuleCase]:
    vector = np.array([0.5, 1.5, 2.5])
    matrix = np.array([[0.5, 1.5], [2.5, 3.5]])
    out: list[RuleCase] = []
    for bound in (True, False):
        out += [
            _draw(bound, "gauss", 0.5, 2.0),
            _draw(bound, "gauss"),
            _draw(bound, "normalvariate", 0.5, 1.5),
            _draw(bound, "lognormvariate", 0.25, 0.5),
            _draw(bound, "uniform", -1.0, 2.5),
            _draw(bound, "expovariate", 1.5),
            _draw(bound, "random"),
            _draw(bound, "randint", 0, 5),
            _draw(bound, "randrange", 10),
            _draw(bound, "getrandbits", 8),
            _draw(bound, "randbytes", 4),
            _draw(bound, "seed", 3),  # gauss_next None: nothing changes there
            _draw(bound, "choice", [0.5, 1.5, vector]),
            _draw(bound, "choice", (0.5, 2.5, 1.5)),
            _draw(bound, "choice", vector),
            _draw(bound, "choice", matrix),
            _draw(bound, "shuffle", [0.5, 1.5, 2.5, vector]),
        ]
    out += [
        case(random.Random.gauss, _cached_draw(), 0.5, 2.0, deviation=_NOT_REWOUND),
        case(random.Random.seed, _cached_draw(), 3, deviation=_NOT_REWOUND),
    ]
    return out


# --------------------------------------------------------------------------------------------

CASES: list[RuleCase] = [
    *_operator_cases(),
    *_math_cases(),
    *_builtin_cases(),
    *ZERO_SCALAR_INT,
    *ZERO_SCALAR_FLOAT,
    *QUERIES_FLOAT,
    *PYBUILTINS,
    *QUERIES,
    *DERIVED,
    *_python_random(),
]
