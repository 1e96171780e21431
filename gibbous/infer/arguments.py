"""A function's arguments under inference: which of their containers may be one object, and
which argument goes to which parameter.

The containers in a function's arguments get sites of their own, one per class of positions
that may hold the same object (``entry_types``): a store through one alias must be seen through
the others.  At a call of a user function the caller knows those classes better than the
callee's argument types can say, so it hands them down (``callee_aliasing``), and the callee's
summary is memoised by them.  ``bind`` orders a call's argument types as the callee's
parameters, the order of its IR's arguments.
"""

from __future__ import annotations

import inspect
import types as pytypes
import typing as t

from gibbous.ir import types as T
from gibbous.ir.runtime import code_signature, given_default
from gibbous.infer.abstract import Ref, _kind_of, _occurrences, _slot_types
from gibbous.infer.typerules.table import BoundMethod, Iter
from gibbous.infer.typerules.base import const_type, is_data_value, is_subtype

if t.TYPE_CHECKING:
    from gibbous.infer.interpreter import Inference

Path = tuple[object, ...]
# The positions of containers in argument types, each with its container's class, its type,
# and whether that type describes the container exactly.
Occurrence = tuple[Path, type, T.Type, bool]
Aliasing = frozenset[frozenset[Path]]


def entry_types(inference: Inference) -> list[T.Type]:
    """The arguments' types, their containers given sites: one per class of aliases."""
    found: list[Occurrence] = []
    for i, ty in enumerate(inference.arg_types):
        _occurrences(ty, (i,), True, found)
    parent = list(range(len(found)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i, (path_i, kind_i, ty_i, exact_i) in enumerate(found):
        for j in range(i):
            path_j, kind_j, ty_j, exact_j = found[j]
            if kind_i is kind_j and _may_alias(
                inference.aliasing, (path_i, ty_i, exact_i), (path_j, ty_j, exact_j)
            ):
                parent[root(i)] = root(j)
    site_of: dict[Path, int] = {}
    for i, (path, kind, _, _) in enumerate(found):
        site_of[path] = inference.site(("argument", found[root(i)][0]), kind)
    inference.external |= set(site_of.values())
    return [_argument(inference, ty, (i,), site_of) for i, ty in enumerate(inference.arg_types)]


def _may_alias(
    aliasing: Aliasing | None, a: tuple[Path, T.Type, bool], b: tuple[Path, T.Type, bool]
) -> bool:
    if aliasing is not None:  # the caller knows
        return any(a[0] in group and b[0] in group for group in aliasing)
    # typeof describes an argument exactly; inside a list the type is a join of elements,
    # and an empty list fits any element type.  Two containers can be one object only if
    # some exact type fits both positions.
    (_, ta, exact_a), (_, tb, exact_b) = a, b
    if exact_a and exact_b:
        return ta == tb
    if exact_a:
        return is_subtype(ta, tb)
    if exact_b:
        return is_subtype(tb, ta)
    return True


def _argument(
    inference: Inference, ty: T.Type, path: Path, site_of: dict[Path, int]
) -> T.Type:
    match ty:
        case T.List() | T.Set() | T.Dict():
            site = site_of[path]
            for i, slot in enumerate(_slot_types(ty)):
                inference.store(site, i, _argument(inference, slot, path + (i,), site_of))
            return Ref(_kind_of(ty), frozenset({site}))
        case T.Tuple(items=items, cls=cls):
            return T.Tuple(
                tuple(_argument(inference, x, path + (i,), site_of) for i, x in enumerate(items)),
                cls,
            )
        case Iter(item=item, cls=cls):
            return Iter(_argument(inference, item, path + ("iter",), site_of), cls)
        case BoundMethod(self_type=receiver, function=fn):
            return BoundMethod(_argument(inference, receiver, path + ("self",), site_of), fn)
    return ty


def callee_aliasing(
    inference: Inference, params: list[T.Type], concrete: tuple[T.Type, ...]
) -> Aliasing:
    """Which container positions of a callee's arguments may be one object, as classes."""
    sites: dict[Path, set[int]] = {}
    for i, p in enumerate(params):
        _occurrence_sites(inference, p, (i,), frozenset(), sites)
    found: list[Occurrence] = []
    for i, ty in enumerate(concrete):
        _occurrences(ty, (i,), True, found)
    paths = [path for path, _, _, _ in found]
    groups: list[set[Path]] = []
    for path in paths:
        mine = sites.get(path, set())
        joined = [g for g in groups if any(sites.get(q, set()) & mine for q in g)]
        merged = {path}.union(*joined)
        groups = [g for g in groups if g not in joined] + [merged]
    return frozenset(frozenset(g) for g in groups)


def _occurrence_sites(
    inference: Inference,
    ty: T.Type,
    path: Path,
    stack: frozenset[int],
    out: dict[Path, set[int]],
) -> None:
    # Mirrors Inference.resolve(): the container at a path of the resolved type may be any
    # object from the union of sites found at that path.
    match ty:
        case Ref(sites=sites):
            if sites & stack:
                return
            out.setdefault(path, set()).update(sites)
            for s in sites:
                for i, slot in enumerate(inference.sites[s].slots):
                    _occurrence_sites(inference, slot, path + (i,), stack | sites, out)
        case T.Tuple(items=items):
            for i, item in enumerate(items):
                _occurrence_sites(inference, item, path + (i,), stack, out)
        case Iter(item=item):
            _occurrence_sites(inference, item, path + ("iter",), stack, out)
        case BoundMethod(self_type=receiver):
            _occurrence_sites(inference, receiver, path + ("self",), stack, out)


class _Param:
    """A placeholder for argument binding: which argument went to which parameter."""

    def __init__(self, index: int | str) -> None:
        self.index = index


def bind(
    fn: pytypes.FunctionType, args: list[T.Type], kwargs: dict[str, T.Type]
) -> list[T.Type] | None:
    """The argument types in the order of ``fn``'s parameters (its IR's arguments)."""
    try:
        signature = code_signature(fn)
        bound = signature.bind(*map(_Param, range(len(args))), **{k: _Param(k) for k in kwargs})
    except (TypeError, ValueError):
        return None
    found: list[T.Type] = []
    for name, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            return None  # the frontend packs these into a tuple and a dict: not modelled yet
        if name in bound.arguments:
            index = t.cast(_Param, bound.arguments[name]).index
            found.append(args[index] if isinstance(index, int) else kwargs[index])
        elif is_data_value(default := given_default(param.default)) or T.is_immutable_value(
            default
        ):
            found.append(const_type(default))
        else:
            return None  # a mutable default is state shared between calls
    return found
