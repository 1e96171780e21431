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

import math
import typing as t

import numpy as np

from gibbous.rules import pool
from gibbous.rules.prims.common import (
    CD,
    NT,
    NUMERIC,
    Array,
    RuleResult,
    add_into,
    conj,
    cotangent,
    needs,
    new_fdata,
    scalar_rdata,
    send,
    zero_for,
)
from gibbous.rules.registry import PatternItem, primitive
from gibbous.rules.tangents import CoDual

UnaryGrad = t.Callable[[t.Any, t.Any, t.Any], t.Any]
BinaryGrad = t.Callable[[t.Any, t.Any, t.Any, t.Any], t.Any]
FloatUnary = t.Callable[[float, float, float], t.Any]
FloatBinary = t.Callable[[float, t.Any, t.Any, float], t.Any]


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
    def generic(x: CD, xp: t.Any, z: t.Any, zf: t.Any, dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None or not needs(x):
            return NT, zero_for(x)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return NT, send(x, grad(numpy_scalar(g), xp, z))

    def rrule(f: CD, x: CD) -> RuleResult:
        xp = x.primal
        z = f.primal(xp)
        if fast is not None and type(z) in _FLOATS and type(xp) in _FLOATS:
            # A float of a float: the pullback in Python floats (see FLOAT_UNARY).
            fast_grad: FloatUnary = fast

            def float_pullback(dz: t.Any) -> tuple[t.Any, ...]:
                if type(dz) in _FLOATS:
                    try:
                        r = fast_grad(float(dz), float(xp), float(z))
                    except (ArithmeticError, ValueError):
                        r = None
                    if type(r) is float:
                        return NT, r if type(xp) is float else np.float64(r)
                return generic(x, xp, z, NT, dz)

            return CoDual(z, NT), float_pullback
        zf = new_fdata(z)
        xf = x.fdata
        if (
            type(zf) is np.ndarray
            and type(xf) is np.ndarray
            and zf.dtype.kind == "f"
            and xf.dtype.kind == "f"
            and xf.shape == zf.shape
        ):
            # Real arrays of one shape, the operand active (the common case): nothing to
            # undo, no scalars to box; the same arithmetic as ``generic``.  The result's fdata,
            # consumed, is recycled (``gibbous.rules.pool``; once, should a caller misbehave).
            done = False

            def array_pullback(dz: t.Any) -> tuple[t.Any, ...]:
                nonlocal done
                if quiet:
                    np.add(xf, grad(zf, xp, z), out=xf)
                else:
                    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                        np.add(xf, grad(zf, xp, z), out=xf)
                if not done:
                    done = True
                    pool.release(zf)
                return _NT2

            return CoDual(z, zf), array_pullback

        def pullback(dz: t.Any) -> tuple[t.Any, ...]:
            return generic(x, xp, z, zf, dz)

        return CoDual(z, zf), pullback

    fast = FLOAT_UNARY.get(grad)
    # Gradients that divide by nothing and take no logarithm: on finite arrays they cannot
    # warn, so they skip np.errstate (1 µs), as the binary rules' ``quiet`` ones do.
    quiet = grad in (g_same, g_negate, g_tanh)
    rrule.__qualname__ = f"unary_rule({grad.__name__})"
    return rrule


def binary_rule(
    grad_x: BinaryGrad | None, grad_y: BinaryGrad | None
) -> t.Callable[[CD, CD, CD], RuleResult]:
    """``None`` for an operand that never gets a gradient."""

    def generic(
        x: CD, y: CD, xp: t.Any, yp: t.Any, z: t.Any, zf: t.Any, dz: t.Any
    ) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None:
            return NT, zero_for(x), zero_for(y)
        g = numpy_scalar(g)
        if quiet:  # the gradient is g or -g: nothing to warn about, no errstate to enter
            gx = send(x, grad_x(g, xp, yp, z)) if grad_x and needs(x) else zero_for(x)
            gy = send(y, grad_y(g, xp, yp, z)) if grad_y and needs(y) else zero_for(y)
            return NT, gx, gy
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            gx = send(x, grad_x(g, xp, yp, z)) if grad_x and needs(x) else zero_for(x)
            gy = send(y, grad_y(g, xp, yp, z)) if grad_y and needs(y) else zero_for(y)
        return NT, gx, gy

    def rrule(f: CD, x: CD, y: CD) -> RuleResult:
        xp, yp = x.primal, y.primal
        z = f.primal(xp, yp)
        if fast and type(z) in _FLOATS and type(xp) in _SCALARS and type(yp) in _SCALARS:
            # Floats (and ints) to a float: the pullback in Python floats (see FLOAT_BINARY).
            def float_pullback(dz: t.Any) -> tuple[t.Any, ...]:
                if type(dz) in _FLOATS:
                    r = _float_binary(fast_x, fast_y, float(dz), xp, yp, float(z))
                    if r is not None:
                        return r
                return generic(x, y, xp, yp, z, NT, dz)

            return CoDual(z, NT), float_pullback
        zf = new_fdata(z)
        if (
            type(zf) is np.ndarray
            and zf.dtype.kind == "f"
            and _real_operand(xp)
            and _real_operand(yp)
        ):
            # Real arrays and scalars to a real array (the common case): the arithmetic of
            # ``generic`` in fewer steps, and the result's fdata recycled once consumed.
            if x is y and grad_x is g_times_y and grad_y is g_times_x and type(xp) is np.ndarray:
                return CoDual(z, zf), _square_pullback(x, zf)
            done = False

            def array_pullback(dz: t.Any) -> tuple[t.Any, ...]:
                nonlocal done
                if quiet:
                    gx = _send_real(x, grad_x, zf, xp, yp, z)
                    gy = _send_real(y, grad_y, zf, xp, yp, z)
                else:
                    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                        gx = _send_real(x, grad_x, zf, xp, yp, z)
                        gy = _send_real(y, grad_y, zf, xp, yp, z)
                if not done:
                    done = True
                    pool.release(zf)
                return NT, gx, gy

            return CoDual(z, zf), array_pullback

        def pullback(dz: t.Any) -> tuple[t.Any, ...]:
            return generic(x, y, xp, yp, z, zf, dz)

        return CoDual(z, zf), pullback

    quiet = grad_x in (None, g_first, g_negate2) and grad_y in (None, g_first, g_negate2)
    fast_x = None if grad_x is None else FLOAT_BINARY.get(grad_x)
    fast_y = None if grad_y is None else FLOAT_BINARY.get(grad_y)
    # Every operand that may get a gradient needs a float version.
    fast = (grad_x is None or fast_x is not None) and (grad_y is None or fast_y is not None)
    names = [getattr(fn, "__name__", "-") for fn in (grad_x, grad_y)]
    rrule.__qualname__ = f"binary_rule({', '.join(names)})"
    return rrule


_NT2 = (NT, NT)


def _square_pullback(x: CD, g: Array) -> t.Callable[[t.Any], tuple[t.Any, ...]]:
    """The pullback of ``x * x`` for a real array ``x``: one gradient ``2 g x``, not two."""
    xp, xf = x.primal, x.fdata
    done = False

    def square_pullback(dz: t.Any) -> tuple[t.Any, ...]:
        nonlocal done
        if type(xf) is np.ndarray:
            twice = np.multiply(g, xp)
            np.add(twice, twice, out=twice)
            np.add(xf, twice, out=xf)
        if not done:
            done = True
            pool.release(g)
        return _NT3

    return square_pullback


_NT3 = (NT, NT, NT)


def _real_operand(p: t.Any) -> bool:
    """Whether ``_send_real`` handles operand ``p``: a real or integral array or scalar."""
    kind = type(p)
    return kind in _SCALARS or (kind is np.ndarray and p.dtype.kind in "fiub")


def _send_real(x: CD, grad: BinaryGrad | None, g: Array, xp: t.Any, yp: t.Any, z: Array) -> t.Any:
    """``send(x, grad(g, ...))`` for a real operand (see ``_real_operand``) of a real array
    result, in fewer steps: the gradient of an operand of the result's shape is added into its
    fdata as it is (subtracted, for a negation)."""
    p = x.primal
    if type(p) is np.ndarray:
        fdata = x.fdata
        if grad is None or type(fdata) is not np.ndarray:
            return NT
        if p.shape != z.shape:
            add_into(fdata, grad(g, xp, yp, z))
        elif grad is g_negate2:
            np.subtract(fdata, g, out=fdata)
        else:
            np.add(fdata, grad(g, xp, yp, z), out=fdata)
        return NT
    if grad is None or type(p) not in _FLOATS:
        return zero_for(x)
    return scalar_rdata(p, grad(g, xp, yp, z))


# Exact classes of the float fast paths: Python floats and float64 scalars (which subclass
# float), and the ints and bools that get no gradient.
_FLOATS = frozenset((float, np.float64))
_SCALARS = frozenset((float, np.float64, int, bool))


def _float_binary(
    fast_x: FloatBinary | None,
    fast_y: FloatBinary | None,
    dz: float,
    xp: t.Any,
    yp: t.Any,
    z: float,
) -> tuple[t.Any, ...] | None:
    """The rdata of a binary rule on scalars, computed in Python floats; None where Python
    raises (a singular point: the NumPy path gives inf or nan there, as the primal did)."""
    tx, ty = type(xp), type(yp)
    x = float(xp) if tx is np.float64 else xp
    y = float(yp) if ty is np.float64 else yp
    try:
        rx = fast_x(dz, x, y, z) if fast_x is not None and tx in _FLOATS else NT
        ry = fast_y(dz, x, y, z) if fast_y is not None and ty in _FLOATS else NT
    except (ArithmeticError, ValueError):
        return None
    if rx is not NT:
        if type(rx) is not float:
            return None
        if tx is np.float64:
            rx = np.float64(rx)
    elif tx in _FLOATS:  # an operand without a gradient function: zero
        rx = tx(0.0)
    if ry is not NT:
        if type(ry) is not float:
            return None
        if ty is np.float64:
            ry = np.float64(ry)
    elif ty in _FLOATS:
        ry = ty(0.0)
    return NT, rx, ry


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


def _is_complex(x: t.Any) -> bool:
    """Whether ``x`` is a complex scalar or array: ``np.iscomplexobj`` without the array it
    makes of a Python scalar (a rule on scalars must allocate no NumPy memory)."""
    if isinstance(x, np.ndarray):
        return bool(x.dtype.kind == "c")
    return isinstance(x, (complex, np.complexfloating))


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
    if (
        type(z) is np.ndarray
        and type(g) is np.ndarray
        and z.ndim
        and g.shape == z.shape
        and z.dtype.kind == g.dtype.kind == "f"
    ):
        # The common activation on real arrays: the same numbers in one temporary.
        slope = np.multiply(z, z)
        np.subtract(1.0, slope, out=slope)
        np.multiply(g, slope, out=slope)
        return slope
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


_B12 = 691 / 32760  # the x**-12 coefficient of digamma's asymptotic series


def digamma(x: float) -> float:
    """The digamma function psi = Gamma'/Gamma of a real ``x`` (ValueError at its poles, the
    integers <= 0): for the gradients of ``math.gamma`` and ``math.lgamma`` without SciPy.

    Reflection below 1/2, the recurrence psi(x) = psi(x + 1) - 1/x up to 10, then the
    asymptotic series through x**-12, whose first omitted term is below 1e-15 there.
    """
    if x <= 0 and x == math.floor(x):
        raise ValueError("digamma has a pole at a non-positive integer")
    if x < 0.5:
        return digamma(1 - x) - math.pi / math.tan(math.pi * x)
    shift = 0.0
    while x < 10:
        shift -= 1 / x
        x += 1
    r = 1 / (x * x)
    series = r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (1 / 240 - r * (1 / 132 - r * _B12)))))
    return shift + math.log(x) - 0.5 / x - series


