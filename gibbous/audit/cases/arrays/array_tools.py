"""Audit cases for the NumPy tools users reach for beyond the basics: strided views
(``gibbous.library.arrays.strided``), ``np.r_``/``np.c_`` (``concatenators``), ``np.nan_to_num``
(``ufuncs``), ``np.gradient`` (``gradient``) and ``np.append``/``insert``/
``delete``/``unique`` (``numpy_setops``).  ``np.partition`` and ``np.rollaxis`` are with their
neighbours in ``arrays``.

Values keep away from what finite differences cannot cross: ``nan_to_num`` sees finite values
only (the harness pairs every argument after the call with a cotangent, and nan or inf there
makes every estimate nan; tests/library/arrays/test_array_tools.py checks the fills), and
``unique`` distinct ones (moving one of two equal values splits them, and the result grows).

The strided views declare the one check the harness cannot pass.  ``as_strided`` and
``sliding_window_view`` hang their results from a ``DummyArray`` rather than from x, so the
harness does not see that result and x share memory: for a view whose elements are distinct
(given the same view of x's fdata) it seeds the cotangents of x and of the view into one memory
as if they were two, and the finite differences disagree (``correctness``); an overlapping view
gets new fdata, without the primal's strides (``interface``).  tests/library/
test_array_tools.py checks both against finite differences on the tape, where views are
followed by their fdata.
"""

from __future__ import annotations

import operator
import typing as t

import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from gibbous.audit.cases.arrays.arrays import F32, X, X32, XC, normal
from gibbous.testing import case
from gibbous.testing.cases import RuleCase

_rng = np.random.default_rng(20260517)


def _distinct(*shape: int) -> t.Any:
    """Values far enough apart to stay distinct, and so in order, under the harness's steps."""
    return (_rng.permutation(int(np.prod(shape))).reshape(shape) - 5.5) * 0.37


V = normal(6)
V32 = normal(6, dtype=np.float32)
VC = normal(6, dtype=np.complex128)

# --------------------------------------------------------------------------------------------
# Strided views

_OVERLAP = ("interface", "new fdata for a view whose windows overlap (see the module)")
_UNSEEN = ("correctness", "the harness does not see as_strided's result share x's memory")

STRIDED: list[RuleCase] = [
    case(as_strided, V, (4, 3), (8, 8), deviation=_OVERLAP),  # windows of 3, step 1
    case(as_strided, V, kwargs={"shape": (2, 3), "strides": (16, 8)}, deviation=_OVERLAP),
    case(as_strided, X, (2, 3, 2, 2), (32, 8, 32, 8), deviation=_OVERLAP),  # 2-D windows
    case(as_strided, V32, (5, 2), (4, 4), deviation=_OVERLAP, **F32),
    case(as_strided, VC, (3, 3), (32, 16), deviation=_OVERLAP),
    case(as_strided, V, (3, 2), (16, 8), deviation=_UNSEEN),  # a reshape: distinct elements
    case(as_strided, X, (4, 3), (8, 32), deviation=_UNSEEN),  # a transpose
    case(sliding_window_view, V, 3, deviation=_OVERLAP),
    case(sliding_window_view, X, (2, 2), deviation=_OVERLAP),
    case(sliding_window_view, X, 2, kwargs={"axis": 1}, deviation=_OVERLAP),
    case(sliding_window_view, XC, (2, 3), (1, 0), deviation=_OVERLAP),
    case(sliding_window_view, V32, 2, deviation=_OVERLAP, **F32),
    case(sliding_window_view, V, 1, deviation=_UNSEEN),  # windows of one: distinct elements
]

# --------------------------------------------------------------------------------------------
# np.r_ and np.c_: operator.getitem of the concatenator

CONCATENATORS: list[RuleCase] = [
    case(operator.getitem, np.r_, (V, 0.5, V[:2])),
    case(operator.getitem, np.r_, (X, X[:1])),
    case(operator.getitem, np.r_, V),
    case(operator.getitem, np.r_, (slice(0, 3), V)),  # a range: no derivative
    case(operator.getitem, np.r_, ("1", X, X[:, :2])),
    case(operator.getitem, np.r_, ("0,2", V, V[::-1])),
    case(operator.getitem, np.r_, ([0.5, 1.5], VC)),
    case(operator.getitem, np.r_, (V32, np.float32(1.5)), **F32),
    case(operator.getitem, np.r_, 2.5),
    case(operator.getitem, np.c_, (V, V[::-1])),
    case(operator.getitem, np.c_, (X, X[:, 0])),
    case(operator.getitem, np.c_, (XC, X)),
    case(operator.getitem, np.c_, (slice(0, 6), V)),
]

# --------------------------------------------------------------------------------------------
# np.nan_to_num (finite values: see the module)

