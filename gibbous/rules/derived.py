"""The objects derived rules are made of at run time.

The AD pass (``gibbous.passes.ad``) turns a function into a forward and a reverse program,
compiled once (``gibbous.backends.numpy.adcodegen``) into a ``Program``.  Every
``DerivedRule`` is one *instance* of a program: the compiled code bound to state of its own,

* one ``Tape``: everything the forward program leaves for the reverse program, in order (the
  pullbacks of active call sites, the values inline sites saved, the edges taken into blocks
  with several incoming edges, the returning block where there are several);
* one child rule per active call site: a primitive rule (a fresh ``StatefulRRule`` for a
  stateful primitive), a ``LazyDerivedRule`` for a Python function (it instantiates the
  callee's program on first use, so recursion reaches a new instance per level), a
  ``DynamicRule`` where types are too vague to choose statically, a ``CallExRule`` for
  ``f(*args, **kwargs)``, or a ``PrimalRule`` for a call none of whose operands can carry a
  derivative.  Adapters fit derived rules to calls: ``BoundRule`` (keywords, defaults,
  ``*args``, ``**kwargs``), ``GenexprRule`` (generator expressions), ``BoundMethodRule``
  (``obj.method`` through the rule of ``method``), ``FillSeed`` (zero rdata for results of
  vague type).

All of it lives as long as the rule: a warm call re-uses the tape's list and the children's
buffers.  A rule may run forward several times before its pullbacks (a call in a loop of the
caller: fwd, fwd, pb, pb); the tape hands each pullback its own call's data, last in first
out, and ``PullbackOrderError`` reports any other order.  An exception in the forward or
reverse program marks the rule *dirty*: its next forward call resets the whole tree of
instances first (a reset moves indices, it frees nothing but references), and pending
pullbacks of the abandoned calls refuse to run rather than compute with stale data.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import threading
import types as pytypes
import typing as t

import attrs
import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.core import Location
from gibbous.ir.exceptions import GibbousError
from gibbous.ir.printer import UnprintableError, format_type
from gibbous.ir.purity import register_pure
from gibbous.rules import recursion
from gibbous.rules.callables import cached, callable_instance, partial_shape
from gibbous.rules.registry import (
    Context,
    DefaultContext,
    MissingRuleError,
    Pullback,
    RRule,
    build_primitive_rrule,
    primitive,
)
from gibbous.rules.stateful import PullbackOrderError
from gibbous.rules.tangent_check import rdata_mismatch
from gibbous.rules.tangent_kinds import fdata_problem, rdata_problem
from gibbous.rules.unwind import unwind
from gibbous.rules.user_lines import note_user_line
from gibbous.rules.tangents import (
    NO_TANGENT,
    CoDual,
    MutableTangent,
    Tangent,
    fdata_of,
    increment,
    is_differentiable,
    rdata_of,
    tangent_from,
    zero_fdata,
    zero_rdata,
)

_CoDual = CoDual[t.Any, t.Any]
_Rule = t.TypeVar("_Rule", bound="DerivedRule")


# --------------------------------------------------------------------------------------------
# The tape and adjoints


class Tape:
    """A derived rule's tape: one list, and its count in a closure cell.

    The generated forward and reverse programs index the list themselves, with the count in
    a cell both declare ``nonlocal``: a push stores at the count (appending only past the
    end), a pop moves the count back and drops the reference it held, so the list keeps its
    length and a warm pass allocates nothing.  Pushes and pops pair up last in first out, so
    one list serves every site of the program.
    """

    __slots__ = ("items", "cell")

    def __init__(self, items: list[object], cell: pytypes.CellType | None) -> None:
        self.items = items
        self.cell = cell  # None: the program pushes nothing

    def __len__(self) -> int:
        return 0 if self.cell is None else t.cast(int, self.cell.cell_contents)

    def reset(self) -> None:
        """Forget everything pushed and free the list (the next call appends again): a reset
        follows calls abandoned half-way, which may have grown it far beyond a normal call."""
        self.items.clear()
        if self.cell is not None:
            self.cell.cell_contents = 0


def _cell(fns: t.Sequence[t.Callable[..., object]], name: str) -> pytypes.CellType | None:
    for fn in fns:
        code = getattr(fn, "__code__", None)
        closure = getattr(fn, "__closure__", None)
        if code is not None and closure is not None and name in code.co_freevars:
            return t.cast(pytypes.CellType, closure[code.co_freevars.index(name)])
    return None


def accum(adjoint: t.Any, rdata: t.Any) -> t.Any:
    """``adjoint + rdata`` for the reverse program: ``NoTangent()`` adds nothing.

    Adjoints whose type is not known start as ``NoTangent()`` rather than a zero."""
    if rdata is NO_TANGENT:
        return adjoint
    if adjoint is NO_TANGENT:
        return rdata
    if type(adjoint) is float:
        kind = type(rdata)
        if kind is float:
            return adjoint + rdata
        if kind is np.float64:  # what increment gives: the adjoint's class
            return adjoint + float(rdata)
    return increment(adjoint, rdata)


register_pure(accum)  # so that dead-code elimination may drop unused accumulations


def inactive_codual(value: object) -> _CoDual:
    """The CoDual of a value that has no derivative, where an active call needs one."""
    return CoDual(value, NO_TANGENT)


def fill_rdata(x: object, rdata: t.Any) -> t.Any:
    """``rdata`` with zeros where it says ``NoTangent()`` but ``x`` has rdata (an adjoint of
    unknown type that nothing was added to)."""
    zero = zero_rdata(x)
    return zero if rdata is NO_TANGENT else increment(zero, rdata)


# --------------------------------------------------------------------------------------------
# Programs and their instances


@attrs.frozen(eq=False)
class Program:
    """A derived rule's compiled forward and reverse programs, shared by all its instances.

    ``instantiate`` binds a new set of stacks and child rules: ``slots`` maps each closure
    variable that differs between instances to how to make its value (``make_rule`` for a
    call site; stacks are made by number).
    """

    fn: object
    arg_types: tuple[T.Type, ...]
    # closure index -> ("rule", maker), ("tape", None) or ("count", the count's name)
    slots: tuple[tuple[int, str, t.Any], ...]
    make_functions: t.Callable[[t.Mapping[int, object]], tuple[t.Callable[..., object], ...]]
    # How the pullback treats its argument: "none" (the result has no rdata), "exact" (its
    # type is known, so the caller passes proper rdata), "fill" (NoTangent means zero).
    seed: str
    description: t.Any = None  # for inspection: the typed, forward and reverse IR
    # Shared by the programs of one ``build_rrule``: calls that raised after recording
    # differentiable work which a caller then caught, lost to the gradient, by the thread
    # that made them (each thread has its own instances: gibbous.toplevel).
    lost: dict[int, list[str]] = attrs.field(factory=dict)
    # Shared likewise: the globals the programs froze into their code, as (namespace, name,
    # value), which the entry points check are still bound (``gibbous.api``).
    frozen: list[tuple[dict[str, object], str, object]] = attrs.field(factory=list)

    @functools.cached_property
    def plain(self) -> bool:
        """The function takes positional parameters only (no ``*args``, keyword-only or
        ``**kwargs``): a call's arguments are its IR's."""
        fn = self.fn
        if not isinstance(fn, pytypes.FunctionType):
            return False
        code = fn.__code__
        flags = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
        return not code.co_flags & flags and not code.co_kwonlyargcount

    @functools.cached_property
    def acceptors(self) -> tuple[t.Callable[[object], bool], ...]:
        """One test per argument: is a value of the argument's type (quick for arrays and
        floats, the common arguments)."""
        return tuple(map(_acceptor, self.arg_types))

    @t.overload
    def instantiate(self, *, level: int = 0) -> DerivedRule: ...
    @t.overload
    def instantiate(self, cls: type[_Rule], *, level: int = 0) -> _Rule: ...

    def instantiate(self, cls: type[DerivedRule] | None = None, *, level: int = 0) -> DerivedRule:
        """A new instance: its own tape and child rules (``cls``: a subclass, for the rules
        users hold, gibbous.toplevel), ``level`` calls of derived rules deep (0: called
        by the user; see gibbous.rules.recursion)."""
        items: list[object] = []
        children: list[object] = []
        replace: dict[int, object] = {}
        count = None
        for index, kind, what in self.slots:
            if kind == "rule":
                rule = what()
                children.append(rule)
                # A lazy rule goes in as its bound ``__call__``: calling an object with a
                # Python ``__call__`` counts against 3.12's fixed C recursion limit (three units
                # each), a bound method does not; recursion pays it per level.
                replace[index] = rule.__call__ if type(rule) is LazyDerivedRule else rule
            elif kind == "tape":
                replace[index] = items
            else:
                replace[index], count = 0, what
        forward, reverse = self.make_functions(replace)
        tape = Tape(items, None if count is None else _cell((forward, reverse), count))
        resettable = [c for c in children if hasattr(c, "reset")]
        for cell in getattr(forward, "__closure__", None) or ():
            lazy = getattr(cell.cell_contents, "__self__", None)  # (every variable is bound)
            if type(lazy) is LazyDerivedRule:
                lazy.cell = cell
        if recursion.boundary(level):
            forward = recursion.with_headroom(forward, level)
            reverse = recursion.with_headroom(reverse, level)
        rule = (cls or DerivedRule)(self, forward, reverse, tape, resettable)
        rule.level = level
        return rule


def _acceptor(ty: T.Type) -> t.Callable[[object], bool]:
    if isinstance(ty, T.Array) and ty.dtype is not None and ty.ndim is not None:
        dtype, ndim = np.dtype(ty.dtype), ty.ndim

        def array(a: object) -> bool:
            if type(a) is np.ndarray:
                return a.ndim == ndim and a.dtype == dtype
            return T.is_subtype(T.typeof(a), ty)

        return array
    if ty == T.FLOAT:
        return lambda a: type(a) is float or T.is_subtype(T.typeof(a), ty)
    return lambda a: T.is_subtype(T.typeof(a), ty)


class DerivedRule:
    """``rule(CoDual(f), *coduals) -> (CoDual(y), pullback)`` for a Python function.

    Positional arguments only, in the order of the function's IR (``BoundRule`` adapts calls
    with keywords or defaults).
    """

    __slots__ = (
        "program",
        "forward",
        "reverse",
        "tape",
        "children",
        "_depth",
        "_dirty",
        "_generation",
        "_serials",
        "_serial",
        "threads",
        "level",
    )

    def __init__(
        self,
        program: Program,
        forward: t.Callable[..., object],
        reverse: t.Callable[..., object],
        tape: Tape,
        children: list[t.Any],
    ) -> None:
        self.program = program
        self.forward = forward
        self.reverse = reverse
        self.tape = tape
        self.children = children
        self._depth = 0
        self._dirty = _CLEAN
        self._generation = 0
        # The serial number of the call pending at each depth (see StatefulRRule).
        self._serials: list[int] = []
        self._serial = 0
        # Set on the rule a user holds only (gibbous.toplevel.PerThread): which state
        # each thread uses.  Child rules run on their parent's thread and check nothing more.
        self.threads: t.Any = None
        self.level = 0  # calls of derived rules above it (see gibbous.rules.recursion)

    @property
    def depth(self) -> int:
        """Forward calls whose pullback has not run yet."""
        return self._depth

    @property
    def arg_types(self) -> tuple[T.Type, ...]:
        return self.program.arg_types

    @property
    def fn(self) -> object:
        return self.program.fn

    @property
    def fn_name(self) -> str:
        return str(getattr(self.program.fn, "__qualname__", self.program.fn))

    def __repr__(self) -> str:
        name = getattr(self.program.fn, "__qualname__", repr(self.program.fn))
        return f"<DerivedRule {name}: depth {self._depth}>"

    def reset(self) -> None:
        """Forget pending calls, here and in every child rule, and free what they held: the
        tape, stateful rules' states (child rules and their programs stay)."""
        # One level of recursion is an instance inside the last: a loop, not a recursion,
        # so that a tree as deep as the recursion went can be reset.
        todo = [self]
        while todo:
            rule = todo.pop()
            rule.tape.reset()
            for child in rule.children:
                while type(child) in _DELEGATES:
                    child = child.rule
                if type(child) is LazyDerivedRule:
                    child = child.instance
                if type(child) is DerivedRule:
                    todo.append(child)
                elif child is not None and hasattr(child, "reset"):
                    child.reset()
            rule._depth = 0
            rule._dirty = _CLEAN
            rule._generation += 1
            rule._serials.clear()

    def __call__(self, f: _CoDual, *args: _CoDual) -> tuple[_CoDual, DerivedPullback]:
        threads = self.threads
        if threads is not None:
            try:
                mine = threads.local.rule
            except AttributeError:  # this thread's first call
                mine = threads.claim(lambda: DerivedRule.reset(self))
            if mine is not None:
                return t.cast(tuple[_CoDual, DerivedPullback], mine(f, *args))
        if self._dirty:
            self.reset()
        cell = self.tape.cell
        start = 0 if cell is None else cell.cell_contents
        try:
            y = t.cast(_CoDual, self.forward(f, *args))
        except BaseException as e:
            if isinstance(e, Exception) and not isinstance(e, StopIteration):
                note_user_line(e, _code(self.forward), self.fn_name)
            # Raised before recording anything (a check of the arguments, a failed fast
            # path): nothing to undo, and a caller that catches it may go on.  Otherwise the
            # operations recorded cannot be undone in part.
            if cell is not None and cell.cell_contents != start:
                self._dirty = _FAILED
                self.program.lost.setdefault(threading.get_ident(), []).append(
                    f"{self.fn_name} raised ({type(e).__name__}: {e}) after it had recorded "
                    "differentiable operations"
                )
            raise
        depth = self._depth = self._depth + 1
        self._serial = serial = self._serial + 1
        serials = self._serials
        if len(serials) < depth:
            serials.append(serial)
        else:
            serials[depth - 1] = serial
        if depth == 1:
            pullback = DerivedPullback(self, depth, self._generation, y, serial, start)
        else:
            pullback = _WatchedPullback(self, depth, self._generation, y, serial, start)
        if self.level:
            # A reverse program calls it: as a bound method, not counted against 3.12's C
            # recursion limit (see ``Program.instantiate``).
            return y, t.cast(DerivedPullback, pullback.__call__)
        return y, pullback


