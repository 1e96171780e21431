"""Common-subexpression elimination of pure calls on immutable values.

Two calls are the same expression when they have the same callee, the same operands (the same
value, or equal constants: ``1`` and ``1.0`` differ) and the same keyword names.  When one of
them dominates the other, the dominated one is deleted and its uses read the dominating one's
result.  Blocks are visited in reverse postorder, which puts every dominator first, so each
call is compared only with the calls already seen.

Only some pure calls may be merged:

* the surviving call's result type must be immutable (``is_immutable_type``: scalars, strings,
  ``None``, constants and tuples of those).  Two ``np.sin(x)`` calls return two fresh arrays;
  merged, they would be one array, and an in-place update of one would change the other.
  (The merged call may be typed less precisely, say ``any``: it computes the same value.)
* every argument's type must be immutable too.  A pure call may read the contents of a mutable
  argument, and those can change between the two calls: ``len(xs)`` before and after
  ``xs.append(1)`` are different numbers, as are ``a[0]`` before and after ``a[0] = 2``.
  Merging reads of mutable memory would need alias analysis, which this pass does not do.
* the surviving call's type must be a subtype of the merged one's, so every use stays well
  typed.

One kind of call on a mutable value is merged too: two equal *views*, ``x[:-1]`` and
``x[:-1]`` of one array by one constant basic index (slices, ints, ``None``, ``...``), in one
block with only pure calls between them, where every use of either result is a pure call
that does not look at identity (``is``, ``id``).  Nothing writes into either view, and nothing
writes between the two reads of ``x``: one view serves both, whether NumPy made views or an
array class made copies.  (Rosenbrock's ``(1 - x[:-1]) ** 2`` beside ``x[:-1] ** 2``: one
slice, and in a derived rule one view of the fdata.)
"""

from __future__ import annotations

import operator
import typing as t

import attrs

from gibbous.ir.cfg import DominatorTree, dominator_tree, reverse_postorder
from gibbous.ir.core import Call, Constant, Function, Value, guard_of
from gibbous.ir.purity import is_immutable_type, is_pure_call
from gibbous.ir.types import Array, Const, is_subtype
from gibbous.passes.manager import register_pass

_Key = tuple[object, ...]


@register_pass
@attrs.frozen
class CommonSubexpressionElimination:
    name: t.ClassVar[str] = "cse"
    description: t.ClassVar[str] = (
        "merge identical pure calls on immutable values where one dominates the other"
    )

    def run(self, f: Function) -> bool:
        dom = dominator_tree(f)
        seen: dict[_Key, list[Call]] = {}
        changed = False
        for block in reverse_postorder(f):
            views: dict[_Key, Call] = {}  # in this block, since the last impure call
            for call in block.calls:
                if _view_candidate(call):
                    key = _key(call)
                    earlier_view = views.get(key)
                    if earlier_view is not None and is_subtype(earlier_view.type, call.type):
                        call.result.replace_all_uses_with(earlier_view.result)
                        call.erase()
                        changed = True
                    else:
                        views[key] = call
                    continue
                if not is_pure_call(call):
                    views.clear()
                if not _candidate(call):
                    continue
                key = _key(call)
                earlier = _dominating(seen.get(key, ()), call, dom)
                if earlier is not None:
                    call.result.replace_all_uses_with(earlier.result)
                    call.erase()
                    changed = True
                elif is_immutable_type(call.type):
                    # Only a call known to return an immutable value may stand for others.
                    seen.setdefault(key, []).append(call)
        return changed


def _dominating(candidates: t.Iterable[Call], call: Call, dom: DominatorTree) -> Call | None:
    block = call.parent
    for c in candidates:
        # In the same block, seen means earlier; otherwise c's block must dominate call's.
        available = c.parent is block or (
            c.parent is not None and block is not None and dom.dominates(c.parent, block)
        )
        if available and is_subtype(c.type, call.type):
            return c
    return None


def _candidate(call: Call) -> bool:
    # A guarded call's result exists on its normal side only, and it must stay to raise.
    if guard_of(call) is not None:
        return False
    return all(is_immutable_type(v.type) for v in call.operands[1:]) and is_pure_call(call)


_BASIC = (int, slice, type(None), type(Ellipsis))
_IDENTITY = (operator.is_, operator.is_not, id)


def _view_candidate(call: Call) -> bool:
    """``x[index]`` of an array by a constant basic index, its result only read by pure calls
    that do not look at identity (see the module's doc)."""
    callee = call.callee
    if not (isinstance(callee, Constant) and callee.value is operator.getitem):
        return False
    if len(call.args) != 2 or call.kwnames or guard_of(call) is not None:
        return False
    x, index = call.args
    if not isinstance(x.type, Array) or not isinstance(index, Constant):
        return False
    items = index.value if type(index.value) is tuple else (index.value,)
    if not all(type(i) in _BASIC for i in items):
        return False
    for use in call.result.uses:
        user = use.user
        if not isinstance(user, Call) or not is_pure_call(user):
            return False
        if isinstance(user.callee, Constant) and user.callee.value in _IDENTITY:
            return False
    return True


def _key(call: Call) -> _Key:
    return (call.kwnames, *map(_operand_key, call.operands))


def _operand_key(v: Value) -> object:
    # Equal constants are one operand whatever object holds them; other values by identity.
    return ("const", Const(v.value)) if isinstance(v, Constant) else ("value", v)


__all__ = ["CommonSubexpressionElimination"]
