"""Generators in forward mode: a frame's tangent, stepped with the frame.

Reverse mode differentiates a generator as a state machine (``gibbous.ir.runtime``'s
lowering): calling a generator function makes a ``GeneratorFrame`` holding its arguments, and
each step is a call of its resume function, which loads the frame, runs to the next ``yield``
and saves the values live there.  Forward mode follows the same lowering.  The frame's tangent,
a ``FrameTangent``, holds the tangents of the values the frame holds (None for a value without
one) and the boxes of the generator function's cells (``gibbous.library.python.closures``).  The
resume function's forward program takes the frame and its tangent; ``load_frame`` hands out the
tangents beside the values, ``save_frame`` keeps the tangents of the values it keeps.  A
``for`` loop, ``next()``, or a consumer that exhausts the generator (``sum``, ``list``, ...)
steps both together (``Steps``).  So a generator's tangent state lives exactly where its primal
state does, and a generator stopped half-way and resumed later resumes its tangents too.

Values inside a resume function have types inference cannot tell (they come out of the frame),
so their tangents are found by the tangent functions at run time, as for any value of type
``Any``; an iterator the generator keeps (``range``'s) has no tangent, None, and steps without
one (``gibbous.rules.structure.on_tangent``).
"""

from __future__ import annotations

import types
import typing as t

from gibbous.ir import runtime
from gibbous.rules.emit import ForwardModeError, like

#: ``program(fn, closure) -> run(frame, dframe)`` (``run(fn, boxes, frame, dframe)`` with
#: ``closure``): the forward program of generator function ``fn``'s resume function.
ResumeProgram = t.Callable[[types.FunctionType, bool], t.Callable[..., t.Any]]


class FrameTangent:
    """The tangent of a ``GeneratorFrame``: the boxes of its function's cells (a
    ``ClosureTangent``, or None) and the tangents of the values it holds, in the same order."""

    __slots__ = ("fn", "values")

    def __init__(self, fn: t.Any, values: tuple[t.Any, ...]) -> None:
        self.fn, self.values = fn, values

    def __repr__(self) -> str:
        return f"FrameTangent({self.values!r})"


def make_frame(fn: types.FunctionType, *values: object) -> runtime.GeneratorFrame:
    """A call of generator function ``fn``, its parameters bound to ``values`` (in order)."""
    return runtime.GeneratorFrame(fn, values)


def frame_tangent(boxes: t.Any, *tangents: t.Any) -> FrameTangent:
    """The tangent of ``make_frame``'s frame: the cells' boxes, the parameters' tangents."""
    return FrameTangent(boxes, tangents)


def load_tangent(dframe: FrameTangent) -> tuple[None, tuple[t.Any, ...]]:
    """The tangent of ``load_frame(frame)``: none for the label, the values' tangents."""
    values = dframe.values
    dframe.values = ()
    return None, values


def save_tangent(dframe: FrameTangent, *tangents: t.Any) -> None:
    """The tangent side of ``save_frame(frame, label, *values)``."""
    dframe.values = tangents


_NO_NUMBERS = (bool, int, str, bytes, type(None))
_KNOWN = 64  # generator functions whose programs a ``Steps`` keeps at hand, oldest out first


class Steps:
    """Stepping a generator in a forward program, ``(y, dy)`` each: ``step(frame, dframe)``
    is one call of the resume function's forward program (``STOP`` at the end), ``next``
    raises ``StopIteration`` there or returns the default, ``iter`` is the frame itself,
    ``drain`` runs it to the end and ``consume`` calls a consumer (``sum``) on what it yields.  ``step``, ``next`` and ``iter`` take an iterator of
    another kind too (a value whose type the build could not tell), with the iterator over
    its tangent beside it, or None."""

    def __init__(self, program: ResumeProgram) -> None:
        self.program = program
        self.known: dict[types.FunctionType, t.Callable[..., t.Any]] = {}

    def step(self, frame: t.Any, dframe: t.Any) -> tuple[t.Any, t.Any]:
        if type(frame) is not runtime.GeneratorFrame:
            y = runtime.next_or_stop(frame)
            return y, None if dframe is None else runtime.next_or_stop(dframe)
        if type(dframe) is not FrameTangent:
            raise ForwardModeError(
                f"forward mode: the generator {frame.fn.__qualname__}() was made by the "
                "differentiated code without a tangent (a generator read from a container or a "
                "closure's cell): step it where it is made"
            )
        fn = frame.fn
        boxes = dframe.fn
        run = self.known.get(fn)
        if run is None:
            if len(self.known) >= _KNOWN:  # (a generator function made on every call)
                del self.known[next(iter(self.known))]
            run = self.known[fn] = self.program(fn, boxes is not None)
        made = run(frame, dframe) if boxes is None else run(fn, boxes, frame, dframe)
        return t.cast(tuple[t.Any, t.Any], made)

    def next(self, frame: t.Any, dframe: t.Any, *default: t.Any) -> tuple[t.Any, t.Any]:
        """``next(frame[, default])``; ``default`` is the default and its tangent."""
        y, dy = self.step(frame, dframe)
        if y is runtime.STOP:
            if default:
                return default[0], like(default[0], default[1])
            raise StopIteration
        return y, like(y, dy)

    def iter(self, frame: t.Any, dframe: t.Any) -> tuple[t.Any, t.Any]:
        if type(frame) is runtime.GeneratorFrame:
            return frame, dframe
        return iter(frame), None if dframe is None else iter(dframe)

    def consume(
        self, calls: t.Callable[..., t.Any], consumer: t.Any, frame: t.Any, dframe: t.Any,
        *rest: t.Any, **kwargs: t.Any,
    ) -> tuple[t.Any, t.Any]:  # fmt: skip
        """``consumer(frame, *values of rest, **kwargs)`` (``rest``: the other operands, then
        their tangents) by ``calls`` (``DynamicCalls``), on the list of what the frame yields
        and of their tangents; another iterable is passed as it is, with its tangent."""
        n = len(rest) // 2
        if type(frame) is runtime.GeneratorFrame:
            frame, dframe = self.drain(frame, dframe)
        if type(frame) is list and all(isinstance(v, _NO_NUMBERS) for v in frame):
            dframe = None  # (ints, strings: no tangent, whatever zeros stand for theirs)
        if type(frame) is list and not frame and all(d is None for d in rest[n:]):
            y = consumer(frame, *rest[:n], **kwargs)  # (nothing yielded: no derivative)
            return y, like(y, None)
        made = calls(consumer, frame, *rest[:n], dframe, *rest[n:], **kwargs)
        return t.cast(tuple[t.Any, t.Any], made)

    def drain(self, frame: t.Any, dframe: t.Any) -> tuple[list[t.Any], list[t.Any]]:
        """Every value the generator yields from here on, and their tangents."""
        items: list[t.Any] = []
        tangents: list[t.Any] = []
        while True:
            y, dy = self.step(frame, dframe)
            if y is runtime.STOP:
                return items, tangents
            items.append(y)
            tangents.append(like(y, dy))


for _helper in (make_frame, frame_tangent, load_tangent, save_tangent):
    runtime.register_object(_helper, f"forward_generators.{_helper.__name__}")
