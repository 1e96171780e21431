"""The public API: derive a rule once, call it many times.

    rule = gibbous.build_rrule(loss, W, x)                 # for these argument types
    y, (dloss, dW, dx) = gibbous.value_and_gradient(rule, loss, W, x)

``build_rrule`` accepts any callable (``gibbous.entry``): a Python function gets a rule derived
by the pipeline of ``gibbous.session`` (the frontend's IR, type inference on the arguments'
types, the standard passes, activity analysis, the AD pass and the NumPy backend, which
compiles the forward and reverse programs once); a callable with a registered rule gets that
rule.  Keyword arguments are passed through; gradients are returned for the callable and its
positional arguments (as JAX does); see docs/ad.md.
"""

from __future__ import annotations

import copy
import functools
import threading
import types as pytypes
import typing as t
import warnings

import numpy as np

from gibbous.cache import RuleCache
from gibbous.entry import Binding, Unwrapped, bind, positions, unwrap
from gibbous.ir import types as T
from gibbous.ir.exceptions import GibbousError
from gibbous.passes import Pass
from gibbous.tangents import pool
from gibbous.reverse.derived import DerivedRule, fill_rdata
from gibbous.reverse.dynamic_calls import function_key
from gibbous.rules.registry import (
    Context,
    DefaultContext,
    MissingRuleError,
    callable_name,
)
from gibbous.rules.public_names import entry_point
from gibbous.tangents.check import mismatch
from gibbous.tangents.model import (
    NO_TANGENT,
    CoDual,
    fdata_of,
    increment,
    rdata_of,
    tangent_from,
    zero_fdatas,
    zero_rdata,
    zeros_like,
)
from gibbous.toplevel import BuildOptions, EntryRule, entry_rule
from gibbous.toplevel import LibraryRule as LibraryRule
from gibbous.toplevel import library_rule as library_rule
from gibbous.session import STANDARD_PIPELINE as STANDARD_PIPELINE
from gibbous.session import Session, derivable

_DEFAULT = BuildOptions()


Rule = DerivedRule | LibraryRule


def build_rrule(
    f: t.Callable[..., object],
    *args: object,
    ctx: Context | None = None,
    debug: bool = False,
    passes: t.Sequence[Pass | str] | str | None = None,
    **kwargs: object,
) -> t.Any:
    """The rule of ``f`` for arguments of the types of ``args`` and ``kwargs``.

    ``f`` is any callable (a function, bound method, ``functools.partial``, callable instance,
    or a library function with a registered rule).  ``rule(CoDual(f), *coduals) ->
    (CoDual(y), pullback)``; ``pullback(dy) -> (df, *dargs)`` (rdata).  ``debug`` verifies
    the IR after every pass and checks stateful rules' results; ``passes`` replaces the
    standard pipeline (names or pass objects).  ``ctx``, ``debug`` and ``passes`` are this
    function's own keywords, never passed to ``f``.
    """
    options = BuildOptions(ctx or DefaultContext, debug, passes)
    return _build(Session(options.ctx, debug, passes), unwrap(f, args, kwargs), options)


def _build(session: Session, call: Unwrapped, options: BuildOptions = _DEFAULT) -> Rule:
    target = call.target
    kwnames = tuple(call.kwargs)
    operands = (*call.args, *call.kwargs.values())
    types = tuple(T.typeof(a) for a in operands)
    if session.primitive(target, types, kwnames, None) is not None:
        return library_rule(session, target, types, kwnames, options)
    if not derivable(target):
        raise MissingRuleError(target, types, kwnames, ctx=session.ctx)
    binding = bind(t.cast(pytypes.FunctionType, target), call.args, call.kwargs)
    program = session.program(target, tuple(map(T.typeof, binding.values)))
    return entry_rule(program.instantiate(EntryRule), options)


# --------------------------------------------------------------------------------------------
# Calling rules


def value_and_gradient(
    rule: Rule, f: t.Callable[..., object], *args: object, **kwargs: object
) -> tuple[t.Any, tuple[t.Any, ...]]:
    """``f(*args, **kwargs)`` and its gradient ``(df, *dargs)``: ``f`` must return a real scalar.

    Gradients have their argument's structure (a float for a float, an array for an array,
    tuples, lists, dicts of gradients, ``NoTangent()`` for what has none); ``df`` is the
    gradient with respect to the callable itself (arrays captured by a closure, the object of
    a bound method, the arguments bound by a ``functools.partial``).  Keyword arguments get
    no gradient of their own (bind them with ``functools.partial`` to get one).
    """
    if type(rule) is EntryRule and rule.direct is f and len(args) == rule.arity and not kwargs:
        return _direct(rule, f, args)
    run = _Run(rule, f, args, kwargs)
    value = run.y.primal
    return value, run.gradients(run.pullback(scalar_seed(f, value)))


