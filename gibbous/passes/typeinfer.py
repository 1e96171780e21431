"""Type inference: a typed copy of untyped IR, specialised on the types of its arguments.

    typed = infer_types(f, [Array("float64", 2), INT], callee_ir=function_ir)

The frontend's IR types every value ``Any``.  ``infer_types`` interprets it abstractly over the
control-flow graph, with types for values, and builds a copy in which every value has the type
it found.  Value types are frozen at creation, so inference runs once per signature and never
again after other transforms (docs/decisions.md).  docs/typeinfer.md walks through the
algorithm with an example; in short:

* **Worklist over blocks** in reverse postorder.  Block arguments join the types flowing in
  along every edge; a block is visited again whenever they grow.  After a few changes an
  argument's constants are widened to their types, and after more it becomes ``Any``, so
  inference always terminates.
* **Calls** are typed by the rule table (``gibbous.rules.typerules``).  A branch on a constant
  condition follows one edge; the copy jumps instead and leaves out blocks never reached.
* **Methods**: ``getattr(x, "sum")`` on an array is a ``BoundMethod``; calling it calls the rule
  for ``numpy.ndarray.sum`` with ``x`` first, and the copy calls ``numpy.ndarray.sum(%x, ...)``.
* **User functions** (``callee_ir(fn)`` gives their IR) are inferred recursively, memoised by
  function, argument types and argument aliasing; a call back into a function being inferred
  (recursion) is ``Any``.
* **Containers that mutate**: a list is not the value of one instruction but an object that
  ``append`` changes through every alias.  Each list, set and dict value is typed by the
  *allocation sites* it may come from (``Ref``); a site holds the element types stored into any
  container made there, and the type of every value from that site is read off it at the end.
  Whatever inference cannot follow (a container passed to code that has no rule, or joined
  with an unrelated type) *escapes*: its sites' element types become ``Any``.
"""

from __future__ import annotations

import inspect
import operator
import types as pytypes
import typing as t

import attrs

from gibbous.ir.exceptions import GibbousError
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.cfg import reverse_postorder
from gibbous.ir.core import (
    Block,
    Branch,
    Guard,
    Call,
    Constant,
    Function,
    Jump,
    Raise,
    Result,
    Return,
    Value,
)
from gibbous.rules import typerules_frontend as frontend_rules
from gibbous.rules.typerules import (
    BoundMethod,
    Iter,
    core_type,
    lookup_type_rule,
    result_type,
)
from gibbous.rules.typerules_base import (
    VIEW_CLASSES,
    const_type,
    exact_int_dtype,
    is_data_value,
    is_inert,
    is_subtype,
    truthiness,
    tuple_method,
)
from gibbous.rules.typerules_base import join as rule_join
from gibbous.rules.typerules_base import widen as rule_widen
from gibbous.rules.typerules_containers import attribute_type, iter_item

__all__ = ["InferenceCache", "InferenceError", "Summary", "infer_types"]

R = frontend_rules.runtime  # the frontend's helpers, reached through their rules

# Block arguments that changed this often have their constants widened; this often, they give
# up and become Any.  Sites likewise.
WIDEN_AFTER = 3
GIVE_UP_AFTER = 8
MAX_STEPS = 100_000


class InferenceError(GibbousError):
    """Type inference failed to converge (a bug: widening should make that impossible)."""


# --------------------------------------------------------------------------------------------
# Abstract types private to inference


@attrs.frozen
class Ref(T.Type):
    """A ``kind`` (list, set or dict) made at one of ``sites``, and typed by them."""

    kind: type
    sites: frozenset[int]


@attrs.frozen
class OrStop(T.Type):
    """What ``next_or_stop`` returns: an ``item``, or the frontend's ``STOP`` when exhausted."""

    item: T.Type


SLOTS: dict[type, int] = {list: 1, set: 1, dict: 2}
STOP = frontend_rules.STOP


@attrs.define
class Site:
    """Where containers are made; ``slots`` join the element types stored into any of them.

    A list or set has one slot (its items), a dict two (keys, values).
    """

    kind: type
    slots: list[T.Type]
    origin: object
    changes: int = 0


@attrs.frozen
class Summary:
    """What a call of an inferred function does, in terms of its argument types.

    ``arguments`` are the argument types at the end (element types of containers grown by the
    function's mutations); ``result`` is the type of what it returns; ``runs_unknown_code``
    says whether it may call code inference knows nothing of.
    """

    result: T.Type
    arguments: tuple[T.Type, ...]
    runs_unknown_code: bool


