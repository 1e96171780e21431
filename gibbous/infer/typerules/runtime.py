"""Type rules for the frontend's runtime helpers (``gibbous.ir.runtime``).

The frontend calls these where Python has no callable of its own: literals, unpacking, the
``FOR_ITER`` step, f-strings.  Type inference models the container helpers with allocation
sites of their own; the rules here give their types as values.
"""

from __future__ import annotations

import typing as t

from gibbous.ir import runtime as runtime
from gibbous.ir import types as T
from gibbous.ir.exceptions import caught
from gibbous.infer.typerules.base import Iter, RuleList, join, may_share_values
from gibbous.infer.typerules.containers import iter_item, literal_rule

RULES = RuleList()

RULES.add([runtime.make_tuple], literal_rule(tuple))
RULES.add([runtime.make_list], literal_rule(list))
RULES.add([runtime.make_set], literal_rule(set))
RULES.add([runtime.make_dict], literal_rule(dict))


@RULES(runtime.make_locals)
def _make_locals(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    values = [v for v in args[1::2] if v != T.Const(runtime.UNBOUND)]
    return T.Dict(T.STR, join(*values)) if values else T.typeof({})

STOP = T.Const(runtime.STOP)


def unpacked_items(seq: T.Type, n: int) -> tuple[T.Type, ...] | None:
    """The item types of ``unpack(seq, n)``: a tuple's own items, else ``n`` elements."""
    match seq:
        case T.Tuple(items=items) if len(items) == n:
            return items
        case T.Tuple():
            return None  # a ValueError
    item = iter_item(seq)
    return None if item is None else (item,) * n


@RULES(runtime.unpack)
def _unpack(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if len(args) != 2 or kwargs or not isinstance(args[1], T.Const):
        return T.ANY
    items = unpacked_items(args[0], t.cast(int, args[1].value))
    return T.ANY if items is None else T.Tuple(items)


@RULES(runtime.unpack_ex)
def _unpack_ex(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if len(args) != 3 or kwargs or not all(isinstance(a, T.Const) for a in args[1:]):
        return T.ANY
    before, after = (t.cast(int, t.cast(T.Const, a).value) for a in args[1:])
    item = iter_item(args[0])
    if item is None:
        return T.ANY
    return T.Tuple((item,) * before + (T.List(item),) + (item,) * after)


@RULES(runtime.next_or_stop)
def _next_or_stop(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if len(args) != 1 or kwargs or not isinstance(args[0], Iter):
        return T.ANY
    return join(args[0].item, STOP)


@RULES(runtime.is_stop)
def _is_stop(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if len(args) != 1 or kwargs:
        return T.ANY
    if args[0] == STOP:
        return T.Const(True)
    if not may_share_values(args[0], STOP):
        return T.Const(False)
    return T.BOOL


@RULES(runtime.check_bound)
def _check_bound(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if args and args[0] == T.Const(runtime.UNBOUND):
        return T.BOTTOM  # it always raises
    return args[0] if args else T.ANY


@RULES(caught)
def _caught(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.Object(BaseException)


@RULES(runtime.exception_matches)
def _exception_matches(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.BOOL


@RULES(runtime.build_string)
def _build_string(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.STR


@RULES(runtime.dict_merge, stores=True)
def _dict_merge(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.NONE



# What the ``array-items`` pass writes (``gibbous.passes.array_items``).


@RULES(runtime.check_unpack)
def _check_unpack(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.NONE


@RULES(runtime.float_array)
def _float_array(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.Array("float64", 1)
