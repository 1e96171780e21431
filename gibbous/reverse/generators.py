"""Generators, differentiated step by step (``gibbous.ir.runtime``'s lowering).

These rules serve only the lowering, so ``gibbous.session`` hands them out itself rather
than through the registry.  Calling a generator function makes a ``GeneratorFrame`` holding
the arguments
(``GeneratorCallRule``); each ``next`` of it, from a ``for`` loop or ``next()``, is one call of
the generator's resume function through its derived rule (``GeneratorNextRule``), recorded on
the caller's tape like any call.  The resume function loads the frame (``load_frame``) and saves
it at the next ``yield`` (``save_frame``); the frame's fdata, a ``FrameTangent``, holds the
fdata of the values saved in it and an accumulator of rdata for each.  In reverse, a save's
pullback hands the rdata that later steps accumulated to the values it saved, and puts the
frame back as it was; a load's pullback adds the rdata of the values it handed out into the
accumulators of the save that made them.  So gradients flow from what a step yields, through
the values the generator keeps between steps, back to its arguments, in exactly the reverse
order of the steps.
"""

from __future__ import annotations

import builtins
import math
import typing as t

import attrs

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.names import CallableSet
from gibbous.rules.registry import Pullback, RRule
from gibbous.tangents.model import (
    NO_TANGENT,
    CoDual,
    increment,
    register_opaque_fdata,
    zero_rdata,
)
from gibbous.infer.typerules.table import register_type_rule

_CoDual = CoDual[t.Any, t.Any]
FRAME = T.Object(runtime.GeneratorFrame)

#: What exhausts the generator it is given (``sum(gen())``): each step recorded, the items into
#: a list, the consumer's rule on the list (``DrainRule``; forward mode's ``Steps.drain``).
CONSUMERS: CallableSet[object] = CallableSet(
    [builtins.sum, builtins.list, builtins.tuple, builtins.max, builtins.min, builtins.sorted,
     builtins.any, builtins.all, builtins.set, builtins.frozenset, builtins.dict, math.fsum,
     math.prod,
     runtime.unpack, runtime.unpack_ex]  # (``a, b = gen()``: SciPy returns generators so)
)  # fmt: skip


@attrs.define(eq=False)
class FrameTangent:
    """The fdata of a ``GeneratorFrame``: its function's fdata (closure cells), and for each
    value saved in it, its fdata and an accumulator of its rdata."""

    fn: t.Any
    fdatas: tuple[t.Any, ...]
    rdatas: list[t.Any]


register_opaque_fdata(FrameTangent)


def _saved(values: t.Sequence[_CoDual]) -> tuple[tuple[t.Any, ...], list[t.Any]]:
    return tuple(v.fdata for v in values), [zero_rdata(v.primal) for v in values]


def _tangent(frame: _CoDual) -> FrameTangent:
    fdata = frame.fdata
    if not isinstance(fdata, FrameTangent):
        raise TypeError(
            f"{frame.primal!r} was not made by differentiated code, so it cannot be stepped "
            "here: call the generator function inside the differentiated function"
        )
    return fdata


def load_frame_rrule(f: _CoDual, frame: _CoDual) -> tuple[_CoDual, Pullback]:
    ft = _tangent(frame)
    g = frame.primal
    label, values = runtime.load_frame(g)
    fdatas, rdatas = ft.fdatas, ft.rdatas
    inner = NO_TANGENT if all(d is NO_TANGENT for d in fdatas) else fdatas
    y = CoDual((label, values), NO_TANGENT if inner is NO_TANGENT else (NO_TANGENT, inner))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if dy is not NO_TANGENT and dy[1] is not NO_TANGENT:
            for i, r in enumerate(dy[1]):
                rdatas[i] = increment(rdatas[i], r)
        g.label, g.values = label, values
        return (NO_TANGENT, NO_TANGENT)

    return y, pullback


def save_frame_rrule(
    f: _CoDual, frame: _CoDual, label: _CoDual, *values: _CoDual
) -> tuple[_CoDual, Pullback]:
    ft = _tangent(frame)
    g = frame.primal
    before = (g.label, g.values, ft.fdatas, ft.rdatas)
    runtime.save_frame(g, label.primal, *(v.primal for v in values))
    ft.fdatas, ft.rdatas = _saved(values)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        gathered = ft.rdatas
        g.label, g.values, ft.fdatas, ft.rdatas = before
        return (NO_TANGENT, NO_TANGENT, NO_TANGENT, *gathered)

    return CoDual(None, NO_TANGENT), pullback