# ``DerivedRule._dirty``: its next forward call resets the rule first if it is not clean.
_CLEAN = 0
_ABANDONED = 1  # a pending call's pullback was dropped unrun: no pullback can reach depth 0
_FAILED = 2  # an exception in a pass: the tape is not what pending pullbacks expect either


class PartialCallError(GibbousError, RuntimeError):
    """A forward pass caught an exception that left a call half done (see ``DerivedRule``)."""


class DerivedPullback:
    """The pullback of one forward call of a ``DerivedRule``."""

    __slots__ = ("rule", "depth", "generation", "y", "serial", "start")

    def __init__(
        self,
        rule: DerivedRule,
        depth: int,
        generation: int,
        y: _CoDual,
        serial: int,
        start: int = 0,
    ) -> None:
        self.rule, self.depth, self.generation, self.y = rule, depth, generation, y
        self.serial, self.start = serial, start  # start: the tape's count before the call

    def abandon(self) -> None:
        """Run the reverse pass for what it undoes, with a zero cotangent, ignoring errors
        (``unwind``)."""
        seed = self.rule.program.seed
        try:
            self(zero_rdata(self.y.primal) if seed == "exact" else NO_TANGENT)
        except Exception:
            pass

    def __call__(self, dy: t.Any) -> tuple[t.Any, ...]:
        rule = self.rule
        if rule._generation != self.generation or rule._dirty == _FAILED:
            raise PullbackOrderError(
                f"pullback of {rule!r} ran after the rule was reset, left by an exception, or "
                "restarted because the pullback of an earlier call was dropped unrun"
            )
        if rule._depth != self.depth or rule._serials[self.depth - 1] != self.serial:
            raise PullbackOrderError(
                f"pullback of call {self.depth} of {rule!r} ran out of order, twice, or after "
                "a later forward call took its place: pullbacks must run in reverse order of "
                "the forward calls, each once (it touched nothing)"
            )
        lost = rule.program.lost
        mine = lost.get(threading.get_ident()) if lost else None
        if mine:
            raise PartialCallError(
                f"{mine[0]}, and a caller caught the exception and went on: gibbous cannot "
                "undo part of a call, so there is no gradient through that path.  Raise before "
                "any differentiable work, or test for the case instead of catching it"
            )
        seed = rule.program.seed
        if seed == "none":
            if dy is not NO_TANGENT and dy is not None and type(dy) is not float:
                if rdata_mismatch(self.y.primal, dy) is not None:  # it is ignored, but wrong
                    _refuse_dy(rule, self.y.primal, dy)
        elif seed == "fill" and dy is NO_TANGENT:
            dy = zero_rdata(self.y.primal)
        elif type(dy) is not float and not _same_length_tuples(dy, self.y.primal):
            if rdata_mismatch(self.y.primal, dy) is not None:  # the slow check, rarely reached
                _refuse_dy(rule, self.y.primal, dy)
        try:
            result = t.cast(tuple[t.Any, ...], rule.reverse(dy))
        except BaseException as e:
            if isinstance(e, Exception):
                note_user_line(e, _code(rule.reverse), rule.fn_name)
            # The pullbacks still on the tape undo the rest of the forward pass's writes, so
            # that the arguments are left as they were before the call.
            unwind(rule.tape.items, self.start, rule.tape)
            rule._dirty = _FAILED
            raise
        rule._depth = self.depth - 1
        return result


