"""Operators, ``math`` functions and numeric builtins on scalars.

Scalars are Python and NumPy bools, ints, floats and complex numbers (the pattern
``object<numbers.Number>``).  The forward pass calls the callee itself, so Python's semantics
hold (``(-8.0) ** 0.5`` is complex, ``1.0 / 0.0`` raises); the gradient functions are those of
the NumPy ufuncs (``elementwise``).  Ints and bools get no gradient.  In-place operators on
scalars (``x += 1.0``) rebind the name: they are the plain operators.

``min``/``max`` are in ``gibbous.library.python.builtins``.
"""

from __future__ import annotations

import builtins
import math
import operator
import types
import typing as t

import numpy as np

from gibbous.infer.implementations import register_twin
from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Value
from gibbous.rules import formulas
from gibbous.rules import frules
from gibbous.rules.emit import number_type, real_type, refuse_complex, static_types
from gibbous.rules import inline
from gibbous.rules.public_names import callable_name
from gibbous.library.elementwise import tables
from gibbous.library.elementwise import variants
from gibbous.library.common import (
    ARRAY,
    CD,
    NT,
    NUMBER,
    STR,
    RuleResult,
    needs,
    new_fdata,
    send,
    zero_for,
)
from gibbous.rules.registry import primitive, zero_derivative
from gibbous.rules import structure
from gibbous.tangents.model import CoDual

# --------------------------------------------------------------------------------------------
# Operators

# The ufuncs' formulas (``gibbous.rules.formulas``): ``%`` is ``np.remainder``'s, ``**`` is
# ``np.power``'s.
OPERATOR_BINARY: dict[t.Callable[..., t.Any], tuple[tables.BinaryGrad, tables.BinaryGrad]] = {
    getattr(operator, op): (tables.BINARY[formulas.UFUNCS_BINARY[u][0]], tables.BINARY[formulas.UFUNCS_BINARY[u][1]])
    for op, u in formulas.OPERATORS_BINARY.items()
}
# On scalars the in-place forms rebind: ``x += y`` is ``x = x + y``.
IN_PLACE = {
    operator.iadd: operator.add,
    operator.isub: operator.sub,
    operator.imul: operator.mul,
    operator.itruediv: operator.truediv,
    operator.ipow: operator.pow,
    operator.imod: operator.mod,
}
OPERATOR_UNARY: dict[t.Callable[..., t.Any], tables.UnaryGrad] = {
    **{getattr(operator, op): tables.UNARY[formulas.UFUNCS_UNARY[u]] for op, u in formulas.OPERATORS_UNARY.items()},
    builtins.abs: tables.g_abs,
}

for _op, (_gx, _gy) in OPERATOR_BINARY.items():
    variants.register_binary([_op], _gx, _gy, tables.SCALAR_BINARY, inline="python")
for _iop, _op in IN_PLACE.items():
    variants.register_binary([_iop], *OPERATOR_BINARY[_op], tables.SCALAR_BINARY, inline="python")
variants.register_binary([builtins.pow], tables.g_pow_x, tables.g_pow_y, tables.SCALAR_BINARY)
for _op, _g in OPERATOR_UNARY.items():
    variants.register_unary([_op], _g, tables.SCALAR_UNARY, inline="python")
for _op in (operator.floordiv, operator.ifloordiv):
    zero_derivative(_op, NUMBER, NUMBER)

# --------------------------------------------------------------------------------------------
# math

