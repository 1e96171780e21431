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

With advanced indexing the primal allocates nothing either (NumPy scatters in place), but
gathering the region would; so the state saves the whole array, and finds the written positions
by writing the region's element numbers through the same index into a buffer of x's shape.
With repeated indices that records the last write of each element, the one that counts, and
only the value elements that made it get its cotangent.  A warm call allocates no NumPy memory
for any index (tests/library/arrays/test_indexing.py measures it; the audit checks it).

``x.fill(v)`` and ``np.copyto(x, v)`` write all of x: they are ``x[...] = v``, through the
same rule and state.
"""

from __future__ import annotations

import operator
import typing as t

import attrs
import numpy as np

from gibbous.library.common import (
    ANY,
    ARRAY,
    CD,
    NT,
    Array,
    RuleResult,
    bind,
    cotangent,
    is_inexact_scalar,
    new_fdata,
    no_pullback,
    needs,
    nothing,
    scalar_rdata,
    send,
    shares_memory,
    view_fdata,
    zero_for,
)
from gibbous.ir import runtime
from gibbous.ir.exceptions import UnsupportedArgumentError
from gibbous.ir import types as T
from gibbous.rules import inline
from gibbous.library.items import items_of
from gibbous.rules.registry import Pullback, primitive, stateful_primitive
from gibbous.rules import frules, inplace_forward
from gibbous.tangents.model import CoDual, is_differentiable, object_array_refusal

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


@primitive(operator.getitem, ARRAY, ANY)
def getitem_rrule(f: CD, x: CD, index: CD) -> RuleResult:
    xp, idx = x.primal, index.primal
    return _getitem(x, idx, f.primal(xp, idx))


def element_rrule(f: CD, x: CD, index: CD) -> RuleResult:
    """``x[i]``, ``x[i, j]``...: one element of a float64 array, one int per axis (the static
    types say so), as in a loop over elements: its cotangent goes back in place."""
    xp, idx, dx = x.primal, index.primal, x.fdata
    y = f.primal(xp, idx)
    # A bool index is an int to the types but a mask to NumPy; an inactive array has no fdata.
    if type(y) is not np.float64 or type(dx) is not np.ndarray:
        return _getitem(x, idx, y)

    def element_pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if type(dy) is float or type(dy) is np.float64:
            dx[idx] += dy
            return _NOTHING_3
        g = cotangent(NT, dy)
        if g is not None:
            dx[idx] += np.real(g)
        return _NOTHING_3

    return CoDual(y, NT), element_pullback


_INDICES = [T.INT, T.Tuple((T.INT, T.INT)), T.Tuple((T.INT, T.INT, T.INT))]
for _ndim, _index in enumerate(_INDICES, 1):
    _array = T.Array("float64", _ndim)
    _element = primitive(
        operator.getitem, _array, _index, variant="real_array_element", inline=inline.GETITEM
    )
    _element(element_rrule)


def slice_fdata(y: t.Any, x: t.Any, dx: t.Any, idx: t.Any) -> t.Any:
    """The fdata of ``y = x[idx]`` for a slice or a row: the same view of x's fdata (gradients
    written into y's fdata land in x's), or new zeros where there is nothing to share (an
    inactive x, an empty slice), as ``getitem_rrule`` gives them."""
    if type(dx) is not np.ndarray:
        return new_fdata(y)
    # A slice of an array is a view of it (empty or not: no bounds check needed); a view of
    # an array of another class (``x`` of a subclass the types call f64) is checked.
    if type(x) is not np.ndarray and not shares_memory(y, x):
        return new_fdata(y)
    return view_fdata(y, dx[idx], of=(x, dx))


# ``x[a:b]`` of a float64 array: a view, whose fdata is the same view of x's fdata; the form
# makes it in the forward program and leaves nothing for the reverse.
_SLICE_FORM = inline.InlineRule(
    "slice", (), lambda b, saved, dy: (None, None), 2, array=True, fdata=slice_fdata,
    fdata_saves=(("primal", 0), ("fdata", 0), ("primal", 1)),
)  # fmt: skip
primitive(
    operator.getitem, T.Array("float64", None), T.Object(slice), variant="real_array_slice",
    inline=_SLICE_FORM,
)(getitem_rrule)  # fmt: skip
# ``x[i]`` of a float64 matrix: a row, a view as a slice is (an RNN's ``X[t]``).
primitive(
    operator.getitem, T.Array("float64", 2), T.INT, variant="real_matrix_row", inline=_SLICE_FORM
)(getitem_rrule)
frules.register_linear([operator.getitem])
runtime.register_object(slice_fdata, "slice_fdata")


def _getitem(x: CD, idx: t.Any, y: t.Any) -> RuleResult:
    xp, dx = x.primal, x.fdata
    if not isinstance(dx, np.ndarray):
        return CoDual(y, new_fdata(y)), _NO_RDATA_3
    if shares_memory(y, xp):
        return CoDual(y, view_fdata(y, dx[idx], of=(xp, dx))), _NO_RDATA_3
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
    """Buffers of one pending ``x[index] = value``, reused by warm calls with the same ``key``.

    Basic indexing saves the region itself (``saved``, ``saved_fdata``).  Advanced indexing
    saves the whole array, and records in ``owner`` which element of the region was written
    last to each position of x (``none`` for positions not written); ``written`` marks the
    written positions, and ``cotangent`` (a view of ``gathered``, one longer: its last slot
    collects the positions not written) receives the cotangent of each region element.
    """

    key: tuple[object, ...]
    region: tuple[int, ...]  # the shape of ``x[index]``
    saved: Array  # the region's primal before the write (advanced: all of x)
    saved_fdata: Array | None  # its fdata (None: the array has no fdata)
    grad: Array | None  # the value's gradient, shaped like the value (an array with fdata,
    # or nested lists and tuples of numbers)
    axes: tuple[int, ...]  # axes of the region's cotangent summed for the value
    summed: Array | None  # ``grad`` with the region's rank, to receive the sum
    owner: Array | None = None  # advanced indexing: intp, x's shape
    order: Array | None = None  # 0, 1, ... in the region's shape, written through the index
    written: Array | None = None  # bool, x's shape
    gathered: Array | None = None  # flat, the region's size + 1
    cotangent: Array | None = None  # ``gathered[:-1]`` in the region's shape
    none: int = 0  # the region's size: the number of no element of it


def _value_signature(v: object) -> object:
    if isinstance(v, np.ndarray):
        return v.shape, v.dtype
    return (type(v), _nested_shape(v)) if isinstance(v, (list, tuple)) else type(v)


def _index_signature(index: object) -> tuple[object, ...] | None:
    """What the region's shape depends on, for an advanced index (None if that is not cheap
    to tell: nested lists)."""
    parts = index if type(index) is tuple else (index,)
    signature: list[object] = []
    for p in parts:
        if p is None or p is Ellipsis or _is_int(p):
            signature.append(p if p is None or p is Ellipsis else "int")
        elif isinstance(p, slice):
            signature.append(("slice", p.start, p.stop, p.step))
        elif isinstance(p, np.ndarray):
            if p.dtype.kind == "b":  # a mask's count of True is its part of the shape
                signature.append(("mask", p.shape, int(np.count_nonzero(p))))
            else:
                signature.append(("ints", p.shape))
        elif isinstance(p, list) and all(map(_is_int, p)):
            signature.append(("list", len(p)))
        elif isinstance(p, list) and all(isinstance(b, (bool, np.bool_)) for b in p):
            signature.append(("mask", (len(p),), sum(p)))
        else:
            return None
    return tuple(signature)


def _gradient_buffers(
    v: CD, region: tuple[int, ...], dx: Array
) -> tuple[Array | None, tuple[int, ...], Array | None]:
    """Buffers for the gradient of a value broadcast to ``region``: an array with fdata, or
    (nested) lists and tuples, whose items get their parts of the gradient in the pullback."""
    vp = v.primal
    if isinstance(vp, np.ndarray) and isinstance(v.fdata, np.ndarray):
        grad = np.empty(vp.shape, v.fdata.dtype)
    elif isinstance(vp, (list, tuple)):
        grad = np.empty(_nested_shape(vp), dx.dtype)
    else:
        return None, (), None
    core: tuple[int, ...] = grad.shape
    while len(core) > len(region) and core[0] == 1:  # NumPy drops leading 1s of a value
        core = core[1:]
    lead = len(region) - len(core)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(core) if n == 1 and region[lead + i] != 1
    )
    return grad, axes, grad.reshape((1,) * lead + core)


def _basic_state(
    state: SetitemState | None, a: Array, dx: Array | None, region: tuple[int, ...], v: CD
) -> SetitemState:
    key = ("basic", a.shape, a.dtype, region, _value_signature(v.primal), dx is None)
    if state is not None and state.key == key:
        return state
    saved_fdata = None if dx is None else np.empty(region, dx.dtype)
    grad, axes, summed = (None, (), None) if dx is None else _gradient_buffers(v, region, dx)
    return SetitemState(key, region, np.empty(region, a.dtype), saved_fdata, grad, axes, summed)


def _advanced_state(
    state: SetitemState | None, a: Array, dx: Array | None, index: object, v: CD
) -> SetitemState:
    signature = _index_signature(index)
    key = ("advanced", a.shape, a.dtype, signature, _value_signature(v.primal), dx is None)
    if signature is not None and state is not None and state.key == key:
        return state
    region = a[t.cast(t.Any, index)].shape
    saved_fdata = None if dx is None else np.empty(a.shape, dx.dtype)
    grad, axes, summed = (None, (), None) if dx is None else _gradient_buffers(v, region, dx)
    size = int(np.prod(region))
    gathered = None if dx is None else np.empty(size + 1, dx.dtype)
    return SetitemState(
        key, region, np.empty(a.shape, a.dtype), saved_fdata, grad, axes, summed,
        owner=np.empty(a.shape, np.intp),
        order=np.arange(size, dtype=np.intp).reshape(region),
        written=np.empty(a.shape, np.bool_),
        gathered=gathered,
        cotangent=None if gathered is None else gathered[:-1].reshape(region),
        none=size,
    )  # fmt: skip


def _nested_shape(v: object) -> tuple[int, ...]:
    """The shape of nested lists and tuples (of their first items, arrays included), as NumPy
    sees it, without making an array."""
    shape: list[int] = []
    while isinstance(v, (list, tuple)):
        shape.append(len(v))
        v = v[0] if v else None
    return (*shape, *v.shape) if isinstance(v, np.ndarray) else tuple(shape)


def _value_gradient(s: SetitemState, v: CD, g: Array) -> t.Any:
    """The value's gradient from its region's cotangent ``g``: summed into ``s.grad`` for an
    array value (``NoTangent()``: the pullback adds it into the value's fdata later), sent
    into the items of a list or tuple value (returning its rdata), or a scalar's rdata."""
    vp = v.primal
    if s.grad is None or s.summed is None:
        return scalar_rdata(vp, g) if is_inexact_scalar(vp) else zero_for(v)
    part = g.real if s.grad.dtype.kind != "c" else g
    if s.axes:
        np.add.reduce(part, axis=s.axes, out=s.summed, keepdims=True)
    else:
        np.copyto(s.summed, part)
    if not isinstance(vp, (list, tuple)):
        return NT
    items = items_of(vp, v.fdata)
    for j in range(len(items)):
        items.send(j, s.grad[j])
    return items.rdata()


@stateful_primitive(operator.setitem, ARRAY, ANY, ANY, state_type=SetitemState)
def setitem_rrule(
    state: SetitemState | None, f: CD, x: CD, index: CD, v: CD
) -> tuple[CD, Pullback, SetitemState]:
    a, idx = x.primal, index.primal
    dx = x.fdata if isinstance(x.fdata, np.ndarray) else None
    if dx is None and a.dtype.kind == "O" and is_differentiable(v.primal):
        raise object_array_refusal(v.primal)
    if not is_basic(idx):
        return _advanced_setitem(state, f, x, index, v, dx)
    vidx = view_index(idx)
    region = a[vidx]
    s = _basic_state(state, a, dx, region.shape, v)
    np.copyto(s.saved, region)
    f.primal(a, idx, v.primal)
    dregion = None
    if dx is not None and s.saved_fdata is not None:
        dregion = dx[vidx]
        np.copyto(s.saved_fdata, dregion)
        dregion.fill(0)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        np.copyto(region, s.saved)
        if dregion is None or s.saved_fdata is None:
            return NT, NT, NT, zero_for(v)
        rdata = _value_gradient(s, v, dregion)
        np.copyto(dregion, s.saved_fdata)
        if s.grad is not None and isinstance(v.primal, np.ndarray):
            np.add(v.fdata, s.grad, out=v.fdata)
        return NT, NT, NT, rdata

    return CoDual(None, NT), pullback, s


def _advanced_setitem(
    state: SetitemState | None, f: CD, x: CD, index: CD, v: CD, dx: Array | None
) -> tuple[CD, Pullback, SetitemState]:
    """``x[index] = v`` with integer or boolean arrays in the index.  NumPy's gather would
    allocate, so nothing is gathered: the written positions are found by writing the region's
    element numbers through the same index (``owner``), the primal and fdata are saved and
    restored whole or where written, and the cotangent of each region element is collected
    from the position it owns (so with repeated indices, only the last write counts)."""
    a, idx = x.primal, index.primal
    s = _advanced_state(state, a, dx, idx, v)
    owner, written = t.cast(Array, s.owner), t.cast(Array, s.written)
    np.copyto(s.saved, a)
    owner.fill(s.none)
    owner[idx] = s.order
    np.not_equal(owner, s.none, out=written)
    f.primal(a, idx, v.primal)
    if dx is not None and s.saved_fdata is not None:
        np.copyto(s.saved_fdata, dx)
        np.copyto(dx, 0, where=written)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        np.copyto(a, s.saved, where=written)
        if dx is None or s.saved_fdata is None or s.gathered is None or s.cotangent is None:
            return NT, NT, NT, zero_for(v)
        s.gathered.fill(0)
        np.add.at(s.gathered, owner, dx)
        rdata = _value_gradient(s, v, s.cotangent)
        np.copyto(dx, s.saved_fdata, where=written)
        if s.grad is not None and isinstance(v.primal, np.ndarray):
            np.add(v.fdata, s.grad, out=v.fdata)
        return NT, NT, NT, rdata

    return CoDual(None, NT), pullback, s


# --------------------------------------------------------------------------------------------
# x.fill(v) and np.copyto(x, v): writes of all of x, as ``x[...] = v`` (the same state)

_WHOLE = CoDual(Ellipsis, NT)


def _fill(a: Array, index: object, v: object) -> None:
    a.fill(v)


_FILL = CoDual(_fill, NT)


@stateful_primitive(np.ndarray.fill, ARRAY, ANY, state_type=SetitemState)
def fill_rrule(
    state: SetitemState | None, f: CD, x: CD, v: CD
) -> tuple[CD, Pullback, SetitemState]:
    """``x.fill(v)``: x's elements all get the scalar v, which gets the sum of their
    cotangents."""
    y, pullback, state = setitem_rrule(state, _FILL, x, _WHOLE, v)

    def fill_pullback(dy: t.Any) -> tuple[t.Any, ...]:
        return NT, NT, pullback(dy)[3]

    return y, fill_pullback, state


@stateful_primitive(np.copyto, ARRAY, ANY, ..., state_type=SetitemState)
def copyto_rrule(
    state: SetitemState | None, f: CD, dst: CD, src: CD, *args: CD, **kwargs: CD
) -> tuple[CD, Pullback, SetitemState]:
    """``np.copyto(dst, src, casting=...)``: dst's elements get src's, broadcast; without
    ``where=``, which would keep some of dst's elements and needs a rule of its own."""
    options = bind(("casting", "where"), args, kwargs, {"where": True}, "copyto")
    if options["where"] is not True:  # (by position: ``copyto_where_rrule`` takes it by name)
        raise UnsupportedArgumentError("numpy.copyto: pass where= by name")
    pa = tuple(a.primal for a in args)
    pk = {k: v.primal for k, v in kwargs.items()}

    def write(a: Array, index: object, v: object) -> None:
        f.primal(a, v, *pa, **pk)  # np.copyto itself, for its casting rules

    y, pullback, state = setitem_rrule(state, CoDual(write, NT), dst, _WHOLE, src)
    rest = nothing(len(args) + len(kwargs))

    def copyto_pullback(dy: t.Any) -> tuple[t.Any, ...]:
        return (NT, NT, pullback(dy)[3], *rest)

    return y, copyto_pullback, state


def copyto_where_rrule(f: CD, dst: CD, src: CD, **kwargs: CD) -> RuleResult:
    """``np.copyto(dst, src, where=mask)``: ``dst[m] = src_b[m]`` with ``m`` the mask and
    ``src_b`` the source broadcast to dst's shape (NaNs replaced in NumPy's ``nan*``).  The
    source gets the cotangent of the positions written, summed back to its shape; dst's old
    values there get nothing more, and are restored by the pullback, with their fdata."""
    a = dst.primal
    mask = np.broadcast_to(np.asarray(kwargs["where"].primal, dtype=bool), a.shape)
    saved = a[mask]
    dx = dst.fdata if isinstance(dst.fdata, np.ndarray) else None
    saved_fdata = None if dx is None else dx[mask]
    f.primal(a, src.primal, **{k: v.primal for k, v in kwargs.items()})
    if dx is not None:
        dx[mask] = 0
    rest = nothing(len(kwargs))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        a[mask] = saved
        if dx is None or saved_fdata is None:
            return (NT, NT, zero_for(src), *rest)
        g = np.where(mask, dx, 0) if needs(src) else None
        dx[mask] = saved_fdata
        return (NT, NT, zero_for(src) if g is None else send(src, g), *rest)

    return CoDual(None, NT), pullback


primitive(np.copyto, ARRAY, ANY, kwargs={"where": ANY})(copyto_where_rrule)
primitive(np.copyto, ARRAY, ANY, kwargs={"where": ANY, "casting": ANY})(copyto_where_rrule)


def written_tangent_rrule(f: CD, x: CD, dx: CD, d: CD) -> RuleResult:
    """``inplace_forward.written_tangent(x, dx, d)`` (``x op= y`` of a value of unknown type,
    in a Hessian-vector product): for a number, ``d`` itself; for an array, ``np.copyto(dx,
    d)``'s rule (``dx``'s old values restored by the pullback, ``d`` getting what ``dx``
    collects), then ``dx``.  ``x`` decides which: no cotangent."""
    if type(x.primal) is not np.ndarray:  # (a number: the cotangent goes back to ``d``)
        yf = new_fdata(d.primal)

        def to_d(dy: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(yf, dy)
            return (NT, zero_for(x), zero_for(dx), zero_for(d) if g is None else send(d, g))

        return CoDual(d.primal, yf), to_d
    inplace_forward.written_tangent(x.primal, dx.primal, dx.primal)  # (its checks alone)
    _, pullback = copyto_where_rrule(CoDual(np.copyto, NT), dx, d, where=CoDual(True, NT))

    def back(dy: t.Any) -> tuple[t.Any, ...]:
        r = pullback(dy)
        return (NT, NT, NT, r[2])

    return dx, back


primitive(inplace_forward.written_tangent, ANY, ANY, ANY)(written_tangent_rrule)


def array_of_rrule(f: CD, x: CD) -> RuleResult:
    """``inplace_forward.array_of(x)``: ``x`` itself (checked to be an array), whose fdata
    collects its cotangent."""
    inplace_forward.array_of(x.primal)
    return x, lambda dy: (NT, NT)


primitive(inplace_forward.array_of, ANY)(array_of_rrule)

