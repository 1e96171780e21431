"""More ways of rearranging arrays, calls without derivative that read arrays, and random
numbers.

**Views** (``flip``, ``fliplr``, ``flipud``, ``rot90``, ``atleast_3d``, ``split``,
``array_split``) get the same view of their argument's fdata, as in ``views_copies``; the
pieces of a split are a list of such views.  ``broadcast_to``, a read-only view with zero
strides, gets new fdata instead (see its rule).

``x.sort()`` sorts in place: a stateful rule, which moves the tangents with the values.

**Copies** send the cotangent back by the transposed rearrangement: ``tile`` sums the tiles,
``repeat`` the repeats (``np.add.at``), ``roll`` rolls back (``sort`` and ``partition``
scatter through the permutation they made: ``orders``), ``take``/``take_along_axis`` scatter-add (repeated indices add up),
``tril``/``triu`` keep their triangle.

``diff`` (``n`` times, along an axis) gives back the negative differences of its padded
cotangent; ``x.item(...)`` adds the cotangent of its number into x's fdata at its element,
``x.tolist()`` those its numbers collected in the list's tangent.

**No derivative**: indices and counts (``nonzero``, ``flatnonzero``, ``argwhere``,
``searchsorted``, ``digitize``, ``argpartition``, ``lexsort``, ``count_nonzero``,
``unravel_index``, ``ravel_multi_index``, ``indices``, ``tri``), tests (``isclose``,
``allclose``, ``array_equal``, ``any``, ``all``, ``iscomplexobj``, ``isreal``, ``isscalar``),
and rounding (``round``, ``around``, ``fix``), piecewise constant.

**Random numbers** come from methods of ``np.random.Generator`` and ``np.random.RandomState``
(``rng.normal(...)`` is called through ``Generator.normal``), and from the legacy functions
(``np.random.normal``, bound methods of NumPy's global ``RandomState``, registered as they
are, since a call of a constant callee is looked up as itself).  The forward pass draws
once, like the primal; the pullback never touches the generator, so a forward + reverse
advances it exactly as the primal does.  Draws without distribution parameters (``random``,
``standard_normal``, ``integers``, ...) and discrete ones have no derivative.  ``normal``,
``uniform`` and ``exponential`` are differentiated along the path (the draw as a function of
its parameters for the same state of the generator): ``loc + scale z``, ``low + (high - low)
u`` and ``scale e``.  Other continuous distributions (``gamma``, ``beta``, ...) have no rule;
``choice`` and ``permutation`` have one for an integer population only (of an array they
gather its elements, which would have a derivative).
"""

from __future__ import annotations

import typing as t

import attrs
import numpy as np

from gibbous.ir import types as T
from gibbous.ir.purity import register_pure
from gibbous.library.common import (
    ARRAY,
    CD,
    NT,
    NUMBER,
    Array,
    RuleResult,
    bind,
    cotangent,
    linear_rrule,
    needs,
    new_fdata,
    no_derivative_rrule,
    nothing,
    send,
    shares_memory,
    view_fdata,
    zero_for,
)
from gibbous.library.arrays.views_copies import shape_rule
from gibbous.library.reductions.reductions import normalize_axes
from gibbous.rules.registry import Pullback, primitive, stateful_primitive, zero_derivative
from gibbous.rules import frules
from gibbous.tangents.model import CoDual

Options = dict[str, t.Any]


def _primals(args: tuple[CD, ...], kwargs: dict[str, CD]) -> tuple[tuple[t.Any, ...], Options]:
    return tuple(a.primal for a in args), {k: v.primal for k, v in kwargs.items()}


# --------------------------------------------------------------------------------------------
# Views


def _back_tril(g: t.Any, x: Array, args: tuple[t.Any, ...], kwargs: Options) -> t.Any:
    return np.tril(g, *args, **kwargs)


def _back_triu(g: t.Any, x: Array, args: tuple[t.Any, ...], kwargs: Options) -> t.Any:
    return np.triu(g, *args, **kwargs)


def _back_roll(g: t.Any, x: Array, args: tuple[t.Any, ...], kwargs: Options) -> t.Any:
    options = dict(zip(("shift", "axis"), args)) | kwargs
    shift = np.negative(options["shift"])
    return np.roll(g, shift, options.get("axis"))


VIEWS_AND_COPIES = {
    np.flip: None, np.fliplr: None, np.flipud: None, np.rot90: None, np.atleast_3d: None,
    np.tril: _back_tril, np.triu: _back_triu, np.roll: _back_roll,
}  # fmt: skip

