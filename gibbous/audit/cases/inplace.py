"""Audit cases for ``gibbous.rules.inplace``: calls that overwrite an array, generated from its
tables.  ``np.matmul(A, B, out=C)``; every unary ufunc with ``out=`` (by keyword and by position,
into a distinct array, into the input itself, into a larger array it broadcasts to, into a
strided view); every binary ufunc with ``out=`` for each operand kind it is registered for
(array, NumPy scalar of the arrays' dtype, Python float, int) and with the output aliasing each
input; and ``a += b`` ... ``a **= b``, ``a %= b``, ``a //= b``, including ``a op= a`` and
broadcasting.  float64 and float32 throughout, and complex128 for ``+ - * /`` (the dtypes the
rules are registered for).

The primal of each call allocates nothing, so with ``perf="allocs"`` these check that a warm
forward + reverse allocates nothing either.
"""

from __future__ import annotations

import operator
import typing as t

import numpy as np

from gibbous.audit.cases.elementwise.ufuncs import (
    COMPLEX_PLANE,
    draw,
    first_operand,
    second_operand,
    signed,
    unary_values,
)
from gibbous.rules import inplace
from gibbous.testing import case
from gibbous.testing.cases import RuleCase

Array = np.ndarray[t.Any, t.Any]

rng = np.random.default_rng(17)
DTYPES = (np.float64, np.float32)


def _out(shape: tuple[int, ...], dtype: t.Any) -> Array:
    """An output's old value, which the call overwrites (and the pullback restores)."""
    return signed(shape, dtype)


CASES: list[RuleCase] = []

# --------------------------------------------------------------------------------------------
# np.matmul(A, B, out=C)

for _dt in DTYPES:
    _A, _B = signed((3, 4), _dt), signed((4, 5), _dt)
    _S, _R = signed((4, 4), _dt), signed((4, 4), _dt)
    CASES += [
        case(np.matmul, _A, _B, kwargs={"out": _out((3, 5), _dt)}),
        case(np.matmul, _A, _B, _out((3, 5), _dt)),  # out by position
        case(np.matmul, _S, _R, kwargs={"out": _S}),  # the output is the first input
        case(np.matmul, _S, _R, kwargs={"out": _R}),  # ... the second
        case(np.matmul, _S, _S, kwargs={"out": _S}),  # ... both
    ]
CASES.append(
    case(
        np.matmul,
        np.asfortranarray(signed((4, 3))),
        signed((5, 3)).T,
        kwargs={"out": signed((4, 5))[:, ::-1]},
    )
)

# --------------------------------------------------------------------------------------------
# Unary ufuncs with out=

# Ufuncs that also get the rarer layouts: an output the input broadcasts to, 0-d arrays, a
# strided view as the output.
_LAYOUTS = {np.exp, np.sqrt, np.tanh, np.absolute, np.arcsin}
_INT_OPERANDS = {np.invert, *[getattr(np, "bitwise_count")] * hasattr(np, "bitwise_count")}


def _unary_cases(ufunc: np.ufunc, dtype: t.Any) -> list[RuleCase]:
    def x(*shape: int) -> Array:
        return unary_values(ufunc, shape, dtype)

    def out(*shape: int) -> Array:
        return _out(shape, dtype)

    if ufunc in _INT_OPERANDS:  # (bit operations: of ints, into a float output)
        return [
            case(ufunc, np.arange(6).reshape(2, 3), kwargs={"out": out(2, 3)}),
            case(ufunc, np.arange(4), out(4)),
            case(ufunc, 2, kwargs={"out": out(3)}),
            case(ufunc, 3, out(3)),
        ]
    same = x(2, 3)
    cases = [
        case(ufunc, x(2, 3), kwargs={"out": out(2, 3)}),
        case(ufunc, x(4), out(4)),  # out by position
        case(ufunc, same, kwargs={"out": same}),  # in place: np.exp(x, out=x)
        case(ufunc, float(x()), kwargs={"out": out(2, 3)}),  # a number: np.arccosh(1.5, z)
        case(ufunc, float(x()), out(3)),
    ]
    if ufunc in _LAYOUTS and dtype is np.float64:
        cases += [
            case(ufunc, x(3), kwargs={"out": out(2, 3)}),
            case(ufunc, x(), kwargs={"out": out()}),
            case(ufunc, x(2, 3), kwargs={"out": out(2, 5)[:, ::2]}),
        ]
    return cases


for _ufunc in inplace.UNARY_PARTIALS:
    for _dt in DTYPES:
        CASES += _unary_cases(_ufunc, _dt)

# --------------------------------------------------------------------------------------------
# Binary ufuncs with out=: arrays, and scalars of each kind (a NumPy scalar of the arrays'
# dtype, a Python float, an int) on either side.

# Int operands are distinct from the arrays' values and keep remainders a quarter away from
# their jumps.
_INT_FIRST, _INT_SECOND = 3, 2


def _scalar(fn: t.Any, first: bool, kind: str, dtype: t.Any) -> t.Any:
    if kind == "int":
        return _INT_FIRST if first else _INT_SECOND
    value = first_operand(fn, (), dtype) if first else second_operand(fn, (), dtype)
    return float(value) if kind == "float" else dtype(value)


