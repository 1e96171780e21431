"""``float_array(a, b, c)``: ``np.array([a, b, c])`` of floats, as the ``array-items`` pass
writes it (``gibbous.passes.array_items``), and its rule and inline form.

The result is a new 1-D float64 array; each item's gradient is the result's cotangent at its
index.  The general rule (``float_array(...)``) sends it as rdata of each item's class (a
``float`` or an ``np.float64``; none for anything else).  For up to ``INLINE_ITEMS`` ``f64``
items the ``float_items`` variant has an array form: the forward program builds the array and
its zero fdata, the reverse reads the fdata's items as Python floats (``fdata.tolist()``), one
adjoint per item, with no rule call, pullback or tuple of rdata.  A form has one arity, hence
one variant per number of items.
"""

from __future__ import annotations

import typing as t

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules.inline import InlineRule, called_form
from gibbous.library.common import CD, NT, Array, RuleResult, new_fdata, scalar_rdata
from gibbous.rules.registry import primitive
from gibbous.rules import frules
from gibbous.rules.emit import real_type, static_types
from gibbous.tangents.model import CoDual

#: The most items a ``np.array([...])`` literal has for its form to be written out.
INLINE_ITEMS = 8


@primitive(runtime.float_array, ...)
def float_array_rrule(f: CD, *items: CD) -> RuleResult:
    """``np.array([a, b, ...])`` of floats: the cotangent's items go back to the items."""
    y = f.primal(*(x.primal for x in items))
    yf = new_fdata(y)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        return (NT, *(scalar_rdata(x.primal, g) for x, g in zip(items, yf.tolist())))

    return CoDual(y, yf), pullback


def float_items_adjoint(fdata: Array) -> list[float]:
    """The items' adjoints: the result's cotangent, one Python float per item."""
    return t.cast(list[float], fdata.tolist())


runtime.register_object(float_items_adjoint, "float_items_adjoint")  # a path for the IR's text


def float_items_form(n: int) -> InlineRule:
    """The array form of ``float_array`` of ``n`` floats."""
    return called_form(
        "float_array", float_items_adjoint, (("result_fdata", -1),), (True,) * n, values=True
    )


for _n in range(1, INLINE_ITEMS + 1):
    primitive(
        runtime.float_array, *(T.FLOAT,) * _n, variant="float_items", inline=float_items_form(_n)
    )(float_array_rrule)


def _float_array_make(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``np.array([a, b, ...])`` of floats (``runtime.float_array``): the array of tangents."""
    if kwnames or not all(map(real_type, types)):
        return None
    n = len(types)
    if static_types(types):

        def emit(
            b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
        ) -> Value:
            items = [Constant(0.0) if d is None else d for d in tangents]
            return b.call(runtime.float_array, *items, type=z.type)

        return frules.Emit(emit)

    def items(z: t.Any, *a: t.Any) -> t.Any:
        return runtime.float_array(*(0.0 if d is None else d for d in a[n:]))

    return frules.checked(items, types)


frules.register(runtime.float_array, _float_array_make, numeric=True)
