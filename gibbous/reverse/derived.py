"""The objects derived rules are made of at run time.

The AD pass (``gibbous.reverse.transform``) turns a function into a forward and a reverse program,
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
  vague type).  Those child rules live in modules of their own (``call_adapters``,
  ``dynamic_calls``, ``construction``, and ``debug_checks`` for the debug wrapper); this one is
  the runtime they plug into.

All of it lives as long as the rule: a warm call re-uses the tape's list and the children's
buffers.  A rule may run forward several times before its pullbacks (a call in a loop of the
caller: fwd, fwd, pb, pb); the tape hands each pullback its own call's data, last in first
out, and ``PullbackOrderError`` reports any other order.  An exception in the forward or
reverse program marks the rule *dirty*: its next forward call resets the whole tree of
instances first (a reset moves indices, it frees nothing but references), and pending
pullbacks of the abandoned calls refuse to run rather than compute with stale data.
"""

from __future__ import annotations

import functools
import inspect
import threading
import types as pytypes
import typing as t

import attrs
import numpy as np

from gibbous.ir import types as T
from gibbous.ir.exceptions import GibbousError
from gibbous.ir.purity import register_pure
from gibbous.rules import buffers
from gibbous.rules.call_adapters import _DELEGATES
from gibbous.reverse import recursion
from gibbous.rules.registry import MissingRuleError, Pullback
from gibbous.infer.implementations import tangent_of
from gibbous.rules.stateful import PullbackOrderError
from gibbous.tangents.check import rdata_mismatch
from gibbous.reverse.unwind import unwind
from gibbous.reverse.user_lines import note_user_line
from gibbous.tangents.model import NO_TANGENT, CoDual, increment, zero_rdata

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
    # closure index -> ("rule", maker), ("buffers", maker), ("tape", None) or ("count", the
    # count's name)
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
        return tuple(map(acceptor, self.arg_types))

    @t.overload
    def instantiate(self, *, level: int = 0) -> DerivedRule: ...
    @t.overload
    def instantiate(self, cls: type[_Rule], *, level: int = 0) -> _Rule: ...

    def instantiate(self, cls: type[DerivedRule] | None = None, *, level: int = 0) -> DerivedRule:
        """A new instance: its own tape and child rules (``cls``: a subclass, for the rules
        users hold, gibbous.toplevel), ``level`` calls of derived rules deep (0: called
        by the user; see gibbous.reverse.recursion)."""
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
            elif kind == "buffers":  # an array site's (gibbous.rules.buffers)
                children.append(replace.setdefault(index, what()))
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


