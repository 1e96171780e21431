"""Tuples, lists and dicts as the frontend builds and uses them: literals, unpacking, reading
and writing items, concatenation and repetition.  Their methods are in ``container_methods``.

Tangents (docs/tangents.md): a tuple's fdata is the tuple of its items' fdata and its rdata the
tuple of their rdata; a list's or dict's fdata is its whole tangent, a list (dict) of the
items' tangents, updated in place.  So

* reading an item gives it the item's fdata; the pullback adds the item's rdata (a float's
  cotangent) into the list's tangent item, or into the tuple's rdata it returns;
* storing an item (``setitem``, ``append``, ``extend``, ``insert``, ``make_list``) puts the
  item's tangent into the container's tangent: its fdata (the very objects, so an array stored
  in a list and read back still aliases its fdata) and a zero rdata part, which then collects
  the cotangent of the stored value; the pullback returns that as the value's rdata;
* mutations save what they overwrite or remove (items and their tangents, by reference: no
  copies are needed, nothing is overwritten in place) and their pullbacks restore it, so
  after forward + reverse every container is as it was, order included.
"""

from __future__ import annotations

import operator
import typing as t

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.library.common import (
    ANY,
    CD,
    DICT,
    LIST,
    NT,
    STR,
    TUPLE,
    RuleResult,
)
from gibbous.library.items import (
    ListItems,
    TupleItems,
    collapse,
    dict_tangent,
    full_tangent,
    items_of,
    list_tangent,
    rdata_tangent,
)
from gibbous.library.python.iteration import consume
from gibbous.library.python.queries import set_items_rrule
from gibbous.rules.registry import primitive, zero_derivative
from gibbous.tangents.model import CoDual, fdata_of, increment, rdata_of, zero_rdata
from gibbous.ir.builder import Builder
from gibbous.ir.core import Value
from gibbous.rules import frules
from gibbous.rules.emit import Emit, Keywords, Tangents, Values, item_tangent, zero
from gibbous.rules import structure

RANGE = T.Object(range)


# --------------------------------------------------------------------------------------------
# Literals


@primitive(runtime.make_tuple, ...)
def make_tuple_rrule(f: CD, *xs: CD) -> RuleResult:
    y = tuple(x.primal for x in xs)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if dy is NT:
            return (NT, *(zero_rdata(x.primal) for x in xs))
        return (NT, *(zero_rdata(x.primal) if d is NT else d for x, d in zip(xs, dy)))

    return CoDual(y, collapse(x.fdata for x in xs)), pullback


@primitive(runtime.make_list, ...)
def make_list_rrule(f: CD, *xs: CD) -> RuleResult:
    tangent = [full_tangent(x.primal, x.fdata) for x in xs]

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        return (NT, *map(rdata_of, tangent))

    return CoDual([x.primal for x in xs], tangent), pullback
structure.register_made_of([runtime.make_tuple, runtime.make_list])


@primitive(runtime.make_locals, ...)
@primitive(runtime.make_dict, ...)
def make_dict_rrule(f: CD, *kvs: CD) -> RuleResult:
    """``make_dict(k1, v1, k2, v2, ...)``, and any helper of the same arguments that builds a
    dict of some of the pairs (a ``locals()`` leaving out unbound names): the tangent has the
    keys of the dict made, in its order, each from the pair whose value the dict holds."""
    y = f.primal(*(c.primal for c in kvs))
    last: dict[t.Any, int] = {}  # key -> the pair that set it (a repeated key keeps the last)
    for j in range(0, len(kvs), 2):
        key = kvs[j].primal
        if key in y and y[key] is kvs[j + 1].primal:
            last[key] = j
    values = {key: kvs[j + 1] for key, j in last.items()}
    tangent = {key: full_tangent(values[key].primal, values[key].fdata) for key in y}

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        rdata = [zero_rdata(c.primal) for c in kvs]
        for key, j in last.items():
            rdata[j + 1] = rdata_of(tangent[key])
        return (NT, *rdata)

    return CoDual(y, tangent), pullback


primitive(runtime.make_set, ...)(set_items_rrule)

# --------------------------------------------------------------------------------------------
# Unpacking


