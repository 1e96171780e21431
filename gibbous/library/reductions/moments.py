"""Moments and the like: ``var``, ``std`` (a float ``ddof`` with a derivative of its own),
``ptp`` (ties split evenly), ``average`` (weights with derivatives), ``nansum`` and ``nanmean``
(NaNs without a gradient), as NumPy functions and ndarray methods, both modes.

Each tangent is the transpose of its reverse rule's gradient, with its conventions (``std``'s
0 where the result is 0); of an array whose operand types are known, written out (``Emit``:
reverse mode differentiates them again, for Hessian-vector products).
"""

from __future__ import annotations

import builtins
import operator
import typing as t

import numpy as np

from gibbous.library.common import (
    add_into,
    ARRAY,
    Array,
    bind,
    CD,
    conj,
    cotangent,
    needs,
    new_fdata,
    nothing,
    NT,
    part_cotangents,
    RuleResult,
    send,
    zero_for,
)
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules.emit import (
    added,
    is_none,
    real_type,
    refuse_complex,
    split_tangents,
    static_types,
)
from gibbous.library.items import as_array
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual
from gibbous.rules import frules
from gibbous.library.reductions.reductions import (
    array_tangent,
    tangent_axes,
    call_reduction,
    extreme_grad,
    given_options,
    is_default,
    as_scalar,
    to_scalar,
    option_positions,
    AVERAGE_PARAMETERS,
    element_count,
    expand,
    extreme_tangent,
    MEAN_PARAMETERS,
    NANSUM_PARAMETERS,
    normalize_axes,
    only_extreme,
    operand_index,
    PTP_PARAMETERS,
    VAR_PARAMETERS,
    Where,
)



def _degrees_of_freedom(args: t.Sequence[CD], kwargs: t.Mapping[str, CD]) -> float:
    bound = bind(VAR_PARAMETERS, args, kwargs, {}, "var")
    ddof = bound.get("correction", bound.get("ddof", 0))
    return float(t.cast(float, 0 if is_default("correction", ddof) else ddof))


def spread_rule(is_std: bool) -> t.Callable[..., RuleResult]:
    """``var`` and ``std`` (``ddof``/``correction``): ``var`` = sum |x - m|^2 / (N - ddof) has
    the gradient ``2 (x - m) / (N - ddof)`` (the mean's own derivative sums to zero); ``std``
    divides ``(x - m) / (N - ddof)`` by the result (0 where it is 0, a subgradient)."""

    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        z, axes, keepdims = call_reduction(f, x, args, kwargs, VAR_PARAMETERS)
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


_fn: t.Any
for _fn in (np.var, np.ndarray.var):
    primitive(_fn, ARRAY, ...)(spread_rule(False))
for _fn in (np.std, np.ndarray.std):
    primitive(_fn, ARRAY, ...)(spread_rule(True))



# --------------------------------------------------------------------------------------------
# var, std: 2 <x - mean, dx> / (N - ddof), and std's over 2 std (0 where std is 0)


def _dof_name(where: Where) -> str | None:
    return next((name for name in ("correction", "ddof") if name in where), None)


def spread_tangent(is_std: bool, what: str) -> frules.Maker:
    """The forward rule of ``var`` (``std``, ``is_std``); ``ddof``/``correction`` a float has
    a tangent: ``var`` is ``S / (N - ddof)``."""

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> frules.Tangent | frules.Emit | None:
        where = option_positions(VAR_PARAMETERS, types, kwnames)
        if where is None or "ddof" in where and "correction" in where:
            return None
        dof = _dof_name(where)
        if dof is not None and not real_type(types[where[dof]]):
            return None
        n = len(types) - len(kwnames)
        plain = "dtype" not in where or is_none(types[where["dtype"]])
        if isinstance(types[0], T.Array) and static_types(types) and plain:
            return frules.Emit(_spread_emit(is_std, where, dof))
        return _spread_function(is_std, what, where, dof, n, len(types))

    return make