# The quick path of the entry points: a rule's own function called with positional arguments
# (``EntryRule.direct``), forward and reverse pass at once (``DerivedRule.gradient``).  It
# makes the checks ``_Run`` makes (the signature, rebound globals, what was pending, the
# rule's state for this thread), each as cheaply as its case allows, and no ``_Run`` or
# pullback object.


def _direct(
    rule: EntryRule,
    f: object,
    args: tuple[object, ...],
    reuse: tuple[t.Any, ...] | None = None,
    keep: t.Any = None,
) -> tuple[t.Any, tuple[t.Any, ...]]:
    """The value and gradients of ``rule.direct(*args)`` (``rule.arity`` arguments), after the
    checks of ``_Run``; ``reuse`` as ``_Run``'s, and ``keep.fdatas`` is set to the fdatas made
    (for ``gibbous.prepared``)."""
    program = rule.program
    for ok, a in zip(program.acceptors, args):
        if not ok(a):
            raise _wrong_types(f, rule.arg_types, args)
    for namespace, name, value in program.frozen:
        if namespace.get(name, _MISSING) is not value:
            raise _stale(rule)
    fdatas = _zero_fdatas(f, args, reuse)
    if keep is not None:
        keep.fdatas = fdatas
    if len(args) == 1:  # the usual case, for a third of the cost of a map of one
        coduals: t.Iterable[CoDual[t.Any, t.Any]] = (CoDual(args[0], fdatas[1]),)
    else:
        coduals = map(CoDual, args, fdatas[1:])
    y, rdata = rule.gradient(CoDual(f, fdatas[0]), coduals, scalar_seed)
    if len(rdata) != len(fdatas):
        raise _rdata_count(rdata, fdatas)
    return y.primal, tuple(map(_gradient, (f, *args), fdatas, rdata))


def scalar_seed(f: object, value: object) -> t.Any:
    """The cotangent 1 of a real scalar ``value`` (none for an int or a bool)."""
    kind = type(value)
    if kind is np.float64:  # the common results first (a seed is immutable: one serves all)
        return _ONE_F64
    if kind is float:
        return 1.0
    if isinstance(value, (bool, int, np.integer)):
        return NO_TANGENT
    if isinstance(value, (float, np.floating)):
        return type(value)(1.0)
    raise TypeError(
        f"a gradient needs a function returning a real scalar, but {callable_name(f)} "
        f"returned {type(value).__name__}; use value_and_pullback"
    )


_ONE_F64 = np.float64(1.0)


def value_and_pullback(
    rule: Rule, ybar: object, f: t.Callable[..., object], *args: object, **kwargs: object
) -> tuple[t.Any, tuple[t.Any, ...]]:
    """``f(*args, **kwargs)`` and the pullback of the cotangent ``ybar`` (shaped like the
    result)."""
    run = _Run(rule, f, args, kwargs)
    problem = mismatch(run.y.primal, ybar, "ybar")
    if problem is not None:
        run.pullback(zero_rdata(run.y.primal))  # undoes what the forward pass wrote
        raise TypeError(
            f"value_and_pullback: ybar is not a cotangent of the result of {callable_name(f)} "
            f"({type(run.y.primal).__name__}): {problem}.  ybar has the result's structure: a "
            "float for a float, an array of its shape for an array, a tuple or list of "
            "cotangents for a tuple or list, NoTangent() for what has no derivative"
        )
    # The reverse pass undoes the forward pass's mutations, of the result too (a list it
    # appended to, an array it wrote): the value returned is the result as the forward pass
    # left it.
    value = _snapshot(run.y.primal)
    increment(run.y.fdata, fdata_of(ybar))  # an array's cotangent goes into its fdata
    return value, run.gradients(run.pullback(rdata_of(ybar)))


