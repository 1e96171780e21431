"""The rule interface, and the registry of primitives.

A **rule** for a callable ``fn`` is

    rrule(f: CoDual, *args: CoDual, **kwargs: CoDual) -> (CoDual(y, y_fdata), pullback)
    pullback(dy_rdata) -> tuple of rdata

``f`` is the callee itself (``CoDual(fn, fn_fdata)``).  The forward call computes ``y`` and its
fdata; gradients of arrays, lists and other fdata-carrying arguments are added into their fdata
by the pullback, in place.  The pullback returns **one rdata per IR operand of the call, in
operand order**: the callee, each positional argument, then the value of each keyword argument
in call order, exactly like the operands of an IR ``Call`` (``[callee, *args, *kwargs]``).  So
the AD pass routes the i-th entry to the value of operand i without knowing the callee.  An
entry is ``NoTangent()`` where there is no rdata (arrays, ints, ...).

**Registration.**  A rule is registered for a callable and a pattern of argument types, in a
``Context``:

* ``@primitive(fn, *arg_types, kwargs=None, ctx=DefaultContext)`` on a plain rule;
* ``zero_derivative(fn, *arg_types, ...)``: a generated rule that runs ``fn`` and returns no
  gradient for anything (zero rdata of each operand's kind; its result gets zero fdata, so
  that it can be mutated later);
* ``@stateful_primitive(fn, *arg_types, state_type=..., ...)`` on a stateful rule
  (``gibbous.rules.stateful``): ``build_primitive_rrule`` gives each call site its own
  ``StatefulRRule``.

A pattern is IR types (or their text, ``"f64[:,:]"``) for the positional arguments, optionally
ending in ``...`` (any further arguments, positional or keyword), and ``kwargs``, a mapping of
keyword name to type for keywords that must be present.  A call matches when its argument types
are subtypes (``gibbous.ir.types.is_subtype``) position by position and keyword by keyword.
Positional and keyword passing are different patterns: register both when both are common.

**Lookup.**  Contexts form a chain (``DefaultContext``'s parent is ``MinimalContext``); lookup
considers the registrations of the context and all its parents.  Of the patterns that match, the
most specific wins: one whose every match is also a match of the other.  Equal patterns: the
nearer context wins, and in one context the later registration replaces the earlier.  Two
matching patterns neither of which is more specific are an ``AmbiguousRuleError`` naming both;
no matching pattern is a ``MissingRuleError`` saying how to write a rule.

Registering a primitive says nothing about purity: that is ``gibbous.ir.purity``'s table.
"""

from __future__ import annotations

import sys
import types as pytypes
import typing as t

import attrs

from gibbous.ir.names import callable_key
from gibbous.ir.exceptions import GibbousError
from gibbous.ir import types as T
from gibbous.ir.core import Location
from gibbous.ir.parser import parse_type
from gibbous.ir.printer import format_type
from gibbous import optional
from gibbous.rules.public_names import callable_name as callable_name
from gibbous.rules.stateful import StatefulRRule, StatefulRRuleFunction
from gibbous.tangents.model import CoDual, zero_fdata, zero_rdata

if t.TYPE_CHECKING:
    from gibbous.rules.inline import InlineRule

Pullback = t.Callable[[t.Any], tuple[t.Any, ...]]
RRule = t.Callable[..., tuple[CoDual[t.Any, t.Any], Pullback]]
PatternItem = T.Type | str | pytypes.EllipsisType

_R = t.TypeVar("_R", bound=t.Callable[..., t.Any])
_S = t.TypeVar("_S")

# --------------------------------------------------------------------------------------------
# Patterns


def _as_type(item: T.Type | str) -> T.Type:
    if isinstance(item, str):
        return parse_type(item)
    if not isinstance(item, T.Type):
        raise TypeError(f"a rule pattern holds IR types or their text, not {item!r}")
    return item


