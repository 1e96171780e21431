"""Audit cases for making, reshaping and indexing arrays: ``gibbous.library.arrays.views_copies``,
``float_arrays``, ``gibbous.library.arrays.shapes`` and ``gibbous.library.arrays.indexing``.

Views are checked by the harness to carry the same view of their argument's fdata (check (d));
copies, joins and advanced indexing to send the cotangent back (check (a)).  Each pattern gets
float64 and, where the rule claims them, float32 and complex128 arguments, and several ranks.

The allocation policy (the audit runs every case with ``perf="allocs"``): a rule whose warm
primal allocates no NumPy memory allocates none in a warm forward + reverse.  The writes in
place, ``x[i] = v`` with every kind of index, ``x.fill(v)``, ``np.copyto(x, v)`` and
``x.sort()``, are stateful rules for that reason, and so are their cases' checks; so is
reading one element (``x[i]``, ``np.take(x, i)``, ``x.item(i)``).

``np.broadcast_to``'s cases declare the one check they fail (``interface``: the rule gives new
fdata to the read-only view; see ``BROADCAST``); the audit reports them as such.
"""

from __future__ import annotations

import builtins
import operator
import typing as t

import numpy as np

from gibbous.ir import runtime
from gibbous.testing import case
from gibbous.testing.cases import RuleCase

_rng = np.random.default_rng(20261202)


def normal(*shape: int, dtype: t.Any = np.float64) -> t.Any:
    """Standard normal values of ``shape`` (both parts for a complex ``dtype``)."""
    x = _rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * _rng.standard_normal(shape)
    return x.astype(dtype)


X = normal(3, 4)
X32 = normal(3, 4, dtype=np.float32)
XC = normal(3, 4, dtype=np.complex128)
X3 = normal(2, 3, 4)
V = normal(4)
V32 = normal(4, dtype=np.float32)
VC = normal(4, dtype=np.complex128)
S = normal(3, 1, 4)  # a size-1 axis to squeeze
# float32 gradients against finite differences need looser settings.
F32: dict[str, t.Any] = {"steps": (1e-2, 1e-3), "rtol": 1e-3, "atol": 1e-4}

# --------------------------------------------------------------------------------------------
# Views and copies: views_copies.SHAPE_OPS

VIEWS: list[RuleCase] = [
    case(np.reshape, X, (4, 3)),
    case(np.reshape, X32, -1, **F32),
    case(np.reshape, XC, (2, 6)),
    case(np.reshape, X.T, (12,)),  # not contiguous: a copy
    case(np.reshape, X, (4, 3), kwargs={"order": "F"}),
    case(np.ndarray.reshape, X, 4, 3),
    case(np.ndarray.reshape, X3, (6, 4)),
    case(np.ndarray.reshape, XC.T, -1),
    case(np.ravel, X),
    case(np.ravel, X.T),
    case(np.ravel, XC),
    case(np.ndarray.ravel, X3),
    case(np.ndarray.ravel, X32.T, **F32),
    case(np.ndarray.flatten, X),
    case(np.ndarray.flatten, XC, kwargs={"order": "F"}),
    case(np.transpose, X),
    case(np.transpose, X3, (1, 0, 2)),
    case(np.transpose, XC),
    case(np.ndarray.transpose, X, 1, 0),
    case(np.ndarray.transpose, X3),
    case(np.swapaxes, X3, 0, 2),
    case(np.swapaxes, X32, 0, 1, **F32),
    case(np.ndarray.swapaxes, XC, 1, 0),
    case(np.moveaxis, X3, 0, -1),
    case(np.moveaxis, XC, 1, 0),
    case(np.rollaxis, X3, 2),
    case(np.rollaxis, X3, -1, 1),
    case(np.rollaxis, XC, 1, kwargs={"start": 0}),
    case(np.squeeze, S),
    case(np.squeeze, S, kwargs={"axis": 1}),
    case(np.ndarray.squeeze, S.astype(np.complex128)),
    case(np.expand_dims, X, 1),
    case(np.expand_dims, VC, 0),
    case(np.expand_dims, V, (0, 2)),
    case(np.atleast_1d, np.array(1.5)),
    case(np.atleast_1d, V),
    case(np.atleast_2d, V),
    case(np.atleast_2d, XC),
    case(np.copy, X),
    case(np.copy, XC),
    case(np.copy, V32, **F32),
    case(np.ndarray.copy, X3),
    case(np.ndarray.copy, X.T),
    case(np.ndarray.astype, X, np.float32, **F32),
    case(np.ndarray.astype, X32, np.float64, **F32),
    case(np.ndarray.astype, X, np.complex128),
    case(np.ndarray.astype, XC, np.complex64, **F32),
    case(np.ndarray.astype, X, np.float64, kwargs={"copy": False}),
    case(np.ndarray.astype, X * 3.1, np.int64),  # no derivative
]

