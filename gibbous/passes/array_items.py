"""The ``array-items`` pass: float64 arrays taken apart into items and made of floats
by reading and writing their items, not through a tuple or a list.

* ``x, y, z = a`` of a float64 array of known rank is ``t = unpack(a, 3)`` and
  ``getitem(t, k)`` per name.  Where every use of ``t`` is such a read, it becomes
  ``check_unpack(a, 3)`` (the ValueError ``unpack`` raises for another length, with its
  message) and ``a[k]`` per item read: iterating a float64 vector yields the ``np.float64``
  that ``a[k]`` gives (typed ``f64``), iterating a matrix the views ``a[k]`` of its rows.  The
  items are read where ``unpack`` ran, so a later write into a vector does not reach them.
* ``np.array([a, b, c])`` of floats, the list used nowhere else and no other argument, is
  ``float_array(a, b, c)``: the same new float64 array, without the list.

Both leave the program's values and errors as they were; they matter to AD, which writes
``a[k]`` and ``float_array`` out inline (``gibbous.library.arrays.indexing`` and
``float_arrays``), where a tuple or a list of floats costs a rule call per item and rdata
gathered item by item.  The pass acts only where the static types make the rewrite exact:
an unguarded ``unpack`` of a float64 array of known rank, a constant item index, ``f64`` items.
"""

from __future__ import annotations

import operator
import typing as t

import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.core import Call, Constant, Result, Value, guard_of
from gibbous.passes.manager import register_pass
from gibbous.passes.rewrite import Match, PatternPass, Rewriter, pattern


def _item_type(ty: T.Type) -> T.Type | None:
    """What ``a[k]`` of a float64 array of type ``ty`` is, as iterating ``a`` yields it: a
    ``f64`` of a vector, a view one rank lower of a matrix or more; None for another type."""
    ty = T.widen(ty)
    if not (isinstance(ty, T.Array) and ty.dtype == "float64" and ty.ndim):
        return None
    return T.FLOAT if ty.ndim == 1 else T.Array("float64", ty.ndim - 1)


def _constant_int(v: Value) -> int | None:
    if isinstance(v, Constant) and type(v.value) is int:
        return v.value
    return None


def _item_reads(t_: Value, n: int) -> list[tuple[Call, int]] | None:
    """Every use of the unpacked tuple ``t_`` as ``getitem(t_, k)``, with ``k`` in range
    (taken modulo ``n``); None if it has another use."""
    reads: list[tuple[Call, int]] = []
    for use in t_.uses:
        op = use.user
        if not (
            isinstance(op, Call)
            and use.index == 1  # operands: [callee, tuple, index]
            and isinstance(op.callee, Constant)
            and op.callee.value is operator.getitem
            and len(op.args) == 2
            and not op.kwnames
            and guard_of(op) is None
        ):
            return None
        k = _constant_int(op.args[1])
        if k is None or not -n <= k < n:
            return None
        reads.append((op, k % n))
    return reads


@pattern(Match(callees=(runtime.unpack,)))
def unpack_items(call: Call, rw: Rewriter) -> bool:
    """``unpack(a, n)`` of a float64 array read item by item: a length check and ``a[k]``."""
    if len(call.args) != 2 or call.kwnames or guard_of(call) is not None:
        return False
    seq, count = call.args
    n = _constant_int(count)
    item = _item_type(seq.type)
    if n is None or item is None:
        return False
    reads = _item_reads(call.result, n)
    if reads is None:
        return False
    rw.call(runtime.check_unpack, seq, n, type=T.NONE)
    names = {k: op.result.name for op, k in reversed(reads)}  # (the first read's name)
    items = {
        k: rw.call(operator.getitem, seq, k, type=item, name=names[k]) for k in sorted(names)
    }
    for op, k in reads:
        rw.touched += op.result.users
        op.result.replace_all_uses_with(items[k])
        op.erase()
    call.erase()  # (``unpack`` is not pure: dead-code elimination would keep it)
    return True


def _float_item(v: Value) -> bool:
    ty = T.widen(v.type)
    return T.is_subtype(ty, T.FLOAT) and not isinstance(ty, T.Bottom)


@pattern(Match(callees=(np.array,)))
def float_array(call: Call, rw: Rewriter) -> bool:
    """``np.array(make_list(a, b, ...))`` of floats, the list used only here: ``float_array``."""
    if len(call.args) != 1 or call.kwnames or guard_of(call) is not None:
        return False
    (made,) = call.args
    if not isinstance(made, Result) or len(made.uses) != 1:
        return False
    maker = made.op
    callee = maker.callee
    if not (isinstance(callee, Constant) and callee.value is runtime.make_list):
        return False
    items = maker.args
    if not items or maker.kwnames or not all(map(_float_item, items)):
        return False
    if guard_of(maker) is not None:
        return False
    rw.replace(rw.call(runtime.float_array, *items, type=T.Array("float64", 1), name=call.result.name))
    maker.erase()  # (``make_list`` is not pure: dead-code elimination would keep it)
    return True


@register_pass
class ArrayItems(PatternPass):
    name: t.ClassVar[str] = "array-items"
    description: t.ClassVar[str] = (
        "unpack 1-D float64 arrays by item reads; np.array([floats]) without the list"
    )
    patterns = (unpack_items, float_array)


__all__ = ["ArrayItems"]
