"""Forward rules of closures: cells, the functions made over them, and reading them.

A local that a nested function captures lives in a cell (``make_cell``); the nested function
is made with a tuple of cells (``make_function(..., closure)``) and reads them through
``closure_cell(fn, i)`` and ``cell_get``; ``nonlocal`` assigns through ``cell_set``.  Forward
mode gives a cell a box, ``TangentCell``, holding the tangent of what the cell holds, and a
function made over cells the tuple of their boxes, ``ClosureTangent``:

* ``make_cell(v)``: a new box holding v's tangent;
* ``cell_get(cell)``: the box's contents (zeros where it holds none);
* ``cell_set(cell, v)``: the box takes v's tangent (a write: ``forward_writes``);
* ``make_function(..., closure)`` (and ``make_genexpr``'s): the boxes of its cells (every cell a function is made over
  has a box from where it is made: ``gibbous.forward.activity``), so a call of the function
  (``DynamicCalls`` in ``gibbous.forward.dynamic``) runs its forward program with them, where
  ``closure_cell(fn, i)`` is box ``i``.

The boxes are shared exactly as the cells are: the function that made a cell and every function
made over it hold the same box, so a ``nonlocal`` write in one is read in the others.

A program reverse mode differentiates again (a Hessian-vector product's) cannot see into a
box: there a cell's tangent is a real cell, made, read and written by the same runtime calls
as the cell (``make_cell(dv)``, ``cell_get(dcell, name)``, ``cell_set(dcell, dv)``), and a
function's tangent is the tuple of its cells' (the tangent of its closure operand), which the
program of a call of it takes as the boxes (``written forms``, below; a default value with a
tangent is refused there).

Default values with tangents (``def g(a, b=x)``) ride on the function's tangent
(``ClosureTangent``): a call that leaves them out passes them by keyword, with their tangents.
"""

from __future__ import annotations

import typing as t

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules import frules as FR
from gibbous.rules.emit import (
    Emit,
    ForwardModeError,
    Keywords,
    TangentCell,
    Tangents,
    Values,
    item_tangent,
    like,
)


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
    return like(z, box.contents if type(box) is TangentCell else None)


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


def _maker(tangent: t.Callable[..., t.Any], keywords: frozenset[str] = frozenset()) -> FR.Maker:
    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> FR.Tangent | None:
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


FR.register(runtime.make_cell, _maker(_make_cell))
FR.register(runtime.cell_get, _maker(_cell_get))
FR.register(runtime.make_function, _maker(_make_function, frozenset({"annotations"})))
FR.register(runtime.make_genexpr, _maker(_make_genexpr))
for _helper in (_make_cell, _cell_get, _make_function, _make_genexpr, closure_box):
    runtime.register_object(_helper, f"forward_cells.{_helper.__name__.lstrip('_')}")


# --------------------------------------------------------------------------------------------
# Written forms: real cells for the tangents, in a program reverse mode differentiates


def _written(
    emit: t.Callable[[Builder, Value, Values, Tangents, Keywords], Value],
    keywords: frozenset[str] = frozenset(),
) -> FR.Maker:
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
        return FR.zero(b, z)
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


FR.register_written(runtime.make_cell, _written(_make_cell_written))
FR.register_written(runtime.cell_get, _written(_cell_get_written))
FR.register_written(
    runtime.make_function, _written(_closure_written(4), frozenset({"annotations"}))
)
FR.register_written(runtime.make_genexpr, _written(_closure_written(2)))
