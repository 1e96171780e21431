"""Audit cases for ``gibbous.library.elementwise.ufuncs``: every ufunc of its tables (which
``elementwise`` registers for it), its other names, the operators on arrays, the
zero-derivative ufuncs, ``clip``, ``where``, ``real``/``imag``/``conj``, ``sinc`` and ``angle``.

Generated from the rule tables, so a ufunc added to a table gets cases.  Each differentiable
ufunc runs on float64 of ranks 0, 1 and 2, float32, complex128 where NumPy has a complex loop,
a Python float and a NumPy float64 scalar; binary ones also on broadcast pairs ((3, 1) with
(1, 4), an array with a scalar, a 0-d array with a vector).  Values are drawn inside each
function's smooth domain: away from zero for ``abs`` and the divisions, away from ties for
``maximum``, away from the jumps of ``remainder``, ``floor`` and friends.
"""

from __future__ import annotations

import builtins
import operator
import typing as t

import numpy as np

from gibbous.library.elementwise import ufuncs
from gibbous.testing import case
from gibbous.testing.cases import RuleCase

rng = np.random.default_rng(11)

Array = np.ndarray[t.Any, t.Any]

# Where each unary function is smooth: real parts are drawn in (lo, hi).
DOMAIN: dict[t.Any, tuple[float, float]] = {
    np.log: (0.5, 2.0), np.log2: (0.5, 2.0), np.log10: (0.5, 2.0), np.log1p: (-0.5, 1.0),
    np.sqrt: (0.5, 2.0), np.cbrt: (0.5, 2.0), np.reciprocal: (0.5, 2.0),
    np.arcsin: (-0.8, 0.8), np.arccos: (-0.8, 0.8), np.arctanh: (-0.8, 0.8),
    np.arccosh: (1.2, 2.0), np.tan: (-1.0, 1.0),
}  # fmt: skip
# Kinks at zero: drawn away from it, with either sign.
SIGNED = {np.absolute, np.fabs, np.sign, np.angle}


def has_complex_loop(ufunc: np.ufunc) -> bool:
    return any(sig.startswith("D" * ufunc.nin) for sig in ufunc.types)