Signature = tuple[object, tuple[T.Type, ...], frozenset[frozenset[tuple[object, ...]]]]


@attrs.define
class InferenceCache:
    """Typed copies of the user functions that inferred code calls, and what the calls do.

    Keyed by function, argument types and which container arguments may alias each other.
    """

    functions: dict[Signature, Function] = attrs.field(factory=dict)
    summaries: dict[Signature, Summary] = attrs.field(factory=dict)
    active: set[Signature] = attrs.field(factory=set)

    def typed(self, fn: object) -> list[Function]:
        """The typed copies made for ``fn``, one per signature."""
        return [g for (f, _, _), g in self.functions.items() if f is fn]


def infer_types(
    f: Function,
    arg_types: t.Sequence[T.Type],
    *,
    callee_ir: t.Callable[[object], Function | None] | None = None,
    cache: InferenceCache | None = None,
) -> Function:
    """A typed copy of ``f`` for arguments of ``arg_types``.

    ``callee_ir(fn)`` gives the untyped IR of a Python function ``f`` calls (or ``None``), so
    that calls of it are typed by inferring it too; the typed copies land in ``cache``.

    Argument types are taken as the lattice means them: an ``Int`` argument may be a bool (the
    IR has ``Bool <= Int``), which NumPy indexing treats differently from an int.
    """
    if len(arg_types) != len(f.args):
        raise ValueError(f"{f.name} takes {len(f.args)} arguments, {len(arg_types)} types given")
    inference = _Inference(f, tuple(arg_types), callee_ir, cache or InferenceCache(), None)
    inference.run()
    return inference.typed_copy()


Handler = t.Callable[["_Inference", Call, object, list[T.Type], dict[str, T.Type]], T.Type | None]
_HANDLERS: dict[int, tuple[object, Handler]] = {}


def _handles(*callables: object) -> t.Callable[[Handler], Handler]:
    """Register a container-aware handler, tried before the type rule of ``callables``."""

    def register(handler: Handler) -> Handler:
        for fn in callables:
            _HANDLERS[id(fn)] = (fn, handler)
        return handler

    return register


def _handler(fn: object) -> Handler | None:
    entry = _HANDLERS.get(id(fn))
    return entry[1] if entry is not None and entry[0] is fn else None


# --------------------------------------------------------------------------------------------
# The abstract interpreter


