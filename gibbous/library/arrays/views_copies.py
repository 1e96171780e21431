"""Making and reshaping arrays: views (``reshape``, ``ravel``, ``transpose``, ``.T``,
``squeeze``, ``expand_dims``, ``moveaxis``, ``rollaxis``, ...), copies (``copy``, ``astype``, ``np.array``), joins
(``concatenate``, ``stack``, ``hstack``, ``vstack``, ``column_stack``, ``dstack``),
diagonals, constructors (``zeros``, ``full``, ``arange``, ``linspace``, ...) and the
attributes of arrays.

**Views.**  A result that shares memory with its argument gets as fdata the same call applied
to the argument's fdata (``np.reshape(dx, shape)`` for ``np.reshape(x, shape)``): fdata has its
primal's layout, so that is the same view of the same memory pattern, which ``view_fdata``
checks.  Nothing is left for the pullback.  Where NumPy had to copy (``reshape`` of a
non-contiguous array), the result gets new fdata and the pullback adds the cotangent back,
reshaped.  A result that *is* its argument (``np.asarray(x)``, ``x.astype(x.dtype,
copy=False)``) is returned with the argument's own CoDual.

**Constructors** have no derivative except through a fill value or endpoints:
``np.full(shape, v)`` gives ``v`` the sum of the cotangent; ``np.linspace(a, b, n)`` and
``np.arange(a, b, step)`` give their float endpoints and step theirs.
"""

from __future__ import annotations

import builtins
import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Value
from gibbous.ir.exceptions import UnsupportedArgumentError
from gibbous.rules import frules
from gibbous.rules.emit import number_type, static_types
from gibbous.rules.emit import (
    ForwardModeError,
    is_none,
    operand_positions,
    real_type,
    refuse_complex,
    split_tangents,
    static_types,
)
from gibbous.rules.public_names import callable_name
from gibbous.library.common import (
    ANY,
    ARRAY,
    CD,
    NT,
    NUMBER,
    Array,
    RuleResult,
    add_into,
    bind,
    is_float_array,
    cotangent,
    needs,
    no_pullback,
    new_fdata,
    nothing,
    send,
    shares_memory,
    view_fdata,
    zero_for,
)
from gibbous.ir.exceptions import UnsupportedArgumentError
from gibbous.library.items import items_of, send_to_value
from gibbous.library.reductions.reductions import normalize_axes
from gibbous.library.elementwise.ufuncs import real_or_imag
from gibbous.rules.registry import primitive, zero_derivative
from gibbous.tangents.model import CoDual, Tangent, is_differentiable

# ``back(g, x, args, kwargs)``: the gradient for x (shaped like x) from the cotangent g of a
# copying call; None for calls that always give views.
Back = t.Callable[[t.Any, Array, tuple[t.Any, ...], dict[str, t.Any]], t.Any] | None

_NO_RDATA_3 = no_pullback(3)


def _order(args: tuple[t.Any, ...], kwargs: dict[str, t.Any]) -> str:
    order = kwargs.get("order", next((a for a in args if isinstance(a, str)), "C"))
    if order not in ("C", "F"):
        raise NotImplementedError(f"order={order!r} of a copying reshape: no rule")
    return t.cast(str, order)


def _back_reshape(g: t.Any, x: Array, args: tuple[t.Any, ...], kwargs: dict[str, t.Any]) -> t.Any:
    return np.reshape(g, x.shape, order=_order(args, kwargs))  # type: ignore[call-overload]


def _back_same(g: t.Any, x: Array, args: tuple[t.Any, ...], kwargs: dict[str, t.Any]) -> t.Any:
    return g


def shape_rule(back: Back) -> t.Callable[..., RuleResult]:
    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        xp, dx = x.primal, x.fdata
        pa = tuple(a.primal for a in args)
        pk = {k: v.primal for k, v in kwargs.items()}
        y = f.primal(xp, *pa, **pk)
        n = 2 + len(args) + len(kwargs)
        rdata = nothing(n)
        if y is xp:
            return x, lambda dy: rdata
        if not isinstance(dx, np.ndarray) or not is_float_array(y) or y.size == 0:
            return CoDual(y, new_fdata(y)), lambda dy: rdata  # nothing differentiable (or empty)
        if shares_memory(y, xp):
            return CoDual(y, view_fdata(y, f.primal(dx, *pa, **pk), of=(xp, dx))), lambda dy: rdata
        if back is None:
            raise AssertionError(f"{f.primal!r} copied its argument instead of giving a view")
        yf = new_fdata(y)

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(yf, dy)
            if g is not None:
                add_into(dx, back(g, xp, pa, pk))
            return rdata

        return CoDual(y, yf), pullback

    rrule.__qualname__ = f"shape_rule({getattr(back, '__name__', None)})"
    return rrule