@primitive(runtime.unpack, ANY, ANY)
def unpack_rrule(f: CD, seq: CD, n: CD) -> RuleResult:
    """``a, b = seq``: the items' fdata; the pullback sends each item's rdata back."""
    items = consume(seq)
    y = f.primal([items.item(i) for i in range(len(items))], n.primal)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if dy is not NT:
            for i, d in enumerate(dy):
                items.send_rdata(i, d)
        return NT, items.rdata(), NT

    return CoDual(y, collapse(items.fdata(i) for i in range(len(y)))), pullback
structure.register_structural([runtime.unpack, runtime.unpack_ex], arrays=True)


@primitive(runtime.unpack_ex, ANY, ANY, ANY)
def unpack_ex_rrule(f: CD, seq: CD, before: CD, after: CD) -> RuleResult:
    """``a, *b, c = seq``: ``(a, [b...], c)``; the middle list gets a tangent of its own."""
    items = consume(seq)
    values = [items.item(i) for i in range(len(items))]
    y = f.primal(values, before.primal, after.primal)
    nb, n = before.primal, len(values)
    middle = [full_tangent(values[i], items.fdata(i)) for i in range(nb, n - after.primal)]
    fds = [items.fdata(i) for i in range(nb)] + [middle]
    fds += [items.fdata(i) for i in range(n - after.primal, n)]

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        for j, mt in enumerate(middle):
            items.send_rdata(nb + j, rdata_of(mt))
        if dy is not NT:
            outer = list(range(nb)) + list(range(n - after.primal, n))
            for i, d in zip(outer, dy[:nb] + dy[nb + 1 :]):
                items.send_rdata(i, d)
        return NT, items.rdata(), NT, NT

    return CoDual(y, collapse(fds)), pullback


# --------------------------------------------------------------------------------------------
# Reading items


def _positions(index: object, n: int) -> range | int:
    if isinstance(index, slice):
        return range(*index.indices(n))
    i = operator.index(t.cast(t.SupportsIndex, index))
    return i + n if i < 0 else i


@primitive(operator.getitem, TUPLE, ANY)
def tuple_getitem_rrule(f: CD, x: CD, index: CD) -> RuleResult:
    """``t[i]``: the item's fdata; the tuple's rdata is ``dy`` at i and zeros elsewhere.
    ``t[a:b]``: a new tuple of the items."""
    y = f.primal(x.primal, index.primal)
    where = _positions(index.primal, len(x.primal))
    items = TupleItems(x.primal, x.fdata)

    if isinstance(where, int):

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            items.send_rdata(where, dy)
            return NT, items.rdata(), NT

        return CoDual(y, items.fdata(where)), pullback

    def pullback_slice(dy: t.Any) -> tuple[t.Any, ...]:
        if dy is not NT:
            for i, d in zip(where, dy):
                items.send_rdata(i, d)
        return NT, items.rdata(), NT

    return CoDual(y, collapse(items.fdata(i) for i in where)), pullback_slice


@primitive(operator.getitem, LIST, ANY)
def list_getitem_rrule(f: CD, x: CD, index: CD) -> RuleResult:
    """``l[i]``: the item's fdata, its rdata added into the list's tangent.  ``l[a:b]``: a new
    list, with a tangent of its own holding the items' fdata."""
    y = f.primal(x.primal, index.primal)
    items = ListItems(x.primal, list_tangent(x))
    where = _positions(index.primal, len(x.primal))
    if isinstance(where, int):

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            items.send_rdata(where, dy)
            return NT, NT, NT

        return CoDual(y, items.fdata(where)), pullback

    tangent = [full_tangent(x.primal[i], items.fdata(i)) for i in where]

    def pullback_slice(dy: t.Any) -> tuple[t.Any, ...]:
        for i, st in zip(where, tangent):
            items.send_rdata(i, rdata_of(st))
        return NT, NT, NT

    return CoDual(y, tangent), pullback_slice


@primitive(operator.getitem, DICT, ANY)
def dict_getitem_rrule(f: CD, d: CD, key: CD) -> RuleResult:
    y = f.primal(d.primal, key.primal)
    tangent, k = dict_tangent(d), key.primal

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if dy is not NT:
            tangent[k] = increment(tangent[k], rdata_tangent(y, dy))
        return NT, NT, NT

    return CoDual(y, fdata_of(tangent[k])), pullback
