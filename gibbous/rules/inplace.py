"""The first stateful rules: NumPy calls that overwrite an array.

``np.matmul(A, B, out=C)`` (the seed's ``mul!``); the unary ufuncs with an output
(``np.exp(x, out=y)``, ``np.sin(x, out=x)``: the table ``UNARY_PARTIALS``); the binary ones
(``np.add(x, y, out=z)``, ``np.power``, ``np.maximum``, ``np.arctan2``, ``np.hypot``,
``np.logaddexp``...: ``BINARY_PARTIALS``), the output by keyword or by position; and the
in-place operators ``a += b``, ``a -= b``, ``a *= b``, ``a /= b``, ``a **= b``, ``a %= b`` on
float arrays (``operator.iadd`` and friends, which NumPy runs as ``np.add(a, b, out=a)``),
and ``a //= b``, ``np.floor(x, out=y)`` and the like, which have no derivative but overwrite.

Mutation semantics (DESIGN.md): the forward pass saves the array it overwrites, primal and
fdata, runs the primal and zeroes the output's fdata (the new value's tangent starts fresh,
Mooncake's ``C.dx .= 0``).  The pullback reads the output's fdata as the cotangent and

1. restores the output's primal, so that every input holds its value at the call again, even
   an input that *is* the output (``a += b``) or overlaps it;
2. computes each input's gradient into a buffer of the state (summed over the axes it was
   broadcast along), reading the cotangent before step 3 overwrites it;
3. restores the output's fdata;
4. adds the gradients into the inputs' fdata (arrays) or returns them as rdata (float scalars),
   after step 3, so that an input aliasing the output ends with saved fdata + gradient.

After forward + reverse, every argument is as it was, primal and fdata, same objects.

The buffers live in the rule's state and are reused: a warm call allocates no NumPy memory
beyond what the primal allocates (``out=`` everywhere).  They are reallocated only when shapes
or dtypes change.  Arrays of one dtype throughout: float64 or float32, or complex128 for the
ufuncs of ``COMPLEX_UNARY_PARTIALS`` and ``COMPLEX_BINARY_PARTIALS``; scalars may be floats or
complex numbers (their gradient is returned) or ints (no gradient).  An array operand without
fdata (inactive: the AD pass found no derivative flowing through it) is a constant.
"""

from __future__ import annotations

import math
import numbers
import operator
import typing as t

import attrs
import numpy as np

from gibbous.ir import types as T
from gibbous.rules.registry import Pullback, stateful_primitive
from gibbous.rules.tangents import NO_TANGENT, CoDual, NoTangent

Array = np.ndarray[t.Any, t.Any]
_CoDual = CoDual[t.Any, t.Any]

FLOAT_DTYPES = ("float64", "float32")
COMPLEX_DTYPE = "complex128"  # holomorphic unary ufuncs, + - * / and their operators

# --------------------------------------------------------------------------------------------
# Saving what a call overwrites


@attrs.frozen
class Saved:
    """The primal and fdata an output held before the call overwrote it."""

    primal: Array
    fdata: Array

    @classmethod
    def like(cls, out: Array) -> Saved:
        return cls(np.empty_like(out), np.empty_like(out))

    def fits(self, out: Array) -> bool:
        return self.primal.shape == out.shape and bool(self.primal.dtype == out.dtype)

    def save(self, out: _CoDual) -> None:
        # Item assignment: what ``np.copyto`` does for one dtype, without its dispatch layer.
        self.primal[...] = out.primal
        self.fdata[...] = out.fdata


# --------------------------------------------------------------------------------------------
# np.matmul(A, B, out=C)


@attrs.frozen
class MatmulState:
    saved: Saved
    grad_a: Array
    grad_b: Array

    def fits(self, a: Array, b: Array, out: Array) -> bool:
        return (
            self.saved.fits(out)
            and self.grad_a.shape == a.shape
            and self.grad_b.shape == b.shape
            and self.grad_a.dtype == a.dtype
        )


