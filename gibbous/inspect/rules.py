"""``rule_table``: which rule each call site of ``f`` resolves to, for these argument types.

The table comes from the resolution ``build_rrule`` itself performs: a ``Session`` (from
``gibbous.api``) builds the program of ``f`` as usual, and every call site the AD pass asks it
about is recorded along with what ``Session.site`` answered.  Nothing here re-decides how a
call gets its rule; it only names the answer.  A call site whose rule is missing (or
ambiguous) is recorded and the build goes on, so that one table shows all of them.

Kinds (``RuleRow.kind``):

* ``primitive``, ``zero-derivative`` — a registered rule (``gibbous.primitive``,
  ``gibbous.zero_derivative``);
* ``stateful`` — a registered stateful rule; each call site keeps a state of ``state_type``;
* ``inline`` — the library's rule for a scalar call, written out in the forward and reverse
  programs instead of called (``gibbous.rules.inline``);
* ``derived`` — a Python function: its rule is derived from its bytecode in turn;
* ``dynamic`` — the callee or its argument types are known only at run time: the rule is
  chosen per call, by the same resolution;
* ``primal`` — active, but no derivative can flow through it: run as is, fresh fdata;
* ``identity`` — returns one operand unchanged (``typing.cast``): the adjoint passes through;
* ``inactive`` — no derivative involved: copied into the forward program as it is;
* ``missing``, ``ambiguous`` — no rule, or two that match equally (``detail`` says which).
"""

from __future__ import annotations

import typing as t

import attrs

from gibbous.reverse.higher_order import MapRule
from gibbous.session import Maker, Session
from gibbous.rules.inline import InlineRule
from gibbous.ir import types as T
from gibbous.ir.core import Call, Constant, Function
from gibbous.ir.printer import format_type, function_namer
from gibbous.reverse.activity import Activity, analyse
from gibbous.reverse.primal_pass import identity_operand
from gibbous.rules.call_adapters import BoundRule, FillSeed, GenexprRule, PrimalRule
from gibbous.reverse.derived import LazyDerivedRule
from gibbous.reverse.dynamic_calls import CallExRule, DynamicRule
from gibbous.rules.registry import (
    AmbiguousRuleError,
    Context,
    DefaultContext,
    MissingRuleError,
    callable_name,
    lookup_rule,
)
from gibbous.rules.stateful import StatefulRRule

KINDS = (
    "primitive",
    "stateful",
    "inline",
    "zero-derivative",
    "derived",
    "dynamic",
    "primal",
    "identity",
    "inactive",
    "missing",
    "ambiguous",
)


@attrs.frozen
class RuleRow:
    """One call site of the function and the rule it resolved to."""

    line: int | None
    callee: str  # import path of a constant callee, else the IR value (``%g``)
    args: str  # argument types in the IR's syntax, keywords as ``name=type``
    kind: str  # one of KINDS
    detail: str  # the registration, state type, derived function or reason
    state_type: str | None = None  # for ``stateful``: the class of each site's state


def rule_table(
    f: t.Callable[..., object],
    *args: object,
    ctx: Context | None = None,
    passes: t.Any = None,
) -> list[RuleRow]:
    """One row per call site of ``f``'s IR (as ``build_rrule(f, *args)`` sees it, after the
    standard passes or ``passes``), in program order."""
    recorder = _Recorder(ctx or DefaultContext, False, passes)
    program = recorder.program(f, tuple(T.typeof(a) for a in args))
    typed: Function = program.description.typed
    activity = recorder.activity or analyse(typed, f)
    namer = function_namer(typed)
    return [_row(op, recorder, activity, namer.ref) for op in typed.calls()]


_Site = tuple[str, str, "str | None"]  # kind, detail, state type