structure.register_structural([operator.getitem], arrays=False)  # (arrays: linear)


for _fn in (operator.getitem, operator.contains, operator.mul, operator.add, operator.mod):
    zero_derivative(_fn, STR, ANY)
zero_derivative(operator.getitem, RANGE, ANY)

# --------------------------------------------------------------------------------------------
# Writing items


@primitive(operator.setitem, LIST, ANY, ANY)
def list_setitem_rrule(f: CD, x: CD, index: CD, v: CD) -> RuleResult:
    """``l[i] = v`` and ``l[a:b] = values``: the overwritten items and tangents are kept (by
    reference) and put back by the pullback."""
    lst, tangent, idx = x.primal, list_tangent(x), index.primal
    n = len(lst)
    if not isinstance(idx, slice):
        i = t.cast(int, _positions(idx, n))
        old, old_t = lst[i], tangent[i]
        f.primal(lst, idx, v.primal)
        tangent[i] = full_tangent(v.primal, v.fdata)

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            r = rdata_of(tangent[i])
            lst[i], tangent[i] = old, old_t
            return NT, NT, NT, r

        return CoDual(None, NT), pullback

    values = consume(v)
    new = [values.item(j) for j in range(len(values))]
    old_items, old_tangents = lst[idx], tangent[idx]
    start, _, step = idx.indices(n)
    f.primal(lst, idx, new)
    tangent[idx] = [full_tangent(new[j], values.fdata(j)) for j in range(len(new))]
    written = range(start, start + len(new)) if step == 1 else range(*idx.indices(n))
    restore = slice(start, start + len(new)) if step == 1 else idx

    def pullback_slice(dy: t.Any) -> tuple[t.Any, ...]:
        for j, i in enumerate(written):
            values.send_rdata(j, rdata_of(tangent[i]))
        lst[restore], tangent[restore] = old_items, old_tangents
        return NT, NT, NT, values.rdata()

    return CoDual(None, NT), pullback_slice


_MISSING = object()


@primitive(operator.setitem, DICT, ANY, ANY)
def dict_setitem_rrule(f: CD, d: CD, key: CD, v: CD) -> RuleResult:
    mapping, tangent, k = d.primal, dict_tangent(d), key.primal
    old = mapping.get(k, _MISSING)
    old_t = tangent.get(k, _MISSING)
    f.primal(mapping, k, v.primal)
    tangent[k] = full_tangent(v.primal, v.fdata)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        r = rdata_of(tangent[k])
        if old is _MISSING:
            del mapping[k]
        else:
            mapping[k] = old  # an existing key keeps its place in the order
        if old_t is _MISSING:
            del tangent[k]
        else:
            tangent[k] = old_t
        return NT, NT, NT, r

    return CoDual(None, NT), pullback


@primitive(operator.delitem, LIST, ANY)
def list_delitem_rrule(f: CD, x: CD, index: CD) -> RuleResult:
    """``del l[i]``, ``del l[a:b]``; the pullback inserts the items and their tangents back
    (the tangents of the other items are the current ones: they may hold cotangents now)."""
    lst, tangent, idx = x.primal, list_tangent(x), index.primal
    where = _positions(idx, len(lst))
    positions = where if isinstance(where, range) else range(where, where + 1)
    removed = sorted((p, lst[p], tangent[p]) for p in positions)
    f.primal(lst, idx)
    del tangent[idx]

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        for p, value, vt in removed:
            lst.insert(p, value)
            tangent.insert(p, vt)
        return NT, NT, NT

    return CoDual(None, NT), pullback


@primitive(operator.delitem, DICT, ANY)
def dict_delitem_rrule(f: CD, d: CD, key: CD) -> RuleResult:
    """``del d[k]``; the pullback rebuilds both dicts to give the keys their order back."""
    mapping, tangent, k = d.primal, dict_tangent(d), key.primal
    order = list(mapping)
    value, vt = mapping[k], tangent[k]
    f.primal(mapping, k)
    del tangent[k]

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        mapping[k], tangent[k] = value, vt
        for table in (mapping, tangent):
            current = [(key_, table[key_]) for key_ in order]
            table.clear()
            table.update(current)
        return NT, NT, NT

    return CoDual(None, NT), pullback