@register_type_rule(runtime.load_frame)
def _load_frame_type(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.Tuple((T.INT, T.ANY))


@register_type_rule(runtime.save_frame)
def _save_frame_type(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.NONE


@attrs.frozen(eq=False)
class GeneratorCallRule:
    """Calling a generator function: a frame holding its arguments (one operand per
    parameter of its IR, in order: ``BoundRule`` binds a call's arguments)."""

    def __call__(self, f: _CoDual, *params: _CoDual) -> tuple[_CoDual, Pullback]:
        frame = runtime.GeneratorFrame(f.primal, tuple(p.primal for p in params))
        ft = FrameTangent(f.fdata, *_saved(params))

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            return (NO_TANGENT, *ft.rdatas)  # every step has been undone: what reached them

        return CoDual(frame, ft), pullback


@attrs.define(eq=False)
class GeneratorNextRule:
    """``next_or_stop(frame)`` (a ``for`` loop) or ``next(frame[, default])``: one step of
    the generator, through the derived rule of its resume function, one per generator
    function (``resume_rule`` makes it)."""

    resume_rule: t.Callable[[object], RRule]
    stop_iteration: bool = False  # next(): raise StopIteration at the end (or the default)
    _rules: dict[object, RRule] = attrs.field(factory=dict)

    def __call__(self, f: _CoDual, frame: _CoDual, *default: _CoDual) -> tuple[_CoDual, Pullback]:
        ft = _tangent(frame)
        fn = frame.primal.fn
        rule = self._rules.get(fn)
        if rule is None:
            rule = self._rules[fn] = self.resume_rule(fn)
        y, pullback = rule(CoDual(fn, ft.fn), frame)
        if self.stop_iteration and y.primal is runtime.STOP:
            pullback(NO_TANGENT)  # the step ended the generator: undo it now, then stop
            if default:
                return default[0], lambda dy: (NO_TANGENT, NO_TANGENT, dy)
            raise StopIteration
        n = 2 + len(default)

        def stepped(dy: t.Any) -> tuple[t.Any, ...]:
            pullback(dy)
            return (NO_TANGENT,) * n

        return y, stepped

    def reset(self) -> None:
        for rule in self._rules.values():
            reset = getattr(rule, "reset", None)
            if reset is not None:
                reset()


_STEP = CoDual(runtime.next_or_stop, NO_TANGENT)
_MAKE_LIST = CoDual(runtime.make_list, NO_TANGENT)


@attrs.define(eq=False)
class DrainRule:
    """A consumer that exhausts a generator (``sum(gen())``, ``list(gen())``, ``max``, ...):
    every step through ``step``, the items into a list (``make_list``'s rule), then the
    consumer's rule on the list (``consumer`` chooses it by the list's type)."""

    step: GeneratorNextRule
    make_list: RRule
    consumer: t.Callable[[tuple[T.Type, ...]], RRule]

    def __call__(self, f: _CoDual, frame: _CoDual, *rest: _CoDual, **kw: _CoDual) -> tuple[_CoDual, Pullback]:
        items: list[_CoDual] = []
        steps: list[Pullback] = []
        while True:
            y, pullback = self.step(_STEP, frame)
            steps.append(pullback)
            if y.primal is runtime.STOP:
                break
            items.append(y)
        made, list_pullback = self.make_list(_MAKE_LIST, *items)
        types = (T.typeof(made.primal), *(T.typeof(a.primal) for a in (*rest, *kw.values())))
        out, pullback = self.consumer(types)(f, made, *rest, **kw)

        def drained(dy: t.Any) -> tuple[t.Any, ...]:
            r = pullback(dy)
            item_rdata = list_pullback(r[1])[1:]
            steps[-1](NO_TANGENT)  # the step that found the end
            for step, rdata in zip(reversed(steps[:-1]), reversed(item_rdata)):
                step(rdata)
            return (r[0], NO_TANGENT, *r[2:])

        return out, drained


def iter_frame_rrule(f: _CoDual, frame: _CoDual) -> tuple[_CoDual, Pullback]:
    """``iter(frame)`` is the frame itself."""
    return frame, lambda dy: (NO_TANGENT, NO_TANGENT)

