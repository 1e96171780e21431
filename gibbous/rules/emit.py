"""Tangents written into a forward program: the types and helpers forward rules share.

A forward rule (``gibbous.rules.frules``) gives a call's tangent either as a *tangent
function*, called after the primal call, or as an ``Emit``: the tangent written with the IR
builder as plain calls, which the backend compiles as it compiles the primal's code and which
reverse mode can differentiate again.  Here: ``Emit``; ``like``, which shapes a tangent as its
result; ``checked``, the run-time test of operands whose type was ``Any``; and ``Writer``,
which writes a formula of ``gibbous.rules.formulas`` with the builder, folding what constants
decide (``fit`` and ``zero`` shape what it writes); and how a maker finds a call's parameters
among its operands (``operand_positions``) and a tangent function its operands' tangents
(``split_tangents``), keyword operands included.
"""

from __future__ import annotations

import collections.abc
import contextlib
import functools
import inspect
import itertools
import math
import operator
import sys
import types
import typing as t

import attrs
import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Function, Value
from gibbous.ir.exceptions import GibbousError
from gibbous.infer.implementations import twin_helper
from gibbous.rules import render
from gibbous.rules import formulas
from gibbous.rules.formulas import Expr
from gibbous.tangents.classes import (
    NEVER_DIFFERENTIABLE,
    has_fields,
    instance_fields,
    is_frozen,
)

Tangent = t.Callable[..., t.Any]
Values = t.Sequence[Value]
Tangents = t.Sequence["Value | None"]  # (None: that operand has no tangent)
Keywords = t.Mapping[str, Value]


@attrs.frozen
class Emit:
    """A tangent written into the forward program: ``fn(b, z, operands, tangents, kwargs)``
    emits the tangent's calls with the builder ``b`` and returns its value (``tangents[i]``
    None: operand ``i`` has none).  Where the operands' types are known, forward rules are
    written out so, as plain calls the backend compiles as it compiles the primal's (operators
    become Python's), and the reverse mode can differentiate them again; a tangent function
    (``Tangent``) is the fallback, called."""

    fn: t.Callable[[Builder, Value, Values, Tangents, Keywords], Value]


# --------------------------------------------------------------------------------------------
# The result's tangent, shaped as the result


@twin_helper  # (tangent functions call it: derived again in a Hessian-vector product)
def like(z: t.Any, dz: t.Any) -> t.Any:
    """``dz`` as the tangent of ``z``: zeros for None, broadcast to ``z``'s shape (an operand's
    tangent may have fewer dimensions than the result), the result's scalar type."""
    if isinstance(z, (tuple, list)) and dz is not None:
        # (first: of a tuple, type inference folds this test, never ``type(z)``, which may be
        # a NamedTuple's; derived again in a Hessian-vector product, the rest is not built)
        return dz
    kind = type(z)
    if kind is np.ndarray:
        if dz is None or z.dtype == np.bool_:  # (a mask has no derivative, whatever it got)
            return np.zeros(z.shape, np.result_type(z.dtype, np.float64))
        if type(dz) is not np.ndarray or dz.shape != z.shape:
            # (``np.full``, not ``np.array(np.broadcast_to(dz, ...))``: the same values, and
            # reverse mode differentiates it, of a number too, in a Hessian-vector product)
            return np.full(z.shape, dz, dtype=np.result_type(dz, np.float64))
        return dz
    if kind is bool:
        return 0.0
    if kind is np.bool_:  # (a NumPy scalar's zero: ``z[()]`` reads it as it reads ``z``)
        return np.float64(0.0)
    if kind is float or kind is int:
        return 0.0 if dz is None else float(dz)
    if kind is complex:
        return 0j if dz is None else complex(dz)
    if kind is tuple or kind is list:  # (zeros: 0.0 for an int; None for a string, None)
        return kind(item_zeros(z))
    if kind is dict:  # (the values' tangents by key: zeros, 0.0 for an int, None for a string)
        return dict(zip(z, item_zeros(z.values()))) if dz is None else dz
    if kind is types.CellType:  # (a closure's cell: a box of its own, written as it is)
        return TangentCell() if dz is None else dz
    if dz is None:  # (a value of a type inference could not tell: none if not a number)
        if isinstance(z, np.generic):
            return z.dtype.type(0)
        return ObjectTangent() if user_class(type(z)) else None
    if isinstance(z, np.generic) and not isinstance(dz, np.ndarray):
        # (an integer has no derivative, whatever it got: zero, a constant reverse mode reads)
        return np.float64(0.0) if z.dtype.kind not in "fc" else z.dtype.type(dz)
    return dz


