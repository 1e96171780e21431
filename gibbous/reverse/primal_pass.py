"""The forward program of a derived rule: the primal with CoDuals, rules and stacks.

See ``gibbous.reverse.transform`` for the whole transformation.  ``Forward`` copies the primal's
blocks.  Inactive calls stay as they are, on primal values; an active call becomes a call of
its site's rule (a placeholder each instance binds), taken apart into the result's ``CoDual``
and the pullback, which is pushed onto the site's stack.  Edges into blocks with several
incoming edges go through a block that pushes the edge's number; returns push theirs where
there are several.

Values are converted where they are defined: an active value some use needs as a primal gets
``.primal`` right away, an inactive one an active call needs gets ``inactive_codual`` right
away (both dominate every use).  Constants get their CoDual once, at build time.  The
function's own callable is the first argument: the constant holding it in the IR (closure
cells read it) is replaced by that argument, so the program serves every function object of
the same code.
"""

from __future__ import annotations

import functools
import operator
import re
import typing as t

import numpy as np

from gibbous.ir import runtime
from gibbous.ir import names
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.cfg import reverse_postorder
from gibbous.ir.core import (
    Block,
    Branch,
    Call,
    Constant,
    Function,
    Guard,
    JUMPING,
    Jump,
    Raise,
    Return,
    Use,
    Value,
    edge_args,
)
from gibbous.ir.exceptions import caught
from gibbous.ir.printer import Namer
from gibbous.reverse.activity import Activity
from gibbous.reverse.defer import deferred_forms
from gibbous.rules import buffers, outer_sums
from gibbous.reverse.derived import inactive_codual
from gibbous.rules.inline import WANT, InlineRule
from gibbous.library.common import new_fdata
from gibbous.tangents.model import NO_TANGENT, CoDual, zero_fdata

CODUAL = T.Object(CoDual)

#: Calls that return one of their operands (by index) unchanged: no rule, the adjoint passes.
IDENTITIES: names.CallableTable[object, int] = names.CallableTable(
    [(t.cast, 2), (runtime.check_bound, 1)]
)


class Placeholder:
    """An IR constant standing for a value each rule instance binds for itself: ``kind`` is
    ``rule`` (``what`` makes the call site's rule), ``push`` or ``pop`` (``what`` numbers a
    stack)."""

    __slots__ = ("name", "kind", "what", "__weakref__")

    def __init__(self, name: str, kind: str, what: object) -> None:
        self.name, self.kind, self.what = name, kind, what

    def __repr__(self) -> str:
        return f"<placeholder {self.name}>"

    @property
    def __name__(self) -> str:  # the backend names closure variables after it
        return self.name


# Placeholders and the CoDuals of constants have no import path; they print under this prefix
# (``names.printable``: held weakly, for reading, not for the parser).
names.add_path_provider(
    lambda obj: "gibbous.tangents.model.NO_TANGENT" if obj is NO_TANGENT else None  # resolves
)
_printable = names.printable


#: Where an inline site saved its result's fdata, when its cotangent is a value instead.
COTANGENT = object()

SiteMaker = t.Callable[[Call], t.Callable[[], object]]
InlineFinder = t.Callable[[Call], InlineRule | None]