class _Run:
    """One forward call of a rule at the entry point, and how its rdata become gradients."""

    def __init__(
        self,
        rule: Rule,
        f: object,
        args: tuple[object, ...],
        kwargs: dict[str, object],
        reuse: tuple[t.Any, ...] | None = None,
    ) -> None:
        """``reuse``: the fdata of a previous call's arguments, zeroed and used again where an
        argument has the same shape and dtype (``gibbous.prepared``)."""
        call: Unwrapped | None = None
        binding: Binding | None = None
        kw: dict[str, object] = {}
        if type(f) is pytypes.FunctionType and not kwargs and _plain(rule, args):
            # The common case, at the cost of two checks: the arguments are the parameters.
            target: object = f
            operands = args
        else:
            call = unwrap(f, args, kwargs)
            target = call.target
            if isinstance(rule, DerivedRule):
                if not isinstance(target, pytypes.FunctionType):
                    raise _wrong_callable(rule, target)
                binding = bind(target, call.args, call.kwargs)
                operands = binding.values
            elif isinstance(rule, LibraryRule):
                operands, kw = call.args, call.kwargs
            else:
                raise TypeError(f"expected a rule made by gibbous.build_rrule, got {rule!r}")
        values = (*operands, *kw.values()) if kw else operands
        _check_signature(rule, target, values, tuple(kw))
        if isinstance(rule, DerivedRule) and rule.program.frozen and _rebound(rule):
            raise _stale(rule)
        if rule.depth:  # a top-level call: whatever was pending is abandoned
            rule.reset()
        if isinstance(rule, DerivedRule) and rule.program.lost:
            rule.program.lost.pop(threading.get_ident(), None)
        fdatas = _zero_fdatas(target, values, reuse)
        n = len(operands)
        coduals = tuple(map(CoDual, values, fdatas[1:]))
        named = dict(zip(kw, coduals[n:])) if kw else {}
        self.y: CoDual[t.Any, t.Any]
        self.pullback: t.Callable[[t.Any], tuple[t.Any, ...]]
        try:
            self.y, self.pullback = rule(CoDual(target, fdatas[0]), *coduals[:n], **named)
        except BaseException:
            # Whatever the failure left pending (a RecursionError can strike between a
            # child's forward program and its bookkeeping) goes now, not at the next call.
            rule.reset()
            raise
        self.target, self.call, self.binding = target, call, binding
        self.values, self.fdatas, self.n, self.kwnames = values, fdatas, n, tuple(kw)

    def gradients(self, rdata: tuple[t.Any, ...]) -> tuple[t.Any, ...]:
        if len(rdata) != len(self.fdatas):
            raise _rdata_count(rdata, self.fdatas)
        tangents = tuple(map(_gradient, (self.target, *self.values), self.fdatas, rdata))
        if self.call is None:
            return tangents
        if self.binding is not None:
            pos, kw = self.binding.split(tangents[1:])
        else:
            pos = list(tangents[1 : 1 + self.n])
            kw = dict(zip(self.kwnames, tangents[1 + self.n :]))
        df, pos, _ = self.call.outer((tangents[0], pos, kw))
        return (df, *pos)


def _rdata_count(rdata: tuple[t.Any, ...], fdatas: tuple[t.Any, ...]) -> ValueError:
    return ValueError(f"a pullback returned {len(rdata)} rdata for {len(fdatas)} operands")


class StaleRuleError(GibbousError, RuntimeError):
    """A global that a rule's code read was rebound after the rule was built."""


def _stale(rule: Rule) -> StaleRuleError:
    """The error of a call of a rule one of whose frozen globals was rebound."""
    return StaleRuleError(f"{_rebound(rule)}; build the rule again (gibbous.grad does)")


def _rebound(rule: Rule) -> str | None:
    """What global the rule froze has been rebound since, if one has (``Program.frozen``)."""
    if not isinstance(rule, DerivedRule):
        return None
    return rebound_global(rule.program.frozen, rule.fn)


def rebound_global(
    frozen: t.Sequence[tuple[dict[str, object], str, object]], fn: object
) -> str | None:
    """Which of the globals ``(namespace, name, value)`` a rule of ``fn`` froze into its code
    has been rebound since, said for an error; None if none has."""
    for namespace, name, value in frozen:
        if namespace.get(name, _MISSING) is not value:
            module = namespace.get("__name__", "?")
            now = namespace.get(name, _MISSING)
            return (
                f"the global {name} of module {module} was rebound after the rule of "
                f"{callable_name(fn)} was built (then {_short(value)}, now {_short(now)}), "
                "and the rule would compute with its old value: gibbous reads globals once, "
                "when it builds a rule"
            )
    return None


_MISSING = object()


def _short(value: object) -> str:
    if value is _MISSING:
        return "deleted"
    text = repr(value)
    return text if len(text) <= 40 else f"{type(value).__name__} at 0x{id(value):x}"