def _spread_function(
    is_std: bool, what: str, where: Where, dof_name: str | None, n: int, total: int
) -> frules.Tangent:
    def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        ops, ds = split_tangents(a, n, total)
        given = given_options(where, n, ops, kwargs)
        x = np.asarray(ops[0])
        refuse_complex(what, x, z)
        axes, keepdims = tangent_axes(given, x)
        dof = element_count(x, axes) - (0 if dof_name is None else given[dof_name])
        dz = None
        if ds[0] is not None:
            dtype: t.Any = given.get("dtype")
            centred = x - np.mean(x, axis=axes, keepdims=True, dtype=dtype)
            summed = np.sum(centred * np.asarray(ds[0]), axis=axes, keepdims=keepdims, dtype=dtype)
            dz = summed / (dof * z + (z == 0)) if is_std else summed * (2 / dof)
        dd = None if dof_name is None else ds[where[dof_name]]
        if dd is not None:
            term = z * dd / (2 * dof if is_std else dof)
            dz = term if dz is None else dz + term
        return frules.like(z, dz)

    return tangent


def _spread_emit(is_std: bool, where: Where, dof_name: str | None) -> t.Callable[..., Value]:
    """``_spread_function``'s tangent written out: the count N from the sizes of the operand
    and the result (``size(x) // size(z)``), so the axes need not be known."""

    def emit(
        b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
    ) -> Value:
        operands = [*args, *kwargs.values()]
        x, dx = args[0], tangents[0]
        count = _count(b, x, z)
        dof = count
        if dof_name is not None:
            ddof = operands[where[dof_name]]
            dof_type = T.INT if isinstance(_scalar_type(ddof.type), T.Int) else T.FLOAT
            dof = b.call(operator.sub, count, ddof, type=dof_type)
        terms = []
        if dx is not None:
            axis = operands[where["axis"]] if "axis" in where else Constant(None)
            keep = operands[where["keepdims"]] if "keepdims" in where else Constant(False)
            kept = {"axis": axis, "keepdims": Constant(True)}
            mean = b.call(np.mean, x, kwargs=kept, type=x.type)
            centred = b.call(operator.sub, x, mean, type=x.type)
            product = b.call(operator.mul, centred, dx, type=x.type)
            total = b.call(np.sum, product, kwargs={"axis": axis, "keepdims": keep}, type=z.type)
            terms.append(_spread_scale(b, total, z, dof, is_std))
        dd = None if dof_name is None else tangents[where[dof_name]]
        if dd is not None:
            share = b.call(operator.mul, z, dd, type=z.type)
            half = b.call(operator.mul, dof, 2, type=dof.type) if is_std else dof
            terms.append(b.call(operator.truediv, share, half, type=z.type))
        return added(b, z, terms)

    return emit


def _scalar_type(ty: T.Type) -> T.Type:
    if isinstance(ty, T.Const):
        return T.INT if isinstance(ty.value, (int, np.integer)) else T.FLOAT
    return ty


def _count(b: Builder, x: Value, z: Value) -> Value:
    """The number of elements of ``x`` each element of ``z`` reduces (0 when ``z`` is empty)."""
    size = b.call(np.size, x, type=T.INT)
    outputs = b.call(np.size, z, type=T.INT)
    some = b.call(builtins.max, outputs, 1, type=T.INT)
    return b.call(operator.floordiv, size, some, type=T.INT)


def _spread_scale(b: Builder, total: Value, z: Value, dof: Value, is_std: bool) -> Value:
    if not is_std:  # (np.divide: a NumPy float, inf where dof is 0, as the primal's)
        scale = b.call(np.divide, 2.0, dof, type=T.FLOAT)
        return b.call(operator.mul, total, scale, type=z.type)
    # total / (dof z), 0 where z is 0 (total is 0 there too: x is its mean)
    zero_type = T.Array("bool", z.type.ndim) if isinstance(z.type, T.Array) else (
        T.BOOL if isinstance(z.type, (T.Float, T.Const)) else T.ANY
    )
    zeros = b.call(operator.eq, z, 0.0, type=zero_type)
    scaled = b.call(operator.mul, dof, z, type=z.type)
    denominator = b.call(operator.add, scaled, zeros, type=z.type)
    return b.call(operator.truediv, total, denominator, type=z.type)




for _fn in (np.var, np.ndarray.var):
    frules.register(_fn, spread_tangent(False, "numpy.var"))
