"""Indexing arrays: ``x[index]`` and ``x[index] = value``, with every kind of index.

**Reading.**  Basic indexing (ints, slices, ``None``, ``...`` and tuples of them) gives a view:
its fdata is the same view of x's fdata, so writes through the view are differentiated and
nothing is copied; the pullback has nothing to do.  An element (all axes indexed by ints) is a
scalar: its cotangent is added into x's fdata at that element.  Advanced indexing (integer or
boolean arrays, lists) gives a copy: new fdata, and the pullback scatter-adds the cotangent
(``np.add.at``, so repeated indices add up).  Which case applies is decided by memory: a
result that shares x's memory is a view.

**Writing** is a stateful rule: the state keeps buffers for the overwritten region (its primal
and its fdata) and for the value's gradient, reused by every call with the same shapes.  The
forward pass saves the region, writes, and zeroes the region's fdata (the new values' tangent
starts fresh).  The pullback restores the region's primal, reads the region's fdata (the
cotangent of the written values) into the value's gradient, summed over broadcast axes,
restores the region's fdata, and only then adds the gradient into the value's fdata, so a
value that aliases the array (``a[1:] = a[:-1]``) ends with its saved fdata plus its gradient.
With repeated integer indices only the last write of an element counts, and only the value
elements that made it get its cotangent.  A warm call with basic indexing holds no NumPy memory
from forward to reverse (tests/rules/prims/test_indexing.py measures it).
"""

from __future__ import annotations

import operator
import typing as t

import attrs
import numpy as np

from gibbous.rules.prims.common import (
    ANY,
    ARRAY,
    CD,
    NT,
    Array,
    RuleResult,
    cotangent,
    is_inexact_scalar,
    new_fdata,
    no_pullback,
    scalar_rdata,
    shares_memory,
    unbroadcast,
    view_fdata,
    zero_for,
)
from gibbous.rules.prims.items import items_of
from gibbous.rules.registry import Pullback, primitive, stateful_primitive
from gibbous.rules.tangents import CoDual

_NO_RDATA_3 = no_pullback(3)
_NOTHING_3 = (NT, NT, NT)


def _is_int(p: object) -> bool:
    return isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_))


def is_basic(index: object) -> bool:
    """Whether ``index`` is basic indexing (gives a view, or an element)."""
    parts = index if type(index) is tuple else (index,)
    return all(p is None or p is Ellipsis or isinstance(p, slice) or _is_int(p) for p in parts)


def view_index(index: object) -> tuple[t.Any, ...]:
    """A basic index that always gives a view, also of a single element (a 0-d view): with a
    trailing ``...`` (unless it has one)."""
    parts = index if type(index) is tuple else (index,)
    return parts if any(p is Ellipsis for p in parts) else (*parts, Ellipsis)


def _may_repeat(index: object) -> bool:
    """Whether an advanced index may name one element twice (integer arrays or lists)."""
    parts = index if type(index) is tuple else (index,)
    for p in parts:
        if isinstance(p, list) or (isinstance(p, np.ndarray) and p.dtype.kind != "b"):
            return True
    return False


@primitive(operator.getitem, ARRAY, ANY)
def getitem_rrule(f: CD, x: CD, index: CD) -> RuleResult:
    xp, idx, dx = x.primal, index.primal, x.fdata
    y = f.primal(xp, idx)
    if type(idx) is int and type(y) is np.float64 and type(dx) is np.ndarray:
        # An element of a float64 array (``x[i]`` in a loop): its cotangent goes back in place.
        def element_pullback(dy: t.Any) -> tuple[t.Any, ...]:
            if type(dy) is float or type(dy) is np.float64:
                dx[idx] += dy
                return _NOTHING_3
            return generic_pullback(dy)

        def generic_pullback(dy: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(NT, dy)
            if g is not None:
                dx[idx] += g if dx.dtype.kind == "c" else np.real(g)
            return _NOTHING_3

        return CoDual(y, NT), element_pullback
    if not isinstance(dx, np.ndarray):
        return CoDual(y, new_fdata(y)), _NO_RDATA_3
    if shares_memory(y, xp):
        return CoDual(y, view_fdata(y, dx[idx])), _NO_RDATA_3
    yf = new_fdata(y)
    basic = is_basic(idx)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(yf, dy)
        if g is not None:
            if dx.dtype.kind != "c":
                g = np.real(g)
            if basic:
                dx[idx] += g
            else:
                np.add.at(dx, idx, g)
        return NT, NT, NT

    return CoDual(y, yf), pullback


# --------------------------------------------------------------------------------------------
# x[index] = value


@attrs.frozen
class SetitemState:
    key: tuple[object, ...]
    saved: Array  # the region's primal before the write
    saved_fdata: Array | None  # its fdata (None: the array has no fdata)
    grad: Array | None  # the value's gradient, shaped like the value (an array with fdata)
    axes: tuple[int, ...]  # axes of the region's cotangent summed for the value
    summed: Array | None  # ``grad`` with the region's rank, to receive the sum


def _value_signature(v: object) -> object:
    return (v.shape, v.dtype) if isinstance(v, np.ndarray) else type(v)


def _gradient_buffers(
    v: CD, region: tuple[int, ...]
) -> tuple[Array | None, tuple[int, ...], Array | None]:
    """Buffers for the gradient of an array value broadcast to ``region``."""
    vp = v.primal
    if not (isinstance(vp, np.ndarray) and isinstance(v.fdata, np.ndarray)):
        return None, (), None
    grad = np.empty(vp.shape, v.fdata.dtype)
    core = vp.shape
    while len(core) > len(region) and core[0] == 1:  # NumPy drops leading 1s of a value
        core = core[1:]
    lead = len(region) - len(core)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(core) if n == 1 and region[lead + i] != 1
    )
    return grad, axes, grad.reshape((1,) * lead + core)


