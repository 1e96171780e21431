"""Type rules for NumPy's linear transforms: the discrete Fourier transforms of ``np.fft`` and
``np.pad``.

Sampling (``numpy.sampled_numpy``) cannot type them: ``irfft`` of a one-element sample has
no default length (``2 (1 - 1)`` points), and ``np.pad`` is NumPy's Python, whose ``match``
statement inference does not read.  Their result types are simple: a transform keeps its
input's rank, with the complex (or, for ``irfft`` and ``hfft``, real) dtype NumPy's pocketfft
gives the input's dtype (``complex64`` for ``float32``); whatever ``n``, ``s``, ``axis`` or
``norm`` are, so they need not be constants.  ``np.pad`` and the shifts (``fftshift``,
``ifftshift``) keep their input's dtype and rank.
"""

from __future__ import annotations

import functools
import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.infer.typerules.base import RuleList, dtype_name, positional
from gibbous.infer.typerules.sampling import evaluate_on_samples

RULES = RuleList()

Rule = t.Callable[[tuple[T.Type, ...], dict[str, T.Type]], T.Type]


def _array(ty: T.Type) -> T.Array | None:
    """The array NumPy makes of a value of type ``ty`` (by sampling it), if it is one."""
    if isinstance(ty, T.Array):
        return ty
    found = evaluate_on_samples(np.asarray, (ty,), {})
    return found if isinstance(found, T.Array) else None


@functools.cache
def _transformed_dtype(dtype: str, real: bool) -> str | None:
    """The dtype of a transform of an array of ``dtype``: real for ``irfft`` / ``hfft``."""
    try:
        sample = np.zeros(2, dtype=dtype)
        out = np.fft.irfft(sample, 2) if real else np.fft.fft(sample)
    except (TypeError, ValueError):
        return None
    return dtype_name(out.dtype)


def _transform(names: tuple[str, ...], real: bool) -> Rule:
    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        bound = positional(args, kwargs, names)
        if bound is None or "a" not in bound:
            return T.ANY
        out = bound.get("out")
        if out is not None and not isinstance(out, T.NoneType) and out != T.Const(None):
            return out if isinstance(out, T.Array) else T.ANY  # (the array it wrote)
        x = _array(bound["a"])
        if x is None:
            return T.ANY
        dtype = None if x.dtype is None else _transformed_dtype(x.dtype, real)
        return T.Array(dtype, x.ndim)

    return rule


_ONE_D = ("a", "n", "axis", "norm", "out")
_N_D = ("a", "s", "axes", "norm", "out")
for _names, _complex, _real in (
    (_ONE_D, "fft ifft rfft ihfft", "irfft hfft"),
    (_N_D, "fftn ifftn rfftn fft2 ifft2 rfft2", "irfftn irfft2"),
):
    RULES.add([getattr(np.fft, n) for n in _complex.split()], _transform(_names, False))
    RULES.add([getattr(np.fft, n) for n in _real.split()], _transform(_names, True))


@RULES(np.pad, np.fft.fftshift, np.fft.ifftshift)
def _same_type(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    """x's dtype and rank: a padding, in every mode (fill values are cast to x's dtype), or a
    permutation."""
    if not args:
        return T.ANY
    x = _array(args[0])
    return T.ANY if x is None else T.Array(x.dtype, x.ndim)
