"""The frontend's runtime helpers (``gibbous.ir.runtime``) that carry values: closure
cells, nested functions, ``typing.cast`` (type inference's narrowing) and ``check_bound``.

**Cells.**  CPython cells have no tangent of their own in the tangent model: a closure's tangent
is a ``MutableTangent`` with one field per free variable, holding the tangent of the cell's
contents.  The fdata of a cell is therefore a ``CellTangent``: a reference to the entry of a
``fields`` dict that holds the contents' tangent.

* ``closure_cell(fn, i)`` refers into ``fn``'s own tangent (``fields[fn.__code__.co_freevars[i]]``),
  so gradients of what a closure captured land in the closure's tangent (the ``df`` of the
  design), unless ``fn`` was made by ``make_function`` in the differentiated code, in which
  case the cells it was made from are used (see below);
* ``make_cell(v)`` makes a fresh one, holding v's tangent;
* ``cell_get`` reads the contents' fdata and adds the cotangent's rdata into the entry;
  ``cell_set`` replaces the entry (and puts the old value and tangent back in its pullback).

``make_function(code, owner, defaults, kwdefaults, closure)`` gives the new function a
``MutableTangent`` whose fields are the cells' tangents at that moment (the same objects for
arrays, lists and objects) and remembers the ``CellTangent`` objects it was made from, so that
``closure_cell`` on it reaches the very cells, even when two closures share one.  Defaults
that carry a tangent (``def g(a, b=x)``) become the fields ``__defaults__`` (the tuple's
tangent) and ``__kwdefaults__`` (the dict's tangent, the very object the dict operand has): a
call that uses a default takes its tangent from there and adds its gradient back there
(``BoundRule``), and ``make_function``'s pullback returns the defaults tuple's rdata.
"""

from __future__ import annotations

import functools
import typing as t
import weakref

import attrs
import numpy as np

from gibbous.ir import runtime
from gibbous.rules import emit, frules, inplace_forward
from gibbous.library.common import (
    ANY,
    CD,
    NT,
    RuleResult,
    cotangent,
    new_fdata,
    no_pullback,
    nothing,
    unbroadcast,
    zero_for,
)
from gibbous.library.items import (
    Throwaway,
    full_tangent,
    rdata_tangent,
    send_to_value,
    throwaway_state,
)
from gibbous.rules.registry import (
    DefaultContext,
    Pullback,
    RRule,
    build_primitive_rrule,
    primitive,
    stateful_primitive,
    zero_derivative,
)
from gibbous.tangents.model import (
    CoDual,
    MutableTangent,
    default_fields,
    fdata_of,
    increment,
    rdata_of,
    zero_fdata,
    zero_rdata,
)
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules.emit import (
    Emit,
    ForwardModeError,
    Keywords,
    TangentCell,
    Tangents,
    Values,
    item_tangent,
    item_zeros,
    like,
    real_operands,
)
import typing
from gibbous.ir.core import Value
from gibbous.rules.frules import Emit, Keywords, Tangent, Tangents, Values, register

_MISSING = object()


@attrs.define(eq=False)
class CellTangent:
    """The fdata of a cell: ``fields[name]`` is the tangent of the cell's contents (absent
    while the cell is empty)."""

    fields: dict[str, t.Any]
    name: str

    def get(self) -> t.Any:
        return self.fields.get(self.name, NT)


# The cells a function made by ``make_function`` closes over, by the function's tangent.
_CLOSURE_CELLS: weakref.WeakKeyDictionary[MutableTangent, tuple[t.Any, ...]] = (
    weakref.WeakKeyDictionary()
)


@primitive(runtime.make_cell, ...)
def make_cell_rrule(f: CD, *value: CD) -> RuleResult:
    cell = f.primal(*(v.primal for v in value))
    fields: dict[str, t.Any] = {}
    if value:
        fields["cell_contents"] = full_tangent(value[0].primal, value[0].fdata)
    ct = CellTangent(fields, "cell_contents")

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        return (NT, *(rdata_of(ct.get()) for _ in value))

    return CoDual(cell, ct), pullback


