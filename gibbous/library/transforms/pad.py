"""``np.pad`` in every mode: "constant" (``constant_values`` differentiable: a scalar, a pair,
a pair per axis), "edge", "reflect" and "symmetric" (``reflect_type`` "even" or "odd"),
"wrap", "linear_ramp" (``end_values`` differentiable), "mean", "maximum", "minimum",
"median" (``stat_length``), "empty"; ``pad_width`` as NumPy takes it (a dict of axes too).

**One axis after another.**  NumPy pads axis 0, then axis 1 of the result, and so on: the
padding of axis ``k`` sees the earlier axes padded and the later ones not (its ``_view_roi``),
so a corner takes the value of the last axis that pads it.  The derivative is that chain
(``Padding``): one ``AxisPad`` per padded axis, the pullback running them last to first, each
sending the cotangent of its interior to its input and that of its two pad areas back through
what made them:

* **linear modes** (constant, edge, reflect, symmetric, wrap, linear_ramp, empty): a pad area
  is a fixed linear combination of a few entries of the axis (plus the fill value times a
  fixed weight, for constant and linear_ramp).  The combination is NumPy's own: ``np.pad``
  of the unit vectors of those entries (``LinearAxis``: the entries within ``max(before,
  after) + 1`` of either end, all of them for a short axis; no other entry reaches a pad
  area in these modes), so odd reflections and widths longer than the axis are what NumPy
  does.  The adjoint multiplies each pad area's cotangent by the transposed combination.
  "empty" leaves the pad areas undefined: they get no derivative (zero tangents);
* **statistics** (mean, maximum, minimum, median): every entry of a pad area is one
  statistic of a window of the axis (``stat_length`` entries from its end): the window's mean,
  its maximum or minimum (the derivative split evenly among ties, as ``np.max``'s), its median
  (the middle entry, or the two middle ones halved, of a stable sort).  ``StatAxis`` holds
  each window's weights, per row of the other axes (a maximum is chosen row by row); the
  adjoint adds each pad area's summed cotangent into its window by them.

Forward mode: every linear mode is linear in ``x`` and the fill value together, so its tangent
is ``np.pad`` of the tangents (zeros for a missing one; "empty" pads its tangent with zeros);
the mean is linear too; maximum, minimum and median take ``pad_selected``, the same weights
applied to the tangent, a primitive whose reverse rule is the adjoint (so a Hessian-vector
product differentiates it again).  Refused: a function as ``mode`` (NumPy's legacy form).
"""

from __future__ import annotations

import functools
import typing as t

import attrs
import numpy as np

from gibbous.infer.typerules.table import register_type_rule
from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.library.common import (
    ARRAY,
    CD,
    NT,
    Array,
    RuleResult,
    bind,
    cotangent,
    linear_rrule,
    needs,
    new_fdata,
    send,
    to_shape,
    zero_for,
)
from gibbous.library.items import send_to_value
from gibbous.rules import frules
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual

LINEAR = frozenset({"constant", "edge", "reflect", "symmetric", "wrap", "linear_ramp", "empty"})
STATISTICS = frozenset({"mean", "maximum", "minimum", "median"})
SELECTIONS = STATISTICS - {"mean"}  # (not linear: the entry chosen depends on the values)
#: The differentiable fill value of a mode, by its keyword.
FILLS = {"constant": "constant_values", "linear_ramp": "end_values"}
_PARAMETERS = ("pad_width", "mode", "constant_values", "end_values", "stat_length", "reflect_type")

#: ``np.pad`` called with modes and options held as values (its stubs overload on literals).
_np_pad: t.Callable[..., Array] = np.pad


def widths_of(pad_width: object, ndim: int) -> list[tuple[int, int]]:
    """``pad_width`` as NumPy reads it: ``(before, after)`` per axis (a dict names axes)."""
    if isinstance(pad_width, dict):
        pairs: list[t.Any] = [(0, 0)] * ndim
        for axis, width in pad_width.items():
            pairs[axis] = (width, width) if isinstance(width, int) else tuple(width)
        pad_width = pairs
    table = np.broadcast_to(np.asarray(pad_width), (ndim, 2)).tolist()
    return [(int(b), int(a)) for b, a in table]


