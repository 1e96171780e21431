"""Adapters that fit a rule to a call: where the call and the rule disagree on the callee,
the arguments or what the pullback is given.

``PrimalRule`` runs a call no derivative can flow through; ``FillSeed`` gives a pullback zero
rdata for a result of vague type; ``BoundRule`` binds keywords, defaults, ``*args`` and
``**kwargs`` to a derived rule's positional parameters; ``BoundMethodRule`` calls
``obj.method`` through the rule of ``method``; ``GenexprRule`` calls a generator expression's
function through the derived rule of the function it wraps.
"""

from __future__ import annotations

import types as pytypes
import typing as t

import attrs

from gibbous.ir import runtime
from gibbous.rules.registry import Pullback, RRule
from gibbous.tangents.model import (
    NO_TANGENT,
    CoDual,
    MutableTangent,
    Tangent,
    fdata_of,
    increment,
    is_differentiable,
    rdata_of,
    tangent_from,
    zero_fdata,
    zero_rdata,
)
from gibbous.tangents.model import accum

# Adapters whose ``reset`` is their ``rule``'s: ``DerivedRule.reset`` looks through them.
# The modules defining them register them (``delegate_reset``).
_DELEGATES: set[type] = set()


def delegate_reset(*types: type) -> None:
    """``DerivedRule.reset`` resets the ``rule`` of instances of ``types`` in their place."""
    _DELEGATES.update(types)


_CoDual = CoDual[t.Any, t.Any]


