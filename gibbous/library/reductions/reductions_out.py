"""Reductions into ``out=``: ``np.sum``, ``np.mean`` and ``np.cumsum`` (and their methods) with an
array ``out`` keyword, as stateful rules (``gibbous.library.reductions.reductions`` has the
rules without ``out``, whose axis handling these share)."""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.library.common import ARRAY, CD, NT, Array, Scratch, bind, needs, zero_for
from gibbous.library.reductions.reductions import (
    CUMSUM_PARAMETERS,
    MEAN_PARAMETERS,
    SUM_PARAMETERS,
    StatefulResult,
    element_count,
    reduction_options,
    expand,
    normalize_axes,
)
from gibbous.rules.registry import stateful_primitive

# --------------------------------------------------------------------------------------------
# out=: sum, mean and cumsum into an array (stateful, as the in-place rules of
# gibbous.rules.inplace): the call overwrites ``out``, so the forward pass saves its primal
# and fdata into the state and zeroes its fdata; the pullback restores the primal, reads the
# cotangent into a buffer, restores the fdata, and only then adds the gradient into x's fdata
# (x may share memory with out).  No array is allocated in a warm call.


def _out_operand(kwargs: t.Mapping[str, CD], what: str) -> CD:
    out = kwargs["out"]
    if type(out.primal) is not np.ndarray or type(out.fdata) is not np.ndarray:
        raise NotImplementedError(f"{what} with out= of {type(out.primal).__name__}: no rule")
    return out


def _save_out(state: Scratch | None, out: CD, extra: int) -> Scratch:
    """The state: out's saved primal and fdata, a buffer for its cotangent and ``extra`` more
    buffers of its shape; filled with what the call will overwrite."""
    spec = (out.primal.shape, out.primal.dtype)
    state = Scratch.fit(state, *(spec,) * (3 + extra))
    np.copyto(state.arrays[0], out.primal)
    np.copyto(state.arrays[1], out.fdata)
    return state


def _restore_out(state: Scratch, out: CD) -> Array:
    """Put out's primal and fdata back; the cotangent it held, in the state's buffer."""
    saved, saved_fdata, grad = state.arrays[:3]
    np.copyto(out.primal, saved)
    np.copyto(grad, out.fdata)
    np.copyto(out.fdata, saved_fdata)
    return grad


def _add_real(dx: Array, g: Array) -> None:
    np.add(dx, g if dx.dtype.kind == "c" or g.dtype.kind != "c" else g.real, out=dx)


def sum_out_rrule(
    state: Scratch | None, f: CD, x: CD, *args: CD, **kwargs: CD
) -> StatefulResult:
    """``np.sum(x, axis, out=out)`` and ``np.mean``: the cotangent of out, broadcast back over
    the reduced axes (a view), divided by the count for a mean (in the buffer)."""
    what = getattr(f.primal, "__qualname__", "reduction")
    out = _out_operand(kwargs, what)
    mean = f.primal in (np.mean, np.ndarray.mean)
    rest = {k: v for k, v in kwargs.items() if k != "out"}
    axis, keepdims = reduction_options(MEAN_PARAMETERS if mean else SUM_PARAMETERS, args, rest, what)
    xp = x.primal
    axes = normalize_axes(axis, xp.ndim)
    state = _save_out(state, out, 0)
    f.primal(xp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    out.fdata.fill(0)
    rdata = (NT, NT, *(zero_for(a) for a in (*args, *kwargs.values())))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = _restore_out(state, out)
        if needs(x):
            if mean:
                np.multiply(g, 1 / element_count(xp, axes), out=g)
            _add_real(x.fdata, expand(g, axes, keepdims))
        return rdata

    return out, pullback, state


def cumsum_out_rrule(
    state: Scratch | None, f: CD, x: CD, *args: CD, **kwargs: CD
) -> StatefulResult:
    """``np.cumsum(x, axis, out=out)``: the reversed cumulative sum of out's cotangent, written
    through reversed views into a buffer of the state."""
    out = _out_operand(kwargs, "cumsum")
    rest = {k: v for k, v in kwargs.items() if k != "out"}
    axis = bind(CUMSUM_PARAMETERS, args, rest, {}, "cumsum").get("axis")
    xp = x.primal
    state = _save_out(state, out, 1)
    f.primal(xp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    out.fdata.fill(0)
    ax = -1 if axis is None else normalize_axes(axis, xp.ndim)[0]
    rdata = (NT, NT, *(zero_for(a) for a in (*args, *kwargs.values())))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = _restore_out(state, out)
        if needs(x):
            reversed_sum = state.arrays[3]
            np.cumsum(np.flip(g, ax), axis=ax, out=np.flip(reversed_sum, ax))
            _add_real(x.fdata, reversed_sum.reshape(xp.shape))
        return rdata

    return out, pullback, state


_fn: t.Any
for _fn in (np.sum, np.ndarray.sum, np.mean, np.ndarray.mean):
    stateful_primitive(_fn, ARRAY, ..., kwargs={"out": ARRAY}, state_type=Scratch)(sum_out_rrule)
for _fn in (np.cumsum, np.ndarray.cumsum):
    stateful_primitive(_fn, ARRAY, ..., kwargs={"out": ARRAY}, state_type=Scratch)(
        cumsum_out_rrule
    )