def _plain(rule: Rule, args: tuple[object, ...]) -> bool:
    """A derived rule of a function with positional parameters only, all given."""
    return isinstance(rule, DerivedRule) and rule.program.plain and len(args) == len(rule.arg_types)


def _snapshot(value: object) -> t.Any:
    """A copy of ``value`` that the reverse pass cannot change (immutables as they are)."""
    kind = type(value)
    if kind in _NUMBERS:
        return value
    if kind is np.ndarray:
        return t.cast(np.ndarray[t.Any, t.Any], value).copy()
    try:
        with warnings.catch_warnings():  # 3.12 deprecates copying itertools objects
            warnings.simplefilter("ignore", DeprecationWarning)
            return copy.deepcopy(value)
    except Exception:  # an object that cannot be copied (np.finfo) is returned as it is
        return value


def _zero_fdatas(
    f: object, args: tuple[t.Any, ...], reuse: tuple[t.Any, ...] | None = None
) -> tuple[t.Any, ...]:
    """``zero_fdatas(f, *args)``, quicker for the common case: a plain function and arguments
    that are numbers or arrays owning their memory (which cannot alias one another), or a lone
    view (``_lone_view``).  An array of ``reuse`` (the fdata of the same argument in a previous
    call) of the argument's shape and dtype is zeroed and used again."""
    if type(f) is not pytypes.FunctionType or f.__closure__ is not None:
        return zero_fdatas(f, *args)
    out: list[t.Any] = [NO_TANGENT]
    seen: set[int] | None = None  # the arrays' ids, from the second array on
    # A previous gradient handed back as an argument must not be zeroed as someone's fdata (a
    # view of one has a base: it gets new zeros or takes the general path, never ``reuse``).
    given = set(map(id, args)) if reuse is not None else None
    i = 0
    for a in args:
        i += 1
        kind = type(a)
        if kind is np.ndarray:
            array: np.ndarray[t.Any, t.Any] = a
            code = array.dtype.kind
            if code == "O":
                return zero_fdatas(f, *args)
            if array.base is not None:  # a view (np.linspace gives one)
                if not (array.flags.c_contiguous and _lone_view(array, args)):
                    return zero_fdatas(f, *args)
                fdata = zeros_like(array)  # (never a reused array: it may be the base)
                if fdata.strides != array.strides:  # (NumPy's flags ignore dimensions of 1)
                    return zero_fdatas(f, *args)
                out.append(fdata)
                continue
            if i > 1:  # (one argument cannot alias another)
                seen = seen or {id(b) for b in args[: i - 1] if type(b) is np.ndarray}
                if id(a) in seen:
                    return zero_fdatas(f, *args)
                seen.add(id(a))
            if code != "f" and code != "c":
                out.append(NO_TANGENT)
                continue
            if reuse is not None:
                old = reuse[i] if len(reuse) > i else None
                if _fits(old, array) and (given is None or id(old) not in given):
                    old.fill(0)
                    out.append(old)
                    continue
            if array.ndim > 1 and not array.flags.c_contiguous:  # (1-d: contiguous, owning)
                out.append(np.zeros_like(array))
            elif array.nbytes < pool.LARGE_BYTES:  # what zeros_like does, a call quicker
                out.append(np.zeros(array.shape, array.dtype))
            else:
                out.append(zeros_like(array))
        elif kind in _NUMBERS:
            out.append(NO_TANGENT)
        else:
            return zero_fdatas(f, *args)
    return tuple(out)


_NUMBERS = (float, int, bool, complex, np.float64, np.float32, np.int64, type(None), str)


def _lone_view(view: np.ndarray[t.Any, t.Any], args: tuple[t.Any, ...]) -> bool:
    """Whether new zeros of a view's strides can be its fdata: ``zero_fdatas`` makes it the
    same view of zeros shadowing its base, so that arguments that alias one another get fdata
    that does; a float view that is the only array argument aliases no other, and those zeros
    have its values and layout (at a tenth of the cost)."""
    return view.dtype.kind in "fc" and sum(type(b) is np.ndarray for b in args) == 1


def _fits(old: object, array: np.ndarray[t.Any, t.Any]) -> t.TypeGuard[np.ndarray[t.Any, t.Any]]:
    """Whether ``old`` can be an argument's fdata again: its shape, dtype and layout."""
    return (
        type(old) is np.ndarray
        and old.shape == array.shape
        and old.dtype == array.dtype
        # (an array that owns its memory and has one dimension at most is contiguous)
        and (old.ndim < 2 and old.base is None or old.flags.c_contiguous)
    )