@attrs.frozen(eq=False)
class PrimalRule:
    """A call that no derivative can flow through: none of its operands has a tangent.

    Runs the primal; the result gets zero fdata (it may be mutated later).  With ``check``,
    every call then makes sure no operand has a tangent (the types could not tell), and
    raises ``MissingRuleError`` otherwise, rather than drop a derivative.  The primal runs
    first: a call Python refuses (``2.0 * "a"``) raises what Python raises, for the code to
    catch.
    """

    check: t.Callable[[tuple[object, ...]], None] | None = None

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        y = f.primal(*(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
        if self.check is not None:
            self.check((f.primal, *(a.primal for a in args), *(a.primal for a in kwargs.values())))
        n = 1 + len(args) + len(kwargs)
        return CoDual(y, zero_fdata(y)), _NoRData(n)


@attrs.frozen(slots=True)
class _NoRData:
    n: int

    def __call__(self, dy: object) -> tuple[t.Any, ...]:
        return (NO_TANGENT,) * self.n


@attrs.frozen(eq=False)
class FillSeed:
    """Wraps a rule whose result type is not known precisely: its pullback gets zero rdata
    instead of ``NoTangent()`` when nothing was added to the result's adjoint."""

    rule: RRule

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        y, pullback = self.rule(f, *args, **kwargs)
        if not is_differentiable(y.primal):
            return y, pullback
        primal = y.primal

        def filled(dy: t.Any) -> tuple[t.Any, ...]:
            return pullback(zero_rdata(primal) if dy is NO_TANGENT else dy)

        return y, filled

    def reset(self) -> None:
        reset = getattr(self.rule, "reset", None)
        if reset is not None:
            reset()


@attrs.frozen
class Packed:
    """A ``*args`` (``names`` None) or ``**kwargs`` parameter made of the operands
    ``indices`` (named ``names``)."""

    indices: tuple[int, ...]
    names: tuple[str, ...] | None = None

    def codual(self, operands: t.Sequence[_CoDual]) -> _CoDual:
        parts = [operands[i] for i in self.indices]
        if self.names is None:
            fdata = tuple(p.fdata for p in parts)
            collapsed = NO_TANGENT if all(d is NO_TANGENT for d in fdata) else fdata
            return CoDual(tuple(p.primal for p in parts), collapsed)
        # A dict's fdata is its whole tangent: each value's fdata and a zero rdata, which the
        # callee's pullbacks increment and ``rdata`` reads back.
        tangent = {
            n: tangent_from(p.primal, p.fdata, zero_rdata(p.primal))
            for n, p in zip(self.names, parts)
        }
        return CoDual({n: p.primal for n, p in zip(self.names, parts)}, tangent)

    def rdata(self, param: _CoDual, r: t.Any) -> list[t.Any]:
        """The rdata of each operand, from the parameter's rdata ``r`` (or its tangent)."""
        if self.names is None:
            return [NO_TANGENT] * len(self.indices) if r is NO_TANGENT else list(r)
        return [rdata_of(param.fdata[n]) for n in self.names]


Source = t.Union[int, None, Packed]


@attrs.frozen(eq=False)
class BoundRule:
    """A derived rule called with keywords, relying on defaults, or passing ``*args`` or
    ``**kwargs``.

    ``order[j]`` says where parameter ``j`` of the callee's IR comes from: operand ``i`` of the
    call (callee excluded), a default, or a ``Packed`` group of operands.  A default is read
    from the callee when called (``slots[j]``: ``("pos", k)`` is ``__defaults__[k]``, ``("kw",
    name)`` is ``__kwdefaults__[name]``); where the callee's tangent has its defaults (a function
    made with differentiable defaults), the default's tangent comes from there and its
    gradient goes back there; else ``defaults[j]``, the CoDual made when the rule was built,
    if the default is still that value.  The pullback returns rdata in the call's operand
    order.
    """

    rule: RRule
    order: tuple[Source, ...]
    defaults: tuple[_CoDual | None, ...]
    n_operands: int
    slots: tuple[tuple[str, t.Any] | None, ...] = ()

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        operands = (*args, *kwargs.values())  # keywords arrive in the call's order
        params: list[_CoDual] = []
        back: list[tuple[int, MutableTangent, str, t.Any]] = []  # defaults to add gradients to
        for j, (i, d) in enumerate(zip(self.order, self.defaults)):
            if isinstance(i, int):
                params.append(operands[i])
            elif isinstance(i, Packed):
                params.append(i.codual(operands))
            else:
                param, target = self._default(f, j, t.cast(_CoDual, d))
                params.append(param)
                if target is not None:
                    back.append((j, *target))
        y, pullback = self.rule(f, *params)
        order, n = self.order, self.n_operands

        def reordered(dy: t.Any) -> tuple[t.Any, ...]:
            r = pullback(dy)
            out = [r[0], *(NO_TANGENT,) * n]
            for j, source in enumerate(order):
                if isinstance(source, int):
                    out[1 + source] = accum(out[1 + source], r[1 + j])
                elif isinstance(source, Packed):
                    for i, rdata in zip(source.indices, source.rdata(params[j], r[1 + j])):
                        out[1 + i] = accum(out[1 + i], rdata)
            for j, fdata, field, key in back:
                _add_to_default(fdata, field, key, r[1 + j])
            return tuple(out)

        return y, reordered

    def _default(
        self, f: _CoDual, j: int, kept: _CoDual
    ) -> tuple[_CoDual, tuple[MutableTangent, str, t.Any] | None]:
        slot = self.slots[j] if self.slots else None
        if slot is None:
            return kept, None
        where, key = slot
        field = "__defaults__" if where == "pos" else "__kwdefaults__"
        value = getattr(f.primal, field)[key]
        fdata = f.fdata
        if isinstance(fdata, MutableTangent) and field in fdata.fields:
            return CoDual(value, fdata_of(fdata.fields[field][key])), (fdata, field, key)
        if kept.primal is value:
            return kept, None
        return CoDual(value, zero_fdata(value)), None

    def reset(self) -> None:
        reset = getattr(self.rule, "reset", None)
        if reset is not None:
            reset()


def _add_to_default(fdata: MutableTangent, field: str, key: t.Any, rdata: t.Any) -> None:
    """Add a default's rdata into its tangent in its function's tangent."""
    if rdata is NO_TANGENT:
        return
    tangents = fdata.fields[field]
    if field == "__kwdefaults__":
        tangents[key] = increment(tangents[key], rdata)
        return
    parts = list(tangents)
    parts[key] = increment(parts[key], rdata)
    fdata.fields[field] = tuple(parts)


@attrs.frozen(eq=False)
class BoundMethodRule:
    """``obj.method(*args)`` through the rule of ``method(obj, *args)``: the callee's rdata is
    its receiver's (a bound method's tangent is that of ``__self__``)."""

    rule: RRule
    function: object

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        receiver = getattr(f.primal, "__self__")
        fdata = f.fdata  # the bound method's: Tangent({"__self__": ...}) or NoTangent()
        self_fdata = fdata.fields["__self__"] if isinstance(fdata, Tangent) else NO_TANGENT
        y, pullback = self.rule(
            CoDual(self.function, NO_TANGENT), CoDual(receiver, self_fdata), *args, **kwargs
        )
        names = ("__self__", "__func__") if isinstance(f.primal, pytypes.MethodType) else ()

        def unbound(dy: t.Any) -> tuple[t.Any, ...]:
            r = pullback(dy)
            callee: t.Any = NO_TANGENT
            if r[1] is not NO_TANGENT:
                fields = dict.fromkeys(names or ("__self__",), NO_TANGENT)
                fields["__self__"] = r[1]
                callee = Tangent(fields)
            return (callee, *r[2:])

        return y, unbound

    def reset(self) -> None:
        reset = getattr(self.rule, "reset", None)
        if reset is not None:
            reset()


@attrs.frozen(eq=False)
class GenexprRule:
    """The rule of a generator expression's function (``runtime.GenexprFunction``), through the
    derived rule of the function it wraps: its tangent is ``MutableTangent({"fn": ...})``."""

    rule: RRule

    def __call__(self, f: _CoDual, *args: _CoDual) -> tuple[_CoDual, Pullback]:
        fdata = f.fdata
        inner = fdata.fields.get("fn", NO_TANGENT) if isinstance(fdata, MutableTangent) else fdata
        y, pullback = self.rule(CoDual(f.primal.fn, inner), *args)

        def outer(dy: t.Any) -> tuple[t.Any, ...]:
            return (NO_TANGENT, *pullback(dy)[1:])

        return y, outer

    def reset(self) -> None:
        reset = getattr(self.rule, "reset", None)
        if reset is not None:
            reset()


delegate_reset(BoundRule, FillSeed, GenexprRule, BoundMethodRule)