@stateful_primitive(runtime.closure_cell, ANY, ANY, state_type=Throwaway)
def closure_cell_rrule(
    state: Throwaway | None, f: CD, fn: CD, index: CD
) -> tuple[CD, Pullback, Throwaway]:
    """Stateful only for a function without a tangent (a constant), whose captured values are
    constants too: their throwaway fdata is kept in the state."""
    state = throwaway_state(state)
    cell = f.primal(fn.primal, index.primal)
    i, fd = index.primal, fn.fdata
    if isinstance(fd, MutableTangent):
        made = _CLOSURE_CELLS.get(fd)
        name = fn.primal.__code__.co_freevars[i]
        ct = made[i] if made is not None else CellTangent(fd.fields, name)
    else:
        ct = CellTangent({}, "cell_contents")
        if _has_contents(cell):
            contents = cell.cell_contents
            ct.fields["cell_contents"] = full_tangent(contents, state.fdata("value", contents))
    return CoDual(cell, ct), lambda dy: (NT, NT, NT), state


@stateful_primitive(runtime.cell_get, ANY, ..., state_type=Throwaway)
def cell_get_rrule(
    state: Throwaway | None, f: CD, cell: CD, *args: CD
) -> tuple[CD, Pullback, Throwaway]:
    """Stateful only for an inactive cell (no ``CellTangent``): what it holds is a constant,
    whose throwaway fdata is kept in the state."""
    state = throwaway_state(state)
    y = f.primal(cell.primal, *(a.primal for a in args))
    ct = cell.fdata
    rest = nothing(len(args))
    if not isinstance(ct, CellTangent):
        return CoDual(y, state.fdata("value", y)), lambda dy: (NT, NT, *rest), state

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if dy is not NT:
            ct.fields[ct.name] = increment(ct.fields[ct.name], rdata_tangent(y, dy))
        return (NT, NT, *rest)

    return CoDual(y, fdata_of(ct.get())), pullback, state


@primitive(runtime.cell_set, ANY, ANY)
def cell_set_rrule(f: CD, cell: CD, v: CD) -> RuleResult:
    c, ct = cell.primal, cell.fdata
    if not isinstance(ct, CellTangent):  # an inactive cell: a throwaway tangent
        ct = CellTangent({}, "cell_contents")
    try:
        old = c.cell_contents
    except ValueError:
        old = _MISSING
    old_t = ct.fields.get(ct.name, _MISSING)
    f.primal(c, v.primal)
    ct.fields[ct.name] = full_tangent(v.primal, v.fdata)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        r = rdata_of(ct.fields[ct.name])
        if old is _MISSING:
            del c.cell_contents
        else:
            c.cell_contents = old
        if old_t is _MISSING:
            del ct.fields[ct.name]
        else:
            ct.fields[ct.name] = old_t
        return NT, NT, r

    return CoDual(None, NT), pullback


@primitive(runtime.cell_delete, ANY, ...)
def cell_delete_rrule(f: CD, cell: CD, *args: CD) -> RuleResult:
    c, ct = cell.primal, cell.fdata
    old = c.cell_contents if _has_contents(c) else _MISSING
    f.primal(c, *(a.primal for a in args))
    old_t = ct.fields.pop(ct.name, _MISSING) if isinstance(ct, CellTangent) else _MISSING

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if old is not _MISSING:
            c.cell_contents = old
        if old_t is not _MISSING:
            ct.fields[ct.name] = old_t
        return (NT, NT, *nothing(len(args)))

    return CoDual(None, NT), pullback


