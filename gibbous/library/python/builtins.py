"""``sum``, ``min`` and ``max`` over iterables (lists, tuples, arrays, iterators), and
``min``/``max`` of several values.

``sum(xs, start)`` gives every item the cotangent (summed over broadcast axes for arrays).
``math.fsum`` and ``math.prod`` (the genexpr consumers of the frontend) too.  ``min``/``max``
give it to the item Python returns: the first of equal extremes (also with
``key=``, whose own gradient is zero: the choice is locally constant).
"""

from __future__ import annotations

import builtins
import inspect
import math
import operator
import typing as t

import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Value
from gibbous.rules import frules
from gibbous.rules.emit import (
    static_types,
    ForwardModeError,
    is_none,
    item_tangent,
    real_type,
    refuse_complex,
    split_tangents,
)
from gibbous.library.common import (
    ANY,
    CD,
    NT,
    RuleResult,
    conj,
    cotangent,
    is_inexact_scalar,
    new_fdata,
    nothing,
    scalar_rdata,
    send,
    zero_for,
)
from gibbous.library.items import Items, TupleItems
from gibbous.library.python.iteration import consume
from gibbous.library.python.queries import set_items_rrule
from gibbous.rules.public_names import callable_name
from gibbous.rules.registry import primitive, zero_derivative
from gibbous.tangents.model import CoDual


def give(items: Items, j: int, g: t.Any) -> None:
    """``items.send(j, g)``; a number item gets its rdata directly, which is what ``send``
    does, except on an array's items, where it makes NumPy scalars of ``g`` (allocating: a
    warm ``sum`` of a vector would allocate where its primal does not)."""
    v = items.item(j)
    if g is not None and is_inexact_scalar(v):
        items.send_rdata(j, scalar_rdata(v, g))
    else:
        items.send(j, g)


@primitive(builtins.sum, ANY, ...)
def sum_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    if len(args) + len(kwargs) > 1 or set(kwargs) - {"start"}:
        raise TypeError("sum() takes an iterable and an optional start")
    start = (*args, *kwargs.values())[0] if args or kwargs else CoDual(0, NT)
    items = consume(x)
    values = [items.item(j) for j in range(len(items))]
    y = f.primal(values, start.primal)
    rest = len(args) + len(kwargs)
    if y is start.primal:  # nothing to add: the start itself
        return start, lambda dy: (NT, items.rdata(), *((dy,) if rest else ()))
    yf = new_fdata(y)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(yf, dy)
        for j in range(len(values)):
            give(items, j, g)
        start_rdata = (send(start, g),) if rest else ()
        return (NT, items.rdata(), *start_rdata)

    return CoDual(y, yf), pullback
frules.register_linear([builtins.sum], added={1, "start"})


def _chosen(keys: t.Sequence[t.Any], larger: bool) -> int:
    """The index of the item ``max``/``min`` returns: the first of the extreme ones."""
    best = 0
    for i in range(1, len(keys)):
        if (keys[i] > keys[best]) if larger else (keys[i] < keys[best]):
            best = i
    return best


