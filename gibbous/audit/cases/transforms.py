"""Audit cases for ``gibbous.library.transforms``: the transforms of ``np.fft`` (each with a
norm, a length or shape that crops or pads, an axis; real, complex and float32 inputs),
``fftshift`` / ``ifftshift``, ``np.convolve`` / ``np.correlate`` (every mode, either operand
longer, complex), ``np.pad`` (every mode and option) and the selection tangent of
``np.pad``'s maximum, minimum and median modes (distinct values: no ties)."""

from __future__ import annotations

import numpy as np

from gibbous.library.transforms.pad import pad_selected
from gibbous.testing import case
from gibbous.testing.cases import RuleCase

rng = np.random.default_rng(11)


def _r(*shape: int, dtype: type = np.float64) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, shape).astype(dtype)


def _c(*shape: int) -> np.ndarray:
    return _r(*shape) + 1j * _r(*shape)


F = np.fft
CASES: list[RuleCase] = []

# The one-dimensional transforms
CASES += [
    case(F.fft, _r(6)),
    case(F.fft, _c(5), 8, kwargs={"norm": "ortho"}),
    case(F.fft, _r(3, 7), 4, 1, "forward"),
    case(F.fft, _r(6, dtype=np.float32)),
    case(F.ifft, _c(6)),
    case(F.ifft, _c(4, 3), kwargs={"n": 5, "axis": 0, "norm": "forward"}),
    case(F.rfft, _r(7)),
    case(F.rfft, _r(3, 6), 9, 0, "ortho"),
    case(F.rfft, _r(8), kwargs={"n": 5, "norm": "forward"}),
    case(F.irfft, _c(5)),
    case(F.irfft, _c(4), 7, kwargs={"norm": "ortho"}),
    case(F.irfft, _c(2, 6), kwargs={"n": 4, "axis": -1, "norm": "forward"}),
    case(F.hfft, _c(5)),
    case(F.hfft, _c(4), 7, kwargs={"norm": "ortho"}),
    case(F.ihfft, _r(6)),
    case(F.ihfft, _r(5), 8, kwargs={"norm": "forward"}),
]

# The n-dimensional transforms
CASES += [
    case(F.fftn, _c(3, 4)),
    case(F.fftn, _r(2, 3, 4), (3, 5), (0, 2), "ortho"),
    case(F.ifftn, _c(3, 4), kwargs={"norm": "forward"}),
    case(F.fft2, _r(3, 4)),
    case(F.fft2, _c(2, 3, 4), kwargs={"s": (4, 2), "norm": "ortho"}),
    case(F.ifft2, _c(3, 4), kwargs={"axes": (1, 0)}),
    case(F.rfftn, _r(4, 5)),
    case(F.rfftn, _r(3, 4, 5), kwargs={"s": (3, 6), "axes": (0, 2), "norm": "forward"}),
    case(F.rfft2, _r(4, 6)),
    case(F.irfftn, _c(4, 3)),
    case(F.irfftn, _c(3, 4), kwargs={"s": (5, 7), "norm": "ortho"}),
    case(F.irfft2, _c(2, 4, 3), kwargs={"s": (3, 5)}),
]

# The shifts: permutations
CASES += [
    case(F.fftshift, _r(5)),
    case(F.fftshift, _c(4, 5), kwargs={"axes": 1}),
    case(F.ifftshift, _r(3, 5)),
    case(F.ifftshift, _r(4, 5), (0,)),
]

# Convolutions and correlations
for _fn in (np.convolve, np.correlate):
    CASES += [
        case(_fn, _r(6), _r(3)),
        case(_fn, _r(3), _r(5), "same"),
        case(_fn, _c(5), _c(2), kwargs={"mode": "valid"}),
        case(_fn, _r(4), _c(4), "full"),
    ]

# Pads: every mode; the fill values differentiable (a scalar, a pair per axis)
X, V, XC = _r(3, 4), _r(4), _c(3, 4)
CASES += [
    case(np.pad, V, 1),
    case(np.pad, X, ((1, 0), (0, 2))),
    case(np.pad, X, 1, kwargs={"constant_values": 0.5}),
    case(np.pad, XC, (2, 1), "constant", kwargs={"constant_values": 1.5 - 0.5j}),
    case(np.pad, X, 2, kwargs={"constant_values": _r(2, 2)}),
    case(np.pad, X, 2, "edge"),
    case(np.pad, X, (3, 1), "reflect"),
    case(np.pad, V, 7, kwargs={"mode": "reflect", "reflect_type": "odd"}),
    case(np.pad, X, ((2, 3), (1, 1)), "symmetric"),
    case(np.pad, XC, (4, 5), "wrap"),
    case(np.pad, X, 3, "linear_ramp", kwargs={"end_values": _r(2, 2)}),
    case(np.pad, X, 2, "mean"),
    case(np.pad, X, (2, 3), "mean", kwargs={"stat_length": 2}),
    # (the state check's grown arrays repeat rows, whose extremes would tie: fresh ones)
    case(np.pad, X, 2, "maximum", other_args=(_r(4, 5), 2, "maximum")),
    case(np.pad, X, (1, 2), "minimum", kwargs={"stat_length": ((2, 3), (1, 2))},
         other_args=(_r(4, 5), (1, 2), "minimum"), other_kwargs={"stat_length": ((2, 3), (1, 2))}),
    case(np.pad, X, 2, "median", other_args=(_r(4, 5), 2, "median")),
    case(np.pad, _r(5, 6), (3, 2), kwargs={"mode": "median", "stat_length": (2, 3)},
         other_args=(_r(6, 7), (3, 2)), other_kwargs={"mode": "median", "stat_length": (2, 3)}),
    case(pad_selected, _r(3, 4), X, 2, "maximum", None,
         other_args=(_r(4, 5), _r(4, 5), 2, "maximum", None)),
    case(pad_selected, _r(5, 6), _r(5, 6), (3, 2), "median", (2, 3),
         other_args=(_r(6, 7), _r(6, 7), (3, 2), "median", (2, 3))),
]  # fmt: skip