# --------------------------------------------------------------------------------------------
# Attributes of arrays and numbers

ATTRIBUTES: list[RuleCase] = [
    case(builtins.getattr, X, "T"),
    case(builtins.getattr, X3, "T"),
    case(builtins.getattr, XC, "real"),
    case(builtins.getattr, XC, "imag"),
    case(builtins.getattr, X, "real"),
    case(builtins.getattr, X32, "imag", **F32),
    *(
        case(builtins.getattr, X, name)
        for name in ("shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides", "flags")
    ),
    case(builtins.getattr, X, "sum"),  # a bound method carries x's fdata
    case(builtins.getattr, 1.5 - 2.5j, "real"),
    case(builtins.getattr, 1.5 - 2.5j, "imag"),
    case(builtins.getattr, 2.5, "imag"),
    case(builtins.getattr, np.float32(1.5), "real", **F32),
    case(builtins.getattr, 1.5 - 2.5j, "conjugate"),
    case(builtins.getattr, 3, "denominator"),
]

# --------------------------------------------------------------------------------------------
# np.array and friends

CONVERSIONS: list[RuleCase] = [
    case(np.array, [1.5, -0.5, 2.0]),
    case(np.array, [[1.5, -0.5], [2.0, 0.25]]),
    case(np.array, ([1.5, -0.5], (2.0, 0.25))),
    case(np.array, [1.5 + 1j, 0.5 - 2j]),
    case(np.array, [1.5, 2, 0.5], kwargs={"dtype": np.float32}, **F32),
    case(np.array, 2.5),
    case(np.array, X),
    case(np.array, X, kwargs={"copy": False}),
    case(np.asarray, [1.5, -0.5, 2.0]),
    case(np.asarray, (0.5, [1.0, 2.0][0])),
    case(np.asarray, X),
    case(np.asarray, XC),
    case(np.asarray, X, np.float32, **F32),
    case(np.asanyarray, X3),
    case(np.asanyarray, [[0.5, 1.5]]),
    case(np.ascontiguousarray, X.T),
    case(np.ascontiguousarray, X),
    case(np.ascontiguousarray, [0.5, 1.5]),
]

# ``np.array([a, b, ...])`` of floats as the array-items pass writes it: one case per number
# of items with a form (``float_items``), float and np.float64 items mixed; the general rule.
_ITEMS = (1.5, np.float64(-0.5), 2.25, np.float64(0.75), -1.25, 0.5, np.float64(3.0), 1.0, -2.0)
FLOAT_ARRAYS: list[RuleCase] = [
    *(case(runtime.float_array, *_ITEMS[:n]) for n in range(1, 10)),
    case(runtime.float_array, 1.5, 2, np.float64(0.5)),  # an int: no rdata
]

# --------------------------------------------------------------------------------------------
# Joins

JOINS: list[RuleCase] = [
    case(np.concatenate, (X, normal(2, 4))),
    case(np.concatenate, [X, normal(3, 2)], 1),
    case(np.concatenate, [X, V], kwargs={"axis": None}),
    case(np.concatenate, (XC, X), kwargs={"axis": -2}),
    case(np.concatenate, [V32, V32[:2]], **F32),
    case(np.stack, (V, V[::-1])),
    case(np.stack, [X, X + 1.0], 1),
    case(np.stack, [XC, XC], kwargs={"axis": -1}),
    case(np.hstack, (V, V[:2])),
    case(np.hstack, [X, normal(3, 2)]),
    case(np.hstack, [1.5, V]),
    case(np.vstack, (V, V)),
    case(np.vstack, [X, normal(1, 4), V]),
    case(np.vstack, [XC, XC[:1]]),
    case(np.column_stack, (V, V[::-1])),
    case(np.column_stack, [X, normal(3), XC[:, :1]]),
    case(np.dstack, (V, V)),
    case(np.dstack, [X, X[..., None]]),
]

# --------------------------------------------------------------------------------------------
# Diagonals

