"""Variants of the elementwise rules, chosen at build time from the call site's static types.

``elementwise.unary_rule`` and ``binary_rule`` take any operand; most calls are on float64
scalars or float64 arrays, and the types the AD pass sees say so before the program runs.  For
those patterns a registration offers a variant (``Registration.variant``), picked by the
registry as the most specific pattern, named in the rule table (``python -m gibbous rules``)
and covered by audit cases of its own:

* ``float_unary`` — ``f(x)``, ``x: f64``: the pullback in Python floats (``FLOAT_UNARY``);
* ``float_binary`` — ``f(x, y)`` on ``f64`` and ``int`` operands, at least one ``f64``;
* ``real_array_unary`` — ``f(x)``, ``x: f64[...]``: the derivative into the operand's fdata in
  one buffer where the formula allows, the result's fdata recycled;
* ``real_array_binary`` — a ``f64[...]`` operand with a ``f64[...]``, ``f64`` or ``int`` one.

Each variant computes what the general rule computes (the same formula, from
``gibbous.rules.formulas``); it only skips the run-time questions the types have answered.
What the types leave open is still asked at run time, and each such test says why: a
``f64[...]`` may be 0-d (NumPy returns a scalar), an operand may be inactive (no fdata), ``f64``
covers both ``float`` and ``numpy.float64`` (the gradient keeps the operand's class), a
cotangent may arrive as either, and ``x ** y`` on floats may be complex in Python.
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules import frules
from gibbous.tangents import pool
from gibbous.rules import render
from gibbous.rules.buffers import SiteBuffers, scratch
from gibbous.rules.inline import WANT, InlineRule, called_form, formula_form, is_want
from gibbous.library.elementwise import tables
from gibbous.library.common import (
    ARRAY,
    CD,
    NT,
    NUMBER,
    Array,
    RuleResult,
    add_into,
    new_fdata,
    scalar_rdata,
    to_shape,
)
from gibbous.rules.registry import PatternItem, primitive, registers_for_caller
from gibbous.tangents.model import CoDual, zero_rdata

registers_for_caller(__name__)

F64: T.Type = T.FLOAT
INT: T.Type = T.INT
REAL_ARRAY: T.Type = T.Array("float64", None)

# Exact classes a ``f64`` value has at run time; a cotangent of one is one of these too.
_FLOATS = frozenset((float, np.float64))
_NT2 = (NT, NT)
_NT3 = (NT, NT, NT)

# --------------------------------------------------------------------------------------------
# Unary


def float_unary(grad: tables.UnaryGrad) -> t.Callable[[CD, CD], RuleResult]:
    """``f(x)`` for ``x: f64``: the result is a float, the pullback plain float arithmetic."""
    fast: tables.FloatUnary = tables.FLOAT_UNARY[grad]

    def rrule(f: CD, x: CD) -> RuleResult:
        xp = x.primal
        z = f.primal(xp)

        def float_pullback(dz: t.Any) -> tuple[t.Any, ...]:
            if type(dz) in _FLOATS:
                try:
                    r = fast(float(dz), float(xp), float(z))
                except (ArithmeticError, ValueError):
                    r = None  # a singular point: NumPy's inf or nan, as the primal gave
                if type(r) is float:
                    return NT, r if type(xp) is float else np.float64(r)
            return tables.unary_generic(grad, x, xp, z, NT, dz)

        return CoDual(z, NT), float_pullback

    rrule.__qualname__ = f"float_unary({grad.__name__})"
    return rrule


def real_array_unary(grad: tables.UnaryGrad) -> t.Callable[[CD, CD], RuleResult]:
    """``f(x)`` for ``x: f64[...]``: a float64 result of x's shape."""
    slope = _in_one_buffer(grad)
    # Gradients that divide by nothing and take no logarithm cannot warn on finite arrays:
    # they skip np.errstate (about 1 µs).
    quiet = grad in (tables.g_same, tables.g_negate, tables.g_tanh)

    def rrule(f: CD, x: CD) -> RuleResult:
        xp = x.primal
        z = f.primal(xp)
        zf = new_fdata(z)
        xf = x.fdata
        if type(zf) is not np.ndarray or type(xf) is not np.ndarray:  # 0-d, or inactive

            def pullback(dz: t.Any) -> tuple[t.Any, ...]:
                return tables.unary_generic(grad, x, xp, z, zf, dz)

            return CoDual(z, zf), pullback
        done = False

        def array_pullback(dz: t.Any) -> tuple[t.Any, ...]:
            nonlocal done
            if quiet:
                np.add(xf, slope(zf, xp, z), out=xf)
            else:
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                    np.add(xf, slope(zf, xp, z), out=xf)
            if not done:  # the result's fdata, consumed, is recycled (once, whatever the caller)
                done = True
                pool.release(zf)
            return _NT2

        return CoDual(z, zf), array_pullback

    rrule.__qualname__ = f"real_array_unary({grad.__name__})"
    return rrule


