"""Reductions and norms of Python lists and tuples: ``np.sum([a * a, b])``, ``np.mean((x, y),
axis=0)``, ``np.linalg.norm([a, b])``, ``np.max([[a, b], [c, d]], axis=1)``...

NumPy turns such an argument into an array with ``np.asarray`` before it reduces, so these
rules do the same (``items.as_array``: the array, with fdata of its own) and run the rule
registered for an array in its place; after that rule's pullback has filled the array's fdata,
the cotangent goes back to the items: into the fdata of the arrays in the list, the list's
tangent for its floats (mutated in place), or the tuple's rdata.  Items are scalars, arrays of
one shape, or (nested) lists and tuples of them, as ``np.asarray`` takes them; ints give an
int array, which has no derivative.

Every registration of the functions below whose first argument is an array (``?[...]``) gets
a twin for a sequence (``object<collections.abc.Sequence>``: lists, tuples, ranges), so the
options, the subgradients and the refusals are the array rule's.  The twins are stateful: the
converted array and its fdata are kept for the next call of the same layout (``AsArray``),
since ``np.sum([a, b])`` converts inside one C call and allocates no array that outlives it.  ``np.average``'s ``weights`` may be a
list too (its rule converts them the same way).
"""

from __future__ import annotations

import collections.abc
import typing as t

import attrs
import numpy as np

from gibbous.ir import types as T

# The array rules these wrap are registered on import of their modules.
from gibbous.library.linalg import norms
from gibbous.library.reductions import reductions
from gibbous.library.common import ARRAY, CD, Array, new_fdata
from gibbous.library.items import send_to_value
from gibbous.rules.registry import DefaultContext, Pullback, Registration, stateful_primitive
from gibbous.tangents.model import CoDual

SEQUENCE: T.Type = T.Object(collections.abc.Sequence)

FUNCTIONS: tuple[t.Any, ...] = (
    np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.var, np.std, np.ptp,
    np.average, np.nansum, np.nanmean, np.cumsum, np.cumprod, np.linalg.norm,
)  # fmt: skip


_INT64 = (-(2**63), 2**63)


def layout(x: object) -> t.Hashable | None:
    """What ``np.asarray(x)``'s shape and dtype depend on: the nesting, the lengths, the
    classes of the scalars and the shapes and dtypes of the arrays; None where that is not all
    (an int beyond int64, an object NumPy would store as it is, another kind of sequence)."""
    if isinstance(x, (list, tuple)):
        parts = tuple(layout(v) for v in x)
        return None if None in parts else (len(x), parts)
    if isinstance(x, np.ndarray):
        return None if x.dtype.kind in "OV" else (x.shape, x.dtype.str)
    if type(x) in (float, complex, bool):
        return type(x).__name__
    if type(x) is int:
        return "int" if _INT64[0] <= x < _INT64[1] else None
    if isinstance(x, np.generic) and x.dtype.kind in "biufc":
        return x.dtype.str
    return None


@attrs.frozen
class AsArray:
    """The state of a rule of a sequence: ``np.asarray`` of the sequence made last time, its
    fdata, and the state of the array's rule.  A warm call with a sequence of the same layout
    converts into the kept array (one C call, whose temporary NumPy frees at once) and
    allocates nothing more than the array's rule does (docs/rules.md, the audit's policy)."""

    layout: t.Hashable | None
    array: Array
    fdata: t.Any
    inner: t.Any = None


def convert(state: AsArray | None, x: CD) -> AsArray:
    """The state with ``np.asarray(x.primal)`` in its array, and zero fdata."""
    key = layout(x.primal)
    if state is None or key is None or state.layout != key:
        xa = np.asarray(x.primal)
        return AsArray(key, xa, new_fdata(xa), None if state is None else state.inner)
    np.copyto(state.array, x.primal)
    if isinstance(state.fdata, np.ndarray):
        state.fdata.fill(0)
    return state


def on_sequence(rule: t.Callable[..., t.Any], stateful: bool) -> t.Callable[..., t.Any]:
    """The (stateful) rule of ``f(seq, ...)`` from ``rule``, that of ``f(array, ...)``."""

    def rrule(
        state: AsArray | None, f: CD, x: CD, *args: CD, **kwargs: CD
    ) -> tuple[CD, Pullback, AsArray]:
        state = convert(state, x)
        xa, fd = state.array, state.fdata
        inner = state.inner
        if stateful:
            y, pullback, inner = rule(inner, f, CoDual(xa, fd), *args, **kwargs)
        else:
            y, pullback = rule(f, CoDual(xa, fd), *args, **kwargs)
        if inner is not state.inner:
            state = attrs.evolve(state, inner=inner)

        def through(dy: t.Any) -> tuple[t.Any, ...]:
            f_rdata, _, *rest = pullback(dy)
            g = fd if isinstance(fd, np.ndarray) else None
            return (f_rdata, send_to_value(x, g), *rest)

        return y, through, state

    rrule.__qualname__ = f"on_sequence({getattr(rule, '__qualname__', rule)})"
    return rrule


def array_registrations(fn: object) -> list[Registration]:
    """The registrations of ``fn`` in ``DefaultContext`` whose first argument is an array."""
    return [r for r in DefaultContext.registrations(fn) if r.pattern.args[:1] == (ARRAY,)]


def register_sequence_twin(r: Registration) -> None:
    """Register for a sequence what ``r`` does for an array."""
    items: list[t.Any] = [SEQUENCE, *r.pattern.args[1:], *([...] if r.pattern.rest else [])]
    kwargs = dict(r.pattern.kwargs)
    rule = on_sequence(r.rule, r.kind == "stateful")
    stateful_primitive(r.fn, *items, kwargs=kwargs, state_type=AsArray)(rule)


for _fn in FUNCTIONS:
    for _r in array_registrations(_fn):
        register_sequence_twin(_r)
