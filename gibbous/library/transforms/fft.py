"""The discrete Fourier transforms of ``np.fft``: ``fft ifft rfft irfft hfft ihfft``, ``fftn
ifftn rfftn irfftn``, ``fft2 ifft2 rfft2 irfft2`` (every ``norm``, ``n`` / ``s`` cropping
and zero-padding, ``axis`` / ``axes``), and ``fftshift``, ``ifftshift``.

**Stages.**  Every transform is a chain of one-dimensional stages, as NumPy computes it: an
``fft``, ``ifft``, ``rfft`` or ``irfft`` along one axis at a length ``n``, its input cropped
or zero-padded to ``n`` (to ``n // 2 + 1`` for ``irfft``).  ``hfft`` is an ``irfft`` of the
conjugate and ``ihfft`` the conjugate of an ``rfft``, both with the swapped norm (NumPy's own
definitions); ``fftn`` is an ``fft`` along each of its axes, the last first; ``rfftn`` an
``rfft`` along the last axis, then ``fft`` along the others; ``irfftn`` ``ifft`` along all but
the last, then ``irfft`` along it.  ``Transform`` is that chain for one call (``s`` and
``axes`` read as NumPy reads them); the pullback runs the stages' adjoints last to first.

**Adjoints**, for the pairing ``Re sum(conj(g) d)`` of docs/tangents.md: the adjoint of a
complex-linear map is its conjugate transpose; of a map that is only real-linear (``irfft``),
its transpose for that pairing.  With ``F`` the DFT matrix (symmetric) and ``c`` the norm's
factor (1, ``1/sqrt(n)``, ``1/n`` for "backward", "ortho", "forward"):

* ``fft`` is ``c F``, whose adjoint ``c conj(F)`` is ``ifft`` with the swapped norm
  ("backward" <-> "forward", "ortho" itself); ``ifft``'s is ``fft`` likewise;
* ``rfft`` keeps the first ``n // 2 + 1`` rows of ``c F`` applied to a real input: its
  adjoint is the real part of ``c conj(F)`` applied to the cotangent zero-padded to ``n``.
  ``irfft`` (swapped norm) computes exactly that once the bins it counts twice (a Hermitian
  spectrum's bins ``1 .. (n - 1) // 2``, all but DC and an even ``n``'s Nyquist) are halved;
* ``irfft`` is ``c`` times DC's real part, plus twice the real part of each middle bin's
  term, plus Nyquist's real part: its adjoint is ``rfft`` (swapped norm) of the real
  cotangent with the middle bins doubled.  The imaginary parts of DC and Nyquist, which
  ``irfft`` ignores, get a zero gradient (``rfft`` of a real array is real there);
* cropping to ``n`` has zero-padding back as its adjoint, and zero-padding cropping;
* ``fftshift`` is a permutation (a roll by half of each axis): its adjoint is its inverse,
  ``ifftshift``, and the other way round.

A real input gets the real part of its complex gradient (``send``).  Forward mode: each
transform is (real-)linear, so its tangent is the transform of the tangent
(``register_linear``); a Hessian-vector product differentiates that call again.  ``out=`` is
refused: the transform would write into an array.
"""

from __future__ import annotations

import typing as t

import attrs
import numpy as np

from gibbous.library.arrays.views_copies import shape_rule
from gibbous.library.common import ARRAY, CD, Array, RuleResult, bind, linear_rrule
from gibbous.rules import frules
from gibbous.rules.registry import primitive

Norm = t.Literal["backward", "ortho", "forward"]

#: NumPy's ``_swap_direction``: the norm of the adjoint (and of hfft's inner irfft).
SWAP: dict[str | None, Norm] = {
    None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward",
}  # fmt: skip


def _along(axis: int, index: slice) -> tuple[slice, ...]:
    return (slice(None),) * axis + (index,)


def resize(g: Array, axis: int, m: int) -> Array:
    """``g`` cropped or zero-padded to length ``m`` along ``axis``: the adjoint of the other."""
    n = g.shape[axis]
    if n == m:
        return g
    if n > m:
        return g[_along(axis, slice(0, m))]
    shape = list(g.shape)
    shape[axis] = m
    out = np.zeros(shape, g.dtype)
    out[_along(axis, slice(0, n))] = g
    return out


