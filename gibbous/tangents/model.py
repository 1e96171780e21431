"""Tangents: what a derivative of a Python value looks like, following Mooncake.

Every primal value has one kind of tangent, split into two parts:

* **fdata**, for what is identified by address (arrays, lists, dicts, mutable objects): it is
  carried forward next to the primal in a ``CoDual`` and gradients are added into it in place;
* **rdata**, for what is identified by value (floats, complex numbers): pullbacks return it.

* floats, complex numbers, NumPy float/complex scalars: rdata of the same type, no fdata;
* ints, bools, strings, None, non-float arrays, modules, classes, functions without closures:
  no tangent at all (``NoTangent()``);
* float/complex arrays: fdata, an array of the same shape, dtype and strides; no rdata;
* tuples (NamedTuples too), frozen dataclasses and attrs classes, bound methods: fdata and
  rdata made of their items', each ``NoTangent()`` if all its parts are;
* lists, dicts, mutable objects, closures: fdata, the whole tangent, updated in place; no rdata.

The tangent itself is the rdata for value-like kinds, the fdata for address-like kinds, and for
immutable containers a container of the items' tangents: a plain tuple for any tuple, a
``Tangent`` (field name -> tangent) for other immutable objects.  Mutable containers always have
a container tangent (a list, a dict, a ``MutableTangent``), even when nothing in them is
differentiable yet: a float may be stored into them later, and the tangent is what aliases see.

**Aliasing.**  Values that share memory have fdata that share memory: one ``TangentMemo``
serves all values created together (``zero_fdatas``, ``zero_coduals``), the same object always
gets the same tangent object, and an array's fdata is carved out of one zeroed buffer per
memory owner (the end of its ``.base`` chain) at the primal's own offset and strides, so a view's
fdata is the same view of its base's fdata.  Containers enter the memo before their items, so
cycles end.

**Complex numbers.**  A tangent of ``z = x + iy`` is ``dx + i dy``: the gradient of a real ``L``
is ``dL/dx + i dL/dy`` (PyTorch's convention; JAX returns the conjugate).  Adding tangents adds
these componentwise and the pairing of a tangent with a cotangent is ``Re(conj(a) * b)``.

This module is the table of kinds and the functions that make tangents by it.  Beside it:
``gibbous.tangents.values``, the tangent values themselves and splitting and adding them
(re-exported here, so that one import serves rules); ``gibbous.tangents.classes``, the
facts about Python classes that decide a class's kind; ``gibbous.tangents.types``, the
same table on IR types, which the AD pass uses.  See docs/tangents.md.
"""

from __future__ import annotations

import builtins
import functools
import gc
import types as pytypes
import typing as t

import numpy as np

from gibbous.ir.purity import register_pure
from gibbous.tangents.classes import (
    NEVER_DIFFERENTIABLE,
    field_names,
    has_fields,
    instance_fields,
    is_frozen,
)

# The values, re-exported: rules import the whole tangent model from here.
from gibbous.tangents.values import (
    NO_TANGENT as NO_TANGENT,
    CoDual as CoDual,
    MutableTangent as MutableTangent,
    NoTangent as NoTangent,
    Tangent as Tangent,
    TangentMemo as TangentMemo,
    _array_fdata,
    _collapse,
    _collapse_fields,
    fdata_of as fdata_of,
    increment as increment,
    rdata_of as rdata_of,
    register_opaque_fdata as register_opaque_fdata,
    zeros_like as zeros_like,
)

# --------------------------------------------------------------------------------------------
# Kinds: one per row of the table.  Each says how to make, split and recombine tangents.


class _Kind:
    __slots__ = ()

    def has_tangent(self, x: t.Any) -> bool:
        return True

    def zero(self, x: t.Any, memo: TangentMemo) -> t.Any:
        raise NotImplementedError

    def randn(self, x: t.Any, rng: np.random.Generator, memo: TangentMemo) -> t.Any:
        raise NotImplementedError

    def zero_rdata(self, x: t.Any) -> t.Any:
        return NO_TANGENT

    def combine(self, x: t.Any, fdata: t.Any, rdata: t.Any) -> t.Any:
        return fdata


