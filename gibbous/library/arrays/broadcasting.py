"""Broadcasting in NumPy's own Python: ``np.broadcast`` (an object whose shape ``logspace``
reads), and twins (``gibbous.infer.implementations``) of the private helpers that
``np.broadcast_arrays`` and ``np.meshgrid`` call, whose own code runs ``np.nditer`` or sets
``ndarray.shape``, so that those two are derived from NumPy's Python in both modes:

* ``_broadcast_shape(*arrays)``: ``np.broadcast_shapes`` of their shapes, without derivative;
* ``_broadcast_to(array, shape, subok, readonly)``: ``np.broadcast_to`` (a view; NumPy's is
  writeable where ``readonly`` is False, with a warning on writing: no derivative differs);
* ``broadcast_arrays``: NumPy's body, a loop for its comprehension;
* ``meshgrid``: NumPy's body, each output reshaped once where NumPy sets ``x.shape`` again.

Both are linear in their arrays together: their tangent is the call itself of the tangents
(zeros for an operand without one), written out where the types are known, as a join's is
(``frules.register_linear_in``; NumPy's Python, a loop over arrays of as many types as there
are arguments, leaves forward mode types it cannot tell).
"""

from __future__ import annotations

import types
import typing as t

import numpy as np
from numpy.lib import _stride_tricks_impl

from gibbous.infer.implementations import register_twin
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Value
from gibbous.rules import frules
from gibbous.rules.emit import item_tangent, static_types
from gibbous.rules.registry import zero_derivative

# ``np.broadcast(*arrays)``: a shape, ndim and size, without derivative.
zero_derivative(np.broadcast, ...)
zero_derivative(np.broadcast_shapes, ...)


def broadcast_shape(*args: t.Any) -> tuple[int, ...]:
    """NumPy's ``_broadcast_shape``: the shape the arrays broadcast to."""
    return np.broadcast_shapes(*[np.shape(a) for a in args])


def broadcast_to(array: t.Any, shape: t.Any, subok: t.Any = False, readonly: t.Any = True) -> t.Any:
    """NumPy's ``_broadcast_to``: the array as a view of ``shape``."""
    return np.broadcast_to(array, shape)


def broadcast_arrays(*args: t.Any, subok: t.Any = False) -> tuple[t.Any, ...]:
    """NumPy's ``broadcast_arrays``, a loop where NumPy has a comprehension (whose cell holding
    the shape forward mode could not tell from a value with a tangent)."""
    shape = np.broadcast_shapes(*[np.shape(a) for a in args])
    result = []
    for a in args:
        a = np.asarray(a)
        result.append(a if a.shape == shape else np.broadcast_to(a, shape))
    return tuple(result)


def meshgrid(*xi: t.Any, copy: t.Any = True, sparse: t.Any = False, indexing: t.Any = "xy") -> t.Any:
    """NumPy's ``meshgrid``, each output reshaped once (NumPy sets the first two outputs'
    shapes again for ``indexing="xy"``: the same views)."""
    ndim = len(xi)
    if indexing not in ["xy", "ij"]:
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    output = []
    for i, x in enumerate(xi):
        shape = [1] * ndim
        swapped = indexing == "xy" and ndim > 1 and i < 2  # (the first two axes swapped)
        shape[1 - i if swapped else i] = -1
        output.append(np.asanyarray(x).reshape(tuple(shape)))
    if not sparse:
        output = list(broadcast_arrays(*output))
    if copy:
        output = [x.copy() for x in output]
    return tuple(output)


_private: t.Any = _stride_tricks_impl
register_twin(_private._broadcast_shape, t.cast(types.FunctionType, broadcast_shape))
register_twin(_private._broadcast_to, t.cast(types.FunctionType, broadcast_to))
register_twin(np.broadcast_arrays, t.cast(types.FunctionType, broadcast_arrays))
register_twin(np.meshgrid, t.cast(types.FunctionType, meshgrid))
zero_derivative(_private._broadcast_shape, ...)  # (a shape: the twin types it)


def joint_tangent(fn: t.Callable[..., t.Any], options: frozenset[str]) -> frules.Maker:
    """The forward rule of ``fn(*arrays, **options)``, linear in its arrays together."""

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> frules.Tangent | frules.Emit | None:
        n = len(types) - len(kwnames)
        if not set(kwnames) <= options or any(varied[n:]):
            return None
        if not all(frules.real_operand(ty) for ty in types[:n]):
            return None
        if static_types(types):

            def emit(
                b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents,
                kwargs: frules.Keywords,
            ) -> Value:
                if all(d is None for d in tangents[:n]):
                    return frules.zero(b, z)
                moved = [item_tangent(b, a, d) for a, d in zip(args, tangents)]
                return b.call(fn, *moved, kwargs=kwargs, type=z.type)

            return frules.Emit(emit)

        def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
            if all(d is None for d in a[n:]):
                return frules.like(z, None)
            moved = [frules.like(v, None) if d is None else d for v, d in zip(a[:n], a[n:])]
            return frules.like(z, fn(*moved, **kwargs))

        return frules.checked(tangent, types[:n])

    return make


frules.register(np.broadcast_arrays, joint_tangent(np.broadcast_arrays, frozenset({"subok"})))
frules.register(np.meshgrid, joint_tangent(np.meshgrid, frozenset({"copy", "sparse", "indexing"})))

# NumPy's axis normalization: ints, whatever the axis argument's type the build could tell
# (``_ureduce`` and ``moveaxis`` in ``np.quantile`` pass theirs on).
zero_derivative(np.lib.array_utils.normalize_axis_tuple, ...)
