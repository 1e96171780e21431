"""Calls without derivative: comparisons, bitwise operators, queries (``len``,
``isinstance``, ``in``, ...), text (``repr``, ``format``, string methods), sets, indices
(``argmax``...).  Comparisons and bitwise operators check that their result is not
differentiable: a user ``__lt__`` may return anything.  The methods that change a set undo
their change in their pullback, as the list methods do (``container_methods``): pullbacks that
run after it see the set their forward call saw.
"""

from __future__ import annotations

import builtins
import operator
import typing as t

import numpy as np

from gibbous.library.common import ANY, CD, LIST, NT, STR, RuleResult
from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Value
from gibbous.rules import frules
from gibbous.rules.emit import ForwardModeError, real_type, static_types
from gibbous.rules.public_names import callable_name
from gibbous.rules.registry import ZeroDerivativeRule, primitive, zero_derivative
from gibbous.tangents.model import CoDual, is_differentiable, zero_rdata

# Methods of strings, which have no tangent.
_STR_METHODS = """
    upper lower strip lstrip rstrip split rsplit join replace startswith endswith format find
    index count capitalize title casefold center ljust rjust zfill isdigit isalpha isspace
""".split()


def _boolean_rrule(f: CD, *args: CD) -> RuleResult:
    """Comparisons and bitwise operators: no derivative, but a result with a tangent (a user
    ``__lt__`` returning a float) would need one, so it is refused rather than zeroed."""
    y = f.primal(*(a.primal for a in args))
    if is_differentiable(y):
        raise NotImplementedError(
            f"{getattr(f.primal, '__name__', f.primal)} returned a {type(y).__qualname__}, which "
            "has a derivative; gibbous differentiates comparisons only as booleans"
        )
    # Operands with rdata (floats, tuples of floats) get a zero of their own kind.
    rdata = (NT, *(zero_rdata(a.primal) for a in args))
    # An in-place operator returns its (changed) left operand: one object, one fdata.
    fdata = args[0].fdata if args and y is args[0].primal else NT
    return CoDual(y, fdata), lambda dy: rdata


for _op in (
    operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge,
    operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
    # in place (ints rebind, sets and bool arrays change; ``|=`` is also a dict's update, in
    # container_methods)
    operator.iand, operator.ixor, operator.ilshift, operator.irshift,
):  # fmt: skip
    primitive(_op, ANY, ANY)(_boolean_rrule)
for _unary_op in (operator.invert, operator.inv):
    primitive(_unary_op, ANY)(_boolean_rrule)


def comparison_tangent(fn: t.Callable[..., t.Any], arity: int = 2) -> frules.Maker:
    """A comparison's (or a bitwise operator's, of ``arity`` operands) result is a boolean (or an array of them): no tangent.  Of real numbers
    and arrays that is known when the rule is built; of values whose types were not known it
    is checked at run time, as the reverse rule checks it (a user ``__lt__`` may return a
    float, which would need a tangent)."""
    name = callable_name(fn)

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> frules.Tangent | frules.Emit | None:
        if kwnames or len(types) != arity or any(map(_complex, types)):
            return None
        if static_types(types) and all(map(real_type, types)):
            return frules.Emit(_no_tangent)

        def tangent(z: t.Any, *a: t.Any) -> t.Any:
            if is_differentiable(z):
                raise ForwardModeError(
                    f"forward mode: {name} returned a {type(z).__qualname__}, which has a "
                    "derivative; forward mode differentiates comparisons only as booleans"
                )
            return frules.like(z, None)

        return tangent

    return make


def _complex(ty: T.Type) -> bool:
    if isinstance(ty, T.Array):
        return ty.dtype is not None and np.dtype(ty.dtype).kind == "c"
    return isinstance(ty, T.Complex)


def _no_tangent(
    b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
) -> Value:
    zero = T.Array("float64", z.type.ndim) if isinstance(z.type, T.Array) else T.FLOAT
    return b.call(frules.like, z, None, type=zero)


for _op in (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge):
    frules.register(_op, comparison_tangent(_op))
# Bitwise operators of ints and booleans (``~mask`` of a mask whose type was lost inside
# NumPy's Python, np.piecewise's): the same, checked at run time where the types are unknown.
for _op in (operator.and_, operator.or_, operator.xor):
    frules.register(_op, comparison_tangent(_op))
for _unary_op in (operator.invert, operator.inv):
    frules.register(_unary_op, comparison_tangent(_unary_op, 1))

