"""Views with strides of one's own: ``np.lib.stride_tricks.as_strided(x, shape, strides)`` and
``sliding_window_view(x, window_shape, axis)`` (windows for convolutions, moving averages).

Both give a view of x's memory in which an element of x may appear many times (overlapping
windows).  Every element of the view must be an element of x: strides in whole elements, and
nothing before x's first or after its last element (or, for an x that is not contiguous,
between its elements).  A view that breaks this is refused with a ``TypeError``, since what it
reads is not a function of x.

**Views whose elements are distinct** (strides that only rearrange x, windows of one element)
get the same view of x's fdata, as ``np.reshape`` does: writes through them are differentiated
and nothing is allocated.  Telling that is a test on strides alone (each axis, by increasing
stride, steps over everything the smaller ones span), which may call some rare non-overlapping
layouts overlapping; those take the other way, which is also right for reading, as does a
view of an x whose fdata has other strides than x (a ``broadcast_to`` result, an overlapping
view's view: the same strides would reach other elements of that fdata).

**Overlapping views** get new fdata, and the pullback scatter-adds its cotangent into x's
fdata: the element of x under each element of the view is found by byte offsets, in the
forward pass, and ``common.collect`` adds the cotangents of all its appearances.  The same view
of x's fdata would have the overlaps too, and the rules that add into fdata in place would
keep only one of the cotangents landing on a shared element (as for ``np.broadcast_to``).  So,
as for ``broadcast_to``: a write through an overlapping view (``as_strided`` makes writable
ones) or into x while the view is in use is not seen by the view's fdata.
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.library.common import (
    ARRAY,
    CD,
    Array,
    RuleResult,
    add_into,
    collect,
    cotangent,
    is_float_array,
    new_fdata,
    nothing,
    mirrors,
    view_fdata,
)
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual

_AS_STRIDED = "np.lib.stride_tricks.as_strided"


def _describe(name: str, x: Array, y: Array) -> str:
    view = f"shape {y.shape}, strides {y.strides}"
    return f"{name}(x of shape {x.shape}, strides {x.strides}) -> {view}"


def _may_overlap(y: Array) -> bool:
    """Whether two elements of ``y`` may be one element of memory (False only when they
    cannot: each axis, by increasing stride, steps over all the smaller ones span)."""
    if y.size == 0:
        return False
    span = y.itemsize
    for stride, n in sorted((abs(s), n) for n, s in zip(y.shape, y.strides) if n > 1):
        if stride < span:
            return True
        span += stride * (n - 1)
    return False


def _offset(x: Array, y: Array) -> int:
    """Where ``y``'s first element is, in bytes from x's."""
    return int(y.__array_interface__["data"][0]) - int(x.__array_interface__["data"][0])


def _check_strides(name: str, x: Array, y: Array) -> None:
    offset = _offset(x, y)
    steps = [s for n, s in zip(y.shape, y.strides) if n > 1]
    if any(s % x.itemsize for s in steps) or offset % x.itemsize:
        raise TypeError(
            f"{_describe(name, x, y)}: strides that are not multiples of x's itemsize "
            f"({x.itemsize} bytes) read parts of elements, which gibbous cannot differentiate; "
            "give strides in whole elements (multiples of x.itemsize)"
        )


def _outside(name: str, x: Array, y: Array) -> TypeError:
    return TypeError(
        f"{_describe(name, x, y)}: the view reaches memory outside x's elements, which is "
        "not a function of x; choose shape and strides that stay within x (for windows, "
        "np.lib.stride_tricks.sliding_window_view checks this)"
    )


def _extent(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int]:
    """The lowest and highest byte offsets of the elements of a layout (from its first)."""
    low = sum(s * (n - 1) for n, s in zip(shape, strides) if s < 0)
    high = sum(s * (n - 1) for n, s in zip(shape, strides) if s > 0)
    return low, high


def _within_contiguous(x: Array, y: Array) -> bool:
    """For a contiguous x: whether every element of ``y`` is one of x's (checked on the
    extent alone, with Python numbers: the strides are whole elements)."""
    offset = _offset(x, y)
    low, high = _extent(y.shape, y.strides)
    return 0 <= offset + low and offset + high <= x.itemsize * (x.size - 1)


def _offsets(a: Array) -> Array:
    """The byte offset of each element of ``a`` from its first."""
    offsets = np.zeros(a.shape, dtype=np.intp)
    for k, (n, s) in enumerate(zip(a.shape, a.strides)):
        offsets += (np.arange(n, dtype=np.intp) * s).reshape((n,) + (1,) * (a.ndim - k - 1))
    return offsets


def _sources(name: str, x: Array, y: Array) -> Array:
    """For each element of ``y``, the number (in C order) of the element of x it is."""
    within = _offsets(x).reshape(-1)
    wanted = _offsets(y) + _offset(x, y)
    order = np.argsort(within, kind="stable")
    ordered = within[order]
    place = np.minimum(np.searchsorted(ordered, wanted), max(x.size - 1, 0))
    if x.size == 0 or not np.array_equal(ordered[place], wanted):
        raise _outside(name, x, y)
    return t.cast(Array, order[place])


def _strided_view_rrule(name: str) -> t.Callable[..., RuleResult]:
    """The rule of a call returning a view of x with strides of its own (see the module doc)."""

    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        xp, dx = x.primal, x.fdata
        y = f.primal(xp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
        rdata = nothing(2 + len(args) + len(kwargs))
        if not is_float_array(y) or y.size == 0:
            return CoDual(y, new_fdata(y)), lambda dy: rdata
        _check_strides(name, xp, y)
        if not _may_overlap(y) and mirrors(xp, dx):  # (else x's fdata has other strides)
            if not (xp.flags.c_contiguous or xp.flags.f_contiguous):
                _sources(name, xp, y)  # raises if y reaches outside x
            elif not _within_contiguous(xp, y):
                raise _outside(name, xp, y)
            if isinstance(dx, np.ndarray):
                view = np.lib.stride_tricks.as_strided(dx, y.shape, y.strides)
                return CoDual(y, view_fdata(y, view)), lambda dy: rdata
            return CoDual(y, new_fdata(y)), lambda dy: rdata
        sources = _sources(name, xp, y)
        yf = np.zeros(y.shape, dtype=y.dtype)

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(yf, dy)
            if g is not None and isinstance(dx, np.ndarray):
                add_into(dx, collect(g, sources, xp.size).reshape(xp.shape))
            return rdata

        return CoDual(y, yf), pullback

    rrule.__qualname__ = f"strided_view_rrule({name})"
    return rrule


primitive(np.lib.stride_tricks.as_strided, ARRAY, ...)(_strided_view_rrule(_AS_STRIDED))
primitive(np.lib.stride_tricks.sliding_window_view, ARRAY, ...)(
    _strided_view_rrule("np.lib.stride_tricks.sliding_window_view")
)
