"""The abstract interpreter: a worklist over blocks, with types for values.

``gibbous.infer`` (its package docstring) describes the algorithm; this module runs
it for one function and argument types.  Calls go to a container-aware handler
(``handlers``), to a user function inferred recursively (its arguments bound and their
aliasing handed down by ``arguments``), or to the type rule.
"""

from __future__ import annotations

import inspect
import operator
import types as pytypes
import typing as t

from gibbous.ir.exceptions import GibbousError
from gibbous.ir import types as T
from gibbous.ir.cfg import reverse_postorder
from gibbous.ir.core import (
    Block,
    Branch,
    Guard,
    Call,
    Constant,
    Function,
    Jump,
    Result,
    Return,
    Value,
)
from gibbous.infer.abstract import (
    SLOTS,
    STOP,
    OrStop,
    Ref,
    Site,
    _container,
    _has_containers,
    _join_rule_types,
    _kind_of,
    _opaque,
    _slot_types,
)
from gibbous.infer.arguments import bind, callee_aliasing, entry_types
from gibbous.infer.cache import InferenceCache, Signature, Summary
from gibbous.infer.handlers import R, _FRAME, _handler
from gibbous.infer.implementations import implementation
from gibbous.infer.typed_copy import typed_copy
from gibbous.infer.typerules.table import (
    BoundMethod,
    Iter,
    core_type,
    lookup_type_rule,
    result_type,
)
from gibbous.infer.typerules.base import (
    const_type,
    is_inert,
    is_subtype,
    truthiness,
    tuple_method,
)
from gibbous.infer.typerules.base import join as rule_join
from gibbous.infer.typerules.base import widen as rule_widen
from gibbous.infer.typerules.containers import iter_item

# Block arguments that changed this often have their constants widened; this often, they give
# up and become Any.  Sites likewise.
WIDEN_AFTER = 3
GIVE_UP_AFTER = 8
MAX_STEPS = 100_000


class InferenceError(GibbousError):
    """Type inference failed to converge (a bug: widening should make that impossible)."""


# --------------------------------------------------------------------------------------------
# The abstract interpreter


