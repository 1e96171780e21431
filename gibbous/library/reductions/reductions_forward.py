"""Forward rules of the reductions and scans whose reverse rules are in ``numpy_reductions``:
``var`` and ``std``, ``prod``, ``cumprod``, ``average``, ``nansum``, ``nanmean`` and ``ptp``,
as NumPy functions and ndarray methods, of arrays and of the lists and tuples NumPy makes
arrays of.

Each tangent is the transpose of its reverse rule's gradient, with its conventions: ``prod``
and ``cumprod`` exact with zeros (the running products of ``prod_of_others``, a recurrence
along the axis), ``std``'s tangent 0 where the result is 0, NaNs without a tangent in
``nansum``/``nanmean``, ``ptp`` the mean of the tied extrema's tangents, a float ``ddof`` with
a derivative of its own.  Of an array whose operand types are known, ``var``, ``std``,
``nansum``, ``nanmean``, ``ptp``, ``average`` with constant weights and ``prod`` over one axis
or all are written out (``Emit``: reverse mode differentiates them again, for Hessian-vector
products); the others are tangent functions.  What the reverse rules refuse (``where=``,
``initial=``, ``mean=``, ``returned=``; ``out=``, which the forward transform takes as the call
without it, then a copy) the makers refuse, and complex values are refused at run time.
"""

from __future__ import annotations

import builtins
import operator
import typing as t

import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules import frules as FR
from gibbous.rules.emit import (
    added,
    is_none,
    operand_positions,
    real_type,
    refuse_complex,
    split_tangents,
    static_types,
)
from gibbous.library.common import Array
from gibbous.library.reductions.reductions import (
    AVERAGE_PARAMETERS,
    CUMSUM_PARAMETERS,
    MEAN_PARAMETERS,
    NANSUM_PARAMETERS,
    PTP_PARAMETERS,
    SUM_PARAMETERS,
    VAR_PARAMETERS,
    element_count,
    expand,
    extreme_tangent,
    normalize_axes,
    prod_of_others,
)

#: parameters whose use the reverse rules refuse, and the value each may be passed (besides
#: None): their default
_REFUSED = {"out": None, "where": True, "initial": None, "mean": None, "returned": False}

Where = dict[str, int]  # a parameter's operand index (``FR.operand_positions``)


def _where(
    names: tuple[str, ...], types: tuple[T.Type, ...], kwnames: tuple[str, ...]
) -> Where | None:
    """The operands of a call ``f(x, ...)`` by parameter name, if the rule takes them all."""
    where = operand_positions(names, len(types) - len(kwnames), kwnames)
    if where is None or not FR.real_operand(types[0]):
        return None
    refused = ((types[where[name]], default) for name, default in _REFUSED.items() if name in where)
    if not all(is_none(ty) or isinstance(ty, T.Const) and ty.value is d for ty, d in refused):
        return None
    return where


def _given(
    where: Where, n: int, ops: t.Sequence[t.Any], kwargs: dict[str, t.Any]
) -> dict[str, t.Any]:
    """The values of the parameters a call passed, by name."""
    return {name: ops[i] if i < n else kwargs[name] for name, i in where.items()}


def _axes(given: dict[str, t.Any], x: Array) -> tuple[tuple[int, ...], t.Any]:
    keep = given.get("keepdims", False)
    keepdims = isinstance(keep, (bool, np.bool_)) and bool(keep)
    return normalize_axes(given.get("axis"), x.ndim), keepdims


#: ``body(z, x, dx, given) -> dz`` of a reduction's tangent function, ``given`` its parameters
Body = t.Callable[[t.Any, Array, Array, dict[str, t.Any]], t.Any]


def _array_tangent(what: str, where: Where, n: int, total: int, body: Body) -> FR.Tangent:
    """The tangent function of a call of ``what`` with ``n`` positional operands (``total``
    in all): its array operand's, zeros where it has none, complex values refused; the rest
    is ``body``'s."""

    def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        ops, ds = split_tangents(a, n, total)
        x = np.asarray(ops[0])
        refuse_complex(what, x, z)
        if ds[0] is None:
            return FR.like(z, None)
        return FR.like(z, body(z, x, np.asarray(ds[0]), _given(where, n, ops, kwargs)))

    return tangent


def _scalar(z: t.Any, dz: t.Any) -> t.Any:
    """A 0-d tangent of a scalar result as a scalar (``np.prod(2.5)`` is a NumPy float)."""
    if isinstance(dz, np.ndarray) and dz.ndim == 0 and not isinstance(z, np.ndarray):
        return dz[()]
    return dz