runtime.register_object(like, "forward.like")  # a path for the IR's text


def filled(z: t.Any, dz: t.Any) -> t.Any:
    """``dz``, or zeros like ``z`` where it is None: the tangent of a program's result found at
    run time, which is None where that result has none (a constant the callee returns),
    given to a caller that unpacks it, or steps it: an iterator's is an endless one of Nones,
    which the caller steps beside it (``zip`` of items without tangents).  (Its reverse rule
    is ``dz``'s identity.)"""
    if dz is not None:
        return dz
    return itertools.repeat(None) if isinstance(z, collections.abc.Iterator) else like(z, None)


runtime.register_object(filled, "forward.filled")


_CARRIERS = (float, np.floating, np.ndarray, tuple, list, dict, types.CellType)


class ObjectTangent:
    """The tangent of an instance of a Python class: its attributes' tangents, by name (an
    attribute without one: zero, or none for what is no number)."""

    __slots__ = ("fields",)

    def __init__(self, fields: dict[str, t.Any] | None = None) -> None:
        self.fields = {} if fields is None else fields

    def __repr__(self) -> str:
        return f"ObjectTangent({self.fields!r})"


def user_class(cls: type) -> bool:
    """Whether instances of ``cls`` get an ``ObjectTangent``: a class of the user's own code
    (not the standard library's, an installed package's or gibbous's: their objects, a context
    manager, a distribution, keep their registered rules) whose instances hold attributes
    that can be re-bound (``gibbous.library.python.objects``)."""
    return (
        isinstance(cls, type)
        and (_users_module(cls.__module__) or cls in _FOLLOWED_CLASSES)
        and not issubclass(cls, NEVER_DIFFERENTIABLE)
        and not issubclass(cls, _NOT_OBJECTS)
        and has_fields(cls)
        and not is_frozen(cls)
    )


@functools.cache
def computed_attribute(cls: type, name: str) -> str | None:
    """Why attribute ``name`` of ``cls``'s instances is not a plain value an ``ObjectTangent``
    can follow (its value computed or stored by code of the class's: a property or another
    data descriptor, a ``__getattribute__`` or ``__setattr__`` of its own), or None."""
    if getattr(cls, "__getattribute__") is not object.__getattribute__:
        return "a class with a __getattribute__ of its own"
    if getattr(cls, "__setattr__") is not object.__setattr__:
        return "a class with a __setattr__ of its own"
    found = inspect.getattr_static(cls, name, None)
    kind = type(found)
    slot = isinstance(found, types.MemberDescriptorType)  # (a slot: a plain value)
    if not slot and (hasattr(kind, "__set__") or hasattr(kind, "__delete__")):
        return f"a property (or another descriptor) {name!r}"
    return None


def refuse_computed(obj: object, name: str, reading: bool = False) -> None:
    """Refuses attribute ``name`` of ``obj`` if code computes or stores it: its tangent would
    be lost (a property's value from other attributes; ``__getattr__``'s, ``reading``)."""
    cls: type = type(obj)
    why = computed_attribute(cls, name)
    if why is None and reading and hasattr(cls, "__getattr__") and name not in instance_fields(obj):
        if inspect.getattr_static(cls, name, _ABSENT) is _ABSENT:
            why = "an attribute __getattr__ computes"
    if why is not None:
        raise ForwardModeError(
            f"forward mode: {cls.__qualname__}.{name}: {why}, whose tangent forward mode does "
            "not follow yet; read the attributes it is computed from instead"
        )


