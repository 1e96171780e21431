"""The ufunc methods ``reduce``, ``accumulate``, ``outer``, ``at`` and ``reduceat``, for every
binary ufunc, from the ufunc's own rule.

Each method is a twin (``gibbous.infer.implementations``): plain Python computing what NumPy's
C loop computes, by calls of the ufunc itself, so that both modes and Hessian-vector products
derive their rules from the ufunc's elementwise rule, one mechanism for all of them.  A fold
along the reduced axis is the general form (``np.subtract.reduce`` is ``((a0 - a1) - a2)``);
the reductions with a rule of their own take it (``np.add.reduce`` is ``np.sum``).

``reduce`` takes ``axis`` (an int, a tuple for a reorderable ufunc, None), ``dtype``, ``out``,
``keepdims``, ``initial`` and ``where``; ``accumulate`` and ``reduceat`` ``axis``, ``dtype`` and
``out``; ``outer`` the ufunc's own keywords; ``at`` writes in place, unbuffered (a repeated
index applies the ufunc once per occurrence), element by element.
"""

from __future__ import annotations

import types
import typing as t

import numpy as np

from gibbous.infer.implementations import register_twin, twin_helper
from gibbous.ir.exceptions import GibbousError

_NO_VALUE: t.Any = getattr(np, "_NoValue", None)

#: NumPy 2.4's power.reduce of a contiguous 1-d float array gives a[0] ** a[-1] (the fold
#: along an axis of a 2-d array is right): a twin computing the fold would not be its twin.
_POWER_ENDS = bool(np.power.reduce(np.array([2.0, 3.0, 2.0])) != 64.0)

#: Ufuncs whose reduction does not depend on the order of the operands (NumPy's
#: "reorderable"): they reduce over several axes at once.
_REORDERABLE = frozenset(
    ("add", "multiply", "maximum", "minimum", "fmax", "fmin", "logaddexp", "logaddexp2",
     "hypot", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
     "bitwise_xor", "gcd", "lcm")
)  # fmt: skip


@twin_helper
def over_no_axes(ufunc: t.Any, a: t.Any, initial: t.Any, where: t.Any) -> t.Any:
    """A reduction over no axis: each element itself, combined with ``initial`` if given, and
    ``initial`` (or the identity) where ``where`` is False."""
    result = a if initial is _NO_VALUE else ufunc(initial, a)
    if where is True:
        if a.ndim:
            return np.array(result)  # (a new array, as a reduction's)
        return a[()] if initial is _NO_VALUE else result  # (a scalar, as NumPy's)
    fill = ufunc.identity if initial is _NO_VALUE else initial
    return np.where(where, result, fill)


@twin_helper
def fold(ufunc: t.Any, a: t.Any, axis: int, initial: t.Any, where: t.Any) -> t.Any:
    """``ufunc`` folded along ``axis`` of ``a``, from ``initial`` if given, skipping the
    elements where ``where`` is False (from the ufunc's identity if no ``initial``)."""
    axis = axis % a.ndim
    n = a.shape[axis]
    if where is not True and initial is _NO_VALUE:
        initial = ufunc.identity
        if initial is None:
            raise ValueError(
                f"reduction operation '{ufunc.__name__}' does not have an identity, so to use a "
                "where mask one has to specify 'initial'"
            )
    if n == 0:
        if initial is _NO_VALUE:
            raise ValueError(
                f"zero-size array to reduction operation {ufunc.__name__} which has no identity"
            )
        return np.full(a.shape[:axis] + a.shape[axis + 1 :], initial, dtype=a.dtype)
    first = np.take(a, 0, axis=axis)
    acc = first if initial is _NO_VALUE else ufunc(initial, first)
    if where is not True:
        mask = np.broadcast_to(where, a.shape)
        acc = np.where(np.take(mask, 0, axis=axis), acc, initial)
        for i in range(1, n):
            acc = np.where(np.take(mask, i, axis=axis), ufunc(acc, np.take(a, i, axis=axis)), acc)
        return acc[()] if a.ndim == 1 else acc  # (a number, as NumPy's, not a 0-d array)
    for i in range(1, n):
        acc = ufunc(acc, np.take(a, i, axis=axis))
    return acc


@twin_helper
def fold_axes(ufunc: t.Any, a: t.Any, axes: tuple[int, ...], initial: t.Any, where: t.Any) -> t.Any:
    """``fold`` over several axes at once (a reorderable ufunc's): moved to the front and
    flattened into one."""
    if ufunc.__name__ not in _REORDERABLE:
        raise ValueError(
            f"reduction operation '{ufunc.__name__}' is not reorderable, so at most one axis "
            "may be specified"
        )
    front = tuple(range(len(axes)))
    b = np.moveaxis(a, axes, front)
    flat = np.reshape(b, (-1,) + b.shape[len(axes) :])
    mask = where
    if where is not True:
        mask = np.reshape(np.moveaxis(np.broadcast_to(where, a.shape), axes, front), flat.shape)
    return fold(ufunc, flat, 0, initial, mask)


