"""The functions that reorder an array's values, both modes: ``np.sort``, ``np.partition``,
``np.unique`` of one array (its other forms are NumPy's Python, derived).

In reverse mode the cotangent scatters back through the permutation (a copy rule of
``shapes``); in forward mode a reordering moves each value's tangent with it: ``dz = take_along_axis(dx, perm, axis)`` with
``perm`` the permutation of a stable sort, the one the reverse rules scatter through (equal
values are interchangeable, the tangent of the first taken first).  The tangents are written
out (plain calls of NumPy's functions, which reverse mode differentiates again: Hessian-vector
products follow).
"""

from __future__ import annotations

import operator
import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.ir.exceptions import UnsupportedArgumentError
from gibbous.library.arrays.shapes import copy_rrule
from gibbous.library.common import ARRAY, CD, Array, bind
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules import frules
from gibbous.rules.registry import primitive
from gibbous.rules.emit import Emit, Keywords, Tangents, Values, number_type, real_type, zero

_INDEX = np.dtype(np.intp).name

# --------------------------------------------------------------------------------------------
# Reverse mode


def _back_sort(g: Array, x: CD, args: tuple[CD, ...], kwargs: dict[str, CD]) -> Array:
    options = bind(("axis", "kind", "order", "stable"), args, kwargs, {"axis": -1}, "sort")
    if options.get("order") is not None:
        raise UnsupportedArgumentError("np.sort with order=: no rule")
    xp = np.asarray(x.primal)
    axis = options["axis"]
    flat = axis is None
    source = xp.reshape(-1) if flat else xp
    ax = -1 if flat else t.cast(int, axis)
    # The stable order: that of the sort itself wherever the values differ.
    perm = np.argsort(source, axis=ax, kind="stable")
    grad = np.zeros(source.shape, dtype=g.dtype)
    np.put_along_axis(grad, perm, g, axis=ax)
    return grad.reshape(xp.shape)


def _back_partition(g: Array, x: CD, args: tuple[CD, ...], kwargs: dict[str, CD]) -> Array:
    """``np.partition(x, kth, axis=-1)`` permutes x's values along the axis.  ``np.argpartition``
    need not give the permutation ``partition`` made, so it is found by matching values: the
    k-th smallest of x (a stable sort) went where the k-th smallest of the result is.  Equal
    values are interchangeable, as for ``np.sort``.  (The result is made again: ``partition``
    is deterministic, and a copy rule's pullback is not handed it.)"""
    options = bind(("kth", "axis", "kind", "order"), args, kwargs, {"axis": -1}, "partition")
    if options.get("order") is not None:
        raise UnsupportedArgumentError("np.partition with order=: no rule")
    xp = np.asarray(x.primal)
    flat = options["axis"] is None
    source = xp.reshape(-1) if flat else xp
    ax = -1 if flat else t.cast(int, options["axis"])
    g = np.asarray(g).reshape(source.shape)
    kth = np.unique(np.mod(np.atleast_1d(np.asarray(options["kth"], dtype=np.intp)), source.shape[ax]))
    if not np.delete(g, kth, axis=ax).any():
        # Only the k-th positions have a cotangent (a median, a percentile): their values are
        # the order statistics, which ``np.argpartition`` places there too, in O(n) where
        # matching every value takes two sorts.
        at = np.take(np.argpartition(source, kth, axis=ax), kth, axis=ax)
        grad = np.zeros(source.shape, dtype=g.dtype)
        np.put_along_axis(grad, at, np.take(g, kth, axis=ax), axis=ax)
        return grad.reshape(xp.shape)
    y = np.partition(source, t.cast(t.Any, options["kth"]), axis=ax)
    came_from = np.argsort(source, axis=ax, kind="stable")
    went_to = np.argsort(y, axis=ax, kind="stable")
    grad = np.zeros(source.shape, dtype=g.dtype)
    np.put_along_axis(grad, came_from, np.take_along_axis(g, went_to, ax), axis=ax)
    return grad.reshape(xp.shape)