for _fn, _back in VIEWS_AND_COPIES.items():
    primitive(_fn, ARRAY, ...)(shape_rule(_back))
frules.register_linear([np.flip, np.fliplr, np.flipud, np.rot90, np.tril, np.triu, np.roll, np.atleast_3d])


@primitive(np.broadcast_to, ARRAY, ...)
def broadcast_to_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.broadcast_to(x, shape)``: a read-only view repeating x's elements.

    Its fdata is new, and the pullback sums it back into x's fdata.  The same view of x's
    fdata (zero strides) would be what docs/tangents.md describes, but the pullbacks that add
    into fdata (``np.add(d, g, out=d)``) keep only the last of the additions landing on one
    element, so the cotangents of the repeats would be lost.  Nothing can be written through
    the primal view, so a separate fdata misses no write."""
    pa, pk = _primals(args, kwargs)
    y = f.primal(x.primal, *pa, **pk)
    yf = new_fdata(y)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if isinstance(yf, np.ndarray) and needs(x):
            send(x, yf)
        return (NT, NT, *rest)

    return CoDual(y, yf), pullback
frules.register_linear([np.broadcast_to])


def split_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.split``/``np.array_split``: a list of views, whose fdata is the list of the same
    views of x's fdata."""
    pa, pk = _primals(args, kwargs)
    y = f.primal(x.primal, *pa, **pk)
    rdata = nothing(2 + len(args) + len(kwargs))
    dx = x.fdata
    if not isinstance(dx, np.ndarray):
        return CoDual(y, new_fdata(y)), lambda dy: rdata
    pieces = f.primal(dx, *pa, **pk)
    fdata = [
        view_fdata(p, d, of=(x.primal, dx)) if shares_memory(p, x.primal) else new_fdata(p) for p, d in zip(y, pieces)
    ]
    return CoDual(y, fdata), lambda dy: rdata


for _fn in (np.split, np.array_split):
    primitive(_fn, ARRAY, ...)(split_rrule)

# --------------------------------------------------------------------------------------------
# Copies


Back = t.Callable[[t.Any, CD, tuple[CD, ...], dict[str, CD]], t.Any]


def copy_rrule(back: Back) -> t.Callable[..., RuleResult]:
    """A rule for ``y = f(x, ...)`` that copies x's elements: ``back(g, x, args, kwargs)`` is
    x's gradient for the cotangent g of y (x shaped); the other operands have none."""

    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        return linear_rrule(f, x, args, kwargs, lambda g: back(g, x, args, kwargs))

    rrule.__qualname__ = f"copy_rule({back.__name__})"
    return rrule


def _back_tile(g: Array, x: CD, args: tuple[CD, ...], kwargs: dict[str, CD]) -> Array:
    shape = np.shape(x.primal)
    reps = tuple(np.atleast_1d(t.cast(t.Any, bind(("reps",), args, kwargs, {}, "tile")["reps"])))
    n = max(len(shape), len(reps))
    shape_n = (1,) * (n - len(shape)) + shape
    reps_n = (1,) * (n - len(reps)) + reps
    interleaved = tuple(d for pair in zip(reps_n, shape_n) for d in pair)
    summed: Array = np.sum(g.reshape(interleaved), axis=tuple(range(0, 2 * n, 2)))
    return summed.reshape(shape)


def _back_repeat(g: Array, x: CD, args: tuple[CD, ...], kwargs: dict[str, CD]) -> Array:
    options = bind(("repeats", "axis"), args, kwargs, {"axis": None}, "repeat")
    xp = np.asarray(x.primal)
    axis = options["axis"]
    source = xp.reshape(-1) if axis is None else xp
    ax = 0 if axis is None else normalize_axes(axis, xp.ndim)[0]
    n = source.shape[ax]
    owners = np.repeat(np.arange(n), t.cast(t.Any, options["repeats"]))
    grad = np.zeros(source.shape, dtype=g.dtype)
    np.add.at(np.moveaxis(grad, ax, 0), owners, np.moveaxis(g, ax, 0))
    return grad.reshape(xp.shape)


def _take_positions(xp: Array, indices: t.Any, axis: t.Any, mode: t.Any) -> t.Any:
    n = xp.size if axis is None else xp.shape[t.cast(int, axis)]
    if mode == "wrap":
        return np.mod(indices, n)
    if mode == "clip":
        return np.clip(indices, 0, n - 1)
    return indices


