"""Calls of Python classes, differentiated as Python runs them: ``__new__`` then ``__init__``
through their rules (``ConstructRule``), or, for a frozen dataclass or attrs class, with the
fields' tangents taken from the arguments they were initialised from (``FrozenConstructRule``).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types as pytypes
import typing as t

import attrs

from gibbous.tangents.model import accum
from gibbous.rules.registry import Pullback, RRule
from gibbous.tangents.model import (
    NO_TANGENT,
    CoDual,
    Tangent,
    is_differentiable,
    zero_fdata,
    zero_rdata,
)

_CoDual = CoDual[t.Any, t.Any]


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