def _binary_cases(ufunc: np.ufunc, dtype: t.Any) -> list[RuleCase]:
    def a(*shape: int) -> Array:
        return first_operand(ufunc, shape, dtype)

    def b(*shape: int) -> Array:
        return second_operand(ufunc, shape, dtype)

    def out(*shape: int) -> Array:
        return _out(shape, dtype)

    def s(first: bool, kind: str) -> t.Any:
        return _scalar(ufunc, first, kind, dtype)

    def call(x: t.Any, y: t.Any, z: Array, by_position: bool = False) -> RuleCase:
        if by_position and ufunc not in inplace.KEYWORD_OUT_ONLY:
            return case(ufunc, x, y, z)
        return case(ufunc, x, y, kwargs={"out": z})

    x, y = a(2, 3), b(2, 3)
    cases = [
        call(a(2, 3), b(2, 3), out(2, 3)),
        call(a(3), b(3), out(3), by_position=True),
        call(a(2, 3), s(False, "float"), out(2, 3)),
        call(a(3), s(False, "int"), out(3), by_position=True),
        call(s(True, "numpy"), b(2, 3), out(2, 3)),
        call(s(True, "int"), b(3), out(3), by_position=True),
        call(x, y, x),  # the output is an input
    ]
    if dtype is np.float64:
        cases += [
            call(a(3, 1), b(1, 4), out(3, 4)),  # both broadcast
            call(a(3), b(2, 3), out(2, 3)),
            call(a(2, 3), s(False, "numpy"), out(2, 3), by_position=True),
            call(s(True, "float"), b(3), out(3), by_position=True),
            call(x.copy(), y.copy(), y),
        ]
    return cases


for _ufunc in inplace.BINARY_PARTIALS:
    for _dt in DTYPES:
        CASES += _binary_cases(_ufunc, _dt)

# One array as both operands: x * x, x ** x, hypot(x, x) (no ties for maximum: not there).
_SAME = first_operand(np.power, (2, 3))
for _ufunc in (np.subtract, np.multiply, np.divide, np.power, np.hypot, np.logaddexp):
    CASES.append(case(_ufunc, _SAME, _SAME, kwargs={"out": _SAME}))

# --------------------------------------------------------------------------------------------
# In-place operators: a += b, a -= b, a *= b, a /= b, a **= b, a %= b


def _in_place_cases(op: t.Any, ufunc: np.ufunc, dtype: t.Any) -> list[RuleCase]:
    def a(*shape: int) -> Array:
        return first_operand(ufunc, shape, dtype)

    def b(*shape: int) -> Array:
        return second_operand(ufunc, shape, dtype)

    cases = [
        case(op, a(3, 4), b(4)),  # b broadcast
        case(op, a(3, 4), _scalar(ufunc, False, "numpy", dtype)),
        case(op, a(3,), _scalar(ufunc, False, "int", dtype)),
    ]
    if dtype is np.float64:
        same = a(3, 4)
        cases += [
            case(op, a(3, 4), b(3, 4)),
            case(op, a(2, 3, 4), b(3, 1)),
            case(op, a(3, 4), _scalar(ufunc, False, "float", dtype)),
            case(op, same, same),  # a op= a
            case(op, a(5, 6)[1:4, ::2], b(3, 3)),  # a strided view
        ]
    return cases


for _op, _ufunc in inplace.IN_PLACE_OPERATORS.items():
    for _dt in DTYPES:
        CASES += _in_place_cases(_op, _ufunc, _dt)

# Integer powers of bases of either sign: ``a **= 2``, ``a **= 3``.
CASES += [
    case(operator.ipow, signed((3, 4)), 2),
    case(operator.ipow, signed((4,), np.float32), 3),
    case(np.power, signed((2, 3)), 2, kwargs={"out": signed((2, 3))}),
]

# --------------------------------------------------------------------------------------------
# complex128: np.add/subtract/multiply/divide(x, y, out=z) and z += w ... z /= w


def _complex(*shape: int) -> Array:
    signs = rng.choice([-1.0, 1.0], shape)
    return np.asarray(draw(shape, 0.5, 1.5, np.complex128) * signs)


for _ufunc in inplace.COMPLEX_BINARY_PARTIALS:
    _x, _y = _complex(2, 3), _complex(2, 3)
    CASES += [
        case(_ufunc, _complex(2, 3), _complex(2, 3), kwargs={"out": _complex(2, 3)}),
        case(_ufunc, _complex(3), _complex(3), _complex(3)),  # out by position
        case(_ufunc, _complex(3, 1), _complex(1, 4), kwargs={"out": _complex(3, 4)}),
        case(_ufunc, _complex(2, 3), 0.5 - 1.5j, kwargs={"out": _complex(2, 3)}),
        case(_ufunc, _complex(3), 1.25, _complex(3)),  # a real scalar: a real gradient
        case(_ufunc, np.complex128(1 + 1j), _complex(2, 3), kwargs={"out": _complex(2, 3)}),
        case(_ufunc, 2, _complex(3), _complex(3)),  # an int: no gradient
        case(_ufunc, _x, _y, kwargs={"out": _x}),  # the output is an input
        case(_ufunc, _x.copy(), _y.copy(), kwargs={"out": _y}),
    ]
for _op, _ufunc in inplace.IN_PLACE_OPERATORS.items():
    if _ufunc in inplace.COMPLEX_BINARY_PARTIALS:
        _same = _complex(3, 4)
        CASES += [
            case(_op, _complex(3, 4), _complex(4)),
            case(_op, _complex(3, 4), 0.75 + 0.5j),
            case(_op, _complex(3), -1.5),
            case(_op, _same, _same),
        ]

# Complex unary ufuncs with out=, on the plane off the branch cuts; in place too.
for _ufunc in inplace.COMPLEX_UNARY_PARTIALS:
    _z = COMPLEX_PLANE.copy()
    CASES += [
        case(_ufunc, COMPLEX_PLANE.copy(), kwargs={"out": _complex(6)}),
        case(_ufunc, COMPLEX_PLANE[:3].copy(), _complex(3)),  # out by position
        case(_ufunc, _z, kwargs={"out": _z}),
    ]