def _back_unique(g: Array, x: CD, args: tuple[CD, ...], kwargs: dict[str, CD]) -> Array:
    """``np.unique(x)``: each distinct value's cotangent to its first occurrence."""
    xp = np.asarray(x.primal)
    first = np.unique(xp, return_index=True)[1]
    grad = np.zeros(xp.size, dtype=g.dtype)
    grad[first] = g
    return grad.reshape(xp.shape)


primitive(np.sort, ARRAY, ...)(copy_rrule(_back_sort))
primitive(np.partition, ARRAY, ...)(copy_rrule(_back_partition))
primitive(np.unique, ARRAY)(copy_rrule(_back_unique))  # (the other forms: NumPy's Python)

# --------------------------------------------------------------------------------------------
# Forward mode



def _option(
    args: Values, kwargs: Keywords, name: str, position: int, default: object
) -> Value | Constant:
    if len(args) > position:
        return args[position]
    return kwargs.get(name, Constant(default))


def _no_order(types: tuple[T.Type, ...], kwnames: tuple[str, ...], position: int) -> bool:
    """No ``order=`` (of structured arrays), by position or keyword."""
    n = len(types) - len(kwnames)
    order = types[position] if n > position else types[n + kwnames.index("order")] if "order" in kwnames else None
    return order is None or order == T.NONE or isinstance(order, T.Const) and order.value is None


def _takes(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...], names: set[str]
) -> bool:
    """A real array (or a value whose type the build could not tell: checked at run time)
    with a tangent, the other operands constants."""
    if not types or not set(kwnames) <= names or not varied[0]:
        return False
    if any(v and not isinstance(ty, T.Any) for ty, v in zip(types[1:], varied[1:])):
        return False
    first = types[0]
    return isinstance(first, T.Any) or isinstance(first, T.Array) and real_type(first) and number_type(first)


def _at_run_time(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], axis_at: int | None,
    permutation: t.Callable[[t.Any, t.Any, t.Any], t.Any],
) -> frules.Tangent:
    """The tangent function of a reordering whose operand's type the build could not tell:
    ``take_along_axis(dx, permutation(z, x, axis), axis)``, x checked to be real."""
    n = len(types) - len(kwnames)

    def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        dx = a[n]
        if dx is None:
            return frules.like(z, None)
        x = np.asarray(a[0])
        if axis_at is None:
            return frules.like(z, np.take(np.ravel(dx), permutation(z, x, None)))
        axis = a[axis_at] if n > axis_at else kwargs.get("axis", -1)
        dx = np.broadcast_to(dx, x.shape)
        return frules.like(z, np.take_along_axis(dx, permutation(z, x, axis), axis))

    return frules.checked(tangent, types[:1])


def _index(like: Value) -> T.Type:
    return T.Array(_INDEX, like.type.ndim if isinstance(like.type, T.Array) else None)


def _argsort(b: Builder, x: Value, axis: Value, like: Value) -> Value:
    """The permutation of a stable sort of ``x`` along ``axis``."""
    stable = {"kind": Constant("stable")}
    return b.call(np.argsort, x, axis, kwargs=stable, type=_index(like))


def _permuted(
    axis_at: int, permutation: t.Callable[[Builder, Value, Value, Value], Value]
) -> Emit:
    """The tangent ``take_along_axis(dx, perm, axis)``, ``perm = permutation(b, z, x, axis)``
    (the axis the ``axis_at`` positional or ``axis=``, -1 by default)."""

    def emit(b: Builder, z: Value, args: Values, tangents: Tangents, kwargs: Keywords) -> Value:
        dx = tangents[0]
        if dx is None:
            return zero(b, z)
        axis = _option(args, kwargs, "axis", axis_at, -1)
        perm = permutation(b, z, args[0], axis)
        return b.call(np.take_along_axis, dx, perm, axis, type=z.type)

    return Emit(emit)