class _Inference:
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
        self.inputs[self.f.entry] = self._entry_types()
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
        params = _bind(fn, args, kwargs) if ir is not None else None
        if ir is None or params is None or len(params) != len(ir.args):
            self.unknown_code(*args, *kwargs.values())
            return T.ANY
        concrete = tuple(self.resolve(p) for p in params)
        key: Signature = (fn, concrete, self._aliasing(params, concrete))
        if any(active[0] is fn for active in self.cache.active):
            # Recursion (under any argument types, which could otherwise grow without end, as
            # in f(t) calling f((t,))): not known until the outer inference ends.
            self.unknown_code(*params)
            return T.ANY
        summary = self.cache.summaries.get(key)
        if summary is None:
            self.cache.active.add(key)
            try:
                callee = _Inference(ir, concrete, self.callee_ir, self.cache, key[2])
                callee.run()
                self.cache.functions[key] = callee.typed_copy()
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

    # -- arguments and aliasing ------------------------------------------------------------

    def _entry_types(self) -> list[T.Type]:
        """The arguments' types, their containers given sites: one per class of aliases."""
        found: list[tuple[tuple[object, ...], type, T.Type, bool]] = []
        for i, ty in enumerate(self.arg_types):
            _occurrences(ty, (i,), True, found)
        parent = list(range(len(found)))

        def root(i: int) -> int:
            while parent[i] != i:
                i = parent[i]
            return i

        for i, (path_i, kind_i, ty_i, exact_i) in enumerate(found):
            for j in range(i):
                path_j, kind_j, ty_j, exact_j = found[j]
                if kind_i is kind_j and self._may_alias(
                    (path_i, ty_i, exact_i), (path_j, ty_j, exact_j)
                ):
                    parent[root(i)] = root(j)
        site_of: dict[tuple[object, ...], int] = {}
        for i, (path, kind, _, _) in enumerate(found):
            site_of[path] = self._site(("argument", found[root(i)][0]), kind)
        self.external |= set(site_of.values())
        return [self._argument(ty, (i,), site_of) for i, ty in enumerate(self.arg_types)]

    def _may_alias(
        self,
        a: tuple[tuple[object, ...], T.Type, bool],
        b: tuple[tuple[object, ...], T.Type, bool],
    ) -> bool:
        if self.aliasing is not None:  # the caller knows
            return any(a[0] in group and b[0] in group for group in self.aliasing)
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

    def _argument(self, ty: T.Type, path: tuple[object, ...], site_of: dict[tuple[object, ...], int]) -> T.Type:
        match ty:
            case T.List() | T.Set() | T.Dict():
                site = site_of[path]
                for i, slot in enumerate(_slot_types(ty)):
                    self.store(site, i, self._argument(slot, path + (i,), site_of))
                return Ref(_kind_of(ty), frozenset({site}))
            case T.Tuple(items=items, cls=cls):
                return T.Tuple(
                    tuple(self._argument(x, path + (i,), site_of) for i, x in enumerate(items)), cls
                )
            case Iter(item=item, cls=cls):
                return Iter(self._argument(item, path + ("iter",), site_of), cls)
            case BoundMethod(self_type=receiver, function=fn):
                return BoundMethod(self._argument(receiver, path + ("self",), site_of), fn)
        return ty

    def _aliasing(
        self, params: list[T.Type], concrete: tuple[T.Type, ...]
    ) -> frozenset[frozenset[tuple[object, ...]]]:
        """Which container positions of a callee's arguments may be one object, as classes."""
        sites: dict[tuple[object, ...], set[int]] = {}
        for i, p in enumerate(params):
            self._occurrence_sites(p, (i,), frozenset(), sites)
        found: list[tuple[tuple[object, ...], type, T.Type, bool]] = []
        for i, ty in enumerate(concrete):
            _occurrences(ty, (i,), True, found)
        paths = [path for path, _, _, _ in found]
        groups: list[set[tuple[object, ...]]] = []
        for path in paths:
            mine = sites.get(path, set())
            joined = [g for g in groups if any(sites.get(q, set()) & mine for q in g)]
            merged = {path}.union(*joined)
            groups = [g for g in groups if g not in joined] + [merged]
        return frozenset(frozenset(g) for g in groups)

    def _occurrence_sites(
        self,
        ty: T.Type,
        path: tuple[object, ...],
        stack: frozenset[int],
        out: dict[tuple[object, ...], set[int]],
    ) -> None:
        # Mirrors resolve(): the container at a path of the resolved type may be any object
        # from the union of sites found at that path.
        match ty:
            case Ref(kind=kind, sites=sites):
                if sites & stack:
                    return
                out.setdefault(path, set()).update(sites)
                for s in sites:
                    for i, slot in enumerate(self.sites[s].slots):
                        self._occurrence_sites(slot, path + (i,), stack | sites, out)
            case T.Tuple(items=items):
                for i, item in enumerate(items):
                    self._occurrence_sites(item, path + (i,), stack, out)
            case Iter(item=item):
                self._occurrence_sites(item, path + ("iter",), stack, out)
            case BoundMethod(self_type=receiver):
                self._occurrence_sites(receiver, path + ("self",), stack, out)

    # -- sites -------------------------------------------------------------------------------

    def _site(self, origin: object, kind: type) -> int:
        found = self.site_ids.get(origin)
        if found is None:
            found = self.site_ids[origin] = len(self.sites)
            self.sites.append(Site(kind, [T.BOTTOM] * SLOTS[kind], origin))
        return found

    def fresh(self, op: Call, kind: type, slots: t.Sequence[T.Type]) -> Ref:
        """A container made by ``op``: its own site, holding ``slots``."""
        site = self._site(("call", id(op)), kind)
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
                site = self._site((origin, path), kind)
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

    # -- the typed copy ----------------------------------------------------------------------

    def typed_copy(self) -> Function:
        f = self.f
        arg_types = [(a.name, self.materialize(t_)) for a, t_ in zip(f.args, self.inputs[f.entry])]
        g = Function(f.name, arg_types, loc=f.loc, entry_name=f.entry.name)
        blocks: dict[Block, Block] = {f.entry: g.entry}
        mapped: dict[Value, Value] = dict(zip(f.args, g.args))
        narrowed: dict[Block, list[tuple[Value, T.Type]]] = {}
        incoming = self._incoming_types()
        for block in f.blocks[1:]:
            if block not in self.visited:
                continue
            copy = blocks[block] = g.add_block(block.name)
            for arg, flowing in zip(block.args, incoming[block]):
                want = self.materialize(self.values[arg])
                if T.is_subtype(flowing, want):
                    mapped[arg] = copy.add_arg(want, arg.name)
                else:
                    # Inference narrowed the argument (is_stop(v) was false on this edge): the
                    # argument takes what flows in and a cast at the top of the block narrows it.
                    mapped[arg] = copy.add_arg(flowing, arg.name)
                    narrowed.setdefault(block, []).append((arg, want))

        def operand(v: Value) -> Value:
            return Constant(v.value) if isinstance(v, Constant) else mapped[v]

        build = Builder(g)
        # Dominators first (reverse postorder), so every operand is copied before its uses.
        for block in self.order:
            if block not in self.visited:
                continue
            build.at_end(blocks[block])
            for param, want in narrowed.get(block, []):
                loc = block.ops[0].loc if block.ops else None
                cast = build.call(t.cast, object, mapped[param], type=want, name=param.name, loc=loc)
                mapped[param] = cast
            for op in block.ops:
                if isinstance(op, Call):
                    callee, args = self._method_call(op)
                    new = Call(
                        operand(callee),
                        [operand(a) for a in args],
                        {k: operand(v) for k, v in op.kwargs.items()},
                        type=self.materialize(self.values[op.result]),
                        name=op.result.name,
                        loc=op.loc,
                    )
                    build.insert(new)
                    mapped[op.result] = new.result
                elif isinstance(op, Jump):
                    build.insert(Jump(blocks[op.target], [operand(a) for a in op.args], loc=op.loc))
                elif isinstance(op, Branch):
                    build.insert(self._copy_branch(op, blocks, operand))
                elif isinstance(op, Guard):
                    build.insert(
                        Guard(
                            operand(op.guarded),
                            blocks[op.normal],
                            [operand(a) for a in op.normal_args],
                            blocks[op.handler],
                            [operand(a) for a in op.handler_args],
                            loc=op.loc,
                        )
                    )
                elif isinstance(op, Return):
                    build.insert(Return(operand(op.value), loc=op.loc))
                elif isinstance(op, Raise):
                    build.insert(Raise(operand(op.exc), loc=op.loc))
        return g

    def _incoming_types(self) -> dict[Block, list[T.Type]]:
        """For each block, the IR types of the values its taken in-edges pass, joined."""
        found: dict[Block, list[T.Type]] = {b: [T.BOTTOM] * len(b.args) for b in self.visited}
        for block in self.visited:
            term = block.terminator
            edges: list[tuple[Block, tuple[Value, ...]]] = []
            if isinstance(term, Jump):
                edges = [(term.target, term.args)]
            elif isinstance(term, Guard):
                edges = [(term.normal, term.normal_args), (term.handler, term.handler_args)]
            elif isinstance(term, Branch):
                taken = self.condition(term)
                edges = [
                    (target, term.args_for(i))
                    for i, target in enumerate(term.successors)
                    if taken is None or taken == (i == 0)
                ]
            for target, args in edges:
                if target in found and len(args) == len(target.args):
                    joined = found[target]
                    for i, v in enumerate(args):
                        joined[i] = T.join(joined[i], self.materialize(self.value(v)))
        return found

    def _method_call(self, op: Call) -> tuple[Value, tuple[Value, ...]]:
        """``%m = getattr(%x, "sum"); call %m(...)`` calls ``numpy.ndarray.sum(%x, ...)``."""
        method = self.values.get(op.callee) if not isinstance(op.callee, Constant) else None
        getter = op.callee.op if isinstance(op.callee, Result) else None
        if (
            isinstance(method, BoundMethod)
            and getter is not None
            and isinstance(getter.callee, Constant)
            and getter.callee.value is getattr
            and getter.args
        ):
            return Constant(method.function), (getter.args[0], *op.args)
        return op.callee, op.args

    def _copy_branch(
        self, op: Branch, blocks: dict[Block, Block], operand: t.Callable[[Value], Value]
    ) -> Jump | Branch:
        taken = self.condition(op)
        if taken is not None:
            index = 0 if taken else 1
            target = op.successors[index]
            return Jump(blocks[target], [operand(a) for a in op.args_for(index)], loc=op.loc)
        return Branch(
            operand(op.cond),
            blocks[op.if_true],
            [operand(a) for a in op.true_args],
            blocks[op.if_false],
            [operand(a) for a in op.false_args],
            loc=op.loc,
        )


