"""Generator functions lowered to resume functions: a yield saves the live values in the
frame and returns; the entry dispatches on where the generator stopped."""

from __future__ import annotations

import operator
import typing as t

from gibbous.frontend import blocks
from gibbous.frontend.control import fall_through
from gibbous.ir import runtime
from gibbous.ir.core import Location, Value

if t.TYPE_CHECKING:
    from gibbous.frontend.build import FunctionBuilder


def yield_value(fb: FunctionBuilder, block: blocks.Block) -> None:
    """``yield v``: save what the code after it needs in the frame, and return ``v``; the
    dispatch at the entry jumps there with the frame's values when resumed."""
    value = fb.pop_value()
    fb.push(fb.const(None))  # what iteration sends in; a placeholder while saving
    succ = fall_through(fb, block)
    args = fb.edge_args(succ)
    sent = sum(s is not blocks.Slot.NULL for s in succ.entry_stack or ()) - 1
    label = len(fb.continuations) + 1
    frame = fb.func.args[0]
    fb.call(runtime.save_frame, frame, label, *(a for i, a in enumerate(args) if i != sent))
    fb.continuations.append((label, fb.ir_blocks[succ.index], sent, len(args)))
    fb.b.ret(value)


def dispatch(fb: FunctionBuilder, first: blocks.Block, initial: dict[str, Value]) -> None:
    """The entry of a resume function: load the frame, and go where the generator
    stopped: to its start with its arguments (label 0), after a yield with the values
    saved there, or nowhere if it finished (``STOP``)."""
    fb.b.at_end(fb.func.entry)
    fb.b.loc = Location(fb.file, fb.code.co_firstlineno)
    fb.handler = None
    loaded = fb.call(runtime.load_frame, fb.func.args[0], name="loaded")
    label = fb.call(operator.getitem, loaded, 0, name="label")
    saved = fb.call(operator.getitem, loaded, 1, name="saved")
    arms = [(0, fb.ir_blocks[first.index], 0, 0)]
    arms += [(k, block, sent, n) for k, block, sent, n in fb.continuations]
    for k, block, sent, n in arms:
        here, rest = fb.func.add_block(), fb.func.add_block()
        fb.b.branch(fb.call(operator.eq, label, k), here, [], rest, [])
        fb.b.at_end(here)
        if k == 0:  # the start, with the arguments
            fb.stack, fb.locals = [], dict(initial)
            for i, name in enumerate(fb.arg_names):
                fb.locals[name] = fb.call(operator.getitem, saved, i, name=name)
            args = fb.edge_args(first)
        else:  # the values saved at yield k, and what iteration sends in
            args = [fb.call(operator.getitem, saved, i) for i in range(n - 1)]
            args.insert(sent, fb.const(None))
        fb.b.jump(block, *args)
        fb.b.at_end(rest)
    fb.b.ret(fb.const(runtime.STOP))  # finished: every next stops
