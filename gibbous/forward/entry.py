"""The forward-mode entry: ``build_frule`` and ``jvp``.

``frule = build_frule(f, *args)`` reads ``f``'s typed IR (the reverse mode's, from the same
session machinery), applies the forward-mode transform (``gibbous.forward.transform``) and compiles
the result with the NumPy backend; calls of Python functions inside get forward programs of
their own, built once per argument types (recursion through a program still being built
reaches it when called).  ``jvp(frule, f, args, tangents)`` returns ``(y, dy)``: ``dy`` is the
derivative of ``f`` at ``args`` along ``tangents``, shaped as ``y``.

Every float or float64-array argument has a tangent (an int has none: pass None).  The
callable's own captured values are constants here: the tangent is along the arguments.
"""

from __future__ import annotations

import types as pytypes
import typing as t

import numpy as np

from gibbous.api import StaleRuleError, rebound_global
from gibbous.ir import types as T
from gibbous.forward.transform import ForwardModeError
from gibbous.forward.activity import bind_packed, bound, tangent_carrying
from gibbous.rules import frules
from gibbous.rules.emit import ObjectTangent, user_class
from gibbous.tangents.classes import instance_fields
from gibbous.rules.public_names import callable_name, entry_point
from gibbous.reverse.derived import acceptor
from gibbous.rules.registry import Context, DefaultContext
from gibbous.tangents.model import NoTangent
from gibbous.session import Session
from gibbous.forward.primitive import derivable_function, primitive_program, primitive_run
from gibbous.forward.dynamic import bound_run
from gibbous.forward.programs import ProgramBuilder, written_operands
from gibbous.entry import bind, unwrap

__all__ = ["ForwardModeError", "ForwardRule", "build_frule", "jvp"]


@entry_point
class ForwardRule:
    """A forward rule of ``fn`` for arguments of ``arg_types`` (and keywords ``kwnames``).

    ``fn`` is the callable as the user gave it; ``target`` the one the rule is for, under its
    wrappers (``gibbous.entry.unwrap``), which pass it ``hidden`` arguments of their own first
    (a bound method's object, a partial's arguments): constants, as keywords are.  The
    program runs as ``run(*operands, *tangents)``: the operands are the hidden arguments, the
    positional ones and the keywords' values, with one tangent per varied operand."""

    def __init__(
        self,
        fn: object,
        operand_types: tuple[T.Type, ...],
        run: t.Callable[..., t.Any],
        frozen: t.Sequence[tuple[dict[str, object], str, object]] = (),
        written: frozenset[int] = frozenset(),
        *,
        target: object = None,
        hidden: int = 0,
        kwnames: tuple[str, ...] = (),
    ) -> None:
        self.fn = fn
        self.target = fn if target is None else target
        self.hidden, self.kwnames = hidden, kwnames
        # the operands the function writes into: their tangents are written too, so ``jvp``
        # hands the program copies of the caller's
        self.written = written
        self.operand_types = operand_types
        n = len(operand_types) - len(kwnames)
        self.arg_types = operand_types[hidden:n]  # (the positional arguments given)
        # The module globals the programs froze into their code (the session's list: programs
        # built later, at run time, add theirs), checked by ``jvp`` as ``value_and_gradient``
        # checks a reverse rule's.
        self.frozen = frozen
        # Tangents are along the positional arguments given; the others' are zeros (constants
        # the program may still write into or read attributes of, as it would in a call).
        self.operand_varied = tuple(map(tangent_carrying, operand_types))
        self.varied = self.operand_varied[hidden:n]
        self.accepts = tuple(map(acceptor, operand_types))
        self.run = run

    def __call__(self, *args: t.Any) -> tuple[t.Any, t.Any]:
        return t.cast(tuple[t.Any, t.Any], self.run(*args))

    def __repr__(self) -> str:
        n = len(self.operand_types) - len(self.kwnames)
        shown = [str(ty) for ty in self.arg_types]
        shown += [f"{k}={ty}" for k, ty in zip(self.kwnames, self.operand_types[n:])]
        return f"<forward rule of {callable_name(self.fn)}({', '.join(shown)})>"


