"""A user's call as a rule sees it: any callable, Python's whole calling convention.

``build_rrule(f, *args, **kwargs)`` and ``value_and_gradient(rule, f, *args, **kwargs)`` take
``f`` as users have it: a Python function, a bound method, a ``functools.partial``, an
instance with ``__call__``, a ``staticmethod`` object, or a library function with a registered
rule.  ``unwrap`` peels the wrappers off, down to the callable the rule is for (its *target*),
prepending the arguments each wrapper adds (the receiver, the partial's arguments).  For a
derived rule, ``bind`` then gives each parameter of the target's IR its value exactly as
``inspect.Signature.bind`` does: positional-only, ``*args`` packed into a tuple, keyword-only,
``**kwargs`` packed into a dict, defaults.  Gradients travel the same way back: the tangents of
the IR's parameters are split into those of the positional and keyword arguments
(``Binding.split``), and each wrapper turns its part into the tangent of the callable
(``Layer.outer``): a bound method's ``Tangent({"__self__", "__func__"})``, a partial's
``Tangent({"func", "args", "keywords"})``, a callable instance's own tangent.
"""

from __future__ import annotations

import functools
import inspect
import types as pytypes
import typing as t

import attrs

from gibbous.ir.runtime import code_signature, given_default
from gibbous.rules.callables import (
    bound_builtin,
    cached,
    callable_instance,
    collapse,
    partial_tangent,
)
from gibbous.reverse.derived import ir_parameters
from gibbous.rules.registry import callable_name
from gibbous.tangents.model import NO_TANGENT

Grads = tuple[t.Any, list[t.Any], dict[str, t.Any]]  # (callable, positional, keywords)


# --------------------------------------------------------------------------------------------
# Wrappers


class Layer(t.Protocol):
    def outer(self, inner: Grads) -> Grads:
        """The wrapper's gradients from those of the call it makes."""
        ...


@attrs.frozen
class _Method:
    """``obj.method``: the function with ``obj`` first.  A bound builtin method's tangent has
    no ``__func__`` field (``gibbous.tangents.model``)."""

    python: bool

    def outer(self, inner: Grads) -> Grads:
        dfunc, (dself, *rest), dkw = inner
        fields = {"__self__": dself, "__func__": dfunc} if self.python else {"__self__": dself}
        return collapse(fields), rest, dkw


@attrs.frozen
class _Partial:
    """``partial(func, *args, **keywords)``: its arguments before the caller's, its keywords
    under the caller's (``given``: those the caller did not override)."""

    n_args: int
    given: tuple[str, ...]

    def outer(self, inner: Grads) -> Grads:
        dfunc, dpos, dkw = inner
        keywords = {k: dkw.pop(k) for k in self.given}
        return partial_tangent(dfunc, dpos[: self.n_args], keywords), dpos[self.n_args :], dkw


@attrs.frozen
class _Instance:
    """``obj(*args)`` for an instance of a class with ``__call__``: ``type(obj).__call__``
    with ``obj`` first; the callable's tangent is ``obj``'s."""

    def outer(self, inner: Grads) -> Grads:
        _, (dself, *rest), dkw = inner
        return dself, rest, dkw


@attrs.frozen
class _Static:
    """A ``staticmethod`` object: its function."""

    def outer(self, inner: Grads) -> Grads:
        return inner


@attrs.frozen(eq=False)
class Unwrapped:
    """The callable a rule is for, the arguments it receives, and the wrappers around it."""

    target: object
    args: tuple[object, ...]
    kwargs: dict[str, object]
    layers: tuple[Layer, ...]  # outermost first

    def outer(self, inner: Grads) -> Grads:
        for layer in reversed(self.layers):
            inner = layer.outer(inner)
        return inner


_DEPTH = 32  # wrappers of wrappers; more is a cycle (a partial of itself cannot be made)


def unwrap(f: t.Any, args: tuple[object, ...], kwargs: dict[str, object]) -> Unwrapped:
    """Peel bound methods, partials, callable instances and staticmethods off ``f``."""
    if type(f) is pytypes.FunctionType:  # the common case first
        return Unwrapped(f, args, kwargs, ())
    layers: list[Layer] = []
    for _ in range(_DEPTH):
        if isinstance(f, pytypes.MethodType):
            layers.append(_Method(python=True))
            f, args = t.cast(t.Any, f.__func__), (f.__self__, *args)
        elif isinstance(f, functools.partial):
            partial = t.cast("functools.partial[object]", f)
            given = tuple(k for k in partial.keywords if k not in kwargs)
            layers.append(_Partial(len(partial.args), given))
            f, args = partial.func, (*partial.args, *args)
            kwargs = {**partial.keywords, **kwargs}
        elif isinstance(f, staticmethod):
            layers.append(_Static())
            f = f.__func__
        elif cached(f):
            layers.append(_Static())
            f = f.__wrapped__
        elif bound_builtin(f) is not None:
            function, receiver = t.cast(tuple[object, object], bound_builtin(f))
            layers.append(_Method(python=False))
            f, args = function, (receiver, *args)
        elif callable_instance(f):
            layers.append(_Instance())
            f, args = type(f).__call__, (f, *args)
        else:
            return Unwrapped(f, args, kwargs, tuple(layers))
    raise TypeError(f"{callable_name(f)}: more than {_DEPTH} wrappers around one callable")


