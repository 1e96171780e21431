"""The rules users hold: what ``build_rrule`` and ``grad`` hand out.

Rule state (tapes, stateful rules' buffers, pending-call depths) is correct for one thread's
calls at a time.  The rule object a user holds is shared, so it keeps one state per thread,
made on that thread's first call (``PerThread``): the first thread to call uses the object's
own, every other thread an instance of the same compiled programs, kept in a
``threading.local`` so that it goes when its thread does.  A pullback belongs to the instance
whose forward call made it.  Child rules of call sites are only ever called from their
parent's thread: their ``threads`` slot is empty, and that one test is all they pay.

A copy is such an instance too (fresh state, the same programs); pickling stores what the
rule was built from (the function, the argument types, the build options) and builds it
again on load (see docs/ad.md, "Copies and pickling").
"""

from __future__ import annotations

import pickle
import sys
import threading
import types as pytypes
import typing as t

import attrs

from gibbous.ir import types as T
from gibbous.passes import Pass
from gibbous.reverse.derived import DerivedRule
from gibbous.reverse.memory import Memory, memory
from gibbous.rules.registry import (
    Context,
    DefaultContext,
    MinimalContext,
    MissingRuleError,
    RRule,
    callable_name,
)
from gibbous.rules.stateful import StatefulRRule
from gibbous.session import Session
from gibbous.tangents.model import CoDual


class PerThread:
    """Which rule state each thread uses: the first thread to call, the holder's own (``None``
    here); every other thread, one ``make`` made for it on its first call.  A dead first
    thread's state passes to the next newcomer, reset (through ``takeover``)."""

    __slots__ = ("local", "owner", "lock", "make")

    def __init__(self, make: t.Callable[[], t.Any]) -> None:
        self.local = threading.local()
        self.owner: threading.Thread | None = None
        self.lock = threading.Lock()
        self.make = make

    def claim(self, takeover: t.Callable[[], None]) -> t.Any:
        """This thread's state on its first call: ``None`` for the holder's own."""
        with self.lock:
            owner = self.owner
            own = owner is None or not owner.is_alive()
            if own:
                self.owner = threading.current_thread()
        if own and owner is not None:
            takeover()  # pending calls of a thread that has gone: their pullbacks refuse
        mine = None if own else self.make()
        self.local.rule = mine
        return mine

    def mine(self) -> t.Any:
        """This thread's state if it has called already (``None``: the holder's own), else
        ``UNCLAIMED``."""
        return getattr(self.local, "rule", UNCLAIMED)


UNCLAIMED = object()


@attrs.frozen
class BuildOptions:
    """``build_rrule``'s own keywords, kept for copies and pickling."""

    ctx: Context = DefaultContext
    debug: bool = False
    passes: t.Sequence[Pass | str] | str | None = None

    def __reduce__(self) -> tuple[object, ...]:
        return (BuildOptions, (_ContextReference(self.ctx), self.debug, self.passes))


class _ContextReference:
    """A rule context pickles by the module-level name it is bound to: its registrations are
    keyed by the identity of the callables, which only the process that made them knows."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def __reduce__(self) -> tuple[object, ...]:
        for known in (DefaultContext, MinimalContext):
            if self.ctx is known:
                return (_context, ("gibbous.rules.registry", known.name))
        for name, module in list(sys.modules.items()):
            for attribute, value in list(getattr(module, "__dict__", {}).items()):
                if value is self.ctx:
                    return (_context, (name, attribute))
        raise pickle.PicklingError(
            f"cannot pickle a rule built with ctx={self.ctx!r}: a rule context pickles by "
            "the module-level name it is bound to, and this one has none"
        )


def _context(module: str, name: str) -> Context:
    __import__(module)
    return t.cast(Context, getattr(sys.modules[module], name))


class EntryRule(DerivedRule):
    """A ``DerivedRule`` as ``build_rrule`` returns it: one state per calling thread (its
    ``threads``, which ``DerivedRule.__call__`` consults), copied with fresh state, pickled as
    what it was built from."""

    __slots__ = ("options", "direct", "arity")

    def __init__(self, *args: t.Any) -> None:
        super().__init__(*args)
        self.threads = PerThread(self.program.instantiate)
        self.options = BuildOptions()
        # The function whose calls with ``arity`` positional arguments are this rule's own (the
        # entry points' quick path, ``gibbous.api``); None if it takes other parameters.
        self.direct: object = self.program.fn if self.program.plain else None
        self.arity = len(self.program.arg_types)

    @property
    def depth(self) -> int:
        """This thread's forward calls whose pullback has not run yet."""
        try:  # asked before every top-level call: the quickest lookup
            mine = self.threads.local.rule
        except AttributeError:
            return 0  # this thread has not called
        return self._depth if mine is None else t.cast(int, mine.depth)

    def reset(self) -> None:
        """Forget this thread's pending calls (see ``DerivedRule.reset``)."""
        mine: t.Any = getattr(self.threads.local, "rule", UNCLAIMED)
        if mine is None:
            DerivedRule.reset(self)
        elif mine is not UNCLAIMED:
            mine.reset()

    def memory(self) -> Memory:
        """The NumPy memory this rule holds between calls, in this thread's state: its
        stateful rules' saved copies and buffers, what its tape still references, and apart,
        the pool of recycled fdata every rule shares (``gibbous.reverse.memory``)."""
        mine: t.Any = getattr(self.threads.local, "rule", UNCLAIMED)
        return memory(self if mine is None or mine is UNCLAIMED else mine)

    def __copy__(self) -> EntryRule:
        rule = self.program.instantiate(EntryRule)
        rule.options = self.options
        return rule

    def __deepcopy__(self, memo: dict[int, object]) -> EntryRule:
        return self.__copy__()

    def __reduce__(self) -> tuple[object, ...]:
        fn = by_reference(self.program.fn)
        return (restore, ("derived", fn, self.program.arg_types, (), self.options))


