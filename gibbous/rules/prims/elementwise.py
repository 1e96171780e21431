"""Elementwise rules from tables of gradient functions.

One rule serves a callable on scalars and on arrays alike: the forward pass calls the callee
itself (``operator.add``, ``np.add``, ``math.sin``), so Python and NumPy keep their own
semantics (a Python float stays a float, ``-8.0 ** (1/3)`` is complex in Python and nan in
NumPy), and the pullback applies a *gradient function* to the cotangent:

    unary:  grad(g, x, z) -> the gradient for x          (z = f(x))
    binary: grad(g, x, y, z) -> the gradient for x or y  (z = f(x, y))

``g`` is the cotangent of ``z`` (an array, or a NumPy scalar: see ``numpy_scalar``).  For a
holomorphic function the gradient is ``g * conj(f'(x))`` (docs/tangents.md), which the
functions below spell out; ``common.send`` sums it back over broadcast axes and takes the real
part for real operands.
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.rules.prims.common import (
    CD,
    NT,
    NUMERIC,
    RuleResult,
    conj,
    cotangent,
    needs,
    new_fdata,
    send,
    zero_for,
)
from gibbous.rules.registry import PatternItem, primitive
from gibbous.rules.tangents import CoDual

UnaryGrad = t.Callable[[t.Any, t.Any, t.Any], t.Any]
BinaryGrad = t.Callable[[t.Any, t.Any, t.Any, t.Any], t.Any]


def numpy_scalar(g: t.Any) -> t.Any:
    """A Python scalar cotangent as a NumPy scalar: gradient functions then divide by zero the
    NumPy way (inf, nan) instead of raising ZeroDivisionError at a singular point whose primal
    was fine (``sqrt(0.0)``)."""
    if type(g) is float:
        return np.float64(g)
    if type(g) is complex:
        return np.complex128(g)
    return g


def unary_rule(grad: UnaryGrad) -> t.Callable[[CD, CD], RuleResult]:
    def rrule(f: CD, x: CD) -> RuleResult:
        xp = x.primal
        z = f.primal(xp)
        zf = new_fdata(z)

        def pullback(dz: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(zf, dz)
            if g is None or not needs(x):
                return NT, zero_for(x)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                return NT, send(x, grad(numpy_scalar(g), xp, z))

        return CoDual(z, zf), pullback

    rrule.__qualname__ = f"unary_rule({grad.__name__})"
    return rrule


def binary_rule(
    grad_x: BinaryGrad | None, grad_y: BinaryGrad | None
) -> t.Callable[[CD, CD, CD], RuleResult]:
    """``None`` for an operand that never gets a gradient."""

    def rrule(f: CD, x: CD, y: CD) -> RuleResult:
        xp, yp = x.primal, y.primal
        z = f.primal(xp, yp)
        zf = new_fdata(z)

        def pullback(dz: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(zf, dz)
            if g is None:
                return NT, zero_for(x), zero_for(y)
            g = numpy_scalar(g)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                gx = send(x, grad_x(g, xp, yp, z)) if grad_x and needs(x) else zero_for(x)
                gy = send(y, grad_y(g, xp, yp, z)) if grad_y and needs(y) else zero_for(y)
            return NT, gx, gy

        return CoDual(z, zf), pullback

    names = [getattr(fn, "__name__", "-") for fn in (grad_x, grad_y)]
    rrule.__qualname__ = f"binary_rule({', '.join(names)})"
    return rrule


def register_all(
    fns: t.Iterable[object],
    rule: t.Callable[..., t.Any],
    patterns: t.Iterable[tuple[PatternItem, ...]],
) -> None:
    for fn in fns:
        for pattern in patterns:
            primitive(fn, *pattern)(rule)


UNARY_PATTERNS = [(kind,) for kind in NUMERIC]
BINARY_PATTERNS = [(a, b) for a in NUMERIC for b in NUMERIC]
SCALAR_UNARY = [NUMERIC[1:]]
SCALAR_BINARY = [(NUMERIC[1], NUMERIC[1])]

# --------------------------------------------------------------------------------------------
# Gradient functions shared by operators, ufuncs and math.  ``g`` is the cotangent.

LN2 = float(np.log(2.0))
LN10 = float(np.log(10.0))


def _where_zero(cond: t.Any, value: t.Any) -> t.Any:
    """``value`` with zeros where ``cond`` holds (for scalars and arrays)."""
    if isinstance(value, np.ndarray) or isinstance(cond, np.ndarray):
        return np.where(cond, 0, value)
    return type(value)(0) if cond else value  # not 0 * value: that is nan for an infinite value


# unary


def g_same(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g


def g_negate(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return -g


def g_exp(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * conj(z)


def g_exp2(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * conj(z) * LN2


def g_expm1(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * conj(z + 1)


def g_log(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g / conj(x)


def g_log2(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g / (conj(x) * LN2)


def g_log10(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g / (conj(x) * LN10)


def g_log1p(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g / conj(1 + x)


def g_sqrt(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g / conj(2 * z)


def g_cbrt(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g / conj(3 * z * z)


def g_sin(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * conj(np.cos(x))


def g_cos(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return -g * conj(np.sin(x))


def g_tan(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * conj(1 + z * z)


def g_arcsin(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g / conj(np.sqrt(1 - x * x))


def g_arccos(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return -g / conj(np.sqrt(1 - x * x))


def g_arctan(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g / conj(1 + x * x)


def g_sinh(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * conj(np.cosh(x))


def g_cosh(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * conj(np.sinh(x))


def g_tanh(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * conj(1 - z * z)


def g_arcsinh(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g / conj(np.sqrt(x * x + 1))


def g_arccosh(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g / conj(np.sqrt(x * x - 1))


def g_arctanh(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g / conj(1 - x * x)


def g_square(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * conj(2 * x)


def g_reciprocal(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return -g * conj(z * z)


def g_deg2rad(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * (np.pi / 180)


def g_rad2deg(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * (180 / np.pi)


def g_erf(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * (2 / np.sqrt(np.pi)) * np.exp(-x * x)


def g_erfc(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return -g * (2 / np.sqrt(np.pi)) * np.exp(-x * x)


def g_abs(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    """|x| is not holomorphic: for complex x its gradient is x / |x| (0 at 0); for real x the
    sign (0 at 0, a subgradient)."""
    if np.iscomplexobj(x):
        return g * np.divide(x, z, out=np.zeros_like(x), where=z != 0)
    return g * np.sign(x)


def g_conj(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return conj(g)


# binary


def g_first(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g


def g_negate2(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return -g


def g_times_y(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g * conj(y)


def g_times_x(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g * conj(x)


def g_over_y(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g / conj(y)


def g_quotient_y(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    # d(x / y)/dy = -x / y**2 = -z / y; z / y avoids squaring a large y
    return -g * conj(z / y)


def g_mod_y(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    # x % y = x - y * (x // y), with x // y locally constant
    return -g * (x // y)


def g_fmod_y(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return -g * np.trunc(x / y)


def _as_complex_if(x: t.Any, z: t.Any) -> t.Any:
    # A real negative base with a fractional exponent is complex in Python: differentiate there.
    return x + 0j if np.iscomplexobj(z) and not np.iscomplexobj(x) else x


def g_pow_x(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    """d(x**y)/dx = y * x**(y-1), 0 where y == 0 (where x**(y-1) at x == 0 would be inf)."""
    x = _as_complex_if(x, z)
    return g * conj(_where_zero(np.equal(y, 0), y * np.power(x, np.subtract(y, 1))))


def g_pow_y(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    """d(x**y)/dy = x**y * log(x), 0 where x == 0.

    For a real negative base (real-valued only at integer y) the log of |x| is used: the real
    part of the complex derivative, which is d/dy Re(x**y) there, so an integer power of a
    negative number gets a finite gradient rather than nan.
    """
    x = _as_complex_if(x, z)
    at_zero = np.equal(x, 0)
    safe = np.where(at_zero, 1, x if np.iscomplexobj(x) else np.abs(x))
    return g * conj(_where_zero(at_zero, z * np.log(safe)))


def _ties(x: t.Any, y: t.Any, larger: bool) -> t.Any:
    """1 where x is chosen, 1/2 at ties: the mean of the two one-sided derivatives, which is
    what a central difference measures at a tie."""
    wins = np.greater(x, y) if larger else np.less(x, y)
    return wins + 0.5 * np.equal(x, y)


def g_max_x(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g * _ties(x, y, True)


def g_max_y(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g * _ties(y, x, True)


def g_min_x(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g * _ties(x, y, False)


def g_min_y(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g * _ties(y, x, False)


def g_atan2_y(g: t.Any, y: t.Any, x: t.Any, z: t.Any) -> t.Any:
    # atan2(y, x): the first operand is y
    return g * x / (x * x + y * y)


def g_atan2_x(g: t.Any, y: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return -g * y / (x * x + y * y)


def _ratio(a: t.Any, z: t.Any) -> t.Any:
    """a / z, 0 where z == 0 (the gradient of a norm at the origin: a subgradient)."""
    return _where_zero(np.equal(z, 0), a / np.where(np.equal(z, 0), 1, z))


def g_hypot_x(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g * _ratio(x, z)


def g_hypot_y(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g * _ratio(y, z)


def g_logaddexp_x(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g * np.exp(x - z)


def g_logaddexp_y(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g * np.exp(y - z)


def g_logaddexp2_x(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g * np.exp2(x - z)


def g_logaddexp2_y(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    return g * np.exp2(y - z)
