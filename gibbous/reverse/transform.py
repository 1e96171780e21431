"""The AD pass: a typed function becomes a forward and a reverse IR function (Mooncake's design).

**Forward.**  The primal's blocks, in the primal's order, with a ``CoDual`` for every active
value.  Inactive calls are copied as they are, on primal values.  An active call
``%y = call fn(%x)`` becomes

    %r = call <rule_k>(<CoDual(fn)>, %x_codual)      # the call site's own rule
    %y = call operator.getitem(%r, 0)
    %pb = call operator.getitem(%r, 1)
    call <push_k>(%pb)                               # onto the site's stack

An edge into a block with several incoming edges passes through a new block that pushes the
edge's number onto that block's stack; a return pushes its number where there are several.

**Reverse.**  One block ``R(B)`` per primal block.  Adjoints (rdata: floats, complex numbers,
tuples of them) are values threaded through the reverse blocks as block arguments, one per
active value that has rdata, all starting at zero; fdata needs none (rules increment it in
place).  ``R(B)`` walks ``B``'s active calls backwards: pop the pullback, call it with the
result's adjoint, reset that adjoint to zero (a loop's next iteration starts fresh), add the
rdata it returns into the operands' adjoints by operand index.  Then the adjoints of ``B``'s
block arguments flow to the values the predecessor passed on the edge taken (popped where
there are several), and control goes to ``R(predecessor)``.  ``R(entry)`` returns the
adjoints of the callable and of each argument.  Dead-code elimination then drops the
adjoints no block reads, so each reverse block passes only the live ones.

**Exceptions.**  A guarded call (``guard %r, ^normal, except ^handler``) is first put in a
block of its own (``isolate_guarded_calls``), so that when it raises, nothing else of its
block is left half done: the forward's handler edge records itself like any edge, and the
reverse of that edge skips the call (``Reverse.raised_block``) while the reverse of the normal
edge pops its pullback as usual.

Placeholders stand for what each rule instance binds for itself (rules, push and pop of its
stacks); ``gibbous.backends.numpy.adcodegen`` compiles both functions once and binds a new set
per instance.
"""

from __future__ import annotations


import typing as t

import attrs
import numpy as np

from gibbous.ir import types as T
from gibbous.ir.core import Constant, Function, Guard, Jump
from gibbous.reverse.activity import Activity
from gibbous.reverse.primal_pass import Forward, InlineFinder, Placeholder, SiteMaker, short_name
from gibbous.reverse.pullback_pass import (
    Reverse,
    fold_constant_arguments,
    fold_zero_sums,
    slot_type_is_precise,
)
from gibbous.passes.manager import PassManager
from gibbous.tangents.model import CoDual

__all__ = [
    "ADFunctions",
    "Placeholder",
    "SiteMaker",
    "differentiate",
    "isolate_guarded_calls",
    "prune_attribute_reads",
    "slot_type_is_precise",
]


@attrs.frozen(eq=False)
class ADFunctions:
    """The result of the AD pass: what the backend compiles, and what it needs to bind."""

    forward: Function
    reverse: Function
    placeholders: tuple[Placeholder, ...]
    n_stacks: int
    seed: str  # "none" if no returned value has rdata, else "fill" (see DerivedPullback)
    constants: tuple[tuple[object, str], ...]  # the CoDuals of constants, with name hints


def differentiate(
    f: Function,
    activity: Activity,
    site_maker: SiteMaker,
    *,
    inline: InlineFinder = lambda op: None,
    verify: bool = False,
    shared: dict[tuple[int, bool], tuple[object, CoDual[t.Any, t.Any]]] | None = None,
) -> ADFunctions:
    """The forward and reverse functions of ``f``; ``site_maker(op)`` says how each instance
    makes the rule of the active call ``op``, ``inline(op)`` which active calls are written out
    in place instead (``gibbous.rules.inline``); ``shared`` holds the CoDuals of constants
    across the programs of a build (``gibbous.reverse.shared_objects``)."""
    isolate_guarded_calls(f)  # (done already by gibbous.session, before activity)
    fwd = Forward(f, activity, site_maker, inline, shared)
    fwd.build()
    rev = Reverse(fwd)
    rev.build()
    PassManager(["dce", "simplify-cfg"], verify=verify).run(rev.g)
    fold_constant_arguments(rev.g)
    fold_zero_sums(rev.g)
    PassManager(["dce"], verify=verify).run(rev.g)
    constants = tuple((cd, f"{short_name(v)}_cd") for v, cd in fwd.constants.values())
    return ADFunctions(
        fwd.g, rev.g, tuple(fwd.placeholders), fwd.n_stacks, rev.seed, constants
    )


def isolate_guarded_calls(f: Function) -> None:
    """Move every guarded call, with its guard, into a block of its own after the calls that
    came before it, so that the reverse of a raising call's handler edge has nothing of its
    block to undo but the calls that completed (the ones before, in the block it leaves)."""
    for block in list(f.blocks):
        term = block.terminator
        calls = block.calls
        if not isinstance(term, Guard) or len(calls) < 2:
            continue
        guarded = calls[-1]
        alone = f.add_block(None, after=block)
        for op in (guarded, term):
            op.detach()
            alone.append(op)
        block.append(Jump(alone, [], loc=guarded.loc))


def prune_attribute_reads(f: Function) -> None:
    """Delete unused attribute reads of builtin values (``xs.append`` whose call type
    inference resolved to ``list.append(xs, ...)``): reading them has no effect, but an active
    one would need a rule."""
    for op in list(f.calls()):
        callee = op.callee
        if (
            isinstance(callee, Constant)
            and callee.value is getattr
            and not op.result.has_uses()
            and len(op.args) == 2
            and T.python_class(op.args[0].type) in _PLAIN_CLASSES
        ):
            op.erase()


_PLAIN_CLASSES = (list, dict, tuple, set, np.ndarray, float, int, complex, bool, str)