def by_reference(fn: object) -> object:
    """``fn``, for a pickler to store: a plain pickler stores a function by its module and
    name, and cannot store one that has none (a lambda, a closure, a local function), so that
    is refused here with the reason; a pickler that stores functions by value (cloudpickle's)
    is given it."""
    if not isinstance(fn, pytypes.FunctionType) or _importable(fn) or _by_value():
        return fn
    raise pickle.PicklingError(
        f"cannot pickle the rule of {callable_name(fn)}: pickle stores a function by its "
        "module and name, and this one cannot be imported by name (a lambda, a closure or "
        "a function defined inside another).  Define it at module level, or pickle the rule "
        "with cloudpickle (pip install cloudpickle), which stores such functions by value"
    )


def _importable(fn: pytypes.FunctionType) -> bool:
    """Whether importing ``fn.__module__`` and following ``fn.__qualname__`` gives ``fn``,
    as a plain pickler needs."""
    found: object = sys.modules.get(fn.__module__)
    for part in fn.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is fn


def _by_value() -> bool:
    """Whether the reduction runs under a pickler of its own class (cloudpickle's, dill's):
    those run Python code above it and may store functions by value; the plain one does not
    (its ``dump`` is C)."""
    plain = (pickle.Pickler, getattr(pickle, "_Pickler"))
    frame = sys._getframe(1)
    while frame is not None:
        if "self" in frame.f_code.co_varnames[:1]:
            owner = frame.f_locals.get("self")
            if isinstance(owner, plain) and type(owner) not in plain:
                return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def restore(
    kind: str,
    fn: t.Any,
    arg_types: tuple[T.Type, ...],
    kwnames: tuple[str, ...],
    options: BuildOptions,
) -> t.Any:
    """A pickled rule, built again from what it was built from (``__reduce__``)."""
    session = Session(options.ctx, options.debug, options.passes)
    if kind == "derived":
        return entry_rule(session.program(fn, arg_types).instantiate(EntryRule), options)
    return library_rule(session, fn, arg_types, kwnames, options)


def entry_rule(rule: EntryRule, options: BuildOptions) -> EntryRule:
    rule.options = options
    return rule


class LibraryRule:
    """The rule of a callable with a registered rule, called directly:
    ``build_rrule(np.einsum, "ij,jk->ik", A, B)``.  ``rule(CoDual(f), *args, **kwargs)`` is the
    registered rule's; its pullback returns ``(df, *dargs, *dkwargs)``.  A stateful rule keeps
    one state per calling thread (gibbous.toplevel); copies get fresh state, and
    pickling stores the callable, the argument types and the build options."""

    __slots__ = ("fn", "arg_types", "kwnames", "rule", "make", "threads", "options")

    def __init__(
        self,
        fn: object,
        arg_types: tuple[T.Type, ...],
        kwnames: tuple[str, ...],
        make: t.Callable[[], RRule],
        options: BuildOptions | None = None,
    ) -> None:
        self.fn, self.arg_types, self.kwnames, self.make = fn, arg_types, kwnames, make
        self.rule = make()
        self.options = options or BuildOptions()
        stateful = isinstance(self.rule, StatefulRRule)
        self.threads = PerThread(make) if stateful else None

    def _mine(self) -> t.Any:
        """This thread's rule: the registered rule itself where it keeps no state or for the
        first thread to call; None for a thread that has not called."""
        if self.threads is None:
            return self.rule
        mine = self.threads.mine()
        return None if mine is UNCLAIMED else self.rule if mine is None else mine

    def _reset_own(self) -> None:
        reset = getattr(self.rule, "reset", None)
        if reset is not None:
            reset()

    @property
    def depth(self) -> int:
        """This thread's forward calls whose pullback has not run yet (stateful rules only)."""
        return int(getattr(self._mine(), "depth", 0))

    def reset(self) -> None:
        reset = getattr(self._mine(), "reset", None)
        if reset is not None:
            reset()

    def __repr__(self) -> str:
        return f"<LibraryRule {callable_name(self.fn)}: {self.rule!r}>"

    def __call__(self, f: CoDual[t.Any, t.Any], *args: t.Any, **kwargs: t.Any) -> t.Any:
        threads = self.threads
        if threads is None:
            return self.rule(f, *args, **kwargs)
        try:
            mine = threads.local.rule
        except AttributeError:  # this thread's first call
            mine = threads.claim(self._reset_own)
        return (self.rule if mine is None else mine)(f, *args, **kwargs)

    def __copy__(self) -> LibraryRule:
        return LibraryRule(self.fn, self.arg_types, self.kwnames, self.make, self.options)

    def __deepcopy__(self, memo: dict[int, object]) -> LibraryRule:
        return self.__copy__()

    def __reduce__(self) -> tuple[object, ...]:
        fn = by_reference(self.fn)
        return (restore, ("library", fn, self.arg_types, self.kwnames, self.options))


def library_rule(
    session: Session,
    fn: object,
    types: tuple[T.Type, ...],
    kwnames: tuple[str, ...],
    options: BuildOptions,
) -> LibraryRule:
    """The ``LibraryRule`` of ``fn`` for these types, or ``MissingRuleError``."""
    maker = session.primitive(fn, types, kwnames, None)
    if maker is None:
        raise MissingRuleError(fn, types, kwnames, ctx=session.ctx)
    return LibraryRule(fn, types, kwnames, maker, options)