def draw(shape: tuple[int, ...], lo: float, hi: float, dtype: t.Any = np.float64) -> Array:
    """Values in (lo, hi); complex ones get an imaginary part in (0.1, 0.4), off the branch
    cuts of log, sqrt and the inverse functions (which lie on the real or imaginary axis)."""
    x = rng.uniform(lo, hi, shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.uniform(0.1, 0.4, shape)
    return np.asarray(x, dtype=dtype)


def signed(shape: tuple[int, ...], dtype: t.Any = np.float64) -> Array:
    """Values of either sign with magnitudes in (0.3, 1.2)."""
    x = rng.uniform(0.3, 1.2, shape) * rng.choice([-1.0, 1.0], shape)
    return np.asarray(x, dtype=dtype)


def off_grid(shape: tuple[int, ...], dtype: t.Any = np.float64) -> Array:
    """Values a fifth or more away from the integers and half-integers, and from zero: where
    floor, rint, sign and friends are constant."""
    x = rng.integers(-2, 2, shape) + rng.uniform(0.2, 0.3, shape)
    return np.asarray(x, dtype=dtype)


def unary_values(fn: t.Any, shape: tuple[int, ...], dtype: t.Any = np.float64) -> Array:
    if fn in ufuncs.ZERO_UNARY:
        return off_grid(shape, dtype)
    if fn in SIGNED and np.dtype(dtype).kind != "c":
        return signed(shape, dtype)
    lo, hi = DOMAIN.get(fn, (-1.5, 1.5))
    return draw(shape, lo, hi, dtype)


def unary_cases(fn: t.Any, complex_ok: bool) -> list[RuleCase]:
    """f64 of ranks 0, 1, 2; f32; a Python float and a float64 scalar; complex if supported."""
    cases = [
        case(fn, unary_values(fn, (2, 3))),
        case(fn, unary_values(fn, (4,))),
        case(fn, unary_values(fn, ())),
        case(fn, unary_values(fn, (3,), np.float32)),
        case(fn, float(unary_values(fn, ()))),
        case(fn, np.float64(unary_values(fn, ()))),
        case(fn, np.float32(unary_values(fn, ()))),  # a scalar the general rule takes
    ]
    if complex_ok:
        cases += [
            case(fn, unary_values(fn, (2, 3), np.complex128)),
            case(fn, complex(unary_values(fn, (), np.complex128))),
        ]
    return cases


# --------------------------------------------------------------------------------------------
# Binary operands

POSITIVE_FIRST = {np.power, np.float_power, operator.pow}
NONZERO_SECOND = {np.divide, operator.truediv}
PERIODIC = {np.remainder, np.fmod, np.floor_divide, np.divmod, operator.mod, operator.floordiv}
# For the remainders, a divisor near 0.7 and dividends at 0.7 * (k + 0.25 .. 0.75): every
# quotient stays a quarter away from an integer, where the remainder jumps.
DIVISOR = 0.7


# maximum and friends jump where the operands tie: the first is drawn in [0.4 k, 0.4 k + 0.1],
# the second in [0.4 j + 0.2, 0.4 j + 0.3] (k, j from -3 to 3), so they are 0.1 apart or more
# and either may be the larger.
TIES = frozenset({np.maximum, np.minimum, np.fmax, np.fmin})


def _apart(shape: tuple[int, ...], offset: float, dtype: t.Any) -> Array:
    grid = 0.4 * rng.integers(-3, 4, shape)
    return np.asarray(grid + rng.uniform(offset, offset + 0.1, shape), dtype=dtype)


def first_operand(fn: t.Any, shape: tuple[int, ...], dtype: t.Any = np.float64) -> Array:
    if fn in TIES and np.dtype(dtype).kind == "f":
        return _apart(shape, 0.0, dtype)
    if fn in PERIODIC:
        k = rng.integers(0, 3, shape) + rng.uniform(0.25, 0.75, shape)
        return np.asarray(DIVISOR * k, dtype=dtype)
    if fn in POSITIVE_FIRST or np.dtype(dtype).kind == "c":
        return draw(shape, 0.5, 1.8, dtype)
    return draw(shape, -1.5, 1.8, dtype)


def second_operand(fn: t.Any, shape: tuple[int, ...], dtype: t.Any = np.float64) -> Array:
    if fn in TIES and np.dtype(dtype).kind == "f":
        return _apart(shape, 0.2, dtype)
    if fn in PERIODIC:
        return np.asarray(DIVISOR + rng.uniform(-0.01, 0.01, shape), dtype=dtype)
    if fn in NONZERO_SECOND or np.dtype(dtype).kind == "c":
        return draw(shape, 0.5, 1.8, dtype)
    return draw(shape, -1.5, 1.8, dtype)


def binary_cases(fn: t.Any, complex_ok: bool) -> list[RuleCase]:
    """Equal shapes, (3, 1) with (1, 4), array with Python float, float64 scalar with array, a
    0-d array with a vector, float32 with broadcasting, two scalars; complex if supported."""

    def a(shape: tuple[int, ...], dtype: t.Any = np.float64) -> Array:
        return first_operand(fn, shape, dtype)

    def b(shape: tuple[int, ...], dtype: t.Any = np.float64) -> Array:
        return second_operand(fn, shape, dtype)

    cases = [
        case(fn, a((2, 3)), b((2, 3))),
        case(fn, a((3, 1)), b((1, 4))),
        case(fn, a((2, 3)), float(b(()))),
        case(fn, np.float64(a(())), b((2, 3))),
        case(fn, a(()), b((3,))),
        case(fn, a((2, 3), np.float32), b((3,), np.float32)),
        case(fn, float(a(())), float(b(()))),
        case(fn, np.float64(a(())), float(b(()))),
        *int_operand_cases(fn, a, b),
        # float32 scalars: the general rule (the variants are float64's)
        case(fn, np.float32(a(())), np.float32(b(()))),
        case(fn, a((2, 3), np.float32), np.float32(b(()))),
        case(fn, np.float32(a(())), b((3,), np.float32)),
    ]
    if complex_ok:
        cases += [
            case(fn, a((2, 3), np.complex128), b((2, 3), np.complex128)),
            case(fn, a((2, 3), np.complex128), complex(b((), np.complex128))),
            case(fn, a((3,)), b((2, 3), np.complex128)),  # a real operand of a complex result
        ]
    return cases


def int_first(fn: t.Any) -> int:
    return 3 if fn in PERIODIC else 2  # 3 / 0.7 is a quarter away from a jump of remainder


def int_second(fn: t.Any) -> int:
    return 2  # first operands of the remainders stay below 2: no jump


def int_operand_cases(
    fn: t.Any, a: t.Callable[..., Array], b: t.Callable[..., Array]
) -> list[RuleCase]:
    """A Python int with a float and with an array, either side (``x ** 2``, ``2 * x``)."""
    return [
        case(fn, float(a(())), int_second(fn)),
        case(fn, int_first(fn), float(b(()))),
        case(fn, a((2, 3)), int_second(fn)),
        case(fn, int_first(fn), b((2, 3))),
    ]


CASES: list[RuleCase] = []

# Maximum and minimum order complex numbers lexicographically, where a choice is still
# differentiable (the value of one operand); NumPy's complex loops are used as they are.
for _fn in ufuncs.UNARY:
    CASES += unary_cases(_fn, has_complex_loop(_fn))
for _alias in ufuncs.UNARY_ALIASES:
    CASES += unary_cases(_alias, has_complex_loop(_alias))
for _fn in ufuncs.BINARY:
    CASES += binary_cases(_fn, has_complex_loop(_fn))

# Complex functions over the whole plane, in every quadrant and off every branch cut (the
# negative real axis, the real axis beyond +-1, the imaginary axis beyond +-i): a derivative
# formula on another branch than NumPy's function shows here.
COMPLEX_PLANE = np.array(
    [-1.5 + 0.2j, -0.3 - 0.5j, 0.4 + 0.6j, 1.7 - 0.8j, -0.6 + 1.9j, 0.2 - 2.2j]
)
for _fn in [*ufuncs.UNARY, *ufuncs.UNARY_ALIASES]:
    if has_complex_loop(_fn):
        CASES.append(case(_fn, COMPLEX_PLANE.copy()))

# divmod of arrays (the rule lives with Python's divmod in ``scalars``): only the remainder
# varies.
for _divmod in (np.divmod, divmod):
    CASES += [
        case(_divmod, first_operand(np.divmod, (2, 3)), second_operand(np.divmod, (2, 3))),
        case(_divmod, first_operand(np.divmod, (3,)), DIVISOR),
        case(_divmod, 1.2, second_operand(np.divmod, (3,))),
    ]

# --------------------------------------------------------------------------------------------
# Zero-derivative ufuncs: arrays and scalars.  Values sit between integers (floor, rint) and
# away from each other (comparisons), so finite differences see the zero derivative too.
#
# The same calls with float scalars are in ``FLOAT_SCALAR_ZERO_CASES`` (they join CASES below).

_OFF_GRID = np.array([[-1.3, 0.4, 2.7], [1.6, -0.2, 3.35]])

FLOAT_SCALAR_ZERO_CASES: list[RuleCase] = []

for _fn in ufuncs.ZERO_UNARY:
    CASES += [
        case(_fn, _OFF_GRID.copy()),
        case(_fn, _OFF_GRID[0].astype(np.float32)),
        case(_fn, np.array(-0.6)),
        case(_fn, 3),
    ]
    FLOAT_SCALAR_ZERO_CASES += [case(_fn, 1.3), case(_fn, np.float64(-0.4))]
for _fn in ufuncs.ZERO_INT_UNARY:
    CASES += [case(_fn, np.arange(-3, 3).reshape(2, 3)), case(_fn, 3)]
# Functions of the first operand only (gibbous.library.elementwise.odds); ldexp's second is an int.
CASES += binary_cases(np.copysign, False)
# (nextafter of (3, 1) with (1, 4) left out: the harness's forward check of a broadcast first
# operand raises there, where the tangent is right: tests/library/numpy_python/test_misc.py)
CASES += [c for c in binary_cases(np.nextafter, False) if c.id != "numpy.nextafter(f64[3,1], f64[1,4])"]
_EXPONENTS = np.array([1, -2, 3])
CASES += [
    case(np.ldexp, first_operand(np.ldexp, (2, 3)), _EXPONENTS),
    case(np.ldexp, first_operand(np.ldexp, (3,)), 2),
    case(np.ldexp, float(first_operand(np.ldexp, ())), 2),
    case(np.ldexp, np.float64(first_operand(np.ldexp, ())), _EXPONENTS),
    case(np.ldexp, first_operand(np.ldexp, (3,), np.float32), np.int32(2)),
    case(np.ldexp, 3, _EXPONENTS),
]
for _fn in ufuncs.ZERO_BINARY:
    CASES += [
        case(_fn, first_operand(_fn, (2, 3)), second_operand(_fn, (2, 3))),
        case(_fn, first_operand(_fn, (3, 1)), second_operand(_fn, (1, 4))),
        case(_fn, first_operand(_fn, (2, 3)).astype(np.float32), 2),
        case(_fn, 3, second_operand(_fn, (3,))),
        case(_fn, 3, 2),
    ]
    FLOAT_SCALAR_ZERO_CASES += [
        case(_fn, first_operand(_fn, (2, 3)), float(second_operand(_fn, ()))),
        case(_fn, np.float64(first_operand(_fn, ())), second_operand(_fn, (3,))),
        case(_fn, float(first_operand(_fn, ())), np.float64(second_operand(_fn, ()))),
    ]

# --------------------------------------------------------------------------------------------
# Operators on arrays: ``-x``, ``abs(x)``, ``x ** 2``, ``x * 2.0``, ``2.0 * x``, ``x / y``...

for _op in ufuncs.OPERATOR_UNARY:
    CASES += [
        case(_op, signed((2, 3))),
        case(_op, signed((3,), np.float32)),
        case(_op, np.array(-0.8)),
        case(_op, draw((2, 3), -1.0, 1.0, np.complex128)),
    ]
_BINARY_OPERATORS: list[tuple[t.Any, np.ufunc]] = [*ufuncs.OPERATOR_BINARY.items()]
for _op, _fn in (*_BINARY_OPERATORS, (builtins.pow, np.power)):
    CASES += [
        case(_op, first_operand(_fn, (2, 3)), second_operand(_fn, (2, 3))),
        case(_op, first_operand(_fn, (3, 1)), second_operand(_fn, (1, 4))),
        case(_op, first_operand(_fn, (2, 3)), 2.0 if _fn is not np.remainder else DIVISOR),
        case(_op, first_operand(_fn, (2, 3)), np.float64(second_operand(_fn, ()))),
        case(_op, np.float64(first_operand(_fn, ())), second_operand(_fn, (3,))),
        case(_op, 1.5 if _fn is not np.remainder else 1.2, second_operand(_fn, (2, 3))),
        case(_op, first_operand(_fn, (3,), np.float32), second_operand(_fn, (3,), np.float32)),
        case(_op, int_first(_fn), second_operand(_fn, (2, 3))),
        case(_op, first_operand(_fn, (2, 3)), int_second(_fn)),
        case(_op, np.float32(first_operand(_fn, ())), second_operand(_fn, (3,), np.float32)),
        case(_op, first_operand(_fn, (3,), np.float32), np.float32(second_operand(_fn, ()))),
    ]
    if _fn is not np.remainder:
        CASES.append(case(_op, draw((3,), 0.5, 1.5, np.complex128), 2.0))
# ``x ** 2`` with a literal 2: the real_array_square variant (the exponent typed const<2>).
CASES += [
    case(_pow, signed(shape), 2, constants=(1,))
    for _pow in (operator.pow, np.power)
    for shape in ((2, 3), (4,))
]
# Integer exponents and factors, on bases of either sign: ``x ** 2``, ``x * 2``, ``x ** 3``.
CASES += [
    case(operator.pow, signed((2, 3)), 2),
    case(operator.pow, signed((4,)), 3),
    case(operator.pow, signed((3,), np.float32), 2),
    case(operator.mul, signed((2, 3)), 2),
    case(operator.pow, draw((2, 3), 0.5, 1.5), 0.5),
]
CASES += [
    case(operator.floordiv, first_operand(np.floor_divide, (2, 3)), second_operand(np.mod, (3,))),
    case(operator.floordiv, first_operand(np.floor_divide, (2, 3)), 2),
    case(operator.floordiv, 3, second_operand(np.floor_divide, (2, 3))),
]
FLOAT_SCALAR_ZERO_CASES += [
    case(operator.floordiv, first_operand(np.floor_divide, (2, 3)), DIVISOR),
    case(operator.floordiv, 2.3, second_operand(np.floor_divide, (2, 3))),
]

# ``x += a`` with a float x and an array a: x is rebound to a new array.
for _op, _fn in ufuncs._SCALAR_IN_PLACE.items():
    CASES += [
        case(_op, 1.5, draw((2, 3), 0.5, 1.5)),
        case(_op, np.float64(0.75), draw((3,), 0.5, 1.5)),
    ]

# --------------------------------------------------------------------------------------------
# clip: values a tenth or more away from the bounds; bounds by position and by keyword, None,
# array bounds (with gradients), scalars, the method.

_CLIPPED = np.array([[-0.9, -0.3, 0.2, 0.75], [0.35, -0.65, 0.95, 0.05]])
_LO = np.array([-0.5, -0.45, -0.55, -0.4])
CASES += [
    case(np.clip, _CLIPPED.copy(), -0.5, 0.5),
    case(np.clip, _CLIPPED.copy(), _LO.copy(), 0.5),
    case(np.clip, _CLIPPED.copy(), None, 0.5),
    case(np.clip, _CLIPPED.copy(), kwargs={"a_min": -0.5, "a_max": None}),
    case(np.clip, _CLIPPED.copy(), kwargs={"min": -0.5, "max": 0.5}),
    case(np.clip, _CLIPPED[0].astype(np.float32), np.float32(-0.5), np.float32(0.5)),
    case(np.clip, np.array(0.8), -0.5, 0.5),
    case(np.clip, 0.3, -0.5, 0.5),
    case(np.clip, np.float64(-0.7), -0.5, _LO + 1.0),  # clipped to the lower bound
    case(np.ndarray.clip, _CLIPPED.copy(), -0.5, 0.5),
    case(np.ndarray.clip, _CLIPPED.copy(), kwargs={"max": 0.5}),
    case(np.ndarray.clip, _CLIPPED.copy(), _LO.copy(), kwargs={"max": 0.5}),
]

# where: the condition is not differentiable; both branches are, arrays or scalars.
_COND = np.array([[True, False, True], [False, False, True]])
CASES += [
    case(np.where, _COND.copy(), draw((2, 3), -1.0, 1.0), draw((2, 3), -1.0, 1.0)),
    case(np.where, _COND[0].copy(), draw((2, 3), -1.0, 1.0), draw((3,), -1.0, 1.0)),
    case(np.where, _COND.copy(), draw((2, 3), -1.0, 1.0), 0.0),
    case(np.where, _COND.copy(), np.float64(1.5), draw((2, 3), -1.0, 1.0)),
    case(np.where, _COND.copy(), 1.5, -0.5),
    case(np.where, _COND.copy(), draw((2, 3), -1, 1, np.float32), draw((3,), -1, 1, np.float32)),
    case(np.where, _COND.copy(), draw((2, 3), -1, 1, np.complex128), 0.5),
    case(np.where, True, 1.25, -0.5),
    case(np.where, _COND.copy()),  # the indices where the condition holds
]

# real, imag, conj: views of complex arrays, the real array itself, new zeros, scalars.
for _part in (np.real, np.imag):
    CASES += [
        case(_part, draw((2, 3), -1.0, 1.0, np.complex128)),
        case(_part, draw((2, 3), -1.0, 1.0)),
        case(_part, draw((3,), -1.0, 1.0, np.float32)),
        case(_part, 1.5 - 0.5j),
        case(_part, 1.5),
        case(_part, np.complex128(0.5 + 2.0j)),
    ]
for _method in (np.ndarray.conj, np.ndarray.conjugate):
    CASES += [
        case(_method, draw((2, 3), -1.0, 1.0, np.complex128)),
        case(_method, draw((3,), -1.0, 1.0)),  # a real array: the array itself
    ]
CASES += [
    case(complex.conjugate, 1.5 - 0.5j),
    case(float.conjugate, 1.5),
]

# sinc (with a series near 0, where the quotient cancels) and angle (0 or pi for reals).
CASES += unary_cases(np.sinc, complex_ok=True)
CASES += [
    case(np.sinc, np.array([0.0, 3e-5, -2e-4, 0.4])),
    case(np.sinc, np.array([1e-3, -3e-2, 0.3], np.float32)),
    case(np.sinc, 0.0),
]
CASES += unary_cases(np.angle, complex_ok=True)
CASES += [
    case(np.angle, draw((2, 3), -1.0, 1.0, np.complex128), True),
    case(np.angle, draw((3,), -1.0, 1.0, np.complex128), kwargs={"deg": True}),
    case(np.angle, -0.5 + 1.5j, kwargs={"deg": False}),
    # np.sign of complex values is z / |z| (NumPy 2): a derivative along the circle
    case(np.sign, draw((2, 3), -1.0, 1.0, np.complex128)),
    case(np.sign, draw((4,), -1.0, 1.0, np.complex64)),
    case(np.sign, -0.5 + 1.5j),
]

CASES += FLOAT_SCALAR_ZERO_CASES