# --------------------------------------------------------------------------------------------
# Helpers on types


def _kind_of(ty: T.Type) -> type:
    return list if isinstance(ty, T.List) else set if isinstance(ty, T.Set) else dict


def _slot_types(ty: T.Type) -> list[T.Type]:
    match ty:
        case T.List(item=item) | T.Set(item=item):
            return [item]
        case T.Dict(key=key, value=value):
            return [key, value]
    return []


def _container(kind: type, slots: list[T.Type]) -> T.Type:
    if kind is list:
        return T.List(slots[0])
    if kind is set:
        return T.Set(slots[0])
    return T.Dict(slots[0], slots[1])


def _join_rule_types(tys: t.Iterable[T.Type]) -> T.Type:
    result: T.Type = T.BOTTOM
    for ty in tys:
        result = rule_join(result, ty)
    return result


def _has_containers(ty: T.Type) -> bool:
    match ty:
        case T.List() | T.Set() | T.Dict():
            return True
        case T.Tuple(items=items):
            return any(map(_has_containers, items))
        case Iter(item=item):
            return _has_containers(item)
        case BoundMethod(self_type=receiver):
            return _has_containers(receiver)
    return False


def _opaque(ty: T.Type) -> bool:
    """Whether a value of ``ty`` could hold a container where no site would record it."""
    match ty:
        case T.Any():
            return True
        case T.Object(cls=cls):
            return cls not in (range, slice)
        case T.Array(dtype=dtype):
            return not is_inert(ty)
        case T.Tuple(items=items):
            return any(map(_opaque, items))
        case T.List(item=item) | T.Set(item=item) | Iter(item=item):
            return _opaque(item)
        case T.Dict(key=key, value=value):
            return _opaque(key) or _opaque(value)
        case BoundMethod(self_type=receiver):
            return _opaque(receiver)
    return False