def _code(program: t.Callable[..., object]) -> pytypes.CodeType:
    """The code of a forward or reverse program (through a recursion boundary's wrapper)."""
    return t.cast(pytypes.FunctionType, getattr(program, "__wrapped__", program)).__code__


def _same_length_tuples(dy: object, y: object) -> bool:
    """A quick test that passes the rdata of tuples that the reverse programs pass (the items
    are not looked at: a wrong item fails in the reverse program's own arithmetic)."""
    return type(dy) is tuple and type(y) is tuple and len(dy) == len(y)


def _refuse_dy(rule: DerivedRule, y: object, dy: object) -> t.NoReturn:
    problem = rdata_mismatch(y, dy, "dy") or "dy should be NoTangent()"
    raise TypeError(
        f"the pullback of {rule.fn_name} was given a dy that is not the rdata of its result "
        f"({type(y).__name__}): {problem}.  dy is the rdata part of the cotangent: a float "
        "for a float, NoTangent() for an array, a list or anything else whose cotangent goes "
        "into the result's fdata (it touched nothing)"
    )


class _WatchedPullback(DerivedPullback):
    """The pullback of a call made while another was pending.  Dropped without running, it
    leaves its call and those below it pending for good (pullbacks run last in, first out), so
    the rule's next forward call starts afresh: a caller that drops pullbacks in a loop holds
    two or three calls' data, not all of them.  The first pending call is not watched: the
    usual top-level call pays nothing, and a second one comes before anything piles up."""

    __slots__ = ()

    def __del__(self) -> None:
        rule, depth = self.rule, self.depth
        if (
            rule._generation == self.generation
            and rule._depth >= depth
            and rule._serials[depth - 1] == self.serial
            and rule._dirty == _CLEAN
        ):
            rule._dirty = _ABANDONED