# --------------------------------------------------------------------------------------------
# var, std: 2 <x - mean, dx> / (N - ddof), and std's over 2 std (0 where std is 0)


def _dof_name(where: Where) -> str | None:
    return next((name for name in ("correction", "ddof") if name in where), None)


def spread_tangent(is_std: bool, what: str) -> FR.Maker:
    """The forward rule of ``var`` (``std``, ``is_std``); ``ddof``/``correction`` a float has
    a tangent: ``var`` is ``S / (N - ddof)``."""

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> FR.Tangent | FR.Emit | None:
        where = _where(VAR_PARAMETERS, types, kwnames)
        if where is None or "ddof" in where and "correction" in where:
            return None
        dof = _dof_name(where)
        if dof is not None and not real_type(types[where[dof]]):
            return None
        n = len(types) - len(kwnames)
        plain = "dtype" not in where or is_none(types[where["dtype"]])
        if isinstance(types[0], T.Array) and static_types(types) and plain:
            return FR.Emit(_spread_emit(is_std, where, dof))
        return _spread_function(is_std, what, where, dof, n, len(types))

    return make


def _spread_function(
    is_std: bool, what: str, where: Where, dof_name: str | None, n: int, total: int
) -> FR.Tangent:
    def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        ops, ds = split_tangents(a, n, total)
        given = _given(where, n, ops, kwargs)
        x = np.asarray(ops[0])
        refuse_complex(what, x, z)
        axes, keepdims = _axes(given, x)
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
        return FR.like(z, dz)

    return tangent


