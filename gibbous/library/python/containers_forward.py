"""Forward rules of dicts: a dict's tangent is a dict of its values' tangents, by key.

``{"W": w, "n": 3}`` has the tangent ``{"W": dw, "n": 0.0}`` (``item_tangent``: zeros for a
value without one, 0.0 for an int, None for a string), its keys in the dict's own order, so
``d.items()`` and ``d.values()`` of the two run in step.  ``d[k]`` and ``d.get(k, default)``
read the tangent at ``k``; ``d[k] = v`` writes v's there (a write: ``forward_writes``, the dict
exposed like a list, its tangent made where it is made).  Other methods that write
(``update``, ``pop``, ``setdefault``) are refused by the transform, as any write it has no
rule for.  ``jvp`` takes a dict argument's tangent as a dict (missing keys: zeros).
"""

from __future__ import annotations

import operator
import typing as t

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Value
from gibbous.rules import frules as FR
from gibbous.rules.emit import Emit, Keywords, Tangents, Values, item_tangent, like, zero


def _make_dict(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> FR.Tangent | Emit | None:
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
) -> FR.Tangent | Emit | None:
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
) -> FR.Tangent | Emit | None:
    """``d[k]``: the tangent at ``k`` (a key's own tangent, if it has one, is no derivative
    of the value)."""
    if kwnames or len(types) != 2 or not isinstance(types[0], T.Dict):
        return None

    def emit(b: Builder, z: Value, args: Values, tangents: Tangents, kw: Keywords) -> Value:
        d = tangents[0]
        return zero(b, z) if d is None else b.call(operator.getitem, d, args[1], type=z.type)

    return Emit(emit)


def _get(z: t.Any, d: t.Any, k: t.Any, *rest: t.Any) -> t.Any:
    """``d.get(k[, default])``: the tangent at ``k``, else the default's."""
    n = (len(rest) + 2) // 2  # (operands d, k[, default], then their tangents)
    tangents = (d, k, *rest)[n:]
    dd = tangents[0]
    if k in d:
        return like(z, None if dd is None else dd[k])
    return like(z, tangents[2] if n == 3 else None)


def _items(z: t.Any, d: t.Any, dd: t.Any) -> list[tuple[None, t.Any]]:
    """``d.items()``: pairs of no tangent (the key) and the value's, in the dict's order."""
    return [(None, like(v, None if dd is None else dd[k])) for k, v in d.items()]


def _values(z: t.Any, d: t.Any, dd: t.Any) -> list[t.Any]:
    """``d.values()``: the values' tangents, in the dict's order."""
    return [like(v, None if dd is None else dd[k]) for k, v in d.items()]


def _on_dicts(tangent: t.Callable[..., t.Any], most: int) -> FR.Maker:
    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> FR.Tangent | None:
        ok = not kwnames and 0 < len(types) <= most and isinstance(types[0], T.Dict)
        return tangent if ok else None

    return make


FR.register(runtime.make_dict, _make_dict)
FR.register(runtime.make_locals, _make_locals)
FR.register(operator.getitem, _getitem)
FR.register(dict.get, _on_dicts(_get, 3))
FR.register(dict.items, _on_dicts(_items, 1))
FR.register(dict.values, _on_dicts(_values, 1))
for _helper in (_get, _items, _values):
    runtime.register_object(_helper, f"forward_dicts.{_helper.__name__.lstrip('_')}")