# --------------------------------------------------------------------------------------------
# Child rules of call sites


class LazyDerivedRule:
    """The rule of a call of a Python function: instantiates the callee's program on its first
    call, so a recursive function gets one instance per level it reaches, each built once.

    Where it is a forward program's call site (``cell``), it then puts the instance's bound
    ``__call__`` there in its place: later calls skip a frame, which recursion pays per level
    (and a bound method is called in the caller's frame loop where an object with
    ``__call__`` goes through C, which 3.11 counts twice)."""

    __slots__ = ("program", "instance", "cell")

    def __init__(self, program: t.Callable[[], Program]) -> None:
        self.program = program
        self.instance: DerivedRule | None = None
        self.cell: pytypes.CellType | None = None

    def __call__(self, f: _CoDual, *args: _CoDual) -> tuple[_CoDual, Pullback]:
        instance = self.instance
        if instance is None:
            level = recursion.caller_level(DerivedRule.__call__.__code__)
            instance = self.instance = self.program().instantiate(level=level)
            if self.cell is not None:
                self.cell.cell_contents = instance.__call__
        return instance.__call__(f, *args)  # (a bound method: see ``Program.instantiate``)

    def reset(self) -> None:
        if self.instance is not None:
            self.instance.reset()


@attrs.frozen(eq=False)
class PrimalRule:
    """A call that no derivative can flow through: none of its operands has a tangent.

    Runs the primal; the result gets zero fdata (it may be mutated later).  With ``check``,
    every call then makes sure no operand has a tangent (the types could not tell), and
    raises ``MissingRuleError`` otherwise, rather than drop a derivative.  The primal runs
    first: a call Python refuses (``2.0 * "a"``) raises what Python raises, for the code to
    catch.
    """

    check: t.Callable[[tuple[object, ...]], None] | None = None

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        y = f.primal(*(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
        if self.check is not None:
            self.check((f.primal, *(a.primal for a in args), *(a.primal for a in kwargs.values())))
        n = 1 + len(args) + len(kwargs)
        return CoDual(y, zero_fdata(y)), _NoRData(n)


@attrs.frozen(slots=True)
class _NoRData:
    n: int

    def __call__(self, dy: object) -> tuple[t.Any, ...]:
        return (NO_TANGENT,) * self.n


@attrs.frozen(eq=False)
class FillSeed:
    """Wraps a rule whose result type is not known precisely: its pullback gets zero rdata
    instead of ``NoTangent()`` when nothing was added to the result's adjoint."""

    rule: RRule

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        y, pullback = self.rule(f, *args, **kwargs)
        if not is_differentiable(y.primal):
            return y, pullback
        primal = y.primal

        def filled(dy: t.Any) -> tuple[t.Any, ...]:
            return pullback(zero_rdata(primal) if dy is NO_TANGENT else dy)

        return y, filled

    def reset(self) -> None:
        reset = getattr(self.rule, "reset", None)
        if reset is not None:
            reset()


@attrs.frozen
class Packed:
    """A ``*args`` (``names`` None) or ``**kwargs`` parameter made of the operands
    ``indices`` (named ``names``)."""

    indices: tuple[int, ...]
    names: tuple[str, ...] | None = None

    def codual(self, operands: t.Sequence[_CoDual]) -> _CoDual:
        parts = [operands[i] for i in self.indices]
        if self.names is None:
            fdata = tuple(p.fdata for p in parts)
            collapsed = NO_TANGENT if all(d is NO_TANGENT for d in fdata) else fdata
            return CoDual(tuple(p.primal for p in parts), collapsed)
        # A dict's fdata is its whole tangent: each value's fdata and a zero rdata, which the
        # callee's pullbacks increment and ``rdata`` reads back.
        tangent = {
            n: tangent_from(p.primal, p.fdata, zero_rdata(p.primal))
            for n, p in zip(self.names, parts)
        }
        return CoDual({n: p.primal for n, p in zip(self.names, parts)}, tangent)

    def rdata(self, param: _CoDual, r: t.Any) -> list[t.Any]:
        """The rdata of each operand, from the parameter's rdata ``r`` (or its tangent)."""
        if self.names is None:
            return [NO_TANGENT] * len(self.indices) if r is NO_TANGENT else list(r)
        return [rdata_of(param.fdata[n]) for n in self.names]


Source = t.Union[int, None, Packed]


@attrs.frozen(eq=False)
class BoundRule:
    """A derived rule called with keywords, relying on defaults, or passing ``*args`` or
    ``**kwargs``.

    ``order[j]`` says where parameter ``j`` of the callee's IR comes from: operand ``i`` of the
    call (callee excluded), a default, or a ``Packed`` group of operands.  A default is read
    from the callee when called (``slots[j]``: ``("pos", k)`` is ``__defaults__[k]``, ``("kw",
    name)`` is ``__kwdefaults__[name]``); where the callee's tangent has its defaults (a function
    made with differentiable defaults), the default's tangent comes from there and its
    gradient goes back there; else ``defaults[j]``, the CoDual made when the rule was built,
    if the default is still that value.  The pullback returns rdata in the call's operand
    order.
    """

    rule: RRule
    order: tuple[Source, ...]
    defaults: tuple[_CoDual | None, ...]
    n_operands: int
    slots: tuple[tuple[str, t.Any] | None, ...] = ()

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        operands = (*args, *kwargs.values())  # keywords arrive in the call's order
        params: list[_CoDual] = []
        back: list[tuple[int, MutableTangent, str, t.Any]] = []  # defaults to add gradients to
        for j, (i, d) in enumerate(zip(self.order, self.defaults)):
            if isinstance(i, int):
                params.append(operands[i])
            elif isinstance(i, Packed):
                params.append(i.codual(operands))
            else:
                param, target = self._default(f, j, t.cast(_CoDual, d))
                params.append(param)
                if target is not None:
                    back.append((j, *target))
        y, pullback = self.rule(f, *params)
        order, n = self.order, self.n_operands

        def reordered(dy: t.Any) -> tuple[t.Any, ...]:
            r = pullback(dy)
            out = [r[0], *(NO_TANGENT,) * n]
            for j, source in enumerate(order):
                if isinstance(source, int):
                    out[1 + source] = accum(out[1 + source], r[1 + j])
                elif isinstance(source, Packed):
                    for i, rdata in zip(source.indices, source.rdata(params[j], r[1 + j])):
                        out[1 + i] = accum(out[1 + i], rdata)
            for j, fdata, field, key in back:
                _add_to_default(fdata, field, key, r[1 + j])
            return tuple(out)

        return y, reordered

    def _default(
        self, f: _CoDual, j: int, kept: _CoDual
    ) -> tuple[_CoDual, tuple[MutableTangent, str, t.Any] | None]:
        slot = self.slots[j] if self.slots else None
        if slot is None:
            return kept, None
        where, key = slot
        field = "__defaults__" if where == "pos" else "__kwdefaults__"
        value = getattr(f.primal, field)[key]
        fdata = f.fdata
        if isinstance(fdata, MutableTangent) and field in fdata.fields:
            return CoDual(value, fdata_of(fdata.fields[field][key])), (fdata, field, key)
        if kept.primal is value:
            return kept, None
        return CoDual(value, zero_fdata(value)), None

    def reset(self) -> None:
        reset = getattr(self.rule, "reset", None)
        if reset is not None:
            reset()


def _add_to_default(fdata: MutableTangent, field: str, key: t.Any, rdata: t.Any) -> None:
    """Add a default's rdata into its tangent in its function's tangent."""
    if rdata is NO_TANGENT:
        return
    tangents = fdata.fields[field]
    if field == "__kwdefaults__":
        tangents[key] = increment(tangents[key], rdata)
        return
    parts = list(tangents)
    parts[key] = increment(parts[key], rdata)
    fdata.fields[field] = tuple(parts)


class RuleCheckError(GibbousError, TypeError):
    """A rule returned fdata or rdata of the wrong kind (``build_rrule(..., debug=True)``)."""


@attrs.frozen(eq=False)
class CheckedRule:
    """A call site's rule, checked (``build_rrule(..., debug=True)`` installs one around each
    call site's rule; without ``debug`` there is none): the result's fdata and the pullback's
    rdata must have the kinds the tangent model gives the primal values
    (``gibbous.rules.tangent_kinds``).  ``RuleCheckError`` names the rule and the call's line."""

    rule: t.Any
    name: str  # the rule, as messages name it
    call: str  # the call, as messages name it
    loc: Location | None

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        y, pullback = self.rule(f, *args, **kwargs)
        if not isinstance(y, CoDual):
            self._fail(f"its result is {type(y).__name__}, not a CoDual")
        # Values the model gives no tangent (iterators, cells) may carry a rule's own fdata.
        problem = None
        if is_differentiable(y.primal):
            problem = fdata_problem(y.primal, y.fdata, "the result's fdata")
        if problem is not None:
            self._fail(problem)
        operands = (f, *args, *kwargs.values())
        primals = [cd.primal for cd in operands]
        names = ["the callee", *(f"argument {i}" for i in range(len(args))), *kwargs]

        def checked(dy: t.Any) -> tuple[t.Any, ...]:
            rdata = pullback(dy)
            if not isinstance(rdata, tuple) or len(rdata) != len(operands):
                self._fail(
                    f"its pullback returned {type(rdata).__name__} "
                    f"{'of ' + str(len(rdata)) if isinstance(rdata, tuple) else ''}, not a tuple "
                    f"of {len(operands)} rdata (the callee's and each argument's)"
                )
            for x, r, name in zip(primals, rdata, names):
                # NoTangent() stands for a zero anywhere (``accum``).
                found = None if r is NO_TANGENT else rdata_problem(x, r, f"the rdata of {name}")
                if found is not None:
                    self._fail(found)
            return rdata

        return y, checked

    def _fail(self, problem: str) -> t.NoReturn:
        where = f" at {self.loc}" if self.loc is not None else ""
        raise RuleCheckError(f"rule {self.name} of the call {self.call}{where}: {problem}")

    def reset(self) -> None:
        reset = getattr(self.rule, "reset", None)
        if reset is not None:
            reset()


def rule_name(rule: object) -> str:
    """How a ``RuleCheckError`` names a rule: its function and where it is defined."""
    inner = getattr(rule, "rule", rule)  # StatefulRRule, FillSeed, adapters
    inner = getattr(inner, "rule", inner)
    code = getattr(inner, "__code__", None)
    name = getattr(inner, "__qualname__", None) or type(inner).__qualname__
    module = getattr(inner, "__module__", None)
    where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    return f"{module}.{name}{where}" if module else f"{name}{where}"


# --------------------------------------------------------------------------------------------
# Dynamic call sites


class Resolver(t.Protocol):
    """Chooses the rule for a call from the types of its operands (``gibbous.session`` has one)."""

    def resolve(
        self,
        callee: object,
        arg_types: tuple[T.Type, ...],
        kwnames: tuple[str, ...],
        loc: Location | None,
    ) -> RRule | None:
        """The rule, or None if there is none (a ``Python function`` always has one)."""
        ...


@attrs.define(eq=False)
class DynamicRule:
    """The rule of a call site whose callee or argument types were not known precisely when
    the rule was built: chooses a rule by the runtime types and keeps it per signature.

    Bound methods (``z.conjugate``) are looked up as their function with ``self`` first.  A
    call without any rule runs as plain primal code if none of its operands has a tangent;
    otherwise it is a ``MissingRuleError`` naming the call's source line.
    """

    resolver: Resolver
    ctx: Context
    kwnames: tuple[str, ...]
    loc: Location | None
    _rules: dict[tuple[object, ...], tuple[object, t.Any]] = attrs.field(factory=dict)

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        callee = f.primal
        arg_types = tuple(T.typeof(a.primal) for a in (*args, *kwargs.values()))
        key = (_callee_key(callee, self.kwnames), *arg_types)
        hit = self._rules.get(key)
        if hit is None or not _same_callee(hit[0], callee):
            hit = (callee, self._choose(callee, arg_types))
            self._rules[key] = hit
        y, pullback = hit[1](f, *args, **kwargs)
        if not is_differentiable(y.primal):
            return y, pullback
        primal = y.primal

        def filled(dy: t.Any) -> tuple[t.Any, ...]:
            return t.cast(Pullback, pullback)(zero_rdata(primal) if dy is NO_TANGENT else dy)

        return y, filled

    def reset(self) -> None:
        for _, rule in self._rules.values():
            reset = getattr(rule, "reset", None)
            if reset is not None:
                reset()

    def _choose(self, callee: object, arg_types: tuple[T.Type, ...]) -> t.Any:
        rule = self.resolver.resolve(callee, arg_types, self.kwnames, self.loc)
        if rule is not None:
            return rule
        method = _unbind(callee)
        if method is not None:
            function, receiver = method
            types = (T.typeof(receiver), *arg_types)
            inner = self.resolver.resolve(function, types, self.kwnames, self.loc)
            if inner is not None:
                return BoundMethodRule(inner, function)
        kwnames, loc, ctx = self.kwnames, self.loc, self.ctx

        def check(primals: tuple[object, ...]) -> None:
            if any(map(is_differentiable, primals)):
                types = tuple(map(_printable, arg_types))
                raise MissingRuleError(callee, types, kwnames, ctx=ctx, loc=loc)

        return PrimalRule(check)


@attrs.define(eq=False)
class CallExRule:
    """``runtime.call_ex(f, args, kwargs)``, the frontend's ``f(*args, **kwargs)``: the items
    of ``args`` (a tuple or list) and ``kwargs`` (a dict) become operands of an ordinary call,
    whose rule a ``DynamicRule`` per set of keyword names chooses; their rdata go back into
    the containers' rdata (a tuple) or tangents (a list, a dict)."""

    resolver: Resolver
    ctx: Context
    loc: Location | None
    _sites: dict[tuple[str, ...], DynamicRule] = attrs.field(factory=dict)

    def __call__(
        self, f: _CoDual, fn: _CoDual, args: _CoDual, kwargs: _CoDual | None = None
    ) -> tuple[_CoDual, Pullback]:
        items = list(_parts(args))
        named = dict(_parts(kwargs)) if kwargs is not None and kwargs.primal is not None else {}
        site = self._sites.get(tuple(named))
        if site is None:
            site = self._sites[tuple(named)] = DynamicRule(
                self.resolver, self.ctx, tuple(named), self.loc
            )
        y, pullback = site(fn, *(cd for _, cd in items), **{k: cd for k, cd in named.items()})
        n = len(items)

        def spread(dy: t.Any) -> tuple[t.Any, ...]:
            r = pullback(dy)
            out = [NO_TANGENT, r[0], _gather(args, r[1 : 1 + n])]
            if kwargs is not None:
                out.append(_gather(kwargs, r[1 + n :], tuple(named)))
            return tuple(out)

        return y, spread

    def reset(self) -> None:
        for site in self._sites.values():
            site.reset()


def _parts(container: _CoDual) -> t.Iterator[tuple[t.Any, _CoDual]]:
    """(key, CoDual) of each item of a tuple, list or dict, with the item's fdata."""
    primal, fdata = container.primal, container.fdata
    if isinstance(primal, dict):
        for k, v in primal.items():
            yield k, CoDual(v, fdata_of(fdata[k]) if isinstance(fdata, dict) else zero_fdata(v))
        return
    for i, v in enumerate(primal):
        if isinstance(primal, list) and isinstance(fdata, list):
            item = fdata_of(fdata[i])
        elif isinstance(fdata, tuple):
            item = fdata[i]
        else:
            item = NO_TANGENT if fdata is NO_TANGENT else zero_fdata(v)
        yield i, CoDual(v, item)


def _gather(container: _CoDual, rdata: t.Sequence[t.Any], keys: t.Sequence[t.Any] = ()) -> t.Any:
    """The container's rdata from its items' (a tuple), or the items' rdata added into its
    tangent (a list or dict: their tangent is their fdata)."""
    primal, fdata = container.primal, container.fdata
    if isinstance(primal, tuple):
        parts = tuple(rdata)
        return NO_TANGENT if all(p is NO_TANGENT for p in parts) else parts
    if isinstance(fdata, (list, dict)):
        for key, r in zip(keys or range(len(rdata)), rdata):
            if r is not NO_TANGENT:
                fdata[key] = increment(fdata[key], r)
    return NO_TANGENT


def _callee_key(callee: object, kwnames: tuple[str, ...] = ()) -> object:
    if isinstance(callee, functools.partial):  # one rule serves every partial of this shape
        return partial_shape(callee, kwnames)
    if callable_instance(callee):
        return ("instance", type(callee))
    if cached(callee):
        return ("cached", function_key(getattr(callee, "__wrapped__")) or id(callee))
    method = _unbind(callee)
    if method is not None:
        return ("method", id(method[0]), T.typeof(method[1]))
    return function_key(callee) or id(callee)


def _same_callee(kept: object, callee: object) -> bool:
    if kept is callee:
        return True
    if isinstance(callee, functools.partial) or callable_instance(callee) or cached(callee):
        return True  # keyed by shape, class or code, which the key already compared
    a, b = _unbind(kept), _unbind(callee)
    if a is not None and b is not None:
        return a[0] is b[0]
    key = function_key(callee)
    return key is not None and key == function_key(kept)


def function_key(fn: object) -> tuple[object, ...] | None:
    """Python functions with one code, one globals dict and defaults of the same types share
    their derived programs: a program reads its function object only through its ``CoDual``
    argument, and ``BoundRule`` reads defaults from the function called.  So a closure or
    generator expression made anew on every call is compiled once."""
    kind = "function"
    if isinstance(fn, (runtime.GenexprFunction, runtime.GeneratorResume)):
        kind = "genexpr" if isinstance(fn, runtime.GenexprFunction) else "resume"
        fn = fn.fn
    if not isinstance(fn, pytypes.FunctionType):
        return None
    return (kind, fn.__code__, id(fn.__globals__), _value_key(fn.__defaults__),
            _value_key(fn.__kwdefaults__))


def _value_key(value: object) -> object:
    """The types of a function's defaults (a tuple, or a dict by name)."""
    if value is None:
        return None
    if isinstance(value, dict):
        return tuple((k, T.typeof(v)) for k, v in value.items())
    return tuple(T.typeof(v) for v in t.cast(tuple[t.Any, ...], value))


def _printable(ty: T.Type) -> T.Type:
    """``ty``, or ``any`` if the message could not print it (a class without an import path)."""
    try:
        format_type(ty)
    except UnprintableError:
        return T.ANY
    return ty


def _unbind(callee: object) -> tuple[object, object] | None:
    """``(function, self)`` for a bound method, else None."""
    if isinstance(callee, pytypes.MethodType):
        return callee.__func__, callee.__self__
    if isinstance(callee, (pytypes.BuiltinMethodType, pytypes.MethodWrapperType)):
        receiver = getattr(callee, "__self__", None)
        if receiver is None or isinstance(receiver, (pytypes.ModuleType, type)):
            return None
        function = getattr(type(receiver), callee.__name__, None)
        if function is None:
            return None
        return function, receiver
    return None


@attrs.frozen(eq=False)
class BoundMethodRule:
    """``obj.method(*args)`` through the rule of ``method(obj, *args)``: the callee's rdata is
    its receiver's (a bound method's tangent is that of ``__self__``)."""

    rule: RRule
    function: object

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        receiver = getattr(f.primal, "__self__")
        fdata = f.fdata  # the bound method's: Tangent({"__self__": ...}) or NoTangent()
        self_fdata = fdata.fields["__self__"] if isinstance(fdata, Tangent) else NO_TANGENT
        y, pullback = self.rule(
            CoDual(self.function, NO_TANGENT), CoDual(receiver, self_fdata), *args, **kwargs
        )
        names = ("__self__", "__func__") if isinstance(f.primal, pytypes.MethodType) else ()

        def unbound(dy: t.Any) -> tuple[t.Any, ...]:
            r = pullback(dy)
            callee: t.Any = NO_TANGENT
            if r[1] is not NO_TANGENT:
                fields = dict.fromkeys(names or ("__self__",), NO_TANGENT)
                fields["__self__"] = r[1]
                callee = Tangent(fields)
            return (callee, *r[2:])

        return y, unbound

    def reset(self) -> None:
        reset = getattr(self.rule, "reset", None)
        if reset is not None:
            reset()


@attrs.frozen(eq=False)
class ConstructRule:
    """``cls(*args)`` for a Python class, as Python does it: ``cls.__new__(cls, *args)`` then,
    if that made an instance of ``cls``, ``cls.__init__(obj, *args)``, each through its rule
    (``new`` None: ``object.__new__``, a fresh object with a fresh tangent; ``init`` None:
    ``object.__init__``).  The pullback runs theirs in reverse and adds up what they give
    each argument; the class itself has no tangent."""

    new: RRule | None
    init: RRule | None

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        cls = f.primal
        new_pb: Pullback | None = None
        if self.new is None:
            obj = object.__new__(cls)
            y: _CoDual = CoDual(obj, zero_fdata(obj))
        else:
            new_fn = CoDual(cls.__new__, NO_TANGENT)
            y, new_pb = self.new(new_fn, f, *args, **kwargs)
        init_pb: Pullback | None = None
        if self.init is not None and isinstance(y.primal, cls):
            _, init_pb = self.init(CoDual(cls.__init__, NO_TANGENT), y, *args, **kwargs)
        n = 1 + len(args) + len(kwargs)

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            grads: list[t.Any] = [NO_TANGENT] * n
            if init_pb is not None:
                r = init_pb(NO_TANGENT)
                dy = accum(dy, r[1])  # what __init__ gave the object it initialised
                grads[1:] = [accum(g, d) for g, d in zip(grads[1:], r[2:])]
            if new_pb is not None:
                r = new_pb(dy)
                grads[1:] = [accum(g, d) for g, d in zip(grads[1:], r[2:])]
            return tuple(grads)

        return y, pullback

    def reset(self) -> None:
        for rule in (self.new, self.init):
            reset = getattr(rule, "reset", None)
            if reset is not None:
                reset()


@attrs.frozen(eq=False)
class FrozenConstructRule:
    """``cls(*args)`` for a frozen dataclass or attrs class: an immutable object's tangent is
    that of its fields (``Tangent(fields)``), so the call runs as it is and each field takes
    the tangent of the argument it was initialised from (found by binding the call to the
    signature).  A field computed in ``__init__`` (``__post_init__``, a converter) has no
    argument to answer for it: if it carries a derivative, that is an error."""

    cls: type
    fields: tuple[str, ...]

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        cls = self.cls
        operands = (*args, *kwargs.values())
        obj = cls(*(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
        index, params = _field_sources(cls, len(args), tuple(kwargs))
        fdata: dict[str, t.Any] = {}
        source: dict[str, int] = {}
        for name in self.fields:
            value = getattr(obj, name)
            i = index.get(name)
            if i is not None and operands[i].primal is value:
                fdata[name], source[name] = operands[i].fdata, i
            elif not is_differentiable(value):
                fdata[name] = NO_TANGENT
            elif i is None and name in params:
                fdata[name] = zero_fdata(value)  # a default: a constant of its own
            else:
                raise NotImplementedError(
                    f"field {name!r} of {cls.__qualname__} is computed in __init__ rather than "
                    "passed through from an argument; gibbous differentiates the construction "
                    "of frozen classes whose differentiable fields are their arguments (write "
                    "a rule for the class with gibbous.primitive)"
                )
        parts = NO_TANGENT if all(v is NO_TANGENT for v in fdata.values()) else Tangent(fdata)
        n = 1 + len(operands)

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            grads: list[t.Any] = [NO_TANGENT] * n
            if isinstance(dy, Tangent):
                for name, i in source.items():
                    grads[1 + i] = accum(grads[1 + i], dy.fields.get(name, NO_TANGENT))
            for i, a in enumerate(operands):  # rdata where the model has some, zero if unused
                if grads[1 + i] is NO_TANGENT:
                    grads[1 + i] = zero_rdata(a.primal)
            return tuple(grads)

        return CoDual(obj, parts), pullback


@functools.cache
def _field_sources(
    cls: type, n_args: int, kwnames: tuple[str, ...]
) -> tuple[dict[str, int], frozenset[str]]:
    """Field name -> the operand (by index) a call with these arguments initialises it from;
    and the fields ``__init__`` takes a parameter for (the others it computes)."""
    if dataclasses.is_dataclass(cls):
        param = {f.name: f.name for f in dataclasses.fields(cls) if f.init}
    else:
        param = {a.name: a.alias for a in attrs.fields(cls) if a.init}
    signature = inspect.signature(cls)
    bound = signature.bind(*range(n_args), **{k: n_args + i for i, k in enumerate(kwnames)})
    by_param = t.cast(dict[str, int], bound.arguments)
    index = {name: by_param[p] for name, p in param.items() if p in by_param}
    return index, frozenset(param)


def constructible(cls: object) -> t.TypeGuard[type]:
    """Whether calling ``cls`` is differentiated through its ``__new__`` and ``__init__``: a
    class defined in Python whose ``__new__`` and ``__init__`` are ``object``'s or Python
    functions.  (Builtin and NumPy types are primitives: they have rules or none.)"""
    if not isinstance(cls, type) or cls.__module__ in ("builtins", "numpy"):
        return False
    if type(cls).__call__ is not type.__call__:
        return False  # a metaclass (an Enum's, say) decides what a call does
    if cls.__module__.startswith("numpy."):
        return False
    new, init = class_methods(cls)
    return (new is None or isinstance(new, pytypes.FunctionType)) and (
        init is None or isinstance(init, pytypes.FunctionType)
    )


_OBJECT_NEW: object = object.__new__
_OBJECT_INIT: object = object.__init__


def class_methods(cls: type) -> tuple[object | None, object | None]:
    """``cls.__new__`` and ``cls.__init__``, each None where it is ``object``'s."""
    new, init = getattr(cls, "__new__"), getattr(cls, "__init__")
    return (None if new is _OBJECT_NEW else new), (None if init is _OBJECT_INIT else init)


@attrs.frozen(eq=False)
class GenexprRule:
    """The rule of a generator expression's function (``runtime.GenexprFunction``), through the
    derived rule of the function it wraps: its tangent is ``MutableTangent({"fn": ...})``."""

    rule: RRule

    def __call__(self, f: _CoDual, *args: _CoDual) -> tuple[_CoDual, Pullback]:
        fdata = f.fdata
        inner = fdata.fields.get("fn", NO_TANGENT) if isinstance(fdata, MutableTangent) else fdata
        y, pullback = self.rule(CoDual(f.primal.fn, inner), *args)

        def outer(dy: t.Any) -> tuple[t.Any, ...]:
            return (NO_TANGENT, *pullback(dy)[1:])

        return y, outer

    def reset(self) -> None:
        reset = getattr(self.rule, "reset", None)
        if reset is not None:
            reset()


# Adapters whose ``reset`` is their ``rule``'s: ``DerivedRule.reset`` looks through them.
_DELEGATES: tuple[type, ...] = (BoundRule, FillSeed, GenexprRule, CheckedRule, BoundMethodRule)


@primitive(runtime.make_genexpr, T.ANY, T.ANY, T.ANY)
def make_genexpr_rrule(
    f: _CoDual, code: _CoDual, owner: _CoDual, closure: _CoDual
) -> tuple[_CoDual, Pullback]:
    """``make_genexpr`` as ``make_function`` (whose rule ties the new function's tangent to
    the cells it closes over), wrapped."""
    none = CoDual(None, NO_TANGENT)
    make = CoDual(runtime.make_function, NO_TANGENT)
    fn, _ = _make_function_rule()(make, code, owner, none, none, closure)
    made = runtime.GenexprFunction(fn.primal)
    fields = {"fn": fn.fdata if fn.fdata is not NO_TANGENT else zero_fdata(fn.primal)}
    return CoDual(made, MutableTangent(fields)), _NoRData(4)


@functools.cache
def _make_function_rule() -> RRule:
    types = [T.ANY] * 5
    return build_primitive_rrule(DefaultContext, runtime.make_function, types)


# --------------------------------------------------------------------------------------------
# Helpers


def ir_parameters(fn: pytypes.FunctionType) -> tuple[str, ...]:
    """The parameters of ``fn``'s IR, in order: positional, keyword-only, ``*args``,
    ``**kwargs`` (``co_varnames`` order, as the frontend takes them)."""
    code = fn.__code__
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return code.co_varnames[:n]