@attrs.frozen
class Pattern:
    """The argument types a registration applies to."""

    args: tuple[T.Type, ...]
    kwargs: tuple[tuple[str, T.Type], ...] = ()
    rest: bool = False  # a trailing ``...``: any further arguments, positional or keyword

    @classmethod
    def make(
        cls, items: t.Sequence[PatternItem], kwargs: t.Mapping[str, T.Type | str] | None
    ) -> Pattern:
        rest = bool(items) and items[-1] is Ellipsis
        head = items[:-1] if rest else items
        if any(item is Ellipsis for item in head):
            raise TypeError("'...' may only end a rule pattern")
        types = tuple(_as_type(t.cast(T.Type | str, item)) for item in head)
        kw = tuple(sorted((name, _as_type(ty)) for name, ty in (kwargs or {}).items()))
        return cls(types, kw, rest)

    def matches(self, args: t.Sequence[T.Type], kwargs: t.Mapping[str, T.Type]) -> bool:
        if len(args) < len(self.args) or (len(args) > len(self.args) and not self.rest):
            return False
        if not all(T.is_subtype(a, p) for a, p in zip(args, self.args)):
            return False
        for name, ty in self.kwargs:
            given = kwargs.get(name)
            if given is None or not T.is_subtype(given, ty):
                return False
        return self.rest or len(kwargs) == len(self.kwargs)

    def within(self, other: Pattern) -> bool:
        """Whether every call this pattern matches, ``other`` matches too."""
        if self.rest and not other.rest:
            return False
        if len(self.args) < len(other.args) or (
            len(self.args) > len(other.args) and not other.rest
        ):
            return False
        if not all(T.is_subtype(a, b) for a, b in zip(self.args, other.args)):
            return False
        mine = dict(self.kwargs)
        if not other.rest and mine.keys() != dict(other.kwargs).keys():
            return False
        return all(name in mine and T.is_subtype(mine[name], ty) for name, ty in other.kwargs)

    def format(self, fn: object) -> str:
        parts = [format_type(ty, lenient=True) for ty in self.args]
        parts += [f"{name}={format_type(ty, lenient=True)}" for name, ty in self.kwargs]
        parts += ["..."] if self.rest else []
        return f"{callable_name(fn)}({', '.join(parts)})"


def format_call(fn: object, arg_types: t.Sequence[T.Type], kwnames: t.Sequence[str]) -> str:
    """``numpy.add(f64[:], f64, out=f64[:])``: a call's signature in the IR's type syntax."""
    args, kwargs = _split_call(arg_types, kwnames)
    return Pattern(tuple(args), tuple(kwargs.items())).format(fn)


def _split_call(
    arg_types: t.Sequence[T.Type], kwnames: t.Sequence[str]
) -> tuple[t.Sequence[T.Type], dict[str, T.Type]]:
    if len(kwnames) > len(arg_types):
        raise ValueError(f"{len(kwnames)} keyword names for {len(arg_types)} argument types")
    n = len(arg_types) - len(kwnames)
    return arg_types[:n], dict(zip(kwnames, arg_types[n:]))


# --------------------------------------------------------------------------------------------
# Registrations and contexts

Kind = t.Literal["primitive", "zero_derivative", "stateful"]


@attrs.frozen(eq=False)
class Registration:
    """One rule registered for ``fn`` and ``pattern`` in ``context``."""

    fn: object
    pattern: Pattern
    rule: t.Callable[..., t.Any]
    kind: Kind
    context: Context
    state_type: type | None = None
    #: The module that registered the rule (the audit groups rules and their cases by it).
    origin: str = "?"
    #: The name of a variant chosen by its pattern's static types (``float_unary``): the same
    #: derivative as the callable's general rule, in code that trusts those types.
    variant: str | None = None
    #: What the AD pass may write in place of calling the rule (``gibbous.rules.inline``).
    inline: InlineRule | None = None

    def describe(self) -> str:
        variant = f" {self.variant}" if self.variant else ""
        return f"{self.pattern.format(self.fn)} [{self.kind}{variant} in {self.context.name}]"