def _in_one_buffer(grad: tables.UnaryGrad) -> tables.UnaryGrad:
    """``grad`` on real arrays of one shape, as its formula's kernel into one new array where
    it needs no other buffer (``1 - z * z`` in one temporary, not three)."""
    fn = _kernel(grad, 1)
    if fn is None:
        return grad

    def in_one_buffer(g: Array, x: Array, z: Array) -> Array:
        return t.cast(Array, fn(g, x, z, None, render.NO_WORK))

    return in_one_buffer


def _kernel(grad: tables.UnaryGrad | tables.BinaryGrad | None, arity: int) -> t.Callable[..., t.Any] | None:
    """``grad``'s formula on real operands as a kernel ``fn(g, *operands, z, out, work)`` that
    writes into ``out`` (None: a new array) and needs no work buffer; None where the formula has
    no such kernel, or is ``g`` itself (nothing to compute)."""
    formula = None if grad is None else tables.FORMULA.get(grad)
    if formula is None or not formula.calls() <= set(render.KERNEL):
        return None
    if formula.ops() <= {"var", "conj"}:  # g itself, on real arrays
        return None
    kernel = render.kernel(formula, arity, None, True, render.KERNEL)
    return None if kernel.buffers or kernel.masks else kernel.fn


# --------------------------------------------------------------------------------------------
# Binary


def float_binary(
    grad_x: tables.BinaryGrad | None, grad_y: tables.BinaryGrad | None
) -> t.Callable[[CD, CD, CD], RuleResult]:
    """``f(x, y)`` on ``f64`` and ``int`` operands: the pullback in Python floats."""
    fast_x = None if grad_x is None else tables.FLOAT_BINARY[grad_x]
    fast_y = None if grad_y is None else tables.FLOAT_BINARY[grad_y]

    def rrule(f: CD, x: CD, y: CD) -> RuleResult:
        xp, yp = x.primal, y.primal
        z = f.primal(xp, yp)
        zf = new_fdata(z)
        if type(z) not in _FLOATS:  # ``(-8.0) ** 0.5`` is complex in Python

            def pullback(dz: t.Any) -> tuple[t.Any, ...]:
                return tables.binary_generic(grad_x, grad_y, x, y, xp, yp, z, zf, dz)

            return CoDual(z, zf), pullback

        def float_pullback(dz: t.Any) -> tuple[t.Any, ...]:
            if type(dz) in _FLOATS:
                r = _float_rdata(fast_x, fast_y, float(dz), xp, yp, float(z))
                if r is not None:
                    return r
            return tables.binary_generic(grad_x, grad_y, x, y, xp, yp, z, NT, dz)

        return CoDual(z, NT), float_pullback

    names = [getattr(fn, "__name__", "-") for fn in (grad_x, grad_y)]
    rrule.__qualname__ = f"float_binary({', '.join(names)})"
    return rrule


