"""NumPy ufuncs and the arithmetic operators on arrays, plus ``clip``, ``where``, ``real``,
``imag``, ``conj``, ``sinc``, ``angle`` and ``nan_to_num``.

Each ufunc is registered for its plain positional form on arrays and scalars (every mix, with
broadcasting): ``np.exp(x)``, ``np.add(a, 2.0)``.  Calls with ``out=`` or other keywords are not
these rules (``out=`` calls of the ufuncs in ``UNARY`` and ``BINARY`` and of ``floor``-like
ones are the stateful rules of ``gibbous.rules.inplace``).  An operator on an array (``a * b``,
``-a``, ``a ** 2``) is its ufunc.  Gradients at ties of ``maximum``/``minimum`` are split evenly
(see ``elementwise._ties``).
"""

from __future__ import annotations

import builtins
import operator
import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules import frules
from gibbous.rules.emit import number_type, static_types
from gibbous.rules.emit import (
    ForwardModeError,
    added,
    complex_type,
    is_none,
    number_type,
    operand_positions,
    real_type,
    refuse_complex,
    split_tangents,
    static_types,
)
from gibbous.rules import formulas
from gibbous.library.elementwise import tables
from gibbous.library.elementwise import variants
from gibbous.library.common import (
    ANY,
    ARRAY,
    CD,
    NT,
    NUMBER,
    NUMERIC,
    RuleResult,
    bind,
    conj,
    cotangent,
    needs,
    new_fdata,
    no_pullback,
    nothing,
    send,
    shares_memory,
    view_fdata,
    zero_for,
)
from gibbous.rules.registry import primitive, zero_derivative
from gibbous.rules import structure
from gibbous.tangents.model import CoDual

# --------------------------------------------------------------------------------------------
# Tables


UNARY: dict[np.ufunc, tables.UnaryGrad] = {
    getattr(np, ufunc): tables.UNARY[name] for ufunc, name in formulas.UFUNCS_UNARY.items()
}
# The same ufuncs under their other names, where they are other objects.
UNARY_ALIASES: dict[np.ufunc, np.ufunc] = {np.radians: np.deg2rad, np.degrees: np.rad2deg}

BINARY: dict[np.ufunc, tuple[tables.BinaryGrad | None, tables.BinaryGrad | None]] = {
    getattr(np, ufunc): (tables.BINARY[gx], tables.BINARY[gy]) for ufunc, (gx, gy) in formulas.UFUNCS_BINARY.items()
}

# Piecewise constant or boolean: no derivative anywhere it exists.
ZERO_UNARY = (
    np.sign, np.floor, np.ceil, np.trunc, np.rint, np.signbit, np.isnan, np.isinf,
    np.isfinite, np.logical_not, np.spacing,
)  # fmt: skip
# ... and of ints (and booleans): bit operations.
ZERO_INT_UNARY = (
    np.invert, *[getattr(np, "bitwise_count")] * hasattr(np, "bitwise_count"),  # (NumPy 2.0 on)
)  # fmt: skip
ZERO_BINARY = (
    np.floor_divide, np.equal, np.not_equal, np.less, np.less_equal, np.greater,
    np.greater_equal, np.logical_and, np.logical_or, np.logical_xor, np.heaviside,
)  # fmt: skip

# Operators on arrays (and on an array and a scalar) are their ufuncs.
OPERATOR_UNARY: dict[t.Callable[..., t.Any], np.ufunc] = {
    **{getattr(operator, op): getattr(np, u) for op, u in formulas.OPERATORS_UNARY.items()},
    abs: np.absolute,
}
OPERATOR_BINARY: dict[t.Callable[..., t.Any], np.ufunc] = {
    getattr(operator, op): getattr(np, u) for op, u in formulas.OPERATORS_BINARY.items()
}
ARRAY_BINARY_PATTERNS = [(ARRAY, ARRAY), (ARRAY, NUMBER), (NUMBER, ARRAY)]


