"""Audit cases for ``gibbous.library.transforms``: the transforms of ``np.fft`` (each with a
norm, a length or shape that crops or pads, an axis; real, complex and float32 inputs),
``fftshift`` / ``ifftshift``, ``np.convolve`` / ``np.correlate`` (every mode, either operand
longer, complex), ``np.pad`` (every mode and option) and the selection tangent of
``np.pad``'s maximum, minimum and median modes."""

from __future__ import annotations

import numpy as np

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