@entry_point
def build_frule(
    f: t.Callable[..., object], *args: object, ctx: Context | None = None, **kwargs: object
) -> ForwardRule:
    """The forward rule of ``f`` for arguments of the types of ``args`` and ``kwargs``.

    ``f`` is any callable ``build_rrule`` takes: a Python function, a bound method, a
    ``functools.partial``, an instance with ``__call__``, a library function with a forward
    rule.  Arguments bind as Python binds them (``*args``, keyword-only parameters,
    ``**kwargs``, defaults); tangents are taken along the positional arguments given: keyword
    arguments, the object of a bound method and a partial's arguments are constants.
    """
    call = unwrap(f, args, kwargs)
    target, hidden, kwnames = call.target, len(call.args) - len(args), tuple(call.kwargs)
    operands = (*call.args, *call.kwargs.values())
    types = tuple(T.typeof(a) for a in operands)
    made = ForwardRule(f, types, _unbuilt, target=target, hidden=hidden, kwnames=kwnames)
    varied = made.operand_varied
    builder = ProgramBuilder(Session(ctx or DefaultContext, False, None))
    tangent = builder.primitive(target, types, kwnames, varied, None)
    if isinstance(tangent, frules.Emit):  # written out: the call and its tangent, compiled
        fn = t.cast(t.Callable[..., object], target)
        result_type = T.typeof(fn(*call.args, **call.kwargs))
        made.run = primitive_program(target, types, kwnames, varied, tangent, result_type)
        return made
    if tangent is not None:
        made.run = primitive_run(target, tangent, types, kwnames, varied)
        return made
    if not (isinstance(target, pytypes.FunctionType) and derivable_function(target)):
        raise ForwardModeError(
            f"build_frule: {callable_name(target)} has no forward rule and is not a Python "
            "function whose forward program could be derived; this version takes Python "
            "functions (methods, partials and callable objects of them too) and the library "
            "functions docs/rules.md lists with a forward rule"
        )
    binding = bind_packed(target, len(call.args), kwnames)
    if binding is None:
        bind(target, call.args, call.kwargs)  # (Python's own TypeError, said of the call)
        raise TypeError(f"build_frule: {callable_name(target)} does not take these arguments")
    full_types, full_varied = bound(binding, types, varied)
    run = builder.program(target, full_types, full_varied)
    written = written_operands(
        builder.written_args(target, full_types, full_varied), binding, target, None
    )
    if binding != list(range(len(operands))):  # (packed, keywords, defaults: bound each call)
        run = bound_run(target, binding, len(operands), varied, full_varied, run, False)
    made.run, made.frozen, made.written = run, builder.session.frozen, written
    return made


def _unbuilt(*args: t.Any) -> t.Any:
    raise AssertionError("a forward rule called before it was built")


@entry_point
def jvp(
    rule: ForwardRule,
    f: t.Callable[..., object],
    args: t.Sequence[t.Any],
    tangents: t.Sequence[t.Any],
    /,
    **kwargs: t.Any,
) -> tuple[t.Any, t.Any]:
    """``(f(*args, **kwargs), J(args) @ tangents)``: ``tangents`` has ``args``' structure (a
    float for a float, an array of its shape for an array, None or ``NoTangent()`` for an
    int); keyword arguments have none (they are constants, as for ``build_frule``)."""
    args, tangents = tuple(args), tuple(tangents)
    if f is rule.fn and not kwargs and not rule.kwnames and not rule.hidden:
        operands = args  # (the common case: the arguments are the operands)
    else:
        operands = _operands(rule, f, args, kwargs)
    if rule.frozen:
        stale = rebound_global(rule.frozen, rule.target)
        if stale is not None:
            raise StaleRuleError(f"{stale}; build the rule again")
    if len(args) != len(rule.arg_types) or len(tangents) != len(args):
        raise TypeError(
            f"jvp: {rule!r} takes {len(rule.arg_types)} arguments and as many tangents; "
            f"{len(args)} arguments and {len(tangents)} tangents given"
        )
    hidden = rule.hidden
    if hidden or rule.kwnames:  # (zeros along the wrappers' arguments and the keywords)
        tangents = (None,) * hidden + tangents + (None,) * len(rule.kwnames)
    args = operands
    given = []
    for i, (ok, a, dx, v) in enumerate(zip(rule.accepts, args, tangents, rule.operand_varied)):
        if not ok(a):
            raise TypeError(
                f"jvp: {_which(rule, i)} is {T.typeof(a)}, but {rule!r} was built for "
                f"{rule.operand_types[i]}: build a rule for these types"
            )
        if v:
            kind = type(dx)
            if (kind is float and type(a) is float) or (
                kind is np.ndarray
                and type(a) is np.ndarray
                and dx.dtype == np.float64
                and dx.shape == a.shape
            ):
                given.append(dx)  # (the common cases, checked quickly)
            else:
                given.append(_checked_tangent(i - rule.hidden, a, dx))
        elif dx is not None and not isinstance(dx, NoTangent):
            raise TypeError(
                f"jvp: {_which(rule, i)} ({rule.operand_types[i]}) has no tangent; pass None"
            )
    if rule.written:
        given = _apart(rule, args, given)
    y, dy = rule.run(*args, *given)
    if dy is None:
        dy = frules.like(y, None) if _is_number(y) else NoTangent()
    return y, dy