class _NonDifferentiable(_Kind):
    __slots__ = ()

    def has_tangent(self, x: t.Any) -> bool:
        return False

    def zero(self, x: t.Any, memo: TangentMemo) -> t.Any:
        return NO_TANGENT

    def randn(self, x: t.Any, rng: np.random.Generator, memo: TangentMemo) -> t.Any:
        return NO_TANGENT

    def combine(self, x: t.Any, fdata: t.Any, rdata: t.Any) -> t.Any:
        return NO_TANGENT


def _scalar_class(x: object) -> type[t.Any]:
    # NumPy scalars keep their dtype; subclasses of float and complex get the plain class.
    if isinstance(x, np.generic):
        return type(x)
    return complex if isinstance(x, complex) else float


class _Scalar(_Kind):
    __slots__ = ()

    def zero(self, x: t.Any, memo: TangentMemo) -> t.Any:
        return _scalar_class(x)(0)

    def randn(self, x: t.Any, rng: np.random.Generator, memo: TangentMemo) -> t.Any:
        cls = _scalar_class(x)
        if issubclass(cls, (complex, np.complexfloating)):
            return cls(complex(rng.standard_normal(), rng.standard_normal()))
        return cls(rng.standard_normal())

    def zero_rdata(self, x: t.Any) -> t.Any:
        return _scalar_class(x)(0)

    def combine(self, x: t.Any, fdata: t.Any, rdata: t.Any) -> t.Any:
        return rdata


class _FloatArray(_Kind):
    __slots__ = ()

    def zero(self, x: t.Any, memo: TangentMemo) -> t.Any:
        return _array_fdata(x, memo)

    def randn(self, x: t.Any, rng: np.random.Generator, memo: TangentMemo) -> t.Any:
        d = _array_fdata(x, memo)
        if d.dtype.kind == "c":
            d.real[...] = rng.standard_normal(d.shape)
            d.imag[...] = rng.standard_normal(d.shape)
        else:
            d[...] = rng.standard_normal(d.shape)
        return d


def _item(parts: t.Any, i: int) -> t.Any:
    return NO_TANGENT if parts is NO_TANGENT else parts[i]


def _field(parts: t.Any, name: str) -> t.Any:
    return NO_TANGENT if parts is NO_TANGENT else parts.fields[name]


class _Tuple(_Kind):
    __slots__ = ()

    def has_tangent(self, x: t.Any) -> bool:
        return any(_kind(v).has_tangent(v) for v in x)

    def zero(self, x: t.Any, memo: TangentMemo) -> t.Any:
        return _collapse(tuple(_zero(v, memo) for v in x))

    def randn(self, x: t.Any, rng: np.random.Generator, memo: TangentMemo) -> t.Any:
        return _collapse(tuple(_randn(v, rng, memo) for v in x))

    def zero_rdata(self, x: t.Any) -> t.Any:
        return _collapse(tuple(_kind(v).zero_rdata(v) for v in x))

    def combine(self, x: t.Any, fdata: t.Any, rdata: t.Any) -> t.Any:
        return _collapse(
            tuple(tangent_from(v, _item(fdata, i), _item(rdata, i)) for i, v in enumerate(x))
        )