def _occurrences(
    ty: T.Type,
    path: tuple[object, ...],
    exact: bool,
    out: list[tuple[tuple[object, ...], type, T.Type, bool]],
) -> None:
    """The containers in a type, by path; ``exact`` while the path is through tuples only."""
    match ty:
        case T.List() | T.Set() | T.Dict():
            out.append((path, _kind_of(ty), ty, exact))
            for i, slot in enumerate(_slot_types(ty)):
                _occurrences(slot, path + (i,), False, out)
        case T.Tuple(items=items):
            for i, item in enumerate(items):
                _occurrences(item, path + (i,), exact, out)
        case Iter(item=item):
            _occurrences(item, path + ("iter",), False, out)
        case BoundMethod(self_type=receiver):
            _occurrences(receiver, path + ("self",), exact, out)


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


class _Param:
    """A placeholder for argument binding: which argument went to which parameter."""

    def __init__(self, index: int | str) -> None:
        self.index = index


def _bind(
    fn: pytypes.FunctionType, args: list[T.Type], kwargs: dict[str, T.Type]
) -> list[T.Type] | None:
    """The argument types in the order of ``fn``'s parameters (its IR's arguments)."""
    try:
        signature = inspect.signature(fn)
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
        elif is_data_value(param.default) or T.is_immutable_value(param.default):
            found.append(const_type(param.default))
        else:
            return None  # a mutable default is state shared between calls
    return found


def _int_like(ty: T.Type) -> bool:
    return exact_int_dtype(ty) is not None or isinstance(ty, (T.Int, T.Bool)) or (
        isinstance(ty, T.Const) and isinstance(ty.value, bool)
    )


def _slice_like(ty: T.Type) -> bool:
    return (isinstance(ty, T.Const) and type(ty.value) is slice) or (
        isinstance(ty, T.Object) and ty.cls is slice
    )


def _plain_items(ty: T.Type) -> tuple[T.Type, ...] | None:
    match ty:
        case T.Tuple(items=items, cls=cls) if tuple_method(cls, "__getitem__"):
            return items
        case T.Const(value=value) if type(value) is tuple:
            return tuple(const_type(v) for v in value)
    return None