class Forward:
    """Builds the forward function of ``f`` into ``self.g``; the reverse reads what it
    records (stacks per site and per join, the blocks' incoming edges)."""

    def __init__(
        self,
        f: Function,
        act: Activity,
        site_maker: SiteMaker,
        inline: InlineFinder = lambda op: None,
        shared: dict[tuple[int, bool], tuple[object, CoDual[t.Any, t.Any]]] | None = None,
    ) -> None:
        self.f, self.act, self.site_maker = f, act, site_maker
        params = [("self", CODUAL), *((a.name, CODUAL) for a in f.args)]
        self.g = Function(f"{f.name}.forward", params, loc=f.loc, entry_name=f.entry.name)
        # Dominators first: every value is converted where it is defined, before its uses.
        self.blocks = reverse_postorder(f)
        self.cd: dict[Value, Value] = {}  # primal value -> its CoDual in g
        self.pr: dict[Value, Value] = {}  # primal value -> its primal in g
        self.placeholders: list[Placeholder] = []
        self.n_stacks = 0
        self.site_stack: dict[Call, int] = {}  # active call -> its pullback stack
        self.edges: dict[Block, list[tuple[Block, int]]] = {b: [] for b in self.blocks}
        for b in self.blocks:
            for i, s in enumerate(b.successors):
                self.edges[s].append((b, i))
        self.pred_stack: dict[Block, int] = {}
        self.returns = [b for b in self.blocks if isinstance(b.terminator, Return)]
        self.ret_stack: int | None = None
        # The CoDuals of the constants this function uses; ``shared``, those of every program
        # of the build, so that an object written in one and read in another has one fdata.
        self.constants: dict[tuple[int, bool], tuple[object, CoDual[t.Any, t.Any]]] = {}
        self.shared = {} if shared is None else shared
        # Inline sites: what each saves for the reverse (constants stay constants), and per
        # block, the values its record holds and the stack the record goes onto.
        self.inline: dict[Call, InlineRule] = {}
        # Inline sites whose scalar result has no use with a derivative (``x[i] > 0``): run as
        # the primal runs them, nothing saved, nothing in the reverse.
        self.primal_only: set[Call] = set()
        for b in self.blocks:
            for op in b.calls:
                rule = inline(op) if op in act.calls else None
                if rule is None:
                    continue
                if not rule.array and not any(map(self._differentiable_use, op.result.uses)):
                    self.primal_only.add(op)
                else:
                    self.inline[op] = rule
        self.inline.update(
            deferred_forms(f, act, self.inline, self.primal_only, _passes_on)
        )
        self.sums: dict[Call, Placeholder] = {}  # deferring sites' stacks (ad_defer)
        self.site_saves: dict[Call, list[object]] = {}
        self.fdata_in: dict[tuple[Block | None, Value], Value] = {}  # None: the whole call
        self.fdata_needed = {
            op.args[i]
            for op, rule in self.inline.items()
            for kind, i in (*rule.saves, *rule.fdata_saves)
            if kind == "fdata"
        }
        self.records: dict[Block, list[Value]] = {}
        self.pending_guard: tuple[Block, Guard] | None = None
        self.record_stack: dict[Block, int] = {}
        self.need_cd, self.need_pr = self._needs()
        self.by_value = self._by_value()
        # Array sites that compute into buffers of their own (``gibbous.rules.buffers``):
        # the site's buffers, what computes the result with ``out=``, and how many operands.
        self.buffered: dict[Call, tuple[Placeholder, t.Callable[..., t.Any], int]] = {}
        self.sites: dict[Call, Placeholder] = {}  # every site with buffers or scratch
        for op in self._unescaping():
            callee = t.cast(Constant, op.callee).value
            fn = buffers.out_function(callee, _constants(op.args))
            if fn is not None:
                n = 1 if fn is np.square and callee is not np.square else len(op.args)
                self.buffered[op] = (self.site_buffers(op), fn, n)

    def site_buffers(self, op: Call) -> Placeholder:
        """The placeholder of ``op``'s ``SiteBuffers``, which each rule instance binds."""
        hit = self.sites.get(op)
        if hit is None:
            hit = self.sites[op] = self.placeholder(
                f"buffers_{len(self.sites)}", "buffers", buffers.SiteBuffers
            )
        return hit

    def stack(self, hint: str) -> tuple[int, Placeholder, Placeholder]:
        n = self.n_stacks
        self.n_stacks += 1
        push = self.placeholder(f"push_{hint}", "push", n)
        pop = self.placeholder(f"pop_{hint}", "pop", n)
        return n, push, pop

    def placeholder(self, name: str, kind: str, what: object) -> Placeholder:
        p = Placeholder(name, kind, what)
        self.placeholders.append(p)
        return _printable(p, f"ad.{name}")

    def _needs(self) -> tuple[set[Value], set[Value]]:
        """Which values some use needs as a CoDual, and which as a primal."""
        cd: set[Value] = set()
        pr: set[Value] = set()
        # An array form's result has its fdata as a value of its own: reading it needs no CoDual.
        own_fdata = {op.result for op, rule in self.inline.items() if rule.array}
        for b in self.blocks:
            for op in b.ops:
                if isinstance(op, Call):
                    rule = self.inline.get(op)
                    if rule is not None:
                        pr.update(op.operands)
                        saves = (*rule.saves, *rule.fdata_saves)
                        saved = (op.args[s[1]] for s in saves if s[0] == "fdata")
                        # (An inactive value's fdata is no tangent: no CoDual to read it from.)
                        cd.update(v for v in saved if v not in own_fdata and self.has_fdata(v))
                    elif op in self.act.calls and op not in self.primal_only:
                        identity = identity_operand(op)
                        if identity is not None and not self.wrapped(op.result):
                            pr.update(op.operands)
                        else:
                            cd.update(op.operands)
                            if identity is not None and _guards(b, op):
                                # (``call`` runs a guarded identity on primals too, so that it
                                # raises where the primal would: ``check_bound`` of a name a
                                # ``with`` block may have left unbound)
                                pr.update(op.operands)
                    else:
                        pr.update(op.operands)
                elif isinstance(op, Return):
                    # A bare value is wrapped where it is returned, not where it is made.
                    (pr if self.bare_value(op.value) else cd).add(op.value)
                elif isinstance(op, Raise):
                    pr.add(op.exc)
                else:
                    assert isinstance(op, JUMPING)
                    if isinstance(op, Branch):
                        pr.add(op.cond)
                    for i, s in enumerate(op.successors):
                        for param, v in zip(s.args, edge_args(op, i)):
                            (cd if self.wrapped(param) else pr).add(v)
        return cd, pr

    def _differentiable_use(self, use: Use) -> bool:
        """Whether a cotangent may come back through ``use``: anything but an inactive call
        (a comparison, ``int()``) or a branch's condition."""
        user = use.user
        if isinstance(user, Call):
            return user in self.act.calls
        return not (isinstance(user, Branch) and use.index == 0)

    def _by_value(self) -> set[Value]:
        """The array results whose cotangent the reverse passes as a value, not through fdata
        (``gibbous.rules.inline``): made by a form that takes part, used once, as an operand
        of another such form in the same block (the use's reverse runs first and gives the
        whole cotangent: assigned, not added into zeros), and never as a CoDual."""
        out: set[Value] = set()
        for op, rule in self.inline.items():
            r = op.result
            if not (rule.values and rule.array and rule.fdata is None) or r in self.need_cd:
                continue
            uses = r.uses
            if len(uses) != 1:
                continue
            user, index = uses[0].user, uses[0].index - 1  # operand 0 is the callee
            if not isinstance(user, Call) or user.parent is not op.parent:
                continue
            form = self.inline.get(user)
            if form is None or not form.values:
                continue
            if index < len(user.args) and ("fdata", index) in form.saves:
                out.add(r)
        return out

    def _unescaping(self) -> list[Call]:
        """The array sites whose result does not escape the forward program, so that the next
        call may compute into the same memory: every use is an inline form that reads it and
        keeps no reference to it (not a view: ``x[1:]``), which may save it for its reverse,
        run before the site's own.  Not returned, stored, captured, passed to a rule (which may
        keep it) or to a block (SSA: a use in the forward program reads the latest run)."""
        out = []
        for op, rule in self.inline.items():
            r = op.result
            if not rule.array or rule.fdata is not None or op.kwnames or r in self.need_cd:
                continue
            if not isinstance(op.callee, Constant) or not r.uses:
                continue
            if all(self._reads_only(use) for use in r.uses):
                out.append(op)
        return out

    def _reads_only(self, use: Use) -> bool:
        user = use.user
        if not isinstance(user, Call) or use.index == 0:  # (operand 0: the callee)
            return False
        if user in self.primal_only:
            return True  # a float out of it (``z[i] > 0``)
        form = self.inline.get(user)
        return form is not None and form.fdata is None

    def has_fdata(self, v: Value) -> bool:
        """Whether ``v`` may have fdata to read (constants: the CoDual made at build time)."""
        return isinstance(v, Constant) or (self.act.is_active(v) and not bare_type(v.type))

    def bare_value(self, v: Value) -> bool:
        return not isinstance(v, Constant) and not self.wrapped(v) and bare_type(v.type)

    def wrapped(self, v: Value) -> bool:
        """Whether the forward holds ``v`` as a CoDual (active, with fdata) rather than as its
        primal: active floats, ints and complex numbers have no fdata, so they are passed bare
        between blocks and wrapped only for a rule call that needs a CoDual."""
        return self.act.is_active(v) and not bare_type(v.type)

    # -- values

    def codual(self, v: Value) -> object:
        """``v``'s CoDual in the forward function (a value, or a CoDual to make a constant)."""
        if isinstance(v, Constant):
            if self.act.is_self(v):
                return self.g.args[0]
            # Constants that may be written into carry fdata, one for all their uses.
            active = self.act.is_active(v)
            key = (id(v.value), active)
            hit = self.constants.get(key) or self.shared.get(key)
            if hit is None:
                made = CoDual(v.value, zero_fdata(v.value) if active else NO_TANGENT)
                _printable(made, f"ad.codual<{_describe(v.value)}>")
                hit = self.shared[key] = (v.value, made)
            self.constants[key] = hit
            return hit[1]
        return self.cd[v]

    def primal(self, v: Value) -> object:
        if isinstance(v, Constant):
            if self.act.is_self(v):  # through the argument: the program serves every function
                return self.self_primal  # object of the same code, not only this one
            return Constant(v.value)
        return self.pr[v]

    def define(self, b: Builder, v: Value, new: Value, *, codual: bool) -> None:
        """``new`` computes ``v``, as a CoDual or as a primal; make the other form right away
        if some use needs it.  (An active call may have an inactive result: ``astype(int)``.)"""
        hint = v.name
        if codual:
            self.cd[v] = new
            if v in self.need_pr:
                self.pr[v] = b.call(getattr, new, "primal", type=v.type, name=_suffix(hint, "p"))
        else:
            assert not self.wrapped(v), "an active value with fdata is made as a primal"
            self.pr[v] = new
            if v in self.need_cd:
                # CoDual(new, NoTangent()): right for inactive values and for bare ones alike.
                self.cd[v] = b.call(inactive_codual, new, type=CODUAL, name=_suffix(hint, "cd"))

    # -- blocks

    @functools.cached_property
    def self_primal(self) -> Value:
        op = Call(Constant(getattr), [self.g.args[0], Constant("primal")], name="self.p")
        self.g.entry.insert(0, op)
        return op.result

    def build(self) -> None:
        namer = Namer()  # stacks of edges are named after the blocks as the IR prints them
        labels = {b: re.sub(r"\W", "_", namer.define_block(b)[1:]) for b in self.f.blocks}
        new_blocks = {self.f.entry: self.g.entry}
        for b in self.blocks[1:]:
            new_blocks[b] = self.g.add_block(b.name)
        self.new_blocks = new_blocks
        for b, edges in self.edges.items():
            if len(edges) > 1:
                self.pred_stack[b] = self.stack(f"pred_{labels[b]}")[0]
        # A handler entered along several edges records which one in a block on each edge;
        # the exception is caught there, at the start, and passed on.
        self.caught_as_argument = {
            b for b in self.pred_stack if b.calls and _is_caught(b.calls[0])
        }
        if len(self.returns) > 1:
            self.ret_stack = self.stack("return")[0]
        for b in self.blocks:
            self.block(b)

    def block(self, b: Block) -> None:
        nb = self.new_blocks[b]
        builder = Builder(self.g, nb)
        if b is self.f.entry:
            params: t.Sequence[Value] = nb.args[1:]
            builder.loc = self.f.loc
            for v, p in zip(b.args, params):
                if self.act.is_active(v):
                    self.define(builder, v, p, codual=True)
                    if v in self.fdata_needed:  # an argument's fdata is fixed: read it once
                        self.fdata_in[(None, v)] = builder.call(
                            getattr, p, "fdata", name=_suffix(v.name, "f")
                        )
                elif v.has_uses():
                    primal = builder.call(getattr, p, "primal", type=v.type, name=v.name)
                    self.define(builder, v, primal, codual=False)
        else:
            calls = b.calls
            if b in self.caught_as_argument:  # each edge's own block caught it
                self.define(builder, calls[0].result, nb.add_arg(T.ANY, "exc"), codual=False)
            params = [nb.add_arg(CODUAL if self.wrapped(v) else v.type, v.name) for v in b.args]
            if calls and _is_caught(calls[0]) and b not in self.caught_as_argument:
                builder.loc = calls[0].loc  # it reads what the edge caught: first, before
                self.call(builder, calls[0])  # anything else can raise
            for v, p in zip(b.args, params):
                self.define(builder, v, p, codual=self.wrapped(v))
        term = b.terminator
        for op in b.calls:
            if _is_caught(op):
                continue
            builder.loc = op.loc
            if isinstance(term, Guard) and op.result is term.guarded:
                self.pending_guard = (b, term)
            self.call(builder, op)
            assert self.pending_guard is None, "the guarded call made no call"
        self.push_record(builder, b)
        self.terminator(builder, b)

    def guarded(self, b: Builder, made: Value) -> None:
        """``made`` is the call that does the work of the primal's guarded call: guard it
        with the primal's handler edge, and go on on its normal side."""
        if self.pending_guard is None:
            return
        block, term = self.pending_guard
        self.pending_guard = None
        handler, args = self.edge(block, 1, term)
        normal = self.g.add_block(None)
        b.guard(made, normal, [], handler, args, loc=term.loc)
        b.at_end(normal)

    def push_record(self, b: Builder, block: Block) -> None:
        """What the block's inline sites saved, in one record on the block's own stack."""
        saved = self.records.get(block)
        if not saved:
            return
        n, push, _ = self.stack(f"record_{len(self.record_stack)}")
        self.record_stack[block] = n
        term = block.terminator
        b.loc = term.loc if term is not None else None
        record = saved[0] if len(saved) == 1 else b.call(runtime.make_tuple, *saved, name="rec")
        b.call(push, record, type=T.NONE)

    def call(self, b: Builder, op: Call) -> None:
        r = op.result
        inline = self.inline.get(op)
        if inline is not None:
            self.inline_call(b, op, inline)
            return
        if op not in self.act.calls or op in self.primal_only:
            args = [self.primal(a) for a in op.args]
            kwargs = {k: self.primal(v) for k, v in op.kwargs.items()}
            new = b.call(self.primal(op.callee), *args, kwargs=kwargs, type=r.type, name=r.name)
            self.guarded(b, new)
            self.define(b, r, new, codual=False)
            return
        identity = identity_operand(op)
        if identity is not None:
            if not self.wrapped(r) or self.pending_guard is not None:
                # The call itself, on primals (it keeps the result's type, and raises where
                # the primal would, for a handler to catch).
                args = [self.primal(a) for a in op.args]
                new = b.call(self.primal(op.callee), *args, type=r.type, name=r.name)
                self.guarded(b, new)
                if not self.wrapped(r):
                    self.define(b, r, new, codual=False)
                    return
            operand = t.cast(Value, self.codual_value(b, op.operands[identity]))
            self.define(b, r, operand, codual=True)
            return
        site = len(self.site_stack)
        n, push, _ = self.stack(str(site))
        self.site_stack[op] = n
        rule = self.placeholder(f"rule_{site}", "rule", self.site_maker(op))
        args = [self.codual(a) for a in op.args]
        kwargs = {k: self.codual(v) for k, v in op.kwargs.items()}
        made = b.call(rule, self.codual(op.callee), *args, kwargs=kwargs, name=None)
        self.guarded(b, made)
        y = b.call(operator.getitem, made, 0, type=CODUAL, name=r.name)
        pb = b.call(operator.getitem, made, 1, name="pb")
        b.call(push, pb, type=T.NONE)
        self.define(b, r, y, codual=True)

    def inline_call(self, b: Builder, op: Call, rule: InlineRule) -> None:
        """The primal call itself; what the derivative needs goes into the block's record."""
        r = op.result
        args = [self.primal(a) for a in op.args]
        into = self.buffered.get(op)
        if into is not None:
            where, fn, n = into  # (``x ** 2``: ``np.square(x)``)
            operands = args[:n]
            if n == 1:
                helper: object = buffers.into1
            elif all(isinstance(a.type, T.Array) for a in op.args[:2]):
                helper = buffers.into_aa
            else:  # an array and a scalar: the array again, whose shape the result has
                helper = buffers.into_a
                operands.append(operands[0 if isinstance(op.args[0].type, T.Array) else 1])
            new = b.call(helper, where, fn, *operands, type=r.type, name=r.name)
        elif rule.primal is not None and not op.kwargs:
            fn, constants = rule.primal
            new = b.call(fn, *args, *constants, type=r.type, name=r.name)
        else:
            new = b.call(self.primal(op.callee), *args, type=r.type, name=r.name)
        self.guarded(b, new)
        block = t.cast(Block, op.parent)
        result_fdata: Value | None = None
        if r in self.by_value:
            self.pr[r] = new
        elif rule.array:
            # An array result: fdata as the rule would make it (new zeros, or a view of an
            # operand's for a view), for the uses to add into.
            maker = new_fdata if rule.fdata is None else rule.fdata
            extra = [self.saved(b, block, op, save, new) for save in rule.fdata_saves]
            name = _suffix(r.name, "f")
            if into is not None:  # zeros the site keeps, per depth (not the pool's)
                result_fdata = b.call(buffers.zeros, into[0], new, maker, type=r.type, name=name)
            else:
                result_fdata = b.call(maker, new, *extra, type=r.type, name=name)
            self.pr[r] = new
            self.fdata_in[(None, r)] = result_fdata  # it dominates every use of r
            if r in self.need_cd:
                self.cd[r] = b.call(CoDual, new, result_fdata, type=CODUAL, name=r.name)
        else:
            self.define(b, r, new, codual=False)
        record = self.records.setdefault(block, [])
        saves: list[object] = []
        for save in rule.saves:
            if save[0] == "result_fdata" and r in self.by_value:
                value: object = COTANGENT  # the reverse has it as a value
            elif save[0] == "result_fdata":
                assert result_fdata is not None, "a scalar form saves its result's fdata"
                value = result_fdata
            else:
                value = self.saved(b, block, op, save, new)
            if isinstance(value, Value) and not isinstance(value, Constant):
                if all(value is not v for v in record):
                    record.append(value)
            saves.append(value)
        self.site_saves[op] = saves

    def saved(self, b: Builder, block: Block, op: Call, save: tuple[str, int], new: Value) -> object:
        """The value an inline site's ``save`` names: its result, an operand or its fdata."""
        if save[0] == "result":
            return new
        if save[0] == "primal":
            return self.primal(op.args[save[1]])
        if save[0] == "site":  # its buffers, for the reverse pass's scratch
            return Constant(self.site_buffers(op))
        if save[0] == "sums":  # its stack of deferred outer products
            hit = self.sums.get(op)
            if hit is None:
                hit = self.sums[op] = self.placeholder(
                    f"sums_{len(self.sums)}", "buffers", outer_sums.OuterSums
                )
            return Constant(hit)
        operand = op.args[save[1]]
        if operand in self.by_value:
            return Constant(WANT)
        if not isinstance(operand, Constant) and bare_type(operand.type):
            # A scalar has no fdata: its rdata is wanted as a value if it is active.
            return Constant(WANT if self.act.is_active(operand) else NO_TANGENT)
        if not self.has_fdata(operand):
            return Constant(NO_TANGENT)  # what its CoDual would hold: none made to read it
        return self.fdata(b, block, operand)

    def fdata(self, b: Builder, block: Block, v: Value) -> object:
        """``v``'s fdata, read once per block (once per call for an argument)."""
        hit = self.fdata_in.get((None, v))
        if hit is None:
            hit = self.fdata_in.get((block, v))
        if hit is not None:
            return hit
        cd = self.codual(v)
        if isinstance(cd, CoDual):
            return Constant(cd.fdata)
        hit = b.call(getattr, cd, "fdata", name=_suffix(v.name, "f"))
        self.fdata_in[(block, v)] = hit
        return hit

    def codual_value(self, b: Builder, v: Value) -> object:
        c = self.codual(v)
        return c if isinstance(c, Value) else Constant(c)

    def terminator(self, b: Builder, block: Block) -> None:
        term = block.terminator
        b.loc = term.loc if term is not None else None
        if isinstance(term, Return):
            if self.ret_stack is not None:
                b.call(self._push(self.ret_stack), self.returns.index(block), type=T.NONE)
            if self.bare_value(term.value):
                b.ret(b.call(inactive_codual, self.primal(term.value), type=CODUAL))
            else:
                b.ret(self.codual(term.value))
        elif isinstance(term, Raise):
            b.raise_(self.primal(term.exc))
        elif isinstance(term, (Jump, Guard)):  # a guard's handler edge left with its call
            target, args = self.edge(block, 0, term)
            b.jump(target, *args)
        else:
            assert isinstance(term, Branch)
            true, true_args = self.edge(block, 0, term)
            false, false_args = self.edge(block, 1, term)
            b.branch(self.primal(term.cond), true, true_args, false, false_args)

    def _push(self, stack: int) -> Placeholder:
        return next(p for p in self.placeholders if p.kind == "push" and p.what == stack)

    def edge(
        self, block: Block, index: int, term: Jump | Branch | Guard
    ) -> tuple[Block, list[object]]:
        target = term.successors[index]
        args = [
            self.codual(v) if self.wrapped(p) else self.primal(v)
            for p, v in zip(target.args, edge_args(term, index))
        ]
        stack = self.pred_stack.get(target)
        if stack is None:
            return self.new_blocks[target], args
        # Record which edge was taken, in a block of its own on that edge.
        via = self.g.add_block(None)
        b = Builder(self.g, via)
        b.loc = term.loc
        if target in self.caught_as_argument:
            args.insert(0, b.call(caught, name="exc"))
        b.call(self._push(stack), self.edges[target].index((block, index)), type=T.NONE)
        b.jump(self.new_blocks[target], *args)
        return via, []