class _Frozen(_Kind):
    """Immutable objects with named fields: frozen dataclasses and attrs classes."""

    __slots__ = ()

    def names(self, x: t.Any) -> tuple[str, ...]:
        cls: type = type(x)
        return field_names(cls)

    def has_tangent(self, x: t.Any) -> bool:
        return any(_kind(v).has_tangent(v) for v in (getattr(x, n) for n in self.names(x)))

    def zero(self, x: t.Any, memo: TangentMemo) -> t.Any:
        return _collapse_fields({n: _zero(getattr(x, n), memo) for n in self.names(x)})

    def randn(self, x: t.Any, rng: np.random.Generator, memo: TangentMemo) -> t.Any:
        return _collapse_fields({n: _randn(getattr(x, n), rng, memo) for n in self.names(x)})

    def zero_rdata(self, x: t.Any) -> t.Any:
        fields = {n: getattr(x, n) for n in self.names(x)}
        return _collapse_fields({n: _kind(v).zero_rdata(v) for n, v in fields.items()})

    def combine(self, x: t.Any, fdata: t.Any, rdata: t.Any) -> t.Any:
        return _collapse_fields(
            {
                n: tangent_from(getattr(x, n), _field(fdata, n), _field(rdata, n))
                for n in self.names(x)
            }
        )


class _BoundMethod(_Frozen):
    """``x.method``: its tangent is its receiver's (and its function's, for closures)."""

    __slots__ = ()

    def names(self, x: t.Any) -> tuple[str, ...]:
        return ("__self__", "__func__") if isinstance(x, pytypes.MethodType) else ("__self__",)


class _Partial(_Kind):
    """``functools.partial(func, *args, **keywords)``: immutable in practice, its tangent is
    ``Tangent({"func": ..., "args": ..., "keywords": Tangent({name: ...})})``, each part
    collapsing to ``NoTangent()`` as a tuple's does.  The keywords are a ``Tangent`` (not a
    dict, as a dict's tangent would be) so that their floats' rdata split off like a frozen
    object's fields."""

    __slots__ = ()

    def _parts(self, x: t.Any, each: t.Callable[[object], t.Any]) -> t.Any:
        keywords = _collapse_fields({k: each(v) for k, v in x.keywords.items()})
        return _collapse_fields({"func": each(x.func), "args": each(x.args), "keywords": keywords})

    def has_tangent(self, x: t.Any) -> bool:
        values = (x.func, *x.args, *x.keywords.values())
        return any(_kind(v).has_tangent(v) for v in values)

    def zero(self, x: t.Any, memo: TangentMemo) -> t.Any:
        return self._parts(x, lambda v: _zero(v, memo))

    def randn(self, x: t.Any, rng: np.random.Generator, memo: TangentMemo) -> t.Any:
        return self._parts(x, lambda v: _randn(v, rng, memo))

    def zero_rdata(self, x: t.Any) -> t.Any:
        return self._parts(x, lambda v: _kind(v).zero_rdata(v))

    def combine(self, x: t.Any, fdata: t.Any, rdata: t.Any) -> t.Any:
        fkw, rkw = _field(fdata, "keywords"), _field(rdata, "keywords")
        keywords = _collapse_fields(
            {k: tangent_from(v, _field(fkw, k), _field(rkw, k)) for k, v in x.keywords.items()}
        )
        return _collapse_fields(
            {
                "func": tangent_from(x.func, _field(fdata, "func"), _field(rdata, "func")),
                "args": tangent_from(x.args, _field(fdata, "args"), _field(rdata, "args")),
                "keywords": keywords,
            }
        )


def _viewed_dict(view: object) -> object:
    # ``view.mapping`` is a read-only proxy; the dict itself is the view's only referent.
    return gc.get_referents(view)[0]


class _DictView(_Kind):
    """``d.values()``, ``d.items()``: a live window on ``d``.  Its tangent is ``d``'s, as a
    bound method's is its receiver's: ``Tangent({"mapping": tangent of d})`` (the same dict
    tangent object, through the memo).  A view of the keys has none: keys have no tangents."""

    __slots__ = ()

    def zero(self, x: t.Any, memo: TangentMemo) -> t.Any:
        return Tangent({"mapping": _zero(_viewed_dict(x), memo)})

    def randn(self, x: t.Any, rng: np.random.Generator, memo: TangentMemo) -> t.Any:
        return Tangent({"mapping": _randn(_viewed_dict(x), rng, memo)})