def _float_rdata(
    fast_x: tables.FloatBinary | None,
    fast_y: tables.FloatBinary | None,
    dz: float,
    xp: t.Any,
    yp: t.Any,
    z: float,
) -> tuple[t.Any, ...] | None:
    """The rdata of a binary rule on scalars, computed in Python floats; None where Python
    raises (a singular point: the NumPy path gives inf or nan there, as the primal did).  An
    ``int`` operand gets no gradient; a float keeps its class (``float`` or ``float64``)."""
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


def real_array_binary(
    grad_x: tables.BinaryGrad | None, grad_y: tables.BinaryGrad | None
) -> t.Callable[[CD, CD, CD], RuleResult]:
    """A ``f64[...]`` operand with a ``f64[...]``, ``f64`` or ``int`` one: a float64 result."""
    sends = _real_sends(grad_x, grad_y)
    square = grad_x is tables.g_times_y and grad_y is tables.g_times_x

    def rrule(f: CD, x: CD, y: CD) -> RuleResult:
        xp, yp = x.primal, y.primal
        z = f.primal(xp, yp)
        zf = new_fdata(z)
        if type(zf) is not np.ndarray:  # 0-d operands: NumPy returns a scalar

            def pullback(dz: t.Any) -> tuple[t.Any, ...]:
                return tables.binary_generic(grad_x, grad_y, x, y, xp, yp, z, zf, dz)

            return CoDual(z, zf), pullback
        if square and x is y and type(xp) is np.ndarray:  # ``x * x``: one operand, twice
            return CoDual(z, zf), _square_pullback(x, zf)
        done = False

        def array_pullback(dz: t.Any) -> tuple[t.Any, ...]:
            nonlocal done
            gx, gy = sends(xp, x.fdata, yp, y.fdata, zf, z)
            if not done:
                done = True
                pool.release(zf)
            return NT, gx, gy

        return CoDual(z, zf), array_pullback

    names = [getattr(fn, "__name__", "-") for fn in (grad_x, grad_y)]
    rrule.__qualname__ = f"real_array_binary({', '.join(names)})"
    return rrule


def _real_sends(
    grad_x: tables.BinaryGrad | None, grad_y: tables.BinaryGrad | None
) -> t.Callable[..., tuple[t.Any, t.Any]]:
    """``sends(x, xf, y, yf, g, z)``: both operands' gradients for cotangent ``g`` (arrays'
    added into their fdata), and their rdata."""
    quiet = grad_x in (None, tables.g_first, tables.g_negate2) and grad_y in (None, tables.g_first, tables.g_negate2)

    def sends(x: t.Any, xf: t.Any, y: t.Any, yf: t.Any, g: Array, z: Array) -> tuple[t.Any, t.Any]:
        if quiet:  # the gradient is g or -g: nothing to warn about, no errstate to enter
            return _send_real(x, xf, grad_x, g, x, y, z), _send_real(y, yf, grad_y, g, x, y, z)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return _send_real(x, xf, grad_x, g, x, y, z), _send_real(y, yf, grad_y, g, x, y, z)

    return sends


def _send_real(
    p: t.Any, fdata: t.Any, grad: tables.BinaryGrad | None, g: Array, xp: t.Any, yp: t.Any, z: Array
) -> t.Any:
    """``send(x, grad(g, ...))`` for a real operand ``p`` (with ``fdata``) of a real array
    result, in fewer steps: the gradient of an operand of the result's shape is added into its
    fdata as it is (subtracted, for a negation).  Which operand is the array the rule cannot
    know: one rule serves every pattern of its variant."""
    if type(p) is np.ndarray:
        if grad is None or type(fdata) is not np.ndarray:
            return NT
        if p.shape != z.shape:
            add_into(fdata, grad(g, xp, yp, z))
        elif grad is tables.g_negate2:
            np.subtract(fdata, g, out=fdata)
        else:
            np.add(fdata, grad(g, xp, yp, z), out=fdata)
        return NT
    if grad is None or type(p) not in _FLOATS:
        return zero_rdata(p) if isinstance(p, (float, complex, np.inexact)) else NT
    return scalar_rdata(p, grad(g, xp, yp, z))