def _operands(
    rule: ForwardRule, f: object, args: tuple[t.Any, ...], kwargs: dict[str, t.Any]
) -> tuple[t.Any, ...]:
    """The operands of ``f(*args, **kwargs)`` as ``rule`` takes them: the wrappers' arguments,
    the positional ones, the keywords' values in the rule's order."""
    call = unwrap(f, args, kwargs)
    if call.target is not rule.target or len(call.args) - len(args) != rule.hidden:
        raise TypeError(f"jvp: this rule is {rule!r}, not a rule of {callable_name(f)}")
    if set(call.kwargs) != set(rule.kwnames):
        given = ", ".join(call.kwargs) or "none"
        raise TypeError(
            f"jvp: {rule!r} was built for the keyword arguments "
            f"{', '.join(rule.kwnames) or 'none'}; given: {given}: build a rule for these"
        )
    return (*call.args, *(call.kwargs[k] for k in rule.kwnames))


def _which(rule: ForwardRule, i: int) -> str:
    """Operand ``i`` of ``rule``, as the caller sees it."""
    n = len(rule.operand_types) - len(rule.kwnames)
    if i >= n:
        return f"keyword argument {rule.kwnames[i - n]}"
    if i < rule.hidden:
        return f"the value {callable_name(rule.fn)} passes first (operand {i})"
    return f"argument {i - rule.hidden}"


def _apart(rule: ForwardRule, args: tuple[t.Any, ...], given: list[t.Any]) -> list[t.Any]:
    """The tangents with those of written arguments copied (arrays in a written list or tuple
    too): the program writes into them as the function writes into the arguments, and the
    caller's tangents stay the caller's.  A written argument sharing memory with another (an
    array, or a list, held by both) cannot be followed (its tangent would have to share memory
    with the other's as well): refused."""
    out, k = [], 0
    for i, v in enumerate(rule.operand_varied):
        if not v:
            continue
        dx = given[k]
        k += 1
        if i in rule.written:
            mine = list(_held(args[i]))
            for j, other in enumerate(args):
                if j != i and any(_overlap(a, b) for a in mine for b in _held(other)):
                    raise ValueError(
                        f"jvp: {callable_name(rule.fn)} writes into {_which(rule, i)}, which "
                        f"shares memory with {_which(rule, j)}; pass a copy of one of them"
                    )
            dx = _copied(dx)
        out.append(dx)
    return out


def _held(v: t.Any) -> t.Iterator[t.Any]:
    """``v`` and the arrays, lists and dicts it holds (a write may reach each)."""
    if isinstance(v, (np.ndarray, list, dict)):
        yield v
    if isinstance(v, (list, tuple)):
        for item in v:
            yield from _held(item)
    elif isinstance(v, dict) or user_class(type(v)):  # (a dict's values, an object's fields)
        for item in (v if isinstance(v, dict) else instance_fields(v)).values():
            yield from _held(item)


def _overlap(a: t.Any, b: t.Any) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return bool(np.may_share_memory(a, b))
    return a is b


