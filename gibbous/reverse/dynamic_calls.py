"""Dynamic call sites: where the callee or the argument types were not known precisely when
the rule was built, a rule chosen at run time by the types of the operands, and kept per
signature (``DynamicRule``); and ``f(*args, **kwargs)`` (``CallExRule``)."""

from __future__ import annotations

import functools
import types as pytypes
import typing as t

import attrs
import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.core import Location
from gibbous.ir.printer import UnprintableError, format_type
from gibbous.infer.implementations import frozen_closure
from gibbous.library.python.iteration import consume, is_iterator
from gibbous.rules.call_adapters import BoundMethodRule, PrimalRule
from gibbous.rules.callables import cached, callable_instance, partial_shape
from gibbous.rules.registry import (
    Context,
    MissingRuleError,
    Pullback,
    RRule,
)
from gibbous.tangents.model import (
    NO_TANGENT,
    CoDual,
    fdata_of,
    increment,
    is_differentiable,
    zero_fdata,
    zero_rdata,
)

_CoDual = CoDual[t.Any, t.Any]


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
    the containers' rdata (a tuple) or tangents (a list, a dict); an iterator's items (``f(*zip(a,
    b))``) are taken as the primal takes them, their rdata sent back where they came from."""

    resolver: Resolver
    ctx: Context
    loc: Location | None
    _sites: dict[tuple[str, ...], DynamicRule] = attrs.field(factory=dict)

    def __call__(
        self, f: _CoDual, fn: _CoDual, args: _CoDual, kwargs: _CoDual | None = None
    ) -> tuple[_CoDual, Pullback]:
        drained = consume(args) if is_iterator(args.primal) else None  # ``f(*zip(a, b))``
        if drained is not None:
            items = [(i, CoDual(drained.item(i), drained.fdata(i))) for i in range(len(drained))]
        else:
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
            if drained is not None:  # (the iterator's items' rdata go where they came from)
                for i, ri in enumerate(r[1 : 1 + n]):
                    drained.send_rdata(i, ri)
                out = [NO_TANGENT, r[0], NO_TANGENT]
            else:
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
    if type(callee) in _ITSELF or isinstance(getattr(callee, "__self__", None), pytypes.ModuleType):
        return callee  # (a ufunc, a module's builtin function: the most frequent, and itself)
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


_ITSELF = frozenset({np.ufunc})


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
    if frozen_closure(fn):  # (its closure's values are constants of its program)
        return ("frozen", id(fn))
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