DIAGONALS: list[RuleCase] = [
    case(np.diag, V),
    case(np.diag, V, 1),
    case(np.diag, VC, kwargs={"k": -2}),
    case(np.diag, normal(4, 4)),
    case(np.diag, X, -1),
    case(np.diagflat, V),
    case(np.diagflat, X[:2, :2], 1),
    case(np.diagonal, X),
    case(np.diagonal, XC, 1),
    case(np.ndarray.diagonal, X, -1),
    case(np.trace, X),
    case(np.trace, XC, 1),
    case(np.ndarray.trace, normal(4, 4)),
]

# --------------------------------------------------------------------------------------------
# Constructors

CONSTRUCTORS: list[RuleCase] = [
    case(np.zeros, (2, 3)),
    case(np.zeros, 3, np.complex128),
    case(np.ones, (2, 3)),
    case(np.ones, 4, kwargs={"dtype": np.float32}),
    case(np.empty, 0),
    case(np.zeros_like, X),
    case(np.zeros_like, XC),
    case(np.ones_like, X32),
    case(np.empty_like, np.zeros(0)),
    case(np.eye, 3),
    case(np.eye, 3, 4, 1),
    case(np.identity, 3),
    case(np.full, (2, 3), 1.5),
    case(np.full, 3, 0.5 - 1j),
    case(np.full, (2, 4), V),
    case(np.full, (2,), 1.5, kwargs={"dtype": np.float32}, **F32),
    case(np.full_like, X, 2.5),
    case(np.full_like, X, V),
    case(np.full_like, XC, 1.5 + 0.5j),
    case(np.linspace, 0.5, 2.0, 5),
    case(np.linspace, -1.0, 1.5, 4, False),
    case(np.linspace, 0.5, 2.0, kwargs={"num": 3}),
    case(np.arange, 0.5, 3.2, 0.5),
    case(np.arange, 1.5, 4.0),
    case(np.arange, 4),
    case(np.arange, kwargs={"start": 0.5, "stop": 3.2, "step": 0.5}),  # (by keyword)
    case(np.arange, 0.5, 2.1, 0.25, kwargs={"dtype": np.float32}, **F32),
]

# --------------------------------------------------------------------------------------------
# x[index]

BASIC_INDICES: list[t.Any] = [
    1, -1, slice(1, 3), slice(None, None, -1), slice(3, 0, -2), Ellipsis, None,
    (1, 2), (-1, -2), (slice(None), 0), (Ellipsis, 1), (None, slice(1, None)),
    (slice(None, None, 2), None, Ellipsis), (1, Ellipsis), (), (slice(1, 2), slice(0, 3, 2)),
]  # fmt: skip
ADVANCED_INDICES: list[t.Any] = [
    np.array([0, 2, 2]), [1, 0, 1], np.array([True, False, True]), (slice(None), [0, 3, 0]),
    (np.array([0, 1, 1]), np.array([2, 3, 3])), np.array([[0, 1], [2, 2]]),
    (np.array([True, True, False]), slice(1, 3)), (Ellipsis, np.array([1, 1])),
    X > 0, (1, np.array([3, 0, 3])),
]  # fmt: skip

GETITEM: list[RuleCase] = [
    *(case(operator.getitem, X, i) for i in BASIC_INDICES),
    *(case(operator.getitem, X, i) for i in ADVANCED_INDICES),
    *(case(operator.getitem, XC, i) for i in (1, (0, 2), slice(None, None, -1), [2, 2])),
    *(case(operator.getitem, X32, i, **F32) for i in (0, (1, 1), np.array([1, 1]))),
    case(operator.getitem, V, 2),  # the real_array_element variant: one int per axis
    case(operator.getitem, V, -1),
    case(operator.getitem, X3, (1, 0, 3)),
    case(operator.getitem, V, True),  # a bool is an int to the types, a mask to NumPy
    case(operator.getitem, X3, (Ellipsis, None, 1)),
    case(operator.getitem, X3, (np.array([1, 0]), slice(None), np.array([3, 3]))),
    case(operator.getitem, np.array(2.5), ()),
    case(operator.getitem, np.array(2.5), Ellipsis),
    case(operator.getitem, np.arange(5), np.array([1, 1])),  # no derivative
]

# --------------------------------------------------------------------------------------------
# x[index] = value

