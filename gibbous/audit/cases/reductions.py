"""Audit cases for ``gibbous.library.reductions.reductions``: every reduction and scan as a
function and as a method, over float64, float32 and complex128 arrays of ranks 0 to 3, with
``axis`` (int, negative, tuple, None) and ``keepdims``; values are distinct (no ties for max and
min) and away from zero."""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.testing import case
from gibbous.testing.cases import RuleCase

rng = np.random.default_rng(5)


def _real(*shape: int, dtype: type = np.float64) -> np.ndarray:
    # distinct values in [0.5, 1.5]: no ties, no zeros
    n = int(np.prod(shape))
    values = 0.5 + (rng.permutation(n) + rng.uniform(0.1, 0.9, n)) / n
    return values.reshape(shape).astype(dtype)


def _complex(*shape: int) -> np.ndarray:
    return _real(*shape) + 1j * _real(*shape)


def _distinct(fn: object, *args: object, kwargs: dict[str, object] | None = None) -> RuleCase:
    """A case whose call with other shapes (the state check) has distinct values too: the
    default grows arrays by repeating values, which makes ties for max and min."""
    others = tuple(
        _real(*(n + 1 if n > 1 else n for n in a.shape), dtype=a.dtype.type)
        if isinstance(a, np.ndarray)
        else a
        for a in args
    )
    return case(fn, *args, kwargs=kwargs, other_args=others, other_kwargs=dict(kwargs or {}))


X1, X2, X3 = _real(5), _real(3, 4), _real(2, 3, 4)
F2 = _real(3, 4, dtype=np.float32)
Z2 = _complex(3, 4)
X0 = np.array(1.25)

CASES: list[RuleCase] = []
fn: t.Any

# sum, mean, prod: functions and methods, every dtype
for fn in (np.sum, np.mean, np.prod, np.ndarray.sum, np.ndarray.mean, np.ndarray.prod):
    CASES += [
        case(fn, X1),
        case(fn, X2, kwargs={"axis": 0}),
        case(fn, X3, kwargs={"axis": (0, 2), "keepdims": True}),
        case(fn, X3, -1),
        case(fn, F2, kwargs={"axis": 1}),
        case(fn, Z2, kwargs={"axis": -1}),
        case(fn, Z2),
    ]
CASES += [case(np.sum, X0), case(np.sum, F2), case(np.mean, X3, None, None, None, True)]

# max, min: functions, aliases, methods (real only: NumPy orders complex numbers
# lexicographically, which is not differentiable)
for fn in (np.max, np.min, np.amax, np.amin, np.ndarray.max, np.ndarray.min):
    CASES += [
        _distinct(fn, X1),
        _distinct(fn, X2, kwargs={"axis": 1}),
        _distinct(fn, X3, kwargs={"axis": (0, 1), "keepdims": True}),
        _distinct(fn, F2, 0),
    ]

# reductions of scalars: the scalar itself, as a NumPy scalar
for fn in (np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin):
    CASES += [case(fn, 1.5), case(fn, np.float32(0.75)), case(fn, 0.5 + 2.0j)]

# cumulative sums
for fn in (np.cumsum, np.ndarray.cumsum):
    CASES += [
        case(fn, X1),
        case(fn, X3),
        case(fn, X2, kwargs={"axis": 0}),
        case(fn, X3, -1),
        case(fn, F2, kwargs={"axis": 1}),
        case(fn, Z2, kwargs={"axis": 0}),
    ]

# variance and standard deviation, with ddof
for fn in (np.var, np.std, np.ndarray.var, np.ndarray.std):
    CASES += [
        case(fn, X1),
        case(fn, X2, kwargs={"axis": 0}),
        case(fn, X3, kwargs={"axis": (0, 2), "keepdims": True, "ddof": 1}),
        case(fn, F2, 1),
        case(fn, Z2, kwargs={"axis": -1}),
    ]

# peak to peak: the maximum and the minimum get the gradient
CASES += [
    _distinct(np.ptp, X1),
    _distinct(np.ptp, X2, kwargs={"axis": 1}),
    _distinct(np.ptp, X3, kwargs={"axis": (0, 2), "keepdims": True}),
    _distinct(np.ptp, F2, 0),
]

# weighted averages: weights of the array's shape, 1-D weights along an axis, none
W2, W4 = _real(3, 4), _real(4)
CASES += [
    case(np.average, X2),
    case(np.average, X2, kwargs={"weights": W2}),
    case(np.average, X2, kwargs={"axis": 1, "weights": W4}),
    case(np.average, X3, kwargs={"axis": 0, "keepdims": True}),
    case(np.average, F2, kwargs={"axis": 0, "weights": _real(3, 4, dtype=np.float32)}),
    case(np.average, Z2, kwargs={"axis": -1, "weights": _complex(4)}),
    case(np.average, X2, kwargs={"axis": 1, "weights": [0.1, 0.2, 0.3, 0.4]}),  # converted
    case(np.average, X1, None, (0.5, 0.25, 1.0, 0.75, 1.5)),
]

