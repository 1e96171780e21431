"""Reductions and scans: ``sum``, ``mean``, ``prod``, ``max``/``min`` (``amax``/``amin``),
``var``, ``std``, ``ptp``, ``average``, ``nansum``, ``nanmean``, ``cumsum`` and ``cumprod``, as
NumPy functions and as ndarray methods (``x.sum(axis=0)`` is ``numpy.ndarray.sum(x, axis=0)``
after type inference).

``axis`` (an int, a tuple of ints or None) and ``keepdims`` may be passed by position or by
keyword, ``dtype`` and ``ddof`` too (a float ``ddof`` gets its derivative); ``out=`` by keyword
for ``sum``, ``mean`` and ``cumsum`` (stateful rules: ``reductions_out``); other ``out=``, ``initial=``
and ``where=`` are not supported (the rule raises).  ``prod`` computes the product of the
*other* elements with running products, so zeros give exact gradients (no division), and so
does ``cumprod``.  ``max``/``min``/``ptp`` split the gradient evenly among tied maxima
(minima): a subgradient, symmetric in the ties, and the mean of the one-sided derivatives for
a tie of two (what a central difference measures).  ``nansum``/``nanmean`` give NaNs no
gradient.

A reduction of a whole array to a scalar allocates no array, so neither may its rule (the
audit's policy): ``sum``/``mean`` add the scalar cotangent into the fdata in place, ``max``/
``min``/``ptp`` add it at the one extremum (found by ``argmax`` from both ends, so a tie, which
needs a mask, is detected without one), and ``prod`` is a stateful rule whose buffer takes the
gradient ``g conj(z / x)`` when no element is zero.  ``sum``/``mean``/``max``/``min`` of a whole
float64 array to a float have inline forms (the ``whole_real_array`` variants,

Each callable's forward rule is beside its reverse rule: the sums and means are linear
(``frules.register_linear``), ``prod``'s tangent is the running products transposed, the
extrema's the mean of the tied extrema's tangents.  The scans are in ``scans``; ``var``,
``std``, ``ptp``, ``average``, ``nansum`` and ``nanmean`` in ``moments``; ``out=`` in
``reductions_out``.
"""

from __future__ import annotations

import operator
import typing as t

import numpy as np

from gibbous.library.common import (
    add_into,
    ARRAY,
    Array,
    bind,
    CD,
    conj,
    cotangent,
    needs,
    new_fdata,
    NO_SCRATCH,
    nothing,
    NT,
    NUMBER,
    RuleResult,
    Scratch,
    send,
    zero_for,
)
from gibbous.ir import runtime, types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules.emit import (
    is_none,
    operand_positions,
    refuse_complex,
    split_tangents,
    static_types,
)
from gibbous.rules import frules, inline
from gibbous.rules.registry import primitive, Pullback, stateful_primitive
from gibbous.tangents.model import CoDual


StatefulResult = tuple[CD, Pullback, Scratch]

SUM_PARAMETERS = ("axis", "dtype", "out", "keepdims", "initial", "where")
MEAN_PARAMETERS = ("axis", "dtype", "out", "keepdims", "where")
MAX_PARAMETERS = ("axis", "out", "keepdims", "initial", "where")
CUMSUM_PARAMETERS = ("axis", "dtype", "out")


VAR_PARAMETERS = ("axis", "dtype", "out", "ddof", "keepdims", "where", "mean", "correction")
PTP_PARAMETERS = ("axis", "out", "keepdims")
AVERAGE_PARAMETERS = ("axis", "weights", "returned", "keepdims")
NANSUM_PARAMETERS = SUM_PARAMETERS

#: parameters whose use the reverse rules refuse, and the value each may be passed (besides
#: None): their default
_REFUSED = {"out": None, "where": True, "initial": None, "mean": None, "returned": False}

Where = dict[str, int]  # a parameter's operand index (``frules.operand_positions``)


