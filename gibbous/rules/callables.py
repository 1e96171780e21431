"""Callables that are not functions: what a call of one means, and the rules that adapt the
rule of the function it stands for.

* ``functools.partial(func, *args, **keywords)(*more, **named)`` is
  ``func(*args, *more, **{**keywords, **named})``; the partial's tangent is
  ``Tangent({"func": ..., "args": ..., "keywords": Tangent(...)})`` (``gibbous.tangents.model``)
  and gets the rdata of its arguments and keywords (``PartialRule``).
* ``obj(*args)`` for an instance of a Python class with ``__call__`` is
  ``type(obj).__call__(obj, *args)``; the callable's tangent is ``obj``'s
  (``InstanceCallRule``).
* ``obj.name`` and ``obj.name = v`` (``getattr``, ``setattr``) where ``name`` is a
  ``property`` of ``obj``'s class written in Python are the calls ``fget(obj)`` and
  ``fset(obj, v)`` (``PropertyRule``; SciPy's ``interp1d.fill_value``, ``PPoly.x``).
* A function memoised by ``functools.lru_cache`` / ``functools.cache`` is its
  ``__wrapped__`` function (the cache changes how fast, not what, it computes); the cache
  itself has no tangent (``WrappedCallRule``).

The entry point (``gibbous.entry``) and call sites (``gibbous.session``) share these meanings.
"""

from __future__ import annotations

import functools
import inspect
import types as pytypes
import typing as t

import attrs

from gibbous.ir.exceptions import GibbousError
from gibbous.rules.registry import Pullback, RRule
from gibbous.tangents.model import NO_TANGENT, CoDual, Tangent

_CoDual = CoDual[t.Any, t.Any]


def callable_instance(f: object) -> bool:
    """An instance of a Python class that defines ``__call__`` in Python."""
    if isinstance(f, type):
        return False
    return isinstance(getattr(type(f), "__call__", None), pytypes.FunctionType)


def bound_builtin(f: object) -> tuple[object, object] | None:
    """``x.sum`` (a method of an extension type, bound to ``x``): ``(ndarray.sum, x)``."""
    if not isinstance(f, (pytypes.BuiltinMethodType, pytypes.MethodWrapperType)):
        return None
    receiver = getattr(f, "__self__", None)
    if receiver is None or isinstance(receiver, (pytypes.ModuleType, type)):
        return None
    function = getattr(type(receiver), getattr(f, "__name__", ""), None)
    return None if function is None else (function, receiver)


def cached(f: object) -> bool:
    """A function memoised by ``functools.lru_cache`` (or ``functools.cache``)."""
    return isinstance(f, _LRU_CACHE_WRAPPER)


_LRU_CACHE_WRAPPER: type = type(functools.lru_cache(lambda: None))


def collapse(fields: dict[str, t.Any]) -> t.Any:
    """``Tangent(fields)``, or ``NoTangent()`` when every field is."""
    return NO_TANGENT if all(v is NO_TANGENT for v in fields.values()) else Tangent(fields)


def partial_tangent(dfunc: t.Any, dargs: t.Sequence[t.Any], dkeywords: dict[str, t.Any]) -> t.Any:
    """A partial's tangent (or rdata, or fdata) from its parts'."""
    args = tuple(dargs)
    return collapse(
        {
            "func": dfunc,
            "args": NO_TANGENT if all(a is NO_TANGENT for a in args) else args,
            "keywords": collapse(dkeywords),
        }
    )


def _field(tangent: t.Any, name: str) -> t.Any:
    return tangent.fields[name] if isinstance(tangent, Tangent) else NO_TANGENT


def partial_shape(
    p: functools.partial[t.Any], kwnames: tuple[str, ...]
) -> tuple[str, int, tuple[str, ...]]:
    """What a ``PartialRule`` depends on: how many arguments the partial binds, and which of
    its keywords a call with keywords ``kwnames`` leaves in place."""
    return ("partial", len(p.args), tuple(k for k in p.keywords if k not in kwnames))