class Inference:
    def __init__(
        self,
        f: Function,
        arg_types: tuple[T.Type, ...],
        callee_ir: t.Callable[[object], Function | None] | None,
        cache: InferenceCache,
        aliasing: frozenset[frozenset[tuple[object, ...]]] | None,
    ) -> None:
        self.f = f
        self.arg_types = arg_types
        self.callee_ir = callee_ir
        self.cache = cache
        self.aliasing = aliasing
        self.sites: list[Site] = []
        self.site_ids: dict[object, int] = {}
        self.values: dict[Value, T.Type] = {}
        self.inputs: dict[Block, list[T.Type]] = {}
        self.changes: dict[Block, int] = {}
        self.returned: T.Type = T.BOTTOM
        self.order = reverse_postorder(f)
        self.position = {b: i for i, b in enumerate(self.order)}
        self.visited: set[Block] = set()
        self.pending: set[int] = set()
        self.dirty = False  # a site changed while visiting the current block
        # Sites whose containers code outside this function may hold: the arguments' (the
        # caller has them), constants' (globals).  Unknown code may change them at any call.
        self.external: set[int] = set()
        self.runs_unknown_code = False

    # -- driver --------------------------------------------------------------------------

    def run(self) -> None:
        self.inputs[self.f.entry] = entry_types(self)
        self.pending.add(0)
        steps = 0
        while self.pending:
            steps += 1
            if steps > MAX_STEPS:
                raise InferenceError(f"type inference of {self.f.name} did not converge")
            index = min(self.pending)
            self.pending.remove(index)
            self.dirty = False
            self._visit(self.order[index])
            if self.dirty:
                # Element types grew: every block reading them must be looked at again.
                self.pending |= {self.position[b] for b in self.visited}

    def _visit(self, block: Block) -> None:
        self.visited.add(block)
        for arg, ty in zip(block.args, self.inputs[block]):
            self._define(arg, ty, block)
        for op in block.ops:
            if isinstance(op, Call):
                found = self._call(op)
                self._define(op.result, self.join(self.values.get(op.result, T.BOTTOM), found), block)
            elif isinstance(op, Jump):
                self._flow(op.target, [self.value(a) for a in op.args])
            elif isinstance(op, Guard):  # the call may return, or raise
                self._flow(op.normal, [self.value(a) for a in op.normal_args])
                self._flow(op.handler, [self.value(a) for a in op.handler_args])
            elif isinstance(op, Branch):
                taken = self.condition(op)
                for index, target in enumerate(op.successors):
                    if taken is None or taken == (index == 0):
                        edge = [self._narrow(a, op.cond, index == 0) for a in op.args_for(index)]
                        self._flow(target, edge)
            elif isinstance(op, Return):
                self.returned = self.join(self.returned, self.value(op.value))

    def _define(self, v: Value, ty: T.Type, block: Block) -> None:
        if self.values.get(v) == ty:
            return
        self.values[v] = ty
        # Blocks using v further down (it dominates them) must see its new type.
        for user in v.users:
            where = user.parent
            if where is not None and where is not block and where in self.inputs:
                self.pending.add(self.position[where])

    def condition(self, op: Branch) -> bool | None:
        """The branch's direction when its condition is known (a Bottom one follows both)."""
        cond = self.value(op.cond)
        return None if isinstance(cond, T.Bottom) else truthiness(self.resolve(cond))

    def _flow(self, target: Block, incoming: list[T.Type]) -> None:
        if len(incoming) != len(target.args):
            return  # broken IR: the verifier reports it
        old = self.inputs.get(target)
        new = incoming if old is None else [self.join(o, i) for o, i in zip(old, incoming)]
        if new == old:
            return
        n = self.changes[target] = self.changes.get(target, 0) + 1
        if old is not None and n > WIDEN_AFTER:
            new = [ty if ty == o else self.widen(ty) for ty, o in zip(new, old)]
        if old is not None and n > GIVE_UP_AFTER:
            new = [ty if ty == o else self._give_up(ty) for ty, o in zip(new, old)]
        self.inputs[target] = new
        self.pending.add(self.position[target])

    def _give_up(self, ty: T.Type) -> T.Type:
        self.escape(ty)
        return T.ANY

    def _narrow(self, arg: Value, cond: Value, taken: bool) -> T.Type:
        """``arg``'s type along a branch edge: ``is_stop(v)`` tells ``v`` from ``STOP``."""
        ty = self.value(arg)
        test = _stop_test(cond)
        if test is None or test[0] is not arg or not isinstance(ty, OrStop):
            return ty
        return STOP if taken == test[1] else ty.item

    # -- values ----------------------------------------------------------------------------

    def value(self, v: Value) -> T.Type:
        if isinstance(v, Constant):
            return self._constant(v)
        return self.values.get(v, T.BOTTOM)

    def _constant(self, c: Constant) -> T.Type:
        if not _has_containers(c.type):
            return c.type
        # A list held as a constant is a global anyone may change: its elements are unknown,
        # and it may be one of the arguments.
        found = self.abstractify(c.type, ("constant", id(c)), self.aliases(*self.inputs[self.f.entry]))
        self.external |= self.reach(found)
        self.escape(found)
        return found

    def _call(self, op: Call) -> T.Type:
        callee = self.value(op.callee)
        args = [self.value(a) for a in op.args]
        kwargs = {k: self.value(v) for k, v in op.kwargs.items()}
        if any(isinstance(a, T.Bottom) for a in (callee, *args, *kwargs.values())):
            return T.BOTTOM
        match callee:
            case BoundMethod(self_type=receiver, function=fn):
                args = [receiver, *args]
            case T.Const(value=fn):
                pass
            case _:
                self.unknown_code(callee, *args, *kwargs.values())
                return T.ANY
        handler = _handler(fn)
        if handler is not None:
            found = handler(self, op, fn, args, kwargs)
            if found is not None:
                return found
        if isinstance(fn, pytypes.FunctionType) and lookup_type_rule(fn) is None:
            return self._call_function(op, fn, args, kwargs)
        code = implementation(fn)
        if code is not None and lookup_type_rule(fn) is None:
            return self._call_function(op, code, args, kwargs)
        return self._call_with_rule(op, fn, args, kwargs)

    def _call_with_rule(
        self, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
    ) -> T.Type:
        concrete = [self.resolve(a) for a in args]
        concrete_kw = {k: self.resolve(v) for k, v in kwargs.items()}
        found = result_type(T.Const(fn), concrete, concrete_kw)
        spec = lookup_type_rule(fn)
        operands = [*args, *kwargs.values()]
        runs_code = not all(map(is_inert, [*concrete, *concrete_kw.values()]))
        if spec is None or runs_code:
            self.unknown_code(*operands)
        elif spec.stores:
            self.escape(*operands)  # a store we do not model: what it was given may change
        elif _opaque(found) and self.reach(*operands):
            self.escape(*operands)  # the result may hold them somewhere we cannot see
        return self.abstractify(found, ("call", id(op)), self.aliases(*operands))

    # -- calls of user functions -------------------------------------------------------------

    def _call_function(
        self, op: Call, fn: pytypes.FunctionType, args: list[T.Type], kwargs: dict[str, T.Type]
    ) -> T.Type:
        if fn.__code__.co_flags & inspect.CO_GENERATOR:
            # Differentiated, a generator is a frame stepped by its resume function (the
            # lowering of gibbous.ir.runtime); what it yields is known step by step only.
            self.unknown_code(*args, *kwargs.values())
            return _FRAME
        ir = self.callee_ir(fn) if self.callee_ir is not None else None
        params = bind(fn, args, kwargs) if ir is not None else None
        if ir is None or params is None or len(params) != len(ir.args):
            self.unknown_code(*args, *kwargs.values())
            return T.ANY
        concrete = tuple(self.resolve(p) for p in params)
        key: Signature = (fn, concrete, callee_aliasing(self, params, concrete))
        if any(active[0] is fn for active in self.cache.active):
            # Recursion (under any argument types, which could otherwise grow without end, as
            # in f(t) calling f((t,))): not known until the outer inference ends.
            self.unknown_code(*params)
            return T.ANY
        summary = self.cache.summaries.get(key)
        if summary is None:
            self.cache.active.add(key)
            try:
                callee = Inference(ir, concrete, self.callee_ir, self.cache, key[2])
                callee.run()
                self.cache.functions[key] = typed_copy(callee)
                summary = callee.summary()
            finally:
                self.cache.active.discard(key)
            self.cache.summaries[key] = summary
        if summary.runs_unknown_code:
            self.unknown_code()
        aliases = self.aliases(*params)
        for param, final in zip(params, summary.arguments):
            self.absorb(param, final, aliases, set())
        result = self.abstractify(summary.result, ("call", id(op)), aliases)
        if summary.runs_unknown_code:
            self.external |= self.reach(result)  # it may be anything unknown code keeps
        return result

    def summary(self) -> Summary:
        entry = self.inputs[self.f.entry]
        return Summary(
            self.resolve(self.returned),
            tuple(self.resolve(a) for a in entry),
            self.runs_unknown_code,
        )

    def absorb(
        self,
        param: T.Type,
        final: T.Type,
        aliases: dict[type, frozenset[int]],
        seen: set[tuple[int, int]],
    ) -> None:
        """Grow ``param``'s sites by what a callee stored into it (its ``final`` type)."""
        match param, final:
            case Ref(kind=kind, sites=sites), (T.List() | T.Set() | T.Dict()) if _kind_of(
                final
            ) is kind:
                for s in sites:
                    for i, slot in enumerate(_slot_types(final)):
                        self._absorb_slot(s, i, slot, aliases, seen)
            case T.Tuple(items=items), T.Tuple(items=finals) if len(items) == len(finals):
                for item, item_final in zip(items, finals):
                    self.absorb(item, item_final, aliases, seen)

    def _absorb_slot(
        self,
        site: int,
        index: int,
        final: T.Type,
        aliases: dict[type, frozenset[int]],
        seen: set[tuple[int, int]],
    ) -> None:
        if (site, index) in seen:
            return
        seen.add((site, index))
        current = self.sites[site].slots[index]
        if is_subtype(final, self.resolve(current)):
            return
        self.absorb(current, final, aliases, seen)  # containers inside, changed in place
        if not is_subtype(final, self.resolve(self.sites[site].slots[index])):
            self.store(site, index, self.abstractify(final, ("absorb", site, index), aliases))

    # -- sites -------------------------------------------------------------------------------

    def site(self, origin: object, kind: type) -> int:
        """The site of the containers made at ``origin``."""
        found = self.site_ids.get(origin)
        if found is None:
            found = self.site_ids[origin] = len(self.sites)
            self.sites.append(Site(kind, [T.BOTTOM] * SLOTS[kind], origin))
        return found

    def fresh(self, op: Call, kind: type, slots: t.Sequence[T.Type]) -> Ref:
        """A container made by ``op``: its own site, holding ``slots``."""
        site = self.site(("call", id(op)), kind)
        for i, ty in enumerate(slots):
            self.store(site, i, ty)
        return Ref(kind, frozenset({site}))

    def store(self, site: int, index: int, ty: T.Type) -> None:
        """Record that a container from ``site`` may hold ``ty`` in slot ``index``."""
        s = self.sites[site]
        old = s.slots[index]
        # Like typeof([1]), a mutable container's element type forgets constants.
        new = self.join(old, self.widen(ty))
        if new == old:
            return
        s.changes += 1
        if s.changes > WIDEN_AFTER:
            new = self.widen(new)
        if s.changes > GIVE_UP_AFTER:
            new = self._give_up(new)
        s.slots[index] = new
        self.dirty = True

    def slot(self, ref: Ref, index: int) -> T.Type:
        return self.join_all(self.sites[s].slots[index] for s in ref.sites)

    def reach(self, *tys: T.Type) -> set[int]:
        """The sites of the containers reachable from values of ``tys``."""
        seen: set[int] = set()
        stack = list(tys)
        while stack:
            match stack.pop():
                case Ref(sites=sites):
                    for s in sites - seen:
                        seen.add(s)
                        stack.extend(self.sites[s].slots)
                case T.Tuple(items=items):
                    stack.extend(items)
                case Iter(item=item, source=source):
                    stack += [item, source]
                case OrStop(item=item):
                    stack.append(item)
                case BoundMethod(self_type=receiver):
                    stack.append(receiver)
        return seen

    def aliases(self, *tys: T.Type) -> dict[type, frozenset[int]]:
        by_kind: dict[type, set[int]] = {}
        for s in self.reach(*tys):
            by_kind.setdefault(self.sites[s].kind, set()).add(s)
        return {k: frozenset(v) for k, v in by_kind.items()}

    def unknown_code(self, *given: T.Type) -> None:
        """A call may run code we know nothing of, handed ``given``.

        It may change any container it is given, and any container code outside this function
        can reach: the arguments', globals', and what was stored into them.
        """
        self.runs_unknown_code = True
        outside = [Ref(self.sites[s].kind, frozenset({s})) for s in self.external]
        self.escape(*given, *outside)

    def escape(self, *tys: T.Type) -> None:
        """Forget the element types of every container reachable from ``tys``."""
        for s in self.reach(*tys):
            site = self.sites[s]
            if any(not isinstance(slot, T.Any) for slot in site.slots):
                site.slots = [T.ANY] * len(site.slots)
                self.dirty = True

    def abstractify(
        self,
        ty: T.Type,
        origin: object,
        aliases: dict[type, frozenset[int]],
        path: tuple[object, ...] = (),
    ) -> T.Type:
        """``ty`` with each container given a site of its own, or any of ``aliases``' sites.

        A rule's result type says nothing of identity, so a container in it may be new or
        any container of its kind reachable from the call's arguments.
        """
        match ty:
            case T.List() | T.Set() | T.Dict():
                kind = _kind_of(ty)
                site = self.site((origin, path), kind)
                for i, slot in enumerate(_slot_types(ty)):
                    self.store(site, i, self.abstractify(slot, origin, aliases, path + (i,)))
                return Ref(kind, frozenset({site}) | aliases.get(kind, frozenset()))
            case T.Tuple(items=items, cls=cls):
                return T.Tuple(
                    tuple(
                        self.abstractify(x, origin, aliases, path + (i,))
                        for i, x in enumerate(items)
                    ),
                    cls,
                )
            case Iter(item=item, cls=cls):
                return Iter(self.abstractify(item, origin, aliases, path + ("iter",)), cls)
            case BoundMethod(self_type=receiver, function=fn):
                return BoundMethod(self.abstractify(receiver, origin, aliases, path + ("self",)), fn)
        return ty

    # -- the lattice with sites -------------------------------------------------------------

    def resolve(self, ty: T.Type, stack: frozenset[int] = frozenset()) -> T.Type:
        """The rule-level type of ``ty``: containers typed by their sites' slots."""
        match ty:
            case Ref(kind=kind, sites=sites):
                if sites & stack:
                    return T.ANY  # a container inside itself: cut the infinite type
                inner = stack | sites
                slots = [
                    _join_rule_types(self.resolve(self.sites[s].slots[i], inner) for s in sites)
                    for i in range(SLOTS[kind])
                ]
                return _container(kind, slots)
            case T.Tuple(items=items, cls=cls):
                return T.Tuple(tuple(self.resolve(i, stack) for i in items), cls)
            case Iter(item=item, cls=cls):
                return Iter(self.resolve(item, stack), cls)  # the source is inference's own
            case BoundMethod(self_type=receiver, function=fn):
                return BoundMethod(self.resolve(receiver, stack), fn)
            case OrStop(item=item):
                return rule_join(self.resolve(item, stack), STOP)
        return ty

    def materialize(self, ty: T.Type) -> T.Type:
        """The IR type of a value: resolved, then made of printable core types only."""
        return core_type(self.resolve(ty))

    def join(self, a: T.Type, b: T.Type) -> T.Type:
        if a == b or isinstance(b, T.Bottom):
            return a
        if isinstance(a, T.Bottom):
            return b
        match a, b:
            case Ref(), Ref() if a.kind is b.kind:
                return Ref(a.kind, a.sites | b.sites)
            case T.Tuple(), T.Tuple() if len(a.items) == len(b.items):
                cls = a.cls if issubclass(b.cls, a.cls) else b.cls if issubclass(a.cls, b.cls) else tuple
                return T.Tuple(tuple(self.join(x, y) for x, y in zip(a.items, b.items)), cls)
            case T.Const(value=tuple() as items), T.Tuple() if type(items) is tuple:
                return self.join(T.Tuple(tuple(const_type(v) for v in items)), b)
            case T.Tuple(), T.Const(value=tuple() as items) if type(items) is tuple:
                return self.join(a, T.Tuple(tuple(const_type(v) for v in items)))
            case Iter(), Iter() if a.cls is b.cls:
                return Iter(self.join(a.item, b.item), a.cls, self.join(a.source, b.source))
            case BoundMethod(), BoundMethod() if a.function is b.function:
                return BoundMethod(self.join(a.self_type, b.self_type), a.function)
            case OrStop(), OrStop():
                return OrStop(self.join(a.item, b.item))
            case OrStop(), _ if b == STOP:
                return a
            case _, OrStop() if a == STOP:
                return b
        if self.reach(a, b):
            self.escape(a, b)  # the join forgets which containers these are
        found = rule_join(self.resolve(a), self.resolve(b))
        return T.ANY if _has_containers(found) else found

    def join_all(self, tys: t.Iterable[T.Type]) -> T.Type:
        result: T.Type = T.BOTTOM
        for ty in tys:
            result = self.join(result, ty)
        return result

    def widen(self, ty: T.Type) -> T.Type:
        match ty:
            case T.Tuple(items=items, cls=cls):
                return T.Tuple(tuple(self.widen(i) for i in items), cls)
            case Iter(item=item, cls=cls, source=source):
                return Iter(self.widen(item), cls, source)
            case OrStop(item=item):
                return OrStop(self.widen(item))
            case BoundMethod(self_type=receiver, function=fn):
                return BoundMethod(self.widen(receiver), fn)
            case Ref():
                return ty
        return rule_widen(ty)

    # -- container helpers for the handlers ------------------------------------------------

    def element(self, ty: T.Type) -> T.Type | None:
        """The type of what iterating over a value of ``ty`` gives (``None``: unknown)."""
        match ty:
            case T.Tuple(items=items, cls=cls) if tuple_method(cls, "__iter__"):
                return self.join_all(items)
            case Ref(kind=kind):
                return self.slot(ty, 0)  # items, or a dict's keys
            case Iter(item=item, cls=_):
                return item
        if self.reach(ty):
            return None
        return iter_item(self.resolve(ty))

    def element_or_escape(self, ty: T.Type) -> T.Type:
        found = self.element(ty)
        if found is None:
            self.escape(ty)
            return T.ANY
        return found


def _stop_test(cond: Value) -> tuple[Value, bool] | None:
    """``(v, True)`` if ``cond`` is ``is_stop(v)``; through ``truth`` and ``not_``."""
    if not isinstance(cond, Result):
        return None
    op = cond.op
    if not isinstance(op.callee, Constant) or len(op.args) != 1:
        return None
    fn = op.callee.value
    if fn is R.is_stop:
        return op.args[0], True
    if fn is operator.truth:
        return _stop_test(op.args[0])
    if fn is operator.not_:
        inner = _stop_test(op.args[0])
        return None if inner is None else (inner[0], not inner[1])
    return None