for _fn in (np.std, np.ndarray.std):
    frules.register(_fn, spread_tangent(True, "numpy.std"))


def ptp_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.ptp`` = max - min: the gradient of each, with ties split evenly; a scalar result
    with one maximum and one minimum needs no array."""
    z, axes, keepdims = call_reduction(f, x, args, kwargs, PTP_PARAMETERS)
    n = 2 + len(args) + len(kwargs)
    rdata = nothing(n)
    xp = x.primal
    if to_scalar(x, z) and xp.dtype.kind == "f":
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
            add_into(x.fdata, extreme_grad(xp, top, ge, axes, True))
            add_into(x.fdata, -extreme_grad(xp, bottom, ge, axes, True))
        return rdata

    return CoDual(z, zf), pullback


primitive(np.ptp, ARRAY, ...)(ptp_rrule)



# --------------------------------------------------------------------------------------------
# ptp: the tangent of max less that of min


def extreme_share(
    x: Array, dx: Array, fn: t.Callable[..., t.Any], axis: t.Any, keepdims: t.Any
) -> t.Any:
    """The tangent of ``fn(x, axis)`` (``np.max``, ``np.min``): the mean of the tangents of
    the tied extrema, as ``extreme_tangent`` has it."""
    chosen = x == fn(x, axis=axis, keepdims=True)
    count = np.sum(chosen, axis=axis, keepdims=keepdims)
    return np.sum(dx * chosen, axis=axis, keepdims=keepdims) / count


def ptp_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    where = option_positions(PTP_PARAMETERS, types, kwnames)
    if where is None:
        return None
    top, bottom = (extreme_tangent(fn)(types, kwnames, varied) for fn in (np.max, np.min))
    if isinstance(top, frules.Emit) and isinstance(bottom, frules.Emit):
        return frules.Emit(_difference_emit(top, bottom))
    n, total = len(types) - len(kwnames), len(types)

    def body(z: t.Any, x: Array, dx: Array, given: dict[str, t.Any]) -> t.Any:
        axis, keep = given.get("axis"), bool(given.get("keepdims", False))
        dz = extreme_share(x, dx, np.max, axis, keep) - extreme_share(x, dx, np.min, axis, keep)
        return as_scalar(z, dz)

    return array_tangent("numpy.ptp", where, n, total, body)


def _difference_emit(top: frules.Emit, bottom: frules.Emit) -> t.Callable[..., Value]:
    def emit(
        b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
    ) -> Value:
        if tangents[0] is None:
            return frules.zero(b, z)
        high = top.fn(b, z, args, tangents, kwargs)
        low = bottom.fn(b, z, args, tangents, kwargs)
        return b.call(operator.sub, high, low, type=z.type)

    return emit




frules.register(np.ptp, ptp_tangent)


def average_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.average(a, axis, weights)``: ``z = sum(a w) / sum(w)``, holomorphic in both, with
    ``dz/da = w / sum(w)`` and ``dz/dw = (a - z) / sum(w)``; 1-D weights along one axis are
    broadcast along it.  ``returned=True`` also gives ``sum(w)`` (broadcast to ``z``'s shape;
    the count without weights), whose derivative in each weight is 1."""
    bound = bind(AVERAGE_PARAMETERS, args, kwargs, {"axis": None, "weights": None}, "average")
    returned = bool(bound.get("returned"))
    ap = a.primal
    full = f.primal(ap, *(x.primal for x in args), **{k: v.primal for k, v in kwargs.items()})
    z = full[0] if returned else full
    axes = normalize_axes(bound["axis"], np.ndim(ap))
    keep = bound.get("keepdims", False)
    keepdims = isinstance(keep, (bool, np.bool_)) and bool(keep)
    w_index = operand_index(AVERAGE_PARAMETERS, args, kwargs, "weights")
    operands = (f, a, *args, *kwargs.values())
    w_cd = None if w_index is None or operands[w_index].primal is None else operands[w_index]
    w_back = None
    if w_cd is not None and isinstance(w_cd.primal, (list, tuple)):  # as NumPy converts them
        w_cd, w_back = as_array(w_cd)
    zf = new_fdata(full)
    n = len(operands)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        rdata = list(nothing(n))
        g, g_sum = part_cotangents(zf, dz, 2) if returned else (cotangent(zf, dz), None)
        if g is None and g_sum is None:
            return tuple(rdata)
        if w_cd is None:
            if needs(a) and g is not None:
                add_into(a.fdata, expand(g, axes, keepdims) / element_count(ap, axes))
            return tuple(rdata)
        wp = np.asarray(w_cd.primal)
        wb = weights_along(wp, ap, axes)
        total = np.sum(wb * np.ones_like(ap, dtype=wb.dtype), axis=axes, keepdims=True)
        ge = None if g is None else expand(g, axes, keepdims)
        if needs(a) and ge is not None:
            add_into(a.fdata, ge * conj(wb / total))
        if needs(w_cd) and w_index is not None:
            gw = np.zeros(np.shape(ap), np.result_type(wb, 1.0))
            if ge is not None:
                gw = gw + ge * conj((ap - expand(z, axes, keepdims)) / total)
            if g_sum is not None:
                gw = gw + expand(np.asarray(g_sum), axes, keepdims)  # (d sum(w) / dw = 1)
            spread = tuple(i for i in range(gw.ndim) if wb.shape[i] == 1)
            gw = np.sum(gw, axis=spread, keepdims=True)
            rdata[w_index] = send(w_cd, gw.reshape(wp.shape))
        if w_back is not None and w_index is not None:
            rdata[w_index] = w_back()
        return tuple(rdata)

    return CoDual(full, zf), pullback