@attrs.frozen(eq=False)
class PartialRule:
    """A call of a partial, through the rule of its function called with everything: the
    partial's arguments and keywords are operands, with the fdata its tangent holds for them,
    and their rdata make up the partial's.  ``rule`` must take any function (a
    ``DynamicRule``): the partial's function is read at each call."""

    rule: RRule
    n_args: int
    kept: tuple[str, ...]  # the partial's keywords the call does not override, in order

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        p = t.cast("functools.partial[t.Any]", f.primal)
        fdata = f.fdata
        bound_fdata, keyword_fdata = _field(fdata, "args"), _field(fdata, "keywords")
        bound = [
            CoDual(a, NO_TANGENT if bound_fdata is NO_TANGENT else bound_fdata[i])
            for i, a in enumerate(p.args)
        ]
        keywords = {k: CoDual(p.keywords[k], _field(keyword_fdata, k)) for k in self.kept}
        func = CoDual(p.func, _field(fdata, "func"))
        y, pullback = self.rule(func, *bound, *args, **keywords, **kwargs)
        n, m, kept = self.n_args, len(args), self.kept

        def unpartial(dy: t.Any) -> tuple[t.Any, ...]:
            r = pullback(dy)
            named = r[1 + n + m :]
            dpartial = partial_tangent(r[0], r[1 : 1 + n], dict(zip(kept, named)))
            return (dpartial, *r[1 + n : 1 + n + m], *named[len(kept) :])

        return y, unpartial

    def reset(self) -> None:
        reset = getattr(self.rule, "reset", None)
        if reset is not None:
            reset()


@attrs.frozen(eq=False)
class InstanceCallRule:
    """``obj(*args)`` through the rule of ``type(obj).__call__(obj, *args)``."""

    rule: RRule

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        method = CoDual(type(f.primal).__call__, NO_TANGENT)
        y, pullback = self.rule(method, f, *args, **kwargs)

        def uncall(dy: t.Any) -> tuple[t.Any, ...]:
            r = pullback(dy)
            return r[1:]

        return y, uncall

    def reset(self) -> None:
        reset = getattr(self.rule, "reset", None)
        if reset is not None:
            reset()


@attrs.frozen(eq=False)
class WrappedCallRule:
    """A call of a callable through the rule of the function it runs: a memoised function's
    ``__wrapped__`` (``code`` None: read from the callee), or ``code``, the Python function
    a shell runs (``gibbous.infer.implementations``: NumPy's dispatchers, twins), whose
    program reads that function's own defaults and globals, which the shell does not have."""

    rule: RRule
    code: object = None

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        code = getattr(f.primal, "__wrapped__") if self.code is None else self.code
        wrapped = CoDual(code, NO_TANGENT)
        y, pullback = self.rule(wrapped, *args, **kwargs)

        def unwrapped(dy: t.Any) -> tuple[t.Any, ...]:
            return (NO_TANGENT, *pullback(dy)[1:])

        return y, unwrapped

    def reset(self) -> None:
        reset = getattr(self.rule, "reset", None)
        if reset is not None:
            reset()


def property_function(cls: type, name: object, which: str) -> pytypes.FunctionType | None:
    """The getter (``which="fget"``) or setter (``"fset"``) of the property ``name`` of
    ``cls``, if it is one written in Python."""
    if not isinstance(name, str):
        return None
    attr = inspect.getattr_static(cls, name, None)
    found = getattr(attr, which) if isinstance(attr, property) else None
    return found if isinstance(found, pytypes.FunctionType) else None


@attrs.frozen(eq=False)
class PropertyRule:
    """``getattr(obj, name)`` through the rule of ``fget(obj)``, ``setattr(obj, name, v)``
    through that of ``fset(obj, v)``: ``function``, the getter or setter (``which``) of the
    property ``name`` of ``obj``'s class (checked at run time: a subclass may override it)."""

    rule: RRule
    function: object
    which: str

    def __call__(self, f: _CoDual, *args: _CoDual, **kwargs: _CoDual) -> tuple[_CoDual, Pullback]:
        obj, name, *value = args
        if property_function(type(obj.primal), name.primal, self.which) is not self.function:
            raise GibbousError(
                f"gibbous cannot differentiate {type(obj.primal).__qualname__}.{name.primal}: "
                "a subclass's attribute, not the property of the class it was built for"
            )
        y, pullback = self.rule(CoDual(self.function, NO_TANGENT), obj, *value)

        def uncall(dy: t.Any) -> tuple[t.Any, ...]:
            _, dobj, *dvalue = pullback(dy)
            return (NO_TANGENT, dobj, NO_TANGENT, *dvalue)

        return y, uncall

    def reset(self) -> None:
        reset = getattr(self.rule, "reset", None)
        if reset is not None:
            reset()


__all__ = [
    "PropertyRule",
    "WrappedCallRule",
    "cached",
    "InstanceCallRule",
    "PartialRule",
    "bound_builtin",
    "callable_instance",
    "collapse",
    "partial_shape",
    "partial_tangent",
    "property_function",
]