def _register() -> None:
    for ufunc, grad in UNARY.items():
        variants.register_unary([ufunc], grad, tables.UNARY_PATTERNS, inline="numpy")
    for alias, ufunc in UNARY_ALIASES.items():
        variants.register_unary([alias], UNARY[ufunc], tables.UNARY_PATTERNS, inline="numpy")
    for ufunc, (gx, gy) in BINARY.items():
        variants.register_binary([ufunc], gx, gy, tables.BINARY_PATTERNS, inline="numpy")
    variants.register_square([np.power, operator.pow])
    for ufunc in (*ZERO_UNARY, *ZERO_INT_UNARY):
        for kind in NUMERIC:
            zero_derivative(ufunc, kind)
    for ufunc in ZERO_BINARY:
        for pair in tables.BINARY_PATTERNS:
            zero_derivative(ufunc, *pair)
    for op, ufunc in OPERATOR_UNARY.items():
        variants.register_unary([op], UNARY[ufunc], [(ARRAY,)], inline="numpy")
    for op, ufunc in OPERATOR_BINARY.items():
        variants.register_binary([op], *BINARY[ufunc], ARRAY_BINARY_PATTERNS, inline="numpy")
    # pow(x, c) of arrays is x ** c (SciPy's weibull_min.logpdf); three operands have no rule
    variants.register_binary([builtins.pow], *BINARY[np.power], ARRAY_BINARY_PATTERNS)
    for pair in ARRAY_BINARY_PATTERNS:
        zero_derivative(operator.floordiv, *pair)
    for op, ufunc in _SCALAR_IN_PLACE.items():
        primitive(op, NUMBER, ARRAY)(tables.binary_rule(*BINARY[ufunc]))