SETITEM: list[RuleCase] = [
    case(operator.setitem, X, 1, 2.5),
    case(operator.setitem, X, -1, V),
    case(operator.setitem, X, (1, 2), -0.5),
    case(operator.setitem, X, (slice(None), 0), normal(3)),
    case(operator.setitem, X, slice(None, None, -1), V),  # broadcast over rows
    case(operator.setitem, X, (slice(3, None, -2), slice(None, None, 2)), normal(2, 1)),
    case(operator.setitem, X, Ellipsis, normal(3, 4)),
    case(operator.setitem, X, (None, 1), V),
    case(operator.setitem, X, (Ellipsis, 1), normal(3)),
    case(operator.setitem, X, (), 0.5),
    case(operator.setitem, X, np.array([0, 2, 2]), normal(3, 4)),  # the last write wins
    case(operator.setitem, X, [1, 0], V),
    case(operator.setitem, X, np.array([True, False, True]), 1.5),
    case(operator.setitem, X, X > 0, 0.5),
    case(operator.setitem, X, (np.array([0, 1, 1]), np.array([2, 3, 3])), normal(3)),
    case(operator.setitem, X, (slice(None), [0, 3]), normal(3, 2)),
    case(operator.setitem, X, 0, [0.5, 1.5, -2.0, 1.0]),
    case(operator.setitem, X, slice(1, None), [0.5, 1.5, -2.0, 1.0]),  # broadcast
    case(operator.setitem, X, [2, 0], ([0.5, 1.5, -2.0, 1.0], V)),
    case(operator.setitem, XC, (slice(None), 1), [0.5, 1.5, -2.0]),
    case(operator.setitem, XC, (0, 1), 1.5 - 0.5j),
    case(operator.setitem, XC, slice(1, None), normal(4, dtype=np.complex128)),
    case(operator.setitem, XC, np.array([2, 2]), normal(2, 4, dtype=np.complex128)),
    case(operator.setitem, X32, 0, V32, **F32),
    case(operator.setitem, X32, [1, 2], np.float32(0.5), **F32),
    case(operator.setitem, V, 2, 0.5),
    case(operator.setitem, V, slice(1, None), V[:-1]),  # the value aliases the array
    case(operator.setitem, X, [0, 1], X[2]),  # aliasing, advanced
    case(operator.setitem, X, (slice(None), np.array([3, 0])), X[:, 1:3]),
    case(operator.setitem, X.T, np.array([1, 3]), normal(3)),  # a non-contiguous target
    case(operator.setitem, X, X > 5.0, 0.5),  # nothing selected
    case(operator.setitem, X, [True, False, True], V),
    case(operator.setitem, X, (slice(None), [True, False, False, True]), normal(3, 1)),
    case(operator.setitem, np.zeros(4, dtype=np.int64), 1, 3),  # no derivative
    case(operator.setitem, np.arange(6), np.array([1, 4, 1]), np.array([7, 8, 9])),
    # x.fill(v) and np.copyto(x, v): x[...] = v
    case(np.ndarray.fill, X, 2.5),
    case(np.ndarray.fill, XC, 1.5 - 0.5j),
    case(np.ndarray.fill, X32, np.float32(0.5), **F32),
    case(np.ndarray.fill, X.T, 0.25),
    case(np.ndarray.fill, np.arange(4), 3),
    case(np.copyto, X, normal(3, 4)),
    case(np.copyto, X, V),
    case(np.copyto, X, 1.5),
    case(np.copyto, X, [0.5, 1.5, -1.0, 2.0]),
    case(np.copyto, XC, X),
    case(np.copyto, X, X[::-1]),  # the source aliases the destination
    case(np.copyto, X32, X, kwargs={"casting": "same_kind"}, **F32),
]

# --------------------------------------------------------------------------------------------
# shapes: flips, splits, broadcasts, tiles, repeats, rolls, sorts, takes (pads: transforms)

SORTABLE = np.array([[0.3, -1.2, 2.5, 0.9], [1.7, 0.1, -0.4, -2.2], [-0.8, 1.1, 0.6, 2.0]])
# Grown arrays repeat values, which would tie: the state check gets distinct ones.
SORTABLE_GROWN = (_rng.permutation(20).reshape(4, 5) - 9.5) * 0.37

