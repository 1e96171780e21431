"""Reductions and scans: ``sum``, ``mean``, ``prod``, ``max``/``min`` (``amax``/``amin``),
``var``, ``std``, ``ptp``, ``average``, ``nansum``, ``nanmean``, ``cumsum`` and ``cumprod``, as
NumPy functions and as ndarray methods (``x.sum(axis=0)`` is ``numpy.ndarray.sum(x, axis=0)``
after type inference).

``axis`` (an int, a tuple of ints or None) and ``keepdims`` may be passed by position or by
keyword, ``dtype`` and ``ddof`` too (a float ``ddof`` gets its derivative); ``out=`` by keyword
for ``sum``, ``mean`` and ``cumsum`` (stateful rules: ``reductions_out``); other ``out=``, ``initial=``
and ``where=`` are not supported (the rule raises).  ``prod`` computes the product of the
*other* elements with running products, so zeros give exact gradients (no division), and so
does ``cumprod``.  ``max``/``min``/``ptp`` split the gradient evenly among tied maxima
(minima): a subgradient, symmetric in the ties, and the mean of the one-sided derivatives for
a tie of two (what a central difference measures).  ``nansum``/``nanmean`` give NaNs no
gradient.

A reduction of a whole array to a scalar allocates no array, so neither may its rule (the
audit's policy): ``sum``/``mean`` add the scalar cotangent into the fdata in place, ``max``/
``min``/``ptp`` add it at the one extremum (found by ``argmax`` from both ends, so a tie, which
needs a mask, is detected without one), and ``prod`` is a stateful rule whose buffer takes the
gradient ``g conj(z / x)`` when no element is zero.  ``sum``/``mean``/``max``/``min`` of a whole
float64 array to a float have inline forms (the ``whole_real_array`` variants,
``gibbous.rules.inline``): ``max``/``min`` call the rule's own pick of the extremum in the reverse.
"""

from __future__ import annotations

import operator
import typing as t

import numpy as np

from gibbous.library.common import (
    ARRAY,
    CD,
    NT,
    NUMBER,
    Array,
    NO_SCRATCH,
    RuleResult,
    Scratch,
    add_into,
    bind,
    conj,
    cotangent,
    needs,
    new_fdata,
    nothing,
    send,
    zero_for,
)
from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules.emit import static_types
from gibbous.rules import frules as forward, inline
from gibbous.library.items import as_array
from gibbous.rules.registry import Pullback, primitive, stateful_primitive
from gibbous.tangents.model import CoDual

StatefulResult = tuple[CD, Pullback, Scratch]

SUM_PARAMETERS = ("axis", "dtype", "out", "keepdims", "initial", "where")
MEAN_PARAMETERS = ("axis", "dtype", "out", "keepdims", "where")
MAX_PARAMETERS = ("axis", "out", "keepdims", "initial", "where")
CUMSUM_PARAMETERS = ("axis", "dtype", "out")