@attrs.frozen(eq=False)
class Context:
    """A set of registrations, which also sees those of its parents."""

    name: str
    parent: Context | None = None
    _rules: dict[tuple[object, ...], list[Registration]] = attrs.field(factory=dict, init=False)

    def chain(self) -> t.Iterator[Context]:
        """This context, then its parent, and so on."""
        ctx: Context | None = self
        while ctx is not None:
            yield ctx
            ctx = ctx.parent

    def register(self, registration: Registration) -> None:
        entries = self._rules.setdefault(callable_key(registration.fn), [])
        entries[:] = [r for r in entries if r.pattern != registration.pattern]
        entries.append(registration)

    def registrations(self, fn: object) -> tuple[Registration, ...]:
        """What this context itself (not its parents) has for ``fn``, oldest first."""
        return tuple(self._rules.get(callable_key(fn), ()))

    def __repr__(self) -> str:
        return f"<rule context {self.name}>"


#: Rules every program needs: what the AD pass must never differentiate through.
MinimalContext = Context("MinimalContext")
#: The context rules go into unless told otherwise; sees MinimalContext's rules too.
DefaultContext = Context("DefaultContext", parent=MinimalContext)


# --------------------------------------------------------------------------------------------
# Errors


class AmbiguousRuleError(GibbousError, LookupError):
    """Two registrations match a call and neither is more specific than the other."""

    def __str__(self) -> str:
        return str(self.args[0])


class MissingRuleError(GibbousError, LookupError):
    """No registration matches a call that needs a rule."""

    def __init__(
        self,
        fn: object,
        arg_types: t.Sequence[T.Type],
        kwnames: t.Sequence[str] = (),
        *,
        ctx: Context = DefaultContext,
        loc: Location | None = None,
        inside: tuple[str, BaseException] | None = None,
    ) -> None:
        self.fn = fn
        self.arg_types = tuple(arg_types)
        self.kwnames = tuple(kwnames)
        self.loc = loc
        #: (library, error): the rule was derived from the library's own Python, which needs
        #: what gibbous cannot differentiate (the error is the inner call's, or construct's).
        self.inside = inside
        #: (callable, note): met inside the tangent function of that callable's forward rule,
        #: differentiated again (a Hessian-vector product's); ``__notes__[note]``, if there is
        #: one, is the line that called it (``gibbous.reverse.derived``)
        self.inside_tangent: tuple[object, int] | None = None
        super().__init__(self._message(ctx))

    def _message(self, ctx: Context) -> str:
        call = format_call(self.fn, self.arg_types, self.kwnames)
        where = f" at {self.loc}" if self.loc is not None else ""
        lines = [f"no rule to differentiate {call}{where} in {ctx.name}"]
        if self.inside is not None:
            library, error = self.inside
            first = str(error).split("\n", 1)[0]
            lines += [
                f"gibbous differentiates {library}'s own Python where no rule is registered; "
                f"{callable_name(self.fn)}'s needs what it cannot differentiate yet:",
                f"    {first}",
            ]
        known = [r for c in ctx.chain() for r in c.registrations(self.fn)]
        if known:
            lines.append("rules exist for:")
            lines += [f"    {r.describe()}" for r in known[:8]]
            lines += [f"    ... and {len(known) - 8} more"] if len(known) > 8 else []
        args, kwargs = _split_call(self.arg_types, self.kwnames)
        pattern = [repr(format_type(ty, lenient=True)) for ty in args]
        if kwargs:
            items = ", ".join(f"{n!r}: {format_type(ty)!r}" for n, ty in kwargs.items())
            pattern.append(f"kwargs={{{items}}}")
        params = ["f", *(f"x{i}" for i in range(len(args))), *kwargs]
        lines += [
            "write a rule (its pullback returns one rdata per operand: the callee, each "
            "argument, each keyword value):",
            f"    @gibbous.primitive({callable_name(self.fn)}, {', '.join(pattern)})"
            if pattern
            else f"    @gibbous.primitive({callable_name(self.fn)})",
            f"    def rrule({', '.join(params)}):",
            "        ...  # return CoDual(y, y_fdata), pullback",
        ]
        return "\n".join(lines)

    def __str__(self) -> str:
        return str(self.args[0])


# --------------------------------------------------------------------------------------------
# Registering