primitive(np.average, ARRAY, ...)(average_rrule)



# --------------------------------------------------------------------------------------------
# average: sum(a w) / sum(w), linear in a, and in w through (a - z) / sum(w)


def weights_along(w: Array, a: Array, axes: tuple[int, ...]) -> Array:
    """Weights as they multiply ``a``: their own shape, or 1-D along the one reduced axis."""
    if w.shape == a.shape:
        return w
    shape = [1] * a.ndim
    shape[axes[0]] = w.size
    return w.reshape(shape)


def average_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``np.average``: ``sum(da w) / sum(w) + sum((a - z) dw) / sum(w)`` (the reverse rule's
    partials); with weights that have no tangent (or none), ``average`` of ``da`` itself."""
    where = option_positions(AVERAGE_PARAMETERS, types, kwnames, returned=True)
    if where is None:
        return None
    if "returned" in where and not (is_none(types[where["returned"]]) or (
        isinstance(types[where["returned"]], T.Const)
        and types[where["returned"]].value in (False, True)  # type: ignore[attr-defined]
    )):
        return None  # (returned= of a value the build could not tell)
    w = where.get("weights")
    if w is not None and is_none(types[w]):
        w = None
    if w is not None and not frules.real_operand(types[w]):
        return None
    returned = "returned" in where and getattr(types[where["returned"]], "value", False) is True
    if (w is None or not varied[w]) and static_types(types) and not returned:
        return frules.Emit(_linear_emit(np.average))
    return _average_function(where, len(types) - len(kwnames), len(types))


def _linear_emit(fn: t.Callable[..., t.Any]) -> t.Callable[..., Value]:
    def emit(
        b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
    ) -> Value:
        d = tangents[0]
        if d is None:
            return frules.zero(b, z)
        return b.call(fn, d, *args[1:], kwargs=kwargs, type=z.type)

    return emit


def _average_function(where: Where, n: int, total: int) -> frules.Tangent:
    def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        ops, ds = split_tangents(a, n, total)
        given = given_options(where, n, ops, kwargs)
        x, weights = np.asarray(ops[0]), given.get("weights")
        refuse_complex("numpy.average", x, weights, z)
        axes, keepdims = tangent_axes(given, x)
        if bool(given.get("returned")):  # (the average, and the sum of the weights)
            avg, weight_sum = z
            d_avg = _average_tangent(avg, x, ds, given, where, axes, keepdims)
            dw = None if given.get("weights") is None else ds[where["weights"]]
            d_total = None
            if dw is not None:
                d_sum = np.sum(weights_along(np.asarray(dw), x, axes) * np.ones_like(x), axis=axes, keepdims=keepdims)
                d_total = np.broadcast_to(d_sum, np.shape(weight_sum))
            return (frules.like(avg, d_avg), frules.like(weight_sum, d_total))
        return frules.like(z, _average_tangent(z, x, ds, given, where, axes, keepdims))

    return tangent


def _average_tangent(
    z: t.Any, x: Array, ds: t.Sequence[t.Any], given: dict[str, t.Any], where: Where,
    axes: tuple[int, ...], keepdims: t.Any,  # (a bool: NumPy 2.5's stubs take Literals only)
) -> t.Any:
    """The average's tangent (None for zero)."""
    weights = given.get("weights")
    dx = None if ds[0] is None else np.asarray(ds[0])
    if weights is None:
        return None if dx is None else np.mean(dx, axis=axes, keepdims=keepdims)
    wb = weights_along(np.asarray(weights), x, axes)
    dw = ds[where["weights"]]
    terms = [] if dx is None else [dx * wb]
    if dw is not None:
        terms.append((x - expand(z, axes, keepdims)) * weights_along(np.asarray(dw), x, axes))
    if not terms:
        return None
    count = np.sum(wb * np.ones_like(x, dtype=wb.dtype), axis=axes, keepdims=keepdims)
    return np.sum(sum(terms), axis=axes, keepdims=keepdims) / count