def matmul_out(
    state: MatmulState | None, f: _CoDual, a: _CoDual, b: _CoDual, out: _CoDual
) -> tuple[_CoDual, Pullback, MatmulState]:
    A, B, C = a.primal, b.primal, out.primal
    if state is None or not state.fits(A, B, C):
        state = MatmulState(Saved.like(C), np.empty_like(A), np.empty_like(B))
    saved, grad_a, grad_b = state.saved, state.grad_a, state.grad_b
    saved.save(out)
    np.matmul(A, B, out=C)
    dA, dB, dC = a.fdata, b.fdata, out.fdata
    dC.fill(0)

    def pullback(dy: object) -> tuple[t.Any, ...]:
        C[...] = saved.primal
        np.matmul(dC, B.T, out=grad_a)
        np.matmul(A.T, dC, out=grad_b)
        dC[...] = saved.fdata
        np.add(dA, grad_a, out=dA)
        np.add(dB, grad_b, out=dB)
        return _NO_RDATA_4

    return out, pullback, state


_NO_RDATA_4 = (NO_TANGENT,) * 4

# --------------------------------------------------------------------------------------------
# Elementwise ufuncs with an output: np.add(x, y, out=z), np.exp(x, out=y), a += b, a **= 2, ...
#
# ``partial(g, *operands, out, work)`` writes g * dz/d(operand i), shaped like the output z,
# into ``out``; the operands hold their values at the call.  Every step writes with ``out=``
# into ``out`` or the state's ``Work`` buffers, so a warm pullback allocates nothing.  The
# formulas are those of ``gibbous.rules.prims.elementwise`` (ties and singular points
# included), for real values; the complex tables below conjugate them.  ``out`` never aliases
# an operand or ``g``.


@attrs.frozen
class Work:
    """Buffers shaped like the output, for partials that need more than ``out``."""

    tmp: Array | None  # of the output's dtype
    mask: Array | None  # bool


_Partial = t.Callable[..., None]


@attrs.frozen
class Partials:
    """The partial of each operand (``None``: that operand never gets a gradient) and the
    work buffers they use."""

    fns: tuple[_Partial | None, ...]
    tmp: bool = False
    mask: bool = False
    singular: bool = False  # computes inf or nan where the result is then set to 0


LN2 = float(np.log(2.0))
LN10 = float(np.log(10.0))


def _times_g(out: Array, g: Array) -> None:
    np.multiply(out, g, out=out)


def _g_over(out: Array, g: Array) -> None:
    np.divide(g, out, out=out)


# unary: partial(g, x, out, w)