def option_positions(
    names: tuple[str, ...], types: tuple[T.Type, ...], kwnames: tuple[str, ...],
    returned: bool = False,
) -> Where | None:
    """The operands of a call ``f(x, ...)`` by parameter name, if the rule takes them all
    (``returned``: ``np.average``'s ``returned=`` too, of any value: the rule reads it)."""
    where = operand_positions(names, len(types) - len(kwnames), kwnames)
    if where is None or not frules.real_operand(types[0]):
        return None
    taken = {"returned"} if returned else set()
    refused = (
        (types[where[name]], default)
        for name, default in _REFUSED.items()
        if name in where and name not in taken
    )
    if not all(is_none(ty) or _no_value(ty) or isinstance(ty, T.Const) and is_default_value(ty.value, d) for ty, d in refused):
        return None
    return where


def is_default_value(value: object, default: object) -> bool:
    """``value`` is the parameter's ``default``, or NumPy's ``_NoValue`` (its own default)."""
    return value is default or type(value).__name__ == "_NoValueType"


def _no_value(ty: T.Type) -> bool:
    """NumPy's ``_NoValue``, typed as an object of its class."""
    return isinstance(ty, T.Object) and ty.cls.__name__ == "_NoValueType"


def given_options(
    where: Where, n: int, ops: t.Sequence[t.Any], kwargs: dict[str, t.Any]
) -> dict[str, t.Any]:
    """The values of the parameters a call passed, by name.  (Operand ``i`` of the call is
    ``ops[i]`` for the ``n`` positional ones, then the keywords in their order, as
    ``operand_positions`` numbers them.  No conditional in the comprehension: an hvp derives
    this function, and Python 3.12's inlined comprehension choosing between an operand and a
    keyword typed its reverse program's block arguments ``never``.)"""
    values = [*ops[:n], *kwargs.values()]
    return {name: values[i] for name, i in where.items()}


def tangent_axes(given: dict[str, t.Any], x: Array) -> tuple[tuple[int, ...], t.Any]:
    keep = given.get("keepdims", False)
    keepdims = isinstance(keep, (bool, np.bool_)) and bool(keep)
    return normalize_axes(given.get("axis"), x.ndim), keepdims


#: ``body(z, x, dx, given) -> dz`` of a reduction's tangent function, ``given`` its parameters
Body = t.Callable[[t.Any, Array, Array, dict[str, t.Any]], t.Any]


def array_tangent(what: str, where: Where, n: int, total: int, body: Body) -> frules.Tangent:
    """The tangent function of a call of ``what`` with ``n`` positional operands (``total``
    in all): its array operand's, zeros where it has none, complex values refused; the rest
    is ``body``'s."""

    def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        ops, ds = split_tangents(a, n, total)
        x = np.asarray(ops[0])
        refuse_complex(what, x, z)
        if ds[0] is None:
            return frules.like(z, None)
        return frules.like(z, body(z, x, np.asarray(ds[0]), given_options(where, n, ops, kwargs)))

    return tangent


def as_scalar(z: t.Any, dz: t.Any) -> t.Any:
    """A 0-d tangent of a scalar result as a scalar (``np.prod(2.5)`` is a NumPy float)."""
    if isinstance(dz, np.ndarray) and dz.ndim == 0 and not isinstance(z, np.ndarray):
        return dz[()]
    return dz