# Modules that register rules on behalf of their callers (a family's helpers): a registration
# made through one is the caller's, which the audit groups it with.
_HELPERS = {__name__}


def registers_for_caller(module: str) -> None:
    """Registrations made from ``module`` count as made by the module that called into it."""
    _HELPERS.add(module)


def registering_module() -> str:
    """The module making the registration at hand (``registers_for_caller`` modules skipped):
    what the audit groups rules by, and the file a callable's rules of both modes share."""
    return _origin()


def _origin() -> str:
    """The first module on the stack that is not a registering helper: who is registering."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") in _HELPERS:
        frame = frame.f_back  # type: ignore[assignment]
    return str(frame.f_globals.get("__name__", "?")) if frame is not None else "?"


def _register(
    fn: object,
    pattern: Pattern,
    rule: t.Callable[..., t.Any],
    kind: Kind,
    ctx: Context,
    state_type: type | None = None,
    variant: str | None = None,
    inline: InlineRule | None = None,
) -> Registration:
    origin = _origin()
    registration = Registration(fn, pattern, rule, kind, ctx, state_type, origin, variant, inline)
    ctx.register(registration)
    return registration


def primitive(
    fn: object,
    *arg_types: PatternItem,
    kwargs: t.Mapping[str, T.Type | str] | None = None,
    ctx: Context = DefaultContext,
    variant: str | None = None,
    inline: InlineRule | None = None,
) -> t.Callable[[_R], _R]:
    """Decorator: register a plain rule for calls of ``fn`` with these argument types.

    ``variant`` names a rule written for the static types of a narrower pattern than the
    callable's general rule (``"float_unary"`` for ``f64``): lookup picks it as it picks any
    more specific pattern, and the rule table and the audit name it.  ``inline`` is the form
    the AD pass writes out in place of a call of ``rule`` (a call of this pattern whose result
    is a float): the rule's derivative as reverse-program arithmetic.
    """
    pattern = Pattern.make(arg_types, kwargs)  # a bad pattern fails here, not at decoration

    def decorate(rule: _R) -> _R:
        _register(fn, pattern, rule, "primitive", ctx, variant=variant, inline=inline)
        return rule

    return decorate


def stateful_primitive(
    fn: object,
    *arg_types: PatternItem,
    state_type: type[_S],
    kwargs: t.Mapping[str, T.Type | str] | None = None,
    ctx: Context = DefaultContext,
    variant: str | None = None,
    inline: InlineRule | None = None,
) -> t.Callable[[StatefulRRuleFunction[_S]], StatefulRRuleFunction[_S]]:
    """Decorator: register ``stateful_rrule(state, f, *args, **kwargs)`` for these calls
    (``variant`` and ``inline``: as for ``primitive``; a site written out as the form keeps
    no state, so only an array form, whose reverse helper needs none, fits)."""
    pattern = Pattern.make(arg_types, kwargs)

    def decorate(rule: StatefulRRuleFunction[_S]) -> StatefulRRuleFunction[_S]:
        _register(fn, pattern, rule, "stateful", ctx, state_type, variant, inline)
        return rule

    return decorate


@attrs.frozen
class ZeroDerivativeRule:
    """Runs the primal; no gradient flows to any operand."""

    def __call__(
        self, f: CoDual[t.Any, t.Any], *args: CoDual[t.Any, t.Any], **kwargs: CoDual[t.Any, t.Any]
    ) -> tuple[CoDual[t.Any, t.Any], Pullback]:
        operands = (f, *args, *kwargs.values())
        y = f.primal(*(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
        # A result that is an argument keeps that argument's fdata: they are one object.
        fdata = next((a.fdata for a in operands[1:] if a.primal is y), None)

        def pullback(dy: t.Any) -> tuple[t.Any, ...]:
            # Zero rdata of each operand's kind (0.0 for a float): nothing flows back.
            return tuple(zero_rdata(x.primal) for x in operands)

        return CoDual(y, zero_fdata(y) if fdata is None else fdata), pullback


def no_derivative(rule: t.Callable[..., t.Any]) -> t.Callable[..., t.Any]:
    """Mark a hand-written reverse rule as one of a call without a derivative (an index, a
    count, a rounding: ``gibbous.library.common.no_derivative_rrule``), which forward mode
    then treats as it treats ``zero_derivative``: a result without a tangent."""
    setattr(rule, "__gibbous_no_derivative__", True)
    return rule


def has_no_derivative(registration: Registration | None) -> bool:
    """Whether a registration says its call has no derivative: ``zero_derivative``, or a rule
    marked ``no_derivative``."""
    if registration is None:
        return False
    if registration.kind == "zero_derivative":
        return True
    return bool(getattr(registration.rule, "__gibbous_no_derivative__", False))


def zero_derivative(
    fn: object,
    *arg_types: PatternItem,
    kwargs: t.Mapping[str, T.Type | str] | None = None,
    ctx: Context = DefaultContext,
) -> RRule:
    """Register now that calls of ``fn`` with these types have no derivative; returns the rule.

    Use it for functions whose result does not depend differentiably on their arguments
    (``len``, ``np.shape``, comparisons) and whose result shares no memory with them.
    """
    rule = ZeroDerivativeRule()
    _register(fn, Pattern.make(arg_types, kwargs), rule, "zero_derivative", ctx)
    return rule


# --------------------------------------------------------------------------------------------
# Looking up


def _matching(
    ctx: Context, fn: object, arg_types: t.Sequence[T.Type], kwnames: t.Sequence[str]
) -> list[Registration]:
    optional.load()
    args, kwargs = _split_call(arg_types, kwnames)
    return [
        r
        for c in ctx.chain()
        for r in reversed(c.registrations(fn))
        if r.pattern.matches(args, kwargs)
    ]


def is_primitive(
    ctx: Context, fn: object, arg_types: t.Sequence[T.Type], kwnames: t.Sequence[str] = ()
) -> bool:
    """Whether some rule in ``ctx`` (or a parent) matches the call.  Ambiguity is not checked
    here: ``lookup_rule`` reports it."""
    return bool(_matching(ctx, fn, arg_types, kwnames))


def lookup_rule(
    ctx: Context,
    fn: object,
    arg_types: t.Sequence[T.Type],
    kwnames: t.Sequence[str] = (),
    *,
    loc: Location | None = None,
) -> Registration:
    """The registration that applies to ``fn(*args)`` with these types (``kwnames`` name the
    last ``len(kwnames)`` of ``arg_types``)."""
    candidates = _matching(ctx, fn, arg_types, kwnames)  # nearest context first
    if not candidates:
        raise MissingRuleError(fn, arg_types, kwnames, ctx=ctx, loc=loc)
    for c in candidates:
        if all(c.pattern.within(d.pattern) for d in candidates):
            return c
    # Name two of the narrowest candidates that do not contain each other.
    minimal = [c for c in candidates if not any(_narrower(d, c) for d in candidates)] or candidates
    first = minimal[0]
    second = next((c for c in minimal if not first.pattern.within(c.pattern)), candidates[-1])
    call = format_call(fn, arg_types, kwnames)
    raise AmbiguousRuleError(
        f"ambiguous rules for {call}: {first.describe()} and {second.describe()} both match "
        "and neither is more specific; register a rule for a pattern within both"
    )


def _narrower(a: Registration, b: Registration) -> bool:
    return a.pattern.within(b.pattern) and not b.pattern.within(a.pattern)


def build_primitive_rrule(
    ctx: Context,
    fn: object,
    arg_types: t.Sequence[T.Type],
    kwnames: t.Sequence[str] = (),
    *,
    debug: bool = False,
    loc: Location | None = None,
) -> RRule:
    """The rule for one call site: the registered rule itself, or for a stateful registration
    a fresh ``StatefulRRule`` (call this once per call site)."""
    registration = lookup_rule(ctx, fn, arg_types, kwnames, loc=loc)
    if registration.kind == "stateful":
        assert registration.state_type is not None
        return StatefulRRule(
            t.cast(StatefulRRuleFunction[t.Any], registration.rule),
            registration.state_type,
            debug=debug,
        )
    return t.cast(RRule, registration.rule)