def _square_pullback(x: CD, g: Array) -> t.Callable[[t.Any], tuple[t.Any, ...]]:
    """The pullback of ``x * x`` for a real array ``x``: one gradient ``2 g x``, not two."""
    xp, xf = x.primal, x.fdata
    done = False

    def square_pullback(dz: t.Any) -> tuple[t.Any, ...]:
        nonlocal done
        if type(xf) is np.ndarray:
            np.add(xf, _square_slope(g, xp, None), out=xf)
        if not done:
            done = True
            pool.release(g)
        return _NT3

    return square_pullback


_square_slope = _in_one_buffer(tables.g_square)  # ``np.square``'s formula, in one new array
_square_into = t.cast(t.Callable[..., Array], _kernel(tables.g_square, 1))  # the same, into ``out``


# --------------------------------------------------------------------------------------------
# Array forms: what the AD pass writes in place of a call of an array variant (``inline``).
# The forward program calls the ufunc and gives the result new fdata; the reverse program calls
# the variant's own adjoint on what the block saved: no CoDual, pullback or tape entry per call.

_UNARY_SAVES = (("fdata", 0), ("result_fdata", -1), ("primal", 0), ("result", -1), ("site", -1))
_BINARY_SAVES = (
    ("primal", 0), ("fdata", 0), ("primal", 1), ("fdata", 1), ("result_fdata", -1), ("result", -1),
    ("site", -1),
)  # fmt: skip
_NOTHING: tuple[t.Any, ...] = ()


def _array_unary_form(name: str, grad: tables.UnaryGrad) -> InlineRule:
    kernel = _kernel(grad, 1)
    quiet = grad in (tables.g_same, tables.g_negate, tables.g_tanh)

    def slope(g: Array, x: Array, z: Array, site: SiteBuffers) -> Array:
        """The gradient, in the site's scratch where the formula has a kernel."""
        if kernel is None:
            return t.cast(Array, grad(g, x, z))
        return t.cast(Array, kernel(g, x, z, scratch(site, 0, x.shape), render.NO_WORK))

    def adjoint(xf: t.Any, g: Array, x: Array, z: Array, site: SiteBuffers) -> tuple[t.Any, ...]:
        if type(xf) is np.ndarray:
            if quiet:
                np.add(xf, slope(g, x, z, site), out=xf)
            else:
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                    np.add(xf, slope(g, x, z, site), out=xf)
        elif xf is WANT:  # the cotangent, by value (``gibbous.rules.inline``)
            if quiet:
                return (slope(g, x, z, site),)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                return (slope(g, x, z, site),)
        return _NOTHING

    adjoint.__qualname__ = f"array_adjoint({grad.__name__})"
    runtime.register_object(adjoint, f"array_adjoint_{name}")  # a path for the IR's text
    return called_form(name, adjoint, _UNARY_SAVES, (False,), values=True)