SHAPE_OPS: dict[t.Callable[..., t.Any], Back] = {
    np.reshape: _back_reshape,
    np.ndarray.reshape: _back_reshape,
    np.ravel: _back_reshape,
    np.ndarray.ravel: _back_reshape,
    np.ndarray.flatten: _back_reshape,
    np.transpose: None,
    np.ndarray.transpose: None,
    np.swapaxes: None,
    np.ndarray.swapaxes: None,
    np.moveaxis: None,
    np.rollaxis: None,
    np.squeeze: None,
    np.ndarray.squeeze: None,
    np.expand_dims: None,
    np.copy: _back_same,
    np.ndarray.copy: _back_same,
    np.ndarray.astype: _back_same,
}

for _fn, _back in SHAPE_OPS.items():
    primitive(_fn, ARRAY, ...)(shape_rule(_back))
# (of one array only: of several, a tuple, which NumPy's own Python makes; the rule of one
# array's view read a second operand as an option, and its gradient was lost)
for _fn in (np.atleast_1d, np.atleast_2d):
    primitive(_fn, ARRAY)(shape_rule(None))
frules.register_linear([
    np.reshape, np.ndarray.reshape, np.transpose, np.ndarray.transpose, np.ravel, np.ndarray.ravel,
    np.ndarray.flatten, np.squeeze, np.ndarray.squeeze, np.expand_dims, np.swapaxes,
    np.ndarray.swapaxes, np.moveaxis, np.copy, np.ndarray.copy,
])  # fmt: skip
frules.register_linear([np.atleast_1d, np.atleast_2d], most=1)  # (one array; see above)
frules.register_linear([np.rollaxis], most=3)  # (a, axis, start)


def _transpose_attribute(x: CD) -> CD:
    y = x.primal.T
    dx = x.fdata
    return CoDual(y, view_fdata(y, dx.T, of=(x.primal, dx)) if isinstance(dx, np.ndarray) else new_fdata(y))


# --------------------------------------------------------------------------------------------
# Attributes of arrays and numbers.  One rule per receiver kind dispatches on the name: the
# frontend passes the name as a constant, but a rule for ``str`` also serves ``getattr(x, name)``
# with a computed name, and the audit's cases reach it by the types of their arguments.

ZERO_ATTRIBUTES = frozenset(
    ("shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides", "flags")
)


def bound_method_fdata(y: object, x: CD) -> t.Any:
    """The fdata of ``x.method``, a bound method of x: that of its receiver (tangents.py)."""
    return NT if x.fdata is NT else Tangent({"__self__": x.fdata})


@primitive(builtins.getattr, ARRAY, T.STR)
def array_getattr_rrule(f: CD, x: CD, name: CD) -> RuleResult:
    """``x.T``, ``x.real``, ``x.imag`` (views of x's fdata where they are views of x), methods
    (bound to x, carrying its fdata) and values without derivative (``x.shape``...)."""
    attribute = name.primal
    if attribute == "T":
        return _transpose_attribute(x), _NO_RDATA_3
    if attribute in ("real", "imag"):
        part, back = real_or_imag(x, attribute == "imag")
        return part, lambda dy: (NT, back(dy), NT)
    y = f.primal(x.primal, attribute)
    if attribute in ZERO_ATTRIBUTES:
        return CoDual(y, new_fdata(y)), _NO_RDATA_3
    if getattr(y, "__self__", None) is x.primal:
        return CoDual(y, bound_method_fdata(y, x)), _NO_RDATA_3
    if is_differentiable(y):
        raise NotImplementedError(
            f"no rule for the attribute {attribute!r} of an array; use a function instead"
        )
    return CoDual(y, new_fdata(y)), _NO_RDATA_3