SHAPES: list[RuleCase] = [
    case(np.flip, X),
    case(np.flip, X3, 1),
    case(np.flip, XC, kwargs={"axis": (0, 1)}),
    case(np.fliplr, X),
    case(np.flipud, V32, **F32),
    case(np.rot90, X),
    case(np.rot90, XC, 3),
    case(np.atleast_3d, V),
    case(np.atleast_3d, XC),
    case(np.tril, X),
    case(np.tril, XC, -1),
    case(np.triu, X, kwargs={"k": 1}),
    case(np.roll, V, 1),
    case(np.roll, X, -2, 1),
    case(np.roll, XC, (1, 2), kwargs={"axis": (0, 1)}),
    case(np.roll, X, 5),
    case(np.split, X, 3),
    case(np.split, X3, [1, 3], kwargs={"axis": 2}),
    case(np.split, VC, 2),
    case(np.array_split, V, 3),
    case(np.array_split, X, [1], 1),
    case(np.tile, V, 2),
    case(np.tile, X, (2, 1)),
    case(np.tile, V32, (2, 1, 2), **F32),
    case(np.tile, XC, 2),
    case(np.repeat, V, 2),
    case(np.repeat, X, [1, 0, 2], kwargs={"axis": 0}),
    case(np.repeat, XC, 2, -1),
    case(np.ndarray.repeat, X, 3),
    case(np.sort, SORTABLE, other_args=(SORTABLE_GROWN,)),
    case(np.sort, SORTABLE, 0, other_args=(SORTABLE_GROWN, 0)),
    case(np.sort, SORTABLE, kwargs={"axis": None}, other_args=(SORTABLE_GROWN,)),
    case(
        np.sort,
        SORTABLE.astype(np.float32),
        other_args=(SORTABLE_GROWN.astype(np.float32),),
        **F32,
    ),
    case(np.partition, SORTABLE, 2, other_args=(SORTABLE_GROWN, 2)),
    case(np.partition, SORTABLE, (0, 2), 0, other_args=(SORTABLE_GROWN, (0, 2), 0)),
    case(np.partition, SORTABLE, 5, kwargs={"axis": None}, other_args=(SORTABLE_GROWN, 5)),
    case(
        np.partition,
        SORTABLE[0] + 1j * SORTABLE[1],
        1,
        other_args=(SORTABLE_GROWN[0] + 1j * SORTABLE_GROWN[1], 1),
    ),
    case(np.take, X, np.array([0, 5, 5, 11])),
    case(np.take, V, np.array([-1, 0, -1])),
    case(np.take, X, [2, 0, 2], 1),
    case(np.take, XC, np.array([[1, 1], [0, 2]]), kwargs={"axis": 0}),
    case(np.take, V, 7, kwargs={"mode": "wrap"}),
    case(np.take, V, np.array([-1, 9]), kwargs={"mode": "clip"}),
    case(np.ndarray.take, X, np.array([3, 3])),
    case(np.take_along_axis, SORTABLE, np.argsort(SORTABLE, axis=1), 1),
    case(np.take_along_axis, X, np.array([[0, 0, 2, 1]]), kwargs={"axis": 0}),
    case(np.take_along_axis, V, np.array([3, 3, 0]), None),
    case(np.take_along_axis, XC, np.array([[1], [0], [3]]), -1),
    case(np.ndarray.sort, SORTABLE, other_args=(SORTABLE_GROWN,)),
    case(np.ndarray.sort, SORTABLE, 0, other_args=(SORTABLE_GROWN, 0)),
    case(np.ndarray.sort, SORTABLE.T, kwargs={"kind": "stable"}, other_args=(SORTABLE_GROWN.T,)),
    case(
        np.ndarray.sort,
        SORTABLE[0] + 1j * SORTABLE[1],
        other_args=(SORTABLE_GROWN[0] + 1j * SORTABLE_GROWN[1],),
    ),
    case(np.ndarray.sort, np.array([3, 1, 2])),
    case(np.diff, V),
    case(np.diff, X, 2),
    case(np.diff, XC, kwargs={"axis": 0}),
    case(np.diff, X3, 1, 1),
    case(np.ndarray.item, np.array([2.5])),
    case(np.ndarray.item, X, 5),
    case(np.ndarray.item, X, -1),
    case(np.ndarray.item, X, 1, 2),
    case(np.ndarray.item, XC, (2, 3)),
    case(np.ndarray.item, X32, 0, **F32),
    case(np.ndarray.tolist, X),
    case(np.ndarray.tolist, VC),
    case(np.ndarray.tolist, np.array(1.5)),
    case(np.ndarray.tolist, X32, **F32),
    case(np.ndarray.tolist, np.arange(3)),
]