MATH_UNARY: dict[t.Callable[..., t.Any], tables.UnaryGrad] = {
    math.sin: tables.g_sin,
    math.cos: tables.g_cos,
    math.tan: tables.g_tan,
    math.asin: tables.g_arcsin,
    math.acos: tables.g_arccos,
    math.atan: tables.g_arctan,
    math.sinh: tables.g_sinh,
    math.cosh: tables.g_cosh,
    math.tanh: tables.g_tanh,
    math.asinh: tables.g_arcsinh,
    math.acosh: tables.g_arccosh,
    math.atanh: tables.g_arctanh,
    math.exp: tables.g_exp,
    math.exp2: tables.g_exp2,
    math.expm1: tables.g_expm1,
    math.log: tables.g_log,  # one argument; two below
    math.log2: tables.g_log2,
    math.log10: tables.g_log10,
    math.log1p: tables.g_log1p,
    math.sqrt: tables.g_sqrt,
    math.cbrt: tables.g_cbrt,
    math.fabs: tables.g_abs,
    math.erf: tables.g_erf,
    math.erfc: tables.g_erfc,
    math.degrees: tables.g_rad2deg,
    math.radians: tables.g_deg2rad,
    math.gamma: tables.g_gamma,
    math.lgamma: tables.g_lgamma,
}
MATH_BINARY: dict[t.Callable[..., t.Any], tuple[tables.BinaryGrad, tables.BinaryGrad]] = {
    math.pow: (tables.g_pow_x, tables.g_pow_y),
    math.atan2: (tables.g_atan2_y, tables.g_atan2_x),
    math.fmod: (tables.g_first, tables.g_fmod_y),
    math.remainder: (tables.g_first, tables.g_remainder_y),
}
# Functions of which only the first operand has a derivative.
MATH_BINARY_FIRST: dict[t.Callable[..., t.Any], tables.BinaryGrad] = {
    math.copysign: tables.g_copysign_x,  # the sign of y is locally constant
    math.ldexp: tables.g_ldexp_x,  # x * 2**i, i an int
    math.nextafter: tables.g_first,  # x moved by one ulp towards y
}
MATH_ZERO = (
    math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite, math.ulp,
)  # fmt: skip

for _fn, _g in MATH_UNARY.items():
    variants.register_unary([_fn], _g, tables.SCALAR_UNARY, inline="python")
for _fn, (_gx, _gy) in MATH_BINARY.items():
    variants.register_binary([_fn], _gx, _gy, tables.SCALAR_BINARY, inline="python")
for _fn, _gx in MATH_BINARY_FIRST.items():
    # ldexp(x, i) takes an int exponent only
    _pairs = ((variants.F64, variants.INT),) if _fn is math.ldexp else ((variants.F64, variants.F64), (variants.F64, variants.INT), (variants.INT, variants.F64))
    variants.register_binary([_fn], _gx, None, tables.SCALAR_BINARY, float_pairs=_pairs)
for _fn in MATH_ZERO:
    zero_derivative(_fn, NUMBER)
zero_derivative(math.isclose, NUMBER, NUMBER, ...)  # and rel_tol=, abs_tol=


variants.register_binary([math.log], tables.g_log_base_x, tables.g_log_base_y, tables.SCALAR_BINARY)


@primitive(math.hypot, NUMBER, ...)
def hypot_rrule(f: CD, *xs: CD) -> RuleResult:
    """``math.hypot(*xs)``: each x_i gets x_i / h (0 when h = 0: a subgradient)."""
    z = f.primal(*(x.primal for x in xs))
    grad = tables.g_hypot_x  # of two operands or of many, the same formula

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if dz is NT:
            return (NT, *(zero_for(x) for x in xs))
        g = tables.numpy_scalar(dz)
        grads = (send(x, grad(g, x.primal, None, z)) if needs(x) else zero_for(x) for x in xs)
        return (NT, *grads)

    return CoDual(z, NT), pullback