def min_max_rrule(f: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``max(iterable, key=..., default=...)`` or ``max(a, b, ..., key=...)``."""
    if set(kwargs) - {"key", "default"}:
        raise TypeError(f"unexpected arguments {sorted(kwargs)}")
    key = kwargs["key"].primal if "key" in kwargs else None
    items: Items = consume(args[0]) if len(args) == 1 else TupleItems(
        tuple(a.primal for a in args), tuple(a.fdata for a in args)
    )
    values = [items.item(j) for j in range(len(items))]
    rest = nothing(len(kwargs))
    if not values:
        if "default" not in kwargs:
            f.primal([])  # raises the ValueError Python raises
        default = kwargs["default"]
        return default, lambda dy: (
            NT,
            items.rdata(),
            *(dy if name == "default" else NT for name in kwargs),
        )
    keys = values if key is None else [key(v) for v in values]
    k = _chosen(keys, f.primal is builtins.max)
    y = values[k]

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        items.send_rdata(k, dy)
        if len(args) == 1:
            return (NT, items.rdata(), *rest)
        # Several operands: each gets its own rdata (TupleItems accumulated them).
        rdata = items.rdata()
        if rdata is NT:
            return (NT, *(zero_for(a) for a in args), *rest)
        return (NT, *rdata, *rest)

    return CoDual(y, items.fdata(k)), pullback


for _fn in (builtins.min, builtins.max):
    primitive(_fn, ANY, ...)(min_max_rrule)


def _listed(what: str, items: t.Any) -> list[t.Any]:
    """The items of a list, tuple or array (an iterator the primal consumed has none left)."""
    if not isinstance(items, (list, tuple, np.ndarray)):
        raise ForwardModeError(
            f"forward mode: {what} of a {type(items).__name__}: forward mode takes a list, a "
            "tuple or an array here (make a list of the items first)"
        )
    return list(items)


def _iterable(ty: T.Type) -> bool:
    """A list, tuple or array of real numbers (or a value whose type was not known)."""
    if isinstance(ty, T.Const):  # (``min((), default=x)``)
        return isinstance(ty.value, (tuple, list)) and all(map(_real_number, ty.value))
    numbers = (T.Float, T.Int, T.Bool)
    return isinstance(ty, T.Any) or frules.real_operand(ty) and not isinstance(ty, numbers)


def _real_number(v: object) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating))


def min_max_tangent(larger: bool) -> frules.Maker:
    """``max``/``min``: the tangent of the item Python returns (``_chosen``, as the reverse
    rule: the first of equal extremes, by ``key`` if given), or of ``default``."""
    what = "max" if larger else "min"

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> frules.Tangent | frules.Emit | None:
        n, total = len(types) - len(kwnames), len(types)
        if not n or set(kwnames) - {"key", "default"}:
            return None
        if not (_iterable(types[0]) if n == 1 else all(map(real_type, types[:n]))):
            return None
        default = n + kwnames.index("default") if "default" in kwnames else None
        if default is not None and not (
            frules.real_operand(types[default]) or is_none(types[default])
        ):
            return None

        def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
            ops, ds = split_tangents(a, n, total)
            values = _listed(what, ops[0]) if n == 1 else list(ops)
            if not values:
                return frules.like(z, None if default is None else ds[default])
            key = kwargs.get("key")
            k = _chosen(values if key is None else [key(v) for v in values], larger)
            given = ds[0] if n == 1 else ds[k]
            return frules.like(z, given[k] if n == 1 and given is not None else given)

        return tangent

    return make


frules.register(builtins.max, min_max_tangent(True))
frules.register(builtins.min, min_max_tangent(False))


def _min_max_written(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``max``/``min`` written out for a Hessian-vector product: the tangent at the index of the
    item Python returned (``operator.indexOf``, identity first: the first of equal extremes, a
    NaN too), read from the tuple of the operands' tangents or the sequence's tangent.  Without
    ``key`` or ``default``; of floats, or of one list, tuple or 1-D array of them."""
    n = len(types)
    if kwnames or not n or not static_types(types):
        return None
    if n == 1 and not _sequence_of_reals(types[0]) or n > 1 and not all(map(real_type, types)):
        return None

    def emit(b: Builder, z: Value, args: frules.Values, ds: frules.Tangents, kw: frules.Keywords) -> Value:
        if n == 1:
            seq, dseq = args[0], ds[0]
            if dseq is None:
                return frules.zero(b, z)
        else:
            items = T.Tuple(tuple(a.type for a in args))
            seq = b.call(runtime.make_tuple, *args, type=items)
            tangents = [item_tangent(b, a, d) for a, d in zip(args, ds)]
            dseq = b.call(runtime.make_tuple, *tangents, type=T.ANY)
        k = b.call(operator.indexOf, seq, z, type=T.INT)
        return b.call(operator.getitem, dseq, k, type=z.type)

    return frules.Emit(emit)


def _sequence_of_reals(ty: T.Type) -> bool:
    if isinstance(ty, T.Array):
        return ty.ndim == 1 and real_type(ty)
    if isinstance(ty, T.List):
        return isinstance(ty.item, (T.Float, T.Int))
    return isinstance(ty, T.Tuple) and all(isinstance(i, (T.Float, T.Int)) for i in ty.items)


frules.register_written(builtins.max, _min_max_written)
frules.register_written(builtins.min, _min_max_written)


@primitive(math.fsum, ANY)
def fsum_rrule(f: CD, x: CD) -> RuleResult:
    items = consume(x)
    values = [items.item(j) for j in range(len(items))]
    y = f.primal(values)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if dy is not NT:
            for j in range(len(values)):
                give(items, j, dy)
        return NT, items.rdata()

    return CoDual(y, NT), pullback
frules.register_linear([math.fsum])


def products_of_others(factors: t.Sequence[t.Any]) -> list[t.Any]:
    """For each factor, the product of the others: running products from both ends, exact
    with zeros."""
    left, right = [1] * len(factors), [1] * len(factors)
    for j in range(1, len(factors)):
        left[j] = left[j - 1] * factors[j - 1]
        right[-j - 1] = right[-j] * factors[-j]
    return [lft * rgt for lft, rgt in zip(left, right)]


@primitive(math.prod, ANY, ...)
def prod_rrule(f: CD, x: CD, **kwargs: CD) -> RuleResult:
    """``math.prod(xs, start=1)``: each item gets the product of all the others (running
    products from both ends: exact with zeros)."""
    items = consume(x)
    values = [items.item(j) for j in range(len(items))]
    start = kwargs.get("start", CoDual(1, NT))
    y = f.primal(values, start=start.primal)
    yf = new_fdata(y)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(yf, dy)
        if g is None:
            return (NT, items.rdata(), *(zero_for(c) for c in kwargs.values()))
        others = products_of_others([start.primal, *values])
        for j in range(len(values)):
            give(items, j, g * conj(others[j + 1]))
        start_rdata = (send(start, g * conj(others[0])),) if kwargs else ()
        return (NT, items.rdata(), *start_rdata)

    return CoDual(y, yf), pullback


def prod_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``math.prod(xs, start=1)``: each item's tangent times the product of the others."""
    n, total = len(types) - len(kwnames), len(types)
    if n != 1 or set(kwnames) - {"start"} or not _iterable(types[0]):
        return None
    if kwnames and not real_type(types[1]):
        return None

    def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        ops, ds = split_tangents(a, n, total)
        values = _listed("math.prod", ops[0])
        refuse_complex("math.prod", values, kwargs.get("start"))
        start = ds[1] if kwnames else None
        tangents = [start, *([None] * len(values) if ds[0] is None else list(ds[0]))]
        others = products_of_others([kwargs.get("start", 1), *values])
        terms = [d * o for d, o in zip(tangents, others) if d is not None]
        return frules.like(z, sum(terms) if terms else None)

    return tangent


frules.register(math.prod, prod_tangent)

# (``inspect.signature``, ``getfullargspec``: facts about a function, which SciPy's ``_axis_nan_policy`` wrapper
# reads on every call of its ``scipy.stats`` functions: not differentiated from its source)
for _zero_fn in (builtins.any, builtins.all, inspect.signature, inspect.getfullargspec):
    zero_derivative(_zero_fn, ...)
def _set_of(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``set(xs)`` found at run time (``set(kwds)`` in SciPy): hashed items, no tangent; one
    that is a float is refused (``no_float_items``: the transform's check where the call is
    known when the rule is built)."""
    if kwnames or len(types) != 1:
        return None

    def tangent(z: t.Any, xs: t.Any, dxs: t.Any) -> None:
        frules.no_float_items(z, callable_name(type(z)))

    return tangent


for _set in (builtins.set, builtins.frozenset):
    primitive(_set, ...)(set_items_rrule)
    frules.register(_set, _set_of)