def normalize_axes(axis: object, ndim: int) -> tuple[int, ...]:
    """The reduced axes, non-negative and sorted; all of them for None."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in items:
        a = int(t.cast(t.SupportsIndex, a))
        if not -ndim <= a < max(ndim, 1):
            raise ValueError(f"axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(a % ndim if ndim else 0)
    return tuple(sorted(out))


def reduction_options(
    names: tuple[str, ...], args: t.Sequence[CD], kwargs: t.Mapping[str, CD], what: str
) -> tuple[object, bool]:
    bound = bind(names, args, kwargs, {}, what)
    if bound.get("out") is not None:
        raise NotImplementedError(f"{what} with out=: no rule; assign the result instead")
    for name in ("initial", "where", "mean"):
        if name in bound and not is_default(name, bound[name]):
            raise NotImplementedError(f"{what} with {name}=: no rule")
    keepdims = bound.get("keepdims", False)
    return bound.get("axis"), isinstance(keepdims, (bool, np.bool_)) and bool(keepdims)


def is_default(name: str, value: object) -> bool:
    if name == "where" and (value is True or value is np.True_):
        return True
    return type(value).__name__ == "_NoValueType"  # (NumPy's ``nan*`` pass ``where=_NoValue``)


def expand(g: t.Any, axes: tuple[int, ...], keepdims: bool) -> t.Any:
    """The cotangent of a reduction with the reduced axes put back (as size 1)."""
    if keepdims or not axes:
        return g
    return np.expand_dims(g, axes)


def prod_of_others(x: Array, axes: tuple[int, ...]) -> Array:
    """For each element, the product of the other elements of its reduction: exact with zeros,
    from running products from the left and from the right."""
    if not axes or x.size == 0:
        return np.ones_like(x)
    k = len(axes)
    last = tuple(range(x.ndim - k, x.ndim))
    moved = np.moveaxis(x, axes, last)
    shape = moved.shape
    flat = moved.reshape(shape[: x.ndim - k] + (-1,))
    ones = np.ones(flat.shape[:-1] + (1,), x.dtype)
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return np.moveaxis((left * right).reshape(shape), last, axes)


def _sum_grad(x: Array, z: t.Any, g: t.Any, axes: tuple[int, ...], keepdims: bool) -> t.Any:
    return expand(g, axes, keepdims)


def _mean_grad(x: Array, z: t.Any, g: t.Any, axes: tuple[int, ...], keepdims: bool) -> t.Any:
    return expand(g, axes, keepdims) / element_count(x, axes)


def element_count(x: Array, axes: tuple[int, ...]) -> int:
    count = 1
    for a in axes:
        count *= x.shape[a]
    return count


def _prod_grad(x: Array, z: t.Any, g: t.Any, axes: tuple[int, ...], keepdims: bool) -> t.Any:
    return expand(g, axes, keepdims) * conj(prod_of_others(x, axes))


def extreme_grad(x: Array, z: t.Any, g: t.Any, axes: tuple[int, ...], keepdims: bool) -> t.Any:
    chosen = x == expand(z, axes, keepdims)
    count = np.maximum(np.sum(chosen, axis=axes, keepdims=True), 1)
    return expand(g, axes, keepdims) * chosen / count


Grad = t.Callable[[Array, t.Any, t.Any, tuple[int, ...], bool], t.Any]


def call_reduction(
    f: CD, x: CD, args: t.Sequence[CD], kwargs: t.Mapping[str, CD], names: tuple[str, ...]
) -> tuple[t.Any, tuple[int, ...], bool]:
    """Run the reduction; its result, the reduced axes and ``keepdims``."""
    xp = x.primal
    if not args and not kwargs:  # ``np.sum(x)``: over all axes, nothing to check
        return f.primal(xp), tuple(range(xp.ndim)), False
    what = getattr(f.primal, "__qualname__", "reduction")
    axis, keepdims = reduction_options(names, args, kwargs, what)
    z = f.primal(xp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    return z, normalize_axes(axis, xp.ndim), keepdims


def to_scalar(x: CD, z: object) -> bool:
    """Whether a reduction of array ``x`` with a gradient gave a scalar of x's own dtype: the
    primal allocated no array, so the rule must allocate none either (the audit's policy)."""
    xp = x.primal
    return (
        isinstance(z, np.generic)
        and type(xp) is np.ndarray
        and xp.size > 0
        and z.dtype == xp.dtype
        and type(x.fdata) is np.ndarray
    )


def _general_pullback(
    grad: Grad, x: CD, z: t.Any, zf: t.Any, axes: tuple[int, ...], keepdims: bool, n: int
) -> t.Callable[[t.Any], tuple[t.Any, ...]]:
    rdata = nothing(n)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is not None and needs(x):
            add_into(x.fdata, grad(x.primal, z, g, axes, keepdims))
        return rdata

    return pullback


def reduction_rule(grad: Grad, names: tuple[str, ...]) -> t.Callable[..., RuleResult]:
    """The rule of ``sum``, ``mean`` (``grad``: the gradient of one reduction)."""

    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        z, axes, keepdims = call_reduction(f, x, args, kwargs, names)
        n = 2 + len(args) + len(kwargs)
        if to_scalar(x, z):
            share = 1 if grad is _sum_grad else element_count(x.primal, axes)
            return CoDual(z, NT), _spread_pullback(x.fdata, share, n)
        zf = new_fdata(z)
        return CoDual(z, zf), _general_pullback(grad, x, z, zf, axes, keepdims, n)

    rrule.__qualname__ = f"reduction_rule({grad.__name__})"
    return rrule


def _spread_pullback(dx: Array, count: int, n: int) -> t.Callable[[t.Any], tuple[t.Any, ...]]:
    """The pullback of the sum (``count`` 1) or mean of all of an array's elements: the scalar
    cotangent's share added to every element of x's fdata, in place."""
    rdata = nothing(n)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if dz is not NT:
            np.add(dx, dz if count == 1 else dz / count, out=dx)
        return rdata

    return pullback


def only_extreme(x: Array, is_max: bool) -> int | None:
    """The flat index of the one maximum (minimum) of ``x``; None if several elements tie (or
    several NaN, which are the extrema NumPy picks).  Nothing is allocated: the first extremum
    is looked for again after itself, in one pass over the rest of a contiguous array."""
    first = int(x.argmax() if is_max else x.argmin())
    if not x.flags.c_contiguous:  # the last extremum: the first of the array reversed
        rev = x[(slice(None, None, -1),) * x.ndim]
        last = x.size - 1 - int(rev.argmax() if is_max else rev.argmin())
        return first if first == last else None
    rest = x.reshape(-1)[first + 1 :]
    if not rest.size:
        return first
    z = x.flat[first]
    v = rest[int(rest.argmax() if is_max else rest.argmin())]
    return None if v == z or (v != v and z != z) else first


def extreme_rule(names: tuple[str, ...], is_max: bool) -> t.Callable[..., RuleResult]:
    """The rule of ``max`` (``is_max``) or ``min``: the gradient goes to the extremum, split
    evenly among ties."""

    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        z, axes, keepdims = call_reduction(f, x, args, kwargs, names)
        n = 2 + len(args) + len(kwargs)
        if to_scalar(x, z) and x.primal.dtype.kind == "f":
            k = only_extreme(x.primal, is_max)
            if k is not None:  # a single extremum takes the whole cotangent: no array needed
                return CoDual(z, NT), _pick_pullback(x.fdata, k, n)
        zf = new_fdata(z)
        return CoDual(z, zf), _general_pullback(extreme_grad, x, z, zf, axes, keepdims, n)

    rrule.__qualname__ = f"extreme_rule({'max' if is_max else 'min'})"
    return rrule


def _pick_pullback(dx: Array, k: int, n: int) -> t.Callable[[t.Any], tuple[t.Any, ...]]:
    rdata = nothing(n)
    flat = dx.flat

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if dz is not NT:
            flat[k] += dz
        return rdata

    return pullback


def prod_rrule(state: Scratch | None, f: CD, x: CD, *args: CD, **kwargs: CD) -> StatefulResult:
    """``np.prod`` (stateful).  For a scalar result (whose primal allocates nothing) the
    gradient goes through a buffer of the state: ``g conj(z / x)`` when no element is zero;
    with one zero, only that element gets ``g conj(product of the others)``, and with more,
    none.  Along axes, the exact running products of ``prod_of_others``."""
    z, axes, keepdims = call_reduction(f, x, args, kwargs, SUM_PARAMETERS)
    n = 2 + len(args) + len(kwargs)
    if to_scalar(x, z) and np.isfinite(z):
        xp, dx = x.primal, x.fdata
        state = Scratch.fit(state, (xp.shape, xp.dtype))
        (buf,) = state.arrays
        pullback = _prod_pullback(xp, dx, z, buf, n) if z != 0 else _prod_zero(xp, dx, buf, n)
        return CoDual(z, NT), pullback, state
    zf = new_fdata(z)
    general = _general_pullback(_prod_grad, x, z, zf, axes, keepdims, n)
    return CoDual(z, zf), general, NO_SCRATCH if state is None else state


def _prod_pullback(xp: Array, dx: Array, z: t.Any, buf: Array, n: int) -> Pullback:
    rdata = nothing(n)
    complex_ = xp.dtype.kind == "c"

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if dz is not NT:  # dz * conj(z / x)
            if complex_:
                np.conjugate(xp, out=buf)
                np.divide(dz * np.conj(z), buf, out=buf)
            else:
                np.divide(dz * z, xp, out=buf)
            np.add(dx, buf, out=dx)
        return rdata

    return pullback


def _prod_zero(xp: Array, dx: Array, buf: Array, n: int) -> Pullback:
    rdata = nothing(n)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if dz is NT:
            return rdata
        np.absolute(xp, out=buf)
        k = int(np.argmin(buf))  # the first zero
        buf.flat[k] = 1
        if np.min(buf) == 0:  # another zero: every product of the others is zero
            return rdata
        np.copyto(buf, xp)
        buf.flat[k] = 1
        dx.flat[k] += dz * np.conj(np.prod(buf))
        return rdata

    return pullback


_fn: t.Any
_WHOLE = T.Array("float64", None)  # a whole float64 array reduced to a float: written out
for _fn in (np.sum, np.ndarray.sum):
    _rule = reduction_rule(_sum_grad, SUM_PARAMETERS)
    primitive(_fn, ARRAY, ...)(_rule)
    primitive(_fn, _WHOLE, variant="whole_real_array", inline=inline.SUM)(_rule)
frules.register_linear([np.sum, np.ndarray.sum], most=3, added={"initial"})  # (a, axis, dtype, out)
for _fn in (np.mean, np.ndarray.mean):
    _rule = reduction_rule(_mean_grad, MEAN_PARAMETERS)
    primitive(_fn, ARRAY, ...)(_rule)
    primitive(_fn, _WHOLE, variant="whole_real_array", inline=inline.MEAN)(_rule)
frules.register_linear([np.mean, np.ndarray.mean], most=3)
for _fn in (np.prod, np.ndarray.prod):
    stateful_primitive(_fn, ARRAY, ..., state_type=Scratch)(prod_rrule)


def _extreme_adjoint(is_max: bool) -> t.Callable[[t.Any, Array, t.Any, t.Any], None]:
    """The reverse of ``z = np.max(x)`` (``np.min``) of a whole float64 array, as the rule
    computes it: the cotangent to the one extremum, or split evenly among tied ones."""

    def adjoint(dx: t.Any, x: Array, z: t.Any, dz: t.Any) -> None:
        if type(dx) is not np.ndarray:  # (the form is written for active calls only)
            return
        k = only_extreme(x, is_max)
        if k is not None:
            dx.flat[k] += dz
        else:
            add_into(dx, extreme_grad(x, z, dz, tuple(range(x.ndim)), False))

    adjoint.__qualname__ = f"extreme_adjoint({'max' if is_max else 'min'})"
    runtime.register_object(adjoint, adjoint.__qualname__)  # a path for the IR's text
    return adjoint


def extreme_form(is_max: bool) -> inline.InlineRule:
    """``np.max(x)`` / ``np.min(x)`` of a whole float64 array to a float, written out: the
    reverse calls the rule's own pick (``only_extreme``) on the saved array and result."""
    helper = _extreme_adjoint(is_max)

    def written(b: Builder, saved: t.Sequence[Value], dy: Value) -> t.Sequence[Value | None]:
        b.call(helper, *saved, dy, type=T.NONE)
        return (None,)

    saves = (("fdata", 0), ("primal", 0), ("result", -1))
    primal = (_MAX_REDUCE if is_max else _MIN_REDUCE, (None,))  # (np.max's own call)
    return inline.InlineRule("max" if is_max else "min", saves, written, primal=primal)


_MAX_REDUCE, _MIN_REDUCE = np.maximum.reduce, np.minimum.reduce
runtime.register_object(_MAX_REDUCE, "maximum_reduce")  # paths for the IR's text
runtime.register_object(_MIN_REDUCE, "minimum_reduce")


def extreme_tangent(fn: t.Callable[..., t.Any]) -> frules.Maker:
    """The forward rule of ``max`` / ``min`` (``fn``) with an ``axis`` and ``keepdims`` at
    most: the transpose of ``extreme_grad``, the tangents of the extrema, averaged among
    ties."""

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> frules.Tangent | frules.Emit | None:
        n = len(types) - len(kwnames)
        if n > 2 or not set(kwnames) <= {"axis", "keepdims"} or any(varied[1:]):
            return None
        if not isinstance(types[0], (T.Array, T.Any)):  # (Any: checked to be real)
            return None
        if static_types(types) and all(isinstance(ty, T.Const) for ty in types[1:]):
            return frules.Emit(extreme_emit(fn, n))  # (written out: reverse mode reads it)

        def tangent(z: t.Any, x: Array, *a: t.Any, **kwargs: t.Any) -> t.Any:
            dx = a[n - 1]
            if dx is None:
                return frules.like(z, None)
            axis = a[0] if n == 2 else kwargs.get("axis")
            # (typed Any: NumPy 2.5's stubs overload np.sum on the literal of keepdims)
            keepdims: t.Any = bool(kwargs.get("keepdims", False))
            chosen = x == fn(x, axis=axis, keepdims=True)
            count = np.sum(chosen, axis=axis, keepdims=keepdims)
            return frules.like(z, np.sum(dx * chosen, axis=axis, keepdims=keepdims) / count)

        return frules.checked(tangent, types)

    return make


def extreme_emit(fn: t.Callable[..., t.Any], n: int) -> t.Callable[..., Value]:
    """``extreme_tangent``'s tangent written out as IR calls, for an axis and keepdims known
    when the rule is built (so a Hessian-vector product can differentiate it again)."""

    def emit(
        b: Builder, z: Value, args: list[Value], tangents: list[Value | None], kw: dict[str, Value]
    ) -> Value:
        dx = tangents[0]
        if dx is None:
            return frules.zero(b, z)
        x = args[0]
        axis = args[1] if n == 2 else kw.get("axis", Constant(None))
        keep = kw.get("keepdims", Constant(False))
        top = b.call(fn, x, kwargs={"axis": axis, "keepdims": Constant(True)}, type=x.type)
        ndim = x.type.ndim if isinstance(x.type, T.Array) else None
        chosen = b.call(operator.eq, x, top, type=T.Array("bool", ndim))
        count = b.call(np.sum, chosen, kwargs={"axis": axis, "keepdims": keep}, type=T.ANY)
        picked = b.call(operator.mul, dx, chosen, type=x.type)
        total = b.call(np.sum, picked, kwargs={"axis": axis, "keepdims": keep}, type=z.type)
        return b.call(operator.truediv, total, count, type=z.type)

    return emit


for _fns, _is_max in (((np.max, np.amax, np.ndarray.max), True),
                      ((np.min, np.amin, np.ndarray.min), False)):  # fmt: skip
    _rule = extreme_rule(MAX_PARAMETERS, _is_max)
    _form = extreme_form(_is_max)
    for _fn in _fns:
        primitive(_fn, ARRAY, ...)(_rule)
        primitive(_fn, _WHOLE, variant="whole_real_array", inline=_form)(_rule)
        frules.register(_fn, extreme_tangent(np.max if _is_max else np.min))


def scalar_reduction_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.sum(2.5)`` and the like: a reduction of a scalar is the scalar (as a NumPy one)."""
    z = f.primal(x.primal, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    rest = nothing(len(args) + len(kwargs))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        return (NT, zero_for(x) if dz is NT else send(x, dz), *rest)

    return CoDual(z, new_fdata(z)), pullback


for _fn in (np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin):
    primitive(_fn, NUMBER, ...)(scalar_reduction_rrule)


def operand_index(
    names: tuple[str, ...], args: t.Sequence[CD], kwargs: t.Mapping[str, CD], name: str
) -> int | None:
    """The IR operand index of parameter ``name`` of a call ``f(x, *args, **kwargs)`` (the
    callee is operand 0, x operand 1), by position or keyword; None if not passed."""
    i = names.index(name)
    if i < len(args):
        return 2 + i
    if name in kwargs:
        return 2 + len(args) + list(kwargs).index(name)
    return None



# --------------------------------------------------------------------------------------------
# prod, cumprod: the products of the other factors, exact with zeros


def prod_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``np.prod``: the sum of ``dx`` times the product of the other elements of its
    reduction (``prod_of_others``, the reverse rule's)."""
    where = option_positions(SUM_PARAMETERS, types, kwnames)
    if where is None:
        return None
    n, total = len(types) - len(kwnames), len(types)
    if _prod_written(types, where):
        return frules.Emit(_prod_emit(where))

    def body(z: t.Any, x: Array, dx: Array, given: dict[str, t.Any]) -> t.Any:
        axes, keepdims = tangent_axes(given, x)
        terms = dx * prod_of_others(x, axes)
        return as_scalar(z, np.sum(terms, axis=axes, keepdims=keepdims, dtype=given.get("dtype")))

    return array_tangent("numpy.prod", where, n, total, body)


def _prod_written(types: tuple[T.Type, ...], where: Where) -> bool:
    """Whether ``np.prod``'s tangent can be written out: over one axis or all of them, known
    when the rule is built, of an array whose dimensions are known."""
    x = types[0]
    if not (isinstance(x, T.Array) and x.ndim and static_types(types)):
        return False
    if "dtype" in where and not is_none(types[where["dtype"]]):
        return False
    options = [types[where[k]] for k in ("axis", "keepdims") if k in where]
    if not all(isinstance(ty, T.Const) or is_none(ty) for ty in options):
        return False
    axis = types[where["axis"]] if "axis" in where else T.NONE
    return is_none(axis) or isinstance(axis, T.Const) and isinstance(axis.value, int)


def _constant(v: Value) -> object:
    """The value of an operand whose type is a constant (or None): a constant, or an argument
    of a program typed by one."""
    value = v.value if isinstance(v, Constant) else getattr(v.type, "value", None)
    return None if type(value).__name__ == "_NoValueType" else value  # (NumPy's default)


_LEADING = (Ellipsis, slice(None, 1))  # x[..., :1]
_BUT_LAST = (Ellipsis, slice(None, -1))
_BUT_FIRST = (Ellipsis, slice(1, None))


def _prod_emit(where: Where) -> t.Callable[..., Value]:
    """``prod_of_others`` written out, along the last axis of ``x`` raveled (``axis=None``)
    or with its axis moved last: the running products from the left and from the right."""

    def emit(
        b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
    ) -> Value:
        x, dx = args[0], tangents[0]
        if dx is None:
            return frules.zero(b, z)
        operands = [*args, *kwargs.values()]
        axis = _constant(operands[where["axis"]]) if "axis" in where else None
        keep = "keepdims" in where and bool(_constant(operands[where["keepdims"]]))
        array = t.cast(T.Array, x.type)
        ndim = array.ndim
        assert ndim is not None
        row = T.Array(array.dtype, 1) if axis is None else array
        if axis is None:
            m, dm = (b.call(np.ravel, v, type=row) for v in (x, dx))
        else:
            m, dm = (b.call(np.moveaxis, v, axis, -1, type=row) for v in (x, dx))
        ones = b.call(np.ones_like, b.call(operator.getitem, m, _LEADING, type=row), type=row)
        left = _running(b, ones, b.call(operator.getitem, m, _BUT_LAST, type=row), row)
        rest = b.call(np.flip, b.call(operator.getitem, m, _BUT_FIRST, type=row), -1, type=row)
        right = b.call(np.flip, _running(b, ones, rest, row), -1, type=row)
        others = b.call(operator.mul, left, right, type=row)
        terms = b.call(operator.mul, dm, others, type=row)
        scalar = T.Float(row.dtype) if row.dtype else T.FLOAT
        reduced = scalar if row.ndim == 1 else T.Array(row.dtype, ndim - 1)
        total = b.call(np.sum, terms, kwargs={"axis": Constant(-1)}, type=reduced)
        if keep:
            kept = tuple(range(ndim)) if axis is None else axis
            total = b.call(np.expand_dims, total, kept, type=z.type)
        return frules.fit(b, total, z)

    return emit


def _running(b: Builder, ones: Value, rest: Value, row: T.Type) -> Value:
    """The products of ``ones`` then ``rest`` along the last axis, each before its place."""
    pair = b.call(runtime.make_tuple, ones, rest, type=T.Tuple((row, row)))
    joined = b.call(np.concatenate, pair, kwargs={"axis": Constant(-1)}, type=row)
    return b.call(np.cumprod, joined, kwargs={"axis": Constant(-1)}, type=row)



for _fn in (np.prod, np.ndarray.prod):
    frules.register(_fn, prod_tangent)
