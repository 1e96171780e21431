"""Generators in the forward-mode transform (``gibbous.forward.frames``).

The calls of the generator lowering, with their tangents:

    %g = call mod.gen(%x)                       # a generator function's call becomes
    %g = call make_frame(mod.gen, %x)           # its frame, made as reverse mode makes it,
    %dg = call frame_tangent(None, %dx)         # and the frame's tangent
    %v = call next_or_stop(%g)                  # a step: the resume function's forward
    %s = call steps.step(%g, %dg)               # program, on the frame and its tangent

In the resume function's own program, ``load_frame`` and ``save_frame`` carry the tangents of
the values the frame holds beside the values.  A consumer that exhausts a frame (``sum``,
``max``, ``list``, ...) steps it to the end and is called on the list of what it yielded, with
the list of their tangents, through the forward rule found for the list (``DynamicCalls``).
Where the operand's type is unknown (a generator made by a closure), whether it is a frame is
seen at run time.

Every generator call gets a frame and a tangent, whatever its operands (``seeds``): a
generator whose arguments have none may still read cells that do, and the steps take both.
A generator the differentiated code makes is stepped only by the differentiated code; its
frame refuses anything else that iterates it.
"""

from __future__ import annotations

import builtins
import operator
import typing as t
from types import FunctionType

from gibbous.ir import names, runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Call, Constant, Function, Value
from gibbous.forward.activity import Default, bind_call, operands
from gibbous.forward import frames
from gibbous.rules.emit import ForwardModeError
from gibbous.reverse.generators import CONSUMERS, FRAME
from gibbous.rules.public_names import callable_name

if t.TYPE_CHECKING:
    from gibbous.forward.transform import _Transform

_GENERATOR = 0x20
_ASYNC = 0x80 | 0x100 | 0x200  # coroutine, iterable coroutine, async generator


def generator_function(fn: object) -> t.TypeGuard[FunctionType]:
    """A Python generator function (``def`` with ``yield``, a generator expression's)."""
    return isinstance(fn, FunctionType) and bool(fn.__code__.co_flags & _GENERATOR)


def seeds(f: Function) -> list[Value]:
    """The frames ``f`` makes: varied whatever their operands (see the module's doc)."""
    return [
        op.result
        for op in f.calls()
        if isinstance(op.callee, Constant) and generator_function(op.callee.value)
    ]


def lower(tr: _Transform, b: Builder, op: Call) -> bool:
    """Writes ``op`` if it is a call of the generator lowering (see the module's doc)."""
    callee = op.callee
    if not isinstance(callee, Constant):
        return False
    fn = callee.value
    given = operands(op)
    if fn is runtime.load_frame or fn is runtime.save_frame:
        _frame_access(tr, b, op, fn)
        return True
    if generator_function(fn):
        _call(tr, b, op, fn)
        return True
    if not given or given[0] not in tr.varied or op.kwargs:
        return False
    first = given[0].type
    unknown = isinstance(first, T.Any) and not tr.reversible  # (a value checked then)
    if first == FRAME or unknown:
        if fn is builtins.iter and len(given) == 1:
            _step(tr, b, op, "iter")
            return True
        if fn is runtime.next_or_stop and len(given) == 1:
            _step(tr, b, op, "step")
            return True
        if fn is builtins.next and len(given) <= 2:
            _step(tr, b, op, "next")
            return True
    if fn in CONSUMERS and (first == FRAME or unknown):
        _drain(tr, b, op)
        return True
    return False


def _refuse_in_hvp(tr: _Transform, op: Call) -> None:
    if tr.reversible:  # (the frames' helpers have no reverse rules)
        raise tr.refuse(op, "a generator in a Hessian-vector product")


def _frame_access(tr: _Transform, b: Builder, op: Call, fn: object) -> None:
    """``load_frame(frame)`` and ``save_frame(frame, label, *values)`` in a resume function's
    program: the frame's tangent goes along (the program's frame always has one)."""
    _refuse_in_hvp(tr, op)
    r, frame = op.result, op.args[0]
    args = [tr.p(a) for a in op.args]
    tr.primal[r] = b.call(fn, *args, type=r.type, name=r.name)
    dframe = tr.tangent[frame]
    if fn is runtime.load_frame:
        tr.tangent[r] = b.call(frames.load_tangent, dframe, type=T.ANY)
        return
    kept = [tr.tangent.get(v, Constant(None)) for v in op.args[2:]]
    b.call(frames.save_tangent, dframe, *kept, type=T.NONE)
    tr.varied.discard(r)


