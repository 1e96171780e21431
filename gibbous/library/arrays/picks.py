"""NumPy's functions that pick or place elements, as twins (``gibbous.infer.implementations``):
plain Python computing what NumPy's C computes, by indexing, ``np.where`` and ``np.take``,
which have rules in both modes, so that every mode follows.

* ``np.choose(a, choices, mode=)`` and ``x.choose``: ``np.where`` folded over the choices;
  ``np.compress(condition, a, axis)`` and ``x.compress``: ``np.take`` of the selected indices;
  ``np.select(condlist, choicelist, default)``: ``np.where`` from the last condition back;
* ``np.put(a, ind, v, mode=)``, ``np.place(arr, mask, vals)``, ``np.putmask(a, mask, values)``,
  ``np.fill_diagonal(a, val, wrap=)``: item assignments into ``a`` (the values repeated as
  NumPy repeats them), which both modes follow as writes;
* ``np.ediff1d(ary, to_end, to_begin)``: ``np.diff`` of the flattened array between the two;
* ``np.interp(x, xp, fp, left, right)``: the segment's line (``np.searchsorted``), in NumPy's
  order of tests, so derivatives in x, fp and xp (and left, right) follow; not ``period=``,
  nor an ``xp`` that is not increasing (NumPy's result is meaningless there);
* NumPy's ``_wrapfunc`` (``np.take``, ``np.choose`` ... of a list or a Python number): the
  method of the array made of it.

``out=`` is refused (``UnsupportedArgumentError``).
"""

from __future__ import annotations

import types
import typing as t

import numpy as np
from numpy._core import fromnumeric as _fromnumeric  # (its _wrapfunc)

from gibbous.infer.implementations import register_twin, twin_helper
from gibbous.ir.exceptions import UnsupportedArgumentError