# cumulative products, with a zero (the exact path) and without
XZ = X2.copy()
XZ[1, 2] = 0.0
for fn in (np.cumprod, np.ndarray.cumprod):
    CASES += [
        case(fn, X1),
        case(fn, X2, kwargs={"axis": 1}),
        case(fn, X3, -2),
        case(fn, XZ, kwargs={"axis": 1}),
        case(fn, F2, kwargs={"axis": 0}),
        case(fn, Z2, kwargs={"axis": 1}),
    ]

# NaN-ignoring sum and mean.  Without NaNs here: test_rule pairs every argument after the
# call with a cotangent, and a NaN makes that pairing NaN; tests/library/reductions/test_reductions.py
# checks that NaNs get no gradient.
for fn in (np.nansum, np.nanmean):
    CASES += [
        case(fn, X1),
        case(fn, X3, kwargs={"axis": 2}),
        case(fn, X3, kwargs={"axis": (0, 1), "keepdims": True}),
        case(fn, F2, kwargs={"axis": 0}),
        case(fn, Z2, kwargs={"axis": 1}),
    ]
# a float ddof is differentiable too
CASES += [case(np.var, X2, kwargs={"ddof": 1.5}), case(np.std, X1, 0, None, None, 0.5)]

# out=: stateful rules that save and restore the output array
for fn in (np.sum, np.mean, np.ndarray.sum, np.ndarray.mean):
    CASES += [
        case(fn, X2, kwargs={"axis": 0, "out": _real(4)}),
        case(fn, X3, kwargs={"axis": (0, 2), "keepdims": True, "out": _real(1, 3, 1)}),
    ]
CASES += [
    case(np.sum, F2, kwargs={"axis": 1, "out": _real(3, dtype=np.float32)}),
    case(np.sum, Z2, kwargs={"axis": 1, "out": _complex(3)}),
    case(np.mean, X2, kwargs={"axis": 1, "out": _complex(3)}),
]
for fn in (np.cumsum, np.ndarray.cumsum):
    CASES += [
        case(fn, X2, kwargs={"axis": 1, "out": _real(3, 4)}),
        case(fn, X3, kwargs={"out": _real(24)}),
        case(fn, Z2, kwargs={"axis": 0, "out": _complex(3, 4)}),
    ]
XA = _real(3, 4)
CASES += [case(np.cumsum, XA, kwargs={"axis": 1, "out": XA})]  # in place: x is out
# products to a scalar with one zero and with two
XZ1, XZ2 = X1.copy(), X1.copy()
XZ1[2] = 0.0
XZ2[[1, 3]] = 0.0
for fn in (np.prod, np.ndarray.prod):
    CASES += [case(fn, XZ1), case(fn, XZ2)]
CASES += [case(np.prod, Z2 * np.array([1, 0, 1, 1]))]

# Lists and tuples (gibbous.library.python.sequences): floats, arrays of one shape, nested lists;
# the rule of each is the array's, run on np.asarray of the sequence.  Distinct values, so
# the cases of max, min and ptp have no ties.
FLOATS = [float(v) for v in _real(4)]
ROWS = (_real(3), _real(3))
NESTED = [[float(v) for v in row] for row in _real(2, 3)]
SEQUENCE_CASES: list[RuleCase] = []
for fn in (
    np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.var, np.std, np.ptp,
    np.average, np.nansum, np.nanmean, np.cumsum, np.cumprod, np.linalg.norm,
):  # fmt: skip
    SEQUENCE_CASES += [
        case(fn, FLOATS),
        case(fn, tuple(FLOATS[:3])),
        case(fn, ROWS, kwargs={"axis": 0}),
        case(fn, NESTED, 1),
    ]
SEQUENCE_CASES += [
    case(np.average, ROWS, kwargs={"axis": 0, "weights": [0.25, 0.75]}),  # weights a list too
    case(np.average, FLOATS, kwargs={"weights": tuple(_real(4))}),
    case(np.std, ROWS, kwargs={"ddof": 1}),
    case(np.sum, [X2, 2.0 * X2], kwargs={"axis": (0, 2), "keepdims": True}),
    case(np.linalg.norm, NESTED, "fro"),
    case(np.linalg.norm, [np.float32(0.5), np.float32(1.5)]),
    case(np.sum, [0.5 + 1.0j, 1.5 - 0.5j]),
    case(np.sum, [1, 2, 3]),  # ints: no derivative
]
SEQUENCE_CASES += [  # out=: the array rule's stateful one
    case(np.sum, ROWS, kwargs={"axis": 1, "out": _real(2)}),
    case(np.mean, ROWS, kwargs={"axis": 1, "out": _real(2)}),
    case(np.cumsum, ROWS, kwargs={"axis": 1, "out": _real(2, 3)}),
]
CASES += SEQUENCE_CASES