def _gradient(x: t.Any, fdata: t.Any, rdata: t.Any) -> t.Any:
    kind = type(x)
    if rdata is NO_TANGENT:  # the common cases first
        if kind is np.ndarray:
            return fdata
        # What tangent_from gives: ints and plain functions have no tangent.
        if fdata is NO_TANGENT and (
            kind is int or kind is pytypes.FunctionType and x.__closure__ is None
        ):
            return NO_TANGENT
    elif kind is float and type(rdata) is float:
        return rdata
    return tangent_from(x, fdata, fill_rdata(x, rdata))


def _wrong_callable(rule: Rule, f: object) -> TypeError:
    return TypeError(f"this rule was built for {callable_name(rule.fn)}, not {callable_name(f)}")


def _check_signature(
    rule: Rule, f: object, operands: tuple[object, ...], kwnames: tuple[str, ...]
) -> None:
    if isinstance(rule, DerivedRule):
        key = None if rule.fn is f else function_key(f)
        if rule.fn is not f and (key is None or key != function_key(rule.fn)):
            raise _wrong_callable(rule, f)
        types = rule.arg_types
        accepts = rule.program.acceptors
        if len(operands) == len(types) and all(ok(a) for ok, a in zip(accepts, operands)):
            return
    else:
        if rule.fn is not f:
            raise _wrong_callable(rule, f)
        types = rule.arg_types
        if kwnames != rule.kwnames:
            raise TypeError(
                f"the rule of {callable_name(f)} was built for keywords {rule.kwnames}, "
                f"called with {kwnames}; build a rule for this call"
            )
        if len(operands) == len(types) and all(
            T.is_subtype(T.typeof(a), ty) for a, ty in zip(operands, types)
        ):
            return
    raise _wrong_types(f, types, operands)


def _wrong_types(f: object, types: tuple[T.Type, ...], operands: tuple[object, ...]) -> TypeError:
    from gibbous.ir.printer import format_type

    want = ", ".join(map(format_type, types))
    got = ", ".join(format_type(T.typeof(a)) for a in operands)
    return TypeError(
        f"the rule of {callable_name(f)} was built for arguments ({want}), "
        f"called with ({got}); build a rule for these types"
    )


def grad(f: t.Callable[..., object], argnums: int | tuple[int, ...] = 0) -> t.Callable[..., t.Any]:
    """``g(*args, **kwargs)``: the gradient of the real scalar ``f(*args, **kwargs)`` with
    respect to positional argument ``argnums`` (negative counts from the end; a tuple of
    gradients for a tuple of positions).  One rule per argument signature is built on first
    use and kept (in ``g.rules``, bounded: see ``gibbous.cache``)."""
    rules: RuleCache[Rule] = RuleCache()
    name = callable_name(f)
    lock = threading.Lock()

    def build(args: tuple[object, ...], kwargs: dict[str, object]) -> Rule:
        return _build(Session(DefaultContext, False, None), unwrap(f, args, kwargs))

    def gradient(*args: object, **kwargs: object) -> t.Any:
        picked = positions(argnums, len(args), name)
        key = (
            tuple(T.typeof(a) for a in args),
            tuple((k, T.typeof(v)) for k, v in kwargs.items()),
        )
        with lock:  # threads calling first at once build the rule once
            rule = rules.rule(key, build, args, kwargs)
            if isinstance(rule, DerivedRule) and _rebound(rule) is not None:
                rule = rules[key] = build(args, kwargs)
        _, grads = value_and_gradient(rule, f, *args, **kwargs)
        if isinstance(argnums, tuple):
            return tuple(grads[1 + i] for i in picked)
        return grads[1 + picked[0]]

    try:
        gradient = functools.wraps(f)(gradient)
    except (AttributeError, TypeError):  # a callable without the attributes wraps copies
        pass
    gradient.rules = rules  # type: ignore[attr-defined]
    gradient.__gibbous_name__ = f"gibbous.grad({name})"  # type: ignore[attr-defined]
    return entry_point(gradient)


for _entry in (build_rrule, value_and_gradient, value_and_pullback, grad):
    entry_point(_entry)

__all__ = [
    "LibraryRule",
    "Rule",
    "Session",
    "StaleRuleError",
    "build_rrule",
    "derivable",
    "grad",
    "value_and_gradient",
    "value_and_pullback",
]