@primitive(builtins.getattr, NUMBER, T.STR)
def number_getattr_rrule(f: CD, x: CD, name: CD) -> RuleResult:
    """``z.real``, ``z.imag``; methods of a number (``z.conjugate``) carry its rdata; other
    attributes are constant."""
    attribute = name.primal
    y = f.primal(x.primal, attribute)
    if attribute in ("real", "imag"):
        # A scalar's parts, taken as attributes: NumPy's np.real/np.imag would make 0-d arrays.
        take_imag = attribute == "imag"
        if take_imag and not isinstance(x.primal, (complex, np.complexfloating)):
            return CoDual(y, NT), lambda dy: (NT, zero_for(x), NT)

        def part_pullback(dy: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(NT, dy)
            return NT, zero_for(x) if g is None else send(x, g * 1j if take_imag else g), NT

        return CoDual(y, NT), part_pullback
    if getattr(y, "__self__", None) is x.primal:

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            r = dy.fields.get("__self__", NT) if isinstance(dy, Tangent) else NT
            return NT, zero_for(x) if r is NT else r, NT

        return CoDual(y, NT), pullback
    if is_differentiable(y):
        raise NotImplementedError(f"no rule for the attribute {attribute!r} of a number")
    return CoDual(y, new_fdata(y)), lambda dy: (NT, zero_for(x), NT)


_LINEAR_ATTRIBUTES = {"T", "mT", "real", "imag"}


def _getattr_make(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``x.T``: the attributes of an array that are linear in it (a view of it)."""
    if kwnames or len(types) != 2 or not number_type(types[0]):
        return None
    name = types[1]
    if not (isinstance(name, T.Const) and name.value in _LINEAR_ATTRIBUTES):
        return None
    attribute = str(name.value)
    if static_types(types):

        def emit(
            b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
        ) -> Value:
            d = tangents[0]
            return frules.zero(b, z) if d is None else b.call(getattr, d, attribute, type=z.type)

        return frules.Emit(emit)

    def attr(z: t.Any, x: t.Any, n: t.Any, dx: t.Any, dn: t.Any) -> t.Any:
        return frules.like(z, None if dx is None else getattr(dx, attribute))

    if attribute in ("real", "imag"):  # (real-linear in a complex value too: eig's)
        return attr
    return frules.checked(attr, types)


frules.register(builtins.getattr, _getattr_make, numeric=True)  # (of arrays: T, real, imag)


# --------------------------------------------------------------------------------------------
# np.array, np.asarray


def array_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.array(x, ...)``/``np.asarray(x, ...)`` of an array, a scalar or nested lists and
    tuples of those: the gradient flows back to each scalar and array inside."""
    xp = x.primal
    if isinstance(xp, np.ndarray):
        return shape_rule(_back_same)(f, x, *args, **kwargs)
    y = f.primal(xp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    yf = new_fdata(y)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        return (NT, send_to_value(x, cotangent(yf, dy)), *rest)

    return CoDual(y, yf), pullback


for _fn in (np.array, np.asarray, np.asanyarray, np.ascontiguousarray, np.asfortranarray):
    primitive(_fn, ANY, ...)(array_rrule)
frules.register_linear([np.asarray, np.array, np.asanyarray, np.ascontiguousarray, np.asfortranarray])

# --------------------------------------------------------------------------------------------
# Joining


def _join_rrule(
    pieces: t.Callable[[t.Any, list[t.Any], dict[str, t.Any]], list[t.Any]],
    names: tuple[str, ...],
) -> t.Callable[..., RuleResult]:
    """A rule for a function of a sequence of arrays: ``pieces(g, items, options)`` cuts the
    cotangent into one gradient per item."""

    def rrule(f: CD, seq: CD, *args: CD, **kwargs: CD) -> RuleResult:
        options = bind(names, args, kwargs, {}, getattr(f.primal, "__name__", "join"))
        items = items_of(seq.primal, seq.fdata)
        values = [items.item(j) for j in range(len(items))]
        pk = {k: v.primal for k, v in kwargs.items()}
        y = f.primal(seq.primal, *(a.primal for a in args), **pk)
        yf = new_fdata(y)
        rest = nothing(len(args) + len(kwargs))

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(yf, dy)
            if g is not None:
                for j, piece in enumerate(pieces(g, values, options)):
                    items.send(j, piece)
            return (NT, items.rdata(), *rest)

        return CoDual(y, yf), pullback

    return rrule


def _split(g: t.Any, values: list[t.Any], sizes: list[int], axis: int) -> list[t.Any]:
    bounds = np.cumsum([0, *sizes])
    lead = (slice(None),) * axis
    return [
        np.reshape(g[(*lead, slice(int(lo), int(hi)))], np.shape(v))
        for v, lo, hi in zip(values, bounds[:-1], bounds[1:])
    ]


def _concatenate_pieces(g: t.Any, values: list[t.Any], options: dict[str, t.Any]) -> list[t.Any]:
    axis = options.get("axis", 0)
    if axis is None:  # the items flattened, then joined
        return _split(g, values, [int(np.size(v)) for v in values], 0)
    ax = normalize_axes(axis, np.ndim(values[0]))[0]
    return _split(g, values, [np.shape(v)[ax] for v in values], ax)


def _stack_pieces(g: t.Any, values: list[t.Any], options: dict[str, t.Any]) -> list[t.Any]:
    ax = normalize_axes(options.get("axis", 0), np.ndim(values[0]) + 1)[0]
    moved = np.moveaxis(g, ax, 0)
    return [moved[j] for j in range(len(values))]


def _vstack_pieces(g: t.Any, values: list[t.Any], options: dict[str, t.Any]) -> list[t.Any]:
    return _split(g, values, [np.shape(np.atleast_2d(v))[0] for v in values], 0)


def _hstack_pieces(g: t.Any, values: list[t.Any], options: dict[str, t.Any]) -> list[t.Any]:
    if np.ndim(values[0]) <= 1:
        return _split(g, values, [int(np.size(v)) for v in values], 0)
    return _split(g, values, [np.shape(v)[1] for v in values], 1)


# (and the C function behind the dispatcher, which NumPy's Python calls: np.block's)
_CONCATENATE = (np.concatenate, *[getattr(np.concatenate, "_implementation", np.concatenate)][: hasattr(np.concatenate, "_implementation")])
for _fn in _CONCATENATE:
    primitive(_fn, ANY, ...)(_join_rrule(_concatenate_pieces, ("axis", "out", "dtype", "casting")))
primitive(np.stack, ANY, ...)(_join_rrule(_stack_pieces, ("axis", "out", "dtype", "casting")))
primitive(np.vstack, ANY, ...)(_join_rrule(_vstack_pieces, ("dtype", "casting")))
primitive(np.hstack, ANY, ...)(_join_rrule(_hstack_pieces, ("dtype", "casting")))


def _column_stack_pieces(g: t.Any, values: list[t.Any], options: dict[str, t.Any]) -> list[t.Any]:
    # Vectors become columns; matrices keep their columns.
    return _split(g, values, [1 if np.ndim(v) < 2 else np.shape(v)[1] for v in values], 1)


def _dstack_pieces(g: t.Any, values: list[t.Any], options: dict[str, t.Any]) -> list[t.Any]:
    # Each item as at least 3-D: (n,) -> (1, n, 1), (m, n) -> (m, n, 1).
    return _split(g, values, [np.shape(np.atleast_3d(v))[2] for v in values], 2)


primitive(np.column_stack, ANY, ...)(_join_rrule(_column_stack_pieces, ()))
primitive(np.dstack, ANY, ...)(_join_rrule(_dstack_pieces, ()))
frules.register_linear([np.stack, *_CONCATENATE], most=2)  # (arrays, axis, out)
frules.register_linear([np.vstack, np.hstack, np.column_stack, np.dstack], most=1)

# --------------------------------------------------------------------------------------------
# Constructors

for _fn in (
    np.zeros, np.ones, np.empty, np.zeros_like, np.ones_like, np.empty_like, np.eye,
    np.identity,
):  # fmt: skip
    zero_derivative(_fn, ...)


def _fill_rrule(f: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.full(shape, v)``, ``np.full_like(a, v)``: v gets the sum of the cotangent."""
    fill = args[1] if len(args) > 1 else kwargs["fill_value"]
    y = f.primal(*(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    yf = new_fdata(y)
    operands = (*args, *kwargs.values())

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(yf, dy)
        grad = None if g is None or not needs(fill) else np.sum(g, axis=_leading_axes(g, fill))
        return (NT, *(send(c, grad) if c is fill else zero_for(c) for c in operands))

    return CoDual(y, yf), pullback


def _leading_axes(g: t.Any, fill: CD) -> tuple[int, ...]:
    # A fill value that is an array broadcasts over the leading axes of the result.
    return tuple(range(np.ndim(g) - np.ndim(fill.primal)))


primitive(np.full, ANY, ANY, ...)(_fill_rrule)
primitive(np.full_like, ANY, ANY, ...)(_fill_rrule)


def _float_result(z: t.Any) -> bool:
    """Whether a constructor made real floats (``dtype=int`` makes a result without tangent)."""
    return isinstance(z, (float, np.floating)) or isinstance(z, np.ndarray) and z.dtype.kind == "f"


def _known_float_dtype(types: tuple[T.Type, ...], where: int | None) -> bool:
    """No ``dtype`` passed, None, or a real float dtype known when the rule is built."""
    if where is None or is_none(types[where]):
        return True
    ty = types[where]
    return isinstance(ty, T.Const) and np.dtype(t.cast(t.Any, ty.value)).kind == "f"


def _keyword(kwnames: tuple[str, ...], n: int, name: str) -> int | None:
    return n + kwnames.index(name) if name in kwnames else None


def fill_tangent(fn: t.Callable[..., t.Any]) -> frules.Maker:
    """``np.full(shape, v)``, ``np.full_like(a, v)``: linear in the fill value ``v`` (the
    shape, and ``a``, whose values are not used, have no derivative): ``fn`` of its tangent."""

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> frules.Tangent | frules.Emit | None:
        n = len(types) - len(kwnames)
        fill = 1 if n > 1 else _keyword(kwnames, n, "fill_value")
        if fill is None or not frules.real_operand(types[fill]):
            return None
        dtype = 2 if n > 2 else _keyword(kwnames, n, "dtype")
        if static_types(types) and _known_float_dtype(types, dtype):

            def emit(
                b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kw: frules.Keywords
            ) -> Value:
                d = tangents[fill]
                if d is None:
                    return frules.zero(b, z)
                moved = [d if i == fill else a for i, a in enumerate([*args, *kw.values()])]
                return b.call(fn, *moved[:n], kwargs=dict(zip(kw, moved[n:])), type=z.type)

            return frules.Emit(emit)

        def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
            ops, ds = split_tangents(a, n, len(types))
            d = ds[fill]
            refuse_complex(callable_name(fn), z)
            if d is None or not _float_result(z):
                return frules.like(z, None)
            if fill < n:
                return frules.like(z, fn(*ops[:fill], d, *ops[fill + 1 :], **kwargs))
            return frules.like(z, fn(*ops, **{**kwargs, "fill_value": d}))

        return tangent

    return make


frules.register(np.full, fill_tangent(np.full))
frules.register(np.full_like, fill_tangent(np.full_like))

def arange_roles(n: int, kwnames: t.Sequence[str]) -> dict[str, int] | None:
    """Where ``np.arange``'s start and step are among its ``n`` positional and ``kwnames``
    keyword operands (``{}``: the call gives ``stop`` alone, or ``start`` as the stop, and has
    no derivative); None for a call NumPy would refuse."""
    names = [*("start", "stop", "step")[:n], *kwnames]
    if n > 3 or len(set(names)) != len(names) or set(names) - {"start", "stop", "step", "dtype"}:
        return None
    where = {name: i for i, name in enumerate(names) if name != "dtype"}
    if "start" not in where or "stop" not in where:
        return {}  # (``arange(stop)``, ``arange(start=5)``: numbers 0, 1, ... below a bound)
    return {k: i for k, i in where.items() if k != "stop"}


@primitive(np.arange, ...)  # (any call: start, stop and step may all be keywords)
def arange_rrule(f: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.arange(start, stop, step)``, by position or keyword: y_i = start + i step (stop
    only sets the length)."""
    roles = arange_roles(len(args), tuple(kwargs))
    if roles is None:
        raise UnsupportedArgumentError(
            f"np.arange with the arguments {tuple(kwargs)} by keyword: gibbous's rule takes "
            "start, stop, step and dtype"
        )
    y = f.primal(*(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    yf = new_fdata(y)
    operands = (*args, *kwargs.values())

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(yf, dy)
        rdata = [zero_for(a) for a in operands]
        if g is not None:
            for role, i in roles.items():
                if needs(operands[i]):
                    rdata[i] = send(operands[i], np.sum(g if role == "start" else g * np.arange(len(g))))
        return (NT, *rdata)

    return CoDual(y, yf), pullback



def arange_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``np.arange(start, stop, step)``, by position or keyword: ``dstart + i dstep``
    (``stop`` sets the length alone; ``np.arange(stop)`` has no derivative)."""
    n = len(types) - len(kwnames)
    roles = arange_roles(n, kwnames)
    if not n + len(kwnames) or roles is None:
        return None
    where = [i for i, name in enumerate((*("start", "stop", "step")[:n], *kwnames)) if name != "dtype"]
    if not all(real_type(types[i]) for i in where):
        return None

    def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        ops, ds = split_tangents(a, n, len(types))
        values = [*ops, *kwargs.values()]
        refuse_complex("numpy.arange", *[values[i] for i in where])  # (a list: hvp derives it)
        if not roles or not _float_result(z):
            return frules.like(z, None)
        terms = []
        for role, i in roles.items():
            if ds[i] is not None:
                terms.append(ds[i] if role == "start" else ds[i] * np.arange(len(z)))
        return frules.like(z, sum(terms) if terms else None)

    return tangent


frules.register(np.arange, arange_tangent)


def astype_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``x.astype(dtype)`` of a real x: linear in x to a float dtype, or to a complex one known
    when the rule is built (the tangent cast as x is: ``np.sort_complex``'s ``astype("D")``);
    other dtypes are refused (a cast to ints, whose result the types tell has no tangent,
    never asks)."""
    n = len(types) - len(kwnames)
    where = operand_positions(_ASTYPE_PARAMETERS, n, kwnames)
    if where is None or "dtype" not in where or not real_type(types[0]):
        return None
    dtype = types[where["dtype"]]
    if isinstance(dtype, T.Const):
        if np.dtype(t.cast(t.Any, dtype.value)).kind not in "fc":
            return None
        if static_types(types):
            return frules.Emit(_astype_emit)

    def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        ops, ds = split_tangents(a, n, len(types))
        if not _float_result(z):
            raise ForwardModeError(
                f"forward mode: numpy.ndarray.astype to {z.dtype}: no forward rule (forward "
                "mode takes casts to real float dtypes where the dtype is known when the rule "
                "is built, to complex ones too)"
            )
        if ds[0] is None:
            return frules.like(z, None)
        return frules.like(z, np.ndarray.astype(np.asarray(ds[0]), *ops[1:], **kwargs))

    return tangent


_ASTYPE_PARAMETERS = ("dtype", "order", "casting", "subok", "copy")


def _astype_emit(
    b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
) -> Value:
    d = tangents[0]
    if d is None:
        return frules.zero(b, z)
    return b.call(np.ndarray.astype, d, *args[1:], kwargs=kwargs, type=z.type)


frules.register(np.ndarray.astype, astype_tangent)


# --------------------------------------------------------------------------------------------
# A NumPy scalar's astype (``np.around(n * q).astype(np.intp)`` in NumPy's quantile methods):
# to a real float, its value (derivative 1); to an int or a bool, none.


def _real_cast(x: object, y: object) -> bool:
    return isinstance(x, (float, np.floating)) and isinstance(y, (float, np.floating))


@primitive(np.generic.astype, NUMBER, ...)
def scalar_astype_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    y = f.primal(x.primal, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    if isinstance(x.primal, (complex, np.complexfloating)) and not isinstance(y, np.complexfloating):
        raise UnsupportedArgumentError("numpy.generic.astype of a complex number to a real dtype")
    rest = nothing(len(args) + len(kwargs))
    real = _real_cast(x.primal, y) or isinstance(y, np.complexfloating)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = None if dy is NT or not real else dy
        return (NT, zero_for(x) if g is None else send(x, g), *rest)

    return CoDual(y, new_fdata(y)), pullback


def scalar_astype_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | None:
    if any(varied[1:]) or not frules.real_operand(types[0]):
        return None
    n = len(types) - len(kwnames)

    def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        x, dx = a[0], a[n]
        if dx is None or not _real_cast(x, z):
            return frules.like(z, None)
        return type(z)(dx)

    return tangent


frules.register(np.generic.astype, scalar_astype_tangent)