_ABSENT = object()
#: classes of the standard library whose instances forward mode follows as it follows the
#: user's (their methods' programs derived from their source): ``@contextmanager``'s
_FOLLOWED_CLASSES = frozenset([contextlib._GeneratorContextManager])


@functools.cache
def _users_module(name: str) -> bool:
    top = name.partition(".")[0]
    if top in sys.stdlib_module_names or top in ("builtins", "gibbous"):
        return False
    file = getattr(sys.modules.get(name), "__file__", None) or ""
    return not any(part in file for part in ("site-packages", "dist-packages"))


_NOT_OBJECTS = (tuple, list, dict, np.ndarray, np.generic, types.FunctionType, types.CellType)


class TangentCell:
    """The tangent of a closure's cell: the tangent of what the cell holds (None: zero, or
    none for what is no number).  Every function made over the cell and the function that
    made it hold this one box, so a write through either (``nonlocal``) is seen by all, as
    the cell's own contents are (``gibbous.library.python.closures``)."""

    __slots__ = ("contents",)

    def __init__(self, contents: t.Any = None) -> None:
        self.contents = contents

    def __repr__(self) -> str:
        return f"TangentCell({self.contents!r})"


#: arrays at least this large are worth computing into a dead temporary (``reuse``): below,
#: the check costs about what the allocation does
REUSE_SIZE = 4096


def reuse(ufunc: np.ufunc, a: t.Any, b: t.Any) -> t.Any:
    """``ufunc(a, b)``, into ``a`` where ``a`` is a large float64 array no one reads after this
    call (the transform knows: a temporary with this one use) and the result fits it.  NumPy
    does the same for the temporaries of one expression; a program's values are named, so it
    cannot.  The values are the same, bit for bit: the same loop, the output elsewhere."""
    return ufunc(a, b, out=a) if _fits(a, b) else ufunc(a, b)


def reuse_right(ufunc: np.ufunc, a: t.Any, b: t.Any) -> t.Any:
    """``ufunc(a, b)``, into ``b`` (``reuse`` with the temporary on the right)."""
    return ufunc(a, b, out=b) if _fits(b, a) else ufunc(a, b)


def _fits(temp: t.Any, other: t.Any) -> bool:
    if type(temp) is not np.ndarray or temp.size < REUSE_SIZE or temp.dtype != np.float64:
        return False
    kind = type(other)
    return kind is float or kind is int or (
        kind is np.ndarray and other.shape == temp.shape and other.dtype.kind in "fiub"
    )


runtime.register_object(reuse, "forward.reuse")
runtime.register_object(reuse_right, "forward.reuse_right")


def real_type(ty: T.Type) -> bool:
    """Whether values of ``ty`` have real tangents a formula can take (or none at all); for
    ``Any``, the tangent function checks at run time (``checked``)."""
    if isinstance(ty, T.Any):
        return True
    if isinstance(ty, T.Const):
        if isinstance(ty.value, tuple):  # (``solve_banded``'s ``(l, u)``)
            return all(real_type(T.Const(v)) for v in ty.value)
        return isinstance(ty.value, (bool, int, float, np.integer, np.floating))
    if isinstance(ty, T.List):  # (of integers, which have no tangents: ``[l, u]``; a list of
        # numbers with tangents is no operand of a numeric formula, nor one of unknown items)
        item = ty.item
        return isinstance(item, (T.Int, T.Bool)) or isinstance(item, T.Const) and isinstance(
            item.value, (bool, int, np.integer)
        )
    if isinstance(ty, T.Array):  # (a dtype the build could not tell, eig's: checked too)
        return ty.dtype is None or np.dtype(ty.dtype).kind in "biuf"
    return isinstance(ty, (T.Float, T.Int, T.Bool))