def _state(
    state: SetitemState | None, a: Array, dx: Array | None, region: tuple[int, ...], v: CD
) -> SetitemState:
    key = (a.shape, a.dtype, region, _value_signature(v.primal), dx is None)
    if state is not None and state.key == key:
        return state
    saved_fdata = None if dx is None else np.empty(region, dx.dtype)
    grad, axes, summed = (None, (), None) if dx is None else _gradient_buffers(v, region)
    return SetitemState(key, np.empty(region, a.dtype), saved_fdata, grad, axes, summed)


def _winners(shape: tuple[int, ...], index: t.Any, region: tuple[int, ...]) -> Array:
    """Which elements of a region written through a repeating index were written last."""
    order = np.arange(int(np.prod(region))).reshape(region)
    owner = np.full(shape, -1, dtype=np.intp)
    owner[index] = order
    return t.cast(Array, owner[index] == order)


def _value_rdata(v: CD, g: Array) -> t.Any:
    """The rdata of a scalar, list or tuple value for the cotangent ``g`` of its region."""
    vp = v.primal
    if is_inexact_scalar(vp):
        return scalar_rdata(vp, g)
    if isinstance(vp, (list, tuple)):
        items = items_of(vp, v.fdata)
        g = unbroadcast(g, np.shape(vp))
        for j in range(len(items)):
            items.send(j, g[j])
        return items.rdata()
    return zero_for(v)


@stateful_primitive(operator.setitem, ARRAY, ANY, ANY, state_type=SetitemState)
def setitem_rrule(
    state: SetitemState | None, f: CD, x: CD, index: CD, v: CD
) -> tuple[CD, Pullback, SetitemState]:
    a, idx = x.primal, index.primal
    dx = x.fdata if isinstance(x.fdata, np.ndarray) else None
    basic = is_basic(idx)
    if basic:
        vidx = view_index(idx)
        region = a[vidx]
        state = _state(state, a, dx, region.shape, v)
        np.copyto(state.saved, region)
    else:
        gathered = a[idx]
        state = _state(state, a, dx, gathered.shape, v)
        np.copyto(state.saved, gathered)
        del gathered
    f.primal(a, idx, v.primal)
    s = state
    if dx is not None and s.saved_fdata is not None:
        if basic:
            dregion = dx[vidx]
            np.copyto(s.saved_fdata, dregion)
            dregion.fill(0)
        else:
            np.copyto(s.saved_fdata, dx[idx])
            dx[idx] = 0

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if basic:
            np.copyto(region, s.saved)
        else:
            a[idx] = s.saved
        if dx is None or s.saved_fdata is None:
            return NT, NT, NT, zero_for(v)
        g = dregion if basic else dx[idx]
        if not basic and _may_repeat(idx):
            g = g * _winners(a.shape, idx, g.shape)
        rdata = NT
        if s.grad is not None and s.summed is not None:
            part = g.real if s.grad.dtype.kind != "c" else g
            if s.axes:
                np.add.reduce(part, axis=s.axes, out=s.summed, keepdims=True)
            else:
                np.copyto(s.summed, part)
        else:
            rdata = _value_rdata(v, g)
        if basic:
            np.copyto(dregion, s.saved_fdata)
        else:
            dx[idx] = s.saved_fdata
        if s.grad is not None:
            np.add(v.fdata, s.grad, out=v.fdata)
        return NT, NT, NT, rdata

    return CoDual(None, NT), pullback, state

