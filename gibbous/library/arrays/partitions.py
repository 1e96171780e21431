"""``x.partition(kth, axis=-1)``, in place (NumPy's ``_quantile`` partitions its copy of the
data so), in both modes.  The values move by a permutation, and their tangents with them:

* reverse: the permutation is ``np.argpartition``'s, which makes the same arrangement as
  ``partition`` itself (one introselect on the same values); each position's cotangent goes
  back to where its value came from, and the pullback restores ``x``;
* forward: the permutation of (value, position) pairs partitioned by value, in buffers kept
  at the call site (the primal allocates nothing, nor does a warm call of the rule); ``dx``
  is permuted by it (at a tie, equal values' tangents may trade places: no derivative there).
"""

from __future__ import annotations

import typing as t

import attrs
import numpy as np

from gibbous.ir.exceptions import UnsupportedArgumentError
from gibbous.library.common import ARRAY, CD, NT, Array, RuleResult, bind, nothing
from gibbous.library.reductions.reductions import normalize_axes
from gibbous.rules import inplace_forward
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual

_PARAMETERS = ("kth", "axis", "kind", "order")


def _permutation(x: t.Any, options: t.Mapping[str, t.Any]) -> tuple[t.Any, int]:
    if options.get("order") is not None:
        raise UnsupportedArgumentError("numpy.ndarray.partition with order=: no rule")
    axis = normalize_axes(options["axis"], x.ndim)[0]
    kind = options.get("kind", "introselect")
    return np.argpartition(x, options["kth"], axis=axis, kind=kind), axis


@primitive(np.ndarray.partition, ARRAY, ...)
def ndarray_partition_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``x.partition(kth, axis)``: x's values permuted in place."""
    options = bind(_PARAMETERS, args, kwargs, {"axis": -1}, "partition")
    xp = x.primal
    perm, axis = _permutation(xp, options)
    saved = xp.copy()
    np.copyto(xp, np.take_along_axis(saved, perm, axis=axis))
    dx = x.fdata if isinstance(x.fdata, np.ndarray) else None
    saved_fdata = None if dx is None else dx.copy()
    if dx is not None:
        dx.fill(0)
    rdata = nothing(2 + len(args) + len(kwargs))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        np.copyto(xp, saved)
        if dx is None or saved_fdata is None:
            return rdata
        back = np.zeros_like(dx)
        np.put_along_axis(back, perm, dx, axis=axis)
        np.add(saved_fdata, back, out=dx)
        return rdata

    return CoDual(None, NT), pullback


@attrs.frozen
class PartitionState:
    """Buffers of the forward rule at one call site: ``pairs`` (a value and its position along
    the axis), ``flat`` (the flat index each position takes its tangent from), ``base`` (the
    flat index of each position with its coordinate along the axis zeroed), and ``tangent``, a
    copy of the tangent before it is permuted."""

    key: tuple[object, ...]
    pairs: Array
    positions: Array
    flat: Array
    base: Array
    tangent: Array
    stride: int


def _partition_state(state: PartitionState | None, x: Array, dx: Array, axis: int) -> PartitionState:
    key = (x.shape, x.dtype, dx.dtype, axis)
    if state is not None and state.key == key:
        return state
    n = x.shape[axis]
    along = np.arange(n, dtype=np.intp).reshape((n,) + (1,) * (x.ndim - axis - 1))
    stride = int(np.prod(x.shape[axis + 1 :], dtype=np.intp))
    numbers = np.arange(x.size, dtype=np.intp).reshape(x.shape)
    base = numbers - np.broadcast_to(along, x.shape) * stride
    return PartitionState(
        key,
        np.empty(x.shape, [("v", x.dtype), ("i", np.intp)]),
        np.broadcast_to(along, x.shape),
        np.empty(x.shape, np.intp),
        base,
        np.empty(x.shape, dx.dtype),
        stride,
    )


def partition_forward(
    state: PartitionState | None, x: t.Any, *a: t.Any, **kwargs: t.Any
) -> tuple[t.Any, t.Any, PartitionState | None]:
    """Forward mode: ``x`` partitioned, and its tangent permuted alike (``a``: kth, then the
    tangents), through buffers kept at the call site (the primal allocates nothing): the
    permutation is that of the pairs (value, position) partitioned by value."""
    n = (len(a) + 1) // 2
    args, dx = a[: n - 1], a[n - 1]
    wrapped = {k: CoDual(v, NT) for k, v in kwargs.items()}
    options = bind(_PARAMETERS, [CoDual(v, NT) for v in args], wrapped, {"axis": -1}, "partition")
    if options.get("order") is not None:
        raise UnsupportedArgumentError("numpy.ndarray.partition with order=: no rule")
    axis = normalize_axes(options["axis"], x.ndim)[0]
    if not isinstance(dx, np.ndarray):
        x.partition(*args, **kwargs)
        return None, None, state
    s = _partition_state(state, x, dx, axis)
    np.copyto(s.pairs["v"], x)
    np.copyto(s.pairs["i"], s.positions)
    s.pairs.partition(t.cast(t.Any, options["kth"]), axis=axis, order=["v", "i"])
    x.partition(*args, **kwargs)
    np.multiply(s.pairs["i"], s.stride, out=s.flat)
    np.add(s.flat, s.base, out=s.flat)
    np.copyto(s.tangent, dx)
    np.take(s.tangent.reshape(-1), s.flat, out=dx, mode="clip")
    return None, None, s


inplace_forward.register_writing(np.ndarray.partition, (0,), partition_forward)