NAN_TO_NUM: list[RuleCase] = [
    case(np.nan_to_num, X),
    case(np.nan_to_num, X, kwargs={"nan": 1.5, "posinf": 2.5, "neginf": -3.5}),
    case(np.nan_to_num, X, True, 0.5),
    case(np.nan_to_num, X, kwargs={"copy": False}),  # in place: x itself
    case(np.nan_to_num, XC, kwargs={"nan": 0.5}),
    case(np.nan_to_num, X32, **F32),
    case(np.nan_to_num, 2.5),
    case(np.nan_to_num, 1.5 - 0.5j),
    case(np.nan_to_num, np.arange(4)),  # no derivative
]

# --------------------------------------------------------------------------------------------
# np.gradient

COORDINATES = np.cumsum(_rng.uniform(0.5, 1.5, 6))
COORDINATES_3 = np.cumsum(_rng.uniform(0.5, 1.5, 3))

GRADIENT: list[RuleCase] = [
    case(np.gradient, V),
    case(np.gradient, V, 0.5),
    case(np.gradient, V, kwargs={"edge_order": 2}),
    case(np.gradient, V, COORDINATES),
    case(np.gradient, V, COORDINATES, kwargs={"edge_order": 2}),
    case(np.gradient, X),
    case(np.gradient, X, 0.5, 2.0, kwargs={"edge_order": 2}),
    case(np.gradient, X, COORDINATES_3, kwargs={"axis": 0}),
    case(np.gradient, X, 0.3, kwargs={"axis": (1, 0)}),
    case(np.gradient, XC, 0.5),
    case(np.gradient, VC, COORDINATES, kwargs={"edge_order": 2}),
    case(np.gradient, V32, np.float32(0.5), **F32),
    case(np.gradient, [0.5, 1.5, -2.0], 2),
]

# --------------------------------------------------------------------------------------------
# np.append, np.insert, np.delete, np.unique

D = _distinct(3, 4)
D_GROWN = _distinct(4, 5)

SETOPS: list[RuleCase] = [
    case(np.append, X, V),
    case(np.append, X, X[:1], kwargs={"axis": 0}),
    case(np.append, V, 2.5),
    case(np.append, [1.5, -0.5], VC),
    case(np.append, V32, np.float32(0.5), **F32),
    case(np.insert, V, 1, 2.5),
    case(np.insert, X, 1, X[0], kwargs={"axis": 0}),
    case(np.insert, X, [0, 2, 2], 1.5, kwargs={"axis": 1}),  # one value, three places
    case(np.insert, X, 2, normal(3), 1),
    case(np.insert, XC, slice(0, 2), [0.5, 1.5]),
    case(np.delete, V, 1),
    case(np.delete, X, [0, 2], 0),
    case(np.delete, XC, slice(1, 3), kwargs={"axis": 1}),
    case(np.delete, X32, np.array([True, False, True, False]), 1, **F32),
    case(np.unique, D, other_args=(D_GROWN,)),
    case(np.unique, D, True, True, True, other_args=(D_GROWN, True, True, True)),
    case(np.unique, D, kwargs={"axis": 0, "return_index": True}, other_args=(D_GROWN,)),
    case(np.unique, D + 1j, kwargs={"return_inverse": True}, other_args=(D_GROWN + 1j,)),
    case(np.unique, D.astype(np.float32), other_args=(D_GROWN.astype(np.float32),), **F32),
]

CASES: list[RuleCase] = [*STRIDED, *CONCATENATORS, *NAN_TO_NUM, *GRADIENT, *SETOPS]

# NumPy's own Python's callees (gibbous.library.arrays.setops, views_copies, python.queries,
# elementwise.odds): the NamedTuples np.unique_all and friends make, the C concatenate behind
# the dispatcher (np.block's), asfortranarray, the plain size/ndim/shape, frexp's exponent.
from numpy.lib import _arraysetops_impl as _setops  # noqa: E402
from gibbous.library.elementwise.odds import frexp_twin  # noqa: E402

_VALUES = normal(4)
_COUNTS = np.array([1.0, 2.0, 1.0, 3.0])  # (floats: the harness checks fdata of int arrays apart)
CASES += [
    case(_setops.UniqueAllResult, _VALUES, _COUNTS, _COUNTS, _COUNTS),
    case(_setops.UniqueCountsResult, _VALUES, _COUNTS),
    case(_setops.UniqueInverseResult, _VALUES, _COUNTS),
    case(getattr(np.concatenate, "_implementation", np.concatenate), [X, X], kwargs={"axis": 0}),
    case(np.asfortranarray, X),
    case(np.asfortranarray, X32, **F32),
    *(case(getattr(fn, "__wrapped__", fn), X) for fn in (np.size, np.ndim, np.shape)),
    case(frexp_twin.__globals__["_exponent"], X),
]
