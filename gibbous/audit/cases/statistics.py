"""Audit cases for what NumPy's statistics reach in NumPy's own Python (issue 31): ufuncs with
options (``gibbous.library.elementwise.ufunc_options``: ``out=...`` for every ufunc with a
plain rule; an output array with ``where=`` and ``casting=``; ``dtype=`` of a mask),
``np.copyto(dst, src, where=)``, ``x.partition(kth)`` in place, the shapes of broadcasting
(``np.broadcast``, ``np.broadcast_shapes``, NumPy's ``_broadcast_shape``), ``np.linspace`` of
array endpoints with ``retstep=True`` (``gibbous.library.arrays.spaces``).
"""

from __future__ import annotations

import numpy as np
from numpy.lib import _stride_tricks_impl

from gibbous.audit.cases.elementwise.ufuncs import first_operand, second_operand, signed
from gibbous.audit.cases.elementwise.ufuncs import unary_values
from gibbous.library.elementwise.ufunc_options import REGISTERED
from gibbous.testing import case
from gibbous.testing.cases import RuleCase

rng = np.random.default_rng(31)

CASES: list[RuleCase] = []

# --------------------------------------------------------------------------------------------
# ufunc(..., out=...): an array even of 0-d operands; an output with where= and casting=

_INTEGER_BITS = {np.invert, *[getattr(np, "bitwise_count")] * hasattr(np, "bitwise_count")}
for _fn in REGISTERED:
    if _fn in _INTEGER_BITS:  # (of integers only)
        CASES += [
            case(_fn, np.arange(6).reshape(2, 3), kwargs={"out": ...}),
            case(_fn, np.int64(5), kwargs={"out": ...}),
        ]
    elif _fn is np.ldexp:  # (an integer exponent)
        CASES += [
            case(_fn, first_operand(_fn, (2, 3)), np.array([1, -2, 3]), kwargs={"out": ...}),
            case(_fn, first_operand(_fn, ()), np.int64(2), kwargs={"out": ...}),
        ]
    elif _fn.nin == 1:
        CASES += [
            case(_fn, unary_values(_fn, (2, 3)), kwargs={"out": ...}),
            case(_fn, unary_values(_fn, ()), kwargs={"out": ...}),
        ]
    else:
        CASES += [
            case(_fn, first_operand(_fn, (2, 3)), second_operand(_fn, (3,)), kwargs={"out": ...}),
            case(_fn, first_operand(_fn, ()), second_operand(_fn, ()), kwargs={"out": ...}),
        ]

# An output with options: the plain rule's fresh result, then written into the output, so a
# warm call allocates where the primal does not (NumPy's own Python writes so into arrays it
# has just made; the allocation-free stateful rules, ``gibbous.rules.inplace``, are those of
# one float dtype without options).  With ``where=`` or ``casting=``, forward mode's write
# allocates too (the plain call's value, then copied where ``where`` holds), which the audit
# cannot declare: those calls are checked against finite differences in both modes by
# tests/library/numpy_python/test_statistics.py instead.
_WRITTEN = ("allocations", "the plain rule's result is made, then written into out=")
_MASK = np.array([[True, False, True], [False, True, True]])
CASES += [
    case(np.true_divide, signed((4,)), 100, kwargs={"out": ...}),
    case(np.floor, np.array([0.3, 1.6, 2.2]), kwargs={"out": ...}),
    case(np.not_equal, signed((2, 3)), signed((2, 3)), kwargs={"dtype": bool}),
    case(np.add, signed((2, 3)), 1, kwargs={"out": ..., "dtype": np.float64}),
    case(np.exp, signed((3,)), kwargs={"out": (signed((3,)),)}, deviation=_WRITTEN),
]  # fmt: skip

# --------------------------------------------------------------------------------------------
# Writes and shapes

_PERMUTED = ("allocations", "the permutation, and the values it moves, are kept")
_SAVED = ("allocations", "the positions written are saved, and their cotangent gathered")

CASES += [
    # (the positions written, saved, and the source's cotangent: a warm call allocates)
    case(np.copyto, signed((2, 3)), signed((2, 3)), kwargs={"where": _MASK}, deviation=_SAVED),
    case(np.copyto, signed((2, 3)), signed((3,)), kwargs={"where": _MASK[1]}, deviation=_SAVED),
    case(
        np.copyto, signed((2, 3)), 0.5, kwargs={"where": _MASK, "casting": "unsafe"},
        deviation=_SAVED,
    ),
    # (other shapes of distinct values: grown cyclically, the values would tie)
    # (the permutation and the values before it: a warm call allocates)
    case(np.ndarray.partition, signed((7,)), 3, other_args=(signed((8,)), 3), deviation=_PERMUTED),
    case(
        np.ndarray.partition, signed((5, 3)), [1, 3], kwargs={"axis": 0},
        other_args=(signed((6, 4)), [1, 3]), deviation=_PERMUTED,
    ),
    case(np.broadcast, signed((3,)), signed((2, 1))),
    case(np.broadcast_shapes, (3,), (2, 1)),
    case(_stride_tricks_impl._broadcast_shape, signed((3,)), signed((2, 1))),
    case(np.lib.array_utils.normalize_axis_tuple, (0, -1), 3),
    case(np.linspace, signed((3,)), signed((3,)), 4),
    case(np.linspace, signed((2, 1)), 2.0, 5, kwargs={"axis": -1, "retstep": True}),
    case(np.linspace, 0.5, signed((3,)), 4, False, True),
]

# --------------------------------------------------------------------------------------------
# np.average(..., returned=True): the sum of the weights too

_W = np.array([1.0, 2.0, 0.5])
CASES += [
    case(np.average, signed((2, 3)), kwargs={"axis": 1, "weights": _W, "returned": True}),
    case(np.average, signed((4,)), kwargs={"returned": True}),
    case(np.average, signed((2, 3)), 0, np.abs(signed((2, 3))), True),
]

# A NumPy scalar's astype: to an int (no derivative), to a float (its value)
CASES += [
    case(np.generic.astype, np.float64(0.7), np.intp),
    case(np.generic.astype, np.float64(0.7), np.float32),
    case(np.generic.astype, np.float32(0.4), np.float64),
]
