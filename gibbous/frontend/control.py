"""How a block of the SSA builder ends: jumps, branches, FOR_ITER, return and raise."""

from __future__ import annotations

import builtins
import operator
import typing as t

from gibbous.frontend import blocks
from gibbous.frontend import ops
from gibbous.frontend.decode import Decoded
from gibbous.ir import runtime
from gibbous.ir.core import Call, Constant, Result, Value
from gibbous.ir.exceptions import throw
from gibbous.ir.names import CallableSet

if t.TYPE_CHECKING:
    from gibbous.frontend.build import FunctionBuilder


# Calls whose result is already a bool: a branch on them needs no operator.truth.
_BOOL_RESULTS: CallableSet[object] = CallableSet(
    [operator.truth, operator.not_, operator.is_, operator.is_not, operator.contains,
     builtins.isinstance, builtins.issubclass, builtins.callable, builtins.hasattr, runtime.is_stop]
)


def _callee_value(call: Call) -> object:
    return call.callee.value if isinstance(call.callee, Constant) else None


def _target(fb: FunctionBuilder, offset: int) -> blocks.Block:
    return fb.analysis.block_at(offset)


def fall_through(fb: FunctionBuilder, block: blocks.Block) -> blocks.Block:
    return fb.analysis.blocks[block.index + 1]


def _truth(fb: FunctionBuilder, x: Value) -> Value:
    if isinstance(x, Result) and _callee_value(x.op) in _BOOL_RESULTS:
        return x
    return fb.call(operator.truth, x)


def _branch(fb: FunctionBuilder, cond: Value, when_true: blocks.Block, true_args: list[Value],
            when_false: blocks.Block, false_args: list[Value]) -> None:
    fb.b.branch(cond, fb.ir_blocks[when_true.index], true_args,
                fb.ir_blocks[when_false.index], false_args)


def terminate(fb: FunctionBuilder, block: blocks.Block, d: Decoded) -> None:
    match d.op:
        case ops.Jump(target=target):
            succ = _target(fb, target)
            fb.b.jump(fb.ir_blocks[succ.index], *fb.edge_args(succ))
        case ops.Return() if fb.resume:  # the generator finished (its value is lost)
            fb.pop_value()
            fb.call(runtime.save_frame, fb.func.args[0], -1)
            fb.b.ret(fb.const(runtime.STOP))
        case ops.Return():
            value = fb.pop_value()
            fb.b.ret(fb.values if fb.values is not None else value)
        case ops.Raise(argc=argc):
            _raise(fb, argc, fb.analysis.handled.get(fb.analysis.ops.index(d)))
        case ops.Reraise():
            _throw(fb, fb.pop_value())
        case ops.PopJumpIf(value=value, target=target, none_check=none_check):
            x = fb.pop_value()
            cond = fb.call(operator.is_, x, None) if none_check else _truth(fb, x)
            jump, fall = _target(fb, target), fall_through(fb, block)
            jump_args, fall_args = fb.edge_args(jump), fb.edge_args(fall)
            if value:
                _branch(fb, cond, jump, jump_args, fall, fall_args)
            else:
                _branch(fb, cond, fall, fall_args, jump, jump_args)
        case ops.JumpIfOrPop(value=value, target=target):
            cond = _truth(fb, fb.peek_value(1))
            jump = _target(fb, target)
            jump_args = fb.edge_args(jump)
            fb.pop()
            fall = fall_through(fb, block)
            fall_args = fb.edge_args(fall)
            if value:
                _branch(fb, cond, jump, jump_args, fall, fall_args)
            else:
                _branch(fb, cond, fall, fall_args, jump, jump_args)
        case ops.ForIter(exit=exit):
            it = fb.peek_value(1)
            body = fall_through(fb, block)
            item = fb.call(runtime.next_or_stop, it, name=fb.hint)
            done = fb.call(runtime.is_stop, item)
            fb.push(item)
            body_args = fb.edge_args(body)
            fb.pop()
            fb.pop()
            leave = _target(fb, exit)
            _branch(fb, done, leave, fb.edge_args(leave), body, body_args)
            # The item stays a block argument of the body, for type inference to refine.
            n_stack = sum(s is not blocks.Slot.NULL for s in body.entry_stack or ())
            fb.protected.add(id(fb.ir_blocks[body.index].args[n_stack - 1]))
        case _:
            raise AssertionError(f"not a terminator: {d.op!r}")


def _raise(fb: FunctionBuilder, argc: int, handled: int | None) -> None:
    exc: Value
    if argc == 0:
        if handled is None:
            raise fb.unsupported(
                "a bare 'raise' outside an except block",
                "raise an exception instance or class explicitly",
            )
        exc = fb.value(fb.stack[handled])  # the exception being handled
    elif argc == 2:
        cause = fb.pop_value()
        exc = fb.call(runtime.exception_with_cause, fb.pop_value(), cause)
    else:
        exc = _exception(fb, fb.pop_value())
    _throw(fb, exc)


def _throw(fb: FunctionBuilder, exc: Value) -> None:
    """``raise exc``, into the handler that covers it if there is one."""
    if fb.handler is not None:
        fb.call(throw, exc)  # the normal side, never reached, raises as well
    fb.b.raise_(exc)


def _exception(fb: FunctionBuilder, exc: Value) -> Value:
    def is_exception_class(v: object) -> bool:
        return isinstance(v, type) and issubclass(v, BaseException)

    if isinstance(exc, Constant) and is_exception_class(exc.value):
        return fb.call(exc)  # raise ValueError  ->  raise ValueError()
    if isinstance(exc, Result) and is_exception_class(_callee_value(exc.op)):
        return exc
    return fb.call(runtime.exception_instance, exc)
