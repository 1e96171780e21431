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

import typing as t
import weakref

import attrs

from gibbous.ir import runtime
from gibbous.rules import frules as FR
from gibbous.rules import emit as forward_ir
from gibbous.library.common import ANY, CD, NT, RuleResult, nothing
from gibbous.library.items import Throwaway, full_tangent, rdata_tangent, throwaway_state
from gibbous.rules.registry import Pullback, primitive, stateful_primitive, zero_derivative
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
    return (*_make_function(state, f, *args, **kwargs), state)


_NAMES = ("code", "owner", "defaults", "kwdefaults", "closure", "annotations")


def _make_function(state: Throwaway, f: CD, *args: CD, **kwargs: CD) -> RuleResult:
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
FR.register_linear([runtime.check_bound])  # (a local read after ``try``: the value itself)


@primitive(runtime.bound_like, ANY, ANY)
def bound_like_rrule(f: CD, value: CD, d: CD) -> RuleResult:
    """``d`` (what the unbound ``value`` leaves out: nothing)."""
    zv, zd = zero_rdata(value.primal), zero_rdata(d.primal)
    if value.primal is runtime.UNBOUND:
        return value, lambda dy: (NT, zv, zd)
    return d, lambda dy: (NT, zv, dy)


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
zero_derivative(forward_ir.like, ANY, "none")
zero_derivative(forward_ir.item_zeros, ANY)
zero_derivative(forward_ir.real_operands, ...)  # (checks: each raises or returns None)
zero_derivative(FR.not_an_array, ...)