def _array_binary_form(
    name: str, grad_x: tables.BinaryGrad | None, grad_y: tables.BinaryGrad | None, pair: tuple[T.Type, ...]
) -> InlineRule:
    if pair == (REAL_ARRAY, REAL_ARRAY) and grad_x is tables.g_first:
        if grad_y is tables.g_first or grad_y is tables.g_negate2:  # ``a + b``, ``a - b``
            return _passing_form(name, grad_y is tables.g_negate2)
    # The pattern says which operand is an array, a float or an int: each gets its own sender,
    # where the called rule's one ``_send_real`` asks at every call.
    send_x, send_y = _sender(pair[0], grad_x), _sender(pair[1], grad_y)
    quiet = grad_x in (None, tables.g_first, tables.g_negate2) and grad_y in (None, tables.g_first, tables.g_negate2)
    square = grad_x is tables.g_times_y and grad_y is tables.g_times_x and pair[0] == pair[1]

    def adjoint(
        x: t.Any, xf: t.Any, y: t.Any, yf: t.Any, g: Array, z: Array, site: SiteBuffers
    ) -> tuple[t.Any, t.Any]:
        if square and x is y:  # ``x * x``: one gradient ``2 g x``, in the scratch
            return _square_adjoint(x, xf, y, yf, g, z, site)
        if quiet:
            return send_x(x, xf, g, x, y, z, site, 0), send_y(y, yf, g, x, y, z, site, 1)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return send_x(x, xf, g, x, y, z, site, 0), send_y(y, yf, g, x, y, z, site, 1)

    adjoint.__qualname__ = f"array_adjoint({getattr(grad_x, '__name__', '-')}, ...)"
    runtime.register_object(adjoint, f"array_adjoint_{name}")  # a path for the IR's text
    scalars = tuple(ty == F64 for ty in pair)  # (an int operand has no rdata to read)
    return called_form(name, adjoint, _BINARY_SAVES, scalars, values=True)


# ``a + b`` and ``a - b`` of two arrays hand the cotangent on (negated for ``b`` of ``a - b``):
# the reverse program does that itself, one call per operand, not through an adjoint that
# would only pass ``g`` along.  The same steps as ``send_array``'s for these two formulas.


def _passing_form(name: str, negate_y: bool) -> InlineRule:
    def adjoint(b: Builder, saved: t.Sequence[Value], dy: Value) -> list[Value | None]:
        x, xf, y, yf, g, _, site = saved
        out: list[Value | None] = []
        for k, (p, fdata, negate) in enumerate(((x, xf, False), (y, yf, negate_y))):
            if is_want(fdata):
                fn = negated_to if negate else passed_to
                out.append(b.call(fn, g, p, site, k, type=p.type))
                continue
            if not (isinstance(fdata, Constant) and fdata.value is NT):  # (inactive: nothing)
                into = subtract_passed if negate else add_passed
                b.call(into, fdata, g, site, k, type=T.NONE)
            out.append(None)
        return out

    return InlineRule(name, _BINARY_SAVES, adjoint, 2, array=True, values=True)


def passed_to(g: Array, p: Array, site: SiteBuffers | None = None, k: int = 0) -> Array:
    """The cotangent ``g`` handed on to operand ``p``: itself, or summed to ``p``'s shape (a
    row's, over the rows: into the site's scratch ``k``)."""
    shape = p.shape
    if g.shape == shape:
        return g
    if g.ndim == len(shape) + 1 and g.shape[1:] == shape and site is not None:
        return t.cast(Array, np.add.reduce(g, axis=0, out=scratch(site, k, shape)))
    return t.cast(Array, to_shape(g, shape))


def negated_to(g: Array, p: Array, site: SiteBuffers | None = None, k: int = 0) -> Array:
    if g.shape == p.shape and site is not None:
        return t.cast(Array, np.negative(g, out=scratch(site, k, g.shape)))
    return t.cast(Array, to_shape(np.negative(g), p.shape))


def add_passed(fdata: t.Any, g: Array, site: SiteBuffers | None = None, k: int = 0) -> None:
    if type(fdata) is np.ndarray:  # else an inactive operand
        shape = fdata.shape
        if g.shape == shape:
            np.add(fdata, g, out=fdata)
        elif g.ndim == len(shape) + 1 and g.shape[1:] == shape and site is not None:
            # A row added to every row (a bias): ``add_into``'s sum, into the scratch.
            np.add(fdata, np.add.reduce(g, axis=0, out=scratch(site, k, shape)), out=fdata)
        else:
            add_into(fdata, g)


def subtract_passed(fdata: t.Any, g: Array, site: SiteBuffers | None = None, k: int = 0) -> None:
    if type(fdata) is np.ndarray:
        if g.shape == fdata.shape:
            np.subtract(fdata, g, out=fdata)
        else:
            add_into(fdata, np.negative(g))


