"""A tiny reference interpreter of the IR, for tests only: walk the blocks, call the callees.

It checks the frontend's conventions as it goes: a branch condition is a Python bool, a jump
passes exactly as many values as its target takes.  With ``deep``, callees it selects (user
functions, nested functions, generator expressions) run through their own IR as well.
"""

from __future__ import annotations

import typing as t

from gibbous.frontend import function_ir
from gibbous.ir import runtime
from gibbous.ir.core import (
    Block,
    Branch,
    Call,
    Constant,
    Function,
    Guard,
    Jump,
    Raise,
    Return,
    Value,
)
from gibbous.ir.exceptions import GibbousError, caught


Deep = t.Callable[[object], bool]


def call(fn: t.Callable[..., object], args: t.Sequence[object], kwargs: dict[str, object],
         deep: Deep | None) -> object:
    if deep is None or not deep(fn):
        return fn(*args, **kwargs)
    ir = _IR.get(id(fn))
    if ir is None or ir[0] is not fn:
        ir = _IR[id(fn)] = (fn, function_ir(fn))
    return run(ir[1], *runtime.bind_arguments(fn, args, kwargs), deep=deep)


_IR: dict[int, tuple[object, Function]] = {}


def run(f: Function, *args: object, deep: Deep | None = None, max_steps: int = 10**6) -> object:
    """Run ``f`` on ``args`` (its IR arguments, defaults already applied)."""
    if len(args) != len(f.args):
        raise TypeError(f"@{f.name} takes {len(f.args)} arguments, got {len(args)}")
    env: dict[int, object] = {}

    def val(v: Value) -> object:
        if isinstance(v, Constant):
            return v.value
        return env[id(v)]

    def enter(block: Block, values: t.Sequence[object]) -> Block:
        assert len(values) == len(block.args), "jump arity differs from the target's"
        for arg, value in zip(block.args, values):
            env[id(arg)] = value
        return block

    block = enter(f.entry, args)
    exception: BaseException | None = None  # what the last handler edge caught
    for _ in range(max_steps):
        ops = block.ops
        for k, op in enumerate(ops):
            match op:
                case Call():
                    callee = t.cast(t.Callable[..., object], val(op.callee))
                    if callee is caught:
                        env[id(op.result)] = exception
                        continue
                    args_ = [val(a) for a in op.args]
                    guard = ops[k + 1] if k + 1 < len(ops) else None
                    if not isinstance(guard, Guard):
                        env[id(op.result)] = call(
                            callee, args_, {k: val(v) for k, v in op.kwargs.items()}, deep
                        )
                        continue
                    try:
                        env[id(op.result)] = call(
                            callee, args_, {k: val(v) for k, v in op.kwargs.items()}, deep
                        )
                    except GibbousError:
                        raise
                    except BaseException as e:
                        exception = e
                        block = enter(guard.handler, [val(a) for a in guard.handler_args])
                        break
                case Guard():
                    block = enter(op.normal, [val(a) for a in op.normal_args])
                    break
                case Jump():
                    block = enter(op.target, [val(a) for a in op.args])
                    break
                case Branch():
                    cond = val(op.cond)
                    assert type(cond) is bool, f"branch on a {type(cond).__name__}"
                    if cond:
                        block = enter(op.if_true, [val(a) for a in op.true_args])
                    else:
                        block = enter(op.if_false, [val(a) for a in op.false_args])
                    break
                case Return():
                    return val(op.value)
                case Raise():
                    exc = val(op.exc)
                    assert isinstance(exc, BaseException)
                    raise exc
        else:
            raise AssertionError(f"block of @{f.name} has no terminator")
    raise AssertionError(f"@{f.name} ran for more than {max_steps} blocks")