def _middle_bins(n: int) -> slice:
    """The bins of an ``n``-point Hermitian spectrum that stand for two (a bin and its mirror):
    ``1 .. (n - 1) // 2``."""
    return slice(1, (n + 1) // 2)


@attrs.frozen
class Stage:
    """One one-dimensional transform of a chain: ``kind`` ("fft", "ifft", "rfft", "irfft")
    along ``axis`` at length ``n``, of an input of length ``m`` there; ``conj_in`` /
    ``conj_out``: the input / the result conjugated (``hfft``, ``ihfft``)."""

    kind: str
    axis: int
    n: int
    m: int
    norm: str | None
    conj_in: bool = False
    conj_out: bool = False

    def adjoint(self, g: Array) -> Array:
        """The cotangent of this stage's input, for the cotangent ``g`` of its result."""
        norm = SWAP[self.norm]
        if self.conj_out:
            g = np.conj(g)
        if self.kind == "fft":
            g = np.fft.ifft(g, axis=self.axis, norm=norm)
        elif self.kind == "ifft":
            g = np.fft.fft(g, axis=self.axis, norm=norm)
        elif self.kind == "rfft":
            halved = np.array(g, copy=True)  # (g is the result's fdata: left as it is)
            halved[_along(self.axis, _middle_bins(self.n))] *= 0.5
            g = np.fft.irfft(halved, self.n, axis=self.axis, norm=norm)
        else:  # irfft: a real result, a real cotangent
            g = np.fft.rfft(np.real(g), self.n, axis=self.axis, norm=norm)
            g[_along(self.axis, _middle_bins(self.n))] *= 2.0
        g = resize(g, self.axis, self.m)
        return np.conj(g) if self.conj_in else g


def _stage(
    kind: str, shape: list[int], axis: int, n: object, norm: str | None, conj: str = ""
) -> Stage:
    """The stage ``kind`` along ``axis`` at length ``n`` (None: the 1-D function's default)
    of an input of ``shape``, which it updates to the stage's result's."""
    ax = int(axis) % len(shape)
    m = shape[ax]
    length = ((m - 1) * 2 if kind == "irfft" else m) if n is None else int(t.cast(t.Any, n))
    shape[ax] = length // 2 + 1 if kind == "rfft" else length
    return Stage(kind, ax, length, m, norm, conj == "in", conj == "out")


#: The one-dimensional functions: their stage's kind, and which side is conjugated (hfft is
#: ``irfft(conj(a))``, ihfft ``conj(rfft(a))``, both with the swapped norm).
ONE_D: dict[t.Callable[..., t.Any], tuple[str, str]] = {
    np.fft.fft: ("fft", ""), np.fft.ifft: ("ifft", ""),
    np.fft.rfft: ("rfft", ""), np.fft.irfft: ("irfft", ""),
    np.fft.hfft: ("irfft", "in"), np.fft.ihfft: ("rfft", "out"),
}  # fmt: skip

#: The n-dimensional functions: their one-dimensional kind and default axes.
N_D: dict[t.Callable[..., t.Any], tuple[str, tuple[int, ...] | None]] = {
    np.fft.fftn: ("fft", None), np.fft.ifftn: ("ifft", None),
    np.fft.rfftn: ("rfft", None), np.fft.irfftn: ("irfft", None),
    np.fft.fft2: ("fft", (-2, -1)), np.fft.ifft2: ("ifft", (-2, -1)),
    np.fft.rfft2: ("rfft", (-2, -1)), np.fft.irfft2: ("irfft", (-2, -1)),
}  # fmt: skip

_ONE_D_PARAMETERS = ("n", "axis", "norm", "out")
_N_D_PARAMETERS = ("s", "axes", "norm", "out")


def _one_d(fn: t.Callable[..., t.Any], shape: tuple[int, ...], options: dict[str, t.Any]) -> list[Stage]:
    kind, conj = ONE_D[fn]
    norm = options.get("norm")
    if conj:
        norm = SWAP[norm]
    return [_stage(kind, list(shape), options.get("axis", -1), options.get("n"), norm, conj)]


def _n_d(fn: t.Callable[..., t.Any], shape: tuple[int, ...], options: dict[str, t.Any]) -> list[Stage]:
    """The stages as NumPy's ``_cook_nd_args`` and ``_raw_fftnd`` / ``rfftn`` / ``irfftn`` make
    them: ``s`` defaults to the axes' lengths (``irfftn``'s last to ``2 (m - 1)``), -1 in ``s``
    is the axis's length, None the 1-D default at that stage; ``axes`` defaults to the last
    ``len(s)``."""
    kind, default_axes = N_D[fn]
    s, axes, norm = options.get("s"), options.get("axes", default_axes), options.get("norm")
    shapeless = s is None
    if s is None:
        sizes: list[t.Any] = list(shape) if axes is None else [shape[int(a)] for a in axes]
    else:
        sizes = list(t.cast(t.Iterable[t.Any], s))
    axes_ = list(range(-len(sizes), 0)) if axes is None else [int(a) for a in axes]
    if kind == "irfft" and shapeless:
        sizes[-1] = (shape[axes_[-1]] - 1) * 2
    sizes = [shape[a] if n is not None and n == -1 else n for n, a in zip(sizes, axes_)]
    current = list(shape)
    if kind in ("fft", "ifft"):
        return [_stage(kind, current, axes_[i], sizes[i], norm) for i in reversed(range(len(axes_)))]
    if kind == "rfft":
        first = [_stage("rfft", current, axes_[-1], sizes[-1], norm)]
        return first + [_stage("fft", current, axes_[i], sizes[i], norm) for i in reversed(range(len(axes_) - 1))]
    inner = [_stage("ifft", current, axes_[i], sizes[i], norm) for i in range(len(axes_) - 1)]
    return inner + [_stage("irfft", current, axes_[-1], sizes[-1], norm)]


def stages_of(fn: t.Callable[..., t.Any], shape: tuple[int, ...], options: dict[str, t.Any]) -> list[Stage]:
    """The chain of stages of the call ``fn(a, **options)`` of an ``a`` of ``shape``."""
    return (_one_d if fn in ONE_D else _n_d)(fn, shape, options)


def fft_rrule(f: CD, a: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """Any transform of ``ONE_D`` and ``N_D``: the result's cotangent through the stages'
    adjoints, last first (module docstring)."""
    fn = f.primal
    names = _ONE_D_PARAMETERS if fn in ONE_D else _N_D_PARAMETERS
    name = getattr(fn, "__name__", "fft")
    options = bind(names, args, kwargs, {}, f"np.fft.{name}")
    if options.get("out") is not None:
        raise NotImplementedError(f"np.fft.{name} with out=: no rule (it writes into out)")
    stages = stages_of(fn, np.shape(a.primal), options)

    def adjoint(g: Array) -> Array:
        for stage in reversed(stages):
            g = stage.adjoint(g)
        return g

    return linear_rrule(f, a, args, kwargs, adjoint)


TRANSFORMS = [*ONE_D, *N_D]
for _fn in TRANSFORMS:
    primitive(_fn, ARRAY, ...)(fft_rrule)
frules.register_linear(TRANSFORMS, most=4)  # (a, n or s, axis or axes, norm; then out)


# --------------------------------------------------------------------------------------------
# fftshift, ifftshift: permutations, each the other's adjoint


def _back_fftshift(g: t.Any, x: Array, args: tuple[t.Any, ...], kwargs: dict[str, t.Any]) -> t.Any:
    return np.fft.ifftshift(g, *args, **kwargs)


def _back_ifftshift(g: t.Any, x: Array, args: tuple[t.Any, ...], kwargs: dict[str, t.Any]) -> t.Any:
    return np.fft.fftshift(g, *args, **kwargs)


primitive(np.fft.fftshift, ARRAY, ...)(shape_rule(_back_fftshift))
primitive(np.fft.ifftshift, ARRAY, ...)(shape_rule(_back_ifftshift))
frules.register_linear([np.fft.fftshift, np.fft.ifftshift], most=2)  # (x, axes)