def _spread_emit(is_std: bool, where: Where, dof_name: str | None) -> t.Callable[..., Value]:
    """``_spread_function``'s tangent written out: the count N from the sizes of the operand
    and the result (``size(x) // size(z)``), so the axes need not be known."""

    def emit(
        b: Builder, z: Value, args: FR.Values, tangents: FR.Tangents, kwargs: FR.Keywords
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


# --------------------------------------------------------------------------------------------
# prod, cumprod: the products of the other factors, exact with zeros


def prod_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> FR.Tangent | FR.Emit | None:
    """``np.prod``: the sum of ``dx`` times the product of the other elements of its
    reduction (``prod_of_others``, the reverse rule's)."""
    where = _where(SUM_PARAMETERS, types, kwnames)
    if where is None:
        return None
    n, total = len(types) - len(kwnames), len(types)
    if _prod_written(types, where):
        return FR.Emit(_prod_emit(where))

    def body(z: t.Any, x: Array, dx: Array, given: dict[str, t.Any]) -> t.Any:
        axes, keepdims = _axes(given, x)
        terms = dx * prod_of_others(x, axes)
        return _scalar(z, np.sum(terms, axis=axes, keepdims=keepdims, dtype=given.get("dtype")))

    return _array_tangent("numpy.prod", where, n, total, body)


def _prod_written(types: tuple[T.Type, ...], where: Where) -> bool:
    """Whether ``np.prod``'s tangent can be written out: over one axis or all of them, known
    when the rule is built, of an array whose dimensions are known."""
    x = types[0]
    if not (isinstance(x, T.Array) and x.ndim and static_types(types)):
        return False
    if "dtype" in where and not is_none(types[where["dtype"]]):
        return False
    options = [types[where[k]] for k in ("axis", "keepdims") if k in where]
    if not all(isinstance(ty, T.Const) or is_none(ty) for ty in options):
        return False
    axis = types[where["axis"]] if "axis" in where else T.NONE
    return is_none(axis) or isinstance(axis, T.Const) and isinstance(axis.value, int)


_LEADING = (Ellipsis, slice(None, 1))  # x[..., :1]
_BUT_LAST = (Ellipsis, slice(None, -1))
_BUT_FIRST = (Ellipsis, slice(1, None))


def _prod_emit(where: Where) -> t.Callable[..., Value]:
    """``prod_of_others`` written out, along the last axis of ``x`` raveled (``axis=None``)
    or with its axis moved last: the running products from the left and from the right."""

    def emit(
        b: Builder, z: Value, args: FR.Values, tangents: FR.Tangents, kwargs: FR.Keywords
    ) -> Value:
        x, dx = args[0], tangents[0]
        if dx is None:
            return FR.zero(b, z)
        operands = [*args, *kwargs.values()]
        axis = t.cast(Constant, operands[where["axis"]]).value if "axis" in where else None
        keep = "keepdims" in where and bool(t.cast(Constant, operands[where["keepdims"]]).value)
        array = t.cast(T.Array, x.type)
        ndim = array.ndim
        assert ndim is not None
        row = T.Array(array.dtype, 1) if axis is None else array
        if axis is None:
            m, dm = (b.call(np.ravel, v, type=row) for v in (x, dx))
        else:
            m, dm = (b.call(np.moveaxis, v, axis, -1, type=row) for v in (x, dx))
        ones = b.call(np.ones_like, b.call(operator.getitem, m, _LEADING, type=row), type=row)
        left = _running(b, ones, b.call(operator.getitem, m, _BUT_LAST, type=row), row)
        rest = b.call(np.flip, b.call(operator.getitem, m, _BUT_FIRST, type=row), -1, type=row)
        right = b.call(np.flip, _running(b, ones, rest, row), -1, type=row)
        others = b.call(operator.mul, left, right, type=row)
        terms = b.call(operator.mul, dm, others, type=row)
        scalar = T.Float(row.dtype) if row.dtype else T.FLOAT
        reduced = scalar if row.ndim == 1 else T.Array(row.dtype, ndim - 1)
        total = b.call(np.sum, terms, kwargs={"axis": Constant(-1)}, type=reduced)
        if keep:
            kept = tuple(range(ndim)) if axis is None else axis
            total = b.call(np.expand_dims, total, kept, type=z.type)
        return FR.fit(b, total, z)

    return emit


def _running(b: Builder, ones: Value, rest: Value, row: T.Type) -> Value:
    """The products of ``ones`` then ``rest`` along the last axis, each before its place."""
    pair = b.call(runtime.make_tuple, ones, rest, type=T.Tuple((row, row)))
    joined = b.call(np.concatenate, pair, kwargs={"axis": Constant(-1)}, type=row)
    return b.call(np.cumprod, joined, kwargs={"axis": Constant(-1)}, type=row)


def cumprod_tangent_of(x: Array, z: Array, dx: Array, axis: int) -> Array:
    """The tangent of ``z = cumprod(x)`` along ``axis`` (``cumprod_grad`` transposed):
    without zeros ``z`` times the running sum of ``dx / x``; with zeros exact, by the
    recurrence ``dz_i = dz_(i-1) x_i + z_(i-1) dx_i``."""
    if x.size == 0:
        return np.zeros(z.shape, np.result_type(z, dx))
    if np.all(x != 0):
        return t.cast(Array, z * np.cumsum(dx / x, axis=axis))
    xm, zm = np.moveaxis(x, axis, 0), np.moveaxis(z, axis, 0)
    dm = np.moveaxis(np.broadcast_to(dx, x.shape), axis, 0)
    out = np.empty(xm.shape, np.result_type(zm, dm))
    out[0] = dm[0]
    for i in range(1, len(xm)):
        out[i] = out[i - 1] * xm[i] + zm[i - 1] * dm[i]
    return np.moveaxis(out, 0, axis)


def cumprod_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> FR.Tangent | FR.Emit | None:
    where = _where(CUMSUM_PARAMETERS, types, kwnames)
    if where is None:
        return None
    n, total = len(types) - len(kwnames), len(types)

    def body(z: t.Any, x: Array, dx: Array, given: dict[str, t.Any]) -> t.Any:
        axis = given.get("axis")
        if axis is None:  # (over the flattened array)
            return cumprod_tangent_of(x.ravel(), z, dx.ravel(), 0)
        return cumprod_tangent_of(x, z, dx, normalize_axes(axis, x.ndim)[0])

    return _array_tangent("numpy.cumprod", where, n, total, body)


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
) -> FR.Tangent | FR.Emit | None:
    """``np.average``: ``sum(da w) / sum(w) + sum((a - z) dw) / sum(w)`` (the reverse rule's
    partials); with weights that have no tangent (or none), ``average`` of ``da`` itself."""
    where = _where(AVERAGE_PARAMETERS, types, kwnames)
    if where is None:
        return None
    w = where.get("weights")
    if w is not None and is_none(types[w]):
        w = None
    if w is not None and not FR.real_operand(types[w]):
        return None
    if (w is None or not varied[w]) and static_types(types):
        return FR.Emit(_linear_emit(np.average))
    return _average_function(where, len(types) - len(kwnames), len(types))


def _linear_emit(fn: t.Callable[..., t.Any]) -> t.Callable[..., Value]:
    def emit(
        b: Builder, z: Value, args: FR.Values, tangents: FR.Tangents, kwargs: FR.Keywords
    ) -> Value:
        d = tangents[0]
        if d is None:
            return FR.zero(b, z)
        return b.call(fn, d, *args[1:], kwargs=kwargs, type=z.type)

    return emit