# The tangent model makes the result's fdata the same zero-stride view of x's fdata as the
# result is of x, but in-place additions into such fdata keep only one of the cotangents of
# the repeats, so the rule gives new fdata and sums it into x's (tests/library/
# test_arrays.py): right gradients unless x is written after the broadcast and before the
# broadcast array is read.  The harness's interface check sees fdata without the zero strides.
_BROADCAST_WHY = (
    "new fdata for the read-only broadcast view: adding into zero-stride fdata would drop "
    "repeated cotangents"
)
BROADCAST: list[RuleCase] = [
    case(np.broadcast_to, V, (3, 4), deviation=("interface", _BROADCAST_WHY)),
    case(np.broadcast_to, X[:, :1], (2, 3, 4), deviation=("interface", _BROADCAST_WHY)),
    case(np.broadcast_to, VC, (2, 4), deviation=("interface", _BROADCAST_WHY)),
    case(np.broadcast_to, np.array(1.5), (3,), deviation=("interface", _BROADCAST_WHY)),
]

# --------------------------------------------------------------------------------------------
# No derivative: indices, counts, tests, rounding

QUERIES: list[RuleCase] = [
    case(np.nonzero, X > 0),
    case(np.nonzero, X),
    case(np.ndarray.nonzero, V),
    case(np.flatnonzero, X - 0.5),
    case(np.argwhere, XC),
    case(np.searchsorted, np.sort(V), 0.25),
    case(np.searchsorted, np.sort(V), X, kwargs={"side": "right"}),
    case(np.ndarray.searchsorted, np.sort(V32), V32),
    case(np.count_nonzero, X > 0.1),
    case(np.count_nonzero, X, kwargs={"axis": 1}),
    case(np.isclose, X, X + 1e-9),
    case(np.allclose, X, X),
    case(np.array_equal, X, X.copy()),
    case(np.round, X * 3.1),
    case(np.round, XC * 2.3, 1),
    case(np.around, X32 * 3.3, kwargs={"decimals": 1}),
    case(np.ndarray.round, X * 3.1, 2),
    *([case(np.fix, X * 2.7)] if hasattr(np, "fix") else []),
    case(np.round, 2.37, 1),
    case(np.around, np.float32(2.4)),
    *([case(np.fix, -2.7)] if hasattr(np, "fix") else []),
    case(np.any, X > 0),
    case(np.all, X, kwargs={"axis": 0}),
    case(np.ndarray.any, X),
    case(np.ndarray.all, X > -5.0),
    case(np.digitize, X, np.array([-0.5, 0.5])),
    case(np.argpartition, V, 1),
    case(np.iscomplexobj, XC),
    case(np.isreal, XC),
    case(np.isscalar, X),
    case(np.lexsort, (V, V ** 2)),
    case(np.indices, (2, 3)),
    case(np.tri, 3),
    case(np.unravel_index, 5, (3, 4)),
    case(np.unravel_index, np.array([1, 7]), (3, 4)),
    case(np.ravel_multi_index, (np.array([1, 2]), np.array([0, 3])), (3, 4)),
    case(np.shape, X),
    case(np.ndim, XC),
    case(np.size, X3),
    case(np.iterable, X),
    case(np.result_type, X, 1.5),
    case(np.can_cast, X, np.float32),
    case(np.promote_types, np.float32, np.int64),
    case(np.min_scalar_type, 2.5),
    case(np.issubdtype, np.float64, np.floating),
    case(np.isrealobj, XC),
    case(np.iscomplex, XC),
    case(np.isfortran, X),
    case(np.may_share_memory, X, X[1:]),
    case(np.shares_memory, X, X3),
    case(np.broadcast_shapes, (3, 1), (1, 4)),
    case(np.finfo, np.float32),
    case(np.iinfo, np.int16),
    case(np.dtype, "float32"),
    case(len, X),
    case(np.argmax, X),
    case(np.argmin, X, 1),
    case(np.argsort, SORTABLE),
    case(np.isnan, X),
    case(np.isfinite, XC),
    case(np.isinf, X32),
    case(np.floor, X * 2.9),
    case(np.ceil, X * 2.9),
    case(np.rint, X * 2.9),
    case(np.trunc, X * 2.9),
]