_ZERO: tuple[tuple[object, tuple[t.Any, ...]], ...] = (
    (builtins.len, (ANY,)),
    (operator.contains, (ANY, ANY)),
    (operator.countOf, (ANY, ANY)),
    (operator.indexOf, (ANY, ANY)),
    (operator.length_hint, (ANY, ...)),
    (operator.is_, (ANY, ANY)),
    (operator.is_not, (ANY, ANY)),
    (operator.not_, (ANY,)),
    (operator.truth, (ANY,)),
    (builtins.isinstance, (ANY, ANY)),
    (builtins.print, (...,)),
    (builtins.range, (...,)),
    (builtins.slice, (...,)),
    (list.index, (LIST, ...)),
    (list.count, (LIST, ...)),
    (builtins.repr, (...,)),
    (builtins.str, (...,)),
    (builtins.ascii, (...,)),
    (builtins.format, (...,)),
    (builtins.hash, (ANY,)),
    (builtins.issubclass, (ANY, ANY)),
    (builtins.callable, (ANY,)),
    (builtins.hasattr, (ANY, ANY)),
    (builtins.type, (ANY,)),
    (builtins.id, (ANY,)),
    (np.ndindex, (...,)),
    (np.argmax, (...,)),
    (np.argmin, (...,)),
    (np.argsort, (...,)),
    (np.ndarray.argmax, (...,)),
    (np.ndarray.argmin, (...,)),
    (np.ndarray.argsort, (...,)),
    (np.shape, (ANY,)),
    (np.ndim, (ANY,)),
    (np.size, (...,)),
    # what library code asks of its arguments before computing (SciPy's array API checks)
    (np.iterable, (ANY,)),
    (np.result_type, (...,)),
    (np.can_cast, (...,)),
    (np.promote_types, (ANY, ANY)),
    (np.min_scalar_type, (ANY,)),
    (np.issubdtype, (ANY, ANY)),
    (np.isrealobj, (ANY,)),
    (np.iscomplex, (ANY,)),
    (np.isfortran, (ANY,)),
    (np.may_share_memory, (...,)),
    (np.shares_memory, (...,)),
    (np.broadcast_shapes, (...,)),
    (np.finfo, (ANY,)),
    (np.iinfo, (ANY,)),
    (np.dtype, (...,)),
    *((getattr(str, _name), (STR, ...)) for _name in _STR_METHODS),
)
for _zero_fn, _pattern in _ZERO:
    zero_derivative(_zero_fn, *_pattern)
# (the plain functions behind NumPy's dispatchers, which NumPy's own Python calls: np.block's)
for _zero_fn in (np.shape, np.ndim, np.size):
    _inner = getattr(_zero_fn, "__wrapped__", None)
    if _inner is not None:
        zero_derivative(_inner, ...)


# --------------------------------------------------------------------------------------------
# Sets: their items (hashable values) carry no tangent into the set, so a number with a
# derivative may not go in: ``sum({2 * x}) + x`` would lose the first term's derivative (sets
# merge equal floats, so there is no tangent per item to keep).

_INEXACT = (float, complex, np.floating, np.complexfloating)


def refuse_numbers(fn: object, values: t.Iterable[object]) -> None:
    """Raise if any of ``values`` (going into a set) is a real or complex number."""
    for v in values:
        if isinstance(v, _INEXACT):
            name = getattr(fn, "__qualname__", None) or repr(fn)
            raise TypeError(
                f"{name}: the number {v!r} would go into a set, which keeps no derivative (a "
                "set merges equal numbers); differentiating through it would lose the "
                "gradient.  Use a list or a tuple"
            )


def _elements(x: CD) -> t.Iterable[object]:
    v = x.primal
    return v if isinstance(v, (list, tuple, set, frozenset, dict)) else (v,)


def set_items_rrule(f: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``{a, b}``, ``set(xs)``, ``frozenset(xs)``: no derivative, and no numbers that have one."""
    if f.primal is runtime.make_set:
        refuse_numbers(f.primal, (a.primal for a in args))
    else:
        refuse_numbers(f.primal, (v for a in args for v in _elements(a)))
    return ZeroDerivativeRule()(f, *args, **kwargs)


@primitive(set.add, ANY, ANY)
def set_add_rrule(f: CD, s: CD, x: CD) -> RuleResult:
    st, v = s.primal, x.primal
    refuse_numbers(f.primal, (v,))
    new = v not in st
    f.primal(st, v)
    rdata = (NT, NT, zero_rdata(v))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if new:
            st.discard(v)
        return rdata

    return CoDual(None, NT), pullback


_ABSENT = object()


def set_removal_rrule(f: CD, s: CD, x: CD) -> RuleResult:
    """``set.remove``, ``set.discard``: the pullback puts back the very item removed."""
    st, v = s.primal, x.primal
    removed = next((item for item in st if item == v), _ABSENT) if v in st else _ABSENT
    f.primal(st, v)  # remove raises KeyError as Python does
    rdata = (NT, NT, zero_rdata(v))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if removed is not _ABSENT:
            st.add(removed)
        return rdata

    return CoDual(None, NT), pullback


for _remove in (set.remove, set.discard):
    primitive(_remove, ANY, ANY)(set_removal_rrule)


@primitive(set.update, ANY, ...)
def set_update_rrule(f: CD, s: CD, *others: CD) -> RuleResult:
    st = s.primal
    parts = [list(o.primal) for o in others]  # an iterator is consumed once, as update would
    refuse_numbers(f.primal, (v for part in parts for v in part))
    added = {v for part in parts for v in part if v not in st}
    f.primal(st, *parts)
    rdata = (NT, NT, *(zero_rdata(o.primal) for o in others))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        st.difference_update(added)
        return rdata

    return CoDual(None, NT), pullback