def ufunc_reduce(
    ufunc: t.Any,
    array: t.Any,
    axis: t.Any = 0,
    dtype: t.Any = None,
    out: t.Any = None,
    keepdims: t.Any = False,
    initial: t.Any = _NO_VALUE,
    where: t.Any = True,
) -> t.Any:
    """``ufunc.reduce(array, axis, dtype, out, keepdims, initial, where)``."""
    a = np.asarray(array) if dtype is None else np.asarray(array, dtype=dtype)
    plain = initial is _NO_VALUE and where is True
    if plain and ufunc is np.add:
        result = np.sum(a, axis=axis, keepdims=keepdims)
    elif plain and ufunc is np.multiply:
        result = np.prod(a, axis=axis, keepdims=keepdims)
    elif plain and ufunc is np.maximum and a.size > 0:
        result = np.max(a, axis=axis, keepdims=keepdims)
    elif plain and ufunc is np.minimum and a.size > 0:
        result = np.min(a, axis=axis, keepdims=keepdims)
    else:
        if ufunc is np.power and _POWER_ENDS and a.ndim == 1 and a.shape[0] > 2:
            raise GibbousError(
                "numpy.power.reduce of a 1-d array of more than two elements: this NumPy "
                "computes a[0] ** a[-1] there, not the fold ((a[0] ** a[1]) ** a[2]) ... that "
                "it computes along an axis of a 2-d array; gibbous differentiates neither "
                "(write the fold, or np.power.accumulate(a)[-1])"
            )
        if a.ndim == 0 and axis in (None, 0, -1):
            axis = ()  # (NumPy reduces a 0-d array over axis 0 or -1 too: ``np.any(np.False_)``)
        elif axis is None and a.ndim > 1:
            axis = tuple(range(a.ndim))
        elif axis is None:
            axis = 0
        if isinstance(axis, tuple) and len(axis) == 1:
            axis = axis[0]
        if axis == ():
            result = over_no_axes(ufunc, a, initial, where)
            axes: tuple[t.Any, ...] = ()
        elif isinstance(axis, tuple):
            result = fold_axes(ufunc, a, axis, initial, where)
            axes = axis
        else:
            result = fold(ufunc, a, axis, initial, where)
            axes = (axis,)
        if keepdims:
            result = np.expand_dims(result, axes)
    if out is None:
        return result
    out[...] = result
    return out


def ufunc_accumulate(
    ufunc: t.Any, array: t.Any, axis: int = 0, dtype: t.Any = None, out: t.Any = None
) -> t.Any:
    """``ufunc.accumulate(array, axis, dtype, out)``: every partial fold along ``axis``."""
    a = np.asarray(array) if dtype is None else np.asarray(array, dtype=dtype)
    if a.ndim == 0:
        raise TypeError("cannot accumulate on a scalar")
    if ufunc is np.add:
        result = np.cumsum(a, axis=axis)
    elif ufunc is np.multiply:
        result = np.cumprod(a, axis=axis)
    elif a.shape[axis] == 0:
        result = np.copy(a)
    else:
        b = np.moveaxis(a, axis, 0)
        acc = b[0]
        parts = [acc]
        for i in range(1, b.shape[0]):
            acc = ufunc(acc, b[i])
            parts.append(acc)
        result = np.moveaxis(np.stack(parts), 0, axis)
    if out is None:
        return result
    out[...] = result
    return out


def ufunc_outer(ufunc: t.Any, A: t.Any, B: t.Any, **kwargs: t.Any) -> t.Any:
    """``ufunc.outer(A, B)``: ``ufunc(A[..., None, ...], B)``, every pair of elements."""
    a = np.asarray(A)
    b = np.asarray(B)
    return ufunc(np.reshape(a, a.shape + (1,) * b.ndim), b, **kwargs)


def ufunc_at(ufunc: t.Any, a: t.Any, indices: t.Any, b: t.Any = None) -> None:
    """``ufunc.at(a, indices, b)``: ``a[indices] = ufunc(a[indices], b)``, unbuffered: an
    index given twice is applied twice, in order."""
    flat = np.reshape(np.reshape(np.arange(a.size), a.shape)[indices], -1)
    count = flat.shape[0]
    if b is None:
        for k in range(count):
            i = np.unravel_index(flat[k], a.shape)
            a[i] = ufunc(a[i])
        return None
    shape = np.reshape(np.arange(a.size), a.shape)[indices].shape
    values = np.reshape(np.broadcast_to(b, shape), -1)
    for k in range(count):
        i = np.unravel_index(flat[k], a.shape)
        a[i] = ufunc(a[i], values[k])
    return None


def ufunc_reduceat(
    ufunc: t.Any, array: t.Any, indices: t.Any, axis: int = 0, dtype: t.Any = None, out: t.Any = None
) -> t.Any:
    """``ufunc.reduceat(array, indices, axis, dtype, out)``: the fold of each slice
    ``indices[j]:indices[j + 1]`` along ``axis`` (the element ``indices[j]`` where that slice
    is empty)."""
    a = np.asarray(array) if dtype is None else np.asarray(array, dtype=dtype)
    b = np.moveaxis(a, axis, 0)
    n = b.shape[0]
    starts = [int(i) for i in np.asarray(indices).reshape(-1)]
    parts = []
    for j in range(len(starts)):
        i = starts[j]
        k = starts[j + 1] if j + 1 < len(starts) else n
        if i < k:
            parts.append(fold(ufunc, b[i:k], 0, _NO_VALUE, True))
        else:
            parts.append(b[i])
    result = np.moveaxis(np.stack(parts), 0, axis)
    if out is None:
        return result
    out[...] = result
    return out


for _method, _twin in [
    (np.ufunc.reduce, ufunc_reduce),
    (np.ufunc.accumulate, ufunc_accumulate),
    (np.ufunc.outer, ufunc_outer),
    (np.ufunc.at, ufunc_at),
    (np.ufunc.reduceat, ufunc_reduceat),
]:
    register_twin(_method, t.cast(types.FunctionType, _twin))