for _helper in (passed_to, negated_to, add_passed, subtract_passed):
    runtime.register_object(_helper, _helper.__name__)  # a path for the IR's text


# --------------------------------------------------------------------------------------------
# Registering a callable's general rule with its variants

# A registration to make: pattern, rule, variant name (None: the general rule), inline form.
_Entry = tuple[tuple[PatternItem, ...], t.Callable[..., RuleResult], str | None, InlineRule | None]


def register_unary(
    fns: t.Iterable[object],
    grad: tables.UnaryGrad,
    patterns: t.Iterable[tuple[PatternItem, ...]],
    *,
    wrap: t.Callable[[t.Callable[..., RuleResult]], t.Callable[..., RuleResult]] | None = None,
    inline: Inline = None,
    forward: bool = True,
) -> None:
    """The general rule for ``patterns`` (ARRAY and/or NUMBER), and a variant for float64
    operands of each.  ``wrap`` is applied to the general rule (a check run before it).
    ``inline``: the float variant has an inline form (``Inline``).  ``forward``: the forward
    rule of the same formula too (SciPy's register theirs with the functions they call)."""
    fns, patterns = list(fns), list(patterns)
    if forward:
        frules.register_elementwise(fns, (grad,), tables.FORMULA)  # the same formula, as a tangent
    rules: list[_Entry] = [(p, tables.unary_rule(grad), None, None) for p in patterns]
    if (ARRAY,) in patterns:
        array_form = _array_unary_form(_names(fns), grad) if inline == "numpy" else None
        rules.append(((REAL_ARRAY,), real_array_unary(grad), "real_array_unary", array_form))
    if (NUMBER,) in patterns and grad in tables.FLOAT_UNARY:
        # abs: written as Python arithmetic it would lose the rule's convention at 0
        wanted = inline if inline == "numpy" or grad is not tables.g_abs else None
        rules.append(((F64,), float_unary(grad), "float_unary", _form(fns, (grad,), wanted)))
    _register(fns, rules, wrap)


#: The inline form of a float variant: ``"python"`` writes the formula as Python arithmetic
#: (for Python's operators and ``math``, whose primal raises where the arithmetic would);
#: ``"numpy"`` calls the variant's own adjoint, which gives NumPy's inf or nan at a singular
#: point as the ufunc's primal did (``np.sin(x[i])`` on NumPy scalars); None: none.
Inline = t.Literal["python", "numpy", None]


def _form(
    fns: t.Iterable[object], grads: t.Sequence[tables.UnaryGrad | tables.BinaryGrad], how: Inline
) -> InlineRule | None:
    if how is None:
        return None
    names = _names(fns)
    formulas = [tables.FORMULA[g] for g in grads]
    if how == "numpy":
        adjoints = [_numpy_adjoint(g, i, len(grads)) for i, g in enumerate(grads)]
        return formula_form(names, formulas, adjoints, write=False)
    floats = (tables.FLOAT_UNARY, tables.FLOAT_BINARY)[len(grads) - 1]
    return formula_form(names, formulas, [floats[g] for g in grads])


def _square_adjoint(
    x: Array, xf: t.Any, y: t.Any, yf: t.Any, g: Array, z: Array, site: SiteBuffers
) -> tuple[t.Any, t.Any]:
    """``x ** 2``: ``2 g x`` into x's fdata, in the site's scratch (no errstate: nothing to
    warn)."""
    if type(xf) is np.ndarray:
        np.add(xf, _square_into(g, x, None, scratch(site, 0, x.shape), render.NO_WORK), out=xf)
    elif xf is WANT:
        return _square_into(g, x, None, scratch(site, 0, x.shape), render.NO_WORK), NT
    return _NT2


