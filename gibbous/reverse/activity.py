"""Activity analysis: which values carry a derivative, and which calls need a rule.

A value is **active** when its type can carry a tangent and

* it is an argument (the function's own callable counts as one: gradients with respect to the
  arrays a closure captures land in its tangent), or it is computed from an active value, or
* its type carries fdata (arrays, lists, mutable objects, ``Any``) and it is *exposed*: an
  active call may write into it, or alias it, so every alias must see one fdata, made where
  the value is made (``z = np.zeros(3); z[0] = x``).

A value is exposed when it, or a value that may alias it (the result of a call it is an
operand of, a block argument it is passed to), is an operand of an impure call that has an
active operand, is an operand of an active call whose result carries fdata and may alias it
(not ``returns_fresh``: ``X @ W`` leaves a constant ``X`` inactive), or is returned.
So ``iter(range(n))`` and what it yields stay inactive, while ``np.zeros(3)`` written by
``z[0] = x`` does not.

A call is **active** when its result is, or when it may mutate (it is not pure by
``gibbous.ir.purity``, nor known to mutate nothing) an active operand that carries fdata.
Inactive calls run as plain primal code: no rule, no stack traffic.  ``Any`` may carry
anything, so precise types are what make code inactive.
"""

from __future__ import annotations

import operator
import typing as t

import attrs
import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.core import (
    BlockArgument,
    Call,
    Constant,
    Function,
    Result,
    Return,
    Value,
    edge_args,
)
from gibbous.ir.names import CallableSet
from gibbous.ir.purity import is_pure_call, returns_fresh
from gibbous.tangents.types import NO_TANGENT_TYPE, fdata_type, rdata_type, tangent_type

#: Callables taken to write into none of their arguments, whatever their types: not pure in
#: the purity table's sense because they may run user code (``__bool__``, ``__repr__``) or have
#: effects elsewhere (``print``), but a truth test or a ``__repr__`` that mutates arrays is not
#: worth a rule call per loop test (and printing an array must not need a rule).
WRITE_NOTHING: CallableSet[object] = CallableSet([
    runtime.is_stop,
    runtime.check_unpack,  # raises or does nothing: impure only so that it stays
    operator.truth,
    operator.not_,
    bool,
    isinstance,
    len,
    type,
    id,
    print,
    repr,
    str,
    format,
    range,  # (calls its operands' __index__)
    operator.index,
    slice,
    issubclass,  # (``__subclasscheck__``: NumPy's ``issubclass(a.dtype.type, np.inexact)``)
    hasattr,  # (runs a property, as ``getattr`` does)
    callable,  # (reads the type's ``__call__``)
    operator.contains,  # (``k in d``: these five call their items' __eq__)
    list.index,
    list.count,
    tuple.index,
    tuple.count,
])


def may_have_tangent(ty: T.Type) -> bool:
    return tangent_type(ty) != NO_TANGENT_TYPE


def carries_fdata(ty: T.Type) -> bool:
    return may_have_tangent(ty) and fdata_type(ty) != NO_TANGENT_TYPE


def carries_rdata(ty: T.Type) -> bool:
    return may_have_tangent(ty) and rdata_type(ty) != NO_TANGENT_TYPE


def is_precise(ty: T.Type) -> bool:
    """Whether the type says exactly what kind of tangent its values have (no ``Any`` in it)."""
    return not isinstance(ty, T.Any) and _no_any(tangent_type(ty))


def _no_any(ty: T.Type) -> bool:
    if isinstance(ty, T.Any):
        return False
    if isinstance(ty, T.Tuple):
        return all(map(_no_any, ty.items))
    if isinstance(ty, (T.List, T.Set)):
        return _no_any(ty.item)
    if isinstance(ty, T.Dict):
        return _no_any(ty.value)
    return True


@attrs.frozen(eq=False)
class Activity:
    values: frozenset[Value]  # active values, constants included
    calls: frozenset[Call]
    self_value: object

    def is_active(self, v: Value) -> bool:
        return v in self.values

    def is_self(self, v: Value) -> bool:
        return isinstance(v, Constant) and v.value is self.self_value