@twin_helper
def _cycled(values: t.Any, count: int) -> t.Any:
    """``count`` values of ``values`` flattened, repeated from the start as needed."""
    flat = np.ravel(values)
    return np.tile(flat, -(-count // flat.size))[:count]


@twin_helper
def _no_out(out: t.Any, name: str) -> None:
    if out is not None:
        raise UnsupportedArgumentError(f"{name} with out=: no rule (use the result)")


def choose(a: t.Any, choices: t.Any, out: t.Any = None, mode: str = "raise") -> t.Any:
    """``np.choose``: ``choices[a]`` elementwise, broadcast, with ``mode`` for indices out of
    range ("raise", "wrap", "clip")."""
    _no_out(out, "np.choose")
    index = np.asarray(a)
    n = len(choices)
    if mode == "wrap":
        index = index % n
    elif mode == "clip":
        index = np.clip(index, 0, n - 1)
    elif np.any(index < 0) or np.any(index >= n):
        raise ValueError("invalid entry in choice array")
    result = np.where(index == n - 1, choices[n - 1], choices[0])
    for k in range(1, n - 1):
        result = np.where(index == k, choices[k], result)
    return result


def ndarray_choose(self: t.Any, choices: t.Any, out: t.Any = None, mode: str = "raise") -> t.Any:
    return choose(self, choices, out, mode)


def compress(condition: t.Any, a: t.Any, axis: t.Any = None, out: t.Any = None) -> t.Any:
    """``np.compress``: the slices of ``a`` along ``axis`` (of the flattened ``a`` for None)
    where ``condition`` is true."""
    _no_out(out, "np.compress")
    picked = np.flatnonzero(np.asarray(condition))
    if axis is None:
        return np.take(np.ravel(a), picked)
    return np.take(np.asarray(a), picked, axis=axis)


def ndarray_compress(self: t.Any, condition: t.Any, axis: t.Any = None, out: t.Any = None) -> t.Any:
    return compress(condition, self, axis, out)


def select(condlist: t.Any, choicelist: t.Any, default: t.Any = 0) -> t.Any:
    """``np.select``: the choice of the first true condition, ``default`` where none is."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(choicelist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    result = np.where(np.asarray(condlist[-1]), choicelist[-1], default)
    for k in range(len(condlist) - 2, -1, -1):
        result = np.where(np.asarray(condlist[k]), choicelist[k], result)
    return result


def put(a: t.Any, ind: t.Any, v: t.Any, mode: str = "raise") -> None:
    """``np.put``: ``a.flat[ind] = v``, v repeated to the indices' number."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"argument 1 must be numpy.ndarray, not {type(a).__name__}")
    index = np.ravel(np.asarray(ind))
    n = a.size
    if mode == "wrap":
        index = index % n
    elif mode == "clip":
        index = np.clip(index, 0, n - 1)
    elif np.any(index >= n) or np.any(index < -n):
        raise IndexError(f"index out of range for array of size {n}")
    a[np.unravel_index(index % n, a.shape)] = _cycled(v, index.size)


def place(arr: t.Any, mask: t.Any, vals: t.Any) -> None:
    """``np.place``: the true places of ``mask`` take ``vals`` in order, repeated."""
    where = np.reshape(np.asarray(mask, dtype=bool), arr.shape)
    count = int(np.count_nonzero(where))
    if count:
        arr[where] = _cycled(vals, count)


def putmask(a: t.Any, mask: t.Any, values: t.Any) -> None:
    """``np.putmask``: ``a[i] = values[i % len(values)]`` (flat positions) where ``mask``."""
    where = np.reshape(np.asarray(mask, dtype=bool), a.shape)
    repeated = np.reshape(_cycled(values, a.size), a.shape)
    a[where] = repeated[where]


def fill_diagonal(a: t.Any, val: t.Any, wrap: bool = False) -> None:
    """``np.fill_diagonal``: the main diagonal (of a tall matrix past its square part only
    with ``wrap``; of every axis of a cube) takes ``val``, repeated."""
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if a.ndim == 2:
        rows, cols = a.shape
        step = cols + 1
        end = a.size if wrap else min(rows, cols) * cols
        flat = np.arange(0, end, step)
    else:
        if any(d != a.shape[0] for d in a.shape):
            raise ValueError("All dimensions of input must be of equal length")
        step = int(np.sum(np.cumprod((1,) + a.shape[:-1])))
        flat = np.arange(0, a.size, step)
    a[np.unravel_index(flat, a.shape)] = _cycled(val, flat.size)


def ediff1d(ary: t.Any, to_end: t.Any = None, to_begin: t.Any = None) -> t.Any:
    """``np.ediff1d``: the differences of the flattened array, after ``to_begin``, before
    ``to_end`` (flattened, in the array's dtype)."""
    flat = np.ravel(np.asanyarray(ary))
    parts = [np.diff(flat)]
    if to_begin is not None:
        parts = [np.ravel(np.asarray(to_begin, dtype=flat.dtype)), *parts]
    if to_end is not None:
        parts = [*parts, np.ravel(np.asarray(to_end, dtype=flat.dtype))]
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def interp(
    x: t.Any, xp: t.Any, fp: t.Any, left: t.Any = None, right: t.Any = None, period: t.Any = None
) -> t.Any:
    """``np.interp``: piecewise linear through ``(xp, fp)`` (``xp`` increasing), ``left`` and
    ``right`` (``fp``'s ends by default) outside, in NumPy's order of tests; its derivatives in
    x (the slope), fp (the two weights) and xp follow from the formula."""
    if period is not None:
        raise UnsupportedArgumentError("np.interp with period=: no rule")
    at = np.asarray(x, dtype=float)
    xp = np.asarray(xp, dtype=float)
    fp = np.asarray(fp)
    n = xp.shape[0]
    if np.any(np.diff(xp) < 0):  # (NumPy's values are meaningless there, its slopes more so)
        raise UnsupportedArgumentError("np.interp with xp not increasing: no rule (sort xp)")
    lo = fp[0] if left is None else left
    hi = fp[n - 1] if right is None else right
    if n == 1:
        inside = np.where(at == xp[0], fp[0], fp[0])
    else:
        j = np.clip(np.searchsorted(xp, at, side="right") - 1, 0, n - 2)
        x0, x1, y0, y1 = xp[j], xp[j + 1], fp[j], fp[j + 1]
        slope = (y1 - y0) / (x1 - x0)
        inside = np.where(at == x0, y0, slope * (at - x0) + y0)
        inside = np.where(at == xp[n - 1], fp[n - 1], inside)
    y = np.where(at > xp[-1], hi, np.where(at < xp[0], lo, inside))
    return y[()] if y.ndim == 0 else y  # (a scalar of a scalar x, as NumPy gives)


def wrapfunc(obj: t.Any, method: str, *args: t.Any, **kwds: t.Any) -> t.Any:
    """NumPy's ``_wrapfunc``: ``obj``'s method, of the array made of ``obj`` where it has none
    (a list, a number: a NumPy scalar's methods are the 0-d array's)."""
    if isinstance(obj, np.ndarray):
        return getattr(obj, method)(*args, **kwds)
    return getattr(np.asarray(obj), method)(*args, **kwds)


for _fn, _twin in (
    (np.choose, choose), (np.ndarray.choose, ndarray_choose),
    (np.compress, compress), (np.ndarray.compress, ndarray_compress),
    (np.select, select), (np.put, put), (np.place, place), (np.putmask, putmask),
    (np.fill_diagonal, fill_diagonal), (np.ediff1d, ediff1d), (np.interp, interp),
    (getattr(_fromnumeric, "_wrapfunc"), wrapfunc),
):  # fmt: skip
    register_twin(_fn, t.cast(types.FunctionType, _twin))