def complex_type(ty: T.Type) -> bool:
    """Whether values of ``ty`` are complex numbers or arrays: their tangents are complex, and
    a formula takes them in its complex form (``gibbous.rules.formulas.complex_tangent``)."""
    if isinstance(ty, T.Complex):
        return True
    if isinstance(ty, T.Const):
        return isinstance(ty.value, (complex, np.complexfloating))
    return isinstance(ty, T.Array) and ty.dtype is not None and np.dtype(ty.dtype).kind == "c"


def number_type(ty: T.Type) -> bool:
    """A real or complex number or array: what a linear function's tangent is taken of."""
    return real_type(ty) or complex_type(ty)


def unknown(ty: T.Type) -> bool:
    """A type whose values a tangent function checks at run time: ``Any``, an array of a
    dtype the build could not tell, or a tuple or list of items it could not (``(a,) * n``)."""
    if isinstance(ty, T.Object) and ty.cls in (tuple, list):
        return True
    return isinstance(ty, T.Any) or isinstance(ty, T.Array) and ty.dtype is None


@twin_helper
def _runtime_real(v: object) -> bool:
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "biuf"
    return isinstance(v, (float, int, np.floating, np.integer)) and not isinstance(v, np.bool_)


class ForwardModeError(GibbousError, TypeError):
    """A construct or a call that forward mode cannot differentiate (yet).  A gibbous error:
    raised inside a program, it passes through the user's ``except`` clauses."""


def tangent_refused(name: str, where: str, what: str) -> ForwardModeError:
    """What a Hessian-vector product's reverse pass cannot differentiate in the tangent
    function of ``name``'s forward rule (``what``: the inner call or construct), reported at
    the user's call of ``name`` (``where``)."""
    return ForwardModeError(
        f"hvp: {name}'s tangent (a function of its forward rule, which a Hessian-vector "
        f"product differentiates again) needs what reverse mode cannot differentiate yet, "
        f"{where}: {what}"
    )


@twin_helper
def _runtime_reals(v: object) -> bool:
    """A real number or array, or a list or tuple of them (at any depth); a NumPy boolean
    too (which a linear function, ``check_bound``, passes through: it has no tangent)."""
    if isinstance(v, (list, tuple)):
        return all(map(_runtime_reals, v))
    return _runtime_real(v) or isinstance(v, np.bool_)


@twin_helper  # (``checked``'s ``run`` is derived again in a Hessian-vector product)
def truth_value(v: object) -> bool:
    """A bool, NumPy's or Python's, or an array of them."""
    return isinstance(v, (bool, np.bool_)) or isinstance(v, np.ndarray) and v.dtype == np.bool_


def without_derivative(v: object) -> bool:
    """An operand found at run time to have no derivative whatever tangent the build gave it:
    a bool (``1 - cond``), a module (SciPy's array namespace, ``xp``), a string, None."""
    return truth_value(v) or v is None or isinstance(v, (types.ModuleType, str))


def _runtime_number(v: object) -> bool:
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "biufc"
    return isinstance(v, (float, int, complex, np.number)) and not isinstance(v, np.bool_)


def _runtime_numbers(v: object) -> bool:
    if isinstance(v, (list, tuple)):
        return all(map(_runtime_numbers, v))
    return _runtime_number(v) or isinstance(v, np.bool_)


def number_operands(sequences: bool, *values: object) -> None:
    """``real_operands`` for a linear or bilinear function's tangent written out (``f(dx)``,
    ``f(dx, y) + f(x, dy)``), which holds for complex values too: raises unless every value is
    a real or complex number or array (with ``sequences``, or a list or tuple of them)."""
    number = _runtime_numbers if sequences else _runtime_number
    for v in values:
        if not number(v) and not truth_value(v):
            raise ForwardModeError(
                f"forward mode: an operand is {type(v).__name__}, where a number or array was "
                "expected (containers of other values are not taken yet)"
            )