# --------------------------------------------------------------------------------------------
# Binding arguments to a derived rule's parameters


@attrs.frozen(eq=False)
class Binding:
    """The values of a function's IR parameters for one call, and where each came from:
    ``("pos", i)``, ``("kw", name)``, ``("varargs", (i, ...))``, ``("varkw", names)`` or
    ``("default", None)``."""

    values: tuple[object, ...]
    sources: tuple[tuple[str, t.Any], ...]
    n_args: int

    def split(self, tangents: t.Sequence[t.Any]) -> tuple[list[t.Any], dict[str, t.Any]]:
        """The tangents of the call's positional and keyword arguments, from its parameters'."""
        pos: list[t.Any] = [NO_TANGENT] * self.n_args
        kw: dict[str, t.Any] = {}
        for (kind, where), d in zip(self.sources, tangents):
            if kind == "pos":
                pos[where] = d
            elif kind == "kw":
                kw[where] = d
            elif kind == "varargs":
                for j, i in enumerate(where):
                    pos[i] = NO_TANGENT if d is NO_TANGENT else d[j]
            elif kind == "varkw":
                for name in where:
                    kw[name] = NO_TANGENT if d is NO_TANGENT else d[name]
        return pos, kw


def bind(fn: pytypes.FunctionType, args: tuple[object, ...], kwargs: dict[str, object]) -> Binding:
    """``fn(*args, **kwargs)``'s parameter values, as Python binds them (its errors too)."""
    names = ir_parameters(fn)
    if not kwargs and _plain(fn.__code__) and len(args) == len(names):
        return Binding(args, tuple(("pos", i) for i in range(len(args))), len(args))
    signature = code_signature(fn)  # its own parameters
    try:
        bound = signature.bind(*args, **kwargs)
        missing = [
            name
            for name, p in signature.parameters.items()
            if name not in bound.arguments
            and p.default is p.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        if missing:  # (3.13.0's bind lets a positional-only one go missing into **kwargs)
            raise TypeError(f"missing a required argument: {missing[0]!r}")
    except TypeError as e:
        plain = signature.replace(
            parameters=[q.replace(annotation=q.empty) for q in signature.parameters.values()],
            return_annotation=signature.empty,
        )
        raise TypeError(f"{callable_name(fn)}{plain}: {e}") from None
    passed = set(bound.arguments)
    bound.apply_defaults()
    values: list[object] = []
    sources: list[tuple[str, t.Any]] = []
    index = {name: i for i, name in enumerate(signature.parameters)}
    for code_name in names:
        p = signature.parameters[code_name]
        value: t.Any = given_default(bound.arguments[code_name])
        values.append(value)
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            start = sum(
                q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)
                for q in signature.parameters.values()
            )
            sources.append(("varargs", tuple(range(start, start + len(value)))))
        elif p.kind is inspect.Parameter.VAR_KEYWORD:
            sources.append(("varkw", tuple(value)))
        elif code_name not in passed:
            sources.append(("default", None))
        elif code_name in kwargs and p.kind is not inspect.Parameter.POSITIONAL_ONLY:
            sources.append(("kw", code_name))
        else:
            sources.append(("pos", index[code_name]))
    return Binding(tuple(values), tuple(sources), len(args))


@functools.cache
def _plain(code: pytypes.CodeType) -> bool:
    """Positional parameters only (no ``*args``, keyword-only or ``**kwargs``)."""
    flags = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
    return not code.co_flags & flags and not code.co_kwonlyargcount


# --------------------------------------------------------------------------------------------
# argnums


def positions(argnums: int | tuple[int, ...], n: int, name: str) -> tuple[int, ...]:
    """``argnums`` as indices into ``n`` positional arguments (negative ones count from the
    end, as in JAX); out of range is an error."""
    many = isinstance(argnums, tuple)
    items = argnums if isinstance(argnums, tuple) else (argnums,)
    out = []
    for k in items:
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"grad of {name}: argnums must be an int or a tuple of ints, got {k!r}")
        if not -n <= k < n:
            raise ValueError(
                f"grad of {name}: argnums {k} is out of range for {n} positional argument(s) "
                "(gradients are taken with respect to positional arguments only)"
            )
        out.append(k % n)
    return tuple(out) if many else (out[0],)


__all__ = ["Binding", "Layer", "Unwrapped", "bind", "positions", "unwrap"]