# --------------------------------------------------------------------------------------------
# Concatenation


@primitive(operator.add, TUPLE, TUPLE)
def tuple_add_rrule(f: CD, a: CD, b: CD) -> RuleResult:
    y = f.primal(a.primal, b.primal)
    n = len(a.primal)
    ia, ib = TupleItems(a.primal, a.fdata), TupleItems(b.primal, b.fdata)
    fd = collapse([ia.fdata(i) for i in range(n)] + [ib.fdata(i) for i in range(len(ib))])

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if dy is not NT:
            for i, d in enumerate(dy):
                if i < n:
                    ia.send_rdata(i, d)
                else:
                    ib.send_rdata(i - n, d)
        return NT, ia.rdata(), ib.rdata()

    return CoDual(y, fd), pullback


@primitive(operator.add, LIST, LIST)
def list_add_rrule(f: CD, a: CD, b: CD) -> RuleResult:
    y = f.primal(a.primal, b.primal)
    ia, ib = ListItems(a.primal, list_tangent(a)), ListItems(b.primal, list_tangent(b))
    parts: list[tuple[ListItems, int]] = [(ia, i) for i in range(len(ia))]
    parts += [(ib, i) for i in range(len(ib))]
    tangent = [full_tangent(it.item(i), it.fdata(i)) for it, i in parts]

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        for (it, i), vt in zip(parts, tangent):
            it.send_rdata(i, rdata_of(vt))
        return NT, NT, NT

    return CoDual(y, tangent), pullback


def _repeat_rrule(f: CD, a: CD, b: CD) -> RuleResult:
    """``items * n`` and ``n * items`` for a list or tuple: each copy of an item carries the
    item's fdata; the pullback sends each copy's rdata to the item."""
    seq, n = (a, b) if isinstance(a.primal, (list, tuple)) else (b, a)
    y = f.primal(a.primal, b.primal)
    k = len(seq.primal)
    items = items_of(seq.primal, seq.fdata)
    if isinstance(y, tuple):
        fd = collapse(items.fdata(j % k) for j in range(len(y)))

        def pullback_tuple(dy: t.Any) -> tuple[t.Any, ...]:
            if dy is not NT:
                for j, d in enumerate(dy):
                    items.send_rdata(j % k, d)
            return (NT, *(items.rdata() if c is seq else NT for c in (a, b)))

        return CoDual(y, fd), pullback_tuple
    tangent = [full_tangent(y[j], items.fdata(j % k)) for j in range(len(y))]

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        for j, vt in enumerate(tangent):
            items.send_rdata(j % k, rdata_of(vt))
        return NT, NT, NT

    return CoDual(y, tangent), pullback


for _seq in (LIST, TUPLE):
    primitive(operator.mul, _seq, ANY)(_repeat_rrule)
    primitive(operator.mul, T.INT, _seq)(_repeat_rrule)


def _sequence(ty: T.Type) -> bool:
    const = isinstance(ty, T.Const) and isinstance(ty.value, (tuple, list))
    return const or isinstance(ty, (T.Tuple, T.List))


def _repeat_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | Emit | None:
    """``items * n`` and ``n * items`` for a list or tuple: the items' tangents repeated
    (``(idx,) * ndim`` in np.diag_indices, ``(a,) * repeats`` in np.resize); none where the
    items have none (``(1,) * k``, whatever ``k``)."""
    if kwnames or len(types) != 2:
        return None
    at = next((i for i, ty in enumerate(types) if _sequence(ty)), None)
    if at is None or not isinstance(types[1 - at], (T.Int, T.Bool, T.Const, T.Any)):
        return None

    def emit(b: Builder, z: Value, args: Values, tangents: Tangents, kw: Keywords) -> Value:
        d = tangents[at]
        if d is None:
            return zero(b, z)
        return b.call(operator.mul, d, args[1 - at], type=z.type)

    return Emit(emit)


frules.register(operator.mul, _repeat_tangent)


def _concat_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | Emit | None:
    """``items + other`` for a list or tuple and a value whose type the build could not tell
    (``c.shape + (1,) * x.ndim`` in np.polynomial): the items' tangents joined where it is a
    concatenation (a tuple or list at run time), the sum of the tangents where it is not."""
    if kwnames or len(types) != 2 or not any(map(_sequence, types)):
        return None
    if not any(isinstance(ty, T.Any) or _untold_sequence(ty) for ty in types):
        return None
    return _joined