def _constants(args: t.Sequence[Value]) -> list[object]:
    """The arguments' values where they are constants (else the IR values: not constants)."""
    return [a.value if isinstance(a, Constant) else a for a in args]


def _is_caught(op: Call) -> bool:
    return isinstance(op.callee, Constant) and op.callee.value is caught


def bare_type(ty: T.Type) -> bool:
    """Values of ``ty`` have no fdata, whatever they are: scalars."""
    return isinstance(ty, (T.Float, T.Int, T.Bool, T.Complex))


def identity_operand(op: Call) -> int | None:
    callee = op.callee
    if not isinstance(callee, Constant):
        return None
    index = IDENTITIES.get(callee.value)
    if index is None or index >= len(op.operands) or op.kwnames:
        return None
    return index


def _passes_on(op: Call) -> bool:
    return identity_operand(op) is not None


def _suffix(hint: str | None, suffix: str) -> str | None:
    return None if hint is None else f"{hint}.{suffix}"


def short_name(value: object) -> str:
    """A short name for a constant: the last part of a callable's path, else its kind."""
    path = names.import_path(value) if callable(value) else None
    if path is not None:
        return path.rsplit(".", 1)[-1]
    if isinstance(value, (int, float, complex, str)) and len(repr(value)) < 12:
        return type(value).__name__
    return "c"


def _describe(value: object) -> str:
    path = names.import_path(value) if callable(value) else None
    if path is not None:
        return path
    text = repr(value)
    return text if len(text) <= 40 else type(value).__name__


def _guards(b: Block, op: Call) -> bool:
    """Whether ``b``'s terminator is a guard of ``op``'s result (a call that may raise, inside
    a ``try`` or ``with`` block)."""
    term = b.terminator
    return isinstance(term, Guard) and term.guarded is op.result
