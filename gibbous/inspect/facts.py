"""``facts(fn)``: everything the library knows about one callable, in one record.

What gibbous knows about a callable is spread over the tables that use it: the registered
rules, the type rules, inference's container-aware handlers, the purity table, the inline forms
of the AD pass, the calls activity analysis takes to write nothing, the identities, and the
formulas of the elementwise derivatives.  Each is looked up here as the library looks it up,
through ``gibbous.ir.names.callable_key``, so the record shows what a call of ``fn`` meets.

    >>> print(format_facts(facts(np.sin)))

The command line: ``python -m gibbous facts numpy.sin``.
"""

from __future__ import annotations

import typing as t

import attrs

from gibbous.ir.purity import purity_entry
from gibbous.reverse.activity import WRITE_NOTHING
from gibbous.reverse.primal_pass import IDENTITIES
from gibbous.infer.handlers import has_handler
from gibbous import optional
from gibbous.rules import render
from gibbous.rules.formulas import Expr
from gibbous.library.elementwise.tables import RULE_FORMULAS
from gibbous.rules.public_names import callable_name
from gibbous.rules.registry import Context, DefaultContext
from gibbous.infer.typerules.table import lookup_type_rule

Purity = t.Literal["pure", "conditional", "unregistered"]


@attrs.frozen
class RuleFact:
    """One registered rule: ``pattern`` as ``Registration.describe`` writes it."""

    pattern: str
    kind: str
    context: str
    origin: str
    variant: str | None = None


@attrs.frozen
class CallableFacts:
    """What the library knows about ``name``; ``formulas`` are the derivatives of the
    elementwise rules, by operand (``x``, ``y``), in the vocabulary of
    ``gibbous.rules.formulas`` (``g`` the cotangent, ``z`` the result)."""

    name: str
    rules: tuple[RuleFact, ...]
    type_rule: bool
    folds: bool
    stores: bool
    inference_handler: bool
    purity: Purity
    purity_condition: str | None
    inline: tuple[str, ...]
    writes_nothing: bool
    identity_operand: int | None  # an IR operand index: 0 is the callee
    formulas: tuple[str, ...]


def facts(fn: object, ctx: Context = DefaultContext) -> CallableFacts:
    """Gather what every table has for ``fn`` (rules: those of ``ctx`` and its parents)."""
    optional.load()  # the rules of optional libraries imported so far
    registrations = [r for c in ctx.chain() for r in c.registrations(fn)]
    rules = tuple(
        RuleFact(r.describe(), r.kind, r.context.name, r.origin, r.variant)
        for r in registrations
    )
    spec = lookup_type_rule(fn)
    registered, when = purity_entry(fn)
    purity: Purity = "pure" if when is None else "conditional"
    formulas: dict[str, None] = {}  # ordered, without repeats
    for r in registrations:
        for operand, formula in zip("xy", RULE_FORMULAS.get(r.rule, ())):
            if formula is not None:
                formulas[f"{operand}: {_text(formula)}"] = None
    return CallableFacts(
        name=callable_name(fn),
        rules=rules,
        type_rule=spec is not None,
        folds=spec is not None and spec.fold,
        stores=spec is not None and spec.stores,
        inference_handler=has_handler(fn),
        purity=purity if registered else "unregistered",
        purity_condition=None if when is None else _name_of(when),
        inline=tuple(
            f"{r.pattern.format(fn)}: {r.inline.name}" for r in registrations if r.inline
        ),
        writes_nothing=fn in WRITE_NOTHING,
        identity_operand=IDENTITIES.get(fn),
        formulas=tuple(formulas),
    )


def _name_of(fn: object) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or fn)


def _text(formula: Expr) -> str:
    text = render.source(formula, real=False)
    return text[1:-1] if text.startswith("(") and text.endswith(")") else text


def format_facts(f: CallableFacts) -> str:
    """The record as a screen of text."""
    lines = [f.name, ""]
    if f.rules:
        lines.append(f"rules ({len(f.rules)}):")
        for r in f.rules:
            lines.append(f"  {r.pattern}  (from {r.origin})")  # the pattern names a variant
    else:
        lines.append("rules: none registered (a Python function's is derived from its code)")
    if f.formulas:
        lines.append("derivative (g: the result's cotangent, z: the result):")
        lines.extend(f"  {text}" for text in f.formulas)
    if f.type_rule:
        extras = ["folds constants"] * f.folds + ["may store into containers"] * f.stores
        lines.append("type rule: yes" + (f" ({', '.join(extras)})" if extras else ""))
    else:
        lines.append("type rule: none")
    handler = "a container-aware handler" if f.inference_handler else "the type rule alone"
    lines.append(f"type inference: {handler}")
    purity = {
        "pure": "pure",
        "conditional": f"pure when {f.purity_condition}(argument types) holds",
        "unregistered": "not registered (calls are kept, and taken to write their arguments)",
    }[f.purity]
    lines.append(f"purity: {purity}")
    lines.append(f"inline forms: {', '.join(f.inline) if f.inline else 'none'}")
    lines.append(f"writes nothing (whatever its arguments): {'yes' if f.writes_nothing else 'no'}")
    if f.identity_operand is not None:
        # Operand 0 is the callee: operand i is the i-th argument.
        lines.append(
            f"identity: returns its argument {f.identity_operand} (counting from 1) unchanged; "
            "the adjoint passes through"
        )
    return "\n".join(lines) + "\n"
