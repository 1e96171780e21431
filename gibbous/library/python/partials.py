"""``functools.partial(func, *args, **keywords)`` made inside differentiated code.

The partial's tangent is made of its parts' (``gibbous.tangents.model``): its fdata holds the
fdata of the function, arguments and keywords it binds, so that calling it
(``gibbous.rules.callables.PartialRule``) adds into the same arrays; its rdata, which the
pullback of a call returns, splits back into the rdata of each bound operand.
"""

from __future__ import annotations

import functools
import typing as t

from gibbous.ir import types as T
from gibbous.ir.purity import register_pure
from gibbous.rules.callables import partial_tangent
from gibbous.library.common import ANY, CD, NT, RuleResult
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual, Tangent
from gibbous.infer.typerules.table import register_type_rule


def _field(tangent: t.Any, name: str) -> t.Any:
    return tangent.fields[name] if isinstance(tangent, Tangent) else NT


@primitive(functools.partial, ANY, ...)
def partial_rrule(f: CD, func: CD, *args: CD, **keywords: CD) -> RuleResult:
    made = functools.partial(func.primal, *(a.primal for a in args), **{
        k: v.primal for k, v in keywords.items()
    })
    names = tuple(made.keywords)  # the keywords, in the order the partial keeps them
    fdata = partial_tangent(
        func.fdata, [a.fdata for a in args], {k: keywords[k].fdata for k in names}
    )

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        dargs = _field(dy, "args")
        dkeywords = _field(dy, "keywords")
        return (
            NT,
            _field(dy, "func"),
            *(NT if dargs is NT else dargs[i] for i in range(len(args))),
            *(_field(dkeywords, k) for k in keywords),
        )

    return CoDual(made, fdata), pullback


@register_type_rule(functools.partial)
def _partial_type(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    return T.Object(functools.partial)


register_pure(functools.partial)