def _copied(d: t.Any) -> t.Any:
    """A tangent with every array in it (and every list, dict or object's tangent holding
    one) new."""
    if isinstance(d, np.ndarray):
        return np.array(d, dtype=d.dtype if d.dtype.kind == "c" else np.float64)
    if isinstance(d, list):
        return [_copied(i) for i in d]
    if isinstance(d, tuple):
        return tuple(_copied(i) for i in d)
    if isinstance(d, dict):
        return {k: _copied(v) for k, v in d.items()}
    if isinstance(d, ObjectTangent):
        return ObjectTangent(_copied(d.fields))
    return d


def _is_number(y: object) -> bool:
    return isinstance(y, (float, int, complex, np.number)) or (
        isinstance(y, np.ndarray) and y.dtype.kind in "biufc"
    )


def _checked_tangent(i: int | str, a: t.Any, dx: t.Any) -> t.Any:
    if dx is None or isinstance(dx, NoTangent):  # (no tangent: zeros, of the value's shape)
        return frules.like(a, None)
    if isinstance(a, (tuple, list)):  # (the items' tangents: None or 0.0 for an int's)
        kind = type(a)
        if not isinstance(dx, (tuple, list)) or len(dx) != len(a):
            raise TypeError(
                f"jvp: the tangent of argument {i} must be a {kind.__name__} of {len(a)} items, "
                f"one per item of the argument (None for an item without one); "
                f"{type(dx).__name__} given"
            )
        items = [
            _checked_tangent(f"{i}[{k}]", item, d) if tangent_carrying(T.typeof(item)) else None
            for k, (item, d) in enumerate(zip(a, dx))
        ]
        build: t.Any = kind
        return build(*items) if hasattr(kind, "_fields") else build(items)  # (a NamedTuple's)
    if isinstance(a, dict):  # (its values' tangents by key, in its order; missing: zeros)
        if not isinstance(dx, dict) or not set(dx) <= set(a):
            raise TypeError(
                f"jvp: the tangent of argument {i} must be a dict of tangents of its values, "
                f"by key (a key it leaves out: zeros); {type(dx).__name__} given"
            )
        return {
            k: _checked_tangent(f"{i}[{k!r}]", v, dx.get(k))
            if tangent_carrying(T.typeof(v))
            else None
            for k, v in a.items()
        }
    if user_class(type(a)):  # (its attributes' tangents, by name)
        if isinstance(dx, ObjectTangent):
            return dx
        if isinstance(dx, dict) and all(isinstance(k, str) for k in dx):
            return ObjectTangent(dict(dx))
        raise TypeError(
            f"jvp: the tangent of argument {i} ({type(a).__name__}) must be a dict of its "
            f"attributes' tangents by name (or None); {type(dx).__name__} given"
        )
    if isinstance(a, (complex, np.complexfloating)):
        if isinstance(dx, (bool, np.bool_)) or not isinstance(dx, (int, float, complex, np.number)):
            raise TypeError(
                f"jvp: the tangent of argument {i} (a complex number) must be a number; "
                f"{type(dx).__name__} given"
            )
        return complex(dx)
    if isinstance(a, np.ndarray):
        # (a complex array's tangent may be real: its imaginary part 0)
        complex_ = a.dtype.kind == "c"
        kinds = "biufc" if complex_ else "biuf"
        if not isinstance(dx, np.ndarray) or dx.shape != a.shape or dx.dtype.kind not in kinds:
            what = (
                f"an array of shape {dx.shape} and dtype {dx.dtype}"
                if isinstance(dx, np.ndarray)
                else type(dx).__name__
            )
            expected = "a complex (or real)" if complex_ else "a real"
            raise TypeError(
                f"jvp: the tangent of argument {i} must be {expected} array of shape {a.shape}; "
                f"{what} given"
            )
        dtype = a.dtype if complex_ else np.float64
        return dx if dx.dtype == dtype else dx.astype(dtype)
    real = isinstance(dx, (int, float, np.integer, np.floating))
    if isinstance(dx, (bool, np.bool_)) or not real:
        raise TypeError(
            f"jvp: the tangent of argument {i} (a float) must be a real number; "
            f"{type(dx).__name__} given"
        )
    return float(dx)