class _List(_Kind):
    __slots__ = ()

    def zero(self, x: t.Any, memo: TangentMemo) -> t.Any:
        tangent: list[t.Any] = []
        memo.put(x, tangent)  # before the items: the list may contain itself
        tangent.extend(_zero(v, memo) for v in x)
        return tangent

    def randn(self, x: t.Any, rng: np.random.Generator, memo: TangentMemo) -> t.Any:
        tangent: list[t.Any] = []
        memo.put(x, tangent)
        tangent.extend(_randn(v, rng, memo) for v in x)
        return tangent


class _Dict(_Kind):
    __slots__ = ()

    def zero(self, x: t.Any, memo: TangentMemo) -> t.Any:
        tangent: dict[t.Any, t.Any] = {}
        memo.put(x, tangent)
        tangent.update((k, _zero(v, memo)) for k, v in x.items())
        return tangent

    def randn(self, x: t.Any, rng: np.random.Generator, memo: TangentMemo) -> t.Any:
        tangent: dict[t.Any, t.Any] = {}
        memo.put(x, tangent)
        tangent.update((k, _randn(v, rng, memo)) for k, v in x.items())
        return tangent


class _Mutable(_Kind):
    """Objects with attributes that can be re-bound: a ``MutableTangent`` of their fields."""

    __slots__ = ()

    def fields(self, x: t.Any) -> dict[str, t.Any]:
        return instance_fields(x)

    def zero(self, x: t.Any, memo: TangentMemo) -> t.Any:
        tangent = MutableTangent({})
        memo.put(x, tangent)
        tangent.fields.update((n, _zero(v, memo)) for n, v in self.fields(x).items())
        return tangent

    def randn(self, x: t.Any, rng: np.random.Generator, memo: TangentMemo) -> t.Any:
        tangent = MutableTangent({})
        memo.put(x, tangent)
        tangent.fields.update((n, _randn(v, rng, memo)) for n, v in self.fields(x).items())
        return tangent


class _Closure(_Mutable):
    """A function with closure cells or differentiable default values: one field per free
    variable (``nonlocal`` can re-bind), and ``__defaults__`` / ``__kwdefaults__`` for its
    defaults when some are differentiable (a call that uses one differentiates through it)."""

    __slots__ = ()

    def fields(self, x: t.Any) -> dict[str, t.Any]:
        fields: dict[str, t.Any] = {}
        for name, cell in zip(x.__code__.co_freevars, x.__closure__ or ()):
            try:
                fields[name] = cell.cell_contents
            except ValueError:  # an empty cell: a variable not assigned yet
                pass
        for name in ("__defaults__", "__kwdefaults__"):
            value = getattr(x, name)
            if _differentiable_defaults(value):
                fields[name] = value
        return fields


def _differentiable_defaults(values: tuple[t.Any, ...] | dict[str, t.Any] | None) -> bool:
    if not values:
        return False
    items = values.values() if isinstance(values, dict) else values
    return any(_kind(v).has_tangent(v) for v in items)


NON_DIFFERENTIABLE = _NonDifferentiable()
SCALAR = _Scalar()
FLOAT_ARRAY = _FloatArray()
TUPLE = _Tuple()
FROZEN = _Frozen()
BOUND_METHOD = _BoundMethod()
PARTIAL = _Partial()
DICT_VIEW = _DictView()
LIST = _List()
DICT = _Dict()
MUTABLE = _Mutable()
CLOSURE = _Closure()

def _classify(cls: type) -> _Kind:
    """The kind of every instance of ``cls`` (value-dependent classes are handled before)."""
    if issubclass(cls, NEVER_DIFFERENTIABLE):
        return NON_DIFFERENTIABLE
    if issubclass(cls, (float, complex, np.floating, np.complexfloating)):
        return SCALAR
    if issubclass(cls, tuple):
        return TUPLE
    if issubclass(cls, list):
        return LIST
    if issubclass(cls, dict):
        return DICT
    if is_frozen(cls):
        return FROZEN
    if has_fields(cls):
        return MUTABLE
    return NON_DIFFERENTIABLE  # extension types without Python-visible fields