def hypot_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``math.hypot(*xs)``: the sum of ``dx_i x_i / h`` (the reverse rule's formula, 0 at 0)."""
    if kwnames or not types or not all(map(real_type, types)):
        return None
    n = len(types)

    def tangent(z: t.Any, *a: t.Any) -> t.Any:
        refuse_complex("math.hypot", *a[:n])
        h = tables.numpy_scalar(z)
        terms = [tables.g_hypot_x(d, x, None, h) for x, d in zip(a[:n], a[n:]) if d is not None]
        return frules.like(z, sum(terms) if terms else None)

    return tangent


frules.register(math.hypot, hypot_tangent)


def _first_part_rrule(derivative: t.Callable[[t.Any], float]) -> t.Callable[[CD, CD], RuleResult]:
    """A function of one float to a pair whose first part alone has a derivative, given by
    ``derivative(y)``: ``frexp(x) = (m, e)`` with ``m = x * 2**-e``, ``modf(x) = (frac, whole)``
    with ``frac = x - whole``."""

    def rrule(f: CD, x: CD) -> RuleResult:
        y = f.primal(x.primal)

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            if dy is NT or dy[0] is NT or not needs(x):
                return NT, zero_for(x)
            return NT, send(x, dy[0] * derivative(y))

        return CoDual(y, NT), pullback

    return rrule


def _frexp_slope(y: tuple[float, int]) -> float:
    return math.ldexp(1.0, -y[1])  # m = x * 2**-e, e locally constant


def _modf_slope(y: tuple[float, float]) -> float:
    return 1.0  # frac = x - whole, whole locally constant


primitive(math.frexp, NUMBER)(_first_part_rrule(_frexp_slope))
primitive(math.modf, NUMBER)(_first_part_rrule(_modf_slope))


def first_part_tangent(
    fn: t.Callable[..., t.Any], derivative: t.Callable[[t.Any], float]
) -> frules.Maker:
    """The forward rule of ``_first_part_rrule``'s functions: ``(dx * derivative(y), 0.0)``
    (the second part is locally constant; an int's tangent is 0.0).  Written out where the
    operand's type is known (``modf``: ``dx``; ``frexp``: ``dx * ldexp(1.0, -e)``)."""

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> frules.Tangent | frules.Emit | None:
        if kwnames or len(types) != 1 or not real_type(types[0]):
            return None
        if static_types(types):
            return frules.Emit(_first_part_emit(fn))

        def tangent(z: t.Any, x: t.Any, dx: t.Any) -> t.Any:
            refuse_complex(callable_name(fn), x)
            return frules.like(z, None if dx is None else (dx * derivative(z), 0.0))

        return tangent

    return make


def _first_part_emit(fn: t.Callable[..., t.Any]) -> t.Callable[..., Value]:
    def emit(
        b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
    ) -> Value:
        dx = tangents[0]
        if dx is None:
            return frules.zero(b, z)
        first = dx
        if fn is math.frexp:
            e = b.call(operator.getitem, z, 1, type=T.INT)
            scale = b.call(math.ldexp, 1.0, b.call(operator.neg, e, type=T.INT), type=T.FLOAT)
            first = b.call(operator.mul, dx, scale, type=T.FLOAT)
        return b.call(runtime.make_tuple, first, 0.0, type=T.Tuple((T.FLOAT, T.FLOAT)))

    return emit


frules.register(math.frexp, first_part_tangent(math.frexp, _frexp_slope))
frules.register(math.modf, first_part_tangent(math.modf, _modf_slope))


# --------------------------------------------------------------------------------------------
# Builtins


def _float_rrule(f: CD, x: CD) -> RuleResult:
    """``float(x)`` of a number or a 0-d array: the identity on the value."""
    z = f.primal(x.primal)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if dz is NT or not needs(x):
            return NT, zero_for(x)
        return NT, send(x, dz)

    return CoDual(z, NT), pullback


for _fn in (builtins.float, np.float64, np.float32, builtins.complex, np.complex128):
    primitive(_fn, NUMBER)(_float_rrule)
# float(x) of a float: the identity, written out (the adjoint passes)
primitive(builtins.float, variants.F64, variant="float_identity", inline=inline.FLOAT)(_float_rrule)
for _fn in (builtins.float, builtins.complex):  # of a 0-d array
    primitive(_fn, ARRAY)(_float_rrule)
frules.register_linear([builtins.float, np.float64])
for _fn in (builtins.int, builtins.bool, builtins.round, np.int64, np.int32):
    zero_derivative(_fn, NUMBER, ...)
    if _fn is not builtins.round or hasattr(np.ndarray, "__round__"):  # NumPy 2 has none
        zero_derivative(_fn, ARRAY)
for _fn in (builtins.float, builtins.int, builtins.complex):
    zero_derivative(_fn, STR)


@primitive(builtins.complex, NUMBER, NUMBER)
def complex_rrule(f: CD, re: CD, im: CD) -> RuleResult:
    """``complex(a, b) = a + i b``: a's gradient is the cotangent, b's is ``conj(i) * g``."""
    z = f.primal(re.primal, im.primal)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if dz is NT:
            return NT, zero_for(re), zero_for(im)
        gre = send(re, dz) if needs(re) else zero_for(re)
        gim = send(im, -1j * dz) if needs(im) else zero_for(im)
        return NT, gre, gim

    return CoDual(z, NT), pullback


def divmod_rrule(f: CD, a: CD, b: CD) -> RuleResult:
    """``divmod(a, b) = (a // b, a % b)``: only the remainder has a derivative."""
    ap, bp = a.primal, b.primal
    y = f.primal(ap, bp)
    parts = (new_fdata(y[0]), new_fdata(y[1]))  # the quotient too: a float array has fdata
    yf = NT if parts[0] is NT and parts[1] is NT else parts

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = _remainder_cotangent(yf, dy)
        if g is None:
            return NT, zero_for(a), zero_for(b)
        g = tables.numpy_scalar(g)
        ga = send(a, g) if needs(a) else zero_for(a)
        gb = send(b, tables.g_mod_y(g, ap, bp, None)) if needs(b) else zero_for(b)
        return NT, ga, gb

    return CoDual(y, yf), pullback


def _remainder_cotangent(yf: t.Any, dy: t.Any) -> t.Any:
    """The cotangent of the remainder: in its fdata (arrays) or the second item of the rdata."""
    if yf is not NT and isinstance(yf[1], np.ndarray):
        return yf[1]
    if dy is NT or dy[1] is NT:
        return None
    return dy[1]


for _fn in (builtins.divmod, np.divmod):
    tables.register_all([_fn], divmod_rrule, tables.BINARY_PATTERNS)


def divmod_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``divmod(a, b)``: the quotient's tangent 0, the remainder's ``np.remainder``'s (its
    forward rule: the formulas of the reverse rule's ``da - (a // b) db``)."""
    remainder = frules.forward_maker(np.remainder)
    made = None if remainder is None else remainder(types, kwnames, varied)
    if made is None:
        return None
    if isinstance(made, frules.Emit):
        return frules.Emit(_divmod_emit(made))
    rest = made

    def tangent(z: t.Any, *a: t.Any) -> t.Any:
        return frules.like(z[0], None), rest(z[1], *a)

    return tangent


def _divmod_emit(remainder: frules.Emit) -> t.Callable[..., Value]:
    def emit(
        b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
    ) -> Value:
        pair = z.type.items if isinstance(z.type, T.Tuple) and len(z.type.items) == 2 else None
        quotient, rest = (
            b.call(operator.getitem, z, i, type=T.ANY if pair is None else pair[i]) for i in (0, 1)
        )
        dq = frules.zero(b, quotient)
        dr = remainder.fn(b, rest, args, tangents, kwargs)
        return b.call(runtime.make_tuple, dq, dr, type=T.Tuple((dq.type, dr.type)))

    return emit


for _fn in (builtins.divmod, np.divmod):
    frules.register(_fn, divmod_tangent)


# Forward mode: an arithmetic operator with a string operand gives a string, without a tangent.
structure.register_text_operands([
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
    operator.mod, operator.pow, operator.iadd, operator.imul, operator.imod,
])  # fmt: skip


def generic_astype(x: t.Any, *args: t.Any, **kwargs: t.Any) -> t.Any:
    """``x.astype(dtype, ...)`` of a NumPy scalar (``xp.astype`` of SciPy's array API on a
    float64 result): the 0-d array's cast, as a scalar again."""
    return np.asarray(x).astype(*args, **kwargs)[()]


register_twin(np.generic.astype, t.cast(types.FunctionType, generic_astype))


@primitive(operator.getitem, NUMBER, T.Tuple(()))
def number_item_rrule(f: CD, x: CD, index: CD) -> RuleResult:
    """``x[()]`` of a NumPy scalar: itself (SciPy's ``res[()] if res.ndim == 0 else res``)."""
    z = f.primal(x.primal, index.primal)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        return NT, (send(x, dz) if dz is not NT and needs(x) else zero_for(x)), NT

    return CoDual(z, NT), pullback


def _number_item_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | None:
    """``x[()]`` of a NumPy scalar: its tangent (a Python float, which no index reads)."""
    if kwnames or len(types) != 2 or types[1] != T.Tuple(()) or not number_type(types[0]):
        return None
    if isinstance(types[0], T.Array):
        return None  # (a 0-d array's item: the linear rule of getitem)

    def item(z: t.Any, x: t.Any, index: t.Any, dx: t.Any, dindex: t.Any) -> t.Any:
        return frules.like(z, dx)

    return item


frules.register(operator.getitem, _number_item_tangent)