def _ref(ty: T.Type, kind: type) -> Ref | None:
    return ty if isinstance(ty, Ref) and ty.kind is kind else None


# --------------------------------------------------------------------------------------------
# Container-aware handlers: where a rule's view of values is not enough.  Each returns None to
# leave the call to its type rule.


@_handles(getattr)
def _getattr(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 2 or kwargs or not isinstance(args[1], T.Const):
        return None
    name = args[1].value
    if type(name) is not str:
        return None
    found = attribute_type(inf.resolve(args[0]), name)
    if isinstance(found, BoundMethod):
        return BoundMethod(args[0], found.function)  # keep the receiver's sites
    return None


@_handles(operator.getitem)
def _getitem(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 2 or kwargs:
        return None
    x, index = args
    items = _plain_items(x)
    if items is not None:
        if isinstance(index, T.Const) and is_data_value(index.value):
            try:
                picked = items[t.cast(t.Any, index.value)]
            except (IndexError, TypeError):
                return T.ANY
            return T.Tuple(picked) if isinstance(picked, tuple) else picked
        return inf.join_all(items) if _int_like(index) and items else None
    if (lst := _ref(x, list)) is not None:
        if _int_like(index):
            return inf.slot(lst, 0)
        if _slice_like(index):
            return inf.fresh(op, list, [inf.slot(lst, 0)])
        return None
    if (d := _ref(x, dict)) is not None:
        return inf.slot(d, 1)
    return None


@_handles(operator.setitem)
def _setitem(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 3 or kwargs:
        return None
    x, index, value = args
    if (lst := _ref(x, list)) is not None and (_int_like(index) or _slice_like(index)):
        stored = value if _int_like(index) else inf.element_or_escape(value)
        for s in lst.sites:
            inf.store(s, 0, stored)
        return T.NONE
    if (d := _ref(x, dict)) is not None:
        for s in d.sites:
            inf.store(s, 0, index)
            inf.store(s, 1, value)
        return T.NONE
    if isinstance(x, T.Array) and is_inert(x):
        return T.NONE  # a numeric array copies the values: it keeps no reference
    return None


@_handles(operator.delitem)
def _delitem(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) == 2 and (_ref(args[0], list) or _ref(args[0], dict)):
        return T.NONE  # removing elements never widens a type
    return None


@_handles(operator.iadd, operator.iconcat, list.extend)
def _extend(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 2 or kwargs or (lst := _ref(args[0], list)) is None:
        return None
    stored = inf.element_or_escape(args[1])
    for s in lst.sites:
        inf.store(s, 0, stored)
    return T.NONE if fn is list.extend else lst


@_handles(operator.imul)
def _repeat_in_place(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) == 2 and _ref(args[0], list) and _int_like(args[1]):
        return args[0]
    return None


@_handles(operator.add, operator.concat)
def _concatenate(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 2 or kwargs:
        return None
    a, b = args
    if (la := _ref(a, list)) is not None and (lb := _ref(b, list)) is not None:
        return inf.fresh(op, list, [inf.join(inf.slot(la, 0), inf.slot(lb, 0))])
    ia, ib = _plain_items(a), _plain_items(b)
    if ia is not None and ib is not None and inf.reach(a, b):
        return T.Tuple(ia + ib)  # keep the containers inside (without them the rule does it)
    return None


@_handles(operator.mul)
def _repeat(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 2 or kwargs:
        return None
    for seq, count in (args, args[::-1]):
        if (lst := _ref(seq, list)) is not None and _int_like(count):
            return inf.fresh(op, list, [inf.slot(lst, 0)])
    return None


def _collection(kind: type) -> Handler:
    def handler(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
        if kwargs or len(args) > 1:
            return None
        return inf.fresh(op, kind, [inf.element_or_escape(args[0]) if args else T.BOTTOM])

    return handler


_handles(list)(_collection(list))
_handles(set)(_collection(set))


def _literal(kind: type) -> Handler:
    def handler(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
        if kwargs:
            return None
        if kind is tuple:
            return T.Tuple(tuple(args))
        if kind is dict:
            if len(args) % 2:
                return None
            return inf.fresh(op, dict, [inf.join_all(args[0::2]), inf.join_all(args[1::2])])
        return inf.fresh(op, kind, [inf.join_all(args)])

    return handler


_handles(R.make_tuple)(_literal(tuple))
_handles(R.make_list)(_literal(list))
_handles(R.make_set)(_literal(set))
_handles(R.make_dict)(_literal(dict))


@_handles(R.make_locals)
def _make_locals(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    unbound = T.Const(R.UNBOUND)
    values = [v for v in args[1::2] if v != unbound]
    return inf.fresh(op, dict, [T.STR, inf.join_all(values) if values else T.BOTTOM])


@_handles(tuple)
def _tuple(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) == 1 and not kwargs and isinstance(args[0], T.Tuple):
        items = _plain_items(args[0])
        return None if items is None else T.Tuple(items)
    return None


def _pairs(inf: _Inference, source: T.Type) -> tuple[T.Type, T.Type]:
    """Key and value types of what ``dict(source)`` or ``d.update(source)`` stores."""
    if (d := _ref(source, dict)) is not None:
        return inf.slot(d, 0), inf.slot(d, 1)
    item = inf.element_or_escape(source)
    match item:
        case T.Tuple(items=(key, value)):
            return key, value
        case Ref(kind=k) if k is list:
            return inf.slot(item, 0), inf.slot(item, 0)
        case T.Bottom():
            return T.BOTTOM, T.BOTTOM
    inf.escape(item)
    return T.ANY, T.ANY


def _merged(inf: _Inference, args: list[T.Type], kwargs: dict[str, T.Type]) -> tuple[T.Type, T.Type]:
    key: T.Type = T.BOTTOM
    value: T.Type = T.BOTTOM
    for source in args:
        k, v = _pairs(inf, source)
        key, value = inf.join(key, k), inf.join(value, v)
    if kwargs:
        key, value = inf.join(key, T.STR), inf.join(value, inf.join_all(kwargs.values()))
    return key, value


@_handles(dict)
def _dict(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) > 1:
        return None
    return inf.fresh(op, dict, list(_merged(inf, args, kwargs)))


@_handles(dict.update, R.dict_merge)
def _update(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if not args or (d := _ref(args[0], dict)) is None or len(args) > 2:
        return None
    key, value = _merged(inf, args[1:], kwargs)
    for s in d.sites:
        inf.store(s, 0, key)
        inf.store(s, 1, value)
    return T.NONE


@_handles(R.unpack)
def _unpack(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 2 or kwargs or not isinstance(args[1], T.Const):
        return None
    n = t.cast(int, args[1].value)
    items = _plain_items(args[0])
    if items is not None:
        return T.Tuple(items) if len(items) == n else T.ANY  # another length raises
    found = inf.element(args[0])
    return None if found is None else T.Tuple((found,) * n)


@_handles(R.unpack_ex)
def _unpack_ex(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 3 or kwargs or not all(isinstance(a, T.Const) for a in args[1:]):
        return None
    before, after = (t.cast(int, t.cast(T.Const, a).value) for a in args[1:])
    found = inf.element(args[0])
    if found is None:
        return None
    return T.Tuple((found,) * before + (inf.fresh(op, list, [found]),) + (found,) * after)


_FRAME = T.Object(R.GeneratorFrame)


@_handles(iter)
def _iter(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 1 or kwargs:
        return None
    x = args[0]
    if x == _FRAME:  # a generator is its own iterator
        return x
    if isinstance(x, Iter):
        return Iter(x.item, source=x.source) if x.cls in VIEW_CLASSES else x
    found = inf.element(x)
    return None if found is None else Iter(found, source=x)


def _iterator_item(x: T.Type) -> T.Type | None:
    return x.item if isinstance(x, Iter) and x.cls not in VIEW_CLASSES else None


@_handles(next)
def _next(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if kwargs or not args or len(args) > 2 or (item := _iterator_item(args[0])) is None:
        return None
    return item if len(args) == 1 else inf.join(item, args[1])


@_handles(R.next_or_stop)
def _next_or_stop(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 1 or kwargs or (item := _iterator_item(args[0])) is None:
        return None
    return OrStop(item)


@_handles(R.is_stop)
def _is_stop(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) == 1 and isinstance(args[0], OrStop):
        # An iterator over nothing (an empty tuple, a list nothing is ever put in) stops at once.
        return T.Const(True) if isinstance(args[0].item, T.Bottom) else T.BOOL
    return None


@_handles(R.check_bound, t.cast)
def _check_bound(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if fn is t.cast:
        return args[1] if len(args) == 2 and not kwargs else None
    if args and args[0] == T.Const(R.UNBOUND):
        return T.BOTTOM  # always raises: 3.12+ copies code after a `with` onto the path
        # where `__exit__` swallowed the exception, where a local may be certainly unbound
    return args[0] if args else None


@_handles(enumerate)
def _enumerate(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 1 or set(kwargs) - {"start"}:
        return None
    start = kwargs.get("start", T.Const(0))
    count = result_type(T.Const(enumerate), (T.Tuple(()), inf.resolve(start)), {})
    found = inf.element(args[0])
    if found is None or not isinstance(count, Iter) or not isinstance(count.item, T.Tuple):
        return None
    return Iter(T.Tuple((count.item.items[0], found)), enumerate, args[0])


@_handles(zip)
def _zip(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if set(kwargs) - {"strict"}:
        return None
    return Iter(T.Tuple(tuple(inf.element_or_escape(a) for a in args)), zip, T.Tuple(tuple(args)))


@_handles(reversed)
def _reversed(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 1 or kwargs:
        return None
    x = args[0]
    if _ref(x, list) is not None or _plain_items(x) is not None:
        found = inf.element(x)
        return None if found is None else Iter(found, source=x)
    return None


@_handles(sorted)
def _sorted(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 1 or set(kwargs) - {"key", "reverse"}:
        return None
    if not all(is_inert(inf.resolve(v)) for v in kwargs.values()):
        inf.unknown_code(args[0], *kwargs.values())  # a key function sees every element
    return inf.fresh(op, list, [inf.element_or_escape(args[0])])


@_handles(list.append, list.insert, set.add)
def _add_one(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    kind = set if fn is set.add else list
    if kwargs or not args or (c := _ref(args[0], kind)) is None or len(args) != (3 if fn is list.insert else 2):
        return None
    for s in c.sites:
        inf.store(s, 0, args[-1])
    return T.NONE


@_handles(set.update)
def _set_update(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if kwargs or not args or (s_ref := _ref(args[0], set)) is None:
        return None
    for source in args[1:]:
        stored = inf.element_or_escape(source)
        for s in s_ref.sites:
            inf.store(s, 0, stored)
    return T.NONE


@_handles(list.pop, set.pop)
def _pop(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    c = _ref(args[0], list) or _ref(args[0], set) if args else None
    return None if c is None or kwargs else inf.slot(c, 0)


@_handles(list.copy, set.copy, dict.copy)
def _copy(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 1 or kwargs or not isinstance(args[0], Ref):
        return None
    c = args[0]
    return inf.fresh(op, c.kind, [inf.slot(c, i) for i in range(SLOTS[c.kind])])


@_handles(dict.get, dict.pop)
def _dict_get(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if kwargs or not 2 <= len(args) <= 3 or (d := _ref(args[0], dict)) is None:
        return None
    default = args[2] if len(args) == 3 else (T.NONE if fn is dict.get else T.BOTTOM)
    return inf.join(inf.slot(d, 1), default)


@_handles(dict.setdefault)
def _setdefault(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if kwargs or not 2 <= len(args) <= 3 or (d := _ref(args[0], dict)) is None:
        return None
    default = args[2] if len(args) == 3 else T.NONE
    for s in d.sites:
        inf.store(s, 0, args[1])
        inf.store(s, 1, default)
    return inf.slot(d, 1)


@_handles(dict.popitem)
def _popitem(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
    if len(args) != 1 or kwargs or (d := _ref(args[0], dict)) is None:
        return None
    return T.Tuple((inf.slot(d, 0), inf.slot(d, 1)))


def _view(index: int | None, cls: type) -> Handler:
    def handler(
    inf: _Inference, op: Call, fn: object, args: list[T.Type], kwargs: dict[str, T.Type]
) -> T.Type | None:
        if len(args) != 1 or kwargs or (d := _ref(args[0], dict)) is None:
            return None
        item = T.Tuple((inf.slot(d, 0), inf.slot(d, 1))) if index is None else inf.slot(d, index)
        return Iter(item, cls, d)

    return handler


_handles(dict.keys)(_view(0, VIEW_CLASSES[0]))
_handles(dict.values)(_view(1, VIEW_CLASSES[1]))
_handles(dict.items)(_view(None, VIEW_CLASSES[2]))