def _sort_make(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | Emit | None:
    """``np.sort(x, axis=-1, kind=None, order=None, *, stable=None)``."""
    names = {"axis", "kind", "order", "stable"}
    if len(types) - len(kwnames) > 4 or not _takes(types, kwnames, varied, names):
        return None
    if not _no_order(types, kwnames, 3):
        return None
    if isinstance(types[0], T.Any):
        return _at_run_time(types, kwnames, 1, lambda z, x, axis: np.argsort(x, axis, kind="stable"))
    return _permuted(1, lambda b, z, x, axis: _argsort(b, x, axis, z))


def _partition_make(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | Emit | None:
    """``np.partition(x, kth, axis=-1, kind="introselect", order=None)``: the permutation is
    found by matching values, as the reverse rule finds it: the k-th smallest of x (a stable
    sort's) went where the k-th smallest of the result is."""
    names = {"axis", "kind", "order"}
    n = len(types) - len(kwnames)
    if n < 2 or n > 5 or not _takes(types, kwnames, varied, names) or not _no_order(types, kwnames, 4):
        return None

    if isinstance(types[0], T.Any):
        return _at_run_time(types, kwnames, 2, _matched)

    def perm(b: Builder, z: Value, x: Value, axis: Value) -> Value:
        came_from, went_to = _argsort(b, x, axis, z), _argsort(b, z, axis, z)
        back = _argsort(b, went_to, axis, z)
        return b.call(np.take_along_axis, came_from, back, axis, type=_index(z))

    return _permuted(2, perm)


def _matched(z: t.Any, x: t.Any, axis: t.Any) -> t.Any:
    """Where each value of a partition came from (``_partition_make``), at run time."""
    came_from = np.argsort(x, axis, kind="stable")
    back = np.argsort(np.argsort(z, axis, kind="stable"), axis, kind="stable")
    return np.take_along_axis(came_from, back, axis)


def _unique_make(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | Emit | None:
    """``np.unique(x)`` (no ``return_*``, no axis): the sorted distinct values of x flattened,
    each with the tangent of its first occurrence (NumPy's ``return_index``)."""
    flags = {"return_index", "return_inverse", "return_counts", "equal_nan", "sorted"}
    if kwnames and len(types) == 1 + len(kwnames) and _takes(types, kwnames, varied, flags):
        return frules.checked(_unique_flagged, types[:1])
    if len(types) != 1 or kwnames or not _takes(types, kwnames, varied, set()):
        return None
    if isinstance(types[0], T.Any):
        return _at_run_time(types, kwnames, None, lambda z, x, axis: np.unique(x, return_index=True)[1])

    def emit(b: Builder, z: Value, args: Values, tangents: Tangents, kwargs: Keywords) -> Value:
        dx = tangents[0]
        if dx is None:
            return zero(b, z)
        pair = T.Tuple((z.type, T.Array(_INDEX, 1)))
        found = b.call(np.unique, args[0], kwargs={"return_index": Constant(True)}, type=pair)
        first = b.call(operator.getitem, found, 1, type=T.Array(_INDEX, 1))
        return b.call(np.take, dx, first, type=z.type)

    return Emit(emit)


def _unique_flagged(z: t.Any, x: t.Any, dx: t.Any, *_flags: t.Any, **kwargs: t.Any) -> t.Any:
    """``np.unique(x, return_index=..., ...)`` (np.unique_all's, np.unique_counts'...): the
    values' tangents those of their first occurrences (NumPy's own ``return_index``, with the
    same ``equal_nan`` and ``sorted``), none for the indices and counts."""
    values = z[0] if isinstance(z, tuple) else z
    if dx is None:
        return frules.like(z, None)
    same = {k: v for k, v in kwargs.items() if k in ("equal_nan", "sorted")}
    first = np.unique(x, return_index=True, **same)[1]
    d = frules.like(values, np.take(np.ravel(dx), first))
    if not isinstance(z, tuple):
        return d
    return (d, *[frules.like(item, None) for item in z[1:]])  # (a list: hvp derives it)


frules.register(np.sort, _sort_make, numeric=True)
frules.register(np.partition, _partition_make, numeric=True)
frules.register(np.unique, _unique_make, numeric=True)