def _untold_sequence(ty: T.Type) -> bool:
    """A tuple or list whose items the build could not tell (``(x,) + args`` in SciPy's
    distributions, ``args`` made by code generated at run time)."""
    return isinstance(ty, T.Object) and ty.cls in (tuple, list)


def _joined(z: t.Any, a: t.Any, b: t.Any, da: t.Any, db: t.Any) -> t.Any:
    if isinstance(z, (tuple, list)):  # (``like`` of None only: hvp derives this function)
        return (frules.like(a, None) if da is None else da) + (frules.like(b, None) if db is None else db)
    terms = [d for d in (da, db) if d is not None]
    zeros = frules.like(z, None)  # (added: the sum's shape; no ``like`` of a tangent, as above)
    return zeros + terms[0] + terms[1] if len(terms) == 2 else zeros + terms[0] if terms else zeros


frules.register(operator.add, _concat_tangent)
# ``t += u`` and ``t *= n`` make new tuples, as ``t + u`` and ``t * n`` (``l *= n`` is in place:
# container_methods).
primitive(operator.iadd, TUPLE, TUPLE)(tuple_add_rrule)
primitive(operator.imul, TUPLE, ANY)(_repeat_rrule)


# --------------------------------------------------------------------------------------------
# Forward mode: dicts
#
# Forward rules of dicts: a dict's tangent is a dict of its values' tangents, by key.
#
# ``{"W": w, "n": 3}`` has the tangent ``{"W": dw, "n": 0.0}`` (``item_tangent``: zeros for a
# value without one, 0.0 for an int, None for a string), its keys in the dict's own order, so
# ``d.items()`` and ``d.values()`` of the two run in step.  ``d[k]`` and ``d.get(k, default)``
# read the tangent at ``k``; ``d[k] = v`` writes v's there (a write: ``inplace_forward``, the dict
# exposed like a list, its tangent made where it is made).  Other methods that write
# (``update``, ``pop``, ``setdefault``) are refused by the transform, as any write it has no
# rule for.  ``jvp`` takes a dict argument's tangent as a dict (missing keys: zeros).


def _make_dict(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | Emit | None:
    """``make_dict(k1, v1, k2, v2, ...)``: the same keys with the values' tangents."""
    if kwnames:
        return None

    def emit(b: Builder, z: Value, args: Values, tangents: Tangents, kw: Keywords) -> Value:
        pairs = enumerate(zip(args, tangents))
        items = [a if i % 2 == 0 else item_tangent(b, a, d) for i, (a, d) in pairs]
        return b.call(runtime.make_dict, *items, type=z.type)

    return Emit(emit)


def _make_locals(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | Emit | None:
    """``locals()`` (``make_locals(name1, v1, ...)``): ``make_locals`` of the names and their
    tangents, each ``bound_like`` its value, so the unbound names are left out of both (plain
    calls: reverse mode differentiates them again in a Hessian-vector product)."""
    if kwnames:
        return None

    def emit(b: Builder, z: Value, args: Values, tangents: Tangents, kw: Keywords) -> Value:
        items = [
            x for i in range(0, len(args) - 1, 2)
            for x in (args[i], b.call(
                runtime.bound_like, args[i + 1], item_tangent(b, args[i + 1], tangents[i + 1]),
                type=T.ANY,
            ))
        ]  # fmt: skip
        return b.call(runtime.make_locals, *items, type=z.type)

    return Emit(emit)


def _getitem(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | Emit | None:
    """``d[k]``: the tangent at ``k`` (a key's own tangent, if it has one, is no derivative
    of the value)."""
    if kwnames or len(types) != 2 or not isinstance(types[0], T.Dict):
        return None

    def emit(b: Builder, z: Value, args: Values, tangents: Tangents, kw: Keywords) -> Value:
        d = tangents[0]
        return zero(b, z) if d is None else b.call(operator.getitem, d, args[1], type=z.type)

    return Emit(emit)


frules.register(runtime.make_dict, _make_dict)
frules.register(runtime.make_locals, _make_locals)
frules.register(operator.getitem, _getitem)