def _copy(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.copyto(out, g)


def _negate(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.negative(g, out=out)


def _scale(factor: float) -> _Partial:
    def scaled(g: Array, x: t.Any, out: Array, w: Work) -> None:
        np.multiply(g, factor, out=out)

    return scaled


def _exp(g: Array, x: t.Any, out: Array, w: Work) -> None:  # exp and expm1
    np.exp(x, out=out)
    _times_g(out, g)


def _exp2(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.exp2(x, out=out)
    np.multiply(out, LN2, out=out)
    _times_g(out, g)


def _log_base(ln_base: float) -> _Partial:
    def log(g: Array, x: t.Any, out: Array, w: Work) -> None:
        np.multiply(x, ln_base, out=out)
        _g_over(out, g)

    return log


def _log1p(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.add(x, 1, out=out)
    _g_over(out, g)


def _sqrt(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.sqrt(x, out=out)
    np.multiply(out, 2, out=out)
    _g_over(out, g)


def _cbrt(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.cbrt(x, out=out)
    np.square(out, out=out)
    np.multiply(out, 3, out=out)
    _g_over(out, g)


def _square(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.multiply(x, 2, out=out)
    _times_g(out, g)


def _reciprocal(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.square(x, out=out)
    _g_over(out, g)
    np.negative(out, out=out)


def _sin(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.cos(x, out=out)
    _times_g(out, g)


def _cos(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.sin(x, out=out)
    _times_g(out, g)
    np.negative(out, out=out)


def _tan(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.tan(x, out=out)
    np.square(out, out=out)
    np.add(out, 1, out=out)
    _times_g(out, g)


def _arcsin(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.square(x, out=out)
    np.subtract(1, out, out=out)
    np.sqrt(out, out=out)
    _g_over(out, g)


def _arccos(g: Array, x: t.Any, out: Array, w: Work) -> None:
    _arcsin(g, x, out, w)
    np.negative(out, out=out)


def _arctan(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.square(x, out=out)
    np.add(out, 1, out=out)
    _g_over(out, g)


def _sinh(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.cosh(x, out=out)
    _times_g(out, g)


def _cosh(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.sinh(x, out=out)
    _times_g(out, g)


def _tanh(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.tanh(x, out=out)
    np.square(out, out=out)
    np.subtract(1, out, out=out)
    _times_g(out, g)


def _arcsinh(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.square(x, out=out)
    np.add(out, 1, out=out)
    np.sqrt(out, out=out)
    _g_over(out, g)


def _arccosh(g: Array, x: t.Any, out: Array, w: Work) -> None:
    # 1 / sinh(arccosh(x)), the inverse function's derivative on NumPy's branch for complex x
    # too (where 1 / sqrt(x^2 - 1) has the wrong sign when Re(x) < 0)
    np.arccosh(x, out=out)
    np.sinh(out, out=out)
    _g_over(out, g)


def _arctanh(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.square(x, out=out)
    np.subtract(1, out, out=out)
    _g_over(out, g)


def _abs(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.sign(x, out=out)  # 0 at 0: a subgradient
    _times_g(out, g)


def _one(fn: _Partial) -> Partials:
    return Partials((fn,))


# Real arrays only: the conjugate of a real array is a copy of it.
UNARY_PARTIALS: dict[np.ufunc, Partials] = {
    np.negative: _one(_negate),
    np.positive: _one(_copy),
    np.exp: _one(_exp),
    np.exp2: _one(_exp2),
    np.expm1: _one(_exp),
    np.log: _one(_log_base(1.0)),
    np.log2: _one(_log_base(LN2)),
    np.log10: _one(_log_base(LN10)),
    np.log1p: _one(_log1p),
    np.sqrt: _one(_sqrt),
    np.cbrt: _one(_cbrt),
    np.square: _one(_square),
    np.reciprocal: _one(_reciprocal),
    np.sin: _one(_sin),
    np.cos: _one(_cos),
    np.tan: _one(_tan),
    np.arcsin: _one(_arcsin),
    np.arccos: _one(_arccos),
    np.arctan: _one(_arctan),
    np.sinh: _one(_sinh),
    np.cosh: _one(_cosh),
    np.tanh: _one(_tanh),
    np.arcsinh: _one(_arcsinh),
    np.arccosh: _one(_arccosh),
    np.arctanh: _one(_arctanh),
    np.deg2rad: _one(_scale(np.pi / 180)),
    np.radians: _one(_scale(np.pi / 180)),
    np.rad2deg: _one(_scale(180 / np.pi)),
    np.degrees: _one(_scale(180 / np.pi)),
    np.absolute: _one(_abs),  # also np.abs
    np.fabs: _one(_abs),
    np.conjugate: _one(_copy),  # also np.conj
    # Piecewise constant: the output is overwritten (and restored), nothing flows back.
    np.sign: Partials((None,)),
    np.floor: Partials((None,)),
    np.ceil: Partials((None,)),
    np.trunc: Partials((None,)),
    np.rint: Partials((None,)),
}



def _conjugated(fn: _Partial) -> _Partial:
    """The partial of a holomorphic function of complex values, g conj(f'(x)), from its real
    formula: conj(fn(conj(g))), with conj(g) in the work buffer ``tmp``."""

    def conjugated(g: Array, x: t.Any, out: Array, w: Work) -> None:
        assert w.tmp is not None
        np.conjugate(g, out=w.tmp)
        fn(w.tmp, x, out, w)
        np.conjugate(out, out=out)

    return conjugated


def _conj(g: Array, x: t.Any, out: Array, w: Work) -> None:
    np.conjugate(g, out=out)


# complex128 arrays: the holomorphic ufuncs with a complex loop, and the conjugate.
COMPLEX_UNARY_PARTIALS: dict[np.ufunc, Partials] = {
    ufunc: Partials((_conjugated(t.cast(_Partial, UNARY_PARTIALS[ufunc].fns[0])),), tmp=True)
    for ufunc in (
        np.negative, np.positive, np.exp, np.exp2, np.expm1, np.log, np.log2, np.log10,
        np.log1p, np.sqrt, np.square, np.reciprocal, np.sin, np.cos, np.tan, np.arcsin,
        np.arccos, np.arctan, np.sinh, np.cosh, np.tanh, np.arcsinh, np.arccosh, np.arctanh,
    )
}  # fmt: skip
COMPLEX_UNARY_PARTIALS[np.conjugate] = _one(_conj)

# binary: partial(g, x, y, out, w)


def _first(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
    np.copyto(out, g)


def _negate_second(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
    np.negative(g, out=out)


def _times_y(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
    np.multiply(g, y, out=out)


def _times_x(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
    np.multiply(g, x, out=out)


def _over_y(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
    np.divide(g, y, out=out)


def _minus_x_over_y_squared(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
    np.divide(g, y, out=out)
    np.multiply(out, x, out=out)
    np.divide(out, y, out=out)
    np.negative(out, out=out)


# Of complex values the gradient is g * conj(dz/dx) (docs/tangents.md).  NumPy fills an output
# from scalar operands through a temporary as large as the output (``np.subtract(2, 1,
# out=out)``), so the partials below treat scalars apart, in Python.


def _times_conj_y(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
    if isinstance(y, np.ndarray):
        np.conjugate(y, out=out)
        _times_g(out, g)
    else:
        np.multiply(g, y.conjugate(), out=out)


def _times_conj_x(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
    _times_conj_y(g, y, x, out, w)


def _over_conj_y(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
    if isinstance(y, np.ndarray):
        np.conjugate(y, out=out)
        _g_over(out, g)
    else:
        np.divide(g, y.conjugate(), out=out)


def _minus_conj_x_over_y_squared(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
    np.divide(x, y, out=out)
    np.divide(out, y, out=out)
    np.conjugate(out, out=out)
    _times_g(out, g)
    np.negative(out, out=out)



def _pow_x(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
    """y x**(y-1), 0 where y == 0 (where x**(y-1) is inf at x == 0)."""
    assert w.mask is not None
    if isinstance(y, np.ndarray):
        np.subtract(y, 1, out=out)
        np.power(x, out, out=out)
        np.multiply(out, y, out=out)
        np.equal(y, 0, out=w.mask)
        np.copyto(out, 0, where=w.mask)
    elif y == 0:
        out.fill(0)
    else:  # a constant exponent: a **= 2
        np.power(x, y - 1, out=out)
        np.multiply(out, y, out=out)
    _times_g(out, g)


def _pow_y(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
    """x**y log|x|, 0 where x == 0; at a negative base (real only at integer y) the real part
    of the complex derivative."""
    assert w.tmp is not None and w.mask is not None
    if isinstance(x, np.ndarray):
        np.abs(x, out=out)
        np.log(out, out=out)
        np.power(x, y, out=w.tmp)
        np.multiply(out, w.tmp, out=out)
        np.equal(x, 0, out=w.mask)
        np.copyto(out, 0, where=w.mask)
    elif x == 0:
        out.fill(0)
    else:
        np.power(x, y, out=out)
        np.multiply(out, math.log(abs(x)), out=out)
    _times_g(out, g)


def _minus_floor_quotient(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
    # x % y = x - y * (x // y), the quotient locally constant
    np.floor_divide(x, y, out=out)
    np.negative(out, out=out)
    _times_g(out, g)


def _minus_trunc_quotient(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
    np.divide(x, y, out=out)
    np.trunc(out, out=out)
    np.negative(out, out=out)
    _times_g(out, g)


def _chosen(wins: np.ufunc) -> _Partial:
    """The partial of the operand that ``wins`` (greater, less) picks: 1 where it is picked,
    1/2 at a tie (the mean of the one-sided derivatives, as ``elementwise._ties``).  Masked
    copies, not products with a boolean array, which NumPy would cast through a temporary."""

    def chosen(g: Array, a: t.Any, b: t.Any, out: Array, w: Work) -> None:
        assert w.tmp is not None and w.mask is not None
        wins(a, b, out=w.mask)
        out.fill(0)
        np.copyto(out, g, where=w.mask)
        np.equal(a, b, out=w.mask)
        np.multiply(g, 0.5, out=w.tmp)
        np.copyto(out, w.tmp, where=w.mask)

    return chosen


def _swapped(fn: _Partial) -> _Partial:
    """The partial of the second operand from that of the first, for symmetric functions."""

    def swapped(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
        fn(g, y, x, out, w)

    return swapped


def _atan2_first(g: Array, a: t.Any, b: t.Any, out: Array, w: Work) -> None:
    """d atan2(a, b)/da = b / (a^2 + b^2)."""
    np.hypot(a, b, out=out)
    np.square(out, out=out)
    np.divide(b, out, out=out)
    _times_g(out, g)


def _atan2_second(g: Array, a: t.Any, b: t.Any, out: Array, w: Work) -> None:
    """d atan2(a, b)/db = -a / (a^2 + b^2)."""
    np.hypot(a, b, out=out)
    np.square(out, out=out)
    np.divide(a, out, out=out)
    np.negative(out, out=out)
    _times_g(out, g)


def _hypot_first(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
    """x / hypot(x, y), 0 at the origin (a subgradient)."""
    assert w.mask is not None
    np.hypot(x, y, out=out)
    np.equal(out, 0, out=w.mask)
    np.copyto(out, 1, where=w.mask)  # at the origin x / 1 = 0
    np.divide(x, out, out=out)
    _times_g(out, g)


def _logaddexp_first(exp: np.ufunc, logaddexp: np.ufunc) -> _Partial:
    """exp(x - logaddexp(x, y)), in base e or 2."""

    def partial(g: Array, x: t.Any, y: t.Any, out: Array, w: Work) -> None:
        logaddexp(x, y, out=out)
        np.subtract(x, out, out=out)
        exp(out, out=out)
        _times_g(out, g)

    return partial


_max = _chosen(np.greater)
_min = _chosen(np.less)
_lae = _logaddexp_first(np.exp, np.logaddexp)
_lae2 = _logaddexp_first(np.exp2, np.logaddexp2)

BINARY_PARTIALS: dict[np.ufunc, Partials] = {
    np.add: Partials((_first, _first)),
    np.subtract: Partials((_first, _negate_second)),
    np.multiply: Partials((_times_y, _times_x)),
    np.divide: Partials((_over_y, _minus_x_over_y_squared)),  # also np.true_divide
    np.power: Partials((_pow_x, _pow_y), tmp=True, mask=True, singular=True),
    np.float_power: Partials((_pow_x, _pow_y), tmp=True, mask=True, singular=True),
    np.remainder: Partials((_first, _minus_floor_quotient)),  # also np.mod
    np.fmod: Partials((_first, _minus_trunc_quotient)),
    np.maximum: Partials((_max, _swapped(_max)), tmp=True, mask=True),
    np.minimum: Partials((_min, _swapped(_min)), tmp=True, mask=True),
    np.fmax: Partials((_max, _swapped(_max)), tmp=True, mask=True),
    np.fmin: Partials((_min, _swapped(_min)), tmp=True, mask=True),
    np.arctan2: Partials((_atan2_first, _atan2_second)),
    np.hypot: Partials((_hypot_first, _swapped(_hypot_first)), mask=True),
    np.logaddexp: Partials((_lae, _swapped(_lae))),
    np.logaddexp2: Partials((_lae2, _swapped(_lae2))),
    np.floor_divide: Partials((None, None)),  # piecewise constant
}

# complex128 arrays: the arithmetic ufuncs (and so the in-place operators), with conjugates.
COMPLEX_BINARY_PARTIALS: dict[np.ufunc, Partials] = {
    np.add: BINARY_PARTIALS[np.add],
    np.subtract: BINARY_PARTIALS[np.subtract],
    np.multiply: Partials((_times_conj_y, _times_conj_x)),
    np.divide: Partials((_over_conj_y, _minus_conj_x_over_y_squared)),
}

# NumPy deprecates passing their output by position (a third operand may one day be an input).
KEYWORD_OUT_ONLY = frozenset({np.maximum, np.minimum})

IN_PLACE_OPERATORS: dict[t.Callable[[t.Any, t.Any], t.Any], np.ufunc] = {
    operator.iadd: np.add,
    operator.isub: np.subtract,
    operator.imul: np.multiply,
    operator.itruediv: np.divide,
    operator.ipow: np.power,
    operator.imod: np.remainder,
    operator.ifloordiv: np.floor_divide,
}


@attrs.frozen
class Gradient:
    """Where one input's gradient is summed: ``buffer`` is shaped like the input (0-d for a
    scalar); ``axes`` are the output's axes to sum over (``None``: all, for a scalar), and
    ``summed`` is ``buffer`` viewed with the output's rank, to receive the sum."""

    buffer: Array
    axes: tuple[int, ...] | None
    summed: Array


def _gradient(operand: object, out: Array) -> Gradient | None:
    if isinstance(operand, np.ndarray):
        shape, target = operand.shape, out.shape
        lead = len(target) - len(shape)
        if lead < 0 or any(n not in (1, m) for n, m in zip(shape, target[lead:])):
            raise ValueError(
                f"operand of shape {shape} does not broadcast to the output's shape {target}"
            )
        axes = tuple(range(lead)) + tuple(
            lead + i for i, (n, m) in enumerate(zip(shape, target[lead:])) if n == 1 != m
        )
        buffer = np.empty(shape, out.dtype)
        return Gradient(buffer, axes, buffer.reshape((1,) * lead + shape))
    if isinstance(operand, _INEXACT):
        buffer = np.empty((), out.dtype)
        return Gradient(buffer, None, buffer)
    return None  # an int: no gradient


_COMPLEX = (complex, np.complexfloating)
_INEXACT = (float, np.floating, *_COMPLEX)


def _signature(operand: object) -> object:
    return operand.shape if isinstance(operand, np.ndarray) else type(operand)


# One operand that may take a gradient: its position, its partial, its gradient's buffer.
_Step = tuple[int, _Partial, Gradient]


@attrs.frozen
class ElementwiseState:
    key: tuple[object, ...]  # the output's shape and dtype, the inputs' shapes or classes
    saved: Saved
    scratch: Array | None  # shaped like the output, for gradients that must be summed
    steps: tuple[_Step, ...]  # the operands with a partial that are floats or arrays
    work: Work
    no_rdata: tuple[t.Any, ...]  # each operand's rdata without a gradient: 0.0 for floats


def _elementwise_state(
    state: ElementwiseState | None, partials: Partials, operands: tuple[object, ...], out: Array
) -> ElementwiseState:
    key = (out.shape, out.dtype) + tuple([_signature(x) for x in operands])
    if state is not None and state.key == key:
        return state
    steps = []
    for i, (partial, x) in enumerate(zip(partials.fns, operands)):
        grad = None if partial is None else _gradient(x, out)
        if partial is not None and grad is not None:
            steps.append((i, partial, grad))
    needs_scratch = any(grad.axes != () for _, _, grad in steps)
    scratch = np.empty_like(out) if needs_scratch else None
    work = Work(
        np.empty_like(out) if partials.tmp else None,
        np.empty(out.shape, np.bool_) if partials.mask else None,
    )
    no_rdata = tuple(
        [type(x)(0) if isinstance(x, _INEXACT) else NO_TANGENT for x in operands]
    )
    return ElementwiseState(key, Saved.like(out), scratch, tuple(steps), work, no_rdata)


def _into_gradient(
    partial: _Partial,
    grad: Gradient,
    scratch: Array | None,
    work: Work,
    g: Array,
    operands: tuple[t.Any, ...],
) -> None:
    if grad.axes == ():
        partial(g, *operands, grad.buffer, work)
        return
    assert scratch is not None
    partial(g, *operands, scratch, work)
    np.add.reduce(scratch, axis=grad.axes, out=grad.summed, keepdims=grad.axes is not None)


def _finish(operand: _CoDual, grad: Gradient) -> t.Any:
    """Add an array input's gradient into its fdata; a scalar input's is its rdata (the real
    part for a real scalar of a complex call)."""
    if grad.axes is None:
        p, value = operand.primal, grad.buffer[()]
        return type(p)(value if isinstance(p, _COMPLEX) else value.real)
    np.add(operand.fdata, grad.buffer, out=operand.fdata)
    return NO_TANGENT


def _elementwise(
    state: ElementwiseState | None,
    ufunc: np.ufunc,
    partials: Partials,
    operands: tuple[_CoDual, ...],
    out: _CoDual,
) -> tuple[t.Callable[[], list[t.Any]], ElementwiseState]:
    """Run ``ufunc(*operands, out=out)``; the pullback returns the rdata of the operands."""
    primals = tuple([x.primal for x in operands])
    z = out.primal
    state = _elementwise_state(state, partials, primals, z)
    saved, scratch, work, no_rdata = state.saved, state.scratch, state.work, state.no_rdata
    # Floats, and arrays with fdata: an inactive array has none, and is a constant here.
    steps = [
        s for s in state.steps if s[2].axes is None or type(operands[s[0]].fdata) is not NoTangent
    ]
    saved.save(out)
    ufunc(*primals, out=z)
    dz = out.fdata
    dz.fill(0)
    quiet = partials.singular

    def pullback() -> list[t.Any]:
        np.copyto(z, saved.primal)
        if quiet:  # a singular point whose partial is then zeroed (0 ** -1) must not warn
            with np.errstate(divide="ignore", invalid="ignore"):
                for _, partial, grad in steps:
                    _into_gradient(partial, grad, scratch, work, dz, primals)
        else:
            for _, partial, grad in steps:
                _into_gradient(partial, grad, scratch, work, dz, primals)
        np.copyto(dz, saved.fdata)
        rdata = list(no_rdata)
        for i, _, grad in steps:
            rdata[i] = _finish(operands[i], grad)
        return rdata

    return pullback, state


def _ufunc_out_rule(ufunc: np.ufunc, partials: Partials) -> t.Callable[..., t.Any]:
    """``ufunc(*operands, out=out)`` or ``ufunc(*operands, out)``."""

    def ufunc_out(
        state: ElementwiseState | None, f: _CoDual, *args: _CoDual, **kwargs: _CoDual
    ) -> tuple[_CoDual, Pullback, ElementwiseState]:
        out = kwargs["out"] if kwargs else args[-1]
        operands = args if kwargs else args[:-1]
        pullback, state = _elementwise(state, ufunc, partials, operands, out)

        def ufunc_pullback(dy: object) -> tuple[t.Any, ...]:
            return (NO_TANGENT, *pullback(), NO_TANGENT)

        return out, ufunc_pullback, state

    ufunc_out.__qualname__ = f"{ufunc.__name__}_out"
    return ufunc_out


def _in_place_rule(ufunc: np.ufunc, partials: Partials) -> t.Callable[..., t.Any]:
    def in_place(
        state: ElementwiseState | None, f: _CoDual, a: _CoDual, b: _CoDual
    ) -> tuple[_CoDual, Pullback, ElementwiseState]:
        pullback, state = _elementwise(state, ufunc, partials, (a, b), a)

        def in_place_pullback(dy: object) -> tuple[t.Any, ...]:
            return (NO_TANGENT, *pullback())

        return a, in_place_pullback, state

    in_place.__qualname__ = f"{ufunc.__name__}_in_place"
    return in_place


# --------------------------------------------------------------------------------------------
# Registration


def _register() -> None:
    # Any scalar operand: floats (of any precision) get a gradient, ints and bools none; NumPy
    # itself refuses a complex scalar with a real output.
    scalar = T.Object(numbers.Number)
    for dtype in FLOAT_DTYPES:
        array = T.Array(dtype, None)
        matrix = T.Array(dtype, 2)
        stateful_primitive(
            np.matmul, matrix, matrix, kwargs={"out": matrix}, state_type=MatmulState
        )(matmul_out)
        stateful_primitive(np.matmul, matrix, matrix, matrix, state_type=MatmulState)(
            matmul_out
        )
        for ufunc, partials in UNARY_PARTIALS.items():
            rule = _ufunc_out_rule(ufunc, partials)
            stateful_primitive(ufunc, array, kwargs={"out": array}, state_type=ElementwiseState)(
                rule
            )
            stateful_primitive(ufunc, array, array, state_type=ElementwiseState)(rule)
        for ufunc, partials in BINARY_PARTIALS.items():
            rule = _ufunc_out_rule(ufunc, partials)
            for x, y in [(array, array), (array, scalar), (scalar, array)]:
                stateful_primitive(
                    ufunc, x, y, kwargs={"out": array}, state_type=ElementwiseState
                )(rule)
                if ufunc not in KEYWORD_OUT_ONLY:
                    stateful_primitive(ufunc, x, y, array, state_type=ElementwiseState)(rule)
        for op, ufunc in IN_PLACE_OPERATORS.items():
            rule = _in_place_rule(ufunc, BINARY_PARTIALS[ufunc])
            for b in (array, scalar):
                stateful_primitive(op, array, b, state_type=ElementwiseState)(rule)
    array = T.Array(COMPLEX_DTYPE, None)
    for ufunc, partials in COMPLEX_UNARY_PARTIALS.items():
        rule = _ufunc_out_rule(ufunc, partials)
        stateful_primitive(ufunc, array, kwargs={"out": array}, state_type=ElementwiseState)(rule)
        stateful_primitive(ufunc, array, array, state_type=ElementwiseState)(rule)
    for ufunc, partials in COMPLEX_BINARY_PARTIALS.items():
        rule = _ufunc_out_rule(ufunc, partials)
        for x, y in [(array, array), (array, scalar), (scalar, array)]:
            stateful_primitive(ufunc, x, y, kwargs={"out": array}, state_type=ElementwiseState)(
                rule
            )
            stateful_primitive(ufunc, x, y, array, state_type=ElementwiseState)(rule)
    for op, ufunc in IN_PLACE_OPERATORS.items():
        if ufunc in COMPLEX_BINARY_PARTIALS:
            rule = _in_place_rule(ufunc, COMPLEX_BINARY_PARTIALS[ufunc])
            for b in (array, scalar):
                stateful_primitive(op, array, b, state_type=ElementwiseState)(rule)


_register()