def acceptor(ty: T.Type) -> t.Callable[[object], bool]:
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
        "_keep",
    )

    def __init__(
        self,
        program: Program,
        forward: t.Callable[..., t.Any],
        reverse: t.Callable[..., t.Any],
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
        self.level = 0  # calls of derived rules above it (see gibbous.reverse.recursion)
        self._keep = False  # its array sites use their buffers (``keep_buffers``)

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

    def instances(self) -> t.Iterator[tuple[DerivedRule, list[object]]]:
        """This instance and every derived instance below it, each with its other children
        (primitive rules, site buffers).  One level of recursion is an instance inside the
        last: a loop, not a recursion, so that a tree as deep as the recursion went can be
        walked."""
        todo = [self]
        while todo:
            rule = todo.pop()
            others: list[object] = []
            for child in rule.children:
                while type(child) in _DELEGATES:
                    child = child.rule
                if type(child) is LazyDerivedRule:
                    child = child.instance
                if type(child) is DerivedRule:
                    todo.append(child)
                elif child is not None:
                    others.append(child)
            yield rule, others

    def reset(self) -> None:
        """Forget pending calls, here and in every child rule, and free what they held: the
        tape, stateful rules' states, site buffers (child rules and their programs stay)."""
        for rule, others in self.instances():
            rule.tape.reset()
            for child in others:
                if hasattr(child, "reset"):
                    child.reset()
            rule._depth = 0
            rule._dirty = _CLEAN
            rule._generation += 1
            rule._serials.clear()

    def keep_buffers(self, keep: bool) -> None:
        """Have the array sites of this instance and every instance below it compute into
        their buffers (``gibbous.rules.buffers``), or as the primal does (the buffers stay for
        the next call that keeps them; ``reset`` frees them).  Only while nothing is pending:
        every pending run of a site must be of one kind."""
        for rule, others in self.instances():
            rule._keep = keep
            for child in others:
                if type(child) is buffers.SiteBuffers:
                    child.keep = keep
                    child.depth = 0

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
        if self.level == 0 and not self._depth and self._keep is not buffers.MODE.keep:
            self.keep_buffers(buffers.MODE.keep)  # (a call from the user, nothing pending)
        cell = self.tape.cell
        start = 0 if cell is None else cell.cell_contents
        try:
            y = t.cast(_CoDual, self.forward(f, *args))
        except BaseException as e:
            self._forward_failed(e, start)
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

    def _forward_failed(self, e: BaseException, start: int) -> None:
        """Note where the forward program failed, and whether it left the rule dirty."""
        if isinstance(e, Exception) and not isinstance(e, StopIteration):
            note_user_line(e, _code(self.forward), self.fn_name)
            of = tangent_of(self.program.fn)
            if of is not None and isinstance(e, MissingRuleError) and e.inside_tangent is None:
                # (met differentiating a forward rule's tangent function again, in a
                # Hessian-vector product: the note its caller adds next is the user's line)
                e.inside_tangent = (of, len(getattr(e, "__notes__", ())))
        # Raised before recording anything (a check of the arguments, a failed fast path):
        # nothing to undo, and a caller that catches it may go on.  Otherwise the operations
        # recorded cannot be undone in part.
        cell = self.tape.cell
        if cell is not None and cell.cell_contents != start:
            self._dirty = _FAILED
            self.program.lost.setdefault(threading.get_ident(), []).append(
                f"{self.fn_name} raised ({type(e).__name__}: {e}) after it had recorded "
                "differentiable operations"
            )

    def gradient(
        self,
        f: _CoDual,
        args: t.Iterable[_CoDual],
        seed: t.Callable[[object, object], t.Any],
    ) -> tuple[_CoDual, tuple[t.Any, ...]]:
        """A top-level call and its pullback at once: ``y, pullback = self(f, *args)``, then
        ``pullback(seed(f.primal, y.primal))``, for the state of the calling thread.

        What is pending is abandoned first, as at every top-level call, and a failed forward
        pass leaves nothing pending.  Otherwise this is the same bookkeeping as the two calls
        (a failing ``seed`` leaves the call pending, as a dropped pullback does), without the
        pullback object and its order checks: only ``seed`` runs between the two passes, so no
        other call of this rule can come between them."""
        threads = self.threads
        mine = None
        if threads is not None:
            try:
                mine = threads.local.rule
            except AttributeError:  # this thread's first call
                mine = threads.claim(lambda: DerivedRule.reset(self))
        rule: DerivedRule = self if mine is None else mine
        if rule._depth or rule._dirty:
            DerivedRule.reset(rule)
        if rule._keep is not buffers.MODE.keep:
            DerivedRule.keep_buffers(rule, buffers.MODE.keep)
        lost = rule.program.lost
        if lost:
            lost.pop(threading.get_ident(), None)
        cell = rule.tape.cell
        start = 0 if cell is None else cell.cell_contents
        try:
            y: _CoDual = rule.forward(f, *args)
        except BaseException as e:
            rule._forward_failed(e, start)
            DerivedRule.reset(rule)
            raise
        depth = rule._depth = rule._depth + 1
        rule._serial = serial = rule._serial + 1
        serials = rule._serials
        if len(serials) < depth:
            serials.append(serial)
        else:
            serials[depth - 1] = serial
        value = y.primal
        dy = seed(f.primal, value)
        if lost:
            _refuse_partial(lost)
        kind = type(dy)
        if kind is not float and not (kind is np.float64 and type(value) in _FLOATS):
            dy = _checked_dy(rule, value, dy)
        try:
            result: tuple[t.Any, ...] = rule.reverse(dy)
        except BaseException as e:
            rule._reverse_failed(e, start)
            raise
        rule._depth = depth - 1
        return y, result

    def _reverse_failed(self, e: BaseException, start: int) -> None:
        """Undo what the failed reverse pass could not, and leave the rule dirty."""
        if isinstance(e, Exception):
            note_user_line(e, _code(self.reverse), self.fn_name)
        # The pullbacks still on the tape undo the rest of the forward pass's writes, so that
        # the arguments are left as they were before the call.
        unwind(self.tape.items, start, self.tape)
        self._dirty = _FAILED


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
        if lost:
            _refuse_partial(lost)
        if type(dy) is not float:  # a float is right whatever the result (and quick)
            dy = _checked_dy(rule, self.y.primal, dy)
        try:
            result = t.cast(tuple[t.Any, ...], rule.reverse(dy))
        except BaseException as e:
            rule._reverse_failed(e, self.start)
            raise
        rule._depth = self.depth - 1
        return result


def _refuse_partial(lost: dict[int, list[str]]) -> None:
    """``PartialCallError`` if a call of this thread was lost to the gradient (``Program.lost``)."""
    mine = lost.get(threading.get_ident())
    if mine:
        raise PartialCallError(
            f"{mine[0]}, and a caller caught the exception and went on: gibbous cannot undo "
            "part of a call, so there is no gradient through that path.  Raise before any "
            "differentiable work, or test for the case instead of catching it"
        )


def _checked_dy(rule: DerivedRule, y: object, dy: t.Any) -> t.Any:
    """The ``dy`` a reverse program takes for ``y``: ``dy`` itself, or zeros for
    ``NoTangent()`` where the program needs them; ``TypeError`` if it is not ``y``'s rdata."""
    seed = rule.program.seed
    if seed == "none":
        if dy is not NO_TANGENT and dy is not None:
            if rdata_mismatch(y, dy) is not None:  # it is ignored, but wrong
                _refuse_dy(rule, y, dy)
    elif seed == "fill" and dy is NO_TANGENT:
        return zero_rdata(y)
    elif not _quick_ok(dy, y):
        if rdata_mismatch(y, dy) is not None:  # the slow check, rarely reached
            _refuse_dy(rule, y, dy)
    return dy


def _code(program: t.Callable[..., object]) -> pytypes.CodeType:
    """The code of a forward or reverse program (through a recursion boundary's wrapper)."""
    return t.cast(pytypes.FunctionType, getattr(program, "__wrapped__", program)).__code__


def _quick_ok(dy: object, y: object) -> bool:
    """Quick tests that pass the common right cotangents without a look at their structure: a
    NumPy float64 for a float result (``value_and_gradient``'s seed for a ``float64`` value),
    and the rdata of tuples that the reverse programs pass (the items are not looked at: a
    wrong item fails in the reverse program's own arithmetic)."""
    if type(dy) is np.float64:
        return type(y) in _FLOATS
    return type(dy) is tuple and type(y) is tuple and len(dy) == len(y)


_FLOATS = (float, np.float64)


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
            level = recursion.caller_level(_CALL_CODE, _GRADIENT_CODE)
            instance = self.instance = self.program().instantiate(level=level)
            if self.cell is not None:
                self.cell.cell_contents = instance.__call__
        return instance.__call__(f, *args)  # (a bound method: see ``Program.instantiate``)

    def reset(self) -> None:
        if self.instance is not None:
            self.instance.reset()


# The code of the two ways into a forward program, which ``recursion.caller_level`` looks for.
_CALL_CODE = DerivedRule.__call__.__code__
_GRADIENT_CODE = DerivedRule.gradient.__code__



# --------------------------------------------------------------------------------------------
# Helpers


def ir_parameters(fn: pytypes.FunctionType) -> tuple[str, ...]:
    """The parameters of ``fn``'s IR, in order: positional, keyword-only, ``*args``,
    ``**kwargs`` (``co_varnames`` order, as the frontend takes them)."""
    code = fn.__code__
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return code.co_varnames[:n]