def normalize_axes(axis: object, ndim: int) -> tuple[int, ...]:
    """The reduced axes, non-negative and sorted; all of them for None."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in items:
        a = int(t.cast(t.SupportsIndex, a))
        if not -ndim <= a < max(ndim, 1):
            raise ValueError(f"axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(a % ndim if ndim else 0)
    return tuple(sorted(out))


def reduction_options(
    names: tuple[str, ...], args: t.Sequence[CD], kwargs: t.Mapping[str, CD], what: str
) -> tuple[object, bool]:
    bound = bind(names, args, kwargs, {}, what)
    if bound.get("out") is not None:
        raise NotImplementedError(f"{what} with out=: no rule; assign the result instead")
    for name in ("initial", "where", "mean"):
        if name in bound and not _is_default(name, bound[name]):
            raise NotImplementedError(f"{what} with {name}=: no rule")
    keepdims = bound.get("keepdims", False)
    return bound.get("axis"), isinstance(keepdims, (bool, np.bool_)) and bool(keepdims)


def _is_default(name: str, value: object) -> bool:
    if name == "where":
        return value is True or value is np.True_
    return type(value).__name__ == "_NoValueType"


def expand(g: t.Any, axes: tuple[int, ...], keepdims: bool) -> t.Any:
    """The cotangent of a reduction with the reduced axes put back (as size 1)."""
    if keepdims or not axes:
        return g
    return np.expand_dims(g, axes)


def prod_of_others(x: Array, axes: tuple[int, ...]) -> Array:
    """For each element, the product of the other elements of its reduction: exact with zeros,
    from running products from the left and from the right."""
    if not axes or x.size == 0:
        return np.ones_like(x)
    k = len(axes)
    last = tuple(range(x.ndim - k, x.ndim))
    moved = np.moveaxis(x, axes, last)
    shape = moved.shape
    flat = moved.reshape(shape[: x.ndim - k] + (-1,))
    ones = np.ones(flat.shape[:-1] + (1,), x.dtype)
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return np.moveaxis((left * right).reshape(shape), last, axes)


def _sum_grad(x: Array, z: t.Any, g: t.Any, axes: tuple[int, ...], keepdims: bool) -> t.Any:
    return expand(g, axes, keepdims)


def _mean_grad(x: Array, z: t.Any, g: t.Any, axes: tuple[int, ...], keepdims: bool) -> t.Any:
    return expand(g, axes, keepdims) / element_count(x, axes)


def element_count(x: Array, axes: tuple[int, ...]) -> int:
    count = 1
    for a in axes:
        count *= x.shape[a]
    return count


def _prod_grad(x: Array, z: t.Any, g: t.Any, axes: tuple[int, ...], keepdims: bool) -> t.Any:
    return expand(g, axes, keepdims) * conj(prod_of_others(x, axes))


def _extreme_grad(x: Array, z: t.Any, g: t.Any, axes: tuple[int, ...], keepdims: bool) -> t.Any:
    chosen = x == expand(z, axes, keepdims)
    count = np.maximum(np.sum(chosen, axis=axes, keepdims=True), 1)
    return expand(g, axes, keepdims) * chosen / count


Grad = t.Callable[[Array, t.Any, t.Any, tuple[int, ...], bool], t.Any]


def _call_reduction(
    f: CD, x: CD, args: t.Sequence[CD], kwargs: t.Mapping[str, CD], names: tuple[str, ...]
) -> tuple[t.Any, tuple[int, ...], bool]:
    """Run the reduction; its result, the reduced axes and ``keepdims``."""
    xp = x.primal
    if not args and not kwargs:  # ``np.sum(x)``: over all axes, nothing to check
        return f.primal(xp), tuple(range(xp.ndim)), False
    what = getattr(f.primal, "__qualname__", "reduction")
    axis, keepdims = reduction_options(names, args, kwargs, what)
    z = f.primal(xp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    return z, normalize_axes(axis, xp.ndim), keepdims


def _to_scalar(x: CD, z: object) -> bool:
    """Whether a reduction of array ``x`` with a gradient gave a scalar of x's own dtype: the
    primal allocated no array, so the rule must allocate none either (the audit's policy)."""
    xp = x.primal
    return (
        isinstance(z, np.generic)
        and type(xp) is np.ndarray
        and xp.size > 0
        and z.dtype == xp.dtype
        and type(x.fdata) is np.ndarray
    )


def _general_pullback(
    grad: Grad, x: CD, z: t.Any, zf: t.Any, axes: tuple[int, ...], keepdims: bool, n: int
) -> t.Callable[[t.Any], tuple[t.Any, ...]]:
    rdata = nothing(n)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is not None and needs(x):
            add_into(x.fdata, grad(x.primal, z, g, axes, keepdims))
        return rdata

    return pullback


def reduction_rule(grad: Grad, names: tuple[str, ...]) -> t.Callable[..., RuleResult]:
    """The rule of ``sum``, ``mean`` (``grad``: the gradient of one reduction)."""

    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        z, axes, keepdims = _call_reduction(f, x, args, kwargs, names)
        n = 2 + len(args) + len(kwargs)
        if _to_scalar(x, z):
            share = 1 if grad is _sum_grad else element_count(x.primal, axes)
            return CoDual(z, NT), _spread_pullback(x.fdata, share, n)
        zf = new_fdata(z)
        return CoDual(z, zf), _general_pullback(grad, x, z, zf, axes, keepdims, n)

    rrule.__qualname__ = f"reduction_rule({grad.__name__})"
    return rrule


def _spread_pullback(dx: Array, count: int, n: int) -> t.Callable[[t.Any], tuple[t.Any, ...]]:
    """The pullback of the sum (``count`` 1) or mean of all of an array's elements: the scalar
    cotangent's share added to every element of x's fdata, in place."""
    rdata = nothing(n)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if dz is not NT:
            np.add(dx, dz if count == 1 else dz / count, out=dx)
        return rdata

    return pullback


def only_extreme(x: Array, is_max: bool) -> int | None:
    """The flat index of the one maximum (minimum) of ``x``; None if several elements tie (or
    several NaN, which are the extrema NumPy picks).  Nothing is allocated: the first extremum
    is looked for again after itself, in one pass over the rest of a contiguous array."""
    first = int(x.argmax() if is_max else x.argmin())
    if not x.flags.c_contiguous:  # the last extremum: the first of the array reversed
        rev = x[(slice(None, None, -1),) * x.ndim]
        last = x.size - 1 - int(rev.argmax() if is_max else rev.argmin())
        return first if first == last else None
    rest = x.reshape(-1)[first + 1 :]
    if not rest.size:
        return first
    z = x.flat[first]
    v = rest[int(rest.argmax() if is_max else rest.argmin())]
    return None if v == z or (v != v and z != z) else first


def extreme_rule(names: tuple[str, ...], is_max: bool) -> t.Callable[..., RuleResult]:
    """The rule of ``max`` (``is_max``) or ``min``: the gradient goes to the extremum, split
    evenly among ties."""

    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        z, axes, keepdims = _call_reduction(f, x, args, kwargs, names)
        n = 2 + len(args) + len(kwargs)
        if _to_scalar(x, z) and x.primal.dtype.kind == "f":
            k = only_extreme(x.primal, is_max)
            if k is not None:  # a single extremum takes the whole cotangent: no array needed
                return CoDual(z, NT), _pick_pullback(x.fdata, k, n)
        zf = new_fdata(z)
        return CoDual(z, zf), _general_pullback(_extreme_grad, x, z, zf, axes, keepdims, n)

    rrule.__qualname__ = f"extreme_rule({'max' if is_max else 'min'})"
    return rrule


def _pick_pullback(dx: Array, k: int, n: int) -> t.Callable[[t.Any], tuple[t.Any, ...]]:
    rdata = nothing(n)
    flat = dx.flat

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if dz is not NT:
            flat[k] += dz
        return rdata

    return pullback


def prod_rrule(state: Scratch | None, f: CD, x: CD, *args: CD, **kwargs: CD) -> StatefulResult:
    """``np.prod`` (stateful).  For a scalar result (whose primal allocates nothing) the
    gradient goes through a buffer of the state: ``g conj(z / x)`` when no element is zero;
    with one zero, only that element gets ``g conj(product of the others)``, and with more,
    none.  Along axes, the exact running products of ``prod_of_others``."""
    z, axes, keepdims = _call_reduction(f, x, args, kwargs, SUM_PARAMETERS)
    n = 2 + len(args) + len(kwargs)
    if _to_scalar(x, z) and np.isfinite(z):
        xp, dx = x.primal, x.fdata
        state = Scratch.fit(state, (xp.shape, xp.dtype))
        (buf,) = state.arrays
        pullback = _prod_pullback(xp, dx, z, buf, n) if z != 0 else _prod_zero(xp, dx, buf, n)
        return CoDual(z, NT), pullback, state
    zf = new_fdata(z)
    general = _general_pullback(_prod_grad, x, z, zf, axes, keepdims, n)
    return CoDual(z, zf), general, NO_SCRATCH if state is None else state


def _prod_pullback(xp: Array, dx: Array, z: t.Any, buf: Array, n: int) -> Pullback:
    rdata = nothing(n)
    complex_ = xp.dtype.kind == "c"

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if dz is not NT:  # dz * conj(z / x)
            if complex_:
                np.conjugate(xp, out=buf)
                np.divide(dz * np.conj(z), buf, out=buf)
            else:
                np.divide(dz * z, xp, out=buf)
            np.add(dx, buf, out=dx)
        return rdata

    return pullback


def _prod_zero(xp: Array, dx: Array, buf: Array, n: int) -> Pullback:
    rdata = nothing(n)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if dz is NT:
            return rdata
        np.absolute(xp, out=buf)
        k = int(np.argmin(buf))  # the first zero
        buf.flat[k] = 1
        if np.min(buf) == 0:  # another zero: every product of the others is zero
            return rdata
        np.copyto(buf, xp)
        buf.flat[k] = 1
        dx.flat[k] += dz * np.conj(np.prod(buf))
        return rdata

    return pullback


_fn: t.Any
_WHOLE = T.Array("float64", None)  # a whole float64 array reduced to a float: written out
for _fn in (np.sum, np.ndarray.sum):
    _rule = reduction_rule(_sum_grad, SUM_PARAMETERS)
    primitive(_fn, ARRAY, ...)(_rule)
    primitive(_fn, _WHOLE, variant="whole_real_array", inline=inline.SUM)(_rule)
forward.register_linear([np.sum, np.ndarray.sum], most=3, added={"initial"})  # (a, axis, dtype, out)
for _fn in (np.mean, np.ndarray.mean):
    _rule = reduction_rule(_mean_grad, MEAN_PARAMETERS)
    primitive(_fn, ARRAY, ...)(_rule)
    primitive(_fn, _WHOLE, variant="whole_real_array", inline=inline.MEAN)(_rule)
forward.register_linear([np.mean, np.ndarray.mean], most=3)
for _fn in (np.prod, np.ndarray.prod):
    stateful_primitive(_fn, ARRAY, ..., state_type=Scratch)(prod_rrule)


def _extreme_adjoint(is_max: bool) -> t.Callable[[t.Any, Array, t.Any, t.Any], None]:
    """The reverse of ``z = np.max(x)`` (``np.min``) of a whole float64 array, as the rule
    computes it: the cotangent to the one extremum, or split evenly among tied ones."""

    def adjoint(dx: t.Any, x: Array, z: t.Any, dz: t.Any) -> None:
        if type(dx) is not np.ndarray:  # (the form is written for active calls only)
            return
        k = only_extreme(x, is_max)
        if k is not None:
            dx.flat[k] += dz
        else:
            add_into(dx, _extreme_grad(x, z, dz, tuple(range(x.ndim)), False))

    adjoint.__qualname__ = f"extreme_adjoint({'max' if is_max else 'min'})"
    runtime.register_object(adjoint, adjoint.__qualname__)  # a path for the IR's text
    return adjoint


def extreme_form(is_max: bool) -> inline.InlineRule:
    """``np.max(x)`` / ``np.min(x)`` of a whole float64 array to a float, written out: the
    reverse calls the rule's own pick (``only_extreme``) on the saved array and result."""
    helper = _extreme_adjoint(is_max)

    def written(b: Builder, saved: t.Sequence[Value], dy: Value) -> t.Sequence[Value | None]:
        b.call(helper, *saved, dy, type=T.NONE)
        return (None,)

    saves = (("fdata", 0), ("primal", 0), ("result", -1))
    primal = (_MAX_REDUCE if is_max else _MIN_REDUCE, (None,))  # (np.max's own call)
    return inline.InlineRule("max" if is_max else "min", saves, written, primal=primal)


_MAX_REDUCE, _MIN_REDUCE = np.maximum.reduce, np.minimum.reduce
runtime.register_object(_MAX_REDUCE, "maximum_reduce")  # paths for the IR's text
runtime.register_object(_MIN_REDUCE, "minimum_reduce")


def extreme_tangent(fn: t.Callable[..., t.Any]) -> forward.Maker:
    """The forward rule of ``max`` / ``min`` (``fn``) with an ``axis`` and ``keepdims`` at
    most: the transpose of ``_extreme_grad``, the tangents of the extrema, averaged among
    ties."""

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> forward.Tangent | forward.Emit | None:
        n = len(types) - len(kwnames)
        if n > 2 or not set(kwnames) <= {"axis", "keepdims"} or any(varied[1:]):
            return None
        if not isinstance(types[0], (T.Array, T.Any)):  # (Any: checked to be real)
            return None
        if static_types(types) and all(isinstance(ty, T.Const) for ty in types[1:]):
            return forward.Emit(extreme_emit(fn, n))  # (written out: reverse mode reads it)

        def tangent(z: t.Any, x: Array, *a: t.Any, **kwargs: t.Any) -> t.Any:
            dx = a[n - 1]
            if dx is None:
                return forward.like(z, None)
            axis = a[0] if n == 2 else kwargs.get("axis")
            # (typed Any: NumPy 2.5's stubs overload np.sum on the literal of keepdims)
            keepdims: t.Any = bool(kwargs.get("keepdims", False))
            chosen = x == fn(x, axis=axis, keepdims=True)
            count = np.sum(chosen, axis=axis, keepdims=keepdims)
            return forward.like(z, np.sum(dx * chosen, axis=axis, keepdims=keepdims) / count)

        return forward.checked(tangent, types)

    return make


def extreme_emit(fn: t.Callable[..., t.Any], n: int) -> t.Callable[..., Value]:
    """``extreme_tangent``'s tangent written out as IR calls, for an axis and keepdims known
    when the rule is built (so a Hessian-vector product can differentiate it again)."""

    def emit(
        b: Builder, z: Value, args: list[Value], tangents: list[Value | None], kw: dict[str, Value]
    ) -> Value:
        dx = tangents[0]
        if dx is None:
            return forward.zero(b, z)
        x = args[0]
        axis = args[1] if n == 2 else kw.get("axis", Constant(None))
        keep = kw.get("keepdims", Constant(False))
        top = b.call(fn, x, kwargs={"axis": axis, "keepdims": Constant(True)}, type=x.type)
        ndim = x.type.ndim if isinstance(x.type, T.Array) else None
        chosen = b.call(operator.eq, x, top, type=T.Array("bool", ndim))
        count = b.call(np.sum, chosen, kwargs={"axis": axis, "keepdims": keep}, type=T.ANY)
        picked = b.call(operator.mul, dx, chosen, type=x.type)
        total = b.call(np.sum, picked, kwargs={"axis": axis, "keepdims": keep}, type=z.type)
        return b.call(operator.truediv, total, count, type=z.type)

    return emit


for _fns, _is_max in (((np.max, np.amax, np.ndarray.max), True),
                      ((np.min, np.amin, np.ndarray.min), False)):  # fmt: skip
    _rule = extreme_rule(MAX_PARAMETERS, _is_max)
    _form = extreme_form(_is_max)
    for _fn in _fns:
        primitive(_fn, ARRAY, ...)(_rule)
        primitive(_fn, _WHOLE, variant="whole_real_array", inline=_form)(_rule)
        forward.register(_fn, extreme_tangent(np.max if _is_max else np.min))


def scalar_reduction_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.sum(2.5)`` and the like: a reduction of a scalar is the scalar (as a NumPy one)."""
    z = f.primal(x.primal, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    rest = nothing(len(args) + len(kwargs))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        return (NT, zero_for(x) if dz is NT else send(x, dz), *rest)

    return CoDual(z, new_fdata(z)), pullback


for _fn in (np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin):
    primitive(_fn, NUMBER, ...)(scalar_reduction_rrule)


def scan_rule(name: str, gradient: t.Callable[..., Array]) -> t.Callable[..., RuleResult]:
    """``np.cumsum`` / ``np.cumprod(x, axis=None)`` (over the flattened array for ``axis=None``):
    ``gradient(x, z, g, axis)`` is the gradient for the cotangent ``g`` of the scan ``z``."""

    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        bound = bind(CUMSUM_PARAMETERS, args, kwargs, {}, name)
        if bound.get("out") is not None:
            raise NotImplementedError(f"{name} with out=: no rule")
        axis = bound.get("axis")
        xp = x.primal
        z = f.primal(xp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
        zf = new_fdata(z)
        rdata = nothing(2 + len(args) + len(kwargs))

        def pullback(dz: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(zf, dz)
            if g is not None and needs(x) and z.size:
                if axis is None:
                    grad = gradient(np.ravel(xp), z, g, 0)
                else:
                    grad = gradient(xp, z, g, normalize_axes(axis, xp.ndim)[0])
                add_into(x.fdata, grad.reshape(xp.shape))
            return rdata

        return CoDual(z, zf), pullback

    rrule.__qualname__ = f"scan_rule({name})"
    return rrule


def cumsum_grad(x: Array, z: Array, g: Array, axis: int) -> Array:
    """The reversed cumulative sum of the cotangent."""
    reversed_sums: Array = np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)
    return reversed_sums


cumsum_rrule = scan_rule("cumsum", cumsum_grad)
primitive(np.cumsum, ARRAY, ...)(cumsum_rrule)
primitive(np.ndarray.cumsum, ARRAY, ...)(cumsum_rrule)
forward.register_linear([np.cumsum, np.ndarray.cumsum], most=3)


# --------------------------------------------------------------------------------------------
# var, std, ptp, average, cumprod, nansum, nanmean

VAR_PARAMETERS = ("axis", "dtype", "out", "ddof", "keepdims", "where", "mean", "correction")
PTP_PARAMETERS = ("axis", "out", "keepdims")
AVERAGE_PARAMETERS = ("axis", "weights", "returned", "keepdims")
NANSUM_PARAMETERS = SUM_PARAMETERS


def _degrees_of_freedom(args: t.Sequence[CD], kwargs: t.Mapping[str, CD]) -> float:
    bound = bind(VAR_PARAMETERS, args, kwargs, {}, "var")
    ddof = bound.get("correction", bound.get("ddof", 0))
    return float(t.cast(float, 0 if _is_default("correction", ddof) else ddof))


def spread_rule(is_std: bool) -> t.Callable[..., RuleResult]:
    """``var`` and ``std`` (``ddof``/``correction``): ``var`` = sum |x - m|^2 / (N - ddof) has
    the gradient ``2 (x - m) / (N - ddof)`` (the mean's own derivative sums to zero); ``std``
    divides ``(x - m) / (N - ddof)`` by the result (0 where it is 0, a subgradient)."""

    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        z, axes, keepdims = _call_reduction(f, x, args, kwargs, VAR_PARAMETERS)
        ddof = _degrees_of_freedom(args, kwargs)
        zf = new_fdata(z)
        operands = (f, x, *args, *kwargs.values())
        # a float ddof (or correction) is differentiable: var = S / (N - ddof)
        where = [operand_index(VAR_PARAMETERS, args, kwargs, n) for n in ("ddof", "correction")]

        def pullback(dz: t.Any) -> tuple[t.Any, ...]:
            rdata = [NT, NT, *(zero_for(a) for a in operands[2:])]
            g = cotangent(zf, dz)
            if g is None:
                return tuple(rdata)
            xp = x.primal
            dof = element_count(xp, axes) - ddof
            for i in where:
                if i is not None:
                    d = np.real(np.sum(g * z)) / dof / (2 if is_std else 1)
                    rdata[i] = send(operands[i], d)
            if not needs(x):
                return tuple(rdata)
            centred = xp - np.mean(xp, axis=axes, keepdims=True)
            scale = expand(g, axes, keepdims) / dof
            if is_std:
                zz = expand(z, axes, keepdims)
                shape = np.broadcast_shapes(np.shape(scale), np.shape(zz))
                scale = np.divide(scale, zz, out=np.zeros(shape), where=zz != 0)
            else:
                scale = 2 * scale
            add_into(x.fdata, scale * centred)
            return tuple(rdata)

        return CoDual(z, zf), pullback

    rrule.__qualname__ = f"spread_rule({'std' if is_std else 'var'})"
    return rrule


for _fn in (np.var, np.ndarray.var):
    primitive(_fn, ARRAY, ...)(spread_rule(False))
for _fn in (np.std, np.ndarray.std):
    primitive(_fn, ARRAY, ...)(spread_rule(True))


def ptp_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.ptp`` = max - min: the gradient of each, with ties split evenly; a scalar result
    with one maximum and one minimum needs no array."""
    z, axes, keepdims = _call_reduction(f, x, args, kwargs, PTP_PARAMETERS)
    n = 2 + len(args) + len(kwargs)
    rdata = nothing(n)
    xp = x.primal
    if _to_scalar(x, z) and xp.dtype.kind == "f":
        hi, lo = only_extreme(xp, True), only_extreme(xp, False)
        if hi is not None and lo is not None and hi != lo:
            flat = x.fdata.flat

            def pick(dz: t.Any) -> tuple[t.Any, ...]:
                if dz is not NT:
                    flat[hi] += dz
                    flat[lo] -= dz
                return rdata

            return CoDual(z, NT), pick
    zf = new_fdata(z)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is not None and needs(x):
            top = np.max(xp, axis=axes, keepdims=True)
            bottom = np.min(xp, axis=axes, keepdims=True)
            ge = expand(g, axes, keepdims)
            add_into(x.fdata, _extreme_grad(xp, top, ge, axes, True))
            add_into(x.fdata, -_extreme_grad(xp, bottom, ge, axes, True))
        return rdata

    return CoDual(z, zf), pullback


primitive(np.ptp, ARRAY, ...)(ptp_rrule)


def operand_index(
    names: tuple[str, ...], args: t.Sequence[CD], kwargs: t.Mapping[str, CD], name: str
) -> int | None:
    """The IR operand index of parameter ``name`` of a call ``f(x, *args, **kwargs)`` (the
    callee is operand 0, x operand 1), by position or keyword; None if not passed."""
    i = names.index(name)
    if i < len(args):
        return 2 + i
    if name in kwargs:
        return 2 + len(args) + list(kwargs).index(name)
    return None


def average_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.average(a, axis, weights)``: ``z = sum(a w) / sum(w)``, holomorphic in both, with
    ``dz/da = w / sum(w)`` and ``dz/dw = (a - z) / sum(w)``; 1-D weights along one axis are
    broadcast along it.  ``returned=True`` raises."""
    bound = bind(AVERAGE_PARAMETERS, args, kwargs, {"axis": None, "weights": None}, "average")
    if bound.get("returned"):
        raise NotImplementedError("np.average with returned=True: no rule")
    ap = a.primal
    z = f.primal(ap, *(x.primal for x in args), **{k: v.primal for k, v in kwargs.items()})
    axes = normalize_axes(bound["axis"], np.ndim(ap))
    keep = bound.get("keepdims", False)
    keepdims = isinstance(keep, (bool, np.bool_)) and bool(keep)
    w_index = operand_index(AVERAGE_PARAMETERS, args, kwargs, "weights")
    operands = (f, a, *args, *kwargs.values())
    w_cd = None if w_index is None or operands[w_index].primal is None else operands[w_index]
    w_back = None
    if w_cd is not None and isinstance(w_cd.primal, (list, tuple)):  # as NumPy converts them
        w_cd, w_back = as_array(w_cd)
    zf = new_fdata(z)
    n = len(operands)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        rdata = list(nothing(n))
        g = cotangent(zf, dz)
        if g is None:
            return tuple(rdata)
        ge = expand(g, axes, keepdims)
        if w_cd is None:
            if needs(a):
                add_into(a.fdata, ge / element_count(ap, axes))
            return tuple(rdata)
        wp = np.asarray(w_cd.primal)
        wb = wp
        if wp.shape != np.shape(ap):  # 1-D weights along the one reduced axis
            shape = [1] * np.ndim(ap)
            shape[axes[0]] = wp.size
            wb = wp.reshape(shape)
        total = np.sum(wb * np.ones_like(ap, dtype=wb.dtype), axis=axes, keepdims=True)
        if needs(a):
            add_into(a.fdata, ge * conj(wb / total))
        if needs(w_cd) and w_index is not None:
            gw = ge * conj((ap - expand(z, axes, keepdims)) / total)
            spread = tuple(i for i in range(gw.ndim) if wb.shape[i] == 1)
            gw = np.sum(gw, axis=spread, keepdims=True)
            rdata[w_index] = send(w_cd, gw.reshape(wp.shape))
        if w_back is not None and w_index is not None:
            rdata[w_index] = w_back()
        return tuple(rdata)

    return CoDual(z, zf), pullback


primitive(np.average, ARRAY, ...)(average_rrule)


def cumprod_grad(x: Array, z: Array, g: Array, axis: int) -> Array:
    """The gradient of ``cumprod`` along ``axis``: ``dx_j = sum_{i>=j} g_i conj(prod_{k<=i,
    k!=j} x_k)``.  Without zeros that is the reversed cumulative sum of ``g conj(z)`` over
    ``conj(x)``; with zeros, exact: ``conj(L_j) S_j`` with ``L`` the exclusive running product
    and ``S_j = g_j + conj(x_{j+1}) S_{j+1}`` (a loop over the axis)."""
    if np.all(x != 0):
        gz = g * conj(z)
        rev = np.flip(np.cumsum(np.flip(gz, axis), axis=axis), axis)
        return t.cast(Array, rev / conj(x))
    xm, gm = np.moveaxis(x, axis, 0), np.moveaxis(g, axis, 0)
    s = np.empty(gm.shape, np.result_type(gm, xm))
    s[-1] = gm[-1]
    for j in range(len(xm) - 2, -1, -1):
        s[j] = gm[j] + conj(xm[j + 1]) * s[j + 1]
    ones = np.ones((1,) + xm.shape[1:], xm.dtype)
    left = np.cumprod(np.concatenate([ones, xm[:-1]]), axis=0)
    return np.moveaxis(t.cast(Array, conj(left)) * s, 0, axis)


cumprod_rrule = scan_rule("cumprod", cumprod_grad)


primitive(np.cumprod, ARRAY, ...)(cumprod_rrule)
primitive(np.ndarray.cumprod, ARRAY, ...)(cumprod_rrule)


def nan_reduction_rule(mean: bool) -> t.Callable[..., RuleResult]:
    """``nansum`` and ``nanmean``: NaNs count as absent; their elements get no gradient, and
    ``nanmean`` divides by the number of the others."""
    names = MEAN_PARAMETERS if mean else NANSUM_PARAMETERS

    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        z, axes, keepdims = _call_reduction(f, x, args, kwargs, names)
        zf = new_fdata(z)
        rdata = nothing(2 + len(args) + len(kwargs))

        def pullback(dz: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(zf, dz)
            if g is not None and needs(x):
                present = ~np.isnan(x.primal)
                grad = expand(g, axes, keepdims) * present
                if mean:
                    grad = grad / np.maximum(np.sum(present, axis=axes, keepdims=True), 1)
                add_into(x.fdata, grad)
            return rdata

        return CoDual(z, zf), pullback

    rrule.__qualname__ = f"nan_reduction_rule({'nanmean' if mean else 'nansum'})"
    return rrule


primitive(np.nansum, ARRAY, ...)(nan_reduction_rule(False))
primitive(np.nanmean, ARRAY, ...)(nan_reduction_rule(True))