def _no_slope(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | None:
    """The forward rule of a piecewise constant or boolean ufunc on operands whose type the
    build could not tell (those it can tell have their zero-derivative rules): zeros."""
    if kwnames or not any(isinstance(ty, T.Any) for ty in types):
        return None
    return _zeros


def _zeros(z: t.Any, *a: t.Any) -> t.Any:
    return frules.like(z, None)


for _fn in (*ZERO_UNARY, *ZERO_INT_UNARY, *ZERO_BINARY, operator.floordiv):
    frules.register(_fn, _no_slope)


# ``x += a`` for a float x and an array a: x is rebound to a new array; the array forms with an
# array on the left are the stateful rules of gibbous.rules.inplace.
_SCALAR_IN_PLACE: dict[t.Callable[..., t.Any], np.ufunc] = {
    operator.iadd: np.add,
    operator.isub: np.subtract,
    operator.imul: np.multiply,
    operator.itruediv: np.divide,
    operator.ipow: np.power,
}

# ``+x`` is linear; its elementwise rules (registered next, here and in scalars.py) are tried
# first, as numeric rules registered later
frules.register_linear([operator.pos])
_register()

# --------------------------------------------------------------------------------------------
# clip and where


def _clip_masks(a: t.Any, lo: t.Any, hi: t.Any) -> tuple[t.Any, t.Any, t.Any]:
    """Which of a, lo, hi each element of ``clip(a, lo, hi) = minimum(maximum(a, lo), hi)``
    comes from; at a tie the value goes to ``a`` (as if the bound were not there)."""
    above_lo = True if lo is None else np.greater_equal(a, lo)
    # maximum, not where(above_lo, a, lo): the same values, and a scalar (no 0-d array) for
    # scalar operands, so that clipping a 0-d array allocates no more than the primal.
    raised = a if lo is None else np.maximum(a, lo)
    below_hi = True if hi is None else np.less_equal(raised, hi)
    from_a = np.logical_and(above_lo, below_hi)
    from_lo = np.logical_and(np.logical_not(above_lo), below_hi)
    return from_a, from_lo, np.logical_not(below_hi)


_CLIP_NAMES = ("a_min", "a_max")


def clip_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.clip(a, lo, hi)`` with bounds by position or as ``a_min``/``a_max``/``min``/``max``
    (either may be None)."""
    bounds: dict[str, CD] = dict(zip(_CLIP_NAMES, args))
    for name, value in kwargs.items():
        key = {"min": "a_min", "max": "a_max"}.get(name, name)
        if key not in _CLIP_NAMES:
            raise TypeError(f"np.clip: gibbous's rule does not support the argument {name!r}")
        bounds[key] = value
    none = CoDual(None, NT)
    lo, hi = bounds.get("a_min", none), bounds.get("a_max", none)
    z = f.primal(a.primal, *(c.primal for c in args), **{k: v.primal for k, v in kwargs.items()})
    zf = new_fdata(z)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        operands = (a, *args, *kwargs.values())
        if g is None:
            return (NT, *(zero_for(c) for c in operands))
        from_a, from_lo, from_hi = _clip_masks(a.primal, lo.primal, hi.primal)
        grads = {id(a): send(a, g * from_a) if needs(a) else zero_for(a)}
        for bound, mask in ((lo, from_lo), (hi, from_hi)):
            if bound is not none:
                grads[id(bound)] = send(bound, g * mask) if needs(bound) else zero_for(bound)
        return (NT, *(grads[id(c)] for c in operands))

    return CoDual(z, zf), pullback


for _kind in NUMERIC:
    primitive(np.clip, _kind, ...)(clip_rrule)
primitive(np.ndarray.clip, ARRAY, ...)(clip_rrule)


def clip_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``np.clip(a, lo, hi)``: each element's tangent is that of the operand it comes from
    (``_clip_masks``, the reverse rule's choice: ``a`` at a tie)."""
    n = len(types) - len(kwnames)
    keys = [*_CLIP_NAMES[: n - 1], *({"min": "a_min", "max": "a_max"}.get(k, k) for k in kwnames)]
    if n > 3 or len(set(keys)) != len(keys) or not set(keys) <= set(_CLIP_NAMES):
        return None
    if not all(real_type(ty) or is_none(ty) for ty in types):
        return None
    bound = {key: i + 1 for i, key in enumerate(keys)}

    def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        ops, ds = split_tangents(a, n, len(types))
        values = [*ops, *kwargs.values()]
        lo, hi = [values[bound[k]] if k in bound else None for k in _CLIP_NAMES]
        refuse_complex("numpy.clip", ops[0], lo, hi)
        masks = _clip_masks(ops[0], lo, hi)
        sources = [0, *[bound.get(k) for k in _CLIP_NAMES]]
        terms = [ds[i] * m for i, m in zip(sources, masks) if i is not None and ds[i] is not None]
        return frules.like(z, sum(terms) if terms else None)

    return tangent


frules.register(np.clip, clip_tangent)
frules.register(np.ndarray.clip, clip_tangent)


def where_rrule(f: CD, cond: CD, x: CD, y: CD) -> RuleResult:
    """``np.where(cond, x, y)``: x's gradient where cond holds, y's elsewhere."""
    c = cond.primal
    z = f.primal(c, x.primal, y.primal)
    zf = new_fdata(z)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None:
            return NT, NT, zero_for(x), zero_for(y)
        gx = send(x, np.where(c, g, 0)) if needs(x) else zero_for(x)
        gy = send(y, np.where(c, 0, g)) if needs(y) else zero_for(y)
        return NT, NT, gx, gy

    return CoDual(z, zf), pullback


for _x in NUMERIC:
    for _y in NUMERIC:
        primitive(np.where, ANY, _x, _y)(where_rrule)
zero_derivative(np.where, ANY)  # the one-argument form: indices


def _where_make(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``np.where(c, a, b)``: linear in ``a`` and ``b``; the condition has no derivative,
    whatever tangent a value of unknown type there was given."""
    if kwnames or len(types) != 3 or not all(map(number_type, types[1:])):
        return None

    if static_types(types):

        def emit(
            b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
        ) -> Value:
            branches = [Constant(0.0) if d is None else d for d in tangents[1:]]
            chosen = b.call(np.where, args[0], *branches, type=z.type)
            return frules.fit(b, chosen, z)

        return frules.Emit(emit)

    def where(z: t.Any, c: t.Any, a: t.Any, b: t.Any, dc: t.Any, da: t.Any, db: t.Any) -> t.Any:
        return frules.like(z, np.where(c, 0.0 if da is None else da, 0.0 if db is None else db))

    return frules.checked(where, (T.BOOL, *types[1:]))  # (the condition is any truth value)


frules.register(np.where, _where_make, numeric=True)

# --------------------------------------------------------------------------------------------
# nan_to_num

_NAN_TO_NUM = ("copy", "nan", "posinf", "neginf")
_FILLS = ("nan", "posinf", "neginf")


def _real_parts(x: t.Any, g: t.Any) -> list[tuple[t.Any, t.Any]]:
    """(part of x, the same part of g) for each real part nan_to_num treats on its own."""
    if _is_complex(x):
        return [(np.real(x), np.real(g)), (np.imag(x), np.imag(g))]
    return [(x, np.real(g))]


def _nan_to_num_gradients(x: t.Any, g: t.Any) -> tuple[t.Any, dict[str, t.Any]]:
    """x's gradient (g where x was finite, part by part) and each fill value's (the sum of g
    where it was put)."""
    parts = _real_parts(x, g)
    kept = [np.where(np.isfinite(p), gp, 0) for p, gp in parts]
    gx = kept[0] if len(kept) == 1 else kept[0] + 1j * kept[1]
    fills = {}
    tests: tuple[t.Callable[[t.Any], t.Any], ...] = (np.isnan, np.isposinf, np.isneginf)
    for name, test in zip(_FILLS, tests):
        fills[name] = sum(np.sum(gp, where=test(p)) for p, gp in parts)
    return gx, fills


@primitive(np.nan_to_num, ANY, ...)
def nan_to_num_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None)``: the identity where x
    is finite (each part of a complex x on its own); elsewhere a fill value, which gets the
    cotangent there (``posinf``/``neginf`` left None fill with the dtype's extremes, constants).
    With ``copy=False`` x is overwritten and returned; the pullback puts it back."""
    options = bind(_NAN_TO_NUM, args, kwargs, {"copy": True}, "nan_to_num")
    named = dict(zip(_NAN_TO_NUM, args)) | kwargs
    operands = (*args, *kwargs.values())
    xp = x.primal
    if isinstance(xp, np.ndarray) and xp.dtype.kind in "fc" and not options["copy"]:
        return _nan_to_num_in_place(f, x, named, operands)
    y = f.primal(xp, *(c.primal for c in args), **{k: v.primal for k, v in kwargs.items()})
    if y is xp:  # an array without nan or inf to replace (of ints), kept as it is
        return x, lambda dy: (NT, NT, *(zero_for(c) for c in operands))
    yf = new_fdata(y)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(yf, dy)
        if g is None or not (isinstance(yf, np.ndarray) or isinstance(y, np.inexact)):
            return (NT, zero_for(x), *(zero_for(c) for c in operands))
        gx, fills = _nan_to_num_gradients(xp, g)
        return (NT, send(x, gx) if needs(x) else zero_for(x), *_fill_rdata(named, fills))

    return CoDual(y, yf), pullback


def nan_to_num_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``np.nan_to_num``: x's tangent where it is finite, each fill value's where it was put.
    ``copy=False`` writes into x: refused (where the types tell, when the rule is built)."""
    n = len(types) - len(kwnames)
    where = operand_positions(_NAN_TO_NUM, n, kwnames)
    if where is None or not real_type(types[0]):
        return None
    fills = [types[where[k]] for k in _FILLS if k in where]
    if not all(real_type(ty) or is_none(ty) for ty in fills):
        return None
    copy = types[where["copy"]] if "copy" in where else T.Const(True)
    if isinstance(copy, T.Const) and not copy.value:
        return None
    if isinstance(types[0], T.Array) and isinstance(copy, T.Const) and static_types(types):
        return frules.Emit(_nan_to_num_emit(where))

    def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        ops, ds = split_tangents(a, n, len(types))
        x = ops[0]
        refuse_complex("numpy.nan_to_num", x)
        copied = ops[where["copy"]] if where.get("copy", n) < n else kwargs.get("copy", True)
        if not copied and isinstance(x, np.ndarray) and x.dtype.kind == "f":
            raise ForwardModeError(
                "forward mode: numpy.nan_to_num with copy=False writes into its operand: no "
                "forward rule (assign the result of copy=True instead)"
            )
        terms = [] if ds[0] is None else [np.where(np.isfinite(x), ds[0], 0.0)]
        for name, test in zip(_FILLS, _FILL_TESTS):
            d = ds[where[name]] if name in where else None
            if d is not None:
                terms.append(test(x) * d)
        dz = sum(terms) if terms else None
        if isinstance(dz, np.ndarray) and dz.ndim == 0 and not isinstance(z, np.ndarray):
            dz = dz[()]  # (np.where of a scalar: a 0-d array)
        return frules.like(z, dz)

    return tangent


_FILL_TESTS: tuple[t.Callable[[t.Any], t.Any], ...] = (np.isnan, np.isposinf, np.isneginf)


def _nan_to_num_emit(where: dict[str, int]) -> t.Callable[..., Value]:
    def emit(
        b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
    ) -> Value:
        x, dx = args[0], tangents[0]
        mask = T.Array("bool", x.type.ndim if isinstance(x.type, T.Array) else None)
        terms = []
        if dx is not None:
            finite = b.call(np.isfinite, x, type=mask)
            terms.append(b.call(np.where, finite, dx, 0.0, type=z.type))
        for name, test in zip(_FILLS, _FILL_TESTS):
            d = tangents[where[name]] if name in where else None
            if d is not None:
                put = b.call(test, x, type=mask)
                terms.append(b.call(operator.mul, put, d, type=z.type))
        return added(b, z, terms)

    return emit


frules.register(np.nan_to_num, nan_to_num_tangent)


def _fill_rdata(named: dict[str, CD], fills: dict[str, t.Any]) -> list[t.Any]:
    return [
        send(c, fills[k]) if k in fills and needs(c) else zero_for(c) for k, c in named.items()
    ]


def _nan_to_num_in_place(
    f: CD, x: CD, named: dict[str, CD], operands: tuple[CD, ...]
) -> RuleResult:
    xp, dx = x.primal, x.fdata
    saved = xp.copy()
    f.primal(xp, **{k: v.primal for k, v in named.items()})
    replaced = [(np.logical_not(np.isfinite(p)), part) for p, part in _real_parts(saved, dx)]
    saved_fdata = None
    if isinstance(dx, np.ndarray):
        saved_fdata = dx.copy()
        for mask, part in replaced:
            np.copyto(part, 0, where=mask)  # the fill values' tangents start at zero

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        np.copyto(xp, saved)
        if saved_fdata is None:
            return (NT, NT, *(zero_for(c) for c in operands))
        # Where x was finite its value went on, and so does the cotangent there.
        _, fills = _nan_to_num_gradients(saved, dx)
        for (mask, part), (_, saved_part) in zip(replaced, _real_parts(saved, saved_fdata)):
            np.copyto(part, saved_part, where=mask)
        return (NT, NT, *_fill_rdata(named, fills))

    return x, pullback


# --------------------------------------------------------------------------------------------
# real, imag, conj: real and imag of a complex array are views


def _is_complex(x: object) -> bool:
    # np.iscomplexobj makes an array of a Python scalar: an allocation the primal does not make.
    if isinstance(x, np.ndarray):
        return bool(x.dtype.kind == "c")
    return isinstance(x, (complex, np.complexfloating))


def real_or_imag(x: CD, take_imag: bool) -> tuple[CD, t.Callable[[t.Any], t.Any]]:
    """The real or imaginary part of ``x`` and a function from its cotangent rdata to x's rdata.

    Of a complex array both parts are views: their fdata is the same part of x's fdata, and
    nothing is left to do in the pullback.  The real part of a real array is the array itself;
    the imaginary part of a real array is a new array of zeros, without derivative.  Of a
    scalar, the cotangent ``g`` goes back as ``g`` (real part) or ``i g`` (imaginary part).
    """
    xp = x.primal
    z = np.imag(xp) if take_imag else np.real(xp)
    if z is xp:  # the real part of a real array or float: the value itself
        if isinstance(xp, np.ndarray):
            return x, lambda dz: NT
        return x, lambda dz: zero_for(x) if dz is NT else dz
    if isinstance(xp, np.ndarray) and isinstance(x.fdata, np.ndarray) and shares_memory(z, xp):
        zf = view_fdata(z, np.imag(x.fdata) if take_imag else np.real(x.fdata), of=(xp, x.fdata))
        return CoDual(z, zf), lambda dz: NT
    zf = new_fdata(z)
    if not needs(x) or (take_imag and not _is_complex(xp)):
        return CoDual(z, zf), lambda dz: zero_for(x)

    def back(dz: t.Any) -> t.Any:
        g = cotangent(zf, dz)
        return zero_for(x) if g is None else send(x, g * 1j if take_imag else g)

    return CoDual(z, zf), back


def real_imag_rrule(f: CD, x: CD) -> RuleResult:
    """``np.real(x)``, ``np.imag(x)``."""
    z, back = real_or_imag(x, f.primal is np.imag)
    return z, lambda dz: (NT, back(dz))


for _kind in NUMERIC:
    primitive(np.real, _kind)(real_imag_rrule)
    primitive(np.imag, _kind)(real_imag_rrule)
frules.register_linear([np.real, np.imag])
structure.register_part([np.real, np.imag])  # (of a value of unknown type)


def conj_method_rrule(f: CD, x: CD) -> RuleResult:
    """``x.conj()``, ``x.conjugate()`` on arrays and ``complex.conjugate(z)``."""
    z = f.primal(x.primal)
    if z is x.primal:  # the conjugate of a real array (or float) is the value itself
        if isinstance(z, np.ndarray):
            return x, no_pullback(2)
        return x, lambda dz: (NT, zero_for(x) if dz is NT else dz)
    zf = new_fdata(z)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None or not needs(x):
            return NT, zero_for(x)
        return NT, send(x, conj(g))

    return CoDual(z, zf), pullback


primitive(np.ndarray.conj, ARRAY)(conj_method_rrule)
primitive(np.ndarray.conjugate, ARRAY)(conj_method_rrule)
primitive(complex.conjugate, NUMBER)(conj_method_rrule)
primitive(float.conjugate, NUMBER)(conj_method_rrule)
# (real-linear: the conjugate of a tangent; of a real one, the tangent itself, as the primal)
frules.register_linear([np.ndarray.conj, np.ndarray.conjugate, complex.conjugate, float.conjugate])

# --------------------------------------------------------------------------------------------
# sinc and angle: elementwise NumPy functions that are not ufuncs


variants.register_unary([np.sinc], tables.UNARY["sinc"], tables.UNARY_PATTERNS)


def angle_rrule(f: CD, z: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.angle(z, deg=False)`` = Im(log z): the gradient of a complex z is ``g i / conj(z)``
    (0 at 0), in degrees ``180 / pi`` times that.  The angle of a real number is 0 or pi, a
    constant wherever it is differentiable."""
    deg = bind(("deg",), args, kwargs, {"deg": False}, "np.angle")["deg"]
    zp = z.primal
    y = f.primal(zp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    yf = new_fdata(y)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(yf, dy)
        if g is None or not needs(z) or not _is_complex(zp):
            return (NT, zero_for(z), *rest)
        scale = 180 / np.pi if deg else 1.0
        at_zero = np.equal(zp, 0)
        grad = np.where(at_zero, 0, (scale * 1j) / np.conj(np.where(at_zero, 1, zp)))
        return (NT, send(z, g * grad), *rest)

    return CoDual(y, yf), pullback


for _kind in NUMERIC:
    primitive(np.angle, _kind, ...)(angle_rrule)


def angle_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``np.angle(z, deg=False)``: ``Im(dz / z)`` of a complex ``z`` (0 at 0, the reverse
    rule's choice), times ``180 / pi`` in degrees; of a real one, 0 (piecewise constant)."""
    if len(types) > 2 or kwnames not in ((), ("deg",)) or not static_types(types):
        return None
    deg = T.Const(False) if len(types) == 1 else types[1]
    if not isinstance(deg, T.Const) or not number_type(types[0]):
        return None
    scale = 180 / np.pi if deg.value else 1.0

    def emit(b: Builder, z: Value, args: frules.Values, ds: frules.Tangents, kw: frules.Keywords) -> Value:
        x, dx = args[0], ds[0]
        if dx is None or not complex_type(x.type):
            return frules.zero(b, z)
        ty, real = x.type, z.type
        boolean = T.Array("bool", ty.ndim) if isinstance(ty, T.Array) else T.BOOL
        at_zero = b.call(np.equal, x, Constant(0), type=boolean)
        safe = b.call(np.where, at_zero, Constant(1), x, type=ty)
        slope = b.call(np.imag, b.call(operator.truediv, dx, safe, type=ty), type=real)
        chosen = b.call(np.where, at_zero, Constant(0.0), slope, type=real)
        return chosen if scale == 1.0 else b.call(operator.mul, chosen, Constant(scale), type=real)

    return frules.Emit(emit)


frules.register(np.angle, angle_tangent)


# --------------------------------------------------------------------------------------------
# The sign of a complex number: z / |z| (NumPy 2), not piecewise constant


def _unit_slope(z: t.Any) -> t.Any:
    """``1 / |z|``, 1 at 0 (where ``u`` is 0, and so is ``d(z/|z|)``, the subgradient)."""
    size = np.abs(z)
    return 1.0 / (size + (size == 0))


def complex_sign_rrule(f: CD, x: CD) -> RuleResult:
    """``np.sign(z)`` of complex ``z`` is ``u = z / |z|`` (0 at 0), which moves only along
    the circle: ``du = i u Im(conj(u) dz) / |z|``, so ``z`` gets ``-i u Im(conj(g) u) / |z|``
    (0 at 0, the subgradient)."""
    xp = x.primal
    u = f.primal(xp)
    uf = new_fdata(u)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(uf, dy)
        if g is None or not needs(x):
            return (NT, zero_for(x))
        return (NT, send(x, -1j * u * np.imag(np.conj(g) * u) * _unit_slope(xp)))

    return CoDual(u, uf), pullback


def complex_sign_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """Its tangent, ``i u Im(conj(u) dz) / |z|``, written out."""
    if kwnames or len(types) != 1 or not complex_type(types[0]) or not static_types(types):
        return None

    def emit(b: Builder, u: Value, args: frules.Values, ds: frules.Tangents, kw: frules.Keywords) -> Value:
        x, dx = args[0], ds[0]
        if dx is None:
            return frules.zero(b, u)
        real = T.Array("float64", x.type.ndim) if isinstance(x.type, T.Array) else T.FLOAT
        turn = b.call(operator.mul, b.call(np.conj, u, type=u.type), dx, type=u.type)
        along = b.call(np.imag, turn, type=real)
        size = b.call(np.abs, x, type=real)  # (``_unit_slope``, as calls reverse mode reads)
        mask = T.Array("bool", real.ndim) if isinstance(real, T.Array) else T.BOOL
        at_zero = b.call(operator.eq, size, Constant(0), type=mask)
        safe = b.call(operator.add, size, at_zero, type=real)
        scale = b.call(operator.truediv, Constant(1.0), safe, type=real)
        iu = b.call(operator.mul, Constant(1j), u, type=u.type)
        return b.call(operator.mul, iu, b.call(operator.mul, along, scale, type=real), type=u.type)

    return frules.Emit(emit)


if np.sign(1j) == 1j:  # (NumPy 1 gives the sign of the real part: piecewise constant, zero)
    for _kind in (T.Array("complex128", None), T.Array("complex64", None), T.COMPLEX):
        primitive(np.sign, _kind)(complex_sign_rrule)
    frules.register(np.sign, complex_sign_tangent)
