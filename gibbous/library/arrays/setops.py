"""Calls that add, remove or pick out elements: ``np.append``, ``np.insert``, ``np.delete`` and
``np.unique``.

**Append, insert, delete** move their arguments' elements into a new array, by rules of
broadcasting, flattening and axis handling that are easy to get subtly wrong.  So the pullback
does not re-derive them: it makes the same call on element numbers (``common.element_numbers``)
in place of the array and the values, which tells for every element of the result which
element of which argument it came from, and collects the cotangent back along those routes
(an inserted scalar broadcast to a whole row gets the sum over the row).  Indices (``obj``)
and ``axis`` pass through unchanged.

**unique** returns one element per distinct value (per distinct slice along ``axis``).  That
value is numerically every one of its occurrences, so any split of its cotangent among them is
a gradient of the same function; the rule sends it all to the **first occurrence**, the one
``return_index`` names (docs/decisions.md, "unique").  The other results (indices, inverse,
counts) have no derivative.
"""

from __future__ import annotations

import typing as t

import numpy as np
from numpy.lib import _arraysetops_impl as _arraysetops

from gibbous.library.common import (
    ANY,
    CD,
    NT,
    RuleResult,
    bind,
    collect,
    cotangent,
    element_numbers,
    new_fdata,
    nothing,
    zero_for,
)
from gibbous.library.items import collapse, send_to_value
from gibbous.library.reductions.reductions import normalize_axes
from gibbous.rules.registry import primitive
from gibbous.rules import frules
from gibbous.rules.emit import item_tangent
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Value
from gibbous.tangents.model import CoDual, zero_rdata


def _routed_rrule(params: tuple[str, ...], data: tuple[str, ...]) -> t.Callable[..., RuleResult]:
    """The rule of ``f(arr, *args)`` (parameters ``params`` after ``arr``) whose result is made
    of the elements of ``arr`` and of the arguments named in ``data``."""

    def rrule(f: CD, arr: CD, *args: CD, **kwargs: CD) -> RuleResult:
        bind(params, args, kwargs, {}, getattr(f.primal, "__name__", "call"))
        pa = tuple(a.primal for a in args)
        pk = {k: v.primal for k, v in kwargs.items()}
        y = f.primal(arr.primal, *pa, **pk)
        yf = new_fdata(y)
        named = dict(zip(params, args)) | kwargs
        sources = [arr, *(named[k] for k in data if k in named)]

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(yf, dy)
            if g is None:
                return (NT, zero_for(arr), *(zero_for(c) for c in (*args, *kwargs.values())))
            # Element numbers from 1 on (0: made by none of the sources).
            numbers: dict[int, t.Any] = {}
            spans = []
            first = 1
            for c in sources:
                shape = np.shape(c.primal)
                numbers[id(c)] = element_numbers(shape, first)
                spans.append((first, shape))
                first += numbers[id(c)].size
            routes = f.primal(
                numbers[id(arr)],
                *(numbers.get(id(a), a.primal) for a in args),
                **{k: numbers.get(id(v), v.primal) for k, v in kwargs.items()},
            )
            acc = collect(g, routes, first)
            grads = {
                id(c): send_to_value(c, acc[lo : lo + np.prod(shape, dtype=int)].reshape(shape))
                for c, (lo, shape) in zip(sources, spans)
            }
            operands = (arr, *args, *kwargs.values())
            return (NT, *(grads[id(c)] if id(c) in grads else zero_for(c) for c in operands))

        return CoDual(y, yf), pullback

    return rrule


primitive(np.append, ANY, ANY, ...)(_routed_rrule(("values", "axis"), ("values",)))
primitive(np.insert, ANY, ANY, ANY, ...)(_routed_rrule(("obj", "values", "axis"), ("values",)))
primitive(np.delete, ANY, ANY, ...)(_routed_rrule(("obj", "axis"), ()))
frules.register_linear([np.delete], most=3)  # (arr, obj, axis)
frules.register_linear_in([np.append], (0, 1), most=3)  # (arr, values, axis)
frules.register_linear_in([np.insert], (0, 2), most=4)  # (arr, obj, values, axis)

_UNIQUE = ("return_index", "return_inverse", "return_counts", "axis", "equal_nan", "sorted")


@primitive(np.unique, ANY, ...)
def unique_rrule(f: CD, ar: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.unique(ar, return_index, return_inverse, return_counts, axis, equal_nan=,
    sorted=)``: each unique value's cotangent goes to its first occurrence in ``ar``."""
    options = bind(_UNIQUE, args, kwargs, {"return_index": False, "axis": None}, "unique")
    pa = tuple(a.primal for a in args)
    pk = {k: v.primal for k, v in kwargs.items()}
    y = f.primal(ar.primal, *pa, **pk)
    yf = new_fdata(y)
    rest = nothing(len(args) + len(kwargs))
    values, values_fdata = (y[0], yf[0]) if isinstance(y, tuple) else (y, yf)
    if not isinstance(values_fdata, np.ndarray):
        return CoDual(y, yf), lambda dy: (NT, zero_for(ar), *rest)
    if options["return_index"]:
        first = y[1]
    else:
        # The same call with return_index: NumPy's first occurrences of the same values.
        again = {k: v for k, v in options.items() if k not in ("return_inverse", "return_counts")}
        found, first = f.primal(ar.primal, **(again | {"return_index": True}))
        if not np.array_equal(found, values, equal_nan=True):
            raise NotImplementedError(
                "np.unique: the values come in another order with return_index=True, so "
                "gibbous cannot tell their first occurrences; pass sorted=True"
            )
    axis = options["axis"]

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        xp = np.asarray(ar.primal)
        g = values_fdata if xp.dtype.kind == "c" else np.real(values_fdata)
        grad = np.zeros(xp.shape, dtype=g.dtype)
        if axis is None:
            grad.reshape(-1)[first] = g
        else:
            ax = normalize_axes(axis, xp.ndim)[0]
            np.moveaxis(grad, ax, 0)[first] = np.moveaxis(g, ax, 0)
        return (NT, send_to_value(ar, grad), *rest)

    return CoDual(y, yf), pullback


# --------------------------------------------------------------------------------------------
# The NamedTuples np.unique_all, np.unique_counts and np.unique_inverse return (NumPy's own
# Python makes them, ``UniqueAllResult(*result)``): a tuple of the items, their tangents the
# items' (forward mode makes NamedTuples of the tangents already).


def result_tuple_rrule(f: CD, *items: CD) -> RuleResult:
    y = f.primal(*(x.primal for x in items))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if dy is NT:
            return (NT, *(zero_rdata(x.primal) for x in items))
        return (NT, *(zero_rdata(x.primal) if d is NT else d for x, d in zip(items, dy)))

    return CoDual(y, collapse(x.fdata for x in items)), pullback


def _result_tuple_make(cls: type) -> frules.Maker:
    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> frules.Tangent | frules.Emit | None:
        if kwnames:
            return None

        def emit(
            b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kw: frules.Keywords
        ) -> Value:
            items = [item_tangent(b, a, d) for a, d in zip(args, tangents)]
            return b.call(cls, *items, type=T.ANY)

        return frules.Emit(emit)

    return make


_RESULTS = ("UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult")
for _name in _RESULTS:
    _cls = getattr(_arraysetops, _name, None)
    if _cls is not None:
        primitive(_cls, ...)(result_tuple_rrule)
        frules.register(_cls, _result_tuple_make(_cls))