def _call(tr: _Transform, b: Builder, op: Call, fn: FunctionType) -> None:
    """``gen(*args)``: the frame, with the bound parameters, and its tangent."""
    _refuse_in_hvp(tr, op)
    r, given = op.result, operands(op)
    if fn.__code__.co_flags & _ASYNC:
        raise tr.refuse(op, f"{callable_name(fn)}, an async generator or coroutine")
    binding = bind_call(fn, len(op.args), tuple(op.kwargs))
    if binding is None:
        raise tr.refuse(
            op, f"this call of the generator {callable_name(fn)} (*args, **kwargs or "
            "keyword-only parameters)"
        )  # fmt: skip
    values = [Constant(w.value) if isinstance(w, Default) else tr.p(given[w]) for w in binding]
    tangents = [
        Constant(None) if isinstance(w, Default) else tr.tangent.get(given[w], Constant(None))
        for w in binding
    ]
    tr.primal[r] = b.call(frames.make_frame, Constant(fn), *values, type=r.type, name=r.name)
    tr.tangent[r] = b.call(frames.frame_tangent, Constant(None), *tangents, type=T.ANY)


def _step(tr: _Transform, b: Builder, op: Call, how: str) -> None:
    """``iter(frame)``, ``next_or_stop(frame)`` (a ``for`` loop) or ``next(frame[,
    default])``: ``Steps``'s method ``how``, which also takes an iterator of another kind
    (a value of unknown type) with the tangent iterator beside it."""
    _refuse_in_hvp(tr, op)
    r, given = op.result, operands(op)
    method = getattr(tr.resolver.steps(), how)
    names.printable(method, f"forward.steps.{how}")
    pairs = [x for v in given for x in (tr.p(v), tr.tangent.get(v, Constant(None)))]
    made = b.call(method, *pairs, type=T.ANY)
    tr.primal[r] = b.call(operator.getitem, made, 0, type=r.type, name=r.name)
    if r in tr.varied:
        tr.tangent[r] = b.call(operator.getitem, made, 1, type=T.ANY)


def _drain(tr: _Transform, b: Builder, op: Call) -> None:
    """``consumer(frame, *rest)``: the frame stepped to its end, the consumer called on the
    list of the values and the list of their tangents, by its forward rule for that list
    (``Steps.consume``; a value of unknown type that is no frame goes to that rule as it is)."""
    _refuse_in_hvp(tr, op)
    r, given = op.result, operands(op)
    if any(v in tr.varied for v in given[len(op.args) :]):
        raise tr.refuse(op, "a keyword argument with a tangent")
    consume = names.printable(tr.resolver.steps().consume, "forward.steps.consume")
    frame, rest = op.args[0], op.args[1:]
    tangents = [tr.tangent.get(v, Constant(None)) for v in rest]
    kwargs = {k: tr.p(v) for k, v in op.kwargs.items()}
    made = b.call(
        consume, tr.resolver.dynamic_calls(), tr.p(op.callee), tr.p(frame),
        tr.tangent[frame], *(tr.p(v) for v in rest), *tangents, kwargs=kwargs, type=T.ANY,
    )  # fmt: skip
    tr.primal[r] = b.call(operator.getitem, made, 0, type=r.type, name=r.name)
    if r in tr.varied:
        tr.tangent[r] = b.call(operator.getitem, made, 1, type=T.ANY)


def frame_maker(
    fn: FunctionType, n: int, kwnames: tuple[str, ...], varied: tuple[bool, ...], closure: bool
) -> t.Callable[..., tuple[t.Any, t.Any]]:
    """A call of generator function ``fn`` found at run time (``DynamicCalls``):
    ``run([fn, boxes,] *args, *kwarg_values, *tangents of the varied) -> (frame, dframe)``."""
    name = callable_name(fn)
    if fn.__code__.co_flags & _ASYNC:
        raise ForwardModeError(f"forward mode: {name} is an async generator or coroutine")
    binding = bind_call(fn, n, kwnames)
    if binding is None:
        raise ForwardModeError(
            f"forward mode: this call of the generator {name} (*args, **kwargs or keyword-only "
            "parameters)"
        )
    total = n + len(kwnames)
    first = fn.__code__.co_argcount - len(fn.__defaults__ or ())  # (the first with a default)

    def run(*a: t.Any) -> tuple[t.Any, t.Any]:
        made, boxes, a = (a[0], a[1], a[2:]) if closure else (fn, None, a)  # (fn, boxes first)
        rest = iter(a[total:])
        tangents = [next(rest) if v else None for v in varied]
        # (a default read from the function called: one made anew may have another)
        defaults: tuple[t.Any, ...] = made.__defaults__ or ()
        values = [
            defaults[i - first] if isinstance(w, Default) else a[w] for i, w in enumerate(binding)
        ]
        dvalues = [None if isinstance(w, Default) else tangents[w] for w in binding]
        return frames.make_frame(made, *values), frames.frame_tangent(boxes, *dvalues)

    return run
