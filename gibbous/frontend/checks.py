"""What makes a function untranslatable, found before, during and after building its IR.

Before: async and generator functions, and unsupported operations reachable from the entry
(handlers included).  During: calls of builtins that need the caller's frame (``exec``,
``locals()``, ...).  Each raises ``UnsupportedConstructError`` naming the construct and line.
After: generator expressions that no consumer exhausts become generator functions.
"""

from __future__ import annotations

import builtins
import inspect
import math
import types
import typing as t

from gibbous.frontend import ops
from gibbous.ir import runtime
from gibbous.frontend.blocks import Analysis
from gibbous.ir.exceptions import UnsupportedConstructError
from gibbous.ir.core import Block, Call, Constant, Function, Result
from gibbous.ir.names import CallableSet, CallableTable

_ASYNC_FLAGS = inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE

# Builtins that look at the caller's frame, which the IR does not have.
_FRAME_BUILTINS: CallableTable[object, tuple[str, str]] = CallableTable([
    (builtins.exec, ("a call of exec()", "write the code out in the function")),
    (builtins.eval, ("a call of eval()", "write the expression out in the function")),
    (builtins.globals, ("a call of globals()", "refer to the global by name")),
])
_FRAME_BUILTINS_WITHOUT_ARGS: CallableTable[object, tuple[str, str]] = CallableTable([
    (builtins.vars, ("a call of vars() without arguments", "pass the values explicitly")),
    (builtins.dir, ("a call of dir() without arguments", "pass the names explicitly")),
    (
        builtins.super,
        (
            "a call of super() without arguments",
            "call the base class's method explicitly: Base.method(self, ...)",
        ),
    ),
])

# Consumers that exhaust a generator expression, so that a list of its values does as well.
_GENEXPR_CONSUMERS: CallableSet[object] = CallableSet(
    [builtins.sum, builtins.tuple, builtins.list, builtins.set, builtins.frozenset,
     builtins.dict, builtins.max, builtins.min, builtins.any, builtins.all, builtins.sorted,
     math.fsum, math.prod]
)


def is_genexpr(code: types.CodeType) -> bool:
    return code.co_name == "<genexpr>" and bool(code.co_flags & inspect.CO_GENERATOR)


def error(fn: types.FunctionType, construct: str, hint: str, line: int | None) -> Exception:
    code = fn.__code__
    return UnsupportedConstructError(
        construct, code.co_filename, line or code.co_firstlineno, hint, fn.__qualname__
    )


def check_code(
    fn: types.FunctionType, collect: bool, analysis: Analysis, resume: bool = False
) -> None:
    """Raise for what gibbous cannot translate at all; the first construct in the code wins.
    ``collect``: a generator expression run eagerly; ``resume``: a generator's resume
    function (``runtime.GeneratorResume``)."""
    code = fn.__code__
    if code.co_flags & _ASYNC_FLAGS:
        raise error(fn, "an async function", "differentiate a plain (synchronous) function",
                    code.co_firstlineno)
    if resume and not code.co_flags & inspect.CO_GENERATOR:
        raise AssertionError("only a generator function has a resume function")
    if code.co_flags & inspect.CO_GENERATOR and not (collect or resume):
        yields = [d.line for d in analysis.ops if isinstance(d.op, ops.Yield)]
        hint = (
            "call it inside the differentiated function (a for loop, next(), sum(), list(), "
            "... step it there), or differentiate a function that consumes what it yields"
        )
        raise error(fn, "a generator function", hint, min(yields, default=None))
    if collect and not is_genexpr(code):
        raise AssertionError("only a generator expression can be collected into a list")
    problems = [
        analysis.ops[k]
        for block in analysis.reachable
        for k in range(block.start, block.stop)
        if isinstance(analysis.ops[k].op, ops.Unsupported)
    ]
    if problems:
        first = min(problems, key=lambda d: d.offset)
        assert isinstance(first.op, ops.Unsupported)
        raise error(fn, first.op.construct, first.op.hint, first.line)


def check_callee(fn: types.FunctionType, line: int, callee: object, nargs: int) -> None:
    """Raise if ``callee`` needs the caller's frame."""
    problem = _FRAME_BUILTINS.get(callee)
    if problem is None and not nargs:
        problem = _FRAME_BUILTINS_WITHOUT_ARGS.get(callee)
    if problem is not None:
        raise error(fn, *problem, line)


def lazy_generator_expressions(func: Function) -> None:
    """A generator expression runs eagerly into a list only where a consumer exhausts it
    (``sum``, ``max``, ``tuple``, ...), which means the same; anywhere else (passed to a
    function, stepped by ``next``, zipped) it is made a generator function as Python makes it,
    which differentiated code steps one item at a time (``runtime.GeneratorFrame``)."""
    for call in list(func.calls()):
        callee = call.callee
        if not (isinstance(callee, Result) and _callee_value(callee.op) is runtime.make_genexpr):
            continue
        if all(_consumes_genexpr(use.user, use.index) for use in call.result.uses):
            continue
        made = callee.op
        code, owner, closure = made.args
        none = Constant(None)
        function = Call(
            Constant(runtime.make_function), [code, owner, none, none, closure], loc=made.loc
        )
        t.cast(Block, made.parent).insert_before(made, function)
        made.result.replace_all_uses_with(function.result)
        made.erase()


def _callee_value(call: Call) -> object:
    return call.callee.value if isinstance(call.callee, Constant) else None


def _consumes_genexpr(user: object, index: int) -> bool:
    if not isinstance(user, Call) or index != 1:  # operand 1: the first positional argument
        return False
    callee = user.callee
    if isinstance(callee, Constant):
        return callee.value in _GENEXPR_CONSUMERS
    # "sep".join(genexpr): a bound method of a constant string
    if isinstance(callee, Result) and _callee_value(callee.op) is builtins.getattr:
        obj, attr = callee.op.args[:2]
        return (
            isinstance(obj, Constant) and isinstance(obj.value, str)
            and isinstance(attr, Constant) and attr.value == "join"
        )
    return False