class _Recorder(Session):
    """A ``Session`` that writes down what it answers for the call sites of the function it
    was asked for (depth 0), and that goes on past a missing or ambiguous rule."""

    def __init__(self, ctx: Context, debug: bool, passes: t.Any) -> None:
        super().__init__(ctx, debug, passes)
        self.sites: dict[Call, _Site] = {}
        self.activity: Activity | None = None
        self.depth = 0
        self.top_callee: object = None
        self.missing_inside: dict[int, int] = {}  # id(callee) -> missing rules in its body

    def site(self, op: Call, activity: Activity) -> Maker:
        top = self.depth == 0
        if top:
            self.activity = activity
            callee = op.callee
            self.top_callee = callee.value if isinstance(callee, Constant) else None
        self.depth += 1
        try:
            maker = super().site(op, activity)
        except (MissingRuleError, AmbiguousRuleError) as e:
            if top:
                kind = "missing" if isinstance(e, MissingRuleError) else "ambiguous"
                self.sites[op] = (kind, str(e).splitlines()[0], None)
            else:
                key = id(self.top_callee)
                self.missing_inside[key] = self.missing_inside.get(key, 0) + 1
            return lambda: None  # never called: the table's program is not instantiated
        finally:
            self.depth -= 1
        if top:
            self.sites[op] = self._describe(op, maker)
        return maker

    def inline(self, op: Call) -> InlineRule | None:
        found = super().inline(op)
        if found is not None and self.depth == 0:
            detail = f"{self._registration(op)}, written out in place"
            self.sites[op] = ("inline", detail, None)
        return found

    def _describe(self, op: Call, maker: Maker) -> _Site:
        rule = maker()
        if isinstance(rule, FillSeed):
            rule = rule.rule
        callee = op.callee.value if isinstance(op.callee, Constant) else None
        if isinstance(rule, StatefulRRule):
            state = rule.state_type.__qualname__
            return "stateful", f"{self._registration(op)}; state {state}", state
        if isinstance(rule, PrimalRule):
            return "primal", "no derivative can flow through it: runs as is", None
        if isinstance(rule, (DynamicRule, CallExRule, MapRule)):
            return "dynamic", "resolved at each call from the run-time callee and types", None
        if isinstance(rule, (LazyDerivedRule, GenexprRule, BoundRule)):
            detail = f"derived from the bytecode of {callable_name(callee)}"
            n = self.missing_inside.get(id(callee), 0)
            if n:
                detail += f" (its body has {n} missing rule{'s' if n > 1 else ''})"
            return "derived", detail, None
        registration = self._lookup(op)
        kind = "zero-derivative" if registration.kind == "zero_derivative" else registration.kind
        return kind, self._registration(op), None

    def _lookup(self, op: Call) -> t.Any:
        callee = t.cast(Constant, op.callee).value
        types = tuple(v.type for v in op.operands[1:])
        return lookup_rule(self.ctx, callee, types, op.kwnames, loc=op.loc)

    def _registration(self, op: Call) -> str:
        r = self._lookup(op)
        variant = f" [{r.variant}]" if r.variant else ""
        return f"{r.pattern.format(r.fn)}{variant} in {r.context.name}"


def _row(
    op: Call, recorder: _Recorder, activity: Activity, name_of: t.Callable[[t.Any], str]
) -> RuleRow:
    site = recorder.sites.get(op)
    if site is None:
        if op in activity.calls and identity_operand(op) is not None:
            index = identity_operand(op)
            site = ("identity", f"returns operand {index}: its adjoint passes through", None)
        else:
            site = ("inactive", "no derivative involved: runs as is", None)
    kind, detail, state = site
    callee = op.callee
    name = callable_name(callee.value) if isinstance(callee, Constant) else name_of(callee)
    types = [format_type(a.type, lenient=True) for a in op.args]
    types += [f"{k}={format_type(v.type, lenient=True)}" for k, v in op.kwargs.items()]
    line = op.loc.line if op.loc is not None else None
    return RuleRow(line, name, ", ".join(types), kind, detail, state)


def format_rule_table(rows: t.Sequence[RuleRow], *, inactive: bool = True) -> str:
    """The rows as an aligned text table (``inactive=False`` leaves out inactive calls)."""
    header = ("line", "callee", "argument types", "rule", "resolved to")
    body = [
        ("" if r.line is None else str(r.line), r.callee, f"({r.args})", r.kind, r.detail)
        for r in rows
        if inactive or r.kind != "inactive"
    ]
    widths = [max(len(row[i]) for row in (header, *body)) for i in range(len(header) - 1)]
    lines = []
    for row in (header, *body):
        cells = [row[0].rjust(widths[0])]
        cells += [cell.ljust(w) for cell, w in zip(row[1:-1], widths[1:])]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines) + "\n"


__all__ = ["KINDS", "RuleRow", "format_rule_table", "rule_table"]