def _back_take(g: Array, x: CD, args: tuple[CD, ...], kwargs: dict[str, CD]) -> Array:
    options = bind(("indices", "axis", "out", "mode"), args, kwargs, {"axis": None}, "take")
    if options.get("out") is not None:
        raise NotImplementedError("np.take with out=: no rule")
    xp = np.asarray(x.primal)
    axis = options["axis"]
    positions = _take_positions(xp, options["indices"], axis, options.get("mode", "raise"))
    grad = np.zeros(xp.shape, dtype=g.dtype)
    if axis is None:
        np.add.at(grad.reshape(-1), positions, g)
    else:
        ax = normalize_axes(axis, xp.ndim)[0]
        np.add.at(grad, (slice(None),) * ax + (positions,), g)
    return grad


def _back_take_along_axis(
    g: Array, x: CD, args: tuple[CD, ...], kwargs: dict[str, CD]
) -> Array:
    options = bind(("indices", "axis"), args, kwargs, {"axis": -1}, "take_along_axis")
    xp = np.asarray(x.primal)
    indices = np.asarray(options["indices"])
    axis = options["axis"]
    source = xp.reshape(-1) if axis is None else xp
    ax = 0 if axis is None else normalize_axes(axis, xp.ndim)[0]
    # The indices broadcast against the array on the other axes, as NumPy broadcasts them;
    # the full advanced index of each picked element: its own position on the other axes.
    shape = list(np.broadcast_shapes(*(
        tuple(1 if i == ax else n for i, n in enumerate(a.shape)) for a in (source, indices)
    )))  # fmt: skip
    shape[ax] = indices.shape[ax]
    indices = np.broadcast_to(indices, shape)
    index = tuple(
        indices if i == ax else np.arange(n).reshape((n,) + (1,) * (len(shape) - i - 1))
        for i, n in enumerate(source.shape)
    )
    grad = np.zeros(source.shape, dtype=g.dtype)
    np.add.at(grad, index, g)
    return grad.reshape(xp.shape)


def _back_diff(g: Array, x: CD, args: tuple[CD, ...], kwargs: dict[str, CD]) -> Array:
    options = bind(("n", "axis", "prepend", "append"), args, kwargs, {"n": 1, "axis": -1}, "diff")
    if options.get("prepend") is not None or options.get("append") is not None:
        raise NotImplementedError("np.diff with prepend= or append=: no rule")
    ax = normalize_axes(options["axis"], np.ndim(x.primal))[0]
    first = (slice(None),) * ax + (slice(None, -1),)
    last = (slice(None),) * ax + (slice(1, None),)
    for _ in range(t.cast(int, options["n"])):
        # y_i = x_(i+1) - x_i, so x_j gets g_(j-1) - g_j (zero past either end).
        shape = list(g.shape)
        shape[ax] += 1
        grad = np.zeros(shape, dtype=g.dtype)
        grad[last] += g
        grad[first] -= g
        g = grad
    return g


COPIES = {
    np.tile: _back_tile, np.repeat: _back_repeat, np.ndarray.repeat: _back_repeat,
    np.take_along_axis: _back_take_along_axis, np.diff: _back_diff,
}  # fmt: skip

for _fn, _gradient in COPIES.items():
    primitive(_fn, ARRAY, ...)(copy_rrule(_gradient))
frules.register_linear([np.diff], added={3, 4, "prepend", "append"})  # (a, n, axis, prepend, append)
frules.register_linear([np.tile, np.repeat, np.ndarray.repeat, np.take_along_axis], most=3)

_take_array_rrule = copy_rrule(_back_take)


def take_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.take``/``x.take``: a scatter-add of the cotangent; one element taken (a scalar
    result, which allocates nothing) gets its cotangent added in place."""
    pa, pk = _primals(args, kwargs)
    y = f.primal(x.primal, *pa, **pk)
    dx = x.fdata
    if isinstance(y, np.ndarray) or not isinstance(dx, np.ndarray):
        return _take_array_rrule(f, x, *args, **kwargs)
    options = bind(("indices", "axis", "out", "mode"), args, kwargs, {"axis": None}, "take")
    xp = x.primal
    position = int(_take_positions(xp, options["indices"], options["axis"], options.get("mode")))
    element = np.unravel_index(position % xp.size, xp.shape)
    rdata = nothing(2 + len(args) + len(kwargs))
    return CoDual(y, NT), _element_pullback(dx, element, rdata)


for _fn in (np.take, np.ndarray.take):
    primitive(_fn, ARRAY, ...)(take_rrule)
frules.register_linear([np.take, np.ndarray.take], most=3)  # (a, indices, axis, out, mode)


def _element_pullback(dx: Array, element: t.Any, rdata: tuple[t.Any, ...]) -> Pullback:
    """The pullback of a number read from one element: its cotangent goes into that element of
    the array's fdata (the real part for a real array)."""

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(NT, dy)
        if g is not None:
            dx[element] += g if dx.dtype.kind == "c" else g.real
        return rdata

    return pullback