def _array_kind(x: np.ndarray[t.Any, t.Any]) -> _Kind:
    if x.dtype.kind in "fc":
        return FLOAT_ARRAY
    return OBJECT_ARRAY if x.dtype.kind == "O" else NON_DIFFERENTIABLE


class _ObjectArray(_NonDifferentiable):
    """An array of dtype object has no tangent, so numbers with one are refused in it rather
    than silently losing their derivative (``np.array([1.0, 2.0], dtype=object)``)."""

    __slots__ = ()

    def zero(self, x: t.Any, memo: TangentMemo) -> t.Any:
        refuse_object_array(x)
        return NO_TANGENT


def refuse_object_array(x: np.ndarray[t.Any, t.Any]) -> None:
    """Raise if the object array ``x`` holds a number (or anything) with a derivative."""
    for item in x.flat:
        if is_differentiable(item):
            raise object_array_refusal(item)


def object_array_refusal(item: object) -> TypeError:
    shown = repr(item) if len(repr(item)) <= 40 else type(item).__name__
    return TypeError(
        f"an array of dtype object would hold {shown}, which has a derivative, but gibbous "
        "gives arrays of dtype object none (each item is a Python object of its own): use "
        "a float array (.astype(float)), or keep the numbers in a list"
    )


OBJECT_ARRAY = _ObjectArray()


def _function_kind(x: pytypes.FunctionType) -> _Kind:
    if x.__closure__ or _differentiable_defaults(x.__defaults__):
        return CLOSURE
    return CLOSURE if _differentiable_defaults(x.__kwdefaults__) else NON_DIFFERENTIABLE


def _builtin_kind(x: pytypes.BuiltinFunctionType) -> _Kind:
    # ``len`` has its module as __self__, ``[].append`` its list.
    owner = getattr(x, "__self__", None)
    if owner is None or isinstance(owner, (pytypes.ModuleType, type)):
        return NON_DIFFERENTIABLE
    return BOUND_METHOD


def _method_wrapper_kind(x: object) -> _Kind:
    return BOUND_METHOD


# Classes whose kind depends on the value; every other class is classified once and cached.
_BY_VALUE: dict[type, t.Callable[[t.Any], _Kind]] = {
    np.ndarray: _array_kind,
    pytypes.FunctionType: _function_kind,
    pytypes.BuiltinFunctionType: _builtin_kind,
    pytypes.MethodType: _method_wrapper_kind,
    pytypes.MethodWrapperType: _method_wrapper_kind,
}
_BY_CLASS: dict[type, _Kind] = {
    builtins.float: SCALAR,
    builtins.complex: SCALAR,
    np.float64: SCALAR,
    np.float32: SCALAR,
    builtins.int: NON_DIFFERENTIABLE,
    builtins.bool: NON_DIFFERENTIABLE,
    builtins.str: NON_DIFFERENTIABLE,
    type(None): NON_DIFFERENTIABLE,
    builtins.tuple: TUPLE,
    builtins.list: LIST,
    builtins.dict: DICT,
    type({}.values()): DICT_VIEW,
    type({}.items()): DICT_VIEW,
    type({}.keys()): NON_DIFFERENTIABLE,
    functools.partial: PARTIAL,
}


def _kind(x: object) -> _Kind:
    cls = type(x)
    kind = _BY_CLASS.get(cls)
    if kind is not None:
        return kind
    by_value = _BY_VALUE.get(cls)
    if by_value is not None:
        return by_value(x)
    if isinstance(x, np.ndarray):  # subclasses (np.memmap, ...): plain ndarray fdata
        return _array_kind(x)
    kind = _BY_CLASS[cls] = _classify(cls)
    return kind