def may_write(op: Call) -> bool:
    """Whether ``op`` may write into an operand: not a pure call, nor one taken to write nothing."""
    callee = op.callee
    if isinstance(callee, Constant) and callee.value in WRITE_NOTHING:
        return False
    return not is_pure_call(op)


def _into_keeper(op: Call) -> bool:
    """A set or an array of dtype object made of its operands: it keeps their values and no
    derivative, so its rule must see them (and refuse a number with a derivative) rather than
    lose it unseen."""
    ty = op.type
    sets = (set, frozenset)
    if isinstance(ty, T.Array):
        return ty.dtype is not None and np.dtype(ty.dtype) == np.dtype(object)
    return isinstance(ty, T.Set) or (isinstance(ty, T.Object) and issubclass(ty.cls, sets))


def analyse(
    f: Function, self_value: object, written: t.Collection[int] = frozenset()
) -> Activity:
    """The active values and calls of ``f``; ``self_value`` is the callable ``f`` is the IR of;
    ``written``, the ids of objects another function of the build differentiates through
    (``gibbous.reverse.shared_objects``): constants holding them are active here too."""
    incoming: dict[BlockArgument, list[Value]] = {}
    for b in f.blocks:
        term = b.terminator
        for i, target in enumerate(term.successors if term is not None else ()):
            for param, v in zip(target.args, edge_args(term, i)):  # type: ignore[arg-type]
                incoming.setdefault(param, []).append(v)
    calls = list(f.calls())
    constants = [v for op in f.operations() for v in op.operands if isinstance(v, Constant)]
    values: list[Value] = [*constants]
    for b in f.blocks:
        values += [*b.args, *(op.result for op in b.calls)]

    # Every load of a global is a constant of its own, but they are one object: a write
    # through one load must be seen through the others (``G[0] = x; return G[0]``).
    same_object: dict[int, list[Value]] = {}
    for c in constants:
        if carries_fdata(c.type):
            same_object.setdefault(id(c.value), []).append(c)

    def sources(v: Value) -> t.Sequence[Value]:
        """The values ``v`` is computed from, or may alias."""
        if isinstance(v, Result):
            return v.op.operands
        if isinstance(v, BlockArgument):
            return incoming.get(v, ())
        if isinstance(v, Constant):
            return same_object.get(id(v.value), ())
        return ()

    active: set[Value] = set()
    while True:
        exposed = _exposed(f, calls, active, sources)
        before = len(active)
        changed = True
        while changed:
            changed = False
            for v in values:
                if v in active or not may_have_tangent(v.type):
                    continue
                if (
                    (isinstance(v, BlockArgument) and v.block is f.entry)
                    or (isinstance(v, Constant) and v.value is self_value)
                    or any(s in active for s in sources(v))
                    or (carries_fdata(v.type) and v in exposed)
                    or (isinstance(v, Constant) and id(v.value) in written)
                ):
                    active.add(v)
                    changed = True
        if len(active) == before:
            break
    active_calls = frozenset(
        op
        for op in calls
        if op.result in active
        or (may_write(op) and any(v in active and carries_fdata(v.type) for v in op.operands))
        or (_into_keeper(op) and any(v in active for v in op.operands[1:]))
    )
    return Activity(frozenset(active), active_calls, self_value)


def _exposed(
    f: Function,
    calls: list[Call],
    active: set[Value],
    sources: t.Callable[[Value], t.Sequence[Value]],
) -> set[Value]:
    """Values an active call may write into or alias, or that leave the function, and every
    value they may alias."""
    todo: list[Value] = []
    for op in calls:
        if (may_write(op) and any(v in active for v in op.operands)) or (
            op.result in active and carries_fdata(op.result.type) and not returns_fresh(op)
        ):
            todo += op.operands
    todo += [b.terminator.value for b in f.blocks if isinstance(b.terminator, Return)]
    exposed: set[Value] = set()
    while todo:
        v = todo.pop()
        if v in exposed or not carries_fdata(v.type):
            continue
        exposed.add(v)
        todo += sources(v)
    return exposed