@primitive(np.ndarray.item, ARRAY, ...)
def item_rrule(f: CD, x: CD, *args: CD) -> RuleResult:
    """``x.item()``, ``x.item(flat_index)``, ``x.item(i, j, ...)``: a Python number, whose
    cotangent is added into x's fdata at that element."""
    xp, dx = x.primal, x.fdata
    pa = tuple(a.primal for a in args)
    y = f.primal(xp, *pa)
    rdata = nothing(2 + len(args))
    if not isinstance(dx, np.ndarray) or not isinstance(y, (float, complex)):
        return CoDual(y, new_fdata(y)), lambda dy: rdata
    element = _element(xp.shape, pa)
    return CoDual(y, NT), _element_pullback(dx, element, rdata)
frules.register_linear([np.ndarray.item])


@primitive(np.ndarray.tolist, ARRAY)
def tolist_rrule(f: CD, x: CD) -> RuleResult:
    """``x.tolist()``: nested lists of Python numbers, whose tangent (nested lists of rdata)
    collects their cotangents; the pullback adds them into x's fdata.  A 0-d array gives a
    number, whose cotangent is the rdata received."""
    xp, dx = x.primal, x.fdata
    y = f.primal(xp)
    yf = new_fdata(y)
    if not isinstance(dx, np.ndarray):
        return CoDual(y, yf), lambda dy: (NT, NT)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if isinstance(y, list):
            _add_nested(dx, yf)
        else:
            g = cotangent(NT, dy)
            if g is not None:
                dx[()] += g if dx.dtype.kind == "c" else g.real
        return NT, NT

    return CoDual(y, yf), pullback


def _add_nested(d: Array, g: list[t.Any]) -> None:
    """``d += g`` for nested lists ``g`` of numbers, item by item: as the primal made them,
    without an array of them."""
    real = d.dtype.kind != "c"
    for i, item in enumerate(g):
        if isinstance(item, list):
            _add_nested(d[i], item)
        else:
            d[i] += item.real if real else item


def _element(shape: tuple[int, ...], index: tuple[t.Any, ...]) -> tuple[int, ...]:
    """The element ``x.item(*index)`` reads, as a tuple of indices (computed in Python: the
    primal allocates nothing)."""
    if len(index) == 1 and isinstance(index[0], tuple):
        index = index[0]
    if len(index) == len(shape):
        return tuple(int(i) for i in index)
    flat = int(index[0]) if index else 0
    size = 1
    for n in shape:
        size *= n
    flat %= size
    position = []
    for n in reversed(shape):
        flat, i = divmod(flat, n)
        position.append(i)
    return tuple(reversed(position))


# --------------------------------------------------------------------------------------------
# x.sort(): in place, so a stateful rule.  The primal allocates nothing, and neither may a
# warm call of the rule, but np.argsort and np.put_along_axis allocate: the permutation comes
# from sorting (value, position) pairs in a buffer of the state, and the cotangent goes back
# by sorting (position, cotangent) pairs by position.


@attrs.frozen
class SortState:
    key: tuple[object, ...]
    saved: Array  # x before the call
    saved_fdata: Array | None  # its fdata (None: x has no fdata)
    positions: Array  # 0, 1, ... along the axis, broadcast to x's shape (read only)
    pairs: Array  # structured: ("v", x's dtype), ("i", intp); sorted: "i" is the permutation
    back: Array | None  # structured: ("i", intp), ("g", the fdata's dtype)


def _sort_state(state: SortState | None, x: Array, dx: Array | None, axis: int) -> SortState:
    key = (x.shape, x.dtype, axis, None if dx is None else dx.dtype)
    if state is not None and state.key == key:
        return state
    n = x.shape[axis]
    along = np.arange(n, dtype=np.intp).reshape((n,) + (1,) * (x.ndim - axis - 1))
    return SortState(
        key,
        np.empty(x.shape, x.dtype),
        None if dx is None else np.empty(x.shape, dx.dtype),
        np.broadcast_to(along, x.shape),
        np.empty(x.shape, [("v", x.dtype), ("i", np.intp)]),
        None if dx is None else np.empty(x.shape, [("i", np.intp), ("g", dx.dtype)]),
    )