def real_operands(sequences: bool, *values: object) -> None:
    """Raises unless every value is a real number or array (with ``sequences``, or a list or
    tuple of them): the check a tangent written out for operands whose type was ``Any`` makes
    before it is computed, as ``checked`` makes it before a tangent function's."""
    real = _runtime_reals if sequences else _runtime_real
    for v in values:
        if not real(v) and not truth_value(v):  # (a bool's tangent is zeros: ``like``)
            raise ForwardModeError(
                f"forward mode: an operand is {type(v).__name__}, where a real number or array "
                "was expected (complex values and containers are not taken yet)"
            )


runtime.register_object(real_operands, "forward.real_operands")
runtime.register_object(number_operands, "forward.number_operands")


def no_float_items(items: t.Iterable[t.Any], name: str) -> None:
    """Raises if a set made of values with tangents holds a float or a complex number: its
    items carry no tangent (they are hashed), so the derivative through one would be lost."""
    for v in items:
        if isinstance(v, (float, complex, np.inexact)):
            raise ForwardModeError(
                f"forward mode: {name} of values with tangents holds a {type(v).__name__}, "
                "whose derivative a set cannot carry (make a list of them)"
            )


runtime.register_object(no_float_items, "forward.no_float_items")


def operand_tangent(a: object, da: t.Any) -> t.Any:
    """``da``, or zeros where ``a`` is a bool: the tangent a written-out formula takes for an
    operand whose type was ``Any``.  ``real_operands`` lets a bool through (``1 - cond`` in
    SciPy), and a bool has no derivative whatever tangent the build gave it, as ``checked``
    drops it in forward mode.  (Its reverse rule is ``da``'s identity, or nothing.)"""
    return like(a, None) if truth_value(a) else da


runtime.register_object(operand_tangent, "forward.operand_tangent")