def _zero(x: object, memo: TangentMemo) -> t.Any:
    kind = _kind(x)
    if kind is NON_DIFFERENTIABLE or kind is SCALAR:
        return kind.zero(x, memo)
    hit = memo.get(x)
    if hit is not None:
        return hit
    tangent = kind.zero(x, memo)
    memo.put(x, tangent)
    return tangent


def _randn(x: object, rng: np.random.Generator, memo: TangentMemo) -> t.Any:
    kind = _kind(x)
    if kind is NON_DIFFERENTIABLE or kind is SCALAR:
        return kind.randn(x, rng, memo)
    hit = memo.get(x)
    if hit is not None:
        return hit
    tangent = kind.randn(x, rng, memo)
    memo.put(x, tangent)
    return tangent


# --------------------------------------------------------------------------------------------
# Making tangents


def is_differentiable(x: object) -> bool:
    """Whether ``x`` has a tangent other than ``NoTangent()``.

    Mutable containers and objects always do: a differentiable value may be stored in them later.
    """
    return _kind(x).has_tangent(x)


def zero_tangent(x: object, *, memo: TangentMemo | None = None) -> t.Any:
    """The zero tangent of ``x``; values sharing ``memo`` share tangents where they alias."""
    if memo is None and type(x) is np.ndarray and x.base is None and x.dtype.kind in "fc":
        # The common case of a fresh result: nothing to alias, and zeros_like keeps the layout
        # of an array that owns its memory.
        return zeros_like(x) if x.flags.c_contiguous else np.zeros_like(x)
    return _zero(x, TangentMemo() if memo is None else memo)


def randn_tangent(
    x: object, rng: np.random.Generator, *, memo: TangentMemo | None = None
) -> t.Any:
    """A tangent of ``x`` with standard normal entries (real and imaginary parts each)."""
    return _randn(x, rng, TangentMemo() if memo is None else memo)


def zero_fdata(x: object, *, memo: TangentMemo | None = None) -> t.Any:
    return fdata_of(zero_tangent(x, memo=memo))


def zero_fdatas(*xs: object) -> tuple[t.Any, ...]:
    """Zero fdata of several values at once, sharing memory where the values do."""
    memo = TangentMemo()
    return tuple(fdata_of(_zero(x, memo)) for x in xs)


def zero_coduals(*xs: object) -> tuple[CoDual[t.Any, t.Any], ...]:
    """``CoDual(x, fdata)`` for several values at once, sharing fdata where the values alias."""
    return tuple(CoDual(x, f) for x, f in zip(xs, zero_fdatas(*xs)))


def zero_rdata(x: object) -> t.Any:
    """The zero rdata of ``x`` (allocates no arrays)."""
    zero = _FLOAT_ZEROS.get(type(x))  # the common case, without finding the kind
    return zero if zero is not None else _kind(x).zero_rdata(x)


# Exact classes: a subclass may be of another kind.  The zeros are immutable, so one serves all.
_FLOAT_ZEROS: dict[type, object] = {float: 0.0, np.float64: np.float64(0.0)}


def tangent_from(x: object, fdata: t.Any, rdata: t.Any) -> t.Any:
    """The tangent of ``x`` made of its two parts (the inverse of ``fdata_of``/``rdata_of``)."""
    return _kind(x).combine(x, fdata, rdata)


def frozen_fields(cls: type) -> tuple[str, ...] | None:
    """The fields of a frozen class's tangent (``Tangent(fields)``), or None if instances of
    ``cls`` are not frozen objects in the tangent model's sense."""
    return field_names(cls) if _classify(cls) is FROZEN else None


def default_fields(fn: pytypes.FunctionType) -> tuple[str, ...]:
    """Which of ``__defaults__`` and ``__kwdefaults__`` a function's tangent has a field for
    (those holding something differentiable)."""
    return tuple(
        name
        for name in ("__defaults__", "__kwdefaults__")
        if _differentiable_defaults(getattr(fn, name))
    )


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