runtime.register_object(_square_adjoint, "square_adjoint")
#: ``x ** 2`` of a float64 array (the exponent a constant 2: the pattern's ``const<2>``).
SQUARE_FORM = called_form("square", _square_adjoint, _BINARY_SAVES, (False, False), values=True)


def register_square(fns: t.Iterable[object]) -> None:
    """``x ** 2`` and ``np.power(x, 2)`` of a float64 array: the ``real_array_square`` variant,
    the same derivative as ``pow``'s, as one gradient ``2 g x`` (the formula of ``np.square``)."""
    rule = real_array_binary(tables.g_pow_x, tables.g_pow_y)
    for fn in fns:
        pattern = (REAL_ARRAY, T.Const(2))
        primitive(fn, *pattern, variant="real_array_square", inline=SQUARE_FORM)(rule)


def _sender(ty: T.Type, grad: tables.BinaryGrad | None) -> t.Callable[..., t.Any]:
    """``send(p, fdata, g, x, y, z)`` for an operand of type ``ty`` (an array, a float or an
    int): the array's gradient added into its fdata (summed over broadcast axes), the float's
    rdata, nothing for an int."""
    if grad is None or ty == INT:
        return _no_rdata
    if not isinstance(ty, T.Array):
        if grad is tables.g_negate2:  # ``a - b`` for a float ``b``: minus the sum, not the sum of -g

            def send_minus(p: t.Any, fdata: t.Any, g: Array, *_: t.Any) -> t.Any:
                return NT if fdata is not WANT else scalar_rdata(p, -np.add.reduce(g, None))

            return send_minus

        def send_float(
            p: t.Any, fdata: t.Any, g: Array, x: t.Any, y: t.Any, z: Array, *_: t.Any
        ) -> t.Any:
            if fdata is not WANT:  # a constant or inactive float: its rdata would be dropped
                return NT
            return scalar_rdata(p, grad(g, x, y, z))

        return send_float
    negate = grad is tables.g_negate2
    kernel = _kernel(grad, 2)

    def send_array(
        p: Array, fdata: t.Any, g: Array, x: t.Any, y: t.Any, z: Array, site: SiteBuffers, k: int
    ) -> t.Any:
        if type(fdata) is not np.ndarray:
            if fdata is WANT:  # the cotangent, by value: ``g`` itself where it is the same
                if kernel is not None and p.shape == z.shape:
                    return kernel(g, x, y, z, scratch(site, k, p.shape), render.NO_WORK)
                return to_shape(grad(g, x, y, z), p.shape)
            return NT  # an inactive operand
        if p.shape != z.shape:
            add_into(fdata, grad(g, x, y, z))
        elif negate:
            np.subtract(fdata, g, out=fdata)
        elif kernel is not None:
            np.add(fdata, kernel(g, x, y, z, scratch(site, k, p.shape), render.NO_WORK), out=fdata)
        else:
            np.add(fdata, grad(g, x, y, z), out=fdata)
        return NT

    return send_array


def _no_rdata(*args: t.Any) -> t.Any:
    return NT


def _names(fns: t.Iterable[object]) -> str:
    return "/".join(getattr(fn, "__name__", "?") for fn in fns)