def _average_function(where: Where, n: int, total: int) -> FR.Tangent:
    def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        ops, ds = split_tangents(a, n, total)
        given = _given(where, n, ops, kwargs)
        x, weights = np.asarray(ops[0]), given.get("weights")
        refuse_complex("numpy.average", x, weights, z)
        axes, keepdims = _axes(given, x)
        dx = None if ds[0] is None else np.asarray(ds[0])
        if weights is None:
            return FR.like(z, None if dx is None else np.mean(dx, axis=axes, keepdims=keepdims))
        wb = weights_along(np.asarray(weights), x, axes)
        dw = ds[where["weights"]]
        terms = [] if dx is None else [dx * wb]
        if dw is not None:
            terms.append((x - expand(z, axes, keepdims)) * weights_along(np.asarray(dw), x, axes))
        if not terms:
            return FR.like(z, None)
        count = np.sum(wb * np.ones_like(x, dtype=wb.dtype), axis=axes, keepdims=keepdims)
        return FR.like(z, np.sum(sum(terms), axis=axes, keepdims=keepdims) / count)

    return tangent


# --------------------------------------------------------------------------------------------
# nansum, nanmean: the NaNs' tangents left out


def nan_tangent(mean: bool) -> FR.Maker:
    names = MEAN_PARAMETERS if mean else NANSUM_PARAMETERS
    what = "numpy.nanmean" if mean else "numpy.nansum"

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> FR.Tangent | FR.Emit | None:
        where = _where(names, types, kwnames)
        if where is None:
            return None
        plain = "dtype" not in where or is_none(types[where["dtype"]])
        if isinstance(types[0], T.Array) and static_types(types) and plain:
            return FR.Emit(_nan_emit(mean, where))
        n, total = len(types) - len(kwnames), len(types)

        def body(z: t.Any, x: Array, dx: Array, given: dict[str, t.Any]) -> t.Any:
            axes, keepdims = _axes(given, x)
            present = ~np.isnan(x)
            kept = np.where(present, dx, 0.0)
            dz = np.sum(kept, axis=axes, keepdims=keepdims, dtype=given.get("dtype"))
            if mean:
                dz = dz / np.maximum(np.sum(present, axis=axes, keepdims=keepdims), 1)
            return _scalar(z, dz)

        return _array_tangent(what, where, n, total, body)

    return make


def _nan_emit(mean: bool, where: Where) -> t.Callable[..., Value]:
    def emit(
        b: Builder, z: Value, args: FR.Values, tangents: FR.Tangents, kwargs: FR.Keywords
    ) -> Value:
        x, dx = args[0], tangents[0]
        if dx is None:
            return FR.zero(b, z)
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
) -> FR.Tangent | FR.Emit | None:
    where = _where(PTP_PARAMETERS, types, kwnames)
    if where is None:
        return None
    top, bottom = (extreme_tangent(fn)(types, kwnames, varied) for fn in (np.max, np.min))
    if isinstance(top, FR.Emit) and isinstance(bottom, FR.Emit):
        return FR.Emit(_difference_emit(top, bottom))
    n, total = len(types) - len(kwnames), len(types)

    def body(z: t.Any, x: Array, dx: Array, given: dict[str, t.Any]) -> t.Any:
        axis, keep = given.get("axis"), bool(given.get("keepdims", False))
        dz = extreme_share(x, dx, np.max, axis, keep) - extreme_share(x, dx, np.min, axis, keep)
        return _scalar(z, dz)

    return _array_tangent("numpy.ptp", where, n, total, body)


def _difference_emit(top: FR.Emit, bottom: FR.Emit) -> t.Callable[..., Value]:
    def emit(
        b: Builder, z: Value, args: FR.Values, tangents: FR.Tangents, kwargs: FR.Keywords
    ) -> Value:
        if tangents[0] is None:
            return FR.zero(b, z)
        high = top.fn(b, z, args, tangents, kwargs)
        low = bottom.fn(b, z, args, tangents, kwargs)
        return b.call(operator.sub, high, low, type=z.type)

    return emit


_fn: t.Any
for _fn in (np.var, np.ndarray.var):
    FR.register(_fn, spread_tangent(False, "numpy.var"))
for _fn in (np.std, np.ndarray.std):
    FR.register(_fn, spread_tangent(True, "numpy.std"))
for _fn in (np.prod, np.ndarray.prod):
    FR.register(_fn, prod_tangent)
for _fn in (np.cumprod, np.ndarray.cumprod):
    FR.register(_fn, cumprod_tangent)
FR.register(np.average, average_tangent)
FR.register(np.nansum, nan_tangent(False))
FR.register(np.nanmean, nan_tangent(True))
FR.register(np.ptp, ptp_tangent)