def checked(
    tangent: Tangent, types: tuple[T.Type, ...], sequences: bool = False, linear: bool = False
) -> Tangent:
    """``tangent``, checking first that the operands whose type was ``Any`` are real numbers
    or arrays (a formula's tangent of a complex number would not be its derivative); with
    ``sequences``, lists and tuples of them too (a linear function's: ``sum(xs)``); with
    ``linear`` (a linear or bilinear function's tangent, which holds for complex values too)
    complex ones too."""
    where = [i for i, ty in enumerate(types) if unknown(ty)]
    if not where:
        return tangent
    if linear:
        real = _runtime_numbers if sequences else _runtime_number
    else:
        real = _runtime_reals if sequences else _runtime_real
    twin_helper(tangent)  # (``run`` calls it: derived again in a Hessian-vector product)

    n = len(types)

    def run(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        for i in where:
            if without_derivative(a[i]) and len(a) == 2 * n:
                # (a bool found at run time, ``1 - cond`` in SciPy: no derivative, whatever
                # tangent the build gave a value it could not tell)
                a = (*a[: n + i], None, *a[n + i + 1 :])
            elif not real(a[i]):
                raise ForwardModeError(
                    f"forward mode: operand {i} is {type(a[i]).__name__}, where a real number or "
                    "array was expected (complex values and containers are not taken yet)"
                )
        return tangent(z, *a, **kwargs)

    return run


# --------------------------------------------------------------------------------------------
# Tangents written out: a formula, or a linear function of the tangents, as IR calls


class Inexpressible(Exception):
    """A formula with a function that has no IR form here (the tangent function is called)."""


_COMPARISONS = {"==", ">", "<", "&"}
_IR_FUNCTIONS: dict[str, t.Callable[..., t.Any]] = {
    **{n: getattr(np, n) for n in "cos sin cosh sinh sqrt exp exp2 log log1p trunc rint".split()},
    "copysign": np.copysign, "ldexp": np.ldexp, "sinc": np.sinc, "magnitude": np.abs,
    "unit": np.sign,  # (of a real number)
}  # fmt: skip
#: For float operands, the functions that are cheaper in ``math`` and defined everywhere (a
#: tangent may differ from NumPy's in the last bit; the primal is the primal's own call).
_FLOAT_FUNCTIONS: dict[t.Callable[..., t.Any], t.Callable[..., t.Any]] = {
    np.sin: math.sin, np.cos: math.cos,
}  # fmt: skip
Operand = t.Union[Value, float, int, bool, complex]
#: functions whose result is real whatever their operands: the type of a complex one's
_REAL_RESULTS = frozenset([np.abs, np.real, np.imag])


def scalar_of(v: Value) -> Operand:
    """A constant operand as its number (so that ``where(y == 0, ...)`` of ``x ** 2`` folds)."""
    if isinstance(v, Constant) and isinstance(v.value, (bool, int, float, complex)):
        return v.value
    return v


def _type_of(v: Operand) -> T.Type:
    return v.type if isinstance(v, Value) else T.typeof(v)


def elementwise_type(types: t.Sequence[T.Type], boolean: bool = False) -> T.Type:
    """The type of an elementwise result: an array of the most dimensions if any operand is
    an array (unknown if some array's are), else a float (or a bool)."""
    arrays = [ty for ty in types if isinstance(ty, T.Array)]
    complex_ = not boolean and any(map(complex_type, types))
    if not arrays:
        return T.BOOL if boolean else T.COMPLEX if complex_ else T.FLOAT
    dims = [ty.ndim for ty in arrays]
    ndim = None if None in dims else max(t.cast(list[int], dims))
    return T.Array("bool" if boolean else "complex128" if complex_ else "float64", ndim)


def real_part_type(ty: T.Type) -> T.Type:
    """The type of a complex value's real part (``np.abs``'s, ``np.real``'s)."""
    if isinstance(ty, T.Array) and complex_type(ty):
        return T.Array("float64", ty.ndim)
    return T.FLOAT if complex_type(ty) else ty


class Writer:
    """Writes formulas with a builder, folding what the constants decide; ``functions``: what
    the names of functions a formula calls mean besides NumPy's (SciPy's, each with rules of
    its own, so that reverse mode can differentiate the written form again)."""

    def __init__(
        self, b: Builder, arrays: bool, functions: t.Mapping[str, t.Callable[..., t.Any]] = {}
    ) -> None:
        self.b, self.arrays, self.functions = b, arrays, functions

    def call(self, fn: t.Callable[..., t.Any], *args: Operand, boolean: bool = False) -> Operand:
        if not any(isinstance(a, Value) for a in args):
            return t.cast(Operand, fn(*args))  # (numbers: folded)
        if fn is operator.pow and isinstance(args[1], (int, float)) and args[1] == 1:
            return args[0]  # (``x ** (2 - 1)`` of ``x ** 2``'s formula)
        types = [_type_of(a) for a in args]
        if not self.arrays and not any(map(complex_type, types)):
            fn = _FLOAT_FUNCTIONS.get(fn, fn)  # (a float: ``math``'s where they never raise)
        # (an operand of a type the build could not tell: a result of one, written out for a
        # Hessian-vector product after ``real_operands`` checked it)
        ty = T.ANY if any(map(unknown, types)) else elementwise_type(types, boolean)
        if fn in _REAL_RESULTS:
            ty = real_part_type(ty)
        return self.b.call(fn, *args, type=ty)

    def complex_(self, v: Operand) -> bool:
        return complex_type(_type_of(v))

    def formula(self, e: Expr, env: t.Mapping[str, Operand]) -> Operand:
        op = e.op
        if op == "var":
            return env[e.name]
        if op == "const":
            return e.value
        if op == "where":
            cond = self.formula(e.args[0], env)
            if not isinstance(cond, Value):
                return self.formula(e.args[1] if cond else e.args[2], env)
            if not self.arrays:
                raise Inexpressible("where")  # (np.where of scalars is a 0-d array)
            a, b = (self.formula(x, env) for x in e.args[1:])
            return self.call(np.where, cond, a, b)
        if op == "call" and e.name == "lift_base":  # (the base itself, for reals)
            base, z = (self.formula(a, env) for a in e.args)
            if self.complex_(z) and not self.complex_(base):  # (a negative one's power)
                return self.call(operator.add, base, 0j)
            return base
        if op == "call" and e.name == "unit" and self.complex_(self.formula(e.args[0], env)):
            return self.formula(formulas.ratio(e.args[0], formulas.magnitude(e.args[0])), env)  # x / |x|
        args = [self.formula(a, env) for a in e.args]
        if op == "conj":  # (of a real operand: itself)
            return self.call(np.conj, args[0]) if self.complex_(args[0]) else args[0]
        if op == "call" and e.name == "real_log":  # log |x| (log x of a complex x)
            if self.complex_(args[0]):
                return self.call(np.log, args[0])
            return self.call(np.log, self.call(np.abs, args[0]))
        if op == "call":
            fn = _IR_FUNCTIONS.get(e.name) or self.functions.get(e.name)
            if fn is None:
                raise Inexpressible(e.name)
            return self.call(fn, *args)
        return self.call(render.PY_OPERATORS[op], *args, boolean=op in _COMPARISONS)

    def value(self, v: Operand) -> Value:
        if isinstance(v, Value):
            return v
        return Constant(complex(v) if isinstance(v, complex) else float(v))


def fit(b: Builder, d: Value, z: Value) -> Value:
    """``d`` as ``z``'s tangent: broadcast to ``z``'s shape where the types cannot tell that it
    has it (a float operand's term of an array result)."""
    dt, zt = d.type, z.type
    if isinstance(zt, (T.Float, T.Complex)) and isinstance(dt, (T.Float, T.Complex, T.Const)):
        return d
    if isinstance(zt, T.Array) and isinstance(dt, T.Array) and zt.ndim is not None:
        if dt.ndim == zt.ndim:
            return d
    zeros = b.call(np.zeros_like, z, type=zt)
    return b.call(operator.add, d, zeros, type=zt)


def zero(b: Builder, z: Value) -> Value:
    """The zero tangent of ``z``."""
    if isinstance(z.type, T.Float) or (
        isinstance(z.type, T.Const) and isinstance(z.type.value, (float, int))
    ):
        return Constant(0.0)
    if isinstance(z.type, T.Complex):
        return Constant(0j)
    if isinstance(z.type, T.Array):
        return b.call(np.zeros_like, z, type=z.type)
    return b.call(like, z, None, type=z.type)


def item_tangent(b: Builder, a: Value, d: Value | None) -> Value:
    """An item's tangent in a container's: its own, zeros (0.0 for an int), or None (a
    string, None)."""
    if d is not None:
        return d
    if isinstance(a.type, T.List) and isinstance(a.type.item, _NO_NUMBERS):
        # (none: zeros of a list taken here would miss its later appends)
        return Constant(None)
    if isinstance(a.type, (T.Float, T.Complex, T.Array, T.Tuple, T.List, T.Any)):
        return zero(b, a)
    if isinstance(a.type, T.Object) and a.type.cls is tuple:  # (of unknown items: at run time)
        return zero(b, a)
    if isinstance(a.type, (T.Int, T.Bool)) or (
        isinstance(a.type, T.Const) and isinstance(a.type.value, (int, float, np.number))
    ):
        return Constant(0.0)  # (a constant float's tangent too: ``xs.append(1.0)``)
    return Constant(None)


_NO_NUMBERS = (T.Str, T.Int, T.Bool, T.NoneType)


def item_zeros(items: t.Iterable[t.Any]) -> list[t.Any]:
    """The tangents of items that have none: zeros (0.0 for an int: ``sum`` and ``np.stack``
    of the tangents must take them), None for what is no number (a string, None)."""
    return [
        like(i, None) if isinstance(i, _CARRIERS) else 0.0 if isinstance(i, _INTEGERS) else None
        for i in items
    ]


_INTEGERS = (int, np.integer)


runtime.register_object(item_zeros, "forward.item_zeros")


def static_types(types: t.Sequence[T.Type]) -> bool:
    return not any(map(unknown, types))


# --------------------------------------------------------------------------------------------
# The operands of tangent functions and makers


def operand_positions(
    names: t.Sequence[str], n: int, kwnames: tuple[str, ...]
) -> dict[str, int] | None:
    """Where each parameter of ``f(x, *names)`` passed to a call is among its operands (``x``
    is operand 0; then the ``n`` positional ones, then the keyword ones); None for a call
    with more positional operands than ``names``, or a keyword not among them."""
    if n - 1 > len(names) or not set(kwnames) <= set(names):
        return None
    where = {name: i + 1 for i, name in enumerate(names[: n - 1])}
    if where.keys() & set(kwnames):
        return None
    return where | {name: n + j for j, name in enumerate(kwnames)}


def is_none(ty: T.Type) -> bool:
    """``None`` passed for a parameter: as if it were not passed (``np.std(x, 0, None)``)."""
    return isinstance(ty, T.NoneType) or isinstance(ty, T.Const) and ty.value is None


@twin_helper
def refuse_complex(what: str, *values: t.Any) -> None:
    """Refuses complex values at run time (where the types did not tell): ``what`` is the
    callable's name."""
    if any(v is not None and np.iscomplexobj(v) for v in values):
        raise ForwardModeError(
            f"forward mode: {what} of complex values: no forward rule (forward rules take "
            "real ones)"
        )


def added(b: Builder, z: Value, terms: t.Sequence[Value]) -> Value:
    """The sum of a tangent's ``terms``, as ``z``'s tangent (zeros for none)."""
    if not terms:
        return zero(b, z)
    total = terms[0]
    for term in terms[1:]:
        total = b.call(operator.add, total, term, type=z.type)
    return fit(b, total, z)


@twin_helper
def split_tangents(
    a: t.Sequence[t.Any], n: int, total: int
) -> tuple[t.Sequence[t.Any], list[t.Any]]:
    """A tangent function's ``(*operands, *tangents)`` as the ``n`` positional operands and a
    tangent per operand, keyword operands included (None where none came: the forward
    transform passes every operand's tangent, ``forward.primitive_run`` the positional
    operands' alone)."""
    tangents = list(a[n : n + total])
    return a[:n], tangents + [None] * (total - len(tangents))


def scratch(
    types: tuple[T.Type, ...], varied: tuple[bool, ...]
) -> tuple[Builder, list[Value], list[Value | None]]:
    """A scratch function taking one value per operand (constants as such) and one per varied
    operand's tangent: where a written form is tried once, to learn whether it can be
    written (``Inexpressible``), before a maker chooses it."""
    f = Function("probe", [(None, ty) for ty in (*types, *types)])
    args: list[Value] = [
        Constant(ty.value) if isinstance(ty, T.Const) else a
        for a, ty in zip(f.args[: len(types)], types)
    ]
    tangents: list[Value | None] = [a if v else None for a, v in zip(f.args[len(types) :], varied)]
    return Builder(f), args, tangents


#: ``emit(b, args, kwargs, tangents) -> (z, dz)``: writes the primal call *and* its tangent
#: (``tangents``: one per operand, positional then keyword, None where it has none); ``dz`` is
#: the result's tangent or None.
WriteEmit = t.Callable[
    [Builder, list[Value], dict[str, Value], list["Value | None"]], "tuple[Value, Value | None]"
]