@stateful_primitive(np.ndarray.sort, ARRAY, ..., state_type=SortState)
def ndarray_sort_rrule(
    state: SortState | None, f: CD, x: CD, *args: CD, **kwargs: CD
) -> tuple[CD, Pullback, SortState]:
    """``x.sort(axis=-1, kind=...)``: x's values move, and their tangents with them (the
    pullback sends the cotangent of each sorted position back to where its value was)."""
    options = bind(("axis", "kind", "order"), args, kwargs, {"axis": -1}, "sort")
    if options.get("order") is not None:
        raise NotImplementedError("ndarray.sort with order=: no rule")
    xp = x.primal
    dx = x.fdata if isinstance(x.fdata, np.ndarray) else None
    axis = normalize_axes(options["axis"], xp.ndim)[0]
    s = _sort_state(state, xp, dx, axis)
    np.copyto(s.saved, xp)
    np.copyto(s.pairs["v"], xp)
    np.copyto(s.pairs["i"], s.positions)
    s.pairs.sort(axis=axis, order=("v", "i"))  # ties keep their order, as a stable sort
    f.primal(xp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    if dx is not None and s.saved_fdata is not None:
        np.copyto(s.saved_fdata, dx)
        dx.fill(0)
    rdata = nothing(2 + len(args) + len(kwargs))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        np.copyto(xp, s.saved)
        if dx is None or s.saved_fdata is None or s.back is None:
            return rdata
        np.copyto(s.back["i"], s.pairs["i"])
        np.copyto(s.back["g"], dx)
        s.back.sort(axis=axis, order=("i",))  # each cotangent back at its value's position
        np.copyto(dx, s.saved_fdata)
        np.add(dx, s.back["g"], out=dx)
        return rdata

    return CoDual(None, NT), pullback, s


# --------------------------------------------------------------------------------------------
# No derivative.  Registered with ``no_derivative_rrule`` rather than ``zero_derivative``: these
# take float scalars too (``np.round(2.5)``, ``np.searchsorted(a, 0.5)``), which get a zero of
# their own class as rdata.

# np.fix, while NumPy has it (deprecated in NumPy 2.5).
_FIX: tuple[t.Any, ...] = tuple(f for f in [getattr(np, "fix", None)] if f is not None)

for _fn in (
    np.nonzero, np.ndarray.nonzero, np.flatnonzero, np.argwhere, np.searchsorted,
    np.ndarray.searchsorted, np.count_nonzero, np.isclose, np.allclose, np.array_equal,
    np.round, np.around, np.ndarray.round, np.any, np.all, np.ndarray.any,
    np.ndarray.all, np.digitize, np.argpartition, np.iscomplexobj, np.isreal, np.isscalar,
    *_FIX,
):  # fmt: skip
    primitive(_fn, ARRAY, ...)(no_derivative_rrule)
# Of sequences of arrays or scalars, or of shapes and sizes.
for _fn in (np.lexsort, np.indices, np.tri):
    primitive(_fn, ...)(no_derivative_rrule)
for _fn in (np.round, np.around, *_FIX):
    primitive(_fn, NUMBER, ...)(no_derivative_rrule)
# Questions about a value's type, which read nothing else: pure whatever they are given (a
# value whose type the build could not tell, inside NumPy's Python: np.polynomial's).
for _fn in (np.iscomplexobj, np.isrealobj, np.isscalar):
    register_pure(_fn)
zero_derivative(np.unravel_index, ...)
zero_derivative(np.ravel_multi_index, ...)

# --------------------------------------------------------------------------------------------
# Random numbers

GENERATOR = T.Object(np.random.Generator)
RANDOM_STATE = T.Object(np.random.RandomState)

# Draws without a derivative: no distribution parameters, or discrete values.
_GENERATOR_ZERO = """random standard_normal standard_exponential integers poisson binomial
    geometric bytes""".split()
_RANDOM_STATE_ZERO = """rand randn random random_sample standard_normal standard_exponential
    randint poisson binomial geometric bytes seed""".split()

for _name in _GENERATOR_ZERO:
    primitive(getattr(np.random.Generator, _name), GENERATOR, ...)(no_derivative_rrule)
for _name in _RANDOM_STATE_ZERO:
    primitive(getattr(np.random.RandomState, _name), RANDOM_STATE, ...)(no_derivative_rrule)
# Picks from range(n): of an array they would be gathers of its elements, which have one.
for _cls, _pattern in ((np.random.Generator, GENERATOR), (np.random.RandomState, RANDOM_STATE)):
    primitive(_cls.choice, _pattern, T.INT, ...)(no_derivative_rrule)
    primitive(_cls.permutation, _pattern, T.INT, ...)(no_derivative_rrule)


def unit(y: t.Any, a: t.Any, b: t.Any) -> t.Any:
    """``(y - a) / b``, 0 where b is 0: the standard draw behind ``y = a + b u``."""
    if not any(isinstance(v, np.ndarray) for v in (y, a, b)):  # one draw: no arrays needed
        return (y - a) / b if b != 0 else 0.0 * y
    d = np.subtract(y, a)
    out = np.zeros_like(d, dtype=np.result_type(d, b))
    return np.divide(d, b, out=out, where=np.not_equal(b, 0))


def _path_normal(y: t.Any, p: Options) -> dict[str, t.Any]:
    z = unit(y, p["loc"], p["scale"])
    return {"loc": 1.0, "scale": z}


def _path_uniform(y: t.Any, p: Options) -> dict[str, t.Any]:
    u = unit(y, p["low"], np.subtract(p["high"], p["low"]))
    return {"low": 1.0 - u, "high": u}


def _path_exponential(y: t.Any, p: Options) -> dict[str, t.Any]:
    return {"scale": unit(y, 0.0, p["scale"])}


Partials = t.Callable[[t.Any, Options], dict[str, t.Any]]
# The parameters in order (``size`` is not differentiated), their defaults, and the partial
# derivatives ``d y / d parameter`` of the draws ``y`` for the same state of the generator.
Pathwise = tuple[tuple[str, ...], Options, Partials]

_PATHWISE: dict[str, Pathwise] = {
    "normal": (("loc", "scale", "size"), {"loc": 0.0, "scale": 1.0}, _path_normal),
    "uniform": (("low", "high", "size"), {"low": 0.0, "high": 1.0}, _path_uniform),
    "exponential": (("scale", "size"), {"scale": 1.0}, _path_exponential),
}


def pathwise_rrule(name: str, spec: Pathwise, bound: bool) -> t.Callable[..., RuleResult]:
    """The rule of a draw differentiated along the path, called as a method with its
    generator first (``Generator.normal(rng, ...)``), or with ``bound``, as a method bound to
    one (``np.random.normal(...)``, ``random.gauss(...)``)."""
    names, defaults, partials = spec

    def rrule(f: CD, *operands: CD, **kwargs: CD) -> RuleResult:
        receiver, args = ((), operands) if bound else ((NT,), operands[1:])
        pa, pk = _primals(operands, kwargs)
        y = f.primal(*pa, **pk)  # the one draw: the pullback never draws again
        yf = new_fdata(y)
        params = bind(names, args, kwargs, defaults, name)
        named = dict(zip(names, args)) | kwargs

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(yf, dy)
            wanted = {k: c for k, c in named.items() if k != "size" and needs(c)}
            grads = partials(y, params) if g is not None and wanted else {}
            rdata = [
                send(c, np.multiply(g, grads[k])) if k in grads and k in wanted else zero_for(c)
                for k, c in named.items()
            ]
            return (NT, *receiver, *rdata)

        return CoDual(y, yf), pullback

    rrule.__qualname__ = f"pathwise_rrule({name})"
    return rrule


for _name, _spec in _PATHWISE.items():
    primitive(getattr(np.random.Generator, _name), GENERATOR, ...)(
        pathwise_rrule(_name, _spec, False)
    )
    primitive(getattr(np.random.RandomState, _name), RANDOM_STATE, ...)(
        pathwise_rrule(_name, _spec, False)
    )
    primitive(getattr(np.random, _name), ...)(pathwise_rrule(_name, _spec, True))

# The legacy functions are bound methods of NumPy's global RandomState: a call of a constant
# ``np.random.rand`` is looked up as itself, not through ``RandomState.rand``.
for _name in _RANDOM_STATE_ZERO:
    primitive(getattr(np.random, _name), ...)(no_derivative_rrule)
for _name in ("choice", "permutation"):
    primitive(getattr(np.random, _name), T.INT, ...)(no_derivative_rrule)

__all__ = ["GENERATOR", "RANDOM_STATE", "VIEWS_AND_COPIES", "COPIES"]