frules.register(np.average, average_tangent)


def nan_reduction_rule(mean: bool) -> t.Callable[..., RuleResult]:
    """``nansum`` and ``nanmean``: NaNs count as absent; their elements get no gradient, and
    ``nanmean`` divides by the number of the others."""
    names = MEAN_PARAMETERS if mean else NANSUM_PARAMETERS

    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        z, axes, keepdims = call_reduction(f, x, args, kwargs, names)
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


# --------------------------------------------------------------------------------------------
# nansum, nanmean: the NaNs' tangents left out


def nan_tangent(mean: bool) -> frules.Maker:
    names = MEAN_PARAMETERS if mean else NANSUM_PARAMETERS
    what = "numpy.nanmean" if mean else "numpy.nansum"

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> frules.Tangent | frules.Emit | None:
        where = option_positions(names, types, kwnames)
        if where is None:
            return None
        plain = "dtype" not in where or is_none(types[where["dtype"]])
        if isinstance(types[0], T.Array) and static_types(types) and plain:
            return frules.Emit(_nan_emit(mean, where))
        n, total = len(types) - len(kwnames), len(types)

        def body(z: t.Any, x: Array, dx: Array, given: dict[str, t.Any]) -> t.Any:
            axes, keepdims = tangent_axes(given, x)
            present = ~np.isnan(x)
            kept = np.where(present, dx, 0.0)
            dz = np.sum(kept, axis=axes, keepdims=keepdims, dtype=given.get("dtype"))
            if mean:
                dz = dz / np.maximum(np.sum(present, axis=axes, keepdims=keepdims), 1)
            return as_scalar(z, dz)

        return array_tangent(what, where, n, total, body)

    return make


def _nan_emit(mean: bool, where: Where) -> t.Callable[..., Value]:
    def emit(
        b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
    ) -> Value:
        x, dx = args[0], tangents[0]
        if dx is None:
            return frules.zero(b, z)
        operands = [*args, *kwargs.values()]
        named = {
            "axis": operands[where["axis"]] if "axis" in where else Constant(None),
            "keepdims": operands[where["keepdims"]] if "keepdims" in where else Constant(False),
        }
        ndim = x.type.ndim if isinstance(x.type, T.Array) else None
        nan = b.call(np.isnan, x, type=T.Array("bool", ndim))
        kept = b.call(np.where, nan, 0.0, dx, type=dx.type)
        total = b.call(np.sum, kept, kwargs=named, type=z.type)
        if not mean:
            return total
        present = b.call(operator.invert, nan, type=T.Array("bool", ndim))
        count = b.call(np.sum, present, kwargs=named, type=T.ANY)
        some = b.call(np.maximum, count, 1, type=T.ANY)
        return b.call(operator.truediv, total, some, type=z.type)

    return emit




frules.register(np.nansum, nan_tangent(False))
frules.register(np.nanmean, nan_tangent(True))
