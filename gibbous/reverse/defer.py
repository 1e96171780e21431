"""Which inline sites may defer their outer products to the end of the reverse program.

A product form that can (``InlineRule.deferred``: ``A @ v`` and ``v @ A`` of float64) adds
``g vᵀ`` into A's fdata through a stack of rows instead, flushed as one matrix product just
before the reverse program returns (``gibbous.rules.outer_sums``).  That is right only if
nothing reads A's fdata in between: the sum into it must be the only thing that happens to it
until the caller reads the gradient.  The conditions:

* The site is in a loop: a single product gains nothing from a stack of one row.
* A is a parameter of the function.  Its fdata is the caller's, read after the reverse
  returns; a value made inside the function would have its cotangent read by its producer's
  adjoint, before the return.
* No active call writes into an operand with fdata (an array).  The reverse of a write reads and resets the written
  array's fdata (and a parameter's fdata may be shared with another's view).
* Every active call is written inline (or passes its operand on unchanged).  A rule called
  through its pullback (a derived child, a stateful rule) may read any fdata it holds.

Every other inline form only adds into its operands' fdata, or reads its own result's, which
is new (or, for a view, a view whose form reads nothing): so between the deferred additions
and the flush, A's fdata is only added into, and addition does not care about order.
"""

from __future__ import annotations

import typing as t

from gibbous.ir.cfg import loop_depth
from gibbous.ir.core import Block, Call, Function
from gibbous.reverse.activity import Activity, carries_fdata, may_write
from gibbous.rules.inline import InlineRule


def deferred_forms(
    f: Function,
    act: Activity,
    inline: t.Mapping[Call, InlineRule],
    skipped: t.Collection[Call],
    passes_on: t.Callable[[Call], bool],
) -> dict[Call, InlineRule]:
    """The inline sites of ``f`` whose deferring form may replace their form, with that form.
    ``skipped``: active calls with nothing in the reverse; ``passes_on(op)``: ``op`` returns
    an operand unchanged (its adjoint moves the cotangent on)."""
    params = set(f.args)
    found = {
        op: rule.deferred[1]
        for op, rule in inline.items()
        if rule.deferred is not None and op.args[rule.deferred[0]] in params
    }
    if not found:
        return {}
    depth = loop_depth(f)
    found = {op: rule for op, rule in found.items() if depth[t.cast(Block, op.parent)] > 0}
    for op in act.calls:
        if op in skipped:
            continue
        if may_write(op) and any(act.is_active(v) and carries_fdata(v.type) for v in op.operands):
            return {}
        if op not in inline and not passes_on(op):
            return {}
    return found