def _lengths(stat_length: object, ndim: int) -> list[tuple[int | None, int | None]]:
    if stat_length is None:
        return [(None, None)] * ndim
    table = np.broadcast_to(np.round(np.asarray(stat_length)).astype(np.intp), (ndim, 2))
    return [(int(b), int(a)) for b, a in table.tolist()]


def _along(axis: int, index: t.Any) -> tuple[t.Any, ...]:
    return (slice(None),) * axis + (index,)


@attrs.frozen
class Coefficients:
    """How a linear mode pads an axis of ``n`` entries by ``(before, after)``: the pad areas
    are ``left @ x[..., support]`` and ``right @ ...`` (a row per pad entry), plus the fill
    values times ``fill_left`` / ``fill_right`` (None: the mode has no fill value).  Where
    every pad entry copies one entry (edge, wrap, the even reflections), ``gather`` says which
    the adjoint adds into, without the products: the pad entries' order by source, where each
    source's run starts in it, and the sources.  Read-only: shared by every call of the same
    shapes (``coefficients``)."""

    support: Array
    left: Array
    right: Array
    gather: tuple[Array, Array, Array] | None
    fill_left: Array | None
    fill_right: Array | None


@functools.lru_cache(maxsize=256)
def coefficients(n: int, b: int, a: int, mode: str, reflect_type: str | None) -> Coefficients:
    """NumPy's own padding of the unit vectors of the entries that can reach a pad area (those
    within ``max(b, a) + 1`` of either end: a reflection reaches ``b`` entries in, a wrap ``b``
    entries from the other end, a ramp or an edge the end itself; all of a short axis), kept
    where they do."""
    reach = max(b, a) + 1
    ends = np.arange(reach)
    support = np.arange(n) if n <= 2 * reach else np.concatenate([ends, n - reach + ends])
    k = support.size
    widths = ((0, 0), (b, a))
    fill = FILLS.get(mode)
    options: dict[str, t.Any] = {} if reflect_type is None else {"reflect_type": reflect_type}
    if fill is not None:
        options[fill] = 0  # (the fill value's part, apart: fill_left and fill_right)
    if mode == "empty":  # (undefined values: no derivative)
        padded = np.zeros((k, n + b + a))
    else:
        probe = np.zeros((k, n))
        probe[np.arange(k), support] = 1.0
        padded = _np_pad(probe, widths, mode, **options)
    areas = np.concatenate([padded[:, :b], padded[:, b + n :]], axis=1).T  # (a row per pad entry)
    kept = np.flatnonzero(np.any(areas != 0, axis=0))
    support, areas = support[kept], np.ascontiguousarray(areas[:, kept])
    gather = None
    if areas.size and np.all(np.sum(areas != 0, axis=1) == 1) and np.all(areas.max(axis=1) == 1):
        sources = support[np.argmax(areas, axis=1)]
        order = np.argsort(sources, kind="stable")
        ordered = sources[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        gather = (order, starts, ordered[starts])
    fill_left = fill_right = None
    if fill is not None:
        zero = np.zeros((1, n))
        fill_left = _np_pad(zero, widths, mode, **{fill: ((0, 0), (1, 0))})[0, :b]
        fill_right = _np_pad(zero, widths, mode, **{fill: ((0, 0), (0, 1))})[0, b + n :]
    made = Coefficients(support, areas[:b], areas[b:], gather, fill_left, fill_right)
    for array in (made.support, made.left, made.right, *(gather or ()), made.fill_left, made.fill_right):
        if array is not None:
            array.flags.writeable = False
    return made


@attrs.frozen
class LinearAxis:
    """Axis ``axis`` (``n`` entries) padded by ``before`` and ``after`` in a linear mode."""

    axis: int
    n: int
    before: int
    after: int
    how: Coefficients

    def back(self, g: Array) -> tuple[Array, tuple[t.Any, t.Any]]:
        """The cotangent of the input (a view of ``g``, which it writes into: ``Padding.back``
        works on a copy of the result's), and of the two fill values, for the result's ``g``."""
        b, n, how = self.before, self.n, self.how
        moved = np.moveaxis(g, self.axis, -1)
        gl, gr = moved[..., :b], moved[..., b + n :]
        inner = moved[..., b : b + n]
        if how.gather is not None:  # (each source's pad entries summed, then added once)
            order, starts, sources = how.gather
            areas = np.concatenate([gl, gr], axis=-1)
            inner[..., sources] += np.add.reduceat(areas[..., order], starts, axis=-1)
        elif how.support.size:
            # (contiguous copies of the pad areas, small: a product of strided views skips BLAS)
            gl_, gr_ = np.ascontiguousarray(gl), np.ascontiguousarray(gr)
            inner[..., how.support] += gl_ @ how.left + gr_ @ how.right
        fills: tuple[t.Any, t.Any] = (0.0, 0.0)
        if how.fill_left is not None and how.fill_right is not None:
            fills = (np.sum(gl @ how.fill_left), np.sum(gr @ how.fill_right))
        return np.moveaxis(inner, -1, self.axis), fills


@attrs.frozen
class Mean:
    """A window's mean: every entry weighs ``1 / size``."""

    size: int

    def add(self, window: Array, total: Array) -> None:
        """Add ``total`` (one per row, the axis kept) into ``window`` by the weights."""
        window += total / self.size

    def value(self, window: Array) -> Array:
        """The statistic's tangent along ``window`` (one per row, the axis kept)."""
        total: Array = np.sum(window, axis=-1, keepdims=True)
        return total / self.size


@attrs.frozen
class Entries:
    """A statistic that chooses entries of the window, row by row: ``at`` (an index of the
    window, each entry once) with weights ``share`` (a maximum's ties share it evenly, a
    median takes its middle entry or half of each of the two)."""

    at: tuple[Array, ...]
    share: Array

    @classmethod
    def of(cls, mode: str, chunk: Array) -> Entries:
        if mode in ("maximum", "minimum"):
            extreme = (np.max if mode == "maximum" else np.min)(chunk, axis=-1, keepdims=True)
            chosen = chunk == extreme
            at = np.nonzero(chosen)
            counts = np.sum(chosen, axis=-1)
            return cls(at, 1.0 / counts[at[:-1]])
        size = chunk.shape[-1]  # the median: the middle of a stable sort
        order = np.argsort(chunk, axis=-1, kind="stable")
        rows = tuple(i.reshape(-1) for i in np.indices(chunk.shape[:-1]))  # (none for 1-d)
        middles = sorted({(size - 1) // 2, size // 2})
        share = 1.0 / len(middles)
        columns = [order[..., m].reshape(-1) for m in middles]
        at = tuple(np.concatenate([r] * len(middles)) for r in rows) + (np.concatenate(columns),)
        return cls(at, np.full(at[-1].shape, share))

    def add(self, window: Array, total: Array) -> None:
        window[self.at] += total[..., 0][self.at[:-1]] * self.share

    def value(self, window: Array) -> Array:
        picked: Array = window[self.at] * self.share
        if window.ndim == 1:
            return np.sum(picked, keepdims=True)
        out = np.zeros(window.shape[:-1], dtype=picked.dtype)
        np.add.at(out, self.at[:-1], picked)
        return out[..., None]


Statistic = Mean | Entries


@attrs.frozen
class StatAxis:
    """Axis ``axis`` padded by a statistic of a window at each end: every entry of a pad area
    is its window's statistic.  With the whole axis as both windows (no ``stat_length``),
    ``same``: one window, one statistic for both areas (as NumPy computes it once)."""

    axis: int
    n: int
    before: int
    after: int
    windows: tuple[slice, slice]
    statistics: tuple[Statistic, Statistic]
    same: bool

    @classmethod
    def make(
        cls, axis: int, z: Array, b: int, a: int, mode: str, lengths: tuple[int | None, int | None]
    ) -> StatAxis:
        n = z.shape[axis]
        ll, lr = (n if length is None or length > n else length for length in lengths)
        windows = (slice(0, ll), slice(n - lr, n))
        moved = np.moveaxis(z, axis, -1)

        def statistic(window: slice) -> Statistic:
            chunk = moved[..., window]
            return Mean(chunk.shape[-1]) if mode == "mean" else Entries.of(mode, chunk)

        same = ll == lr == n
        left = statistic(windows[0])
        return cls(axis, n, b, a, windows, (left, left if same else statistic(windows[1])), same)

    def back(self, g: Array) -> tuple[Array, tuple[t.Any, t.Any]]:
        """As ``LinearAxis.back`` (writing into ``g``); no fill values."""
        b, n = self.before, self.n
        moved = np.moveaxis(g, self.axis, -1)
        inner = moved[..., b : b + n]
        sums = [np.sum(area, axis=-1, keepdims=True) for area in (moved[..., :b], moved[..., b + n :])]
        if self.same:
            self.statistics[0].add(inner, sums[0] + sums[1])
        else:
            for window, statistic, total in zip(self.windows, self.statistics, sums):
                statistic.add(inner[..., window], total)
        return np.moveaxis(inner, -1, self.axis), (0.0, 0.0)

    def tangent(self, dz: Array) -> Array:
        """The tangent of the result along the input's ``dz``."""
        moved = np.moveaxis(dz, self.axis, -1)
        values = [s.value(moved[..., w]) for w, s in zip(self.windows, self.statistics)]
        if self.same:
            values[1] = values[0]
        areas = [np.broadcast_to(v, (*v.shape[:-1], width)) for v, width in zip(values, (self.before, self.after))]
        joined = np.concatenate([areas[0], moved, areas[1]], axis=-1, dtype=moved.dtype)
        return np.moveaxis(joined, -1, self.axis)


AxisPad = LinearAxis | StatAxis


@attrs.frozen
class Padding:
    """``np.pad(x, ...)`` as the chain of its axes' paddings (module docstring)."""

    axes: tuple[AxisPad, ...]
    ndim: int

    @classmethod
    def of(cls, x: Array, options: dict[str, t.Any]) -> Padding:
        mode = t.cast(str, options.get("mode", "constant"))
        kept = {k: v for k, v in options.items() if k not in ("pad_width", "mode")}
        widths = widths_of(options["pad_width"], x.ndim)
        lengths = _lengths(kept.get("stat_length"), x.ndim)
        axes: list[AxisPad] = []
        z = x
        for k, (b, a) in enumerate(widths):
            if b or a:
                if mode in STATISTICS:
                    axes.append(StatAxis.make(k, z, b, a, mode, lengths[k]))
                else:
                    how = coefficients(z.shape[k], b, a, mode, kept.get("reflect_type"))
                    axes.append(LinearAxis(k, z.shape[k], b, a, how))
            if mode in SELECTIONS and k + 1 < x.ndim:  # (the next axis's windows see this one padded)
                only = [(0, 0)] * x.ndim
                only[k] = (b, a)
                z = _np_pad(z, only, mode, stat_length=kept.get("stat_length"))
        return cls(tuple(axes), x.ndim)

    def back(self, g: Array) -> tuple[Array, Array]:
        """The cotangent of x and of the fill values (per axis and side) for the result's."""
        fills = np.zeros((self.ndim, 2), dtype=np.result_type(g.dtype, np.float64))
        g = np.array(g)  # (the axes write into it: the result's own fdata is left as it is)
        for axis in reversed(self.axes):
            g, (left, right) = axis.back(g)
            fills[axis.axis] = (left, right)
        return g, fills

    def tangent(self, dx: Array) -> Array:
        """The tangent of the result along ``dx`` (the modes of ``StatAxis``)."""
        for axis in self.axes:
            assert isinstance(axis, StatAxis)
            dx = axis.tangent(dx)
        return dx


def _options(args: tuple[CD, ...], kwargs: dict[str, CD]) -> dict[str, t.Any]:
    options = bind(_PARAMETERS, args, kwargs, {"mode": "constant"}, "pad")
    mode = options["mode"]
    if callable(mode):
        raise NotImplementedError("np.pad with a function as mode: no rule (pad, then apply it)")
    if mode not in LINEAR | STATISTICS:
        raise ValueError(f"mode {mode!r} is not supported")
    return options


@primitive(np.pad, ARRAY, ...)
def pad_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.pad`` in every mode: x and the fill value get their cotangents through the
    chain of the axes' paddings (module docstring)."""
    options = _options(args, kwargs)
    y = f.primal(x.primal, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    yf = new_fdata(y)
    named = dict(zip(_PARAMETERS, args)) | kwargs
    fill = named.get(FILLS.get(t.cast(str, options["mode"]), ""))
    wanted = needs(x) or fill is not None
    operands = (*args, *kwargs.values())

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(yf, dy)
        if g is None or not wanted:
            return (NT, zero_for(x), *(zero_for(c) for c in operands))
        gx, fills = Padding.of(np.asarray(x.primal), options).back(np.asarray(g))
        rx = send(x, gx) if needs(x) else zero_for(x)
        rest = [
            send_to_value(c, to_shape(fills, np.shape(c.primal))) if c is fill else zero_for(c)
            for c in operands
        ]
        return (NT, rx, *rest)

    return CoDual(y, yf), pullback


# --------------------------------------------------------------------------------------------
# Forward mode


def pad_selected(dx: Array, x: Array, pad_width: object, mode: str, stat_length: object) -> Array:
    """The tangent of ``np.pad(x, pad_width, mode, stat_length=stat_length)`` along ``dx``
    for the modes that choose entries (maximum, minimum, median): linear in ``dx``."""
    options = {"pad_width": pad_width, "mode": mode, "stat_length": stat_length}
    return Padding.of(np.asarray(x), options).tangent(np.asarray(dx))


@primitive(pad_selected, ARRAY, ARRAY, ...)
def pad_selected_rrule(f: CD, dx: CD, x: CD, *args: CD) -> RuleResult:
    """Linear in ``dx`` (the adjoint of the padding's chain); the entries chosen do not move
    with ``x`` (a piecewise-constant choice), so x gets nothing."""
    pad_width, mode, stat_length = (a.primal for a in args)
    options = {"pad_width": pad_width, "mode": mode, "stat_length": stat_length}
    padding = Padding.of(np.asarray(x.primal), options)
    return linear_rrule(f, dx, (x, *args), {}, lambda g: padding.back(g)[0])


frules.register_linear([pad_selected], most=5)
runtime.register_object(pad_selected, "pad_selected")  # (a path for the IR's text)


@register_type_rule(pad_selected)
def _pad_selected_type(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return args[0] if args and isinstance(args[0], T.Array) else T.ANY


def _pad_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Emit | None:
    """``np.pad``'s forward rule, for a mode known when the rule is built: ``np.pad`` of the
    tangents of x and the fill value (linear modes and the mean), ``pad_selected`` (the
    others)."""
    n = len(types) - len(kwnames)
    names = ("array", "pad_width", "mode")[:n] + kwnames
    if not 2 <= n <= 3 or not set(names) <= {"array", *_PARAMETERS}:
        return None
    mode_type = types[names.index("mode")] if "mode" in names else T.Const("constant")
    if not isinstance(mode_type, T.Const) or mode_type.value not in LINEAR | STATISTICS:
        return None
    mode = mode_type.value
    fill = FILLS.get(mode)
    if any(v for name, v in zip(names, varied) if name not in ("array", fill)):
        return None
    if not frules.number_operand(types[0]):
        return None

    def emit(
        b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
    ) -> Value:
        by_name = dict(zip(names, [*args, *kwargs.values()]))
        tangent = dict(zip(names, tangents))
        x, dx = by_name["array"], tangent["array"]
        dfill = None if fill is None else tangent.get(fill)
        if dx is None and dfill is None:
            return frules.zero(b, z)
        if dx is None:
            dx = b.call(np.zeros_like, x, type=x.type)
        pad_width = by_name["pad_width"]
        if mode in SELECTIONS:
            stat_length = by_name.get("stat_length", Constant(None))
            call = (dx, x, pad_width, Constant(mode), stat_length)
            return b.call(pad_selected, *call, type=z.type)
        if mode == "empty":
            return b.call(np.pad, dx, pad_width, type=z.type)  # (zeros where NumPy leaves garbage)
        named = {k: v for k, v in by_name.items() if k not in ("array", "pad_width", "mode")}
        if fill is not None:
            named[fill] = Constant(0.0) if dfill is None else dfill
        return b.call(np.pad, dx, pad_width, Constant(mode), kwargs=named, type=z.type)

    return frules.Emit(emit)


frules.register(np.pad, _pad_tangent, numeric=True)