def _has_contents(cell: t.Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


@stateful_primitive(runtime.make_function, ..., state_type=Throwaway)
def make_function_rrule(
    state: Throwaway | None, f: CD, *args: CD, **kwargs: CD
) -> tuple[CD, Pullback, Throwaway]:
    """Stateful only for a closure over inactive cells: its throwaway tangent's arrays are
    kept in the state."""
    state = throwaway_state(state)
    return (*_function_made(state, f, *args, **kwargs), state)


@primitive(runtime.make_genexpr, ANY, ANY, ANY)
def make_genexpr_rrule(f: CD, code: CD, owner: CD, closure: CD) -> RuleResult:
    """``make_genexpr`` as ``make_function`` (whose rule ties the new function's tangent to
    the cells it closes over), wrapped."""
    none = CoDual(None, NT)
    make = CoDual(runtime.make_function, NT)
    fn, _ = _make_function_rule()(make, code, owner, none, none, closure)
    made = runtime.GenexprFunction(fn.primal)
    fields = {"fn": fn.fdata if fn.fdata is not NT else zero_fdata(fn.primal)}
    return CoDual(made, MutableTangent(fields)), no_pullback(4)


@functools.cache
def _make_function_rule() -> RRule:
    return build_primitive_rrule(DefaultContext, runtime.make_function, [T.ANY] * 5)


_NAMES = ("code", "owner", "defaults", "kwdefaults", "closure", "annotations")


def _function_made(state: Throwaway, f: CD, *args: CD, **kwargs: CD) -> RuleResult:
    made, pullback = _function_cells(state, f, *args, **kwargs)
    bound = dict(zip(_NAMES, args)) | kwargs
    fields = _default_fields(made.primal, bound)
    if not fields:
        return made, pullback
    fdata = made.fdata if isinstance(made.fdata, MutableTangent) else MutableTangent({})
    fdata.fields.update(fields)
    positions = list(_NAMES[: len(args)]) + list(kwargs)
    at = positions.index("defaults") + 1 if "__defaults__" in fields else None

    def with_defaults(dy: t.Any) -> tuple[t.Any, ...]:
        r = list(pullback(dy))
        if at is not None:
            r[at] = rdata_of(fdata.fields["__defaults__"])
        return tuple(r)

    return CoDual(made.primal, fdata), with_defaults


def _default_fields(fn: t.Any, bound: dict[str, CD]) -> dict[str, t.Any]:
    """The tangents of ``fn``'s differentiable defaults, sharing the operands' fdata."""
    fields: dict[str, t.Any] = {}
    for name in default_fields(fn):
        d = bound["defaults" if name == "__defaults__" else "kwdefaults"]
        if name == "__kwdefaults__" and isinstance(d.fdata, dict):
            fields[name] = d.fdata  # a dict's fdata is its whole tangent: the same object
        else:
            fields[name] = full_tangent(d.primal, d.fdata)
    return fields


def _function_cells(state: Throwaway, f: CD, *args: CD, **kwargs: CD) -> RuleResult:
    operands = (*args, *kwargs.values())
    bound = dict(zip(_NAMES, args)) | kwargs
    fn = f.primal(*(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    closure = bound.get("closure")
    if not fn.__closure__ or closure is None:
        return CoDual(fn, zero_fdata(fn)), lambda dy: (NT, *nothing(len(operands)))
    if closure.fdata is NT:  # inactive cells: a throwaway tangent, of the model's kind
        contents = zip(fn.__code__.co_freevars, fn.__closure__)
        throwaway = MutableTangent(
            {
                name: full_tangent(c.cell_contents, state.fdata(name, c.cell_contents))
                for name, c in contents
                if _has_contents(c)
            }
        )
        return CoDual(fn, throwaway), lambda dy: (NT, *nothing(len(operands)))
    # An inactive cell among active ones gets a throwaway tangent.
    cells = tuple(
        c if isinstance(c, CellTangent) else CellTangent({}, "cell_contents")
        for c in closure.fdata
    )
    fields = {
        name: c.get()
        for name, c in zip(fn.__code__.co_freevars, cells)
        if c.name in c.fields
    }
    fd = MutableTangent(fields)
    _CLOSURE_CELLS[fd] = cells
    return CoDual(fn, fd), lambda dy: (NT, *nothing(len(operands)))


# --------------------------------------------------------------------------------------------
# Identities and helpers without derivative


@primitive(t.cast, ANY, ANY)
def cast_rrule(f: CD, ty: CD, value: CD) -> RuleResult:
    """``typing.cast(T, v)`` is ``v``: type inference uses it to narrow a value's type."""
    return value, lambda dy: (NT, NT, dy)


@primitive(runtime.check_bound, ANY, ANY)
def check_bound_rrule(f: CD, value: CD, name: CD) -> RuleResult:
    f.primal(value.primal, name.primal)
    return value, lambda dy: (NT, dy, NT)
frules.register_linear([runtime.check_bound])  # (a local read after ``try``: the value itself)


@primitive(runtime.bound_like, ANY, ANY)
def bound_like_rrule(f: CD, value: CD, d: CD) -> RuleResult:
    """``d`` (what the unbound ``value`` leaves out: nothing)."""
    zv, zd = zero_rdata(value.primal), zero_rdata(d.primal)
    if value.primal is runtime.UNBOUND:
        return value, lambda dy: (NT, zv, zd)
    return d, lambda dy: (NT, zv, dy)


@primitive(emit.filled, ANY, ANY)
def filled_rrule(f: CD, z: CD, dz: CD) -> RuleResult:
    """``dz`` itself, or zeros without a derivative where it is None."""
    zz = zero_rdata(z.primal)
    if dz.primal is None:
        y = f.primal(z.primal, None)
        return CoDual(y, zero_fdata(y)), lambda dy: (NT, zz, NT)
    return dz, lambda dy: (NT, zz, dy)


@primitive(emit.operand_tangent, ANY, ANY)
def operand_tangent_rrule(f: CD, a: CD, da: CD) -> RuleResult:
    """``da`` itself, or zeros without a derivative where ``a`` is a bool."""
    za, zd = zero_rdata(a.primal), zero_rdata(da.primal)
    if emit.truth_value(a.primal):
        y = f.primal(a.primal, da.primal)
        return CoDual(y, zero_fdata(y)), lambda dy: (NT, za, zd)
    return da, lambda dy: (NT, za, dy)


for _fn in (
    runtime.build_string,
    runtime.exception_instance,
    runtime.exception_with_cause,
    runtime.name_error,
):
    zero_derivative(_fn, ...)


@primitive(runtime.dict_merge, ANY, ANY)
def dict_merge_rrule(f: CD, d: CD, other: CD) -> RuleResult:
    """``f(**a, **b)``: the keys of ``other`` are added to ``d`` (a repeated key raises)."""
    mapping, tangent = d.primal, d.fdata
    source = other.fdata if isinstance(other.fdata, dict) else {}
    keys = list(t.cast(t.Mapping[t.Any, t.Any], other.primal).keys())
    f.primal(mapping, other.primal)
    for k in keys:
        tangent[k] = full_tangent(mapping[k], fdata_of(source.get(k, NT)))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        for k in reversed(keys):
            r = rdata_of(tangent.pop(k))
            del mapping[k]
            if k in source and r is not NT:
                source[k] = increment(source[k], r)
        return NT, NT, NT

    return CoDual(None, NT), pullback


# The zeros a forward program makes for a value without a tangent (``like(z, None)``, an
# item's ``item_zeros``) are constants, whatever ``z``: what a Hessian-vector product, which
# differentiates a forward program, must know of them.
zero_derivative(like, ANY, "none")
zero_derivative(item_zeros, ANY)
zero_derivative(real_operands, ...)  # (checks: each raises or returns None)
zero_derivative(emit.number_operands, ...)
zero_derivative(emit.no_float_items, ANY, ANY)
zero_derivative(emit.without_derivative, ANY)  # (a test: checked.run's, hvp's)
zero_derivative(frules.not_an_array, ...)


def fresh_rrule(f: CD, z: CD, dz: CD, *pairs: CD) -> RuleResult:
    """``fresh(z, dz, *pairs)`` (a tangent aliased as its array is, checked at run time) in
    a Hessian-vector product: ``dz`` itself, or a copy of it broadcast to ``z``'s shape, whose
    cotangent goes back to ``dz`` summed over the broadcast axes.  ``z`` and the operands'
    pairs only decide which: no cotangent."""
    y = inplace_forward.fresh(z.primal, dz.primal, *(p.primal for p in pairs))
    rest = nothing(len(pairs))
    if y is dz.primal and type(y) is np.ndarray:  # (the same array: its fdata collects)
        return dz, lambda dy: (NT, NT, NT, *rest)
    yf = new_fdata(y)
    given = dz.primal
    numeric = isinstance(given, (np.ndarray, np.generic, float, int))
    shape: tuple[int, ...] | None = getattr(given, "shape", ()) if numeric else None

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(yf, dy)
        if g is not None and shape is not None and getattr(g, "shape", ()) != shape:  # (summed)
            g = np.reshape(unbroadcast(g, shape), shape)
            g = g if isinstance(given, np.ndarray) else g[()]
        return (NT, zero_for(z), send_to_value(dz, g), *rest)

    return CoDual(y, yf), pullback


primitive(inplace_forward.fresh, ANY, ANY, ...)(fresh_rrule)
zero_derivative(inplace_forward.written_array, ANY)


# --------------------------------------------------------------------------------------------
# Forward mode: closures' cells and functions
#
# Forward rules of closures: cells, the functions made over them, and reading them.
#
# A local that a nested function captures lives in a cell (``make_cell``); the nested function
# is made with a tuple of cells (``make_function(..., closure)``) and reads them through
# ``closure_cell(fn, i)`` and ``cell_get``; ``nonlocal`` assigns through ``cell_set``.  Forward
# mode gives a cell a box, ``TangentCell``, holding the tangent of what the cell holds, and a
# function made over cells the tuple of their boxes, ``ClosureTangent``:
#
# * ``make_cell(v)``: a new box holding v's tangent;
# * ``cell_get(cell)``: the box's contents (zeros where it holds none);
# * ``cell_set(cell, v)``: the box takes v's tangent (a write: ``inplace_forward``);
# * ``make_function(..., closure)`` (and ``make_genexpr``'s): the boxes of its cells (every cell a function is made over
#   has a box from where it is made: ``gibbous.forward.activity``), so a call of the function
#   (``DynamicCalls`` in ``gibbous.forward.dynamic``) runs its forward program with them, where
#   ``closure_cell(fn, i)`` is box ``i``.
#
# The boxes are shared exactly as the cells are: the function that made a cell and every function
# made over it hold the same box, so a ``nonlocal`` write in one is read in the others.
#
# A program reverse mode differentiates again (a Hessian-vector product's) cannot see into a
# box: there a cell's tangent is a real cell, made, read and written by the same runtime calls
# as the cell (``make_cell(dv)``, ``cell_get(dcell, name)``, ``cell_set(dcell, dv)``), and a
# function's tangent is the tuple of its cells' (the tangent of its closure operand), which the
# program of a call of it takes as the boxes (``written forms``, below; a default value with a
# tangent is refused there).
#
# Default values with tangents (``def g(a, b=x)``) ride on the function's tangent
# (``ClosureTangent``): a call that leaves them out passes them by keyword, with their tangents.


class ClosureTangent:
    """The tangent of a function made in the differentiated code: its cells' boxes, in
    ``co_freevars`` order (None: made over no cells), and the tangents of its default values
    where one has a tangent (``def g(a, b=x)``: a call leaving ``b`` out passes it by keyword
    with its tangent, ``gibbous.forward.dynamic``)."""

    __slots__ = ("cells", "defaults", "kwdefaults")

    def __init__(
        self,
        cells: tuple[TangentCell | None, ...] | None,
        defaults: tuple[t.Any, ...] | None = None,
        kwdefaults: dict[str, t.Any] | None = None,
    ) -> None:
        self.cells, self.defaults, self.kwdefaults = cells, defaults, kwdefaults

    def __repr__(self) -> str:
        return f"ClosureTangent({self.cells!r}, {self.defaults!r}, {self.kwdefaults!r})"


def _make_cell(z: t.Any, *a: t.Any) -> TangentCell:
    """``make_cell()`` or ``make_cell(v)``: a box with v's tangent."""
    return TangentCell(a[1] if len(a) == 2 else None)


def _cell_get(z: t.Any, *a: t.Any) -> t.Any:
    """``cell_get(cell, name[, free])``: what the cell's box holds, shaped as the value."""
    box = a[len(a) // 2]
    contents = box.contents if type(box) is TangentCell else None
    if contents is None and type(z) in (list, dict):
        # (a list or dict whose box holds no tangent: none, not fresh zeros a write would go
        # to unseen; ``xs.append(x)`` in a comprehension over ``xs = []`` is refused by name)
        return None
    return like(z, contents)


def _make_function(z: t.Any, *a: t.Any, **annotations: t.Any) -> ClosureTangent | None:
    """``make_function(code, owner[, defaults, kwdefaults, closure], annotations=...)``: the
    closure's boxes, and the tangents of the default values that have one."""
    n = (len(a) - len(annotations)) // 2  # (a: the positional values, then every tangent)
    values, tangents = a[:n], a[n:]
    defaults = tangents[2] if n > 2 and _carries(tangents[2]) else None
    kwdefaults = tangents[3] if n > 3 and _carries(tangents[3]) else None
    dcells = tangents[4] if n > 4 and values[4] is not None else None
    # (cells made outside the differentiated code, dcells None: constants)
    cells = None if dcells is None else tuple(c if type(c) is TangentCell else None for c in dcells)
    if cells is None and defaults is None and kwdefaults is None:
        return None
    return ClosureTangent(cells, defaults, kwdefaults)


def _make_genexpr(z: t.Any, *a: t.Any) -> ClosureTangent | None:
    """``make_genexpr(code, owner, closure)``: a generator expression's function (run eagerly),
    made over cells as a nested function is."""
    closure, dcells = a[2], a[5]
    if closure is None or dcells is None:
        return None
    return ClosureTangent(tuple(c if type(c) is TangentCell else None for c in dcells))


def _carries(d: t.Any) -> bool:
    if isinstance(d, (tuple, list)):
        return any(map(_carries, d))
    if isinstance(d, dict):
        return any(map(_carries, d.values()))
    return d is not None and not (type(d) is float and d == 0.0)


def _maker(tangent: t.Callable[..., t.Any], keywords: frozenset[str] = frozenset()) -> frules.Maker:
    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> frules.Tangent | None:
        return tangent if set(kwnames) <= keywords else None

    return make


def closure_box(cells: tuple[TangentCell | None, ...], i: int) -> TangentCell:
    """Box ``i`` of a closure's tangent, in the forward program of the function made over it
    (``closure_cell(fn, i)``); a cell made outside the differentiated code has none."""
    box = cells[i]
    if box is None:
        raise ForwardModeError(
            f"forward mode: cell {i} of a closure was made outside the differentiated code "
            "and is written with a tangent: make the closure inside the function differentiated"
        )
    return box


def immutable_contents(cell: t.Any, fn: str, i: int) -> None:
    """Raises unless what ``cell``, cell ``i`` of ``fn``, a function made outside the
    differentiated code, holds is immutable (a number, a string, None, or a tuple of those): a
    write the build could not rule out cannot reach it then (SciPy's decorators keep
    ``default_axis`` in a cell, which flows into ``kwds.pop('axis', default_axis)``)."""
    try:
        value = cell.cell_contents
    except ValueError:  # (empty: nothing a write could reach)
        return
    if not _immutable(value):
        raise ForwardModeError(
            f"forward mode cannot differentiate a write into a variable of an enclosing "
            f"function (nonlocal, cell {i} of {fn}, a {type(value).__name__}) of a function made "
            "outside the differentiated code"
        )


def _immutable(value: object) -> bool:
    if type(value) is tuple:
        return all(map(_immutable, value))
    return value is None or isinstance(value, (int, float, complex, str, bytes, np.generic))


zero_derivative(immutable_contents, ANY, ANY, ANY)


frules.register(runtime.make_cell, _maker(_make_cell))
frules.register(runtime.cell_get, _maker(_cell_get))
frules.register(runtime.make_function, _maker(_make_function, frozenset({"annotations"})))
frules.register(runtime.make_genexpr, _maker(_make_genexpr))
for _helper in (_make_cell, _cell_get, _make_function, _make_genexpr, closure_box, immutable_contents):
    runtime.register_object(_helper, f"forward_cells.{_helper.__name__.lstrip('_')}")


# --------------------------------------------------------------------------------------------
# Written forms: real cells for the tangents, in a program reverse mode differentiates


def _written(
    emit: t.Callable[[Builder, Value, Values, Tangents, Keywords], Value],
    keywords: frozenset[str] = frozenset(),
) -> frules.Maker:
    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> Emit | None:
        return Emit(emit) if set(kwnames) <= keywords else None

    return make


def _make_cell_written(
    b: Builder, z: Value, args: Values, tangents: Tangents, kw: Keywords
) -> Value:
    if not args:  # (an empty cell: a later ``cell_set`` fills both)
        return b.call(runtime.make_cell, type=z.type)
    return b.call(runtime.make_cell, item_tangent(b, args[0], tangents[0]), type=z.type)


def _cell_get_written(
    b: Builder, z: Value, args: Values, tangents: Tangents, kw: Keywords
) -> Value:
    dcell = tangents[0]
    if dcell is None:  # (a cell made outside the differentiated code: a constant)
        return frules.zero(b, z)
    return b.call(runtime.cell_get, dcell, *args[1:], type=z.type)


def _closure_written(at: int) -> t.Callable[[Builder, Value, Values, Tangents, Keywords], Value]:
    """``make_function`` / ``make_genexpr``: the tangent of the closure operand ``at``."""

    def emit(b: Builder, z: Value, args: Values, tangents: Tangents, kw: Keywords) -> Value:
        if any(d is not None for d in tangents[2:4]) and at == 4:
            raise ForwardModeError(
                "forward mode: a nested function with a default value with a tangent (def g(a, "
                "b=x) with x depending on a float), in a Hessian-vector product: pass the value "
                "as an argument instead"
            )
        d = tangents[at] if at < len(tangents) else None
        return Constant(None) if d is None else d

    return emit


frules.register_written(runtime.make_cell, _written(_make_cell_written))
frules.register_written(runtime.cell_get, _written(_cell_get_written))
frules.register_written(
    runtime.make_function, _written(_closure_written(4), frozenset({"annotations"}))
)
frules.register_written(runtime.make_genexpr, _written(_closure_written(2)))


# --------------------------------------------------------------------------------------------
# Forward mode: typing.cast
#
# Forward mode: ``typing.cast``.


def _cast_make(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> Tangent | Emit | None:
    """``typing.cast(cls, x)`` (type inference's narrowing) is ``x``: so is its tangent."""
    if kwnames or len(types) != 2 or varied[0] or not varied[1]:
        return None

    def emit(b: Builder, z: Value, args: Values, tangents: Tangents, kw: Keywords) -> Value:
        d = tangents[1]
        assert d is not None
        return b.call(typing.cast, args[0], d, type=z.type)

    return Emit(emit)


register(typing.cast, _cast_make)