def g_gamma(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * z * digamma(float(x))


def g_lgamma(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    return g * digamma(float(x))


def g_abs(g: t.Any, x: t.Any, z: t.Any) -> t.Any:
    """|x| is not holomorphic: for complex x its gradient is x / |x| (0 at 0); for real x the
    sign (0 at 0, a subgradient)."""
    if _is_complex(x):
        if isinstance(x, np.ndarray):
            return g * np.divide(x, z, out=np.zeros_like(x), where=z != 0)
        return g * (x / z if z != 0 else x * 0)
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
    return x + 0j if _is_complex(z) and not _is_complex(x) else x


def g_remainder_y(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    # IEEE remainder: x - n * y with n the integer nearest x / y, locally constant
    return -g * np.rint((x - z) / y)


def g_copysign_x(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    # copysign(x, y) = |x| * sign(y): sign(x) * sign(y), 0 at x == 0 (a subgradient); the sign
    # of y by copysign, which sees the sign of -0.0
    return g * np.sign(x) * np.copysign(1.0, y)


def g_ldexp_x(g: t.Any, x: t.Any, i: t.Any, z: t.Any) -> t.Any:
    return g * np.ldexp(1.0, i)


def g_pow_x(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    """d(x**y)/dx = y * x**(y-1), 0 where y == 0 (where x**(y-1) at x == 0 would be inf)."""
    if (type(y) is int or type(y) is float) and y != 0 and type(x) is np.ndarray:
        if x.dtype.kind == "f":  # a real array to a constant power (``h ** 2``)
            return g * (2 * x if y == 2 else y * np.power(x, y - 1))
    x = _as_complex_if(x, z)
    return g * conj(_where_zero(np.equal(y, 0), y * np.power(x, np.subtract(y, 1))))


def g_pow_y(g: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
    """d(x**y)/dy = x**y * log(x), 0 where x == 0.

    For a real negative base (real-valued only at integer y) the log of |x| is used: the real
    part of the complex derivative, which is d/dy Re(x**y) there, so an integer power of a
    negative number gets a finite gradient rather than nan.
    """
    x = _as_complex_if(x, z)
    if not isinstance(x, np.ndarray) and not isinstance(z, np.ndarray):  # scalars
        return g * conj(z * np.log(x if _is_complex(x) else abs(x))) if x != 0 else g * 0
    at_zero = np.equal(x, 0)
    safe = np.where(at_zero, 1, x if _is_complex(x) else np.abs(x))
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
    if not isinstance(z, np.ndarray):  # scalars: no 0-d arrays
        return a / z if z != 0 else a * 0
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


# --------------------------------------------------------------------------------------------
# The same gradients on Python floats, for the scalar fast paths of ``unary_rule`` and
# ``binary_rule``: ``(dz, x, z)`` and ``(dz, x, y, z)`` with float ``dz`` and ``z`` and float or
# int operands.  Same formulas, in plain float arithmetic (no NumPy scalars, no errstate).  Where
# Python raises (a division by zero, a domain error, an overflow) the rules fall back to the
# NumPy versions, which give the inf or nan NumPy would.


def _f_abs(dz: float, x: float, z: float) -> float:
    if x > 0:
        return dz
    if x < 0:
        return -dz
    if x == 0:
        return dz * 0.0
    raise ValueError("nan")  # the NumPy version: nan


_SQRT_PI_2 = 2 / math.sqrt(math.pi)

FLOAT_UNARY: dict[UnaryGrad, FloatUnary] = {
    g_same: lambda dz, x, z: dz,
    g_negate: lambda dz, x, z: -dz,
    g_exp: lambda dz, x, z: dz * z,
    g_exp2: lambda dz, x, z: dz * z * LN2,
    g_expm1: lambda dz, x, z: dz * (z + 1),
    g_log: lambda dz, x, z: dz / x,
    g_log2: lambda dz, x, z: dz / (x * LN2),
    g_log10: lambda dz, x, z: dz / (x * LN10),
    g_log1p: lambda dz, x, z: dz / (1 + x),
    g_sqrt: lambda dz, x, z: dz / (2 * z),
    g_cbrt: lambda dz, x, z: dz / (3 * z * z),
    g_sin: lambda dz, x, z: dz * math.cos(x),
    g_cos: lambda dz, x, z: -dz * math.sin(x),
    g_tan: lambda dz, x, z: dz * (1 + z * z),
    g_arcsin: lambda dz, x, z: dz / math.sqrt(1 - x * x),
    g_arccos: lambda dz, x, z: -dz / math.sqrt(1 - x * x),
    g_arctan: lambda dz, x, z: dz / (1 + x * x),
    g_sinh: lambda dz, x, z: dz * math.cosh(x),
    g_cosh: lambda dz, x, z: dz * math.sinh(x),
    g_tanh: lambda dz, x, z: dz * (1 - z * z),
    g_arcsinh: lambda dz, x, z: dz / math.sqrt(x * x + 1),
    g_arccosh: lambda dz, x, z: dz / math.sqrt(x * x - 1),
    g_arctanh: lambda dz, x, z: dz / (1 - x * x),
    g_square: lambda dz, x, z: dz * (2 * x),
    g_reciprocal: lambda dz, x, z: -dz * (z * z),
    g_deg2rad: lambda dz, x, z: dz * (math.pi / 180),
    g_rad2deg: lambda dz, x, z: dz * (180 / math.pi),
    g_erf: lambda dz, x, z: dz * _SQRT_PI_2 * math.exp(-x * x),
    g_erfc: lambda dz, x, z: -dz * _SQRT_PI_2 * math.exp(-x * x),
    g_abs: _f_abs,
    g_gamma: lambda dz, x, z: dz * z * digamma(x),
    g_lgamma: lambda dz, x, z: dz * digamma(x),
    g_conj: lambda dz, x, z: dz,
}

FLOAT_BINARY: dict[BinaryGrad, FloatBinary] = {
    g_first: lambda dz, x, y, z: dz,
    g_negate2: lambda dz, x, y, z: -dz,
    g_times_y: lambda dz, x, y, z: dz * y,
    g_times_x: lambda dz, x, y, z: dz * x,
    g_over_y: lambda dz, x, y, z: dz / y,
    g_quotient_y: lambda dz, x, y, z: -dz * (z / y),
    g_mod_y: lambda dz, x, y, z: -dz * (x // y),
    g_fmod_y: lambda dz, x, y, z: -dz * math.trunc(x / y),
    g_pow_x: lambda dz, x, y, z: dz * (0.0 if y == 0 else y * x ** (y - 1)),
    g_pow_y: lambda dz, x, y, z: dz * (0.0 if x == 0 else z * math.log(abs(x))),
    g_remainder_y: lambda dz, x, y, z: -dz * round((x - z) / y),
    g_copysign_x: lambda dz, x, y, z: (
        dz * math.copysign(1.0, x) * math.copysign(1.0, y) if x != 0 else dz * 0.0
    ),
    g_ldexp_x: lambda dz, x, i, z: dz * math.ldexp(1.0, i),
    g_atan2_y: lambda dz, y, x, z: dz * x / (x * x + y * y),
    g_atan2_x: lambda dz, y, x, z: -dz * y / (x * x + y * y),
}