def _numpy_adjoint(
    grad: tables.UnaryGrad | tables.BinaryGrad, i: int, arity: int
) -> t.Callable[..., t.Any]:
    """Operand ``i``'s adjoint ``(dy, *operands, z)``, as the float variant's pullback computes
    it: in Python floats, or where they raise, NumPy's value of the general rule."""
    fast = (tables.FLOAT_UNARY, tables.FLOAT_BINARY)[arity - 1][grad]

    def numpy_value(p: t.Any, dy: t.Any, *saved: t.Any) -> t.Any:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return scalar_rdata(p, grad(tables.numpy_scalar(dy), *saved))

    def unary(dy: t.Any, x: t.Any, z: t.Any) -> t.Any:
        try:
            r = fast(float(dy), float(x), float(z))
        except (ArithmeticError, ValueError):
            r = None
        if type(r) is float:
            return r if type(x) is float else np.float64(r)
        return numpy_value(x, dy, x, z)

    def binary(dy: t.Any, x: t.Any, y: t.Any, z: t.Any) -> t.Any:
        p = y if i else x
        if type(p) not in _FLOATS:  # an int operand: no gradient
            return 0.0
        try:  # ints stay ints (an exponent of 2 is not 2.0 to every formula's rendering)
            fx = float(x) if type(x) is np.float64 else x
            fy = float(y) if type(y) is np.float64 else y
            r = fast(float(dy), fx, fy, float(z))
        except (ArithmeticError, ValueError):
            r = None
        if type(r) is float:
            return r if type(p) is float else np.float64(r)
        return numpy_value(p, dy, x, y, z)

    adjoint = unary if arity == 1 else binary

    adjoint.__qualname__ = f"numpy_adjoint({grad.__name__})"
    runtime.register_object(adjoint, f"numpy_adjoint_{grad.__name__}_{i}")  # for the IR's text
    return adjoint


def register_binary(
    fns: t.Iterable[object],
    grad_x: tables.BinaryGrad | None,
    grad_y: tables.BinaryGrad | None,
    patterns: t.Iterable[tuple[PatternItem, ...]],
    *,
    wrap: t.Callable[[t.Callable[..., RuleResult]], t.Callable[..., RuleResult]] | None = None,
    float_pairs: t.Sequence[tuple[T.Type, T.Type]] = ((F64, F64), (F64, INT), (INT, F64)),
    inline: Inline = None,
    forward: bool = True,
) -> None:
    """The general rule for ``patterns``, and variants for float64 operands where a pattern
    admits them: ``real_array_binary`` beside an array pattern, ``float_binary`` (for
    ``float_pairs``: the scalar operands the callable takes) beside the scalar one when each
    operand that gets a gradient has a float gradient function.  ``inline``: the float
    variant has an inline form where both operands have formulas (``register_unary``);
    ``forward``: as for ``register_unary``."""
    fns, patterns = list(fns), list(patterns)
    grads = (grad_x, grad_y)
    if forward:
        frules.register_elementwise(fns, grads, tables.FORMULA)  # the same formulas, as a tangent
    general = tables.binary_rule(grad_x, grad_y)
    rules: list[_Entry] = [(p, general, None, None) for p in patterns]
    if any(ARRAY in p for p in patterns):
        array_rule = real_array_binary(grad_x, grad_y)
        pairs = [(REAL_ARRAY, REAL_ARRAY)]
        pairs += [(REAL_ARRAY, s) for s in (F64, INT)] if (ARRAY, NUMBER) in patterns else []
        pairs += [(s, REAL_ARRAY) for s in (F64, INT)] if (NUMBER, ARRAY) in patterns else []
        rules += [
            (pair, array_rule, "real_array_binary", _array_binary_form(_names(fns), *grads, pair))
            if inline == "numpy"
            else (pair, array_rule, "real_array_binary", None)
            for pair in pairs
        ]
    fast = all(g is None or g in tables.FLOAT_BINARY for g in (grad_x, grad_y))
    if (NUMBER, NUMBER) in patterns and fast:
        float_rule = float_binary(grad_x, grad_y)
        form = _form(fns, grads, inline) if grad_x and grad_y else None  # type: ignore[arg-type]
        rules += [(pair, float_rule, "float_binary", form) for pair in float_pairs]
    _register(fns, rules, wrap)


def _register(
    fns: t.Iterable[object],
    rules: list[_Entry],
    wrap: t.Callable[[t.Callable[..., RuleResult]], t.Callable[..., RuleResult]] | None,
) -> None:
    for fn in fns:
        for pattern, rule, variant, form in rules:
            # A variant's operands are float64 by type: a check on them is the general rule's.
            checked = rule if wrap is None or variant is not None else wrap(rule)
            primitive(fn, *pattern, variant=variant, inline=form)(checked)