# --------------------------------------------------------------------------------------------
# Random numbers: every case draws from its own copy of a generator in a fixed state, so the
# rule and the primal draw the same numbers, and finite differences differentiate the path.
# The legacy functions (np.random.normal) are bound methods of NumPy's global RandomState,
# which the harness copies along with them (gibbous.testing.structure copies generators
# between its calls, so that f and the rule draw the same numbers).


def _generator() -> np.random.Generator:
    return np.random.default_rng(7)


def _legacy() -> np.random.RandomState:
    return np.random.RandomState(7)


RANDOM: list[RuleCase] = [
    case(np.random.Generator.normal, _generator()),
    case(np.random.Generator.normal, _generator(), 0.5, 2.0, 3),
    case(np.random.Generator.normal, _generator(), V, 1.5),
    case(
        np.random.Generator.normal, _generator(), 0.25, kwargs={"scale": V[:3] ** 2, "size": (2, 3)}
    ),
    case(np.random.Generator.uniform, _generator(), -1.0, 2.5, 4),
    case(np.random.Generator.uniform, _generator(), kwargs={"low": V, "high": 3.0}),
    case(np.random.Generator.exponential, _generator(), 1.5, (2, 2)),
    case(np.random.Generator.exponential, _generator(), kwargs={"scale": V ** 2}),
    case(np.random.Generator.random, _generator(), 3),
    case(np.random.Generator.standard_normal, _generator(), (2, 3)),
    case(np.random.Generator.standard_exponential, _generator(), 2),
    case(np.random.Generator.integers, _generator(), 0, 10, 4),
    case(np.random.Generator.poisson, _generator(), 2.5, 3),
    case(np.random.Generator.binomial, _generator(), 10, 0.3, 3),
    case(np.random.Generator.geometric, _generator(), 0.3, 3),
    case(np.random.Generator.bytes, _generator(), 4),
    case(np.random.Generator.choice, _generator(), 5, 3),
    case(np.random.Generator.permutation, _generator(), 5),
    case(np.random.RandomState.normal, _legacy(), 0.5, 2.0, 3),
    case(np.random.RandomState.normal, _legacy(), V),
    case(np.random.RandomState.uniform, _legacy(), -0.5, V),
    case(np.random.RandomState.exponential, _legacy(), 2.5),
    case(np.random.RandomState.rand, _legacy(), 2, 3),
    case(np.random.RandomState.randn, _legacy(), 3),
    case(np.random.RandomState.random, _legacy(), 3),
    case(np.random.RandomState.random_sample, _legacy(), (2, 2)),
    case(np.random.RandomState.standard_normal, _legacy(), 2),
    case(np.random.RandomState.standard_exponential, _legacy(), 2),
    case(np.random.RandomState.randint, _legacy(), 0, 5, 3),
    case(np.random.RandomState.poisson, _legacy(), 1.5, 2),
    case(np.random.RandomState.binomial, _legacy(), 5, 0.5, 2),
    case(np.random.RandomState.geometric, _legacy(), 0.5, 2),
    case(np.random.RandomState.bytes, _legacy(), 3),
    case(np.random.RandomState.seed, _legacy(), 3),
    case(np.random.RandomState.choice, _legacy(), 4, 2),
    case(np.random.RandomState.permutation, _legacy(), 4),
    # The legacy functions: bound methods of NumPy's global RandomState, copied with it.
    case(np.random.normal, 0.5, 2.0, 3),
    case(np.random.normal, V),
    case(np.random.uniform, -0.5, V),
    case(np.random.exponential, 2.5),
    case(np.random.rand, 2, 3),
    case(np.random.randn, 3),
    case(np.random.random, 3),
    case(np.random.random_sample, (2, 2)),
    case(np.random.standard_normal, 2),
    case(np.random.standard_exponential, 2),
    case(np.random.randint, 0, 5, 3),
    case(np.random.poisson, 1.5, 2),
    case(np.random.binomial, 5, 0.5, 2),
    case(np.random.geometric, 0.5, 2),
    case(np.random.bytes, 3),
    case(np.random.seed, 3),
    case(np.random.choice, 4, 2),
    case(np.random.permutation, 4),
]


CASES: list[RuleCase] = [
    *VIEWS,
    *ATTRIBUTES,
    *CONVERSIONS,
    *FLOAT_ARRAYS,
    *JOINS,
    *DIAGONALS,
    *CONSTRUCTORS,
    *GETITEM,
    *SETITEM,
    *SHAPES,
    *QUERIES,
    *RANDOM,
    *BROADCAST,
]
